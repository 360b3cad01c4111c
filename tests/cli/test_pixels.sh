# test_pixels.sh - pixels as the source holds them (issue 34).  Grey PNGs become
# 1-channel raw shards whose size is about the pixels' bytes, and a Loader without a
# transform gives one (N, 28, 28, 1) array; 16-bit grey PNGs round-trip bit-exact
# through shardify, Dataset and shardcat (png and raw, and resized: shardcheck
# --fidelity exact in the stored form); RGBA keeps its alpha; a mixed dataset reads as
# the widest form and an older reader's version check refuses it (version 3); --pixels
# rgb gives the 3 channels of before, in a version 1 manifest; jpeg refuses alpha and
# 16 bits.  Expected values come from the source files (numpy, Pillow), not the tools.
. "$(dirname "$0")/lib.sh"
with_python "grey, 16-bit and alpha sources" || exit 0

"$PYTHON" - "$T" <<'EOF'
import os, sys
import numpy as np
from PIL import Image
top = sys.argv[1]
rng = np.random.default_rng(34)
def save(arr, path, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(arr, mode).save(path)
    np.save(path + ".npy", arr)
for c in range(2):
    for i in range(6):
        save(rng.integers(0, 256, (28, 28), dtype=np.uint8), f"{top}/grey/{c}/{i}.png", "L")
for i in range(3):
    save(rng.integers(0, 65536, (20, 30), dtype=np.uint16), f"{top}/g16/x/{i}.png")
save(rng.integers(0, 256, (10, 12, 4), dtype=np.uint8), f"{top}/rgba/x/0.png", "RGBA")
save(rng.integers(0, 256, (9, 7, 2), dtype=np.uint8), f"{top}/ga/x/0.png", "LA")
save(rng.integers(0, 256, (16, 16), dtype=np.uint8), f"{top}/mixed/a/grey.png", "L")
save(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8), f"{top}/mixed/a/rgb.png", "RGB")
save(rng.integers(0, 256, (16, 16), dtype=np.uint8), f"{top}/mixed/b/grey2.png", "L")
save(rng.integers(0, 65536, (16, 16), dtype=np.uint16), f"{top}/mixed/b/wide.png")
EOF
# the conversions the cases read (the reader from FORMAT.md reads them all)
shardify --codec raw --size 28 --quiet "$T/grey" "$T/out-grey"
for codec in png raw; do
    shardify --codec $codec --size 20 --no-upscale --quiet "$T/g16" "$T/out16-$codec"
done
shardify --codec png --size 10 --no-upscale --quiet "$T/rgba" "$T/out-rgba"

case_grey_pngs_1_channel_raw_shards_one_array_per_batch() {
    [ "$(json "$T/out-grey/manifest.json" 'd["version"]')" = 3 ] || die "grey dataset is not version 3"
    [ "$(json "$T/out-grey/manifest.json" 'd["stored"]')" = "{'pixels': 'gray', 'depth': 8, 'size': [28, 28]}" ] ||
        die "stored: $(json "$T/out-grey/manifest.json" 'd["stored"]')"
    bytes=$(json "$T/out-grey/manifest.json" 'sum(s["bytes"] for s in d["shards"])')
    [ "$bytes" -le $((12 * 28 * 28 * 11 / 10 + 4096)) ] || die "1-channel shards of $bytes bytes"
    shardcheck --deep --source "$T/grey" --fidelity 12 "$T/out-grey" >"$C/check"
    must_say "fidelity: 12/12 samples pass (12 identical pixels, 12 identical bytes)" "$C/check"
    shardkit_python - "$T" <<'EOF'
import os, sys
import numpy as np
import shardkit
top = sys.argv[1]
ds = shardkit.Dataset(f"{top}/out-grey")
for s in ds:
    want = np.load(f"{top}/grey/{s.key}.npy")
    assert s.image.shape == (28, 28, 1) and s.image.dtype == np.uint8, s.image.shape
    assert (s.image[:, :, 0] == want).all(), s.key
batches = list(shardkit.Loader(ds, batch_size=5, shuffle=False))
assert all(isinstance(b.images, np.ndarray) for b in batches), [type(b.images) for b in batches]
assert batches[0].images.shape == (5, 28, 28, 1), batches[0].images.shape
f = next(iter(shardkit.Loader(ds, batch_size=4, dtype="float32", layout="NCHW")))
assert f.images.shape == (4, 1, 28, 28) and f.images.dtype == np.float32, f.images.shape
EOF
}

