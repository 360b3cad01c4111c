#!/usr/bin/python3
"""The outside reference for `shardbench files`: a Pillow loader doing the files job.

    pillow_loader.py SRC --size N [--procs P] [--epochs E] [--limit N] [--seed S]

What a PyTorch DataLoader over torchvision's ImageFolder does with
transforms.Resize(N), without torch: per sample open the file, decode it
(Image.open + convert("RGB"), torchvision's pil_loader), resize the shorter
side to N with BILINEAR (the other side floor(side * N / short), torchvision's
rule; Pillow's resize is antialiased), and hand the pixels to the consumer
(the parent process) - P worker processes, as DataLoader workers are. Every
epoch walks the files in a new shuffled order. Prints one JSON object: samples
per epoch, and samples/s of the first epoch and of the steady ones.
"""
import argparse
import json
import os
import random
import sys
import time
from multiprocessing import Pool

from PIL import Image

from pillow_common import list_images, shorter_side_to

SIZE = 0


def init(size):
    global SIZE
    SIZE = size


def load(path):
    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            img = img.convert("RGB")
        img = img.resize(shorter_side_to(*img.size, SIZE), Image.BILINEAR)
        return img.size, img.tobytes()
    except Exception:  # a corrupt file: counted, as shardbench counts it
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--procs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths = list_images(args.src)
    epochs, failed = [], 0  # (samples, seconds) per epoch
    rng = random.Random(args.seed)
    with Pool(args.procs, init, (args.size,)) as pool:
        for _ in range(args.epochs):
            order = paths[:]
            rng.shuffle(order)
            if args.limit:
                order = order[:args.limit]
            start = time.perf_counter()
            done = 0
            for sample in pool.imap(load, order, chunksize=4):
                if sample is None:
                    failed += 1
                else:
                    done += 1
            epochs.append((done, time.perf_counter() - start))
    steady = epochs[1:]
    json.dump({"loader": "pillow", "pillow": Image.__version__, "procs": args.procs,
               "size": args.size, "samples_per_epoch": len(order), "failed": failed,
               "first_epoch_samples_per_second": epochs[0][0] / epochs[0][1],
               "steady_samples_per_second":
                   sum(d for d, _ in steady) / sum(s for _, s in steady) if steady else None},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
