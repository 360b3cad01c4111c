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

say "shardify the source into several shards"
shardify "$SRC" "$DST" --size 64 --shard-size $shard_size --quiet
nshards=$(json "$DST/manifest.json" "len(d['shards'])")
[ "$nshards" -ge 3 ] || die "expected at least 3 shards, got $nshards"
nsamples=$(json "$DST/manifest.json" "d['counts']['samples']")

say "a clean dataset verifies, default pass and every pass"
shardcheck "$DST" >"$T/stdout"
must_say "verified" "$T/stdout"
must_say "GB/s per core" "$T/stdout"
shardcheck "$DST" --deep --source "$SRC" --fidelity 50 --visitation 1,2,3,8 --threads 2 \
    --json >"$T/all.json"
[ "$(json "$T/all.json" "d['verified']")" = True ] || die "full check did not verify"
[ "$(json "$T/all.json" "d['rates']['hash']['bytes'] > 0 and d['rates']['hash']['gb_per_s'] > 0")" = True ] ||
    die "no hashing rate in the JSON report"
[ "$(json "$T/all.json" "len(d['fidelity']['samples']) == min(50, $nsamples)")" = True ] ||
    die "fidelity did not check 50 samples"
[ "$(json "$T/all.json" "all(v['passed'] for v in d['visitation']['world_sizes'])")" = True ] ||
    die "visitation failed"
[ "$(json "$T/all.json" "d['source']['labels_checked']")" = True ] || die "labels not checked"

# fresh copy of the clean dataset (and source) for each damage
fresh() { rm -rf "$T/d" "$T/s"; cp -r "$DST" "$T/d"; cp -r "$SRC" "$T/s"; }

# ---- a byte flipped anywhere in a shard -----------------------------------------
say "a byte flipped anywhere in a shard: header, records, footer, trailer"
shard=shard-000001.shard
size=$(wc -c <"$DST/$shard")
footer=$("$PYTHON" -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); print(struct.unpack("<Q", b[-40:-32])[0])' "$DST/$shard")
positions="0 7 8 12 16 24 31 32 33 40 100 $((footer - 1)) $footer $((footer + 8)) $((footer + 30))
           $((size - 48)) $((size - 41)) $((size - 40)) $((size - 30)) $((size - 16)) $((size - 9))
           $((size - 8)) $((size - 1))"
i=1
while [ $i -le 12 ]; do positions="$positions $((size * i / 13))"; i=$((i + 1)); done
fresh
cp "$DST/$shard" "$T/orig.shard"
for pos in $positions; do
    "$PYTHON" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[int(sys.argv[2])]^=0x5a; open(p,"wb").write(b)' \
        "$T/d/$shard" "$pos"
    must_fail 1 shardcheck "$T/d"
    must_say "$shard: xxh3 is " "$T/stdout"
    # the structure alone (header, frames, footer, trailer checksums) also catches it
    must_fail 1 shardcheck "$T/d" --deep --json
    "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
rest = [p for p in d["problems"] if "xxh3 is " not in p["message"]]
assert rest, "only the whole-file hash caught a flip at byte " + sys.argv[2]
assert all(p["shard"] == 1 for p in rest), rest' "$T/stdout" "$pos" || die "flip at byte $pos"
    cp "$T/orig.shard" "$T/d/$shard"
done

say "a truncated shard"
fresh
head -c $((size - 100)) "$DST/$shard" >"$T/d/$shard"
must_fail 1 shardcheck "$T/d"
must_say "$shard: $((size - 100)) bytes, manifest says $size" "$T/stdout"
must_say "$shard: bad trailer magic" "$T/stdout"

say "a missing shard"
fresh
rm "$T/d/shard-000002.shard"
must_fail 1 shardcheck "$T/d"
must_say "shard-000002.shard: missing" "$T/stdout"

# ---- the source -------------------------------------------------------------------
say "an extra file in SRC"
fresh
cp "$F/rgb.jpg" "$T/s/fix/extra.jpg"
must_fail 1 shardcheck "$T/d" --source "$T/s"
must_say "source: 'fix/extra.jpg' is in SRC but is neither a sample nor a listed reject" "$T/stdout"

say "a file in SRC changed after sharding, and one removed"
fresh
printf 'x' >>"$T/s/fix/gray.jpg"
rm "$T/s/fix/rgb.png"
must_fail 1 shardcheck "$T/d" --source "$T/s"
must_say "source: 'fix/gray.jpg' changed since sharding: " "$T/stdout"
must_say "source: 'fix/rgb.png' (shard-" "$T/stdout"
must_say ") is not in SRC" "$T/stdout"
must_say "source: label 'fix': SRC gives " "$T/stdout"

say "a rejected file changed, and a new ignored file"
fresh
printf 'more text' >>"$T/s/bad/text.jpg"
echo "notes" >"$T/s/notes.txt"
must_fail 1 shardcheck "$T/d" --source "$T/s"
must_say "source: 'bad/text.jpg' changed since sharding: " "$T/stdout"
must_say "the manifest's rejects say" "$T/stdout"
must_say "source: SRC has 2 ignored files" "$T/stdout"

