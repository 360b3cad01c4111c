#!/bin/sh
# test_hostile.sh - 1000 damaged and hostile copies of the sample's photos
# (tests/fixtures/mutate.py: truncated, bits flipped, headers declaring huge
# sizes, zero bytes, text named .jpg, PNGs with broken chunks, converted
# GIF/WebP/TIFF damaged, a sliver whose upscaled output would be enormous):
# shardify takes them all without a crash, a hang or a sanitizer report;
# every file is a sample or a reject with a specific reason; what must be
# refused is refused for the right reason; and shardcheck --deep --source
# proves the result.  The same inputs as an archive give the same dataset,
# and a truncated archive fails cleanly.
. "$(dirname "$0")/lib.sh"

say "1000 mutated copies of the sample images"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/mutate.py" "$SAMPLE" "$T/mut" --count 1000 \
    --seed 7 >/dev/null
[ "$(find "$T/mut" -type f | wc -l)" -eq 1000 ] || die "expected 1000 files"

say "shardify: exit 0, no hang"
timeout 900 shardify "$T/mut" "$T/out" --size 64 --shard-size 1M --json \
    >"$T/summary.json" 2>"$T/err" || { tail -n 40 "$T/err" >&2; die "shardify failed"; }
if grep -E "AddressSanitizer|LeakSanitizer|runtime error:" "$T/err" >&2; then
    die "sanitizer report"
fi

say "every file is a sample or a reject with a reason; refusals are for the right reason"
"$PYTHON" - "$T/mut" "$T/out" "$T/summary.json" <<'PY'
import json, os, sys
src, out, summary = sys.argv[1:4]
s = json.load(open(summary))
m = json.load(open(os.path.join(out, "manifest.json")))
files = {os.path.relpath(os.path.join(r, f), src) for r, _, fs in os.walk(src) for f in fs}
samples = {json.loads(l)["key"] for l in open(os.path.join(out, "index.jsonl"))}
rejects = {r["key"]: r["reason"] for r in m["rejected"]}
assert s["status"] == "ok" and s["candidates"] == len(files) == 1000, s
assert s["samples"] == len(samples) and s["rejected"] == len(rejects), s
assert samples | set(rejects) == files, sorted(files - samples - set(rejects))[:5]
assert not samples & set(rejects), sorted(samples & set(rejects))[:5]
assert all(r.strip() for r in rejects.values()), "an empty reason"
assert {r["key"]: r["reason"] for r in s["rejects"]} == rejects, "summary and manifest differ"

# mutation -> how its files must be refused (a prefix of the reason, or a
# list of acceptable prefixes); None: must be a sample
must = {
    "intact": None,
    "exif_garbage": None,           # a broken EXIF block never makes an image undecodable
    "zero": "not an image: empty file",
    "text": "not an image: unknown signature",
    "jpeg_bomb": ["declared 40000x40000 exceeds --max-pixels 100000000",
                  "declared 65500x65500 exceeds --max-pixels 100000000"],
    "png_bomb": "declared 100000x100000 exceeds --max-pixels 100000000",
    "png_sliver": "1x60000 image would become 64x3840000, over --max-pixels",
    "twelve_bit": "unsupported: 12-bit JPEG",
    "truncated": ["truncated JPEG", "corrupt JPEG"],   # never stored grey-padded
    "png_badcrc": "corrupt PNG: ",
    "png_idatflip": "corrupt PNG: ",
    "png_badchunk": "corrupt PNG: ZZZZ: unhandled critical chunk",
    "png_chunklen": ["truncated PNG", "corrupt PNG: "],
    "png_noiend": ["truncated PNG", "corrupt PNG: "],
}
seen = {}
for f in sorted(files):
    kind = f.split("/")[0]
    seen[kind] = seen.get(kind, 0) + 1
    if kind not in must:
        continue            # flipped bits may or may not break a file
    want = must[kind]
    if want is None:
        assert f in samples, (f, rejects.get(f))
        continue
    assert f in rejects, (f, "was ingested")
    prefixes = [want] if isinstance(want, str) else want
    assert rejects[f].startswith(tuple(prefixes)), (f, rejects[f])
assert len(seen) >= 20 and min(seen.values()) >= 40, seen
assert len(samples) >= 100, len(samples)
print("%d samples, %d rejects, %d mutations" % (len(samples), len(rejects), len(seen)))
PY

say "shardcheck --deep --source proves the result"
shardcheck --deep --source "$T/mut" "$T/out" >"$T/check.out" 2>&1 ||
    { tail -n 40 "$T/check.out" >&2; die "shardcheck --deep --source failed"; }

say "the same files as an archive give the same dataset"
(cd "$T/mut" && tar -cf "$T/mut.tar" .)
timeout 900 shardify "$T/mut.tar" "$T/fromtar" --size 64 --shard-size 1M --quiet ||
    die "shardify of the archive failed"
cmp "$T/out/index.jsonl" "$T/fromtar/index.jsonl" || die "archive index differs"
"$PYTHON" -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["rejected"] == b["rejected"] and a["shards"] == b["shards"], "archive manifest differs"
' "$T/out/manifest.json" "$T/fromtar/manifest.json"

say "a truncated archive fails cleanly and publishes nothing"
size=$(wc -c <"$T/mut.tar")
head -c $((size / 2)) "$T/mut.tar" >"$T/cut.tar"
must_fail 1 timeout 900 shardify "$T/cut.tar" "$T/cutout" --size 64 --quiet
must_say "cannot read archive" "$T/err"
[ ! -e "$T/cutout/manifest.json" ] || die "a manifest from a truncated archive"

say "a sliver whose output height overflows 32 bits is refused, not squashed"
# 1 x 8388611 pixels (33 KB of PNG): at --size 512 the output would be
# 512 x 4294968832; cut to 32 bits that is 512 x 1536, a plausible image
mkdir -p "$T/wrap/a"
"$PYTHON" - "$T/wrap/a/sliver.png" <<'PY'
import struct, sys, zlib
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
h = (1 << 23) + 3
with open(sys.argv[1], "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * (4 * h), 9)) + chunk(b"IEND", b""))
PY
timeout 900 shardify "$T/wrap" "$T/wrapout" --size 512 --allow-empty --json >"$T/wrap.json" 2>"$T/err" ||
    { cat "$T/err" >&2; die "shardify failed"; }
[ "$(json "$T/wrap.json" 'd["samples"]')" = 0 ] ||
    die "the sliver was ingested as: $(cat "$T/wrapout/index.jsonl")"
reason=$(json "$T/wrap.json" 'd["rejects"][0]["reason"]')
case $reason in *"over --max-pixels"*) ;; *) die "sliver rejected for the wrong reason: $reason" ;; esac

echo "all hostile-input checks passed"
