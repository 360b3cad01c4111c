# lib.sh - shared helpers for the CLI tests (sourced, POSIX sh).
# Each test script runs the real binaries from $SHARDKIT_BIN on real files in a
# private temporary directory, and exits non-zero on the first failure.
set -eu

: "${SHARDKIT_BIN:?run through tests/run.sh}"
: "${SHARDKIT_FIXTURES:?run through tests/run.sh}"
: "${SHARDKIT_TOP:?run through tests/run.sh}"
PYTHON=${PYTHON:-/usr/bin/python3}
PATH="$SHARDKIT_BIN:$PATH"
export PATH

T=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-test.XXXXXX")
# A run held stopped (stop_at) must not outlive a failed test, nor a mount
# (mount_tmpfs) the test.  Before $T goes, every dataset the test wrote in it
# is held to manifests/ (tests/check_schemas.py): a manifest or index line
# the JSON Schemas or FORMAT.md do not describe fails the test.
held=""
mounts=""
exit_hook=""
end_test() {
    status=$1
    set +e
    [ -z "$exit_hook" ] || eval "$exit_hook"
    [ -z "$held" ] || kill -KILL "$held" 2>/dev/null
    for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
    if ! "$PYTHON" "$SHARDKIT_TOP/tests/check_schemas.py" --exempt "$T/.damaged" "$T" >&2; then
        echo "FAIL: a dataset this test wrote disagrees with manifests/ (above)" >&2
        [ "$status" -ne 0 ] || status=1
    fi
    [ -n "${KEEP_T:-}" ] || rm -rf "$T"
    exit "$status"
}
trap 'end_test $?' EXIT

# on_exit CMD: run CMD (a server to stop, say) when the test ends, before
# the above; replaces the CMD given before.  A test sets no EXIT trap of its
# own, which would leave out the schema check.
on_exit() {
    exit_hook=$1
}

# damaged DIR: the dataset DIR was damaged on purpose (its manifest.json made
# to disagree with manifests/, for a tool to refuse it): the schema check at
# the end of the test leaves it alone.
damaged() {
    (cd "$1" && pwd -P) >>"$T/.damaged"
}
# flip_byte FILE OFFSET: invert the bits of FILE's byte at OFFSET, in place.
flip_byte() {
    "$PYTHON" - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)[0]
    f.seek(int(sys.argv[2]))
    f.write(bytes([b ^ 0xFF]))
PY
}
# A poll loop gives up after this many 0.05 s steps (sanitizer builds are slow).
POLL_STEPS=2400

die() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "-- $*"; }
skip() { echo "SKIP: $*"; exit 0; }

# Cases.  A script of cases defines a function case_NAME per behaviour and
# ends with `run_cases`; what comes before it is the set-up the cases share
# (sources, conversions, servers started with on_exit).  run_cases runs each
# case in the script's order in a subshell and prints TAP: "ok N - NAME" or
# "not ok N - NAME".  A case's die (or a failing command: set -e) ends that
# case only, and the cases after it still run; the script fails when any case
# failed.  With SHARDKIT_CASE=GLOB (`make test TESTS=test_x CASE=GLOB`) only
# the cases whose names match run: a case reads the set-up, never what
# another case made.  Variables a case sets stay in its subshell.
# case_end: (a case's subshell, as it exits) the run it held stopped killed,
# the file systems it mounted unmounted; the set-up's are end_test's
case_end() {
    [ "$held" = "$cases_held" ] || kill -KILL "$held" 2>/dev/null || true
    for m in $mounts; do
        case " $cases_mounts " in
        *" $m "*) ;;
        *) umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true ;;
        esac
    done
}
run_cases() {
    cases_names=$(sed -n 's/^case_\([A-Za-z0-9_]*\)() *{.*/\1/p' "$0")
    [ -n "$cases_names" ] || die "run_cases: $0 defines no case_NAME() { functions"
    cases_pattern=${SHARDKIT_CASE:-*}
    cases_picked=""
    for cases_c in $cases_names; do
        # shellcheck disable=SC2254
        case "$cases_c" in $cases_pattern) cases_picked="$cases_picked $cases_c" ;; esac
    done
    [ -n "$cases_picked" ] ||
        die "no case of $(basename "$0" .sh) matches '$cases_pattern' (cases: $(echo $cases_names))"
    echo "1..$(echo $cases_picked | wc -w)"
    cases_n=0
    cases_bad=""
    for cases_c in $cases_picked; do
        cases_n=$((cases_n + 1))
        C=$T/case/$cases_c
        mkdir -p "$C"
        set +e
        (
            # what the case left: a run it held stopped (stop_at), a mount it made
            cases_held=$held cases_mounts=$mounts
            trap 'case_end' EXIT
            set -e
            "case_$cases_c"
        )
        cases_status=$?
        set -e
        if [ "$cases_status" -eq 0 ]; then
            echo "ok $cases_n - $cases_c"
        else
            echo "not ok $cases_n - $cases_c"
            cases_bad="$cases_bad $cases_c"
        fi
    done
    [ -z "$cases_bad" ] || die "$(echo $cases_bad | wc -w) of $cases_n cases failed:$cases_bad"
}

