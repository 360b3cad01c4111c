"""Loader: training-ready batches, made in C by the reader's threads."""
import json
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from shardkit import _native
from shardkit.dataset import (Dataset, Field, Location, ReadingOptions, _bad_json, _key_str,
                              _reopen)
from shardkit.errors import CorruptRecordError, ShardkitError
from shardkit.mixture import Mixture, _remix
from shardkit.transforms import U32_MAX, Compose, TransformArg, _check_int, compose

# The epoch plan's default shuffle window (SHARD_PLAN_DEFAULT_BUFFER).
DEFAULT_SHUFFLE_BUFFER = 1024
# Batches read ahead of the consumer.
DEFAULT_PREFETCH = 2
# Skipped samples' errors kept in loader.stats.
MAX_SKIPPED_ERRORS = 100
# Format 3 carries the segments of the epoch read before at other world or
# batch sizes ("done"); 2 did not (none); 1 did not carry the dataset's
# identity (manifest_xxh3) either.
STATE_FORMAT = "shardkit.Loader/3"
# What a state may change: the ranks, their batches and how they split an
# epoch (the rest of the epoch is split among the new ranks).
_ELASTIC = ("rank", "world_size", "batch_size", "remainder")
# A segment of an epoch read before: (world_size, taken, remainder).
Segment = tuple[int, int, str]


