"""Fields (format version 2) read back from Python: Dataset.fields,
Sample.fields, Loader(fields=...) batches and ShardIterableDataset under
torch's DataLoader give exactly what was written, for many random samples
with fields of every type (absent ones, empty strings, non-ASCII text,
nested JSON, extreme numbers, vectors, label lists, bytes); and a tree of
sidecar files converted by shardify reads back equal to its files.

The datasets are written by tests/fixtures/v2_writer.py, a writer made from
manifests/FORMAT.md alone (zstandard and xxhash, not libshardkit), or by
shardify from tests/fixtures/fields_tree.py's sources, whose values are
parsed here from the files: the expected values never come from the code
under test."""
import json
import math
import os
import random
import struct
import sys

import numpy as np
import pytest

import subprocess

import shardkit
from conftest import TOP, shardify, tool

sys.path.insert(0, os.path.join(TOP, "tests", "fixtures"))
import fields_tree  # noqa: E402
from v2_writer import Decl, Sample, write_dataset  # noqa: E402

LABELS = ["ant", "bee", "cat", "d\u00f6g", "eel"]  # sorted by their UTF-8 bytes
EMB, IDS = 5, 3
DECLS = [
    Decl("uid", "text", sidecar=".uid", required=True),
    Decl("caption", "text", sidecar=".txt"),
    Decl("meta", "json", sidecar=".json"),
    Decl("score", "int", column="score"),
    Decl("weight", "float", column="weight"),
    Decl("emb", f"float32[{EMB}]", sidecar=".emb"),
    Decl("ids", f"int64[{IDS}]", column="ids"),
    Decl("tags", "labels", column="tags"),
    Decl("blob", "bytes", sidecar=".bin"),
]
BY_NAME = {d.name: d for d in DECLS}
SAMPLES = 240
SHARD_SAMPLES = 37  # seven shards, the last short
CHARS = "ab Z09\t\n\"\\/{}\u00e9\u00fc\u00df\u65e5\u672c\u8a9e\U0001f431\u200b\u0000"


# A JSON value the format accepts: shard_field_check (jansson) refuses "\u0000" in
# strings and integers beyond int64, which RFC 8259 allows.
JSON_CHARS = CHARS.replace("\u0000", "")


def random_text(rng, most=40, chars=CHARS):
    return "".join(rng.choice(chars) for _ in range(rng.randrange(most + 1)))


def random_json(rng, depth=0):
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, -1, 2**63 - 1, -2**63, rng.randrange(-10**6, 10**6)])
    if kind == "float":
        return rng.choice([0.5, -1e-300, 1.7976931348623157e308, rng.uniform(-1e9, 1e9)])
    if kind == "str":
        return random_text(rng, 12, JSON_CHARS)
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {random_text(rng, 6, JSON_CHARS): random_json(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def random_float32(rng):
    # finite float32 values, the extremes too (stored exactly: drawn as float32)
    v = rng.choice([0.0, -0.0, 3.4028234663852886e38, -1.401298464324817e-45,
                    rng.uniform(-1e6, 1e6)])
    return struct.unpack("<f", struct.pack("<f", v))[0]


def random_int64(rng):
    return rng.choice([0, -1, 2**63 - 1, -2**63, rng.randrange(-2**63, 2**63)])


def random_value(rng, decl):
    t = decl.base
    if t == "text":
        return random_text(rng)
    if t == "json":
        return random_json(rng)
    if t == "int":
        return random_int64(rng)
    if t == "float":
        return rng.choice([0.0, -0.0, 5e-324, -1.7976931348623157e308, rng.uniform(-1e3, 1e3)])
    if t == "float32":
        return [random_float32(rng) for _ in range(decl.length)]
    if t == "int64":
        return [random_int64(rng) for _ in range(decl.length)]
    if t == "labels":
        return rng.sample(range(len(LABELS)), rng.randrange(len(LABELS) + 1))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(30)))


