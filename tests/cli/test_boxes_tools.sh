# test_boxes_tools.sh - the tools on boxes and masks.  shardcheck --deep:
# the report counts boxes per image and each class's boxes and mask pixels
# (counted here from the source files, not from the tools), --source holds
# each sidecar mask to its file, and a record
# holding a box or mask value of a class the manifest does not declare is
# a problem naming shard, record, key, field and class.  shardcat: boxes as
# JSON equal to the COCO file's, masks as PNGs equal to the source masks,
# and --draw paints exactly the boxes' outlines and the masks' boundaries
# in each class's colour over the plain PNG.  A conversion in parts and its
# merge give the single run's boxes, masks and counts.
. "$(dirname "$0")/lib.sh"

SRC=$T/src
mkdir -p "$SRC"
# three images kept at their size (--no-upscale), their COCO boxes and
# sidecar masks; the expected counts are the source's own
"$PYTHON" - "$SRC" "$T" <<'EOF'
import json, sys, zlib, struct
src, top = sys.argv[1], sys.argv[2]

def png(path, w, h, rows, colour):
    """An 8-bit grey (colour 0) or RGB (colour 2) PNG of the given rows."""
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))

W, H = 40, 30
images, annotations, pixels = [], [], {0: 0, 1: 0, 2: 0}
rects = {"a.png": [(1, 2, 3, 10, 12)], "b.png": [(1, 0, 0, 5, 5), (2, 20, 10, 35, 25),
                                                 (2, 30, 0, 40, 4)], "c.png": []}
for i, (name, objs) in enumerate(sorted(rects.items())):
    mask = [[0] * W for _ in range(H)]
    for k, x0, y0, x1, y1 in objs:
        for y in range(y0, y1):
            for x in range(x0, x1):
                mask[y][x] = k
        annotations.append({"id": len(annotations) + 1, "image_id": i, "category_id": k,
                            "bbox": [x0, y0, x1 - x0, y1 - y0]})
    for row in mask:
        for v in row:
            pixels[v] += 1
    png(f"{src}/{name}", W, H, [[60 * v for v in row for _ in range(3)] for row in mask], 2)
    png(f"{src}/{name[:-4]}_mask.png", W, H, mask, 0)
    images.append({"id": i, "file_name": name, "width": W, "height": H})
