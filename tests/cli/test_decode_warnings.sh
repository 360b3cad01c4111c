# test_decode_warnings.sh - a decoder warning that loses no pixel data keeps
# the sample (the warning on its index line, counted in counts.warned and the
# summaries), with pixels equal to djpeg's; a warning after which pixels would
# be invented or wrong rejects the file with its reason.  The warnings survive
# --resume and shardcheck checks their count.
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SRC=$T/src
DST=$T/dst
command -v djpeg >/dev/null 2>&1 || die "djpeg not found (Debian: libjpeg-turbo-progs; scripts/deps.sh)"

# sorted key order (--no-shuffle): the warned files first, so that they are
# in the first shards, which --resume adopts below
mkdir -p "$SRC/a_warned" "$SRC/b_bad" "$SRC/c_clean"
for f in junk_before_dqt.jpg jfif_v2.jpg adobe_transform.jpg zeroed_sos.jpg \
         gray_with_plte.png rgba_with_trns.png iend_data.png extra_zlib.png 1_trns.png; do
    cp "$F/$f" "$SRC/a_warned/$f"
done
for f in junk_after_scan.jpg bad_progression.jpg truncated.jpg trns_too_long.png \
         trns_out_of_range.png adler_mismatch.png; do
    cp "$F/$f" "$SRC/b_bad/$f"
done
i=0
while [ $i -lt 12 ]; do cp "$F/rgb.jpg" "$SRC/c_clean/rgb$i.jpg"; i=$((i + 1)); done
cp "$F/rgb.png" "$SRC/c_clean/rgb.png"

# stored at their own size, losslessly: the stored pixels are the decoder's
# 8-bit RGB: the references are djpeg's PPMs and the PNGs composited over white
# (16K shards: about one record each)
OPTS="--size 4096 --no-upscale --codec png --no-shuffle --shard-size 16K --threads 1 --pixels rgb --depth 8"

# the dataset every case reads: its summary and messages for the first case
shardify "$SRC" "$DST" $OPTS --json >"$T/summary.json" 2>"$T/dst.err"

case_warned_files_are_samples_their_warning_on_the_index_line_and_in_the_counts() {
    "$PYTHON" - "$DST" "$T/summary.json" "$SHARDKIT_TOP/manifests" <<'EOF'
import json, os, sys
import jsonschema
dst, summary, schemas = sys.argv[1:4]
warned = {
    "a_warned/junk_before_dqt.jpg": "JPEG warning: 3 extraneous bytes before marker 0xdb",
    "a_warned/jfif_v2.jpg": "JPEG warning: unknown JFIF revision number 2.01",
    "a_warned/adobe_transform.jpg": "JPEG warning: unknown Adobe color transform code 7",
    "a_warned/zeroed_sos.jpg": "JPEG warning: invalid SOS parameters for sequential JPEG",
    "a_warned/gray_with_plte.png": "PNG warning: PLTE: ignored in grayscale PNG",
    "a_warned/rgba_with_trns.png": "PNG warning: tRNS: invalid with alpha channel",
    "a_warned/iend_data.png": "PNG warning: IEND: invalid",
    "a_warned/extra_zlib.png": "PNG warning: IDAT: Extra compressed data",
    "a_warned/1_trns.png": "PNG warning: tRNS chunk has out-of-range samples for bit_depth",
}
rejected = {
    "b_bad/junk_after_scan.jpg": "corrupt JPEG data: 100 extraneous bytes before marker 0xd9",
    "b_bad/bad_progression.jpg": "corrupt JPEG data: inconsistent progression sequence for "
                                 "component 0 coefficient 0",
    "b_bad/truncated.jpg": "truncated JPEG",
    "b_bad/trns_too_long.png": "corrupt PNG: tRNS: invalid",
    "b_bad/trns_out_of_range.png": "corrupt PNG: tRNS chunk has out-of-range samples for "
                                   "bit_depth",
    "b_bad/adler_mismatch.png": "corrupt PNG: IDAT: incorrect data check",
}
m = json.load(open(os.path.join(dst, "manifest.json")))
jsonschema.validate(m, json.load(open(os.path.join(schemas, "manifest.schema.json"))))
line_schema = json.load(open(os.path.join(schemas, "index-line.schema.json")))
raw = open(os.path.join(dst, "index.jsonl")).read().splitlines()
lines = [json.loads(l) for l in raw]
for l in lines:
    jsonschema.validate(l, line_schema)
got = {l["key"]: l.get("warning") for l in lines}
for k, w in warned.items():
    assert got.get(k) == w, "%s: stored with warning %r, expected %r" % (k, got.get(k), w)
# only warned samples carry the field: other lines are as they always were
for l, text in zip(lines, raw):
    if l["key"] not in warned:
        assert "warning" not in text, text
assert m["counts"]["warned"] == len(warned), m["counts"]
assert m["counts"]["samples"] == len(warned) + 13, m["counts"]
reasons = {r["key"]: r["reason"] for r in m["rejected"]}
assert reasons == rejected, reasons
s = json.load(open(summary))
assert s["warned"] == len(warned) and s["rejected"] == len(rejected), s
assert {w["key"]: w["warning"] for w in s["warnings"]} == warned, s["warnings"]
EOF
    must_say "shardify: 9 samples stored despite a decoder warning (no pixel data lost):" "$T/dst.err"
    must_say "  warning 'a_warned/junk_before_dqt.jpg': JPEG warning: 3 extraneous bytes before marker 0xdb" "$T/dst.err"
    must_say "  rejected 'b_bad/junk_after_scan.jpg': corrupt JPEG data: 100 extraneous bytes" "$T/dst.err"
}

