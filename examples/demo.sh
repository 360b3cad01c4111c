#!/bin/sh
# demo.sh BUILD - the main job end to end on a dataset the project makes itself:
# generate labelled JPEG/PNG images (some grayscale, CMYK, rotated, 16-bit, and
# a few broken) with a caption file beside most of them, convert them with
# shardify (the captions as a field of each sample), prove the result with
# shardcheck (and write its HTML report), and export a few stored samples as
# PNG, with their captions, with shardcat.
set -eu
BUILD=${1:?usage: examples/demo.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
bin="$BUILD/bin"
work="$BUILD/demo"
PYTHON=${PYTHON:-/usr/bin/python3}

rm -rf "$work"
mkdir -p "$work"
echo "== 1. generate a small dataset in $work/raw"
"$PYTHON" "$top/examples/make_demo_data.py" "$work/raw" --captions

echo
echo "== 2. shardify: decode, resize to 224 (shorter side), store as JPEG q90 in zstd shards,"
echo "   each with its caption (x.txt beside x.jpg) as a field"
"$bin/shardify" "$work/raw" "$work/shards" --size 224 --shard-size 96K \
    --field caption=text,from=.txt

echo
echo "== 3. shardcheck: integrity, identity against the source, visitation across ranks (and a report)"
"$bin/shardcheck" --deep --source "$work/raw" --visitation 1,2,3 --fidelity 10 "$work/shards" \
    --report "$work/shardcheck.html"

echo
echo "== 4. shardcat: the first 4 stored samples as PNG (and their captions), exactly as training"
echo "   will see them"
"$bin/shardcat" "$work/shards" --limit 4 --out "$work/look"
ls -l "$work/look"

echo
echo "== the manifest's counts"
"$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1]))
c = m["counts"]
print("samples %d, rejected %d, ignored %d, shards %d" % (c["samples"], c["rejected"], c["ignored"], len(m["shards"])))
print("fields: %s; sidecar files of no image: %s" % (c["fields"], [o.get("key") for o in m["orphans"]]))
print("by label:", ", ".join("%s=%d" % kv for kv in sorted(c["by_label"].items())))
for r in m["rejected"]:
    print("rejected %-22s %s" % (r.get("key", r.get("key_hex")), r["reason"]))
' "$work/shards/manifest.json"
echo
echo "demo done: shards in $work/shards, PNG exports in $work/look"
echo "the shardcheck report (open it in a browser): $work/shardcheck.html"
