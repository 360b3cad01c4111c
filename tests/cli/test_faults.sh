#!/bin/sh
# test_faults.sh - shardify under faults: kill -9 at chosen points of a run,
# a full disk, a destination that cannot be written, a source that changes
# or vanishes under the run, a FIFO, two runs on one destination.
#
# The kills are deterministic: shardify runs under strace, which delivers
# SIGKILL (or SIGSTOP, to hold a run still while the test changes something)
# on the syscall that touches a given path (strace -P ... -e inject=...).
# After every kill DST must hold either a complete dataset that shardcheck
# verifies or no manifest at all, and `shardify --resume` must end
# byte-identical to a clean run (run.json, the timings, aside).
# Parts that need strace, or root (tmpfs and read-only mounts), say SKIP
# with the reason when they cannot run.
. "$(dirname "$0")/lib.sh"
# strace matches paths as the syscalls spell them: DST paths must be absolute
# and free of symbolic links
T=$(cd "$T" && pwd -P)

# Small records and shards: the 52 demo files make five shards.
OPTS="--size 64 --shard-size 16K"
have_strace=0
strace_works && have_strace=1
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1

# the source every case reads: the demo dataset (48 images, 4 broken files, 1
# text file), and its clean conversion ($T/clean) every finished run must equal
SRC="$T/src"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$SRC" >/dev/null
shardify "$SRC" "$T/clean" $OPTS --threads 1 --quiet
[ "$(json "$T/clean/manifest.json" 'len(d["shards"])')" -ge 4 ] || die "expected several shards"
# keys in plan order: the first sample, and the last (reading runs up to 16
# files per thread ahead of writing, and opening 32 more ahead of reading, so
# only near the end are shards sure to be finished)
key_at() {
    "$PYTHON" -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])])["key"])' \
        "$T/clean/index.jsonl" "$1"
}
first_key=$(key_at 0)
mid_key=$(key_at 24)
late_key=$(key_at -1)

# ---- helpers -------------------------------------------------------------------

# later MESSAGE: a failure that does not stop the checks after it in its case
# (the case still fails, at its end, by reported_later, listing every such
# message).
later() {
    echo "FAIL (reported at the end): $*" >&2
    echo "$*" >>"$C/later"
}
# reported_later: the case fails when later reported a failure in it.
reported_later() {
    if [ -s "$C/later" ]; then
        echo "FAIL: $(wc -l <"$C/later") fault check(s) failed:" >&2
        sed 's/^/  - /' "$C/later" >&2
        exit 1
    fi
}

# kill_at SYSCALLS PATH WHEN DST [ARGS...]: run `shardify SRC DST OPTS ARGS`
# under strace and SIGKILL it on the WHEN-th of SYSCALLS (a comma-separated
# set) that touches PATH.  PATH is matched as the syscall names it: shardify
# reaches every file in DST relative to a descriptor of DST or DST/.shardify
# (*at calls that never follow a link), so a file in DST is named by its bare
# name, e.g. `manifest.json`; a call on a file descriptor (write) is matched
# by the file's absolute path; source files by their key (opened relative to
# SRC).  The run must really have been killed.
kill_at() {
    calls=$1 path=$2 when=$3 dst=$4
    shift 4
    set +e
    strace -f -o "$C/strace.log" -P "$path" -e trace="$calls" \
        -e inject="$calls:signal=KILL:when=$when" \
        shardify "$SRC" "$dst" $OPTS "$@" >"$C/stdout" 2>"$C/err"
    got=$?
    set -e
    [ "$got" -eq 137 ] || { cat "$C/err" >&2; die "not killed at $calls '$path' (exit $got)"; }
}

# check_after_kill DST: a manifest, if there is one, verifies (so it names
# no missing or partial shard); without one, every shard under its final
# name has its finished journal (the journal is renamed first), so --resume
# can trust or redo it.
check_after_kill() {
    if [ -f "$1/manifest.json" ]; then
        shardcheck "$1" >"$C/check.out" 2>&1 ||
            { cat "$C/check.out" >&2; die "'$1': the published manifest does not verify"; }
        return 0
    fi
    for s in "$1"/shard-*.shard; do
        [ -e "$s" ] || continue
        n=$(basename "$s" .shard)
        [ -f "$1/.shardify/journal-${n#shard-}.jsonl" ] || die "'$s' is published without a journal"
    done
}

