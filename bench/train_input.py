#!/usr/bin/python3
"""Training input: shardkit.Loader against what users run instead.

    PYTHONPATH=build/python:../shared/peers/webdataset /usr/bin/python3 \\
        bench/train_input.py BIN DATASET [--threads N] [--runs R] [--epochs E] [--json]

The same samples (DATASET, a folder of images such as the imagenet sample),
the same cores (--threads: loader threads, DataLoader num_workers, default the
CPUs this process may use), the same augmentation on every path -
RandomResizedCrop(224), a horizontal flip, Normalize - and the same output,
float32 NCHW batches of 64:

  imagefolder  torchvision ImageFolder + DataLoader over DATASET's own files
               (a flat folder is shown to ImageFolder as one class)
  wds-jpeg     WebDataset + DataLoader over tar shards of the 256-px JPEGs the
               jpeg shards hold (the same bytes, from Dataset.stored), decoded
               with PIL, the transforms in Python, batched in the workers
  wds-npy      the same over tar shards of the raw shards' pixels as .npy
  shards-jpeg  shardkit.Loader over shardify --size 256 --codec jpeg shards
  shards-jpeg-uint8  the same with uint8 NCHW output and no Normalize (the
               normalisation left to the device: one op per batch there)
  shards-raw   shardkit.Loader over --codec raw --zstd-level -100 shards
  ceiling-train  build/bench/train_ceiling over the jpeg shards: the Loader's
               per-sample work (the crop's region decoded, resize, flip,
               normalise, float32 NCHW) from memory on one core, times the
               cores - the ceiling of the jpeg training pipeline
  ceiling-train-wall  the same run on --threads threads at once, by the
               clock: the ceiling's wall rate under the load the Loader met
  ceiling-*    shardbench shards over the same shards: the C reader, decoded
               pixels out and no transform (what a reader can do at all)

Each figure is samples/s over epochs 2..E of one run (the first starts the
workers and fills the page cache), the median over R runs, with the CPU time
per sample of the whole run beside it (every process: the DataLoader's
workers, shardbench; the steadier figure on a busy machine); the runs take the
paths in turn, so that a machine's drift hits all alike.  The ratios are
shards against each peer, with the targets beside them.  The WebDataset peer
is used from ../shared/peers/webdataset through PYTHONPATH (see its
SOURCE.txt); torch, torchvision and PIL are Debian's.
"""
import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import shardkit
from shardkit.probe import image_folder_root

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CROP, SIZE, BATCH = 224, 256, 64
TAR_SAMPLES = 250   # samples per WebDataset tar shard (four for the sample)
SHUFFLE = 256       # WebDataset's sample shuffle buffer
# (ours, peer): the ratio shardkit.Loader should reach
TARGETS = {("shards-jpeg", "imagefolder"): 8, ("shards-jpeg", "wds-jpeg"): 6,
           ("shards-raw", "imagefolder"): 15, ("shards-raw", "wds-npy"): 10,
           ("shards-jpeg", "ceiling-train"): 0.95}
# (ours, other): ratios shown without a target
EXTRA = {("shards-jpeg", "ceiling-train-wall"): None,
         ("shards-jpeg-uint8", "shards-jpeg"): None, ("ceiling-train", "imagefolder"): None,
         ("ceiling-train", "wds-jpeg"): None}
PATHS = ("imagefolder", "wds-jpeg", "wds-npy", "shards-jpeg", "shards-jpeg-uint8", "shards-raw",
         "ceiling-train", "ceiling-train-wall", "ceiling-jpeg", "ceiling-raw")


def torch_transform():
    from torchvision import transforms as T
    return T.Compose([T.RandomResizedCrop(CROP), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize(MEAN, STD)])


# ---- the datasets ---------------------------------------------------------

def make_shards(bin_dir, dataset, dst, codec):
    level = ["--zstd-level", "-100"] if codec == "raw" else []
    subprocess.run([os.path.join(bin_dir, "shardify"), dataset, dst, "--size", str(SIZE),
                    "--codec", codec, *level, "--quiet"], check=True)


def make_tars(shards, pattern, as_npy):
    """WebDataset tar shards of a shardkit dataset's samples: the stored
    JPEG bytes as .jpg, or the pixels as .npy; the label as .cls."""
    import webdataset as wds
    ds = shardkit.Dataset(shards)
    with wds.ShardWriter(pattern, maxcount=TAR_SAMPLES, verbose=0) as sink:
        for i in range(len(ds)):
            codec, width, height, data = ds.stored(i)
            label = ds[i].label
            sample = {"__key__": f"{i:06d}", "cls": -1 if label is None else label}
            if as_npy:
                assert codec == "raw"
                pixels = np.frombuffer(data, np.uint8).reshape(height, width, 3)
                buf = io.BytesIO()
                np.save(buf, pixels)
                sample["npy"] = buf.getvalue()
            else:
                assert codec == "jpeg"
                sample["jpg"] = data
            sink.write(sample)
    return sorted(os.path.join(os.path.dirname(pattern), f)
                  for f in os.listdir(os.path.dirname(pattern)) if f.endswith(".tar"))


