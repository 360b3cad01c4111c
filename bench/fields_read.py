#!/usr/bin/python3
"""What carrying fields costs a training loop's input.

    PYTHONPATH=build/python /usr/bin/python3 bench/fields_read.py SHARDS WORK \\
        [--runs 7] [--epochs 2] [--batch 256] [--threads N]

SHARDS is a dataset of JPEG records (e.g. shardify --size 256 --codec jpeg
over the imagenet sample).  Its records are written again into WORK twice,
payloads unchanged, by tests/fixtures/v2_writer.py (the FORMAT.md writer the
tests use): as version 1 (no fields) and as version 2 where every sample
carries an img2dataset-like caption (`text`, ~90 bytes) and metadata (`json`,
~330 bytes: url, key, status, sizes, exif, sha256).  Then runs alternate, each
in its own process, between:

  v1                the version 1 dataset
  v2, no fields     the version 2 dataset, Loader without fields (fields
                    are not even read)
  v2, 2 fields      the version 2 dataset, Loader(fields=["caption", "meta"]):
                    checked, copied, handed to Python (str and json.loads)

each reading `epochs` epochs with RandomResizedCrop(224) + RandomHorizontalFlip
+ Normalize (float32 NCHW, the training input) and, apart, with no transform
(the decode alone: the cost of fields is largest against it).  The figures
are samples/s over the epochs and the CPU time of the process (every
thread's, user and system) per sample, which a busy machine disturbs less;
the medians are printed with every run's samples/s.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import json, os, sys, time, shardkit
location, epochs, batch, threads, transform, fields = sys.argv[1:7]
t = None
if transform == "train":
    t = [shardkit.RandomResizedCrop(224), shardkit.RandomHorizontalFlip(),
         shardkit.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
kw = dict(layout="NCHW", dtype="float32") if t else {}
loader = shardkit.Loader(location, int(batch), seed=1, threads=int(threads), transform=t,
                         fields=json.loads(fields), **kw)
n = 0
start, cpu = time.perf_counter(), os.times()
for epoch in range(int(epochs)):
    loader.set_epoch(epoch)
    for b in loader:
        n += len(b)
        for name, values in b.fields.items():
            assert len(values) == len(b)
wall, end = time.perf_counter() - start, os.times()
used = end.user + end.system - cpu.user - cpu.system
print(json.dumps({"samples_per_s": n / wall, "cpu_us": 1e6 * used / n}))
"""


def caption(rng):
    words = ["a", "photo", "of", "the", "small", "dog", "on", "grass", "near", "red", "car",
             "caf\u00e9", "in", "morning", "light", "with", "two", "people", "walking"]
    return " ".join(rng.choice(words) for _ in range(rng.randrange(12, 20)))


def metadata(rng, i, width, height):
    return {"url": f"https://images.example.org/{rng.getrandbits(64):016x}/{i}.jpg",
            "key": f"{i:09d}", "status": "success", "error_message": None,
            "width": width, "height": height, "original_width": width * 3,
            "original_height": height * 3, "exif": None,
            "sha256": f"{rng.getrandbits(256):064x}"}


def make_copies(shards, work):
    """(v1, v2) locations: the records of `shards` without and with fields."""
    sys.path.insert(0, os.path.join(TOP, "tests", "fixtures"))
    import shardkit
    from v2_writer import Decl, Sample, write_dataset
    v1, v2 = os.path.join(work, "v1"), os.path.join(work, "v2")
    if os.path.exists(os.path.join(v2, "manifest.json")):
        return v1, v2
    ds = shardkit.Dataset(shards)
    per_shard = max(1, len(ds) // ds._native.shard_count())
    rng = random.Random(0)
    samples = []
    for i in range(len(ds)):
        codec, width, height, payload = ds.stored(i)
        assert codec == "jpeg", f"{shards}: records of {codec}, not jpeg"
        label = ds._native.read(i)[1]
        samples.append(Sample(ds.key_bytes(i), None if label < 0 else label, width, height,
                              payload, {"caption": caption(rng),
                                        "meta": metadata(rng, i, width, height)}))
    decls = [Decl("caption", "text", sidecar=".txt"), Decl("meta", "json", sidecar=".json")]
    size = ds.manifest["config"]["size"]
    write_dataset(v1, samples, labels=ds.labels, shard_samples=per_shard, codec="jpeg",
                  size=size)
    write_dataset(v2, samples, labels=ds.labels, fields=decls, shard_samples=per_shard,
                  codec="jpeg", size=size)
    return v1, v2


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("shards")
    p.add_argument("work")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()
    v1, v2 = make_copies(a.shards, a.work)
    variants = [("v1", v1, []), ("v2, no fields", v2, []),
                ("v2, 2 fields", v2, ["caption", "meta"])]
    for transform in ("train", "none"):
        got = {name: [] for name, _, _ in variants}
        cpu = {name: [] for name, _, _ in variants}
        for r in range(a.runs):
            order = variants if r % 2 == 0 else variants[::-1]  # alternate, both ways
            for name, location, fields in order:
                out = subprocess.run([sys.executable, "-c", CHILD, location, str(a.epochs),
                                      str(a.batch), str(a.threads), transform,
                                      json.dumps(fields)],
                                     check=True, capture_output=True, text=True).stdout
                got[name].append(json.loads(out)["samples_per_s"])
                cpu[name].append(json.loads(out)["cpu_us"])
        base = statistics.median(got["v2, no fields"])
        base_cpu = statistics.median(cpu["v2, no fields"])
        print(f"\ntransform: {transform}")
        print("| dataset, loader | samples/s (median) | wall vs v2 without fields | "
              "CPU µs/sample (median) | CPU vs v2 without fields | runs (samples/s) |")
        print("|---|---:|---:|---:|---:|---|")
        for name, values in got.items():
            m, c = statistics.median(values), statistics.median(cpu[name])
            runs = ", ".join(f"{x:.0f}" for x in values)
            print(f"| {name} | {m:.0f} | {100 * (base / m - 1):+.1f}% | {c:.0f} | "
                  f"{100 * (c / base_cpu - 1):+.1f}% | {runs} |")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
