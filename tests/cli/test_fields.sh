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

say "sidecars of every type: each value read back equal to its source; hostile ones rejected"
# shellcheck disable=SC2086
shardify "$G/tree" "$T/side" $OPTS $FIELDS --json >"$T/side.json"
"$PYTHON" "$FT" check "$T/side" "$G" || die "the records do not hold the sidecars' values"
valid "$T/side"
shardcheck --deep --source "$G/tree" "$T/side" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out" >&2; die "shardcheck --deep --source does not prove the sidecars"; }
[ "$(json "$T/side.json" 'd["orphans"], d["fields"]["caption"], d["sidecars"] > 100')" = \
  "(3, 22, True)" ] || die "summary: $(cat "$T/side.json")"
# a dataset without fields stays version 1
shardify "$G/tree" "$T/plain" $OPTS
[ "$(json "$T/plain/manifest.json" 'd["version"], "orphans" in d')" = "(1, False)" ] ||
    die "a dataset without fields is not version 1"

say "the thread count changes nothing"
# shellcheck disable=SC2086
shardify "$G/tree" "$T/side1" $OPTS $FIELDS --threads 1
same_tree "$T/side" "$T/side1"

say "an archive of the tree, and a directory of archives, give the same records"
(cd "$G/tree" && tar cf "$T/tree.tar" .)
# shellcheck disable=SC2086
shardify "$T/tree.tar" "$T/tar" $OPTS $FIELDS
for f in index.jsonl shard-000000.shard; do
    cmp -s "$T/side/$f" "$T/tar/$f" || die "the archive's $f differs from the directory's"
done
mkdir "$T/tars"
cp "$T/tree.tar" "$T/tars/00000.tar"
mkdir -p "$T/extra/z"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/extra/z/0000.jpg"
printf 'from the second tar' >"$T/extra/z/0000.txt"
(cd "$T/extra" && tar cf "$T/tars/00001.tar" z)
echo '{"successes": 1}' >"$T/tars/00000_stats.json"
# shellcheck disable=SC2086
shardify --archives "$T/tars" "$T/archives" $OPTS $FIELDS --json >"$T/archives.json"
"$PYTHON" "$FT" check "$T/archives" "$G" --prefix 00000.tar/ ||
    die "--archives: the records do not hold the sidecars' values"
shardcheck --deep --source "$T/tars" "$T/archives" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out" >&2; die "shardcheck --deep --source does not prove --archives"; }
grep -q '"key":"00001.tar/z/0000.jpg".*"caption"' "$T/archives/index.jsonl" ||
    die "--archives: the second tar's sample or its caption is missing"
[ "$(json "$T/archives/manifest.json" 'd["source"]["kind"]')" = archives ] || die "source.kind"
[ "$(json "$T/archives.json" 'd["ignored"]')" -ge 1 ] || die "the stats file is not counted"
valid "$T/archives"

say "annotation tables: JSON Lines and CSV"
# shellcheck disable=SC2086
shardify "$G/tree" "$T/jsonl" $OPTS $COLUMNS --annotations "$G/table.jsonl" --json >"$T/jsonl.json"
"$PYTHON" "$FT" check "$T/jsonl" "$G" --table jsonl || die "JSON Lines values"
shardcheck --deep --source "$G/tree" --annotations "$G/table.jsonl" "$T/jsonl" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out" >&2; die "shardcheck does not prove the JSON Lines values"; }
[ "$(json "$T/jsonl.json" 'd["annotation_rows"], d["annotation_rows_unmatched"]')" = "(25, 1)" ] ||
    die "table rows: $(cat "$T/jsonl.json")"
valid "$T/jsonl"
# a CSV cell is text: no bytes column
COLUMNS_CSV=$(echo "$COLUMNS" | sed 's/--field blob=bytes//')
# shellcheck disable=SC2086
shardify "$G/tree" "$T/csv" $OPTS $COLUMNS_CSV --annotations "$G/table.csv"
"$PYTHON" "$FT" check "$T/csv" "$G" --table csv || die "CSV values"
shardcheck --deep --source "$G/tree" --annotations "$G/table.csv" "$T/csv" >"$T/check.out" 2>&1 ||
    { cat "$T/check.out" >&2; die "shardcheck does not prove the CSV values"; }
grep -q '"annotations": "file:table.csv:[0-9a-f]\{16\}"' "$T/csv/manifest.json" ||
    die "the table is not identified in the config"

