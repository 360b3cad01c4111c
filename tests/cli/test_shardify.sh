#!/bin/sh
# test_shardify.sh - the shardify command on real files: counts, identity,
# determinism, bad inputs, destinations, archives, resume and the lock.
. "$(dirname "$0")/lib.sh"

# check_dataset DIR: the manifest matches the schema, every listed shard
# exists with the listed size and xxh3 (hashed here, independently, with
# python3-xxhash), shard sample counts add up, the index agrees with the
# manifest, and no shard exceeds the target size by more than one record.
check_dataset() {
    "$PYTHON" - "$1" "$SHARDKIT_TOP/manifests" <<'PY'
import json, os, sys
import jsonschema, xxhash
d, schemas = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(d, "manifest.json")))
jsonschema.validate(m, json.load(open(os.path.join(schemas, "manifest.schema.json"))))
line_schema = json.load(open(os.path.join(schemas, "index-line.schema.json")))
total = 0
for s in m["shards"]:
    data = open(os.path.join(d, s["file"]), "rb").read()
    assert len(data) == s["bytes"], s
    assert xxhash.xxh3_64_hexdigest(data) == s["xxh3"], s
    assert s["bytes"] <= m["config"]["shard_size"] or s["samples"] == 1, s
    total += s["samples"]
assert total == m["counts"]["samples"], (total, m["counts"])
index = open(os.path.join(d, m["index"]["file"]), "rb").read()
assert len(index) == m["index"]["bytes"] and xxhash.xxh3_64_hexdigest(index) == m["index"]["xxh3"]
lines = [json.loads(l) for l in index.decode().splitlines()]
assert len(lines) == m["counts"]["samples"] == m["index"]["entries"]
for l in lines:
    jsonschema.validate(l, line_schema)
per_shard = {}
for l in lines:
    per_shard.setdefault(l["shard"], []).append(l["record"])
for i, s in enumerate(m["shards"]):
    assert per_shard.get(i, []) == list(range(s["samples"])), i
assert len({l.get("key", l.get("key_hex")) for l in lines}) == len(lines), "duplicate keys"
PY
}

# ---- usage errors name the bad option and exit 2 ---------------------------
say "usage errors"
must_fail 2 shardify
must_say "expected SRC and DST" "$T/err"
must_fail 2 shardify --size 0 a b
must_say "--size" "$T/err"
must_fail 2 shardify --fit wide a b
must_say "--fit: 'wide'" "$T/err"
must_fail 2 shardify --codec gif a b
must_say "--codec" "$T/err"
must_fail 2 shardify --quality 101 a b
must_say "--quality" "$T/err"
must_fail 2 shardify --shard-size 12X a b
must_say "--shard-size" "$T/err"
must_fail 2 shardify --threads -1 a b
must_say "--threads" "$T/err"
must_fail 2 shardify --bogus a b
must_say "unknown option '--bogus'" "$T/err"
must_fail 2 shardify --labels 'regex:(' a b
must_say "--labels" "$T/err"
must_fail 2 shardify --resume --overwrite a b
# the offending argument is named, not the operand getopt happens to stand on
must_fail 2 shardify -zz SRC DST
must_say "unknown option '-z'" "$T/err"
if grep -q "unknown option 'SRC'" "$T/err"; then die "an operand was named as the bad option"; fi
must_fail 2 shardify SRC -qz DST
must_say "unknown option '-q'" "$T/err"
must_fail 2 shardify --json=yes SRC DST
must_say "option '--json' takes no value" "$T/err"
must_fail 2 shardify --s 5 SRC DST
must_say "option '--s' is ambiguous: it could be --size, --shard-size, --split, --shuffle-seed" "$T/err"
must_fail 2 shardify SRC DST --size
must_say "option '--size' needs a value" "$T/err"
shardify --help >"$T/help"
must_say "--shard-size" "$T/help"
must_say "Exit status" "$T/help"

