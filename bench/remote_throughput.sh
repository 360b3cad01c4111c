#!/bin/sh
# remote_throughput.sh - the same dataset read from local disk, over HTTP and
# from an S3-compatible store: small files against shards, with a simulated
# round trip, and the requests each costs per sample.
#
#   bench/remote_throughput.sh BUILD [RUNS]
#
# On the sample dataset (SHARDKIT_DATASET, default ../shared/datasets/
# imagenet-sample beside the checkout) at --size 256, raw shards written with
# --zstd-level -100 (shards that exist to be read fast), THREADS loader
# threads on both sides (default: the CPUs available):
#   1. shardify the dataset to local disk, and to s3:// (s3rver on loopback,
#      bench/s3_server.sh); upload the source files as objects too
#   2. serve the local copies over HTTP (nginx on loopback, bench/http_server.sh)
#   3. shardbench compare SRC DST for local disk, HTTP and S3, at each --rtt
#      of RTTS (default "0 10"; local disk has no round trip)
#   4. the transfer bounds: the shards' bytes fetched by curl alone from nginx
#      and from s3rver (bench/curl_transfer.py: 8 MiB ranges, CONNECTIONS
#      connections as the reader, no delay) - the most any shard reader could
#      get from that server here
# Every configuration runs RUNS times (default 3) with EPOCHS epochs (default
# 3), interleaved; the table gives medians of the steady epochs.  Markdown
# goes to stdout (BENCHMARKS.md §7 quotes it); the JSON of every run
# stays in WORK (default a new temporary directory, kept).
#
# BASELINE=DIR (another build, e.g. of the previous commit: `make
# BUILD=build-old` in a checkout of it) also runs that build's shardbench on
# every remote configuration, right beside this build's (which goes first
# alternates run by run), on the same data and servers; a second table gives
# both and the ratio this/baseline per run (median, and the range as the
# noise).
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/

BUILD=${1:?usage: bench/remote_throughput.sh BUILD [RUNS]}
RUNS=${2:-${RUNS:-3}}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
SIZE=${SIZE:-256}
EPOCHS=${EPOCHS:-3}
RTTS=${RTTS:-0 10}
CONNECTIONS=${CONNECTIONS:-8}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/shardkit-remote-bench.XXXXXX")}
THREADS=${THREADS:-$("$PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))')}
BUCKET=shardkit-bench
BASELINE=${BASELINE:-}
OLD_BIN=${BASELINE:+$(cd "$BASELINE/bin" && pwd)}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

[ -d "$DATASET" ] || { echo "remote_throughput.sh: no dataset at '$DATASET'" >&2; exit 2; }
command -v curl >/dev/null || { echo "remote_throughput.sh: curl is not installed" >&2; exit 2; }
mkdir -p "$WORK/json"
log() { echo "remote_throughput: $*" >&2; }

. "$top/bench/stores_lib.sh"
start_s3 "$BUCKET"

RAW_OPTS="--size $SIZE --codec raw --zstd-level -100 --quiet"
shardify_local $RAW_OPTS
shardify_s3 "$BUCKET" $RAW_OPTS
log "the source files as objects of s3://$BUCKET/src"
(cd "$DATASET" && ls) | awk -v d="$DATASET" -v u="$ENDPOINT/$BUCKET/src" '
    NR > 1 { print "next" }
    { printf "url = \"%s/%s\"\nupload-file = \"%s/%s\"\noutput = /dev/null\n", u, $0, d, $0
      print "header = \"x-amz-content-sha256: UNSIGNED-PAYLOAD\"" }' >"$WORK/put.cfg"
curl -sS -f --no-progress-meter --parallel --parallel-max 8 -K "$WORK/put.cfg"

U=$("$top/bench/http_server.sh" start "$HTTP" src="$DATASET" raw="$WORK/raw")
log "nginx at $U"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# run NAME I ARGS...: run I of shardbench compare ARGS --json (with
# BASELINE, the baseline's too, as base-NAME, first in every other run)
run() {
    name=$1; n=$2; shift 2
    if [ -n "$OLD_BIN" ] && [ "$name" != local ] && [ $((n % 2)) -eq 0 ]; then
        run_bin "$OLD_BIN" "base-$name" "$n" "$@"
    fi
    run_bin "$BIN" "$name" "$n" "$@"
    if [ -n "$OLD_BIN" ] && [ "$name" != local ] && [ $((n % 2)) -eq 1 ]; then
        run_bin "$OLD_BIN" "base-$name" "$n" "$@"
    fi
}
# run_bin BIN NAME I ARGS...: the run itself (its own variable names: the
# shell has no local ones, and run's are still needed)
run_bin() {
    rb_bin=$1; rb_name=$2; rb_n=$3; shift 3
    log "$rb_name (run $rb_n of $RUNS)"
    "$rb_bin/shardbench" compare "$@" --threads "$THREADS" --epochs "$EPOCHS" --json \
        >"$WORK/json/$rb_name.$rb_n.json"
}
# bound NAME I URL [HEADER]: curl alone fetches the raw shards from URL
bound() {
    log "$1 (run $2 of $RUNS)"
    "$PYTHON" "$top/bench/curl_transfer.py" "$3" "$WORK/raw" --connections "$CONNECTIONS" \
        ${4:+--header "$4"} >"$WORK/json/$1.$2.json"
}

# one unmeasured pass warms the page cache (local files, nginx, s3rver's files)
"$BIN/shardbench" compare "$DATASET" "$WORK/raw" --threads "$THREADS" --epochs 1 >/dev/null
i=1
while [ $i -le "$RUNS" ]; do
    run local $i "$DATASET" "$WORK/raw"
    for rtt in $RTTS; do
        run "http-rtt$rtt" $i "$U/src" "$U/raw" --rtt "$rtt"
        run "s3-rtt$rtt" $i "s3://$BUCKET/src" "s3://$BUCKET/raw" --rtt "$rtt"
    done
    bound bound-http $i "$U/raw"
    bound bound-s3 $i "$ENDPOINT/$BUCKET/raw" "x-amz-content-sha256: UNSIGNED-PAYLOAD"
    i=$((i + 1))
done
stop_servers
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')

"$PYTHON" - "$WORK/json" "$RUNS" "$THREADS" "$SIZE" "$EPOCHS" "$RTTS" "$load_before" \
    "$load_after" "$cpu" "$BASELINE" <<'EOF'
import glob, json, os, statistics, sys

where, runs, threads, size, epochs, rtts, load0, load1, cpu, baseline = sys.argv[1:11]
rtts = rtts.split()

def load(name):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(where, name + ".*.json")))]

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")

