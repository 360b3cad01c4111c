# test_shardcat_fields.sh - shardcat writes each sample's fields beside its
# PNG as sidecar files again: text, json and bytes from sidecars are
# byte-identical to the source files (cmp), numbers and vectors are JSON
# that reads back to the stored values, labels a JSON array of class names,
# column fields STEM.NAME.txt/.bin/.json; names are encoded and shortened as
# the PNGs' are (keys.tsv lists the sidecar's key); a link in the way is
# named and left alone; two files of a run that would have one name (or the
# listing's) are an error naming both, and the first is kept.
. "$(dirname "$0")/lib.sh"

F=$SHARDKIT_FIXTURES
SRC=$T/src
long=$(printf 'l%.0s' $(seq 1 250))   # a 250-byte file name stem
mkdir -p "$SRC/a" "$SRC/b"
cp "$F/exif_rot1.jpg" "$SRC/a/0001.jpg"
cp "$F/gray.jpg" "$SRC/a/0002.jpg"
cp "$F/rgb.jpg" "$SRC/b/$long.jpg"
printf 'a tench \342\234\223, held up\r\n' >"$SRC/a/0001.txt"
printf 'no newline' >"$SRC/a/0002.txt"
printf 'the long one\n' >"$SRC/b/$long.txt"
printf '{"b": [1, 2.50, "\\u00fc"],   "a": {}}\n' >"$SRC/a/0001.json"
printf '\000\001\377binary\n\000' >"$SRC/a/0001.bin"
printf '  -0.1\n' >"$SRC/a/0001.score"
printf '[0.1, -2, 3.5e-3]' >"$SRC/a/0001.emb"
printf '[7, -9007199254740993]' >"$SRC/a/0001.ids"
printf '["y", "x"]\n' >"$SRC/a/0001.tags"
cat >"$T/ann.jsonl" <<'EOF'
{"key": "a/0001.jpg", "weight": 1.25, "note": "first \u00e9", "count": -3, "raw": "r\u00ffw"}
{"key": "a/0002.jpg", "weight": 1e-7}
EOF
shardify "$SRC" "$T/dst" --size 32 --annotations "$T/ann.jsonl" \
    --field caption=text,from=.txt --field meta=json,from=.json --field blob=bytes,from=.bin \
    --field score=float,from=.score --field 'emb=float32[3],from=.emb' \
    --field 'ids=int64[2],from=.ids' --field tags=labels,from=.tags \
    --field weight=float --field note=text --field count=int --field raw=bytes --quiet

# cat_all: every sample with its fields written into the case's $C/out, $O
# (shardcat of three samples: the two cases that read it write it each)
cat_all() {
    shardcat "$T/dst" --out "$C/out" 2>"$C/err" || { cat "$C/err"; die "shardcat failed"; }
    O=$C/out
}

case_every_field_of_every_sample_beside_its_png() {
    cat_all
    for f in a/0001.txt a/0002.txt a/0001.json a/0001.bin; do
        name=$(echo "$f" | sed 's|/|%2F|')
        [ -f "$O/$name" ] || die "no '$name' in the output"
        cmp "$SRC/$f" "$O/$name" || die "'$name' is not byte-identical to the source '$f'"
    done
    if ls "$O" | grep -q '^a%2F0002\.\(json\|bin\|score\|emb\|ids\|tags\)$'; then
        die "a field the sample does not have was written"
    fi
    # numbers, vectors and labels: JSON of the stored values
    "$PYTHON" - "$O" <<'EOF' || die "numbers, vectors or labels differ from the stored values"
import json, os, struct, sys
o = sys.argv[1]
def load(name):
    with open(os.path.join(o, name)) as f:
        text = f.read()
    assert text.endswith("\n"), name
    return json.loads(text)
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
assert load("a%2F0001.score") == -0.1
emb = load("a%2F0001.emb")
assert [f32(x) for x in emb] == [f32(0.1), -2.0, f32(3.5e-3)], emb
with open(os.path.join(o, "a%2F0001.emb")) as f:
    assert f.read() == "[0.1,-2,0.0035]\n"  # as short as reads back
assert load("a%2F0001.ids") == [7, -9007199254740993]
assert load("a%2F0001.tags") == ["y", "x"]
assert load("a%2F0001.weight.json") == 1.25 and load("a%2F0002.weight.json") == 1e-7
assert load("a%2F0001.count.json") == -3
with open(os.path.join(o, "a%2F0001.note.txt"), "rb") as f:
    assert f.read() == "first \u00e9".encode()
with open(os.path.join(o, "a%2F0001.raw.bin"), "rb") as f:
    assert f.read() == "r\u00ffw".encode()
EOF
}