case_stored_pixels_equal_djpegs_and_the_references_of_the_warned_pngs() {
    shardcat "$DST" --out "$C/out" >/dev/null
    for f in junk_before_dqt jfif_v2 adobe_transform zeroed_sos; do
        # djpeg exits 2 after a warning (EXIT_WARNING), with the whole image written
        must_fail 2 djpeg -ppm -outfile "$C/$f.ppm" "$SRC/a_warned/$f.jpg"
        [ -s "$T/err" ] && [ -s "$C/$f.ppm" ] || die "djpeg did not warn about $f.jpg"
    done
    "$PYTHON" - "$C" "$F" <<'EOF'
import sys
from PIL import Image
t, fixtures = sys.argv[1:3]
def stored(key):
    return Image.open("%s/out/%s.png" % (t, key.replace("/", "%2F")))
for f in ("junk_before_dqt", "jfif_v2", "adobe_transform", "zeroed_sos"):
    got, want = stored("a_warned/%s.jpg" % f), Image.open("%s/%s.ppm" % (t, f))
    assert got.mode == "RGB" and got.size == want.size, (f, got.mode, got.size, want.size)
    assert got.tobytes() == want.tobytes(), "%s: stored pixels differ from djpeg's" % f
for f in ("gray_with_plte", "iend_data", "extra_zlib", "rgba_with_trns", "1_trns"):
    got = stored("a_warned/%s.png" % f)
    want = Image.open("%s/%s.png.ref.ppm" % (fixtures, f))
    diff = max(abs(a - b) for a, b in zip(got.tobytes(), want.tobytes()))
    assert got.size == want.size and diff <= 1, "%s: differs by %d" % (f, diff)
EOF
}

case_shardcheck_verifies_the_warned_samples_and_checks_counts_warned() {
    shardcheck "$DST" --deep --source "$SRC" >"$C/stdout" || { cat "$C/stdout" >&2; die "does not verify"; }
    cp -r "$DST" "$C/d"
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["warned"] = 3
json.dump(m, open(p, "w"), indent=2)' "$C/d"
    must_fail 1 shardcheck "$C/d"
    must_say "counts.warned: index.jsonl has 9 samples stored despite a decoder warning, manifest says 3" "$T/stdout"
}

case_from_an_archive_too_a_hard_link_to_a_warned_file_included() {
    "$PYTHON" - "$SRC/a_warned" "$C/warned.tar" <<'EOF'
import os, sys, tarfile
src, out = sys.argv[1:3]
with tarfile.open(out, "w") as t:
    for f in sorted(os.listdir(src)):
        t.add(os.path.join(src, f), arcname="w/" + f)
    link = tarfile.TarInfo("w/link.jpg")
    link.type = tarfile.LNKTYPE
    link.linkname = "w/junk_before_dqt.jpg"
    t.addfile(link)
EOF
    shardify "$C/warned.tar" "$C/tar" --size 32 --json --quiet >"$C/tar.json"
    [ "$(json "$C/tar.json" "d['warned'] == d['samples'] == 10 and d['rejected'] == 0")" = True ] ||
        die "not every archive sample kept its warning: $(cat "$C/tar.json")"
    grep -F '"key":"w/link.jpg"' "$C/tar/index.jsonl" |
        grep -qF '"warning":"JPEG warning: 3 extraneous bytes before marker 0xdb"' ||
        die "the hard link lost its target's warning"
    shardcheck "$C/tar" --source "$C/warned.tar" >"$C/stdout" ||
        { cat "$C/stdout" >&2; die "the archive's dataset does not verify"; }
}

case_the_warnings_survive_resume_byte_identical_to_an_uninterrupted_run() {
    if ! command -v strace >/dev/null 2>&1 || ! strace -f -o /dev/null true 2>/dev/null; then
        echo "SKIP: strace cannot run here: --resume part"
        return 0
    fi
    C=$(cd "$C" && pwd -P)  # strace matches the paths as the syscalls spell them
    set +e
    # killed when the last file is read (read-ahead opens it well before):
    # the first shards are finished
    strace -f -o "$C/strace.log" -P "$(cd "$SRC" && pwd -P)/c_clean/rgb9.jpg" -e trace=read \
        -e inject=read:signal=KILL:when=1 shardify "$SRC" "$C/k" $OPTS --quiet
    got=$?
    set -e
    [ "$got" -eq 137 ] || die "the run was not killed (exit $got)"
    [ ! -e "$C/k/manifest.json" ] || die "a manifest after the kill"
    [ -e "$C/k/shard-000007.shard" ] || die "expected the warned samples' shards to be finished"
    shardify "$SRC" "$C/k" $OPTS --resume --json >"$C/resume.json" 2>"$T/err" ||
        { cat "$T/err" >&2; die "--resume failed"; }
    [ "$(json "$C/resume.json" 'd["reused_shards"] >= 9 and d["warned"] == 9')" = True ] ||
        die "resume did not adopt the warned samples' shards: $(cat "$C/resume.json")"
    same_tree "$DST" "$C/k"
}

run_cases
