# nightly_lib.sh - what the tests of the nightly job share (sourced after
# lib.sh by test_nightly.sh and test_nightly_full.sh).  $ROOT is the job's
# ROOT, as the test exports it in SHARDKIT_ROOT.

# the job as built (make: cmd/shardkit-nightly into bin/), found as users
# find it, on PATH
[ "$(command -v shardkit-nightly)" = "$SHARDKIT_BIN/shardkit-nightly" ] ||
    die "shardkit-nightly is not '$SHARDKIT_BIN/shardkit-nightly' (make build)"
export SHARDKIT_BIN
unset SHARDKIT_NIGHTLY_BEFORE_CHECK SHARDKIT_CHECK_OPTIONS SHARDKIT_MAX_LOSS \
    SHARDKIT_KEEP_RUNS 2>/dev/null || true

# nightly EXPECTED_STATUS [ARGS...]: run the job; it must exit with that
# status.  Sets $run to the run's stamp (from runs/latest.json).
nightly() {
    want=$1
    shift
    set +e
    shardkit-nightly "$@" >"$T/nightly.out" 2>"$T/nightly.err"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || { cat "$T/nightly.err" >&2; die "nightly exited $got, expected $want"; }
    run=$(json "$ROOT/runs/latest.json" 'd["run"]')
}
current() { readlink "$ROOT/current"; }
versions() { ls "$ROOT/versions" | tr '\n' ' '; }
field() { json "$ROOT/runs/$run.json" "$1"; }
