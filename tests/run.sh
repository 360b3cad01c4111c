#!/bin/sh
# Run the test suite against a build directory.
#   tests/run.sh [--units-only] BUILD [NAME...]
# Unit tests are the cmocka programs in BUILD/tests; fuzz replays are
# BUILD/tests/fuzz_replay_* run over fuzz/corpus and fuzz/regressions; CLI
# tests are the tests/cli/test_*.sh scripts, which run the real binaries in
# BUILD/bin; the Python tests are python/tests (pytest) on BUILD/python.
# Fixtures are generated first into BUILD/fixtures: the crafted images
# (tests/fixtures/make_fixtures.py) and the photo sample the tools convert
# (tests/fixtures/make_sample.py, BUILD/fixtures/sample), so the suite needs
# nothing beside a clone.  With NAMEs (test_shardify, python_tests,
# fuzz_replay_x), only the tests of those names run.
#
# Skips: a test may skip a part it cannot run here (a CLI test prints
# "SKIP: why", a unit test prints "SKIP: why" before cmocka's skip(), pytest
# gives its reason).  The summary counts them and says why.  With
# SHARDKIT_STRICT_SKIPS=1 (CI sets it) a skip fails the run unless its line,
# "NAME: why", is in tests/skips.allowed.
# Cases: each test is made of cases (cmocka's tests, a CLI script's
# case_NAME functions, pytest's tests); a failing case does not stop the
# cases after it, and SHARDKIT_CASE=GLOB (make's CASE=) runs only the
# matching ones (for python_tests, a pytest -k expression).
# Jobs: the tests run one at a time, or N at once with SHARDKIT_TEST_JOBS=N
# or under `make -jN` (make test -j2); each test's lines are printed once it
# ends, and the summary is the same.
# Exit status: 0 when every test passed (and, strict, nothing else was skipped).
set -u
units_only=0
if [ "${1:-}" = "--units-only" ]; then units_only=1; shift; fi
BUILD=${1:?usage: tests/run.sh [--units-only] BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
shift
only="$*"

export SHARDKIT_BIN="$BUILD/bin"
export SHARDKIT_FIXTURES="$BUILD/fixtures"
export SHARDKIT_TOP="$top"
# The photo sample every test that converts photos uses (generated below).
export SHARDKIT_SAMPLE="$SHARDKIT_FIXTURES/sample"
# Real photos: the ImageNet sample, when it is beside the checkout; the tests
# that decode or convert a whole sample run on it as well, never instead.
export SHARDKIT_DATASET="${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}"
export PYTHON="${PYTHON:-/usr/bin/python3}"
# glib/libvips keep process-lifetime allocations; only report our leaks.
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
# ThreadSanitizer (make tsan): a race fails the program that ran into it;
# LLVM's Archer tells it what OpenMP's constructs order.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1}:ignore_noninstrumented_modules=1:allocator_may_return_null=1:suppressions=$top/tests/tsan.supp"
if [ "${SHARDKIT_TSAN:-0}" = 1 ]; then
    archer=$(dirname "$(readlink -f "$(command -v clang)")")/../lib/libarcher.so
    [ -f "$archer" ] || { echo "FAIL: no libarcher.so beside clang (scripts/deps.sh tsan)" >&2; exit 1; }
    export OMP_TOOL_LIBRARIES="$archer"
fi
# Sleep rather than spin when an OpenMP thread waits: CI machines are small and shared.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if [ ! -f "$SHARDKIT_FIXTURES/.complete" ] ||
   [ -n "$(find "$top/tests/fixtures" -name '*.py' -newer "$SHARDKIT_FIXTURES/.complete")" ]; then
    rm -rf "$SHARDKIT_FIXTURES"
    { "$PYTHON" "$top/tests/fixtures/make_fixtures.py" "$SHARDKIT_FIXTURES" &&
      "$PYTHON" "$top/tests/fixtures/make_sample.py" "$SHARDKIT_SAMPLE"; } || {
        echo "FAIL: cannot generate test fixtures" >&2; exit 1; }
    touch "$SHARDKIT_FIXTURES/.complete"
fi

pass=0; fail=0; failed=""
skips="$BUILD/tests/skips.list"
mkdir -p "$BUILD/tests"
: >"$skips"
# skipped NAME LOG: append the skips LOG records to $skips, one "NAME: why"
# line each: a CLI test's "SKIP: why" lines; cmocka's "[  SKIPPED ] test"
# with the "SKIP: why" the test printed after "[ RUN      ] test"; pytest's
# -rs lines "SKIPPED [N] file:line: why" (N lines).
skipped() {
    awk -v name="$1" '
        /^\[ RUN      \] / { run = substr($0, 14); why = ""; next }
        /^SKIP: / {
            if (run != "") why = substr($0, 7); else print name ": " substr($0, 7)
            next
        }
        /^\[  SKIPPED \] / {
            test = substr($0, 14)
            if (run != "" && test == run)
                print name ": " test ": " (why != "" ? why : "(no reason given)")
            run = ""
            next
        }
        /^SKIPPED \[[0-9]+\] / && match($0, /:[0-9]+: /) {
            n = substr($0, 10) + 0
            for (i = 0; i < n; i++) print name ": " substr($0, RSTART + RLENGTH)
        }' "$2" >>"$skips"
}
# jobs: SHARDKIT_TEST_JOBS, else make's -jN (-j alone: the cores), else 1
jobs=${SHARDKIT_TEST_JOBS:-}
if [ -z "$jobs" ]; then
    case " ${MAKEFLAGS:-} " in
    *" -j "* | *" -j --"*) jobs=$(nproc) ;;
    *" -j"[0-9]*) jobs=$(printf '%s\n' " $MAKEFLAGS " | sed -n 's/.* -j\([0-9][0-9]*\).*/\1/p') ;;
    esac
