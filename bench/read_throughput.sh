#!/bin/sh
# read_throughput.sh - the read benchmark of `shardbench`: small files against
# shards, local and over HTTP, and the consumer's wait.
#
#   bench/read_throughput.sh BUILD [RUNS]
#
# On the sample dataset (SHARDKIT_DATASET, default ../shared/datasets/
# imagenet-sample beside the checkout) at --size 256, with the same loader
# threads on both sides (THREADS, default: the CPUs available):
#   1. shardify it twice, each codec at its default zstd level: --codec raw
#      (RAW_ZSTD_LEVEL=L gives it --zstd-level L instead) and --codec jpeg
#   2. warm cache, local disk: shardbench compare for raw and jpeg shards, and
#      the Pillow reference loader (bench/pillow_loader.py) doing the files job
#   3. cold: the same with --cold (page cache dropped before every epoch)
#   4. over HTTP from a real nginx on loopback (bench/http_server.sh), with a
#      simulated round trip (--rtt) of 0, 2 and 10 ms
#   5. a consumer that spends STEP_MS per batch of 64 - by default 25 ms, the
#      pace of a small model (ResNet-18 on one GPU: ~2,500 images/s), and 50 ms
#      (ResNet-50: ~1,300 images/s) - and the share of its time it waits for
#      input
#   6. the ceilings: decoding the jpeg shards' payloads from memory with the
#      same threads and nothing else (BUILD/bench/read_ceiling, which make
#      bench builds), and moving the raw shards' bytes from the same nginx with
#      curl alone (CONNECTIONS parallel range requests of 8 MiB to /dev/null,
#      default 8 as the reader) - the most any shard reader could deliver
#      here, and so the most a ratio could be
# Every configuration runs RUNS times (default 3) with EPOCHS epochs (default
# 3); the tables give medians of the steady epochs (epochs 2..) and the ratio
# shards/files.  Markdown goes to stdout; the raw JSON of every run stays in the
# work directory (WORK, default a new temporary directory, kept).
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/

