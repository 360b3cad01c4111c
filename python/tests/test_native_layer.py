"""The package is a thin layer over the C library: the field declarations,
the status codes and the decoding of the structured field values come from
_native (the library), not from Python's own reading of the format; and
_native.Loader takes its options by name, checked in C.

The decoders are checked by routes of their own: boxes shardify wrote from a
COCO file against the COCO numbers scaled by the documented geometry
(docs/guide/shardify.md: --fit short, the shorter side becomes N), and
masks, images and instance masks built here byte by byte as
manifests/FORMAT.md lays them out."""
import ast
import json
import os
import re
import struct

import numpy as np
import pytest
from PIL import Image

import shardkit
from conftest import TOP, shardify
from shardkit import _native
from test_errors import status_codes

PACKAGE = os.path.join(TOP, "python", "shardkit")

# (x, y, width, height) in a 200 x 100 image, as a COCO file gives them;
# the last one a crowd region
COCO_BOXES = [(10.0, 20.0, 30.0, 40.0, 1, 0), (101.5, 0.25, 50.5, 99.75, 2, 0),
              (0.0, 0.0, 200.0, 100.0, 1, 1)]


@pytest.fixture(scope="module")
def coco_boxes(tmp_path_factory):
    top = tmp_path_factory.mktemp("coco")
    src = top / "src"
    src.mkdir()
    Image.fromarray(np.full((100, 200, 3), 90, np.uint8)).save(src / "a.png")
    coco = {"images": [{"id": 1, "file_name": "a.png", "width": 200, "height": 100}],
            "annotations": [{"id": k + 1, "image_id": 1, "category_id": c,
                             "bbox": [x, y, w, h], "iscrowd": crowd, "area": w * h,
                             "segmentation": []}
                            for k, (x, y, w, h, c, crowd) in enumerate(COCO_BOXES)],
            "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}
    (top / "coco.json").write_text(json.dumps(coco))
    return shardify(str(src), str(top / "dst"), "--size", "50", "--codec", "png",
                    "--coco", str(top / "coco.json"))


def test_boxes_read_back_are_the_coco_numbers_scaled_by_the_fit(coco_boxes):
    ds = shardkit.Dataset(coco_boxes)
    (name, field), = ds.fields.items()
    assert field.type == "boxes"
    _, _, _, stored = ds._native.read(0)
    (number, raw), = stored
    assert number == field.number
    # --fit short: the shorter side (100) becomes 50, every coordinate halves
    s = 50 / 100
    want = np.array([[x * s, y * s, (x + w) * s, (y + h) * s] for x, y, w, h, *_ in COCO_BOXES],
                    np.float32)
    xyxy, classes, crowd = (np.asarray(a) for a in _native.decode_value("boxes", raw))
    assert xyxy.dtype == np.float32 and np.array_equal(xyxy, want)
    assert classes.dtype == np.int64 and classes.tolist() == [c for *_, c, _ in COCO_BOXES]
    assert crowd.dtype == np.bool_ and crowd.tolist() == [bool(k) for *_, k in COCO_BOXES]
    # and the Sample and a batch give the same numbers
    sample = ds[0].fields[name]
    assert np.array_equal(sample["boxes"], want)
    batch = next(iter(shardkit.Loader(ds, 1, shuffle=False, threads=0, fields=[name])))
    assert np.array_equal(batch.fields[name][0]["boxes"], want)
    assert batch.fields[name][0]["iscrowd"].tolist() == [False, False, True]


def test_field_declarations_are_the_libraries_reading_of_the_manifest(coco_boxes):
    ds = shardkit.Dataset(coco_boxes)
    with open(os.path.join(coco_boxes, "manifest.json")) as f:
        manifest = json.load(f)
    (decl,) = manifest["config"]["fields"]
    (native,) = ds._native.fields()
    assert native == {"name": decl["name"], "number": 0, "type": decl["type"], "length": None,
                      "source": ("coco", decl["coco"]), "required": decl["required"],
                      "present": manifest["counts"]["fields"][decl["name"]],
                      "classes": {c["id"]: c["name"] for c in decl["classes"]}, "ignore": None}


def mask_bytes(values, value_bytes):
    """A MASK value as FORMAT.md lays it out: width:u32 height:u32
    value_bytes:u8, 3 reserved bytes, then the values row-major."""
    h, w = values.shape
    body = values.astype("<u2" if value_bytes == 2 else "u1").tobytes()
    return struct.pack("<IIB3x", w, h, value_bytes) + body


def test_masks_decode_to_their_values_of_one_or_two_bytes():
    small = np.array([[0, 1, 2], [255, 4, 5]], np.uint8)
    got = np.asarray(_native.decode_value("mask", mask_bytes(small, 1)))
    assert got.dtype == np.uint8 and np.array_equal(got, small)
    wide = np.array([[300, 2], [65535, 0]], np.uint16)
    got = np.asarray(_native.decode_value("mask", mask_bytes(wide, 2)))
    assert got.dtype == np.uint16 and np.array_equal(got, wide)
    with pytest.raises(shardkit.CorruptDatasetError, match="^a 2x2 mask of 19 bytes$"):
        _native.decode_value("mask", mask_bytes(wide, 2)[:-1])


def test_an_image_field_decodes_to_rgb_rows():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    raw = struct.pack("<IIBB2x", 3, 2, 3, 0) + rgb.tobytes()  # codec 0: raw
    got = np.asarray(_native.decode_value("image", raw))
    assert got.shape == (2, 3, 3) and np.array_equal(got, rgb)


def test_instance_masks_decode_from_column_major_runs():
    # COCO's uncompressed RLE: runs of 0 and 1 over the pixels column by column
    want = np.array([[[0, 1, 1], [0, 0, 1]], [[1, 0, 0], [1, 0, 0]]], np.uint8)
    raw = struct.pack("<IIII", 3, 2, len(want), 0)
    for m in want:
        flat = m.T.reshape(-1)  # column-major
        runs, value, n = [], 0, 0
        for v in flat:
            if v != value:
                runs.append(n)
                value, n = v, 0
            n += 1
        runs.append(n)
        raw += struct.pack(f"<I{len(runs)}I", len(runs), *runs)
    got = np.asarray(_native.decode_value("instances", raw))
    assert got.shape == (2, 2, 3) and np.array_equal(got, want)


def test_the_plain_types_decode_as_before():
    assert _native.decode_value("int", struct.pack("<q", -5)) == -5
    assert _native.decode_value("float", struct.pack("<d", 0.25)) == 0.25
    assert _native.decode_value("labels", struct.pack("<3I", 4, 0, 9)) == [4, 0, 9]
    assert np.asarray(_native.decode_value("float32", struct.pack("<2f", 1.5, -2))).tolist() == [
        1.5, -2.0]
    assert np.asarray(_native.decode_value("int64", struct.pack("<q", 2**40))).tolist() == [2**40]
    assert _native.decode_value("text", "é".encode()) == "é"
    assert _native.decode_value("bytes", b"\0\1") == b"\0\1"
    with pytest.raises(ValueError, match="unknown field type 'nosuch'"):
        _native.decode_value("nosuch", b"")


def test_an_unknown_or_mistyped_loader_option_is_refused_by_name(labelled):
    ds = shardkit.Dataset(labelled)
    with pytest.raises(TypeError, match=r"^Loader: unknown option 'batchsize' \(batch_size, "):
        _native.Loader(ds._native, None, {"batchsize": 4})
    with pytest.raises(TypeError, match="^Loader option 'shuffle' must be a bool, not int$"):
        _native.Loader(ds._native, None, {"batch_size": 4, "shuffle": 1})
    with pytest.raises(TypeError, match="^Loader option 'remainder' must be a str, not int$"):
        _native.Loader(ds._native, None, {"batch_size": 4, "remainder": 0})
    with pytest.raises(TypeError, match="^Loader option 'box_min_size' must be a number"):
        _native.Loader(ds._native, None, {"batch_size": 4, "box_min_size": "1"})
    with pytest.raises(TypeError, match="must be a str, not int"):
        _native.Loader(ds._native, None, {4: 4})
    with pytest.raises(TypeError):
        _native.Loader(ds._native, None, [("batch_size", 4)])  # a dict, not pairs
    # those not given are the library's defaults: this one reads every sample
    loader = _native.Loader(ds._native, None, {"batch_size": 4, "threads": 0})
    loader.start(0, 0)
    seen = 0
    while (parts := loader.next()) is not None:
        seen += len(np.frombuffer(parts[1], np.uint64))
    assert seen == len(ds)


def test_the_status_codes_are_the_headers():
    header = status_codes()
    assert {n: getattr(_native, n) for n in header} == header
    assert _native.SHARD_OK == 0


def int_literals(path):
    """The integer constants written in a module's code (docstrings are
    text), with their lines."""
    with open(path) as f:
        tree = ast.parse(f.read())
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and type(n.value) is int]


def test_errors_py_writes_no_status_number():
    codes = set(status_codes().values()) - {0}
    found = [(line, -v) for line, v in int_literals(os.path.join(PACKAGE, "errors.py"))
             if -v in codes]
    assert not found, f"errors.py writes status codes as numbers: {found}"
    # and its classes are mapped from the extension's constants
    from shardkit import errors
    assert errors._BY_CODE == {getattr(_native, n): c for n, c in errors._CLASS_OF.items()}
    assert set(errors._CLASS_OF) == set(status_codes()) - {"SHARD_OK"}


def test_the_package_holds_no_byte_layout_of_the_format():
    # no struct unpacking, no byte offsets into values, no type numbers
    for name in ("dataset.py", "loader.py"):
        with open(os.path.join(PACKAGE, name)) as f:
            text = f.read()
        assert not re.search(r"^import struct|struct\.|frombuffer\(raw|offset=|<f4|<u4|<i4",
                             text, re.M), name
        assert "_HEADER" not in text and "_BOX" not in text, name
