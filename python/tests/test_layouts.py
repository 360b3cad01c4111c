"""Datasets as the other tools lay them out, read back through the Loader
with no glue: VOC masks whose void and border pixels are 255 (ignore=255:
kept, never a class, the padding's value), torchvision's detection and
segmentation targets, and each layout's flow from its files to the loss (a
Hugging Face imagefolder's splits, VOC, WebDataset x.seg.png in tars named
by a brace URL)."""
import io
import json
import os
import subprocess
import tarfile

import numpy as np
import pytest
from PIL import Image

import shardkit
from conftest import TOP, tool

W, H = 40, 30
VOID = 255


def voc_palette():
    """VOC's colour map: class c's colour, and 255's (224, 224, 192)."""
    pal = [0] * 768
    for c in range(256):
        r = g = b = 0
        cid = c
        for j in range(8):
            r |= ((cid >> 0) & 1) << (7 - j)
            g |= ((cid >> 1) & 1) << (7 - j)
            b |= ((cid >> 2) & 1) << (7 - j)
            cid >>= 3
        pal[3 * c:3 * c + 3] = [r, g, b]
    return pal


def voc_masks(k):
    """Sample k's class ids: a rectangle of class 1 or 2 outlined in 255, a
    255 border round the image (as VOC's SegmentationClass PNGs have)."""
    m = np.zeros((H, W), np.uint8)
    m[8:22, 10:30] = 1 + k % 2
    m[7, 9:31] = m[22, 9:31] = VOID
    m[7:23, 9] = m[7:23, 30] = VOID
    m[0, :] = m[-1, :] = VOID
    return m


@pytest.fixture(scope="module")
def voc(tmp_path_factory):
    top = tmp_path_factory.mktemp("voc")
    os.makedirs(top / "JPEGImages")
    os.makedirs(top / "SegmentationClass")
    os.makedirs(top / "ImageSets" / "Segmentation")
    for k in range(4):
        Image.new("RGB", (W, H), (20 * k, 90, 160)).save(top / "JPEGImages" / f"2007_00{k}.jpg")
        if k < 3:  # the last has no mask: the split list leaves it out
            p = Image.fromarray(voc_masks(k), "P")
            p.putpalette(voc_palette())
            p.save(top / "SegmentationClass" / f"2007_00{k}.png")
    (top / "ImageSets" / "Segmentation" / "train.txt").write_text("2007_000\n2007_001\n2007_002\n")
    (top / "classes.txt").write_text("background\naeroplane\nbicycle\n")
    return top


def convert_voc(voc, dst, *extra, ignore=True, check=True):
    spec = "seg=mask,from=../SegmentationClass/,classes=" + str(voc / "classes.txt")
    spec += ",ignore=255" if ignore else ""
    out = subprocess.run([tool("shardify"), "--quiet", "--size", str(W), "--fit", "long",
                          "--labels", "none", "--field", spec + ",required", *map(str, extra),
                          voc / "JPEGImages", dst], capture_output=True, text=True)
    assert not check or out.returncode == 0, out.stderr
    return out


def test_voc_masks_keep_255_and_the_padding_writes_it(voc, tmp_path):
    dst = tmp_path / "voc"
    convert_voc(voc, dst, "--keys", voc / "ImageSets" / "Segmentation" / "train.txt")
    ds = shardkit.Dataset(dst)
    assert ds.fields["seg"].ignore == VOID
    assert ds.fields["seg"].classes == {0: "background", 1: "aeroplane", 2: "bicycle"}
    assert len(ds) == 3  # the image without a mask is not in the split
    for i in range(len(ds)):
        sample = ds[i]
        k = int(sample.key[len("2007_00"):][0])
        assert np.array_equal(sample.fields["seg"], voc_masks(k)), sample.key
    # CenterCrop pads the image and its mask: the mask's padding is 255
    loader = shardkit.Loader(ds, batch_size=3, shuffle=False, fields=["seg"],
                             transform=[shardkit.CenterCrop((H + 8, W + 10))])
    batch = next(iter(loader))
    seg = batch.fields["seg"]
    assert seg.shape == (3, H + 8, W + 10)
    assert (seg[:, :4, :] == VOID).all() and (seg[:, :, :5] == VOID).all()
    assert (seg[:, 4:4 + H, 5:5 + W] == np.stack([voc_masks(int(ds[int(j)].key[7]))
                                                   for j in batch.indices])).all()


