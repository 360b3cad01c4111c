#!/bin/sh
# test_sources.sh - nothing in SRC is dropped silently: every candidate of a
# directory or an archive becomes a sample or a reject with its reason, the
# same for a tree and its tar, and shardcheck --source notices any
# difference.  Hard links, symbolic links, devices, fifos, unsafe names,
# damaged members, unreadable directories (as a non-root user), label rules
# that label nothing, and archives that hold nothing.
# (tests/fixtures/crafted_archives.py writes the crafted inputs.)
. "$(dirname "$0")/lib.sh"

C="$T/crafted"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/crafted_archives.py" "$SHARDKIT_FIXTURES/rgb.jpg" "$C"

# summary FILE: "samples rejected ignored" of a --json summary
summary() { json "$1" '"%d %d %d" % (d["samples"], d["rejected"], d["ignored"])'; }
# reason FILE KEY: the reject reason of KEY in a --json summary ('' if none)
reason() {
    "$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(next((r["reason"] for r in d["rejects"] if r["key"] == sys.argv[2]), ""))' "$1" "$2"
}
# same_dataset A B: same samples (index lines: keys, labels, places, identity),
# same rejects (keys, reasons, identity), same counts
same_dataset() {
    cmp "$1/index.jsonl" "$2/index.jsonl" || die "'$1' and '$2' have different samples"
    "$PYTHON" -c 'import json, sys
a, b = (json.load(open(p + "/manifest.json")) for p in sys.argv[1:3])
assert a["rejected"] == b["rejected"], (a["rejected"], b["rejected"])
assert a["counts"] == b["counts"] and a["labels"] == b["labels"], (a["counts"], b["counts"])
' "$1" "$2" || die "'$1' and '$2' have different rejects or counts"
}

say "a tree and its tar: the same samples and rejects"
shardify "$C/tree" "$T/dir" --size 32 --json >"$T/dir.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify of the tree failed"; }
shardify "$C/tree.tar" "$T/tar" --size 32 --json >"$T/tar.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify of the tar failed"; }
same_dataset "$T/dir" "$T/tar"
# one.jpg, two.jpg, three.png, hard.jpg (hard link), zz.jpg (hard link to a.bin)
[ "$(json "$T/tar.json" 'd["samples"]')" = 5 ] || die "tar samples: $(summary "$T/tar.json")"
for k in a/hard.jpg a/zz.jpg; do
    grep -q "\"key\":\"$k\"" "$T/tar/index.jsonl" || die "the hard link $k is not a sample"
done
"$PYTHON" -c 'import json, sys
lines = {json.loads(l)["key"]: json.loads(l) for l in open(sys.argv[1])}
assert lines["a/hard.jpg"]["source_xxh3"] == lines["a/one.jpg"]["source_xxh3"], "link bytes"
assert lines["a/zz.jpg"]["source_bytes"] == lines["a/one.jpg"]["source_bytes"] + 1, "a.bin bytes"
' "$T/tar/index.jsonl" || die "a hard link does not have its target's bytes"
[ "$(reason "$T/tar.json" a/sym.jpg)" = "not a regular file: symbolic link (never followed)" ] ||
    die "symlink: $(reason "$T/tar.json" a/sym.jpg)"
[ "$(reason "$T/tar.json" a/fifo.jpg)" = "not a regular file: fifo" ] || die "fifo"
if [ -e "$C/tree/a/chr.jpg" ]; then
    [ "$(reason "$T/tar.json" a/chr.jpg)" = "not a regular file: character device" ] ||
        die "character device"
    [ "$(reason "$T/tar.json" a/blk.jpg)" = "not a regular file: block device" ] ||
        die "block device"
fi
[ "$(json "$T/tar.json" 'd["ignored"]')" = 2 ] || die "ignored: a/data.bin and notes.txt only"
shardcheck "$T/tar" --source "$C/tree.tar" --deep --fidelity 5 >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "the tar's dataset does not verify against the tar"; }
shardcheck "$T/dir" --source "$C/tree" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "the tree's dataset does not verify against the tree"; }

say "shardcheck --source notices a tar that differs from the dataset's"
must_fail 1 shardcheck "$T/tar" --source "$C/relinked.tar"
must_say "source: 'a/one.jpg' changed since sharding" "$T/stdout"
must_fail 1 shardcheck "$T/tar" --source "$C/symlinked.tar"
must_say "source: 'a/one.jpg' in SRC: not a regular file: symbolic link (never followed); the dataset has it as a sample" "$T/stdout"

say "shardcheck --source notices a tree that differs from the dataset's"
cp -a "$C/tree" "$T/tree2"
rm "$T/tree2/a/sym.jpg"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/tree2/a/sym.jpg"  # a file where the dataset has a link
must_fail 1 shardcheck "$T/dir" --source "$T/tree2"
must_say "source: 'a/sym.jpg' is a file in SRC" "$T/stdout"
rm "$T/tree2/a/sym.jpg" "$T/tree2/a/one.jpg"
ln -s two.jpg "$T/tree2/a/one.jpg"  # a link where the dataset has a sample
ln -s one.jpg "$T/tree2/a/sym.jpg"
must_fail 1 shardcheck "$T/dir" --source "$T/tree2"
must_say "source: 'a/one.jpg' in SRC: not a regular file: symbolic link (never followed)" "$T/stdout"

