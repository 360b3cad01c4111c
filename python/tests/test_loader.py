"""shardkit.Loader: exactly once per epoch across ranks, the remainder and
drop_last rules, identical batches whatever the thread count, restart from a
state_dict in a new process, errors, Ctrl-C and dropping a loader."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import xxhash

import shardkit
from conftest import PYTHON, shardify, subprocess_env

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def epoch_indices(loader):
    out = []
    for batch in loader:
        out.extend(int(i) for i in batch.indices)
    return out


def batch_digest(batch):
    h = xxhash.xxh3_64()
    h.update(np.ascontiguousarray(batch.indices).tobytes())
    images = batch.images if isinstance(batch.images, list) else [batch.images]
    for image in images:
        h.update(np.ascontiguousarray(image).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_every_epoch_visits_each_sample_exactly_once_across_ranks(labelled, world_size):
    # remainder keep: 62 samples in batches of 7 are the same batch count on
    # ranks of 31, or of 20 and 21
    ds = shardkit.Dataset(labelled)
    loaders = [shardkit.Loader(ds, 7, seed=7, rank=r, world_size=world_size, threads=2,
                               shuffle_buffer=16, remainder="keep") for r in range(world_size)]
    orders = []
    for epoch in range(2):
        seen = []
        for loader in loaders:
            loader.set_epoch(epoch)
            got = epoch_indices(loader)
            assert len(loader) == -(-len(got) // 7)
            seen.extend(got)
        assert sorted(seen) == list(range(len(ds))), f"epoch {epoch}"
        orders.append(seen)
    assert orders[0] != orders[1]  # each epoch its own order


def test_remainder_drop_and_pad_give_every_rank_the_same_count(labelled):
    ds = shardkit.Dataset(labelled)  # 62 samples over 3 ranks
    drop = [epoch_indices(shardkit.Loader(ds, 4, rank=r, world_size=3, remainder="drop",
                                          threads=1)) for r in range(3)]
    assert [len(d) for d in drop] == [20, 20, 20]
    flat = sum(drop, [])
    assert len(set(flat)) == 60  # two samples of this epoch are not visited
    pad = [epoch_indices(shardkit.Loader(ds, 4, rank=r, world_size=3, remainder="pad",
                                         threads=1)) for r in range(3)]
    assert [len(p) for p in pad] == [21, 21, 21]
    flat = sum(pad, [])
    assert set(flat) == set(range(62)) and len(flat) == 63  # one sample twice


def test_several_ranks_make_the_same_batch_count_by_default_and_keep_says_when_not(labelled):
    ds = shardkit.Dataset(labelled)  # 62 samples: 20, 21, 21 over 3 ranks with keep
    default = [shardkit.Loader(ds, 4, rank=r, world_size=3, threads=0) for r in range(3)]
    assert [loader.remainder for loader in default] == ["pad"] * 3
    assert [len(epoch_indices(loader)) for loader in default] == [21] * 3
    assert [len(loader) for loader in default] == [6] * 3
    with pytest.raises(ValueError, match="remainder keep gives the 3 ranks unequal batch counts: "
                       "62 samples in batches of 4 are 6 batches on the ranks with 21 samples and "
                       "5 on those with 20"):
        shardkit.Loader(ds, 4, rank=0, world_size=3, remainder="keep")
    # keep where the counts agree: every sample once
    kept = [epoch_indices(shardkit.Loader(ds, 7, rank=r, world_size=3, remainder="keep",
                                          threads=0)) for r in range(3)]
    assert sorted(sum(kept, [])) == list(range(62))
    # one rank: keep, as before (the same plan, the same state)
    assert shardkit.Loader(ds, 4).remainder == "keep"
    assert shardkit.Loader(ds, 4).state_dict()["remainder"] == "keep"


@pytest.mark.parametrize("before", [1, 2, 3, 8])
@pytest.mark.parametrize("after", [1, 2, 3, 8])
def test_a_state_restores_on_another_number_of_ranks(labelled, before, after):
    # ranks in lockstep stopped after k batches of 3 (pad, the default with
    # several ranks); any rank's state restores on `after` ranks
    ds = shardkit.Dataset(labelled)
    for k in (0, 1, 3):
        seen, state = [], None
        for r in range(before):
            loader = shardkit.Loader(ds, 3, seed=9, rank=r, world_size=before, threads=0,
                                     transform=[shardkit.CenterCrop(4)])
            it = iter(loader)
            for _ in range(k):
                seen += next(it).indices.tolist()
            state = loader.state_dict()
        rest = []
        for r in range(after):
            loader = shardkit.Loader(ds, 3, seed=9, rank=r, world_size=after, threads=0,
                                     transform=[shardkit.CenterCrop(4)])
            loader.load_state_dict(state)
            n = len(loader) - loader.state_dict()["batch"]  # the batches left
            got = epoch_indices(loader)
            assert len(got) <= 3 * n and (n == 0 or len(got) > 3 * (n - 1))
            rest.append(got)
            # the next epoch is the new ranks' own plan
            assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["done"] == []
            fresh = shardkit.Loader(ds, 3, seed=9, rank=r, world_size=after, threads=0,
                                    transform=[shardkit.CenterCrop(4)])
            fresh.set_epoch(1)
            assert epoch_indices(loader) == epoch_indices(fresh)
        unseen = set(range(62)) - set(seen)
        flat = sum(rest, [])
        if before == after:  # the same plan: each rank's own rest, as uninterrupted
            whole = [epoch_indices(shardkit.Loader(ds, 3, seed=9, rank=r, world_size=after,
                                                   threads=0)) for r in range(after)]
            assert rest == [w[3 * k:] for w in whole]
            continue
        if not seen:  # nothing read yet: pad repeats the epoch's start, as an epoch's does
            assert set(flat) == unseen and len(flat) - len(unseen) < after
            continue
        assert sorted(i for i in flat if i in unseen) == sorted(unseen), (k, before, after)
        assert all(i in seen for i in flat if i not in unseen)  # pad's fillers
        if after > 1:
            assert len({len(r) for r in rest}) == 1  # ranks in step


def test_drop_last_leaves_out_the_partial_batch(labelled):
    ds = shardkit.Dataset(labelled)
    keep = shardkit.Loader(ds, 8, threads=1)
    sizes = [len(b) for b in keep]
    assert len(keep) == 8 and sizes == [8] * 7 + [6]
    drop = shardkit.Loader(ds, 8, threads=1, drop_last=True)
    sizes = [len(b) for b in drop]
    assert len(drop) == 7 and sizes == [8] * 7


def test_batches_carry_labels_keys_and_indices(labelled):
    ds = shardkit.Dataset(labelled)
    loader = shardkit.Loader(ds, 10, threads=2, transform=[shardkit.CenterCrop(32)])
    for batch in loader:
        images, labels = batch
        assert images.shape == (len(batch), 32, 32, 3) and images.dtype == np.uint8
        assert labels.dtype == np.int64
        for i, label, key in zip(batch.indices, labels, batch.keys):
            s = ds[int(i)]
            assert s.key == key and (s.label if s.label is not None else -1) == label
            assert np.array_equal(images[list(batch.indices).index(i)],
                                  shardkit.CenterCrop(32)(s.image))


TRAIN = [shardkit.RandomResizedCrop(96), shardkit.RandomHorizontalFlip(),
         shardkit.Normalize(MEAN, STD)]


def run_digests(jpeg256, threads, epoch=1, limit=12):
    loader = shardkit.Loader(jpeg256, 16, seed=5, threads=threads, transform=TRAIN,
                             layout="NCHW", dtype="float32")
    loader.set_epoch(epoch)
    out = []
    for batch in loader:
        out.append(batch_digest(batch))
        if len(out) == limit:
            break
    return out


def test_batches_are_identical_across_thread_counts_and_processes(jpeg256):
    expected = run_digests(jpeg256, threads=0)
    for threads in (1, 2, 5):
        assert run_digests(jpeg256, threads) == expected, threads
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_loader import run_digests
        print(json.dumps(run_digests({jpeg256!r}, threads=2)))
    """)
    out = subprocess.run([PYTHON, "-c", code], env=subprocess_env(), check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == expected


RESTART = """
import json, pickle, sys
sys.path.insert(0, {tests!r})
import shardkit
from test_loader import TRAIN, batch_digest
loader = shardkit.Loader({dst!r}, 24, seed=11, threads={threads}, transform=TRAIN,
                         layout="NCHW", dtype="float16", shuffle_buffer=100)
mode, path = sys.argv[1], sys.argv[2]
if mode == "save":
    loader.set_epoch(2)
    for n, batch in enumerate(loader):
        if n + 1 == int(sys.argv[3]):
            break
    with open(path, "wb") as f:
        pickle.dump(loader.state_dict(), f)
    print(json.dumps([int(i) for i in batch.indices]))
else:
    if mode == "load":
        with open(path, "rb") as f:
            loader.load_state_dict(pickle.load(f))
        loader.set_epoch(2)  # a training loop's usual call: keeps the restored position
    else:
        loader.set_epoch(2)
    out = [(batch_digest(b), [int(i) for i in b.indices]) for b in loader]
    print(json.dumps(out))
"""


def test_a_restarted_process_finishes_the_epoch_with_byte_identical_batches(jpeg256, tmp_path):
    def child(threads, *args):
        code = RESTART.format(tests=os.path.dirname(__file__), dst=jpeg256, threads=threads)
        return json.loads(subprocess.run([PYTHON, "-c", code, *args], env=subprocess_env(),
                                         check=True, capture_output=True, text=True).stdout)

    whole = child(2, "whole", "")
    state = str(tmp_path / "state.pickle")
    k = 7
    child(1, "save", state, str(k))
    rest = child(3, "load", state)
    assert rest == whole[k:]  # same samples, same crops and flips, same bytes
    first = [i for _, idx in whole[:k] for i in idx]
    later = [i for _, idx in rest for i in idx]
    assert sorted(first + later) == list(range(1000))


def test_position_moves_through_epochs_and_state_is_checked(labelled):
    ds = shardkit.Dataset(labelled)
    loader = shardkit.Loader(ds, 10, threads=1)
    assert loader.state_dict()["epoch"] == 0
    for n, _ in enumerate(loader):
        if n == 2:
            break
    assert (loader.state_dict()["epoch"], loader.state_dict()["batch"]) == (0, 3)
    assert len(epoch_indices(loader)) == 62 - 30  # the rest of epoch 0
    assert (loader.state_dict()["epoch"], loader.state_dict()["batch"]) == (1, 0)
    loader.set_epoch(0)
    assert len(epoch_indices(loader)) == 62
    other = shardkit.Loader(ds, 10, threads=1, seed=1)
    with pytest.raises(ValueError, match="seed"):
        other.load_state_dict(loader.state_dict())
    with pytest.raises(ValueError, match="batch"):
        loader.load_state_dict(dict(loader.state_dict(), batch=99))


@pytest.fixture(scope="module")
def republished(labelled, workdir, tmp_path_factory):
    """The labelled dataset published again the next night: the same 62
    samples' keys and count, one image's bytes changed."""
    src = tmp_path_factory.mktemp("republish") / "src"
    shutil.copytree(os.path.join(workdir, "labelled-src"), src)
    first = sorted(p for p in src.rglob("*.JPEG"))[0]
    other = sorted(p for p in src.rglob("*.JPEG"))[1]
    shutil.copy(other, first)
    return shardify(str(src), str(src.parent / "dst"), "--size", "64", "--shard-size", "40K")


def test_a_state_is_refused_on_another_dataset_with_the_same_sample_count(labelled,
                                                                          republished):
    ds, again = shardkit.Dataset(labelled), shardkit.Dataset(republished)
    assert len(ds) == len(again) and ds.manifest_xxh3 != again.manifest_xxh3
    loader = shardkit.Loader(ds, 10, threads=1)
    next(iter(loader))
    state = loader.state_dict()
    assert state["manifest_xxh3"] == xxhash.xxh3_64_hexdigest(
        open(os.path.join(labelled, "manifest.json"), "rb").read())
    with pytest.raises(ValueError) as e:
        shardkit.Loader(again, 10, threads=1).load_state_dict(state)
    assert f"state['manifest_xxh3'] is '{ds.manifest_xxh3}'" in str(e.value)
    assert f"manifest_xxh3 '{again.manifest_xxh3}'" in str(e.value)
    assert "another dataset" in str(e.value)


def test_a_state_follows_its_dataset_to_another_directory(labelled, tmp_path):
    moved = str(tmp_path / "moved")
    shutil.copytree(labelled, moved)
    loader = shardkit.Loader(labelled, 10, threads=1, seed=3)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    rest = [b.indices.tolist() for b in it]
    there = shardkit.Loader(moved, 10, threads=1, seed=3)
    there.load_state_dict(state)
    assert [b.indices.tolist() for b in there] == rest


def test_a_state_of_the_older_format_is_refused_with_what_to_do(labelled):
    loader = shardkit.Loader(labelled, 10, threads=1)
    old = dict(loader.state_dict(), format="shardkit.Loader/1")
    del old["manifest_xxh3"]
    with pytest.raises(ValueError, match="older shardkit.*manifest_xxh3"):
        loader.load_state_dict(old)
    old.update(format="shardkit.Loader/2", manifest_xxh3=loader.dataset.manifest_xxh3)
    loader.load_state_dict(old)  # the recipe the message gives


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size="8"), TypeError, "batch_size"),
    (dict(remainder="some"), ValueError, "remainder"),
    (dict(on_error="ignore"), ValueError, "on_error"),
    (dict(layout="HWC"), ValueError, "layout"),
    (dict(dtype="int16"), ValueError, "dtype"),
    (dict(output="jax"), ValueError, "output"),
    (dict(rank=2, world_size=2), ValueError, "rank"),
    (dict(rank=1), ValueError, "world_size"),
    (dict(world_size=0, rank=0), ValueError, "world_size"),
    (dict(threads=-1), ValueError, "threads"),
    (dict(threads=2.0), TypeError, "threads"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(shuffle=1), TypeError, "shuffle"),
    (dict(shuffle_buffer="big"), TypeError, "shuffle_buffer"),
    (dict(transform=[shardkit.Normalize(MEAN, STD)]), ValueError, "dtype"),
    (dict(transform=["crop"]), TypeError, "transform"),
])
def test_bad_loader_arguments_name_the_parameter(labelled, kwargs, error, name):
    args = dict(batch_size=4)
    args.update(kwargs)
    with pytest.raises(error, match=name):
        shardkit.Loader(labelled, **args)


