# test_readme_layouts.sh - every source layout the guides show (the README's
# five commands, docs/guide/sources.md, fields.md, boxes-and-masks.md,
# parts.md, shardify.md), converted with the guide's own command (at a small
# --size) from generated data,
# then proved by shardcheck --deep --source: a folder of class folders, an
# archive, labels from a CSV file, a regex, a sidecar (.cls) or a table
# column, img2dataset's folder of WebDataset tars with captions and
# metadata, WebDataset tars with .cls classes, a folder with a JSON Lines
# annotation table, COCO boxes, masks and instances, mask sidecars
# (_mask.png, and a WebDataset tar's .seg.png), VOC's and Cityscapes' mask
# folders (255: void), second images (a depth map, WebDataset's x.left.jpg
# and x.right.jpg), a Hugging Face imagefolder (splits, metadata.jsonl)
# and a table keyed by another column, a conversion in parts and its merge
# (and a check in parts and its combine),
# an incremental run, and archives named by URL.  Every one must verify,
# and (lib.sh) every manifest must agree with manifests/.  Each command's
# options are held to its page first: a guide that stops showing a command
# run here fails the test, so the guide and the test change together.
. "$(dirname "$0")/lib.sh"

# shown PAGE TEXT: PAGE (a path in the checkout) shows TEXT in a sh block
shown() {
    awk '/^```sh$/ { b = 1; next } /^```$/ { b = 0 } b' "$SHARDKIT_TOP/$1" | tr -s ' \\\n' ' ' |
        grep -q -F -- "$2" || die "$1 no longer shows '$2', which this test runs"
}
say "the commands run below are the ones the guides show"
shown README.md "shardify photos.tar.zst /data/shards --size 256"
shown README.md "shardcheck --deep --source /data/raw /data/shards"
shown docs/guide/fields.md "shardify --archives laion-tars/ shards/ --size 256 --labels none --field caption=text,from=.txt,required --field meta=json,from=.json"
shown docs/guide/fields.md "shardify photos/ shards/ --labels none --annotations captions.jsonl --field caption=text --field score=float --field tags=labels"
shown docs/guide/boxes-and-masks.md "--coco coco/annotations/instances_train2017.json --coco-mask"
shown docs/guide/boxes-and-masks.md "--coco coco/annotations/instances_train2017.json --coco-instances"
shown docs/guide/boxes-and-masks.md "--keys VOC2012/ImageSets/Segmentation/train.txt --field seg=mask,from=../SegmentationClass/,classes=voc_classes.txt,ignore=255,required"
shown docs/guide/boxes-and-masks.md "--field seg=mask,from=../../gtFine/train/,replace=_leftImg8bit:_gtFine_labelTrainIds,classes=cityscapes_classes.txt,ignore=255,required"
shown docs/guide/boxes-and-masks.md "shardify --archives wds-seg/ shards/ --size 512 --labels none --field seg=mask,from=.seg.png,classes=classes.txt,ignore=255,required"
shown docs/guide/boxes-and-masks.md "shardify rgbd/ shards/ --size 256 --field depth=image,from=.depth.png,required"
shown docs/guide/boxes-and-masks.md "shardify --archives stereo-wds/ shards-stereo/ --size 256 --field right=image,from=.right.jpg,required"
shown docs/guide/sources.md "shardify hf/ shards-train/ --split train --field text=text"
shown docs/guide/sources.md "shardify photos/ shards/ --labels none --annotations photos.csv --key-column path --field caption=text"
shown docs/guide/sources.md "shardify 'https://data.example.org/shards/{00000..00099}.tar' shards/ --labels sidecar:.cls"
shown docs/guide/parts.md "shardify --part 2/3 SRC DST"
shown docs/guide/parts.md "shardify merge DST"
shown docs/guide/parts.md "mkdir results "
shown docs/guide/parts.md "shardcheck --part 2/3 --result results/ DST"
shown docs/guide/parts.md "shardcheck --combine results/ DST"

L=$T/layouts
mkdir -p "$L"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/make_layouts.py" "$L"
(cd "$L/raw" && tar --zstd -cf "$L/photos.tar.zst" cat dog top.jpg README.txt)
S="--size 32 --quiet"

# layout NAME SRC DST [SHARDCHECK OPTIONS...]: shardcheck --deep --source
# SRC DST verifies; its report in $T/NAME.check
layout() {
    name=$1 src=$2 dst=$3
    shift 3
    shardcheck --deep --source "$src" "$dst" "$@" >"$T/$name.check" 2>&1 ||
        { cat "$T/$name.check" >&2; die "$name: the dataset of the guide's layout does not verify"; }
    must_say "verified '$dst'" "$T/$name.check"
}

say "Quick start: a directory of class folders, and an archive of it"
shardify "$L/raw" "$T/classes" $S
layout classes "$L/raw" "$T/classes"
[ "$(json "$T/classes/manifest.json" "d['counts']['samples'], d['counts']['rejected'], d['counts']['ignored'], d['labels']")" = \
    "(6, 1, 1, ['cat', 'dog'])" ] || die "the class folders: $(cat "$T/classes/manifest.json")"
