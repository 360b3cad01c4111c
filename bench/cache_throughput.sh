#!/bin/sh
# cache_throughput.sh - the node-local shard cache (--cache-dir) against
# reading the same dataset from local disk and remotely without it.
#
#   bench/cache_throughput.sh BUILD [RUNS]
#
# On the sample dataset (SHARDKIT_DATASET, default ../shared/datasets/
# imagenet-sample beside the checkout) at --size 256, shards of CODEC (default
# raw, written with --zstd-level -100; or jpeg) and SHARD_SIZE (default 8M:
# several shards),
# served by nginx and s3rver on loopback (STORES, default "http s3"), at a
# simulated round trip of RTT ms (default 10), THREADS loader threads.
# Each run, interleaved, for each store:
#   local     shardbench shards on the local directory (the rate to reach)
#   remote    the URL without a cache: epoch 1 is the rate to keep
#   cached    the URL with an empty cache: epoch 1 fills it, epochs 2.. read it
#   half      a cache limited to half the dataset, one process, the default
#             plan (shuffle buffer 1024) and a shard-ordered one (buffer 16)
#   procs-keep  one process per epoch (a job restarted each epoch, seed = the
#   procs-lru   epoch) on a half-size cache: the shards the epoch has read
#               evicted first, never one it has yet to read (the default), or
#               any, least recently read first (SHARDKIT_CACHE_EVICT=lru)
#   two       two processes at once on an empty cache: shard bytes the server
#             sent (its access log; nginx only) against one process's
# EPOCHS epochs (default 4).  Markdown goes to stdout; the JSON of every run
# stays in WORK (default a new temporary directory, kept).
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/

BUILD=${1:?usage: bench/cache_throughput.sh BUILD [RUNS]}
RUNS=${2:-${RUNS:-3}}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
SIZE=${SIZE:-256}
SHARD_SIZE=${SHARD_SIZE:-8M}
EPOCHS=${EPOCHS:-4}
RTT=${RTT:-10}
STORES=${STORES:-http s3}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/shardkit-cache-bench.XXXXXX")}
THREADS=${THREADS:-$("$PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))')}
BUCKET=shardkit-bench
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

[ -d "$DATASET" ] || { echo "cache_throughput.sh: no dataset at '$DATASET'" >&2; exit 2; }
mkdir -p "$WORK/json"
log() { echo "cache_throughput: $*" >&2; }

. "$top/bench/stores_lib.sh"

CODEC=${CODEC:-raw}
RAW_OPTS="--size $SIZE --codec $CODEC --shard-size $SHARD_SIZE --quiet"
[ "$CODEC" = raw ] && RAW_OPTS="$RAW_OPTS --zstd-level -100"
shardify_local $RAW_OPTS
BYTES=$("$PYTHON" -c 'import json,sys; print(sum(s["bytes"] for s in json.load(open(sys.argv[1]))["shards"]))' \
    "$WORK/raw/manifest.json")
HALF=$((BYTES / 2))
U=$("$top/bench/http_server.sh" start "$HTTP" raw="$WORK/raw")
log "nginx at $U"
case " $STORES " in *" s3 "*)
    start_s3 "$BUCKET"
    shardify_s3 "$BUCKET" $RAW_OPTS
    ;;
esac
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

location() { [ "$1" = http ] && echo "$U/raw" || echo "s3://$BUCKET/raw"; }
# bench NAME I ARGS...: shardbench shards ARGS --json into json/NAME.I.json
bench() {
    b_name=$1; b_n=$2; shift 2
    log "$b_name (run $b_n of $RUNS)"
    "$BIN/shardbench" shards "$@" --threads "$THREADS" --epochs "$EPOCHS" --json \
        >"$WORK/json/$b_name.$b_n.json"
}

"$BIN/shardbench" shards "$WORK/raw" --threads "$THREADS" --epochs 1 >/dev/null  # page cache
i=1
while [ $i -le "$RUNS" ]; do
    bench local $i "$WORK/raw"
    for st in $STORES; do
        L=$(location "$st")
        bench "$st-remote" $i "$L" --rtt "$RTT"
        rm -rf "$WORK/cache"
        bench "$st-cached" $i "$L" --rtt "$RTT" --cache-dir "$WORK/cache"
        for buffer in 1024 16; do
            rm -rf "$WORK/cache"
            bench "$st-half-b$buffer" $i "$L" --rtt "$RTT" --cache-dir "$WORK/cache" \
                --cache-limit "$HALF" --shuffle-buffer $buffer
        done
        for policy in keep lru; do
            rm -rf "$WORK/cache"
            e=1
            while [ $e -le "$EPOCHS" ]; do
                log "$st-procs-$policy epoch $e (run $i of $RUNS)"
                SHARDKIT_CACHE_EVICT=$policy "$BIN/shardbench" shards "$L" --rtt "$RTT" \
                    --threads "$THREADS" --epochs 1 --seed $e --shuffle-buffer 16 \
                    --cache-dir "$WORK/cache" --cache-limit "$HALF" --json \
                    >"$WORK/json/$st-procs-$policy-e$e.$i.json"
                e=$((e + 1))
            done
        done
    done
    rm -rf "$WORK/cache"
    : >"$HTTP/access.log"
    log "two processes (run $i of $RUNS)"
    for p in 1 2; do
        "$BIN/shardbench" shards "$U/raw" --rtt "$RTT" --threads "$THREADS" --epochs 1 \
            --cache-dir "$WORK/cache" --json >"$WORK/json/two-p$p.$i.json" &
    done
    wait
    grep ' GET "/raw/shard-' "$HTTP/access.log" | awk '{n += $NF} END {print n + 0}' \
        >"$WORK/json/two-bytes.$i"
    i=$((i + 1))
done
stop_servers
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
rm -rf "$WORK/cache"

"$PYTHON" - "$WORK/json" "$RUNS" "$THREADS" "$SIZE" "$EPOCHS" "$RTT" "$STORES" "$BYTES" \
    "$WORK/raw/manifest.json" "$load_before" "$load_after" "$CODEC" <<'EOF'
import glob, json, os, statistics, sys

where, runs, threads, size, epochs, rtt, stores, total, manifest, load0, load1, codec = \
    sys.argv[1:13]
total, epochs = int(total), int(epochs)
shards = len(json.load(open(manifest))["shards"])

def load(name):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(where, name + ".*.json")))]

