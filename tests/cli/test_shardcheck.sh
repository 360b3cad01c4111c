# test_shardcheck.sh - shardcheck on real shardify output: every pass agrees
# with a clean dataset, and each kind of damage the issue lists is caught
# with exit 1 and a message naming the shard, record or key.
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SRC=$T/src
DST=$T/dst

# ---- a small source: fixtures (labelled by directory), rejects, an ignored
# file, awkward names, and 40 photos of the photo sample.
mkdir -p "$SRC/fix" "$SRC/bad" "$SRC/photo"
for f in rgb.jpg gray.jpg cmyk_adobe.jpg exif_rot6.jpg progressive.jpg gray16.png rgb.png \
         palette.png interlaced.png rgba.png; do
    cp "$F/$f" "$SRC/fix/$f"
done
cp "$F/rgb.jpg" "$SRC/fix/a b ü.jpg"
cp "$F/truncated.jpg" "$F/text.jpg" "$SRC/bad/"
echo "not an image" >"$SRC/README.txt"
# every apostrophe name, then the first photos in name order
ls "$SAMPLE" | grep "'" | head -n 4 >"$T/pick"
ls "$SAMPLE" | grep -v "'" | grep -i '\.jpe\?g$' | head -n 36 >>"$T/pick"
while IFS= read -r f; do cp "$SAMPLE/$f" "$SRC/photo/$f"; done <"$T/pick"
shard_size=48K

# the datasets the cases read: the source shardified into several shards
# (jpeg), and as raw and png
shardify "$SRC" "$DST" --size 64 --shard-size $shard_size --quiet
nshards=$(json "$DST/manifest.json" "len(d['shards'])")
[ "$nshards" -ge 3 ] || die "expected at least 3 shards, got $nshards"
nsamples=$(json "$DST/manifest.json" "d['counts']['samples']")
for codec in raw png; do
    shardify "$SRC" "$T/$codec" --size 48 --codec $codec --quiet
done
# the shard the damage cases damage
shard=shard-000001.shard
size=$(wc -c <"$DST/$shard")

case_a_clean_dataset_verifies_default_pass_and_every_pass() {
    shardcheck "$DST" >"$C/stdout"
    must_say "verified" "$C/stdout"
    must_say "GB/s per core" "$C/stdout"
    shardcheck "$DST" --deep --source "$SRC" --fidelity 50 --visitation 1,2,3,8 --threads 2 \
        --json >"$C/all.json"
    [ "$(json "$C/all.json" "d['verified']")" = True ] || die "full check did not verify"
    [ "$(json "$C/all.json" "d['rates']['hash']['bytes'] > 0 and d['rates']['hash']['gb_per_s'] > 0")" = True ] ||
        die "no hashing rate in the JSON report"
    [ "$(json "$C/all.json" "len(d['fidelity']['samples']) == min(50, $nsamples)")" = True ] ||
        die "fidelity did not check 50 samples"
    [ "$(json "$C/all.json" "all(v['passed'] for v in d['visitation']['world_sizes'])")" = True ] ||
        die "visitation failed"
    [ "$(json "$C/all.json" "d['source']['labels_checked']")" = True ] || die "labels not checked"
}

# fresh: a copy of the clean dataset ($C/d) and of its source ($C/s), to damage
fresh() { rm -rf "$C/d" "$C/s"; cp -r "$DST" "$C/d"; cp -r "$SRC" "$C/s"; }

