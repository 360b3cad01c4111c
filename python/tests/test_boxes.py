"""Boxes and masks at conversion, checked against the pixels rather than
against the code: synthetic scenes of rectangles and discs, each of its own
colour and class, written as PNGs stored in each of the eight EXIF
orientations with their boxes (a COCO file) and masks (sidecar PNGs) in the
stored pixels; once converted (orientation, resize, --fit crop), every
stored box must be the extent of its colour in the stored image (within a
pixel) and every mask the region of its colour.  The scenes' stored
pixels are checked with Pillow's own exif_transpose first, so the test does
not rest on its own idea of the orientations either."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageOps

from conftest import shardify, tool
import shardkit

W, H = 80, 60
# (class id, colour, kind, geometry): rectangles (x0, y0, x1, y1) and discs
# (cx, cy, r) in the upright scene, 3 px apart at least.
OBJECTS = [
    (1, (255, 0, 0), "rect", (12, 5, 30, 22)),
    (2, (0, 255, 0), "rect", (40, 30, 70, 52)),
    (3, (0, 0, 255), "disc", (25, 42, 9)),
    (4, (255, 255, 0), "disc", (55, 15, 6)),
    (5, (255, 0, 255), "rect", (1, 40, 8, 55)),   # left of the crop window: dropped
    (6, (0, 255, 255), "rect", (64, 2, 76, 12)),  # cut by the crop window: clipped
]
CLASSES = [{"id": 0, "name": "background"}] + [
    {"id": k, "name": f"object{k}"} for k, *_ in OBJECTS]
# The Pillow transposition orientation o applies, and the one undoing it.
APPLY = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
         5: Image.TRANSPOSE, 6: Image.ROTATE_270, 7: Image.TRANSVERSE, 8: Image.ROTATE_90}
UNDO = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
        5: Image.TRANSPOSE, 6: Image.ROTATE_90, 7: Image.TRANSVERSE, 8: Image.ROTATE_270}


def scene():
    """The upright image (H x W x 3) and its class mask (H x W)."""
    yy, xx = np.mgrid[0:H, 0:W]
    img = np.zeros((H, W, 3), np.uint8)
    mask = np.zeros((H, W), np.uint8)
    for k, colour, kind, g in OBJECTS:
        if kind == "rect":
            inside = (xx >= g[0]) & (xx < g[2]) & (yy >= g[1]) & (yy < g[3])
        else:
            inside = (xx + 0.5 - g[0]) ** 2 + (yy + 0.5 - g[1]) ** 2 <= g[2] ** 2
        img[inside] = colour
        mask[inside] = k
    return img, mask


def extent(region):
    """A boolean region's box x0, y0, x1, y1 (pixel i spans [i, i + 1)), or None."""
    ys, xs = np.nonzero(region)
    if not len(xs):
        return None
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)


def near(img, colour, tol):
    return (np.abs(img.astype(int) - np.array(colour)).max(axis=2) <= tol)


def write_scenes(src, mask_path):
    """Eight images src/o1.png .. o8.png (one per EXIF orientation) and
    their masks (at mask_path(o)), both in the stored pixels; the COCO
    file's images and annotations of them."""
    upright, upright_mask = scene()
    images, annotations = [], []
    for o in range(1, 9):
        stored = Image.fromarray(upright)
        stored_mask = Image.fromarray(upright_mask, mode="L")
        if o != 1:
            stored = stored.transpose(UNDO[o])
            stored_mask = stored_mask.transpose(UNDO[o])
        exif = Image.Exif()
        exif[0x0112] = o
        name = f"o{o}.png"
        stored.save(src / name, exif=exif.tobytes())
        stored_mask.save(mask_path(o))
        # the test's own premise: Pillow turns the stored pixels upright again
        with Image.open(src / name) as check:
            assert np.array_equal(np.asarray(ImageOps.exif_transpose(check)), upright), o
        sm = np.asarray(stored_mask)
        images.append({"id": o, "file_name": name, "width": stored.width,
                       "height": stored.height})
        for k, *_ in OBJECTS:
            x0, y0, x1, y1 = extent(sm == k)
            annotations.append({"id": 100 * o + k, "image_id": o, "category_id": k,
                                "bbox": [x0, y0, x1 - x0, y1 - y0], "iscrowd": 0,
                                "area": float((sm == k).sum()), "segmentation": []})
    return images, annotations


