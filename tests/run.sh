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
# fuzz_replay_x), only the tests of those names run.  Exit status: 0 when
# every test passed.
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
run() {  # name, command...
    name=$1; shift
    if [ -n "$only" ]; then
        case " $only " in *" $name "*) ;; *) return 0 ;; esac
    fi
    log="$BUILD/tests/$name.log"
    start=$(date +%s)
    if "$@" >"$log" 2>&1; then
        pass=$((pass + 1)); echo "ok   $name ($(( $(date +%s) - start ))s)"
    else
        fail=$((fail + 1)); failed="$failed $name"
        echo "FAIL $name (log: $log)"; tail -n 40 "$log" | sed 's/^/     /'
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case "$t" in *.log) continue ;; esac
    run "$(basename "$t")" "$t"
done
if [ $units_only -eq 0 ]; then
    # fuzz/replay.c over each fuzz target's committed seeds and regression
    # inputs (fuzz/corpus/T, fuzz/regressions/T): no libFuzzer needed
    for t in "$BUILD"/tests/fuzz_replay_*; do
        [ -x "$t" ] && [ -f "$t" ] || continue
        case "$t" in *.log) continue ;; esac
        target=${t##*/fuzz_replay_}
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
        run python_tests "$@" "$PYTHON" -m pytest -q -p no:cacheprovider "$top/python/tests"
    fi
fi
echo "passed: $pass, failed: $fail${failed:+ (}${failed# }${failed:+)}"
[ $fail -eq 0 ]
