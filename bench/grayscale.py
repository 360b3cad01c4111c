#!/usr/bin/env python3
"""grayscale.py - what storing a grey dataset as grey saves: shard bytes and read rate.

Writes Fashion-MNIST (Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist)
as PNG class folders, or with --generate N a grey set of N random 28x28 PNGs in 10
classes, converts it twice with --codec raw (the default --pixels auto, which keeps 1
channel, and --pixels rgb, the 3 channels every dataset had before), and reads each
through shardkit.Loader without a transform (one array per batch: every sample is
28x28).  Prints one JSON object: pixel bytes, shard bytes, and samples/s per form.

    bench/grayscale.py BUILD WORK [--generate N] [--epochs E]
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


def load(split, generate, rng):
    """(images, labels) of `split` ("train" or "t10k")."""
    if generate:
        n = generate if split == "train" else max(generate // 6, 10)
        return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n)
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
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    rng = np.random.default_rng(0)
    images, labels = load("train", a.generate, rng)
    src = os.path.join(a.work, "png-train")
    write_folders(images, labels, src)
    out = {"samples": int(len(images)), "pixel_bytes": int(images.size),
           "source": "generated" if a.generate else "fashion-mnist"}
    for form, extra in (("gray", ()), ("rgb", ("--pixels", "rgb"))):
        dst = os.path.join(a.work, f"shards-{form}")
        size = shardify(a.build, src, dst, *extra)
        rate, shape = read_rate(dst, a.epochs)
        out[form] = {"shard_bytes": size, "bytes_per_pixel_byte": round(size / images.size, 3),
                     "samples_per_s": round(rate), "sample_shape": list(shape)}
    out["storage_gain"] = round(out["rgb"]["shard_bytes"] / out["gray"]["shard_bytes"], 2)
    out["read_gain"] = round(out["gray"]["samples_per_s"] / out["rgb"]["samples_per_s"], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
