"""shardkit.Dataset: samples by index and key, with exactly the pixels the
C reader gives, and the errors it raises."""
import functools
import http.server
import json
import os
import subprocess
import threading

import numpy as np
import pytest
import xxhash

import shardkit
from conftest import index_lines, tool


def c_reader_digests(dst, tmp_path):
    """{key: (width, height, xxh3 hex)} from `shardbench shards --digests`:
    every sample as the C reader decodes it."""
    out = tmp_path / "digests.jsonl"
    subprocess.run([tool("shardbench"), "shards", dst, "--epochs", "1", "--threads", "2",
                    "--no-shuffle", "--digests", str(out), "--json"], check=True,
                   stdout=subprocess.DEVNULL)
    digests = {}
    for line in out.read_text().splitlines():
        d = json.loads(line)
        digests[d["key"]] = (d["width"], d["height"], d["xxh3"])
    return digests


def digest(image):
    h, w, c = image.shape
    assert c == 3 and image.dtype == np.uint8
    return (w, h, "%016x" % xxhash.xxh3_64_intdigest(np.ascontiguousarray(image).tobytes()))


@pytest.mark.parametrize("codec", ["jpeg", "png", "raw"])
def test_every_sample_has_the_c_readers_pixels_through_dataset_and_loader(codec, by_codec,
                                                                         tmp_path):
    dst = by_codec[codec]
    expected = c_reader_digests(dst, tmp_path)
    ds = shardkit.Dataset(dst)
    assert len(ds) == len(expected) == 1000
    for i in range(len(ds)):
        s = ds[i]
        assert expected[s.key] == digest(s.image), s.key
    seen = set()
    loader = shardkit.Loader(ds, 48, shuffle=False, threads=2)
    for batch in loader:
        images, labels = batch
        assert isinstance(images, list) and len(images) == len(batch.indices)
        for key, image in zip(batch.keys, images):
            assert expected[key] == digest(image), key
            seen.add(key)
    assert seen == set(expected)


def test_samples_keys_and_labels_match_the_index(labelled):
    ds = shardkit.Dataset(labelled)
    lines = index_lines(labelled)
    assert len(ds) == len(lines) == 62
    assert ds.labels == ["ant", "bee", "cat"]
    assert ds.manifest["counts"]["samples"] == 62
    assert len(ds.manifest["shards"]) > 1
    for i, line in enumerate(lines):
        s = ds[i]
        assert s.index == i
        assert s.key == line["key"] == ds.key(i)
        assert s.key_bytes == line["key"].encode()
        expected_label = line["label"]
        assert s.label == (None if expected_label is None or expected_label < 0 else expected_label)
        assert (s.image.shape[1], s.image.shape[0]) == (line["width"], line["height"])
        assert ds.index_of(line["key"]) == i
        assert ds.index_of(line["key"].encode()) == i
        assert ds.locate(i) == (ds.manifest["shards"][line["shard"]]["file"], line["record"])
    unlabeled = [s for s in ds if s.label is None]
    assert len(unlabeled) == 2 and all("/" not in s.key for s in unlabeled)
    assert ds[-1].index == 61


@pytest.mark.parametrize("codec", ["jpeg", "png", "raw"])
def test_stored_gives_the_payload_the_decoded_image_comes_from(codec, by_codec):
    from PIL import Image
    import io
    ds = shardkit.Dataset(by_codec[codec])
    for i in (0, 417, len(ds) - 1):
        image = ds[i].image
        kind, width, height, data = ds.stored(i)
        assert (kind, height, width) == (codec, *image.shape[:2])
        if codec == "raw":
            assert data == image.tobytes()
        else:
            # the stored file, decoded by another decoder (Pillow), is the image
            other = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
            assert np.abs(other.astype(int) - image).max() <= 1
    with pytest.raises(IndexError):
        ds.stored(len(ds))


def test_a_missing_key_raises_key_error(labelled):
    ds = shardkit.Dataset(labelled)
    with pytest.raises(KeyError):
        ds.index_of("ant/no-such-image.JPEG")
    with pytest.raises(TypeError, match="key"):
        ds.index_of(7)


def test_bad_indices_raise_index_and_type_errors(labelled):
    ds = shardkit.Dataset(labelled)
    with pytest.raises(IndexError, match="62"):
        ds[62]
    with pytest.raises(IndexError):
        ds[-63]
    with pytest.raises(TypeError, match="index"):
        ds["1"]
    with pytest.raises(TypeError, match="index"):
        ds[1.0]


def test_a_missing_dataset_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest"):
        shardkit.Dataset(tmp_path)
    with pytest.raises(FileNotFoundError):
        shardkit.Dataset(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="location"):
        shardkit.Dataset(42)


def test_a_damaged_manifest_raises_corrupt_dataset_error(labelled, tmp_path):
    dst = tmp_path / "copy"
    os.makedirs(dst)
    with open(os.path.join(labelled, "manifest.json")) as f:
        manifest = json.load(f)
    manifest["counts"]["samples"] += 1
    (dst / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(shardkit.CorruptDatasetError, match="samples") as e:
        shardkit.Dataset(dst)
    assert e.value.code == -4


def test_sample_memory_outlives_the_dataset(labelled):
    ds = shardkit.Dataset(labelled)
    image = ds[3].image
    copy = image.copy()
    del ds
    assert np.array_equal(image, copy)
    image[0, 0] = 1  # writable, and its own


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_the_identity_is_the_hash_of_the_manifest_bytes_locally_and_over_http(labelled):
    with open(os.path.join(labelled, "manifest.json"), "rb") as f:
        expected = xxhash.xxh3_64_hexdigest(f.read())
    assert shardkit.Dataset(labelled).manifest_xxh3 == expected
    # over HTTP the manifest is one GET, hashed as it arrived (opening reads
    # nothing else)
    handler = functools.partial(QuietHandler, directory=labelled)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            remote = shardkit.Dataset(f"http://127.0.0.1:{server.server_address[1]}/")
            assert remote.manifest_xxh3 == expected
        finally:
            server.shutdown()