shardify "$L/photos.tar.zst" "$T/archive" $S
layout archive "$L/photos.tar.zst" "$T/archive"

say "--labels: a CSV file, a regex"
shardify "$L/raw" "$T/csv" $S --labels "$L/labels.csv"
layout csv "$L/raw" "$T/csv" --labels "$L/labels.csv"
shardify "$L/raw" "$T/regex" $S --labels 'regex:^([a-z]+)/'
layout regex "$L/raw" "$T/regex"

say "img2dataset output: jpg + txt + json per sample, in tar shards (--archives)"
shardify --archives "$L/laion-tars/" "$T/laion" --size 32 --labels none \
    --field caption=text,from=.txt,required --field meta=json,from=.json --quiet
layout laion "$L/laion-tars" "$T/laion"
[ "$(json "$T/laion/manifest.json" "d['counts']['fields'], d['counts']['sidecars'], d['counts']['ignored'], d['orphans']")" = \
    "({'caption': 6, 'meta': 6}, 12, 4, [{'key': '00001.tar/0000199.txt'}])" ] ||
    die "the img2dataset tars: $(cat "$T/laion/manifest.json")"

say "WebDataset tars with .cls classes (--labels sidecar:.cls)"
shardify --archives "$L/wds" "$T/wds" $S --labels sidecar:.cls
layout wds "$L/wds" "$T/wds"
[ "$(json "$T/wds/manifest.json" "d['counts']['unlabeled'], len(d['labels'])")" = "(0, 2)" ] ||
    die "the .cls classes: $(cat "$T/wds/manifest.json")"

say "a folder and a JSON Lines table, and a class from its column"
shardify "$L/photos/" "$T/table" --labels none --annotations "$L/captions.jsonl" \
    --field caption=text --field score=float --field tags=labels --quiet
layout table "$L/photos" "$T/table" --annotations "$L/captions.jsonl"
shardify "$L/photos/" "$T/column" $S --labels column:kind --annotations "$L/captions.jsonl"
layout column "$L/photos" "$T/column" --annotations "$L/captions.jsonl"

say "COCO boxes and masks (--coco, --coco-mask, --coco-instances)"
shardify "$L/coco/train2017/" "$T/coco" --size 32 --labels none \
    --coco "$L/coco/annotations/instances_train2017.json" --coco-mask --quiet
layout coco "$L/coco/train2017" "$T/coco"
[ "$(json "$T/coco/manifest.json" "d['counts']['boxes'], d['counts']['coco_annotations'], [f['name'] for f in d['config']['fields']]")" = \
    "(3, 3, ['boxes', 'mask'])" ] || die "the COCO dataset: $(cat "$T/coco/manifest.json")"
shardify "$L/coco/train2017/" "$T/coco-instances" --size 32 --labels none \
    --coco "$L/coco/annotations/instances_train2017.json" --coco-instances --quiet
layout coco_instances "$L/coco/train2017" "$T/coco-instances"
[ "$(json "$T/coco-instances/manifest.json" "[(f['name'], f['type']) for f in d['config']['fields']], d['counts']['fields']")" = \
    "([('boxes', 'boxes'), ('masks', 'instances')], {'boxes': 3, 'masks': 3})" ] ||
    die "the COCO instances: $(cat "$T/coco-instances/manifest.json")"

say "masks: sidecars (from=_mask.png) and a VOC-style folder (from=../SegmentationClass/)"
shardify "$L/seg" "$T/seg" $S --labels none --field "seg=mask,from=_mask.png,classes=$L/classes.txt"
layout seg "$L/seg" "$T/seg"
(cd "$L" && shardify VOC2012/JPEGImages/ "$T/voc" --size 32 --labels none \
    --keys VOC2012/ImageSets/Segmentation/train.txt \
    --field seg=mask,from=../SegmentationClass/,classes=voc_classes.txt,ignore=255,required --quiet)
layout voc "$L/VOC2012/JPEGImages" "$T/voc" --keys "$L/VOC2012/ImageSets/Segmentation/train.txt"
[ "$(json "$T/voc/manifest.json" "d['config']['fields'][0]['folder'], d['config']['fields'][0]['ignore'], d['counts']['fields'], d['counts']['ignored']")" = \
    "('../SegmentationClass/', 255, {'seg': 3}, 1)" ] || die "the mask folder: $(cat "$T/voc/manifest.json")"

(cd "$L" && shardify cityscapes/leftImg8bit/train/ "$T/cityscapes" --size 32 --labels none \
    --field seg=mask,from=../../gtFine/train/,replace=_leftImg8bit:_gtFine_labelTrainIds,classes=cityscapes_classes.txt,ignore=255,required --quiet)