# resume_matches_clean DST: --resume completes, byte-identical to the clean
# run (its summary in $C/resume.json).
resume_matches_clean() {
    shardify "$SRC" "$1" $OPTS --resume --threads 1 --json >"$C/resume.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "--resume of '$1' failed"; }
    same_tree "$T/clean" "$1"
    [ ! -e "$1/.shardify" ] || die "'$1/.shardify' left behind after --resume"
    shardcheck "$1" >/dev/null || die "'$1' does not verify after --resume"
}

# shard_count DIR: shard files published at the top of DIR.
shard_count() {
    (cd "$1" && ls | grep -c '^shard-.*\.shard$') || true
}

# no_strace WHAT: 0 (saying SKIP for WHAT) when strace cannot run here.
no_strace() {
    [ $have_strace -eq 0 ] || return 1
    echo "SKIP: $1: strace is not available"
}

# --overwrite replaces a complete dataset with more shards than the new one
# (--size 96 makes bigger records): no manifest may ever name an old shard.
# The old dataset ($T/old) the --overwrite cases copy (they need strace).
if [ $have_strace -eq 1 ]; then
    shardify "$SRC" "$T/old" --size 96 --shard-size 16K --quiet
    old_shards=$(shard_count "$T/old")
    [ "$old_shards" -gt "$(shard_count "$T/clean")" ] || die "the old dataset needs more shards"
fi

# ---- kill -9 at several points of a run ----------------------------------------

case_kill_9_while_decoding_the_first_files_nothing_published_resume_completes() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at openat "$first_key" 1 "$C/k1"
    [ ! -e "$C/k1/manifest.json" ] || die "a manifest after an early kill"
    [ "$(shard_count "$C/k1")" -eq 0 ] || die "a shard published before any was finished"
    check_after_kill "$C/k1"
    resume_matches_clean "$C/k1"
}

case_kill_9_while_decoding_the_last_file_finished_shards_kept_by_resume() {
    no_strace "kill -9 and lock parts" && return 0
    # at the worker's read of it: the file is opened well before, by read-ahead
    kill_at read "$SRC/$late_key" 1 "$C/k2"
    [ ! -e "$C/k2/manifest.json" ] || die "a manifest after a kill mid-run"
    [ "$(shard_count "$C/k2")" -ge 1 ] || die "expected finished shards before the kill"
    check_after_kill "$C/k2"
    resume_matches_clean "$C/k2"
    [ "$(json "$C/resume.json" 'd["reused_shards"] >= 1')" = True ] || die "no shard was reused"
}

case_kill_9_during_a_shard_write_the_temporary_is_never_published() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at write "$C/k3/.shardify/shard-000002.shard.tmp" 1 "$C/k3"
    [ -f "$C/k3/.shardify/shard-000002.shard.tmp" ] || die "expected the temporary shard"
    [ ! -e "$C/k3/shard-000002.shard" ] || die "a partial shard under its final name"
    [ "$(shard_count "$C/k3")" -eq 2 ] || die "expected shards 0 and 1 only"
    check_after_kill "$C/k3"
    resume_matches_clean "$C/k3"
    [ "$(json "$C/resume.json" 'd["reused_shards"]')" = 2 ] || die "expected 2 reused shards"
}

case_kill_9_between_a_shards_journal_and_its_rename_the_shard_is_redone() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at rename,renameat,renameat2 shard-000002.shard.tmp 1 "$C/k4"
    [ -f "$C/k4/.shardify/journal-000002.jsonl" ] || die "expected journal 2 under its final name"
    [ ! -e "$C/k4/shard-000002.shard" ] || die "shard 2 renamed before the kill"
    check_after_kill "$C/k4"
    resume_matches_clean "$C/k4"
}

case_kill_9_while_publishing_the_index() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at rename,renameat,renameat2 .index.jsonl.tmp 1 "$C/k5"
    [ ! -e "$C/k5/manifest.json" ] && [ ! -e "$C/k5/index.jsonl" ] || die "published too early"
    check_after_kill "$C/k5"
    resume_matches_clean "$C/k5"
}

