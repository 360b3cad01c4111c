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

say "source: the demo dataset (48 images, 4 broken files, 1 text file)"
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

# later MESSAGE: a failure that does not stop the checks after it (the test
# still fails, at the end, listing every such message).
later() {
    echo "FAIL (reported at the end): $*" >&2
    echo "$*" >>"$T/later"
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
    strace -f -o "$T/strace.log" -P "$path" -e trace="$calls" \
        -e inject="$calls:signal=KILL:when=$when" \
        shardify "$SRC" "$dst" $OPTS "$@" >"$T/stdout" 2>"$T/err"
    got=$?
    set -e
    [ "$got" -eq 137 ] || { cat "$T/err" >&2; die "not killed at $calls '$path' (exit $got)"; }
}

# check_after_kill DST: a manifest, if there is one, verifies (so it names
# no missing or partial shard); without one, every shard under its final
# name has its finished journal (the journal is renamed first), so --resume
# can trust or redo it.
check_after_kill() {
    if [ -f "$1/manifest.json" ]; then
        shardcheck "$1" >"$T/check.out" 2>&1 ||
            { cat "$T/check.out" >&2; die "'$1': the published manifest does not verify"; }
        return 0
    fi
    for s in "$1"/shard-*.shard; do
        [ -e "$s" ] || continue
        n=$(basename "$s" .shard)
        [ -f "$1/.shardify/journal-${n#shard-}.jsonl" ] || die "'$s' is published without a journal"
    done
}

# resume_matches_clean DST: --resume completes, byte-identical to the clean run.
resume_matches_clean() {
    shardify "$SRC" "$1" $OPTS --resume --threads 1 --json >"$T/resume.json" 2>"$T/err" ||
        { cat "$T/err" >&2; die "--resume of '$1' failed"; }
    same_tree "$T/clean" "$1"
    [ ! -e "$1/.shardify" ] || die "'$1/.shardify' left behind after --resume"
    shardcheck "$1" >/dev/null || die "'$1' does not verify after --resume"
}

# shard_count DIR: shard files published at the top of DIR.
shard_count() {
    (cd "$1" && ls | grep -c '^shard-.*\.shard$') || true
}

# ---- kill -9 at several points of a run ----------------------------------------