def test_without_ignore_255_is_refused_and_the_padding_is_0(voc, tmp_path):
    out = convert_voc(voc, tmp_path / "refused", ignore=False, check=False)
    assert out.returncode == 1
    assert "holds value 255 at (0, 0), which is no declared class (ignore=N" in out.stderr
    # a mask of declared classes only: padded with 0, as documented
    clean = tmp_path / "clean"
    os.makedirs(clean / "JPEGImages")
    os.makedirs(clean / "SegmentationClass")
    Image.new("RGB", (W, H), (1, 2, 3)).save(clean / "JPEGImages" / "a.jpg")
    Image.fromarray(np.ones((H, W), np.uint8), "L").save(clean / "SegmentationClass" / "a.png")
    (clean / "classes.txt").write_text("background\naeroplane\nbicycle\n")
    convert_voc(clean, tmp_path / "zero", ignore=False)
    loader = shardkit.Loader(shardkit.Dataset(tmp_path / "zero"), batch_size=1, fields=["seg"],
                             transform=[shardkit.CenterCrop((H + 8, W + 10))])
    seg = next(iter(loader)).fields["seg"][0]
    assert (seg[:4, :] == 0).all() and (seg[4:4 + H, 5:5 + W] == 1).all()


def test_boxes_outside_the_image_are_clamped_or_dropped_as_torchvision_does(tmp_path):
    """--boxes clamp (the default): a box partly outside is clipped to the
    image, one wholly outside (or empty) dropped and counted, the image's
    other boxes kept; --boxes strict rejects the image, as before."""
    src = tmp_path / "src"
    src.mkdir()
    Image.new("RGB", (50, 40), (90, 90, 90)).save(src / "a.png")
    anns = [{"id": 1, "image_id": 1, "bbox": [45, 5, 20, 10], "category_id": 1},   # partly out
            {"id": 2, "image_id": 1, "bbox": [-3, -2, 10, 12], "category_id": 2},  # partly out
            {"id": 3, "image_id": 1, "bbox": [60, 50, 5, 5], "category_id": 1},    # wholly out
            {"id": 4, "image_id": 1, "bbox": [5, 5, 0, 8], "category_id": 1},      # empty
            {"id": 5, "image_id": 1, "bbox": [10, 10, 5, 5], "category_id": 2}]
    coco = tmp_path / "coco.json"
    coco.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.png", "width": 50,
                                            "height": 40}], "annotations": anns,
                                "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}))
    run = [tool("shardify"), "--quiet", "--labels", "none", "--no-upscale", "--coco", str(coco)]
    subprocess.run(run + [src, tmp_path / "clamp"], check=True)
    m = json.loads((tmp_path / "clamp" / "manifest.json").read_text())
    assert m["config"]["boxes"] == "clamp"
    assert (m["counts"]["boxes"], m["counts"]["boxes_dropped"], m["rejected"]) == (3, 2, [])
    target = shardkit.Dataset(tmp_path / "clamp")[0].fields["boxes"]
    # torchvision's reference: boxes[:, 0::2].clamp_(0, w), boxes[:, 1::2].clamp_(0, h), then
    # those with x1 > x0 and y1 > y0 kept
    xyxy = np.array([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                      a["bbox"][1] + a["bbox"][3]] for a in anns], np.float32)
    xyxy[:, 0::2] = xyxy[:, 0::2].clip(0, 50)
    xyxy[:, 1::2] = xyxy[:, 1::2].clip(0, 40)
    keep = (xyxy[:, 2] > xyxy[:, 0]) & (xyxy[:, 3] > xyxy[:, 1])
    assert np.array_equal(target["boxes"], xyxy[keep])
    assert target["labels"].tolist() == [a["category_id"] for a, k in zip(anns, keep) if k]
    out = subprocess.run(run + ["--boxes", "strict", src, tmp_path / "strict"],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "annotation 1: bbox [45, 5, 20, 10] is outside the 50x40 image" in out.stderr


# ---- COCO instances: Mask R-CNN's masks ---------------------------------------

IW, IH = 48, 40


def rle_counts(m):
    """COCO's uncompressed RLE of a (H, W) 0/1 mask: run lengths of 0 and 1
    in turn, starting with 0, over the pixels in column-major order."""
    flat = m.T.reshape(-1)
    counts, cur, run = [], 0, 0
    for v in flat:
        if v == cur:
            run += 1
        else:
            counts.append(run)
            cur, run = v, 1
    counts.append(run)
    return counts


def rle_decode(counts, h, w):
    """The reference decoder: numpy, as pycocotools' decode gives it."""
    values = np.repeat(np.arange(len(counts)) % 2, counts).astype(np.uint8)
    return values.reshape(w, h).T


@pytest.fixture(scope="module")
def instances(tmp_path_factory):
    """Images of non-overlapping instances, each of its own category (so a
    box's label names its instance): discs and rectangles given as RLE, and
    rectangles given as polygons; an instance partly outside the image's
    crop and one wholly outside the image."""
    top = tmp_path_factory.mktemp("instances")
    rng = np.random.default_rng(7)
    src = top / "src"
    src.mkdir()
    images, anns, cats, truth = [], [], {}, {}
    yy, xx = np.mgrid[0:IH, 0:IW]
    for i in range(12):
        name = f"{i:03d}.png"
        Image.fromarray(rng.integers(0, 255, (IH, IW, 3), dtype=np.uint8)).save(src / name)
        images.append({"id": i + 1, "file_name": name, "width": IW, "height": IH})
        taken = np.zeros((IH, IW), bool)
        truth[name] = []
        for k in range(int(rng.integers(1, 5))):
            cat = len(cats) + 1
            cats[cat] = f"thing{cat}"
            for _ in range(50):  # a shape that overlaps no other
                cx, cy = rng.integers(0, IW), rng.integers(0, IH)
                r = int(rng.integers(3, 10))
                if k % 3 == 0:
                    m = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
                else:
                    m = (abs(xx - cx) <= r) & (abs(yy - cy) <= r // 2 + 1)
                if m.any() and not (m & taken).any():
                    break
            taken |= m
            ys, xs = np.nonzero(m)
            x0, y0, x1, y1 = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
            seg = {"size": [IH, IW], "counts": rle_counts(m.astype(np.uint8))}
            if k % 3 == 2:  # a rectangle as a polygon: rasterised as pycocotools does
                seg = [[x0, y0, x1, y0, x1, y1, x0, y1]]
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": cat,
                         "iscrowd": 0, "bbox": [x0, y0, x1 - x0, y1 - y0], "segmentation": seg})
            truth[name].append((cat, seg))
        # an instance wholly outside the image: its box and mask are dropped together
        anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": 1, "iscrowd": 0,
                     "bbox": [IW + 5, 2, 4, 4], "segmentation": []})
    coco = top / "instances.json"
    coco.write_text(json.dumps({"images": images, "annotations": anns,
                                "categories": [{"id": c, "name": n} for c, n in cats.items()]}))
    dst = top / "dst"
    subprocess.run([tool("shardify"), "--quiet", "--labels", "none", "--codec", "png",
                    "--size", str(IH), "--no-upscale", "--coco", str(coco), "--coco-mask",
                    "--coco-instances", src, dst], check=True)
    return dst, truth


