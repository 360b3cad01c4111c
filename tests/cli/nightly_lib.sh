# nightly_lib.sh - what the tests of the nightly job share (sourced after
# lib.sh by test_nightly.sh and test_nightly_full.sh).  $ROOT is the job's
# ROOT, as the test exports it in SHARDKIT_ROOT.

NIGHTLY="$SHARDKIT_TOP/examples/nightly/shardkit-nightly.sh"
export SHARDKIT_BIN
unset SHARDKIT_NIGHTLY_BEFORE_CHECK SHARDKIT_CHECK_OPTIONS SHARDKIT_MAX_LOSS \
    SHARDKIT_KEEP_RUNS 2>/dev/null || true

# nightly EXPECTED_STATUS [ARGS...]: run the script; it must exit with that
# status.  Sets $run to the run's stamp (from runs/latest.json).
nightly() {
    want=$1
    shift
    set +e
    sh "$NIGHTLY" "$@" >"$T/nightly.out" 2>"$T/nightly.err"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || { cat "$T/nightly.err" >&2; die "nightly exited $got, expected $want"; }
    run=$(json "$ROOT/runs/latest.json" 'd["run"]')
}
current() { readlink "$ROOT/current"; }
versions() { ls "$ROOT/versions" | tr '\n' ' '; }
field() { json "$ROOT/runs/$run.json" "$1"; }
