#!/bin/sh
# test_train_ceiling.sh - bench/train_ceiling, the ceiling of the jpeg training
# pipeline: it runs the Loader's per-sample work on every sample (the same
# output the Loader gives, checked here through its counts), reports one
# core's rate times the cores and the boxes that DCT scaling would apply
# to, and fails clearly on damaged shards and bad arguments.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ceiling_lib.sh"

CEILING="$SHARDKIT_BIN/../bench/train_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

ceiling_jpeg

say "every sample through the pipeline; the ceiling is one core's rate times the cores"
"$CEILING" --json --reps 2 --threads 2 --crop 16 "$T/jpeg" >"$T/j.json"
[ "$(json "$T/j.json" 'd["samples"]')" = 3 ] || die "samples: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'd["cores"]')" = 2 ] || die "cores: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'd["one_core_samples_per_second"] > 0')" = True ] ||
    die "rate: $(cat "$T/j.json")"
[ "$(json "$T/j.json" 'abs(d["ceiling_samples_per_second"] - 2 * d["one_core_samples_per_second"]) < 1')" = True ] ||
    die "ceiling: $(cat "$T/j.json")"
# the box of a 224-px crop of a 48-px image is never twice the output
"$CEILING" --json --reps 1 --threads 1 "$T/jpeg" >"$T/big.json"
[ "$(json "$T/big.json" 'd["dct_scaled_samples"]')" = 0 ] || die "dct: $(cat "$T/big.json")"
"$CEILING" --reps 1 --threads 1 "$T/jpeg" >"$T/j.txt"
must_say "3 samples" "$T/j.txt"
must_say "ceiling" "$T/j.txt"

ceiling_refusals "$T/jpeg"
must_fail 2 "$CEILING" --crop 0 "$T/jpeg"
must_say "--crop" "$T/err"
echo "train_ceiling checks passed"