# ---- a byte flipped anywhere in a shard -----------------------------------------
case_a_byte_flipped_anywhere_in_a_shard_header_records_footer_trailer() {
    footer=$("$PYTHON" -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); print(struct.unpack("<Q", b[-40:-32])[0])' "$DST/$shard")
    positions="0 7 8 12 16 24 31 32 33 40 100 $((footer - 1)) $footer $((footer + 8)) $((footer + 30))
               $((size - 48)) $((size - 41)) $((size - 40)) $((size - 30)) $((size - 16)) $((size - 9))
               $((size - 8)) $((size - 1))"
    i=1
    while [ $i -le 12 ]; do positions="$positions $((size * i / 13))"; i=$((i + 1)); done
    fresh
    cp "$DST/$shard" "$C/orig.shard"
    for pos in $positions; do
        "$PYTHON" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[int(sys.argv[2])]^=0x5a; open(p,"wb").write(b)' \
            "$C/d/$shard" "$pos"
        must_fail 1 shardcheck "$C/d"
        must_say "$shard: xxh3 is " "$T/stdout"
        # the structure alone (header, frames, footer, trailer checksums) also catches it
        must_fail 1 shardcheck "$C/d" --deep --json
        "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
rest = [p for p in d["problems"] if "xxh3 is " not in p["message"]]
assert rest, "only the whole-file hash caught a flip at byte " + sys.argv[2]
assert all(p["shard"] == 1 for p in rest), rest' "$T/stdout" "$pos" || die "flip at byte $pos"
        cp "$C/orig.shard" "$C/d/$shard"
    done
}

case_a_truncated_shard() {
    fresh
    head -c $((size - 100)) "$DST/$shard" >"$C/d/$shard"
    must_fail 1 shardcheck "$C/d"
    must_say "$shard: $((size - 100)) bytes, manifest says $size" "$T/stdout"
    must_say "$shard: bad trailer magic" "$T/stdout"
}

case_a_missing_shard() {
    fresh
    rm "$C/d/shard-000002.shard"
    must_fail 1 shardcheck "$C/d"
    must_say "shard-000002.shard: missing" "$T/stdout"
}

# ---- the source -------------------------------------------------------------------
case_an_extra_file_in_src() {
    fresh
    cp "$F/rgb.jpg" "$C/s/fix/extra.jpg"
    must_fail 1 shardcheck "$C/d" --source "$C/s"
    must_say "source: 'fix/extra.jpg' is in SRC but is neither a sample nor a listed reject" "$T/stdout"
}

case_a_file_in_src_changed_after_sharding_and_one_removed() {
    fresh
    printf 'x' >>"$C/s/fix/gray.jpg"
    rm "$C/s/fix/rgb.png"
    must_fail 1 shardcheck "$C/d" --source "$C/s"
    must_say "source: 'fix/gray.jpg' changed since sharding: " "$T/stdout"
    must_say "source: 'fix/rgb.png' (shard-" "$T/stdout"
    must_say ") is not in SRC" "$T/stdout"
    must_say "source: label 'fix': SRC gives " "$T/stdout"
}

case_a_rejected_file_changed_and_a_new_ignored_file() {
    fresh
    printf 'more text' >>"$C/s/bad/text.jpg"
    echo "notes" >"$C/s/notes.txt"
    must_fail 1 shardcheck "$C/d" --source "$C/s"
    must_say "source: 'bad/text.jpg' changed since sharding: " "$T/stdout"
    must_say "the manifest's rejects say" "$T/stdout"
    must_say "source: SRC has 2 ignored files" "$T/stdout"
}

# edit_labels RULE: a copy of the clean dataset ($C/d) whose config says RULE
edit_labels() {
    rm -rf "$C/d"
    cp -r "$DST" "$C/d"
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["config"]["labels"] = sys.argv[2]
json.dump(m, open(p, "w"), indent=2)' "$C/d" "$1"
}

case_a_label_rule_that_no_longer_gives_the_stored_labels() {
    edit_labels "regex:^(fix|bad)/"
    must_fail 1 shardcheck "$C/d" --source "$SRC"
    must_say "source: 'photo/" "$T/stdout"
    must_say "has label 'photo' in the dataset, its key gives '(none)'" "$T/stdout"
    must_say "source: label 'photo': SRC gives 0 samples, counts.by_label says " "$T/stdout"
    edit_labels "regex:^(fix|bad|photo)/"
    shardcheck "$C/d" --source "$SRC" >"$C/stdout"
    must_say "labels re-derived and checked" "$C/stdout"
}

