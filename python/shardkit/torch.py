"""shardkit.torch: the loader behind torch's own DataLoader.

For training code that keeps ``torch.utils.data.DataLoader`` (for its
``num_workers`` processes, pinning, or habit).  ``ShardIterableDataset``
takes the Loader's arguments, typed, and yields whole ``shardkit.Batch``
objects made in C (torch tensors), so give the DataLoader
``batch_size=None`` (it must not batch again)::

    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset

    data = ShardIterableDataset("/data/shards", 256, transform=[...],
                                layout="NCHW", dtype="float32")
    loader = DataLoader(data, batch_size=None, num_workers=2)
    for epoch in range(epochs):
        data.set_epoch(epoch)          # before each epoch, as with DistributedSampler
        for batch in loader:
            images, labels = batch     # a Batch unpacks as images, labels
            ...                        # batch.indices, batch.sources, batch.fields ...

Each DataLoader worker makes the batches b of this rank's epoch with
b % num_workers == its id, and the DataLoader takes them from the workers in
turn, so the batches arrive in the same order as from ``shardkit.Loader``
with the same arguments, whatever ``num_workers`` is, and every sample comes
exactly once per epoch across ranks and workers.  ``set_epoch`` and
``load_state_dict`` reach workers through shared memory, so they work with
``persistent_workers=True`` too.  Each worker runs ``threads`` C threads
(default: the CPUs this process may use, divided among the workers);
``shardkit.Loader`` alone, with no worker processes, is the faster way (no
copies between processes).

Checkpoints: ``data.state_dict(batch)`` is the position after ``batch``
(the last one the training loop took), the same state a ``shardkit.Loader``
gives; ``data.load_state_dict(state)`` makes the next iteration go on from
there, with any number of workers, and on another number of ranks or batch
size as the Loader does (the rest of that epoch split among the new
ranks).
"""
import multiprocessing
import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TypedDict

import torch
import torch.utils.data

from shardkit import _native
from shardkit.dataset import Dataset, Location, ReadingOptions
from shardkit.loader import DEFAULT_PREFETCH, STATE_FORMAT, Batch, Loader, Segment, _seed
from shardkit.mixture import Mixture
from shardkit.transforms import TransformArg

__all__ = ["ShardIterableDataset"]

# Segments of one epoch a restored position may carry (each a restart on
# other ranks within the same epoch).
MAX_SEGMENTS = 32
_REMAINDERS = ("keep", "drop", "pad")


class _Options(TypedDict):
    """The Loader's arguments a ShardIterableDataset passes on (typed)."""
    shuffle: bool
    seed: int
    rank: int | None
    world_size: int | None
    transform: TransformArg
    drop_last: bool
    remainder: Literal["keep", "drop", "pad"] | None
    shuffle_buffer: int | None
    layout: Literal["NHWC", "NCHW"]
    dtype: Literal["uint8", "float32", "float16"]
    on_error: Literal["raise", "skip"]
    prefetch: int
    fields: Iterable[str] | None
    multi_hot: bool | Iterable[str]
    box_min_size: float


