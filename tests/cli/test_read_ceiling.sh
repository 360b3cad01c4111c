#!/bin/sh
# test_read_ceiling.sh - bench/read_ceiling, the decode-only ceiling of a shard
# reader: it decodes every sample of a dataset, counts them and the shard bytes
# right, offers the TurboJPEG decoders for JPEG only, and fails clearly on
# damaged shards and bad arguments.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ceiling_lib.sh"

CEILING="$SHARDKIT_BIN/../bench/read_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

ceiling_jpeg
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

ceiling_refusals "$T/raw"
echo "read_ceiling checks passed"
