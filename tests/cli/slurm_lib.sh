# slurm_lib.sh - a one-node Slurm cluster on localhost for a test or a
# benchmark (sourced): munged, slurmctld and slurmd of Debian's munge and
# slurm-wlm, on free localhost ports, every file in the directory $C.  The
# caller defines fail MESSAGE (its logs are `slurm_logs`), PYTHON and C,
# calls slurm_start, and stop_daemons when done (also from its EXIT trap:
# the daemons are stopped by pid; files they made as root go with
# `$AS_ROOT rm -rf "$C"`).  SLURM_CONF is exported for sbatch and scontrol.

# Steps of 0.2 s: the daemons must be up within these.
START_STEPS=${START_STEPS:-150}

# The daemons run as root (slurmd starts each job as its user): the caller
# runs as root, or starts them through password-less sudo (the jobs then run
# as the caller's user).  A sudo started in the background relays the
# signals this user sends it to the daemon.
AS_ROOT=""
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

slurm_logs() {
    for f in "$C"/*.log "$C"/*.out; do
        [ -f "$f" ] && { echo "==== $f" >&2; $AS_ROOT tail -n 40 "$f" >&2; }
    done
    return 0
}

# slurm_start CPUS: the cluster, its node offering CPUS CPUs (default: nproc)
slurm_start() {
    for p in munged slurmctld slurmd sbatch scontrol; do
        command -v "$p" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin"
        command -v "$p" >/dev/null 2>&1 ||
            fail "$p is not installed (scripts/deps.sh installs munge and slurm-wlm)"
    done
    if [ "$(id -u)" -ne 0 ]; then
        sudo -n true 2>/dev/null ||
            fail "the Slurm daemons run as root: run as root or with password-less sudo"
        AS_ROOT="sudo -n"
    fi
    mkdir -p "$C/state" "$C/spool"
    # munged wants its socket's directories searchable by all (not listable)
    chmod 711 "$(dirname "$C")" "$C"
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
print(" ".join(str(x.getsockname()[1]) for x in s))') "${1:-$(nproc)}"
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=$3 RealMemory=256 State=UNKNOWN
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
}

# slurm_state JOB: the job's state (of every task of an array: one per line)
slurm_state() { scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
