#!/bin/sh
# fields_convert.sh BUILD - what sidecar fields cost a conversion.
#
# The sample dataset's images are linked (not copied) into a temporary
# directory, each with a caption (.txt, ~60 bytes) and JSON metadata (.json,
# ~150 bytes), as img2dataset writes them.  Then RUNS (default 5)
# alternating pairs, same options and threads, warm page cache: shardify
# without fields, and shardify --field caption=text,from=.txt --field
# meta=json,from=.json over the same tree.  Prints a Markdown table: median
# seconds of each and their ratio (target: at most 1.10).
#
#   RUNS=5 SIZE=256 bench/fields_convert.sh build
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BUILD=${1:?usage: bench/fields_convert.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
DATASET=${SHARDKIT_DATASET:-$top/../shared/datasets/imagenet-sample}
RUNS=${RUNS:-5}
SIZE=${SIZE:-256}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -d "$DATASET" ] || { echo "bench: no dataset at '$DATASET'" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-fields.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$PYTHON" - "$DATASET" "$work/src" <<'EOF'
import json, os, sys
src, dst = sys.argv[1:3]
os.makedirs(dst)
words = "a photo of the small red dog on a wooden table near the window".split()
for i, name in enumerate(sorted(os.listdir(src))):
    if not name.lower().endswith((".jpeg", ".jpg", ".png")):
        continue
    stem = os.path.splitext(name)[0]
    try:
        os.link(os.path.join(src, name), os.path.join(dst, name))
    except OSError:
        with open(os.path.join(src, name), "rb") as f, open(os.path.join(dst, name), "wb") as g:
            g.write(f.read())
    with open(os.path.join(dst, stem + ".txt"), "w") as f:
        f.write(" ".join(words[(i + k) % len(words)] for k in range(10)))
    with open(os.path.join(dst, stem + ".json"), "w") as f:
        json.dump({"url": f"https://example.invalid/{i}.jpg", "width": 500, "height": 375,
                   "similarity": 0.31 + i % 7 / 100, "license": "cc-by", "key": f"{i:09d}"}, f)
EOF
find "$work/src" -type f -print0 | xargs -0 cat >/dev/null   # warm
opts="--size $SIZE --labels none --quiet --json"
fields="--field caption=text,from=.txt --field meta=json,from=.json"
i=1
: >"$work/plain.t"
: >"$work/fields.t"
while [ "$i" -le "$RUNS" ]; do
    for kind in plain fields; do
        rm -rf "$work/out"
        extra=""
        [ "$kind" = fields ] && extra=$fields
        s0=$(date +%s.%N)
        # shellcheck disable=SC2086
        "$BIN/shardify" $opts $extra "$work/src" "$work/out" >"$work/$kind.json"
        s1=$(date +%s.%N)
        echo "$s0 $s1" | awk '{printf "%.3f\n", $2 - $1}' >>"$work/$kind.t"
    done
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
p=$(median "$work/plain.t")
f=$(median "$work/fields.t")
samples=$("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["samples"], d["fields"])' "$work/fields.json")
echo "| conversion, $RUNS alternating runs, --size $SIZE | median s |"
echo "|---|---|"
echo "| without fields | $p |"
echo "| with caption (.txt) and meta (.json) | $f |"
echo "| ratio (with / without) | $(echo "$f $p" | awk '{printf "%.3f", $1 / $2}') |"
echo "samples and fields: $samples" >&2
