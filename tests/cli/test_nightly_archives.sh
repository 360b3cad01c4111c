#!/bin/sh
# test_nightly_archives.sh - the nightly job over an img2dataset folder that
# grows by tars (SHARDKIT_OPTIONS with --archives): the second night reuses
# every unchanged tar's records without reading its images (lineage:
# reused), converts only the new tar, and publishes a version that
# shardcheck --deep --source proves and that equals a full run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nightly_lib.sh"

GEN=$SHARDKIT_BIN/../bench/gen_archives
ROOT="$T/root"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src" SHARDKIT_KEEP=2
export SHARDKIT_OPTIONS="--archives --labels none --field caption=text,from=.txt --size 32"

# the set-up runs both nights on one ROOT; run1 and run2 are their stamps
# (each night's summary stays in runs/)
# first night: 4 tars of 50
mkdir -p "$T/src"
"$GEN" --per-tar 50 "$T/src" 200
nightly 0
run1=$run
# second night: one new tar
"$GEN" --per-tar 50 --first-tar 4 --seed 5 "$T/src" 50
nightly 0
run2=$run

case_first_night_over_4_tars_of_50_publishes_200_samples() {
    run=$run1
    [ "$(field 'd["status"], d["shardify"]["summary"]["samples"]')" = "('published', 200)" ] ||
        die "summary: $(cat "$ROOT/runs/$run.json")"
}

case_second_night_converts_the_new_tar_and_takes_the_four_others_whole() {
    run=$run2
    [ "$(field 'd["status"], d["shardify"]["summary"]["samples"]')" = "('published', 250)" ] ||
        die "summary: $(cat "$ROOT/runs/$run.json")"
    [ "$(field '[d["incremental"]["lineage"][k] for k in ("added", "changed", "removed", "unchanged", "reused")]')" = "[50, 0, 0, 200, 200]" ] ||
        die "lineage: $(field 'd["incremental"]')"
}

case_second_nights_version_verifies_deep_against_the_source_and_equals_a_full_run() {
    shardcheck --deep --source "$T/src" "$ROOT/current" >/dev/null || die "current does not verify"
    shardify $SHARDKIT_OPTIONS --quiet "$T/src" "$C/full"
    for f in $(cd "$C/full" && ls | grep -v '^run.json$\|^manifest.json$'); do
        cmp -s "$C/full/$f" "$ROOT/current/$f" || die "'$f' differs from a full run's"
    done
}

run_cases
