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
# enum shard_status (shardkit/error.h): shardkit.errors maps them to classes
SHARD_OK: Final[int]
SHARD_ENOMEM: Final[int]
SHARD_EIO: Final[int]
SHARD_EINVAL: Final[int]
SHARD_ECORRUPT: Final[int]
SHARD_EUNSUPPORTED: Final[int]
SHARD_ELIMIT: Final[int]
SHARD_ENOTIMAGE: Final[int]
SHARD_ELOCKED: Final[int]
SHARD_EEXIST: Final[int]
SHARD_EMISMATCH: Final[int]
SHARD_ENOTFOUND: Final[int]
SHARD_ENET: Final[int]
SHARD_EINTR: Final[int]
SHARD_EREJECTED: Final[int]

def version() -> str: ...
def available_cpus() -> int: ...
def redact_urls(location: str | bytes | os.PathLike[str] | os.PathLike[bytes], /) -> Any: ...
# a field value of the type named from its stored bytes (text, json: str; int;
# float; float32, int64: a Buffer (length,); labels: list of int; bytes;
# boxes: (xyxy (n, 4) float32, class ids (n,) int64, crowd (n,) bool); mask:
# (h, w) uint8 or uint16; image: (h, w, 3) uint8; instances: (n, h, w) uint8)
def decode_value(type: str, raw: bytes | memoryview | np.ndarray[Any, Any], /) -> Any: ...
def _raise_library_error(code: int, message: bytes, filename: object = None, /) -> NoReturn: ...

@final
class Buffer:
    """Memory the library made (pixels, field values), exported through the
    buffer protocol: numpy.asarray and torch.from_numpy take it without a
    copy.  Made by the extension only."""

# What Transforms.apply reads: any C-contiguous uint8 buffer of (height, width, 3).
_Pixels: TypeAlias = Buffer | np.ndarray[Any, Any] | bytes | bytearray | memoryview
_Location: TypeAlias = str | bytes | os.PathLike[str] | os.PathLike[bytes]

class _FieldDecl(TypedDict):
    name: str
    number: int
    type: str  # "text", "json", ..., "image" (shard_field_type_name)
    length: int | None  # a float32 or int64 vector's
    source: tuple[str, str]  # ("sidecar" | "column" | "coco" | "folder", what)
    required: bool
    present: int  # samples that have it
    classes: dict[int, str] | None  # a boxes or mask field's
    ignore: int | None  # a mask field's value of no class

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
    # the declarations, in field number order (a version 1 dataset: none)
    def fields(self) -> tuple[_FieldDecl, ...]: ...
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
# field's (label numbers uint32, end offsets uint64 counting labels) or None, a
# boxes field's (xyxy (n, 4) float32, class ids (n,) int64, crowd (n,) bool,
# each sample's box count) or None, a mask, image or instances field's (each
# sample's value or None; for masks and images of one size in every sample, a
# (count, ...) view of them all, else None) or None).
_FieldParts: TypeAlias = tuple[int, Buffer, Buffer | None,
                               list[str | None] | list[bytes | None] | None,
                               tuple[Buffer, Buffer] | None,
                               tuple[Buffer, Buffer, Buffer, list[int]] | None,
                               tuple[list[Buffer | None], Buffer | None] | None]
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

class _LoaderOptions(TypedDict, total=False):
    batch_size: SupportsIndex
    shuffle: bool
    seed: SupportsIndex
    rank: SupportsIndex
    world_size: SupportsIndex
    threads: SupportsIndex
    drop_last: bool
    remainder: str  # "keep", "drop", "pad"
    shuffle_buffer: SupportsIndex
    prefetch: SupportsIndex
    skip_errors: bool
    worker: SupportsIndex
    workers: SupportsIndex
    fields: Sequence[SupportsIndex] | None  # field numbers
    box_min_size: float
    channels: SupportsIndex  # 0: the dataset's stored form

@final
class Loader:
    # options by name, checked in C: an unknown or mistyped one is a TypeError
    # naming it; those not given keep the library's defaults
    def __init__(self, dataset: Dataset | Mixture, transforms: Transforms | None,
                 options: _LoaderOptions) -> None: ...
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
