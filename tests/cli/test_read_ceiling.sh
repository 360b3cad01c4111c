#!/bin/sh
# test_read_ceiling.sh - bench/read_ceiling, the decode-only ceiling of a shard
# reader: it decodes every sample of a dataset, counts them and the shard bytes
# right, offers the TurboJPEG decoders for JPEG only, and fails clearly on
# damaged shards and bad arguments.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ceiling_lib.sh"

CEILING="$SHARDKIT_BIN/../bench/read_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

# the shards the cases read: $T/jpeg and $T/raw, both of $T/src
ceiling_jpeg
shardify "$T/src" "$T/raw" --size 48 --codec raw --quiet

case_jpeg_shards_every_sample_decoded_by_all_three_decoders() {
    "$CEILING" --json --reps 2 --threads 2 "$T/jpeg" >"$C/j.json"
    [ "$(json "$C/j.json" 'd["samples"]')" = 3 ] || die "samples: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" 'd["codec"]')" = jpeg ] || die "codec: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" 'sorted(d["decode_samples_per_second"])')" = \
      "['reader', 'turbo-exact', 'turbo-fast']" ] || die "decoders: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" 'all(v > 0 for v in d["decode_samples_per_second"].values())')" = True ] ||
        die "rates: $(cat "$C/j.json")"
    # the shard bytes per sample are the manifest's shard sizes over its samples
    want=$("$PYTHON" -c 'import json,sys; m=json.load(open(sys.argv[1]))
print(round(sum(s["bytes"] for s in m["shards"]) / sum(s["samples"] for s in m["shards"])))' \
        "$T/jpeg/manifest.json")
    [ "$(json "$C/j.json" 'd["shard_bytes_per_sample"]')" = "$want" ] ||
        die "bytes per sample: want $want, $(cat "$C/j.json")"
}

case_raw_shards_the_readers_decoder_only_turbojpeg_reads_jpeg() {
    "$CEILING" --json --reps 1 "$T/raw" >"$C/r.json"
    [ "$(json "$C/r.json" 'd["codec"]')" = raw ] || die "codec: $(cat "$C/r.json")"
    [ "$(json "$C/r.json" 'list(d["decode_samples_per_second"])')" = "['reader']" ] ||
        die "decoders: $(cat "$C/r.json")"
    "$CEILING" --reps 1 "$T/raw" >"$C/r.txt"
    must_say "3 samples" "$C/r.txt"
}

case_a_damaged_record_is_an_error_naming_it_not_a_rate() {
    ceiling_damaged_record "$C"
}

case_bad_arguments_are_usage_errors() {
    ceiling_usage_errors "$T/raw"
}

run_cases
