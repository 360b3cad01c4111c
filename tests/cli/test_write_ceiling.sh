#!/bin/sh
# test_write_ceiling.sh - bench/write_ceiling, shardify's ceiling from memory:
# it converts every candidate shardify would (and counts the ones shardify
# rejects), reports both stages, follows --size/--codec/--fit, and fails
# clearly on bad arguments.
. "$(dirname "$0")/lib.sh"

CEILING="$SHARDKIT_BIN/../bench/write_ceiling"
[ -x "$CEILING" ] || die "no $CEILING (make test builds it)"

mkdir -p "$T/src/a" "$T/src/b"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/one.jpg"
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/a/two.jpg"
cp "$SHARDKIT_FIXTURES/exif_rot6.png" "$T/src/b/three.png"
cp "$SHARDKIT_FIXTURES/truncated.jpg" "$T/src/b/four.jpg"
echo "not an image" >"$T/src/b/notes.txt"

say "every candidate is converted by both stages; the truncated one fails"
"$CEILING" --json --reps 2 --threads 2 --size 48 "$T/src" >"$T/c.json"
[ "$(json "$T/c.json" 'd["images"]')" = 4 ] || die "images: $(cat "$T/c.json")"
[ "$(json "$T/c.json" 'd["failed"]')" = 1 ] || die "failed: $(cat "$T/c.json")"
[ "$(json "$T/c.json" 'sorted(d["images_per_second"])')" = "['build', 'decode']" ] ||
    die "stages: $(cat "$T/c.json")"
[ "$(json "$T/c.json" 'all(v > 0 for v in d["images_per_second"].values())')" = True ] ||
    die "rates: $(cat "$T/c.json")"
# the source bytes are the candidates' sizes (not the text file's)
want=$(cat "$T/src/a/one.jpg" "$T/src/a/two.jpg" "$T/src/b/three.png" "$T/src/b/four.jpg" | wc -c)
[ "$(json "$T/c.json" 'd["source_bytes"]')" = "$want" ] ||
    die "source bytes: want $want, $(cat "$T/c.json")"

say "the options reach the conversion"
"$CEILING" --json --reps 1 --size 32 --codec raw --fit crop --quality 50 "$T/src" >"$T/o.json"
[ "$(json "$T/o.json" '(d["size"], d["codec"], d["fit"])')" = "(32, 'raw', 'crop')" ] ||
    die "options: $(cat "$T/o.json")"
"$CEILING" --reps 1 "$T/src" >"$T/c.txt"
must_say "4 images (1 do not convert)" "$T/c.txt"

say "bad arguments are usage errors; a missing or empty folder fails"
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
mkdir "$T/empty"
must_fail 1 "$CEILING" "$T/empty"
must_say "no image to convert" "$T/err"
"$CEILING" --help | grep -q "Usage:" || die "--help"
echo "write_ceiling checks passed"