say "a conversion in parts carries fields: the merged dataset holds every value"
# shellcheck disable=SC2086
shardify "$G/tree" "$T/parts" $OPTS $FIELDS --part 0/2
# shellcheck disable=SC2086
shardify "$G/tree" "$T/parts" $OPTS $FIELDS --part 1/2
shardify merge --quiet "$T/parts"
"$PYTHON" "$FT" check "$T/parts" "$G" || die "the merged records do not hold the values"
shardcheck --deep --source "$G/tree" "$T/parts" >/dev/null 2>&1 || die "the merged dataset does not verify"
[ "$(json "$T/parts/manifest.json" 'd["counts"]')" = "$(json "$T/side/manifest.json" 'd["counts"]')" ] ||
    die "merged counts differ from a single run's"
valid "$T/parts"

say "--incremental: a changed sidecar keeps the stored pixels with the fields of now"
cp -r "$G/tree" "$T/inc"
# shellcheck disable=SC2086
shardify "$T/inc" "$T/prev" $OPTS $FIELDS
printf 'a corrected caption' >"$T/inc/a/0000.txt"   # changed
printf 'a new caption' >"$T/inc/a/0003.txt"         # added where there was none
rm "$T/inc/b/0001.json"                             # removed
printf '{"a": 1}' >"$T/inc/h/badjson.json"          # a reject for its field, mended
rm "$T/inc/b/0011.jpg"                              # an image removed
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/inc/b/0099.jpg"  # an image added
printf 'new' >"$T/inc/b/0099.txt"
# shellcheck disable=SC2086
shardify "$T/inc" "$T/next" $OPTS $FIELDS --incremental "$T/prev" --json >"$T/next.json"
# shellcheck disable=SC2086
shardify "$T/inc" "$T/full" $OPTS $FIELDS
for f in index.jsonl shard-000000.shard; do
    cmp -s "$T/next/$f" "$T/full/$f" || die "incremental $f differs from a full run's"
done
"$PYTHON" - "$T/next/manifest.json" "$T/full/manifest.json" <<'EOF2' || die "incremental manifest"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
l = a.pop("lineage")
assert a == b, "the manifest is not the full run's but for its lineage"
assert (l["added"], l["removed"], l["refielded"], l["reconverted"]) == (1, 1, 3, 0), l
assert l["reused"] == 24 + 1 + 2 - 1 - 3 - 1 - 1, l  # samples (c/x.jpg, the stem's image, too), the stem clash's reject aside
EOF2
[ "$(json "$T/next.json" 'd["lineage"]["refielded"]')" = 3 ] || die "the summary's refielded"
shardcheck --deep --source "$T/inc" "$T/next" >/dev/null 2>&1 || die "the incremental dataset does not verify"
valid "$T/next"
must_fail 2 shardify "$T/inc" "$T/other" $OPTS --field caption=text,from=.txt --incremental "$T/prev"
must_say "--field differs from the previous dataset" "$T/err"

say "a required field a sample lacks rejects it, naming the file that is missing"
shardify "$G/tree" "$T/req" $OPTS --field caption=text,from=.txt,required --json >"$T/req.json"
"$PYTHON" - "$T/req.json" <<'EOF' || die "required: $(cat "$T/req.json")"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["key"]: x["reason"] for x in d["rejects"]}
assert r["a/0003.jpg"] == "field 'caption' is required: no 'a/0003.txt'", r["a/0003.jpg"]
assert "h/badutf8.jpg" in r and "b/0000.jpg" not in r
EOF
shardify "$G/tree" "$T/req2" $OPTS --field caption=text,required --annotations "$G/table.jsonl" \
    --json >"$T/req2.json"
[ "$(json "$T/req2.json" '[x["reason"] for x in d["rejects"] if x["key"] == "h/huge.jpg"][0]')" = \
  "field 'caption' is required: no row of 'table.jsonl'" ] || die "required from a table"

say "a declared field that no sample has fails the run, saying where it was looked for"
# (Hugging Face's metadata.jsonl not given: the caption is looked for as a sidecar)
must_fail 1 shardify "$G/tree" "$T/t1" --size 16 --labels none --field nothing=text --quiet
must_say "field 'nothing' is declared, and none of the " "$T/err"
must_say "samples has it: none has a sidecar '.nothing'" "$T/err"
printf '{"key":"zz/none.jpg","caption":"x"}\n' >"$T/elsewhere.jsonl"
must_fail 1 shardify "$G/tree" "$T/t2" --size 16 --labels none --field caption=text \
    --annotations "$T/elsewhere.jsonl" --quiet
must_say "field 'caption' is declared, and none of the " "$T/err"
must_say "samples has it: no row of 'elsewhere.jsonl' gives one a value in column 'caption'" "$T/err"
printf '\n' >"$T/blank.jsonl"  # no row at all
must_fail 1 shardify "$G/tree" "$T/t3" --size 16 --labels none --field caption=text \
    --annotations "$T/blank.jsonl" --quiet
