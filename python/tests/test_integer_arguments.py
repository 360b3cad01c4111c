"""Every integer argument of every entry point, public and _native, is
range-checked: a value its C type cannot hold (2**32 + k for a 32-bit one,
2**64 for a 64-bit one, negatives) is refused with an error naming the
argument, never truncated modulo 2**32 (Loader(ds, 2**32 + 8) once made
batches of 8)."""
import random
import re

import numpy as np
import pytest

import shardkit
from shardkit import _native

U32, U64 = 2**32 - 1, 2**64 - 1
RANGE = (ValueError, OverflowError)


def loader_args(**change):
    """_native.Loader's arguments with `change` applied."""
    args = dict(batch_size=4, shuffle=True, seed=0, rank=0, world_size=1, threads=0,
                drop_last=False, remainder="keep", shuffle_buffer=16, prefetch=1,
                skip_errors=False, worker=0, workers=1)
    args.update(change)
    return args


def native_loader(ds, **change):
    return _native.Loader(ds._native, None, loader_args(**change))


IMAGE = np.zeros((8, 8, 3), np.uint8)
ONE = shardkit.Compose([shardkit.CenterCrop(4)])

# (the argument's name in the message (a regular expression), smallest valid
# value, largest valid value, call(ds, v)):
# every integer argument of the package's entry points
ENTRY_POINTS = {
    "Loader.batch_size": ("batch_size", 1, U32, lambda ds, v: shardkit.Loader(ds, v)),
    "Loader.seed": ("seed", 0, U64, lambda ds, v: shardkit.Loader(ds, 4, seed=v)),
    "Loader.world_size": ("world_size", 1, U32,
                          lambda ds, v: shardkit.Loader(ds, 4, rank=0, world_size=v)),
    "Loader.rank": ("rank", 0, 1, lambda ds, v: shardkit.Loader(ds, 4, rank=v, world_size=2)),
    "Loader.threads": ("threads", 0, 1024, lambda ds, v: shardkit.Loader(ds, 4, threads=v)),
    "Loader.shuffle_buffer": ("shuffle_buffer", 0, U64,
                              lambda ds, v: shardkit.Loader(ds, 4, shuffle_buffer=v)),
    "Loader.prefetch": ("prefetch", 1, U32, lambda ds, v: shardkit.Loader(ds, 4, prefetch=v)),
    "Loader.set_epoch": ("epoch", 0, U64, lambda ds, v: shardkit.Loader(ds, 4).set_epoch(v)),
    "Loader.load_state_dict.epoch": (
        "epoch", 0, U64, lambda ds, v: shardkit.Loader(ds, 4).load_state_dict(
            dict(shardkit.Loader(ds, 4).state_dict(), epoch=v))),
    "Loader.load_state_dict.batch": (
        "batch", 0, 16, lambda ds, v: shardkit.Loader(ds, 4).load_state_dict(
            dict(shardkit.Loader(ds, 4).state_dict(), batch=v))),
    "RandomResizedCrop.size": ("size", 1, _native.MAX_SIDE,
                               lambda ds, v: shardkit.RandomResizedCrop(v)),
    "CenterCrop.size": ("size", 1, _native.MAX_SIDE, lambda ds, v: shardkit.CenterCrop(v)),
    "Resize.size": ("size", 1, _native.MAX_SIDE, lambda ds, v: shardkit.Resize(v)),
    "Resize.height": (r"size\[0\]", 1, _native.MAX_SIDE, lambda ds, v: shardkit.Resize((v, 16))),
    "Resize.width": (r"size\[1\]", 1, _native.MAX_SIDE, lambda ds, v: shardkit.Resize((16, v))),
    "Compose.draw.width": ("width", 1, U32, lambda ds, v: ONE.draw(v, 16)),
    "Compose.draw.height": ("height", 1, U32, lambda ds, v: ONE.draw(16, v)),
    "Compose.draw.seed": ("seed", 0, U64, lambda ds, v: ONE.draw(16, 16, seed=v)),
    "Compose.draw.epoch": ("epoch", 0, U64, lambda ds, v: ONE.draw(16, 16, epoch=v)),
    "Compose.draw.index": ("index", 0, U64, lambda ds, v: ONE.draw(16, 16, index=v)),
    "Compose.call.seed": ("seed", 0, U64, lambda ds, v: ONE(IMAGE, seed=v)),
    "Compose.call.epoch": ("epoch", 0, U64, lambda ds, v: ONE(IMAGE, epoch=v)),
    "Compose.call.index": ("index", 0, U64, lambda ds, v: ONE(IMAGE, index=v)),
    # the extension itself, as a binding of its own would call it
    "_native.Loader.batch_size": ("batch_size", 1, U32,
                                  lambda ds, v: native_loader(ds, batch_size=v)),
    "_native.Loader.seed": ("seed", 0, U64, lambda ds, v: native_loader(ds, seed=v)),
    "_native.Loader.rank": ("rank", 0, 0, lambda ds, v: native_loader(ds, rank=v)),
    "_native.Loader.world_size": ("world_size", 1, U32,
                                  lambda ds, v: native_loader(ds, world_size=v)),
    "_native.Loader.threads": ("threads", 0, 1024, lambda ds, v: native_loader(ds, threads=v)),
    "_native.Loader.shuffle_buffer": ("shuffle_buffer", 0, U64,
                                      lambda ds, v: native_loader(ds, shuffle_buffer=v)),
    "_native.Loader.prefetch": ("prefetch", 1, U32, lambda ds, v: native_loader(ds, prefetch=v)),
    "_native.Loader.worker": ("worker", 0, 1, lambda ds, v: native_loader(ds, worker=v, workers=2)),
    "_native.Loader.workers": ("workers", 1, U32, lambda ds, v: native_loader(ds, workers=v)),
    "_native.Loader.start.epoch": ("epoch", 0, U64, lambda ds, v: native_loader(ds).start(v, 0)),
    "_native.Loader.start.batch": ("batch", 0, 16, lambda ds, v: native_loader(ds).start(0, v)),
    # the library's own check of a side calls the height "size"
    "_native.Transforms.height": ("height|size", 1, _native.MAX_SIDE,
                               lambda ds, v: _native.Transforms([("center_crop", v, 16)])),
    "_native.Transforms.width": ("width", 1, _native.MAX_SIDE,
                              lambda ds, v: _native.Transforms([("center_crop", 16, v)])),
    "_native.Transforms.resize_width": ("width", 0, _native.MAX_SIDE,
                                     lambda ds, v: _native.Transforms([("resize", 16, v)])),
    "_native.Transforms.crop_height": (
        "height|size", 1, _native.MAX_SIDE,
        lambda ds, v: _native.Transforms([("random_resized_crop", v, 16, (0.5, 1), (1, 1))])),
    "_native.Transforms.draw.width": ("width", 1, U32,
                                   lambda ds, v: ONE._compiled().draw(v, 16, 0, 0, 0)),
    "_native.Transforms.draw.height": ("height", 1, U32,
                                    lambda ds, v: ONE._compiled().draw(16, v, 0, 0, 0)),
    "_native.Transforms.apply.seed": ("seed", 0, U64,
                                   lambda ds, v: ONE._compiled().apply(IMAGE, v, 0, 0)),
}