case_kill_9_at_the_rename_of_manifest_json_no_manifest_every_shard_reused() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at rename,renameat,renameat2 .manifest.json.tmp 1 "$C/k6"
    [ ! -e "$C/k6/manifest.json" ] || die "manifest published although killed before its rename"
    [ -f "$C/k6/.manifest.json.tmp" ] || die "expected the manifest temporary"
    check_after_kill "$C/k6"
    resume_matches_clean "$C/k6"
    [ "$(json "$C/resume.json" 'd["reused_shards"] == d["shards"]')" = True ] ||
        die "resume after the last shard redid work"
    [ ! -e "$C/k6/.manifest.json.tmp" ] || die "manifest temporary left behind"
}

case_kill_9_just_after_manifest_json_is_published_a_complete_dataset() {
    no_strace "kill -9 and lock parts" && return 0
    kill_at openat .run.json.tmp 1 "$C/k7"
    check_after_kill "$C/k7"
    same_tree "$T/clean" "$C/k7"
    must_fail 1 shardify "$SRC" "$C/k7" $OPTS --resume --quiet
    must_say "nothing to resume" "$T/err"
    shardify "$SRC" "$C/k7" $OPTS --overwrite --quiet
    same_tree "$T/clean" "$C/k7"
    [ ! -e "$C/k7/.shardify" ] || die "work directory left behind"
}

case_overwrite_killed_before_the_old_manifest_is_removed_the_old_dataset_stands() {
    no_strace "kill -9 and lock parts" && return 0
    cp -a "$T/old" "$C/o1"
    kill_at unlink,unlinkat manifest.json 1 "$C/o1" --overwrite
    check_after_kill "$C/o1"
    [ "$(json "$C/o1/manifest.json" 'd["config"]["size"]')" = 96 ] || die "old manifest changed"
    shardify "$SRC" "$C/o1" $OPTS --overwrite --quiet
    same_tree "$T/clean" "$C/o1"
}

case_overwrite_killed_while_removing_the_old_shards_then_resume() {
    no_strace "kill -9 and lock parts" && return 0
    cp -a "$T/old" "$C/o2"
    kill_at unlink,unlinkat shard-000002.shard 1 "$C/o2" --overwrite
    [ ! -e "$C/o2/manifest.json" ] || die "the old manifest survived the start of --overwrite"
    ( resume_matches_clean "$C/o2" ) 2>"$C/o2.err" ||
        later "--resume after an --overwrite killed while removing the old dataset:" \
              "$(tail -n 1 "$C/o2.err") (old shards beyond the new count stay in DST)"
    reported_later
}

case_overwrite_killed_while_writing_the_new_shards_then_resume() {
    no_strace "kill -9 and lock parts" && return 0
    cp -a "$T/old" "$C/o3"
    kill_at write "$C/o3/.shardify/shard-000001.shard.tmp" 1 "$C/o3" --overwrite
    [ ! -e "$C/o3/manifest.json" ] || die "a manifest while the new shards are written"
    check_after_kill "$C/o3"
    resume_matches_clean "$C/o3"
}

# ---- the lock ------------------------------------------------------------

case_a_second_run_is_refused_while_the_first_holds_the_lock_a_killed_holders_lock_is_taken_over() {
    no_strace "kill -9 and lock parts" && return 0
    stop_at openat "$late_key" "$C/busy"
    # without --resume or --overwrite too: the running run is named, not
    # taken for an interrupted one
    must_fail 1 shardify "$SRC" "$C/busy" $OPTS --quiet
    must_say "'$C/busy' is in use by another shardify run (pid $run_pid)" "$T/err"
    must_fail 1 shardify "$SRC" "$C/busy" $OPTS --resume --quiet
    must_say "in use by another shardify run (pid $run_pid)" "$T/err"
    must_fail 1 shardify "$SRC" "$C/busy" $OPTS --overwrite --quiet
    must_say "in use by another shardify run" "$T/err"
    kill -KILL "$run_pid"
    finish_run
    [ "$run_status" -eq 137 ] || die "the held run was not killed (status $run_status)"
    [ "$(head -n 1 "$C/busy/.shardify/lock")" = "$run_pid" ] || die "expected the dead run's lock"
    check_after_kill "$C/busy"
    resume_matches_clean "$C/busy"
}