fi
jobs=${jobs:-1}
case "$jobs" in *[!0-9]* | 0) jobs=1 ;; esac
running=""  # the tests under way (jobs > 1), by name
# a test that runs make runs its own, not a part of this one's (-j's jobserver)
unset MAKEFLAGS MFLAGS MAKELEVEL

# run_one NAME COMMAND...: run it, its log in BUILD/tests/NAME.log; prints
# its "ok" or "FAIL" lines; the command's status
run_one() {
    name=$1; shift
    log="$BUILD/tests/$name.log"
    start=$(date +%s)
    if "$@" >"$log" 2>&1; then
        echo "ok   $name ($(( $(date +%s) - start ))s)"
        return 0
    fi
    echo "FAIL $name (log: $log)"; tail -n 40 "$log" | sed 's/^/     /'
    return 1
}
# tally NAME STATUS: count it, and its skips
tally() {
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed $1"; fi
    skipped "$1" "$BUILD/tests/$1.log"
}
# reap [ALL]: the ended tests of those under way, their lines printed and
# counted; with ALL, wait for every one
reap() {
    while :; do
        left=""
        for n in $running; do
            if [ -f "$BUILD/tests/$n.status" ]; then
                cat "$BUILD/tests/$n.out"
                tally "$n" "$(cat "$BUILD/tests/$n.status")"
                rm -f "$BUILD/tests/$n.status" "$BUILD/tests/$n.out"
            else
                left="$left $n"
            fi
        done
        running=$left
        [ -n "${1:-}" ] && [ -n "$running" ] || return 0
        sleep 0.2
    done
}
under_way() { echo $running | wc -w; }
# run NAME COMMAND...: the test, now or (jobs) in the background.  A command
# run in the background by a shell without job control starts with SIGINT
# and SIGQUIT ignored, and so does the whole suite when it was started so
# (nohup, cron, `make test &`): each test gets them as a terminal's
# foreground job has them, which the tests of Ctrl-C need.
run() {  # name, command...
    name=$1
    if [ -n "$only" ]; then
        case " $only " in *" $name "*) ;; *) return 0 ;; esac
    fi
    if [ "$jobs" -le 1 ]; then
        shift
        run_one "$name" env --default-signal=INT,QUIT "$@"
        tally "$name" $?
        return 0
    fi
    while [ "$(under_way)" -ge "$jobs" ]; do
        sleep 0.2
        reap
    done
    rm -f "$BUILD/tests/$name.status"
    (
        shift
        run_one "$name" env --default-signal=INT,QUIT "$@" >"$BUILD/tests/$name.out" 2>&1
        echo $? >"$BUILD/tests/$name.status.tmp"
        mv "$BUILD/tests/$name.status.tmp" "$BUILD/tests/$name.status"
    ) &
    running="$running $name"
}

