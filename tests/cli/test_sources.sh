#!/bin/sh
# test_sources.sh - nothing in SRC is dropped silently: every candidate of a
# directory or an archive becomes a sample or a reject with its reason, the
# same for a tree and its tar, and shardcheck --source notices any
# difference.  Hard links, symbolic links, devices, fifos, unsafe names,
# damaged members, unreadable directories (as a non-root user), label rules
# that label nothing, and archives that hold nothing.
# (tests/fixtures/crafted_archives.py writes the crafted inputs.)
. "$(dirname "$0")/lib.sh"

# the crafted inputs (in $CRAFTED: $C is each case's own directory)
CRAFTED="$T/crafted"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/crafted_archives.py" "$SHARDKIT_FIXTURES/rgb.jpg" "$CRAFTED"

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

# the datasets the cases read: a tree and its tar, converted
shardify "$CRAFTED/tree" "$T/dir" --size 32 --json >"$T/dir.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify of the tree failed"; }
shardify "$CRAFTED/tree.tar" "$T/tar" --size 32 --json >"$T/tar.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify of the tar failed"; }

case_a_tree_and_its_tar_the_same_samples_and_rejects() {
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
    if [ -e "$CRAFTED/tree/a/chr.jpg" ]; then
        [ "$(reason "$T/tar.json" a/chr.jpg)" = "not a regular file: character device" ] ||
            die "character device"
        [ "$(reason "$T/tar.json" a/blk.jpg)" = "not a regular file: block device" ] ||
            die "block device"
    fi
    [ "$(json "$T/tar.json" 'd["ignored"]')" = 2 ] || die "ignored: a/data.bin and notes.txt only"
    shardcheck "$T/tar" --source "$CRAFTED/tree.tar" --deep --fidelity 5 >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "the tar's dataset does not verify against the tar"; }
    shardcheck "$T/dir" --source "$CRAFTED/tree" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "the tree's dataset does not verify against the tree"; }
}

case_shardcheck_source_notices_a_tar_that_differs_from_the_datasets() {
    must_fail 1 shardcheck "$T/tar" --source "$CRAFTED/relinked.tar"
    must_say "source: 'a/one.jpg' changed since sharding" "$T/stdout"
    must_fail 1 shardcheck "$T/tar" --source "$CRAFTED/symlinked.tar"
    must_say "source: 'a/one.jpg' in SRC: not a regular file: symbolic link (never followed); the dataset has it as a sample" "$T/stdout"
}

case_shardcheck_source_notices_a_tree_that_differs_from_the_datasets() {
    cp -a "$CRAFTED/tree" "$C/tree2"
    rm "$C/tree2/a/sym.jpg"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/tree2/a/sym.jpg"  # a file where the dataset has a link
    must_fail 1 shardcheck "$T/dir" --source "$C/tree2"
    must_say "source: 'a/sym.jpg' is a file in SRC" "$T/stdout"
    rm "$C/tree2/a/sym.jpg" "$C/tree2/a/one.jpg"
    ln -s two.jpg "$C/tree2/a/one.jpg"  # a link where the dataset has a sample
    ln -s one.jpg "$C/tree2/a/sym.jpg"
    must_fail 1 shardcheck "$T/dir" --source "$C/tree2"
    must_say "source: 'a/one.jpg' in SRC: not a regular file: symbolic link (never followed)" "$T/stdout"
}

case_unsafe_names_and_broken_hard_links_in_an_archive_are_rejects_with_reasons() {
    shardify "$CRAFTED/unsafe.tar" "$C/unsafe" --size 32 --json >"$C/unsafe.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "shardify failed"; }
    [ "$(summary "$C/unsafe.json")" = "1 5 0" ] || die "unsafe: $(summary "$C/unsafe.json")"
    [ "$(reason "$C/unsafe.json" ../up.jpg)" = "unsafe name in archive: '..' component" ] || die "../"
    [ "$(reason "$C/unsafe.json" /abs/x.jpg)" = "unsafe name in archive: absolute path" ] || die "/abs"
    [ "$(reason "$C/unsafe.json" a/../../evil.jpg)" = "unsafe name in archive: '..' component" ] ||
        die "a/../../"
    [ "$(reason "$C/unsafe.json" a/to-up.jpg)" = "hard link to '../up.jpg', an unsafe name" ] ||
        die "link to an unsafe name: $(reason "$C/unsafe.json" a/to-up.jpg)"
    [ "$(reason "$C/unsafe.json" a/dangling.jpg)" = \
      "hard link to 'a/nothing.jpg', which no earlier entry of the archive has" ] || die "dangling"
    [ "$(json "$C/unsafe/manifest.json" 'd["labels"]')" = "['a']" ] ||
        die "an unsafe name gave a label: $(json "$C/unsafe/manifest.json" 'd["labels"]')"
    shardcheck "$C/unsafe" --source "$CRAFTED/unsafe.tar" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "does not verify"; }
}