case_an_archive_source_with_a_name_repeated_inside_it() {
    tar -C "$SRC" -cf "$C/src.tar" .
    tar -C "$SRC" -rf "$C/src.tar" ./fix/rgb.png
    shardify "$C/src.tar" "$C/tar" --size 48 --quiet
    shardcheck "$C/tar" --source "$C/src.tar" --fidelity 50 >"$C/stdout"
    must_say "verified" "$C/stdout"
    must_fail 1 shardcheck "$C/tar" --source "$SRC"
    must_say "source: SRC is a directory, the dataset was made from an archive" "$T/stdout"
    tar -C "$SRC" -cf "$C/other.tar" ./fix ./photo
    must_fail 1 shardcheck "$C/tar" --source "$C/other.tar"
    must_say "source: rejected 'bad/text.jpg' (" "$T/stdout"
}

# ---- the index and the manifest -------------------------------------------------
# Delete index line 5 (0-based 4) and report which sample it was.
drop_line() {
    "$PYTHON" -c '
import json, sys
p = sys.argv[1]
lines = open(p, "rb").read().split(b"\n")[:-1]
gone = json.loads(lines.pop(4))
open(p, "wb").write(b"".join(l + b"\n" for l in lines))
print("shard-%06d.shard record %d (key \x27%s\x27)" % (gone["shard"], gone["record"], gone["key"]))' "$1"
}

# Put index.jsonl's real size and xxh3 (as shardcheck reports it) into the manifest.
fix_index_identity() {
    shardcheck "$1" --json >"$C/fix.json" || true
    "$PYTHON" -c '
import json, os, re, sys
d, report = sys.argv[1], json.load(open(sys.argv[2]))
m = json.load(open(d + "/manifest.json"))
for p in report["problems"]:
    hit = re.match(r"index.jsonl: xxh3 is ([0-9a-f]{16})", p["message"])
    if hit:
        m["index"]["xxh3"] = hit.group(1)
m["index"]["bytes"] = os.path.getsize(d + "/index.jsonl")
json.dump(m, open(d + "/manifest.json", "w"), indent=2)' "$1" "$C/fix.json"
}

case_a_sample_removed_from_the_index() {
    fresh
    gone=$(drop_line "$C/d/index.jsonl")
    damaged "$C/d"  # the index's lines are not the manifest's count of entries
    must_fail 1 shardcheck "$C/d"
    must_say "$gone: not in index.jsonl" "$T/stdout"
    must_say "index.jsonl: xxh3 is " "$T/stdout"
}

case_a_sample_removed_from_the_index_with_its_size_and_hash_fixed_in_the_manifest() {
    fresh
    gone=$(drop_line "$C/d/index.jsonl")
    fix_index_identity "$C/d"
    damaged "$C/d"  # the index's lines are not the manifest's count of entries
    must_fail 1 shardcheck "$C/d"
    must_say "$gone: not in index.jsonl" "$T/stdout"
    must_say "index.jsonl: $((nsamples - 1)) lines, manifest says $nsamples entries" "$T/stdout"
    if grep -q "xxh3 is" "$T/stdout"; then die "the index hash should have been fixed"; fi
}

case_a_duplicated_key_shard_0_copied_under_a_new_name_and_listed_again() {
    fresh
    n=$("$PYTHON" "$SHARDKIT_TOP/tests/cli/index_files.py" duplicate "$C/d") # as a writer would
    must_fail 1 shardcheck "$C/d"
    must_say "duplicate key '" "$T/stdout"
    must_say "': shard-000000.shard record 0 and shard-00000$n.shard record 0" "$T/stdout"
    must_say "shard-00000$n.shard: the header says shard 0, the file name $n" "$T/stdout"
}

case_manifest_counts_that_disagree() {
    fresh
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["by_label"]["fix"] -= 1
m["counts"]["by_label"]["bad"] = m["counts"]["by_label"].get("bad", 0) + 1
json.dump(m, open(p, "w"), indent=2)' "$C/d"
    must_fail 1 shardcheck "$C/d"
    must_say "counts.by_label['fix']: the shards hold " "$T/stdout"
    must_say "counts.by_label['bad']: the shards hold 0 samples, manifest says 1" "$T/stdout"
    fresh
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["samples"] += 1
json.dump(m, open(p, "w"), indent=2)' "$C/d"
    must_fail 1 shardcheck "$C/d"
    must_say "manifest: counts.by_label plus counts.unlabeled differ from counts.samples" "$T/stdout"
}

