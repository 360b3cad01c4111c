#!/bin/sh
# test_fields.sh - samples carry fields: sidecar files of every type, in a
# directory, an archive and a directory of archives, and annotation tables
# (JSON Lines, CSV) give records whose every value equals the source's, read
# back by a reader written from manifests/FORMAT.md alone
# (tests/fixtures/fields_tree.py); each hostile value rejects its sample with
# the field and the file named; orphans and images sharing a stem are
# listed; the output does not depend on the thread count; an interrupted run
# resumes to the same dataset; bad declarations are usage errors.
. "$(dirname "$0")/lib.sh"

G="$T/g"
FT="$SHARDKIT_TOP/tests/fixtures/fields_tree.py"
"$PYTHON" "$FT" make "$G"
# the declarations: every type, each from its sidecar
FIELDS=$("$PYTHON" "$FT" args | sed 's/^/--field /' | tr '\n' ' ')
# the same, each from the table's column of its name
COLUMNS=$("$PYTHON" "$FT" args | sed 's/,from=[^ ]*//; s/^/--field /' | tr '\n' ' ')
OPTS="--size 16 --labels none --max-field-bytes 4096 --quiet"

# valid DIR: the manifest and every index line hold to their JSON Schemas
valid() {
    "$PYTHON" "$SHARDKIT_TOP/tests/check_schemas.py" "$1" || die "'$1' does not hold to the schemas"
}

# the dataset the cases compare with: the tree with every field from its
# sidecar ($T/side, its summary $T/side.json)
# shellcheck disable=SC2086
shardify "$G/tree" "$T/side" $OPTS $FIELDS --json >"$T/side.json"

case_sidecars_of_every_type_each_value_read_back_equal_hostile_ones_rejected() {
    "$PYTHON" "$FT" check "$T/side" "$G" || die "the records do not hold the sidecars' values"
    valid "$T/side"
    shardcheck --deep --source "$G/tree" "$T/side" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "shardcheck --deep --source does not prove the sidecars"; }
    [ "$(json "$T/side.json" 'd["orphans"], d["fields"]["caption"], d["sidecars"] > 100')" = \
      "(3, 22, True)" ] || die "summary: $(cat "$T/side.json")"
    # a dataset without fields stays version 1
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/plain" $OPTS
    [ "$(json "$C/plain/manifest.json" 'd["version"], "orphans" in d')" = "(1, False)" ] ||
        die "a dataset without fields is not version 1"
}

case_the_thread_count_changes_nothing() {
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/side1" $OPTS $FIELDS --threads 1
    same_tree "$T/side" "$C/side1"
}

case_an_archive_of_the_tree_and_a_directory_of_archives_give_the_same_records() {
    (cd "$G/tree" && tar cf "$C/tree.tar" .)
    # shellcheck disable=SC2086
    shardify "$C/tree.tar" "$C/tar" $OPTS $FIELDS
    for f in index.jsonl shard-000000.shard; do
        cmp -s "$T/side/$f" "$C/tar/$f" || die "the archive's $f differs from the directory's"
    done
    mkdir "$C/tars"
    cp "$C/tree.tar" "$C/tars/00000.tar"
    mkdir -p "$C/extra/z"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/extra/z/0000.jpg"
    printf 'from the second tar' >"$C/extra/z/0000.txt"
    (cd "$C/extra" && tar cf "$C/tars/00001.tar" z)
    echo '{"successes": 1}' >"$C/tars/00000_stats.json"
    # shellcheck disable=SC2086
    shardify --archives "$C/tars" "$C/archives" $OPTS $FIELDS --json >"$C/archives.json"
    "$PYTHON" "$FT" check "$C/archives" "$G" --prefix 00000.tar/ ||
        die "--archives: the records do not hold the sidecars' values"
    shardcheck --deep --source "$C/tars" "$C/archives" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "shardcheck --deep --source does not prove --archives"; }
    grep -q '"key":"00001.tar/z/0000.jpg".*"caption"' "$C/archives/index.jsonl" ||
        die "--archives: the second tar's sample or its caption is missing"
    [ "$(json "$C/archives/manifest.json" 'd["source"]["kind"]')" = archives ] || die "source.kind"
    [ "$(json "$C/archives.json" 'd["ignored"]')" -ge 1 ] || die "the stats file is not counted"
    valid "$C/archives"
}