# ---- a labelled dataset with broken files ------------------------------------
say "demo dataset: labels, rejects with reasons, ignored files"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
# more damage: a bit-flipped JPEG and a file that is not what its name says
cp "$SHARDKIT_FIXTURES/bitflip.jpg" "$T/raw/apple/bitflip.jpg"
cp "$SHARDKIT_FIXTURES/bomb.png" "$T/raw/boat/bomb.png"
shardify "$T/raw" "$T/out" --size 64 --shard-size 64K --json >"$T/summary.json" 2>"$T/err"
check_dataset "$T/out"
[ "$(json "$T/summary.json" 'd["status"]')" = ok ] || die "status not ok"
[ "$(json "$T/summary.json" 'd["samples"]')" = 48 ] || die "expected 48 samples"
[ "$(json "$T/summary.json" 'd["rejected"]')" = 6 ] || die "expected 6 rejects"
[ "$(json "$T/summary.json" 'd["ignored"]')" = 1 ] || die "README.txt must be ignored"
m="$T/out/manifest.json"
[ "$(json "$m" 'sorted(d["labels"])')" = "['apple', 'boat', 'cloud', 'dune']" ] || die "labels"
[ "$(json "$m" 'd["counts"]["by_label"]')" = "{'apple': 12, 'boat': 12, 'cloud': 12, 'dune': 12}" ] ||
    die "by_label: $(json "$m" 'd["counts"]["by_label"]')"
[ "$(json "$m" 'len(d["shards"]) > 1')" = True ] || die "64K shards: expected several"
reasons=$(json "$m" '"|".join(r["key"] + ": " + r["reason"] for r in d["rejected"])')
for want in "apple/truncated.jpg: truncated JPEG" "boat/empty.jpg: not an image: empty file" \
            "cloud/notes.jpg: not an image: unknown signature" "dune/badcrc.png: " \
            "apple/bitflip.jpg: " "boat/bomb.png: declared"; do
    case "$reasons" in *"$want"*) ;; *) die "no reject '$want' in: $reasons" ;; esac
done
must_say "rejected 'apple/truncated.jpg': truncated JPEG" "$T/err"
# every good image is a sample, under its exact key
"$PYTHON" - "$T/raw" "$T/out" <<'PY'
import json, os, sys
raw, out = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(out, "manifest.json")))
keys = {json.loads(l)["key"] for l in open(os.path.join(out, "index.jsonl"))}
bad = {r["key"] for r in m["rejected"]}
files = {os.path.relpath(os.path.join(r, f), raw) for r, _, fs in os.walk(raw) for f in fs}
images = {f for f in files if not f.endswith(".txt")}
assert keys | bad == images and not keys & bad, (images - keys - bad, keys & bad)
assert "apple/photo 024's.jpg" in keys
PY

say "each codec's default zstd level: raw is written to be read fast, and the manifest says so"
shardify "$T/raw" "$T/def_raw" --size 32 --codec raw --quiet
[ "$(json "$T/def_raw/manifest.json" 'd["config"]["zstd_level"]')" = -100 ] ||
    die "raw default level: $(json "$T/def_raw/manifest.json" 'd["config"]["zstd_level"]')"
shardify "$T/raw" "$T/def_png" --size 32 --codec png --quiet
[ "$(json "$T/def_png/manifest.json" 'd["config"]["zstd_level"]')" = 3 ] || die "png default level"
[ "$(json "$T/out/manifest.json" 'd["config"]["zstd_level"]')" = 3 ] || die "jpeg default level"
shardify "$T/raw" "$T/lvl_raw" --size 32 --codec raw --zstd-level 5 --quiet
[ "$(json "$T/lvl_raw/manifest.json" 'd["config"]["zstd_level"]')" = 5 ] || die "explicit level"
# a fast level costs bytes: the explicit level-5 shards are smaller than the default's
[ "$(json "$T/lvl_raw/manifest.json" 'sum(s["bytes"] for s in d["shards"])')" -lt \
  "$(json "$T/def_raw/manifest.json" 'sum(s["bytes"] for s in d["shards"])')" ] ||
    die "level 5 is not smaller than the raw default"
shardcheck --deep "$T/def_raw" >/dev/null || die "default raw shards do not check"
must_fail 2 shardify --zstd-level 0 a b
must_say "--zstd-level" "$T/err"

