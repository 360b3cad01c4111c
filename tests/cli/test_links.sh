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

# source: the demo images, its one non-image moved last (zz/notes.jpg); and its tar
SRC="$T/src"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$SRC" >/dev/null
rm "$SRC/apple/truncated.jpg" "$SRC/boat/empty.jpg" "$SRC/dune/badcrc.png"
mkdir "$SRC/zz"
mv "$SRC/cloud/notes.jpg" "$SRC/zz/notes.jpg"
(cd "$SRC" && tar -cf "$T/src.tar" .)

# the datasets the cases copy: a published one, and an interrupted run
# (--on-error fail stops at zz/notes.jpg)
shardify "$SRC" "$T/published" $OPTS --quiet
must_fail 1 shardify "$SRC" "$T/interrupted" $OPTS --on-error fail --quiet
must_say "rejected 'zz/notes.jpg'" "$T/err"

# the runs held by strace (the first sample's key: where a run is held)
strace_ok=""
if strace_works; then
    strace_ok=yes
    first_key=$("$PYTHON" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["key"])' \
        "$T/published/index.jsonl")
else
    echo "SKIP: links planted during a run: strace is not available"
fi

# decoys: what the case's links point at, in $C/decoys; a dangling link
# points at decoys/none.
decoys() {
    mkdir -p "$C/decoys/dir/sub"
    echo precious >"$C/decoys/dir/a.txt"
    echo precious too >"$C/decoys/dir/sub/b.txt"
    echo 12345 >"$C/decoys/file"
    tree_state "$C/decoys" >"$C/decoys.state"
}
decoys_intact() { same_state "$C/decoys.state" "$C/decoys" "$1: files outside DST changed"; }

# plant KIND PATH: a symbolic link at PATH to a directory, a file, or nothing.
plant() {
    case $1 in
    dir) ln -s "$C/decoys/dir" "$2" ;;
    file) ln -s "$C/decoys/file" "$2" ;;
    dangling) ln -s "$C/decoys/none" "$2" ;;
    esac
}

# refused TEXT DST SRC [ARGS...]: `shardify SRC DST $OPTS ARGS` exits 1 saying
# TEXT; DST is exactly as it was (nothing created, written or removed) and
# the decoys are intact.
refused() {
    text=$1 dst=$2 src=$3
    shift 3
    tree_state "$dst" >"$C/dst.state"
    must_fail 1 shardify "$src" "$dst" $OPTS --quiet "$@"
    must_say "$text" "$T/err"
    same_state "$C/dst.state" "$dst" "a refused run changed '$dst' ($text)"
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

case_the_published_dataset_and_the_interrupted_run_are_what_the_cases_need() {
    [ "$(json "$T/published/manifest.json" 'len(d["shards"])')" -ge 3 ] || die "expected 3 shards or more"
    for f in shard-000000.shard shard-000001.shard .shardify/journal-000000.jsonl .shardify/state.json; do
        [ -f "$T/interrupted/$f" ] || die "the interrupted run left no '$f'"
    done
    # the premise of the --resume cases: an untouched copy resumes
    cp -a "$T/interrupted" "$C/resumed"
    shardify "$SRC" "$C/resumed" $OPTS --resume --json >"$C/resumed.json" 2>/dev/null ||
        die "--resume of the interrupted run failed"
    [ "$(json "$C/resumed.json" 'd["reused_shards"]')" -ge 2 ] || die "--resume kept no shard"
    same_tree "$T/published" "$C/resumed"
}

# ---- before a fresh run -----------------------------------------------------------

# fresh_run KIND: a link (KIND) at each path shardify writes: exit 1, nothing touched
fresh_run() {
    decoys
    for name in $TOP; do
        rm -rf "$C/d" && mkdir "$C/d"
        plant "$1" "$C/d/$name"
        refused_link "$name" "$C/d" "$SRC"
    done
    for name in $WORK; do
        rm -rf "$C/d" && mkdir -p "$C/d/.shardify"
        plant "$1" "$C/d/.shardify/$name"
        refused_link ".shardify/$name" "$C/d" "$SRC"
        # an archive source spools into the work directory
        case $name in spool | lock) refused_link ".shardify/$name" "$C/d" "$T/src.tar" ;; esac
    done
}
case_fresh_run_a_link_dir_at_each_path_shardify_writes_exit_1_nothing_touched() { fresh_run dir; }
case_fresh_run_a_link_file_at_each_path_shardify_writes_exit_1_nothing_touched() { fresh_run file; }
case_fresh_run_a_link_dangling_at_each_path_shardify_writes_exit_1_nothing_touched() { fresh_run dangling; }

