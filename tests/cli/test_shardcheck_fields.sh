# test_shardcheck_fields.sh - shardcheck on datasets with fields (format
# version 2) that shardify made from a folder of JPEGs with sidecar files
# (.txt captions, .json metadata, .score numbers), an orphan, and a JSON
# Lines annotation table: --deep --source (and --annotations) prove them,
# from the folder, a tar of it, tars of it and an s3:// copy; each planted difference in
# SRC is a problem naming the field, the sample and the file (also from a
# directory of tars, shardify --archives): a changed caption, a deleted
# sidecar, an added sidecar, a new or vanished orphan, a changed table row,
# images come to share a stem, a class file changed.  The reports show each
# field's coverage, a histogram of caption lengths and the orphans.
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b"
cp "$F/exif_rot1.jpg" "$SRC/a/0001.jpg"
cp "$F/exif_rot2.jpg" "$SRC/a/0002.jpg"
cp "$F/gray.jpg" "$SRC/a/0003.jpg"
cp "$F/rgb.jpg" "$SRC/b/0004.jpg"
cp "$F/exif_rot3.jpg" "$SRC/b/0005.jpg"
printf 'a tench, held up\n' >"$SRC/a/0001.txt"
printf 'a goldfish' >"$SRC/a/0002.txt"                      # no newline at the end
printf 'un requin blanc \303\251tonnant\r\n' >"$SRC/a/0003.txt"  # UTF-8, CRLF
printf 'a tiger shark in a long caption, longer than the others by far\n' >"$SRC/b/0004.txt"
for i in 1 2 3 4 5; do
    d=a; [ $i -gt 3 ] && d=b
    printf '{"url": "http://example.com/%d.jpg", "width": %d,  "ok": true}\n' $i $((i * 100)) \
        >"$SRC/$d/000$i.json"
done
printf ' 0.5\n' >"$SRC/a/0001.score"
printf '2' >"$SRC/b/0004.score"
printf 'a caption of no image\n' >"$SRC/a/0099.txt"            # an orphan
cat >"$T/ann.jsonl" <<'EOF'
{"key": "a/0001.jpg", "tags": ["x", "y"], "weight": 1.25, "note": "first"}
{"key": "b/0004.jpg", "tags": ["y"], "note": null}
{"key": "zz/none.jpg", "weight": 3}
EOF
SIDECARS="--field caption=text,from=.txt --field meta=json,from=.json --field score=float,from=.score"
COLUMNS="--annotations $T/ann.jsonl --field tags=labels --field weight=float --field note=text"

# the datasets the cases check: one of sidecars, one of an annotation table too
shardify "$SRC" "$T/side" --size 48 $SIDECARS --quiet
shardify "$SRC" "$T/cols" --size 48 $COLUMNS --field caption=text,from=.txt --quiet

# check_src SRC DST WORDS [OPTIONS]: shardcheck --deep --source SRC DST fails,
# naming WORDS
check_src() {
    src=$1 dst=$2 words=$3
    shift 3
    must_fail 1 shardcheck "$dst" --deep --source "$src" "$@"
    must_say "$words" "$T/stdout"
}
# fresh: $C/s, a copy of SRC for the case to change
fresh() { rm -rf "$C/s"; cp -r "$SRC" "$C/s"; }
# cls_copy DIR: a copy of SRC with a class sidecar (.cls: " kind0" or " kind1") beside each image
cls_copy() {
    cp -r "$SRC" "$1"
    for i in 1 2 3 4 5; do
        d=a; [ $i -gt 3 ] && d=b
        printf ' kind%d\n' $((i % 2)) >"$1/$d/000$i.cls"
    done
}
# the classes of a column: kinds.jsonl's "kind", k0 to k2
for i in 1 2 3 4 5; do
    d=a; [ $i -gt 3 ] && d=b
    printf '{"key": "%s/000%d.jpg", "kind": "k%d"}\n' $d $i $((i % 3))
done >"$T/kinds.jsonl"

