# test_shardcat_fields.sh - shardcat writes each sample's fields beside its
# PNG as sidecar files again: text, json and bytes from sidecars are
# byte-identical to the source files (cmp), numbers and vectors are JSON
# that reads back to the stored values, labels a JSON array of class names,
# column fields STEM.NAME.txt/.bin/.json; names are encoded and shortened as
# the PNGs' are (keys.tsv lists the sidecar's key); a link in the way is
# named and left alone.
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

say "every field of every sample beside its PNG"
shardcat "$T/dst" --out "$T/out" 2>"$T/err" || { cat "$T/err"; die "shardcat failed"; }
O=$T/out
for f in a/0001.txt a/0002.txt a/0001.json a/0001.bin; do
    name=$(echo "$f" | sed 's|/|%2F|')
    [ -f "$O/$name" ] || die "no '$name' in the output"
    cmp "$SRC/$f" "$O/$name" || die "'$name' is not byte-identical to the source '$f'"
done
ls "$O" | grep -q '^a%2F0002\.\(json\|bin\|score\|emb\|ids\|tags\)$' &&
    die "a field the sample does not have was written"
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

say "a long key: the sidecar's name is shortened and listed with its key"
short=$(ls "$O" | grep '^b%2Fl.*%~[0-9a-f]\{16\}\.txt$') || die "no shortened caption name: $(ls "$O")"
cmp "$SRC/b/$long.txt" "$O/$short" || die "the shortened caption differs from its source"
must_say "$(printf '%s\tb/%s.txt' "$short" "$long")" "$O/keys.tsv"

say "KEYs: only their samples and fields"
shardcat "$T/dst" a/0002.jpg --out "$T/one" 2>/dev/null
[ "$(ls "$T/one" | sort | tr '\n' ' ')" = "a%2F0002.jpg.png a%2F0002.txt a%2F0002.weight.json " ] ||
    die "KEY a/0002.jpg wrote $(ls "$T/one")"

say "a symbolic link where a field's file would go: named, left alone, the rest written"
mkdir -p "$T/link"
echo "keep me" >"$T/target"
ln -s "$T/target" "$T/link/a%2F0001.txt"
must_fail 1 shardcat "$T/dst" a/0001.jpg --out "$T/link"
must_say "cannot write '$T/link/a%2F0001.txt': a symbolic link is in the way" "$T/err"
[ "$(cat "$T/target")" = "keep me" ] || die "the link's target was written through"
[ -f "$T/link/a%2F0001.jpg.png" ] && [ -f "$T/link/a%2F0001.json" ] ||
    die "the sample's other files were not written"
echo "shardcat fields checks passed"