case_annotation_tables_json_lines_and_csv() {
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/jsonl" $OPTS $COLUMNS --annotations "$G/table.jsonl" --json >"$C/jsonl.json"
    "$PYTHON" "$FT" check "$C/jsonl" "$G" --table jsonl || die "JSON Lines values"
    shardcheck --deep --source "$G/tree" --annotations "$G/table.jsonl" "$C/jsonl" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "shardcheck does not prove the JSON Lines values"; }
    [ "$(json "$C/jsonl.json" 'd["annotation_rows"], d["annotation_rows_unmatched"]')" = "(25, 1)" ] ||
        die "table rows: $(cat "$C/jsonl.json")"
    valid "$C/jsonl"
    # a CSV cell is text: no bytes column
    COLUMNS_CSV=$(echo "$COLUMNS" | sed 's/--field blob=bytes//')
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/csv" $OPTS $COLUMNS_CSV --annotations "$G/table.csv"
    "$PYTHON" "$FT" check "$C/csv" "$G" --table csv || die "CSV values"
    shardcheck --deep --source "$G/tree" --annotations "$G/table.csv" "$C/csv" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "shardcheck does not prove the CSV values"; }
    grep -q '"annotations": "file:table.csv:[0-9a-f]\{16\}"' "$C/csv/manifest.json" ||
        die "the table is not identified in the config"
}

case_a_conversion_in_parts_carries_fields_the_merged_dataset_holds_every_value() {
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/parts" $OPTS $FIELDS --part 0/2
    # shellcheck disable=SC2086
    shardify "$G/tree" "$C/parts" $OPTS $FIELDS --part 1/2
    shardify merge --quiet "$C/parts"
    "$PYTHON" "$FT" check "$C/parts" "$G" || die "the merged records do not hold the values"
    shardcheck --deep --source "$G/tree" "$C/parts" >/dev/null 2>&1 || die "the merged dataset does not verify"
    [ "$(json "$C/parts/manifest.json" 'd["counts"]')" = "$(json "$T/side/manifest.json" 'd["counts"]')" ] ||
        die "merged counts differ from a single run's"
    valid "$C/parts"
}

case_incremental_a_changed_sidecar_keeps_the_stored_pixels_with_the_fields_of_now() {
    cp -r "$G/tree" "$C/inc"
    # shellcheck disable=SC2086
    shardify "$C/inc" "$C/prev" $OPTS $FIELDS
    printf 'a corrected caption' >"$C/inc/a/0000.txt"   # changed
    printf 'a new caption' >"$C/inc/a/0003.txt"         # added where there was none
    rm "$C/inc/b/0001.json"                             # removed
    printf '{"a": 1}' >"$C/inc/h/badjson.json"          # a reject for its field, mended
    rm "$C/inc/b/0011.jpg"                              # an image removed
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/inc/b/0099.jpg"  # an image added
    printf 'new' >"$C/inc/b/0099.txt"
    # shellcheck disable=SC2086
    shardify "$C/inc" "$C/next" $OPTS $FIELDS --incremental "$C/prev" --json >"$C/next.json"
    # shellcheck disable=SC2086
    shardify "$C/inc" "$C/full" $OPTS $FIELDS
    for f in index.jsonl shard-000000.shard; do
        cmp -s "$C/next/$f" "$C/full/$f" || die "incremental $f differs from a full run's"
    done
    "$PYTHON" - "$C/next/manifest.json" "$C/full/manifest.json" <<'EOF2' || die "incremental manifest"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
l = a.pop("lineage")
assert a == b, "the manifest is not the full run's but for its lineage"
assert (l["added"], l["removed"], l["refielded"], l["reconverted"]) == (1, 1, 3, 0), l
assert l["reused"] == 24 + 1 + 2 - 1 - 3 - 1 - 1, l  # samples (c/x.jpg, the stem's image, too), the stem clash's reject aside
EOF2
    [ "$(json "$C/next.json" 'd["lineage"]["refielded"]')" = 3 ] || die "the summary's refielded"
    shardcheck --deep --source "$C/inc" "$C/next" >/dev/null 2>&1 || die "the incremental dataset does not verify"
    valid "$C/next"
    must_fail 2 shardify "$C/inc" "$C/other" $OPTS --field caption=text,from=.txt --incremental "$C/prev"
    must_say "--field differs from the previous dataset" "$T/err"
}