case_several_tamperings_at_once_every_problem_listed_every_shard_still_hashed() {
    fresh
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["samples"] += 1
m["counts"]["by_label"]["fix"] += 1   # by_label still adds up to counts.samples
del m["rejected"][0]
m["index"]["entries"] = 3
json.dump(m, open(p, "w"), indent=2)
p = sys.argv[1] + "/shard-000001.shard"
b = bytearray(open(p, "rb").read())
b[100] ^= 0x5a
open(p, "wb").write(b)
p = sys.argv[1] + "/index.jsonl"
lines = open(p).readlines()
open(p, "w").writelines(lines[:-1])' "$C/d"
    damaged "$C/d"  # its manifest disagrees with its index on purpose
    must_fail 1 shardcheck "$C/d" --source "$C/s" --json
    "$PYTHON" - "$T/stdout" "$nshards" "$nsamples" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
nshards, nsamples = int(sys.argv[2]), int(sys.argv[3])
messages = [p["message"] for p in d["problems"]]
want = [
    "manifest: shards hold %d samples, counts.samples is %d" % (nsamples, nsamples + 1),
    "manifest: 1 rejects listed, counts.rejected is 2",
    "manifest: index.entries differs from counts.samples",
    "shard-000001.shard: xxh3 is ",
    "index.jsonl: %d lines, manifest says 3 entries" % (nsamples - 1),
    "counts.by_label['fix']: the shards hold ",
    "source: 'bad/",
]
missing = [w for w in want if not any(w in m for m in messages)]
assert not missing, "not listed: %s\nlisted: %s" % (missing, messages)
assert any(p["check"] == "index" and "not in index.jsonl" in p["message"]
           for p in d["problems"]), messages
assert d["rates"]["hash"]["items"] == nshards and d["rates"]["hash"]["bytes"] > 0, d["rates"]
PY
}

# ---- fidelity on every codec ----------------------------------------------------
case_fidelity_on_raw_png_and_jpeg_outputs() {
    for codec in raw png; do
        shardcheck "$T/$codec" --source "$SRC" --fidelity 50 --json >"$C/f.json"
        [ "$(json "$C/f.json" "d['verified'] and all(s['exact'] and s['same_bytes'] for s in d['fidelity']['samples'])")" = True ] ||
            die "$codec fidelity is not exact"
    done
    shardcheck "$DST" --source "$SRC" --fidelity 50 --json >"$C/f.json"
    # jpeg: the same build gives identical bytes (psnr is infinite: null in JSON);
    # the codec's own loss is reported for every sample
    [ "$(json "$C/f.json" "d['verified'] and d['fidelity']['min_psnr'] == 35.0 and all((s['psnr'] is None or s['psnr'] >= 35) and s['loss_psnr'] > 10 for s in d['fidelity']['samples'])")" = True ] ||
        die "jpeg fidelity below 35 dB"
}

# Change one config value in a copy of dataset $1 (a Python expression on m).
edit_config() {
    rm -rf "$C/d"
    cp -r "$1" "$C/d"
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
exec(sys.argv[2])
json.dump(m, open(p, "w"), indent=2)' "$C/d" "$2"
}

case_fidelity_catches_stored_pixels_the_pipeline_does_not_make() {
    edit_config "$DST" "m['config']['quality'] = 50"
    must_fail 1 shardcheck "$C/d" --source "$SRC" --fidelity 50
    must_say "against a re-run of the pipeline is below the threshold 35.00 db" "$T/stdout"
    # the background counts where alpha is composited: in 8-bit RGB (auto keeps the alpha)
    shardify "$SRC" "$C/png-rgb" --size 48 --codec png --pixels rgb --quiet
    edit_config "$C/png-rgb" "m['config']['background'] = [0, 0, 0]"
    must_fail 1 shardcheck "$C/d" --source "$SRC" --fidelity 50
    must_say "(key 'fix/rgba.png'): stored pixels differ from a re-run of the pipeline" "$T/stdout"
    edit_config "$T/raw" "m['config']['size'] = 40"
    must_fail 1 shardcheck "$C/d" --source "$SRC" --fidelity 3
    must_say ", the pipeline gives " "$T/stdout"
}

