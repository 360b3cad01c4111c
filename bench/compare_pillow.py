#!/usr/bin/python3
"""shardify against the Pillow + multiprocessing peer, side by side, in one run.

    compare_pillow.py BIN_DIR SRC [--sizes 256,512] [--runs 5] [--threads N] [--codec jpeg]

Alternates the two programs RUNS times per size (so a noisy neighbour hurts
both alike), each on a fresh output, same number of cores, and prints the
median images/s of each and their ratio as a Markdown table. The peer is
bench/pillow_peer.py (decode -> EXIF transpose -> RGB -> shorter side to N
with BILINEAR -> JPEG q90), also shown with Image.draft (DCT-domain
downscaling) as the strongest Pillow variant.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("src")
    ap.add_argument("--sizes", default="256,512")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--codec", default="jpeg")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="shardkit-bench.") as tmp:
        for size in [int(s) for s in args.sizes.split(",")]:
            ours, peer, draft = [], [], []
            for i in range(args.runs):
                ours.append(run_shardify(args.bindir, args.src, size, args.threads, args.codec,
                                         tmp)[0])
                peer.append(run_peer(args.src, size, args.threads, False, tmp)[0])
                draft.append(run_peer(args.src, size, args.threads, True, tmp)[0])
                print(f"size {size} run {i + 1}: shardify {ours[-1]:.0f}/s, "
                      f"pillow {peer[-1]:.0f}/s, pillow+draft {draft[-1]:.0f}/s", file=sys.stderr)
            m_ours, m_peer, m_draft = (statistics.median(v) for v in (ours, peer, draft))
            rows.append((size, m_ours, m_peer, m_draft))
    print(f"threads: {args.threads}, runs: {args.runs} (medians), codec: {args.codec}\n")
    print("| size | shardify img/s | Pillow img/s | ratio | Pillow+draft img/s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, o, p, d in rows:
        print(f"| {size} | {o:.0f} | {p:.0f} | **{o / p:.2f}x** | {d:.0f} | {o / d:.2f}x |")


if __name__ == "__main__":
    main()
