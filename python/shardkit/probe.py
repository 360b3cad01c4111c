"""Is this training step waiting for its input?

    /usr/bin/python3 -m shardkit.probe SRC DST [--steps 30] [--warmup 5]
        [--batch-size 32] [--workers N] [--threads N] [--rounds R] [--step-ms MS]
        [--trace FILE] [--json]

SRC is the folder of image files the shards were made from, DST the shards
(made with ``shardify SRC DST``).  The probe trains a small CNN (torch, on the
CPU) for --steps steps three ways, each from the same initial weights and
with the same augmentation (RandomResizedCrop(224), a horizontal flip,
Normalize; float32 NCHW):

  resident     one fixed batch kept in memory: input costs nothing, so its
               step time is the model's own
  imagefolder  torchvision ImageFolder over SRC + torch DataLoader
               (num_workers = --workers, default the CPUs this process may use),
               the transforms in Python in the workers
  shards       shardkit.Loader over DST, the transforms in C

For each it reports the startup (from creating the input pipeline to the
first batch), the warm-up steps and, apart from them, the steady steps: step
time, images/s, the share of the step spent waiting for input, and the step
time against the resident one (input also takes cores from the model);
with --rounds R, the three ways run R times in turn and each number is the
median (a busy machine's swings hit all three alike).  Then
a one-sentence verdict: input-bound (and by how much the shards cut the wait)
or compute-bound (the loader is not the limit).

Then the capacity answer: the CPU time each input path spends per image in
the steady steps (a loader's threads and worker processes, read from /proc,
and the training loop's own time receiving the batch), and from it the host
cores each path needs to keep one accelerator busy: at the measured step
time with resident input (the model's own) and at a step time of the
accelerator you have (--step-ms).  cores = CPU per image x batch size /
step time: an input path that needs more cores than the host gives each
accelerator leaves it waiting, however the loader is tuned.

Under torchrun (WORLD_SIZE > 1) every rank runs the three ways with the model
in DistributedDataParallel (gloo), ImageFolder through a DistributedSampler
and the shards split by rank, so that, as in training, the slowest rank
holds the others back at each step's gradient all-reduce; rank 0 prints the
report with every rank's steady wait and the slowest rank of each way.

SRC must hold class folders, as ImageFolder wants.  A flat SRC (files with
no class folder) is what ``shardify --labels dir`` stores without a label;
the probe then shows ImageFolder the files as one class, through a temporary
folder of symbolic links, and trains the shards' unlabelled samples as that
class too (the timing does not depend on the labels).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

from shardkit import _native
from shardkit.dataset import Dataset
from shardkit.errors import ShardkitError

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
CROP = 224
# A step that waits for its input more than this share of its time is
# input-bound: below it, a faster loader cannot make the step much faster.
INPUT_BOUND_SHARE = 0.10
# The class folder a flat SRC is shown to ImageFolder as.
FLAT_CLASS = "unlabeled"
# ImageFolder's extensions (torchvision.datasets.folder.IMG_EXTENSIONS).
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
WAYS = ("resident", "imagefolder", "shards")
WAY_TITLES = {"resident": "one resident batch",
              "imagefolder": "ImageFolder + DataLoader",
              "shards": "shardkit.Loader"}
INPUT_WAYS = ("imagefolder", "shards")


class ProbeError(Exception):
    """What stops the probe; main() prints it as one line and exits 1."""


# ---- inputs ---------------------------------------------------------------

def _is_image(name):
    return name.lower().endswith(IMAGE_EXTENSIONS)


def image_folder_root(src, scratch):
    """(root, layout): the folder to give ImageFolder for SRC.  SRC itself
    when it has class folders ("class folders"); for a flat SRC, a folder in
    `scratch` holding one class folder of symbolic links to SRC's images
    ("flat")."""
    if not os.path.isdir(src):
        raise ProbeError(f"no such directory '{src}'" if not os.path.exists(src)
                         else f"'{src}' is not a directory")
    entries = sorted(os.scandir(src), key=lambda e: e.name)
    if any(e.is_dir() for e in entries):
        return src, "class folders"
    images = [e for e in entries if e.is_file() and _is_image(e.name)]
    if not images:
        raise ProbeError(f"no images and no class folders in '{src}'")
    root = os.path.join(scratch, "imagefolder")
    folder = os.path.join(root, FLAT_CLASS)
    os.makedirs(folder)
    for e in images:
        os.symlink(os.path.abspath(e.path), os.path.join(folder, e.name))
    return root, "flat"


def open_shards(dst):
    try:
        return Dataset(dst)
    except FileNotFoundError:
        raise ProbeError(f"no dataset at '{dst}' (make it with: shardify SRC '{dst}')") from None
    except (OSError, ShardkitError) as e:
        raise ProbeError(f"cannot open '{dst}': {e}") from None


# ---- the three ways -------------------------------------------------------

def small_cnn(torch, classes):
    """A small CNN for 224-px input: cheap enough that input can matter."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 5, stride=4, padding=2), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def shard_batches(ds, batch_size, seed, threads):
    """shardkit.Loader's batches, epoch after epoch."""
    import shardkit
    loader = shardkit.Loader(ds, batch_size, seed=seed, threads=threads, drop_last=True,
                             transform=[shardkit.RandomResizedCrop(CROP),
                                        shardkit.RandomHorizontalFlip(),
                                        shardkit.Normalize(MEAN, STD)],
                             layout="NCHW", dtype="float32", output="torch")
    return _endless(loader, loader.set_epoch, "DST")


