# test_readme_layouts.sh - the source layouts no block of the guides runs
# (tests/cli/test_doc_blocks.sh runs those, with their layouts' checks),
# converted from generated data (tests/fixtures/make_layouts.py) and proved
# by shardcheck --deep --source: a folder of class folders (what it counts),
# labels from a CSV file, a regex, a sidecar (.cls) or a table column, mask
# sidecars (_mask.png), and an incremental run.  Every one must verify, and
# (lib.sh) every manifest must agree with manifests/.
. "$(dirname "$0")/lib.sh"

L=$T/layouts
mkdir -p "$L"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/make_layouts.py" "$L"
S="--size 32 --quiet"

case_a_directory_of_class_folders_verifies_with_its_counts_and_labels() {
    shardify "$L/raw" "$C/classes" $S
    verifies classes "$L/raw" "$C/classes"
    [ "$(json "$C/classes/manifest.json" \
        "d['counts']['samples'], d['counts']['rejected'], d['counts']['ignored'], d['labels']")" = \
        "(6, 1, 1, ['cat', 'dog'])" ] || die "the class folders: $(cat "$C/classes/manifest.json")"
}

case_labels_from_a_csv_file_and_from_a_regex_verify() {
    shardify "$L/raw" "$C/csv" $S --labels "$L/labels.csv"
    verifies csv "$L/raw" "$C/csv" --labels "$L/labels.csv"
    shardify "$L/raw" "$C/regex" $S --labels 'regex:^([a-z]+)/'
    verifies regex "$L/raw" "$C/regex"
}

case_webdataset_tars_with_cls_classes_labels_sidecar_cls_verify() {
    shardify --archives "$L/wds" "$C/wds" $S --labels sidecar:.cls
    verifies wds "$L/wds" "$C/wds"
    [ "$(json "$C/wds/manifest.json" "d['counts']['unlabeled'], len(d['labels'])")" = "(0, 2)" ] ||
        die "the .cls classes: $(cat "$C/wds/manifest.json")"
}

case_a_class_from_a_column_of_a_json_lines_table_verifies() {
    shardify "$L/photos/" "$C/column" $S --labels column:kind --annotations "$L/captions.jsonl"
    verifies column "$L/photos" "$C/column" --annotations "$L/captions.jsonl"
}

case_masks_from_sidecars_from_mask_png_verify() {
    shardify "$L/seg" "$C/seg" $S --labels none --field "seg=mask,from=_mask.png,classes=$L/classes.txt"
    verifies seg "$L/seg" "$C/seg"
}

case_an_incremental_run_after_the_source_changed_verifies_with_its_lineage() {
    # the source changes: a copy of it, converted before the change
    cp -a "$L/raw" "$C/raw"
    shardify "$C/raw" "$C/classes" $S
    cp "$C/raw/cat/c0.jpg" "$C/raw/cat/c9.jpg"
    rm "$C/raw/dog/d1.png"
    shardify --incremental "$C/classes" "$C/raw" "$C/incremental" $S
    verifies incremental "$C/raw" "$C/incremental"
    [ "$(json "$C/incremental/manifest.json" "d['lineage']['added'], d['lineage']['removed']")" = \
        "(1, 1)" ] ||
        die "the lineage: $(cat "$C/incremental/manifest.json")"
}

run_cases
