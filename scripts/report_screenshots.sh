#!/bin/sh
# report_screenshots.sh BUILD - the screenshots of the three HTML reports in
# docs/ (shown in docs/guide/reports.md), made from the demo data: the shardcheck report
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

# relative names, so that the pages show no machine's paths
cd "$work"
PATH="$bin:$PATH"

echo "== the demo data, its shardcheck report"
"$PYTHON" "$top/examples/make_demo_data.py" raw >/dev/null
shardify raw shards --size 224 --shard-size 96K --quiet
shardcheck --deep --source raw --visitation 1,2,3 --fidelity 10 shards \
    --report shardcheck.html >/dev/null

echo "== shardbench compare, with a consumer step"
cp -R raw clean
rm clean/apple/truncated.jpg clean/boat/empty.jpg clean/cloud/notes.jpg clean/dune/badcrc.png
shardbench compare clean shards --epochs 3 --batch 8 --step-ms 2 --report shardbench.html \
    >/dev/null

echo "== four nightly runs, the third failing its check"
cp -R raw nsrc
mkdir root
nightly() {
    env SHARDKIT_BIN="$bin" SHARDKIT_SRC=nsrc SHARDKIT_ROOT=root \
        SHARDKIT_OPTIONS="--size 224 --shard-size 96K" "$@" \
        "$bin/shardkit-nightly" >/dev/null 2>&1 || true
    sleep 1
}
nightly
cp raw/apple/img_004.png nsrc/apple/extra_1.png
nightly
cp raw/boat/img_005.png nsrc/boat/extra_2.png
nightly SHARDKIT_NIGHTLY_BEFORE_CHECK="exit 1"
rm nsrc/cloud/img_038.png
nightly
# the page as shardreport writes it for a ROOT given relatively
shardreport nightly root --out nightly.html >/dev/null

echo "== rendered in Chromium"
"$PYTHON" "$top/tests/browser/render.py" --full out shardcheck.html shardbench.html nightly.html \
    >/dev/null
mkdir -p "$top/docs"
"$PYTHON" - out "$top/docs" <<'EOF'
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