def folder_batches(root, batch_size, seed, workers, distributed=False):
    """torchvision ImageFolder + DataLoader batches, epoch after epoch; with
    `distributed`, this rank's share (a DistributedSampler)."""
    import torch
    import torchvision
    from torchvision import transforms as T
    transform = T.Compose([T.RandomResizedCrop(CROP), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(MEAN, STD)])
    try:
        folder = torchvision.datasets.ImageFolder(root, transform=transform)
    except (FileNotFoundError, RuntimeError) as e:  # class folders without images
        raise ProbeError(f"ImageFolder cannot read '{root}': {e}") from None
    generator = torch.Generator()
    generator.manual_seed(seed)
    sampler = (torch.utils.data.distributed.DistributedSampler(folder, seed=seed, drop_last=True)
               if distributed else None)
    loader = torch.utils.data.DataLoader(folder, batch_size=batch_size, shuffle=sampler is None,
                                         sampler=sampler, num_workers=workers, drop_last=True,
                                         persistent_workers=workers > 0, generator=generator)
    return _endless(loader, sampler.set_epoch if sampler else lambda epoch: None, "SRC")


def resident_batches(batch):
    while True:
        yield batch


def _endless(loader, set_epoch, name):
    epoch = 0
    while True:
        set_epoch(epoch)
        empty = True
        for images, labels in loader:
            empty = False
            yield images, labels
        if empty:
            raise ProbeError(f"{name} holds fewer images than one batch")
        epoch += 1