say "geometry: short side, crop, no-upscale"
"$PYTHON" - "$T/out/index.jsonl" 64 <<'PY'
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    assert min(s["width"], s["height"]) == int(sys.argv[2]), s
PY
shardify "$T/raw" "$T/crop" --size 48 --fit crop --quiet
[ "$(json "$T/crop/manifest.json" 'd["counts"]["samples"]')" = 48 ] || die "crop samples"
"$PYTHON" -c '
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    assert (s["width"], s["height"]) == (48, 48), s
' "$T/crop/index.jsonl"
shardify "$T/raw" "$T/noup" --size 400 --no-upscale --fit long --quiet
"$PYTHON" -c '
import json, sys
from PIL import Image, ImageOps
raw = sys.argv[2]
for l in open(sys.argv[1]):
    s = json.loads(l)
    w, h = ImageOps.exif_transpose(Image.open(raw + "/" + s["key"])).size
    if max(w, h) <= 400:
        assert (s["width"], s["height"]) == (w, h), (s, w, h)
    else:
        assert max(s["width"], s["height"]) == 400, s
' "$T/noup/index.jsonl" "$T/raw"

say "--no-shuffle stores samples in key order"
shardify "$T/raw" "$T/sorted" --size 32 --no-shuffle --quiet
"$PYTHON" -c '
import json, sys
keys = [json.loads(l)["key"].encode() for l in open(sys.argv[1])]
assert keys == sorted(keys)
' "$T/sorted/index.jsonl"

say "an archive gives the same samples as the folder it holds"
(cd "$T/raw" && tar -czf "$T/raw.tar.gz" .)
shardify "$T/raw.tar.gz" "$T/fromtar" --size 64 --shard-size 64K --quiet
check_dataset "$T/fromtar"
cmp "$T/out/index.jsonl" "$T/fromtar/index.jsonl" || die "archive index differs from folder index"
for f in $(cd "$T/out" && ls shard-*.shard); do
    cmp -s "$T/out/$f" "$T/fromtar/$f" || die "archive shard $f differs"
done
[ "$(json "$T/fromtar/manifest.json" 'd["source"]["kind"]')" = archive ] || die "source kind"

say "a file name that is not UTF-8 keeps its bytes"
mkdir -p "$T/odd/c"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/odd/c/$(printf 'caf\351.jpg')"
shardify "$T/odd" "$T/oddout" --size 16 --quiet
[ "$(json "$T/oddout/manifest.json" 'd["counts"]["samples"]')" = 1 ] || die "odd name lost"
grep -q '"key_hex":"632f636166e92e6a7067"' "$T/oddout/index.jsonl" || die "key_hex missing"
check_dataset "$T/oddout"
# a rejected file whose name holds a newline and a non-UTF-8 byte is named on
# one printable line
cp "$SHARDKIT_FIXTURES/truncated.jpg" "$T/odd/c/$(printf 'two\nlines\377.jpg')"
must_fail 1 shardify "$T/odd" "$T/oddfail" --size 16 --on-error fail
must_say "rejected 'c/two\x0alines\xff.jpg': truncated JPEG" "$T/err"

# ---- destinations ------------------------------------------------------------
say "destination rules: foreign files, previous output, --overwrite"
mkdir -p "$T/foreign" && echo hi >"$T/foreign/notes.txt"
must_fail 1 shardify "$T/raw" "$T/foreign" --size 32 --quiet
must_say "holds 'notes.txt', which shardify did not write" "$T/err"
[ -f "$T/foreign/notes.txt" ] || die "foreign file touched"
must_fail 1 shardify "$T/raw" "$T/sorted" --size 32 --quiet
must_say "pass --overwrite" "$T/err"
shardify "$T/raw" "$T/sorted" --size 24 --overwrite --quiet
[ "$(json "$T/sorted/manifest.json" 'd["config"]["size"]')" = 24 ] || die "overwrite kept old"
must_fail 1 shardify "$T/raw" "$T/sorted" --size 24 --resume --quiet
must_say "nothing to resume" "$T/err"
must_fail 1 shardify "$T/raw" "$T/raw/inside" --size 24 --quiet
must_say "inside the source" "$T/err"
must_fail 1 shardify "$T/missing" "$T/x" --quiet
must_say "cannot read source" "$T/err"

say "--on-error fail publishes nothing"
must_fail 1 shardify "$T/raw" "$T/strict" --size 32 --on-error fail --no-shuffle --quiet
must_say "rejected 'apple/bitflip.jpg'" "$T/err"
[ ! -e "$T/strict/manifest.json" ] || die "a manifest was published"