# the s3:// case's server (s3rver)
S3=""
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    SRV=$T/s3srv
    BUCKET=shardkit-fields
    on_exit '"$SHARDKIT_TOP/bench/s3_server.sh" stop "$SRV" >/dev/null 2>&1 || true'
    ENDPOINT=$("$SHARDKIT_TOP/bench/s3_server.sh" start "$SRV" "$BUCKET") || die "s3rver did not start"
    S3=yes
else
    echo "SKIP: an s3:// source with sidecars: Node.js and npm are not installed"
fi

case_shardify_a_folder_with_sidecars_and_one_with_an_annotation_table_too() {
    [ "$(json "$T/side/manifest.json" "d['version'], d['counts']['orphans']")" = "(3, 1)" ] ||
        die "not a version 3 dataset (one image is grey, the others RGB) with one orphan"
}

case_a_clean_dataset_verifies_with_deep_source_and_annotations() {
    shardcheck "$T/side" --deep --source "$SRC" --json >"$C/side.json" ||
        { cat "$C/side.json"; die "the sidecar dataset does not verify"; }
    [ "$(json "$C/side.json" "d['verified'], d['source']['sidecars'], d['source']['orphans']")" = \
        "(True, 12, 1)" ] || die "SRC's 12 sidecar files, 1 orphan, not seen: $(cat "$C/side.json")"
    shardcheck "$T/cols" --deep --source "$SRC" --annotations "$T/ann.jsonl" >"$C/out" ||
        { cat "$C/out"; die "the annotated dataset does not verify"; }
    must_say "verified" "$C/out"
    # without the table the columns go unchecked, and the report says so
    shardcheck "$T/cols" --source "$SRC" >"$C/out" || die "a missing --annotations is a failure"
    must_say "values from the annotation table were not checked: pass the table" "$C/out"
    must_fail 2 shardcheck "$T/cols" --annotations "$T/ann.jsonl"
    must_say "--annotations is only used with --source" "$T/err"
}

case_a_changed_caption() {
    fresh
    printf 'a tench, held up \n' >"$C/s/a/0001.txt"
    check_src "$C/s" "$T/side" "source: field 'caption' of 'a/0001.jpg' changed since sharding: 'a/0001.txt' is 18 bytes"
}

case_a_deleted_sidecar() {
    fresh
    rm "$C/s/a/0002.json"
    check_src "$C/s" "$T/side" "source: field 'meta' of 'a/0002.jpg': 'a/0002.json' is not in SRC"
}

case_an_added_sidecar() {
    fresh
    printf 'now with a caption\n' >"$C/s/b/0005.txt"
    check_src "$C/s" "$T/side" "source: 'b/0005.txt' is in SRC, but index.jsonl says 'b/0005.jpg' has no field 'caption'"
}

case_a_new_orphan_and_an_orphan_gone() {
    fresh
    printf '{}' >"$C/s/b/0100.json"
    check_src "$C/s" "$T/side" "source: 'b/0100.json' is a sidecar file of no image in SRC, but not one of the manifest's orphans"
    fresh
    rm "$C/s/a/0099.txt"
    check_src "$C/s" "$T/side" "source: orphan 'a/0099.txt' of the manifest is not a sidecar file of no image in SRC"
}

case_a_number_written_otherwise_and_another_number() {
    fresh
    printf '0.50\n' >"$C/s/a/0001.score"
    check_src "$C/s" "$T/side" "source: field 'score' of 'a/0001.jpg' changed since sharding"
    if grep -q "the record holds another value" "$T/stdout"; then
        die "0.50 is the stored value 0.5"
    fi
    printf '0.75\n' >"$C/s/a/0001.score"
    check_src "$C/s" "$T/side" "source: field 'score' of 'a/0001.jpg': the record holds another value than 'a/0001.score' gives"
}