say "a label rule that no longer gives the stored labels"
edit_labels() {
    rm -rf "$T/d"
    cp -r "$DST" "$T/d"
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["config"]["labels"] = sys.argv[2]
json.dump(m, open(p, "w"), indent=2)' "$T/d" "$1"
}
edit_labels "regex:^(fix|bad)/"
must_fail 1 shardcheck "$T/d" --source "$SRC"
must_say "source: 'photo/" "$T/stdout"
must_say "has label 'photo' in the dataset, its key gives '(none)'" "$T/stdout"
must_say "source: label 'photo': SRC gives 0 samples, counts.by_label says " "$T/stdout"
edit_labels "regex:^(fix|bad|photo)/"
shardcheck "$T/d" --source "$SRC" >"$T/stdout"
must_say "labels re-derived and checked" "$T/stdout"

say "an archive source, with a name repeated inside it"
tar -C "$SRC" -cf "$T/src.tar" .
tar -C "$SRC" -rf "$T/src.tar" ./fix/rgb.png
shardify "$T/src.tar" "$T/tar" --size 48 --quiet
shardcheck "$T/tar" --source "$T/src.tar" --fidelity 50 >"$T/stdout"
must_say "verified" "$T/stdout"
must_fail 1 shardcheck "$T/tar" --source "$SRC"
must_say "source: SRC is a directory, the dataset was made from an archive" "$T/stdout"
tar -C "$SRC" -cf "$T/other.tar" ./fix ./photo
must_fail 1 shardcheck "$T/tar" --source "$T/other.tar"
must_say "source: rejected 'bad/text.jpg' (" "$T/stdout"

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
    shardcheck "$1" --json >"$T/fix.json" || true
    "$PYTHON" -c '
import json, os, re, sys
d, report = sys.argv[1], json.load(open(sys.argv[2]))
m = json.load(open(d + "/manifest.json"))
for p in report["problems"]:
    hit = re.match(r"index.jsonl: xxh3 is ([0-9a-f]{16})", p["message"])
    if hit:
        m["index"]["xxh3"] = hit.group(1)
m["index"]["bytes"] = os.path.getsize(d + "/index.jsonl")
json.dump(m, open(d + "/manifest.json", "w"), indent=2)' "$1" "$T/fix.json"
}

say "a sample removed from the index"
fresh
gone=$(drop_line "$T/d/index.jsonl")
must_fail 1 shardcheck "$T/d"
must_say "$gone: not in index.jsonl" "$T/stdout"
must_say "index.jsonl: xxh3 is " "$T/stdout"
say "... and with the index's size and hash fixed in the manifest"
fix_index_identity "$T/d"
must_fail 1 shardcheck "$T/d"
must_say "$gone: not in index.jsonl" "$T/stdout"
must_say "index.jsonl: $((nsamples - 1)) lines, manifest says $nsamples entries" "$T/stdout"
if grep -q "xxh3 is" "$T/stdout"; then die "the index hash should have been fixed"; fi

say "a duplicated key: shard 0 copied under a new name and listed again"
fresh
n=$("$PYTHON" "$SHARDKIT_TOP/tests/cli/index_files.py" duplicate "$T/d") # as a writer would
must_fail 1 shardcheck "$T/d"
must_say "duplicate key '" "$T/stdout"
must_say "': shard-000000.shard record 0 and shard-00000$n.shard record 0" "$T/stdout"
must_say "shard-00000$n.shard: the header says shard 0, the file name $n" "$T/stdout"

say "manifest counts that disagree"
fresh
"$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["by_label"]["fix"] -= 1
m["counts"]["by_label"]["bad"] = m["counts"]["by_label"].get("bad", 0) + 1
json.dump(m, open(p, "w"), indent=2)' "$T/d"
must_fail 1 shardcheck "$T/d"
must_say "counts.by_label['fix']: the shards hold " "$T/stdout"
must_say "counts.by_label['bad']: the shards hold 0 samples, manifest says 1" "$T/stdout"
fresh
"$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
m["counts"]["samples"] += 1
json.dump(m, open(p, "w"), indent=2)' "$T/d"
must_fail 1 shardcheck "$T/d"
must_say "manifest: counts.by_label plus counts.unlabeled differ from counts.samples" "$T/stdout"

say "several tamperings at once: every problem is listed, every shard still hashed"
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
open(p, "w").writelines(lines[:-1])' "$T/d"
must_fail 1 shardcheck "$T/d" --source "$T/s" --json
"$PYTHON" - "$T/stdout" "$nshards" "$nsamples" <<'EOF'
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
EOF

# ---- fidelity on every codec ----------------------------------------------------
say "fidelity on raw, png and jpeg outputs"
for codec in raw png; do
    shardify "$SRC" "$T/$codec" --size 48 --codec $codec --quiet
    shardcheck "$T/$codec" --source "$SRC" --fidelity 50 --json >"$T/f.json"
    [ "$(json "$T/f.json" "d['verified'] and all(s['exact'] and s['same_bytes'] for s in d['fidelity']['samples'])")" = True ] ||
        die "$codec fidelity is not exact"