# A test whose program was not built fails, saying so: a command, not a
# function, as a test under way with jobs runs through env.
not_built='echo "$1: not built (run make first)" >&2; exit 1'
# The unit tests are those of tests/unit, not what a build directory holds:
# a program left there by a test since removed or renamed is not run.
for src in "$top"/tests/unit/test_*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    t="$BUILD/tests/$name"
    if [ -x "$t" ] && [ -f "$t" ]; then run "$name" "$t"; else run "$name" sh -c "$not_built" missing "$t"; fi
done
if [ $units_only -eq 0 ]; then
    # fuzz/replay.c over each fuzz target's committed seeds and regression
    # inputs (fuzz/corpus/T, fuzz/regressions/T): no libFuzzer needed
    for src in "$top"/fuzz/fuzz_*.c; do
        [ -f "$src" ] || continue
        target=$(basename "$src" .c)
        target=${target#fuzz_}
        t="$BUILD/tests/fuzz_replay_$target"
        [ -x "$t" ] && [ -f "$t" ] || { run "fuzz_replay_$target" sh -c "$not_built" missing "$t"; continue; }
        set --
        for d in "$top/fuzz/corpus/$target" "$top/fuzz/regressions/$target"; do
            [ -d "$d" ] && set -- "$@" "$d"
        done
        [ $# -eq 0 ] || run "fuzz_replay_$target" "$t" "$@"
    done
    for t in "$top"/tests/cli/test_*.sh; do
        [ -f "$t" ] || continue
        run "$(basename "$t" .sh)" sh "$t"
    done
    # The Python package's tests (pytest), on the package `make python` built
    # into BUILD/python.  A sanitizer build's extension needs the sanitizer
    # runtimes loaded before the interpreter starts; CPython's own
    # allocations are not ours to report, so leak checking is off there.
    if [ -d "$BUILD/python/shardkit" ]; then
        set -- env PYTHONPATH="$BUILD/python" PYTHONDONTWRITEBYTECODE=1
        if ldd "$BUILD"/python/shardkit/_native*.so 2>/dev/null | grep -q libasan; then
            set -- "$@" LD_PRELOAD="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)" \
                ASAN_OPTIONS="detect_leaks=0:abort_on_error=0"
        fi
        set -- "$@" "$PYTHON" -m pytest -q -rs -p no:cacheprovider
        [ -z "${SHARDKIT_CASE:-}" ] || set -- "$@" -k "$SHARDKIT_CASE"
        run python_tests "$@" "$top/python/tests"
    fi
fi

reap all

# The skips, each reason once with its count; in strict mode those not in
# tests/skips.allowed (lines "NAME: why"; # starts a comment) fail the run.
allowed="$top/tests/skips.allowed"
[ -f "$allowed" ] || allowed=/dev/null
unlisted() {
    awk -v list="$allowed" 'BEGIN {
        while ((getline line <list) > 0) if (line !~ /^#/ && line != "") ok[line] = 1
    } !($0 in ok)' "$@"
}
nskip=$(wc -l <"$skips")
bad=0
if [ "$nskip" -gt 0 ]; then
    echo "skipped: $nskip (how many, and why):"
    sort "$skips" | uniq -c | while read -r n why; do
        if [ -z "$(printf '%s\n' "$why" | unlisted -)" ]; then
            echo "     $n  $why  (allowed: tests/skips.allowed)"
        else
            echo "     $n  $why"
        fi
    done
    if [ "${SHARDKIT_STRICT_SKIPS:-0}" = 1 ]; then
        bad=$(unlisted "$skips" | wc -l)
        [ "$bad" -eq 0 ] || echo "FAIL: $bad skipped, not listed in tests/skips.allowed" \
            "(SHARDKIT_STRICT_SKIPS=1: everything else must run)"
    fi
fi
summary="passed: $pass, failed: $fail${failed:+ (}${failed# }${failed:+)}, skipped: $nskip"
[ "$bad" -eq 0 ] || summary="$summary ($bad not allowed)"
echo "$summary"
[ $fail -eq 0 ] && [ "$bad" -eq 0 ]