def test_instance_masks_are_their_rle_or_polygon_at_the_stored_size(instances):
    dst, truth = instances
    ds = shardkit.Dataset(dst)
    assert ds.fields["masks"].type == "instances"
    for s in ds:
        boxes, masks, classes = s.fields["boxes"], s.fields["masks"], s.fields["mask"]
        assert masks.dtype == np.uint8 and masks.shape == (len(boxes["boxes"]), IH, IW)
        assert boxes["labels"].tolist() == [c for c, _ in truth[s.key]]  # the outside one gone
        for k, (cat, seg) in enumerate(truth[s.key]):
            if isinstance(seg, dict):  # RLE: the reference decoder's pixels exactly
                assert np.array_equal(masks[k], rle_decode(seg["counts"], IH, IW)), (s.key, k)
            # every instance is the region of its category in the class mask
            assert np.array_equal(masks[k], (classes == cat).astype(np.uint8)), (s.key, k)
            assert set(np.unique(masks[k])) <= {0, 1}


def test_instance_masks_follow_every_random_crop_and_flip_with_their_boxes(instances):
    dst, truth = instances
    ds = shardkit.Dataset(dst)
    steps = [shardkit.RandomResizedCrop(32, scale=(0.05, 1.0)), shardkit.RandomHorizontalFlip()]
    loader = shardkit.Loader(ds, batch_size=4, seed=3, fields=["boxes", "masks", "mask"],
                             transform=steps)
    seen = dropped = 0
    for epoch in range(25):
        loader.set_epoch(epoch)
        for batch in loader:
            for target, classes, index in zip(batch.fields["boxes"], batch.fields["mask"],
                                              batch.indices):
                masks = target["masks"]
                assert masks.shape == (len(target["boxes"]), 32, 32)
                assert target["masks"] is batch.fields["masks"][list(batch.indices).index(index)]
                dropped += len(truth[ds[int(index)].key]) - len(target["labels"])
                for box, cat, m in zip(target["boxes"], target["labels"], masks):
                    # the mask of the box's instance, moved as the class mask was
                    assert np.array_equal(m, (classes == cat).astype(np.uint8)), (epoch, index)
                    ys, xs = np.nonzero(m)
                    if len(xs):  # the box holds its mask (within the box's rounding)
                        assert box[0] - 1 <= xs.min() and xs.max() + 1 <= box[2] + 1
                        assert box[1] - 1 <= ys.min() and ys.max() + 1 <= box[3] + 1
                    seen += 1
    assert seen > 300 and dropped > 0  # the crops dropped boxes, and their masks with them