case_cpio_hard_links_carry_the_data_on_the_last_name_every_name_is_a_sample() {
    shardify "$CRAFTED/links.cpio" "$C/cpio" --size 32 --json >"$C/cpio.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "shardify failed"; }
    [ "$(summary "$C/cpio.json")" = "4 0 0" ] || die "cpio: $(summary "$C/cpio.json")"
    [ "$(cut -d, -f8 "$C/cpio/index.jsonl" | sort -u | wc -l)" = 1 ] || die "cpio links differ"
    shardcheck "$C/cpio" --source "$CRAFTED/links.cpio" --fidelity 4 >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "does not verify"; }
}

case_a_damaged_zip_member_is_rejected_with_its_reason_and_the_rest_is_read() {
    for z in lying cut-member; do
        shardify "$CRAFTED/$z.zip" "$C/$z" --size 32 --json >"$C/$z.json" 2>"$C/err" ||
            { cat "$C/err" >&2; die "one bad member of $z.zip failed the run"; }
        [ "$(summary "$C/$z.json")" = "2 1 0" ] || die "$z: $(summary "$C/$z.json")"
        for k in a/before.jpg a/after.jpg; do
            grep -q "\"key\":\"$k\"" "$C/$z/index.jsonl" || die "$z: $k is missing"
        done
        shardcheck "$C/$z" --source "$CRAFTED/$z.zip" >"$C/out" 2>&1 ||
            { cat "$C/out" >&2; die "$z: does not verify"; }
    done
    [ "$(reason "$C/lying.json" a/small.jpg)" = \
      "damaged archive entry: ZIP uncompressed data is wrong size (read 6688, expected 3000)" ] ||
        die "lying size: $(reason "$C/lying.json" a/small.jpg)"
    case $(reason "$C/cut-member.json" a/cut.jpg) in
        "damaged archive entry: "*) ;;
        *) die "cut member: $(reason "$C/cut-member.json" a/cut.jpg)" ;;
    esac
}

case_a_tar_member_cut_short_breaks_the_chain_the_run_fails_naming_it_and_publishes_nothing() {
    must_fail 1 shardify "$CRAFTED/cut-middle.tar" "$C/cut" --size 32 --quiet
    must_say "cannot read archive '$CRAFTED/cut-middle.tar': 'cut-middle.tar' after its entry 'a/m2.jpg': Damaged tar archive" \
        "$T/err"
    must_say "the entries after it cannot be located" "$T/err"
    [ "$(wc -l <"$T/err")" = 1 ] || die "the message is not one line"
    [ ! -e "$C/cut/manifest.json" ] || die "a manifest from a broken tar"
}

case_an_archive_cut_short_in_a_directory_of_archives_is_named_with_what_is_lost() {
    # (--archives)
    mkdir -p "$C/tars"
    (cd "$SHARDKIT_FIXTURES" && tar cf "$C/tars/00.tar" rgb.jpg gray.jpg progressive.jpg)
    (cd "$SHARDKIT_FIXTURES" && tar cf "$C/whole.tar" rgb.jpg gray.jpg progressive.jpg)
    head -c 9000 "$C/whole.tar" >"$C/tars/01.tar"
    cp "$C/tars/00.tar" "$C/tars/02.tar"
    must_fail 1 shardify --archives "$C/tars" "$C/tarsout" --size 32 --quiet
    must_say "cannot read archive '$C/tars': '01.tar' after its entry 'gray.jpg': Truncated" "$T/err"
    must_say "the archive cannot be read past it: its later entries are lost" "$T/err"
    [ "$(wc -l <"$T/err")" = 1 ] || die "the message is not one line"
    [ ! -e "$C/tarsout/manifest.json" ] || die "a manifest from a directory with a cut archive"
}

case_an_empty_or_zero_filled_archive_is_an_error_not_an_empty_dataset() {
    : >"$C/empty.tar"
    must_fail 1 shardify "$C/empty.tar" "$C/e1" --quiet
    must_say "source '$C/empty.tar' is an empty file, not an archive" "$T/err"
    head -c 10240 /dev/zero >"$C/zeros.tar"
    must_fail 1 shardify "$C/zeros.tar" "$C/e2" --quiet
    must_say "source '$C/zeros.tar' holds no archive entries" "$T/err"
    [ ! -e "$C/e1/manifest.json" ] && [ ! -e "$C/e2/manifest.json" ] || die "an empty dataset"
}