case_images_come_to_share_a_stem_the_first_by_name_keeps_it_the_others_must_be_rejects_naming_it() {
    fresh
    cp "$F/rgb.png" "$C/s/a/0003.png"
    check_src "$C/s" "$T/side" "source: 'a/0003.png' is in SRC (another image has the same stem: 'a/0003.jpg', the stem's image (the first by name)) but is not a listed reject"
    # converted so, the later is a reject with that reason, the first a sample
    # with its sidecars, and the dataset verifies
    shardify "$C/s" "$C/stem" --size 48 $SIDECARS --quiet
    [ "$(json "$C/stem/manifest.json" "[(r['key'], r['reason']) for r in d['rejected']]")" = \
        "[('a/0003.png', \"another image has the same stem: 'a/0003.jpg', the stem's image (the first by name)\")]" ] ||
        die "the stem clash is not one reject naming the stem's image: $(cat "$C/stem/manifest.json")"
    [ "$(json "$C/stem/manifest.json" "d['counts']['samples']")" = "$(json "$T/side/manifest.json" "d['counts']['samples']")" ] ||
        die "the stem's image is no longer a sample"
    shardcheck "$C/stem" --deep --source "$C/s" >"$C/out" || { cat "$C/out"; die "the clash does not verify"; }
}

case_a_changed_table_row() {
    mkdir -p "$C/t"
    sed 's/"weight": 1.25/"weight": 1.5/' "$T/ann.jsonl" >"$C/t/ann.jsonl"
    check_src "$SRC" "$T/cols" "source: the annotation table is 'file:ann.jsonl:" --annotations "$C/t/ann.jsonl"
    must_say "source: field 'weight' of 'a/0001.jpg' changed since sharding: 'ann.jsonl' line 1 gives a value of 8 bytes" "$T/stdout"
    sed 's/"weight": 1.25/"weight": "heavy"/' "$T/ann.jsonl" >"$C/t/ann.jsonl"
    check_src "$SRC" "$T/cols" "source: field 'weight': 'ann.jsonl' line 1 is not a number (finite, decimal) (index.jsonl names a value of 8 bytes)" --annotations "$C/t/ann.jsonl"
    sed 's/"note": null/"note": "second"/' "$T/ann.jsonl" >"$C/t/ann.jsonl"
    check_src "$SRC" "$T/cols" "source: 'ann.jsonl' line 2 gives field 'note' of 'b/0004.jpg' a value, but index.jsonl says it has none" --annotations "$C/t/ann.jsonl"
    grep -v 'zz/none' "$T/ann.jsonl" >"$C/t/ann.jsonl"
    check_src "$SRC" "$T/cols" "source: the annotation table has 2 rows, counts.annotation_rows says 3" --annotations "$C/t/ann.jsonl"
}

case_a_class_from_a_sidecar_labels_sidecar_cls_is_re_derived() {
    cls_copy "$C/c"
    shardify "$C/c" "$C/cls" --size 48 --labels sidecar:.cls $SIDECARS --quiet
    [ "$(json "$C/cls/manifest.json" "d['labels'], d['counts']['by_label']")" = \
        "(['kind0', 'kind1'], {'kind0': 2, 'kind1': 3})" ] || die "the .cls classes were not taken"
    shardcheck "$C/cls" --deep --source "$C/c" >"$C/out" || { cat "$C/out"; die "sidecar classes do not verify"; }
    must_say "labels re-derived and checked" "$C/out"
    printf 'kind0\n' >"$C/c/a/0001.cls"
    check_src "$C/c" "$C/cls" "source: 'a/0001.jpg' has label 'kind1' in the dataset, SRC gives 'kind0'"
}

case_a_class_from_a_column_column_name_is_re_derived() {
    mkdir -p "$C/t"
    shardify "$SRC" "$C/col" --size 48 --labels column:kind --annotations "$T/kinds.jsonl" --quiet
    shardcheck "$C/col" --source "$SRC" --annotations "$T/kinds.jsonl" >"$C/out" ||
        { cat "$C/out"; die "column classes do not verify"; }
    must_say "labels re-derived and checked" "$C/out"
    shardcheck "$C/col" --source "$SRC" >"$C/out" || die "a missing table is a failure"
    must_say "the labels came from an annotation table; pass that table (--annotations FILE)" "$C/out"
    sed 's/"k0"/"k2"/' "$T/kinds.jsonl" >"$C/t/kinds.jsonl"
    check_src "$SRC" "$C/col" "source: 'a/0003.jpg' has label 'k0' in the dataset, SRC gives 'k2'" --annotations "$C/t/kinds.jsonl"
    # the config names the table (without fields too; version 3 for the grey image among RGB):
    # another one giving the same classes is not it
    sed 's/"kind"/"other": 1, "kind"/' "$T/kinds.jsonl" >"$C/t/kinds.jsonl"
    [ "$(json "$C/col/manifest.json" 'd["version"], d["config"]["labels"].startswith("column:kind:file:kinds.jsonl:")')" = \
      "(3, True)" ] || die "the config does not name the table: $(json "$C/col/manifest.json" 'd["config"]')"
    check_src "$SRC" "$C/col" "source: the annotation table is 'file:kinds.jsonl:" --annotations "$C/t/kinds.jsonl"
    must_say "the config says 'file:kinds.jsonl:" "$T/stdout"
}

