"""Types of shardkit._native, the C extension (python/src/*.c): what each
function takes and gives back.  The pure-Python modules shape these for
users; tests/test_types.py holds this file to the module (mypy's stubtest:
the same names, arguments and kinds)."""
import os
from collections.abc import Sequence
from typing import Any, Final, Literal, NoReturn, SupportsIndex, TypeAlias, TypedDict, final

import numpy as np

from shardkit.errors import CorruptRecordError

MAX_STEPS: Final[int]
MAX_SIDE: Final[int]
# the ranges of Dataset's remote-reading options (shardkit/dataset.h)
DATASET_MAX_CONNECTIONS: Final[int]
DATASET_MIN_WINDOW: Final[int]
DATASET_MAX_WINDOW: Final[int]
DATASET_MAX_RETRIES: Final[int]
DATASET_MAX_TIMEOUT: Final[int]

def version() -> str: ...
def available_cpus() -> int: ...
def redact_urls(location: str | bytes | os.PathLike[str] | os.PathLike[bytes], /) -> Any: ...
def _raise_library_error(code: int, message: bytes, filename: object = None, /) -> NoReturn: ...

@final
class Buffer:
    """Memory the library made (pixels, field values), exported through the
    buffer protocol: numpy.asarray and torch.from_numpy take it without a
    copy.  Made by the extension only."""

# What Transforms.apply reads: any C-contiguous uint8 buffer of (height, width, 3).
_Pixels: TypeAlias = Buffer | np.ndarray[Any, Any] | bytes | bytearray | memoryview
_Location: TypeAlias = str | bytes | os.PathLike[str] | os.PathLike[bytes]

@final
class Dataset:
    # how a remote dataset is read (None: the library's default); timeout in seconds
    def __init__(self, location: _Location, *, connections: SupportsIndex | None = None,
                 window: SupportsIndex | None = None,
                 window_cache: SupportsIndex | None = None,
                 retries: SupportsIndex | None = None, timeout: float | None = None,
                 cache_dir: str | bytes | None = None,
                 cache_limit: SupportsIndex | None = None) -> None: ...
    def __len__(self) -> int: ...
    # (key bytes, label or -1, pixels (h, w, 3) uint8, ((field number, value bytes), ...))
    def read(self, index: SupportsIndex, /) -> tuple[bytes, int, Buffer,
                                                     tuple[tuple[int, bytes], ...]]: ...
    # (codec: "jpeg", "png" or "raw", width, height, payload bytes as stored)
    def read_stored(self, index: SupportsIndex, /) -> tuple[str, int, int, bytes]: ...
    def key(self, index: SupportsIndex, /) -> bytes: ...
    def find(self, key: bytes, /) -> int: ...
    def locate(self, index: SupportsIndex, /) -> tuple[str, int]: ...
    def manifest_json(self) -> str: ...
    def labels(self) -> tuple[str, ...]: ...
    def shard_count(self) -> int: ...
    def manifest_xxh3(self) -> int: ...
    # the read counters: samples, errors, read_ns, decompress_ns, decode_ns,
    # bytes_requested, bytes_transferred, requests, retries, rtt_ns and the
    # node-local cache's cache_hits, cache_misses, cache_bytes_fetched,
    # cache_evictions, cache_skipped, cache_corrupt
    def stats(self) -> dict[str, int]: ...
    def cache_warning(self) -> str: ...

# A transform step, as shardkit.transforms makes them: (name, parameters...).
_Step: TypeAlias = (
    tuple[Literal["random_resized_crop"], int, int, tuple[float, float], tuple[float, float]]
    | tuple[Literal["center_crop", "resize"], int, int]
    | tuple[Literal["horizontal_flip"], float]
    | tuple[Literal["normalize"], tuple[float, float, float], tuple[float, float, float]]
)

class _Choice(TypedDict):
    in_width: int
    in_height: int
    out_width: int
    out_height: int
    left: int
    top: int
    box_width: int
    box_height: int
    attempts: int
    flip: bool

@final
class Transforms:
    def __init__(self, steps: Sequence[_Step], layout: str = "NHWC",
                 dtype: str = "uint8") -> None: ...
    def fixed_size(self) -> tuple[int, int] | None: ...
    def draw(self, width: SupportsIndex, height: SupportsIndex, seed: SupportsIndex,
             epoch: SupportsIndex, index: SupportsIndex, /) -> tuple[_Choice, ...]: ...
    def apply(self, image: _Pixels, seed: SupportsIndex, epoch: SupportsIndex,
              index: SupportsIndex, /) -> Buffer: ...

@final
class Batch:
    """The memory of one batch: the Buffers of a Loader.next() keep it alive."""

# One selected field of a batch: (number, present: uint8 (count,), values of a
# stacked field or None, the items of a text/json/bytes field or None, a labels
# field's (label numbers uint32, offsets uint64 in bytes), a boxes or mask
# field's (the values back to back, their end offsets uint64) or None).
_FieldParts: TypeAlias = tuple[int, Buffer, Buffer | None,
                               list[str | None] | list[bytes | None] | None,
                               tuple[Buffer, Buffer] | None]
# (images: one Buffer or one per sample, indices (uint64 bytes), labels (int32
# bytes), epoch, number, skipped samples' errors, the selected fields, sources
# (uint32 bytes))
_BatchParts: TypeAlias = tuple[Buffer | list[Buffer], bytes, bytes, int, int,
                               list[CorruptRecordError], tuple[_FieldParts, ...], bytes]

@final
class Mixture:
    # rule: "replace", "stop_on_shortest", "stop_on_longest"; epoch_size 0: by
    # the rule; labels: "own", "merged"
    def __init__(self, datasets: Sequence[Dataset], weights: Sequence[float], rule: str,
                 epoch_size: SupportsIndex, labels: str) -> None: ...
    def epoch_size(self) -> int: ...
    # ((weight relative to the sum, entries per epoch), ...)
    def sources(self) -> tuple[tuple[float, int], ...]: ...
    # (merged class names, each source's label numbers in them), or ((), None)
    def labels(self) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...] | None]: ...

@final
class Loader:
    def __init__(self, dataset: Dataset | Mixture, transforms: Transforms | None,
                 batch_size: SupportsIndex,
                 shuffle: bool, seed: SupportsIndex, rank: SupportsIndex,
                 world_size: SupportsIndex, threads: SupportsIndex, drop_last: bool,
                 remainder: str, shuffle_buffer: SupportsIndex, prefetch: SupportsIndex,
                 skip_errors: bool, worker: SupportsIndex = 0, workers: SupportsIndex = 1,
                 fields: Sequence[SupportsIndex] | None = None,
                 box_min_size: float = 1.0, channels: SupportsIndex = 0) -> None: ...
    # done: the segments of the epoch read before, (world_size, taken, remainder)
    def start(self, epoch: SupportsIndex, batch: SupportsIndex,
              done: Sequence[tuple[SupportsIndex, SupportsIndex, str]] = (), /) -> None: ...
    def resumed_batches(self, epoch: SupportsIndex,
                        done: Sequence[tuple[SupportsIndex, SupportsIndex, str]], /) -> int: ...
    def next(self) -> _BatchParts | None: ...
    # batches, samples and dropped samples per epoch
    def counts(self) -> dict[str, int]: ...
    def position(self) -> tuple[int, int]: ...
    # samples, batches, skipped, failed_batches, transform_ns, wait_ns, busy_ns
    def stats(self) -> dict[str, int]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
