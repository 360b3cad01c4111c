#!/bin/sh
# read_rss.sh BUILD [COUNTS] - peak RSS of reading one epoch as the sample
# count grows: an img2dataset-style folder of COUNTS samples (default
# "1000000 3000000": tiny 32x24 JPEGs with a caption, bench/gen_archives) is
# converted once per count (shardify --archives ... --labels none --field
# caption=text,from=.txt --size 32), then one epoch is read by
# shardkit.Loader (batch 256, 2 threads, from BUILD/python) and by the C
# iterator (BUILD/bin/shardbench shards --epochs 1), and the time of
# Dataset.index_of for a present and an absent key is taken.  Prints a
# Markdown table: peak RSS, samples/s, and the RSS growth per sample over the
# smallest count.  WORK (default a temporary folder, removed at the end)
# holds the datasets; KEEP=1 keeps them for another run.
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BUILD=${1:?usage: bench/read_rss.sh BUILD [COUNTS]}
COUNTS=${2:-"1000000 3000000"}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x /usr/bin/time ] || { echo "read_rss.sh: needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
[ -x "$BUILD/bench/gen_archives" ] || { echo "read_rss.sh: no $BUILD/bench/gen_archives (make bench)" >&2; exit 1; }
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/shardkit-read-rss.XXXXXX")}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/loader.py" <<'EOF'
import resource, sys, time
import shardkit
ds = shardkit.Dataset(sys.argv[1])
key = ds.key(len(ds) // 2)
t = time.monotonic()
assert ds.index_of(key) == len(ds) // 2
present = time.monotonic() - t
t = time.monotonic()
try:
    ds.index_of("no/such/key.jpg")
except KeyError:
    pass
absent = time.monotonic() - t
n, t = 0, time.monotonic()
for batch in shardkit.Loader(ds, 256, threads=2):
    n += len(batch)
rate = n / (time.monotonic() - t)
print(n, round(rate), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
      round(present * 1e3, 1), round(absent * 1e3, 1))
EOF

echo "| samples | Loader peak RSS (MB) | Loader samples/s | iterator peak RSS (MB) | index_of present / absent (ms) | Loader / iterator growth per sample over the first (bytes) |"
echo "|---:|---:|---:|---:|---:|---:|"
first=""
for n in $COUNTS; do
    ds="$WORK/ds-$n"
    if [ ! -f "$ds/manifest.json" ]; then
        mkdir -p "$WORK/src-$n"
        "$BUILD/bench/gen_archives" "$WORK/src-$n" "$n"
        "$BUILD/bin/shardify" --archives "$WORK/src-$n" "$ds" --labels none \
            --field caption=text,from=.txt --size 32 --quiet
        rm -rf "$WORK/src-$n"
    fi
    read -r got rate loader_kb present absent <<EOF
$(PYTHONPATH="$BUILD/python" "$PYTHON" "$WORK/loader.py" "$ds")
EOF
    /usr/bin/time -f "%M" -o "$WORK/time" "$BUILD/bin/shardbench" shards "$ds" --epochs 1 \
        --threads 2 >/dev/null
    iter_kb=$(cat "$WORK/time")
    if [ -z "$first" ]; then
        first="$n $loader_kb $iter_kb"
        growth="-"
    else
        set -- $first
        growth="$(( (loader_kb - $2) * 1024 / (n - $1) )) / $(( (iter_kb - $3) * 1024 / (n - $1) ))"
    fi
    echo "| $got | $((loader_kb / 1024)) | $rate | $((iter_kb / 1024)) | $present / $absent | $growth |"
done
