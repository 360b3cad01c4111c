# test_shardcat.sh - shardcat writes exactly the stored pixels: EXIF-rotated,
# CMYK, grayscale and 16-bit sources come out with the orientation and
# colours of a careful reference decode; file names encode keys reversibly;
# missing keys and damaged records are named.
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SRC=$T/src
mkdir -p "$SRC/fix" "$SRC/odd"
for f in exif_rot1.jpg exif_rot2.jpg exif_rot3.jpg exif_rot4.jpg exif_rot5.jpg exif_rot6.jpg \
         exif_rot7.jpg exif_rot8.jpg cmyk_adobe.jpg gray.jpg gray16.png rgb.png rgb.jpg \
         palette.png; do
    cp "$F/$f" "$SRC/fix/$f"
done
cp "$F/rgb.png" "$SRC/odd/a b'c.png"
cp "$F/rgb.png" "$SRC/odd/100%.png"
cp "$F/rgb.png" "$SRC/odd/$(printf 'new\nline.png')"
cp "$F/rgb.png" "$SRC/odd/$(printf 'latin1-\351.png')"

# compare.py OUT CODEC NAME...: each OUT/fix%2FNAME.png against NAME.ref.ppm.
cat >"$T/compare.py" <<'EOF'
import math, os, sys
from PIL import Image
out, codec, fixtures, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

def psnr(a, b):
    if a.size != b.size:
        return -1.0
    x, y = a.tobytes(), b.tobytes()
    se = sum((p - q) ** 2 for p, q in zip(x, y))
    return math.inf if se == 0 else 10 * math.log10(255 * 255 * len(x) / se)

refs = {n: Image.open(os.path.join(fixtures, n + ".ref.ppm")).convert("RGB") for n in names}
bad = []
for n in names:
    got = Image.open(os.path.join(out, "fix%2F" + n + ".png"))
    if got.mode != "RGB":
        bad.append("%s: mode %s" % (n, got.mode))
        continue
    ref = refs[n]
    if got.size != ref.size:
        bad.append("%s: %s, reference %s" % (n, got.size, ref.size))
        continue
    x, y = got.tobytes(), ref.tobytes()
    worst = max(abs(p - q) for p, q in zip(x, y))
    score = psnr(got, ref)
    if codec == "png":
        # exact, except CMYK conversion may round differently by one level
        if worst > (1 if n.startswith("cmyk") else 0):
            bad.append("%s: differs by up to %d levels" % (n, worst))
    else:
        # q95 with 4:2:0 chroma: the synthetic pictures' saturated edges cost
        # a few dB; a wrong orientation or colour conversion costs far more
        if score < 25:
            bad.append("%s: psnr %.1f dB" % (n, score))
    # the right orientation, not merely a similar picture: the reference of
    # every other orientation of the same size is clearly further away
    if n.startswith("exif_rot"):
        for m in ("exif_rot%d.jpg" % k for k in range(1, 9)):
            if m == n or m not in refs:
                continue
            other = psnr(got, refs[m])
            if refs[m].tobytes() != ref.tobytes() and other > score - 10:
                bad.append("%s: looks like %s (%.1f vs %.1f dB)" % (n, m, other, score))
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
NAMES="exif_rot1.jpg exif_rot2.jpg exif_rot3.jpg exif_rot4.jpg exif_rot5.jpg exif_rot6.jpg
       exif_rot7.jpg exif_rot8.jpg cmyk_adobe.jpg gray.jpg gray16.png rgb.png palette.png"

say "png output: shardcat pixels equal the reference decodes"
# no resizing (every side is under the size and upscaling is off): pixels are the decode
shardify "$SRC" "$T/png" --size 1000 --no-upscale --codec png --quiet
shardcat "$T/png" --out "$T/cat"
n=$(ls "$T/cat" | wc -l)
[ "$n" -eq "$(json "$T/png/manifest.json" "d['counts']['samples']")" ] || die "wrote $n files"
# shellcheck disable=SC2086
"$PYTHON" "$T/compare.py" "$T/cat" png "$F" $NAMES || die "png output differs from the references"

say "jpeg output: the same orientation and colours, within JPEG loss"
shardify "$SRC" "$T/jpeg" --size 1000 --no-upscale --codec jpeg --quality 95 --quiet
shardcat "$T/jpeg" --out "$T/catj" --threads 3
# shellcheck disable=SC2086
"$PYTHON" "$T/compare.py" "$T/catj" jpeg "$F" $NAMES || die "jpeg output is not the reference"

say "file names encode keys reversibly and stay inside DIR"
for name in "odd%2Fa b'c.png.png" "odd%2F100%25.png.png" "odd%2Fnew%0Aline.png.png" \
            "odd%2Flatin1-%E9.png.png"; do
    [ -f "$T/cat/$name" ] || { ls "$T/cat" >&2; die "no file '$name'"; }
done
"$PYTHON" -c '
import os, sys, urllib.parse
out, src = sys.argv[1], os.fsencode(sys.argv[2])
keys = set()
for root, dirs, files in os.walk(src):
    for f in files:
        keys.add(os.path.relpath(os.path.join(root, f), src))
for name in os.listdir(os.fsencode(out)):
    assert b"/" not in name and not name.startswith(b".")
    key = urllib.parse.unquote_to_bytes(name[:-len(b".png")])
    assert key in keys, key' "$T/cat" "$SRC" || die "a file name does not decode to a key"

say "chosen keys, a missing key, and --limit"
must_fail 1 shardcat "$T/png" "fix/gray.jpg" "no/such.jpg" "odd/a b'c.png" --out "$T/some"
must_say "no sample with key 'no/such.jpg'" "$T/err"
[ -f "$T/some/fix%2Fgray.jpg.png" ] && [ -f "$T/some/odd%2Fa b'c.png.png" ] ||
    die "the keys that exist were not written"
[ "$(ls "$T/some" | wc -l)" -eq 2 ] || die "expected 2 files"
shardcat "$T/png" --out "$T/three" --limit 3
[ "$(ls "$T/three" | wc -l)" -eq 3 ] || die "--limit 3 did not write 3 files"

say "a damaged record is named, the rest are written"
cp -r "$T/png" "$T/bad"
"$PYTHON" -c '
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
footer = struct.unpack("<Q", b[-40:-32])[0]
rows = footer + 24
offset = struct.unpack("<Q", b[rows + 32 * 2: rows + 32 * 2 + 8])[0]
b[offset + 12] ^= 0x40
open(p, "wb").write(b)' "$T/bad/shard-000000.shard"
must_fail 1 shardcat "$T/bad" --out "$T/catbad"
must_say "shard-000000.shard record 2 (key '" "$T/err"
[ "$(ls "$T/catbad" | wc -l)" -eq $((n - 1)) ] || die "the other samples were not written"

say "usage and I/O errors exit 2"
must_fail 2 shardcat "$T/png"
must_say "--out DIR is required" "$T/err"
must_fail 2 shardcat "$T/nonexistent" --out "$T/x"
must_fail 2 shardcat "$T/png" --out "$T/nonexistent/deeper"
must_fail 2 shardcat "$T/png" --out "$T/x" --limit many
say "all shardcat tests passed"