say "--json of a failed run gives the counts it reached, not zeros"
must_fail 1 shardify "$T/raw" "$T/strict2" --size 32 --on-error fail --json
"$PYTHON" - "$T/stdout" "$T/summary.json" <<'PY' || die "failed run: counts"
import json, sys
d, ok = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["status"] == "failed" and d["error"].startswith("rejected '"), d
assert d["candidates"] == ok["candidates"] > 0, (d, ok["candidates"])
assert d["ignored"] >= 1 and d["labels"] == ok["labels"] == 4, d
assert d["threads"] >= 1 and d["seconds"] > 0, d
assert d["samples"] + d["rejected"] <= d["candidates"], d
PY
[ ! -e "$T/strict2/manifest.json" ] || die "a manifest was published"

say "a --labels CSV that cannot be read fails the run and names it (exit 1, nothing written)"
must_fail 1 shardify "$T/raw" "$T/nolabels" --labels "$T/no-such.csv"
must_say "label file '$T/no-such.csv' does not exist" "$T/err"
[ ! -e "$T/nolabels" ] || die "DST was created for a run that could not start"

say "text taken from libarchive is one line: no newline in --json, no blank line on stderr"
# a zip member larger than its declared size: libarchive's message ends in "\n"
"$PYTHON" - "$T/badsize.zip" "$SHARDKIT_FIXTURES/rgb.jpg" <<'PY'
import struct, sys, zipfile
out, image = sys.argv[1], open(sys.argv[2], "rb").read()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("a/x.jpg", image)
    z.writestr("a/y.jpg", image)
b = bytearray(open(out, "rb").read())
real = struct.unpack("<I", b[22:26])[0]
b[22:26] = struct.pack("<I", real - 100)           # the local header's size
cd = b.find(b"PK\x01\x02")
b[cd + 24:cd + 28] = struct.pack("<I", real - 100)  # and the central directory's
open(out, "wb").write(bytes(b))
PY
set +e
shardify "$T/badsize.zip" "$T/badzip" --size 16 --json >"$T/badzip.json" 2>"$T/badzip.err"
set -e
"$PYTHON" - "$T/badzip.json" <<'PY' || { cat "$T/badzip.json" >&2; die "a message is not one line"; }
import json, sys
d = json.load(open(sys.argv[1]))
texts = [d.get("error", "")] + [r["reason"] for r in d["rejects"]]
assert any("wrong size" in t for t in texts), texts
assert all("\n" not in t and "\r" not in t and t == t.rstrip() for t in texts), texts
PY
if grep -n '^$' "$T/badzip.err" >&2; then die "a blank line on stderr"; fi

say "a run record that cannot be written is a warning naming it; the dataset is published"
if command -v strace >/dev/null 2>&1 && strace -f -o /dev/null true 2>/dev/null; then
    # strace matches paths as the syscalls spell them: an absolute DST, and the
    # names alone for calls relative to a directory descriptor
    D=$(cd "$T" && pwd -P)/record
    calls=openat,open,creat,rename,renameat,renameat2
    # LeakSanitizer cannot run under ptrace: leaks are left to the other tests
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o /dev/null -e trace=$calls -e inject=$calls:error=EACCES \
        -P "$D/.run.json.tmp" -P ".run.json.tmp" -P "$D/run.json" -P "run.json" \
        shardify "$T/raw" "$D" --size 16 --quiet 2>"$T/err" ||
        { cat "$T/err" >&2; die "the run failed"; }
    must_say "shardify: warning: the run record was not written: " "$T/err"
    must_say "$D/" "$T/err"
    [ -f "$D/manifest.json" ] && [ ! -e "$D/run.json" ] || die "expected a dataset without run.json"
else
    echo "SKIP: the run record's failure (strace cannot run here)"
fi