class ShardIterableDataset(torch.utils.data.IterableDataset[Batch]):
    """Batches of a shardkit dataset (or Mixture) for torch's DataLoader
    (batch_size=None).

    Takes Loader's arguments by name, with their types and defaults (ds may
    be a Dataset, a Mixture or a location; the output is always torch
    tensors), and yields one ``shardkit.Batch`` per batch, which unpacks as
    ``images, labels`` whatever the options (``batch.indices``,
    ``batch.sources``, ``batch.fields``, ``batch.present`` hold the rest).
    ``len()`` is the number of batches the next iteration yields on this
    rank (an epoch's, or what is left of the epoch a restored state is in).
    Every argument is checked here, in the main process."""

    def __init__(self, ds: Dataset | Mixture | Location, batch_size: int, *,
                 shuffle: bool = True, seed: int = 0, rank: int | None = None,
                 world_size: int | None = None, threads: int | None = None,
                 transform: TransformArg = None, drop_last: bool = False,
                 remainder: Literal["keep", "drop", "pad"] | None = None,
                 shuffle_buffer: int | None = None, layout: Literal["NHWC", "NCHW"] = "NHWC",
                 dtype: Literal["uint8", "float32", "float16"] = "uint8",
                 on_error: Literal["raise", "skip"] = "raise", prefetch: int = DEFAULT_PREFETCH,
                 fields: Iterable[str] | None = None, multi_hot: bool | Iterable[str] = False,
                 box_min_size: float = 1.0) -> None:
        self._source: Mixture | tuple[str | bytes, ReadingOptions]
        # where workers open the dataset, and how they read it (as ds is read)
        self.location: str | bytes | None = None
        self.reading: ReadingOptions = {}
        if isinstance(ds, Mixture):
            self._source = ds  # pickled to workers by its sources' locations
        else:
            self.location = ds.location if isinstance(ds, Dataset) else os.fspath(ds)
            self.reading = ds.options if isinstance(ds, Dataset) else {}
            self._source = (self.location, self.reading)
        self.batch_size = batch_size
        self.threads = threads
        self.options: _Options = {
            "shuffle": shuffle, "seed": seed, "rank": rank, "world_size": world_size,
            "transform": transform, "drop_last": drop_last, "remainder": remainder,
            "shuffle_buffer": shuffle_buffer, "layout": layout, "dtype": dtype,
            "on_error": on_error, "prefetch": prefetch,
            "fields": None if fields is None else list(fields),
            "multi_hot": multi_hot if isinstance(multi_hot, bool) else list(multi_hot),
            "box_min_size": box_min_size}
        # check every argument now, in the main process; also gives len()
        probe = self._probe()
        self.rank, self.world_size = probe.rank, probe.world_size
        self.options["rank"], self.options["world_size"] = self.rank, self.world_size
        self._batches = len(probe)
        probe.close()
        self._epoch = multiprocessing.RawValue("Q", 0)
        # a restored position: [its epoch + 1 (0: none), batch, segments,
        # (world_size, taken, remainder number) * segments]
        self._resume = multiprocessing.RawArray("Q", 3 + 3 * MAX_SEGMENTS)
        self._resume_batches = 0
        self._loader: Loader | None = None
        self._owner: tuple[int, int, int] | None = None

    def _dataset(self) -> Dataset | Mixture:
        if isinstance(self._source, Mixture):
            return self._source
        location, reading = self._source
        return Dataset(location, **reading)

    def _probe(self) -> Loader:
        return Loader(self._dataset(), self.batch_size, threads=0, output="torch",
                      **self.options)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (also in running workers)."""
        self._epoch.value = _seed(epoch, "epoch")

    @property
    def epoch(self) -> int:
        return int(self._epoch.value)

    def __len__(self) -> int:
        start = self._restored()
        if start is None:
            return self._batches
        return self._resume_batches - start[0]

    def _restored(self) -> tuple[int, list[Segment]] | None:
        """(batch, segments) of the restored position when it is in the epoch
        the next iteration reads, else None."""
        r = self._resume
        if r[0] != self._epoch.value + 1:
            return None
        return int(r[1]), [(int(r[3 + 3 * i]), int(r[4 + 3 * i]), _REMAINDERS[r[5 + 3 * i]])
                           for i in range(int(r[2]))]

    def state_dict(self, last: Batch | None = None) -> dict[str, Any]:
        """The position after batch `last` (the last one the training loop
        took from this dataset; None: where the next iteration starts) as a
        shardkit.Loader state_dict, which this or a Loader restores."""
        probe = self._probe()
        state = probe.state_dict()
        probe.close()
        start = self._restored()
        batch, done = start if start is not None else (0, [])
        epoch = self.epoch
        if last is not None:
            if last.epoch != epoch:
                done = []
            epoch, batch = last.epoch, last.number + 1
        state.update(format=STATE_FORMAT, epoch=epoch, batch=batch,
                     done=[list(d) for d in done])
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from `state` (this one's state_dict, or a shardkit.Loader's)
        at the next iteration: it sets the epoch too.  Checked as
        Loader.load_state_dict checks it (ValueError)."""
        probe = self._probe()
        try:
            probe.load_state_dict(state)
            epoch, batch, done, batches = probe.epoch, probe._batch, probe._done, len(probe)
        finally:
            probe.close()
        if len(done) > MAX_SEGMENTS:
            raise ValueError(f"state['done'] holds {len(done)} segments, more than "
                             f"{MAX_SEGMENTS}")
        r = self._resume
        r[0], r[1], r[2] = epoch + 1, batch, len(done)
        for i, (world, taken, remainder) in enumerate(done):
            r[3 + 3 * i], r[4 + 3 * i] = world, taken
            r[5 + 3 * i] = _REMAINDERS.index(remainder)
        self._resume_batches = batches
        self._epoch.value = epoch

    def _make_loader(self, worker: int, workers: int) -> Loader:
        key = (os.getpid(), worker, workers)
        if self._owner != key or self._loader is None:
            threads = self.threads
            if threads is None:
                threads = max(1, _native.available_cpus() // workers)
            self._loader = Loader(self._dataset(), self.batch_size, threads=threads,
                                  output="torch", _worker=worker, _workers=workers,
                                  **self.options)
            self._owner = key
        return self._loader

    def __iter__(self) -> Iterator[Batch]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        loader = self._make_loader(worker, workers)
        start = self._restored()
        batch, done = start if start is not None else (0, [])
        loader._move(self._epoch.value, batch, done)  # the whole epoch (or its rest), every time
        yield from loader

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_loader"] = None  # each process makes its own
        state["_owner"] = None
        return state