def test_mask_rcnn_trains_from_the_loader_with_no_glue(instances):
    torch = pytest.importorskip("torch")
    detection = pytest.importorskip("torchvision.models.detection")
    dst, _ = instances
    ds = shardkit.Dataset(dst)
    torch.manual_seed(0)
    model = detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                            num_classes=1 + max(ds.fields["boxes"].classes),
                                            min_size=48, max_size=48)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    loader = shardkit.Loader(ds, batch_size=2, fields=["boxes", "masks"], output="torch",
                             dtype="float32", layout="NCHW",
                             transform=[shardkit.RandomHorizontalFlip(),
                                        shardkit.Normalize((0, 0, 0), (255, 255, 255))])
    for step, batch in zip(range(2), loader):
        losses = model(batch.images, batch.fields["boxes"])
        assert {"loss_classifier", "loss_box_reg", "loss_mask"} <= set(losses)
        loss = sum(losses.values())
        assert torch.isfinite(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


# ---- the interop flows: from the layout to the loss, no code between ---------------------


def tiny_segmenter(torch, classes):
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, classes, 1))


def test_a_hugging_face_imagefolder_trains_a_classifier_from_each_split(tmp_path):
    """train/ and test/ with their own class folders and metadata.jsonl: each
    split its own dataset, one class list for both, and a classifier's loss
    straight from the batch."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    src = tmp_path / "hf"
    for split, classes in (("train", ("bird", "cat")), ("test", ("cat", "dog"))):
        rows = []
        for c in classes:
            os.makedirs(src / split / c)
            for k in range(3):
                colour = (60 * k, len(c) * 20, 90)
                Image.new("RGB", (W, H), colour).save(src / split / c / f"{k}.png")
                rows.append({"file_name": f"{c}/{k}.png", "text": f"a {c} in {split}"})
        (src / split / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    subprocess.run([tool("shardify"), "--quiet", "--size", "32", "--field", "text=text", src,
                    tmp_path / "dst"], check=True)
    train = shardkit.Dataset(tmp_path / "dst" / "train")
    test = shardkit.Dataset(tmp_path / "dst" / "test")
    assert train.labels == test.labels == ["bird", "cat", "dog"]
    for ds in (train, test):
        for s in ds:  # each sample's label is its folder's, its text its metadata row's
            folder = s.key.split("/")[0]
            assert ds.labels[s.label] == folder
            assert s.fields["text"].startswith(f"a {folder} in ")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(4, len(train.labels)))
    loader = shardkit.Loader(train, batch_size=4, output="torch", dtype="float32", layout="NCHW",
                             transform=[shardkit.RandomResizedCrop(24),
                                        shardkit.Normalize((0, 0, 0), (255, 255, 255))])
    for batch in loader:
        loss = F.cross_entropy(model(batch.images), batch.labels)
        assert torch.isfinite(loss)
        loss.backward()


def test_voc_masks_train_a_segmenter_with_255_ignored(voc, tmp_path):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    dst = tmp_path / "voc"
    convert_voc(voc, dst, "--keys", voc / "ImageSets" / "Segmentation" / "train.txt")
    ds = shardkit.Dataset(dst)
    model = tiny_segmenter(torch, len(ds.fields["seg"].classes))
    loader = shardkit.Loader(ds, batch_size=3, fields=["seg"], output="torch", dtype="float32",
                             layout="NCHW",
                             transform=[shardkit.RandomHorizontalFlip(),
                                        shardkit.CenterCrop((H + 6, W + 4)),
                                        shardkit.Normalize((0, 0, 0), (255, 255, 255))])
    batch = next(iter(loader))
    seg = batch.fields["seg"]
    assert seg.shape == (3, H + 6, W + 4) and int(seg[:, 0, :].min()) == VOID  # padded with 255
    loss = F.cross_entropy(model(batch.images), seg.long(), ignore_index=VOID)
    assert torch.isfinite(loss)
    loss.backward()


def test_webdataset_seg_png_over_brace_urls_trains_a_segmenter(tmp_path):
    """x.jpg and x.seg.png in each sample of two tars served by nginx,
    converted from their brace URL, proved against it, and a segmenter's loss
    straight from the batch."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    server = os.path.join(TOP, "bench", "http_server.sh")
    if subprocess.run(["sh", "-c", "command -v nginx || test -x /usr/sbin/nginx"],
                      capture_output=True).returncode:
        pytest.skip("nginx is not installed (scripts/deps.sh installs it)")
    tars = tmp_path / "tars"
    tars.mkdir()
    truth = {}
    for s in range(2):
        with tarfile.open(tars / f"{s:05d}.tar", "w") as t:
            for k in range(3):
                img = np.full((H, W, 3), 40 * k, np.uint8)
                m = np.zeros((H, W), np.uint8)
                m[5:20, 4 + k:30] = 1 + (s + k) % 2
                m[0] = VOID
                truth[f"{s:05d}.tar/{s}{k}.jpg"] = m
                for name, arr, mode, fmt in ((f"{s}{k}.jpg", img, "RGB", "JPEG"),
                                             (f"{s}{k}.seg.png", m, "L", "PNG")):
                    b = io.BytesIO()
                    Image.fromarray(arr, mode).save(b, fmt)
                    info = tarfile.TarInfo(name)
                    info.size = len(b.getvalue())
                    t.addfile(info, io.BytesIO(b.getvalue()))
    (tmp_path / "classes.txt").write_text("background\nroad\ncar\n")
    spec = f"seg=mask,from=.seg.png,classes={tmp_path / 'classes.txt'},ignore={VOID},required"
    url = subprocess.run(["sh", server, "start", str(tmp_path / "http"), f"wds={tars}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        src = url + "/wds/{00000..00001}.tar"
        dst = tmp_path / "dst"
        subprocess.run([tool("shardify"), "--quiet", "--labels", "none", "--size", str(W),
                        "--fit", "long", "--field", spec, src, dst], check=True)
        out = subprocess.run([tool("shardcheck"), "--deep", "--source", src, dst],
                             capture_output=True, text=True)
        assert out.returncode == 0 and f"verified '{dst}'" in out.stdout + out.stderr, out
    finally:
        subprocess.run(["sh", server, "stop", str(tmp_path / "http")], check=True)
    ds = shardkit.Dataset(dst)
    assert len(ds) == 6  # the masks are fields of their images, not samples
    for s in ds:
        assert np.array_equal(s.fields["seg"], truth[s.key]), s.key
    model = tiny_segmenter(torch, len(ds.fields["seg"].classes))
    loader = shardkit.Loader(ds, batch_size=3, fields=["seg"], output="torch", dtype="float32",
                             layout="NCHW",
                             transform=[shardkit.RandomResizedCrop(24),
                                        shardkit.RandomHorizontalFlip(),
                                        shardkit.Normalize((0, 0, 0), (255, 255, 255))])
    for batch in loader:
        loss = F.cross_entropy(model(batch.images), batch.fields["seg"].long(),
                               ignore_index=VOID)
        assert torch.isfinite(loss)
        loss.backward()