say "a run of no sample publishes nothing and fails (an empty source, every candidate rejected)"
mkdir "$T/empty" "$T/allbad"
must_fail 1 shardify "$T/empty" "$T/emptyout" --quiet
must_say "shardify: no candidate images in '$T/empty': an empty dataset is not published (--allow-empty publishes it)" "$T/err"
[ ! -e "$T/emptyout" ] || die "a run of no sample left '$T/emptyout'"
cp "$SHARDKIT_FIXTURES/truncated.jpg" "$T/allbad/b.jpg"
cp "$SHARDKIT_FIXTURES/text.jpg" "$T/allbad/a.jpg"
mkdir "$T/badout"  # made by the user: kept, empty
must_fail 1 shardify "$T/allbad" "$T/badout" --quiet
must_say "shardify: none of the 2 candidates is a sample: every one was rejected (the first, 'a.jpg': not an image: unknown signature)" "$T/err"
[ -z "$(ls -A "$T/badout")" ] || die "a run of no sample left files: $(ls -A "$T/badout")"
say "... --allow-empty publishes it, with its rejects"
shardify "$T/empty" "$T/emptyout" --quiet --allow-empty
[ "$(json "$T/emptyout/manifest.json" 'd["counts"]["samples"]')" = 0 ] || die "empty"
shardify "$T/allbad" "$T/badout" --quiet --allow-empty
[ "$(json "$T/badout/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" = "(0, 2)" ] ||
    die "all rejected: $(json "$T/badout/manifest.json" 'd["counts"]')"

# ---- the photo sample (1000 photos) -----------------------------------------------
say "photo sample: 1000 samples, apostrophes, determinism across threads"
shardify "$SAMPLE" "$T/in1" --size 256 --threads 1 --json >"$T/in1.json" 2>/dev/null
shardify "$SAMPLE" "$T/in2" --size 256 --threads 2 --quiet
[ "$(json "$T/in1.json" 'd["samples"]')" = 1000 ] || die "photo sample: samples"
[ "$(json "$T/in1.json" 'd["rejected"]')" = 0 ] || die "photo sample: rejects"
check_dataset "$T/in1"
same_tree "$T/in1" "$T/in2"
for k in "n02966687_carpenter's_kit.JPEG" "n03590841_jack-o'-lantern.JPEG" \
         "n03992509_potter's_wheel.JPEG" "n12057211_yellow_lady's_slipper.JPEG"; do
    grep -qF "\"key\":\"$k\"" "$T/in1/index.jsonl" || die "key $k missing"
done

say "kill -9 mid-run, then --resume: byte-identical to the clean run"
shardify "$SAMPLE" "$T/clean" --size 96 --shard-size 256K --threads 1 --quiet
shardify "$SAMPLE" "$T/killed" --size 96 --shard-size 256K --threads 1 --quiet &
pid=$!
i=0
while [ ! -f "$T/killed/shard-000004.shard" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
[ ! -f "$T/killed/manifest.json" ] || die "killed run published a manifest"
# the work directory keeps the names earlier releases wrote, so that their
# interrupted runs resume too: the journals' positions and the order's hash
grep -q '^E.*"plan_start":0,"plan_end":[1-9]' "$T/killed/.shardify/journal-000000.jsonl" ||
    die "journal-000000.jsonl has no end line with plan_start and plan_end"
grep -q '"plan_xxh3":"[0-9a-f]\{16\}"' "$T/killed/.shardify/state.json" ||
    die "state.json has no plan_xxh3"
must_fail 1 shardify "$SAMPLE" "$T/killed" --size 96 --shard-size 256K --quiet
must_say "pass --resume" "$T/err"
must_fail 1 shardify "$SAMPLE" "$T/killed" --size 97 --shard-size 256K --resume --quiet
must_say "cannot resume" "$T/err"
shardify "$SAMPLE" "$T/killed" --size 96 --shard-size 256K --resume --json \
    >"$T/resumed.json" 2>/dev/null
[ "$(json "$T/resumed.json" 'd["reused_shards"] >= 4')" = True ] ||
    die "resume did not keep the finished shards"
same_tree "$T/clean" "$T/killed"
[ ! -e "$T/killed/.shardify" ] || die "work directory left behind"

say "a second run on the same destination is refused while the first holds the lock"
shardify "$SAMPLE" "$T/busy" --size 96 --threads 1 --quiet &
pid=$!
i=0
while [ ! -f "$T/busy/.shardify/state.json" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
must_fail 1 shardify "$SAMPLE" "$T/busy" --size 96 --resume --quiet
must_say "in use by another shardify run (pid $pid)" "$T/err"
wait $pid || die "first run failed"
check_dataset "$T/busy"
echo "all shardify checks passed"