# the remote-reading options of Dataset, in the package and in the extension
for _prefix, _open in (("Dataset", shardkit.Dataset), ("_native.Dataset", _native.Dataset)):
    ENTRY_POINTS.update({
        f"{_prefix}.connections": ("connections", 1, _native.DATASET_MAX_CONNECTIONS,
                                   lambda ds, v, o=_open: o(ds.location, connections=v)),
        f"{_prefix}.window": ("window", _native.DATASET_MIN_WINDOW, _native.DATASET_MAX_WINDOW,
                              lambda ds, v, o=_open: o(ds.location, window=v, window_cache=U64)),
        f"{_prefix}.window_cache": ("window_cache", _native.DATASET_MIN_WINDOW, U64,
                                    lambda ds, v, o=_open: o(ds.location, window=4096,
                                                             window_cache=v)),
        f"{_prefix}.retries": ("retries", 0, _native.DATASET_MAX_RETRIES,
                               lambda ds, v, o=_open: o(ds.location, retries=v)),
    })

# Sample indices are a sequence's: out of range is an IndexError (negative
# ones count from the end in the public API)
INDEXED = {
    "Dataset.getitem": lambda ds, v: ds[v],
    "Dataset.key": lambda ds, v: ds.key(v),
    "Dataset.locate": lambda ds, v: ds.locate(v),
    "Dataset.stored": lambda ds, v: ds.stored(v),
    "_native.Dataset.read": lambda ds, v: ds._native.read(v),
    "_native.Dataset.read_stored": lambda ds, v: ds._native.read_stored(v),
    "_native.Dataset.key": lambda ds, v: ds._native.key(v),
    "_native.Dataset.locate": lambda ds, v: ds._native.locate(v),
}


