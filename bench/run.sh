#!/bin/sh
# run.sh BUILD - every benchmark, in one go (make bench).  Each prints a
# Markdown table; BENCHMARKS.md records the results with these commands.
#   1. shardify against the Pillow + multiprocessing peer, sizes 256 and 512,
#      with the write ceiling measured in the same run; cold sources
#   2. resampler speed and quality against a Lanczos-3 reference, and the
#      DCT scaling rules end to end
#   3. peak RSS as the sample count grows
#   4. shardcheck's verification rate
#   5. read throughput: small files against shards, local and HTTP; each
#      codec's default zstd level
#   6. the Python loader against shardbench, and with training transforms;
#      training input: shardkit.Loader against torchvision ImageFolder and
#      WebDataset + DataLoader (WebDataset from ../shared/peers/webdataset, or
#      WEBDATASET), and the probe's three ways on the sample
#   7. local disk, HTTP and S3
#   8. conversion in parts (4 at once + merge) against one run
#   9. an incremental run against a full one (bench/incremental.sh; COUNT)
#  10. sample fields: converting with caption and JSON sidecars against
#      none (bench/fields_convert.sh), reading them (bench/fields_read.py),
#      and image-text input against WebDataset over img2dataset's tars
#      (bench/clip_input.py)
#  14. the node-local cache against local disk and remote reading without
#      it (bench/cache_throughput.sh)
#  15. detection input: boxes and masks through one drawn crop and flip,
#      against a CocoDetection-style Dataset + DataLoader, and their cost
#      over images alone (bench/detection_input.py)
#  18. grey pixels kept: shard bytes and read rate of 1-channel against
#      3-channel raw shards, and a CNN's accuracy from the 1-channel shards
#      against ImageFolder (Fashion-MNIST when Debian's dataset-fashion-mnist
#      is installed, else a generated set like it)
# Needs the sample dataset (SHARDKIT_DATASET, default ../shared/datasets/
# imagenet-sample beside the checkout); RUNS (default 5) sets the repetitions.
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BUILD=${1:?usage: bench/run.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
RUNS=${RUNS:-5}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -d "$DATASET" ] || { echo "bench: no dataset at '$DATASET'" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "## 1. shardify vs Pillow + multiprocessing, and the write ceiling"
"$PYTHON" "$top/bench/compare_pillow.py" "$BIN" "$DATASET" --runs "$RUNS" \
    --ceiling "$BUILD/bench/write_ceiling"
echo
echo "### cold sources (page cache dropped) against warm"
"$PYTHON" "$top/bench/cold_sources.py" "$BIN" "$DATASET" --runs "$RUNS"


echo
echo "## 2. Resampling: speed and PSNR against Lanczos-3"
"$BUILD/bench/resize_quality" --sizes 256,512 --reps 3 --dump "$tmp/rq" "$DATASET"
"$PYTHON" "$top/bench/resize_quality_pillow.py" --reps 3 "$tmp/rq"
rm -rf "$tmp/rq"
echo
echo "### DCT scaling rules: decode + resize against lanczos3 of the full-size decode"
"$BUILD/bench/resize_quality" --dct-rules --sizes 256,512 --reps 3 "$DATASET"

echo
echo "## 3. Peak RSS against sample count"
SHARDIFY_ARGS="--shard-size 16M" "$top/bench/rss.sh" "$BIN"

echo
echo "## 4. shardcheck verification rate"
"$BIN/shardify" "$DATASET" "$tmp/v" --size 256 --quiet
for t in 1 2; do
    for i in $(seq "$RUNS"); do
        "$BIN/shardcheck" --threads "$t" --json "$tmp/v" >"$tmp/v$t.$i.json"
    done
    "$PYTHON" - "$t" "$tmp"/v$t.*.json <<'PY'
import json, statistics, sys
rates = []
for f in sys.argv[2:]:
    d = json.load(open(f))
    rates.append(d["rates"]["hash"]["gb_per_s_per_core"] or 0)
print(f"threads {sys.argv[1]}: median {statistics.median(rates):.2f} GB/s per core "
      f"over {len(rates)} runs")
PY
done

echo
echo "## 5. Read throughput"
RUNS=3 "$top/bench/read_throughput.sh" "$BUILD"
echo
echo "### Each codec's default zstd level: raw shards' read speed against size"
"$PYTHON" "$top/bench/zstd_level.py" "$BIN" "$DATASET" --codec raw --runs 3 \
    --levels 3,1,-1,-5,-20,-100,-1000

echo
echo "## 6. The Python loader: binding overhead and training transforms"
PYTHONPATH="$BUILD/python" "$PYTHON" "$top/bench/python_loader.py" --runs 3 --epochs 6 "$BIN" "$DATASET"
echo "The transform stage alone, one thread:"
"$BUILD/bench/augment_speed" --epochs 9 "$DATASET"

echo
echo "### Training input: shardkit.Loader against ImageFolder and WebDataset"
WEBDATASET=${WEBDATASET:-$top/../shared/peers/webdataset}
if [ -d "$WEBDATASET/webdataset" ]; then
    PYTHONPATH="$BUILD/python:$WEBDATASET" "$PYTHON" "$top/bench/train_input.py" --runs 3 --epochs 3 \
        "$BIN" "$DATASET"
else
    echo "(skipped: no WebDataset at '$WEBDATASET'; set WEBDATASET)"
fi
"$BIN/shardify" "$DATASET" "$tmp/probe" --size 256 --quiet
PYTHONPATH="$BUILD/python" "$PYTHON" -m shardkit.probe "$DATASET" "$tmp/probe" --steps 30 --rounds 3
rm -rf "$tmp/probe"

echo
echo "## 7. Local disk, HTTP and S3"
RUNS=3 "$top/bench/remote_throughput.sh" "$BUILD"

echo
echo "## 8. Conversion in parts against one run"
"$top/bench/parts.sh" "$BUILD"

echo
echo "## 9. An incremental nightly run against a full one (1% of the source changed)"
RUNS=3 "$top/bench/incremental.sh" "$BUILD"

echo
echo "## 10. Sample fields: reading a caption and a JSON field against none"
"$BIN/shardify" "$DATASET" "$tmp/jpeg256" --size 256 --codec jpeg --shard-size 8M --quiet
PYTHONPATH="$BUILD/python" "$PYTHON" "$top/bench/fields_read.py" "$tmp/jpeg256" "$tmp/fields" \
    --runs "$RUNS" --epochs 3
"$top/bench/fields_convert.sh" "$BUILD"
if [ -d "$WEBDATASET/webdataset" ]; then
    PYTHONPATH="$BUILD/python:$WEBDATASET:$top/bench" "$PYTHON" "$top/bench/clip_input.py" \
        --runs 3 --epochs 3 "$BIN" "$DATASET"
else
    echo "(image-text input skipped: no WebDataset at '$WEBDATASET'; set WEBDATASET)"
fi

echo
echo "## 14. The node-local cache: remote epochs at local speed"
RUNS=3 "$top/bench/cache_throughput.sh" "$BUILD"
echo "## 15. Detection and segmentation input: boxes and masks against a CocoDetection-style Dataset"
PYTHONPATH="$BUILD/python:$top/bench" "$PYTHON" "$top/bench/detection_input.py" \
    --runs "$RUNS" --epochs 3 "$BIN" "$DATASET"
echo "## 18. Grey pixels kept: storage, read rate and training accuracy"
grey_set=
[ -d /usr/share/datasets/fashion-mnist ] || grey_set="--generate 60000"
# shellcheck disable=SC2086 # grey_set is empty or two words
"$PYTHON" "$top/bench/grayscale.py" "$BUILD" "$tmp/grey" $grey_set --runs "$RUNS" --epochs 3
# shellcheck disable=SC2086
"$PYTHON" "$top/bench/train_grayscale.py" "$BUILD" "$tmp/grey" $grey_set --epochs 2