# ---- visitation ------------------------------------------------------------------
case_visitation_with_padding_and_dropping() {
    shardcheck "$DST" --visitation 1,2,3,8,100 --epochs 3 --remainder pad --json >"$C/v.json"
    [ "$(json "$C/v.json" "[v['padded'] for v in d['visitation']['world_sizes']] == [(-(-$nsamples // w)) * w - $nsamples for w in (1, 2, 3, 8, 100)]")" = True ] ||
        die "padding counts are wrong"
    shardcheck "$DST" --visitation 7 --remainder drop --seed 9 --shuffle-buffer 4 >"$C/stdout"
    must_say "visitation: world size 7, 2 epochs: ok" "$C/stdout"
    must_say "$((nsamples % 7)) dropped per epoch" "$C/stdout"
}

# ---- labels from a CSV -----------------------------------------------------------
case_labels_from_a_csv_need_the_csv_to_be_re_derived() {
    (cd "$SRC" && find . -type f -name '*.*' ! -name '*.txt' | sed 's|^\./||' | sort |
        awk '{ print "\"" $0 "\",c" NR % 3 }') >"$C/labels.csv"
    shardify "$SRC" "$C/csv" --size 32 --labels "$C/labels.csv" --quiet
    shardcheck "$C/csv" --source "$SRC" >"$C/stdout"
    must_say "labels the labels came from a CSV file" "$C/stdout"
    shardcheck "$C/csv" --source "$SRC" --labels "$C/labels.csv" >"$C/stdout"
    must_say "labels re-derived and checked" "$C/stdout"
    sed 's/,c1$/,c2/' "$C/labels.csv" >"$C/other.csv"
    must_fail 1 shardcheck "$C/csv" --source "$SRC" --labels "$C/other.csv"
    must_say "source: the labels file is 'file:other.csv:" "$T/stdout"
}

# ---- usage errors exit 2; a dataset or source that cannot be read, 1 --------------
case_usage_errors_exit_2_and_name_the_argument() {
    must_fail 2 shardcheck
    must_fail 2 shardcheck "$DST" --fidelity 5
    must_say "--fidelity needs --source" "$T/err"
    must_fail 2 shardcheck "$DST" --visitation 1,,2
    must_fail 2 shardcheck "$DST" --visitation 0
    must_fail 2 shardcheck "$DST" --remainder sometimes
    must_fail 2 shardcheck -dq "$DST"
    must_say "unknown option '-d'" "$T/err"
    if grep -q "unknown option '$DST'" "$T/err"; then die "the operand was named as the option"; fi
    must_fail 2 shardcheck "$DST" --deep=yes
    must_say "option '--deep' takes no value" "$T/err"
}

case_a_dst_manifest_or_src_that_cannot_be_read_is_not_verified_and_named() {
    # exit 1
    must_fail 1 shardcheck "$C/nonexistent"
    must_say "$C/nonexistent" "$T/err"
    must_fail 1 shardcheck "$DST" --source "$C/nonexistent"
    must_say "$C/nonexistent" "$T/err"
    fresh
    rm "$C/d/manifest.json"
    must_fail 1 shardcheck "$C/d"
    must_say "no manifest" "$T/err"
    echo '{"format": "shardkit", ' >"$C/d/manifest.json"
    must_fail 1 shardcheck "$C/d"
    must_say "manifest.json' line" "$T/stdout"
}

# ---- the acceptance run on a whole sample (the photo sample; real photos too
# when they are here) -----------------------------------------------------------
case_acceptance_on_each_whole_sample() {
    photo_samples >"$C/samples"
    while IFS= read -r sample; do
        say "acceptance: the whole of $sample"
        rm -rf "$C/full"
        shardify "$sample" "$C/full" --size 256 --quiet
        shardcheck "$C/full" >"$C/stdout"
        must_say "verified" "$C/stdout"
        shardcheck "$C/full" --deep --source "$sample" --visitation 1,2,3,8 >"$C/stdout"
        must_say "verified" "$C/stdout"
        must_say "1000 records decoded" "$C/stdout"
    done <"$C/samples"
}

run_cases