case_a_long_key_the_sidecars_name_is_shortened_and_listed_with_its_key() {
    cat_all
    short=$(ls "$O" | grep '^b%2Fl.*%~[0-9a-f]\{16\}\.txt$') || die "no shortened caption name: $(ls "$O")"
    cmp "$SRC/b/$long.txt" "$O/$short" || die "the shortened caption differs from its source"
    must_say "$(printf '%s\tb/%s.txt' "$short" "$long")" "$O/keys.tsv"
}

case_keys_only_their_samples_and_fields() {
    shardcat "$T/dst" a/0002.jpg --out "$C/one" 2>/dev/null
    [ "$(ls "$C/one" | sort | tr '\n' ' ')" = "a%2F0002.jpg.png a%2F0002.txt a%2F0002.weight.json " ] ||
        die "KEY a/0002.jpg wrote $(ls "$C/one")"
}

case_a_symbolic_link_where_a_fields_file_would_go_named_left_alone_the_rest_written() {
    mkdir -p "$C/link"
    echo "keep me" >"$C/target"
    ln -s "$C/target" "$C/link/a%2F0001.txt"
    must_fail 1 shardcat "$T/dst" a/0001.jpg --out "$C/link"
    must_say "cannot write '$C/link/a%2F0001.txt': a symbolic link is in the way" "$T/err"
    [ "$(cat "$C/target")" = "keep me" ] || die "the link's target was written through"
    [ -f "$C/link/a%2F0001.jpg.png" ] && [ -f "$C/link/a%2F0001.json" ] ||
        die "the sample's other files were not written"
}

case_names_that_collide_the_first_file_keeps_its_name_the_other_is_named_and_not_written() {
    # b.jpg's PNG is b.jpg.png, and so is the mask of b.jpg.jpeg (its stem b.jpg
    # and the suffix .png); keys.jpg's note would be keys.tsv, the listing's name
    CLASH=$C/clash
    mkdir -p "$CLASH"
    "$PYTHON" - "$CLASH" <<'PY'
import sys
from PIL import Image
top = sys.argv[1]
Image.new("RGB", (20, 16), (200, 10, 10)).save(f"{top}/b.jpg")
Image.new("RGB", (20, 16), (10, 200, 10)).save(f"{top}/b.jpg.jpeg", "JPEG")
Image.new("RGB", (20, 16), (10, 10, 200)).save(f"{top}/keys.jpg")
Image.new("L", (20, 16), 1).save(f"{top}/b.png")
Image.new("L", (20, 16), 2).save(f"{top}/b.jpg.png")
Image.new("L", (20, 16), 0).save(f"{top}/keys.png")
PY
    printf 'a note\n' >"$CLASH/keys.tsv"
    printf 'bg\none\ntwo\n' >"$C/classes.txt"
    shardify "$CLASH" "$C/clash-dst" --no-shuffle --labels none --quiet \
        --field "seg=mask,from=.png,classes=$C/classes.txt" --field note=text,from=.tsv
    must_fail 1 shardcat "$C/clash-dst" --out "$C/clash-out"
    must_say "cannot write '$C/clash-out/b.jpg.png' for field 'seg' of 'b.jpg.jpeg': that name holds the image of 'b.jpg' (two names collide; it is not overwritten)" "$T/err"
    must_say "cannot write '$C/clash-out/keys.tsv' for field 'note' of 'keys.jpg': that name holds the listing of shortened names" "$T/err"
    must_say "wrote 1 sample to '$C/clash-out'; 2 could not be written (named above)" "$T/err"
    shardcat "$C/clash-dst" b.jpg b.jpg --out "$C/clash-one" 2>"$T/err" ||
        { cat "$T/err"; die "a KEY given twice is a collision with itself"; }
    [ "$(ls "$C/clash-one" | tr '\n' ' ')" = "b.jpg.png b.png " ] || die "KEY b.jpg wrote $(ls "$C/clash-one")"
    cmp "$C/clash-one/b.jpg.png" "$C/clash-out/b.jpg.png" || die "b.jpg.png is not the image of b.jpg"
    [ ! -e "$C/clash-out/keys.tsv" ] || die "a sample's file took the listing's name"
}

run_cases