# ---- over a published dataset and an interrupted run -----------------------------------

# replace TEMPLATE NAME KIND: $C/d is a copy of TEMPLATE with DST/NAME (an
# existing file of shardify's, or a new name) replaced by a link.
replace() {
    rm -rf "$C/d" && cp -a "$1" "$C/d"
    mkdir -p "$C/d/.shardify"
    rm -f "$C/d/$2"
    plant "$3" "$C/d/$2"
}

# overwrite_published KIND: --overwrite of a published dataset with a link
# (KIND): exit 1, the dataset untouched
overwrite_published() {
    decoys
    for name in .shardify manifest.json index.jsonl run.json shard-000001.shard \
        .shardify/lock .shardify/spool .shardify/shard-000000.shard.tmp; do
        if [ "$name" = .shardify ]; then
            rm -rf "$C/d" && cp -a "$T/published" "$C/d" && plant "$1" "$C/d/.shardify"
        else
            replace "$T/published" "$name" "$1"
        fi
        refused_link "$name" "$C/d" "$SRC" --overwrite
    done
}
# resume_interrupted KIND: --resume and --overwrite of an interrupted run
# with a link (KIND): exit 1, nothing touched
resume_interrupted() {
    decoys
    for name in .shardify/lock .shardify/state.json .shardify/journal-000000.jsonl \
        .shardify/journal-000001.jsonl .shardify/shard-000002.shard.tmp shard-000000.shard \
        shard-000001.shard .index.jsonl.tmp; do
        replace "$T/interrupted" "$name" "$1"
        refused_link "$name" "$C/d" "$SRC" --resume
        refused_link "$name" "$C/d" "$SRC" --overwrite
    done
    rm -rf "$C/d" && cp -a "$T/interrupted" "$C/d" && rm -rf "$C/d/.shardify"
    plant "$1" "$C/d/.shardify"
    refused_link .shardify "$C/d" "$SRC" --resume
    refused_link .shardify "$C/d" "$SRC" --overwrite
}
case_overwrite_of_a_published_dataset_with_a_link_dir_exit_1_the_dataset_untouched() { overwrite_published dir; }
case_resume_and_overwrite_of_an_interrupted_run_with_a_link_dir_exit_1_nothing_touched() { resume_interrupted dir; }
case_overwrite_of_a_published_dataset_with_a_link_file_exit_1_the_dataset_untouched() { overwrite_published file; }
case_resume_and_overwrite_of_an_interrupted_run_with_a_link_file_exit_1_nothing_touched() { resume_interrupted file; }
case_overwrite_of_a_published_dataset_with_a_link_dangling_exit_1_the_dataset_untouched() { overwrite_published dangling; }
case_resume_and_overwrite_of_an_interrupted_run_with_a_link_dangling_exit_1_nothing_touched() { resume_interrupted dangling; }

case_a_lock_with_a_second_name_a_hard_link_to_a_file_outside_dst_is_refused_never_written() {
    decoys
    mkdir -p "$C/d/.shardify"
    ln "$C/decoys/file" "$C/d/.shardify/lock"
    refused "'$C/d/.shardify/lock' is not a regular file with a single name" "$C/d" "$SRC"
}

case_a_directory_where_shardify_expects_a_file_a_file_where_it_expects_its_work_directory() {
    decoys
    mkdir -p "$C/d/manifest.json"
    refused "'$C/d/manifest.json' is not a regular file" "$C/d" "$SRC"
    rm -rf "$C/d" && mkdir "$C/d" && echo x >"$C/d/.shardify"
    refused "'$C/d/.shardify' is not a directory" "$C/d" "$SRC"
}

# ---- planted while the run is going -------------------------------------------------

# race KIND: links (KIND) planted during a run at every name it has yet to
# write are replaced, never followed
race() {
    [ -n "$strace_ok" ] || return 0
    decoys
    # held once the lock is taken and the state written, before any shard
    stop_at openat "$first_key" "$C/race" --threads 1
    for name in $TOP; do
        [ "$name" = .shardify ] || plant "$1" "$C/race/$name"
    done
    for name in shard-000000.shard.tmp shard-000001.shard.tmp journal-000000.jsonl \
        journal-000001.jsonl journal-000000.jsonl.tmp journal-000001.jsonl.tmp; do
        plant "$1" "$C/race/.shardify/$name"
    done
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    decoys_intact "links planted during a run"
    [ -z "$(find "$C/race" -type l)" ] || die "links left in the dataset: $(find "$C/race" -type l)"
    same_tree "$T/published" "$C/race"
    shardcheck "$C/race" >/dev/null || die "the dataset does not verify"
}
case_links_dir_planted_during_a_run_at_every_name_it_has_yet_to_write_are_replaced_never_followed() { race dir; }
case_links_file_planted_during_a_run_at_every_name_it_has_yet_to_write_are_replaced_never_followed() { race file; }
case_links_dangling_planted_during_a_run_at_every_name_it_has_yet_to_write_are_replaced_never_followed() { race dangling; }

