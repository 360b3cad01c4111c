#!/usr/bin/env python3
"""train_grayscale.py - the same small CNN trained from 1-channel shards and from
torchvision's ImageFolder on the same PNG class folders: does it reach the same accuracy?

WORK holds what bench/grayscale.py wrote (png-train, shards-gray; give the same
--generate); the test split is written here as png-t10k and converted as shards-t10k.
Both runs use one seed, one model (1 input channel), Adam, the same epochs and batch size;
the shard run feeds shardkit.Loader's float32 NCHW batches (x / 255, one array per batch,
no transform), the ImageFolder run ToTensor() of Grayscale(1) images.  Prints one JSON
object.

    bench/train_grayscale.py BUILD WORK [--generate N] [--epochs E] [--batch B]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grayscale  # noqa: E402  (the folders and shardify of the storage benchmark)


def model(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def run(torch, batches, test_batches, epochs):
    torch.manual_seed(0)
    net = model(torch)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    for epoch in range(epochs):
        net.train()
        for x, y in batches(epoch):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    net.eval()
    right = total = 0
    with torch.no_grad():
        for x, y in test_batches():
            right += int((net(x).argmax(1) == y).sum())
            total += len(y)
    return right / total, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--generate", type=int, default=0)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import shardkit
    import torch
    import torchvision
    from torchvision import transforms as T
    torch.set_num_threads(2)
    images, labels = grayscale.load("t10k", a.generate)
    grayscale.write_folders(images, labels, os.path.join(a.work, "png-t10k"))
    grayscale.shardify(a.build, os.path.join(a.work, "png-t10k"),
                       os.path.join(a.work, "shards-t10k"), "--no-shuffle")

    def shard_batches(dst, epoch, shuffle):
        loader = shardkit.Loader(shardkit.Dataset(dst), batch_size=a.batch, shuffle=shuffle,
                                 dtype="float32", layout="NCHW", threads=2)
        loader.set_epoch(epoch)
        for b in loader:
            yield torch.from_numpy(np.asarray(b.images)), torch.from_numpy(
                np.asarray(b.labels, dtype=np.int64))

    tf = T.Compose([T.Grayscale(1), T.ToTensor()])

    def folder_batches(root, epoch, shuffle):
        torch.manual_seed(epoch)
        data = torchvision.datasets.ImageFolder(root, transform=tf)
        yield from torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=shuffle,
                                               num_workers=2)

    out = {"epochs": a.epochs, "batch": a.batch}
    acc, secs = run(torch, lambda e: shard_batches(os.path.join(a.work, "shards-gray"), e, True),
                    lambda: shard_batches(os.path.join(a.work, "shards-t10k"), 0, False),
                    a.epochs)
    out["shards"] = {"test_accuracy": round(acc, 4), "seconds": round(secs, 1)}
    acc, secs = run(torch, lambda e: folder_batches(os.path.join(a.work, "png-train"), e, True),
                    lambda: folder_batches(os.path.join(a.work, "png-t10k"), 0, False), a.epochs)
    out["imagefolder"] = {"test_accuracy": round(acc, 4), "seconds": round(secs, 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    main()