layout cityscapes "$L/cityscapes/leftImg8bit/train" "$T/cityscapes"
[ "$(json "$T/cityscapes/manifest.json" "d['counts']['samples'], d['counts']['fields'], d['orphans']")" = \
    "(4, {'seg': 4}, [])" ] || die "the Cityscapes masks: $(cat "$T/cityscapes/manifest.json")"

(cd "$L" && shardify --archives wds-seg/ "$T/wds-seg" --size 32 --labels none \
    --field seg=mask,from=.seg.png,classes=classes.txt,ignore=255,required --quiet)
layout wds_seg "$L/wds-seg" "$T/wds-seg"
[ "$(json "$T/wds-seg/manifest.json" "d['counts']['samples'], d['counts']['fields'], d['counts']['sidecars']")" = \
    "(6, {'seg': 6}, 6)" ] || die "the WebDataset masks: $(cat "$T/wds-seg/manifest.json")"

say "second images: a depth map beside each photo, and WebDataset tars of x.left.jpg and x.right.jpg"
(cd "$L" && shardify rgbd/ "$T/rgbd" --size 32 --field depth=image,from=.depth.png,required --quiet &&
    shardify --archives stereo-wds/ "$T/stereo" --size 32 --field right=image,from=.right.jpg,required --quiet)
layout rgbd "$L/rgbd" "$T/rgbd"
layout stereo "$L/stereo-wds" "$T/stereo"
[ "$(json "$T/rgbd/manifest.json" "d['counts']['samples'], d['counts']['fields']")" = "(3, {'depth': 3})" ] ||
    die "the depth maps: $(cat "$T/rgbd/manifest.json")"
[ "$(json "$T/stereo/manifest.json" "d['counts']['samples'], d['counts']['fields'], d['orphans']")" = \
    "(3, {'right': 3}, [])" ] || die "the image pairs: $(cat "$T/stereo/manifest.json")"

say "Hugging Face imagefolder: split folders, metadata.jsonl keyed by file_name, --key-column"
(cd "$L" && shardify hf/ "$T/hf" --field text=text --size 32 --quiet &&
    shardify hf/ "$T/hf-train" --split train --field text=text --size 32 --quiet)
layout hf_test "$L/hf" "$T/hf/test"
layout hf_train "$L/hf" "$T/hf-train"
[ "$(json "$T/hf/test/manifest.json" "d['labels'], d['counts']['fields']")" = "(['bird', 'cat', 'dog'], {'text': 4})" ] ||
    die "the imagefolder: $(cat "$T/hf/test/manifest.json")"
(cd "$L" && shardify photos_csv/ "$T/keyed" --labels none --annotations photos.csv --key-column path \
    --field caption=text --size 32 --quiet)
layout keyed "$L/photos_csv" "$T/keyed" --annotations "$L/photos.csv"

say "a conversion in parts and its merge"
for i in 0 1 2; do
    shardify --part "$i/3" "$L/raw" "$T/parts" $S
done
shardify merge --quiet "$T/parts"
layout parts "$L/raw" "$T/parts"
say "a check in parts and its combine: the verdict of a whole check"
mkdir "$T/results"
for i in 0 1 2; do
    shardcheck --part "$i/3" --result "$T/results/" "$T/parts" >"$T/part-$i.check" 2>&1 ||
        { cat "$T/part-$i.check" >&2; die "part $i of the check did not write its result"; }
done
[ "$(ls "$T/results" | wc -l)" = 3 ] || die "the parts wrote: $(ls "$T/results")"
shardcheck --combine "$T/results/" "$T/parts" >"$T/combine.check" 2>&1 ||
    { cat "$T/combine.check" >&2; die "the combined check of the merged parts does not verify"; }
must_say "verified '$T/parts'" "$T/combine.check"

say "an incremental run after the source changed"
cp "$L/raw/cat/c0.jpg" "$L/raw/cat/c9.jpg"
rm "$L/raw/dog/d1.png"
shardify --incremental "$T/classes" "$L/raw" "$T/incremental" $S
layout incremental "$L/raw" "$T/incremental"
[ "$(json "$T/incremental/manifest.json" "d['lineage']['added'], d['lineage']['removed']")" = "(1, 1)" ] ||
    die "the lineage: $(cat "$T/incremental/manifest.json")"

say "archives named by URL, over a real nginx"
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    on_exit '"$SHARDKIT_TOP/bench/http_server.sh" stop "$T/http" >/dev/null 2>&1'
    U=$("$SHARDKIT_TOP/bench/http_server.sh" start "$T/http" shards="$L/wds") ||
        die "cannot start nginx"
    shardify "$U/shards/{00000..00001}.tar" "$T/url" --labels sidecar:.cls --size 32 --quiet
    layout url "$U/shards/{00000..00001}.tar" "$T/url"
    [ "$(json "$T/url/manifest.json" "d['counts']['samples'], d['source']['kind']")" = "(6, 'archives')" ] ||
        die "the archives by URL: $(cat "$T/url/manifest.json")"
else
    echo "SKIP: nginx is not installed: the URL layout not run"
fi

echo "every layout the guides show verifies"