# The values next to the C types' edges, always tried.
EDGES = [2**32 + k for k in (0, 1, 2, 8, 16)] + [2**31, 2**63, 2**64, 2**64 + 1, 2**65,
                                                  -1, -2, -2**31, -2**32, -2**63, -2**64]


def outside(lo, hi, count=40, seed=0):
    """The edges outside lo..hi, then `count` integers drawn outside it (a
    fixed seed: the same values every run), of every magnitude up to 2**80:
    just below lo, just above hi, far from both."""
    rng = random.Random(f"{seed}:{lo}:{hi}")
    values = [v for v in EDGES if not lo <= v <= hi] + [lo - 1, hi + 1]
    while len(values) < len(EDGES) + count:
        distance = rng.randrange(1, 2 ** rng.randrange(1, 81))
        values.append(lo - distance if rng.random() < 0.5 else hi + distance)
    return values


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_an_integer_outside_its_range_is_refused_naming_the_argument(labelled, entry):
    name, lo, hi, call = ENTRY_POINTS[entry]
    ds = shardkit.Dataset(labelled)
    for v in outside(lo, hi):
        with pytest.raises(RANGE) as e:
            call(ds, v)
        assert re.search(name, str(e.value)), (v, str(e.value))


@pytest.mark.parametrize("entry", sorted(INDEXED))
def test_a_sample_index_outside_the_dataset_is_an_index_error_never_wrapped(labelled, entry):
    ds = shardkit.Dataset(labelled)
    call = INDEXED[entry]
    n = len(ds)
    assert n == 62
    for v in outside(-n, n - 1) + [2**32 + 3, 2**64 + 3]:
        with pytest.raises((IndexError,) + RANGE) as e:
            call(ds, v)
        assert "index" in str(e.value), (v, str(e.value))


def test_the_largest_values_are_accepted(labelled):
    ds = shardkit.Dataset(labelled)
    loader = shardkit.Loader(ds, 100, seed=U64, shuffle_buffer=U64, threads=0)
    assert len(loader) == 1 and len(next(iter(loader))) == 62
    loader.set_epoch(U64)
    assert shardkit.Resize(_native.MAX_SIDE).size == _native.MAX_SIDE
    assert ONE.draw(U32, U32, seed=U64, epoch=U64, index=U64)[0]["out_width"] == 4


def test_numpy_integers_are_ints_and_bools_are_not(labelled):
    loader = shardkit.Loader(labelled, np.uint32(8), seed=np.uint64(U64), threads=0)
    assert loader.batch_size == 8 and loader.seed == U64
    with pytest.raises(TypeError, match="batch_size"):
        shardkit.Loader(labelled, True)
    with pytest.raises(TypeError, match="height"):
        _native.Transforms([("center_crop", True, 16)])
    with pytest.raises(TypeError, match="seed"):
        ONE(IMAGE, seed=1.0)