def _distributed() -> tuple[int, int] | None:
    """(rank, world_size) of an initialised torch.distributed, else None.
    torch is not imported for this: if it is not imported yet, nothing can
    have initialised it."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an int, not {value!r}") from None


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """rank and world_size given, or from torch.distributed when it is
    initialised, or from the RANK / WORLD_SIZE environment, or 0 and 1."""
    if rank is None and world_size is None:
        found = _distributed()
        if found is None:
            env_rank, env_world = _env_int("RANK"), _env_int("WORLD_SIZE")
            if env_rank is not None and env_world is not None:
                found = (env_rank, env_world)
        rank, world_size = found if found is not None else (0, 1)
    elif rank is None or world_size is None:
        raise ValueError("rank and world_size: give both, or neither (to take them from "
                         "torch.distributed or the RANK/WORLD_SIZE environment)")
    world_size = _check_int(world_size, "world_size", maximum=U32_MAX)
    rank = _check_int(rank, "rank", minimum=0)
    if rank >= world_size:
        raise ValueError(f"rank {rank} must be below world_size {world_size}")
    return rank, world_size


def _choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _seed(value: object, name: str) -> int:
    value = _check_int(value, name, minimum=0)
    if value >= 1 << 64:
        raise ValueError(f"{name} must be below 2**64, not {value}")
    return value


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ModuleNotFoundError("output='torch' needs PyTorch (Debian: python3-torch)") from e
    return torch


class Batch:
    """One batch.  Unpacks as ``images, labels``; also ``indices`` (int64:
    each sample's position in stored order, in its source for a Mixture),
    ``sources`` (int64: each sample's source in a Mixture, 0 for a
    Dataset's), ``keys`` (str, read from the shard footers when first asked
    for), ``epoch``, ``number`` (the batch's position in its epoch),
    ``skipped`` (CorruptRecordError of samples left out with
    on_error="skip"), and with Loader(fields=...) ``fields`` and
    ``present``.  A Batch pickles (DataLoader workers send it), its
    dataset reopened by location when ``keys`` is first asked for.

    ``images`` is one array (B, H, W, C) or (B, C, H, W), C the channels of
    the dataset's form (or the Loader's ``to``), when the transform fixes the
    size or, without one that changes it, every sample was stored at the
    manifest's one size; else a list of per-sample arrays.  ``labels`` is
    int64, -1 for a sample without a label.  With output="torch" both are
    torch tensors sharing the loader's memory (no copy; uint16 images are
    copied as int32).  The memory is the
    batch's own: keeping it does not slow the loader down, which takes new
    memory when it needs to.

    ``fields`` is a dict, by name, of the selected fields in the order they
    were selected (empty without): text a list of B str, json a list of B
    parsed values, bytes a list of B bytes (each None where the sample lacks
    the field; "" is a value); int an int64 array (B,), float float64 (B,),
    float32[N] float32 (B, N), int64[N] int64 (B, N), zeros where absent;
    labels a list of B lists of label numbers (None where absent), or with
    multi_hot a uint8 array (B, C) holding 1 at each label number (C is
    ``len(dataset.labels)``; a row of zeros where absent); boxes a list of B
    dicts {"boxes": (N_i, 4) float32 x0, y0, x1, y1 in the output image's
    pixels, "labels": (N_i,) int64 class ids, "iscrowd": (N_i,) bool} (None
    where absent), transformed with their image; a mask a (B, H, W) uint8 or
    uint16 array of class ids, or a list of (H_i, W_i) arrays (None where
    absent), transformed with their image (nearest neighbour): one array in
    every batch when the Loader's transforms fix the output size (``images``
    is one array too) and every sample of the dataset has the mask (the
    field is required, or present in all), else a list in every batch - a
    field's type never changes from batch to batch; an image field (a second
    image of the sample) likewise a (B, H, W, 3) uint8 RGB array or a list of
    (H_i, W_i, 3) arrays, through the same crops, resizes and flips as its
    image (resampled as the image is, never normalised), whatever the
    images' layout and dtype.  ``present`` is a
    dict of the same names, each a bool array (B,): True where the sample has
    the field.  With output="torch" the arrays are torch tensors."""

    __slots__ = ("images", "labels", "indices", "sources", "epoch", "number", "skipped",
                 "fields", "present", "_dataset", "_keys")
    # numpy arrays, or torch tensors with output="torch" (a list of them for
    # images of several sizes): Any, as what a DataLoader yields
    images: Any
    labels: Any
    indices: npt.NDArray[np.int64]
    sources: Any
    epoch: int
    number: int
    skipped: list[CorruptRecordError]
    fields: dict[str, Any]
    present: dict[str, Any]
    _dataset: "Dataset | Mixture | _Reference"
    _keys: list[str] | None

    def __init__(self, images: Any, labels: Any, indices: npt.NDArray[np.int64], epoch: int,
                 number: int, skipped: list[CorruptRecordError],
                 dataset: "Dataset | Mixture | _Reference",
                 fields: dict[str, Any] | None = None, present: dict[str, Any] | None = None,
                 sources: Any = None) -> None:
        self.images = images
        self.labels = labels
        self.indices = indices
        self.sources = np.zeros(len(indices), np.int64) if sources is None else sources
        self.epoch = epoch
        self.number = number
        self.skipped = skipped
        self.fields = {} if fields is None else fields
        self.present = {} if present is None else present
        self._dataset = dataset
        self._keys = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.images, self.labels))

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def keys(self) -> list[str]:
        if self._keys is None:
            if isinstance(self._dataset, _Reference):
                self._dataset = self._dataset.resolve()
            ds = self._dataset
            if isinstance(ds, Mixture):
                self._keys = [ds.sources[int(s)].key(int(i))
                              for s, i in zip(self.sources, self.indices)]
            else:
                self._keys = [ds.key(int(i)) for i in self.indices]
        return self._keys

    def __reduce__(self) -> tuple[Any, ...]:
        ref = self._dataset if isinstance(self._dataset, _Reference) else _Reference.of(
            self._dataset)
        return (_rebuild_batch, (self.images, self.labels, self.indices, self.epoch, self.number,
                                 self.skipped, ref, self.fields, self.present, self.sources,
                                 self._keys))

    def __repr__(self) -> str:
        shape = getattr(self.images, "shape", None)
        shape = tuple(shape) if shape is not None else f"{len(self.images)} arrays"
        return f"Batch(epoch={self.epoch}, number={self.number}, images={shape})"


class Loader:
    """Batches of one rank's epoch plan, read, decoded, transformed and
    collated by C threads (the GIL is released while they work and while the
    loop waits).

    ``Loader(ds, batch_size, *, shuffle=True, seed=0, rank=None,
    world_size=None, threads=None, transform=None, drop_last=False,
    remainder=None, shuffle_buffer=None, output="numpy", layout="NHWC",
    dtype=None, on_error="raise", prefetch=2, fields=None,
    multi_hot=False, box_min_size=1.0, to=None)``

    - ds: a Dataset, its location, or a Mixture of datasets (shardkit.Mixture:
      its epochs drawn from the sources by weight; batch.sources says each
      sample's source; no fields).
    - shuffle, seed, shuffle_buffer, remainder, rank, world_size: the epoch
      plan (include/shardkit/dataset.h): remainder "keep" gives every
      sample exactly once per epoch across ranks, "drop" every rank
      floor(N/W) samples, "pad" ceil(N/W), repeating samples from the
      epoch's start.  With several ranks every rank must make the same
      number of batches in every epoch (a DDP step is a collective: a rank
      with one batch more waits forever), so the default is "pad" when
      world_size > 1 ("keep" with one rank, the same plan), and a "keep"
      whose ranks would make different batch counts is refused (ValueError
      naming the counts).  rank/world_size default to torch.distributed
      when it is initialised, else the RANK/WORLD_SIZE environment, else 0/1.
    - drop_last: leave out this rank's last, partial batch.
    - threads: reader threads (default: the CPUs this process may use); 0
      does the work on the calling thread.
    - transform: shardkit transforms (a list or Compose), run in C.
    - layout "NHWC"/"NCHW", dtype "uint8"/"float32"/"float16"/"uint16"
      (default: the stored samples', uint16 for a 16-bit dataset, else
      uint8; float is x / 255, x / 65535 for 16 bits; uint8 rounds 16-bit
      samples to 8, uint16 gives 8-bit ones as x * 257; Normalize needs a
      float dtype), output "numpy"/"torch".
    - on_error: "raise" (a damaged sample raises CorruptRecordError naming
      shard, record and key) or "skip" (left out of its batch, counted in
      ``stats``).  A batch that raises (CorruptRecordError, or a read that
      failed: NetworkError ...) is passed over: it is not delivered, its
      other samples are not seen this epoch (``stats["failed_batches"]``
      counts it), and ``next()`` on the same iterator gives the batch after
      it, so ``try: next(it) except CorruptRecordError: continue`` gets the
      rest of the epoch.  StopIteration comes only at the epoch's end.
    - fields: names of the dataset's fields (``Dataset.fields``) that each
      batch carries in ``batch.fields`` and ``batch.present`` (see Batch);
      an unknown name is a ValueError listing the declared ones.  Without,
      records' fields are not even read.
    - multi_hot: True (every selected labels field) or a list of labels
      field names: those come as a (B, C) uint8 multi-hot array instead of
      lists of label numbers.
    - box_min_size: selected boxes fields: after the transforms, a box
      narrower or lower than this (pixels) is removed with its label, as
      torchvision's SanitizeBoundingBoxes (default 1, its default).
    - to: None (the dataset's stored form: a grey dataset's images have 1
      channel, a 16-bit one's are uint16) or "gray", "gray-alpha", "rgb",
      "rgba": each sample converted to that form first, before the
      transforms ("rgb" for a model that wants three channels: the grey
      copied into each).

    Iterating yields the batches of the current epoch from the current
    position; when the epoch is over the loader moves to the next epoch.
    ``set_epoch(e)`` moves to the start of epoch e (a no-op when the loader
    is already in epoch e, so that it may follow load_state_dict).
    ``state_dict()`` / ``load_state_dict(d)`` save and restore the position
    (epoch, batches handed out): after a restore, iterating yields exactly
    the remaining batches of that epoch, byte for byte those of an
    uninterrupted run.  A state taken with another world_size or
    batch_size (ranks in lockstep, as DDP keeps them: any rank's state
    says where all are) restores too: the rest of that epoch is split among
    the new ranks, each remaining sample read once by one of them (pad's
    repeats are samples read before the stop), and the epochs after it
    follow the new ranks' plans; ``len(loader)`` is then the rest's
    batches until the epoch ends.  One iteration at a time: a new
    ``iter()`` ends the previous one.
    """

    def __init__(self, ds: Dataset | Mixture | Location, batch_size: int, *, shuffle: bool = True,
                 seed: int = 0, rank: int | None = None, world_size: int | None = None,
                 threads: int | None = None, transform: TransformArg = None,
                 drop_last: bool = False,
                 remainder: Literal["keep", "drop", "pad"] | None = None,
                 shuffle_buffer: int | None = None, output: Literal["numpy", "torch"] = "numpy",
                 layout: Literal["NHWC", "NCHW"] = "NHWC",
                 dtype: Literal["uint8", "float32", "float16", "uint16"] | None = None,
                 on_error: Literal["raise", "skip"] = "raise", prefetch: int = DEFAULT_PREFETCH,
                 fields: Iterable[str] | None = None, multi_hot: bool | Iterable[str] = False,
                 box_min_size: float = 1.0,
                 to: Literal["gray", "gray-alpha", "rgb", "rgba"] | None = None,
                 _worker: int = 0, _workers: int = 1) -> None:
        if not isinstance(ds, (Dataset, Mixture)):
            if isinstance(ds, (str, bytes, os.PathLike)):
                ds = Dataset(ds)
            else:
                raise TypeError(f"ds must be a shardkit.Dataset, a Mixture or a location, not "
                                f"{type(ds).__name__}")
        self.dataset = ds
        self.batch_size = _check_int(batch_size, "batch_size", maximum=U32_MAX)
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle must be a bool, not {type(shuffle).__name__}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"drop_last must be a bool, not {type(drop_last).__name__}")
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.seed = _seed(seed, "seed")
        self.rank, self.world_size = resolve_rank(rank, world_size)
        self.threads = (_native.available_cpus() if threads is None
                        else _check_int(threads, "threads", minimum=0))
        # several ranks: the same batch count on every rank (pad); one: keep,
        # the same plan
        self.remainder = (("pad" if self.world_size > 1 else "keep") if remainder is None
                          else _choice(remainder, "remainder", ("keep", "drop", "pad")))
        self.shuffle_buffer = (DEFAULT_SHUFFLE_BUFFER if shuffle_buffer is None
                               else _seed(shuffle_buffer, "shuffle_buffer"))
        self.output = _choice(output, "output", ("numpy", "torch"))
        self.layout = _choice(layout, "layout", ("NHWC", "NCHW"))
        # the stored depth (a mixture's: 16 bits if a source has them)
        sources = ds.sources if isinstance(ds, Mixture) else [ds]
        stored = ("uint16" if any(d.manifest.get("stored", {}).get("depth") == 16 for d in sources)
                  else "uint8")
        self.dtype = (stored if dtype is None
                      else _choice(dtype, "dtype", ("uint8", "float32", "float16", "uint16")))
        self.on_error = _choice(on_error, "on_error", ("raise", "skip"))
        prefetch = _check_int(prefetch, "prefetch", maximum=U32_MAX)
        self.transform = compose(transform)
        self._torch = _torch() if output == "torch" else None
        compiled = None
        if self.transform is not None or (self.layout, self.dtype) != ("NHWC", stored):
            steps = self.transform if self.transform is not None else _empty()
            compiled = steps._compiled(self.layout, self.dtype)
        if isinstance(ds, Mixture) and (fields is not None or multi_hot is not False):
            raise ValueError("fields: a Mixture's loader carries no fields (its sources number "
                             "their fields each their own way)")
        self.fields, self.multi_hot = (_select_fields(ds, fields, multi_hot)
                                       if isinstance(ds, Dataset) else ([], set()))
        # masks stacked in every batch, or in none (the Batch docstring's rule)
        size = compiled.fixed_size() if compiled is not None else None
        self._stacked = {
            f.name: size for f in self.fields
            if f.type in ("mask", "image") and size is not None
            and (f.required or f.present == len(ds))}
        if isinstance(box_min_size, bool) or not isinstance(box_min_size, (int, float)):
            raise TypeError(f"box_min_size must be a number, not {type(box_min_size).__name__}")
        if not 0 <= box_min_size < 1e30:
            raise ValueError(f"box_min_size must be a size in pixels, not {box_min_size}")
        self.box_min_size = float(box_min_size)
        forms = {"gray": 1, "gray-alpha": 2, "rgb": 3, "rgba": 4}
        if to is not None and to not in forms:
            raise ValueError(f"to must be None, 'gray', 'gray-alpha', 'rgb' or 'rgba', not {to!r}")
        self.to = to
        self._native = _native.Loader(ds._native, compiled, {
            "batch_size": self.batch_size, "shuffle": self.shuffle, "seed": self.seed,
            "rank": self.rank, "world_size": self.world_size, "threads": self.threads,
            "drop_last": self.drop_last, "remainder": self.remainder,
            "shuffle_buffer": self.shuffle_buffer, "prefetch": prefetch,
            "skip_errors": self.on_error == "skip", "worker": _worker, "workers": _workers,
            "fields": [f.number for f in self.fields], "box_min_size": self.box_min_size,
            "channels": forms.get(to or "", 0)})
        self._epoch = 0
        self._batch = 0
        # the segments of the current epoch read before (world_size, taken,
        # remainder): a state restored on other ranks or batches; else empty
        self._done: list[Segment] = []
        self._rest_batches = 0  # with _done: the rank's batches of the rest
        self._generation = 0
        self._closed = False
        self._cache_warned = False
        self._skipped_errors: list[CorruptRecordError] = []
        self._reads_before = self._read_stats()  # a dataset's counters count from its opening

    # ---- position ---------------------------------------------------------

    def __len__(self) -> int:
        """Batches per epoch for this rank (in an epoch restored on other
        ranks or batch sizes, the batches of its rest)."""
        return self._rest_batches if self._done else self._counts()["batches"]

    def _read_stats(self) -> dict[str, int]:
        ds = self.dataset
        return ds._stats() if isinstance(ds, Mixture) else ds._native.stats()

    def _counts(self) -> dict[str, int]:
        return self._native.counts()

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        epoch = _seed(epoch, "epoch")
        if epoch != self._epoch:
            self._move(epoch, 0)

    def _move(self, epoch: int, batch: int, done: list[Segment] | None = None,
              rest_batches: int = 0) -> None:
        """Go to batch `batch` of epoch `epoch` (of its rest after the
        segments `done`, of rest_batches batches)."""
        self._native.stop()  # first: refused while another thread's next() runs
        self._generation += 1  # ends an iteration in progress
        self._epoch, self._batch = epoch, batch
        self._done = list(done or [])
        self._rest_batches = rest_batches

    def _identity(self) -> dict[str, Any]:
        transform = repr(self.transform._steps()) if self.transform is not None else None
        return {"seed": self.seed, "shuffle": self.shuffle, "rank": self.rank,
                "world_size": self.world_size, "batch_size": self.batch_size,
                "drop_last": self.drop_last, "remainder": self.remainder,
                "shuffle_buffer": self.shuffle_buffer, "samples": len(self.dataset),
                "transform": transform, "layout": self.layout, "dtype": self.dtype,
                **({"to": self.to} if self.to else {}),
                **self._fields_identity()}

    def _source_identity(self) -> dict[str, Any]:
        """Which data the positions are of: a dataset's manifest_xxh3, or a
        mixture's sources, weights, rule, epoch and label space."""
        ds = self.dataset
        if isinstance(ds, Mixture):
            return {"mixture": ds._identity()}
        return {"manifest_xxh3": ds.manifest_xxh3}

    def _fields_identity(self) -> dict[str, Any]:
        # None without fields, as a state from before fields existed reads
        if not self.fields:
            return {"fields": None, "multi_hot": None}
        identity: dict[str, Any] = {"fields": [f.name for f in self.fields],
                                    "multi_hot": sorted(self.multi_hot)}
        if any(f.type == "boxes" for f in self.fields):  # which boxes a batch keeps
            identity["box_min_size"] = self.box_min_size
        return identity

    def state_dict(self) -> dict[str, Any]:
        """The position (epoch, batches handed out, and the segments of the
        epoch read before at other world or batch sizes, ``done``), the
        dataset's identity (``manifest_xxh3``: its manifest's hash; a
        mixture's sources and weights) and what else the batches depend on;
        a dict of plain values (torch.save / json friendly)."""
        return {"format": STATE_FORMAT, "epoch": self._epoch, "batch": self._batch,
                "done": [list(d) for d in self._done], **self._source_identity(),
                **self._identity()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue where `state` (from state_dict) says, on this loader's
        ranks: taken with the same world_size and batch_size, the remaining
        batches of its epoch, byte for byte; with others, this rank's part
        of the rest of that epoch (see the class).  Raises ValueError when
        it was taken on another dataset (another manifest: a re-publish with
        the same sample count too), names the first other setting that
        differs from this loader's (the batches would not be the same), or
        when remainder "keep" would give the new ranks different batch
        counts of the rest."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, not {type(state).__name__}")
        found = state.get("format")
        if found == "shardkit.Loader/1":
            raise ValueError(
                "state['format'] is 'shardkit.Loader/1', from an older shardkit: it does not "
                "say which dataset it was taken on, so it cannot be checked against this one.  "
                "If it was taken on this very dataset (the same manifest.json), set "
                "state['manifest_xxh3'] = loader.dataset.manifest_xxh3 and state['format'] = "
                f"{STATE_FORMAT!r}")
        if found not in (STATE_FORMAT, "shardkit.Loader/2"):
            raise ValueError(f"state['format'] must be {STATE_FORMAT!r}, not {found!r}")
        for key, mine in self._source_identity().items():
            if state.get(key) == mine:
                continue
            if key == "mixture":
                raise ValueError(f"state['mixture'] is {state.get(key)!r} but this loader's "
                                 f"mixture is {mine!r}: the state was taken on another mixture")
            raise ValueError(
                f"state['manifest_xxh3'] is {state.get('manifest_xxh3')!r} but this loader's "
                f"dataset has manifest_xxh3 {mine!r}: the state was taken on another dataset "
                "(or another publication of it); its positions do not apply here")
        epoch = _seed(state.get("epoch"), "state['epoch']")
        batch = _check_int(state.get("batch"), "state['batch']", minimum=0)
        world = _check_int(state.get("world_size"), "state['world_size']", maximum=U32_MAX)
        size = _check_int(state.get("batch_size"), "state['batch_size']", maximum=U32_MAX)
        remainder = _choice(state.get("remainder"), "state['remainder']", ("keep", "drop", "pad"))
        done = _segments(state.get("done", []))
        for key, mine in self._identity().items():
            if key not in _ELASTIC and state.get(key) != mine:
                raise ValueError(f"state[{key!r}] is {state.get(key)!r} but this loader's "
                                 f"{key} is {mine!r}")
        # one rank's plan is the same whatever the remainder (the default is
        # keep with one rank, pad with several)
        same = (world, size) == (self.world_size, self.batch_size) and (
            remainder == self.remainder or world == 1)
        if not same:
            done.append((world, batch * size, remainder))  # each rank took that many
            batch = 0
        batches = self._native.resumed_batches(epoch, done) if done else self._counts()["batches"]
        if batch > batches:
            raise ValueError(f"state['batch'] {batch} is beyond the {batches} batches of "
                             f"{'the rest of the' if done else 'an'} epoch")
        self._move(epoch, batch, done, batches)

    # ---- iteration --------------------------------------------------------

    def __iter__(self) -> "_Iteration":
        self._generation += 1
        return _Iteration(self, self._generation)

    def _next(self, it: "_Iteration") -> Batch:
        """The next batch of iteration `it` (its __next__)."""
        if self._closed:
            raise ValueError("the loader is closed")
        if it._generation != self._generation:
            raise RuntimeError("this iteration was ended by a newer iter(), set_epoch() "
                               "or load_state_dict() on the same loader")
        if it._done:
            raise StopIteration
        if not it._running:
            self._native.start(self._epoch, self._batch, self._done)
            it._running = True
        try:
            parts = self._native.next()
        except ShardkitError:
            # a failed batch is passed over, as the C loader does: the
            # threads go on, and the next next() gives the batch after it
            if not self._closed:
                self._batch = self._native.position()[1]
            raise
        except BaseException:
            # Ctrl-C, a close: the threads stop, the position stays (a
            # later next() starts them again from there)
            self._end(it)
            raise
        self._batch = self._native.position()[1]
        if parts is None:
            self._end(it)
            it._done = True
            self._epoch, self._batch = self._epoch + 1, 0
            self._done = []  # the next epoch is the new ranks' own
            self._warn_cache()
            raise StopIteration
        return self._make_batch(*parts)

    def _end(self, it: "_Iteration") -> None:
        """Stop iteration it's threads, if it is still the loader's."""
        if it._running and it._generation == self._generation and not self._closed:
            self._native.stop()
        it._running = False

    def _warn_cache(self) -> None:
        """Warn once when the dataset's node-local cache could not cache a
        shard (read remotely instead: a full disk, ...)."""
        text = self.dataset.cache_warning
        if text and not self._cache_warned:
            self._cache_warned = True
            warnings.warn(text, RuntimeWarning, stacklevel=3)

    def _make_batch(self, images: Any, indices: Any, labels: Any, epoch: int, number: int,
                    skipped: list[CorruptRecordError],
                    fields: "tuple[_native._FieldParts, ...]", sources: Any) -> Batch:
        indices = np.frombuffer(indices, dtype=np.uint64).astype(np.int64)
        labels = np.frombuffer(labels, dtype=np.int32).astype(np.int64)
        sources = np.frombuffer(sources, dtype=np.uint32).astype(np.int64)
        if isinstance(images, list):
            images = [np.asarray(i) for i in images]
        else:
            images = np.asarray(images)
        if skipped:
            room = MAX_SKIPPED_ERRORS - len(self._skipped_errors)
            self._skipped_errors.extend(skipped[:max(room, 0)])
        values, present = self._batch_fields(fields, indices)
        if self._torch is not None:
            t = self._torch
            images = _to_torch(t, images)
            labels = t.from_numpy(labels)
            sources = t.from_numpy(sources)
            values = {f.name: values[f.name] if f.type == "boxes" else _to_torch(t, values[f.name])
                      for f in self.fields}
            present = {k: t.from_numpy(v) for k, v in present.items()}
        return Batch(images, labels, indices, epoch, number, skipped, self.dataset, values,
                     present, sources)

    def _batch_fields(self, parts: "tuple[_native._FieldParts, ...]",
                      indices: npt.NDArray[np.int64]) -> tuple[dict[str, Any], dict[str, Any]]:
        """batch.fields and batch.present from the native batch's fields
        (one (number, present, values, items, labels, boxes, grids) per
        selected field: _native.pyi's _FieldParts)."""
        values: dict[str, Any] = {}
        present: dict[str, Any] = {}
        for field, (_, present_bytes, stacked, items, labels, boxes_parts,
                    grids) in zip(self.fields, parts):
            mask = np.asarray(present_bytes).view(np.bool_)
            name = field.name
            present[name] = mask
            if stacked is not None:
                values[name] = np.asarray(stacked)
            elif boxes_parts is not None:
                values[name] = _batch_boxes(boxes_parts, mask, self._torch)
            elif grids is not None:
                values[name] = _batch_grids(field, grids, self._stacked.get(name), self._torch)
            elif labels is not None:  # a labels field
                ids = np.asarray(labels[0])
                ends = np.asarray(labels[1]).astype(np.intp)
                if name in self.multi_hot:
                    hot = np.zeros((len(mask), len(self._fields_dataset.labels)), dtype=np.uint8)
                    hot[np.repeat(np.arange(len(mask)), np.diff(ends)), ids] = 1
                    values[name] = hot
                else:
                    values[name] = [ids[ends[j]:ends[j + 1]].tolist() if mask[j] else None
                                    for j in range(len(mask))]
            elif field.type == "json":
                texts = cast("list[str | None]", items)
                values[name] = [None if s is None else self._parse_json(s, indices[j], name)
                                for j, s in enumerate(texts)]
            else:
                values[name] = items
        # Mask R-CNN's target dicts: each sample's instance masks beside its
        # boxes (the loader dropped those of the boxes it dropped)
        boxes = next((f.name for f in self.fields if f.type == "boxes"), None)
        for f in self.fields:
            if f.type == "instances" and boxes is not None:
                for target, masks in zip(values[boxes], values[f.name]):
                    if target is not None and masks is not None:
                        target["masks"] = masks
        return values, present

    @property
    def _fields_dataset(self) -> Dataset:
        """The dataset whose fields the batches carry (a Mixture's carry none)."""
        return cast(Dataset, self.dataset)

    def _parse_json(self, text: str, index: np.int64, name: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as e:
            raise _bad_json(self._fields_dataset, int(index), name, e) from None

    # ---- measurement and lifetime -------------------------------------------

    @property
    def stats(self) -> dict[str, Any]:
        """What the loader has done since it was made (the numbers shardbench
        reports): samples, batches, seconds (with an epoch in progress),
        samples_per_second, wait_seconds and wait_fraction (the training loop
        blocked on input), stage_ms (per sample, summed over threads: read,
        decompress, decode, transform), bytes_read, requests and retries (over
        HTTP), skipped (damaged samples left out with on_error="skip") and
        skipped_errors (the first ones), and the node-local cache's
        cache_hits, cache_misses, cache_bytes_fetched, cache_evictions,
        cache_skipped (Dataset(cache_dir=...)).  The reader's counters are
        the dataset's: reads of the same Dataset by others count too."""
        s = self._native.stats()
        now = self._read_stats()
        reads = {k: now[k] - self._reads_before[k] for k in now}
        seconds = s["busy_ns"] / 1e9
        samples = s["samples"]
        read_samples = reads["samples"] or 1

        def per_sample(ns: int, n: int) -> float:
            return ns / 1e6 / n if n else 0.0

        return {
            "samples": samples,
            "batches": s["batches"],
            "seconds": seconds,
            "samples_per_second": samples / seconds if seconds > 0 else 0.0,
            "wait_seconds": s["wait_ns"] / 1e9,
            "wait_fraction": s["wait_ns"] / s["busy_ns"] if s["busy_ns"] else 0.0,
            "stage_ms": {
                "read": per_sample(reads["read_ns"], read_samples),
                "decompress": per_sample(reads["decompress_ns"], read_samples),
                "decode": per_sample(reads["decode_ns"], read_samples),
                "transform": per_sample(s["transform_ns"], samples),
            },
            "bytes_read": reads["bytes_requested"],
            "bytes_transferred": reads["bytes_transferred"],
            "requests": reads["requests"],
            "retries": reads["retries"],
            "cache_hits": reads["cache_hits"],
            "cache_misses": reads["cache_misses"],
            "cache_bytes_fetched": reads["cache_bytes_fetched"],
            "cache_evictions": reads["cache_evictions"],
            "cache_skipped": reads["cache_skipped"],
            "skipped": s["skipped"],
            "failed_batches": s["failed_batches"],
            "skipped_errors": list(self._skipped_errors),
            "threads": self.threads,
        }

    def close(self) -> None:
        """Stop the threads now (also done when the loader is dropped).
        Batches already handed out stay valid; iterating, or a next() in
        progress, raises ValueError("the loader is closed").  Safe from a
        signal handler and from another thread while the loop waits in
        next(): that next() frees the loader when it is done with it (within
        a tenth of a second when it waits for a batch)."""
        self._closed = True
        self._generation += 1
        self._native.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Loader({self.dataset!r}, batch_size={self.batch_size}, rank={self.rank}, "
                f"world_size={self.world_size}, threads={self.threads}, "
                f"transform={self.transform!r})")


class _Iteration(Iterator[Batch]):
    """One iteration of a Loader's epoch (what ``iter(loader)`` returns).
    ``next()`` gives the next batch; one that raises (a damaged sample's
    CorruptRecordError, a NetworkError ...) is passed over, and the next
    ``next()`` gives the batch after it, so that a retry loop gets the rest
    of the epoch.  StopIteration comes only at the end of the epoch."""

    __slots__ = ("_loader", "_generation", "_running", "_done")

    def __init__(self, loader: Loader, generation: int) -> None:
        self._loader = loader
        self._generation = generation
        self._running = False  # the loader's threads run for it
        self._done = False  # the epoch is over

    def __iter__(self) -> "_Iteration":
        return self

    def __next__(self) -> Batch:
        return self._loader._next(self)

    def __del__(self) -> None:
        try:
            self._loader._end(self)  # dropped mid-epoch: the threads stop
        except Exception:  # another thread's next() has the loader; it goes on
            pass


def _batch_boxes(boxes: "tuple[_native.Buffer, _native.Buffer, _native.Buffer, list[int]]",
                 mask: npt.NDArray[Any], torch: Any = None) -> list[dict[str, Any] | None]:
    """A batch's boxes (the whole batch's arrays, and each sample's count)
    as per-sample dicts of views into whole-batch arrays (torch tensors with
    `torch`), split in one call per array."""
    xyxy, labels, crowd, counts = boxes
    arrays = (np.asarray(xyxy), np.asarray(labels), np.asarray(crowd))
    parts: list[Any]
    if torch is not None:
        parts = [torch.split(torch.from_numpy(a), counts) for a in arrays]
    else:
        cuts: Any = np.cumsum(counts[:-1]) if len(counts) > 1 else []
        parts = [np.split(a, cuts) for a in arrays]
    return [{"boxes": x, "labels": y, "iscrowd": z} if present else None
            for x, y, z, present in zip(*parts, mask)]


def _batch_grids(field: Field, grids: "tuple[list[_native.Buffer | None], _native.Buffer | None]",
                 size: tuple[int, int] | None, torch: Any = None) -> Any:
    """A batch's masks, image field or instance masks.  Masks and images:
    with `size` ((height, width): the loader's output size is fixed and
    every sample has the field) one (B, H, W[, 3]) view of the batch's
    memory, else a list (None where absent).  Instance masks: per sample
    (N, H, W) uint8 views (torch tensors with `torch`), None where absent."""
    each, stacked = grids
    if size is not None:
        if stacked is None or np.asarray(stacked).shape[1:3] != size:
            what = "masks" if field.type == "mask" else "images"
            raise RuntimeError(f"the loader gave {what} of another size than its output's")
        return np.asarray(stacked)
    arrays = [None if v is None else np.asarray(v) for v in each]
    if field.type == "instances" and torch is not None:
        return [None if a is None else torch.from_numpy(a) for a in arrays]
    return arrays


def _to_torch(t: Any, v: Any) -> Any:
    """A batch's images or a batch.fields value as torch tensors: arrays, and
    the arrays in lists and dicts (boxes); uint16 (16-bit images, a mask) as
    int32 (torch has no uint16)."""
    if isinstance(v, np.ndarray):
        return t.from_numpy(v.astype(np.int32) if v.dtype == np.uint16 else v)
    if isinstance(v, dict):
        return {k: _to_torch(t, x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_torch(t, x) for x in v]
    return v


def _select_fields(ds: Dataset, names: Iterable[str] | None,
                   multi_hot: bool | Iterable[str]) -> tuple[list[Field], set[str]]:
    """(the Fields `names` selects, in that order; the names of those to give
    as multi-hot arrays), checked against the dataset's declarations."""
    declared = ds.fields
    if names is None:
        names = []
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise TypeError(f"fields must be a list of field names, not {type(names).__name__}")
    names = list(names)
    selected: list[Field] = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"fields must be a list of field names, not of "
                            f"{type(name).__name__}")
        if name not in declared:
            known = ", ".join(repr(n) for n in declared) or "none"
            raise ValueError(f"unknown field {name!r}: the dataset declares {known}")
        if name in (f.name for f in selected):
            raise ValueError(f"field {name!r} is selected twice")
        selected.append(declared[name])
    labels_fields = [f.name for f in selected if f.type == "labels"]
    if isinstance(multi_hot, bool):
        hot = set(labels_fields) if multi_hot else set()
    elif isinstance(multi_hot, str) or not hasattr(multi_hot, "__iter__"):
        raise TypeError(f"multi_hot must be a bool or a list of labels field names, not "
                        f"{type(multi_hot).__name__}")
    else:
        hot = set()
        for name in multi_hot:
            if name not in labels_fields:
                why = ("not a field of the dataset" if name not in declared
                       else "not in fields" if declared[name].type == "labels"
                       else f"a {declared[name].type} field")
                selected_labels = ", ".join(map(repr, labels_fields)) or "none"
                raise ValueError(f"multi_hot: {name!r} is {why}, not one of the selected labels "
                                 f"fields ({selected_labels})")
            hot.add(name)
    return selected, hot


def _empty() -> Compose:
    return Compose([])


def _segments(value: object) -> list[Segment]:
    """state['done']: a list of [world_size, taken, remainder] segments."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"state['done'] must be a list of [world_size, taken, remainder], not "
                        f"{type(value).__name__}")
    out = []
    for seg in value:
        if not isinstance(seg, (list, tuple)) or len(seg) != 3:
            raise ValueError(f"state['done'] must hold [world_size, taken, remainder] "
                             f"segments, not {seg!r}")
        out.append((_check_int(seg[0], "state['done'] world_size", maximum=U32_MAX),
                    _seed(seg[1], "state['done'] taken"),
                    _choice(seg[2], "state['done'] remainder", ("keep", "drop", "pad"))))
    return out


class _Reference:
    """Where a pickled Batch's dataset is: reopened (once per process) when
    its keys are asked for."""

    _opened: "dict[Any, Dataset | Mixture]" = {}

    def __init__(self, key: Any) -> None:
        self.key = key

    @classmethod
    def of(cls, ds: "Dataset | Mixture") -> "_Reference":
        if isinstance(ds, Mixture):
            reduced = ds.__reduce__()[1]
            return cls(("mixture", tuple((loc, tuple(sorted(o.items()))) for loc, o in reduced[0]),
                        tuple(reduced[1]), reduced[2], reduced[3], reduced[4]))
        return cls(("dataset", ds.location, tuple(sorted(ds.options.items()))))

    def resolve(self) -> "Dataset | Mixture":
        found = self._opened.get(self.key)
        if found is None:
            if self.key[0] == "mixture":
                _, sources, weights, size, rule, labels = self.key
                found = _remix([(loc, dict(o)) for loc, o in sources], list(weights), size, rule,
                               labels)
            else:
                found = _reopen(self.key[1], cast(ReadingOptions, dict(self.key[2])))
            self._opened[self.key] = found
        return found


def _rebuild_batch(images: Any, labels: Any, indices: npt.NDArray[np.int64], epoch: int,
                   number: int, skipped: list[CorruptRecordError], ref: _Reference,
                   fields: dict[str, Any], present: dict[str, Any], sources: Any,
                   keys: list[str] | None) -> Batch:
    batch = Batch(images, labels, indices, epoch, number, skipped, ref, fields, present, sources)
    batch._keys = keys
    return batch