json.dump({"images": images, "annotations": annotations,
           "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]},
          open(f"{top}/coco.json", "w"))
open(f"{top}/classes.txt", "w").write("background\ncat\ndog\n")
json.dump(pixels, open(f"{top}/pixels.json", "w"))
EOF
shardify "$SRC" "$T/dst" --size 64 --no-upscale --codec png --quiet --coco "$T/coco.json" \
    --field "seg=mask,from=_mask.png,classes=$T/classes.txt"

case_deep_counts_boxes_per_image_and_each_classs_boxes_and_pixels() {
    shardcheck --deep "$T/dst" >"$C/out" 2>&1 || { cat "$C/out"; die "a clean dataset fails"; }
    must_say "boxes 'boxes': 4 in 3 images, 1.33 per image (at most 3)" "$C/out"
    must_say "class 2 'dog': 2 boxes (50.0%), in 1 images" "$C/out"
    must_say "class 1 'cat': 2 boxes (50.0%), in 2 images" "$C/out"
    must_say "mask 'seg': 3 images, 3600 pixels" "$C/out"
    shardcheck --deep --json "$T/dst" >"$C/report.json"
    got=$(json "$C/report.json" \
        '{str(c["id"]): c["count"] for c in d["targets"][0]["classes"]} == json.load(open("'"$T"'/pixels.json"))')
    [ "$got" = True ] || die "mask pixels per class differ from the source masks"
    [ "$(json "$C/report.json" 'd["targets"][1]["max_boxes"]')" = 3 ] || die "max boxes per image"
    [ "$(json "$C/report.json" 'd["contents"]["fields"][1]["source"]')" = "{'coco': 'bbox'}" ] ||
        die "the boxes field's source is not the COCO file"
}

case_deep_source_each_sidecar_mask_is_its_file_in_src_also_after_deep() {
    shardcheck --deep --source "$SRC" "$T/dst" >"$C/out" 2>&1 ||
        { cat "$C/out"; die "a clean dataset with sidecar masks fails --deep --source"; }
    must_say "source: 3 sidecar files, 0 of no image" "$C/out"
    cp -r "$SRC" "$C/changed"
    cp "$SRC/c_mask.png" "$C/changed/a_mask.png"
    must_fail 1 shardcheck --deep --source "$C/changed" "$T/dst"
    must_say "source: field 'seg' of 'a.png' changed since sharding: 'a_mask.png' is" "$T/stdout"
    [ "$(grep -c "^  source: field 'seg'" "$T/stdout")" = 1 ] || { cat "$T/stdout"; die "other masks named"; }
}

case_a_box_or_mask_of_a_class_the_manifest_does_not_declare_is_named() {
    for field in 0 1; do
        rm -rf "$C/bad" && cp -r "$T/dst" "$C/bad"
        "$PYTHON" - "$C/bad/manifest.json" "$field" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
f = m["config"]["fields"][int(sys.argv[2])]
f["classes"] = [c for c in f["classes"] if c["id"] != 2]
json.dump(m, open(sys.argv[1], "w"))
EOF
        must_fail 1 shardcheck --deep "$C/bad"
        if [ "$field" = 1 ]; then  # --coco's fields come after the --field ones
            must_say "(key 'b.png'): field 'boxes': box 1 has class 2, which the field does not declare" "$T/stdout"
        else
            must_say "(key 'b.png'): field 'seg': mask value 2 at (30, 0) is no declared class" "$T/stdout"
        fi
    done
}

case_shardcat_writes_boxes_as_json_and_masks_as_the_pngs_they_came_from() {
    shardcat "$T/dst" --out "$C/plain" 2>"$C/err" || { cat "$C/err"; die "shardcat failed"; }
    shardcat "$T/dst" --out "$C/drawn" --draw 2>"$C/err" || { cat "$C/err"; die "shardcat --draw failed"; }
    "$PYTHON" - "$SRC" "$T" "$C" <<'EOF' || die "shardcat's boxes, masks or drawing differ"
import json, os, sys
from PIL import Image
import numpy as np
src, top, out = sys.argv[1:4]
coco = json.load(open(f"{top}/coco.json"))
names = {c["id"]: c["name"] for c in coco["categories"]}
colours = {}
for im in coco["images"]:
    stem = im["file_name"][:-4]
    want = [{"box": [a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                     a["bbox"][1] + a["bbox"][3]], "class": a["category_id"],
             "name": names[a["category_id"]], "crowd": False}
            for a in coco["annotations"] if a["image_id"] == im["id"]]
    got = json.load(open(f"{out}/plain/{stem}.boxes.json"))
    assert got == want, (stem, got, want)
    mask = np.asarray(Image.open(f"{out}/plain/{stem}_mask.png"))
    assert np.array_equal(mask, np.asarray(Image.open(f"{src}/{stem}_mask.png"))), stem
    plain = np.asarray(Image.open(f"{out}/plain/{im['file_name']}.png")).astype(int)
    drawn = np.asarray(Image.open(f"{out}/drawn/{im['file_name']}.png")).astype(int)
    # the pixels --draw may change: box outlines, and mask boundaries
    h, w = mask.shape
    outline = np.zeros((h, w), bool)
    for b in want:
        x0, y0, x1, y1 = b["box"]
        outline[y0:y1, [x0, x1 - 1]] = True
        outline[[y0, y1 - 1], x0:x1] = True
    edge = np.zeros((h, w), bool)
    edge[:, :-1] |= mask[:, :-1] != mask[:, 1:]
    edge[:-1, :] |= mask[:-1, :] != mask[1:, :]
    changed = (plain != drawn).any(axis=2)
    assert not (changed & ~(outline | edge)).any(), f"{stem}: pixels drawn off the targets"
    assert changed[outline].all() or not want, f"{stem}: a box outline is not drawn"
    # one colour per class, whichever image it is drawn on
    for b in want:
        x0, y0 = b["box"][:2]
        c = tuple(drawn[y0, x0])
        assert colours.setdefault(b["class"], c) == c, (stem, b)
assert len(set(colours.values())) == len(colours), colours
EOF
}

case_a_conversion_in_parts_gives_the_single_runs_boxes_masks_and_counts() {
    for i in 0 1; do
        shardify "$SRC" "$C/parts" --size 64 --no-upscale --codec png --quiet --coco "$T/coco.json" \
            --field "seg=mask,from=_mask.png,classes=$T/classes.txt" --part "$i/2" ||
            die "part $i/2 failed"
    done
    shardify merge "$C/parts" --quiet || die "the merge failed"
    "$PYTHON" - "$T/dst" "$C/parts" <<'EOF' || die "the merged dataset differs from the single run"
import json, sys
one, merged = (json.load(open(f"{d}/manifest.json")) for d in sys.argv[1:])
for k in ("boxes", "boxes_dropped", "coco_images", "coco_annotations", "fields"):
    assert one["counts"][k] == merged["counts"][k], (k, one["counts"][k], merged["counts"][k])
assert one["config"]["fields"] == merged["config"]["fields"]
EOF
    shardcat "$C/parts" --out "$C/merged" 2>"$C/err" || { cat "$C/err"; die "shardcat failed"; }
    # the single run's export (the shardcat case checks it against the source)
    shardcat "$T/dst" --out "$C/plain" 2>"$C/err" || { cat "$C/err"; die "shardcat failed"; }
    for f in "$C"/plain/*.json "$C"/plain/*_mask.png; do
        cmp "$f" "$C/merged/$(basename "$f")" || die "'$(basename "$f")' differs after the merge"
    done
}

run_cases