if [ $have_strace -eq 1 ]; then
    say "kill -9 while decoding the first files: nothing published, --resume completes"
    kill_at openat "$first_key" 1 "$T/k1"
    [ ! -e "$T/k1/manifest.json" ] || die "a manifest after an early kill"
    [ "$(shard_count "$T/k1")" -eq 0 ] || die "a shard published before any was finished"
    check_after_kill "$T/k1"
    resume_matches_clean "$T/k1"

    say "kill -9 while decoding the last file: finished shards kept by --resume"
    # at the worker's read of it: the file is opened well before, by read-ahead
    kill_at read "$SRC/$late_key" 1 "$T/k2"
    [ ! -e "$T/k2/manifest.json" ] || die "a manifest after a kill mid-run"
    [ "$(shard_count "$T/k2")" -ge 1 ] || die "expected finished shards before the kill"
    check_after_kill "$T/k2"
    resume_matches_clean "$T/k2"
    [ "$(json "$T/resume.json" 'd["reused_shards"] >= 1')" = True ] || die "no shard was reused"

    say "kill -9 during a shard write: the temporary is never published"
    kill_at write "$T/k3/.shardify/shard-000002.shard.tmp" 1 "$T/k3"
    [ -f "$T/k3/.shardify/shard-000002.shard.tmp" ] || die "expected the temporary shard"
    [ ! -e "$T/k3/shard-000002.shard" ] || die "a partial shard under its final name"
    [ "$(shard_count "$T/k3")" -eq 2 ] || die "expected shards 0 and 1 only"
    check_after_kill "$T/k3"
    resume_matches_clean "$T/k3"
    [ "$(json "$T/resume.json" 'd["reused_shards"]')" = 2 ] || die "expected 2 reused shards"

    say "kill -9 between a shard's journal and its rename: the shard is redone"
    kill_at rename,renameat,renameat2 shard-000002.shard.tmp 1 "$T/k4"
    [ -f "$T/k4/.shardify/journal-000002.jsonl" ] || die "expected journal 2 under its final name"
    [ ! -e "$T/k4/shard-000002.shard" ] || die "shard 2 renamed before the kill"
    check_after_kill "$T/k4"
    resume_matches_clean "$T/k4"

    say "kill -9 while publishing the index"
    kill_at rename,renameat,renameat2 .index.jsonl.tmp 1 "$T/k5"
    [ ! -e "$T/k5/manifest.json" ] && [ ! -e "$T/k5/index.jsonl" ] || die "published too early"
    check_after_kill "$T/k5"
    resume_matches_clean "$T/k5"

    say "kill -9 at the rename of manifest.json: no manifest, every shard reused"
    kill_at rename,renameat,renameat2 .manifest.json.tmp 1 "$T/k6"
    [ ! -e "$T/k6/manifest.json" ] || die "manifest published although killed before its rename"
    [ -f "$T/k6/.manifest.json.tmp" ] || die "expected the manifest temporary"
    check_after_kill "$T/k6"
    resume_matches_clean "$T/k6"
    [ "$(json "$T/resume.json" 'd["reused_shards"] == d["shards"]')" = True ] ||
        die "resume after the last shard redid work"
    [ ! -e "$T/k6/.manifest.json.tmp" ] || die "manifest temporary left behind"

    say "kill -9 just after manifest.json is published: a complete dataset"
    kill_at openat .run.json.tmp 1 "$T/k7"
    check_after_kill "$T/k7"
    same_tree "$T/clean" "$T/k7"
    must_fail 1 shardify "$SRC" "$T/k7" $OPTS --resume --quiet
    must_say "nothing to resume" "$T/err"
    shardify "$SRC" "$T/k7" $OPTS --overwrite --quiet
    same_tree "$T/clean" "$T/k7"
    [ ! -e "$T/k7/.shardify" ] || die "work directory left behind"

    # --overwrite replaces a complete dataset with more shards than the new one
    # (--size 96 makes bigger records): no manifest may ever name an old shard.
    say "--overwrite killed before the old manifest is removed: the old dataset stands"
    shardify "$SRC" "$T/old" --size 96 --shard-size 16K --quiet
    old_shards=$(shard_count "$T/old")
    [ "$old_shards" -gt "$(shard_count "$T/clean")" ] || die "the old dataset needs more shards"
    cp -a "$T/old" "$T/o1"
    kill_at unlink,unlinkat manifest.json 1 "$T/o1" --overwrite
    check_after_kill "$T/o1"
    [ "$(json "$T/o1/manifest.json" 'd["config"]["size"]')" = 96 ] || die "old manifest changed"
    shardify "$SRC" "$T/o1" $OPTS --overwrite --quiet
    same_tree "$T/clean" "$T/o1"

    say "--overwrite killed while removing the old shards, then --resume"
    cp -a "$T/old" "$T/o2"
    kill_at unlink,unlinkat shard-000002.shard 1 "$T/o2" --overwrite
    [ ! -e "$T/o2/manifest.json" ] || die "the old manifest survived the start of --overwrite"
    ( resume_matches_clean "$T/o2" ) 2>"$T/o2.err" ||
        later "--resume after an --overwrite killed while removing the old dataset:" \
              "$(tail -n 1 "$T/o2.err") (old shards beyond the new count stay in DST)"

    say "--overwrite killed while writing the new shards, then --resume"
    cp -a "$T/old" "$T/o3"
    kill_at write "$T/o3/.shardify/shard-000001.shard.tmp" 1 "$T/o3" --overwrite
    [ ! -e "$T/o3/manifest.json" ] || die "a manifest while the new shards are written"
    check_after_kill "$T/o3"
    resume_matches_clean "$T/o3"

    # ---- the lock ------------------------------------------------------------
    say "a second run is refused while the first holds the lock; a killed holder's lock is taken over"
    stop_at openat "$late_key" "$T/busy"
    # without --resume or --overwrite too: the running run is named, not
    # taken for an interrupted one
    must_fail 1 shardify "$SRC" "$T/busy" $OPTS --quiet
    must_say "'$T/busy' is in use by another shardify run (pid $run_pid)" "$T/err"
    must_fail 1 shardify "$SRC" "$T/busy" $OPTS --resume --quiet
    must_say "in use by another shardify run (pid $run_pid)" "$T/err"
    must_fail 1 shardify "$SRC" "$T/busy" $OPTS --overwrite --quiet
    must_say "in use by another shardify run" "$T/err"
    kill -KILL "$run_pid"
    finish_run
    [ "$run_status" -eq 137 ] || die "the held run was not killed (status $run_status)"
    [ "$(head -n 1 "$T/busy/.shardify/lock")" = "$run_pid" ] || die "expected the dead run's lock"
    check_after_kill "$T/busy"
    resume_matches_clean "$T/busy"