def random_samples(seed, count=SAMPLES, decls=DECLS):
    rng = random.Random(seed)
    samples = []
    for i in range(count):
        width, height = rng.randrange(1, 6), rng.randrange(1, 6)
        fields = {}
        for d in decls:
            if d.required or rng.random() < 0.65:
                fields[d.name] = random_value(rng, d)
        if "caption" in fields and rng.random() < 0.1:
            fields["caption"] = ""  # a value, not an absence
        label = rng.randrange(len(LABELS)) if rng.random() < 0.8 else None
        key = f"d\u00fcr/{i:04d}.png".encode("utf-8")
        samples.append(Sample(key, label, width, height,
                              bytes(rng.randrange(256) for _ in range(width * height * 3)),
                              fields))
    return samples


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(location, samples) of a version 2 dataset of random samples."""
    dst = str(tmp_path_factory.mktemp("fields") / "v2")
    samples = random_samples(19)
    write_dataset(dst, samples, labels=LABELS, fields=DECLS, shard_samples=SHARD_SAMPLES)
    return dst, samples


def float_bits(v):
    return struct.pack("<d", v)


def assert_value(decl, got, want):
    """got (as shardkit gives it) is exactly want (as the writer was given it)."""
    t = decl.base
    if t in ("float32", "int64"):
        assert isinstance(got, np.ndarray)
        assert got.dtype == (np.float32 if t == "float32" else np.int64)
        assert got.shape == (decl.length,)
        assert got.tobytes() == np.asarray(want, dtype=got.dtype).tobytes()
    elif t == "float":
        assert isinstance(got, float) and float_bits(got) == float_bits(want)
    elif t == "json":
        # json.dumps of what was written equals that of what is read (so -0.0 and 0 differ)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    else:
        assert type(got) is type(want) and got == want


def test_the_writer_made_from_the_format_writes_what_shardcheck_verifies(tmp_path):
    # the tests' datasets are what the format says: shardcheck --deep finds nothing wrong in
    # one (images of shorter side 4, as config.size says)
    rng = random.Random(1)
    samples = random_samples(3, count=40)
    for s in samples:
        long = rng.randrange(4, 8)
        s.width, s.height = (4, long) if rng.random() < 0.5 else (long, 4)
        s.pixels = bytes(rng.randrange(256) for _ in range(s.width * s.height * 3))
    dst = str(tmp_path / "verified")
    write_dataset(dst, samples, labels=LABELS, fields=DECLS, shard_samples=9, size=4)
    out = subprocess.run([tool("shardcheck"), "--deep", dst], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"verified '{dst}': 5 shards, 40 samples" in out.stdout


# ---- the declarations and Sample.fields ------------------------------------------------


def test_dataset_fields_are_the_declarations_with_their_counts(written):
    dst, samples = written
    ds = shardkit.Dataset(dst)
    fields = ds.fields
    assert list(fields) == [d.name for d in DECLS]
    for number, d in enumerate(DECLS):
        f = fields[d.name]
        assert (f.name, f.number, f.type, f.length, f.required) == (
            d.name, number, d.base, d.length, d.required)
        assert f.source == (("sidecar", d.sidecar) if d.sidecar else ("column", d.column))
        assert f.present == sum(d.name in s.fields for s in samples)
    assert fields["emb"].length == EMB and fields["caption"].length is None
    assert 0 < fields["caption"].present < SAMPLES
    assert fields["uid"].present == SAMPLES


def test_every_sample_reads_back_exactly_what_was_written(written):
    dst, samples = written
    ds = shardkit.Dataset(dst)
    assert len(ds) == SAMPLES
    seen_empty = seen_absent = 0
    for i, want in enumerate(samples):
        s = ds[i]
        assert s.key_bytes == want.key
        assert s.label == want.label
        assert s.image.shape == (want.height, want.width, 3)
        assert s.image.tobytes() == want.pixels
        assert list(s.fields) == [d.name for d in DECLS]  # every declared field, in order
        for d in DECLS:
            if d.name not in want.fields:
                assert s.fields[d.name] is None
                seen_absent += 1
            else:
                assert_value(d, s.fields[d.name], want.fields[d.name])
        seen_empty += s.fields["caption"] == ""
    assert seen_empty and seen_absent  # both cases happened


def test_label_names_gives_a_labels_fields_names(written):
    dst, samples = written
    ds = shardkit.Dataset(dst)
    i = next(k for k, s in enumerate(samples) if len(s.fields.get("tags", [])) >= 2)
    tags = ds[i].fields["tags"]
    assert ds.label_names(tags) == [LABELS[t] for t in samples[i].fields["tags"]]
    assert ds.label_names([]) == []


def test_label_names_of_minus_one_is_none_never_the_last_class(labelled):
    # a batch gives -1 to a sample without a label: not ds.labels[-1]
    ds = shardkit.Dataset(labelled)
    n = len(ds.labels)
    assert ds.label_names([-1, 0, n - 1]) == [None, ds.labels[0], ds.labels[n - 1]]
    assert ds.label_names(np.array([-1], dtype=np.int64)) == [None]
    for bad in (-2, n):
        with pytest.raises(IndexError, match=f"label {bad} is not a label number"):
            ds.label_names([bad])


# ---- batches -------------------------------------------------------------------------


def to_numpy(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else v


def assert_batch_fields(batch, samples, names, multi_hot=(), torch_output=False):
    """Every selected field of every sample of the batch is the one written."""
    assert list(batch.fields) == list(names)
    assert list(batch.present) == list(names)
    indices = [int(i) for i in batch.indices]
    for name in names:
        d = BY_NAME[name]
        got, present = batch.fields[name], to_numpy(batch.present[name])
        if torch_output:
            assert type(batch.present[name]).__module__.startswith("torch")
        assert present.dtype == np.bool_ and present.shape == (len(indices),)
        assert present.tolist() == [name in samples[i].fields for i in indices]
        if d.base in ("int", "float", "float32", "int64") or name in multi_hot:
            if torch_output:
                assert type(got).__module__.startswith("torch")
            got = to_numpy(got)
            assert len(got) == len(indices)
        for j, i in enumerate(indices):
            want = samples[i].fields.get(name)
            if d.base in ("int", "float"):
                dtype = np.int64 if d.base == "int" else np.float64
                assert got.dtype == dtype and got.shape == (len(indices),)
                assert got[j].tobytes() == np.array(0 if want is None else want,
                                                    dtype=dtype).tobytes()
            elif d.base in ("float32", "int64"):
                dtype = np.float32 if d.base == "float32" else np.int64
                assert got.dtype == dtype and got.shape == (len(indices), d.length)
                row = [0] * d.length if want is None else want
                assert got[j].tobytes() == np.array(row, dtype=dtype).tobytes()
            elif name in multi_hot:
                assert got.dtype == np.uint8 and got.shape == (len(indices), len(LABELS))
                assert got[j].tolist() == [int(k in (want or ())) for k in range(len(LABELS))]
            elif want is None:
                assert got[j] is None
            else:
                assert_value(d, got[j], want)


@pytest.mark.parametrize("threads", [0, 3])
def test_loader_batches_carry_every_selected_field_exactly(written, threads):
    dst, samples = written
    names = [d.name for d in DECLS]
    random.Random(threads).shuffle(names)  # any order: the batch keeps it
    loader = shardkit.Loader(dst, 16, fields=names, threads=threads, seed=5)
    seen = []
    for batch in loader:
        assert_batch_fields(batch, samples, names)
        seen += [int(i) for i in batch.indices]
    assert sorted(seen) == list(range(SAMPLES))


def test_torch_output_and_multi_hot_labels(written):
    pytest.importorskip("torch")
    dst, samples = written
    names = ["tags", "score", "caption", "emb"]
    for multi_hot in (True, ["tags"]):
        loader = shardkit.Loader(dst, 32, fields=names, multi_hot=multi_hot, output="torch",
                                 threads=2, transform=[shardkit.CenterCrop(2)])
        assert loader.multi_hot == {"tags"}
        n = 0
        for batch in loader:
            assert tuple(batch.images.shape[1:]) == (2, 2, 3)
            assert_batch_fields(batch, samples, names, multi_hot=("tags",), torch_output=True)
            n += len(batch)
        assert n == SAMPLES


def batch_digest(batch):
    """What a batch holds, fields included, as comparable plain values."""
    fields = {}
    for name, v in batch.fields.items():
        v = to_numpy(v)
        fields[name] = v.tobytes() if isinstance(v, np.ndarray) else json.dumps(
            [x.hex() if isinstance(x, bytes) else x for x in v], sort_keys=True)
    return ([int(i) for i in batch.indices], [int(x) for x in batch.labels], fields,
            {k: to_numpy(v).tolist() for k, v in batch.present.items()})


@pytest.mark.parametrize("world_size", [1, 3])
def test_with_fields_every_sample_comes_once_per_epoch_and_batches_are_deterministic(
        written, world_size):
    dst, samples = written
    names = ["meta", "weight", "tags", "blob"]
    for epoch in range(2):
        union = []
        for rank in range(world_size):
            runs = []
            for threads in (0, 4):
                loader = shardkit.Loader(dst, 10, fields=names, threads=threads, seed=11,
                                         rank=rank, world_size=world_size)
                loader.set_epoch(epoch)
                runs.append([batch_digest(b) for b in loader])
            assert runs[0] == runs[1]  # the same batches whatever the thread count
            for indices, *_ in runs[0]:
                union += indices
        assert sorted(union) == list(range(SAMPLES))


def test_a_restored_state_gives_the_rest_of_the_epoch_with_fields(written):
    dst, samples = written
    names = ["caption", "ids", "tags", "meta"]
    options = dict(fields=names, multi_hot=["tags"], seed=3, threads=2)
    whole = [batch_digest(b) for b in shardkit.Loader(dst, 12, **options)]
    first = shardkit.Loader(dst, 12, **options)
    it = iter(first)
    head = [batch_digest(next(it)) for _ in range(7)]
    state = json.loads(json.dumps(first.state_dict()))  # plain values
    first.close()
    assert state["fields"] == names and state["multi_hot"] == ["tags"]
    again = shardkit.Loader(dst, 12, **options)
    again.load_state_dict(state)
    rest = [batch_digest(b) for b in again]
    assert head + rest == whole
    # a state of another selection is refused, naming it
    other = shardkit.Loader(dst, 12, fields=["caption"], seed=3, threads=1)
    with pytest.raises(ValueError, match="state\\['fields'\\]"):
        other.load_state_dict(state)
    plain = shardkit.Loader(dst, 12, seed=3, threads=1)
    with pytest.raises(ValueError, match="state\\['fields'\\]"):
        plain.load_state_dict(state)
    # a state of a loader without fields, also one saved before fields existed, loads
    saved = plain.state_dict()
    assert saved["fields"] is None and saved["multi_hot"] is None
    del saved["fields"], saved["multi_hot"]
    plain.load_state_dict(saved)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_passes_fields_through(written, num_workers):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    from shardkit.torch import ShardIterableDataset
    dst, samples = written
    names = ["caption", "meta", "blob", "tags", "weight", "emb"]
    options = dict(fields=names, seed=2, transform=[shardkit.CenterCrop(2)])
    data = ShardIterableDataset(dst, 16, threads=1, **options)
    expect = [batch_digest(b) for b in shardkit.Loader(dst, 16, threads=1, **options)]
    got, seen = [], []
    for batch in DataLoader(data, batch_size=None, num_workers=num_workers):
        images, labels = batch
        fields = batch.fields
        assert isinstance(images, torch.Tensor) and isinstance(fields["weight"], torch.Tensor)
        assert isinstance(fields["caption"], list) and isinstance(fields["tags"], list)
        assert_batch_fields(batch, samples, names, torch_output=True)
        got.append(batch_digest(batch))
        seen += batch.indices.tolist()
    assert got == expect
    assert sorted(seen) == list(range(SAMPLES))


def test_unknown_fields_and_bad_multi_hot_are_refused_by_name(written):
    dst, _ = written
    with pytest.raises(ValueError) as e:
        shardkit.Loader(dst, 4, fields=["caption", "captoin"])
    assert "'captoin'" in str(e.value) and "'caption', 'meta', 'score'" in str(e.value)
    with pytest.raises(ValueError, match="'meta' is selected twice"):
        shardkit.Loader(dst, 4, fields=["meta", "uid", "meta"])
    with pytest.raises(TypeError, match="list of field names"):
        shardkit.Loader(dst, 4, fields="caption")
    with pytest.raises(ValueError, match="multi_hot: 'caption' is a text field"):
        shardkit.Loader(dst, 4, fields=["caption", "tags"], multi_hot=["caption"])
    with pytest.raises(ValueError, match="multi_hot: 'tags' is not in fields"):
        shardkit.Loader(dst, 4, fields=["caption"], multi_hot=["tags"])


# ---- version 1, and fields that contradict their manifest ----------------------------------


def test_a_version_1_dataset_reads_exactly_as_before(tmp_path):
    samples = random_samples(7, count=60, decls=[])
    dst = str(tmp_path / "v1")
    manifest = write_dataset(dst, samples, labels=LABELS, shard_samples=13)
    assert manifest["version"] == 1 and "fields" not in manifest["config"]
    ds = shardkit.Dataset(dst)
    assert ds.fields == {}
    for i, want in enumerate(samples):
        s = ds[i]
        assert (s.key_bytes, s.label, s.image.tobytes()) == (want.key, want.label, want.pixels)
        assert s.fields == {}
    batches = list(shardkit.Loader(dst, 8, threads=2, shuffle=False))
    assert [int(i) for b in batches for i in b.indices] == list(range(60))
    assert all(b.fields == {} and b.present == {} for b in batches)
    assert [int(x) for b in batches for x in b.labels] == [
        -1 if s.label is None else s.label for s in samples]
    with pytest.raises(ValueError, match="unknown field 'caption': the dataset declares none"):
        shardkit.Loader(dst, 8, fields=["caption"])


def damaged_dataset(tmp_path, name, **writer_options):
    samples = random_samples(23, count=40)
    for s in samples:  # every sample has these fields, so a damaged one's is read
        s.fields.setdefault("score", 1)
        s.fields.setdefault("meta", {"ok": True})
    dst = str(tmp_path / name)
    write_dataset(dst, samples, labels=LABELS, fields=DECLS, shard_samples=10, **writer_options)
    return dst, samples


def test_a_field_of_another_type_than_declared_is_a_corrupt_record(tmp_path):
    dst, samples = damaged_dataset(tmp_path, "typed", types={13: {"score": 4}})  # float
    ds = shardkit.Dataset(dst)
    with pytest.raises(shardkit.CorruptRecordError) as e:
        ds[13]
    assert (e.value.index, e.value.shard, e.value.record) == (13, "shard-000001.shard", 3)
    assert e.value.key == samples[13].key.decode()
    assert "field 'score' is stored as float, declared int" in str(e.value)
    assert ds[12].fields["score"] == samples[12].fields["score"]
    # a loader carrying fields fails the batch, or leaves the sample out
    with pytest.raises(shardkit.CorruptRecordError, match="field 'score'"):
        list(shardkit.Loader(dst, 8, fields=["score"], shuffle=False))
    loader = shardkit.Loader(dst, 8, fields=["score", "caption"], shuffle=False,
                             on_error="skip")
    kept = []
    for batch in loader:
        assert_batch_fields(batch, samples, ["score", "caption"])
        kept += [int(i) for i in batch.indices]
    assert kept == [i for i in range(40) if i != 13]
    assert loader.stats["skipped"] == 1


def test_a_json_value_that_does_not_parse_is_a_corrupt_record_naming_the_field(tmp_path):
    samples = random_samples(29, count=20)
    samples[5].fields["meta"] = b'{"a": [1, '  # stored as these bytes
    dst = str(tmp_path / "json")
    write_dataset(dst, samples, labels=LABELS, fields=DECLS, shard_samples=10)
    ds = shardkit.Dataset(dst)
    with pytest.raises(shardkit.CorruptRecordError) as e:
        ds[5]
    assert e.value.index == 5 and e.value.record == 5
    assert "field 'meta': invalid JSON" in str(e.value)
    loader = shardkit.Loader(dst, 4, fields=["meta"], shuffle=False, on_error="skip")
    kept = []
    for batch in loader:
        kept += [int(i) for i in batch.indices]
        for e in batch.skipped:
            assert e.index == 5 and "field 'meta': invalid JSON" in str(e)
    assert kept == [i for i in range(20) if i != 5]


@pytest.mark.parametrize("manifest_version", [1, 2])
def test_a_shard_of_the_other_version_is_refused_naming_it(tmp_path, manifest_version):
    samples = random_samples(31, count=30, decls=DECLS if manifest_version == 2 else [])
    dst = str(tmp_path / f"mixed{manifest_version}")
    write_dataset(dst, samples, labels=LABELS, fields=DECLS if manifest_version == 2 else (),
                  shard_samples=10, shard_versions={1: 3 - manifest_version})
    ds = shardkit.Dataset(dst)
    with pytest.raises(shardkit.CorruptDatasetError,
                       match=f"shard-000001.shard: a version {3 - manifest_version} shard in a "
                             f"version {manifest_version} dataset"):
        ds[12]
    assert ds[9].image.tobytes() == samples[9].pixels
    assert ds[20].image.tobytes() == samples[20].pixels


def test_the_written_floats_were_finite(written):
    # the format stores finite floats only: the generator must not test anything else
    _, samples = written
    for s in samples:
        for name in ("weight", "emb"):
            v = s.fields.get(name)
            if v is not None:
                assert all(math.isfinite(x) for x in (v if isinstance(v, list) else [v]))


# ---- from sidecar files, through shardify ---------------------------------------------


def source_value(typ, raw, classes):
    """What Python must give for a sidecar's bytes, parsed here from the file."""
    t = typ.partition("[")[0]
    if t == "text":
        return raw.decode("utf-8")
    if t == "json":
        return json.loads(raw)
    if t == "int":
        return int(raw.strip())
    if t == "float":
        return float(raw.strip())
    if t == "float32":
        return np.array(json.loads(raw), dtype=np.float32)
    if t == "int64":
        return np.array(json.loads(raw), dtype=np.int64)
    if t == "labels":
        return [classes.index(name) for name in json.loads(raw)]
    return raw


