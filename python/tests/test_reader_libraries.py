"""A training process that imports shardkit loads only what reading needs.

The extension is linked with the reader's archive (libshardkit-read.a):
record payloads are raw, JPEG or PNG, so neither libvips nor glib under it
(nor libarchive, nor OpenMP's runtime, which only the converter uses) is
linked, and none is mapped after reading datasets of every codec."""
import json
import os
import re
import subprocess

from conftest import PYTHON, subprocess_env

# The libraries only the converter's side of shardkit links.
CONVERTER_ONLY = re.compile(r"\blib(vips|vips-cpp|glib-2\.0|gobject-2\.0|gio-2\.0|gmodule-2\.0|"
                            r"archive|csv|gomp)\.so")

READ_EVERY_CODEC = r"""
import json, sys
import numpy as np
import shardkit

shapes = {}
for codec, location in json.loads(sys.argv[1]).items():
    ds = shardkit.Dataset(location)
    stored, width, height, _ = ds.stored(0)
    loader = shardkit.Loader(ds, 8, threads=2, shuffle=False,
                             transform=[shardkit.CenterCrop(64)])
    images, labels = next(iter(loader))
    shapes[codec] = [stored, [height, width, 3], list(ds[0].image.shape), list(images.shape),
                     int(np.asarray(images).std() > 0)]
with open("/proc/self/maps") as f:
    mapped = sorted({line.split()[-1] for line in f if ".so" in line.split()[-1]})
print(json.dumps({"shapes": shapes, "mapped": mapped}))
"""


def test_the_extension_links_neither_libvips_nor_glib():
    from shardkit import _native
    listing = subprocess.run(["ldd", _native.__file__], capture_output=True, text=True,
                             check=True).stdout
    # the listing is the whole tree: the payload decoders' libraries are in it
    assert re.search(r"\blibjpeg\.so", listing) and re.search(r"\blibpng16\.so", listing), listing
    assert CONVERTER_ONLY.findall(listing) == [], listing


def test_reading_every_codec_maps_neither_libvips_nor_glib(by_codec):
    out = subprocess.run([PYTHON, "-c", READ_EVERY_CODEC, json.dumps(by_codec)],
                         env=subprocess_env(), capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    # every codec was decoded: a sample and a whole batch of it
    for codec, (stored, shape, first, batch, varied) in result["shapes"].items():
        assert stored == codec
        assert first == shape
        assert batch == [8, 64, 64, 3] and varied
    assert sorted(result["shapes"]) == ["jpeg", "png", "raw"]
    mapped = result["mapped"]
    assert any(os.path.basename(p).startswith("_native") for p in mapped), mapped
    assert [p for p in mapped if CONVERTER_ONLY.search(p)] == []
