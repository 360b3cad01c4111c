#!/bin/sh
# rss.sh BIN_DIR [COUNTS] - peak RSS of shardify as the sample count grows.
# Makes COUNTS (default "20000 200000") tiny JPEGs (64 distinct 48x40 images,
# hard-linked under 100 class folders: reading them costs little, so the run
# measures the bookkeeping that grows with the sample count) and reports the
# peak resident set size of `shardify --size 32` on each, from /usr/bin/time.
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"  # the raw results, in bench/results/
BIN=${1:?usage: bench/rss.sh BIN_DIR [COUNTS]}
COUNTS=${2:-"20000 200000"}
SHARDIFY_ARGS=${SHARDIFY_ARGS:-}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x /usr/bin/time ] || { echo "rss.sh: needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-rss.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$PYTHON" - "$tmp/seed" <<'PY'
import os, sys
from PIL import Image
out = sys.argv[1]
os.makedirs(out)
for i in range(64):
    img = Image.new("RGB", (48, 40), (i * 4, 255 - i * 4, (i * 37) % 256))
    img.save(os.path.join(out, "%02d.jpg" % i), quality=85)
PY

echo "| samples | peak RSS (MB) | seconds | RSS per 1000 samples above the smallest run (KB) |"
echo "|---:|---:|---:|---:|"
first_rss=""
first_n=""
for n in $COUNTS; do
    src="$tmp/src-$n"
    mkdir -p "$src"
    i=0
    while [ $i -lt 100 ]; do mkdir "$src/c$i"; i=$((i + 1)); done
    # hard links: n names over 64 files
    "$PYTHON" - "$tmp/seed" "$src" "$n" <<'PY'
import os, sys
seed, src, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for k in range(n):
    os.link(os.path.join(seed, "%02d.jpg" % (k % 64)),
            os.path.join(src, "c%d" % (k % 100), "img_%07d.jpg" % k))
PY
    /usr/bin/time -f "%M %e" -o "$tmp/time" "$BIN/shardify" "$src" "$tmp/dst-$n" --size 32 $SHARDIFY_ARGS \
        --quiet >/dev/null
    read -r rss secs <"$tmp/time"
    if [ -z "$first_rss" ]; then
        first_rss=$rss; first_n=$n; per="-"
    else
        per=$(( (rss - first_rss) * 1000 / (n - first_n) ))
    fi
    echo "| $n | $((rss / 1024)) | $secs | $per |"
    rm -rf "$src" "$tmp/dst-$n"
done
