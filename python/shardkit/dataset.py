"""Dataset: an open shardkit dataset, samples by index or key."""
import json
import numbers
import os
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, SupportsInt, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from shardkit import _native
from shardkit.errors import CorruptRecordError
from shardkit.transforms import _check_int

U64_MAX = 2**64 - 1
_T = TypeVar("_T")

# What a location may be: str, bytes or a path.
Location = str | bytes | os.PathLike[str] | os.PathLike[bytes]
# A sample index: an int (numpy's too, bools not).
Index = int | np.integer[Any]


class ReadingOptions(TypedDict, total=False):
    """How a remote dataset is read (Dataset's keywords): those given."""
    connections: int
    window: int
    window_cache: int
    retries: int
    timeout: float
    cache_dir: str | bytes
    cache_limit: int


def _key_str(key_bytes: bytes) -> str:
    return key_bytes.decode("utf-8", "surrogateescape")


def _key_bytes(key: str | bytes, name: str = "key") -> bytes:
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    raise TypeError(f"{name} must be str or bytes, not {type(key).__name__}")


class Field:
    """A field the dataset declares (format version 2, manifests/FORMAT.md
    "Fields"): ``name``, ``number`` (its position in the manifest's
    config.fields), ``type`` ("text", "json", "int", "float", "float32",
    "int64", "labels", "bytes", "boxes", "mask", "instances" or "image"), ``length`` (a float32 or
    int64 vector's length, else None), ``source`` (``("sidecar", ".txt")``,
    ``("column", "caption")``, ``("coco", "bbox")`` or ``("folder",
    "../masks/")``: where the values were taken from), ``classes`` (a boxes or mask field's: dict class id ->
    name, else None), ``ignore`` (a mask field's value of pixels of no class,
    VOC's 255, as a loss's ``ignore_index``; else None), ``required`` (bool: a
    sample without it was rejected) and ``present`` (how many samples have
    it: the manifest's counts.fields)."""

    __slots__ = ("name", "number", "type", "length", "source", "required", "present",
                 "classes", "ignore")
    name: str
    number: int
    type: str
    length: int | None
    source: tuple[str, str]
    required: bool
    present: int
    classes: dict[int, str] | None
    ignore: int | None

    def __init__(self, name: str, number: int, type: str, length: int | None,
                 source: tuple[str, str], required: bool, present: int,
                 classes: dict[int, str] | None = None, ignore: int | None = None) -> None:
        self.name = name
        self.classes = classes
        self.ignore = ignore
        self.number = number
        self.type = type
        self.length = length
        self.source = source
        self.required = required
        self.present = present

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Field) and all(
            getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, a) for a in self.__slots__ if a != "classes"))

    def __repr__(self) -> str:
        declared = f"{self.type}[{self.length}]" if self.length is not None else self.type
        return (f"Field({self.name!r}, {declared}, {self.source[0]}={self.source[1]!r}, "
                f"required={self.required}, present={self.present})")


def _declared_fields(native: "_native.Dataset") -> dict[str, Field]:
    """The Field of every declaration of an open dataset, by name, in field
    number order (empty for a version 1 dataset): as the library read them
    from its manifest."""
    fields = {}
    for d in native.fields():
        fields[d["name"]] = Field(d["name"], d["number"], d["type"], d["length"], d["source"],
                                  d["required"], d["present"], d["classes"], d["ignore"])
    return fields


def _decode_value(field: Field, raw: bytes) -> Any:
    """A field's stored bytes as the Python value Sample.fields holds (the
    reader checked the type, a vector's length and that text is UTF-8; the
    extension decodes them)."""
    value = _native.decode_value(field.type, raw)
    t = field.type
    if t == "json":
        return json.loads(value)
    if t in ("float32", "int64", "mask", "instances", "image"):
        return np.asarray(value)
    if t == "boxes":
        return _boxes_dict(value)
    return value  # text, int, float, labels, bytes


def _boxes_dict(arrays: "tuple[_native.Buffer, _native.Buffer, _native.Buffer]"
                ) -> dict[str, npt.NDArray[Any]]:
    """Boxes as {"boxes": (N, 4) float32 xyxy, "labels": (N,) int64 class
    ids, "iscrowd": (N,) bool}, from the extension's three arrays."""
    xyxy, labels, crowd = arrays
    return {"boxes": np.asarray(xyxy), "labels": np.asarray(labels),
            "iscrowd": np.asarray(crowd)}


def _bad_json(dataset: "Dataset", index: int, name: str,
              error: ValueError) -> CorruptRecordError:
    """The CorruptRecordError of a stored JSON value that does not parse."""
    shard, record = dataset.locate(index)
    key_bytes = dataset.key_bytes(index)
    key = key_bytes.decode("utf-8", "backslashreplace")
    return CorruptRecordError(f"{shard} record {record} (key '{key}'): field '{name}': invalid "
                              f"JSON: {error}", index=index, shard=shard, record=record,
                              key_bytes=key_bytes, code=_native.SHARD_ECORRUPT)