BUILD=${1:?usage: bench/read_throughput.sh BUILD [RUNS]}
RUNS=${2:-3}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
SIZE=${SIZE:-256}
EPOCHS=${EPOCHS:-3}
STEP_MS=${STEP_MS:-25 50}
RAW_ZSTD_LEVEL=${RAW_ZSTD_LEVEL:-}
RTTS=${RTTS:-0 2 10}
CONNECTIONS=${CONNECTIONS:-8}
CEILING=$BUILD/bench/read_ceiling
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/shardkit-read-bench.XXXXXX")}
THREADS=${THREADS:-$("$PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))')}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

[ -d "$DATASET" ] || { echo "read_throughput.sh: no dataset at '$DATASET'" >&2; exit 2; }
[ -x "$CEILING" ] || { echo "read_throughput.sh: no $CEILING (make bench builds it)" >&2; exit 2; }
command -v curl >/dev/null || { echo "read_throughput.sh: curl is not installed" >&2; exit 2; }
mkdir -p "$WORK/json"
log() { echo "read_throughput: $*" >&2; }

for codec in raw jpeg; do
    if [ ! -f "$WORK/$codec/manifest.json" ]; then
        log "shardify --codec $codec --size $SIZE"
        set --
        [ "$codec" = raw ] && [ -n "$RAW_ZSTD_LEVEL" ] && set -- --zstd-level "$RAW_ZSTD_LEVEL"
        "$BIN/shardify" "$DATASET" "$WORK/$codec" --size "$SIZE" --codec "$codec" "$@" --quiet
    fi
done

# run NAME I ARGS...: run I of shardbench compare ARGS --json
run() {
    name=$1; n=$2; shift 2
    log "$name (run $n of $RUNS)"
    "$BIN/shardbench" compare "$@" --threads "$THREADS" --epochs "$EPOCHS" --json \
        >"$WORK/json/$name.$n.json"
}

HTTP=$WORK/http
trap '"$top/bench/http_server.sh" stop "$HTTP" >/dev/null 2>&1 || true' EXIT
U=$("$top/bench/http_server.sh" start "$HTTP" src="$DATASET" raw="$WORK/raw" jpeg="$WORK/jpeg")
log "nginx at $U"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# one unmeasured pass warms the page cache for both sides
for codec in raw jpeg; do
    "$BIN/shardbench" compare "$DATASET" "$WORK/$codec" --threads "$THREADS" --epochs 1 \
        --json >/dev/null
done
# transfer NAME I URL DIR: fetch every shard of DIR from URL with curl alone
# (bench/curl_transfer.py: 8 MiB ranges over CONNECTIONS connections, to
# /dev/null); JSON of bytes, samples and seconds to WORK/json/NAME.I.json.
transfer() {
    log "$1 (run $2 of $RUNS)"
    "$PYTHON" "$top/bench/curl_transfer.py" "$3" "$4" --connections "$CONNECTIONS" \
        >"$WORK/json/$1.$2.json"
}

# Runs are interleaved (run 1 of everything, then run 2, ...) so that a change
# in the machine's load spreads over every configuration instead of biasing one.
i=1
while [ $i -le "$RUNS" ]; do
    for codec in raw jpeg; do                      # 2. warm, local
        run "local-warm-$codec" $i "$DATASET" "$WORK/$codec"
    done
    log "pillow loader (run $i of $RUNS)"
    "$PYTHON" "$top/bench/pillow_loader.py" "$DATASET" --size "$SIZE" --procs "$THREADS" \
        --epochs "$EPOCHS" >"$WORK/json/pillow.$i.json"
    for codec in raw jpeg; do                      # 3. cold
        run "local-cold-$codec" $i "$DATASET" "$WORK/$codec" --cold
    done
    for rtt in $RTTS; do                           # 4. HTTP
        for codec in raw jpeg; do
            run "http-rtt$rtt-$codec" $i "$U/src" "$U/$codec" --rtt "$rtt"
        done
    done
    for step in $STEP_MS; do                       # 5. the consumer's wait
        for codec in raw jpeg; do
            run "step$step-$codec" $i "$DATASET" "$WORK/$codec" --step-ms "$step"
        done
    done
    transfer "ceiling-http-raw" $i "$U/raw" "$WORK/raw"   # 6. ceilings
    log "read_ceiling jpeg (run $i of $RUNS)"
    "$CEILING" --threads "$THREADS" --json "$WORK/jpeg" >"$WORK/json/ceiling-decode-jpeg.$i.json"
    i=$((i + 1))
done
"$top/bench/http_server.sh" stop "$HTTP"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')

# ---- the tables ------------------------------------------------------------------
"$PYTHON" - "$WORK/json" "$RUNS" "$THREADS" "$SIZE" "$EPOCHS" "$STEP_MS" "$RTTS" \
    "$load_before" "$load_after" "$cpu" <<'EOF'
import glob, json, os, statistics, sys

where, runs, threads, size, epochs, steps, rtts, load0, load1, cpu = sys.argv[1:11]
rtts, steps = rtts.split(), steps.split()

def load(name):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(where, name + ".*.json")))]

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")

def steady(side):
    return side["steady"] or side["first_epoch"]

def rate(xs):  # median steady samples/s of these sides
    return med(steady(x)["samples_per_second"] for x in xs)

def sides(name):
    rs = load(name)
    return rs, [r["files"] for r in rs], [r["shards"] for r in rs]

print(f"Median of {runs} runs, {epochs} epochs each (steady = epochs 2..{epochs}), "
      f"--size {size}, {threads} loader threads on both sides, batch 64.  CPU: {cpu}; "
      f"load average before {load0}, after {load1}.\n")

