"""shardkit.Mixture: weighted mixtures of datasets where a Dataset goes (the
Loader, the torch adapter).  Over many seeds: each epoch has each source's
quota, a rank's half within binomial bounds of the weights, each source's
pass without repeats; a 3-source mixture restarts byte for byte, and one
stopped at 2 ranks resumes at 3 with every remaining entry read once;
ranks and DataLoader workers split an epoch without overlap; class spaces
kept per source or merged by name, the mapping recorded in the manifest."""
import json
import math
import os
import shutil
from collections import Counter

import numpy as np
import pytest

import shardkit
from conftest import SAMPLE, _made, sample_images


def _labelled(workdir, name, first, count, classes):
    """A dataset of `count` sample images from `first` on, in class folders."""
    src = os.path.join(workdir, f"{name}-src")
    if not os.path.isdir(src):
        for k, image in enumerate(sample_images()[first:first + count]):
            folder = classes[k % len(classes)]
            os.makedirs(os.path.join(src, folder), exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, image), os.path.join(src, folder, image))
    return _made(workdir, name, "--size", "32", "--shard-size", "20K", src=src)


@pytest.fixture(scope="module")
def sources(workdir, photos, labelled):
    """Three datasets: the labelled one (62, ant bee cat), 40 in bee and dog,
    25 in cat and eel."""
    return [labelled, _labelled(workdir, "bee-dog", 62, 40, ("bee", "dog")),
            _labelled(workdir, "cat-eel", 102, 25, ("cat", "eel"))]


def entries(loader, epoch=None):
    """(source, index) of every entry of the loader's epoch, in order."""
    if epoch is not None:
        loader.set_epoch(epoch)
    return [(int(s), int(i)) for b in loader for s, i in zip(b.sources, b.indices)]


def test_a_mixture_s_batches_are_its_sources_samples_and_labels(sources):
    ds = [shardkit.Dataset(s) for s in sources]
    own = shardkit.Mixture(ds, [0.5, 0.3, 0.2], epoch_size=60)
    merged = shardkit.Mixture(ds, [0.5, 0.3, 0.2], epoch_size=60, labels="merged")
    assert len(own) == 60 and own.quotas == [30, 18, 12] and own.labels is None
    assert merged.labels == ["ant", "bee", "cat", "dog", "eel"]
    assert merged.label_map == [[0, 1, 2], [1, 3], [2, 4]]
    manifest = json.loads(json.dumps(merged.manifest))  # plain values
    assert manifest["label_names"] == merged.labels and manifest["label_map"] == merged.label_map
    assert [s["quota"] for s in manifest["sources"]] == [30, 18, 12]
    assert [s["manifest_xxh3"] for s in manifest["sources"]] == [d.manifest_xxh3 for d in ds]
    for mixture in (own, merged):
        seen = 0
        for batch in shardkit.Loader(mixture, 7, seed=4, threads=2):
            images, labels = batch
            for j, (s, i) in enumerate(zip(batch.sources, batch.indices)):
                sample = ds[s][int(i)]
                assert np.array_equal(images[j], sample.image)
                want = -1 if sample.label is None else sample.label
                if mixture is merged and want >= 0:
                    want = merged.labels.index(ds[s].labels[sample.label])
                assert labels[j] == want
                assert batch.keys[j] == sample.key
                seen += 1
        assert seen == 60