case_labels_unlabeled_samples_and_rows_naming_nothing_are_counted_labels_for_nothing_fail() {
    mkdir -p "$C/lab/a" "$C/lab/b"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/lab/a/1.jpg"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/lab/a/2.jpg"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/lab/b/3.jpg"
    printf 'file,class\na/1.jpg,cat\nb/3.jpg,dog\nmissing.jpg,cow\n' >"$C/labels.csv"
    shardify "$C/lab" "$C/l1" --size 32 --labels "$C/labels.csv" --json >"$C/l1.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "shardify failed"; }
    [ "$(json "$C/l1.json" '(d["unlabeled"], d["label_rows"], d["label_rows_unmatched"])')" = \
      "(1, 4, 2)" ] || die "label counts: $(cat "$C/l1.json")"
    must_say "shardify: 1 sample without a label" "$C/err"
    must_say "shardify: 2 of the 4 rows of the label file name no file of '$C/lab'" "$C/err"
    # a byte order mark before the header row (spreadsheets write one) is no part of it
    printf '\357\273\277key,label\na/1.jpg,cat\nb/3.jpg,dog\n' >"$C/bom.csv"
    shardify "$C/lab" "$C/lbom" --size 32 --labels "$C/bom.csv" --json >"$C/lbom.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "a label file with a byte order mark"; }
    [ "$(json "$C/lbom/manifest.json" 'd["labels"]')" = "['cat', 'dog']" ] &&
        [ "$(json "$C/lbom.json" 'd["label_rows"]')" = 2 ] || die "label file with a BOM: $(cat "$C/lbom.json")"
    printf 'key,label\nx/1.jpg,cat\n' >"$C/nothing.csv"
    must_fail 1 shardify "$C/lab" "$C/l2" --size 32 --labels "$C/nothing.csv" --quiet
    must_say "--labels '$C/nothing.csv' gives none of the 3 candidates a class: 1 of its 1 rows name no file" \
        "$T/err"
    must_fail 1 shardify "$C/lab" "$C/l3" --size 32 --labels 'regex:^(zebra)/' --quiet
    must_say "--labels 'regex:^(zebra)/' gives none of the 3 candidates a class" "$T/err"
    # said once, not "labels ... labels none"
    if grep -q "labels.* labels " "$T/err"; then die "a doubled word: $(cat "$T/err")"; fi
    [ ! -e "$C/l2/manifest.json" ] && [ ! -e "$C/l3/manifest.json" ] || die "published anyway"
    shardify "$C/lab" "$C/l4" --size 32 --labels none --quiet || die "--labels none must work"
    # the default rule on a flat folder labels nothing and is no error
    mkdir -p "$C/flat"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/flat/x.jpg"
    shardify "$C/flat" "$C/l5" --size 32 --quiet || die "the default labels on a flat folder"
}

case_unreadable_directories_and_files_are_rejects_with_reasons_run_as_nobody() {
    if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
        skip "needs root and setpriv to run shardify as another user"
    fi
    nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    P="$C/perm"
    mkdir -p "$P/src/a" "$P/src/b" "$P/src/private/deeper" "$P/out"
    for f in a/ok.jpg b/locked.jpg private/hidden.jpg private/deeper/x.jpg; do
        cp "$SHARDKIT_FIXTURES/rgb.jpg" "$P/src/$f"
    done
    chmod 000 "$P/src/private" "$P/src/b/locked.jpg"
    chmod 755 "$T" "$T/case" "$C" "$P" "$P/src"
    chown 65534:65534 "$P/out"
    nobody shardify "$P/src" "$P/out/d" --size 32 --json >"$C/perm.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "an unreadable directory failed the run"; }
    [ "$(summary "$C/perm.json")" = "1 2 0" ] || die "perm: $(summary "$C/perm.json")"
    [ "$(reason "$C/perm.json" private/)" = "cannot read directory: Permission denied" ] ||
        die "directory: $(reason "$C/perm.json" private/)"
    [ "$(reason "$C/perm.json" b/locked.jpg)" = "cannot open: Permission denied" ] || die "file"
    nobody shardcheck "$P/out/d" --source "$P/src" >"$C/out" 2>&1 ||
        { cat "$C/out" >&2; die "the same user cannot verify what it made"; }
    # root reads the directory: its files are in SRC but in no sample
    must_fail 1 shardcheck "$P/out/d" --source "$P/src"
    must_say "source: 'private/hidden.jpg' is in SRC but is neither a sample nor a listed reject" \
        "$T/stdout"
    must_say "source: rejected 'private/' (cannot read directory: Permission denied) is not in SRC" \
        "$T/stdout"
    chmod 755 "$P/src/private"
}

run_cases
