#!/bin/sh
# scale.sh - the toolchain at scale: an img2dataset-style folder of N
# samples converted in parts on a one-node Slurm cluster, merged, verified
# in parts, read for one epoch by two ranks, and updated with one new tar.
#
#   bench/scale.sh [--parts P] [--keep] BUILD N WORK
#
# BUILD is a build directory (make; make python for the Loader), N the
# samples (10000 a tar: N/10000 tars, each sample a 32x24 JPEG and its
# caption, written by build/bench/gen_archives), WORK a directory with room
# for them (about 2.6 KB a sample of tars and 1.1 KB of shards, twice for
# the incremental run's dataset).  Each stage runs under GNU time; the table
# gives its wall and CPU seconds and its peak RSS (of the largest process of
# the stage: a part, a check part, a rank), and the dataset's bytes per
# sample.  The raw results go to WORK/scale-N.json.  Memory that grows with
# the dataset shows as the difference of two runs' peaks (BENCHMARKS.md §18: 1M
# and 10M samples).  Needs munge and slurm-wlm (scripts/deps.sh test), and
# runs the daemons as root as test_slurm does.
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/

parts=4
keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --parts) parts=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) break ;;
    esac
done
[ $# -eq 3 ] || { echo "usage: bench/scale.sh [--parts P] [--keep] BUILD N WORK" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
N=$2
mkdir -p "$3"
W=$(cd "$3" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
BIN=$BUILD/bin
OPTIONS="--archives --labels none --field caption=text,from=.txt --size 32"
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "scale: needs GNU time (/usr/bin/time; scripts/deps.sh bench)" >&2; exit 1; }

die() { echo "scale: $*" >&2; exit 1; }
say() { echo "scale: [$(date +%T)] $*" >&2; }
fail() { slurm_logs; die "$*"; }

SRC=$W/src
DST=$W/dst
R=$W/times
C=$W/cluster
rm -rf "$R" "$C" "$DST" "$W/dst2" "$W/jobs"
mkdir -p "$R" "$W/jobs"
. "$top/tests/cli/slurm_lib.sh"
trap 'stop_daemons; $AS_ROOT rm -rf "$C"' EXIT

# timed STAGE NAME CMD...: run CMD under GNU time into $R/STAGE.NAME
timed() {
    stage=$1 name=$2
    shift 2
    "$TIME" -f "%e %U %S %M" -o "$R/$stage.$name" "$@"
}

say "$N samples in tars of 10000 (gen_archives)"
# (generated once for WORK and N: the marker is beside SRC, not in it)
if [ ! -f "$W/.src-complete-$N" ]; then
    rm -rf "$SRC" "$W"/.src-complete-*
    mkdir -p "$SRC"
    timed generate all "$BUILD/bench/gen_archives" --per-tar 10000 "$SRC" "$N"
    touch "$W/.src-complete-$N"
fi

say "$parts parts on a one-node Slurm cluster (examples/slurm/submit.sh, a part per CPU)"
slurm_start
# the example's jobs run $SHARDKIT_BIN/shardify: here one that times itself
mkdir -p "$W/timed-bin"
cat >"$W/timed-bin/shardify" <<EOF
#!/bin/sh
exec $TIME -f "%e %U %S %M" -o "$R/convert.\${SLURM_ARRAY_TASK_ID:-x}" "$BIN/shardify" "\$@"
EOF
chmod +x "$W/timed-bin/shardify"
t0=$(date +%s.%N)
ids=$(cd "$W/jobs" && env SHARDKIT_SRC="$SRC" SHARDKIT_DST="$DST" SHARDKIT_PARTS="$parts" \
    SHARDKIT_OPTIONS="$OPTIONS --quiet" SHARDKIT_BIN="$W/timed-bin" SHARDKIT_LOGS="$W/jobs" \
    "$top/examples/slurm/submit.sh") || fail "submit.sh failed"
array=${ids% *}
merge=${ids#* }
while :; do
    st=$(slurm_state "$merge")
    case "$st" in PENDING|RUNNING|CONFIGURING|COMPLETING|"") sleep 1 ;; *) break ;; esac