# ---- the paths --------------------------------------------------------------

def imagefolder_loader(root, threads):
    import torch
    import torchvision
    folder = torchvision.datasets.ImageFolder(root, transform=torch_transform())
    return torch.utils.data.DataLoader(folder, batch_size=BATCH, shuffle=True,
                                       num_workers=threads, persistent_workers=threads > 0)


def webdataset_loader(tars, threads, npy):
    import torch
    import webdataset as wds
    from PIL import Image
    transform = torch_transform()
    pipeline = wds.WebDataset(tars, shardshuffle=len(tars), empty_check=False).shuffle(SHUFFLE)
    if npy:
        pipeline = (pipeline.decode().to_tuple("npy", "cls")
                    .map_tuple(lambda a: transform(Image.fromarray(a)), int))
    else:
        pipeline = pipeline.decode("pil").to_tuple("jpg", "cls").map_tuple(transform, int)
    pipeline = pipeline.batched(BATCH)  # in the workers
    return torch.utils.data.DataLoader(pipeline, batch_size=None, num_workers=threads,
                                       persistent_workers=threads > 0)


def shardkit_loader(shards, threads, uint8=False, **options):
    """shardkit.Loader with the augmentation every path runs, float32 NCHW
    (uint8: uint8 NCHW without Normalize, left to the device); `options`
    (fields=, output=, ...) go to the Loader as they are."""
    normalize = [] if uint8 else [shardkit.Normalize(MEAN, STD)]
    return shardkit.Loader(shards, BATCH, threads=threads, layout="NCHW",
                           dtype="uint8" if uint8 else "float32",
                           transform=[shardkit.RandomResizedCrop(CROP),
                                      shardkit.RandomHorizontalFlip(), *normalize], **options)


def labelled_images(batch):
    """The images of an (images, labels) batch."""
    images, _ = batch
    return images


def steady_rate(loader, epochs, set_epoch=None, unpack=labelled_images, dtype="float32"):
    """(samples/s over epochs 2..epochs (all of them with one epoch),
    samples over all epochs).  unpack(batch) gives a batch's images, having
    asserted what else the batch should hold."""
    rates, total = [], 0
    for epoch in range(epochs):
        if set_epoch:
            set_epoch(epoch)
        start, n = time.monotonic(), 0
        for batch in loader:
            images = unpack(batch)
            assert str(images.dtype).endswith(dtype)
            assert tuple(images.shape[1:]) == (3, CROP, CROP)
            n += images.shape[0]
        rates.append(n / (time.monotonic() - start))
        total += n
    return statistics.mean(rates[1:] if epochs > 1 else rates), total


