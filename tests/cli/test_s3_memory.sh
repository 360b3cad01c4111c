#!/bin/sh
# test_s3_memory.sh - what the read-ahead of an S3 source holds is held to
# --memory, not to the files under way x --max-file-size: eight 40 MiB
# objects (zeros named .jpg, rejected as no image) and one image, converted
# from moto's server with --memory 48M, are read one at a time (each file's
# listed size is taken from the budget before its GET; all at once, as 16
# connections fetched them, was 270 MiB); every one is still read once,
# and the counts are a directory's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

mkdir -p "$T/big"
for i in 0 1 2 3 4 5 6 7; do truncate -s 40M "$T/big/f$i.jpg"; done
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/big/small.jpg"

start_store moto
export AWS_ENDPOINT_URL=$ENDPOINT
boto put-tree "$S3_BUCKET" big "$T/big" || die "boto3 could not upload the source"
# the conversion both cases read: from the store, 2 threads, --memory 48M, its
# peak RSS measured (its stderr kept as $T/dst.err)
kib=$(peak_kib shardify "s3://$S3_BUCKET/big" "$T/dst" --labels none --memory 48M --threads 2 --quiet)
cp "$T/err" "$T/dst.err"

case_eight_40_mib_objects_with_2_threads_and_memory_48m_are_read_one_at_a_time() {
    [ -f "$T/dst/manifest.json" ] || { cat "$T/dst.err" >&2; die "no dataset"; }
    [ "$(json "$T/dst/manifest.json" "d['counts']['rejected'], d['counts']['samples']")" = "(8, 1)" ] ||
        die "counts: $(json "$T/dst/manifest.json" "d['counts']")"
    # one object (40 MiB) in the read-ahead, one in a slot, its decode attempt
    # and the program; a sanitizer build keeps freed memory aside for a while
    # (ASan's quarantine, 256 MiB)
    limit=200000
    nm "$SHARDKIT_BIN/shardify" 2>/dev/null | grep -q __asan_ && limit=$((limit + 300000))
    echo "peak RSS $kib KiB (limit $limit)"
    [ "$kib" -lt "$limit" ] || die "peak RSS $kib KiB: the objects were held at once"
}

case_the_same_source_converted_from_a_directory_gives_the_same_dataset() {
    shardify "$T/big" "$C/local" --labels none --quiet
    "$PYTHON" - "$T/dst/manifest.json" "$C/local/manifest.json" <<'EOF' || die "the S3 conversion differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["counts"] == b["counts"], (a["counts"], b["counts"])
assert [s["xxh3"] for s in a["shards"]] == [s["xxh3"] for s in b["shards"]]
assert sorted(r["key"] for r in a["rejected"]) == sorted(r["key"] for r in b["rejected"])
EOF
}

run_cases