else
    echo "SKIP: kill -9 and lock parts: strace is not available"
fi

# ---- a full disk -------------------------------------------------------------------

# (mount_tmpfs, lib.sh: a size-capped tmpfs, unmounted on exit)
FULL_OPTS="--size 384 --codec raw --shard-size 256K"
if mount_tmpfs "$T/small" 1m; then
    say "disk full: exit 1 naming the cause, nothing published, no temporaries left"
    must_fail 1 shardify "$SRC" "$T/small/out" $FULL_OPTS --quiet
    must_say "No space left on device" "$T/err"
    [ ! -e "$T/small/out/manifest.json" ] || die "a manifest on a full disk"
    [ ! -e "$T/small/out/index.jsonl" ] || die "an index on a full disk"
    leftovers=$(find "$T/small" -name '*.tmp')
    [ -z "$leftovers" ] || die "temporaries left on the full disk: $leftovers"
    # what stays is documented: the lock, the run's state and the finished
    # shards with their journals, for --resume
    for f in $(ls -A "$T/small/out/.shardify"); do
        case $f in lock | state.json | journal-[0-9]*.jsonl) ;; *) die "unexpected '.shardify/$f'" ;; esac
    done
    check_after_kill "$T/small/out"

    say "disk full, then space freed: --resume completes identically to a clean run"
    mount -o remount,size=64m "$T/small"
    shardify "$SRC" "$T/full_clean" $FULL_OPTS --threads 1 --quiet
    shardify "$SRC" "$T/small/out" $FULL_OPTS --resume --quiet
    same_tree "$T/full_clean" "$T/small/out"
    [ ! -e "$T/small/out/.shardify" ] || die "work directory left behind"

    say "disk full with an archive source: its spool does not keep the disk full"
    (cd "$SRC" && tar -cf "$T/src.tar" .)
    rm -rf "$T/small/out"
    mount -o remount,size=1m "$T/small"
    must_fail 1 shardify "$T/src.tar" "$T/small/out" $FULL_OPTS --quiet
    must_say "No space left on device" "$T/err"
    [ -z "$(find "$T/small" -name '*.tmp')" ] || die "temporaries left on the full disk"
    # (with nothing to resume the work directory, even DST, may be gone)
    for f in $(ls -A "$T/small/out/.shardify" 2>/dev/null); do
        case $f in
        lock | state.json | journal-[0-9]*.jsonl) ;;
        *) later "archive source, disk full: '.shardify/$f' ($(wc -c <"$T/small/out/.shardify/$f") bytes) is left behind on the full disk" ;;
        esac
    done

    say "disk full while publishing over a previous dataset: no manifest names a replaced shard"
    rm -rf "$T/small/out"
    mount -o remount,size=1m "$T/small"
    shardify "$SRC" "$T/small/out" --size 16 --quiet
    must_fail 1 shardify "$SRC" "$T/small/out" $FULL_OPTS --overwrite --quiet
    must_say "No space left on device" "$T/err"
    [ ! -e "$T/small/out/manifest.json" ] || die "a manifest survived a failed --overwrite"
    [ -z "$(find "$T/small" -name '*.tmp')" ] || die "temporaries left on the full disk"