case_a_required_field_a_sample_lacks_rejects_it_naming_the_file_that_is_missing() {
    shardify "$G/tree" "$C/req" $OPTS --field caption=text,from=.txt,required --json >"$C/req.json"
    "$PYTHON" - "$C/req.json" <<'EOF' || die "required: $(cat "$C/req.json")"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["key"]: x["reason"] for x in d["rejects"]}
assert r["a/0003.jpg"] == "field 'caption' is required: no 'a/0003.txt'", r["a/0003.jpg"]
assert "h/badutf8.jpg" in r and "b/0000.jpg" not in r
EOF
    shardify "$G/tree" "$C/req2" $OPTS --field caption=text,required --annotations "$G/table.jsonl" \
        --json >"$C/req2.json"
    [ "$(json "$C/req2.json" '[x["reason"] for x in d["rejects"] if x["key"] == "h/huge.jpg"][0]')" = \
      "field 'caption' is required: no row of 'table.jsonl'" ] || die "required from a table"
}

case_a_declared_field_that_no_sample_has_fails_the_run_saying_where_it_was_looked_for() {
    # (Hugging Face's metadata.jsonl not given: the caption is looked for as a sidecar)
    must_fail 1 shardify "$G/tree" "$C/t1" --size 16 --labels none --field nothing=text --quiet
    must_say "field 'nothing' is declared, and none of the " "$T/err"
    must_say "samples has it: none has a sidecar '.nothing'" "$T/err"
    printf '{"key":"zz/none.jpg","caption":"x"}\n' >"$C/elsewhere.jsonl"
    must_fail 1 shardify "$G/tree" "$C/t2" --size 16 --labels none --field caption=text \
        --annotations "$C/elsewhere.jsonl" --quiet
    must_say "field 'caption' is declared, and none of the " "$T/err"
    must_say "samples has it: no row of 'elsewhere.jsonl' gives one a value in column 'caption'" "$T/err"
    printf '\n' >"$C/blank.jsonl"  # no row at all
    must_fail 1 shardify "$G/tree" "$C/t3" --size 16 --labels none --field caption=text \
        --annotations "$C/blank.jsonl" --quiet
    must_say "samples has it: no row of 'blank.jsonl' gives one a value in column 'caption'" "$T/err"
    [ ! -e "$C/t1/manifest.json" ] && [ ! -e "$C/t2/manifest.json" ] && [ ! -e "$C/t3/manifest.json" ] ||
        die "published a field that matched nothing"
}

case_a_table_that_starts_with_a_utf8_byte_order_mark_is_read() {
    # (as spreadsheets write CSV)
    printf '\357\273\277key,caption\na/0000.jpg,hello\n' >"$C/bom.csv"
    printf '\357\273\277{"key":"a/0000.jpg","caption":"hello"}\n' >"$C/bom.jsonl"
    for table in bom.csv bom.jsonl; do
        shardify "$G/tree" "$C/bom" --size 16 --labels none --quiet --overwrite --field caption=text \
            --annotations "$C/$table" --json >"$C/bom.json" || die "$table: a byte order mark fails the run"
        [ "$(json "$C/bom.json" 'd["fields"]["caption"]')" = 1 ] || die "$table: $(cat "$C/bom.json")"
        grep '"key":"a/0000.jpg"' "$C/bom/index.jsonl" | grep -q '"fields"' || die "$table: no caption"
    done
}