case_a_fashion_mnist_like_grey_set_raw_shards_of_at_most_1_1x_its_pixel_bytes_rgb_3_channels() {
    # 300 28x28 objects on black, as bench/grayscale.py's fashion_like: shard bytes against the
    # pixels' bytes (300 x 784), the ratio the issue's Fashion-MNIST had at 2.6x in RGB
    "$PYTHON" - "$C" <<'EOF'
import os, sys
import numpy as np
from PIL import Image
top = sys.argv[1]
rng = np.random.default_rng(10)
yy, xx = np.mgrid[0:28, 0:28]
for i in range(300):
    c = i % 10
    cy, cx = 14 + rng.integers(-2, 3), 14 + rng.integers(-2, 3)
    inside = ((yy - cy) / (4 + c)) ** 2 + ((xx - cx) / (13 - c)) ** 2 <= 1
    img = np.zeros((28, 28), np.uint8)
    img[inside] = np.clip(rng.normal(60 + 18 * c, 25, (28, 28)), 1, 255).astype(np.uint8)[inside]
    os.makedirs(f"{top}/fashion/{c:02d}", exist_ok=True)
    Image.fromarray(img, "L").save(f"{top}/fashion/{c:02d}/{i:05d}.png")
EOF
    shardify --codec raw --size 28 --quiet "$C/fashion" "$C/out-fashion"
    shardify --codec raw --size 28 --pixels rgb --quiet "$C/fashion" "$C/out-fashion-rgb"
    [ "$(json "$C/out-fashion/manifest.json" 'd["stored"]')" = "{'pixels': 'gray', 'depth': 8, 'size': [28, 28]}" ] ||
        die "stored: $(json "$C/out-fashion/manifest.json" 'd["stored"]')"
    grey_bytes=$(json "$C/out-fashion/manifest.json" 'sum(s["bytes"] for s in d["shards"])')
    rgb_bytes=$(json "$C/out-fashion-rgb/manifest.json" 'sum(s["bytes"] for s in d["shards"])')
    [ $((grey_bytes * 10)) -le $((300 * 784 * 11)) ] || die "grey shards of $grey_bytes bytes for $((300 * 784)) pixel bytes"
    [ $((rgb_bytes)) -ge $((grey_bytes * 2)) ] || die "rgb shards of $rgb_bytes bytes, grey $grey_bytes"
}

case_grey_16_bit_pngs_round_trip_bit_exact_shardify_dataset_shardcat() {
    for codec in png raw; do
        [ "$(json "$T/out16-$codec/manifest.json" 'd["stored"]["depth"]')" = 16 ] || die "$codec: not 16-bit"
        shardcheck --deep --source "$T/g16" --fidelity 3 "$T/out16-$codec" >"$C/check"
        must_say "fidelity: 3/3 samples pass (3 identical pixels" "$C/check"
        shardcat "$T/out16-$codec" --out "$C/cat16-$codec" >/dev/null
    done
    shardify --codec png --size 10 --quiet "$T/g16" "$C/out16-small"
    shardcheck --source "$T/g16" --fidelity 3 "$C/out16-small" >"$C/check"
    must_say "fidelity: 3/3 samples pass (3 identical pixels" "$C/check"
    shardkit_python - "$T" "$C" <<'EOF'
import sys
import numpy as np
from PIL import Image
import shardkit
top, case = sys.argv[1:3]
for codec in ("png", "raw"):
    ds = shardkit.Dataset(f"{top}/out16-{codec}")
    for s in ds:
        want = np.load(f"{top}/g16/{s.key}.npy")
        assert s.image.dtype == np.uint16 and (s.image[:, :, 0] == want).all(), (codec, s.key)
        png = Image.open(f"{case}/cat16-{codec}/{s.key.replace('/', '%2F')}.png")
        assert png.mode.startswith("I;16") or png.mode == "I", png.mode
        assert (np.array(png) == want).all(), (codec, s.key)
    b = next(iter(shardkit.Loader(ds, batch_size=3)))
    assert b.images.dtype == np.uint16 and b.images.shape == (3, 20, 30, 1), b.images.shape
EOF
}

case_rgba_keeps_its_alpha() {
    shardkit_python - "$T" <<'EOF'
import sys
import numpy as np
import shardkit
top = sys.argv[1]
s = shardkit.Dataset(f"{top}/out-rgba")[0]
assert s.image.shape == (10, 12, 4) and (s.image == np.load(f"{top}/rgba/x/0.png.npy")).all()
EOF
    shardcheck --deep --source "$T/rgba" --fidelity 1 "$T/out-rgba" >"$C/check"
    must_say "fidelity: 1/1 samples pass (1 identical pixels, 1 identical bytes)" "$C/check"
    shardcat "$T/out-rgba" --out "$C/cat-rgba" >/dev/null
    "$PYTHON" - "$T" "$C" <<'EOF'
import sys
import numpy as np
from PIL import Image
top, case = sys.argv[1:3]
png = Image.open(f"{case}/cat-rgba/x%2F0.png.png")
assert png.mode == "RGBA" and (np.array(png) == np.load(f"{top}/rgba/x/0.png.npy")).all()
EOF
}

