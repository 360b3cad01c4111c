# lib.sh - shared helpers for the CLI tests (sourced, POSIX sh).
# Each test script runs the real binaries from $SHARDKIT_BIN on real files in a
# private temporary directory, and exits non-zero on the first failure.
set -eu

: "${SHARDKIT_BIN:?run through tests/run.sh}"
: "${SHARDKIT_FIXTURES:?run through tests/run.sh}"
PYTHON=${PYTHON:-/usr/bin/python3}
PATH="$SHARDKIT_BIN:$PATH"
export PATH

T=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-test.XXXXXX")
trap '[ -n "${KEEP_T:-}" ] || rm -rf "$T"' EXIT

die() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "-- $*"; }
skip() { echo "SKIP: $*"; exit 0; }

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

# dataset: the shared real-image sample, or skip.
need_dataset() {
    [ -d "${SHARDKIT_DATASET:-}" ] || skip "sample dataset not found at '${SHARDKIT_DATASET:-}'"
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