case_a_link_planted_at_the_spool_of_an_archive_source_during_the_run_is_replaced_never_followed() {
    [ -n "$strace_ok" ] || return 0
    decoys
    SRC="$T/src.tar"
    # held when the archive is opened: the lock is taken, the spool not yet made
    stop_at openat "$T/src.tar" "$C/race" --threads 1
    plant file "$C/race/.shardify/spool"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    decoys_intact "a link at the spool"
    [ ! -e "$C/race/.shardify" ] && [ ! -L "$C/race/.shardify" ] || die "work directory left behind"
    shardcheck "$C/race" >/dev/null || die "the dataset does not verify"
}

case_links_replacing_old_shards_during_an_overwrite_are_removed_as_links_never_followed() {
    [ -n "$strace_ok" ] || return 0
    decoys
    cp -a "$T/published" "$C/race"
    # held once the old manifest is removed, before the old shards are
    stop_at unlink,unlinkat manifest.json "$C/race" --overwrite --threads 1
    for s in "$C"/race/shard-*.shard; do
        rm "$s" && plant dir "$s"
    done
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    decoys_intact "links at old shards"
    same_tree "$T/published" "$C/race"
}

# ---- refused runs leave nothing behind -------------------------------------------------

case_dst_inside_src_is_refused_before_anything_is_created() {
    # a copy of the source, which a run that was not refused would write into
    cp -a "$SRC" "$C/src"
    tree_state "$C/src" >"$C/src.state"
    must_fail 1 shardify "$C/src" "$C/src/out" $OPTS --quiet
    must_say "inside the source" "$T/err"
    must_fail 1 shardify "$C/src" "$C/nowhere/../src/deeper/out" $OPTS --quiet
    must_say "inside the source" "$T/err"
    [ ! -e "$C/nowhere" ] || die "a refused run created '$C/nowhere'"
    same_state "$C/src.state" "$C/src" "a refused run changed the source"
    mkdir -p "$C/holder/.shardify"
    cp "$SRC/apple/"*.png "$C/holder/.shardify/"
    tree_state "$C/holder" >"$C/holder.state"
    must_fail 1 shardify "$C/holder/.shardify" "$C/holder" $OPTS --quiet
    must_say "is inside the destination" "$T/err"
    same_state "$C/holder.state" "$C/holder" "the source inside DST was touched"
}

case_refused_on_a_published_dataset_no_lock_no_work_directory_left_in_it() {
    decoys
    cp -a "$T/published" "$C/published"
    refused "holds a previous shardify output" "$C/published" "$SRC"
    refused "nothing to resume" "$C/published" "$SRC" --resume
    [ ! -e "$C/published/.shardify" ] || die "a refused run left '.shardify' in the dataset"
}

case_a_run_that_fails_before_it_has_anything_to_resume_removes_what_it_created_dst_too() {
    printf 'not an archive %.0s' $(seq 300) >"$C/junk.tar"
    must_fail 1 shardify "$C/junk.tar" "$C/new/a/out" $OPTS --quiet
    must_say "cannot read archive" "$T/err"
    [ ! -e "$C/new" ] || die "the failed run left '$C/new': $(find "$C/new")"
    mkdir "$C/empty"
    must_fail 1 shardify "$C/junk.tar" "$C/empty" $OPTS --quiet
    [ -z "$(ls -A "$C/empty")" ] || die "the failed run left $(ls -A "$C/empty") in an empty DST"
}

case_dst_given_as_a_symbolic_link_is_the_users_choice_followed_like_cd() {
    mkdir "$C/real"
    ln -s "$C/real" "$C/dst-link"
    shardify "$SRC" "$C/dst-link" $OPTS --quiet
    same_tree "$T/published" "$C/real"
    # into a copy of the source, which a run that was not refused would write into
    cp -a "$SRC" "$C/src"
    ln -s "$C/src/apple" "$C/into-src"
    must_fail 1 shardify "$C/src" "$C/into-src" $OPTS --quiet
    must_say "inside the source" "$T/err"
}

run_cases