case_class_labels_from_a_sidecar_cls_and_from_a_column() {
    mkdir -p "$C/cls/a"
    for i in 0 1 2 3; do cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/cls/a/$i.jpg"; done
    printf 'cat\n' >"$C/cls/a/0.cls"
    printf '  dog ' >"$C/cls/a/1.cls"
    printf 'cat' >"$C/cls/a/2.cls"
    shardify "$C/cls" "$C/clsout" --size 16 --quiet --labels sidecar:.cls
    [ "$(json "$C/clsout/manifest.json" 'd["labels"], d["counts"]["by_label"], d["counts"]["unlabeled"]')" = \
      "(['cat', 'dog'], {'cat': 2, 'dog': 1}, 1)" ] || die "sidecar class: $(cat "$C/clsout/manifest.json")"
    printf '{"key":"a/0.jpg","cls":"dog"}\n{"key":"a/3.jpg","cls":"emu"}\n' >"$C/cls.jsonl"
    shardify "$C/cls" "$C/colout" --size 16 --quiet --labels column:cls --annotations "$C/cls.jsonl"
    # the config names the table it read, as a label file's is named (a version 1 config has no
    # "annotations")
    table=$("$PYTHON" -c 'import sys, xxhash; print(xxhash.xxh3_64_hexdigest(open(sys.argv[1], "rb").read()))' "$C/cls.jsonl")
    [ "$(json "$C/colout/manifest.json" 'd["labels"], d["counts"]["unlabeled"], d["config"]["labels"]')" = \
      "(['dog', 'emu'], 2, 'column:cls:file:cls.jsonl:$table')" ] ||
        die "column class: $(json "$C/colout/manifest.json" 'd["config"]')"
}

case_a_sidecar_mask_or_cls_that_is_a_link_or_a_fifo_is_named_for_what_it_is_never_opened() {
    S=$C/special
    mkdir -p "$S/src/a" "$S/masks/a"
    for i in 0 1 2 3 4 5; do cp "$SHARDKIT_FIXTURES/rgb.jpg" "$S/src/a/$i.jpg"; done
    printf 'a caption' >"$S/real.txt"
    cp "$S/real.txt" "$S/src/a/0.txt"
    printf 'cat' >"$S/src/a/0.cls"
    ln -s ../../real.txt "$S/src/a/1.txt"
    mkfifo "$S/src/a/2.txt"
    ln -s 0.cls "$S/src/a/3.cls"
    mkfifo "$S/src/a/4.cls"
    "$PYTHON" - "$SHARDKIT_FIXTURES/rgb.jpg" "$S/masks/a" <<'EOF2'
import struct, sys, zlib
from PIL import Image
w, h = Image.open(sys.argv[1]).size
chunk = lambda t, b: struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
       chunk(b"IDAT", zlib.compress(b"".join(b"\0" + bytes(w) for _ in range(h)))) + chunk(b"IEND", b""))
open(sys.argv[2] + "/0.png", "wb").write(png)
EOF2
    ln -s 0.png "$S/masks/a/5.png"
    printf 'background\n' >"$S/classes.txt"
    timeout 60 shardify "$S/src" "$S/out" --size 16 --quiet --labels sidecar:.cls \
        --field caption=text,from=.txt --field "seg=mask,from=$S/masks/,classes=$S/classes.txt" ||
        die "shardify failed or hung on a FIFO"
    "$PYTHON" - "$S/out/manifest.json" <<'EOF2' || die "special sidecar files are not named"