must_say "samples has it: no row of 'blank.jsonl' gives one a value in column 'caption'" "$T/err"
[ ! -e "$T/t1/manifest.json" ] && [ ! -e "$T/t2/manifest.json" ] && [ ! -e "$T/t3/manifest.json" ] ||
    die "published a field that matched nothing"

say "a table that starts with a UTF-8 byte order mark (as spreadsheets write CSV) is read"
printf '\357\273\277key,caption\na/0000.jpg,hello\n' >"$T/bom.csv"
printf '\357\273\277{"key":"a/0000.jpg","caption":"hello"}\n' >"$T/bom.jsonl"
for table in bom.csv bom.jsonl; do
    shardify "$G/tree" "$T/bom" --size 16 --labels none --quiet --overwrite --field caption=text \
        --annotations "$T/$table" --json >"$T/bom.json" || die "$table: a byte order mark fails the run"
    [ "$(json "$T/bom.json" 'd["fields"]["caption"]')" = 1 ] || die "$table: $(cat "$T/bom.json")"
    grep '"key":"a/0000.jpg"' "$T/bom/index.jsonl" | grep -q '"fields"' || die "$table: no caption"
done

say "class labels from a sidecar (.cls) and from a column"
mkdir -p "$T/cls/a"
for i in 0 1 2 3; do cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/cls/a/$i.jpg"; done
printf 'cat\n' >"$T/cls/a/0.cls"
printf '  dog ' >"$T/cls/a/1.cls"
printf 'cat' >"$T/cls/a/2.cls"
shardify "$T/cls" "$T/clsout" --size 16 --quiet --labels sidecar:.cls
[ "$(json "$T/clsout/manifest.json" 'd["labels"], d["counts"]["by_label"], d["counts"]["unlabeled"]')" = \
  "(['cat', 'dog'], {'cat': 2, 'dog': 1}, 1)" ] || die "sidecar class: $(cat "$T/clsout/manifest.json")"
printf '{"key":"a/0.jpg","cls":"dog"}\n{"key":"a/3.jpg","cls":"emu"}\n' >"$T/cls.jsonl"
shardify "$T/cls" "$T/colout" --size 16 --quiet --labels column:cls --annotations "$T/cls.jsonl"
# the config names the table it read, as a label file's is named (a version 1 config has no
# "annotations")
table=$("$PYTHON" -c 'import sys, xxhash; print(xxhash.xxh3_64_hexdigest(open(sys.argv[1], "rb").read()))' "$T/cls.jsonl")
[ "$(json "$T/colout/manifest.json" 'd["labels"], d["counts"]["unlabeled"], d["config"]["labels"]')" = \
  "(['dog', 'emu'], 2, 'column:cls:file:cls.jsonl:$table')" ] ||
    die "column class: $(json "$T/colout/manifest.json" 'd["config"]')"

say "a sidecar, mask or .cls that is a symbolic link or a FIFO is named for what it is, never opened"
S=$T/special
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
timeout 60 shardcheck "$S/out" --source "$S/src" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "shardcheck --source does not verify the special sidecars' rejects"; }

say "--fit crop drops a box it cuts to less than a pixel across, keeps one that small already"
mkdir -p "$T/crop"
"$PYTHON" - "$T/crop" <<'EOF2'
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
mkdir -p "$T/crop/src" && mv "$T/crop/a.png" "$T/crop/src/"
shardify "$T/crop/src" "$T/crop/out" --size 50 --fit crop --labels none --coco "$T/crop/coco.json" \
    --quiet --json >"$T/crop.json" || die "shardify with --coco and --fit crop"
[ "$(json "$T/crop/out/manifest.json" 'd["counts"]["boxes"], d["counts"]["boxes_dropped"]')" = "(2, 2)" ] ||
    die "boxes stored and dropped: $(json "$T/crop/out/manifest.json" 'd["counts"]')"
shardcheck "$T/crop/out" --deep --source "$T/crop/src" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "the cropped boxes do not verify"; }

say "numeric classes (WebDataset's .cls) are the class numbers: labels 0..max in numeric order"
N=$T/num
mkdir -p "$N/src"
# 0..12 but 5, one written 007 (class 7), so that sorting names as text would move most of them
for i in 0 1 2 3 4 6 7 8 9 10 11 12; do
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$N/src/s$i.jpg"
    printf '%s\n' "$i" >"$N/src/s$i.cls"
