#!/bin/sh
# report_screenshots.sh BUILD - the screenshots of the three HTML reports in
# docs/ (shown in README.md), made from the demo data: the shardcheck report
# of `make demo`'s dataset, a shardbench comparison with a consumer step, and
# the nightly index of a few runs (one of them failing its check).  Each page
# is rendered in headless Chromium (tests/browser/render.py), its top cut to
# a readable height and stored as a small palette PNG.
set -eu
BUILD=${1:?usage: scripts/report_screenshots.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$BUILD/bin" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/shardkit-screenshots.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== the demo data, its shardcheck report"
"$PYTHON" "$top/examples/make_demo_data.py" "$work/raw" >/dev/null
"$bin/shardify" "$work/raw" "$work/shards" --size 224 --shard-size 96K --quiet
"$bin/shardcheck" --deep --source "$work/raw" --visitation 1,2,3 --fidelity 10 "$work/shards" \
    --report "$work/shardcheck.html" >/dev/null

echo "== shardbench compare, with a consumer step"
cp -R "$work/raw" "$work/clean"
rm "$work/clean/apple/truncated.jpg" "$work/clean/boat/empty.jpg" "$work/clean/cloud/notes.jpg" \
    "$work/clean/dune/badcrc.png"
"$bin/shardbench" compare "$work/clean" "$work/shards" --epochs 3 --batch 8 --step-ms 2 \
    --report "$work/shardbench.html" >/dev/null

echo "== four nightly runs, the third failing its check"
cp -R "$work/raw" "$work/nsrc"
nightly() {
    env SHARDKIT_BIN="$bin" SHARDKIT_SRC="$work/nsrc" SHARDKIT_ROOT="$work/root" \
        SHARDKIT_OPTIONS="--size 224 --shard-size 96K" "$@" \
        sh "$top/examples/nightly/shardkit-nightly.sh" >/dev/null 2>&1 || true
    sleep 1
}
nightly
cp "$work/raw/apple/img_004.png" "$work/nsrc/apple/extra_1.png"
nightly
cp "$work/raw/boat/img_005.png" "$work/nsrc/boat/extra_2.png"
nightly SHARDKIT_NIGHTLY_BEFORE_CHECK="exit 1"
rm "$work/nsrc/cloud/img_038.png"
nightly
cp "$work/root/index.html" "$work/nightly.html"

echo "== rendered in Chromium"
"$PYTHON" "$top/tests/browser/render.py" --full "$work/out" "$work/shardcheck.html" \
    "$work/shardbench.html" "$work/nightly.html" >/dev/null
mkdir -p "$top/docs"
"$PYTHON" - "$work/out" "$top/docs" <<'EOF'
import os, sys
from PIL import Image

src, dst = sys.argv[1], sys.argv[2]
WIDTH = 760              # stored width
HEIGHTS = {"shardcheck": 1900, "shardbench": 1500, "nightly": 1100}  # page pixels kept
for name, height in HEIGHTS.items():
    im = Image.open(os.path.join(src, name + ".full.png")).convert("RGB")
    im = im.crop((0, 0, im.width, min(height, im.height)))
    im = im.resize((WIDTH, round(im.height * WIDTH / im.width)), Image.LANCZOS)
    im = im.quantize(colors=128, method=Image.Quantize.MAXCOVERAGE)
    out = os.path.join(dst, "report-%s.png" % name)
    im.save(out, optimize=True)
    print("%s: %dx%d, %d KB" % (out, im.width, im.height, os.path.getsize(out) // 1024))
EOF
