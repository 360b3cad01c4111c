#!/bin/sh
# test_incremental.sh - shardify --incremental PREV: files added, changed and
# removed between two runs give the dataset a clean run gives (shards and
# index byte for byte, the manifest but for its "lineage"), with the counts
# of what changed; records are reused as bytes, re-framed when only their
# label number moved, converted again when damaged in PREV; a PREV built
# with other options or another format version is refused (or rebuilt in
# full with --incremental-or-full).
. "$(dirname "$0")/lib.sh"

OPTS="--size 32 --shard-size 64K --quiet"

# same_dataset A B: shards, index and run-independent files byte-identical;
# manifest.json identical once B's "lineage" (its last member) is taken out.
same_dataset() {
    for f in $(cd "$1" && ls | grep -v -e '^run.json$' -e '^manifest.json$'); do
        cmp -s "$1/$f" "$2/$f" || die "'$1/$f' and '$2/$f' differ"
    done
    [ "$(cd "$1" && ls | grep -v '^run.json$')" = "$(cd "$2" && ls | grep -v '^run.json$')" ] ||
        die "'$1' and '$2' hold different files"
    "$PYTHON" - "$1/manifest.json" "$2/manifest.json" <<'EOF' || die "manifests of '$1' and '$2' differ beyond the lineage"
import json, sys
a = open(sys.argv[1]).read()
b = open(sys.argv[2]).read()
d = json.loads(b)
assert list(d)[-1] == "lineage", "lineage is not the last member"
# the same text up to the end of "rejected", then only the lineage
cut = b.rindex(',\n  "lineage"')
assert a == b[:cut] + "\n}\n", "texts differ"
EOF
}
lineage() { json "$1/manifest.json" "d['lineage']$2"; }
# valid DIR...: each manifest.json holds to manifests/manifest.schema.json
valid() {
    "$PYTHON" - "$SHARDKIT_TOP/manifests/manifest.schema.json" "$@" <<'EOF' || die "a manifest does not hold to its schema"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for d in sys.argv[2:]:
    jsonschema.validate(json.load(open(d + "/manifest.json")), schema)
EOF
}

say "a labelled source (with rejects), and the dataset it gives"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/src" >/dev/null
shardify $OPTS "$T/src" "$T/prev"
prev_candidates=$(json "$T/prev/manifest.json" 'd["counts"]["samples"] + d["counts"]["rejected"]')
prev_rejects_hashed=$(json "$T/prev/manifest.json" 'sum(1 for r in d["rejected"] if "source_xxh3" in r)')

