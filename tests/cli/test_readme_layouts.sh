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

# layout NAME SRC DST [SHARDCHECK OPTIONS...]: shardcheck --deep --source
# SRC DST verifies; its report in $T/NAME.check
layout() {
    name=$1 src=$2 dst=$3
    shift 3
    shardcheck --deep --source "$src" "$dst" "$@" >"$T/$name.check" 2>&1 ||
        { cat "$T/$name.check" >&2; die "$name: the dataset of the layout does not verify"; }
    must_say "verified '$dst'" "$T/$name.check"
}

say "a directory of class folders"
shardify "$L/raw" "$T/classes" $S
layout classes "$L/raw" "$T/classes"
[ "$(json "$T/classes/manifest.json" "d['counts']['samples'], d['counts']['rejected'], d['counts']['ignored'], d['labels']")" = \
    "(6, 1, 1, ['cat', 'dog'])" ] || die "the class folders: $(cat "$T/classes/manifest.json")"

say "--labels: a CSV file, a regex"
shardify "$L/raw" "$T/csv" $S --labels "$L/labels.csv"
layout csv "$L/raw" "$T/csv" --labels "$L/labels.csv"
shardify "$L/raw" "$T/regex" $S --labels 'regex:^([a-z]+)/'
layout regex "$L/raw" "$T/regex"

say "WebDataset tars with .cls classes (--labels sidecar:.cls)"
shardify --archives "$L/wds" "$T/wds" $S --labels sidecar:.cls
layout wds "$L/wds" "$T/wds"
[ "$(json "$T/wds/manifest.json" "d['counts']['unlabeled'], len(d['labels'])")" = "(0, 2)" ] ||
    die "the .cls classes: $(cat "$T/wds/manifest.json")"

say "a class from a column of a JSON Lines table"
shardify "$L/photos/" "$T/column" $S --labels column:kind --annotations "$L/captions.jsonl"
layout column "$L/photos" "$T/column" --annotations "$L/captions.jsonl"

say "masks: sidecars (from=_mask.png)"
shardify "$L/seg" "$T/seg" $S --labels none --field "seg=mask,from=_mask.png,classes=$L/classes.txt"
layout seg "$L/seg" "$T/seg"

say "an incremental run after the source changed"
cp "$L/raw/cat/c0.jpg" "$L/raw/cat/c9.jpg"
rm "$L/raw/dog/d1.png"
shardify --incremental "$T/classes" "$L/raw" "$T/incremental" $S
layout incremental "$L/raw" "$T/incremental"
[ "$(json "$T/incremental/manifest.json" "d['lineage']['added'], d['lineage']['removed']")" = "(1, 1)" ] ||
    die "the lineage: $(cat "$T/incremental/manifest.json")"

echo "every layout verifies"