# ---- a full disk -------------------------------------------------------------------

# (mount_tmpfs, lib.sh: a size-capped tmpfs, unmounted when the case ends)
FULL_OPTS="--size 384 --codec raw --shard-size 256K"
# small_disk: a 1 MiB tmpfs at $C/small; else 1, saying SKIP
small_disk() {
    mount_tmpfs "$C/small" 1m && return 0
    echo "SKIP: disk full: cannot mount a size-capped tmpfs (needs root and CAP_SYS_ADMIN)"
    return 1
}

case_disk_full_exit_1_naming_the_cause_nothing_published_no_temporaries_left() {
    small_disk || return 0
    must_fail 1 shardify "$SRC" "$C/small/out" $FULL_OPTS --quiet
    must_say "No space left on device" "$T/err"
    [ ! -e "$C/small/out/manifest.json" ] || die "a manifest on a full disk"
    [ ! -e "$C/small/out/index.jsonl" ] || die "an index on a full disk"
    leftovers=$(find "$C/small" -name '*.tmp')
    [ -z "$leftovers" ] || die "temporaries left on the full disk: $leftovers"
    # what stays is documented: the lock, the run's state and the finished
    # shards with their journals, for --resume
    for f in $(ls -A "$C/small/out/.shardify"); do
        case $f in lock | state.json | journal-[0-9]*.jsonl) ;; *) die "unexpected '.shardify/$f'" ;; esac
    done
    check_after_kill "$C/small/out"
}

case_disk_full_then_space_freed_resume_completes_identically_to_a_clean_run() {
    small_disk || return 0
    must_fail 1 shardify "$SRC" "$C/small/out" $FULL_OPTS --quiet
    must_say "No space left on device" "$T/err"
    mount -o remount,size=64m "$C/small"
    shardify "$SRC" "$C/full_clean" $FULL_OPTS --threads 1 --quiet
    shardify "$SRC" "$C/small/out" $FULL_OPTS --resume --quiet
    same_tree "$C/full_clean" "$C/small/out"
    [ ! -e "$C/small/out/.shardify" ] || die "work directory left behind"
}

case_disk_full_with_an_archive_source_its_spool_does_not_keep_the_disk_full() {
    small_disk || return 0
    (cd "$SRC" && tar -cf "$C/src.tar" .)
    must_fail 1 shardify "$C/src.tar" "$C/small/out" $FULL_OPTS --quiet
    must_say "No space left on device" "$T/err"
    [ -z "$(find "$C/small" -name '*.tmp')" ] || die "temporaries left on the full disk"
    # (with nothing to resume the work directory, even DST, may be gone)
    for f in $(ls -A "$C/small/out/.shardify" 2>/dev/null); do
        case $f in
        lock | state.json | journal-[0-9]*.jsonl) ;;
        *) later "archive source, disk full: '.shardify/$f'" \
                 "($(wc -c <"$C/small/out/.shardify/$f") bytes) is left behind on the full disk" ;;
        esac
    done
    reported_later
}

case_disk_full_while_publishing_over_a_previous_dataset_no_manifest_names_a_replaced_shard() {
    small_disk || return 0
    shardify "$SRC" "$C/small/out" --size 16 --quiet
    must_fail 1 shardify "$SRC" "$C/small/out" $FULL_OPTS --overwrite --quiet
    must_say "No space left on device" "$T/err"
    [ ! -e "$C/small/out/manifest.json" ] || die "a manifest survived a failed --overwrite"
    [ -z "$(find "$C/small" -name '*.tmp')" ] || die "temporaries left on the full disk"
}

# ---- a destination that cannot be written --------------------------------------------

case_dst_is_a_file_or_below_one_exit_1_with_the_reason() {
    echo not a directory >"$C/afile"
    must_fail 1 shardify "$SRC" "$C/afile" $OPTS --quiet
    must_say "is not a directory" "$T/err"
    must_fail 1 shardify "$SRC" "$C/afile/out" $OPTS --quiet
    must_say "cannot create directory" "$T/err"
}