import json, sys
m = json.load(open(sys.argv[1]))
got = {r["key"]: r["reason"] for r in m["rejected"]}
want = {
    "a/1.jpg": "field 'caption': sidecar 'a/1.txt': not a regular file: symbolic link (never followed)",
    "a/2.jpg": "field 'caption': sidecar 'a/2.txt': not a regular file: fifo",
    "a/3.jpg": "the class: sidecar 'a/3.cls': not a regular file: symbolic link (never followed)",
    "a/4.jpg": "the class: sidecar 'a/4.cls': not a regular file: fifo",
    "a/5.jpg": "field 'seg': mask '%s/masks/a/5.png': not a regular file: symbolic link (never followed)"
               % sys.argv[1].rsplit("/", 2)[0],
}
assert got == want, got
assert m["counts"]["samples"] == 1 and m["counts"]["by_label"] == {"cat": 1}, m["counts"]
EOF2
    timeout 60 shardcheck "$S/out" --source "$S/src" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "shardcheck --source does not verify the special sidecars' rejects"; }
}

case_fit_crop_drops_a_box_it_cuts_to_less_than_a_pixel_across_keeps_one_that_small_already() {
    mkdir -p "$C/crop"
    "$PYTHON" - "$C/crop" <<'EOF2'
import json, sys
from PIL import Image
d = sys.argv[1]
Image.new("RGB", (100, 50), (90, 90, 90)).save(d + "/a.png")
# --size 50 --fit crop: 100x50 is cropped to x 25..75
boxes = [[24.95, 10, 15.05, 20],  # cut at the left edge: 15 px kept
         [10, 10, 15.05, 20],     # cut to 0.05 px: dropped
         [0, 10, 20, 20],         # wholly outside the window: dropped
         [50, 10, 0.5, 20]]       # 0.5 px wide inside the window: kept as it is
json.dump({"images": [{"id": 1, "file_name": "a.png", "width": 100, "height": 50}],
           "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "bbox": b,
                            "iscrowd": 0, "area": b[2] * b[3]} for i, b in enumerate(boxes)],
           "categories": [{"id": 1, "name": "thing"}]}, open(d + "/coco.json", "w"))
EOF2
    mkdir -p "$C/crop/src" && mv "$C/crop/a.png" "$C/crop/src/"
    shardify "$C/crop/src" "$C/crop/out" --size 50 --fit crop --labels none --coco "$C/crop/coco.json" \
        --quiet --json >"$C/crop.json" || die "shardify with --coco and --fit crop"
    [ "$(json "$C/crop/out/manifest.json" 'd["counts"]["boxes"], d["counts"]["boxes_dropped"]')" = "(2, 2)" ] ||
        die "boxes stored and dropped: $(json "$C/crop/out/manifest.json" 'd["counts"]')"
    shardcheck "$C/crop/out" --deep --source "$C/crop/src" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "the cropped boxes do not verify"; }
}

# numeric_classes_src DIR: DIR/src holds s0..s12.jpg but s5, each with its
# class number in sN.cls, s7's written ' 007 ' (class 7), so that sorting
# names as text would move most of them
numeric_classes_src() {
    mkdir -p "$1/src"
    for i in 0 1 2 3 4 6 7 8 9 10 11 12; do
        cp "$SHARDKIT_FIXTURES/rgb.jpg" "$1/src/s$i.jpg"
        printf '%s\n' "$i" >"$1/src/s$i.cls"
    done
    printf ' 007 ' >"$1/src/s7.cls"
}

