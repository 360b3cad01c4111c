#!/bin/sh
# test_interrupt.sh - the first SIGTERM or SIGINT ends a shardify run that is
# blocked in a system call, within seconds, as an interrupted run: the usual
# message, exit 1, nothing published, DST left as it was for --resume.  The
# blocked call is an open that waits as on a stalled network filesystem
# (tests/fixtures/stall_open.c, preloaded: a real open(2) of a FIFO nobody
# writes, which a signal interrupts).  A handler that restarts system calls
# would leave the run waiting there for ever.
. "$(dirname "$0")/lib.sh"

OPTS="--quiet --size 32 --shard-size 8K --no-shuffle"
# seconds the run may take to end after the signal: shardify gives the
# samples under way 5 s (sanitizer builds, load)
LIMIT=12

command -v cc >/dev/null 2>&1 || skip "no C compiler to build the preloaded library"
cc -shared -fPIC -o "$T/stall_open.so" "$SHARDKIT_TOP/tests/fixtures/stall_open.c" -ldl ||
    die "cannot build stall_open.so"
PRELOAD="$T/stall_open.so"
if ldd "$SHARDKIT_BIN/shardify" | grep -q libasan; then
    # AddressSanitizer's runtime must come first in the list of libraries
    PRELOAD="$(cc -print-file-name=libasan.so) $PRELOAD"
fi

"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" --count 16 >/dev/null
SRC="$T/raw"
# a file converted late in sorted order, after some shards are written
LATE=$(cd "$SRC" && find . -type f -name 'img_*' | sort | tail -n 1)
LATE=${LATE##*/}

# stalled NAME ARGS...: start `shardify ARGS` in the background with every
# open of a file named NAME waiting; return once it waits there ($pid).  Its
# FIFO and output are the case's ($C/fifo, $C/bg.out, $C/bg.err).
stalled() {
    name=$1
    shift
    rm -f "$C/fifo" "$C/fifo.reached"
    mkfifo "$C/fifo"
    STALL_NAME=$name STALL_FIFO="$C/fifo" LD_PRELOAD="$PRELOAD" \
        shardify "$@" >"$C/bg.out" 2>"$C/bg.err" &
    pid=$!
    i=0
    until [ -e "$C/fifo.reached" ]; do
        kill -0 "$pid" 2>/dev/null || { cat "$C/bg.err" >&2; die "shardify ended before opening '$name'"; }
        i=$((i + 1))
        [ "$i" -lt "$POLL_STEPS" ] || die "shardify never opened '$name'"
        sleep 0.05
    done
    # in the open itself (the kernel's wait for a FIFO's writer), not just before it
    i=0
    while ! grep -q wait_for_partner /proc/"$pid"/task/*/wchan 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 40 ] || break   # a kernel that hides wchan: two seconds must do
        sleep 0.05
    done
}

# dst_state DST: every entry of DST and its bytes, but the lock (which holds
# the pid of the last run)
dst_state() {
    tree_state "$1" | grep -v '^\./\.shardify/lock \|  \./\.shardify/lock$'
}

# ends_within SECONDS: $pid exits within SECONDS; its status in $status
ends_within() {
    i=0
    while kill -0 "$pid" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt $(($1 * 20)) ]; then
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null || true
            die "shardify was still running $1 s after the signal"
        fi
        sleep 0.05
    done
    set +e
    wait "$pid"
    status=$?
    set -e
}

# killed_run DST: an interrupted run in DST (killed while it waited for '$LATE')
killed_run() {
    stalled "$LATE" $OPTS "$SRC" "$1"
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
}

# interrupted_resume SIG DST: --resume in DST, blocked opening the run's
# state, is ended by one SIG as an interrupted run that left DST as it was
interrupted_resume() {
    sig=$1 dst=$2
    dst_state "$dst" >"$C/before"
    stalled state.json $OPTS --resume "$SRC" "$dst"
    kill -"$sig" "$pid"
    ends_within "$LIMIT"
    [ "$status" -eq 1 ] || { cat "$C/bg.err" >&2; die "exit status $status after SIG$sig, expected 1"; }
    must_say "shardify: interrupted: finished shards are kept; run again with --resume to continue" \
        "$C/bg.err"
    [ ! -e "$dst/manifest.json" ] || die "an interrupted run published"
    dst_state "$dst" | diff "$C/before" - >&2 || die "the interrupted run changed DST"
}

# the dataset a clean run gives, which the resumed runs must be
shardify $OPTS "$SRC" "$T/clean" || die "the clean run failed"

case_an_interrupted_run_in_dst_killed_while_it_waited_for_a_late_file_leaves_resumable_state() {
    killed_run "$C/dst"
    [ -f "$C/dst/.shardify/state.json" ] && [ ! -e "$C/dst/manifest.json" ] ||
        die "the killed run left no resumable state"
}

case_resume_blocked_opening_the_runs_state_one_sigterm_ends_it() {
    killed_run "$C/dst"
    interrupted_resume TERM "$C/dst"
}

case_resume_blocked_opening_the_runs_state_one_sigint_ends_it() {
    killed_run "$C/dst"
    interrupted_resume INT "$C/dst"
}

case_the_run_then_resumes_to_the_dataset_a_clean_run_gives() {
    killed_run "$C/dst"
    for sig in TERM INT; do
        interrupted_resume "$sig" "$C/dst"
    done
    shardify $OPTS --resume "$SRC" "$C/dst" || die "--resume failed"
    same_tree "$T/clean" "$C/dst"
}

# A conversion thread (not the one the signal reaches) waits on a source file:
# the samples under way get a few seconds, then the run ends without them.
case_a_conversion_whose_worker_waits_on_a_late_file_for_ever_one_sigterm_ends_it() {
    stalled "$LATE" $OPTS "$SRC" "$C/w"
    kill -TERM "$pid"
    ends_within "$LIMIT"
    [ "$status" -eq 1 ] || { cat "$C/bg.err" >&2; die "exit status $status after SIGTERM, expected 1"; }
    must_say "shardify: interrupted: finished shards are kept; run again with --resume to continue" \
        "$C/bg.err"
    [ ! -e "$C/w/manifest.json" ] || die "an interrupted run published"
    shardify $OPTS --resume "$SRC" "$C/w" || die "--resume after the stalled worker failed"
    same_tree "$T/clean" "$C/w"
}

run_cases