case_one_cls_both_the_class_and_an_int_field_the_class_re_derived_the_number_held_to_its_file() {
    cls_copy "$C/n"
    printf 'kind0\n' >"$C/n/a/0001.cls"  # as the sidecar class case leaves it
    sed -i 's/ *kind//' "$C/n"/?/*.cls  # the classes above as numbers: 0 0 1 0 1
    shardify "$C/n" "$C/ncls" --size 48 --labels sidecar:.cls --field kind=int,from=.cls --quiet
    [ "$(json "$C/ncls/manifest.json" "len(d['labels']), d['counts']['unlabeled'], d['counts']['fields']")" = \
        "(2, 0, {'kind': 5})" ] || die "the .cls classes and numbers were not taken"
    shardcheck "$C/ncls" --deep --source "$C/n" >"$C/out" ||
        { cat "$C/out"; die "a .cls that is the class and a field does not verify"; }
    must_say "labels re-derived and checked" "$C/out"
    printf '1\n' >"$C/n/a/0001.cls"
    check_src "$C/n" "$C/ncls" "source: 'a/0001.jpg' has label '"
    must_say "source: field 'kind' of 'a/0001.jpg' changed since sharding: 'a/0001.cls' is 2 bytes" "$T/stdout"
}

case_an_archive_of_the_folder_the_same_checks_entries_streamed() {
    (cd "$SRC" && tar -cf "$C/src.tar" a b)
    shardify "$C/src.tar" "$C/tar" --size 48 $SIDECARS --quiet
    shardcheck "$C/tar" --deep --source "$C/src.tar" >"$C/out" || { cat "$C/out"; die "the archive's dataset does not verify"; }
    fresh
    printf 'a goldfish!' >"$C/s/a/0002.txt"
    rm "$C/s/a/0099.txt"
    cp "$F/rgb.png" "$C/s/b/0004.png"
    (cd "$C/s" && tar -cf "$C/s.tar" a b)
    check_src "$C/s.tar" "$C/tar" "source: field 'caption' of 'a/0002.jpg' changed since sharding: 'a/0002.txt' is 11 bytes"
    must_say "source: orphan 'a/0099.txt' of the manifest is not a sidecar file of no image in SRC" "$T/stdout"
    must_say "source: 'b/0004.png' is in SRC but is neither a sample nor a listed reject" "$T/stdout"
    shardify "$C/s.tar" "$C/tar-stem" --size 48 $SIDECARS --quiet
    shardcheck "$C/tar-stem" --deep --source "$C/s.tar" >"$C/out" || { cat "$C/out"; die "an archive's clash does not verify"; }
}

case_a_directory_of_archives_archives_as_img2dataset_writes_them_keys_name_their_tar() {
    mkdir -p "$C/tars"
    (cd "$SRC/a" && tar -cf "$C/tars/00000.tar" 0001.jpg 0001.txt 0001.json 0001.score 0002.jpg \
        0002.txt 0002.json 0099.txt)
    (cd "$SRC/b" && tar -cf "$C/tars/00001.tar" 0004.jpg 0004.txt 0004.json 0005.jpg 0005.json)
    printf '{}' >"$C/tars/00000_stats.json"
    shardify --archives "$C/tars" "$C/wds" --size 48 $SIDECARS --quiet
    [ "$(json "$C/wds/manifest.json" "d['source']['kind'], d['orphans']")" = \
        "('archives', [{'key': '00000.tar/0099.txt'}])" ] || die "not a dataset of archives"
    shardcheck "$C/wds" --deep --source "$C/tars" >"$C/out" || { cat "$C/out"; die "the archives' dataset does not verify"; }
    mkdir -p "$C/tars2"
    cp "$C/tars/00000.tar" "$C/tars/00000_stats.json" "$C/tars2/"
    rm -rf "$C/b2" && cp -r "$SRC/b" "$C/b2" && printf 'a changed shark\n' >"$C/b2/0004.txt"
    (cd "$C/b2" && tar -cf "$C/tars2/00001.tar" 0004.jpg 0004.txt 0004.json 0005.jpg 0005.json)
    check_src "$C/tars2" "$C/wds" "source: field 'caption' of '00001.tar/0004.jpg' changed since sharding: '00001.tar/0004.txt' is 16 bytes"
}

case_the_reports_each_fields_coverage_caption_lengths_the_orphans() {
    shardcheck "$T/side" >"$C/out"
    must_say "field 'caption' (text, sidecar .txt): 4 of 5 samples (80.0%)" "$C/out"
    must_say "field 'score' (float, sidecar .score): 2 of 5 samples (40.0%)" "$C/out"
    shortest=$(cat "$SRC/a/0002.txt" | wc -c) longest=$(cat "$SRC/b/0004.txt" | wc -c)
    must_say "text lengths in bytes, $shortest to $longest:" "$C/out"
    must_say "orphans (sidecar files of no image): 1" "$C/out"
    must_say "'a/0099.txt'" "$C/out"
    shardcheck "$T/cols" --json >"$C/cols.json"
    [ "$(json "$C/cols.json" "[(f['name'], f['type'], f['source'], f['samples'], f['of']) for f in d['contents']['fields']]")" = \
        "[('tags', 'labels', {'column': 'tags'}, 2, 5), ('weight', 'float', {'column': 'weight'}, 1, 5), ('note', 'text', {'column': 'note'}, 1, 5), ('caption', 'text', {'sidecar': '.txt'}, 4, 5)]" ] ||
        die "coverage in --json: $(json "$C/cols.json" "d['contents']['fields']")"
    [ "$(json "$C/cols.json" "[f['lengths']['count'] for f in d['contents']['fields'] if f['type'] == 'text']")" = "[1, 4]" ] ||
        die "no histogram of the text fields' lengths"
    [ "$(json "$C/cols.json" "d['contents']['orphans']")" = "{'count': 1, 'listed': [{'key': 'a/0099.txt'}], 'not_listed': 0}" ] ||
        die "orphans in --json"
    shardcheck "$T/side" --report "$C/report.html" >/dev/null
    for id in fields field-coverage field-table text-lengths-caption orphans orphan-table; do
        grep -q "id=\"$id\"" "$C/report.html" || die "no '$id' in the HTML report"
    done
    grep -q "a/0099.txt" "$C/report.html" || die "the orphan is not listed in the HTML report"
}

case_an_s3_source_sidecar_objects_found_and_checked_the_same_way() {
    [ -n "$S3" ] || return 0
    mkdir -p "$C/home"
    export HOME="$C/home" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
    export AWS_ENDPOINT_URL="$ENDPOINT"
    unset AWS_PROFILE AWS_SESSION_TOKEN 2>/dev/null || true
    H="x-amz-content-sha256: UNSIGNED-PAYLOAD"
    (cd "$SRC" && find . -type f | sed 's|^\./||') | while IFS= read -r f; do
        curl -sS -f -H "$H" -T "$SRC/$f" "$ENDPOINT/$BUCKET/src/$f" -o /dev/null || exit 1
    done || die "cannot upload SRC"
    shardify "s3://$BUCKET/src" "$C/from-s3" --size 48 $SIDECARS --quiet
    same_tree "$T/side" "$C/from-s3"
    shardcheck "$C/from-s3" --deep --source "s3://$BUCKET/src" >"$C/out" ||
        { cat "$C/out"; die "the s3:// source does not verify"; }
    curl -sS -f -X DELETE -H "$H" "$ENDPOINT/$BUCKET/src/a/0001.txt" -o /dev/null
    check_src "s3://$BUCKET/src" "$C/from-s3" "source: field 'caption' of 'a/0001.jpg': 'a/0001.txt' is not in SRC"
}

run_cases
