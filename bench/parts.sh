#!/bin/sh
# parts.sh BUILD - conversion in parts against one run, on this machine:
# one `shardify --threads P` run against P parts run at once
# (`shardify --part I/P --threads 1` each: the same total threads), then
# `shardify merge`; the two alternate, RUNS times (default 5), page cache
# warm (every side reads the source once before timing).  Prints a Markdown
# table of medians: wall seconds of each side, the merge alone, and the
# ratios (parts + merge) / one run and merge / one run.  The merge is timed
# as a process (start-up, loading the libraries, included) and as it reports
# itself (--json "seconds": reading the parts, the index, links, fsyncs).
# Needs the sample dataset (SHARDKIT_DATASET, default ../shared/datasets/
# imagenet-sample beside the checkout).  PARTS (default 4) and SIZE
# (default 256) set the split and --size.
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BUILD=${1:?usage: bench/parts.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
RUNS=${RUNS:-5}
PARTS=${PARTS:-4}
SIZE=${SIZE:-256}
OPTS="--size $SIZE --shard-size 16M --quiet"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -d "$DATASET" ] || { echo "bench: no dataset at '$DATASET'" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
cat "$DATASET"/* >/dev/null 2>&1 || true   # warm: both sides read from the page cache

for i in $(seq "$RUNS"); do
    rm -rf "$tmp/one" "$tmp/parts"
    t0=$(now)
    "$BIN/shardify" $OPTS --threads "$PARTS" "$DATASET" "$tmp/one"
    t1=$(now)
    pids=""
    for p in $(seq 0 $((PARTS - 1))); do
        "$BIN/shardify" $OPTS --threads 1 --part "$p/$PARTS" "$DATASET" "$tmp/parts" &
        pids="$pids $!"
    done
    for pid in $pids; do
        wait "$pid" || { echo "bench: a part failed" >&2; exit 1; }
    done
    t2=$(now)
    "$BIN/shardify" merge --quiet --json "$tmp/parts" >"$tmp/merge.json"
    t3=$(now)
    inside=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' \
        "$tmp/merge.json")
    echo "$t0 $t1 $t2 $t3 $inside" >>"$tmp/times"
done
"$PYTHON" - "$tmp/times" "$PARTS" "$RUNS" "$(nproc)" "$(cat /proc/loadavg)" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
parts, runs, cpus, load = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
one = [r[1] - r[0] for r in rows]
conv = [r[2] - r[1] for r in rows]
merge = [r[3] - r[2] for r in rows]
inside = [r[4] for r in rows]
total = [c + m for c, m in zip(conv, merge)]
ratio = [t / o for t, o in zip(total, one)]
mratio = [m / o for m, o in zip(merge, one)]
med = statistics.median
iratio = [m / o for m, o in zip(inside, one)]
print(f"| {cpus} CPUs, load {load.split()[0]} | one run, --threads {parts} | {parts} parts at once, --threads 1 each | merge process (its own time) | (parts + merge) / one run | merge / one run (its own time) |")
print("|---|---|---|---|---|---|")
print(f"| median of {runs} | {med(one):.2f} s | {med(conv):.2f} s | {med(merge)*1000:.1f} ms ({med(inside)*1000:.1f} ms) | "
      f"{med(ratio):.3f} | {med(mratio)*100:.2f} % ({med(iratio)*100:.2f} %) |")
print(f"| range | {min(one):.2f}-{max(one):.2f} s | {min(conv):.2f}-{max(conv):.2f} s | "
      f"{min(merge)*1000:.1f}-{max(merge)*1000:.1f} ms ({min(inside)*1000:.1f}-{max(inside)*1000:.1f} ms) | "
      f"{min(ratio):.3f}-{max(ratio):.3f} | {min(mratio)*100:.2f}-{max(mratio)*100:.2f} % "
      f"({min(iratio)*100:.2f}-{max(iratio)*100:.2f} %) |")
PY
