#!/usr/bin/python3
"""Regenerate the committed seed corpora of the fuzz targets, deterministically.

    /usr/bin/python3 fuzz/make_corpus.py BUILD_BIN_DIR

BUILD_BIN_DIR holds a built shardify (e.g. build/bin).  Writes, replacing what
is there:
  fuzz/corpus/decode/    tiny images of every format and layout the decoders
                         handle (the pictures of tests/fixtures/make_fixtures.py
                         made small), plus a few damaged ones
  fuzz/corpus/shard/     whole shards written by the real shardify (one per
                         codec, and one of format version 2 whose records
                         carry fields), and single record frames cut out of them
  fuzz/corpus/manifest/  manifest.json and index.jsonl of those runs, reject
                         lines, and a resume journal in the format of
                         lib/convert/journal.h
Every seed stays a few KB: the fuzzer mutates from them, it does not need
large inputs.  Needs Debian's python3-pil.
"""
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(TOP, "fuzz", "corpus")

spec = importlib.util.spec_from_file_location(
    "make_fixtures", os.path.join(TOP, "tests", "fixtures", "make_fixtures.py"))
fx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fx)
from PIL import Image  # noqa: E402  (after the fixtures module, which needs it too)


def exif(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def decode_seeds():
    small = fx.picture(40, 30)
    quad = fx.quadrants(16, 16)
    jpeg = fx.save_bytes(small, "JPEG", quality=75, subsampling="4:2:0")
    png = fx.save_bytes(small, "PNG")
    rgba = small.convert("RGBA")
    rgba.putalpha(Image.frombytes("L", small.size,
                                  bytes(fx.alpha_at(x, y) for y in range(30) for x in range(40))))
    seeds = {
        "baseline.jpg": jpeg,
        "exif_rot6.jpg": fx.save_bytes(quad, "JPEG", quality=75, exif=exif(6)),
        "progressive.jpg": fx.save_bytes(small, "JPEG", quality=75, progressive=True),
        "gray.jpg": fx.save_bytes(small.convert("L"), "JPEG", quality=75),
        "cmyk_adobe.jpg": fx.save_bytes(quad.convert("CMYK"), "JPEG", quality=75),
        "truncated.jpg": jpeg[:len(jpeg) * 2 // 3],
        "bomb.jpg": fx.patch_sof(jpeg, size=(40000, 40000)),
        "twelve_bit.jpg": fx.patch_sof(jpeg, marker=0xC1, precision=12),
        "rgb.png": png,
        "exif_rot6.png": fx.save_bytes(quad, "PNG", exif=exif(6)),
        "palette_trns.png": fx.save_bytes(
            small.convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "PNG",
            transparency=3),
        "gray16.png": fx.png_file(12, 8, 16, 0, lambda x, y: struct.pack(">H", x * 5000 + y * 77)),
        "rgba_interlaced.png": fx.png_file(
            13, 9, 8, 6, lambda x, y: bytes((x * 19, y * 28, 90, fx.alpha_at(x, y))),
            interlace=True),
        "badcrc.png": png[:-8] + b"\0\0\0\0" + png[-4:],
        "bomb.png": fx.png_file(1, 1, 8, 2, lambda x, y: b"\0\0\0")[:16]
        + struct.pack(">II", 100000, 100000) + b"\x08\x02\0\0\0",
        "lossless.webp": fx.save_bytes(rgba, "WEBP", lossless=True, quality=100),
        "lossy.webp": fx.save_bytes(small, "WEBP", quality=50, exif=exif(6)),
        "two_frames.gif": fx.save_bytes(
            quad.convert("P"), "GIF", save_all=True,
            append_images=[small.convert("P").crop((0, 0, 16, 16))]),
        "rgb.tiff": fx.save_bytes(quad, "TIFF", tiffinfo={0x0112: 6}),
        "rgb.bmp": fx.save_bytes(quad.crop((0, 0, 4, 4)), "BMP"),
        "text.jpg": b"these are not the pixels you are looking for\n",
    }
    # bomb.png above lost its IHDR CRC: recompute it so only the size is wrong
    ihdr = seeds["bomb.png"][12:29]
    seeds["bomb.png"] = (seeds["bomb.png"][:29] + struct.pack(">I", fx.zlib.crc32(ihdr))
                         + fx.png_chunk(b"IEND", b""))
    return seeds


def footer_rows(shard):
    """[(offset, frame_bytes)] from a shard's trailer and footer."""
    footer_offset, _, count = struct.unpack("<QQQ", shard[-40:-16])
    rows = shard[footer_offset + 24:footer_offset + 24 + 32 * count]
    return [struct.unpack("<QQ", rows[i:i + 16]) for i in range(0, len(rows), 32)]


def write_dir(name, files):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for fname, data in sorted(files.items()):
        assert len(data) <= 16384, (name, fname, len(data))
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    shardify = os.path.join(sys.argv[1], "shardify")
    seeds = decode_seeds()
    write_dir("decode", seeds)

    shards, manifests = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        for fname, data in seeds.items():
            cls = "a" if len(fname) % 2 else "b"
            os.makedirs(os.path.join(src, cls), exist_ok=True)
            with open(os.path.join(src, cls, fname), "wb") as f:
                f.write(data)
        for codec in ("raw", "jpeg", "png"):
            out = os.path.join(tmp, codec)
            subprocess.run([shardify, src, out, "--size", "6", "--codec", codec,
                            "--shard-size", "4K", "--threads", "1", "--quiet"], check=True)
            shard = open(os.path.join(out, "shard-000000.shard"), "rb").read()
            shards["%s.shard-file" % codec] = shard
            for i, (offset, size) in enumerate(footer_rows(shard)[:2]):
                shards["%s.frame%d" % (codec, i)] = shard[offset:offset + size]
            manifests["%s.manifest.json" % codec] = open(os.path.join(out, "manifest.json"),
                                                         "rb").read()
        index = open(os.path.join(tmp, "raw", "index.jsonl"), "rb").read()
        lines = index.splitlines(keepends=True)
        manifests["index.jsonl"] = b"".join(lines[:6])
        rejects = json.load(open(os.path.join(tmp, "raw", "manifest.json")))["rejected"]
        manifests["rejects.jsonl"] = b"".join(
            json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in rejects[:3]) + (
            b'{"key_hex":"632f636166e92e6a7067","reason":"not an image: unknown signature"}\n')
        end = {"shard": 0, "file": "shard-000000.shard", "samples": 2, "bytes": 4096,
               "xxh3": "0123456789abcdef", "plan_start": 0, "plan_end": 3}
        manifests["journal.jsonl"] = (
            b"S" + lines[0] + b"R" + json.dumps(rejects[0], separators=(",", ":")).encode()
            + b"\nS" + lines[1] + b"E" + json.dumps(end, separators=(",", ":")).encode() + b"\n")
        fields_seeds(shardify, tmp, seeds["baseline.jpg"], shards, manifests)
    write_dir("shard", shards)
    write_dir("manifest", manifests)


def fields_seeds(shardify, tmp, jpeg, shards, manifests):
    """Format version 2: a shard whose records carry a field of every kind
    of value (text, json, a float, a float32 vector, labels, bytes), made by
    the real shardify from sidecar files, its frames, manifest and index."""
    src = os.path.join(tmp, "fields-src")
    os.makedirs(os.path.join(src, "a"))
    sidecars = {
        "0.txt": b"a caption \xc3\xbc\n", "0.json": b'{"u": [1, 2.5, null]}',
        "0.score": b"0.25\n", "0.emb": b"[1, -0.5]", "0.tags": b'["x", "y"]',
        "0.bin": b"\x00\xff", "1.txt": b"", "1.tags": b"[]", "2.json": b"7",
    }
    for i in range(3):
        with open(os.path.join(src, "a", "%d.jpg" % i), "wb") as f:
            f.write(jpeg)
    for name, data in sidecars.items():
        with open(os.path.join(src, "a", name), "wb") as f:
            f.write(data)
    out = os.path.join(tmp, "fields")
    subprocess.run([shardify, src, out, "--size", "6", "--threads", "1", "--quiet",
                    "--field", "caption=text,from=.txt", "--field", "meta=json,from=.json",
                    "--field", "score=float,from=.score", "--field", "emb=float32[2],from=.emb",
                    "--field", "tags=labels,from=.tags", "--field", "blob=bytes,from=.bin"],
                   check=True)
    shard = open(os.path.join(out, "shard-000000.shard"), "rb").read()
    shards["fields.shard-file"] = shard
    for i, (offset, size) in enumerate(footer_rows(shard)[:2]):
        shards["fields.frame%d" % i] = shard[offset:offset + size]
    manifests["fields.manifest.json"] = open(os.path.join(out, "manifest.json"), "rb").read()
    manifests["fields.index.jsonl"] = open(os.path.join(out, "index.jsonl"), "rb").read()


if __name__ == "__main__":
    main()
