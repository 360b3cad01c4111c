#!/usr/bin/python3
"""Detection and segmentation input: shardkit.Loader with boxes and masks
against a CocoDetection-style Dataset + DataLoader with the same joint
transforms in numpy/PIL.

    PYTHONPATH=build/python:bench /usr/bin/python3 bench/detection_input.py \\
        BIN DATASET [--threads N] [--runs R] [--epochs E] [--json]

The source is a detection dataset as it is exchanged: a folder of JPEGs
(made here from DATASET, a folder of images such as the imagenet sample, at
SIZE on the shorter side, q90), a COCO annotation file (instances.json:
1..8 boxes per image of 20 categories, each with its polygon) and a mask PNG
beside each image (`x_mask.png`, 8-bit class ids: the boxes' ellipses).  Both
sides read the same samples with the same cores (--threads: loader threads,
DataLoader num_workers) and the same augmentation, one drawn set of
parameters per sample for image, mask and boxes: RandomResizedCrop(224)
(bilinear for the image, nearest for the mask, boxes moved, scaled, clamped
and those under 1 px removed with their labels), a horizontal flip,
Normalize; float32 NCHW images, masks (B, 224, 224), per-sample boxes (N, 4)
float32 and labels (N,) int64, batches of 64:

  coco       a torch Dataset in the style of torchvision's CocoDetection:
             the COCO file read once (pycocotools-like index), per sample the
             JPEG and the mask PNG opened with PIL, the joint transform in
             PIL/numpy (T.RandomResizedCrop.get_params, F.resized_crop,
             F.hflip), collated by a DataLoader as lists of targets
  shards     shardkit.Loader over `shardify --coco instances.json --field
             seg=mask,from=_mask.png,classes=FILE` jpeg shards,
             fields=["boxes", "seg"]
  shards-images  the same shards, images only (no fields): what boxes and
             masks cost

Each figure is samples/s over epochs 2..E of one run, the median over R runs
taking the paths in turn, with the CPU time per sample of the whole run
beside it (every process counted).  Targets: shards >= 5x coco; shards-images
/ shards <= 1.15.
"""
import json
import os
import random
import subprocess
import tempfile

import numpy as np

from train_input import (BATCH, CROP, MEAN, SIZE, STD, pair_run_args,
                         report_pair_runs, run_in_turn, shardkit_loader, steady_rate)

CATEGORIES = 20
TARGETS = {("shards", "coco"): 5}
PATHS = ("coco", "shards", "shards-images")


