#!/usr/bin/python3
"""The peer to beat: a Pillow + multiprocessing conversion doing shardify's job.

    pillow_peer.py SRC OUTFILE --size N [--procs P] [--draft]

For every image file under SRC (sorted): open, apply EXIF orientation, convert
to RGB, resize the shorter side to N with BILINEAR (other side floor(side*N/short),
torchvision's rule), encode JPEG quality 90, and append the bytes to OUTFILE
(written sequentially by the parent, as a shard writer would). --draft lets
libjpeg downscale in the DCT domain first (Image.draft), the trick a careful
Pillow user would add. Prints one JSON line: images, seconds, images_per_second.
"""
import argparse
import io
import json
import os
import sys
import time
from multiprocessing import Pool

from PIL import Image, ImageOps

from pillow_common import list_images, shorter_side_to

SIZE = 0
DRAFT = False


def init(size, draft):
    global SIZE, DRAFT
    SIZE, DRAFT = size, draft


def convert(path):
    try:
        with Image.open(path) as img:
            if DRAFT:
                img.draft("RGB", (SIZE, SIZE))
            img = ImageOps.exif_transpose(img)
            img = img.convert("RGB")
            img = img.resize(shorter_side_to(*img.size, SIZE), Image.BILINEAR)
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=90)
            return buf.getvalue()
    except Exception:  # a corrupt file is skipped, as a loader would
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--procs", type=int, default=os.cpu_count())
    ap.add_argument("--draft", action="store_true")
    args = ap.parse_args()
    start = time.perf_counter()
    paths = list_images(args.src)
    done = 0
    with open(args.out, "wb") as out, Pool(args.procs, init, (args.size, args.draft)) as pool:
        for data in pool.imap(convert, paths, chunksize=8):
            if data is not None:
                out.write(data)
                done += 1
        out.flush()
        os.fsync(out.fileno())
    seconds = time.perf_counter() - start
    json.dump({"images": done, "seconds": seconds, "images_per_second": done / seconds},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