say "unsafe names and broken hard links in an archive are rejects with reasons"
shardify "$C/unsafe.tar" "$T/unsafe" --size 32 --json >"$T/unsafe.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify failed"; }
[ "$(summary "$T/unsafe.json")" = "1 5 0" ] || die "unsafe: $(summary "$T/unsafe.json")"
[ "$(reason "$T/unsafe.json" ../up.jpg)" = "unsafe name in archive: '..' component" ] || die "../"
[ "$(reason "$T/unsafe.json" /abs/x.jpg)" = "unsafe name in archive: absolute path" ] || die "/abs"
[ "$(reason "$T/unsafe.json" a/../../evil.jpg)" = "unsafe name in archive: '..' component" ] ||
    die "a/../../"
[ "$(reason "$T/unsafe.json" a/to-up.jpg)" = "hard link to '../up.jpg', an unsafe name" ] ||
    die "link to an unsafe name: $(reason "$T/unsafe.json" a/to-up.jpg)"
[ "$(reason "$T/unsafe.json" a/dangling.jpg)" = \
  "hard link to 'a/nothing.jpg', which no earlier entry of the archive has" ] || die "dangling"
[ "$(json "$T/unsafe/manifest.json" 'd["labels"]')" = "['a']" ] ||
    die "an unsafe name gave a label: $(json "$T/unsafe/manifest.json" 'd["labels"]')"
shardcheck "$T/unsafe" --source "$C/unsafe.tar" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "does not verify"; }

say "cpio hard links carry the data on the last name: every name is a sample"
shardify "$C/links.cpio" "$T/cpio" --size 32 --json >"$T/cpio.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify failed"; }
[ "$(summary "$T/cpio.json")" = "4 0 0" ] || die "cpio: $(summary "$T/cpio.json")"
[ "$(cut -d, -f8 "$T/cpio/index.jsonl" | sort -u | wc -l)" = 1 ] || die "cpio links differ"
shardcheck "$T/cpio" --source "$C/links.cpio" --fidelity 4 >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "does not verify"; }

say "a damaged zip member is rejected with its reason, and the rest is read"
for z in lying cut-member; do
    shardify "$C/$z.zip" "$T/$z" --size 32 --json >"$T/$z.json" 2>"$T/err" ||
        { cat "$T/err" >&2; die "one bad member of $z.zip failed the run"; }
    [ "$(summary "$T/$z.json")" = "2 1 0" ] || die "$z: $(summary "$T/$z.json")"
    for k in a/before.jpg a/after.jpg; do
        grep -q "\"key\":\"$k\"" "$T/$z/index.jsonl" || die "$z: $k is missing"
    done
    shardcheck "$T/$z" --source "$C/$z.zip" >"$T/out" 2>&1 ||
        { cat "$T/out" >&2; die "$z: does not verify"; }
done
[ "$(reason "$T/lying.json" a/small.jpg)" = \
  "damaged archive entry: ZIP uncompressed data is wrong size (read 6688, expected 3000)" ] ||
    die "lying size: $(reason "$T/lying.json" a/small.jpg)"
case $(reason "$T/cut-member.json" a/cut.jpg) in
    "damaged archive entry: "*) ;;
    *) die "cut member: $(reason "$T/cut-member.json" a/cut.jpg)" ;;
esac

say "a tar member cut short breaks the chain: the run fails, naming it, and publishes nothing"
must_fail 1 shardify "$C/cut-middle.tar" "$T/cut" --size 32 --quiet
must_say "cannot read archive '$C/cut-middle.tar': 'cut-middle.tar' after its entry 'a/m2.jpg': Damaged tar archive" \
    "$T/err"
must_say "the entries after it cannot be located" "$T/err"
[ "$(wc -l <"$T/err")" = 1 ] || die "the message is not one line"
[ ! -e "$T/cut/manifest.json" ] || die "a manifest from a broken tar"

say "an archive cut short in a directory of archives (--archives) is named, with what is lost"
mkdir -p "$T/tars"
(cd "$SHARDKIT_FIXTURES" && tar cf "$T/tars/00.tar" rgb.jpg gray.jpg progressive.jpg)
(cd "$SHARDKIT_FIXTURES" && tar cf "$T/whole.tar" rgb.jpg gray.jpg progressive.jpg)
head -c 9000 "$T/whole.tar" >"$T/tars/01.tar"
cp "$T/tars/00.tar" "$T/tars/02.tar"
must_fail 1 shardify --archives "$T/tars" "$T/tarsout" --size 32 --quiet
must_say "cannot read archive '$T/tars': '01.tar' after its entry 'gray.jpg': Truncated" "$T/err"
must_say "the archive cannot be read past it: its later entries are lost" "$T/err"
[ "$(wc -l <"$T/err")" = 1 ] || die "the message is not one line"
[ ! -e "$T/tarsout/manifest.json" ] || die "a manifest from a directory with a cut archive"

