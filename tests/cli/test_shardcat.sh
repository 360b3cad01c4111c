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

# the datasets every case reads: the fixtures converted losslessly and as JPEG
# (no resizing: every side is under the size and upscaling is off, so pixels
# are the decode, in 8-bit RGB as the references are; test_pixels.sh: the
# sources' own forms)
shardify "$SRC" "$T/png" --size 1000 --no-upscale --codec png --pixels rgb --depth 8 --quiet
shardify "$SRC" "$T/jpeg" --size 1000 --no-upscale --codec jpeg --quality 95 --quiet
n=$(json "$T/png/manifest.json" "d['counts']['samples']")

case_png_output_equals_the_reference_decodes() {
    shardcat "$T/png" --out "$C/cat"
    [ "$(ls "$C/cat" | wc -l)" -eq "$n" ] || die "wrote $(ls "$C/cat" | wc -l) files, not $n"
    # shellcheck disable=SC2086
    "$PYTHON" "$T/compare.py" "$C/cat" png "$F" $NAMES || die "png output differs from the references"
}

case_jpeg_output_has_the_orientation_and_colours_within_jpeg_loss() {
    shardcat "$T/jpeg" --out "$C/catj" --threads 3
    # shellcheck disable=SC2086
    "$PYTHON" "$T/compare.py" "$C/catj" jpeg "$F" $NAMES || die "jpeg output is not the reference"
}

case_file_names_encode_keys_reversibly_and_stay_inside_dir() {
    shardcat "$T/png" --out "$C/cat"
    for name in "odd%2Fa b'c.png.png" "odd%2F100%25.png.png" "odd%2Fnew%0Aline.png.png" \
                "odd%2Flatin1-%E9.png.png"; do
        [ -f "$C/cat/$name" ] || { ls "$C/cat" >&2; die "no file '$name'"; }
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
    assert key in keys, key' "$C/cat" "$SRC" || die "a file name does not decode to a key"
}

case_chosen_keys_a_missing_key_and_limit() {
    must_fail 1 shardcat "$T/png" "fix/gray.jpg" "no/such.jpg" "odd/a b'c.png" --out "$C/some"
    must_say "no sample with key 'no/such.jpg'" "$T/err"
    [ -f "$C/some/fix%2Fgray.jpg.png" ] && [ -f "$C/some/odd%2Fa b'c.png.png" ] ||
        die "the keys that exist were not written"
    [ "$(ls "$C/some" | wc -l)" -eq 2 ] || die "expected 2 files"
    shardcat "$T/png" --out "$C/three" --limit 3
    [ "$(ls "$C/three" | wc -l)" -eq 3 ] || die "--limit 3 did not write 3 files"
}

case_a_damaged_record_is_named_and_the_rest_are_written() {
    cp -r "$T/png" "$C/bad"
    "$PYTHON" -c '
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
footer = struct.unpack("<Q", b[-40:-32])[0]
rows = footer + 24
offset = struct.unpack("<Q", b[rows + 32 * 2: rows + 32 * 2 + 8])[0]
b[offset + 12] ^= 0x40
open(p, "wb").write(b)' "$C/bad/shard-000000.shard"
    must_fail 1 shardcat "$C/bad" --out "$C/catbad"
    must_say "shard-000000.shard record 2 (key '" "$T/err"
    [ "$(ls "$C/catbad" | wc -l)" -eq $((n - 1)) ] || die "the other samples were not written"
}

case_usage_errors_exit_2_and_an_unreadable_dst_fails() {
    must_fail 2 shardcat "$T/png"
    must_say "--out DIR is required" "$T/err"
    must_fail 2 shardcat "$T/png" --out "$C/nonexistent/deeper"
    must_say "--out: cannot create '$C/nonexistent/deeper'" "$T/err"
    must_fail 2 shardcat "$T/png" --out "$C/x" --limit many
    must_fail 2 shardcat -zz "$T/png" --out "$C/x"
    must_say "unknown option '-z'" "$T/err"
    if grep -q "unknown option '$T/png'" "$T/err"; then die "the operand was named as the option"; fi
    # the dataset is the input of the work: one that cannot be read fails it
    must_fail 1 shardcat "$C/nonexistent" --out "$C/x"
    must_say "$C/nonexistent" "$T/err"
}