# verifies NAME SRC DST [OPTIONS...]: (in a case) shardcheck --deep --source
# SRC DST OPTIONS verifies DST; its report in $C/NAME.check
verifies() {
    name=$1 src=$2 dst=$3
    shift 3
    shardcheck --deep --source "$src" "$dst" "$@" >"$C/$name.check" 2>&1 ||
        { cat "$C/$name.check" >&2; die "$name: does not verify"; }
    must_say "verified '$dst'" "$C/$name.check"
}

# must_fail CODE CMD...: CMD must exit with status CODE.
must_fail() {
    want=$1; shift
    set +e
    "$@" >"$T/stdout" 2>"$T/err"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || { cat "$T/err" >&2; die "'$*' exited $got, expected $want"; }
}

# must_say TEXT FILE: FILE contains TEXT (fixed string).
must_say() {
    grep -qF -- "$1" "$2" || { cat "$2" >&2; die "expected '$1' in $2"; }
}

# json FILE EXPR: evaluate a Python expression on the JSON document in FILE
# (bound to `d`) and print the result.
json() {
    "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# peak_kib CMD ARGS...: run CMD (its stderr to $T/err) and print its peak
# RSS in KiB (wait4's: GNU time is not on every machine)
peak_kib() {
    "$PYTHON" - "$T/err" "$@" <<'EOF'
import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w"))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
}

# shardkit_python ARGS...: the Python interpreter with the shardkit package that
# `make test` built beside the binaries (BUILD/python) on its path; a sanitizer
# build's extension needs the sanitizer runtimes loaded first.  Fails (status
# 3) when the package was not built.
shardkit_python() {
    pkg=$(cd "$SHARDKIT_BIN/.." && pwd)/python
    [ -d "$pkg/shardkit" ] || { echo "no shardkit package in '$pkg' (make python)" >&2; return 3; }
    if ldd "$pkg"/shardkit/_native*.so 2>/dev/null | grep -q libasan; then
        env PYTHONPATH="$pkg" PYTHONDONTWRITEBYTECODE=1 ASAN_OPTIONS="detect_leaks=0:abort_on_error=0" \
            LD_PRELOAD="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)" \
            "$PYTHON" "$@"
    else
        env PYTHONPATH="$pkg" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" "$@"
    fi
}

# with_python WHAT: 0 when the build has the Python package.  A
# ThreadSanitizer build (make tsan) has none (its interpreter is not built
# with ThreadSanitizer): then the Python part WHAT is skipped, saying so, and
# the test goes on with the rest.  Other builds answer 0 (shardkit_python then
# fails loudly when the package is missing).
with_python() {
    [ "${SHARDKIT_TSAN:-0}" = 1 ] || return 0
    [ -d "$(cd "$SHARDKIT_BIN/.." && pwd)/python/shardkit" ] && return 0
    echo "SKIP: $1: no Python package in a ThreadSanitizer build"
    return 1
}

# The photo sample: 1000 photo-like JPEGs (four names with an apostrophe, a
# SOURCE.txt beside them) that tests/run.sh generates with
# tests/fixtures/make_sample.py.  Always there: a test never skips for it.
SAMPLE=${SHARDKIT_SAMPLE:-$SHARDKIT_FIXTURES/sample}
[ -f "$SAMPLE/SOURCE.txt" ] || die "no photo sample in '$SAMPLE' (run through tests/run.sh)"

# photo_samples: the photo sample, then the ImageNet sample (SHARDKIT_DATASET)
# when it is here, one a line: what a test proves on a whole sample it proves
# on each (real photos in addition, never instead).
photo_samples() {
    echo "$SAMPLE"
    [ ! -d "${SHARDKIT_DATASET:-}" ] || echo "$SHARDKIT_DATASET"
}

# same_tree A B: the two dataset directories hold byte-identical dataset files
# (run.json, which records timings, is left out).
same_tree() {
    (cd "$1" && ls | grep -v '^run.json$') >"$T/a.list"
    (cd "$2" && ls | grep -v '^run.json$') >"$T/b.list"
    cmp -s "$T/a.list" "$T/b.list" || die "'$1' and '$2' hold different files"
    while read -r f; do
        cmp -s "$1/$f" "$2/$f" || die "'$1/$f' and '$2/$f' differ"
    done <"$T/a.list"
}

# tree_state DIR: every entry under DIR (name, type, size, mode, link target)
# and the sha256 of every regular file, so that two calls differ when
# anything in DIR changed, was added or was removed.  Links are listed, never
# followed.
tree_state() {
    (cd "$1" && find . -printf '%p %y %s %m %l\n' | LC_ALL=C sort &&
        find . -type f -exec sha256sum {} + | LC_ALL=C sort)
}

# same_state FILE DIR WHAT: DIR is still exactly as `tree_state DIR >FILE`
# recorded it; else the difference is shown and the test dies saying WHAT.
same_state() {
    tree_state "$2" >"$1.now"
    cmp -s "$1" "$1.now" || { diff "$1" "$1.now" >&2 || true; die "$3"; }
}

# mount_tmpfs DIR SIZE: a size-capped tmpfs at DIR (made if missing), a small
# disk to fill; unmounted on exit.  Fails when mounting is not possible (not
# root, or a container without CAP_SYS_ADMIN).
mount_tmpfs() {
    mkdir -p "$1"
    [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || return 1
    mounts="$1 $mounts"
}

# strace_works: strace is installed and may trace here (not in every container).
strace_works() {
    command -v strace >/dev/null 2>&1 && strace -f -o /dev/null true 2>/dev/null
}

# stop_at SYSCALLS PATH DST [ARGS...]: start `shardify "$SRC" DST $OPTS ARGS`
# in the background under strace, held by SIGSTOP right after the first of
# SYSCALLS touching PATH (unlike SIGKILL, a stop lets the syscall complete;
# PATH is matched as the syscall spells it, see test_faults.sh); waits until
# it is stopped and sets $run_pid (shardify) and $strace_pid.  Resume it
# with `kill -CONT $run_pid`, collect its status with `finish_run`.
stop_at() {
    calls=$1 path=$2 dst=$3
    shift 3
    # LeakSanitizer cannot stop the world of a process that strace already
    # traces: in sanitizer builds the leak check is left to the other tests
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o "$T/stop.log" -P "$path" -e trace="$calls" \
        -e inject="$calls:signal=STOP:when=1" \
        shardify "$SRC" "$dst" $OPTS "$@" >"$T/bg.out" 2>"$T/bg.err" &
    strace_pid=$!
    i=0
    while [ $i -lt $POLL_STEPS ]; do
        # stopped when every thread has entered the group stop (strace logs
        # each one); the lock holds shardify's pid (strace's child)
        run_pid=$(head -n 1 "$dst/.shardify/lock" 2>/dev/null || true)
        if [ -n "$run_pid" ] && [ -d "/proc/$run_pid/task" ]; then
            stopped=$(grep -c -- '--- stopped by SIGSTOP ---' "$T/stop.log" || true)
            threads=$(ls "/proc/$run_pid/task" | wc -l)
            if [ "$stopped" -ge "$threads" ]; then
                held=$run_pid
                return 0
            fi
        fi
        kill -0 "$strace_pid" 2>/dev/null || { cat "$T/bg.err" >&2; die "the run ended before it was stopped"; }
        sleep 0.05
        i=$((i + 1))
    done
    die "the run never stopped at $calls '$path'"
}

# finish_run: wait for the background run; its exit status in $run_status.
finish_run() {
    set +e
    wait "$strace_pid"
    run_status=$?
    set -e
    held=""
}
