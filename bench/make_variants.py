#!/usr/bin/env python3
"""make_variants.py - a large source made from a small one, for bench/incremental.sh.

    make_variants.py SRC DST COUNT                 write COUNT images into DST
    make_variants.py --change PERCENT DST          re-encode PERCENT of DST's images

The first form writes DST/<class>/vNNNNNN.jpg, COUNT copies of SRC's images
(round robin), each resized by a factor in 0.5..0.9 and re-encoded at a
quality in 80..95 (both derived from its number), so every copy has bytes
of its own; the class is the SRC file name's prefix before '_' (ImageNet's
synset).  The second form re-encodes a deterministic PERCENT of DST's
images at another quality: their bytes change, their keys do not.  Runs on
every CPU (multiprocessing); Pillow does the work.
"""
import argparse
import multiprocessing
import os
import random
import sys

from PIL import Image


def variant(job):
    src, dst, n = job
    scale = 0.5 + (n * 7919 % 401) / 1000.0
    quality = 80 + n % 16
    with Image.open(src) as im:
        im = im.convert("RGB")
        w, h = max(1, int(im.width * scale)), max(1, int(im.height * scale))
        im.resize((w, h), Image.BILINEAR).save(dst, "JPEG", quality=quality)


def reencode(path):
    with Image.open(path) as im:
        im = im.convert("RGB")
        im.load()
    im.save(path, "JPEG", quality=70)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--change", type=float, metavar="PERCENT")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    with multiprocessing.Pool() as pool:
        if a.change is not None:
            (dst,) = a.paths
            files = sorted(os.path.join(d, f) for d, _, fs in os.walk(dst) for f in fs)
            picked = random.Random(1).sample(files, round(len(files) * a.change / 100.0))
            pool.map(reencode, picked, chunksize=16)
            print(f"re-encoded {len(picked)} of {len(files)} files")
            return 0
        src, dst, count = a.paths[0], a.paths[1], int(a.paths[2])
        names = sorted(f for f in os.listdir(src) if f.lower().endswith((".jpeg", ".jpg")))
        if not names:
            sys.exit(f"make_variants: no JPEG in '{src}'")
        jobs = []
        for n in range(count):
            name = names[n % len(names)]
            cls = name.split("_")[0]
            os.makedirs(os.path.join(dst, cls), exist_ok=True)
            jobs.append((os.path.join(src, name), os.path.join(dst, cls, f"v{n:06d}.jpg"), n))
        pool.map(variant, jobs, chunksize=16)
        print(f"wrote {count} images into {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
