#!/usr/bin/python3
"""The decode stage of the training path, for builds side by side.

    /usr/bin/python3 bench/crop_decode.py SHARDS PYDIR [PYDIR ...] [--runs 5] [--epochs 5]

SHARDS is a dataset of jpeg shards (e.g. BIN/shardify --size 256 --codec jpeg
over the imagenet sample); each PYDIR a built package (make python: build/python).
Runs alternate between the builds, each in its own process: shardkit.Loader
with RandomResizedCrop(224) + RandomHorizontalFlip + Normalize (float32 NCHW),
one thread, E epochs; the figure is loader.stats' decode stage, ms per sample
(the read's decode, which with a first crop decodes only the crop's region of a
JPEG record), and the transform stage beside it.  Prints the medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, sys, shardkit
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
t = [shardkit.RandomResizedCrop(224), shardkit.RandomHorizontalFlip(),
     shardkit.Normalize(mean, std)]
loader = shardkit.Loader(sys.argv[1], 64, seed=1, threads=1, transform=t, layout="NCHW",
                         dtype="float32")
for epoch in range(int(sys.argv[2])):
    loader.set_epoch(epoch)
    for _ in loader:
        pass
print(json.dumps(loader.stats["stage_ms"]))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("shards")
    p.add_argument("pydirs", nargs="+")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    a = p.parse_args()
    got = {d: {"decode": [], "transform": []} for d in a.pydirs}
    for _ in range(a.runs):
        for d in a.pydirs:
            env = dict(os.environ, PYTHONPATH=d)
            out = subprocess.run([sys.executable, "-c", CHILD, a.shards, str(a.epochs)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            stages = json.loads(out)
            for k in got[d]:
                got[d][k].append(stages[k])
    print("| build | decode ms/sample (median) | runs | transform ms/sample |")
    print("|---|---:|---|---:|")
    for d, v in got.items():
        runs = ", ".join(f"{x:.3f}" for x in v["decode"])
        print(f"| {d} | {statistics.median(v['decode']):.3f} | {runs} | "
              f"{statistics.median(v['transform']):.3f} |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
