#!/usr/bin/env python3
"""What `import shardkit` costs a training process, for builds of the
package side by side (before and after a change, in the same run).

    bench/import_cost.py DATASET NAME=PYTHONPATH [NAME=PYTHONPATH ...] [--runs N] [--batch B]

Each run starts one fresh interpreter per build, the builds alternating (and
their order turning) run by run, so a noisy neighbour hurts all alike.  The
child imports numpy, then shardkit (timed apart: shardkit imports numpy
anyway, and numpy's cost is not shardkit's), records its resident memory
(VmRSS) and the shared objects it has mapped, then reads one training batch
from DATASET (a shardkit.Loader of B samples, RandomResizedCrop(224) and a
flip, 2 threads) and records them again.  Printed: the median of each figure
per build, as a Markdown table; --json also gives every run's figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import shardkit
t2 = time.perf_counter()

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def shared_objects():
    with open("/proc/self/maps") as f:
        return sorted({l.split()[-1] for l in f if ".so" in l.split()[-1]})

after_import = {"rss_kib": rss_kib(), "objects": shared_objects()}
ds = shardkit.Dataset(sys.argv[1])
loader = shardkit.Loader(ds, int(sys.argv[2]), threads=2, seed=1, transform=[
    shardkit.RandomResizedCrop(224), shardkit.RandomHorizontalFlip()])
images, labels = next(iter(loader))
t3 = time.perf_counter()
print(json.dumps({"numpy_s": t1 - t0, "shardkit_s": t2 - t1, "batch_s": t3 - t2,
                  "import_rss_kib": after_import["rss_kib"],
                  "import_objects": after_import["objects"],
                  "batch_rss_kib": rss_kib(), "batch_objects": shared_objects(),
                  "batch_shape": list(images.shape)}))
"""

FIGURES = [
    ("numpy_s", "import numpy, ms", lambda v: f"{v * 1000:.1f}"),
    ("shardkit_s", "then import shardkit, ms", lambda v: f"{v * 1000:.1f}"),
    ("import_rss_kib", "RSS after import, MiB", lambda v: f"{v / 1024:.1f}"),
    ("import_nobjects", "shared objects mapped after import", lambda v: f"{v:.0f}"),
    ("batch_s", "first batch, ms", lambda v: f"{v * 1000:.0f}"),
    ("batch_rss_kib", "RSS after the batch, MiB", lambda v: f"{v / 1024:.1f}"),
    ("batch_nobjects", "shared objects mapped after the batch", lambda v: f"{v:.0f}"),
]
LIBVIPS_AND_GLIB = ("libvips", "libglib-2.0", "libgobject-2.0", "libgio-2.0")


def one_run(python, path, dataset, batch):
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([python, "-c", CHILD, dataset, str(batch)], env=env, check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out)
    for when in ("import", "batch"):
        objects = r.pop(f"{when}_objects")
        r[f"{when}_nobjects"] = len(objects)
        r[f"{when}_vips_glib"] = sorted(os.path.basename(p) for p in objects
                                        if os.path.basename(p).startswith(LIBVIPS_AND_GLIB))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", help="a shardkit dataset (JPEG records, for a training batch)")
    ap.add_argument("builds", nargs="+", metavar="NAME=PYTHONPATH",
                    help="a name and the directory holding that build's shardkit package")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", action="store_true", help="print every run's figures as JSON")
    args = ap.parse_args()
    builds = []
    for spec in args.builds:
        name, sep, path = spec.partition("=")
        if not sep or not os.path.isdir(os.path.join(path, "shardkit")):
            ap.error(f"'{spec}' is not NAME=PYTHONPATH of a directory holding shardkit/")
        builds.append((name, os.path.abspath(path)))

    runs = {name: [] for name, _ in builds}
    for k in range(args.runs):
        turn = builds[k % len(builds):] + builds[:k % len(builds)]
        for name, path in turn:
            runs[name].append(one_run(args.python, path, args.dataset, args.batch))
    if args.json:
        print(json.dumps(runs, indent=1))
        return
    print(f"{args.runs} runs per build, alternating; medians. "
          f"Batch: {args.batch} x RandomResizedCrop(224) + flip from {args.dataset}")
    print("| | " + " | ".join(name for name, _ in builds) + " |")
    print("|---|" + "---:|" * len(builds))
    for key, label, fmt in FIGURES:
        cells = [fmt(statistics.median(r[key] for r in runs[name])) for name, _ in builds]
        print(f"| {label} | " + " | ".join(cells) + " |")
    cells = [", ".join(runs[name][-1]["batch_vips_glib"]) or "none" for name, _ in builds]
    print("| libvips and glib mapped after the batch | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
