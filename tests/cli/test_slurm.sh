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

# Steps of 0.2 s: the daemons and the jobs must be done within these.
START_STEPS=150
JOB_STEPS=1500

for p in munged slurmctld slurmd sbatch scontrol; do
    command -v "$p" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin"
    command -v "$p" >/dev/null 2>&1 || die "$p is not installed (scripts/deps.sh installs munge and slurm-wlm)"
done
# The daemons run as root (slurmd starts each job as its user): the test
# runs as root, or starts them through password-less sudo (the jobs then run
# as the test's user).  A sudo started in the background relays the signals
# this user sends it to the daemon.
AS_ROOT=""
if [ "$(id -u)" -ne 0 ]; then
    sudo -n true 2>/dev/null ||
        die "the Slurm daemons run as root: run the test as root or with password-less sudo"
    AS_ROOT="sudo -n"
fi

C="$T/cluster"
mkdir -p "$C/state" "$C/spool"
# munged wants its socket's directories searchable by all (not listable)
chmod 711 "$T" "$C"
daemons=""
stop_daemons() {
    for pid in $daemons; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $daemons; do
        wait "$pid" 2>/dev/null || true
    done
    daemons=""
}
# files the daemons made as root go with them
on_exit 'stop_daemons; [ -n "${KEEP_T:-}" ] || $AS_ROOT rm -rf "$C"'

logs() {
    for f in "$C"/*.log "$C"/*.out "$T"/jobs/*.out; do
        [ -f "$f" ] && { echo "==== $f" >&2; $AS_ROOT tail -n 40 "$f" >&2; }
    done
    return 0
}
fail() { logs; die "$*"; }

say "a one-node Slurm cluster on localhost"
dd if=/dev/urandom of="$C/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$C/munge.key"
[ -z "$AS_ROOT" ] || $AS_ROOT chown 0:0 "$C/munge.key"   # munged reads only its own key
$AS_ROOT munged --foreground --socket="$C/munge.socket" --key-file="$C/munge.key" \
    --pid-file="$C/munged.pid" --log-file="$C/munged.log" --seed-file="$C/munged.seed" \
    >"$C/munged.out" 2>&1 &
daemons="$!"
i=0
until [ -S "$C/munge.socket" ]; do
    i=$((i + 1))
    [ $i -lt $START_STEPS ] || fail "munged did not start"
    sleep 0.2
done

set -- $("$PYTHON" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
host=$(hostname -s)
cat >"$C/slurm.conf" <<CONF
ClusterName=shardkit
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
AuthInfo=socket=$C/munge.socket
CredType=cred/munge
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd.pid
SlurmctldLogFile=$C/slurmctld.log
SlurmdLogFile=$C/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=1
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=256 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$C/slurm.conf"
# -f: sudo does not pass SLURM_CONF on
$AS_ROOT slurmctld -D -i -f "$C/slurm.conf" >"$C/slurmctld.out" 2>&1 &
daemons="$daemons $!"
$AS_ROOT slurmd -D -f "$C/slurm.conf" >"$C/slurmd.out" 2>&1 &
daemons="$daemons $!"
i=0
until sinfo -h -o '%T' 2>/dev/null | grep -qx idle; do
    i=$((i + 1))
    [ $i -lt $START_STEPS ] || fail "the cluster did not come up (sinfo: $(sinfo 2>&1 | tr '\n' ' '))"
    sleep 0.2
done

# submit DST [VAR=VALUE...]: run examples/slurm/submit.sh for $T/raw into DST
# (4 parts) with those settings; sets $array and $merge to the job ids
submit() {
    dst=$1
    shift
    ids=$(cd "$T/jobs" && env SHARDKIT_SRC="$T/raw" SHARDKIT_DST="$dst" SHARDKIT_PARTS=4 \
        SHARDKIT_OPTIONS="$OPTIONS" SHARDKIT_BIN="$SHARDKIT_BIN" SHARDKIT_LOGS="$T/jobs" "$@" \
        "$SHARDKIT_TOP/examples/slurm/submit.sh") || fail "submit.sh failed"
    array=${ids% *}
    merge=${ids#* }
    [ -n "$array" ] && [ -n "$merge" ] && [ "$array" != "$merge" ] || fail "submit.sh printed '$ids'"
}
# state JOB: the job's state (of every task of an array: one per line)
state() { scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
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

stop_daemons
echo "PASS"