print("### Local disk\n")
print("| cache | shards | files samples/s | shards samples/s | ratio shards/files | "
      "files MB/s | shards MB/s | files CPU ms/sample | shards CPU ms/sample |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for cache in ("warm", "cold"):
    for codec in ("raw", "jpeg"):
        rs, f, s = sides(f"local-{cache}-{codec}")
        if not rs:
            continue
        print(f"| {cache} | {codec} | {rate(f):.0f} | "
              f"{rate(s):.0f} | "
              f"**{med(r['ratio'] for r in rs):.2f}x** | "
              f"{med(steady(x)['mb_per_second'] for x in f):.1f} | "
              f"{med(steady(x)['mb_per_second'] for x in s):.1f} | "
              f"{med(steady(x)['cpu_seconds_per_sample'] for x in f) * 1e3:.2f} | "
              f"{med(steady(x)['cpu_seconds_per_sample'] for x in s) * 1e3:.2f} |")
p = load("pillow")
if p:
    v = med(r["steady_samples_per_second"] for r in p)
    _, f, _ = sides("local-warm-jpeg")
    ours = rate(f)
    print(f"\nPillow reference loader (bench/pillow_loader.py: open, convert RGB, BILINEAR "
          f"resize, {threads} worker processes), warm: **{v:.0f} samples/s** "
          f"(shardbench files: {ours:.0f}; ratio files/Pillow {ours / v:.2f}).")

print("\n### Where the time goes (warm, steady, ms per sample summed over loader threads)\n")
print("| loader | read | decompress | decode | resize | first batch s | batch p50 ms | "
      "batch p99 ms |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for codec in ("raw", "jpeg"):
    rs, f, s = sides(f"local-warm-{codec}")
    if not rs:
        continue
    for label, xs in (("files", f), (f"shards {codec}", s)):
        st = lambda k: med(steady(x)["stage_ms_per_sample"][k] for x in xs)
        print(f"| {label} | {st('read'):.3f} | {st('decompress'):.3f} | {st('decode'):.3f} | "
              f"{st('resize'):.3f} | {med(x['first_batch_seconds'] for x in xs):.3f} | "
              f"{med(steady(x)['batch_latency_ms']['p50'] for x in xs):.1f} | "
              f"{med(steady(x)['batch_latency_ms']['p99'] for x in xs):.1f} |")

print("\n### Over HTTP (nginx on loopback; the round trip is simulated: --rtt sleeps before "
      "each request)\n")
print("| rtt ms | shards | files samples/s | shards samples/s | ratio shards/files | "
      "files requests/epoch | shards requests/epoch | shards MB/s |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
for rtt in rtts:
    for codec in ("raw", "jpeg"):
        rs, f, s = sides(f"http-rtt{rtt}-{codec}")
        if not rs:
            continue
        per_epoch = lambda x: steady(x)["requests"] / steady(x)["epochs"]
        print(f"| {rtt} | {codec} | {rate(f):.0f} | "
              f"{rate(s):.0f} | "
              f"**{med(r['ratio'] for r in rs):.2f}x** | {med(per_epoch(x) for x in f):.0f} | "
              f"{med(per_epoch(x) for x in s):.0f} | "
              f"{med(steady(x)['mb_per_second'] for x in s):.1f} |")

print("\n### A consumer at the pace of a model: a step of M ms per batch of 64\n")
print("| step ms (consumer's pace) | shards | files samples/s | files: consumer waiting | "
      "shards samples/s | shards: consumer waiting |")
print("|---|---|---:|---:|---:|---:|")
for step in steps:
    for codec in ("raw", "jpeg"):
        rs, f, s = sides(f"step{step}-{codec}")
        if not rs:
            continue
        print(f"| {step} ({64 / float(step) * 1000:.0f}/s) | {codec} | "
              f"{rate(f):.0f} | "
              f"{100 * med(steady(x)['wait_fraction'] for x in f):.1f}% | "
              f"{rate(s):.0f} | "
              f"{100 * med(steady(x)['wait_fraction'] for x in s):.1f}% |")

print("\n### Ceilings: the most any shard reader could deliver here\n")
print("| bound | samples/s | files loader samples/s | highest possible ratio | "
      "shard reader measured |")
print("|---|---:|---:|---:|---:|")
dec = load("ceiling-decode-jpeg")
rs, f, s = sides("local-warm-jpeg")
if dec and rs:
    # the files loader does the same work in both local warm comparisons:
    # the median over all of them is the steadier denominator
    files = rate(f + sides("local-warm-raw")[1])
    ours = rate(s)
    for d, what in (("reader", "the reader's decoder"),
                    ("turbo-fast", "libjpeg-turbo's fastest flags")):
        v = med(r["decode_samples_per_second"].get(d) for r in dec)
        print(f"| jpeg decode only, {what}, from memory, {threads} threads | {v:.0f} | "
              f"{files:.0f} (warm, local; all runs) | {v / files:.2f}x | "
              f"{ours:.0f} ({ours / files:.2f}x) |")
tr = load("ceiling-http-raw")
if tr:
    v = med(r["samples"] / r["seconds"] for r in tr)
    gbs = med(r["bytes"] / r["seconds"] for r in tr) / 1e9
    for rtt in rtts:
        rs, f, s = sides(f"http-rtt{rtt}-raw")
        if not rs:
            continue
        files = rate(f)
        ours = rate(s)
        print(f"| raw shards' bytes through nginx to curl alone ({gbs:.2f} GB/s, no delay) | "
              f"{v:.0f} | {files:.0f} (HTTP, rtt {rtt} ms) | {v / files:.1f}x | "
              f"{ours:.0f} ({ours / files:.1f}x) |")
EOF
log "raw results: $WORK/json"