say "an empty or zero-filled archive is an error, not an empty dataset"
: >"$T/empty.tar"
must_fail 1 shardify "$T/empty.tar" "$T/e1" --quiet
must_say "source '$T/empty.tar' is an empty file, not an archive" "$T/err"
head -c 10240 /dev/zero >"$T/zeros.tar"
must_fail 1 shardify "$T/zeros.tar" "$T/e2" --quiet
must_say "source '$T/zeros.tar' holds no archive entries" "$T/err"
[ ! -e "$T/e1/manifest.json" ] && [ ! -e "$T/e2/manifest.json" ] || die "an empty dataset"

say "labels: unlabeled samples and rows naming nothing are counted; labels for nothing fail"
mkdir -p "$T/lab/a" "$T/lab/b"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/lab/a/1.jpg"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/lab/a/2.jpg"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/lab/b/3.jpg"
printf 'file,class\na/1.jpg,cat\nb/3.jpg,dog\nmissing.jpg,cow\n' >"$T/labels.csv"
shardify "$T/lab" "$T/l1" --size 32 --labels "$T/labels.csv" --json >"$T/l1.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify failed"; }
[ "$(json "$T/l1.json" '(d["unlabeled"], d["label_rows"], d["label_rows_unmatched"])')" = \
  "(1, 4, 2)" ] || die "label counts: $(cat "$T/l1.json")"
must_say "shardify: 1 sample without a label" "$T/err"
must_say "shardify: 2 of the 4 rows of the label file name no file of '$T/lab'" "$T/err"
# a byte order mark before the header row (spreadsheets write one) is no part of it
printf '\357\273\277key,label\na/1.jpg,cat\nb/3.jpg,dog\n' >"$T/bom.csv"
shardify "$T/lab" "$T/lbom" --size 32 --labels "$T/bom.csv" --json >"$T/lbom.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "a label file with a byte order mark"; }
[ "$(json "$T/lbom/manifest.json" 'd["labels"]')" = "['cat', 'dog']" ] &&
    [ "$(json "$T/lbom.json" 'd["label_rows"]')" = 2 ] || die "label file with a BOM: $(cat "$T/lbom.json")"
printf 'key,label\nx/1.jpg,cat\n' >"$T/nothing.csv"
must_fail 1 shardify "$T/lab" "$T/l2" --size 32 --labels "$T/nothing.csv" --quiet
must_say "--labels '$T/nothing.csv' gives none of the 3 candidates a class: 1 of its 1 rows name no file" \
    "$T/err"
must_fail 1 shardify "$T/lab" "$T/l3" --size 32 --labels 'regex:^(zebra)/' --quiet
must_say "--labels 'regex:^(zebra)/' gives none of the 3 candidates a class" "$T/err"
# said once, not "labels ... labels none"
grep -q "labels.* labels " "$T/err" && die "a doubled word: $(cat "$T/err")"
[ ! -e "$T/l2/manifest.json" ] && [ ! -e "$T/l3/manifest.json" ] || die "published anyway"
shardify "$T/lab" "$T/l4" --size 32 --labels none --quiet || die "--labels none must work"
# the default rule on a flat folder labels nothing and is no error
mkdir -p "$T/flat"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/flat/x.jpg"
shardify "$T/flat" "$T/l5" --size 32 --quiet || die "the default labels on a flat folder"

say "unreadable directories and files are rejects with reasons (run as nobody)"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    skip "needs root and setpriv to run shardify as another user"
fi
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
P="$T/perm"
mkdir -p "$P/src/a" "$P/src/b" "$P/src/private/deeper" "$P/out"
for f in a/ok.jpg b/locked.jpg private/hidden.jpg private/deeper/x.jpg; do
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$P/src/$f"
done
chmod 000 "$P/src/private" "$P/src/b/locked.jpg"
chmod 755 "$T" "$P" "$P/src"
chown 65534:65534 "$P/out"
nobody shardify "$P/src" "$P/out/d" --size 32 --json >"$T/perm.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "an unreadable directory failed the run"; }
[ "$(summary "$T/perm.json")" = "1 2 0" ] || die "perm: $(summary "$T/perm.json")"
[ "$(reason "$T/perm.json" private/)" = "cannot read directory: Permission denied" ] ||
    die "directory: $(reason "$T/perm.json" private/)"
[ "$(reason "$T/perm.json" b/locked.jpg)" = "cannot open: Permission denied" ] || die "file"
nobody shardcheck "$P/out/d" --source "$P/src" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; die "the same user cannot verify what it made"; }
# root reads the directory: its files are in SRC but in no sample
must_fail 1 shardcheck "$P/out/d" --source "$P/src"
must_say "source: 'private/hidden.jpg' is in SRC but is neither a sample nor a listed reject" \
    "$T/stdout"
must_say "source: rejected 'private/' (cannot read directory: Permission denied) is not in SRC" \
    "$T/stdout"
chmod 755 "$P/src/private"

echo "all source checks passed"
