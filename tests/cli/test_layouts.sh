# test_layouts.sh - datasets as the other tools lay them out: a fixed class
# list (--classes) for a folder, for WebDataset's numeric .cls and for the
# parts of a folder of archives; a Hugging Face imagefolder (split folders,
# metadata.jsonl keyed by file_name, one class list across the splits);
# --key-column on any table; VOC split lists and ignore values; WebDataset
# samples of a mask sidecar or of two images; archives named by URL.  Every
# dataset is proved by shardcheck --deep --source, and every refusal names
# its subject.
. "$(dirname "$0")/lib.sh"

L=$T/layouts
mkdir -p "$L"
"$PYTHON" - "$L" <<'EOF'
import csv, io, json, os, sys, tarfile
from PIL import Image

top = sys.argv[1]


def picture(path, k):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.new("RGB", (20, 16), (40 * k % 256, 90, 200 - 30 * k % 200)).save(path)


def jpeg_bytes(k):
    out = io.BytesIO()
    Image.new("RGB", (20, 16), (30 * k % 256, 60, 90)).save(out, "JPEG")
    return out.getvalue()


# class folders, and a fixed list that orders them otherwise and has one more
for c in ("cat", "dog"):
    for k in range(2):
        picture(f"{top}/pets/{c}/{k}.jpg", k)
with open(f"{top}/classes.txt", "w") as f:
    f.write("dog\ncat\nbird\n")
json.dump([{"id": 1, "name": "cat"}, {"id": 0, "name": "dog"}], open(f"{top}/classes.json", "w"))

