#!/bin/sh
# submit.sh - convert SHARDKIT_SRC into SHARDKIT_DST on a Slurm cluster:
# a job array of SHARDKIT_PARTS tasks (shardify-part.sbatch), then the merge
# (shardify-merge.sbatch), which waits for every task to succeed
# (--dependency=afterok).  Prints the two job ids: "ARRAY MERGE".
#
#   SHARDKIT_SRC=/shared/raw SHARDKIT_DST=/shared/shards \
#   SHARDKIT_OPTIONS="--size 256" SHARDKIT_PARTS=16 examples/slurm/submit.sh
#
# SHARDKIT_CPUS is the CPUs of each part (default 1: shardify-part.sbatch);
# SHARDKIT_LOGS is where the jobs' output goes (default: the current
# directory); SBATCH_PARTITION, SBATCH_ACCOUNT ... are read by sbatch itself.
set -eu
: "${SHARDKIT_SRC:?SHARDKIT_SRC: the source directory}"
: "${SHARDKIT_DST:?SHARDKIT_DST: the dataset directory}"
parts=${SHARDKIT_PARTS:-4}
logs=${SHARDKIT_LOGS:-$PWD}
here=$(cd "$(dirname "$0")" && pwd)
export SHARDKIT_SRC SHARDKIT_DST

# --parsable prints "JOBID" or "JOBID;CLUSTER"
array=$(sbatch --parsable --array="0-$((parts - 1))" ${SHARDKIT_CPUS:+--cpus-per-task=$SHARDKIT_CPUS} \
    --output="$logs/shardify-part-%A_%a.out" \
    "$here/shardify-part.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$logs/shardify-merge-%j.out" "$here/shardify-merge.sbatch")
merge=${merge%%;*}
echo "$array $merge"