def make_source(dataset, out):
    """JPEGs at SIZE on the shorter side, their mask PNGs and a COCO file."""
    from PIL import Image, ImageDraw
    names = sorted(n for n in os.listdir(dataset) if n.lower().endswith((".jpg", ".jpeg")))
    os.makedirs(out)
    rng = random.Random(0)
    images, annotations = [], []
    for i, name in enumerate(names):
        img = Image.open(os.path.join(dataset, name)).convert("RGB")
        w, h = img.size
        s = SIZE / min(w, h)
        img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BICUBIC)
        w, h = img.size
        stem = f"{i:06d}"
        img.save(os.path.join(out, stem + ".jpg"), quality=90)
        mask = Image.new("L", (w, h), 0)
        draw = ImageDraw.Draw(mask)
        for _ in range(rng.randint(1, 8)):
            bw, bh = rng.randint(8, w // 2), rng.randint(8, h // 2)
            x, y = rng.randint(0, w - bw), rng.randint(0, h - bh)
            k = rng.randint(1, CATEGORIES)
            draw.ellipse([x, y, x + bw - 1, y + bh - 1], fill=k)
            poly = [round(v, 1) for t in range(12) for v in (
                x + bw / 2 + bw / 2 * np.cos(t * np.pi / 6),
                y + bh / 2 + bh / 2 * np.sin(t * np.pi / 6))]
            annotations.append({"id": len(annotations) + 1, "image_id": i, "category_id": k,
                                "bbox": [x, y, bw, bh], "area": bw * bh * np.pi / 4,
                                "iscrowd": 0, "segmentation": [poly]})
        mask.save(os.path.join(out, stem + "_mask.png"))
        images.append({"id": i, "file_name": stem + ".jpg", "width": w, "height": h})
    coco = {"images": images, "annotations": annotations,
            "categories": [{"id": k, "name": f"class{k}"} for k in range(1, CATEGORIES + 1)]}
    with open(os.path.join(out, "..", "instances.json"), "w") as f:
        json.dump(coco, f)
    with open(os.path.join(out, "..", "classes.txt"), "w") as f:
        f.write("background\n" + "".join(f"class{k}\n" for k in range(1, CATEGORIES + 1)))


def make_shards(bin_dir, top, dst):
    subprocess.run([os.path.join(bin_dir, "shardify"), os.path.join(top, "images"), dst,
                    "--size", str(SIZE), "--codec", "jpeg", "--labels", "none", "--quiet",
                    "--coco", os.path.join(top, "instances.json"), "--field",
                    f"seg=mask,from=_mask.png,classes={os.path.join(top, 'classes.txt')}"],
                   check=True)


class CocoStyle:
    """What a PyTorch user writes today: torchvision's CocoDetection (image
    and annotations by image id) plus the mask PNG, with one set of
    RandomResizedCrop and flip parameters applied to all three."""

    def __init__(self, root, ann_file):
        with open(ann_file) as f:
            coco = json.load(f)
        self.root = root
        self.images = coco["images"]
        self.anns = {im["id"]: [] for im in self.images}
        for a in coco["annotations"]:
            self.anns[a["image_id"]].append(a)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        import torch
        from PIL import Image
        from torchvision import transforms as T
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as F
        info = self.images[i]
        path = os.path.join(self.root, info["file_name"])
        img = Image.open(path).convert("RGB")
        mask = Image.open(path[:-4] + "_mask.png")
        anns = self.anns[info["id"]]
        boxes = np.array([a["bbox"] for a in anns], np.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]  # xywh -> xyxy
        labels = np.array([a["category_id"] for a in anns], np.int64)
        top, left, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
        img = F.resized_crop(img, top, left, h, w, [CROP, CROP], InterpolationMode.BILINEAR)
        mask = F.resized_crop(mask, top, left, h, w, [CROP, CROP], InterpolationMode.NEAREST)
        boxes -= np.array([left, top, left, top], np.float32)
        boxes *= np.array([CROP / w, CROP / h, CROP / w, CROP / h], np.float32)
        np.clip(boxes, 0, CROP, out=boxes)
        if random.random() < 0.5:
            img, mask = F.hflip(img), F.hflip(mask)
            boxes[:, [0, 2]] = CROP - boxes[:, [2, 0]]
        keep = ((boxes[:, 2] - boxes[:, 0]) >= 1) & ((boxes[:, 3] - boxes[:, 1]) >= 1)
        image = F.normalize(F.to_tensor(img), MEAN, STD)
        return (image, torch.from_numpy(np.asarray(mask, np.uint8).copy()),
                {"boxes": torch.from_numpy(boxes[keep]), "labels": torch.from_numpy(labels[keep])})


def collate(samples):
    import torch
    images, masks, targets = zip(*samples)
    return torch.stack(images), torch.stack(masks), list(targets)


def coco_loader(top, threads):
    import torch
    ds = CocoStyle(os.path.join(top, "images"), os.path.join(top, "instances.json"))
    return torch.utils.data.DataLoader(ds, BATCH, shuffle=True, num_workers=threads,
                                       collate_fn=collate, persistent_workers=threads > 0)


def targeted_images(images, masks, targets):
    """images, once masks and targets (None: a path without fields) are one
    per image: a CROP x CROP mask, a dict of (N, 4) boxes."""
    assert masks is None or tuple(masks.shape) == (images.shape[0], CROP, CROP)
    assert targets is None or (len(targets) == images.shape[0] and
                               targets[0]["boxes"].shape[1:] == (4,))
    return images


def run_path(path, a, work):
    if path == "coco":
        loader = coco_loader(work["top"], a.threads)
        result = steady_rate(loader, a.epochs, unpack=lambda batch: targeted_images(*batch))
        del loader
        return result
    fields = path == "shards"
    with shardkit_loader(work["shards"], a.threads, output="torch",
                         fields=["boxes", "seg"] if fields else None) as loader:
        def unpack(batch):
            if fields:
                return targeted_images(batch.images, batch.fields["seg"], batch.fields["boxes"])
            return targeted_images(batch.images, None, None)
        return steady_rate(loader, a.epochs, loader.set_epoch, unpack)


def main():
    a = pair_run_args(__doc__, PATHS)
    paths = a.paths.split(",")
    with tempfile.TemporaryDirectory(prefix="shardkit-detection-input.") as tmp:
        make_source(a.dataset, os.path.join(tmp, "images"))
        work = {"top": tmp, "shards": os.path.join(tmp, "shards")}
        make_shards(a.bin, tmp, work["shards"])
        rates, cpu = run_in_turn(a, paths, lambda path: run_path(path, a, work))
    report_pair_runs(a, paths, rates, cpu, TARGETS, {("shards-images", "shards"): "<= 1.15"},
                     f"RandomResizedCrop({CROP}) + flip + Normalize on image, mask and boxes, "
                     f"float32 NCHW")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