def test_rank_and_world_size_come_from_the_environment(labelled, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    loader = shardkit.Loader(labelled, 4)
    assert (loader.rank, loader.world_size) == (1, 3)
    monkeypatch.setenv("WORLD_SIZE", "three")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        shardkit.Loader(labelled, 4)


def test_a_missing_dataset_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        shardkit.Loader(str(tmp_path / "none"), 4)


@pytest.fixture(scope="module")
def damaged(labelled, tmp_path_factory):
    """A copy of the labelled dataset with one record's bytes damaged: a
    byte in the middle of the first shard flipped.  Returns (path, the
    damaged sample's index)."""
    dst = str(tmp_path_factory.mktemp("damaged") / "ds")
    shutil.copytree(labelled, dst)
    first = shardkit.Dataset(dst).manifest["shards"][0]["file"]
    path = os.path.join(dst, first)
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        at = len(data) // 3
        data[at] ^= 0x5A
        f.seek(0)
        f.write(data)
    ds = shardkit.Dataset(dst)
    bad = []
    for i in range(len(ds)):
        try:
            ds[i]
        except shardkit.CorruptRecordError:
            bad.append(i)
    assert len(bad) == 1
    return dst, bad[0]


def test_a_damaged_record_raises_corrupt_record_error_naming_it(damaged):
    dst, bad = damaged
    ds = shardkit.Dataset(dst)
    shard, record = ds.locate(bad)
    with pytest.raises(shardkit.CorruptRecordError) as e:
        ds[bad]
    assert (e.value.index, e.value.shard, e.value.record, e.value.key) == \
        (bad, shard, record, ds.key(bad))
    assert f"{shard} record {record} (key '{ds.key(bad)}')" in str(e.value)

    loader = shardkit.Loader(ds, 5, shuffle=False, threads=2)
    seen = []
    with pytest.raises(shardkit.CorruptRecordError) as e:
        for batch in loader:
            seen.extend(int(i) for i in batch.indices)
    assert (e.value.index, e.value.shard, e.value.record) == (bad, shard, record)
    seen.extend(epoch_indices(loader))  # the loop may go on: the failed batch is passed over
    failed = set(range(bad // 5 * 5, min(bad // 5 * 5 + 5, len(ds))))
    assert sorted(seen) == sorted(set(range(len(ds))) - failed)
    assert loader.stats["failed_batches"] == 1


@pytest.mark.parametrize("threads", [0, 2])
def test_a_retry_loop_on_one_iterator_gets_the_rest_of_the_epoch(damaged, threads):
    # try: next(it) except CorruptRecordError: continue - the failed batch
    # is passed over and the same iterator goes on to the epoch's end
    dst, bad = damaged
    n = len(shardkit.Dataset(dst))
    loader = shardkit.Loader(dst, 5, shuffle=False, threads=threads)
    it = iter(loader)
    seen, errors = [], []
    while True:
        try:
            batch = next(it)
        except shardkit.CorruptRecordError as e:
            errors.append(e.index)
            continue
        except StopIteration:
            break
        seen.extend(int(i) for i in batch.indices)
    assert errors == [bad]
    failed = set(range(bad // 5 * 5, min(bad // 5 * 5 + 5, n)))
    assert seen == sorted(set(range(n)) - failed)
    assert loader.epoch == 1 and loader.stats["failed_batches"] == 1
    with pytest.raises(StopIteration):  # an ended iteration stays ended
        next(it)


def test_on_error_skip_leaves_the_damaged_sample_out_and_counts_it(damaged):
    dst, bad = damaged
    ds = shardkit.Dataset(dst)
    loader = shardkit.Loader(ds, 5, on_error="skip", threads=2,
                             transform=[shardkit.CenterCrop(16)])
    seen, skipped = [], []
    for batch in loader:
        assert batch.images.shape == (len(batch), 16, 16, 3)
        seen.extend(int(i) for i in batch.indices)
        skipped.extend(batch.skipped)
    assert sorted(seen) == [i for i in range(len(ds)) if i != bad]
    assert [e.index for e in skipped] == [bad]
    stats = loader.stats
    assert stats["skipped"] == 1 and stats["samples"] == len(ds) - 1
    assert stats["skipped_errors"][0].key == ds.key(bad)


SIGINT_CHILD = """
import sys, shardkit
loader = shardkit.Loader({dst!r}, 8, threads=2, transform=[shardkit.RandomResizedCrop(64)])
first = True
try:
    while True:
        for batch in loader:
            if first:
                print("iterating", flush=True)
                first = False
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_sigint_ends_a_process_mid_iteration_within_two_seconds(jpeg256):
    # The interrupt reaches Python code within two seconds (the loader's
    # waits do not swallow it); the interpreter's teardown after it (its
    # threads joined, modules freed) may take longer on a loaded machine,
    # but not forever.
    child = subprocess.Popen([PYTHON, "-c", SIGINT_CHILD.format(dst=jpeg256)],
                             env=subprocess_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "iterating"
        child.send_signal(signal.SIGINT)
        start = time.monotonic()
        ready, _, _ = select.select([child.stdout], [], [], 2)
        assert ready, "no KeyboardInterrupt within 2 s of SIGINT"
        assert child.stdout.readline().strip() == "interrupted"
        assert time.monotonic() - start <= 2
        child.wait(timeout=20)
    finally:
        child.kill()
        child.wait()
    assert "KeyboardInterrupt" in child.stderr.read()


def task_count():
    return len(os.listdir("/proc/self/task"))


def test_dropping_a_loader_mid_epoch_stops_its_threads(jpeg256):
    before = task_count()
    kept = []
    for round_ in range(5):
        loader = shardkit.Loader(jpeg256, 8, threads=4, transform=[shardkit.CenterCrop(64)])
        for n, batch in enumerate(loader):
            if n == 1:
                assert task_count() >= before + 4  # its threads are running
                break
        kept.append((batch, batch.images.copy()))
        del loader
        assert task_count() == before, f"round {round_}"
    for batch, copy in kept:  # a batch outlives its loader
        assert np.array_equal(batch.images, copy)


def test_torch_output_shares_the_batch_memory(jpeg256):
    torch = pytest.importorskip("torch")
    loader = shardkit.Loader(jpeg256, 4, threads=1, transform=TRAIN, layout="NCHW",
                             dtype="float32", output="torch")
    images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and images.shape == (4, 3, 96, 96)
    assert images.dtype == torch.float32 and labels.dtype == torch.int64
    numpy_loader = shardkit.Loader(jpeg256, 4, threads=1, transform=TRAIN, layout="NCHW",
                                   dtype="float32")
    assert np.array_equal(next(iter(numpy_loader)).images, images.numpy())


def test_stats_count_samples_stages_and_the_wait(jpeg256):
    loader = shardkit.Loader(jpeg256, 50, threads=2, transform=[shardkit.CenterCrop(128)])
    for n, _ in enumerate(loader):
        if n == 4:
            break
    stats = loader.stats
    assert stats["samples"] == 250 and stats["batches"] == 5
    assert stats["seconds"] > 0 and stats["samples_per_second"] > 0
    assert 0 <= stats["wait_fraction"] <= 1
    for stage in ("read", "decompress", "decode", "transform"):
        assert stats["stage_ms"][stage] > 0, stage
    assert stats["bytes_read"] > 0 and stats["requests"] == 0
    assert stats["skipped"] == 0 and stats["skipped_errors"] == []


@pytest.mark.parametrize("transform", [
    TRAIN,
    [shardkit.CenterCrop(100), shardkit.RandomHorizontalFlip()],
    [shardkit.CenterCrop((300, 40))],  # taller than the image: padded, decoded whole
], ids=["random-resized-crop", "center-crop", "padded-center-crop"])
def test_crops_of_jpeg_records_equal_the_transform_of_the_whole_image(jpeg256, transform):
    # the loader decodes only the part of a JPEG record that the first crop
    # needs; the batch must not tell
    ds = shardkit.Dataset(jpeg256)
    t = shardkit.Compose(transform)
    dtype = "float32" if any(isinstance(s, shardkit.Normalize) for s in transform) else "uint8"
    loader = shardkit.Loader(ds, 8, seed=7, threads=2, transform=transform, dtype=dtype)
    loader.set_epoch(3)
    for n, batch in enumerate(loader):
        for image, index in zip(batch.images, batch.indices):
            whole = t(ds[int(index)].image, seed=7, epoch=3, index=int(index), dtype=dtype)
            assert np.array_equal(image, whole), int(index)
        if n == 5:
            break