def test_draws_follow_the_weights_and_no_source_repeats_within_its_pass(sources):
    ds = [shardkit.Dataset(s) for s in sources]
    sizes = [len(d) for d in ds]  # 62, 40, 25
    for rule, size in (("replace", 200), ("stop_on_shortest", None), ("stop_on_longest", None)):
        mixture = shardkit.Mixture(ds, [0.6, 0.25, 0.15], epoch_size=size, rule=rule)
        quotas, n = mixture.quotas, len(mixture)
        if rule == "stop_on_shortest":
            assert all(q <= s for q, s in zip(quotas, sizes))
        if rule == "stop_on_longest":
            assert all(q >= s for q, s in zip(quotas, sizes))
        worst = 0.0
        for seed in range(40):
            epoch = entries(shardkit.Loader(mixture, 10, seed=seed, threads=0,
                                            transform=[shardkit.CenterCrop(4)]), seed % 3)
            counts = Counter(x for x, _ in epoch)
            assert [counts[x] for x in range(3)] == quotas and len(epoch) == n
            half = epoch[:n // 2]  # what rank 0 of 2 reads
            for x in range(3):
                w, k = mixture.weights[x], len(half)
                got = sum(1 for y, _ in half if y == x)
                worst = max(worst, abs(got - w * k) / math.sqrt(k * w * (1 - w)))
                drawn = [i for y, i in epoch if y == x]
                for p in range(0, len(drawn), sizes[x]):  # a pass: no repeats
                    one = drawn[p:p + sizes[x]]
                    assert len(set(one)) == len(one), (rule, seed, x, p)
        assert worst < 4.5, (rule, worst)  # 7e-6 a check


def test_a_three_source_mixture_restarts_byte_for_byte(sources):
    mixture = shardkit.Mixture(sources, [0.5, 0.3, 0.2], epoch_size=90)
    options = dict(seed=11, transform=[shardkit.RandomResizedCrop(16),
                                       shardkit.RandomHorizontalFlip()])
    whole = shardkit.Loader(mixture, 8, threads=2, **options)
    whole.set_epoch(2)
    batches = [(b.sources.tolist(), b.indices.tolist(), b.images.tobytes()) for b in whole]
    first = shardkit.Loader(mixture, 8, threads=1, **options)
    first.set_epoch(2)
    it = iter(first)
    for _ in range(5):
        next(it)
    state = json.loads(json.dumps(first.state_dict()))
    again = shardkit.Loader(shardkit.Mixture(sources, [0.5, 0.3, 0.2], epoch_size=90), 8,
                            threads=0, **options)
    again.load_state_dict(state)
    assert [(b.sources.tolist(), b.indices.tolist(), b.images.tobytes())
            for b in again] == batches[5:]
    other = shardkit.Loader(shardkit.Mixture(sources, [0.5, 0.2, 0.3], epoch_size=90), 8,
                            **options)
    with pytest.raises(ValueError, match="another mixture"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="state\\['manifest_xxh3'\\]"):
        shardkit.Loader(sources[0], 8, **options).load_state_dict(state)


def test_a_mixture_stopped_at_two_ranks_resumes_at_three_reading_the_rest_once(sources):
    mixture = shardkit.Mixture(sources, [0.5, 0.3, 0.2], epoch_size=100)
    whole = Counter(entries(shardkit.Loader(mixture, 5, seed=3, threads=0)))
    taken, states = Counter(), []
    for rank in range(2):  # 50 entries each, 10 batches of 5; stopped after 3
        loader = shardkit.Loader(mixture, 5, seed=3, rank=rank, world_size=2, threads=0,
                                 remainder="keep")
        it = iter(loader)
        for _ in range(3):
            b = next(it)
            taken.update(zip(b.sources.tolist(), b.indices.tolist()))
        states.append(loader.state_dict())
    rest, lengths = Counter(), set()
    for rank in range(3):  # 70 left: 23, 23, 24 entries, 5 batches each
        loader = shardkit.Loader(mixture, 5, seed=3, rank=rank, world_size=3, threads=0,
                                 remainder="keep")
        loader.load_state_dict(states[rank % 2])
        lengths.add(len(loader))
        got = entries(loader)
        rest.update(got)
        assert loader.epoch == 1 and loader.state_dict()["done"] == []
    assert lengths == {5}
    assert taken + rest == whole  # every remaining entry once, nothing else


def test_ranks_and_dataloader_workers_split_a_mixture_s_epoch_without_overlap(sources):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    mixture = shardkit.Mixture(sources, [0.2, 0.3, 0.5], epoch_size=120, rule="replace")
    one = entries(shardkit.Loader(mixture, 4, seed=6, threads=0), 1)
    for world in (2, 3):
        union = []
        for rank in range(world):
            data = ShardIterableDataset(mixture, 4, seed=6, rank=rank, world_size=world,
                                        threads=1, transform=[shardkit.CenterCrop(8)])
            data.set_epoch(1)
            got = list(DataLoader(data, batch_size=None, num_workers=2))
            assert all(isinstance(b.sources, torch.Tensor) for b in got)
            union += [(int(s), int(i)) for b in got for s, i in zip(b.sources, b.indices)]
        assert union == one  # the ranks' slices, in order: the epoch


def test_bad_mixtures_are_refused_by_name(sources):
    with pytest.raises(ValueError, match="the weight of source 1 is 0.0"):
        shardkit.Mixture(sources, [1, 0, 1])
    with pytest.raises(ValueError, match="2 weights for 3 sources"):
        shardkit.Mixture(sources, [1, 1])
    with pytest.raises(ValueError, match="rule must be"):
        shardkit.Mixture(sources, rule="first_exhausted")
    with pytest.raises(TypeError, match="sources must be a list"):
        shardkit.Mixture(sources[0])
    mixture = shardkit.Mixture(sources)
    assert mixture.weights == pytest.approx([62 / 127, 40 / 127, 25 / 127])
    assert len(mixture) == 127
    with pytest.raises(ValueError, match="a Mixture's loader carries no fields"):
        shardkit.Loader(mixture, 4, fields=["caption"])
