#!/bin/sh
# test_slurm.sh - the Slurm example on a real one-node Slurm cluster started
# here (munged, slurmctld and slurmd of Debian's munge and slurm-wlm, on free
# localhost ports, every file in the test's directory): submit the job
# array of 4 parts and the merge job exactly as examples/slurm/submit.sh
# does, wait for them, and check the merged dataset with shardcheck --deep
# --source and against a single run.  A cluster that cannot start fails the
# test with the daemons' logs.  The daemons are stopped by pid.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parts_lib.sh"

. "$(dirname "$0")/slurm_lib.sh"

# Steps of 0.2 s: the jobs must be done within these.
JOB_STEPS=1500

# the cluster's directory: slurm_lib.sh calls it $C, which run_cases gives each
# case, so it is kept as $CLUSTER and given back to slurm_lib.sh's functions
C="$T/cluster"
CLUSTER=$C
# files the daemons made as root go with them
on_exit 'stop_daemons; [ -n "${KEEP_T:-}" ] || $AS_ROOT rm -rf "$CLUSTER"'

logs() {
    (C=$CLUSTER && slurm_logs)
    for f in "$T"/jobs/*.out; do
        [ -f "$f" ] && { echo "==== $f" >&2; tail -n 40 "$f" >&2; }
    done
    return 0
}
fail() { logs; die "$*"; }

# submit DST [VAR=VALUE...]: run examples/slurm/submit.sh for $T/raw into DST
# (4 parts) with those settings; sets $array and $merge to the job ids
submit() {
    dst=$1
    shift
    ids=$(cd "$T/jobs" && env SHARDKIT_SRC="${SRC:-$T/raw}" SHARDKIT_DST="$dst" SHARDKIT_PARTS=4 \
        SHARDKIT_OPTIONS="$OPTIONS" SHARDKIT_BIN="$SHARDKIT_BIN" SHARDKIT_LOGS="$T/jobs" "$@" \
        "$SHARDKIT_TOP/examples/slurm/submit.sh") || fail "submit.sh failed"
    array=${ids% *}
    merge=${ids#* }
    [ -n "$array" ] && [ -n "$merge" ] && [ "$array" != "$merge" ] || fail "submit.sh printed '$ids'"
}
state() { slurm_state "$1"; }
# wait_merge: wait until the merge job has ended; its final state in $merge_state
wait_merge() {
    i=0
    while :; do
        merge_state=$(state "$merge")
        case "$merge_state" in
        PENDING|RUNNING|CONFIGURING|COMPLETING|"") ;;
        *) return 0 ;;
        esac
        i=$((i + 1))
        [ $i -lt $JOB_STEPS ] ||
            fail "the jobs did not finish in time (merge $merge_state, array: $(state "$array" | tr '\n' ' '))"
        sleep 0.2
    done
}

# the set-up: a one-node Slurm cluster on localhost; the demo data ($T/raw);
# the example array of 4 parts and its merge job submitted into $T/shards as
# submit.sh submits them, waited for (their ids and the merge's final state
# kept), which the first cases check and the resubmission case copies
slurm_start
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
mkdir "$T/jobs"
OPTIONS="--size 64 --shard-size 16K"
submit "$T/shards"
wait_merge

case_the_example_array_of_4_parts_and_its_merge_job_complete_as_submit_sh_submits_them() {
    [ "$merge_state" = COMPLETED ] ||
        fail "the merge job ended $merge_state (array: $(state "$array" | sort | uniq -c | tr '\n' ' '))"
    [ "$(state "$array" | sort -u)" = COMPLETED ] || fail "array tasks: $(state "$array" | tr '\n' ' ')"
    for p in 0 1 2 3; do
        [ -f "$T/shards/parts/$p-of-4/manifest.json" ] || fail "part $p of 4 is not published"
    done
    must_say "published '$T/shards' from 4 parts" "$T/jobs/shardify-merge-$merge.out"
}

case_the_merged_dataset_checks_out_against_src_and_equals_a_single_run() {
    shardcheck --deep --source "$T/raw" "$T/shards" >"$C/check" 2>&1 || {
        cat "$C/check" >&2; fail "shardcheck --deep --source refused the merged dataset"; }
    shardify --quiet $OPTIONS "$T/raw" "$C/single"
    same_as_single "$C/single" "$T/shards" 48
}

case_submitted_again_the_published_parts_are_kept_and_the_merge_gives_the_same_manifest() {
    # on a copy of the merged dataset, the set-up's left as it is
    cp -a "$T/shards" "$C/shards"
    cp "$C/shards/manifest.json" "$C/manifest.first"
    submit "$C/shards"
    wait_merge
    [ "$merge_state" = COMPLETED ] || fail "the second merge job ended $merge_state"
    must_say "part 2 of 4 is already published" "$T/jobs/shardify-part-${array}_2.out"
    cmp -s "$C/shards/manifest.json" "$C/manifest.first" || fail "the second merge changed the manifest"
}

case_a_failed_part_the_merge_job_never_runs_afterok_and_nothing_is_published() {
    submit "$C/failed" SHARDKIT_OPTIONS="--size 0"
    wait_merge
    [ "$merge_state" = CANCELLED ] || fail "after failed parts the merge job ended $merge_state"
    [ "$(state "$array" | sort -u)" = FAILED ] || fail "array tasks: $(state "$array" | tr '\n' ' ')"
    must_say "shardify: --size: '0' is not a number" "$T/jobs/shardify-part-${array}_0.out"
    [ ! -e "$C/failed/manifest.json" ] || fail "a failed conversion published a manifest"
}

case_an_img2dataset_folder_of_tars_the_parts_take_whole_tars_and_merge_into_one_runs_dataset() {
    mkdir "$C/tars"
    "$SHARDKIT_BIN/../bench/gen_archives" --per-tar 30 "$C/tars" 200
    OPTIONS="--archives --labels none --field caption=text,from=.txt --size 32 --shard-size 16K"
    SRC="$C/tars" submit "$C/wds"
    wait_merge
    [ "$merge_state" = COMPLETED ] ||
        fail "the merge job of the tars ended $merge_state (array: $(state "$array" | tr '\n' ' '))"
    shardcheck --deep --source "$C/tars" "$C/wds" >"$C/check" 2>&1 || {
        cat "$C/check" >&2; fail "shardcheck --deep --source refused the merged tars"; }
    shardify --quiet $OPTIONS "$C/tars" "$C/wds-single"
    same_as_single "$C/wds-single" "$C/wds" 200
    [ "$(ls "$C/wds"/index-*-of-4.jsonl | wc -l)" -eq 4 ] || fail "the merge did not keep the parts' indexes"
}

run_cases
