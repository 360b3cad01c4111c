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

# the demo dataset every case reads: labels, rejects with reasons, an ignored
# file; more damage: a bit-flipped JPEG and a file that is not what its name
# says.  Converted once ($T/out, its summary and stderr beside it).
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
cp "$SHARDKIT_FIXTURES/bitflip.jpg" "$T/raw/apple/bitflip.jpg"
cp "$SHARDKIT_FIXTURES/bomb.png" "$T/raw/boat/bomb.png"
shardify "$T/raw" "$T/out" --size 64 --shard-size 64K --json >"$T/summary.json" 2>"$T/out.err"

# ---- usage errors name the bad option and exit 2 ---------------------------
case_usage_errors() {
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
    shardify --help >"$C/help"
    must_say "--shard-size" "$C/help"
    must_say "Exit status" "$C/help"
}

# ---- a labelled dataset with broken files ------------------------------------
case_demo_dataset_labels_rejects_with_reasons_ignored_files() {
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
    must_say "rejected 'apple/truncated.jpg': truncated JPEG" "$T/out.err"
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
}

case_each_codecs_default_zstd_level_raw_is_written_to_be_read_fast() {
    # and the manifest says so
    shardify "$T/raw" "$C/def_raw" --size 32 --codec raw --quiet
    [ "$(json "$C/def_raw/manifest.json" 'd["config"]["zstd_level"]')" = -100 ] ||
        die "raw default level: $(json "$C/def_raw/manifest.json" 'd["config"]["zstd_level"]')"
    shardify "$T/raw" "$C/def_png" --size 32 --codec png --quiet
    [ "$(json "$C/def_png/manifest.json" 'd["config"]["zstd_level"]')" = 3 ] || die "png default level"
    [ "$(json "$T/out/manifest.json" 'd["config"]["zstd_level"]')" = 3 ] || die "jpeg default level"
    shardify "$T/raw" "$C/lvl_raw" --size 32 --codec raw --zstd-level 5 --quiet
    [ "$(json "$C/lvl_raw/manifest.json" 'd["config"]["zstd_level"]')" = 5 ] || die "explicit level"
    # a fast level costs bytes: the explicit level-5 shards are smaller than the default's
    [ "$(json "$C/lvl_raw/manifest.json" 'sum(s["bytes"] for s in d["shards"])')" -lt \
      "$(json "$C/def_raw/manifest.json" 'sum(s["bytes"] for s in d["shards"])')" ] ||
        die "level 5 is not smaller than the raw default"
    shardcheck --deep "$C/def_raw" >/dev/null || die "default raw shards do not check"
    must_fail 2 shardify --zstd-level 0 a b
    must_say "--zstd-level" "$T/err"
}

case_geometry_short_side_crop_no_upscale() {
    "$PYTHON" - "$T/out/index.jsonl" 64 <<'PY'
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    assert min(s["width"], s["height"]) == int(sys.argv[2]), s
PY
    shardify "$T/raw" "$C/crop" --size 48 --fit crop --quiet
    [ "$(json "$C/crop/manifest.json" 'd["counts"]["samples"]')" = 48 ] || die "crop samples"
    "$PYTHON" -c '
import json, sys
for l in open(sys.argv[1]):
    s = json.loads(l)
    assert (s["width"], s["height"]) == (48, 48), s
' "$C/crop/index.jsonl"
    shardify "$T/raw" "$C/noup" --size 400 --no-upscale --fit long --quiet
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
' "$C/noup/index.jsonl" "$T/raw"
}

case_no_shuffle_stores_samples_in_key_order() {
    shardify "$T/raw" "$C/sorted" --size 32 --no-shuffle --quiet
    "$PYTHON" -c '
import json, sys
keys = [json.loads(l)["key"].encode() for l in open(sys.argv[1])]
assert keys == sorted(keys)
' "$C/sorted/index.jsonl"
}

