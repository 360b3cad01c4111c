# ceiling_lib.sh - what the tests of the ceiling benchmarks share (sourced
# after lib.sh by test_read_ceiling.sh and test_train_ceiling.sh, with
# CEILING the benchmark's program).

# ceiling_jpeg: $T/src, three fixture images in two class folders, and
# $T/jpeg, their 48-px jpeg shards.
ceiling_jpeg() {
    mkdir -p "$T/src/a" "$T/src/b"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/one.jpg"
    cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/a/two.jpg"
    cp "$SHARDKIT_FIXTURES/exif_rot6.png" "$T/src/b/three.png"
    shardify "$T/src" "$T/jpeg" --size 48 --quiet
}

# ceiling_damaged_record DIR: a damaged record of a copy of $T/jpeg (in
# DIR/damaged, damaged there) is an error naming it, not a rate.
ceiling_damaged_record() {
    cp -r "$T/jpeg" "$1/damaged"
    flip_byte "$(ls "$1/damaged"/*.shard | head -n 1)" 200 # inside the first record's frame
    must_fail 1 "$CEILING" --reps 1 "$1/damaged"
    must_say "record 0" "$T/err"
}

# ceiling_usage_errors DATASET: bad arguments before DATASET are usage errors.
ceiling_usage_errors() {
    must_fail 2 "$CEILING"
    must_say "Usage:" "$T/err"
    must_fail 2 "$CEILING" --threads 0 "$1"
    must_say "--threads" "$T/err"
    must_fail 2 "$CEILING" --reps x "$1"
    must_say "--reps" "$T/err"
    must_fail 2 "$CEILING" --frobnicate "$1"
    must_say "--frobnicate" "$T/err"
    must_fail 1 "$CEILING" "$T/missing"
    must_say "$T/missing" "$T/err"
    "$CEILING" --help | grep -q "Usage:" || die "--help"
}