done
printf ' 007 ' >"$N/src/s7.cls"
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
shardcheck "$N/out" --deep --source "$N/src" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "numeric classes do not verify"; }
must_say "labels re-derived and checked" "$T/out"
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
shardcheck "$N/tags" --deep --source "$N/src" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "a numeric labels field does not verify"; }
printf '["2", "x"]' >"$N/src/s0.tags"
must_fail 1 shardify "$N/src" "$N/bad" --size 16 --quiet --labels sidecar:.cls --field tags=labels,from=.tags
must_say "'x' to 's0.jpg'; the classes must be all numbers" "$T/err"
rm "$N/src/s0.tags"
say "numbers and names mixed, a negative number, a number too large: refused, naming two samples"
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

say "bad declarations are usage errors, named"
must_fail 2 shardify "$G/tree" "$T/u1" --field caption
must_say "'caption' is not NAME=TYPE" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field caption=string
must_say "unknown field type 'string'" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field emb=float32
must_say "needs a length" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field 9x=text
must_say "a field name is" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field caption=text,from=caption
must_say "there is no --annotations table" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field caption=text --field caption=json
must_say "'caption' is declared twice" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --field caption=text,later
must_say "unknown part 'later'" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --annotations "$G/table.jsonl"
must_say "--annotations is read by --field" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --labels column:cls
must_say "needs --annotations" "$T/err"
must_fail 2 shardify "$G/tree" "$T/u1" --labels sidecar:cls
must_say "a sidecar suffix" "$T/err"
[ ! -e "$T/u1" ] || die "a refused run created DST"

say "a table that cannot be used fails the run, naming the file and line; nothing is published"
# bad_table FILE TEXT WORDS: the table FILE holding TEXT (printf %b) fails the run, saying WORDS
bad_table() {
    printf '%b' "$2" >"$T/$1"
    must_fail 1 shardify "$G/tree" "$T/t1" --field caption=text --annotations "$T/$1"
    must_say "$3" "$T/err"
}
bad_table dup.jsonl '{"key":"a/0000.jpg","caption":"x"}\n{"key":"a/0000.jpg","caption":"y"}\n' \
    "key 'a/0000.jpg' is listed twice (lines 1 and 2)"
bad_table nokey.jsonl '{"key":"a/0000.jpg"}\n{"caption": "no key"}\n' 'line 2: no "key"'
bad_table bad.jsonl '{"key":"a/0000.jpg"}\n{oops\n' "'$T/bad.jsonl' line 2:"
bad_table nocol.csv 'key,title\na/0000.jpg,x\n' "has no column 'caption'"
bad_table wide.csv 'key,caption\na/0000.jpg,x,y\n' "line 2: 3 fields, the header has 2"
bad_table twokeys.csv 'key,caption,key\na/0000.jpg,x,a/0001.jpg\n' \
    "annotation file '$T/twokeys.csv': column 'key' is in the header twice"
bad_table twocaptions.csv 'key,caption,note,caption\na/0000.jpg,x,y,z\n' \
    "column 'caption' is in the header twice"
bad_table bothkeys.jsonl '{"key":"a/0000.jpg","key_hex":"612f303030312e6a7067","caption":"x"}\n' \
    "'$T/bothkeys.jsonl' line 1: both \"key\" and \"key_hex\""
must_fail 1 shardify "$G/tree" "$T/t1" --field caption=text --annotations "$T/missing.jsonl"
must_say "cannot read annotation file" "$T/err"
mkfifo "$T/fifo.jsonl"
must_fail 1 timeout 20 shardify "$G/tree" "$T/t1" --field caption=text --annotations "$T/fifo.jsonl"
must_say "not a regular file: fifo" "$T/err"
[ ! -e "$T/t1/manifest.json" ] || die "a failed run published"

if strace_works; then
    say "an interrupted run with fields resumes to the dataset of an uninterrupted one"
    SRC="$G/tree"
    # shellcheck disable=SC2086
    OPTS="$OPTS $FIELDS --shard-size 8K --threads 1"
    # shellcheck disable=SC2086
    shardify "$SRC" "$T/whole" $OPTS
    # killed at the read of the last sample stored: earlier shards are finished
    last=$("$PYTHON" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["key"])' \
        "$T/whole/index.jsonl")
    stop_at read "$SRC/$last" "$T/resumed"
    kill -KILL "$run_pid"
    finish_run
    [ ! -e "$T/resumed/manifest.json" ] || die "a manifest after a kill"
    # shellcheck disable=SC2086
    shardify "$SRC" "$T/resumed" $OPTS --resume --json >"$T/resume.json"
    same_tree "$T/resumed" "$T/whole"
    [ "$(json "$T/resume.json" 'd["reused_shards"] >= 1')" = True ] || die "no shard was kept"
    "$PYTHON" "$FT" check "$T/resumed" "$G" || die "the resumed records"
else
    echo "SKIP: an interrupted run with fields: strace cannot trace here"
fi
echo "ok"
