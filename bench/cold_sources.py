#!/usr/bin/python3
"""shardify from a cold source against a warm one, side by side, in one run.

    cold_sources.py BIN_DIR SRC [--size 256] [--runs 5] [--threads N] [--baseline BIN_DIR]

Alternates warm and cold runs of `shardify SRC DST --size N` RUNS times, each
on a fresh DST. Before a warm run every source file is read once (so it sits
in the page cache); before a cold run every source file's pages are dropped
from the page cache with posix_fadvise(DONTNEED), as `shardbench --cold` does
for shards, and `fincore` (util-linux) counts the pages still resident, so
the table says how cold the run really was. (A cache below the page cache,
a disk's or a hypervisor's, cannot be dropped from here: on a VM "cold" means
"not in this machine's page cache".) Prints the median images/s of each and
cold time / warm time as a Markdown table. --baseline adds the same pair of
runs for another build (e.g. one without read-ahead), alternated with ours.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from pillow_common import list_images

PAGE = os.sysconf("SC_PAGE_SIZE")


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def drop(paths):
    """Drop the files' pages; return (resident pages after, total pages)."""
    total = 0
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            total += (os.fstat(fd).st_size + PAGE - 1) // PAGE
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    resident = None
    if shutil.which("fincore"):
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "PAGES",
                              *paths], capture_output=True, text=True).stdout
        resident = sum(int(x) for x in out.split())
    return resident, total


def run_shardify(bindir, src, size, threads, tmp):
    dst = os.path.join(tmp, "shards")
    shutil.rmtree(dst, ignore_errors=True)
    cmd = [os.path.join(bindir, "shardify"), src, dst, "--size", str(size), "--threads",
           str(threads), "--quiet", "--json"]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return r["samples"] / r["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("src")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--baseline", help="another build's bin directory, measured alike")
    args = ap.parse_args()
    paths = list_images(args.src)
    builds = [("shardify", args.bindir)]
    if args.baseline:
        builds.append(("baseline", args.baseline))
    rates = {(name, state): [] for name, _ in builds for state in ("warm", "cold")}
    left = []
    with tempfile.TemporaryDirectory(prefix="shardkit-bench.") as tmp:
        for i in range(args.runs):
            for name, bindir in builds:
                warm(paths)
                rates[(name, "warm")].append(run_shardify(bindir, args.src, args.size,
                                                          args.threads, tmp))
                resident, total = drop(paths)
                left.append(resident)
                rates[(name, "cold")].append(run_shardify(bindir, args.src, args.size,
                                                          args.threads, tmp))
                print(f"run {i + 1} {name}: warm {rates[(name, 'warm')][-1]:.0f}/s, cold "
                      f"{rates[(name, 'cold')][-1]:.0f}/s ({resident} of {total} source pages "
                      f"still resident after the drop)", file=sys.stderr)
    print(f"--size {args.size}, threads: {args.threads}, runs: {args.runs} (medians), "
          f"{len(paths)} source files")
    if None not in left:
        print(f"source pages still resident after each drop: at most {max(left)} of {total}")
    print()
    print("| build | warm img/s | cold img/s | cold time / warm time |")
    print("|---|---:|---:|---:|")
    for name, _ in builds:
        w = statistics.median(rates[(name, "warm")])
        c = statistics.median(rates[(name, "cold")])
        print(f"| {name} | {w:.0f} | {c:.0f} | **{w / c:.2f}x** |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