case_jpeg_stores_grey_as_a_1_component_jpeg() {
    shardify --codec jpeg --size 28 --quiet "$T/grey" "$C/out-grey-jpeg"
    [ "$(json "$C/out-grey-jpeg/manifest.json" 'd["stored"]')" = "{'pixels': 'gray', 'depth': 8, 'size': [28, 28]}" ] ||
        die "stored: $(json "$C/out-grey-jpeg/manifest.json" 'd["stored"]')"
    shardkit_python - "$C" <<'EOF'
import io, sys
import numpy as np
from PIL import Image
import shardkit
top = sys.argv[1]
ds = shardkit.Dataset(f"{top}/out-grey-jpeg")
for i in range(len(ds)):
    codec, w, h, data = ds.stored(i)
    jpeg = Image.open(io.BytesIO(data))
    assert codec == "jpeg" and jpeg.mode == "L" and jpeg.size == (28, 28), (codec, jpeg.mode)
    assert ds[i].image.shape == (28, 28, 1)
    assert np.abs(ds[i].image[:, :, 0].astype(int) - np.array(jpeg).astype(int)).max() <= 1
EOF
}

case_jpeg_refuses_alpha_and_16_bits_and_stores_an_rgba_source_as_rgb() {
    must_fail 2 shardify --codec jpeg --pixels rgba "$T/rgba" "$C/out-no"
    must_say "shardify: --pixels rgba: jpeg stores no alpha (use --codec png or raw)" "$T/err"
    must_fail 2 shardify --codec jpeg --depth 16 "$T/g16" "$C/out-no"
    must_say "shardify: --depth 16: jpeg stores 8 bits (use --codec png or raw)" "$T/err"
    shardify --codec jpeg --quiet --size 10 --no-upscale "$T/rgba" "$C/out-rgba-jpeg"
    [ "$(json "$C/out-rgba-jpeg/manifest.json" 'd["version"]')" = 1 ] || die "jpeg of rgba is not rgb"
}

case_a_reader_written_from_format_md_reads_1_2_4_channel_and_16_bit_records() {
    shardify --codec raw --size 9 --no-upscale --quiet "$T/ga" "$C/out-ga"
    "$PYTHON" - "$T" "$C" <<'EOF'
import io, json, os, struct, sys
import numpy as np, xxhash, zstandard
from PIL import Image
top, case = sys.argv[1:3]
def records(dataset):
    m = json.load(open(os.path.join(dataset, "manifest.json")))
    assert m["version"] == 3, m["version"]
    for s in m["shards"]:
        data = open(os.path.join(dataset, s["file"]), "rb").read()
        assert data[:8] == b"SKSHARD\x1a" and struct.unpack_from("<H", data, 8)[0] == 1
        footer_offset, footer_bytes, count = struct.unpack_from("<QQQ", data[-40:], 0)
        footer = data[footer_offset:footer_offset + footer_bytes]
        for i in range(count):
            offset, frame_bytes, frame_xxh3, _, _ = struct.unpack_from("<QQQIi", footer, 24 + 32 * i)
            frame = data[offset:offset + frame_bytes]
            assert xxhash.xxh3_64_intdigest(frame) == frame_xxh3
            c = zstandard.ZstdDecompressor().decompress(frame)
            assert c[:4] == b"SKR1"
            klen, _, w, h = struct.unpack_from("<IiII", c, 4)
            pixels, codec, _, n = struct.unpack_from("<BBHQ", c, 20)
            channels, wide = pixels & 0x0F, bool(pixels & 0x10)
            assert pixels & 0xE0 == 0 and 1 <= channels <= 4
            key, payload = c[32:32 + klen].decode(), c[32 + klen:32 + klen + n]
            if codec == 0:
                a = np.frombuffer(payload, "<u2" if wide else "u1").reshape(h, w, channels)
            else:
                assert codec == 2
                a = np.array(Image.open(io.BytesIO(payload))).reshape(h, w, channels)
            yield key, a
seen = 0
for name, channels, dtype in (("out-grey", 1, np.uint8), ("out16-raw", 1, np.uint16),
                              ("out16-png", 1, np.uint16), ("out-ga", 2, np.uint8),
                              ("out-rgba", 4, np.uint8)):
    src = {"out-grey": "grey", "out-ga": "ga", "out-rgba": "rgba"}.get(name, "g16")
    for key, a in records(os.path.join(case if name == "out-ga" else top, name)):
        want = np.load(f"{top}/{src}/{key}.npy")
        want = want.reshape(want.shape[0], want.shape[1], -1)
        assert a.shape[2] == channels and (a.astype(dtype) == want).all(), (name, key)
        seen += 1
assert seen == 12 + 3 + 3 + 1 + 1, seen
EOF
}