# as root, DST on a read-only file system (a bind mount of $C/ro made
# read-only); else DST in a directory of mode 555
case_dst_on_a_read_only_file_system_or_not_writable_exit_1_the_old_dataset_untouched() {
    if [ $is_root -eq 1 ] && mkdir -p "$C/ro" && mount --bind "$C/ro" "$C/ro" 2>/dev/null; then
        mounts="$C/ro $mounts"
        shardify "$SRC" "$C/ro/old" $OPTS --quiet
        if mount -o remount,bind,ro "$C/ro" 2>/dev/null; then
            say "DST on a read-only file system: exit 1, the old dataset untouched"
            must_fail 1 shardify "$SRC" "$C/ro/new" $OPTS --quiet
            must_say "Read-only file system" "$T/err"
            must_fail 1 shardify "$SRC" "$C/ro/old" --size 32 --overwrite --quiet
            must_say "Read-only file system" "$T/err"
            shardcheck "$C/ro/old" >/dev/null || die "the old dataset no longer verifies"
            same_tree "$T/clean" "$C/ro/old"
        else
            echo "SKIP: read-only destination: cannot remount read-only"
        fi
    elif [ $is_root -eq 0 ]; then
        say "DST not writable (mode 555): exit 1 with the reason"
        mkdir -p "$C/locked"
        chmod 555 "$C/locked"
        must_fail 1 shardify "$SRC" "$C/locked/out" $OPTS --quiet
        must_say "Permission denied" "$T/err"
        chmod 755 "$C/locked"
    else
        echo "SKIP: read-only destination: cannot bind-mount"
    fi
}

# ---- a source that changes under the run ---------------------------------------------

# count_reason SUMMARY REASON: the run's --json SUMMARY accounts for every
# candidate, and each reject has one of the demo set's reasons or starts with
# REASON; prints how many start with REASON.
count_reason() {
    "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
extra = sys.argv[2]
known = ("truncated JPEG", "not an image: empty file", "not an image: unknown signature",
         "corrupt PNG")
assert d["status"] == "ok", d
assert d["samples"] + d["rejected"] == d["candidates"], d
n = 0
for r in d["rejects"]:
    assert r["reason"], r
    if r["reason"].startswith(extra):
        n += 1
    else:
        assert r["reason"].startswith(known), r
print(n)
PY
}

case_src_deleted_mid_run_the_rest_are_rejected_as_vanished_never_a_crash() {
    no_strace "source changing mid-run" && return 0
    cp -a "$T/src" "$C/vanish"
    SRC="$C/vanish"
    stop_at openat "$mid_key" "$C/v1" --threads 1 --json
    rm -rf "$C/vanish"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status after SRC vanished"; }
    [ "$(count_reason "$T/bg.out" "file vanished")" -ge 1 ] || die "no 'file vanished' reject"
    shardcheck "$C/v1" >/dev/null || die "the dataset does not verify"
}