# WebDataset tars with numeric .cls, named by a list
os.makedirs(f"{top}/wds", exist_ok=True)
for s in range(2):
    with tarfile.open(f"{top}/wds/{s:05d}.tar", "w") as t:
        for k in range(3):
            for name, data in ((f"{s}{k}.jpg", jpeg_bytes(k)), (f"{s}{k}.cls", f"{k}\n".encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
with open(f"{top}/wds_names.txt", "w") as f:
    f.write("zero\none\ntwo\n")

# a Hugging Face imagefolder: train/ and test/ with class folders that are
# not the same in both, and a metadata.jsonl (train) and metadata.csv (test)
# keyed by file_name
for split, classes in (("train", ("bird", "cat")), ("test", ("cat", "dog"))):
    rows = []
    for c in classes:
        for k in range(2):
            picture(f"{top}/hf/{split}/{c}/{k}.png", k)
            rows.append({"file_name": f"{c}/{k}.png", "text": f"a {c}, {split} {k}"})
    if split == "train":
        with open(f"{top}/hf/train/metadata.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    else:
        with open(f"{top}/hf/test/metadata.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["file_name", "text"])
            w.writeheader()
            w.writerows(rows)

# a flat imagefolder with its metadata beside the images, and a table whose
# key column is named otherwise
for k in range(3):
    picture(f"{top}/flat/{k}.jpg", k)
with open(f"{top}/flat/metadata.jsonl", "w") as f:
    f.writelines(json.dumps({"file_name": f"{k}.jpg", "caption": f"photo {k}"}) + "\n"
                 for k in range(3))
with open(f"{top}/photos.csv", "w") as f:
    f.write("path,caption\n" + "".join(f"{k}.jpg,photo {k}\n" for k in range(3)))
EOF

# the named classes of a folder of archives (the parts' case)
printf 'a\nb\nc\n' >"$L/letters.txt"
"$PYTHON" - "$L" <<'EOF'
import io, os, sys, tarfile
from PIL import Image
top = sys.argv[1]
os.makedirs(f"{top}/named", exist_ok=True)
for s, cls in enumerate("cab"):
    with tarfile.open(f"{top}/named/{s:05d}.tar", "w") as t:
        for k in range(2):
            out = io.BytesIO()
            Image.new("RGB", (20, 16), (9 * k, 60, 90)).save(out, "JPEG")
            for name, data in ((f"{cls}/{k}.jpg", out.getvalue()),):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
EOF

# VOC: JPEGImages, SegmentationClass (2007_002 has no mask), a split list
mkdir -p "$L/voc/JPEGImages" "$L/voc/SegmentationClass"
for k in 0 1 2; do
    cp "$L/pets/cat/0.jpg" "$L/voc/JPEGImages/2007_00$k.jpg"
done
"$PYTHON" - "$L/voc" <<'EOF'
import sys
import numpy as np
from PIL import Image
for k in range(2):  # 2007_002 has no mask
    m = np.ones((16, 20), np.uint8)
    m[0, :] = 255  # a void border
    Image.fromarray(m, "P").save(f"{sys.argv[1]}/SegmentationClass/2007_00{k}.png")
EOF
printf 'background\naeroplane\n' >"$L/voc/classes.txt"
printf '2007_000\n2007_001.jpg  1\n\n' >"$L/voc/train.txt"
F="seg=mask,from=../SegmentationClass/,classes=$L/voc/classes.txt,ignore=255,required"

# WebDataset segmentation: x.jpg and x.seg.png in one tar sample, COCO boxes
mkdir -p "$L/wds_seg"
"$PYTHON" - "$L" <<'EOF'
import io, json, sys, tarfile
import numpy as np
from PIL import Image
top = sys.argv[1]
def png(arr, mode):
    b = io.BytesIO()
    Image.fromarray(arr, mode).save(b, "PNG")
    return b.getvalue()
images, anns = [], []
for s in range(2):
    with tarfile.open(f"{top}/wds_seg/{s:05d}.tar", "w") as t:
        for k in range(3):
            img = np.zeros((30, 40, 3), np.uint8)
            img[:, :20] = 200
            m = np.zeros((30, 40), np.uint8)
            m[:, :20] = 1 + k % 2
            m[0] = 255
            for name, data in ((f"{s}{k}.jpg", png(img, "RGB")), (f"{s}{k}.seg.png", png(m, "L"))):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            images.append({"id": len(images) + 1, "file_name": f"{s:05d}.tar/{s}{k}.jpg",
                           "width": 40, "height": 30})
            anns.append({"id": len(anns) + 1, "image_id": len(images), "category_id": 1,
                         "bbox": [0, 0, 20, 30], "iscrowd": 0})
json.dump({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "left"}]},
          open(f"{top}/wds_seg.json", "w"))
EOF
printf 'background\na\nb\n' >"$L/seg_classes.txt"
SEG="seg=mask,from=.seg.png,classes=$L/seg_classes.txt,ignore=255,required"

# a WebDataset sample of two images (x.jpg, x.png)
"$PYTHON" - "$L" <<'EOF'
import io, os, sys, tarfile
from PIL import Image
top = sys.argv[1]
os.makedirs(f"{top}/pairs", exist_ok=True)
def image(fmt, k):
    out = io.BytesIO()
    Image.new("RGB", (20, 16), (50 * k, 80, 120)).save(out, fmt)
    return out.getvalue()
with tarfile.open(f"{top}/pairs/00000.tar", "w") as t:
    for k in range(3):
        for name, data in ((f"{k}.jpg", image("JPEG", k)), (f"{k}.png", image("PNG", k)),
                           (f"{k}.cls", f"{k % 2}".encode()), (f"{k}.txt", f"pair {k}".encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
EOF
S="--size 16 --quiet"

# labels_of DST: "KEY LABEL" a line, sorted, from every index file of DST
labels_of() {
    "$PYTHON" - "$1" <<'EOF'
import json, os, sys
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
files = [m["index"]["file"]] if "index" in m else [i["file"] for i in m["indexes"]]
lines = []
for f in files:
    for line in open(os.path.join(d, f)):
        x = json.loads(line)
        lines.append(f"{x['key']} {x['label']}")
print("\n".join(sorted(lines)))
EOF
}

# the archives served by nginx (the URL case)
HTTP_SERVER="$SHARDKIT_TOP/bench/http_server.sh"
U=""
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    on_exit '"$HTTP_SERVER" stop "$T/http" >/dev/null 2>&1'
    U=$("$HTTP_SERVER" start "$T/http" wds="$L/wds_seg" laion="$L/wds") || die "cannot start nginx"
else
    echo "SKIP: nginx is not installed (scripts/deps.sh installs it): URL sources not run"
fi
same_samples() {  # the datasets $1 and $2 hold the same samples, labels, sources and fields
    [ "$(labels_of "$1")" = "$(labels_of "$2")" ] &&
        [ "$(json "$1/manifest.json" "d['counts'], d['config']")" = "$(json "$2/manifest.json" "d['counts'], d['config']")" ] &&
        cmp -s "$1/index.jsonl" "$2/index.jsonl"
}

case_classes_the_lists_classes_in_its_order_one_no_sample_has_kept() {
    shardify "$L/pets" "$C/fixed" $S --classes "$L/classes.txt"
    [ "$(json "$C/fixed/manifest.json" "d['labels'], d['counts']['by_label'], d['config']['classes'][:17]")" = \
        "(['dog', 'cat', 'bird'], {'dog': 2, 'cat': 2, 'bird': 0}, 'file:classes.txt:')" ] ||
        die "the fixed classes: $(cat "$C/fixed/manifest.json")"
    # every sample's label is its folder's place in the list
    [ "$(labels_of "$C/fixed" | tr '\n' ' ')" = "cat/0.jpg 1 cat/1.jpg 1 dog/0.jpg 0 dog/1.jpg 0 " ] ||
        die "the labels of the fixed classes: $(labels_of "$C/fixed")"
    verifies fixed "$L/pets" "$C/fixed"
    shardify "$L/pets" "$C/fixed_json" $S --classes "$L/classes.json"
    [ "$(json "$C/fixed_json/manifest.json" "d['labels']")" = "['dog', 'cat']" ] ||
        die "a JSON list of {id, name}: $(cat "$C/fixed_json/manifest.json")"
    verifies fixed_json "$L/pets" "$C/fixed_json"
}

case_classes_a_class_the_list_lacks_and_a_list_that_is_no_list_are_refused_by_name() {
    printf 'dog\n' >"$C/short.txt"
    must_fail 1 shardify "$L/pets" "$C/short" $S --classes "$C/short.txt"
    must_say "'cat/0.jpg' has the class 'cat', which --classes '$C/short.txt' does not list" "$T/err"
    [ ! -e "$C/short" ] || die "a refused run left '$C/short'"
    printf '["a", "b", "a"]' >"$C/twice.json"
    must_fail 1 shardify "$L/pets" "$C/twice" $S --classes "$C/twice.json"
    must_say "classes file '$C/twice.json' names 'a' twice" "$T/err"
    printf '[{"id": 0, "name": "a"}, {"id": 2, "name": "b"}]' >"$C/gap.json"
    must_fail 1 shardify "$L/pets" "$C/gap" $S --classes "$C/gap.json"
    must_say "classes file '$C/gap.json' leaves out class number 1" "$T/err"
    must_fail 1 shardify "$L/pets" "$C/none" $S --classes "$L/absent.txt"
    must_say "cannot read classes file '$L/absent.txt'" "$T/err"
}

case_classes_names_webdatasets_numeric_cls_and_the_parts_of_a_folder_of_archives_take_it() {
    shardify --archives "$L/wds" "$C/wds" $S --labels sidecar:.cls --classes "$L/wds_names.txt"
    [ "$(json "$C/wds/manifest.json" "d['labels'], d['counts']['by_label']")" = \
        "(['zero', 'one', 'two'], {'zero': 2, 'one': 2, 'two': 2})" ] ||
        die "the named .cls: $(cat "$C/wds/manifest.json")"
    verifies wds "$L/wds" "$C/wds"
    # without --classes a part refuses the named classes; with it, each part
    # numbers them as the whole run does
    must_fail 1 shardify --archives --part 0/3 "$L/named" "$C/named_parts" $S --labels 'regex:^[0-9]+[.]tar/([a-z])/'
    must_say "cannot number the classes named in the others" "$T/err"
    rm -rf "$C/named_parts"
    for i in 0 1 2; do
        shardify --archives --part "$i/3" "$L/named" "$C/named_parts" $S --labels 'regex:^[0-9]+[.]tar/([a-z])/' \
            --classes "$L/letters.txt"
    done
    shardify merge --quiet "$C/named_parts"
    shardify --archives "$L/named" "$C/named_one" $S --labels 'regex:^[0-9]+[.]tar/([a-z])/' --classes "$L/letters.txt"
    [ "$(json "$C/named_parts/manifest.json" "d['labels'], d['counts']['by_label']")" = \
        "(['a', 'b', 'c'], {'a': 2, 'b': 2, 'c': 2})" ] ||
        die "the parts' classes: $(cat "$C/named_parts/manifest.json")"
    [ "$(labels_of "$C/named_parts")" = "$(labels_of "$C/named_one")" ] ||
        die "the parts label otherwise than one run: $(labels_of "$C/named_parts")"
    labels_of "$C/named_parts" | grep -q '^00000.tar/c/0.jpg 2$' ||
        die "the class c is not number 2: $(labels_of "$C/named_parts")"
    verifies named_parts "$L/named" "$C/named_parts"
}

case_a_hugging_face_imagefolder_each_split_its_own_dataset_one_class_list_for_all() {
    shardify "$L/hf" "$C/hf" $S --field text=text
    for split in train test; do
        [ -f "$C/hf/$split/manifest.json" ] || die "no dataset of the split '$split' in '$C/hf'"
        [ "$(json "$C/hf/$split/manifest.json" "d['labels'], d['config']['split'], d['config']['annotations_key'], d['counts']['fields']")" = \
            "(['bird', 'cat', 'dog'], '$split', 'file_name', {'text': 4})" ] ||
            die "the split '$split': $(cat "$C/hf/$split/manifest.json")"
        verifies "hf_$split" "$L/hf" "$C/hf/$split"
    done
    [ "$(json "$C/hf/test/manifest.json" "d['counts']['by_label']")" = "{'bird': 0, 'cat': 2, 'dog': 2}" ] ||
        die "the test split's classes: $(cat "$C/hf/test/manifest.json")"
    labels_of "$C/hf/test" | grep -q '^dog/1.png 2$' || die "dog is not class 2: $(labels_of "$C/hf/test")"
}

case_split_name_converts_one_split_with_every_splits_classes() {
    shardify "$L/hf" "$C/hf_train" $S --split train --field text=text
    [ "$(json "$C/hf_train/manifest.json" "d['labels'], d['counts']['by_label']")" = \
        "(['bird', 'cat', 'dog'], {'bird': 2, 'cat': 2, 'dog': 0})" ] ||
        die "--split train: $(cat "$C/hf_train/manifest.json")"
    verifies hf_split "$L/hf" "$C/hf_train"
    must_fail 1 shardify "$L/hf" "$C/hf_nope" $S --split validation
    must_say "--split validation: '$L/hf' has no folder 'validation'" "$T/err"
    must_fail 2 shardify "$L/hf" "$C/hf_nope" $S --split ../x
    must_say "--split: '../x' is not a folder's name" "$T/err"
}

case_a_metadata_jsonl_beside_the_images_is_the_table_keyed_by_file_name() {
    shardify "$L/flat" "$C/flat" $S --labels none --field caption=text,required
    [ "$(json "$C/flat/manifest.json" "d['counts']['fields'], d['counts']['annotation_rows_unmatched']")" = \
        "({'caption': 3}, 0)" ] || die "the metadata table: $(cat "$C/flat/manifest.json")"
    verifies flat "$L/flat" "$C/flat"
    # named with --annotations, it is keyed by file_name too
    shardify "$L/flat" "$C/flat2" $S --labels none --field caption=text \
        --annotations "$L/flat/metadata.jsonl"
    verifies flat2 "$L/flat" "$C/flat2" --annotations "$L/flat/metadata.jsonl"
}

case_key_column_names_any_tables_key_column() {
    shardify "$L/flat" "$C/keyed" $S --labels none --field caption=text --annotations "$L/photos.csv" \
        --key-column path
    [ "$(json "$C/keyed/manifest.json" "d['config']['annotations_key'], d['counts']['fields']")" = \
        "('path', {'caption': 3})" ] || die "--key-column: $(cat "$C/keyed/manifest.json")"
    verifies keyed "$L/flat" "$C/keyed" --annotations "$L/photos.csv"
    must_fail 1 shardify "$L/flat" "$C/keyed2" $S --labels none --field caption=text \
        --annotations "$L/photos.csv"
    must_say "annotation file '$L/photos.csv': the header (line 1) has no column \"key\"" "$T/err"
    must_fail 2 shardify "$L/pets" "$C/keyed3" $S --key-column path
    must_say "--key-column names the key column of --annotations" "$T/err"
}

case_keys_the_images_a_split_list_names_a_key_or_a_stem_a_line_the_others_ignored() {
    shardify "$L/voc/JPEGImages" "$C/voc" $S --labels none --keys "$L/voc/train.txt" --field "$F"
    [ "$(json "$C/voc/manifest.json" "d['counts']['samples'], d['counts']['ignored'], d['config']['keys'][:15], d['config']['fields'][0]['ignore']")" = \
        "(2, 1, 'file:train.txt:', 255)" ] || die "--keys: $(cat "$C/voc/manifest.json")"
    verifies voc "$L/voc/JPEGImages" "$C/voc" --keys "$L/voc/train.txt"
    must_fail 1 shardcheck --source "$L/voc/JPEGImages" "$C/voc"
    must_say "the samples were selected by a key list ('file:train.txt:" "$T/err"
    printf '2007_000\n2007_009\n' >"$C/bad.txt"
    must_fail 1 shardify "$L/voc/JPEGImages" "$C/voc_bad" $S --labels none --keys "$C/bad.txt" \
        --field "$F"
    must_say "--keys '$C/bad.txt' line 2: '2007_009' names no image of the source" "$T/err"
    printf '2007_000\n2007_000.jpg\n' >"$C/twice.txt"
    must_fail 1 shardify "$L/voc/JPEGImages" "$C/voc_bad" $S --labels none --keys "$C/twice.txt" \
        --field "$F"
    must_say "--keys '$C/twice.txt' lists '2007_000.jpg' twice: by its key (line 2) and by its stem (line 1)" "$T/err"
}

case_ignore_n_never_a_class_refused_for_other_fields_and_as_a_classs_id() {
    must_fail 2 shardify "$L/pets" "$C/bad_ignore" $S --field "cap=text,ignore=3"
    must_say "'cap=text,ignore=3': only a mask field takes ignore=N" "$T/err"
    must_fail 2 shardify "$L/pets" "$C/bad_ignore" $S --field "seg=mask,classes=x.txt,ignore=70000"
    must_say "ignore=70000 is not a value in 0..65535" "$T/err"
    must_fail 1 shardify "$L/voc/JPEGImages" "$C/bad_ignore" $S --labels none \
        --field "seg=mask,from=../SegmentationClass/,classes=$L/voc/classes.txt,ignore=1"
    must_say "field 'seg': ignore=1 is the id of the class 'aeroplane'" "$T/err"
    must_fail 2 shardify "$L/pets" "$C/bad_replace" $S --field "seg=mask,from=_mask.png,classes=x.txt,replace=a:b"
    must_say "replace=OLD:NEW is for a mask folder (from=DIR/)" "$T/err"
    must_fail 2 shardify "$L/pets" "$C/bad_replace" $S --field "seg=mask,from=../m/,classes=x.txt,replace=a/b"
    must_say "replace=OLD:NEW names the ending OLD of an image's stem and NEW in its mask's name" "$T/err"
    # an image whose stem does not end in OLD has no mask: a required one is rejected, saying so
    must_fail 1 shardify "$L/voc/JPEGImages" "$C/bad_replace" $S --labels none --field \
        "seg=mask,from=../SegmentationClass/,replace=_left:_gt,classes=$L/voc/classes.txt,required"
    must_say "field 'seg' is required: no a mask in '../SegmentationClass/' (the name does not end in '_left')" "$T/err"
    # without it, 255 rejects the masks, saying how to declare it
    must_fail 1 shardify "$L/voc/JPEGImages" "$C/no_ignore" $S --labels none --keys "$L/voc/train.txt" \
        --field "seg=mask,from=../SegmentationClass/,classes=$L/voc/classes.txt,required"
    must_say "holds value 255 at (0, 0), which is no declared class (ignore=N declares" "$T/err"
}

case_webdataset_segmentation_x_jpg_and_x_seg_png_in_one_tar_sample_a_mask_and_coco_boxes_from_archives() {
    shardify --archives "$L/wds_seg" "$C/wds_seg" --size 20 --quiet --labels none --field "$SEG" \
        --coco "$L/wds_seg.json"
    [ "$(json "$C/wds_seg/manifest.json" "d['counts']['samples'], d['counts']['fields'], d['counts']['boxes']")" = \
        "(6, {'seg': 6, 'boxes': 6}, 6)" ] || die "the WebDataset masks: $(cat "$C/wds_seg/manifest.json")"
    verifies wds_seg "$L/wds_seg" "$C/wds_seg"
    # one archive on its own: its keys have no prefix, its mask sidecars are the same
    shardify "$L/wds_seg/00001.tar" "$C/wds_seg1" --size 20 --quiet --labels none --field "$SEG"
    [ "$(json "$C/wds_seg1/manifest.json" "d['counts']['samples'], d['counts']['fields']")" = "(3, {'seg': 3})" ] ||
        die "one archive's masks: $(cat "$C/wds_seg1/manifest.json")"
    verifies wds_seg1 "$L/wds_seg/00001.tar" "$C/wds_seg1"
    # the stored masks are the sidecars' values, resized with their images (20x26 from 30x40)
    shardcat "$C/wds_seg1" --out "$C/wds_seg1.cat" >/dev/null 2>&1
    "$PYTHON" - "$C/wds_seg1.cat" <<'EOF'
import sys
import numpy as np
from PIL import Image
for k in range(3):
    m = np.array(Image.open(f"{sys.argv[1]}/1{k}.seg.png"))
    assert m.shape == (20, 26), m.shape
    assert set(np.unique(m)) == {0, 1 + k % 2, 255}, np.unique(m)
    assert (m[0] == 255).all() and (m[5, :13] == 1 + k % 2).all() and (m[5, 13:] == 0).all(), m
EOF
}

case_a_webdataset_sample_of_two_images_x_jpg_x_png_the_first_is_the_sample_with_its_sidecars() {
    shardify --archives "$L/pairs" "$C/pairs" $S --labels sidecar:.cls --field caption=text,from=.txt
    [ "$(json "$C/pairs/manifest.json" "d['counts']['samples'], d['counts']['fields'], [r['key'] for r in d['rejected']]")" = \
        "(3, {'caption': 3}, ['00000.tar/0.png', '00000.tar/1.png', '00000.tar/2.png'])" ] ||
        die "the two-image samples: $(cat "$C/pairs/manifest.json")"
    [ "$(json "$C/pairs/manifest.json" "d['rejected'][2]['reason']")" = \
        "another image has the same stem: '00000.tar/2.jpg', the stem's image (the first by name)" ] ||
        die "the second image's reason: $(cat "$C/pairs/manifest.json")"
    [ "$(labels_of "$C/pairs" | tr '\n' ' ')" = "00000.tar/0.jpg 0 00000.tar/1.jpg 1 00000.tar/2.jpg 0 " ] ||
        die "the two-image samples' classes: $(labels_of "$C/pairs")"
    verifies pairs "$L/pairs" "$C/pairs"
}

case_webdataset_shards_named_by_url_brace_lists_over_nginx_the_listing_checked_before_any_download() {
    [ -n "$U" ] || return 0
    shardify "$U/wds/{00000..00001}.tar" "$C/url" --size 20 --quiet --labels none --field "$SEG"
    shardify --archives "$L/wds_seg" "$C/url_local" --size 20 --quiet --labels none --field "$SEG"
    same_samples "$C/url" "$C/url_local" || die "the archives by URL give another dataset than the folder"
    verifies url "$U/wds/{00000..00001}.tar" "$C/url"
    # several URLs and word lists; labels from the .cls sidecars
    if shardify "$U/laion/{00000}.tar::$U/laion/0000{1,1}.tar" "$C/url2" $S --labels sidecar:.cls 2>"$C/err"; then
        die "two URLs of one name were taken"
    fi
    must_say "have one name, '00001.tar'" "$C/err"
    shardify "$U/laion/00000.tar::$U/laion/0000{1}.tar" "$C/url2" $S --labels sidecar:.cls
    [ "$(json "$C/url2/manifest.json" "d['counts']['samples'], d['labels']")" = "(6, ['0', '1', '2'])" ] ||
        die "the URL list: $(cat "$C/url2/manifest.json")"
    verifies url2 "$U/laion/{00000..00001}.tar" "$C/url2"
    # the listing is checked first: an archive that is not there fails the run before any is fetched
    before=$(wc -l <"$T/http/access.log")
    must_fail 1 shardify "$U/wds/{00000..00002}.tar" "$C/url3" $S --labels none
    must_say "cannot find '$U/wds/00002.tar': HTTP 404 Not Found" "$T/err"
    [ ! -e "$C/url3" ] || die "a refused listing left '$C/url3'"
    if tail -n +$((before + 1)) "$T/http/access.log" | grep -q 'GET'; then
        die "an archive was fetched before the listing was checked"
    fi
    for bad in "$U/wds/{0..1.tar" "$U/wds/{2..1}.tar" "$U/wds/" "$U/wds/x.jpg"; do
        must_fail 1 shardify "$bad" "$C/url4" $S
        [ ! -e "$C/url4" ] || die "'$bad' left '$C/url4'"
    done
    must_say "'$U/wds/x.jpg' names no archive: its name 'x.jpg' is not .tar" "$T/err"
}

run_cases