case_an_archive_gives_the_same_samples_as_the_folder_it_holds() {
    (cd "$T/raw" && tar -czf "$C/raw.tar.gz" .)
    shardify "$C/raw.tar.gz" "$C/fromtar" --size 64 --shard-size 64K --quiet
    check_dataset "$C/fromtar"
    cmp "$T/out/index.jsonl" "$C/fromtar/index.jsonl" || die "archive index differs from folder index"
    for f in $(cd "$T/out" && ls shard-*.shard); do
        cmp -s "$T/out/$f" "$C/fromtar/$f" || die "archive shard $f differs"
    done
    [ "$(json "$C/fromtar/manifest.json" 'd["source"]["kind"]')" = archive ] || die "source kind"
}

case_a_file_name_that_is_not_utf8_keeps_its_bytes() {
    mkdir -p "$C/odd/c"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/odd/c/$(printf 'caf\351.jpg')"
    shardify "$C/odd" "$C/oddout" --size 16 --quiet
    [ "$(json "$C/oddout/manifest.json" 'd["counts"]["samples"]')" = 1 ] || die "odd name lost"
    grep -q '"key_hex":"632f636166e92e6a7067"' "$C/oddout/index.jsonl" || die "key_hex missing"
    check_dataset "$C/oddout"
    # a rejected file whose name holds a newline and a non-UTF-8 byte is named on
    # one printable line
    cp "$SHARDKIT_FIXTURES/truncated.jpg" "$C/odd/c/$(printf 'two\nlines\377.jpg')"
    must_fail 1 shardify "$C/odd" "$C/oddfail" --size 16 --on-error fail
    must_say "rejected 'c/two\x0alines\xff.jpg': truncated JPEG" "$T/err"
}

# ---- destinations ------------------------------------------------------------
case_destination_rules_foreign_files_previous_output_overwrite() {
    mkdir -p "$C/foreign" && echo hi >"$C/foreign/notes.txt"
    must_fail 1 shardify "$T/raw" "$C/foreign" --size 32 --quiet
    must_say "holds 'notes.txt', which shardify did not write" "$T/err"
    [ -f "$C/foreign/notes.txt" ] || die "foreign file touched"
    # a previous output
    shardify "$T/raw" "$C/sorted" --size 32 --no-shuffle --quiet
    must_fail 1 shardify "$T/raw" "$C/sorted" --size 32 --quiet
    must_say "pass --overwrite" "$T/err"
    shardify "$T/raw" "$C/sorted" --size 24 --overwrite --quiet
    [ "$(json "$C/sorted/manifest.json" 'd["config"]["size"]')" = 24 ] || die "overwrite kept old"
    must_fail 1 shardify "$T/raw" "$C/sorted" --size 24 --resume --quiet
    must_say "nothing to resume" "$T/err"
    must_fail 1 shardify "$T/raw" "$T/raw/inside" --size 24 --quiet
    must_say "inside the source" "$T/err"
    must_fail 1 shardify "$C/missing" "$C/x" --quiet
    must_say "cannot read source" "$T/err"
}

case_on_error_fail_publishes_nothing() {
    must_fail 1 shardify "$T/raw" "$C/strict" --size 32 --on-error fail --no-shuffle --quiet
    must_say "rejected 'apple/bitflip.jpg'" "$T/err"
    [ ! -e "$C/strict/manifest.json" ] || die "a manifest was published"
}

case_json_of_a_failed_run_gives_the_counts_it_reached_not_zeros() {
    must_fail 1 shardify "$T/raw" "$C/strict2" --size 32 --on-error fail --json
    "$PYTHON" - "$T/stdout" "$T/summary.json" <<'PY' || die "failed run: counts"
import json, sys
d, ok = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["status"] == "failed" and d["error"].startswith("rejected '"), d
assert d["candidates"] == ok["candidates"] > 0, (d, ok["candidates"])
assert d["ignored"] >= 1 and d["labels"] == ok["labels"] == 4, d
assert d["threads"] >= 1 and d["seconds"] > 0, d
assert d["samples"] + d["rejected"] <= d["candidates"], d
PY
    [ ! -e "$C/strict2/manifest.json" ] || die "a manifest was published"
}