class Sample:
    """One sample: ``key`` (str; bytes that are not UTF-8 are kept as
    surrogate escapes, so ``key_bytes`` and ``key`` round-trip), ``key_bytes``,
    ``label`` (int index into ``Dataset.labels``, or None), ``index`` (its
    position in stored order), ``image`` (numpy, height x width x C in the
    dataset's stored form: C 1 grey, 2 grey and alpha, 3 RGB, 4 RGBA; uint8,
    or uint16 for a 16-bit dataset) and ``fields``: a dict holding every field the dataset declares, by
    name, in declaration order (empty for a dataset without fields): text as
    str, json parsed (json.loads), int and float as Python numbers, float32
    and int64 vectors as numpy arrays, labels as a list of label numbers
    (``Dataset.label_names`` gives their names), bytes as bytes, boxes as
    {"boxes": (N, 4) float32 x0, y0, x1, y1 in the image's pixels, "labels":
    (N,) int64 class ids, "iscrowd": (N,) bool}, a mask as a (height, width)
    uint8 or uint16 array of class ids, an image field (a second image of the
    sample, resampled as its image was) as a (height, width, 3) uint8 RGB
    array, and None for
    a field the sample does not have (an empty string is a value, not an
    absence)."""

    __slots__ = ("index", "key_bytes", "label", "image", "fields")
    index: int
    key_bytes: bytes
    label: int | None
    image: npt.NDArray[np.uint8]
    fields: dict[str, Any]

    def __init__(self, index: int, key_bytes: bytes, label: int | None,
                 image: npt.NDArray[np.uint8], fields: dict[str, Any] | None = None) -> None:
        self.index = index
        self.key_bytes = key_bytes
        self.label = label
        self.image = image
        self.fields = {} if fields is None else fields

    @property
    def key(self) -> str:
        return _key_str(self.key_bytes)

    def __repr__(self) -> str:
        h, w, _ = self.image.shape
        return f"Sample(index={self.index}, key={self.key!r}, label={self.label}, image={w}x{h})"