case_a_mixed_dataset_reads_as_the_widest_form_and_the_summary_says_so() {
    shardify --codec png --size 16 "$T/mixed" "$C/out-mixed" 2>"$T/err"
    [ "$(json "$C/out-mixed/manifest.json" 'd["stored"]')" = \
        "{'pixels': 'rgb', 'depth': 16, 'mixed': True, 'size': [16, 16]}" ] ||
        die "mixed: $(json "$C/out-mixed/manifest.json" 'd["stored"]')"
    must_say '"pixels":"gray"' "$C/out-mixed/index.jsonl"
    must_say "shardify: pixels of several forms (2 gray 8-bit, 1 gray 16-bit, 1 rgb 8-bit): it reads as rgb 16-bit, each narrower image widened when read" "$T/err"
    shardify --codec png --size 16 --json --quiet "$T/mixed" "$C/out-mixed-json" >"$C/summary.json"
    [ "$(json "$C/summary.json" '(d["pixels"], d["depth"], d["mixed"], d["pixel_forms"])')" = \
        "('rgb', 16, True, [{'pixels': 'gray', 'depth': 8, 'samples': 2}, {'pixels': 'gray', 'depth': 16, 'samples': 1}, {'pixels': 'rgb', 'depth': 8, 'samples': 1}])" ] ||
        die "--json: $(cat "$C/summary.json")"
    shardify --codec png --size 16 --json --quiet "$T/grey" "$C/out-grey-json" >"$C/summary.json"
    [ "$(json "$C/summary.json" '(d["pixels"], d["depth"], d["mixed"], d["pixel_forms"])')" = \
        "('gray', 8, False, [{'pixels': 'gray', 'depth': 8, 'samples': 12}])" ] ||
        die "--json: $(cat "$C/summary.json")"
    shardify --codec png --size 16 "$T/grey" "$C/out-grey-png" 2>"$T/err"
    ! grep -q "several forms" "$T/err" || die "one form said to be several: $(cat "$T/err")"
    shardcheck --deep --source "$T/mixed" --fidelity 4 "$C/out-mixed" >"$C/check"
    must_say "fidelity: 4/4 samples pass (4 identical pixels, 4 identical bytes)" "$C/check"
    # parts of different forms (a's then b's): the merge reads as the widest and says so
    for part in 0 1; do
        shardify --codec png --size 16 --part $part/2 --quiet "$T/mixed" "$C/parts"
    done
    shardify merge "$C/parts" 2>"$T/err"
    must_say "shardify merge: pixels of several forms: it reads as rgb 16-bit, each narrower image widened when read" "$T/err"
    [ "$(json "$C/parts/manifest.json" 'd["stored"]')" = "$(json "$C/out-mixed/manifest.json" 'd["stored"]')" ] ||
        die "merged: $(json "$C/parts/manifest.json" 'd["stored"]')"
    shardkit_python - "$T" "$C" <<'EOF'
import sys
import numpy as np
import shardkit
top, case = sys.argv[1:3]
for name in ("out-mixed", "parts"):
    for s in shardkit.Dataset(f"{case}/{name}"):
        want = np.load(f"{top}/mixed/{s.key}.npy")
        if want.dtype == np.uint8:  # widened to 16 bits: v * 257
            want = want.astype(np.uint16) * 257
        want = np.repeat(want[:, :, None], 3, axis=2) if want.ndim == 2 else want
        assert s.image.shape == (16, 16, 3) and s.image.dtype == np.uint16, (name, s.key)
        assert (s.image == want).all(), (name, s.key)
EOF
}

case_pixels_rgb_is_version_1() {
    shardify --codec raw --size 28 --pixels rgb --quiet "$T/grey" "$C/out-rgb"
    [ "$(json "$C/out-rgb/manifest.json" 'd["version"]')" = 1 ] || die "--pixels rgb is not version 1"
    [ "$(json "$C/out-rgb/manifest.json" '"pixels" in d["config"]')" = False ] || die "config.pixels in v1"
}

case_an_older_reader_versions_1_and_2_only_refuses_version_3() {
    cp -a "$T/out-grey" "$C/out-grey"
    # an older reader (versions 1 and 2 only) refuses version 3
    sed -i 's/"version": 3/"version": 4/' "$C/out-grey/manifest.json"
    damaged "$C/out-grey"
    must_fail 1 shardcheck "$C/out-grey"
    must_say "manifest: unsupported version" "$T/stdout"
}

run_cases