case_a_labels_csv_that_cannot_be_read_fails_the_run_and_names_it() {
    # exit 1, nothing written
    must_fail 1 shardify "$T/raw" "$C/nolabels" --labels "$C/no-such.csv"
    must_say "label file '$C/no-such.csv' does not exist" "$T/err"
    [ ! -e "$C/nolabels" ] || die "DST was created for a run that could not start"
}

case_text_taken_from_libarchive_is_one_line() {
    # no newline in --json, no blank line on stderr: a zip member larger than
    # its declared size (libarchive's message ends in "\n")
    "$PYTHON" - "$C/badsize.zip" "$SHARDKIT_FIXTURES/rgb.jpg" <<'PY'
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
    shardify "$C/badsize.zip" "$C/badzip" --size 16 --json >"$C/badzip.json" 2>"$C/badzip.err"
    set -e
    "$PYTHON" - "$C/badzip.json" <<'PY' || { cat "$C/badzip.json" >&2; die "a message is not one line"; }
import json, sys
d = json.load(open(sys.argv[1]))
texts = [d.get("error", "")] + [r["reason"] for r in d["rejects"]]
assert any("wrong size" in t for t in texts), texts
assert all("\n" not in t and "\r" not in t and t == t.rstrip() for t in texts), texts
PY
    if grep -n '^$' "$C/badzip.err" >&2; then die "a blank line on stderr"; fi
}

case_a_run_record_that_cannot_be_written_is_a_warning_naming_it() {
    # the dataset is published
    if ! strace_works; then
        echo "SKIP: the run record's failure (strace cannot run here)"
        return 0
    fi
    # strace matches paths as the syscalls spell them: an absolute DST, and the
    # names alone for calls relative to a directory descriptor
    D=$(cd "$C" && pwd -P)/record
    calls=openat,open,creat,rename,renameat,renameat2
    # LeakSanitizer cannot run under ptrace: leaks are left to the other tests
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o /dev/null -e trace=$calls -e inject=$calls:error=EACCES \
        -P "$D/.run.json.tmp" -P ".run.json.tmp" -P "$D/run.json" -P "run.json" \
        shardify "$T/raw" "$D" --size 16 --quiet 2>"$C/err" ||
        { cat "$C/err" >&2; die "the run failed"; }
    must_say "shardify: warning: the run record was not written: " "$C/err"
    must_say "$D/" "$C/err"
    [ -f "$D/manifest.json" ] && [ ! -e "$D/run.json" ] || die "expected a dataset without run.json"
}

# no_sample_sources: an empty source ($C/empty), one whose every candidate is
# rejected ($C/allbad), and a DST the user made for it ($C/badout, empty)
no_sample_sources() {
    mkdir "$C/empty" "$C/allbad" "$C/badout"
    cp "$SHARDKIT_FIXTURES/truncated.jpg" "$C/allbad/b.jpg"
    cp "$SHARDKIT_FIXTURES/text.jpg" "$C/allbad/a.jpg"
}

case_a_run_of_no_sample_publishes_nothing_and_fails() {
    # an empty source, every candidate rejected
    no_sample_sources
    must_fail 1 shardify "$C/empty" "$C/emptyout" --quiet
    must_say "shardify: no candidate images in '$C/empty': an empty dataset is not published (--allow-empty publishes it)" "$T/err"
    [ ! -e "$C/emptyout" ] || die "a run of no sample left '$C/emptyout'"
    must_fail 1 shardify "$C/allbad" "$C/badout" --quiet
    must_say "shardify: none of the 2 candidates is a sample: every one was rejected (the first, 'a.jpg': not an image: unknown signature)" "$T/err"
    [ -z "$(ls -A "$C/badout")" ] || die "a run of no sample left files: $(ls -A "$C/badout")"
}

