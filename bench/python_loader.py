#!/usr/bin/python3
"""The Python loader's throughput: binding overhead and training transforms.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_loader.py BIN DATASET \\
        [--threads N] [--epochs E] [--runs R] [--size 256] [--codecs jpeg,raw]

For each codec, shards are made from DATASET (a folder of images, e.g. the
imagenet sample) with BIN/shardify --size SIZE (raw with --zstd-level -100, as
in BENCHMARKS.md section 5), then, run after run and
interleaved so that a machine's drift hits all three alike:

  shardbench  BIN/shardbench shards DST --threads N --epochs E: the C reader,
              decoded pixels out (its steady epochs' samples/s)
  loader      shardkit.Loader(DST, 64, threads=N) without a transform: the
              same reads and decodes, batches handed to Python as per-sample
              numpy arrays; the ratio loader / shardbench is the binding's
              overhead (target: >= 0.9)
  train       shardkit.Loader with RandomResizedCrop(224) + RandomHorizontalFlip
              + Normalize, float32 NCHW: training-ready batches

Each figure is samples/s over epochs 2..E (the first faults memory in and
fills the page cache), with the process's CPU time per sample beside it (the
steadier figure on a shared machine), the median over the runs.
Prints a Markdown table, and JSON with --json.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import shardkit

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def shardbench(bin_dir, dst, threads, epochs):
    out = subprocess.run([os.path.join(bin_dir, "shardbench"), "shards", dst, "--threads",
                          str(threads), "--epochs", str(epochs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["steady"]["samples_per_second"], r["steady"]["cpu_seconds_per_sample"] * 1e3


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def loader_rate(dst, threads, epochs, transform):
    kwargs = {}
    if transform:
        kwargs = dict(transform=[shardkit.RandomResizedCrop(224),
                                 shardkit.RandomHorizontalFlip(),
                                 shardkit.Normalize(MEAN, STD)],
                      layout="NCHW", dtype="float32")
    loader = shardkit.Loader(dst, 64, threads=threads, **kwargs)
    rates, cpus = [], []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        start, cpu, n = time.monotonic(), cpu_seconds(), 0
        for batch in loader:
            n += len(batch)
        rates.append(n / (time.monotonic() - start))
        cpus.append((cpu_seconds() - cpu) / n * 1e3)
    steady = slice(1, None) if epochs > 1 else slice(None)
    return (statistics.mean(rates[steady]), statistics.mean(cpus[steady]), loader.stats)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("bin")
    p.add_argument("dataset")
    p.add_argument("--threads", type=int, default=shardkit._native.available_cpus())
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--codecs", default="jpeg,raw")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="shardkit-pybench.") as tmp:
        for codec in a.codecs.split(","):
            dst = os.path.join(tmp, codec)
            # raw shards as section 5 of BENCHMARKS.md writes them: fast zstd
            level = ["--zstd-level", "-100"] if codec == "raw" else []
            subprocess.run([os.path.join(a.bin, "shardify"), a.dataset, dst, "--size",
                            str(a.size), "--codec", codec, *level, "--quiet"], check=True)
            runs = {k: [] for k in ("shardbench", "loader", "train")}
            cpu = {k: [] for k in runs}
            for _ in range(a.runs):
                for name, measure in (
                        ("shardbench", lambda: shardbench(a.bin, dst, a.threads, a.epochs)),
                        ("loader", lambda: loader_rate(dst, a.threads, a.epochs, False)[:2]),
                        ("train", lambda: loader_rate(dst, a.threads, a.epochs, True)[:2])):
                    rate, ms = measure()
                    runs[name].append(rate)
                    cpu[name].append(ms)
            results[codec] = {k: statistics.median(v) for k, v in runs.items()}
            results[codec]["cpu_ms_per_sample"] = {k: statistics.median(v) for k, v in cpu.items()}
            results[codec]["runs"] = runs
    if a.json:
        json.dump({"threads": a.threads, "epochs": a.epochs, "size": a.size,
                   "results": results}, sys.stdout, indent=1)
        print()
        return
    print(f"threads {a.threads}, shards at --size {a.size}, samples/s over epochs 2..{a.epochs} "
          f"(and process CPU ms per sample), median of {a.runs} runs")
    print()
    print("| codec | shardbench shards | Loader, no transform | ratio | Loader, RRC224+flip+"
          "Normalize f32 NCHW |")
    print("|---|---|---|---|---|")
    for codec, r in results.items():
        c = r["cpu_ms_per_sample"]
        print(f"| {codec} | {r['shardbench']:.0f} ({c['shardbench']:.3f} ms) | "
              f"{r['loader']:.0f} ({c['loader']:.3f} ms) | {r['loader'] / r['shardbench']:.2f} | "
              f"{r['train']:.0f} ({c['train']:.3f} ms) |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
