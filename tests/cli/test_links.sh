#!/bin/sh
# test_links.sh - shardify never follows a symbolic link planted inside DST,
# and a refused run leaves nothing behind.
#
# For every file and directory shardify creates, writes, renames or removes
# in DST (the work directory, lock, state, spool, shard and journal
# temporaries, journals, shards, index, manifest, run record and their
# temporaries) a link is planted there - to a directory, to a file, dangling
# - before a fresh run, an --overwrite of a published dataset and a --resume
# of an interrupted run: the run must exit 1 naming the link, leave DST
# exactly as it was, and leave the decoys the links point at byte for byte
# unchanged (a dangling link's target must not appear).  Links planted while
# a run is going (held by strace) are replaced or removed, never followed.
. "$(dirname "$0")/lib.sh"
# strace matches the paths shardify passes (see test_faults.sh)
T=$(cd "$T" && pwd -P)

OPTS="--size 32 --shard-size 16K --no-shuffle"

say "source: the demo images, its one non-image moved last (zz/notes.jpg); and its tar"
SRC="$T/src"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$SRC" >/dev/null
rm "$SRC/apple/truncated.jpg" "$SRC/boat/empty.jpg" "$SRC/dune/badcrc.png"
mkdir "$SRC/zz"
mv "$SRC/cloud/notes.jpg" "$SRC/zz/notes.jpg"
(cd "$SRC" && tar -cf "$T/src.tar" .)

say "a published dataset, and an interrupted run (--on-error fail stops at zz/notes.jpg)"
shardify "$SRC" "$T/published" $OPTS --quiet
[ "$(json "$T/published/manifest.json" 'len(d["shards"])')" -ge 3 ] || die "expected 3 shards or more"
must_fail 1 shardify "$SRC" "$T/interrupted" $OPTS --on-error fail --quiet
must_say "rejected 'zz/notes.jpg'" "$T/err"
for f in shard-000000.shard shard-000001.shard .shardify/journal-000000.jsonl .shardify/state.json; do
    [ -f "$T/interrupted/$f" ] || die "the interrupted run left no '$f'"
done
# the premise of the --resume cases: an untouched copy resumes
cp -a "$T/interrupted" "$T/resumed"
shardify "$SRC" "$T/resumed" $OPTS --resume --json >"$T/resumed.json" 2>/dev/null ||
    die "--resume of the interrupted run failed"
[ "$(json "$T/resumed.json" 'd["reused_shards"]')" -ge 2 ] || die "--resume kept no shard"
same_tree "$T/published" "$T/resumed"

# The decoys: what the links point at.  A dangling link points at decoys/none.
mkdir -p "$T/decoys/dir/sub"
echo precious >"$T/decoys/dir/a.txt"
echo precious too >"$T/decoys/dir/sub/b.txt"
echo 12345 >"$T/decoys/file"
tree_state "$T/decoys" >"$T/decoys.state"
decoys_intact() { same_state "$T/decoys.state" "$T/decoys" "$1: files outside DST changed"; }

# plant KIND PATH: a symbolic link at PATH to a directory, a file, or nothing.
plant() {
    case $1 in
    dir) ln -s "$T/decoys/dir" "$2" ;;
    file) ln -s "$T/decoys/file" "$2" ;;
    dangling) ln -s "$T/decoys/none" "$2" ;;
    esac
}

# refused TEXT DST SRC [ARGS...]: `shardify SRC DST $OPTS ARGS` exits 1 saying
# TEXT; DST is exactly as it was (nothing created, written or removed) and
# the decoys are intact.
refused() {
    text=$1 dst=$2 src=$3
    shift 3
    tree_state "$dst" >"$T/dst.state"
    must_fail 1 shardify "$src" "$dst" $OPTS --quiet "$@"
    must_say "$text" "$T/err"
    same_state "$T/dst.state" "$dst" "a refused run changed '$dst' ($text)"
    decoys_intact "$text"
}

# refused_link NAME DST SRC [ARGS...]: refused, naming the link DST/NAME.
refused_link() {
    link=$1
    shift
    refused "'$1/$link' is a symbolic link" "$@"
}

