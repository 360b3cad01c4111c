#!/bin/sh
# incremental.sh BUILD - an incremental nightly run against a full one.
#
# A source of COUNT images (default 20000) is made from the sample dataset
# by resizing and re-encoding copies (bench/make_variants.py: 1000 classes of
# the ImageNet sample, every copy with bytes of its own), under a temporary
# directory.  PREV is a full run over it; then CHANGED percent (default 1) of
# the files are re-encoded.  Then RUNS (default 3) alternating pairs, with the
# same options and threads: a full run, and `shardify --incremental PREV`.
# Both read the same warm source (the page cache holds it: the incremental
# run must read and hash every file, so that is the fair comparison).  The
# ceilings: reading the source once (cat, one thread), and writing the
# output's bytes once (the previous shards, cat into one file and fsync'd):
# an incremental run overlaps the two (their sum is them one after the
# other).  Every incremental output is checked byte for byte against the
# full one.
#
# Prints a Markdown table: median seconds of each, their ratio, and where the
# time went (shardify --json "timing": wall seconds of scan, convert, publish
# and of writing shards inside convert; thread-seconds of read, hash, decode,
# copy).
#
#   COUNT=20000 CHANGED=1 RUNS=3 SIZE=256 bench/incremental.sh build
#   WORK=DIR  keep the generated source in DIR and reuse it on the next run
#             (it is made again when COUNT differs)
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BUILD=${1:?usage: bench/incremental.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
COUNT=${COUNT:-20000}
CHANGED=${CHANGED:-1}
RUNS=${RUNS:-3}
SIZE=${SIZE:-256}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -d "$DATASET" ] || { echo "bench: no dataset at '$DATASET'" >&2; exit 2; }
if [ -n "${WORK:-}" ]; then
    work=$WORK
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-incremental.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
opts="--size $SIZE --quiet --json"

if [ "$(cat "$work/made" 2>/dev/null)" != "$COUNT $CHANGED" ]; then
    rm -rf "$work/src" "$work/prev" "$work/made"
    echo "making $COUNT images in $work/src ..." >&2
    "$PYTHON" "$top/bench/make_variants.py" "$DATASET" "$work/src" "$COUNT" >&2
    "$BIN/shardify" $opts "$work/src" "$work/prev" >"$work/prev.json"
    "$PYTHON" "$top/bench/make_variants.py" --change "$CHANGED" "$work/src" >&2
    echo "$COUNT $CHANGED" >"$work/made"
fi
bytes=$(du -sb "$work/src" | cut -f1)

i=1
while [ "$i" -le "$RUNS" ]; do
    s0=$(date +%s.%N)
    find "$work/src" -type f -print0 | xargs -0 cat >/dev/null
    s1=$(date +%s.%N)
    echo "$s0 $s1" | awk '{ print $2 - $1 }' >"$work/read.$i"
    rm -f "$work/ceiling"
    s0=$(date +%s.%N)
    cat "$work/prev"/*.shard >"$work/ceiling"
    sync "$work/ceiling"
    s1=$(date +%s.%N)
    rm -f "$work/ceiling"
    echo "$s0 $s1" | awk '{ print $2 - $1 }' >"$work/write.$i"
    "$BIN/shardify" $opts --overwrite "$work/src" "$work/full" >"$work/full.$i.json"
    "$BIN/shardify" $opts --overwrite --incremental "$work/prev" "$work/src" "$work/inc" \
        >"$work/inc.$i.json"
    for f in $(cd "$work/full" && ls | grep -v -e '^run.json$' -e '^manifest.json$'); do
        cmp -s "$work/full/$f" "$work/inc/$f" || { echo "bench: $f differs" >&2; exit 1; }
    done
    i=$((i + 1))
done

"$PYTHON" - "$work" "$RUNS" "$bytes" <<'PY'
import json, statistics, sys
work, runs, src_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(kind):
    return [json.load(open(f"{work}/{kind}.{i}.json")) for i in range(1, runs + 1)]
full, inc = load("full"), load("inc")
read = statistics.median(float(open(f"{work}/read.{i}").read()) for i in range(1, runs + 1))
write = statistics.median(float(open(f"{work}/write.{i}").read()) for i in range(1, runs + 1))
med = lambda rows, f: statistics.median(f(r) for r in rows)
tf, ti = med(full, lambda r: r["seconds"]), med(inc, lambda r: r["seconds"])
l = inc[-1]["lineage"]
print(f"source: {full[0]['candidates']} files, {src_bytes / 1e9:.2f} GB; "
      f"threads {full[0]['threads']}; {runs} alternating runs, medians")
print(f"incremental: {l['added']} added, {l['changed']} changed, {l['removed']} removed, "
      f"{l['reused']} records reused, {l['reconverted']} reconverted")
print()
print("| run | seconds | ratio | scan | convert | (write) | publish | read | hash | decode | copy |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, rows, t in (("full", full, tf), ("incremental", inc, ti)):
    c = [med(rows, lambda r, k=k: r["timing"][k])
         for k in ("scan", "convert", "write", "publish", "read", "hash", "decode", "copy")]
    print(f"| {name} | {t:.2f} | {t / tf:.3f} | " + " | ".join(f"{x:.2f}" for x in c) + " |")
for name, t in (("ceiling: read the source once (cat)", read),
                ("ceiling: write the output once (cat shards, fsync)", write),
                ("ceiling: both", read + write)):
    print(f"| {name} | {t:.2f} | {t / tf:.3f} | | | | | | | | |")
print()
print("scan, convert, publish: wall seconds of the phases; (write): wall seconds inside convert "
      "appending records to shards, fsync included; read, hash, decode, copy: thread-seconds "
      "summed over the workers")
PY