def med(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")

local = load("local")
local_rate = med(r["steady"]["samples_per_second"] for r in local)
print(f"Medians of {runs} runs, {epochs} epochs each, --size {size} {codec} shards, "
      f"{shards} shards of {total / shards / 2**20:.0f} MiB ({total / 2**20:.0f} MiB), "
      f"{threads} loader threads, rtt {rtt} ms simulated; load average before {load0}, after "
      f"{load1}.  Local directory, steady: {local_rate:.0f} samples/s.\n")
print("| store | configuration | epoch 1 samples/s | epochs 2.. samples/s | "
      "epoch 1 vs no cache | epochs 2.. vs local | MiB received per epoch (1 / 2..) | "
      "epoch 1 CPU ms per sample |")
print("|---|---|---:|---:|---:|---:|---|---:|")
names = {"remote": "no cache", "cached": "cache, no limit",
         "half-b1024": "limit 1/2, shuffle buffer 1024", "half-b16": "limit 1/2, shuffle buffer 16"}
for st in stores.split():
    remote = load(f"{st}-remote")
    r1 = med(r["first_epoch"]["samples_per_second"] for r in remote)
    for conf, label in names.items():
        rs = load(f"{st}-{conf}")
        if not rs:
            continue
        e1 = med(r["first_epoch"]["samples_per_second"] for r in rs)
        e2 = med(r["steady"]["samples_per_second"] for r in rs)
        # bytes received from the server (the egress), cache or not
        f1 = med(r["first_epoch"]["bytes_read"] for r in rs) / 2**20
        f2 = med(r["steady"]["bytes_read"] for r in rs) / (epochs - 1) / 2**20
        cpu = med(r["first_epoch"]["cpu_seconds_per_sample"] for r in rs) * 1e3
        print(f"| {st} | {label} | {e1:.0f} | {e2:.0f} | {100 * e1 / r1:.0f}% | "
              f"{100 * e2 / local_rate:.0f}% | {f1:.0f} / {f2:.0f} | {cpu:.3f} |")
print(f"\nOne process per epoch (seed = epoch, shuffle buffer 16), limit 1/2: epochs 2..{epochs}, "
      f"per epoch\n")
print("| store | the dataset's own cached shards | samples/s | MiB received | "
      "hits / misses / evictions / uncached |")
print("|---|---|---:|---:|---|")
for st in stores.split():
    for policy, label in (("keep", "kept until read (default)"), ("lru", "replaced, LRU")):
        per = []
        for e in range(2, epochs + 1):
            per += [r["first_epoch"] for r in load(f"{st}-procs-{policy}-e{e}")]
        if not per:
            continue
        c = lambda k: med(p["cache"][k] for p in per)
        print(f"| {st} | {label} | {med(p['samples_per_second'] for p in per):.0f} | "
              f"{med(p['bytes_read'] for p in per) / 2**20:.0f} | {c('hits'):.0f} / "
              f"{c('misses'):.0f} / {c('evictions'):.0f} / {c('skipped'):.0f} |")
two = [int(open(p).read()) for p in sorted(glob.glob(os.path.join(where, "two-bytes.*")))]
one = med(r["first_epoch"]["bytes_read"] for r in load("http-remote"))
if two:
    print(f"\nTwo processes at once on an empty cache (nginx): the server sent "
          f"{med(two) / 2**20:.1f} MiB of shard bytes (runs: "
          f"{', '.join(f'{b / 2**20:.1f}' for b in two)}); one process's first epoch without a "
          f"cache receives {one / 2**20:.1f} MiB (the dataset is {total / 2**20:.1f} MiB; each "
          f"shard's opening suffix request overlaps its last window).")
EOF
