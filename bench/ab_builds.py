#!/usr/bin/python3
"""Two builds side by side, alternating run by run: the numbers a change to the
library's internals could move.

    bench/ab_builds.py BEFORE_BUILD AFTER_BUILD DATASET WORK [--runs R] [--size N]
                       [--after-options OPTS]

BEFORE_BUILD and AFTER_BUILD are build directories (`make build python`, the
first from a checkout of the commit before the change, e.g. `git worktree add`
and `make BUILD=/tmp/before build python`).  For each, in each run, in turn
(the order flips every run so that neither build always goes first):

  convert      BUILD/bin/shardify DATASET --size N (jpeg, 2 threads): images/s,
               and the process's CPU ms per image
  shards-jpeg  BUILD/bin/shardbench shards on JPEG shards of DATASET at --size N
               (the prefetching iterator): samples/s over epochs 2..3
  shards-raw   the same on raw shards
  files        BUILD/bin/shardbench files DATASET --size N (the small-file
               loader of the benchmark): samples/s over epoch 2
  loader       shardkit.Loader(jpeg shards, 64, threads=2) from BUILD/python,
               no transform: samples/s over epochs 2..3

The shards are written once, by AFTER_BUILD (with OPTS: shardify options only it
takes, that give the before build's shards, e.g. "--pixels rgb --depth 8"), into WORK; the first run also
checks that both builds convert DATASET to the same shards and index.  Prints a
Markdown table: medians of the rates, their ratio, the median and range of the
run-by-run ratios (each run's pair ran back to back: the steadier figure on a
shared machine), and the median CPU ms per sample, which a loaded machine
moves least.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

LOADER = r"""
import json, resource, sys, time, shardkit
dst, epochs = sys.argv[1], int(sys.argv[2])
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
loader = shardkit.Loader(dst, 64, threads=2)
rates, cpus = [], []
for e in range(epochs):
    loader.set_epoch(e)
    t, c, n = time.monotonic(), cpu(), 0
    for b in loader:
        n += len(b)
    rates.append(n / (time.monotonic() - t))
    cpus.append((cpu() - c) / n * 1e3)
print(json.dumps({"rate": sum(rates[1:]) / (epochs - 1), "cpu_ms": sum(cpus[1:]) / (epochs - 1)}))
"""

MEASURES = ["convert", "shards-jpeg", "shards-raw", "files", "loader"]


def run(cmd, env):
    """stdout, wall seconds and the child's CPU seconds (user + system)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()  # before waiting: a full pipe would block the child
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"ab_builds.py: {' '.join(cmd)} exited with {proc.returncode}")
    return out, time.monotonic() - start, usage.ru_utime + usage.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("dataset")
    p.add_argument("work")
    p.add_argument("--runs", type=int, default=11)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--after-options", default="",
                   help="shardify options of the after build only, that make the shards the "
                        "before build makes and reads (--pixels rgb --depth 8 across version 3)")
    a = p.parse_args()
    after_options = shlex.split(a.after_options)
    builds = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    os.makedirs(a.work, exist_ok=True)
    shards = {}
    for codec in ("jpeg", "raw"):
        shards[codec] = os.path.join(a.work, "shards-" + codec)
        if not os.path.exists(os.path.join(shards[codec], "manifest.json")):
            subprocess.run([builds["after"] + "/bin/shardify", a.dataset, shards[codec], "--size",
                            str(a.size), "--codec", codec, "--quiet", *after_options], check=True)
    with open(os.path.join(shards["jpeg"], "manifest.json")) as f:
        images = json.load(f)["counts"]["samples"]

    def steady(out):
        r = json.loads(out)["steady"]
        return r["samples_per_second"], r["cpu_seconds_per_sample"] * 1e3

    def measure(name, build):
        b = builds[build]
        if name == "convert":
            dst = os.path.join(a.work, "convert-" + build)
            _, wall, cpu = run([b + "/bin/shardify", a.dataset, dst, "--size", str(a.size),
                                "--quiet", "--overwrite",
                                *(after_options if build == "after" else [])], env)
            return images / wall, cpu / images * 1e3
        if name.startswith("shards-"):
            return steady(run([b + "/bin/shardbench", "shards", shards[name[7:]], "--epochs", "3",
                               "--json"], env)[0])
        if name == "files":
            return steady(run([b + "/bin/shardbench", "files", a.dataset, "--size", str(a.size),
                               "--epochs", "2", "--json"], env)[0])
        out = run(["/usr/bin/python3", "-c", LOADER, shards["jpeg"], "3"],
                  dict(env, PYTHONPATH=b + "/python"))[0]
        r = json.loads(out)
        return r["rate"], r["cpu_ms"]

    res = {n: {b: [] for b in builds} for n in MEASURES}
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    for i in range(a.runs):
        order = ["before", "after"] if i % 2 == 0 else ["after", "before"]
        for n in MEASURES:
            for b in order:
                res[n][b].append(measure(n, b))
        print(f"run {i + 1} of {a.runs}, after/before: " + ", ".join(
            f"{n} {res[n]['after'][-1][0] / res[n]['before'][-1][0]:.3f}" for n in MEASURES),
            file=sys.stderr)
        if i == 0:
            diff = subprocess.run(["diff", "-r", "-q", "-x", "journal*", "-x", "*.json",
                                   os.path.join(a.work, "convert-before"),
                                   os.path.join(a.work, "convert-after")],
                                  capture_output=True, text=True)
            if diff.returncode:
                sys.exit("ab_builds.py: the two builds convert differently:\n" + diff.stdout)
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    json.dump(res, open(os.path.join(a.work, "ab_builds.json"), "w"))
    print(f"{a.runs} runs alternating the builds, --size {a.size}; load average {load_before} "
          f"before, {load_after} after; both builds wrote the same shards and index")
    print()
    print("| measure | before /s | after /s | ratio of medians | run-by-run ratio: median "
          "(range) | CPU ms/sample before | after |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for n in MEASURES:
        before = [r for r, _ in res[n]["before"]]
        after = [r for r, _ in res[n]["after"]]
        ratios = [y / x for x, y in zip(before, after)]
        cpu_before = statistics.median(c for _, c in res[n]["before"])
        cpu_after = statistics.median(c for _, c in res[n]["after"])
        print(f"| {n} | {statistics.median(before):.0f} | {statistics.median(after):.0f} | "
              f"{statistics.median(after) / statistics.median(before):.3f} | "
              f"**{statistics.median(ratios):.3f}** ({min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{cpu_before:.3f} | {cpu_after:.3f} |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