# ---- the output directory: nothing outside it is touched ---------------------
case_out_inside_the_dataset_is_refused_before_anything_is_written() {
    cp -r "$T/png" "$C/ds"
    ls -A "$C/ds" >"$C/ds.before"
    must_fail 2 shardcat "$C/ds" --out "$C/ds/look"
    must_say "--out: '$C/ds/look' is inside the dataset '$C/ds'" "$T/err"
    must_fail 2 shardcat "$C/ds" --out "$C/ds"
    must_fail 2 shardcat "$C/ds" --out "$C/ds/"
    ln -s "$C/ds" "$C/ds-link"
    must_fail 2 shardcat "$C/ds" --out "$C/ds-link/look"
    must_say "is inside the dataset" "$T/err"
    ls -A "$C/ds" | cmp -s - "$C/ds.before" || die "the dataset directory was changed"
    shardcheck "$C/ds" >/dev/null || die "the dataset no longer verifies"
}

case_out_that_is_a_symbolic_link_is_refused() {
    mkdir "$C/elsewhere"
    ln -s "$C/elsewhere" "$C/out-link"
    must_fail 2 shardcat "$T/png" --out "$C/out-link"
    must_say "--out: '$C/out-link' is a symbolic link" "$T/err"
    [ -z "$(ls -A "$C/elsewhere")" ] || die "shardcat wrote through the --out link"
}

# victims: a file and a directory outside DIR that links may point to
victims() {
    echo "precious" >"$C/victim.txt"
    cp "$C/victim.txt" "$C/victim.orig"
    mkdir "$C/victim-dir"
    echo "inside" >"$C/victim-dir/kept.txt"
}

case_links_planted_where_samples_go_are_never_followed() {
    victims
    mkdir "$C/trap"
    ln -s "$C/victim.txt" "$C/trap/fix%2Fgray.jpg.png"
    ln -s "$C/victim-dir" "$C/trap/fix%2Frgb.png.png"
    ln -s "$C/no-such-target" "$C/trap/fix%2Fpalette.png.png"
    mkdir "$C/trap/fix%2Fexif_rot1.jpg.png"
    must_fail 1 shardcat "$T/png" --out "$C/trap"
    for name in "fix%2Fgray.jpg.png" "fix%2Frgb.png.png" "fix%2Fpalette.png.png"; do
        must_say "cannot write '$C/trap/$name': a symbolic link is in the way" "$T/err"
        [ -L "$C/trap/$name" ] || die "the link '$name' was replaced"
    done
    must_say "cannot write '$C/trap/fix%2Fexif_rot1.jpg.png': a directory is in the way" "$T/err"
    cmp -s "$C/victim.txt" "$C/victim.orig" || die "the file a link points to was changed"
    [ "$(ls -A "$C/victim-dir")" = kept.txt ] || die "the directory a link points to was changed"
    [ ! -e "$C/no-such-target" ] || die "a dangling link's target was created"
    # the count says what is there: n samples, 4 of them not written
    must_say "wrote $((n - 4)) samples to '$C/trap'; 4 could not be written" "$T/err"
    [ "$(find "$C/trap" -maxdepth 1 -type f -name '*.png' | wc -l)" -eq $((n - 4)) ] ||
        die "expected $((n - 4)) files"
    [ -z "$(find "$C/trap" -name '.shardcat-*')" ] || die "a temporary file was left behind"
}

case_a_hard_link_in_dir_is_replaced_not_written_through() {
    victims
    shardcat "$T/png" --out "$C/out" 2>"$T/err"
    rm "$C/out/fix%2Fgray16.png.png"
    ln "$C/victim.txt" "$C/out/fix%2Fgray16.png.png"
    shardcat "$T/png" "fix/gray16.png" --out "$C/out" 2>"$T/err"
    cmp -s "$C/victim.txt" "$C/victim.orig" || die "a hard-linked file was written through"
    "$PYTHON" -c 'from PIL import Image; import sys; Image.open(sys.argv[1]).load()' \
        "$C/out/fix%2Fgray16.png.png" || die "the sample was not written"
    [ "$(ls "$C/out" | wc -l)" -eq "$n" ] || die "a second run into DIR changed its count of files"
}