case_src_emptied_mid_scan_no_crash_every_candidate_accounted_for() {
    no_strace "source changing mid-run" && return 0
    cp -a "$T/src" "$C/scan"
    SRC="$C/scan"
    # (every file may vanish: --allow-empty publishes a dataset of rejects only)
    stop_at getdents64 "$C/scan/apple" "$C/v2" --json --allow-empty
    rm -rf "$C/scan"/*
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status after SRC emptied"; }
    count_reason "$T/bg.out" "file vanished" >/dev/null
    shardcheck "$C/v2" >/dev/null || die "the dataset does not verify"
}

case_a_file_that_shrinks_or_grows_while_it_is_read_is_rejected_with_the_reason() {
    no_strace "source changing mid-run" && return 0
    cp -a "$T/src" "$C/shrink"
    victim="$C/shrink/apple/img_004.png"
    SRC="$C/shrink"
    stop_at fstat,newfstatat "$victim" "$C/v3" --threads 1 --json
    size=$(wc -c <"$victim")
    truncate -s $((size / 2)) "$victim"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    [ "$(count_reason "$T/bg.out" "file changed while being read")" = 1 ] ||
        die "the shrinking file was not rejected as changed"
    grep -q '"key":"apple/img_004.png","reason":"file changed while being read' "$T/bg.out" ||
        die "wrong file rejected"
    cp "$T/src/apple/img_004.png" "$victim"
    stop_at fstat,newfstatat "$victim" "$C/v4" --threads 1 --json
    cat "$T/src/apple/img_004.png" >>"$victim"
    kill -CONT "$run_pid"
    finish_run
    [ "$(count_reason "$T/bg.out" "file changed while being read (grew")" = 1 ] ||
        die "the growing file was not rejected as changed"
}

case_a_fifo_swapped_in_for_a_file_after_the_scan_is_rejected_never_waited_on() {
    no_strace "source changing mid-run" && return 0
    cp -a "$T/src" "$C/fifo"
    SRC="$C/fifo"
    stop_at openat "$first_key" "$C/v5" --threads 1 --json
    rm "$C/fifo/$late_key"
    mkfifo "$C/fifo/$late_key"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    [ "$(count_reason "$T/bg.out" "not a regular file")" = 1 ] || die "the FIFO was not rejected"
}

# A file another client holds (a Samba oplock, an NFS delegation) fails
# an O_NONBLOCK open with EAGAIN until the holder lets go: strace gives
# the open that error (injected on the key, as the open names it).
# (LeakSanitizer cannot run under strace: see stop_at in lib.sh)
no_leak_check="${ASAN_OPTIONS:-}:detect_leaks=0"

case_a_source_file_busy_for_a_while_eagain_on_open_is_opened_again_not_rejected() {
    no_strace "source changing mid-run" && return 0
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o "$C/strace.log" -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN:when=1..4 \
        shardify "$SRC" "$C/eagain" $OPTS --json >"$C/eagain.json" 2>"$C/err"
    got=$?
    set -e
    [ $got -eq 0 ] || { cat "$C/err" >&2; die "exit $got with a file busy for four opens"; }
    grep -q "EAGAIN" "$C/strace.log" || die "strace injected no EAGAIN into the open of '$mid_key'"
    [ "$(json "$C/eagain.json" 'd["samples"], d["rejected"]')" = \
      "$(json "$T/clean/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" ] ||
        die "a busy file changed the dataset: $(cat "$C/eagain.json")"
    same_tree "$T/clean" "$C/eagain"
}

case_a_source_file_that_stays_busy_fails_the_run_and_shardcheck_source_naming_it() {
    no_strace "source changing mid-run" && return 0
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o /dev/null -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN shardify "$SRC" "$C/eagain2" $OPTS --json >"$C/eagain2.json" 2>"$C/err"
    got=$?
    set -e
    [ $got -eq 1 ] || { cat "$C/err" >&2; die "exit $got with a file that stays busy, expected 1"; }
    must_say "cannot open '$mid_key' (still busy after " "$C/err"
    must_say "Resource temporarily unavailable" "$C/err"
    [ ! -e "$C/eagain2/manifest.json" ] || die "published without the busy file"
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o /dev/null -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN shardcheck "$T/clean" --source "$SRC" >"$C/check.out" 2>&1
    got=$?
    set -e
    [ $got -eq 1 ] || { cat "$C/check.out" >&2; die "shardcheck --source exited $got past a busy file"; }
    must_say "cannot open '$mid_key' (still busy after " "$C/check.out"
}

case_a_fifo_named_jpg_in_src_is_rejected_with_its_reason_and_does_not_block_the_run() {
    mkdir -p "$C/pipe/a"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/pipe/a/ok.jpg"
    mkfifo "$C/pipe/a/stuck.jpg"
    timeout 120 shardify "$C/pipe" "$C/pipeout" --size 32 --json >"$C/pipe.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "shardify failed or hung on a FIFO"; }
    [ "$(json "$C/pipe.json" '(d["samples"], d["rejected"], d["ignored"])')" = "(1, 1, 0)" ] ||
        die "FIFO: $(cat "$C/pipe.json")"
    [ "$(json "$C/pipe.json" 'd["rejects"][0]["reason"]')" = "not a regular file: fifo" ] ||
        die "FIFO: $(cat "$C/pipe.json")"
}

run_cases
