#!/usr/bin/python3
"""shardify against the Pillow + multiprocessing peer, side by side, in one run.

    compare_pillow.py BIN_DIR SRC [--sizes 256,512] [--runs 5] [--threads N] [--codec jpeg]
                      [--ceiling PATH]

Alternates the two programs RUNS times per size (so a noisy neighbour hurts
both alike), each on a fresh output, same number of cores, and prints the
median images/s of each and their ratio as a Markdown table. The peer is
bench/pillow_peer.py (decode -> EXIF transpose -> RGB -> shorter side to N
with BILINEAR -> JPEG q90), also shown with Image.draft (DCT-domain
downscaling) as the strongest Pillow variant.

The write ceiling (bench/write_ceiling, built by `make bench`; --ceiling
PATH, default BIN_DIR/../bench/write_ceiling) takes its turn in the same
alternation: the same images decoded from memory at shardify's scale on the
same threads and nothing else ("decode"), and the whole per-image record
build, decode + resize + encode ("build"). shardify's share of each says
how much room is left.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_shardify(bindir, src, size, threads, codec, tmp):
    dst = os.path.join(tmp, "shards")
    shutil.rmtree(dst, ignore_errors=True)
    cmd = [os.path.join(bindir, "shardify"), src, dst, "--size", str(size), "--threads",
           str(threads), "--codec", codec, "--quiet", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["samples"] / r["seconds"], r["samples"]


def run_peer(src, size, threads, draft, tmp):
    cmd = [sys.executable, os.path.join(HERE, "pillow_peer.py"), src,
           os.path.join(tmp, "peer.out"), "--size", str(size), "--procs", str(threads)]
    if draft:
        cmd.append("--draft")
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return r["images_per_second"], r["images"]


def run_ceiling(path, src, size, threads, codec):
    cmd = [path, "--json", "--reps", "3", "--size", str(size), "--threads", str(threads),
           "--codec", codec, src]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return r["images_per_second"]["decode"], r["images_per_second"]["build"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("src")
    ap.add_argument("--sizes", default="256,512")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--codec", default="jpeg")
    ap.add_argument("--ceiling", help="bench/write_ceiling (default: beside BIN_DIR)")
    args = ap.parse_args()
    ceiling = args.ceiling or os.path.join(args.bindir, "..", "bench", "write_ceiling")
    if not os.access(ceiling, os.X_OK):
        sys.exit(f"compare_pillow: no write ceiling at '{ceiling}' (make bench builds it)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="shardkit-bench.") as tmp:
        for size in [int(s) for s in args.sizes.split(",")]:
            ours, peer, draft, dec, build = [], [], [], [], []
            for i in range(args.runs):
                ours.append(run_shardify(args.bindir, args.src, size, args.threads, args.codec,
                                         tmp)[0])
                peer.append(run_peer(args.src, size, args.threads, False, tmp)[0])
                draft.append(run_peer(args.src, size, args.threads, True, tmp)[0])
                d, b = run_ceiling(ceiling, args.src, size, args.threads, args.codec)
                dec.append(d)
                build.append(b)
                print(f"size {size} run {i + 1}: shardify {ours[-1]:.0f}/s, "
                      f"pillow {peer[-1]:.0f}/s, pillow+draft {draft[-1]:.0f}/s, "
                      f"ceiling decode {d:.0f}/s build {b:.0f}/s; ratio "
                      f"{ours[-1] / peer[-1]:.2f}x", file=sys.stderr)
            rows.append([size] + [statistics.median(v) for v in (ours, peer, draft, dec, build)])
    print(f"threads: {args.threads}, runs: {args.runs} (medians), codec: {args.codec}\n")
    print("| size | shardify img/s | Pillow img/s | ratio | Pillow+draft img/s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, o, p, d, _, _ in rows:
        print(f"| {size} | {o:.0f} | {p:.0f} | **{o / p:.2f}x** | {d:.0f} | {o / d:.2f}x |")
    print()
    print("| size | write ceiling, decode only img/s | shardify share | "
          "write ceiling, record build img/s | shardify share |")
    print("|---:|---:|---:|---:|---:|")
    for size, o, _, _, dc, bc in rows:
        print(f"| {size} | {dc:.0f} | **{100 * o / dc:.0f}%** | {bc:.0f} | "
              f"**{100 * o / bc:.0f}%** |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