# Everything shardify writes at the top of DST, and in DST/.shardify.
TOP=".shardify manifest.json index.jsonl run.json .manifest.json.tmp .index.jsonl.tmp
     .run.json.tmp shard-000000.shard shard-000001.shard"
WORK="lock state.json .state.json.tmp spool shard-000000.shard.tmp journal-000000.jsonl
      journal-000000.jsonl.tmp"

# ---- before a fresh run -----------------------------------------------------------

for kind in dir file dangling; do
    say "fresh run, a link ($kind) at each path shardify writes: exit 1, nothing touched"
    for name in $TOP; do
        rm -rf "$T/d" && mkdir "$T/d"
        plant $kind "$T/d/$name"
        refused_link "$name" "$T/d" "$SRC"
    done
    for name in $WORK; do
        rm -rf "$T/d" && mkdir -p "$T/d/.shardify"
        plant $kind "$T/d/.shardify/$name"
        refused_link ".shardify/$name" "$T/d" "$SRC"
        # an archive source spools into the work directory
        case $name in spool | lock) refused_link ".shardify/$name" "$T/d" "$T/src.tar" ;; esac
    done
done

# ---- over a published dataset and an interrupted run -----------------------------------

# replace TEMPLATE NAME KIND: $T/d is a copy of TEMPLATE with DST/NAME (an
# existing file of shardify's, or a new name) replaced by a link.
replace() {
    rm -rf "$T/d" && cp -a "$1" "$T/d"
    mkdir -p "$T/d/.shardify"
    rm -f "$T/d/$2"
    plant "$3" "$T/d/$2"
}

for kind in dir file dangling; do
    say "--overwrite of a published dataset with a link ($kind): exit 1, the dataset untouched"
    for name in .shardify manifest.json index.jsonl run.json shard-000001.shard \
        .shardify/lock .shardify/spool .shardify/shard-000000.shard.tmp; do
        if [ "$name" = .shardify ]; then
            rm -rf "$T/d" && cp -a "$T/published" "$T/d" && plant $kind "$T/d/.shardify"
        else
            replace "$T/published" "$name" $kind
        fi
        refused_link "$name" "$T/d" "$SRC" --overwrite
    done

    say "--resume and --overwrite of an interrupted run with a link ($kind): exit 1, nothing touched"
    for name in .shardify/lock .shardify/state.json .shardify/journal-000000.jsonl \
        .shardify/journal-000001.jsonl .shardify/shard-000002.shard.tmp shard-000000.shard \
        shard-000001.shard .index.jsonl.tmp; do
        replace "$T/interrupted" "$name" $kind
        refused_link "$name" "$T/d" "$SRC" --resume
        refused_link "$name" "$T/d" "$SRC" --overwrite
    done
    rm -rf "$T/d" && cp -a "$T/interrupted" "$T/d" && rm -rf "$T/d/.shardify"
    plant $kind "$T/d/.shardify"
    refused_link .shardify "$T/d" "$SRC" --resume
    refused_link .shardify "$T/d" "$SRC" --overwrite
done

say "a lock with a second name (a hard link to a file outside DST) is refused, never written"
rm -rf "$T/d" && mkdir -p "$T/d/.shardify"
ln "$T/decoys/file" "$T/d/.shardify/lock"
refused "'$T/d/.shardify/lock' is not a regular file with a single name" "$T/d" "$SRC"
rm "$T/d/.shardify/lock"

say "a directory where shardify expects a file, a file where it expects its work directory"
rm -rf "$T/d" && mkdir -p "$T/d/manifest.json"
refused "'$T/d/manifest.json' is not a regular file" "$T/d" "$SRC"
rm -rf "$T/d" && mkdir "$T/d" && echo x >"$T/d/.shardify"
refused "'$T/d/.shardify' is not a directory" "$T/d" "$SRC"

# ---- planted while the run is going -------------------------------------------------