case_numeric_classes_webdatasets_cls_are_the_class_numbers_labels_0_to_max_in_numeric_order() {
    N=$C/num
    numeric_classes_src "$N"
    shardify "$N/src" "$N/out" --size 16 --quiet --labels sidecar:.cls || die "numeric classes"
    "$PYTHON" - "$N/out" <<'EOF2' || die "the labels are not the .cls numbers"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
assert m["labels"] == [str(i) for i in range(13)], m["labels"]  # 5 too: numbers keep their place
assert m["counts"]["by_label"]["5"] == 0 and m["counts"]["by_label"]["7"] == 1, m["counts"]
for l in open(sys.argv[1] + "/index.jsonl"):
    d = json.loads(l)
    assert d["label"] == int(d["key"][1:-4]), d  # sN.jpg has class N
EOF2
    valid "$N/out"
    shardcheck "$N/out" --deep --source "$N/src" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "numeric classes do not verify"; }
    must_say "labels re-derived and checked" "$C/out"
    printf '12' >"$N/src/s11.cls"
    must_fail 1 shardcheck "$N/out" --source "$N/src"
    must_say "source: 's11.jpg' has label '11' in the dataset, SRC gives '12'" "$T/stdout"
    printf '11' >"$N/src/s11.cls"
    # the same classes from a table's column
    for i in 0 1 2 3 4 6 7 8 9 10 11 12; do printf '{"key": "s%d.jpg", "cls": %d}\n' $i $i; done >"$N/cls.jsonl"
    shardify "$N/src" "$N/col" --size 16 --quiet --labels column:cls --annotations "$N/cls.jsonl"
    [ "$(json "$N/col/manifest.json" 'd["labels"] == [str(i) for i in range(13)]')" = True ] ||
        die "numeric column classes: $(json "$N/col/manifest.json" 'd["labels"]')"
    cmp -s "$N/out/index.jsonl" "$N/col/index.jsonl" || die "a column's numbers differ from the .cls"
    # a labels field's names are the same numbers (and may go past the class's)
    printf '["2", "014"]' >"$N/src/s0.tags"
    shardify "$N/src" "$N/tags" --size 16 --quiet --labels sidecar:.cls --field tags=labels,from=.tags
    [ "$(json "$N/tags/manifest.json" 'd["labels"] == [str(i) for i in range(15)]')" = True ] ||
        die "numeric labels field: $(json "$N/tags/manifest.json" 'd["labels"]')"
    shardcheck "$N/tags" --deep --source "$N/src" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "a numeric labels field does not verify"; }
    printf '["2", "x"]' >"$N/src/s0.tags"
    must_fail 1 shardify "$N/src" "$N/bad" --size 16 --quiet --labels sidecar:.cls --field tags=labels,from=.tags
    must_say "'x' to 's0.jpg'; the classes must be all numbers" "$T/err"
}

case_numbers_and_names_mixed_a_negative_number_a_number_too_large_refused_naming_two_samples() {
    N=$C/num
    numeric_classes_src "$N"
    printf 'cat' >"$N/src/s3.cls"
    must_fail 1 shardify "$N/src" "$N/bad" --size 16 --quiet --labels sidecar:.cls
    must_say "--labels 'sidecar:.cls' gives class numbers and class names: '0' to 's0.jpg', 'cat' to 's3.jpg'" "$T/err"
    must_say "the classes must be all numbers (WebDataset's) or all names" "$T/err"
    printf -- '-1' >"$N/src/s3.cls"
    must_fail 1 shardify "$N/src" "$N/bad" --size 16 --quiet --labels sidecar:.cls
    must_say "'-1' to 's3.jpg'; the classes must be all numbers (WebDataset's) or all names (a class number is 0 or more)" "$T/err"
    printf '4000000' >"$N/src/s3.cls"
    must_fail 1 shardify "$N/src" "$N/bad" --size 16 --quiet --labels sidecar:.cls
    must_say "--labels 'sidecar:.cls' gives 's3.jpg' the class number '4000000', above the largest, 999999" "$T/err"
    [ ! -e "$N/bad/manifest.json" ] || die "a refused run published"
}

case_bad_declarations_are_usage_errors_named() {
    must_fail 2 shardify "$G/tree" "$C/u1" --field caption
    must_say "'caption' is not NAME=TYPE" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field caption=string
    must_say "unknown field type 'string'" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field emb=float32
    must_say "needs a length" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field 9x=text
    must_say "a field name is" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field caption=text,from=caption
    must_say "there is no --annotations table" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field caption=text --field caption=json
    must_say "'caption' is declared twice" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --field caption=text,later
    must_say "unknown part 'later'" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --annotations "$G/table.jsonl"
    must_say "--annotations is read by --field" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --labels column:cls
    must_say "needs --annotations" "$T/err"
    must_fail 2 shardify "$G/tree" "$C/u1" --labels sidecar:cls
    must_say "a sidecar suffix" "$T/err"
    [ ! -e "$C/u1" ] || die "a refused run created DST"
}