done
shardcheck "$DST" --source "$SRC" --fidelity 50 --json >"$T/f.json"
# jpeg: the same build gives identical bytes (psnr is infinite: null in JSON);
# the codec's own loss is reported for every sample
[ "$(json "$T/f.json" "d['verified'] and d['fidelity']['min_psnr'] == 35.0 and all((s['psnr'] is None or s['psnr'] >= 35) and s['loss_psnr'] > 10 for s in d['fidelity']['samples'])")" = True ] ||
    die "jpeg fidelity below 35 dB"

# Change one config value in a copy of dataset $1 (a Python expression on m).
edit_config() {
    rm -rf "$T/d"
    cp -r "$1" "$T/d"
    "$PYTHON" -c '
import json, sys
p = sys.argv[1] + "/manifest.json"
m = json.load(open(p))
exec(sys.argv[2])
json.dump(m, open(p, "w"), indent=2)' "$T/d" "$2"
}

say "fidelity catches stored pixels the pipeline does not make"
edit_config "$DST" "m['config']['quality'] = 50"
must_fail 1 shardcheck "$T/d" --source "$SRC" --fidelity 50
must_say "against a re-run of the pipeline is below the threshold 35.00 db" "$T/stdout"
# the background counts where alpha is composited: in 8-bit RGB (auto keeps the alpha)
shardify "$SRC" "$T/png-rgb" --size 48 --codec png --pixels rgb --quiet
edit_config "$T/png-rgb" "m['config']['background'] = [0, 0, 0]"
must_fail 1 shardcheck "$T/d" --source "$SRC" --fidelity 50
must_say "(key 'fix/rgba.png'): stored pixels differ from a re-run of the pipeline" "$T/stdout"
edit_config "$T/raw" "m['config']['size'] = 40"
must_fail 1 shardcheck "$T/d" --source "$SRC" --fidelity 3
must_say ", the pipeline gives " "$T/stdout"

# ---- visitation ------------------------------------------------------------------
say "visitation with padding and dropping"
shardcheck "$DST" --visitation 1,2,3,8,100 --epochs 3 --remainder pad --json >"$T/v.json"
[ "$(json "$T/v.json" "[v['padded'] for v in d['visitation']['world_sizes']] == [(-(-$nsamples // w)) * w - $nsamples for w in (1, 2, 3, 8, 100)]")" = True ] ||
    die "padding counts are wrong"
shardcheck "$DST" --visitation 7 --remainder drop --seed 9 --shuffle-buffer 4 >"$T/stdout"
must_say "visitation: world size 7, 2 epochs: ok" "$T/stdout"
must_say "$((nsamples % 7)) dropped per epoch" "$T/stdout"

# ---- labels from a CSV -----------------------------------------------------------
say "labels from a CSV need the CSV to be re-derived"
(cd "$SRC" && find . -type f -name '*.*' ! -name '*.txt' | sed 's|^\./||' | sort |
    awk '{ print "\"" $0 "\",c" NR % 3 }') >"$T/labels.csv"
shardify "$SRC" "$T/csv" --size 32 --labels "$T/labels.csv" --quiet
shardcheck "$T/csv" --source "$SRC" >"$T/stdout"
must_say "labels the labels came from a CSV file" "$T/stdout"
shardcheck "$T/csv" --source "$SRC" --labels "$T/labels.csv" >"$T/stdout"
must_say "labels re-derived and checked" "$T/stdout"
sed 's/,c1$/,c2/' "$T/labels.csv" >"$T/other.csv"
must_fail 1 shardcheck "$T/csv" --source "$SRC" --labels "$T/other.csv"
must_say "source: the labels file is 'file:other.csv:" "$T/stdout"

# ---- usage errors exit 2; a dataset or source that cannot be read, 1 --------------
say "usage errors exit 2 and name the argument"
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
say "a DST, manifest or SRC that cannot be read: not verified (exit 1), named"
must_fail 1 shardcheck "$T/nonexistent"
must_say "$T/nonexistent" "$T/err"
must_fail 1 shardcheck "$DST" --source "$T/nonexistent"
must_say "$T/nonexistent" "$T/err"
fresh
rm "$T/d/manifest.json"
must_fail 1 shardcheck "$T/d"
must_say "no manifest" "$T/err"
echo '{"format": "shardkit", ' >"$T/d/manifest.json"
must_fail 1 shardcheck "$T/d"
must_say "manifest.json' line" "$T/stdout"

# ---- the acceptance run on a whole sample (the photo sample; real photos too
# when they are here) -----------------------------------------------------------
photo_samples >"$T/samples"
while IFS= read -r sample; do
    say "acceptance: the whole of $sample"
    rm -rf "$T/full"
    shardify "$sample" "$T/full" --size 256 --quiet
    shardcheck "$T/full" >"$T/stdout"
    must_say "verified" "$T/stdout"
    shardcheck "$T/full" --deep --source "$sample" --visitation 1,2,3,8 >"$T/stdout"
    must_say "verified" "$T/stdout"
    must_say "1000 records decoded" "$T/stdout"
done <"$T/samples"
say "all shardcheck tests passed"
