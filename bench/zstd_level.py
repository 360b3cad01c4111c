#!/usr/bin/python3
"""Which zstd level should a codec's shards use by default?  Read speed against size.

    /usr/bin/python3 bench/zstd_level.py BIN DATASET [--codec raw|jpeg|png]
        [--levels 3,1,-1,-5,-20,-100] [--size 256] [--runs 3] [--threads N] [--epochs 3]

For each level, DATASET (a folder of images, e.g. the imagenet sample) is
shardified once with BIN/shardify --codec CODEC --size SIZE --zstd-level L, and
also once with the codec's default (no --zstd-level).  Then, run after run and
with the levels interleaved so that a machine's drift hits all of them alike,
`BIN/shardbench compare DATASET DST` reads the small files and the shards with
the same threads in one process; its ratio (shards / files samples per second,
steady epochs) is the figure of merit, next to the bytes on disk per sample
and the shardify time.  The pixel bytes (what raw shards would hold uncompressed)
come from the index's width and height.

Prints a Markdown table (medians over the runs) and, with --json, the numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def shardify(bin_dir, dataset, dst, codec, size, level):
    cmd = [os.path.join(bin_dir, "shardify"), dataset, dst, "--codec", codec,
           "--size", str(size), "--quiet"]
    if level is not None:
        cmd.append(f"--zstd-level={level}")
    start = time.monotonic()
    subprocess.run(cmd, check=True)
    return time.monotonic() - start


def dataset_bytes(dst):
    shard_bytes = pixel_bytes = 0
    manifest = json.load(open(os.path.join(dst, "manifest.json")))
    for s in manifest["shards"]:
        shard_bytes += s["bytes"]
    with open(os.path.join(dst, "index.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            pixel_bytes += r["width"] * r["height"] * 3
    return shard_bytes, pixel_bytes, manifest["config"]["zstd_level"]


def compare(bin_dir, dataset, dst, threads, epochs):
    cmd = [os.path.join(bin_dir, "shardbench"), "compare", dataset, dst,
           "--epochs", str(epochs), "--json"]
    if threads:
        cmd += ["--threads", str(threads)]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return (r["ratio"], r["files"]["samples_per_second"], r["shards"]["samples_per_second"],
            r["shards"]["steady"]["cpu_seconds_per_sample"] * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bin_dir")
    ap.add_argument("dataset")
    ap.add_argument("--codec", default="raw", choices=["raw", "jpeg", "png"])
    ap.add_argument("--levels", default="3,1,-1,-5,-20,-100")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    levels = [None] + [int(x) for x in a.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="shardkit-zstd-level.") as tmp:
        rows = {}
        for lv in levels:
            dst = os.path.join(tmp, "default" if lv is None else f"l{lv}")
            secs = shardify(a.bin_dir, a.dataset, dst, a.codec, a.size, lv)
            sb, pb, stored = dataset_bytes(dst)
            rows[lv] = dict(level=lv, stored_level=stored, shardify_seconds=secs,
                            shard_bytes=sb, pixel_bytes=pb, dst=dst,
                            ratio=[], files=[], shards=[], cpu=[])
        for _ in range(a.runs):
            for lv in levels:
                r = rows[lv]
                ratio, files, shards, cpu = compare(a.bin_dir, a.dataset, r["dst"], a.threads,
                                               a.epochs)
                r["ratio"].append(ratio)
                r["files"].append(files)
                r["shards"].append(shards)
                r["cpu"].append(cpu)
    out = []
    for lv in levels:
        r = rows[lv]
        out.append(dict(level="default" if lv is None else lv, stored_level=r["stored_level"],
                        shardify_seconds=round(r["shardify_seconds"], 2),
                        mb=round(r["shard_bytes"] / 1e6, 1),
                        stored_share=round(r["shard_bytes"] / r["pixel_bytes"], 3),
                        files_per_s=round(statistics.median(r["files"])),
                        shards_per_s=round(statistics.median(r["shards"])),
                        shards_cpu_ms=round(statistics.median(r["cpu"]), 3),
                        ratio=round(statistics.median(r["ratio"]), 2),
                        ratios=[round(x, 2) for x in r["ratio"]]))
    if a.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print(f"{a.codec} shards at --size {a.size}, shardbench compare, median of {a.runs} runs")
    print()
    print("| --zstd-level | stored level | MB | of raw pixels | shardify s | files/s "
          "| shards/s | shards CPU ms/sample | ratio | per-run ratios |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for o in out:
        print(f"| {o['level']} | {o['stored_level']} | {o['mb']} | {o['stored_share']:.0%} "
              f"| {o['shardify_seconds']} | {o['files_per_s']} | {o['shards_per_s']} "
              f"| {o['shards_cpu_ms']} "
              f"| **{o['ratio']}x** | {', '.join(map(str, o['ratios']))} |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