def shardbench_rate(bin_dir, shards, threads, epochs):
    epochs = max(epochs, 2)
    out = subprocess.run([os.path.join(bin_dir, "shardbench"), "shards", shards, "--threads",
                          str(threads), "--epochs", str(epochs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return (json.loads(out)["steady"]["samples_per_second"],
            len(shardkit.Dataset(shards)) * epochs)


def train_ceiling_rate(bin_dir, shards, threads, wall=False):
    """The jpeg training pipeline's ceiling (build/bench/train_ceiling): one
    core's samples/s times `threads` (wall: the rate of `threads` threads
    running it at once, by the clock), and the samples its epochs did (a
    warm-up and 3 + 3)."""
    reps = 3
    program = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "bench", "train_ceiling")
    out = subprocess.run([program, "--threads", str(threads), "--reps", str(reps), "--crop",
                          str(CROP), "--json", shards],
                         check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    rate = got["threads_samples_per_second" if wall else "ceiling_samples_per_second"]
    return rate, got["samples"] * (1 + 2 * reps)


def cpu_seconds():
    """CPU time of this process and of its children that have ended (the
    DataLoader's workers once they are shut down, shardbench)."""
    return sum(getattr(resource.getrusage(who), field)
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def pair_run_args(doc, paths):
    """The command line of a script comparing paths run in turn: BIN DATASET
    [--threads N] [--runs R] [--epochs E] [--paths P,...] [--json]."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("bin", help="the directory of shardify")
    p.add_argument("dataset", help="a folder of images")
    p.add_argument("--threads", type=int, default=shardkit._native.available_cpus())
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--paths", default=",".join(paths))
    p.add_argument("--json", action="store_true")
    return p.parse_args()


def run_in_turn(a, paths, run_one):
    """a.runs runs, each running every path in turn (run_one(path) returns its
    steady samples/s and the samples it read): ({path: [samples/s]}, {path:
    [CPU ms per sample]}), the CPU over the whole run, every process of the
    path counted (startup and first epoch included)."""
    rates = {path: [] for path in paths}
    cpu = {path: [] for path in paths}
    for run in range(a.runs):
        for path in paths:
            before = cpu_seconds()
            rate, samples = run_one(path)
            ms = (cpu_seconds() - before) / samples * 1e3
            rates[path].append(rate)
            cpu[path].append(ms)
            print(f"run {run + 1}/{a.runs} {path}: {rate:.0f} samples/s, {ms:.2f} ms CPU "
                  f"per sample", file=sys.stderr, flush=True)
    return rates, cpu


def report_pair_runs(a, paths, rates, cpu, targets, extra, title):
    """Print (or with a.json dump) the medians of paths run in turn: samples/s
    and CPU ms per sample, the (ours, peer) ratios of `targets` ({(ours,
    peer): target}) and of `extra` ({(ours, peer): target text or None})."""
    median = {path: statistics.median(r) for path, r in rates.items()}
    cpu_ms = {path: statistics.median(r) for path, r in cpu.items()}
    ratios = {f"{ours}/{peer}": {"ratio": median[ours] / median[peer],
                                 "cpu_ratio": cpu_ms[peer] / cpu_ms[ours], "target": target}
              for (ours, peer), target in {**targets, **extra}.items()
              if ours in median and peer in median}
    if a.json:
        json.dump({"threads": a.threads, "epochs": a.epochs, "runs": a.runs, "batch": BATCH,
                   "samples_per_second": median, "cpu_ms_per_sample": cpu_ms, "all_runs": rates,
                   "all_runs_cpu_ms": cpu, "ratios": ratios}, sys.stdout, indent=1)
        print()
        return
    print(f"threads {a.threads}, batch {BATCH}, {title}; samples/s over epochs 2..{a.epochs}, "
          f"median of {a.runs} runs")
    print()
    print("| path | samples/s | runs | CPU ms per sample (whole run) |")
    print("|---|---|---|---|")
    for path in paths:
        print(f"| {path} | {median[path]:.0f} | {', '.join(f'{r:.0f}' for r in rates[path])} | "
              f"{cpu_ms[path]:.2f} |")
    print()
    print("| ratio | samples/s | CPU per sample | target |")
    print("|---|---|---|---|")
    for name, r in ratios.items():
        target = f"{r['target']}x" if isinstance(r["target"], (int, float)) else (
            r["target"] or "-")
        print(f"| {name} | {r['ratio']:.2f}x | {r['cpu_ratio']:.2f}x | {target} |")


def run_path(path, a, work):
    if path == "imagefolder":
        loader = imagefolder_loader(work["folder"], a.threads)
        result = steady_rate(loader, a.epochs)
        del loader  # ends (and waits for) the persistent workers
        return result
    if path.startswith("wds-"):
        loader = webdataset_loader(work[path], a.threads, path == "wds-npy")
        result = steady_rate(loader, a.epochs)
        del loader
        return result
    if path == "shards-jpeg-uint8":
        with shardkit_loader(work["shards-jpeg"], a.threads, uint8=True) as loader:
            return steady_rate(loader, a.epochs, loader.set_epoch, dtype="uint8")
    if path.startswith("shards-"):
        with shardkit_loader(work[path], a.threads) as loader:
            return steady_rate(loader, a.epochs, loader.set_epoch)
    if path.startswith("ceiling-train"):
        return train_ceiling_rate(a.bin, work["shards-jpeg"], a.threads, path.endswith("-wall"))
    return shardbench_rate(a.bin, work["shards-" + path.split("-")[1]], a.threads, a.epochs)


def main():
    a = pair_run_args(__doc__, PATHS)
    paths = a.paths.split(",")
    with tempfile.TemporaryDirectory(prefix="shardkit-train-input.") as tmp:
        work = {"shards-jpeg": os.path.join(tmp, "jpeg"), "shards-raw": os.path.join(tmp, "raw")}
        make_shards(a.bin, a.dataset, work["shards-jpeg"], "jpeg")
        make_shards(a.bin, a.dataset, work["shards-raw"], "raw")
        for name, source, npy in (("wds-jpeg", "shards-jpeg", False),
                                  ("wds-npy", "shards-raw", True)):
            os.makedirs(os.path.join(tmp, name))
            work[name] = make_tars(work[source], os.path.join(tmp, name, "%06d.tar"), npy)
        work["folder"], _ = image_folder_root(a.dataset, tmp)
        rates, cpu = run_in_turn(a, paths, lambda path: run_path(path, a, work))
    report_pair_runs(a, paths, rates, cpu, TARGETS, EXTRA,
                     f"RandomResizedCrop({CROP}) + flip + Normalize, float32 NCHW")


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
