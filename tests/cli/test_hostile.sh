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

# what every case reads: 1000 mutated copies of the sample images, their
# dataset (its summary, its messages in $T/out.err), and their archive
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/mutate.py" "$SAMPLE" "$T/mut" --count 1000 \
    --seed 7 >/dev/null
timeout 900 shardify "$T/mut" "$T/out" --size 64 --shard-size 1M --json \
    >"$T/summary.json" 2>"$T/out.err" || { tail -n 40 "$T/out.err" >&2; die "shardify failed"; }
(cd "$T/mut" && tar -cf "$T/mut.tar" .)

case_shardify_of_1000_mutated_copies_exit_0_no_hang_no_sanitizer_report() {
    [ "$(find "$T/mut" -type f | wc -l)" -eq 1000 ] || die "expected 1000 files"
    if grep -E "AddressSanitizer|LeakSanitizer|runtime error:" "$T/out.err" >&2; then
        die "sanitizer report"
    fi
}

case_every_file_is_a_sample_or_a_reject_with_a_reason_refusals_are_for_the_right_reason() {
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
}

case_shardcheck_deep_source_proves_the_result() {
    shardcheck --deep --source "$T/mut" "$T/out" >"$C/check.out" 2>&1 ||
        { tail -n 40 "$C/check.out" >&2; die "shardcheck --deep --source failed"; }
}

case_the_same_files_as_an_archive_give_the_same_dataset() {
    timeout 900 shardify "$T/mut.tar" "$C/fromtar" --size 64 --shard-size 1M --quiet ||
        die "shardify of the archive failed"
    cmp "$T/out/index.jsonl" "$C/fromtar/index.jsonl" || die "archive index differs"
    "$PYTHON" -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["rejected"] == b["rejected"] and a["shards"] == b["shards"], "archive manifest differs"
' "$T/out/manifest.json" "$C/fromtar/manifest.json"
}

case_a_truncated_archive_fails_cleanly_and_publishes_nothing() {
    size=$(wc -c <"$T/mut.tar")
    head -c $((size / 2)) "$T/mut.tar" >"$C/cut.tar"
    must_fail 1 timeout 900 shardify "$C/cut.tar" "$C/cutout" --size 64 --quiet
    must_say "cannot read archive" "$T/err"
    [ ! -e "$C/cutout/manifest.json" ] || die "a manifest from a truncated archive"
}

case_a_sliver_whose_output_height_overflows_32_bits_is_refused_not_squashed() {
    # 1 x 8388611 pixels (33 KB of PNG): at --size 512 the output would be
    # 512 x 4294968832; cut to 32 bits that is 512 x 1536, a plausible image
    mkdir -p "$C/wrap/a"
    "$PYTHON" - "$C/wrap/a/sliver.png" <<'PY'
import struct, sys, zlib
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
h = (1 << 23) + 3
with open(sys.argv[1], "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * (4 * h), 9)) + chunk(b"IEND", b""))
PY
    timeout 900 shardify "$C/wrap" "$C/wrapout" --size 512 --allow-empty --json >"$C/wrap.json" 2>"$C/err" ||
        { cat "$C/err" >&2; die "shardify failed"; }
    [ "$(json "$C/wrap.json" 'd["samples"]')" = 0 ] ||
        die "the sliver was ingested as: $(cat "$C/wrapout/index.jsonl")"
    reason=$(json "$C/wrap.json" 'd["rejects"][0]["reason"]')
    case $reason in *"over --max-pixels"*) ;; *) die "sliver rejected for the wrong reason: $reason" ;; esac
}

run_cases