else
    echo "SKIP: disk full: cannot mount a size-capped tmpfs (needs root and CAP_SYS_ADMIN)"
fi

# ---- a destination that cannot be written --------------------------------------------

say "DST is a file, or below one: exit 1 with the reason"
echo not a directory >"$T/afile"
must_fail 1 shardify "$SRC" "$T/afile" $OPTS --quiet
must_say "is not a directory" "$T/err"
must_fail 1 shardify "$SRC" "$T/afile/out" $OPTS --quiet
must_say "cannot create directory" "$T/err"

if [ $is_root -eq 1 ] && mkdir -p "$T/ro" && mount --bind "$T/ro" "$T/ro" 2>/dev/null; then
    mounts="$T/ro $mounts"
    shardify "$SRC" "$T/ro/old" $OPTS --quiet
    if mount -o remount,bind,ro "$T/ro" 2>/dev/null; then
        say "DST on a read-only file system: exit 1, the old dataset untouched"
        must_fail 1 shardify "$SRC" "$T/ro/new" $OPTS --quiet
        must_say "Read-only file system" "$T/err"
        must_fail 1 shardify "$SRC" "$T/ro/old" --size 32 --overwrite --quiet
        must_say "Read-only file system" "$T/err"
        shardcheck "$T/ro/old" >/dev/null || die "the old dataset no longer verifies"
        same_tree "$T/clean" "$T/ro/old"
    else
        echo "SKIP: read-only destination: cannot remount read-only"
    fi
elif [ $is_root -eq 0 ]; then
    say "DST not writable (mode 555): exit 1 with the reason"
    mkdir -p "$T/locked"
    chmod 555 "$T/locked"
    must_fail 1 shardify "$SRC" "$T/locked/out" $OPTS --quiet
    must_say "Permission denied" "$T/err"
    chmod 755 "$T/locked"
else
    echo "SKIP: read-only destination: cannot bind-mount"
fi

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