# ---- long keys -------------------------------------------------------------------
a200=$(printf 'a%.0s' $(seq 200))
b200=$(printf 'b%.0s' $(seq 200))
c247=$(printf 'c%.0s' $(seq 247))
mkdir -p "$T/long/$a200/$b200"
cp "$F/rgb.png" "$T/long/$a200/$b200/one.png"
cp "$F/rgb.jpg" "$T/long/$a200/$b200/two.png"
cp "$F/rgb.png" "$T/long/${c247}.png"          # a 251-byte key: a 255-byte name
cp "$F/gray.jpg" "$T/long/${c247}x.png"        # 252 bytes: one too many
cp "$F/rgb.png" "$T/long/short.png"
shardify "$T/long" "$T/longds" --size 16 --quiet
# check_names DIR N: DIR's names and its keys.tsv (N shortened names) give back every key
check_names() {
    "$PYTHON" - "$1" "$T/longds/index.jsonl" "$2" <<'PY'
import json, os, sys, urllib.parse
out, index, listed_want = sys.argv[1], sys.argv[2], int(sys.argv[3])
keys = {json.loads(l)["key"].encode() for l in open(index, "rb")}
lines = open(os.path.join(out, "keys.tsv"), "rb").read().decode().splitlines()
assert lines[0] == "file\tkey", lines[0]
listed = dict(l.split("\t") for l in lines[1:])
assert len(listed) == len(lines) - 1 == listed_want, lines
assert lines[1:] == sorted(lines[1:]), "keys.tsv is not sorted"
got = set()
for name in os.listdir(out):
    if name == "keys.tsv":
        continue
    assert len(name.encode()) <= 255, name
    if name in listed:
        assert "%~" in name, name
        got.add(urllib.parse.unquote_to_bytes(listed[name]))
    else:
        assert "%~" not in name, name
        got.add(urllib.parse.unquote_to_bytes(name[:-len(".png")]))
assert got == keys, (sorted(got - keys), sorted(keys - got))
PY
}

case_keys_too_long_for_a_file_name_are_listed_in_keys_tsv() {
    [ "$(json "$T/longds/manifest.json" "d['counts']['samples']")" -eq 5 ] || die "long keys rejected"
    shardcat "$T/longds" --out "$C/longcat" 2>"$T/err" || { cat "$T/err" >&2; die "shardcat failed"; }
    must_say "wrote 5 samples" "$T/err"
    [ -f "$C/longcat/${c247}.png.png" ] || die "a 255-byte name was shortened"
    [ -f "$C/longcat/keys.tsv" ] || die "no keys.tsv"
    check_names "$C/longcat" 3 || die "the names and keys.tsv do not give back every key"
}

case_a_second_run_into_the_same_dir_keeps_keys_tsv_whole() {
    shardcat "$T/longds" --out "$C/longcat" 2>"$T/err" || { cat "$T/err" >&2; die "shardcat failed"; }
    shardcat "$T/longds" "$a200/$b200/one.png" "short.png" --out "$C/longcat" 2>"$T/err" ||
        { cat "$T/err" >&2; die "shardcat failed"; }
    check_names "$C/longcat" 3 || die "keys.tsv lost or repeated names"
}

case_a_keys_tsv_that_is_a_link_is_refused() {
    victims
    mkdir "$C/longcat"
    ln -s "$C/victim.txt" "$C/longcat/keys.tsv"
    must_fail 1 shardcat "$T/longds" --out "$C/longcat"
    must_say "cannot read '$C/longcat/keys.tsv': it is a symbolic link" "$T/err"
    cmp -s "$C/victim.txt" "$C/victim.orig" || die "keys.tsv was written through a link"
}

run_cases
