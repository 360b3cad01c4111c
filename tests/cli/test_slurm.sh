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

C="$T/cluster"
# files the daemons made as root go with them
on_exit 'stop_daemons; [ -n "${KEEP_T:-}" ] || $AS_ROOT rm -rf "$C"'

logs() {
    slurm_logs
    for f in "$T"/jobs/*.out; do
        [ -f "$f" ] && { echo "==== $f" >&2; tail -n 40 "$f" >&2; }
    done
    return 0
}
fail() { logs; die "$*"; }

say "a one-node Slurm cluster on localhost"
slurm_start

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

say "the example array of 4 parts and its merge job, as submit.sh submits them"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
mkdir "$T/jobs"
OPTIONS="--size 64 --shard-size 16K"
submit "$T/shards"
wait_merge
[ "$merge_state" = COMPLETED ] ||
    fail "the merge job ended $merge_state (array: $(state "$array" | sort | uniq -c | tr '\n' ' '))"
[ "$(state "$array" | sort -u)" = COMPLETED ] || fail "array tasks: $(state "$array" | tr '\n' ' ')"
for p in 0 1 2 3; do
    [ -f "$T/shards/parts/$p-of-4/manifest.json" ] || fail "part $p of 4 is not published"
done
must_say "published '$T/shards' from 4 parts" "$T/jobs/shardify-merge-$merge.out"

say "the merged dataset checks out against SRC and equals a single run"
shardcheck --deep --source "$T/raw" "$T/shards" >"$T/check" 2>&1 || {
    cat "$T/check" >&2; fail "shardcheck --deep --source refused the merged dataset"; }
shardify --quiet $OPTIONS "$T/raw" "$T/single"
same_as_single "$T/single" "$T/shards" 48

say "submitted again: the published parts are kept and the merge gives the same manifest"
cp "$T/shards/manifest.json" "$T/manifest.first"
submit "$T/shards"
wait_merge
[ "$merge_state" = COMPLETED ] || fail "the second merge job ended $merge_state"
must_say "part 2 of 4 is already published" "$T/jobs/shardify-part-${array}_2.out"
cmp -s "$T/shards/manifest.json" "$T/manifest.first" || fail "the second merge changed the manifest"

say "a failed part: the merge job never runs (afterok) and nothing is published"
submit "$T/failed" SHARDKIT_OPTIONS="--size 0"
wait_merge
[ "$merge_state" = CANCELLED ] || fail "after failed parts the merge job ended $merge_state"
[ "$(state "$array" | sort -u)" = FAILED ] || fail "array tasks: $(state "$array" | tr '\n' ' ')"
must_say "shardify: --size: '0' is not a number" "$T/jobs/shardify-part-${array}_0.out"
[ ! -e "$T/failed/manifest.json" ] || fail "a failed conversion published a manifest"

say "an img2dataset folder of tars: the parts take whole tars, and merge into one run's dataset"
mkdir "$T/tars"
"$SHARDKIT_BIN/../bench/gen_archives" --per-tar 30 "$T/tars" 200
OPTIONS="--archives --labels none --field caption=text,from=.txt --size 32 --shard-size 16K"
SRC="$T/tars" submit "$T/wds"
wait_merge
[ "$merge_state" = COMPLETED ] ||
    fail "the merge job of the tars ended $merge_state (array: $(state "$array" | tr '\n' ' '))"
shardcheck --deep --source "$T/tars" "$T/wds" >"$T/check" 2>&1 || {
    cat "$T/check" >&2; fail "shardcheck --deep --source refused the merged tars"; }
shardify --quiet $OPTIONS "$T/tars" "$T/wds-single"
same_as_single "$T/wds-single" "$T/wds" 200
[ "$(ls "$T/wds"/index-*-of-4.jsonl | wc -l)" -eq 4 ] || fail "the merge did not keep the parts' indexes"

stop_daemons
echo "PASS"