@pytest.fixture(scope="module")
def oriented(tmp_path_factory):
    """Eight images (one per EXIF orientation) with their COCO file and mask
    sidecars in the stored pixels, converted at 48 px, --fit crop."""
    top = tmp_path_factory.mktemp("boxes")
    src = top / "src"
    src.mkdir()
    images, annotations = write_scenes(src, lambda o: src / f"o{o}_mask.png")
    coco = {"images": images, "annotations": annotations, "categories": CLASSES[1:]}
    (top / "coco.json").write_text(json.dumps(coco))
    (top / "classes.json").write_text(json.dumps(CLASSES))
    dst = str(top / "dst")
    shardify(str(src), dst, "--size", "48", "--fit", "crop", "--codec", "png",
             "--coco", str(top / "coco.json"),
             "--field", f"seg=mask,from=_mask.png,classes={top / 'classes.json'}")
    return dst


def test_boxes_are_the_extent_of_their_colour_in_every_orientation(oriented):
    ds = shardkit.Dataset(oriented)
    assert sorted(s.key for s in ds) == [f"o{o}.png" for o in range(1, 9)]
    for s in ds:
        img = s.image
        assert img.shape == (48, 48, 3), s.key
        boxes = s.fields["boxes"]
        got = {int(k): b for k, b in zip(boxes["labels"], boxes["boxes"])}
        assert len(got) == len(boxes["labels"]), s.key  # one box per class here
        assert not boxes["iscrowd"].any()
        for k, colour, _, _ in OBJECTS:
            # the pixels at least half of the colour: its extent after resampling
            want = extent(near(img, colour, 127))
            if want is None:
                assert k not in got, f"{s.key}: class {k} is outside the image, yet has a box"
                continue
            assert k in got, f"{s.key}: class {k} has pixels {want} and no box"
            assert np.all(np.abs(got[k] - want) <= 1.0), (s.key, k, got[k], want)
            assert 0 <= got[k][0] < got[k][2] <= 48 and 0 <= got[k][1] < got[k][3] <= 48


def assert_masks_are_their_colours(ds):
    """Every sample's mask "seg" labels the region of each object's colour
    in its stored image with the object's class."""
    assert ds.fields["seg"].classes == {c["id"]: c["name"] for c in CLASSES}
    for s in ds:
        img, mask = s.image, s.fields["seg"]
        assert mask.shape == img.shape[:2] and mask.dtype == np.uint8, s.key
        for k, colour, _, _ in OBJECTS:
            solid = near(img, colour, 16)
            assert np.all(mask[solid] == k), f"{s.key}: pixels of colour {k} not labelled {k}"
            # a pixel labelled k is within a pixel of one at least half of colour k
            half = near(img, colour, 127)
            grown = half.copy()
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    grown |= np.roll(np.roll(half, dy, 0), dx, 1)
            assert np.all(grown[mask == k]), f"{s.key}: class {k} labels pixels not of its colour"
        assert set(np.unique(mask).tolist()) <= {c["id"] for c in CLASSES}


def test_masks_are_the_region_of_their_colour_in_every_orientation(oriented):
    assert_masks_are_their_colours(shardkit.Dataset(oriented))


def test_boxes_left_empty_by_the_crop_are_dropped_and_counted(oriented):
    with open(os.path.join(oriented, "manifest.json")) as f:
        m = json.load(f)
    # object 5 lies left of the centre crop window in every orientation
    assert m["counts"]["boxes_dropped"] == 8
    assert m["counts"]["boxes"] == 8 * (len(OBJECTS) - 1)
    assert m["counts"]["coco_images"] == 8 and m["counts"]["coco_images_unmatched"] == 0


