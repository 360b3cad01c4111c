"""Dataset: an open shardkit dataset, samples by index or key."""
import json
import os

import numpy as np

from shardkit import _native


def _key_str(key_bytes):
    return key_bytes.decode("utf-8", "surrogateescape")


def _key_bytes(key, name="key"):
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    raise TypeError(f"{name} must be str or bytes, not {type(key).__name__}")


class Sample:
    """One sample: ``key`` (str; bytes that are not UTF-8 are kept as
    surrogate escapes, so ``key_bytes`` and ``key`` round-trip), ``key_bytes``,
    ``label`` (int index into ``Dataset.labels``, or None), ``index`` (its
    position in stored order) and ``image`` (numpy uint8, height x width x 3,
    RGB)."""

    __slots__ = ("index", "key_bytes", "label", "image")

    def __init__(self, index, key_bytes, label, image):
        self.index = index
        self.key_bytes = key_bytes
        self.label = label
        self.image = image

    @property
    def key(self):
        return _key_str(self.key_bytes)

    def __repr__(self):
        h, w, _ = self.image.shape
        return f"Sample(index={self.index}, key={self.key!r}, label={self.label}, image={w}x{h})"


class Dataset:
    """A shardkit dataset: ``Dataset(location)`` with a directory holding
    manifest.json and its shards, an ``http://`` / ``https://`` URL under
    which they are served, or an ``s3://bucket/prefix`` in an S3-compatible
    store (settings as the AWS CLI finds them: see the README).

    Only manifest.json is read when it opens; each shard's footer is read the
    first time one of its samples is.  ``len(ds)``, ``ds[i]`` (a Sample;
    negative indices count from the end), ``ds.labels`` (class names),
    ``ds.manifest`` (the manifest as a dict), ``ds.index_of(key)``,
    ``ds.stored(i)`` (the payload as stored, not decoded).
    Thread-safe: many threads may read one dataset at once (the GIL is
    released while a sample is read and decoded).

    ``location`` may be str, bytes or a path (a file name that is not
    UTF-8 may be given as bytes, or as the str os.fsdecode makes of them).

    Raises FileNotFoundError (shardkit.NotFoundError, with .errno and
    .filename) when there is no dataset at the location, CorruptDatasetError
    for a damaged manifest (see shardkit.errors for every class).
    """

    def __init__(self, location):
        if not isinstance(location, (str, bytes, os.PathLike)):
            raise TypeError(f"location must be a str or path, not {type(location).__name__}")
        self._location = os.fspath(location)
        self._native = _native.Dataset(self._location)
        self._manifest = None
        self._labels = None

    @property
    def location(self):
        return self._location

    def __len__(self):
        return len(self._native)

    def _index(self, i, name="index"):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(i).__name__}")
        i = int(i)
        n = len(self._native)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{name} {i} is out of range for a dataset of {n} samples")
        return i

    def __getitem__(self, i):
        i = self._index(i)
        key, label, pixels = self._native.read(i)
        return Sample(i, key, None if label < 0 else label, np.asarray(pixels))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def labels(self):
        """The class names, in label order (a label is an index into this list)."""
        if self._labels is None:
            self._labels = list(self._native.labels())
        return self._labels

    @property
    def manifest_xxh3(self):
        """The dataset's identity: the XXH3-64 of its manifest.json bytes,
        16 lower-case hex digits (as a lineage's previous_manifest_xxh3).
        Publishing other contents gives another one; Loader.state_dict()
        keeps it, so that a position is never restored on another dataset."""
        return f"{self._native.manifest_xxh3():016x}"

    @property
    def manifest(self):
        """manifest.json as a dict (manifests/FORMAT.md describes every field)."""
        if self._manifest is None:
            self._manifest = json.loads(self._native.manifest_json())
        return self._manifest

    def key(self, i):
        """The key of sample i (from its shard's footer: no record is read)."""
        return _key_str(self._native.key(self._index(i)))

    def key_bytes(self, i):
        return self._native.key(self._index(i))

    def index_of(self, key):
        """The index of the sample whose key is `key` (str or bytes); KeyError
        when there is none.  The first call reads every shard's footer and
        sorts the keys (8 bytes per sample); later calls are a binary search."""
        return self._native.find(_key_bytes(key))

    def locate(self, i):
        """(shard file name, record number) of sample i."""
        return self._native.locate(self._index(i))

    def stored(self, i):
        """Sample i's payload as stored, not decoded: ``(codec, width,
        height, data)``, codec "jpeg", "png" or "raw" and data bytes (the
        JPEG or PNG file's bytes, or raw RGB pixels, row after row).  To
        export records, or hand them to another reader."""
        return self._native.read_stored(self._index(i))

    def __reduce__(self):  # picklable (DataLoader workers): reopened by location
        return (Dataset, (self._location,))

    def __repr__(self):
        return f"Dataset({self._location!r}, samples={len(self)})"