say "the source changes: 3 files added, 1 changed, 1 removed"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/apple/new_1.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/src/boat/new_2.jpg"
cp "$SHARDKIT_FIXTURES/rgba.png" "$T/src/cloud/new_3.png"
changed=$(cd "$T/src" && ls dune/*.jpg | head -n 1)
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/$changed"
removed=$(cd "$T/src" && ls apple/*.png | head -n 1)
rm "$T/src/$removed"

say "the incremental run equals a clean run, but for the manifest's lineage"
shardify $OPTS --json --incremental "$T/prev" "$T/src" "$T/inc" >"$T/inc.json"
shardify $OPTS "$T/src" "$T/clean"
same_dataset "$T/clean" "$T/inc"
shardcheck --deep --source "$T/src" "$T/inc" >/dev/null || die "the incremental dataset does not verify"

say "the lineage counts what changed and what was reused"
unchanged=$((prev_candidates - 2))
[ "$(lineage "$T/inc" '["added"], d["lineage"]["changed"], d["lineage"]["removed"], d["lineage"]["unchanged"]')" = "(3, 1, 1, $unchanged)" ] ||
    die "lineage: $(lineage "$T/inc" '')"
[ "$(lineage "$T/inc" '["rejected_again"]')" = "$prev_rejects_hashed" ] ||
    die "rejects repeated: $(lineage "$T/inc" '')"
[ "$(lineage "$T/inc" '["reused"] + d["lineage"]["rejected_again"]')" = "$unchanged" ] ||
    die "reused: $(lineage "$T/inc" '')"
[ "$(lineage "$T/inc" '["relabeled"], d["lineage"]["reconverted"]')" = "(0, 0)" ] ||
    die "nothing should be relabeled or reconverted: $(lineage "$T/inc" '')"
prev_id=$("$PYTHON" -c 'import sys, xxhash; print(xxhash.xxh3_64_hexdigest(open(sys.argv[1], "rb").read()))' "$T/prev/manifest.json")
[ "$(lineage "$T/inc" '["previous_manifest_xxh3"]')" = "$prev_id" ] ||
    die "previous_manifest_xxh3 is not the xxh3 of the previous manifest"
[ "$(json "$T/inc.json" 'd["lineage"]')" = "$(lineage "$T/inc" '')" ] ||
    die "--json and the manifest disagree on the lineage"
[ "$(json "$T/inc.json" 'sorted(d["timing"])')" = "['convert', 'copy', 'decode', 'hash', 'publish', 'read', 'scan', 'write']" ] ||
    die "timing: $(json "$T/inc.json" 'd["timing"]')"
shardify --size 32 --shard-size 64K --incremental "$T/prev" "$T/src" "$T/inc-text" 2>"$T/text.err"
must_say "incremental from '$T/prev': 3 added, 1 changed, 1 removed" "$T/text.err"
must_say "per-file work (thread-seconds): read" "$T/text.err"

say "a new class renumbers the labels: records are re-framed, not decoded"
mkdir "$T/src/aardvark"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/aardvark/a.jpg"
shardify $OPTS --incremental "$T/inc" "$T/src" "$T/relabel"
shardify $OPTS "$T/src" "$T/clean2"
same_dataset "$T/clean2" "$T/relabel"
samples=$(json "$T/inc/manifest.json" 'd["counts"]["samples"]')
[ "$(lineage "$T/relabel" '["relabeled"], d["lineage"]["reused"], d["lineage"]["added"]')" = "($samples, 0, 1)" ] ||
    die "relabel: $(lineage "$T/relabel" '')"
rm -r "$T/src/aardvark"

say "a damaged record of PREV is converted again from the source, not copied"
cp -r "$T/inc" "$T/damaged"
# the first record's frame starts after the 32-byte header of the first shard
"$PYTHON" - "$T/damaged/shard-000000.shard" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(32 + 40)
    b = f.read(1)
    f.seek(32 + 40)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
shardify $OPTS --incremental "$T/damaged" "$T/src" "$T/repaired"
same_dataset "$T/clean" "$T/repaired"
[ "$(lineage "$T/repaired" '["reconverted"], d["lineage"]["unchanged"], d["lineage"]["added"]')" = "(1, $((unchanged + 4)), 0)" ] ||
    die "damaged: $(lineage "$T/repaired" '')"

valid "$T/inc" "$T/relabel" "$T/repaired"

if strace_works; then
    say "an interrupted incremental run, resumed, ends as an uninterrupted one, lineage included"
    # held at the last sample's read (stored order is conversion order), then killed
    # (small shards, so that some are finished; one file changed meanwhile)
    OPTS="--size 32 --shard-size 4K --threads 1 --quiet"
    shardify $OPTS "$T/src" "$T/prev4"
    cp "$T/src/$changed" "$T/changed.keep"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/$changed"
    last=$(tail -n 1 "$T/prev4/index.jsonl" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    SRC="$T/src"
    # (at its read: read-ahead opens it up to 32 samples earlier)
    stop_at read "$(cd "$T/src" && pwd -P)/$last" "$T/resumed" --incremental "$T/prev4"
    kill -KILL "$run_pid"
    finish_run
    ls "$T/resumed" | grep -q '^shard-' || die "no finished shard to adopt"
    shardify $OPTS --resume --incremental "$T/prev4" "$T/src" "$T/resumed"
    shardify $OPTS --incremental "$T/prev4" "$T/src" "$T/whole"
    for f in $(cd "$T/whole" && ls | grep -v '^run.json$'); do
        cmp -s "$T/whole/$f" "$T/resumed/$f" || die "resumed '$f' differs from an uninterrupted run's"
    done
    [ "$(lineage "$T/resumed" '["changed"], d["lineage"]["reused"] + d["lineage"]["rejected_again"] == d["lineage"]["unchanged"]')" = "(1, True)" ] ||
        die "resumed lineage: $(lineage "$T/resumed" '')"
    cp "$T/changed.keep" "$T/src/$changed"
    OPTS="--size 32 --shard-size 64K --quiet"
else
    echo "SKIP: an interrupted incremental run: strace cannot trace here"
fi

say "PREV built with other options: refused, naming the option; nothing is created"
must_fail 2 shardify $OPTS --size 64 --incremental "$T/prev" "$T/src" "$T/other"
must_say "shardify: --size differs from the previous dataset '$T/prev' (32 there, 64 here)" "$T/err"
must_say "--incremental-or-full" "$T/err"
[ ! -e "$T/other" ] || die "a refused run created DST"
must_fail 2 shardify $OPTS --codec png --incremental "$T/prev" "$T/src" "$T/other"
must_say "--codec differs" "$T/err"
must_fail 2 shardify $OPTS --no-shuffle --incremental "$T/prev" "$T/src" "$T/other"
must_say "--no-shuffle differs from the previous dataset '$T/prev' (not given there, given here)" "$T/err"
# a flag that turns a setting off reads as the flag, not as the setting
must_fail 2 shardify $OPTS --no-upscale --incremental "$T/prev" "$T/src" "$T/other"
must_say "--no-upscale differs from the previous dataset '$T/prev' (not given there, given here)" "$T/err"
shardify $OPTS --no-upscale "$T/src" "$T/prev-no-upscale"
must_fail 2 shardify $OPTS --incremental "$T/prev-no-upscale" "$T/src" "$T/other"
must_say "--no-upscale differs from the previous dataset '$T/prev-no-upscale' (given there, not given here)" "$T/err"

say "the codec's default zstd level is the level PREV recorded; another level is refused"
shardify $OPTS --codec raw "$T/src" "$T/raw"
shardify $OPTS --codec raw --incremental "$T/raw" "$T/src" "$T/raw2"
[ "$(lineage "$T/raw2" '["reused"] + d["lineage"]["rejected_again"] == d["lineage"]["unchanged"]')" = True ] ||
    die "raw: $(lineage "$T/raw2" '')"
must_fail 2 shardify $OPTS --codec raw --zstd-level 3 --incremental "$T/raw" "$T/src" "$T/other"
must_say "--zstd-level differs from the previous dataset" "$T/err"

say "--incremental-or-full rebuilds in full, and says why"
shardify $OPTS --size 64 --json --incremental-or-full "$T/prev" "$T/src" "$T/full64" >"$T/full64.json"
shardify $OPTS --size 64 "$T/src" "$T/clean64"
same_dataset "$T/clean64" "$T/full64"
lineage "$T/full64" '["full_rebuild"]' | grep -qF -- "--size differs" ||
    die "full rebuild: $(lineage "$T/full64" '')"
[ "$(json "$T/full64.json" '"reused" in d["lineage"]')" = False ] || die "a full rebuild has no counts"
valid "$T/full64"

say "--incremental-or-full from a PREV whose path is not UTF-8: its reason is in the manifest, escaped"
prev_x="$T/prev $(printf '\200\377')"
cp -r "$T/prev" "$prev_x"
shardify $OPTS --size 64 --incremental-or-full "$prev_x" "$T/src" "$T/full64x"
lineage "$T/full64x" '["full_rebuild"]' | grep -qF -- "'$T/prev \x80\xff' (32 there, 64 here)" ||
    die "full rebuild: $(lineage "$T/full64x" '')"
valid "$T/full64x"

say "boxes or masks (--coco, a mask field): --incremental is a usage error, --incremental-or-full a full run"
mkdir -p "$T/det"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/det/a.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/det/b.jpg"
"$PYTHON" - "$T/det" "$T/coco.json" "$T/det_mask.png" <<'EOF'
import json, os, sys
from PIL import Image
src, out, mask = sys.argv[1:4]
images = []
for i, f in enumerate(sorted(os.listdir(src))):
    w, h = Image.open(os.path.join(src, f)).size
    images.append({"id": i + 1, "file_name": f, "width": w, "height": h})
json.dump({"images": images, "categories": [{"id": 1, "name": "thing"}],
           "annotations": [{"id": k + 1, "image_id": im["id"], "category_id": 1, "iscrowd": 0,
                            "bbox": [2, 3, 20, 10], "area": 200} for k, im in enumerate(images)]},
          open(out, "w"))
Image.new("L", Image.open(os.path.join(src, "a.jpg")).size, 0).save(mask)
EOF
cp "$T/det_mask.png" "$T/det/a_mask.png"
printf 'background\n' >"$T/det_classes.txt"
for geo in "--coco $T/coco.json" "--field seg=mask,from=_mask.png,classes=$T/det_classes.txt"; do
    # shellcheck disable=SC2086
    shardify $OPTS --labels none $geo "$T/det" "$T/det0"
    # shellcheck disable=SC2086
    must_fail 2 shardify $OPTS --labels none $geo --incremental "$T/det0" "$T/det" "$T/det1"
    must_say "boxes, mask and image fields are made as their images are converted" "$T/err"
    must_say "pass --incremental-or-full PREV to rebuild in full" "$T/err"
    [ ! -e "$T/det1" ] || die "a refused run created DST"
    # shellcheck disable=SC2086
    shardify $OPTS --labels none $geo --incremental-or-full "$T/det0" "$T/det" "$T/det1" ||
        die "--incremental-or-full with '$geo' does not rebuild in full"
    same_dataset "$T/det0" "$T/det1"
    lineage "$T/det1" '["full_rebuild"]' | grep -qF "boxes, mask and image fields are made" ||
        die "full rebuild: $(lineage "$T/det1" '')"
    rm -rf "$T/det0" "$T/det1"
done

say "PREV of another format version: refused (or rebuilt in full)"
cp -r "$T/prev" "$T/v3"
sed -i 's/"version": [0-9]*,/"version": 4,/' "$T/v3/manifest.json"
damaged "$T/v3"
must_fail 1 shardify $OPTS --incremental "$T/v3" "$T/src" "$T/other"
must_say "was built by another format version" "$T/err"
[ ! -e "$T/other" ] || die "a refused run created DST"
shardify $OPTS --incremental-or-full "$T/v3" "$T/src" "$T/rebuilt"
same_dataset "$T/clean" "$T/rebuilt"

say "PREV with a damaged index is refused"
cp -r "$T/prev" "$T/badindex"
sed -i '1s/"label":[0-9]*/"label":3/' "$T/badindex/index.jsonl"
must_fail 1 shardify $OPTS --incremental "$T/badindex" "$T/src" "$T/other"
must_say "is not the index file its manifest lists" "$T/err"

say "PREV may not be DST, an archive SRC is refused, and PREV must exist"
must_fail 2 shardify $OPTS --overwrite --incremental "$T/prev" "$T/src" "$T/prev"
must_say "cannot be DST itself" "$T/err"
shardcheck "$T/prev" >/dev/null || die "PREV was touched"
tar -cf "$T/src.tar" -C "$T/src" .
must_fail 2 shardify $OPTS --incremental "$T/prev" "$T/src.tar" "$T/other"
must_say "--incremental needs a directory or s3:// source" "$T/err"
must_fail 1 shardify $OPTS --incremental "$T/nothing" "$T/src" "$T/other"
must_say "--incremental: previous dataset: no manifest" "$T/err"
must_fail 2 shardify $OPTS --incremental "$T/prev" --incremental-or-full "$T/prev" "$T/src" "$T/other"
must_say "give one --incremental or --incremental-or-full" "$T/err"

say "ok"