done
t1=$(date +%s.%N)
[ "$st" = COMPLETED ] || { tail -n 20 "$W"/jobs/*.out >&2; fail "the merge job ended $st"; }
echo "$t0 $t1" >"$R/convert.wall"
stop_daemons
$AS_ROOT rm -rf "$C"

say "the merge again, timed (the merge job published it; this one finds it in place)"
timed merge all "$BIN/shardify" merge --quiet "$DST"

say "shardcheck: whole, and in $parts parts and their combination"
timed check whole "$BIN/shardcheck" "$DST" >"$W/check.out" 2>&1 || die "shardcheck: $(tail -n 5 "$W/check.out")"
if "$BIN/shardcheck" --help 2>&1 | grep -q -- '--part'; then
    t0=$(date +%s.%N)
    i=0
    while [ $i -lt "$parts" ]; do # two at a time, as two CPUs run them
        timed checkpart "$i" "$BIN/shardcheck" --part "$i/$parts" --result "$W/check-$i.json" "$DST" \
            >"$W/checkpart-$i.out" 2>&1 &
        j=$((i + 1))
        [ $j -ge "$parts" ] || timed checkpart "$j" "$BIN/shardcheck" --part "$j/$parts" \
            --result "$W/check-$j.json" "$DST" >"$W/checkpart-$j.out" 2>&1 &
        wait
        i=$((i + 2))
    done
    timed checkcombine all "$BIN/shardcheck" --combine "$W"/check-*.json "$DST" >"$W/combine.out" 2>&1 ||
        die "shardcheck --combine: $(tail -n 5 "$W/combine.out")"
    echo "$t0 $(date +%s.%N)" >"$R/checkpart.wall"
fi

say "one Loader epoch on 2 ranks (raw pixels in batches of 256, 1 thread each)"
cat >"$W/epoch.py" <<'EOF'
import sys, shardkit
ds = shardkit.Dataset(sys.argv[1])
rank = int(sys.argv[2])
loader = shardkit.Loader(ds, 256, rank=rank, world_size=2, threads=1, seed=1, remainder="pad")
n = sum(len(b.labels) for b in loader)
print(n)
EOF
t0=$(date +%s.%N)
for rank in 0 1; do
    PYTHONPATH="$BUILD/python" timed epoch "$rank" "$PYTHON" "$W/epoch.py" "$DST" "$rank" \
        >"$W/epoch-$rank.out" 2>&1 &
done
wait
echo "$t0 $(date +%s.%N)" >"$R/epoch.wall"
seen=$(($(cat "$W/epoch-0.out") + $(cat "$W/epoch-1.out"))) || die "the epoch: $(cat "$W"/epoch-*.out)"

say "one new tar, then an incremental run against the merged dataset"
last=$(ls "$SRC" | grep -c '\.tar$')
"$BUILD/bench/gen_archives" --per-tar 10000 --first-tar "$last" --seed 2 "$SRC" 10000
timed incremental all "$BIN/shardify" $OPTIONS --quiet --json --incremental "$DST" "$SRC" "$W/dst2" \
    >"$W/incremental.json"
rm -f "$SRC/$(printf '%05d' "$last").tar" # the folder as it was, for a run again

"$PYTHON" - "$R" "$DST" "$W/dst2" "$N" "$seen" "$parts" "$W/scale-$N.json" <<'EOF'
import glob, json, os, sys
R, dst, dst2, n, seen, parts, out = sys.argv[1:]
n, seen, parts = int(n), int(seen), int(parts)
def times(stage):
    rows = []
    for f in sorted(glob.glob(os.path.join(R, stage + ".*"))):
        if f.endswith(".wall"):
            continue
        e, u, s, m = open(f).read().split()[-4:]
        rows.append((float(e), float(u) + float(s), int(m)))
    return rows
def wall(stage, rows):
    w = os.path.join(R, stage + ".wall")
    if os.path.exists(w):
        a, b = map(float, open(w).read().split())
        return b - a
    return max(r[0] for r in rows)
m = json.load(open(os.path.join(dst, "manifest.json")))
assert m["counts"]["samples"] == n, m["counts"]
assert n <= seen <= n + 1, "the epoch saw %d of %d" % (seen, n)  # pad: ranks of ceil(n/2)
lineage = json.load(open(os.path.join(dst2, "manifest.json")))["lineage"]
assert lineage["added"] == 10000 and lineage["reused"] == n, lineage
result = {"samples": n, "parts": parts, "stages": {}, "bytes_per_sample": {}, "lineage": lineage}
print("| stage | wall s | CPU s | CPU us/sample | peak RSS MB (largest process) |")
print("|---|---|---|---|---|")
for stage, label in [("generate", "generate the tars"), ("convert", "convert, %d parts on Slurm (+ merge job)" % parts),
                     ("merge", "merge"), ("check", "shardcheck"), ("checkpart", "shardcheck, %d parts" % parts),
                     ("checkcombine", "shardcheck --combine"), ("epoch", "one Loader epoch, 2 ranks"),
                     ("incremental", "incremental, 1 new tar")]:
    rows = times(stage)
    if not rows:
        continue
    w, cpu, rss = wall(stage, rows), sum(r[1] for r in rows), max(r[2] for r in rows)
    result["stages"][stage] = {"wall": w, "cpu": cpu, "peak_rss_kib": rss, "processes": len(rows)}
    print("| %s | %.1f | %.1f | %.2f | %.1f |" % (label, w, cpu, cpu * 1e6 / n, rss / 1024))
sizes = {"shards": sum(s["bytes"] for s in m["shards"]),
         "index": sum(x["bytes"] for x in m.get("indexes", [m.get("index")])),
         "key tables": sum(x["keys"]["bytes"] for x in m.get("indexes", [m.get("index")])),
         "manifest.json": os.path.getsize(os.path.join(dst, "manifest.json")),
         "archives.jsonl": m["source"]["archives"]["bytes"]}
print()
print("| file | bytes | bytes/sample |")
print("|---|---|---|")
for k, v in sizes.items():
    result["bytes_per_sample"][k] = v / n
    print("| %s | %d | %.2f |" % (k, v, v / n))
print()
print("incremental:", lineage)
json.dump(result, open(out, "w"), indent=2)
EOF
[ "$keep" -eq 1 ] || rm -rf "$W/dst2"