case_a_run_of_no_sample_with_allow_empty_is_published_with_its_rejects() {
    no_sample_sources
    shardify "$C/empty" "$C/emptyout" --quiet --allow-empty
    [ "$(json "$C/emptyout/manifest.json" 'd["counts"]["samples"]')" = 0 ] || die "empty"
    shardify "$C/allbad" "$C/badout" --quiet --allow-empty
    [ "$(json "$C/badout/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" = "(0, 2)" ] ||
        die "all rejected: $(json "$C/badout/manifest.json" 'd["counts"]')"
}

# ---- the photo sample (1000 photos) -----------------------------------------------
case_photo_sample_1000_samples_apostrophes_determinism_across_threads() {
    shardify "$SAMPLE" "$C/in1" --size 256 --threads 1 --json >"$C/in1.json" 2>/dev/null
    shardify "$SAMPLE" "$C/in2" --size 256 --threads 2 --quiet
    [ "$(json "$C/in1.json" 'd["samples"]')" = 1000 ] || die "photo sample: samples"
    [ "$(json "$C/in1.json" 'd["rejected"]')" = 0 ] || die "photo sample: rejects"
    check_dataset "$C/in1"
    same_tree "$C/in1" "$C/in2"
    for k in "n02966687_carpenter's_kit.JPEG" "n03590841_jack-o'-lantern.JPEG" \
             "n03992509_potter's_wheel.JPEG" "n12057211_yellow_lady's_slipper.JPEG"; do
        grep -qF "\"key\":\"$k\"" "$C/in1/index.jsonl" || die "key $k missing"
    done
}

case_kill_9_mid_run_then_resume_byte_identical_to_the_clean_run() {
    shardify "$SAMPLE" "$C/clean" --size 96 --shard-size 256K --threads 1 --quiet
    shardify "$SAMPLE" "$C/killed" --size 96 --shard-size 256K --threads 1 --quiet &
    pid=$!
    i=0
    while [ ! -f "$C/killed/shard-000004.shard" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
    kill -9 $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
    [ ! -f "$C/killed/manifest.json" ] || die "killed run published a manifest"
    # the work directory keeps the names earlier releases wrote, so that their
    # interrupted runs resume too: the journals' positions and the order's hash
    grep -q '^E.*"plan_start":0,"plan_end":[1-9]' "$C/killed/.shardify/journal-000000.jsonl" ||
        die "journal-000000.jsonl has no end line with plan_start and plan_end"
    grep -q '"plan_xxh3":"[0-9a-f]\{16\}"' "$C/killed/.shardify/state.json" ||
        die "state.json has no plan_xxh3"
    must_fail 1 shardify "$SAMPLE" "$C/killed" --size 96 --shard-size 256K --quiet
    must_say "pass --resume" "$T/err"
    must_fail 1 shardify "$SAMPLE" "$C/killed" --size 97 --shard-size 256K --resume --quiet
    must_say "cannot resume" "$T/err"
    shardify "$SAMPLE" "$C/killed" --size 96 --shard-size 256K --resume --json \
        >"$C/resumed.json" 2>/dev/null
    [ "$(json "$C/resumed.json" 'd["reused_shards"] >= 4')" = True ] ||
        die "resume did not keep the finished shards"
    same_tree "$C/clean" "$C/killed"
    [ ! -e "$C/killed/.shardify" ] || die "work directory left behind"
}

case_a_second_run_on_the_same_destination_is_refused_while_the_first_holds_the_lock() {
    shardify "$SAMPLE" "$C/busy" --size 96 --threads 1 --quiet &
    pid=$!
    i=0
    while [ ! -f "$C/busy/.shardify/state.json" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    must_fail 1 shardify "$SAMPLE" "$C/busy" --size 96 --resume --quiet
    must_say "in use by another shardify run (pid $pid)" "$T/err"
    wait $pid || die "first run failed"
    check_dataset "$C/busy"
}

run_cases