if strace_works; then
    first_key=$("$PYTHON" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["key"])' \
        "$T/published/index.jsonl")

    for kind in dir file dangling; do
        say "links ($kind) planted during a run at every name it has yet to write are replaced, never followed"
        rm -rf "$T/race"
        # held once the lock is taken and the state written, before any shard
        stop_at openat "$first_key" "$T/race" --threads 1
        for name in $TOP; do
            [ "$name" = .shardify ] || plant $kind "$T/race/$name"
        done
        for name in shard-000000.shard.tmp shard-000001.shard.tmp journal-000000.jsonl \
            journal-000001.jsonl journal-000000.jsonl.tmp journal-000001.jsonl.tmp; do
            plant $kind "$T/race/.shardify/$name"
        done
        kill -CONT "$run_pid"
        finish_run
        [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
        decoys_intact "links planted during a run"
        [ -z "$(find "$T/race" -type l)" ] || die "links left in the dataset: $(find "$T/race" -type l)"
        same_tree "$T/published" "$T/race"
        shardcheck "$T/race" >/dev/null || die "the dataset does not verify"
    done

    say "a link planted at the spool of an archive source during the run is replaced, never followed"
    SRC="$T/src.tar"
    rm -rf "$T/race"
    # held when the archive is opened: the lock is taken, the spool not yet made
    stop_at openat "$T/src.tar" "$T/race" --threads 1
    plant file "$T/race/.shardify/spool"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    decoys_intact "a link at the spool"
    [ ! -e "$T/race/.shardify" ] && [ ! -L "$T/race/.shardify" ] || die "work directory left behind"
    shardcheck "$T/race" >/dev/null || die "the dataset does not verify"
    SRC="$T/src"

    say "links replacing old shards during an --overwrite are removed as links, never followed"
    rm -rf "$T/race" && cp -a "$T/published" "$T/race"
    # held once the old manifest is removed, before the old shards are
    stop_at unlink,unlinkat manifest.json "$T/race" --overwrite --threads 1
    for s in "$T"/race/shard-*.shard; do
        rm "$s" && plant dir "$s"
    done
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    decoys_intact "links at old shards"
    same_tree "$T/published" "$T/race"
else
    echo "SKIP: links planted during a run: strace is not available"
fi

# ---- refused runs leave nothing behind -------------------------------------------------

say "DST inside SRC is refused before anything is created"
tree_state "$SRC" >"$T/src.state"
must_fail 1 shardify "$SRC" "$SRC/out" $OPTS --quiet
must_say "inside the source" "$T/err"
must_fail 1 shardify "$SRC" "$T/nowhere/../src/deeper/out" $OPTS --quiet
must_say "inside the source" "$T/err"
[ ! -e "$T/nowhere" ] || die "a refused run created '$T/nowhere'"
same_state "$T/src.state" "$SRC" "a refused run changed the source"
mkdir -p "$T/holder/.shardify"
cp "$SRC/apple/"*.png "$T/holder/.shardify/"
tree_state "$T/holder" >"$T/holder.state"
must_fail 1 shardify "$T/holder/.shardify" "$T/holder" $OPTS --quiet
must_say "is inside the destination" "$T/err"
same_state "$T/holder.state" "$T/holder" "the source inside DST was touched"

say "refused on a published dataset: no lock, no work directory left in it"
refused "holds a previous shardify output" "$T/published" "$SRC"
refused "nothing to resume" "$T/published" "$SRC" --resume
[ ! -e "$T/published/.shardify" ] || die "a refused run left '.shardify' in the dataset"

say "a run that fails before it has anything to resume removes what it created, DST too"
printf 'not an archive %.0s' $(seq 300) >"$T/junk.tar"
must_fail 1 shardify "$T/junk.tar" "$T/new/a/out" $OPTS --quiet
must_say "cannot read archive" "$T/err"
[ ! -e "$T/new" ] || die "the failed run left '$T/new': $(find "$T/new")"
mkdir "$T/empty"
must_fail 1 shardify "$T/junk.tar" "$T/empty" $OPTS --quiet
[ -z "$(ls -A "$T/empty")" ] || die "the failed run left $(ls -A "$T/empty") in an empty DST"

say "DST given as a symbolic link is the user's choice: followed, like cd"
mkdir "$T/real"
ln -s "$T/real" "$T/dst-link"
shardify "$SRC" "$T/dst-link" $OPTS --quiet
same_tree "$T/published" "$T/real"
ln -s "$SRC/apple" "$T/into-src"
must_fail 1 shardify "$SRC" "$T/into-src" $OPTS --quiet
must_say "inside the source" "$T/err"

echo "all link checks passed"
