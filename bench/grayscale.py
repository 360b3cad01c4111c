#!/usr/bin/env python3
"""grayscale.py - what storing a grey dataset as grey saves: shard bytes and read rate.

Writes Fashion-MNIST (Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist)
as PNG class folders, or with --generate N a Fashion-MNIST-like set of N 28x28 grey PNGs in
10 classes (fashion_like), converts it twice with --codec raw (the default --pixels auto,
which keeps 1 channel, and --pixels rgb, the 3 channels every dataset had before), and
reads each through shardkit.Loader without a transform (one array per batch: every sample
is 28x28), the two forms alternating run by run (the median of the runs' best epochs).
Prints one JSON object: pixel bytes, shard bytes, and samples/s per form.

    bench/grayscale.py BUILD WORK [--generate N] [--epochs E] [--runs R]
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist"


def idx_images(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n, h, w = (int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    return np.frombuffer(data, np.uint8, offset=16).reshape(n, h, w)


def idx_labels(path):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=8)


def fashion_like(n, rng):
    """n 28x28 grey images in 10 classes, as Fashion-MNIST's are: an object on a black
    background, its class's shape (an ellipse from tall to wide) and shade, shifted by up
    to 2 pixels and textured at random."""
    labels = rng.integers(0, 10, n)
    yy, xx = np.mgrid[0:28, 0:28]
    images = np.zeros((n, 28, 28), np.uint8)
    for i, c in enumerate(labels):
        cy, cx = 14 + rng.integers(-2, 3), 14 + rng.integers(-2, 3)
        inside = ((yy - cy) / (4 + c)) ** 2 + ((xx - cx) / (13 - c)) ** 2 <= 1
        shade = np.clip(rng.normal(60 + 18 * c, 25, (28, 28)), 1, 255).astype(np.uint8)
        images[i][inside] = shade[inside]
    return images, labels


def load(split, generate):
    """(images, labels) of `split` ("train" or "t10k"): Fashion-MNIST's, or `generate`
    (the training split's size) of fashion_like's, a seed for each split."""
    if generate:
        n = generate if split == "train" else max(generate // 6, 10)
        return fashion_like(n, np.random.default_rng(0 if split == "train" else 1))
    return (idx_images(f"{FASHION}/{split}-images-idx3-ubyte.gz"),
            idx_labels(f"{FASHION}/{split}-labels-idx1-ubyte.gz"))


def write_folders(images, labels, root):
    """PNG class folders, as torchvision's ImageFolder reads them."""
    from PIL import Image
    if os.path.isdir(root):
        return
    tmp = root + ".tmp"
    for i, (img, lab) in enumerate(zip(images, labels)):
        d = os.path.join(tmp, f"{int(lab):02d}")
        os.makedirs(d, exist_ok=True)
        Image.fromarray(img, "L").save(os.path.join(d, f"{i:05d}.png"))
    os.rename(tmp, root)


def shardify(build, src, dst, *extra):
    subprocess.run([os.path.join(build, "bin", "shardify"), "--codec", "raw", "--size", "28",
                    "--overwrite", "--quiet", *extra, src, dst], check=True)
    return sum(os.path.getsize(os.path.join(dst, f)) for f in os.listdir(dst)
               if f.endswith(".shard"))


def read_rate(dst, epochs):
    import shardkit
    loader = shardkit.Loader(shardkit.Dataset(dst), batch_size=256, threads=2)
    best = 0.0
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        t0, n = time.perf_counter(), 0
        for batch in loader:
            assert isinstance(batch.images, np.ndarray), "a 28x28 set batches as one array"
            n += len(batch.images)
        best = max(best, n / (time.perf_counter() - t0))
    return best, batch.images.shape[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--generate", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    images, labels = load("train", a.generate)
    src = os.path.join(a.work, "png-train")
    write_folders(images, labels, src)
    out = {"samples": int(len(images)), "pixel_bytes": int(images.size),
           "source": "generated" if a.generate else "fashion-mnist"}
    forms = (("gray", ()), ("rgb", ("--pixels", "rgb")))
    rates = {form: [] for form, _ in forms}
    for form, extra in forms:
        size = shardify(a.build, src, os.path.join(a.work, f"shards-{form}"), *extra)
        out[form] = {"shard_bytes": size, "bytes_per_pixel_byte": round(size / images.size, 3)}
    for run in range(a.runs):  # the forms alternate, so that a busy neighbour hurts both
        for form, _ in forms:
            rate, shape = read_rate(os.path.join(a.work, f"shards-{form}"), a.epochs)
            rates[form].append(rate)
            out[form]["sample_shape"] = list(shape)
    for form, _ in forms:
        out[form]["samples_per_s"] = round(float(np.median(rates[form])))
        out[form]["runs_samples_per_s"] = [round(r) for r in rates[form]]
    out["storage_gain"] = round(out["rgb"]["shard_bytes"] / out["gray"]["shard_bytes"], 2)
    out["read_gain"] = round(out["gray"]["samples_per_s"] / out["rgb"]["samples_per_s"], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