class Dataset:
    """A shardkit dataset: ``Dataset(location)`` with a directory holding
    manifest.json and its shards, an ``http://`` / ``https://`` URL under
    which they are served, or an ``s3://bucket/prefix`` in an S3-compatible
    store (settings as the AWS CLI finds them: see docs/guide/remote.md).

    Only manifest.json is read when it opens; each shard's footer is read the
    first time one of its samples is.  ``len(ds)``, ``ds[i]`` (a Sample;
    negative indices count from the end), ``ds.labels`` (class names),
    ``ds.manifest`` (the manifest as a dict), ``ds.index_of(key)``,
    ``ds.stored(i)`` (the payload as stored, not decoded), ``ds.fields``
    (the fields it declares, format version 2; a Sample's ``fields`` holds
    their values) and ``ds.label_names(ids)``.
    Thread-safe: many threads may read one dataset at once (the GIL is
    released while a sample is read and decoded).

    ``location`` may be str, bytes or a path (a file name that is not
    UTF-8 may be given as bytes, or as the str os.fsdecode makes of them).

    How a remote dataset is read (a local one ignores them; None is the
    default): shards come in range requests of ``window`` bytes (default
    8 MiB, 4 KiB to 4 GiB) fetched by ``connections`` connections (default
    8, at most 64) into the window cache, in memory, of at most
    ``window_cache`` bytes (default 256 MiB, at least one window); a request is tried again ``retries`` times
    (default 8, at most 100) after a transient failure (refused or reset
    connection, time-out, HTTP 5xx but 501 and 505, 408, 429), waiting 50 ms,
    100 ms, ... up to 2 s in between; an attempt that receives nothing for
    ``timeout`` seconds (default 10, at most 86400; an int or a float) is
    abandoned.  ``Dataset(url, connections=32, window=1 << 20)`` suits a
    store far away.  A value out of its range raises ValueError naming the
    argument; one of another type TypeError.  ``cache`` is the deprecated
    older name of ``window_cache`` (shardkit 0.1.0's; it warns, and goes in
    0.4.0): the cache alone is the node-local cache below.

    ``cache_dir`` (a directory on local disk; default the environment's
    ``SHARDKIT_CACHE_DIR``, ``""`` none) keeps whole shards of a remote
    dataset as they are read, shared by every process of the machine (ranks,
    DataLoader workers, other jobs): each shard is downloaded once, checked
    against the manifest's xxh3 before use, and read locally afterwards;
    ``cache_limit`` bytes at most (default ``SHARDKIT_CACHE_LIMIT``, else
    what the disk takes; other datasets' shards are removed to make room,
    the least recently read first, never this one's for each other).  A
    shard that cannot be cached (no room, a full disk, a lock that cannot be
    had: a read-only cache directory) is read remotely, never waited for, and
    ``cache_warning`` says why for a full disk or a lock (the Loader warns
    once).  ``stats()`` counts
    cache_hits, cache_misses, cache_bytes_fetched, cache_evictions,
    cache_skipped and cache_corrupt.

    ``repr()``, messages and an error's ``.filename`` show a URL's user and
    password as ``***`` (``location`` keeps them).

    Raises FileNotFoundError (shardkit.NotFoundError, with .errno and
    .filename) when there is no dataset at the location, CorruptDatasetError
    for a damaged manifest (see shardkit.errors for every class).
    """

    def __init__(self, location: Location, *, connections: int | None = None,
                 window: int | None = None, window_cache: int | None = None,
                 retries: int | None = None, timeout: float | None = None,
                 cache_dir: str | bytes | os.PathLike[str] | os.PathLike[bytes] | None = None,
                 cache_limit: int | None = None,
                 cache: int | None = None) -> None:  # cache: deprecated, window_cache
        if not isinstance(location, (str, bytes, os.PathLike)):
            raise TypeError(f"location must be a str or path, not {type(location).__name__}")
        self._location: str | bytes = os.fspath(location)
        window_cache = _older_name("cache", cache, "window_cache", window_cache)
        self._options = _reading_options(connections, window, window_cache, retries, timeout,
                                         cache_dir, cache_limit)
        self._native = _native.Dataset(self._location, **self._options)
        self._manifest: dict[str, Any] | None = None
        self._labels: list[str] | None = None
        self._fields: dict[str, Field] | None = None
        self._by_number: list[Field] = []

    @property
    def location(self) -> str | bytes:
        return self._location

    def __len__(self) -> int:
        return len(self._native)

    def _index(self, i: Index, name: str = "index") -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(i).__name__}")
        i = int(i)
        n = len(self._native)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{name} {i} is out of range for a dataset of {n} samples")
        return i

    def __getitem__(self, i: Index) -> Sample:
        i = self._index(i)
        key, label, pixels, stored = self._native.read(i)
        return Sample(i, key, None if label < 0 else label, np.asarray(pixels),
                      self._sample_fields(i, stored))

    def _sample_fields(self, i: int, stored: tuple[tuple[int, bytes], ...]) -> dict[str, Any]:
        """Sample.fields from the (field number, bytes) pairs a read gave."""
        declared = self._declared()
        values: dict[str, Any] = dict.fromkeys(declared)
        by_number = self._by_number
        for number, raw in stored:
            field = by_number[number]
            try:
                values[field.name] = _decode_value(field, raw)
            except ValueError as e:  # json.JSONDecodeError: the reader does not parse JSON
                raise _bad_json(self, i, field.name, e) from None
        return values

    def _declared(self) -> dict[str, Field]:
        if self._fields is None:
            self._fields = _declared_fields(self._native)
            self._by_number = [f for f in self._fields.values()]
        return self._fields

    @property
    def fields(self) -> dict[str, Field]:
        """The fields the dataset declares: a dict name -> Field (name,
        number, type, length, source, required, present), in field number
        order; empty for a dataset without fields (format version 1)."""
        return dict(self._declared())

    def label_names(self, labels: Iterable[SupportsInt]) -> list[str | None]:
        """The class names of a list of label numbers (a labels field's
        value, or a batch's labels): ``ds.labels[i]`` for each, and None for
        -1, which a batch gives a sample without a label.  Any other number
        outside 0..len(labels)-1 is an IndexError naming it (a negative one
        is never counted from the end)."""
        names = self.labels
        out: list[str | None] = []
        for label in labels:
            i = int(label)
            if i == -1:
                out.append(None)
            elif 0 <= i < len(names):
                out.append(names[i])
            else:
                raise IndexError(f"label {i} is not a label number of this dataset "
                                 f"(0..{len(names) - 1}, or -1: none)")
        return out

    def __iter__(self) -> Iterator[Sample]:
        for i in range(len(self)):
            yield self[i]

    @property
    def labels(self) -> list[str]:
        """The class names, in label order (a label is an index into this list)."""
        if self._labels is None:
            self._labels = list(self._native.labels())
        return self._labels

    @property
    def manifest_xxh3(self) -> str:
        """The dataset's identity: the XXH3-64 of its manifest.json bytes,
        16 lower-case hex digits (as a lineage's previous_manifest_xxh3).
        Publishing other contents gives another one; Loader.state_dict()
        keeps it, so that a position is never restored on another dataset."""
        return f"{self._native.manifest_xxh3():016x}"

    @property
    def manifest(self) -> dict[str, Any]:
        """manifest.json as a dict (manifests/FORMAT.md describes every field)."""
        if self._manifest is None:
            self._manifest = json.loads(self._native.manifest_json())
        return self._manifest

    def key(self, i: Index) -> str:
        """The key of sample i (from its shard's footer: no record is read)."""
        return _key_str(self._native.key(self._index(i)))

    def key_bytes(self, i: Index) -> bytes:
        return self._native.key(self._index(i))

    def index_of(self, key: str | bytes) -> int:
        """The index of the sample whose key is `key` (str or bytes); KeyError
        when there is none.  A binary search of the dataset's key tables
        (index.keys: a few small reads, no key kept in memory), the sample's
        key then checked against its shard's footer; a dataset written before
        key tables is searched by reading its index."""
        return self._native.find(_key_bytes(key))

    def locate(self, i: Index) -> tuple[str, int]:
        """(shard file name, record number) of sample i."""
        return self._native.locate(self._index(i))

    def stored(self, i: Index) -> tuple[str, int, int, bytes]:
        """Sample i's payload as stored, not decoded: ``(codec, width,
        height, data)``, codec "jpeg", "png" or "raw" and data bytes (the
        JPEG or PNG file's bytes, or raw pixels of the record's form, row
        after row: manifests/FORMAT.md "Pixel forms").  To
        export records, or hand them to another reader."""
        return self._native.read_stored(self._index(i))

    @property
    def cache_warning(self) -> str:
        """The node-local cache's first warning (a shard it could not cache,
        e.g. on a full disk: that shard was read remotely), or ""."""
        return self._native.cache_warning()

    @property
    def options(self) -> ReadingOptions:
        """The remote-reading options given (connections, window,
        window_cache, retries, timeout, cache_dir, cache_limit), as a dict;
        those not given are not in it."""
        return self._options.copy()

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable (DataLoader workers): reopened by location and options
        return (_reopen, (self._location, self._options))

    def __repr__(self) -> str:
        # a URL's password is shown as *** (as in the library's messages)
        options = "".join(f", {k}={v!r}" for k, v in self._options.items())
        return f"Dataset({_native.redact_urls(self._location)!r}{options}, samples={len(self)})"


