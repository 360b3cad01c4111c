#!/bin/sh
# test_write_ceiling.sh - bench/write_ceiling, shardify's ceiling from memory:
# it converts every candidate shardify would (and counts the ones shardify
# rejects), reports both stages, follows --size/--codec/--fit, and fails
# clearly on bad arguments.
. "$(dirname "$0")/lib.sh"

CEILING="$SHARDKIT_BIN/../bench/write_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

# the source every case reads: four candidates (one truncated) and a text file
mkdir -p "$T/src/a" "$T/src/b"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/one.jpg"
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/a/two.jpg"
cp "$SHARDKIT_FIXTURES/exif_rot6.png" "$T/src/b/three.png"
cp "$SHARDKIT_FIXTURES/truncated.jpg" "$T/src/b/four.jpg"
echo "not an image" >"$T/src/b/notes.txt"

case_every_candidate_is_converted_by_both_stages_the_truncated_one_fails() {
    "$CEILING" --json --reps 2 --threads 2 --size 48 "$T/src" >"$C/c.json"
    [ "$(json "$C/c.json" 'd["images"]')" = 4 ] || die "images: $(cat "$C/c.json")"
    [ "$(json "$C/c.json" 'd["failed"]')" = 1 ] || die "failed: $(cat "$C/c.json")"
    [ "$(json "$C/c.json" 'sorted(d["images_per_second"])')" = "['build', 'decode']" ] ||
        die "stages: $(cat "$C/c.json")"
    [ "$(json "$C/c.json" 'all(v > 0 for v in d["images_per_second"].values())')" = True ] ||
        die "rates: $(cat "$C/c.json")"
    # the source bytes are the candidates' sizes (not the text file's)
    want=$(cat "$T/src/a/one.jpg" "$T/src/a/two.jpg" "$T/src/b/three.png" "$T/src/b/four.jpg" | wc -c)
    [ "$(json "$C/c.json" 'd["source_bytes"]')" = "$want" ] ||
        die "source bytes: want $want, $(cat "$C/c.json")"
}

case_the_options_reach_the_conversion() {
    "$CEILING" --json --reps 1 --size 32 --codec raw --fit crop --quality 50 "$T/src" >"$C/o.json"
    [ "$(json "$C/o.json" '(d["size"], d["codec"], d["fit"])')" = "(32, 'raw', 'crop')" ] ||
        die "options: $(cat "$C/o.json")"
    "$CEILING" --reps 1 "$T/src" >"$C/c.txt"
    must_say "4 images (1 do not convert)" "$C/c.txt"
}

case_bad_arguments_are_usage_errors_a_missing_or_empty_folder_fails() {
    must_fail 2 "$CEILING"
    must_say "Usage:" "$T/err"
    must_fail 2 "$CEILING" --threads 0 "$T/src"
    must_say "--threads" "$T/err"
    must_fail 2 "$CEILING" --size 0 "$T/src"
    must_say "--size" "$T/err"
    must_fail 2 "$CEILING" --codec gif "$T/src"
    must_fail 2 "$CEILING" --frobnicate "$T/src"
    must_fail 2 "$CEILING" "$T/src" "$T/src"
    must_fail 1 "$CEILING" "$T/missing"
    must_say "missing" "$T/err"
    mkdir "$C/empty"
    must_fail 1 "$CEILING" "$C/empty"
    must_say "no image to convert" "$T/err"
    "$CEILING" --help | grep -q "Usage:" || die "--help"
}

run_cases