def write_png(path, array, mode):
    Image.fromarray(array, mode=mode).save(path)


def test_bad_annotations_are_rejected_with_their_reason(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    grey = np.full((40, 50, 3), 90, np.uint8)
    for name in ("outside", "mask_size", "polygon", "good"):
        write_png(src / f"{name}.png", grey, "RGB")
    write_png(src / "good_mask.png", np.ones((40, 50), np.uint8), "L")
    write_png(src / "mask_size_mask.png", np.ones((41, 50), np.uint8), "L")
    images = [{"id": i, "file_name": f"{n}.png", "width": 50, "height": 40}
              for i, n in enumerate(("outside", "mask_size", "polygon", "good", "missing"))]
    box = [5, 5, 10, 10]
    annotations = [
        {"id": 1, "image_id": 0, "bbox": [45, 5, 20, 10], "category_id": 1},
        {"id": 2, "image_id": 1, "bbox": box, "category_id": 1},
        {"id": 3, "image_id": 2, "bbox": box, "category_id": 1,
         "segmentation": [[5, 5, 15, 5]]},
        {"id": 4, "image_id": 3, "bbox": box, "category_id": 1,
         "segmentation": [[5, 5, 15, 5, 15, 15]]},
        {"id": 5, "image_id": 4, "bbox": box, "category_id": 1},
        {"id": 6, "image_id": 99, "bbox": box, "category_id": 1},
    ]
    coco = tmp_path / "coco.json"
    coco.write_text(json.dumps({"images": images, "annotations": annotations,
                                "categories": [{"id": 1, "name": "thing"}]}))
    (tmp_path / "classes.txt").write_text("background\nthing\n")
    dst = str(tmp_path / "dst")
    shardify(str(src), dst, "--coco", str(coco), "--coco-mask", "--no-upscale", "--boxes", "strict",
             "--field", f"seg=mask,from=_mask.png,classes={tmp_path / 'classes.txt'}")
    with open(os.path.join(dst, "manifest.json")) as f:
        m = json.load(f)
    assert m["config"]["boxes"] == "strict"
    reasons = {r["key"]: r["reason"] for r in m["rejected"]}
    assert set(reasons) == {"outside.png", "mask_size.png", "polygon.png"}, reasons
    assert "annotation 1" in reasons["outside.png"] and "outside the 50x40 image" in \
        reasons["outside.png"]
    assert "'mask_size_mask.png'" in reasons["mask_size.png"] and "50x41" in \
        reasons["mask_size.png"]
    assert "annotation 3" in reasons["polygon.png"] and "polygon" in reasons["polygon.png"]
    # the image no file is and the annotation of no image are counted, not lost
    c = m["counts"]
    assert (c["coco_images"], c["coco_images_unmatched"]) == (5, 1)
    assert (c["coco_annotations"], c["coco_annotations_unmatched"]) == (6, 2)
    ds = shardkit.Dataset(dst)
    (good,) = list(ds)
    assert good.key == "good.png"
    assert good.fields["boxes"]["boxes"].tolist() == [[5, 5, 15, 15]]
    assert np.array_equal(good.fields["seg"], np.ones((40, 50), np.uint8))
    covered = good.fields["mask"]
    assert covered.shape == (40, 50) and covered[8, 10] == 1 and covered[30, 40] == 0


# ---- read time: one drawn crop and flip for image, boxes and mask ----------------

TRANSFORMS = {
    "random_resized_crop": lambda: [shardkit.RandomResizedCrop(32, scale=(0.1, 1.0)),
                                    shardkit.RandomHorizontalFlip()],
    "resize_padded_center_crop": lambda: [shardkit.Resize(40), shardkit.CenterCrop(56),
                                          shardkit.RandomHorizontalFlip()],
    "flip_then_crop": lambda: [shardkit.RandomHorizontalFlip(), shardkit.Resize((30, 50)),
                               shardkit.CenterCrop((28, 44))],
}


def grown(region):
    """The region and its 8 neighbours' pixels."""
    out = region.copy()
    padded = np.pad(region, 1)
    h, w = region.shape
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            out |= padded[dy:dy + h, dx:dx + w]
    return out


def check_sample(img, boxes, mask, where):
    """Every box the extent of its colour (within a pixel), every mask the
    region of its colour, in one output sample."""
    h, w, _ = img.shape
    assert mask.shape == (h, w), where
    got = {int(k): b for k, b in zip(boxes["labels"], boxes["boxes"])}
    assert len(got) == len(boxes["labels"]), where
    for k, colour, kind, _ in OBJECTS:
        half = near(img, colour, 127)
        want = extent(half)
        # a box cut by the output's edge is the cut box: a rectangle's extent
        # still, a disc's no more (its cut part is narrower than its box)
        cut = k in got and (got[k][0] == 0 or got[k][1] == 0 or got[k][2] == w or
                            got[k][3] == h)
        if k in got and kind == "disc" and cut:
            b = got[k]
            assert want is None or (np.all(want[:2] >= b[:2] - 1) and
                                    np.all(want[2:] <= b[2:] + 1)), (where, k, b, want)
        elif k in got:
            b = got[k]
            assert 0 <= b[0] < b[2] <= w and 0 <= b[1] < b[3] <= h, (where, k, b)
            assert b[2] - b[0] >= 1 and b[3] - b[1] >= 1, (where, k, b)  # min size 1
            if want is None:  # a sliver the resampling blurred below half its colour
                assert min(b[2] - b[0], b[3] - b[1]) < 3, (where, k, b)
            else:
                assert np.all(np.abs(b - want) <= 1.0), (where, k, b, want)
        elif want is not None:
            # removed as smaller than a pixel: its colour covers at most a pixel across
            assert min(want[2] - want[0], want[3] - want[1]) <= 1, (where, k, want)
        assert np.all(mask[near(img, colour, 16)] == k), (where, k, "solid pixels not labelled")
        # within a pixel of one a third of its colour at least (a sliver
        # thinner than a pixel is labelled where it holds a pixel's centre,
        # and blurred to about half its colour there)
        assert np.all(grown(near(img, colour, 170))[mask == k]), \
            (where, k, "labelled pixels not of its colour")


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_read_time_transforms_keep_boxes_and_masks_on_their_pixels(oriented, name):
    ds = shardkit.Dataset(oriented)
    loader = shardkit.Loader(ds, 8, transform=TRANSFORMS[name](), fields=["boxes", "seg"],
                             seed=7, threads=2)
    samples = 0
    for epoch in range(120):
        loader.set_epoch(epoch)
        for batch in loader:
            masks = batch.fields["seg"]
            assert isinstance(masks, np.ndarray) and masks.shape[0] == len(batch.indices)
            for j, index in enumerate(batch.indices):
                check_sample(batch.images[j], batch.fields["boxes"][j], masks[j],
                             (name, epoch, ds.key(int(index))))
                samples += 1
    assert samples == 120 * 8


@pytest.fixture(scope="module")
def half_masked(tmp_path_factory):
    """The eight scenes in stored order o1..o8, a mask (an optional field)
    for o1, o2, o6, o7 and o8 only: in batches of two, (o1, o2) and (o7,
    o8) have it, (o3, o4) does not, (o5, o6) is mixed."""
    top = tmp_path_factory.mktemp("half")
    src = top / "src"
    src.mkdir()
    write_scenes(src, lambda o: src / f"o{o}_mask.png")
    for o in (3, 4, 5):
        (src / f"o{o}_mask.png").unlink()
    (top / "classes.json").write_text(json.dumps(CLASSES))
    dst = str(top / "dst")
    shardify(str(src), dst, "--size", "48", "--fit", "crop", "--codec", "png", "--no-shuffle",
             "--field", f"seg=mask,from=_mask.png,classes={top / 'classes.json'}")
    return dst


def test_a_mask_fields_type_is_the_same_in_every_batch(half_masked, oriented):
    # an array only when every batch can have one: a fixed output size and
    # a mask in every sample of the dataset; else a list in every batch
    crop = [shardkit.CenterCrop(32)]
    for dst, transform, kind in ((half_masked, crop, list), (oriented, None, list),
                                 (oriented, crop, np.ndarray)):
        loader = shardkit.Loader(dst, 3 if dst == oriented else 2, shuffle=False,
                                 transform=transform, fields=["seg"], threads=0)
        kinds, present = set(), set()
        for batch in loader:
            kinds.add(type(batch.fields["seg"]))
            present.add(tuple(batch.present["seg"].tolist()))
            for j, m in enumerate(batch.fields["seg"]):
                assert (m is not None) == batch.present["seg"][j]
                assert m is None or m.shape == ((32, 32) if transform else (48, 48))
        assert kinds == {kind}, (dst, transform)
        if dst == half_masked:
            assert present == {(True, True), (False, False), (False, True)}
        else:
            assert present == {(True,) * 3, (True,) * 2}  # the last batch is partial


def test_read_time_boxes_in_torch_and_the_min_size_option(oriented):
    ds = shardkit.Dataset(oriented)
    t = [shardkit.RandomResizedCrop(32, scale=(0.1, 1.0)), shardkit.RandomHorizontalFlip()]
    a = shardkit.Loader(ds, 8, transform=t, fields=["boxes", "seg"], seed=3, threads=0,
                        output="torch")
    b = shardkit.Loader(ds, 8, transform=t, fields=["boxes", "seg"], seed=3, threads=2,
                        box_min_size=4)
    import torch
    for ba, bb in zip(a, b):
        assert ba.fields["seg"].shape == (8, 32, 32) and ba.fields["seg"].dtype == torch.uint8
        assert np.array_equal(ba.fields["seg"].numpy(), bb.fields["seg"])
        for x, y in zip(ba.fields["boxes"], bb.fields["boxes"]):
            assert x["boxes"].dtype == torch.float32 and x["labels"].dtype == torch.int64
            assert x["boxes"].shape == (len(x["labels"]), 4)
            # the same draws; the larger minimum removes exactly the boxes under it
            small = ((x["boxes"][:, 2] - x["boxes"][:, 0] < 4) |
                     (x["boxes"][:, 3] - x["boxes"][:, 1] < 4)).numpy()
            assert np.array_equal(x["boxes"].numpy()[~small], y["boxes"])
            assert np.array_equal(x["labels"].numpy()[~small], y["labels"])
    with pytest.raises(ValueError, match="box_min_size"):
        shardkit.Loader(ds, 8, fields=["boxes"], box_min_size=-1)


def test_jpeg_records_decoded_around_the_crop_give_the_same_boxes_and_masks(oriented):
    """A JPEG record is decoded only around its crop's box (a region of the
    image): its boxes and mask must come out as those of a PNG record of the
    same sample, decoded whole, under the same draws."""
    top = os.path.dirname(oriented)
    made = {}
    for codec in ("png", "jpeg"):
        made[codec] = dst = os.path.join(top, f"big-{codec}")
        shardify(os.path.join(top, "src"), dst, "--size", "256", "--fit", "crop", "--codec",
                 codec, "--coco", os.path.join(top, "coco.json"), "--field",
                 f"seg=mask,from=_mask.png,classes={os.path.join(top, 'classes.json')}")
    t = [shardkit.RandomResizedCrop(40, scale=(0.02, 0.3)), shardkit.RandomHorizontalFlip()]
    loaders = [shardkit.Loader(made[c], 8, transform=t, fields=["boxes", "seg"], seed=11)
               for c in ("png", "jpeg")]
    boxes_seen = 0
    for epoch in range(40):
        for loader in loaders:
            loader.set_epoch(epoch)
        for a, b in zip(*loaders):
            assert np.array_equal(a.indices, b.indices)
            assert np.array_equal(a.fields["seg"], b.fields["seg"])
            for x, y in zip(a.fields["boxes"], b.fields["boxes"]):
                assert np.array_equal(x["boxes"], y["boxes"])
                assert np.array_equal(x["labels"], y["labels"])
                boxes_seen += len(x["labels"])
            # and the pixels are the same picture (JPEG's loss aside)
            diff = np.abs(a.images.astype(int) - b.images.astype(int))
            assert diff.mean() < 6, diff.mean()
    assert boxes_seen > 100


def test_a_restored_loader_gives_the_same_boxes_and_masks(oriented):
    """Restart and determinism hold for boxes and masks as for images: a
    loader restored from a state_dict gives the remaining batches of the
    epoch with the same boxes and masks as an uninterrupted one."""
    t = [shardkit.RandomResizedCrop(32, scale=(0.1, 1.0)), shardkit.RandomHorizontalFlip()]
    make = lambda: shardkit.Loader(oriented, 3, transform=t, fields=["boxes", "seg"], seed=5,
                                   threads=2)
    whole = [(b.indices, b.fields["seg"], b.fields["boxes"]) for b in make()]
    first = make()
    it = iter(first)
    next(it)
    state = first.state_dict()
    rest = make()
    rest.load_state_dict(state)
    again = [(b.indices, b.fields["seg"], b.fields["boxes"]) for b in rest]
    assert len(again) == len(whole) - 1
    for (i1, m1, b1), (i2, m2, b2) in zip(whole[1:], again):
        assert np.array_equal(i1, i2) and np.array_equal(m1, m2)
        for x, y in zip(b1, b2):
            assert np.array_equal(x["boxes"], y["boxes"]) and np.array_equal(x["labels"],
                                                                            y["labels"])
    # another minimum box size would keep other boxes: refused by name
    other = shardkit.Loader(oriented, 3, transform=t, fields=["boxes", "seg"], seed=5,
                            box_min_size=2)
    with pytest.raises(ValueError, match="box_min_size"):
        other.load_state_dict(state)


# ---- masks from a folder mirroring the images (VOC / ADE20K / Cityscapes) ----

@pytest.fixture(scope="module")
def foldered(tmp_path_factory):
    """The eight oriented scenes in images/set/, their masks in masks/set/
    (o1.png's at masks/set/o1.png), a mask of no image beside them;
    converted with from=../masks/ (relative to SRC, images/)."""
    top = tmp_path_factory.mktemp("folder")
    src, masks = top / "images" / "set", top / "masks" / "set"
    src.mkdir(parents=True)
    masks.mkdir(parents=True)
    write_scenes(src, lambda o: masks / f"o{o}.png")
    write_png(masks / "stray.png", np.zeros((H, W), np.uint8), "L")
    (masks / "notes.txt").write_text("not a mask")
    (top / "classes.json").write_text(json.dumps(CLASSES))
    dst = str(top / "dst")
    shardify(str(top / "images"), dst, "--size", "48", "--fit", "crop", "--codec", "png",
             "--field", f"seg=mask,from=../masks/,classes={top / 'classes.json'},required")
    return top, dst


def test_folder_masks_are_the_region_of_their_colour_in_every_orientation(foldered):
    top, dst = foldered
    ds = shardkit.Dataset(dst)
    assert sorted(s.key for s in ds) == [f"set/o{o}.png" for o in range(1, 9)]
    assert ds.fields["seg"].source == ("folder", "../masks/")
    assert_masks_are_their_colours(ds)


def test_a_folder_mask_of_no_image_is_an_orphan(foldered):
    top, dst = foldered
    with open(os.path.join(dst, "manifest.json")) as f:
        m = json.load(f)
    assert m["orphans"] == [{"key": "../masks/set/stray.png"}]
    assert m["counts"]["orphans"] == 1 and m["counts"]["fields"] == {"seg": 8}
    assert m["rejected"] == []


def shardcheck_source(src, dst):
    return subprocess.run([tool("shardcheck"), "--source", src, dst], capture_output=True,
                          text=True)


def test_shardcheck_source_holds_folder_masks_to_their_files(foldered, tmp_path):
    top, dst = foldered
    copy = tmp_path / "copy"
    shutil.copytree(top, copy)
    out = shardcheck_source(str(copy / "images"), dst)
    assert out.returncode == 0, out.stdout + out.stderr
    # a mask changed since: named, with the sample
    write_png(copy / "masks" / "set" / "o3.png", np.zeros((W, H), np.uint8), "L")
    out = shardcheck_source(str(copy / "images"), dst)
    assert out.returncode == 1
    assert "field 'seg' of 'set/o3.png' changed since sharding: '../masks/set/o3.png'" in \
        out.stdout, out.stdout
    # a mask gone, and the orphan gone
    os.remove(copy / "masks" / "set" / "o5.png")
    os.remove(copy / "masks" / "set" / "stray.png")
    out = shardcheck_source(str(copy / "images"), dst)
    assert "'../masks/set/o5.png' is not in its folder" in out.stdout, out.stdout
    assert "orphan '../masks/set/stray.png' of the manifest is not" in out.stdout, out.stdout


def test_folder_masks_missing_or_of_another_size_are_rejected_with_their_reason(tmp_path):
    images, masks = tmp_path / "images" / "x", tmp_path / "masks" / "x"
    images.mkdir(parents=True)
    masks.mkdir(parents=True)
    grey = np.full((40, 50, 3), 90, np.uint8)
    for name in ("good", "size", "none"):
        Image.fromarray(grey).save(images / f"{name}.jpg")
    write_png(masks / "good.png", np.ones((40, 50), np.uint8), "L")
    write_png(masks / "size.png", np.ones((41, 50), np.uint8), "L")
    (tmp_path / "classes.txt").write_text("background\nthing\n")
    field = f"seg=mask,from=../masks/,classes={tmp_path / 'classes.txt'}"
    for required in (False, True):
        dst = str(tmp_path / f"dst{int(required)}")
        shardify(str(tmp_path / "images"), dst, "--no-upscale", "--field",
                 field + (",required" if required else ""))
        with open(os.path.join(dst, "manifest.json")) as f:
            m = json.load(f)
        reasons = {r["key"]: r["reason"] for r in m["rejected"]}
        assert "'../masks/x/size.png' is 50x41, its image 50x40" in reasons.pop("x/size.jpg")
        # a required mask missing: a reject naming the file looked for; else absent
        missing = "field 'seg' is required: no '../masks/x/none.png'"
        assert reasons == ({"x/none.jpg": missing} if required else {})
        samples = {s.key: s for s in shardkit.Dataset(dst)}
        assert sorted(samples) == ["x/good.jpg"] + ([] if required else ["x/none.jpg"])
        assert np.array_equal(samples["x/good.jpg"].fields["seg"], np.ones((40, 50), np.uint8))
        if not required:
            assert samples["x/none.jpg"].fields["seg"] is None


def test_a_mask_folder_inside_src_or_missing_is_refused(tmp_path):
    src = tmp_path / "images"
    (src / "masks").mkdir(parents=True)
    Image.fromarray(np.full((40, 50, 3), 90, np.uint8)).save(src / "a.jpg")
    (tmp_path / "classes.txt").write_text("background\nthing\n")
    for folder, said in (("masks/", "is inside SRC"), ("../nowhere/", "cannot open the mask "
                                                                     "folder")):
        dst = tmp_path / "dst"
        out = subprocess.run([tool("shardify"), "--quiet", "--field",
                              f"seg=mask,from={folder},classes={tmp_path / 'classes.txt'}",
                              str(src), str(dst)], capture_output=True, text=True)
        assert out.returncode == 1 and said in out.stderr, out.stderr
        assert not (dst / "manifest.json").exists()