# bad_table FILE TEXT WORDS: the table $C/FILE holding TEXT (printf %b) fails the run, saying WORDS
bad_table() {
    printf '%b' "$2" >"$C/$1"
    must_fail 1 shardify "$G/tree" "$C/t1" --field caption=text --annotations "$C/$1"
    must_say "$3" "$T/err"
}

case_a_table_that_cannot_be_used_fails_the_run_naming_the_file_and_line_nothing_is_published() {
    bad_table dup.jsonl '{"key":"a/0000.jpg","caption":"x"}\n{"key":"a/0000.jpg","caption":"y"}\n' \
        "key 'a/0000.jpg' is listed twice (lines 1 and 2)"
    bad_table nokey.jsonl '{"key":"a/0000.jpg"}\n{"caption": "no key"}\n' 'line 2: no "key"'
    bad_table bad.jsonl '{"key":"a/0000.jpg"}\n{oops\n' "'$C/bad.jsonl' line 2:"
    bad_table nocol.csv 'key,title\na/0000.jpg,x\n' "has no column 'caption'"
    bad_table wide.csv 'key,caption\na/0000.jpg,x,y\n' "line 2: 3 fields, the header has 2"
    bad_table twokeys.csv 'key,caption,key\na/0000.jpg,x,a/0001.jpg\n' \
        "annotation file '$C/twokeys.csv': column 'key' is in the header twice"
    bad_table twocaptions.csv 'key,caption,note,caption\na/0000.jpg,x,y,z\n' \
        "column 'caption' is in the header twice"
    bad_table bothkeys.jsonl '{"key":"a/0000.jpg","key_hex":"612f303030312e6a7067","caption":"x"}\n' \
        "'$C/bothkeys.jsonl' line 1: both \"key\" and \"key_hex\""
    must_fail 1 shardify "$G/tree" "$C/t1" --field caption=text --annotations "$C/missing.jsonl"
    must_say "cannot read annotation file" "$T/err"
    mkfifo "$C/fifo.jsonl"
    must_fail 1 timeout 20 shardify "$G/tree" "$C/t1" --field caption=text --annotations "$C/fifo.jsonl"
    must_say "not a regular file: fifo" "$T/err"
    [ ! -e "$C/t1/manifest.json" ] || die "a failed run published"
}

case_an_interrupted_run_with_fields_resumes_to_the_dataset_of_an_uninterrupted_one() {
    if ! strace_works; then
        echo "SKIP: an interrupted run with fields: strace cannot trace here"
        return 0
    fi
    SRC="$G/tree"
    # shellcheck disable=SC2086
    OPTS="$OPTS $FIELDS --shard-size 8K --threads 1"
    # shellcheck disable=SC2086
    shardify "$SRC" "$C/whole" $OPTS
    # killed at the read of the last sample stored: earlier shards are finished
    last=$("$PYTHON" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["key"])' \
        "$C/whole/index.jsonl")
    stop_at read "$SRC/$last" "$C/resumed"
    kill -KILL "$run_pid"
    finish_run
    [ ! -e "$C/resumed/manifest.json" ] || die "a manifest after a kill"
    # shellcheck disable=SC2086
    shardify "$SRC" "$C/resumed" $OPTS --resume --json >"$C/resume.json"
    same_tree "$C/resumed" "$C/whole"
    [ "$(json "$C/resume.json" 'd["reused_shards"] >= 1')" = True ] || die "no shard was kept"
    "$PYTHON" "$FT" check "$C/resumed" "$G" || die "the resumed records"
}

run_cases
