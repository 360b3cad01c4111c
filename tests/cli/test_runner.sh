#!/bin/sh
# test_runner.sh - tests/run.sh counts every skip and says why: a CLI test's
# "SKIP:" line (lib.sh's skip), a cmocka test's skip with the reason it printed
# (tests/unit/skip.h) or none, pytest's skip reasons.  With
# SHARDKIT_STRICT_SKIPS=1, as CI runs it, a skip that tests/skips.allowed does
# not list fails the run; listed ones do not.  A test that leaves a dataset
# the schemas do not describe fails (lib.sh, python/tests/conftest.py),
# unless it said it damaged it.  It runs on a planted checkout: a copy of
# tests/run.sh, lib.sh, check_schemas.py, the schemas and conftest.py beside
# planted tests, and a build directory holding a real cmocka program; each
# case plants in its own copy of both.
. "$(dirname "$0")/lib.sh"

P=$T/top
B=$T/build
mkdir -p "$P/tests/cli" "$P/tests/fixtures" "$P/python/tests" "$P/manifests" "$B/tests" "$B/bin" \
    "$B/python/shardkit" "$B/fixtures/sample"
cp "$SHARDKIT_TOP/tests/run.sh" "$SHARDKIT_TOP/tests/check_schemas.py" "$P/tests/"
cp "$SHARDKIT_TOP/tests/cli/lib.sh" "$P/tests/cli/lib.sh"
cp "$SHARDKIT_TOP"/manifests/*.schema.json "$P/manifests/"
cp "$SHARDKIT_TOP/python/tests/conftest.py" "$P/python/tests/"
# the fixtures are there and no generator is newer: run.sh makes none
echo "planted" >"$B/fixtures/sample/SOURCE.txt"
touch "$B/fixtures/.complete"

cat >"$P/tests/cli/test_planted.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
echo "-- a part that runs"
skip "the planted part cannot run here"
EOF
cat >"$P/tests/cli/test_whole.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
echo "-- everything runs"
EOF
cat >"$T/planted_unit.c" <<'EOF'
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "skip.h"

static void test_passes(void **state) { (void)state; assert_true(1); }
static void test_needs_a_widget(void **state) { (void)state; skip_because("no widget here"); }
static void test_skips_silently(void **state) { (void)state; skip(); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passes),
        cmocka_unit_test(test_needs_a_widget),
        cmocka_unit_test(test_skips_silently),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
EOF
mkdir -p "$P/tests/unit"
cp "$T/planted_unit.c" "$P/tests/unit/test_planted_unit.c"
cc -I"$SHARDKIT_TOP/tests/unit" "$T/planted_unit.c" -lcmocka -o "$B/tests/test_planted_unit" ||
    die "cannot build the planted cmocka test"
# a program a removed test left in the build directory: never run
printf '#!/bin/sh\necho stale test ran\nexit 1\n' >"$B/tests/test_removed_long_ago"
chmod +x "$B/tests/test_removed_long_ago"
cat >"$P/python/tests/test_planted.py" <<'EOF'
import pytest


def test_passes():
    pass


@pytest.mark.skip(reason="planted: no gizmo")
def test_gizmo():
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_twice(n):
    pytest.skip("planted: twice")
EOF

# runner STRICT ARGS...: tests/run.sh of the planted checkout, its output in
# $C/out, its exit status in $status; the planted tests' cases are those
# RUN_CASE picks (SHARDKIT_CASE picks this script's own)
runner() {
    strict=$1
    shift
    set +e
    SHARDKIT_CASE=${RUN_CASE:-} SHARDKIT_STRICT_SKIPS=$strict sh "$P/tests/run.sh" "$B" "$@" >"$C/out" 2>&1
    status=$?
    set -e
}
# counted N WHY: the summary lists WHY N times
counted() {
    grep -qxE " +$1  $(printf '%s' "$2" | sed 's/[][\.*^$()+?{}|]/\\&/g')( +\(allowed: tests/skips.allowed\))?" \
        "$C/out" || { cat "$C/out" >&2; die "the summary does not count '$2' $1 times"; }
}

# planted: the case's own copy of the planted checkout and build directory
# (a case plants tests and skips.allowed in it), as P and B
planted() {
    cp -a "$T/top" "$C/top"
    cp -a "$T/build" "$C/build"
    P=$C/top B=$C/build
}

case_every_skip_is_counted_with_its_reason_outside_strict_mode_the_run_passes() {
    planted
    runner 0
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "run.sh exited $status"; }
    must_say "skipped: 6 (how many, and why):" "$C/out"
    counted 1 "test_planted: the planted part cannot run here"
    counted 1 "test_planted_unit: test_needs_a_widget: no widget here"
    counted 1 "test_planted_unit: test_skips_silently: (no reason given)"
    counted 1 "python_tests: planted: no gizmo"
    counted 2 "python_tests: planted: twice"
    [ "$(tail -n 1 "$C/out")" = "passed: 4, failed: 0, skipped: 6" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
}

case_strict_a_skip_not_in_tests_skips_allowed_fails_the_run() {
    planted
    runner 1
    [ "$status" -eq 1 ] || { cat "$C/out" >&2; die "a planted skip passed the strict run"; }
    must_say "FAIL: 6 skipped, not listed in tests/skips.allowed" "$C/out"
    [ "$(tail -n 1 "$C/out")" = "passed: 4, failed: 0, skipped: 6 (6 not allowed)" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
}

case_strict_listed_skips_pass_the_one_left_out_still_fails() {
    planted
    cat >"$P/tests/skips.allowed" <<'EOF'
# comments and blank lines are not entries

test_planted: the planted part cannot run here
test_planted_unit: test_needs_a_widget: no widget here
python_tests: planted: no gizmo
python_tests: planted: twice
EOF
    runner 1
    [ "$status" -eq 1 ] || { cat "$C/out" >&2; die "an unlisted skip passed the strict run"; }
    counted 1 "test_planted: the planted part cannot run here"
    must_say "FAIL: 1 skipped, not listed in tests/skips.allowed" "$C/out"
    [ "$(tail -n 1 "$C/out")" = "passed: 4, failed: 0, skipped: 6 (1 not allowed)" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
    echo "test_planted_unit: test_skips_silently: (no reason given)" >>"$P/tests/skips.allowed"
    runner 1
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "a run with only listed skips failed"; }
}

case_strict_a_run_without_skips_passes_and_says_it_skipped_none() {
    planted
    runner 1 test_whole
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "run.sh exited $status"; }
    [ "$(tail -n 1 "$C/out")" = "passed: 1, failed: 0, skipped: 0" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
    if grep -q "how many, and why" "$C/out"; then cat "$C/out" >&2; die "a skip list without skips"; fi
}

case_a_unit_test_is_one_of_tests_unit_a_stale_program_is_not_run_a_missing_one_fails() {
    planted
    runner 0
    if grep -q "test_removed_long_ago\|stale test ran" "$C/out"; then
        cat "$C/out" >&2
        die "a program without its tests/unit source was run"
    fi
    cp "$T/planted_unit.c" "$P/tests/unit/test_never_built.c"
    runner 0 test_never_built test_whole
    [ "$status" -eq 1 ] || { cat "$C/out" >&2; die "a unit test that was not built passed"; }
    must_say "FAIL test_never_built" "$C/out"
    grep -q "not built" "$B/tests/test_never_built.log" ||
        { cat "$B/tests/test_never_built.log" >&2; die "the failure does not say the test was not built"; }
    [ "$(tail -n 1 "$C/out")" = "passed: 1, failed: 1 (test_never_built), skipped: 0" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
}

case_a_test_whose_dataset_the_schemas_do_not_describe_fails_naming_the_file_one_it_damaged_on_purpose_does_not() {
    planted
    cat >"$P/tests/cli/test_bad_dataset.sh" <<'EOF'
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/d"
printf '{"format": "shardkit", "version": 4}' >"$T/d/manifest.json"
[ -z "${DAMAGED:-}" ] || damaged "$T/d"
EOF
    cat >"$P/python/tests/test_bad_dataset.py" <<'EOF'
import os

from conftest import damaged


def test_writes_a_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text('{"format": "shardkit", "version": 4}')
    if os.environ.get("DAMAGED"):
        damaged(tmp_path)
EOF
    runner 0 test_bad_dataset python_tests
    [ "$status" -eq 1 ] || { cat "$C/out" >&2; die "a dataset against the schemas passed"; }
    [ "$(tail -n 1 "$C/out")" = "passed: 0, failed: 2 (test_bad_dataset python_tests), skipped: 3" ] ||
        { cat "$C/out" >&2; die "wrong closing line"; }
    must_say "/d/manifest.json: version: 4 is not one of [1, 2, 3]" "$B/tests/test_bad_dataset.log"
    must_say "FAIL: a dataset this test wrote disagrees with manifests/" "$B/tests/test_bad_dataset.log"
    must_say "a dataset this test wrote disagrees with manifests/" "$B/tests/python_tests.log"
    must_say "manifest.json: version: 4 is not one of [1, 2, 3]" "$B/tests/python_tests.log"
    DAMAGED=1 runner 0 test_bad_dataset python_tests
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "a dataset damaged on purpose failed its test"; }
    rm "$P/tests/cli/test_bad_dataset.sh" "$P/python/tests/test_bad_dataset.py"
}

case_cases_a_failing_case_does_not_hide_the_cases_after_it_one_case_runs_alone() {
    planted
    # (each line behind a '|': this script's run_cases must not take the
    # planted cases for its own)
    sed 's/^|//' >"$P/tests/cli/test_cases.sh" <<'EOF'
|. "$(dirname "$0")/lib.sh"
|n=7  # the set-up's variables: a case's counter must not be run_cases' own
|echo "shared" >"$T/shared"
|case_first_fails() { echo "first ran"; false; echo "first went on"; }
|case_second_dies() {
|    [ "$n" -eq 7 ] || die "n is $n"
|    echo "second ran"
|    sleep 300 &
|    held=$!  # as stop_at holds a run: the case's end kills it
|    echo "$held" >"$HELD_FILE"
|    die "planted failure"
|}
|case_third_passes() {
|    [ "$n" -eq 7 ] && [ -d "$C" ] && [ -z "$(ls -A "$C")" ] || die "no own empty C"
|    [ "$(cat "$T/shared")" = shared ] || die "no set-up"
|    n=99
|    echo "third ran"
|}
|case_fourth_passes() { [ "$n" -eq 7 ] || die "a case's variable leaked: n is $n"; echo "fourth ran"; }
|run_cases
EOF
    HELD_FILE=$C/held.pid runner 0 test_cases
    [ "$status" -eq 1 ] || { cat "$C/out" >&2; die "a script with failed cases passed"; }
    log=$B/tests/test_cases.log
    # what TAP says, in order, with the plan first
    grep -E '^(1\.\.|ok |not ok )' "$log" >"$C/tap"
    printf '1..4\nnot ok 1 - first_fails\nnot ok 2 - second_dies\nok 3 - third_passes\nok 4 - fourth_passes\n' |
        cmp -s - "$C/tap" || { cat "$log" >&2; die "the cases' TAP lines are not the expected ones"; }
    for line in "first ran" "second ran" "third ran" "fourth ran" "FAIL: planted failure" \
                "FAIL: 2 of 4 cases failed: first_fails second_dies"; do
        must_say "$line" "$log"
    done
    if grep -q "first went on" "$log"; then die "a failing command did not end its case"; fi
    pid=$(cat "$C/held.pid")
    sleep 0.2
    # (killed, it may stay a zombie until whoever adopted it reaps it)
    case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
    "" | Z*) ;;
    *) kill "$pid"; die "a run a failed case held outlived it" ;;
    esac
    HELD_FILE=/dev/null RUN_CASE='*passes' runner 0 test_cases
    [ "$status" -eq 0 ] || { cat "$log" >&2; die "the passing cases alone failed"; }
    grep -E '^(1\.\.|ok |not ok )' "$log" | tr '\n' ' ' |
        grep -qx '1..2 ok 1 - third_passes ok 2 - fourth_passes ' ||
        { cat "$log" >&2; die "SHARDKIT_CASE did not pick the matching cases"; }
    if grep -q "first ran" "$log"; then die "a case that does not match ran"; fi
    HELD_FILE=/dev/null RUN_CASE=nosuch runner 0 test_cases
    [ "$status" -eq 1 ] || die "a pattern matching no case passed"
    must_say "no case of test_cases matches 'nosuch' (cases: first_fails second_dies third_passes fourth_passes)" "$log"
    # a unit test's cases: cmocka's, picked by the same variable (tests/unit/cases.c)
    cc -I"$SHARDKIT_TOP/tests/unit" "$T/planted_unit.c" "$SHARDKIT_TOP/tests/unit/cases.c" -lcmocka \
        -o "$B/tests/test_planted_unit" || die "cannot build the planted cmocka test with cases.c"
    RUN_CASE='test_pass*' runner 0 test_planted_unit
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "one unit case alone failed"; }
    ulog=$B/tests/test_planted_unit.log
    [ "$(grep -c '^\[ RUN      \]' "$ulog")" -eq 1 ] && grep -q '^\[       OK \] test_passes$' "$ulog" ||
        { cat "$ulog" >&2; die "SHARDKIT_CASE did not pick one cmocka test"; }
    rm "$P/tests/cli/test_cases.sh"
    # pytest's cases: picked by the same variable (its -k)
    RUN_CASE='passes' runner 0 python_tests
    [ "$status" -eq 0 ] || { cat "$C/out" >&2; die "one python case alone failed"; }
    must_say "1 passed, 3 deselected" "$B/tests/python_tests.log"
}

case_a_suite_started_with_sigint_ignored_gives_its_tests_sigint_as_a_terminal_would() {
    planted
    cat >"$P/tests/cli/test_sigint.sh" <<'EOF2'
. "$(dirname "$0")/lib.sh"
# SigIgn is a hexadecimal mask: SIGINT is bit 2, SIGQUIT bit 3
ign=$(awk '/^SigIgn:/ { print $2 }' /proc/self/status)
[ $((0x$ign & 6)) -eq 0 ] || die "the test started with SIGINT or SIGQUIT ignored (SigIgn $ign)"
EOF2
    for jobs in 1 2; do
        set +e
        (trap "" INT QUIT && SHARDKIT_CASE= SHARDKIT_TEST_JOBS=$jobs sh "$P/tests/run.sh" "$B" test_sigint >"$C/out" 2>&1)
        status=$?
        set -e
        [ "$status" -eq 0 ] || { cat "$C/out" "$B/tests/test_sigint.log" >&2; die "-j$jobs: a test got SIGINT ignored"; }
    done
    rm "$P/tests/cli/test_sigint.sh"
}

case_every_script_of_tests_cli_is_written_in_cases() {
    # (a script that stops at its first failure hides the cases after it)
    for f in "$SHARDKIT_TOP"/tests/cli/test_*.sh; do
        grep -q '^case_[A-Za-z0-9_]*() *{' "$f" && [ "$(grep -v '^$' "$f" | tail -n 1)" = run_cases ] ||
            die "$(basename "$f") is not written in cases: case_NAME() { functions, ending with run_cases"
    done
}

run_cases
