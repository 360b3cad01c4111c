"""shardkit: read shardkit datasets from Python, and feed training loops
training-ready batches made in C.

    import shardkit
    ds = shardkit.Dataset("/data/shards")            # a directory, http(s) URL or s3:// prefix
    loader = shardkit.Loader(ds, 256, transform=[
        shardkit.RandomResizedCrop(224), shardkit.RandomHorizontalFlip(),
        shardkit.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])],
        layout="NCHW", dtype="float32", output="torch")
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:
            ...

Several datasets read as one, each sample drawn from a source by weight:
``shardkit.Loader(shardkit.Mixture([a, b], weights=[0.7, 0.3]), 256)``.

A dataset with fields (captions, JSON metadata, numbers, vectors, label
lists) gives them back: ``ds.fields`` (the declarations), ``ds[i].fields``
and ``Loader(ds, 256, fields=["caption", "meta"])``, whose batches carry
``batch.fields`` and ``batch.present``.

numpy is required; torch is optional (``output="torch"`` and
``shardkit.torch`` need it).  See docs/guide/pytorch.md.
"""
from shardkit.errors import (CorruptDatasetError, CorruptRecordError, ExistsError,
                             InvalidArgumentError, LimitError, LockedError, MismatchError,
                             NetworkError, NotFoundError, OutOfMemoryError, RejectedInputError,
                             RunInterruptedError, ShardkitError, StorageError, UnsupportedError)
from shardkit import _native
from shardkit.dataset import Dataset, Field, Sample
from shardkit.mixture import Mixture
from shardkit.transforms import (CenterCrop, Compose, Normalize, RandomHorizontalFlip,
                                 RandomResizedCrop, Resize)
from shardkit.loader import Batch, Loader

__version__ = _native.version()

__all__ = [
    "Batch", "CenterCrop", "Compose", "CorruptDatasetError", "CorruptRecordError", "Dataset",
    "ExistsError", "Field", "InvalidArgumentError", "LimitError", "Loader", "LockedError",
    "MismatchError", "Mixture", "NetworkError", "Normalize", "NotFoundError", "OutOfMemoryError",
    "RandomHorizontalFlip", "RandomResizedCrop", "RejectedInputError", "Resize",
    "RunInterruptedError", "Sample", "ShardkitError", "StorageError", "UnsupportedError",
]