# ---- what the input costs in CPU time ---------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(path):
    """(ppid, utime + stime in clock ticks) from a /proc stat file, or None
    when the process or thread is gone."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), int(fields[11]) + int(fields[12])


class InputCpu:
    """The CPU time an input pipeline made after this meter spends: that of
    the threads of this process that were not there when the meter was made
    (a loader's threads, those that have ended too; the model's threads are
    older), i.e. the process's CPU time less its old threads', and that of
    the processes descended from this one (a DataLoader's workers), read from
    /proc.  The training loop's own time receiving a batch is counted by
    time_steps.  Made and read by the same thread (the training loop's).
    `available` is False where there is no /proc (seconds() is then None)."""

    def __init__(self):
        self.pid = os.getpid()
        self.available = os.path.isdir(f"/proc/{self.pid}/task")
        self.own_thread = str(threading.get_native_id())
        self.old_threads = set(self._threads()) if self.available else set()

    def _threads(self):
        try:
            return os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return []

    def _descendants(self):
        """This process's descendants: through each thread's children list
        when the kernel keeps one, else a walk of /proc."""
        found, todo = [], [self.pid]
        children_lists = os.path.exists(f"/proc/{self.pid}/task/{self.pid}/children")
        parents = None
        while todo:
            pid = todo.pop()
            if children_lists:
                kids = []
                for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(
                        f"/proc/{pid}/task") else ():
                    try:
                        with open(f"/proc/{pid}/task/{tid}/children") as f:
                            kids += [int(k) for k in f.read().split()]
                    except OSError:
                        pass
            else:
                if parents is None:
                    parents = {}
                    for entry in os.listdir("/proc"):
                        st = _stat(f"/proc/{entry}/stat") if entry.isdigit() else None
                        if st:
                            parents.setdefault(st[0], []).append(int(entry))
                kids = parents.get(pid, [])
            found += kids
            todo += kids
        return found

    def seconds(self):
        if not self.available:
            return None
        # this process (ended threads included) and this thread to the
        # nanosecond; other threads and processes in clock ticks
        seconds = time.process_time() - time.thread_time()
        ticks = 0
        for tid in self._threads():
            if tid in self.old_threads and tid != self.own_thread:
                st = _stat(f"/proc/{self.pid}/task/{tid}/stat")
                ticks -= st[1] if st else 0
        for pid in self._descendants():
            st = _stat(f"/proc/{pid}/stat")
            ticks += st[1] if st else 0
        return seconds + ticks / CLOCK_TICKS


def time_steps(batches, step, steps, clock=time.perf_counter, steady_from=None):
    """Run `steps` training steps on batches from the iterator-making
    callable `batches`.  Returns (startup_start, [(wait_start, wait_end,
    step_end)] per step, input_cpu): the first step's wait is the startup
    (making the pipeline and its first batch).  input_cpu is the CPU seconds
    the pipeline spent from step `steady_from` on (InputCpu, and this
    thread's time in next()), read between steps, outside every span; None
    without `steady_from` or without /proc."""
    started = clock()
    meter = InputCpu() if steady_from is not None else None
    it = batches()
    spans = []
    cpu_start = input_cpu = None
    received = 0.0
    try:
        for k in range(steps):
            if k == steady_from and meter.available:
                cpu_start = meter.seconds()
            wait_start = clock() if spans else started
            thread_start = time.thread_time()
            images, labels = next(it)
            if cpu_start is not None:
                received += time.thread_time() - thread_start
            wait_end = clock()
            step(images, labels)
            spans.append((wait_start, wait_end, clock()))
        if cpu_start is not None:
            input_cpu = meter.seconds() - cpu_start + received
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()  # ends the DataLoader's workers, the Loader's threads
    return started, spans, input_cpu


def summarise(spans, warmup, batch_size, input_cpu=None):
    """The numbers of one way from its spans: startup, warm-up steps, steady
    steps (each: step time, images/s, wait share; the steady ones also the
    input's CPU milliseconds per image when `input_cpu`, the CPU seconds of
    the steady steps, is known)."""
    def block(part):
        if not part:
            return None
        waits = [e - s for s, e, _ in part]
        steps = [d - s for s, _, d in part]
        total = sum(steps)
        return {"steps": len(part),
                "step_ms": 1e3 * total / len(part),
                "step_ms_median": 1e3 * statistics.median(steps),
                "wait_ms": 1e3 * sum(waits) / len(part),
                "images_per_second": batch_size * len(part) / total if total > 0 else 0.0,
                "wait_share": sum(waits) / total if total > 0 else 0.0}

    first = spans[0]
    steady = block(spans[1 + warmup:])
    steady["input_cpu_ms_per_sample"] = (
        None if input_cpu is None else 1e3 * input_cpu / (batch_size * steady["steps"]))
    return {"startup_s": first[1] - first[0],
            "warmup": block(spans[1:1 + warmup]),
            "steady": steady}


# ---- the verdict ----------------------------------------------------------

def verdict(ways, threshold=INPUT_BOUND_SHARE):
    """(input_bound, sentence) from the steady numbers of the three ways.

    Input costs a step twice: the time the loop waits for a batch, and the
    cores the input pipeline takes from the model meanwhile.  So the step is
    input-bound when, with ImageFolder + DataLoader, it takes more than
    `threshold` longer than with resident input (whose step is the model's
    own), and the wait share says how much of that is plain waiting."""
    resident, folder, shards = (ways[w]["steady"] for w in WAYS)
    own = resident["step_ms"]
    f_step, s_step = folder["step_ms"], shards["step_ms"]
    if f_step <= own * (1 + threshold):
        return False, (f"compute-bound: with ImageFolder + DataLoader a step takes "
                       f"{f_step:.0f} ms, within {threshold:.0%} of the {own:.0f} ms it takes "
                       f"with resident input ({folder['wait_share']:.0%} of it waiting), so the "
                       f"loader is not the limit (shards: {s_step:.0f} ms).")
    cut = (f"{folder['wait_ms'] / shards['wait_ms']:.1f}x" if shards["wait_ms"] > 0
           else "to nothing")
    speedup = f_step / s_step if s_step > 0 else float("inf")
    rest = ("" if s_step <= own * (1 + threshold) else
            f"; the rest of the gap to {own:.0f} ms is the loader's threads sharing the cores "
            f"with the model")
    return True, (f"input-bound: with ImageFolder + DataLoader a step takes {f_step:.0f} ms "
                  f"against {own:.0f} ms with resident input, {folder['wait_share']:.0%} of it "
                  f"waiting for input; the shards cut the wait {cut} ({folder['wait_ms']:.0f} "
                  f"to {shards['wait_ms']:.0f} ms per step) and the step {speedup:.1f}x, to "
                  f"{s_step:.0f} ms ({shards['wait_share']:.0%} waiting{rest}).")


# ---- the capacity answer -----------------------------------------------------

def _number(value):
    """One decimal, or two significant digits below 1 (0.36 ms, 0.24 cores)."""
    return f"{value:.1f}" if value >= 1 else f"{value:.2g}"


def _numbers(values):
    """'a and b', 'a, b and c'."""
    values = [_number(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def capacity(ways, batch_size, step_ms=None, cpus=None):
    """How many host cores each input path needs to keep one accelerator
    busy: CPU time per image x images per step / step time, at the step time
    measured with resident input (the model's own) and at `step_ms` (the step
    of the accelerator the user has).  Returns a dict with the numbers and
    the sentence; the numbers are None where the CPU time is unknown."""
    per_image = {w: ways[w]["steady"].get("input_cpu_ms_per_sample") for w in INPUT_WAYS}
    measured = ways["resident"]["steady"]["step_ms"]
    steps = {"measured": measured, "given": step_ms}
    out = {"batch_size": batch_size, "input_cpu_ms_per_sample": per_image, "step_ms": steps,
           "cpus_available": cpus,
           "cores": {w: {k: None for k in steps} for w in INPUT_WAYS}}
    if any(v is None for v in per_image.values()):
        out["sentence"] = ("capacity: unknown, the CPU time of the input paths could not be "
                           "measured here (it is read from /proc)")
        return out
    for w in INPUT_WAYS:
        for k, ms in steps.items():
            if ms:
                out["cores"][w][k] = per_image[w] * batch_size / ms
    titles = [WAY_TITLES[w] for w in INPUT_WAYS]
    sentence = (f"capacity: per image, {titles[0]} spends {_number(per_image['imagefolder'])} "
                f"ms of CPU and {titles[1]} {_number(per_image['shards'])} ms; to keep one "
                f"accelerator busy at the measured {measured:.0f} ms step (batch {batch_size}, "
                f"resident input) "
                f"they need {_numbers([out['cores'][w]['measured'] for w in INPUT_WAYS])} host "
                f"cores")
    if step_ms:
        sentence += (f", at a {step_ms:g} ms step (--step-ms) "
                     f"{_numbers([out['cores'][w]['given'] for w in INPUT_WAYS])}")
    if cpus:
        sentence += f"; this process may use {cpus}"
    out["sentence"] = sentence + "."
    return out


def rank_report(per_rank):
    """Every rank's steady numbers (a list, by rank, of each rank's `ways`)
    and the slowest rank of each input way: the one waiting longest for its
    input, which holds the others back at the gradient all-reduce."""
    ranks = [{"rank": r, "ways": {w: {k: ways[w]["steady"][k]
                                      for k in ("step_ms", "wait_ms", "wait_share",
                                                "input_cpu_ms_per_sample")}
                                  for w in WAYS}}
             for r, ways in enumerate(per_rank)]
    slowest = {}
    for w in INPUT_WAYS:
        waits = [r["ways"][w]["wait_ms"] for r in ranks]
        worst = max(range(len(ranks)), key=lambda r: waits[r])
        slowest[w] = {"rank": worst, "wait_ms": waits[worst], "fastest_wait_ms": min(waits)}
    parts = [f"{WAY_TITLES[w]}: rank {slowest[w]['rank']}, waiting "
             f"{slowest[w]['wait_ms']:.0f} ms per step (the least waiting rank "
             f"{slowest[w]['fastest_wait_ms']:.0f} ms)" for w in INPUT_WAYS]
    return ranks, slowest, "slowest rank: " + "; ".join(parts) + "."


# ---- output ---------------------------------------------------------------

def chrome_trace(runs, origin):
    """One Chrome trace (chrome://tracing, Perfetto) of `runs`, a list of
    (track name, way, spans): a track each with its startup, data-wait and
    model-step spans (microseconds)."""
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "shardkit.probe"}}]
    for tid, (track, way, spans) in enumerate(runs, 1):
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                       "args": {"name": track}})
        for k, (wait_start, wait_end, step_end) in enumerate(spans):
            for name, start, end in (("startup" if k == 0 else "data-wait", wait_start, wait_end),
                                     ("model-step", wait_end, step_end)):
                events.append({"name": name, "cat": way, "ph": "X", "pid": 1, "tid": tid,
                               "ts": round((start - origin) * 1e6, 1),
                               "dur": round((end - start) * 1e6, 1), "args": {"step": k}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def median_summary(summaries):
    """Each number of one way's summaries (one per round): the median."""
    def merge(values):
        if isinstance(values[0], dict):
            return {k: merge([v[k] for v in values]) for k in values[0]}
        return None if values[0] is None else statistics.median(values)
    return merge(summaries)


def print_table(report, out=sys.stdout):
    s = report["settings"]
    rounds = f", median of {s['rounds']} rounds" if s["rounds"] > 1 else ""
    print(f"probe: {s['steps']} steps of batch {s['batch_size']} (crop {CROP}, float32 NCHW), "
          f"{s['warmup']} warm-up steps after the first, ImageFolder with {s['workers']} "
          f"workers, shardkit.Loader with {s['threads']} threads, torch with "
          f"{s['torch_threads']} threads{rounds}", file=out)
    if report["note"]:
        print(f"note: {report['note']}", file=out)
    print(file=out)
    print(f"{'':26} {'startup':>9} {'warm-up step':>13} | {'steady step':>11} "
          f"{'images/s':>9} {'waiting':>8} {'vs resident':>12}", file=out)
    for way in WAYS:
        r = report["ways"][way]
        warm = f"{r['warmup']['step_ms']:.0f} ms" if r["warmup"] else "-"
        st = r["steady"]
        print(f"{WAY_TITLES[way]:26} {r['startup_s']:>7.2f} s {warm:>13} | "
              f"{st['step_ms']:>8.0f} ms {st['images_per_second']:>9.0f} "
              f"{st['wait_share']:>8.0%} {st['vs_resident']:>11.1f}x", file=out)
    if report.get("ranks"):
        print(file=out)
        print(f"{'rank':>4} " + " ".join(f"{WAY_TITLES[w] + ' wait':>30}" for w in WAYS),
              file=out)
        for r in report["ranks"]:
            print(f"{r['rank']:>4} " + " ".join(
                f"{r['ways'][w]['wait_ms']:>21.0f} ms ({r['ways'][w]['wait_share']:>3.0%})"
                for w in WAYS), file=out)
        print(report["slowest_rank"]["sentence"], file=out)
    print(file=out)
    print(report["verdict"], file=out)
    print(report["capacity"]["sentence"], file=out)


# ---- main -----------------------------------------------------------------

def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {value}")
    return value


def positive_ms(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of milliseconds, not {text}")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m shardkit.probe",
        description="Is this training step waiting for its input? Trains a small CNN on the "
                    "CPU three ways (one resident batch; torchvision ImageFolder + DataLoader "
                    "over SRC; shardkit.Loader over DST), each with RandomResizedCrop(224) + "
                    "flip + Normalize, and reports step time, images/s and the share of the "
                    "step spent waiting for input, then a verdict and the host cores each "
                    "input path needs per accelerator. Under torchrun, every rank's wait and "
                    "the slowest rank.",
        epilog="A flat SRC (no class folders) is shown to ImageFolder as one class, as "
               "shardify --labels dir leaves such files unlabelled. Exit status: 0 ok, 1 "
               "failed, 2 usage.")
    p.add_argument("src", metavar="SRC", help="the image folder the shards were made from "
                   "(class folders, or flat)")
    p.add_argument("dst", metavar="DST", help="the shards (shardify SRC DST), a directory or "
                   "URL")
    p.add_argument("--steps", type=positive, default=30,
                   help="training steps per way, the first (startup) included (default 30)")
    p.add_argument("--warmup", type=non_negative, default=5,
                   help="steps after the first reported as warm-up, apart from the steady "
                        "ones (default 5)")
    p.add_argument("--batch-size", type=positive, default=32, help="images per step "
                   "(default 32)")
    cpus = _native.available_cpus()
    p.add_argument("--workers", type=non_negative, default=cpus,
                   help=f"DataLoader num_workers for ImageFolder (default: the CPUs this "
                        f"process may use, {cpus})")
    p.add_argument("--threads", type=non_negative, default=cpus,
                   help=f"shardkit.Loader threads (default {cpus})")
    p.add_argument("--rounds", type=positive, default=1,
                   help="run the three ways this many times in turn and report the median of "
                        "each number (steadier on a busy machine; default 1)")
    p.add_argument("--seed", type=non_negative, default=0, help="seed of the weights, the "
                   "shuffles and the augmentation (default 0)")
    p.add_argument("--step-ms", type=positive_ms, metavar="MS",
                   help="the step time of your accelerator, in milliseconds: the capacity "
                        "answer also says how many host cores each input path needs to keep "
                        "up with it")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (startup, data-wait "
                   "and model-step spans, a track per way) to FILE (under torchrun: rank 0's)")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    a = p.parse_args(argv)
    if a.steps < a.warmup + 2:
        p.error(f"--steps {a.steps} leaves no steady step after the first and "
                f"{a.warmup} warm-up steps")
    return a


def distributed(torch):
    """(rank, world_size), joining torchrun's process group (gloo: the probe
    trains on CPUs) when WORLD_SIZE says there is more than one rank."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ProbeError(f"WORLD_SIZE is not a number: '{os.environ['WORLD_SIZE']}'") from None
    if world <= 1:
        return 0, 1
    if not dist.is_available():
        raise ProbeError("WORLD_SIZE > 1 but this torch has no torch.distributed")
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def probe(a):
    """(report, trace, rank): the three ways timed, on every rank under
    torchrun; the report is this rank's numbers with every rank's steady ones
    beside."""
    try:
        import torch
        import torchvision  # noqa: F401 (checked now, used in folder_batches)
    except ImportError as e:
        raise ProbeError(f"the probe needs PyTorch and torchvision (Debian: python3-torch "
                         f"python3-torchvision): {e}") from None
    rank, world = distributed(torch)
    with tempfile.TemporaryDirectory(prefix="shardkit-probe.") as scratch:
        root, layout = image_folder_root(a.src, scratch)
        ds = open_shards(a.dst)
        classes = max(len(ds.labels), 1)
        if layout == "class folders":
            classes = max(classes, sum(1 for e in os.scandir(root) if e.is_dir()))
        note = None
        if layout == "flat":
            note = (f"'{a.src}' has no class folders: ImageFolder sees its images as one class "
                    f"'{FLAT_CLASS}', and the shards' samples without a label train as that "
                    f"class")
        torch.manual_seed(a.seed)
        initial = small_cnn(torch, classes).state_dict()

        # the resident batch: the shards' first, made before any timing
        gen = shard_batches(ds, a.batch_size, a.seed, a.threads)
        fixed = next(gen)
        gen.close()
        fixed = (fixed[0].clone(), fixed[1].clone())
        # one step before any timing, so that torch's threads exist before
        # the first way's meter looks at which threads its input made
        small_cnn(torch, classes)(fixed[0]).sum().backward()

        pipelines = {
            "resident": lambda: resident_batches(fixed),
            "imagefolder": lambda: folder_batches(root, a.batch_size, a.seed, a.workers,
                                                  distributed=world > 1),
            "shards": lambda: shard_batches(ds, a.batch_size, a.seed, a.threads),
        }
        origin = time.perf_counter()
        runs, summaries = [], {way: [] for way in WAYS}
        for round_ in range(a.rounds):
            for way in WAYS:
                model = small_cnn(torch, classes)
                model.load_state_dict(initial)
                if world > 1:  # the ranks meet at every step's gradient all-reduce
                    model = torch.nn.parallel.DistributedDataParallel(model)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

                def step(images, labels, model=model, optimizer=optimizer):
                    # a sample without a label (-1) trains as class 0
                    loss = torch.nn.functional.cross_entropy(model(images),
                                                             labels.clamp(min=0))
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()

                _, spans, input_cpu = time_steps(pipelines[way], step, a.steps,
                                                 steady_from=1 + a.warmup)
                track = WAY_TITLES[way] + (f" (round {round_ + 1})" if a.rounds > 1 else "")
                runs.append((track, way, spans))
                summary = summarise(spans, a.warmup, a.batch_size, input_cpu)
                summaries[way].append(summary)
                # against this round's resident step (the resident way runs first)
                summary["steady"]["vs_resident"] = (
                    summary["steady"]["step_ms"] / summaries["resident"][-1]["steady"]["step_ms"])
    ways = {way: median_summary(summaries[way]) for way in WAYS}
    input_bound, sentence = verdict(ways)
    report = {"src": a.src, "dst": a.dst, "src_layout": layout, "note": note,
              "settings": {"steps": a.steps, "rounds": a.rounds, "warmup": a.warmup, "batch_size": a.batch_size,
                           "workers": a.workers, "threads": a.threads,
                           "torch_threads": torch.get_num_threads(), "seed": a.seed,
                           "crop": CROP, "input_bound_share": INPUT_BOUND_SHARE,
                           "step_ms": a.step_ms, "world_size": world},
              "ways": ways, "input_bound": input_bound, "verdict": sentence,
              "capacity": capacity(ways, a.batch_size, a.step_ms, _native.available_cpus()),
              "ranks": None, "slowest_rank": None}
    if world > 1:
        per_rank = [None] * world
        torch.distributed.all_gather_object(per_rank, ways)
        ranks, slowest, sentence = rank_report(per_rank)
        report["ranks"] = ranks
        report["slowest_rank"] = dict(slowest, sentence=sentence)
    return report, chrome_trace(runs, origin), rank


def write_whole(path, data):
    """JSON to path through a temporary file beside it, renamed into place:
    a failed write leaves no half-written file."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise ProbeError(f"cannot write '{path}': {e.strerror}") from None


def main(argv=None):
    a = parse_args(argv)
    try:
        if a.trace and not os.access(os.path.dirname(a.trace) or ".", os.W_OK):
            # found before the minutes of training, not after
            raise ProbeError(f"cannot write '{a.trace}': no writable directory")
        report, trace, rank = probe(a)
        if rank != 0:
            return 0  # rank 0 reports for all
        if a.trace:
            write_whole(a.trace, trace)
    except ProbeError as e:
        print(f"probe: {e}", file=sys.stderr)
        return 1
    if a.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
