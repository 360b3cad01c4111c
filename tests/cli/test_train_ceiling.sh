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

# the jpeg shards every case reads: $T/jpeg (of $T/src)
ceiling_jpeg

case_every_sample_through_the_pipeline_the_ceiling_is_one_cores_rate_times_the_cores() {
    "$CEILING" --json --reps 2 --threads 2 --crop 16 "$T/jpeg" >"$C/j.json"
    [ "$(json "$C/j.json" 'd["samples"]')" = 3 ] || die "samples: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" 'd["cores"]')" = 2 ] || die "cores: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" 'd["one_core_samples_per_second"] > 0')" = True ] ||
        die "rate: $(cat "$C/j.json")"
    [ "$(json "$C/j.json" \
        'abs(d["ceiling_samples_per_second"] - 2 * d["one_core_samples_per_second"]) < 1')" = True ] ||
        die "ceiling: $(cat "$C/j.json")"
}

case_the_box_of_a_224_px_crop_of_a_48_px_image_is_never_twice_the_output_no_dct_scaling() {
    "$CEILING" --json --reps 1 --threads 1 "$T/jpeg" >"$C/big.json"
    [ "$(json "$C/big.json" 'd["dct_scaled_samples"]')" = 0 ] || die "dct: $(cat "$C/big.json")"
}

case_the_text_report_gives_the_samples_and_the_ceiling() {
    "$CEILING" --reps 1 --threads 1 "$T/jpeg" >"$C/j.txt"
    must_say "3 samples" "$C/j.txt"
    must_say "ceiling" "$C/j.txt"
}

case_a_damaged_record_is_an_error_naming_it_not_a_rate() {
    ceiling_damaged_record "$C"
}

case_bad_arguments_are_usage_errors_crop_0_too() {
    ceiling_usage_errors "$T/jpeg"
    must_fail 2 "$CEILING" --crop 0 "$T/jpeg"
    must_say "--crop" "$T/err"
}

run_cases
