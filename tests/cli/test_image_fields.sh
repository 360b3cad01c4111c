# test_image_fields.sh - a second image of a sample (--field depth=image,
# from=.depth.png): in a directory and in a WebDataset tar, it is stored at
# the record's size, resampled and cropped as its image was (held to
# Pillow's resize of the same geometry, and to the image itself when the
# two files are one picture), shardcheck --deep --source proves its file's
# identity, shardcat writes it back as a PNG (or a JPEG for a .jpg suffix),
# and what cannot be taken is refused naming its subject.
. "$(dirname "$0")/lib.sh"

I=$T/src
mkdir -p "$I/dir/a" "$I/tars" "$I/members"
"$PYTHON" - "$I" <<'EOF'
import sys
import numpy as np
from PIL import Image

top = sys.argv[1]
# sizes whose reductions are whole factors (where Pillow's BOX is the area
# average the conversion resamples with) or enlargements (Pillow's
# BILINEAR): 96x64 and 64x128 halve to --size 32, 20x16 doubles
SIZES = [(96, 64), (64, 128), (20, 16)]
rng = np.random.RandomState(7)
for k, (w, h) in enumerate(SIZES):
    picture = rng.randint(0, 256, (h, w, 3), dtype=np.uint8)
    depth = (np.add.outer(np.arange(h) * 3, np.arange(w) * 2) % 256).astype(np.uint8)
    depth[h // 4:h // 2, w // 3:w // 2] = 255 - depth[h // 4:h // 2, w // 3:w // 2]
    Image.fromarray(picture).save(f"{top}/dir/a/x{k}.png")
    Image.fromarray(depth).save(f"{top}/dir/a/x{k}.depth.png")
    Image.fromarray(picture).save(f"{top}/members/x{k}.jpg")  # the tar's
    Image.fromarray(depth).save(f"{top}/members/x{k}.depth.png")
# one sample whose second image is its image: the two go the same way
Image.fromarray(picture).save(f"{top}/dir/a/same.png")
Image.fromarray(picture).save(f"{top}/dir/a/same.depth.png")
EOF
tar -C "$I/members" -cf "$I/tars/00000.tar" x0.jpg x0.depth.png x1.jpg x1.depth.png x2.jpg x2.depth.png

# stored DST: each sample's depth field as the Python package reads it,
# against Pillow's resize of its source file to the record's size (a whole
# factor: BOX; an enlargement: BILINEAR), after --fit crop's centre crop
stored_like_pillow() {
    dst=$1 src=$2 fit=$3
    shardkit_python - "$dst" "$src" "$fit" <<'EOF' || die "$dst: the depth fields are not the depth images resized"
import os, sys
import numpy as np
from PIL import Image
import shardkit

dst, src, fit = sys.argv[1:]
ds = shardkit.Dataset(dst)
assert [f.type for f in ds.fields.values()] == ["image"], ds.fields
for i in range(len(ds)):
    s = ds[i]
    depth = s.fields["depth"]
    name = os.path.basename(s.key).rsplit(".", 1)[0]
    source = Image.open(f"{src}/{name}.depth.png").convert("RGB")
    w, h = source.size
    short = min(w, h)
    scaled = (w * 32 // short, h * 32 // short)
    want = source.resize(scaled, Image.BOX if short > 32 else Image.BILINEAR)
    if fit == "crop":
        x, y = (scaled[0] - 32) // 2, (scaled[1] - 32) // 2
        want = want.crop((x, y, x + 32, y + 32))
    want = np.asarray(want)
    assert depth.dtype == np.uint8 and depth.shape == s.image.shape == want.shape, \
        (s.key, depth.shape, s.image.shape, want.shape)
    diff = np.abs(depth.astype(int) - want.astype(int)).max()
    assert diff <= 1, (s.key, diff)  # Pillow rounds its two passes to 8 bits
    if name == "same":  # a copy of its image: the stored pixels themselves
        assert (depth == s.image).all(), s.key
print("ok")
EOF
}

# the conversions the cases read: the directory (raw, and cropped) and the tar
shardify --quiet --size 32 --codec raw --field depth=image,from=.depth.png \
    "$I/dir" "$T/dir" 2>"$T/err" || { cat "$T/err" >&2; die "the directory did not convert"; }
shardify --quiet --size 32 --fit crop --codec png --field depth=image,from=.depth.png \
    "$I/dir" "$T/crop"
shardify --quiet --size 32 --archives --field depth=image,from=.depth.png,required \
    "$I/tars" "$T/tar" 2>"$T/err" || { cat "$T/err" >&2; die "the tar did not convert"; }

case_a_directory_x_png_with_x_depth_png_stored_raw_at_the_records_size() {
    [ "$(json "$T/dir/manifest.json" "d['counts']['samples'], d['counts']['fields'], d['config']['fields']")" = \
        "(4, {'depth': 4}, [{'name': 'depth', 'type': 'image', 'sidecar': '.depth.png', 'required': False}])" ] ||
        die "the directory's manifest: $(cat "$T/dir/manifest.json")"
    stored_like_pillow "$T/dir" "$I/dir/a" short >/dev/null
}

case_fit_crop_the_depth_image_cropped_with_its_image() {
    stored_like_pillow "$T/crop" "$I/dir/a" crop >/dev/null
}

case_a_webdataset_tar_x_jpg_with_x_depth_png_one_sample_of_the_two() {
    [ "$(json "$T/tar/manifest.json" "d['counts']['samples'], d['counts']['fields'], len(d['rejected'])")" = \
        "(3, {'depth': 3}, 0)" ] || die "the tar's manifest: $(cat "$T/tar/manifest.json")"
    mkdir -p "$C/tar_src"
    tar -xf "$I/tars/00000.tar" -C "$C/tar_src"
    stored_like_pillow "$T/tar" "$C/tar_src" short >/dev/null
}

case_shardcheck_deep_source_proves_each_depth_files_identity() {
    for run in "dir $I/dir" "crop $I/dir" "tar $I/tars"; do
        set -- $run
        name=$1 src=$2
        shift 2
        verifies "$name" "$src" "$T/$name" "$@"
    done
    cp -R "$I/dir" "$C/changed"
    "$PYTHON" -c 'import sys; from PIL import Image; Image.new("L", (96, 64), 9).save(sys.argv[1])' \
        "$C/changed/a/x0.depth.png"
    must_fail 1 shardcheck --deep --source "$C/changed" "$T/dir"
    must_say "field 'depth' of 'a/x0.png' changed since sharding: 'a/x0.depth.png'" "$T/stdout"
}

case_shardcat_writes_the_field_as_the_file_its_suffix_names_the_stored_pixels() {
    shardcat "$T/dir" --out "$C/cat" >/dev/null
    shardcat "$T/tar" --out "$C/tarcat" >/dev/null
    shardkit_python - "$T/dir" "$C/cat" "$C/tarcat" <<'EOF' || die "shardcat's depth files"
import sys
import numpy as np
from PIL import Image
import shardkit

ds = shardkit.Dataset(sys.argv[1])
for i in range(len(ds)):
    s = ds[i]
    name = s.key.replace("/", "%2F").rsplit(".", 1)[0] + ".depth.png"
    png = Image.open(f"{sys.argv[2]}/{name}")
    assert png.format == "PNG" and png.mode == "RGB", (name, png.format, png.mode)
    assert (np.asarray(png) == s.fields["depth"]).all(), name
for k in range(3):
    assert Image.open(f"{sys.argv[3]}/00000.tar%2Fx{k}.depth.png").format == "PNG"
EOF
}

case_a_jpg_suffix_shardcat_writes_a_jpeg() {
    mkdir -p "$C/jpg_src"
    "$PYTHON" - "$C/jpg_src" <<'EOF'
import sys
from PIL import Image
Image.new("RGB", (40, 32), (10, 200, 30)).save(f"{sys.argv[1]}/p.png")
Image.new("RGB", (40, 32), (250, 20, 90)).save(f"{sys.argv[1]}/p.right.jpg", quality=95)
EOF
    shardify --quiet --size 32 --field right=image,from=.right.jpg "$C/jpg_src" "$C/jpg"
    shardcat "$C/jpg" --out "$C/jpgcat" >/dev/null
    "$PYTHON" - "$C/jpgcat/p.right.jpg" <<'EOF' || die "the .right.jpg field's file"
import sys
import numpy as np
from PIL import Image
im = Image.open(sys.argv[1])
assert im.format == "JPEG" and im.size == (40, 32), (im.format, im.size)
assert np.abs(np.asarray(im).astype(int) - (250, 20, 90)).max() <= 6
EOF
}

case_image_pairs_x_left_jpg_and_x_right_jpg_one_sample_by_the_sample_stem_x_webdatasets_key() {
    mkdir -p "$C/pairs_src/a" "$C/pairtars_src"
    "$PYTHON" - "$C/pairs_src" <<'EOF'
import sys
from PIL import Image
top = sys.argv[1]
def jpeg(name, colour):
    Image.new("RGB", (40, 30), colour).save(f"{top}/a/{name}", quality=95)
for k in range(3):
    for side, colour in (("left", (200, 40 * k, 0)), ("right", (0, 40 * k, 200))):
        jpeg(f"x{k}.{side}.jpg", colour)
# y.jpg has the stem y: y.right.jpg is its own, never y.left.jpg's; z.right.jpg
# has two images of the sample stem z, and so no one
for name, colour in (("y.jpg", (9, 9, 9)), ("y.left.jpg", (200, 0, 0)), ("y.right.jpg", (0, 0, 200)),
                     ("z.left.jpg", (200, 0, 0)), ("z.mid.jpg", (100, 0, 0)), ("z.right.jpg", (0, 0, 200))):
    jpeg(name, colour)
EOF
    tar -C "$C/pairs_src/a" -cf "$C/pairtars_src/00000.tar" x0.left.jpg x0.right.jpg x1.left.jpg x1.right.jpg \
        x2.left.jpg x2.right.jpg
    shardify --quiet --size 32 --field right=image,from=.right.jpg "$C/pairs_src" "$C/pairs"
    shardify --quiet --size 32 --archives --field right=image,from=.right.jpg,required "$C/pairtars_src" "$C/pairtars"
    [ "$(json "$C/pairs/manifest.json" "d['counts']['fields'], [o['key'] for o in d['orphans']]")" = \
        "({'right': 4}, ['a/z.right.jpg'])" ] || die "the pairs' manifest: $(cat "$C/pairs/manifest.json")"
    shardkit_python - "$C/pairs" "$C/pairtars" <<'EOF' || die "the pairs' right images"
import sys
import numpy as np
import shardkit
for dst in sys.argv[1:]:
    seen = 0
    for s in shardkit.Dataset(dst):
        right = s.fields["right"]
        name = s.key.rsplit("/", 1)[-1]
        if name in ("y.left.jpg", "z.left.jpg", "z.mid.jpg"):
            assert right is None, (dst, s.key)
            continue
        if name == "y.jpg":  # its own y.right.jpg, by its stem
            assert np.abs(right.astype(int) - (0, 0, 200)).max() <= 8, (dst, s.key)
            continue
        k = int(name[1])
        assert right.shape == s.image.shape == (32, 42, 3), (dst, s.key, right.shape)
        assert np.abs(right.astype(int) - (0, 40 * k, 200)).max() <= 8, (dst, s.key)
        assert np.abs(s.image.astype(int) - (200, 40 * k, 0)).max() <= 8, (dst, s.key)
        seen += 1
    assert seen == 3, (dst, seen)
EOF
    for run in "pairs $C/pairs_src" "pairtars $C/pairtars_src"; do
        set -- $run
        verifies "$1" "$2" "$C/$1"
    done
    rm "$C/pairs_src/a/x1.right.jpg"
    must_fail 1 shardcheck --deep --source "$C/pairs_src" "$C/pairs"
    must_say "field 'right' of 'a/x1.left.jpg'" "$T/stdout"
}

case_refusals_name_their_subject() {
    mkdir -p "$C/bad_src"
    "$PYTHON" - "$C/bad_src" <<'EOF'
import sys
from PIL import Image
top = sys.argv[1]
Image.new("RGB", (20, 16)).save(f"{top}/ok.png")
Image.new("L", (20, 16)).save(f"{top}/ok.depth.png")
Image.new("RGB", (20, 16)).save(f"{top}/small.png")
Image.new("L", (10, 8)).save(f"{top}/small.depth.png")
Image.new("RGB", (20, 16)).save(f"{top}/broken.png")
open(f"{top}/broken.depth.png", "wb").write(b"\x89PNG\r\n\x1a\n not a png")
EOF
    shardify --quiet --size 32 --field depth=image,from=.depth.png "$C/bad_src" "$C/bad"
    [ "$(json "$C/bad/manifest.json" "d['counts']['samples'], sorted((r['key'], r['reason']) for r in d['rejected'])[1]")" = \
        "(1, ('small.png', \"field 'depth': image 'small.depth.png' is 10x8, its sample's 20x16\"))" ] ||
        die "the refused depth images: $(cat "$C/bad/manifest.json")"
    must_say "field 'depth': image 'broken.depth.png'" "$C/bad/manifest.json"
    must_fail 2 shardify --field depth=image,from=../depth/ "$C/bad_src" "$C/bad2"
    must_say "only a mask comes from a folder" "$T/err"
    must_fail 2 shardify --annotations "$C/bad_src/ok.png" --field depth=image,from=depth "$C/bad_src" "$C/bad2"
    must_say "an image field comes from a sidecar image of the sample's stem" "$T/err"
    must_fail 2 shardify --field depth=image,classes=x.txt "$C/bad_src" "$C/bad2"
    must_say "only a mask field takes classes=FILE" "$T/err"
    [ ! -e "$C/bad2" ] || die "a refused declaration left '$C/bad2'"
}

case_an_incremental_run_which_copies_records_cannot_make_an_image_field() {
    # made from the image's geometry: an incremental run, which copies records, cannot make it
    must_fail 2 shardify --size 32 --codec raw --field depth=image,from=.depth.png \
        --incremental "$T/dir" "$I/dir" "$C/inc"
    must_say "boxes, mask and image fields are made as their images are converted" "$T/err"
    [ ! -e "$C/inc" ] || die "a refused incremental run left '$C/inc'"
}

run_cases
