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

# the source (labelled, with rejects) and the dataset it gives, $T/prev
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/src" >/dev/null
shardify $OPTS "$T/src" "$T/prev"
prev_candidates=$(json "$T/prev/manifest.json" 'd["counts"]["samples"] + d["counts"]["rejected"]')
prev_rejects_hashed=$(json "$T/prev/manifest.json" 'sum(1 for r in d["rejected"] if "source_xxh3" in r)')

# then the source changes: 3 files added, 1 changed, 1 removed
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/apple/new_1.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/src/boat/new_2.jpg"
cp "$SHARDKIT_FIXTURES/rgba.png" "$T/src/cloud/new_3.png"
changed=$(cd "$T/src" && ls dune/*.jpg | head -n 1)
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/$changed"
removed=$(cd "$T/src" && ls apple/*.png | head -n 1)
rm "$T/src/$removed"
unchanged=$((prev_candidates - 2))

# the datasets the cases read: the incremental run from $T/prev ($T/inc, its
# --json summary in $T/inc.json) and a clean run ($T/clean) of the changed source
shardify $OPTS --json --incremental "$T/prev" "$T/src" "$T/inc" >"$T/inc.json"
shardify $OPTS "$T/src" "$T/clean"

case_the_incremental_run_equals_a_clean_run_but_for_the_manifests_lineage() {
    same_dataset "$T/clean" "$T/inc"
    shardcheck --deep --source "$T/src" "$T/inc" >/dev/null || die "the incremental dataset does not verify"
    valid "$T/inc"
}

case_the_lineage_counts_what_changed_and_what_was_reused() {
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
    shardify --size 32 --shard-size 64K --incremental "$T/prev" "$T/src" "$C/inc-text" 2>"$C/text.err"
    must_say "incremental from '$T/prev': 3 added, 1 changed, 1 removed" "$C/text.err"
    must_say "per-file work (thread-seconds): read" "$C/text.err"
}

case_a_new_class_renumbers_the_labels_records_are_re_framed_not_decoded() {
    # the source with a class more (records are reused by their bytes' hash)
    cp -a "$T/src" "$C/src"
    mkdir "$C/src/aardvark"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/src/aardvark/a.jpg"
    shardify $OPTS --incremental "$T/inc" "$C/src" "$C/relabel"
    shardify $OPTS "$C/src" "$C/clean2"
    same_dataset "$C/clean2" "$C/relabel"
    samples=$(json "$T/inc/manifest.json" 'd["counts"]["samples"]')
    [ "$(lineage "$C/relabel" '["relabeled"], d["lineage"]["reused"], d["lineage"]["added"]')" = "($samples, 0, 1)" ] ||
        die "relabel: $(lineage "$C/relabel" '')"
    valid "$C/relabel"
}

case_a_damaged_record_of_prev_is_converted_again_from_the_source_not_copied() {
    cp -r "$T/inc" "$C/damaged"
    # the first record's frame starts after the 32-byte header of the first shard
    "$PYTHON" - "$C/damaged/shard-000000.shard" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(32 + 40)
    b = f.read(1)
    f.seek(32 + 40)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
    shardify $OPTS --incremental "$C/damaged" "$T/src" "$C/repaired"
    same_dataset "$T/clean" "$C/repaired"
    [ "$(lineage "$C/repaired" '["reconverted"], d["lineage"]["unchanged"], d["lineage"]["added"]')" = "(1, $((unchanged + 4)), 0)" ] ||
        die "damaged: $(lineage "$C/repaired" '')"
    valid "$C/repaired"
}

case_an_interrupted_incremental_run_resumed_ends_as_an_uninterrupted_one_lineage_included() {
    if ! strace_works; then
        echo "SKIP: an interrupted incremental run: strace cannot trace here"
        return 0
    fi
    # held at the last sample's read (stored order is conversion order), then killed
    # (small shards, so that some are finished; one file changed meanwhile)
    OPTS="--size 32 --shard-size 4K --threads 1 --quiet"
    cp -a "$T/src" "$C/src"
    shardify $OPTS "$C/src" "$C/prev4"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/src/$changed"
    last=$(tail -n 1 "$C/prev4/index.jsonl" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["key"])')
    SRC="$C/src"
    # (at its read: read-ahead opens it up to 32 samples earlier)
    stop_at read "$(cd "$C/src" && pwd -P)/$last" "$C/resumed" --incremental "$C/prev4"
    kill -KILL "$run_pid"
    finish_run
    ls "$C/resumed" | grep -q '^shard-' || die "no finished shard to adopt"
    shardify $OPTS --resume --incremental "$C/prev4" "$C/src" "$C/resumed"
    shardify $OPTS --incremental "$C/prev4" "$C/src" "$C/whole"
    for f in $(cd "$C/whole" && ls | grep -v '^run.json$'); do
        cmp -s "$C/whole/$f" "$C/resumed/$f" || die "resumed '$f' differs from an uninterrupted run's"
    done
    [ "$(lineage "$C/resumed" '["changed"], d["lineage"]["reused"] + d["lineage"]["rejected_again"] == d["lineage"]["unchanged"]')" = "(1, True)" ] ||
        die "resumed lineage: $(lineage "$C/resumed" '')"
}

case_prev_built_with_other_options_refused_naming_the_option_nothing_is_created() {
    must_fail 2 shardify $OPTS --size 64 --incremental "$T/prev" "$T/src" "$C/other"
    must_say "shardify: --size differs from the previous dataset '$T/prev' (32 there, 64 here)" "$T/err"
    must_say "--incremental-or-full" "$T/err"
    [ ! -e "$C/other" ] || die "a refused run created DST"
    must_fail 2 shardify $OPTS --codec png --incremental "$T/prev" "$T/src" "$C/other"
    must_say "--codec differs" "$T/err"
    must_fail 2 shardify $OPTS --no-shuffle --incremental "$T/prev" "$T/src" "$C/other"
    must_say "--no-shuffle differs from the previous dataset '$T/prev' (not given there, given here)" "$T/err"
    # a flag that turns a setting off reads as the flag, not as the setting
    must_fail 2 shardify $OPTS --no-upscale --incremental "$T/prev" "$T/src" "$C/other"
    must_say "--no-upscale differs from the previous dataset '$T/prev' (not given there, given here)" "$T/err"
    shardify $OPTS --no-upscale "$T/src" "$C/prev-no-upscale"
    must_fail 2 shardify $OPTS --incremental "$C/prev-no-upscale" "$T/src" "$C/other"
    must_say "--no-upscale differs from the previous dataset '$C/prev-no-upscale' (given there, not given here)" "$T/err"
}

case_the_codecs_default_zstd_level_is_the_level_prev_recorded_another_level_is_refused() {
    shardify $OPTS --codec raw "$T/src" "$C/raw"
    shardify $OPTS --codec raw --incremental "$C/raw" "$T/src" "$C/raw2"
    [ "$(lineage "$C/raw2" '["reused"] + d["lineage"]["rejected_again"] == d["lineage"]["unchanged"]')" = True ] ||
        die "raw: $(lineage "$C/raw2" '')"
    must_fail 2 shardify $OPTS --codec raw --zstd-level 3 --incremental "$C/raw" "$T/src" "$C/other"
    must_say "--zstd-level differs from the previous dataset" "$T/err"
}

case_incremental_or_full_rebuilds_in_full_and_says_why() {
    shardify $OPTS --size 64 --json --incremental-or-full "$T/prev" "$T/src" "$C/full64" >"$C/full64.json"
    shardify $OPTS --size 64 "$T/src" "$C/clean64"
    same_dataset "$C/clean64" "$C/full64"
    lineage "$C/full64" '["full_rebuild"]' | grep -qF -- "--size differs" ||
        die "full rebuild: $(lineage "$C/full64" '')"
    [ "$(json "$C/full64.json" '"reused" in d["lineage"]')" = False ] || die "a full rebuild has no counts"
    valid "$C/full64"
}

case_incremental_or_full_from_a_prev_whose_path_is_not_utf_8_its_reason_is_in_the_manifest_escaped() {
    prev_x="$C/prev $(printf '\200\377')"
    cp -r "$T/prev" "$prev_x"
    shardify $OPTS --size 64 --incremental-or-full "$prev_x" "$T/src" "$C/full64x"
    lineage "$C/full64x" '["full_rebuild"]' | grep -qF -- "'$C/prev \x80\xff' (32 there, 64 here)" ||
        die "full rebuild: $(lineage "$C/full64x" '')"
    valid "$C/full64x"
}

case_boxes_or_masks_coco_a_mask_field_incremental_is_a_usage_error_incremental_or_full_a_full_run() {
    mkdir -p "$C/det"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/det/a.jpg"
    cp "$SHARDKIT_FIXTURES/progressive.jpg" "$C/det/b.jpg"
    "$PYTHON" - "$C/det" "$C/coco.json" "$C/det_mask.png" <<'EOF'
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
    cp "$C/det_mask.png" "$C/det/a_mask.png"
    printf 'background\n' >"$C/det_classes.txt"
    for geo in "--coco $C/coco.json" "--field seg=mask,from=_mask.png,classes=$C/det_classes.txt"; do
        # shellcheck disable=SC2086
        shardify $OPTS --labels none $geo "$C/det" "$C/det0"
        # shellcheck disable=SC2086
        must_fail 2 shardify $OPTS --labels none $geo --incremental "$C/det0" "$C/det" "$C/det1"
        must_say "boxes, mask and image fields are made as their images are converted" "$T/err"
        must_say "pass --incremental-or-full PREV to rebuild in full" "$T/err"
        [ ! -e "$C/det1" ] || die "a refused run created DST"
        # shellcheck disable=SC2086
        shardify $OPTS --labels none $geo --incremental-or-full "$C/det0" "$C/det" "$C/det1" ||
            die "--incremental-or-full with '$geo' does not rebuild in full"
        same_dataset "$C/det0" "$C/det1"
        lineage "$C/det1" '["full_rebuild"]' | grep -qF "boxes, mask and image fields are made" ||
            die "full rebuild: $(lineage "$C/det1" '')"
        rm -rf "$C/det0" "$C/det1"
    done
}

case_prev_of_another_format_version_refused_or_rebuilt_in_full() {
    cp -r "$T/prev" "$C/v3"
    sed -i 's/"version": [0-9]*,/"version": 4,/' "$C/v3/manifest.json"
    damaged "$C/v3"
    must_fail 1 shardify $OPTS --incremental "$C/v3" "$T/src" "$C/other"
    must_say "was built by another format version" "$T/err"
    [ ! -e "$C/other" ] || die "a refused run created DST"
    shardify $OPTS --incremental-or-full "$C/v3" "$T/src" "$C/rebuilt"
    same_dataset "$T/clean" "$C/rebuilt"
}

case_prev_with_a_damaged_index_is_refused() {
    cp -r "$T/prev" "$C/badindex"
    sed -i '1s/"label":[0-9]*/"label":3/' "$C/badindex/index.jsonl"
    must_fail 1 shardify $OPTS --incremental "$C/badindex" "$T/src" "$C/other"
    must_say "is not the index file its manifest lists" "$T/err"
}

case_prev_may_not_be_dst_an_archive_src_is_refused_and_prev_must_exist() {
    cp -r "$T/prev" "$C/prev"
    must_fail 2 shardify $OPTS --overwrite --incremental "$C/prev" "$T/src" "$C/prev"
    must_say "cannot be DST itself" "$T/err"
    shardcheck "$C/prev" >/dev/null || die "PREV was touched"
    tar -cf "$C/src.tar" -C "$T/src" .
    must_fail 2 shardify $OPTS --incremental "$T/prev" "$C/src.tar" "$C/other"
    must_say "--incremental needs a directory or s3:// source" "$T/err"
    must_fail 1 shardify $OPTS --incremental "$C/nothing" "$T/src" "$C/other"
    must_say "--incremental: previous dataset: no manifest" "$T/err"
    must_fail 2 shardify $OPTS --incremental "$T/prev" --incremental-or-full "$T/prev" "$T/src" "$C/other"
    must_say "give one --incremental or --incremental-or-full" "$T/err"
}

run_cases