if [ $have_strace -eq 1 ]; then
    say "SRC deleted mid-run: the rest are rejected as vanished, never a crash"
    cp -a "$T/src" "$T/vanish"
    SRC="$T/vanish"
    stop_at openat "$mid_key" "$T/v1" --threads 1 --json
    rm -rf "$T/vanish"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status after SRC vanished"; }
    [ "$(count_reason "$T/bg.out" "file vanished")" -ge 1 ] || die "no 'file vanished' reject"
    shardcheck "$T/v1" >/dev/null || die "the dataset does not verify"

    say "SRC emptied mid-scan: no crash, every candidate accounted for"
    cp -a "$T/src" "$T/scan"
    SRC="$T/scan"
    # (every file may vanish: --allow-empty publishes a dataset of rejects only)
    stop_at getdents64 "$T/scan/apple" "$T/v2" --json --allow-empty
    rm -rf "$T/scan"/*
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status after SRC emptied"; }
    count_reason "$T/bg.out" "file vanished" >/dev/null
    shardcheck "$T/v2" >/dev/null || die "the dataset does not verify"

    say "a file that shrinks or grows while it is read is rejected with the reason"
    cp -a "$T/src" "$T/shrink"
    victim="$T/shrink/apple/img_004.png"
    SRC="$T/shrink"
    stop_at fstat,newfstatat "$victim" "$T/v3" --threads 1 --json
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
    stop_at fstat,newfstatat "$victim" "$T/v4" --threads 1 --json
    cat "$T/src/apple/img_004.png" >>"$victim"
    kill -CONT "$run_pid"
    finish_run
    [ "$(count_reason "$T/bg.out" "file changed while being read (grew")" = 1 ] ||
        die "the growing file was not rejected as changed"

    say "a FIFO swapped in for a file after the scan is rejected, never waited on"
    cp -a "$T/src" "$T/fifo"
    SRC="$T/fifo"
    stop_at openat "$first_key" "$T/v5" --threads 1 --json
    rm "$T/fifo/$late_key"
    mkfifo "$T/fifo/$late_key"
    kill -CONT "$run_pid"
    finish_run
    [ "$run_status" -eq 0 ] || { cat "$T/bg.err" >&2; die "exit $run_status"; }
    [ "$(count_reason "$T/bg.out" "not a regular file")" = 1 ] || die "the FIFO was not rejected"
    SRC="$T/src"

    # A file another client holds (a Samba oplock, an NFS delegation) fails
    # an O_NONBLOCK open with EAGAIN until the holder lets go: strace gives
    # the open that error (injected on the key, as the open names it).
    # (LeakSanitizer cannot run under strace: see stop_at in lib.sh)
    no_leak_check="${ASAN_OPTIONS:-}:detect_leaks=0"
    say "a source file busy for a while (EAGAIN on open) is opened again, not rejected"
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o "$T/strace.log" -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN:when=1..4 \
        shardify "$SRC" "$T/eagain" $OPTS --json >"$T/eagain.json" 2>"$T/err"
    got=$?
    set -e
    [ $got -eq 0 ] || { cat "$T/err" >&2; die "exit $got with a file busy for four opens"; }
    grep -q "EAGAIN" "$T/strace.log" || die "strace injected no EAGAIN into the open of '$mid_key'"
    [ "$(json "$T/eagain.json" 'd["samples"], d["rejected"]')" = \
      "$(json "$T/clean/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" ] ||
        die "a busy file changed the dataset: $(cat "$T/eagain.json")"
    same_tree "$T/clean" "$T/eagain"

    say "a source file that stays busy fails the run and shardcheck --source, naming it"
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o /dev/null -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN shardify "$SRC" "$T/eagain2" $OPTS --json >"$T/eagain2.json" 2>"$T/err"
    got=$?
    set -e
    [ $got -eq 1 ] || { cat "$T/err" >&2; die "exit $got with a file that stays busy, expected 1"; }
    must_say "cannot open '$mid_key' (still busy after " "$T/err"
    must_say "Resource temporarily unavailable" "$T/err"
    [ ! -e "$T/eagain2/manifest.json" ] || die "published without the busy file"
    set +e
    ASAN_OPTIONS=$no_leak_check strace -f -o /dev/null -P "$mid_key" -e trace=openat \
        -e inject=openat:error=EAGAIN shardcheck "$T/clean" --source "$SRC" >"$T/check.out" 2>&1
    got=$?
    set -e
    [ $got -eq 1 ] || { cat "$T/check.out" >&2; die "shardcheck --source exited $got past a busy file"; }
    must_say "cannot open '$mid_key' (still busy after " "$T/check.out"
else
    echo "SKIP: source changing mid-run: strace is not available"
fi

say "a FIFO named .jpg in SRC is rejected with its reason, and does not block the run"
mkdir -p "$T/pipe/a"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/pipe/a/ok.jpg"
mkfifo "$T/pipe/a/stuck.jpg"
timeout 120 shardify "$T/pipe" "$T/pipeout" --size 32 --json >"$T/pipe.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify failed or hung on a FIFO"; }
[ "$(json "$T/pipe.json" '(d["samples"], d["rejected"], d["ignored"])')" = "(1, 1, 0)" ] ||
    die "FIFO: $(cat "$T/pipe.json")"
[ "$(json "$T/pipe.json" 'd["rejects"][0]["reason"]')" = "not a regular file: fifo" ] ||
    die "FIFO: $(cat "$T/pipe.json")"

if [ -s "$T/later" ]; then
    echo "FAIL: $(wc -l <"$T/later") fault check(s) failed:" >&2
    sed 's/^/  - /' "$T/later" >&2
    exit 1
fi
echo "all fault checks passed"
