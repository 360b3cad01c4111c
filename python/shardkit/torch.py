"""shardkit.torch: the loader behind torch's own DataLoader.

For training code that keeps ``torch.utils.data.DataLoader`` (for its
``num_workers`` processes, pinning, or habit).  ``ShardIterableDataset``
yields whole batches made in C, so give the DataLoader ``batch_size=None``
(it must not batch again)::

    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset

    data = ShardIterableDataset("/data/shards", 256, transform=[...],
                                layout="NCHW", dtype="float32")
    loader = DataLoader(data, batch_size=None, num_workers=2)
    for epoch in range(epochs):
        data.set_epoch(epoch)          # before each epoch, as with DistributedSampler
        for images, labels in loader:
            ...

Each DataLoader worker makes the batches b of this rank's epoch with
b % num_workers == its id, and the DataLoader takes them from the workers in
turn, so the batches arrive in the same order as from ``shardkit.Loader``
with the same arguments, whatever ``num_workers`` is, and every sample comes
exactly once per epoch across ranks and workers.  ``set_epoch`` reaches
workers through shared memory, so it works with ``persistent_workers=True``
too.  Each worker runs ``threads`` C threads (default: the CPUs this process
may use, divided among the workers); ``shardkit.Loader`` alone, with no
worker processes, is the faster way (no copies between processes).

With ``fields=[...]`` (Loader's fields and multi_hot), each item is
``(images, labels, fields, present)``: the batch's ``fields`` and
``present`` dicts (see shardkit.Batch), which the DataLoader passes through
as they are (tensors; lists of str, parsed JSON values and None)::

    data = ShardIterableDataset("/data/shards", 256, fields=["caption", "score"])
    for images, labels, fields, present in DataLoader(data, batch_size=None):
        captions = fields["caption"]            # list of 256 str (None: absent)
        scores = fields["score"][present["score"]]
"""
import multiprocessing
import os
from collections.abc import Iterator
from typing import Any

import torch
import torch.utils.data

from shardkit.dataset import Dataset, Location, ReadingOptions
from shardkit.loader import Loader, _seed
from shardkit import _native

__all__ = ["ShardIterableDataset"]


class ShardIterableDataset(torch.utils.data.IterableDataset[tuple[Any, ...]]):
    """Batches of a shardkit dataset for torch's DataLoader (batch_size=None).

    Takes Loader's arguments (ds may be a Dataset or its location; output is
    always torch tensors) plus ``return_indices``: yield (images, labels,
    indices) instead of (images, labels).  With ``fields``, (images, labels,
    fields, present), then indices with return_indices.  ``len()`` is the
    number of batches this rank gets per epoch."""

    def __init__(self, ds: Dataset | Location, batch_size: int, *, return_indices: bool = False,
                 threads: int | None = None, **options: Any) -> None:
        if "output" in options:
            raise TypeError("output: ShardIterableDataset always yields torch tensors")
        self.location = ds.location if isinstance(ds, Dataset) else os.fspath(ds)
        # workers read as ds does
        self.reading: ReadingOptions = ds.options if isinstance(ds, Dataset) else {}
        self.batch_size = batch_size
        self.return_indices = bool(return_indices)
        self.threads = threads
        self.options = options
        # check every argument now, in the main process; also gives len()
        probe = Loader(Dataset(self.location, **self.reading), batch_size, threads=0,
                       output="torch", **options)
        self.rank, self.world_size = probe.rank, probe.world_size
        self.options.update(rank=self.rank, world_size=self.world_size)
        self._batches = len(probe)
        self._with_fields = bool(probe.fields)
        probe.close()
        self._epoch = multiprocessing.RawValue("Q", 0)
        self._loader: Loader | None = None
        self._owner: tuple[int, int, int] | None = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (also in running workers)."""
        self._epoch.value = _seed(epoch, "epoch")

    @property
    def epoch(self) -> int:
        return int(self._epoch.value)

    def __len__(self) -> int:
        return self._batches

    def _make_loader(self, worker: int, workers: int) -> Loader:
        key = (os.getpid(), worker, workers)
        if self._owner != key or self._loader is None:
            threads = self.threads
            if threads is None:
                threads = max(1, _native.available_cpus() // workers)
            self._loader = Loader(Dataset(self.location, **self.reading), self.batch_size,
                                  threads=threads, output="torch", _worker=worker, _workers=workers,
                                  **self.options)
            self._owner = key
        return self._loader

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        loader = self._make_loader(worker, workers)
        loader._move(self._epoch.value, 0)  # the whole epoch, every time
        for batch in loader:
            item: tuple[Any, ...] = (batch.images, batch.labels)
            if self._with_fields:
                item += (batch.fields, batch.present)
            if self.return_indices:
                item += (torch.from_numpy(batch.indices),)
            yield item

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_loader"] = None  # each process makes its own
        state["_owner"] = None
        return state