def _reopen(location: str | bytes, options: ReadingOptions) -> Dataset:
    return Dataset(location, **options)


def _older_name(old: str, old_value: _T | None, new: str, new_value: _T | None) -> _T | None:
    """A keyword's value given by its deprecated older name (with a
    DeprecationWarning naming the new one), else the new name's."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise TypeError(f"{old} is the deprecated older name of {new}: give {new} alone")
    warnings.warn(f"{old}= is deprecated: use {new}= (the older name goes in shardkit 0.4.0)",
                  DeprecationWarning, stacklevel=3)
    return old_value


def _reading_options(connections: object, window: object, window_cache: object,
                     retries: object, timeout: object, cache_dir: object = None,
                     cache_limit: object = None) -> ReadingOptions:
    """The remote-reading options given (not None), range-checked: a dict of
    the extension's keywords."""
    options: ReadingOptions = {}
    if connections is not None:
        options["connections"] = _check_int(connections, "connections",
                                            maximum=_native.DATASET_MAX_CONNECTIONS)
    if window is not None:
        options["window"] = _check_int(window, "window", minimum=_native.DATASET_MIN_WINDOW,
                                       maximum=_native.DATASET_MAX_WINDOW)
    if window_cache is not None:
        options["window_cache"] = _check_int(window_cache, "window_cache",
                                             minimum=_native.DATASET_MIN_WINDOW, maximum=U64_MAX)
    if retries is not None:
        options["retries"] = _check_int(retries, "retries", minimum=0,
                                        maximum=_native.DATASET_MAX_RETRIES)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (numbers.Real, np.number)):
            raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
        seconds = float(timeout)
        if not 0 < seconds <= _native.DATASET_MAX_TIMEOUT:
            raise ValueError(f"timeout must be more than 0 and at most "
                             f"{_native.DATASET_MAX_TIMEOUT} seconds, not {timeout!r}")
        options["timeout"] = seconds
    if cache_dir is not None:
        if not isinstance(cache_dir, (str, bytes, os.PathLike)):
            raise TypeError(f"cache_dir must be a str or path, not {type(cache_dir).__name__}")
        options["cache_dir"] = os.fspath(cache_dir)
    if cache_limit is not None:
        options["cache_limit"] = _check_int(cache_limit, "cache_limit", minimum=1,
                                            maximum=U64_MAX)
    return options
