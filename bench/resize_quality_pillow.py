#!/usr/bin/python3
"""Score Pillow's resampling filters on the pixels resize_quality dumped.

bench/resize_quality --dump DIR writes, for each target size, every decoded
input (DIR/<size>/<n>.in.ppm) and its lanczos3 reference (<n>.ref.ppm).  This
script resizes each input to the reference's size with Pillow's BILINEAR,
BICUBIC, LANCZOS and BOX filters and prints, per size, the PSNR against the
reference (median and mean) and the time of one resize (best of --reps, one
core), then PSNR by reduction factor as resize_quality does.

Pillow's LANCZOS row checks the reference: it is the same filter, differing
only by Pillow's 8-bit rounding between its two passes.

Run with the system Python (Debian python3-pil; no numpy needed):

    /usr/bin/python3 bench/resize_quality_pillow.py [--reps 3] DIR
"""
import argparse
import math
import os
import statistics
import sys
import time

from PIL import Image, ImageChops

FILTERS = [
    ("Pillow BILINEAR", Image.BILINEAR),
    ("Pillow BICUBIC", Image.BICUBIC),
    ("Pillow LANCZOS", Image.LANCZOS),
    ("Pillow BOX", Image.BOX),
]
# the same groups as resize_quality.c: source short side / target short side
BUCKETS = [(1.0, "up"), (1.5, "1-1.5x"), (2.0, "1.5-2x"), (4.0, "2-4x"), (math.inf, ">=4x")]
PSNR_IDENTICAL = 99.0


def bucket_of(reduction):
    for upper, name in BUCKETS:
        if reduction < upper:
            return name
    return BUCKETS[-1][1]


def psnr(a, b):
    """PSNR over all RGB samples, from the histogram of absolute differences."""
    hist = ImageChops.difference(a, b).histogram()  # 3 x 256 bins
    sse = sum(count * (i % 256) ** 2 for i, count in enumerate(hist))
    n = a.size[0] * a.size[1] * 3
    return PSNR_IDENTICAL if sse == 0 else 10 * math.log10(255 * 255 * n / sse)


def score_size(folder, reps):
    names = sorted(f for f in os.listdir(folder) if f.endswith(".in.ppm"))
    results = {name: {"ms": [], "psnr": [], "bucket": []} for name, _ in FILTERS}
    for entry in names:
        src = Image.open(os.path.join(folder, entry))
        src.load()
        ref = Image.open(os.path.join(folder, entry.replace(".in.ppm", ".ref.ppm")))
        ref.load()
        bucket = bucket_of(min(src.size) / min(ref.size))
        for name, flt in FILTERS:
            best = math.inf
            for _ in range(reps):
                t0 = time.perf_counter()
                out = src.resize(ref.size, flt)
                best = min(best, time.perf_counter() - t0)
            r = results[name]
            r["ms"].append(best * 1e3)
            r["psnr"].append(psnr(out, ref))
            r["bucket"].append(bucket)
    return len(names), results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("dump", help="the --dump DIR of resize_quality")
    args = parser.parse_args()
    sizes = sorted((d for d in os.listdir(args.dump) if d.isdigit()), key=int)
    if not sizes:
        sys.exit(f"resize_quality_pillow: no <size> folders in '{args.dump}'")
    for size in sizes:
        n, results = score_size(os.path.join(args.dump, size), args.reps)
        print(f"\nsize {size}: {n} images, Pillow {Image.__version__}; best of {args.reps} runs, "
              "one core; PSNR against the lanczos3 reference")
        print(f"{'method':<28} {'ms med':>9} {'ms mean':>9} {'PSNR med':>9} {'PSNR mean':>9}")
        for name, _ in FILTERS:
            r = results[name]
            print(f"{name:<28} {statistics.median(r['ms']):9.3f} {statistics.mean(r['ms']):9.3f} "
                  f"{statistics.median(r['psnr']):9.2f} {statistics.mean(r['psnr']):9.2f}")
        present = [b for _, b in BUCKETS if any(b in results[n]["bucket"] for n, _ in FILTERS)]
        counts = {b: results[FILTERS[0][0]]["bucket"].count(b) for b in present}
        print(f"\nsize {size}: PSNR median (mean) by reduction factor; images per group: "
              + ", ".join(f"{b} {counts[b]}" for b in present))
        print(f"{'method':<28}" + "".join(f" {b:>15}" for b in present))
        for name, _ in FILTERS:
            r = results[name]
            cells = []
            for b in present:
                v = [p for p, bb in zip(r["psnr"], r["bucket"]) if bb == b]
                cells.append(f"   {statistics.median(v):5.2f} ({statistics.mean(v):5.2f})")
            print(f"{name:<28}" + "".join(cells))


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
