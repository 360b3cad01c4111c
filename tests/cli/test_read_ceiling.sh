#!/bin/sh
# test_read_ceiling.sh - bench/read_ceiling, the decode-only ceiling of a shard
# reader: it decodes every sample of a dataset, counts them and the shard bytes
# right, offers the TurboJPEG decoders for JPEG only, and fails clearly on
# damaged shards and bad arguments.
. "$(dirname "$0")/lib.sh"

CEILING="$SHARDKIT_BIN/../bench/read_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

mkdir -p "$T/src/a" "$T/src/b"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/one.jpg"
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/a/two.jpg"
cp "$SHARDKIT_FIXTURES/exif_rot6.png" "$T/src/b/three.png"
shardify "$T/src" "$T/jpeg" --size 48 --quiet
shardify "$T/src" "$T/raw" --size 48 --codec raw --quiet

say "jpeg shards: every sample decoded by all three decoders"
"$CEILING" --json --reps 2 --threads 2 "$T/jpeg" >"$T/j.json"
[ "$(json "$T/j.json" 'd["samples"]')" = 3 ] || die "samples: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'd["codec"]')" = jpeg ] || die "codec: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'sorted(d["decode_samples_per_second"])')" = \
  "['reader', 'turbo-exact', 'turbo-fast']" ] || die "decoders: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'all(v > 0 for v in d["decode_samples_per_second"].values())')" = True ] ||
    die "rates: $(cat "$T/j.json")"
# the shard bytes per sample are the manifest's shard sizes over its samples
want=$("$PYTHON" -c 'import json,sys; m=json.load(open(sys.argv[1]))
print(round(sum(s["bytes"] for s in m["shards"]) / sum(s["samples"] for s in m["shards"])))' \
    "$T/jpeg/manifest.json")
[ "$(json "$T/j.json" 'd["shard_bytes_per_sample"]')" = "$want" ] ||
    die "bytes per sample: want $want, $(cat "$T/j.json")"

say "raw shards: the reader's decoder only (TurboJPEG reads JPEG)"
"$CEILING" --json --reps 1 "$T/raw" >"$T/r.json"
[ "$(json "$T/r.json" 'd["codec"]')" = raw ] || die "codec: $(cat "$T/r.json")"
[ "$(json "$T/r.json" 'list(d["decode_samples_per_second"])')" = "['reader']" ] ||
    die "decoders: $(cat "$T/r.json")"
"$CEILING" --reps 1 "$T/raw" >"$T/r.txt"
must_say "3 samples" "$T/r.txt"

say "a damaged record is an error naming it, not a rate"
shard=$(ls "$T/jpeg"/*.shard | head -n 1)
flip_byte "$shard" 200 # inside the first record's frame
must_fail 1 "$CEILING" --reps 1 "$T/jpeg"
must_say "record 0" "$T/err"

say "bad arguments are usage errors"
must_fail 2 "$CEILING"
must_say "Usage:" "$T/err"
must_fail 2 "$CEILING" --threads 0 "$T/raw"
must_say "--threads" "$T/err"
must_fail 2 "$CEILING" --reps x "$T/raw"
must_fail 2 "$CEILING" --frobnicate "$T/raw"
must_fail 1 "$CEILING" "$T/missing"
must_say "$T/missing" "$T/err"
"$CEILING" --help | grep -q "Usage:" || die "--help"
echo "read_ceiling checks passed"
