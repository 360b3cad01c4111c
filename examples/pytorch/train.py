#!/usr/bin/python3
"""Train an image classifier on shardkit shards, one process or many (DDP).

    torchrun --standalone --nproc_per_node 2 examples/pytorch/train.py SHARDS \\
        --epochs 2 --checkpoint ckpt.pt

Each rank reads its own part of every epoch with shardkit.Loader (rank and
world size come from torch.distributed), with the augmentation done in C
(RandomResizedCrop, a horizontal flip, Normalize: float32 NCHW tensors).
Every --checkpoint-every steps, rank 0 writes one checkpoint holding the
model, the optimizer and every rank's loader.state_dict(); started again with
the same --checkpoint, the job continues from there: the same model and, on
every rank, byte for byte the batches an uninterrupted run would have had.
Started with another number of ranks (a preempted or elastic job), it goes
on with the rest of the epoch split among the new ranks, each remaining
sample read once.  See README.md beside this file.
"""
import argparse
import gc
import hashlib
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn

import shardkit

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("shards", help="a shardkit dataset (directory or URL)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--crop", type=int, default=224, help="RandomResizedCrop size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--remainder", choices=("drop", "pad"), default="drop",
                   help="how the ranks split what does not divide evenly: drop leaves out "
                   "fewer than one sample per rank (each sample at most once), pad repeats as "
                   "many (each sample at least once)")
    p.add_argument("--threads", type=int, default=None,
                   help="loader threads per rank (default: the CPUs the rank may use)")
    p.add_argument("--checkpoint", help="checkpoint file: restored when it exists, written "
                   "every --checkpoint-every steps and at the end")
    p.add_argument("--checkpoint-every", type=int, default=100, metavar="STEPS")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop after this many steps in all (a short run)")
    p.add_argument("--log", metavar="DIR", help="append one JSON line per step to "
                   "DIR/rank-N.jsonl (epoch, batch, sample indices, a digest of the images, "
                   "loss)")
    return p.parse_args()


def model_for(classes):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def save_checkpoint(path, model, optimizer, loader, step):
    """Every rank's loader position to rank 0, which writes the file whole
    (a temporary file renamed over the old one: a crash mid-write leaves the
    previous checkpoint)."""
    loaders = [None] * dist.get_world_size()
    dist.all_gather_object(loaders, loader.state_dict())
    if dist.get_rank() == 0:
        tmp = f"{path}.tmp"
        torch.save({"step": step, "model": model.module.state_dict(),
                    "optimizer": optimizer.state_dict(), "loaders": loaders}, tmp)
        os.replace(tmp, path)
    dist.barrier()


def restore_checkpoint(path, model, optimizer, loader):
    """The step the checkpoint was taken after (0 without one).  Written by
    another number of ranks, any rank's loader state says where all were
    (they step in lockstep): each new rank reads its part of the rest of
    that epoch."""
    if not path or not os.path.exists(path):
        return 0
    state = torch.load(path, map_location="cpu")
    loaders = state["loaders"]
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    same = len(loaders) == dist.get_world_size()
    loader.load_state_dict(loaders[dist.get_rank()] if same else loaders[0])
    if not same and dist.get_rank() == 0:
        print(f"train: '{path}' was written by {len(loaders)} ranks; this job's "
              f"{dist.get_world_size()} share the rest of epoch {loader.epoch}", flush=True)
    return state["step"]


def main():
    a = parse_args()
    # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR...; a plain run is one rank
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo")  # CPU; "nccl" on GPUs
    rank = dist.get_rank()
    torch.manual_seed(a.seed)  # the same initial weights on every rank

    ds = shardkit.Dataset(a.shards)
    # rank and world_size from torch.distributed.  DDP relies on every rank
    # taking the same number of steps (each is an all-reduce: a rank with one
    # batch more waits forever): the Loader gives every rank the same batch
    # count whenever world_size > 1, with "pad" (its default) and with "drop"
    # (this script's default), which leaves out the few samples pad repeats
    loader = shardkit.Loader(
        ds, a.batch_size, seed=a.seed, threads=a.threads, remainder=a.remainder,
        transform=[shardkit.RandomResizedCrop(a.crop), shardkit.RandomHorizontalFlip(),
                   shardkit.Normalize(MEAN, STD)],
        layout="NCHW", dtype="float32", output="torch")
    model = nn.parallel.DistributedDataParallel(model_for(max(len(ds.labels), 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    step = restore_checkpoint(a.checkpoint, model, optimizer, loader)
    log = None
    if a.log:
        os.makedirs(a.log, exist_ok=True)
        log = open(os.path.join(a.log, f"rank-{rank}.jsonl"), "a")
        if step:
            print(json.dumps({"resumed": step, "epoch": loader.epoch}), file=log, flush=True)

    done = a.max_steps is not None and step >= a.max_steps
    while loader.epoch < a.epochs and not done:
        # the start of the epoch, or (after a restore) where the checkpoint left it
        loader.set_epoch(loader.epoch)
        for batch in loader:
            images, labels = batch
            # a sample without a label (-1) trains as class 0 here
            loss = nn.functional.cross_entropy(model(images), labels.clamp(min=0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if log:
                digest = hashlib.sha256(images.numpy().tobytes()).hexdigest()
                print(json.dumps({"step": step, "epoch": batch.epoch, "batch": batch.number,
                                  "indices": batch.indices.tolist(), "images": digest,
                                  "loss": loss.item()}), file=log, flush=True)
            if rank == 0 and step % 10 == 0:
                print(f"epoch {batch.epoch} batch {batch.number + 1}/{len(loader)} step {step} "
                      f"loss {loss.item():.3f}", flush=True)
            if a.checkpoint and step % a.checkpoint_every == 0:
                save_checkpoint(a.checkpoint, model, optimizer, loader, step)
            if a.max_steps is not None and step >= a.max_steps:
                done = True
                break
    if a.checkpoint:
        save_checkpoint(a.checkpoint, model, optimizer, loader, step)
    if rank == 0:
        s = loader.stats
        print(f"done: {step} steps; rank 0 read {s['samples_per_second']:.0f} samples/s and "
              f"waited {s['wait_fraction']:.0%} of the time for input", flush=True)
    loader.close()  # its reader threads stop here, not at interpreter exit
    # Tear DDP down in an order that cannot hang.  The DDP Reducer inside
    # `model` holds a reference to the gloo process group; when it drops the
    # last one (as it did when main() returned), ~ProcessGroupGloo joins
    # gloo's worker threads with the GIL held while a worker may still need
    # the GIL to free a tensor of the last collective, and the rank never
    # exits (torch 1.13; the class of destructor of pytorch/pytorch#56297).
    # So the model goes first, while this frame still holds the group, and
    # the group's last reference is dropped from Python, after
    # destroy_process_group(): torch's Python holder of a process group
    # releases the GIL while it is destroyed.
    group = dist.group.WORLD
    del model, optimizer
    gc.collect()  # the Reducer goes now, even if a reference cycle held it
    dist.destroy_process_group()
    del group


if __name__ == "__main__":
    main()