def steady(side):
    return side["steady"] or side["first_epoch"]

def rate(xs):
    return med(steady(x)["samples_per_second"] for x in xs)

def per_sample(xs, what="requests"):  # per sample read, steady epochs
    return med(steady(x)[what] / steady(x)["samples"] for x in xs if steady(x)["samples"])

print(f"Median of {runs} runs, {epochs} epochs each (steady = epochs 2..{epochs}), --size {size}, "
      f"raw shards (--zstd-level -100), {threads} loader threads on both sides, batch 64.  "
      f"CPU: {cpu}; load average before {load0}, after {load1}.  The round trip is simulated "
      f"(--rtt sleeps before each request); HTTP is nginx, S3 is s3rver (Node.js), both on "
      f"loopback.\n")
print("| where | rtt ms | files samples/s | shards samples/s | ratio shards/files | "
      "requests per sample (files / shards) | KB per sample (files / shards) | shards MB/s | "
      "shards vs transfer bound |")
print("|---|---:|---:|---:|---:|---|---|---:|---:|")
bounds = {k: load(f"bound-{k}") for k in ("http", "s3")}
def bound_rate(kind):
    b = bounds[kind]
    return med(r["samples"] / r["seconds"] for r in b) if b else float("nan")
rows = [("local disk", "local", "-", None)]
for kind, label in (("http", "HTTP"), ("s3", "S3")):
    for rtt in rtts:
        rows.append((label, f"{kind}-rtt{rtt}", rtt, kind))
for label, name, rtt, kind in rows:
    rs = load(name)
    if not rs:
        continue
    f = [r["files"] for r in rs]
    s = [r["shards"] for r in rs]
    ratio = med(r["ratio"] for r in rs)
    vs = f"{100 * rate(s) / bound_rate(kind):.0f}%" if kind else "-"
    print(f"| {label} | {rtt} | {rate(f):.0f} | {rate(s):.0f} | **{ratio:.2f}x** | "
          f"{per_sample(f):.3f} / {per_sample(s):.4f} | "
          f"{per_sample(f, 'bytes_read') / 1e3:.0f} / {per_sample(s, 'bytes_read') / 1e3:.0f} | "
          f"{med(steady(x)['mb_per_second'] for x in s):.1f} | {vs} |")
print()
print("| transfer bound (curl alone, 8 MiB ranges, no delay) | GB/s | samples/s |")
print("|---|---:|---:|")
for kind, label in (("http", "raw shards from nginx"), ("s3", "raw shards from s3rver")):
    b = bounds[kind]
    if b:
        print(f"| {label} | {med(r['bytes'] / r['seconds'] for r in b) / 1e9:.2f} | "
              f"{bound_rate(kind):.0f} |")
if baseline:
    print()
    print(f"This build against the baseline ({baseline}), run beside it on the same data and "
          f"servers: steady samples/s, and this/baseline per run (median, range of the "
          f"{runs} runs).\n")
    print("| where | rtt ms | files: baseline / this | files this/baseline | "
          "shards: baseline / this | shards this/baseline | requests per sample, shards "
          "(baseline / this) |")
    print("|---|---:|---|---|---|---|---|")
    def spread(pairs):
        r = [b / a for a, b in pairs if a]
        return f"**{med(r):.3f}** ({min(r):.3f}-{max(r):.3f})" if r else "-"
    for label, name, rtt, kind in rows[1:]:
        new = {os.path.basename(p): json.load(open(p))
               for p in glob.glob(os.path.join(where, name + ".*.json"))}
        old = {p[len("base-"):]: json.load(open(os.path.join(where, p)))
               for p in map(os.path.basename, glob.glob(os.path.join(where, "base-" + name +
                                                                     ".*.json")))}
        both = sorted(set(new) & set(old))
        if not both:
            continue
        cols = []
        for side in ("files", "shards"):
            pairs = [(steady(old[k][side])["samples_per_second"],
                      steady(new[k][side])["samples_per_second"]) for k in both]
            cols.append(f"{med(a for a, _ in pairs):.0f} / {med(b for _, b in pairs):.0f}")
            cols.append(spread(pairs))
        reqs = (f"{per_sample([old[k]['shards'] for k in both]):.4f} / "
                f"{per_sample([new[k]['shards'] for k in both]):.4f}")
        print(f"| {label} | {rtt} | {' | '.join(cols)} | {reqs} |")
EOF
log "raw results: $WORK/json"