def test_a_shardified_sidecar_tree_reads_back_equal_to_its_files(tmp_path):
    src = str(tmp_path / "src")
    fields_tree.make(src, 5)
    dst = shardify(os.path.join(src, "tree"), str(tmp_path / "dst"), "--size", "16",
                   "--labels", "none", "--max-field-bytes", "4096", "--shard-size", "4K",
                   *[a for spec in fields_tree.field_args() for a in ("--field", spec)])
    with open(os.path.join(src, "expect.json")) as f:
        expect = json.load(f)["samples"]
    ds = shardkit.Dataset(dst)
    declared = ds.fields
    assert [(f.name, f.type + (f"[{f.length}]" if f.length else ""), f.source[1])
            for f in declared.values()] == fields_tree.FIELDS
    classes = ds.labels
    want = {}
    for key, files in expect.items():
        want[key] = {}
        for name, typ, _ in fields_tree.FIELDS:
            raw = files[name]
            want[key][name] = None if raw is None else source_value(typ, bytes.fromhex(raw),
                                                                   classes)
    assert len(ds) == len(want)
    for f in declared.values():
        assert f.present == sum(w[f.name] is not None for w in want.values())

    def same(a, b):
        if isinstance(b, np.ndarray):
            return a.dtype == b.dtype and a.tobytes() == b.tobytes()
        return type(a) is type(b) and a == b

    for i in range(len(ds)):
        s = ds[i]
        for name, value in want[s.key].items():
            assert same(s.fields[name], value), (s.key, name, s.fields[name], value)
    names = [name for name, _, _ in fields_tree.FIELDS]
    n = 0
    for batch in shardkit.Loader(ds, 5, fields=names, threads=2):
        for j, key in enumerate(batch.keys):
            for name, typ, _ in fields_tree.FIELDS:
                value, has = batch.fields[name], bool(batch.present[name][j])
                assert has == (want[key][name] is not None)
                if typ.partition("[")[0] in ("int", "float", "float32", "int64"):
                    got = value[j]
                    w = want[key][name]
                    w = np.zeros_like(got) if w is None else np.asarray(w, dtype=got.dtype)
                    assert got.tobytes() == w.tobytes(), (key, name)
                else:
                    assert same(value[j], want[key][name]) if has else value[j] is None
        n += len(batch)
    assert n == len(ds)
