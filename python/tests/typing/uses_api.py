"""A typed program using shardkit's public API, as a user writes one:
test_types runs mypy --strict over it (it must pass) and runs it on a real
dataset (what the types say is what comes back)."""
import pickle
import sys

import numpy as np
import numpy.typing as npt

import shardkit
from shardkit.dataset import ReadingOptions
from shardkit.torch import ShardIterableDataset


def first_label(ds: shardkit.Dataset) -> int | None:
    sample: shardkit.Sample = ds[0]
    image: npt.NDArray[np.uint8] = sample.image
    assert image.ndim == 3 and image.shape[2] == 3
    key: str = sample.key
    assert ds.index_of(key) == sample.index == 0
    return sample.label


def describe(ds: shardkit.Dataset) -> list[str]:
    lines = [f"{len(ds)} samples, {len(ds.labels)} classes, identity {ds.manifest_xxh3}"]
    field: shardkit.Field
    for name, field in ds.fields.items():
        lines.append(f"{name}: {field.type} ({field.present} present)")
    shard, record = ds.locate(-1)
    codec, width, height, data = ds.stored(0)
    lines.append(f"last sample in {shard} record {record}; first stored as {codec} "
                 f"{width}x{height}, {len(data)} bytes")
    version: str = shardkit.__version__
    lines.append(version)
    return lines


def transforms() -> shardkit.Compose:
    steps: list[shardkit.transforms.Transform] = [
        shardkit.RandomResizedCrop(32, scale=(0.5, 1.0)), shardkit.RandomHorizontalFlip(p=0.5),
        shardkit.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    t = shardkit.Compose(steps)
    assert t.output_size() == (32, 32)
    preview = shardkit.Compose([shardkit.Resize(40), shardkit.CenterCrop((24, 32))])
    out = preview(np.zeros((50, 60, 3), dtype=np.uint8), seed=1, index=3)
    assert out.shape == (24, 32, 3)
    return t


def batches(ds: shardkit.Dataset) -> int:
    count = 0
    with shardkit.Loader(ds, 8, seed=7, transform=transforms(), layout="NCHW",
                         dtype="float32", on_error="skip") as loader:
        loader.set_epoch(1)
        batch: shardkit.Batch
        for batch in loader:
            images, labels = batch
            assert images.shape[1:] == (3, 32, 32) and len(labels) == len(batch)
            first: int = int(batch.indices[0])
            assert batch.keys[0] == ds.key(first)
            count += 1
        state = loader.state_dict()
        loader.load_state_dict(state)
        stats = loader.stats
        assert stats["batches"] == count
    return count


def missing(location: str) -> str:
    try:
        shardkit.Dataset(location)
    except shardkit.NotFoundError as e:
        code: int | None = e.code
        return f"{e.filename}: {code}"
    except shardkit.ShardkitError as e:
        return str(e)
    return "found"


def tuned(location: str) -> str:
    # how a remote dataset is read; a local one takes the options and ignores them
    ds = shardkit.Dataset(location, connections=4, window=1 << 20, window_cache=64 << 20,
                          retries=2, timeout=2.5)
    options: ReadingOptions = ds.options
    reopened: shardkit.Dataset = pickle.loads(pickle.dumps(ds))
    assert reopened.options == options
    timeout: float = options["timeout"]
    assert ds.cache_warning == ""  # no node-local cache: nothing to warn of
    return f"{len(ds)} samples, {options['connections']} connections, timeout {timeout}"


def torch_batches(ds: shardkit.Dataset) -> int:
    data = ShardIterableDataset(ds, 16, shuffle=False, remainder="pad", shuffle_buffer=64,
                                transform=[shardkit.CenterCrop(8)], layout="NCHW",
                                dtype="float32")
    data.set_epoch(0)
    count = 0
    batch: shardkit.Batch
    for batch in data:
        images, labels = batch
        assert images.shape[1:] == (3, 8, 8) and len(labels) == len(batch.indices)
        count += 1
    state = data.state_dict(batch)
    data.load_state_dict(state)
    return count


def mixed(ds: shardkit.Dataset) -> str:
    mixture = shardkit.Mixture([ds, ds], weights=[0.7, 0.3], epoch_size=40,
                               rule="stop_on_longest", labels="merged")
    quotas: list[int] = mixture.quotas
    names: list[str] | None = mixture.labels
    with shardkit.Loader(mixture, 8, seed=1) as loader:
        sources = [int(s) for batch in loader for s in batch.sources]
    return f"{len(mixture)} entries, quotas {quotas}, {len(names or [])} classes, " \
           f"{sources.count(0)} from source 0"


def main(location: str, with_torch: bool) -> None:
    ds = shardkit.Dataset(location)
    print(first_label(ds))
    print("\n".join(describe(ds)))
    print(batches(ds), "batches")
    print(missing(location + "-not-there"))
    print(tuned(location))
    print(mixed(ds))
    if with_torch:
        print(torch_batches(ds), "torch batches")


if __name__ == "__main__":
    main(sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "torch")
