#!/bin/sh
# test_older_names.sh - a program written against shardkit 0.1.0's names
# (struct shard_augment and shard_augment_*, SHARD_AUGMENT_*, shard_transform
# and shard_transform_from, shard_loader_options.part and .parts) still
# compiles against the current headers, with a deprecation warning naming
# each new name and no other warning; it calls the old exported symbols of
# libshardkit.so, and each gives what its new name gives
# (tests/fixtures/older_names.c compares them, and 0.1.0's option layout).
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
[ -e "$BUILD/libshardkit.so" ] || die "no $BUILD/libshardkit.so: the build makes the shared library"
extra=""
# a sanitizer build's library needs the sanitizer runtime in the program too
nm "$BUILD/libshardkit.a" 2>/dev/null | grep -q __asan_ && extra="-fsanitize=address,undefined"

say "the program of older names compiles, warning only that they are deprecated"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations $extra \
    -I"$SHARDKIT_TOP/include" "$SHARDKIT_TOP/tests/fixtures/older_names.c" \
    -L"$BUILD" -lshardkit -o "$T/older" 2>"$T/cc.log" ||
    { cat "$T/cc.log" >&2; die "a program using the older names does not build"; }
grep 'warning:' "$T/cc.log" | grep -v 'is deprecated: use ' >&2 &&
    die "warnings other than deprecations"
for pair in "shard_augment_new:shard_transforms_new" "shard_augment_step_init:shard_transform_step_init" \
            "shard_augment_apply:shard_transforms_apply" "shard_augment_mask:shard_transforms_mask" \
            "SHARD_AUGMENT_NORMALIZE:SHARD_TRANSFORM_NORMALIZE" \
            "shard_transform:shard_geometry_apply" \
            "shard_transform_from:shard_geometry_apply_decoded" "part:worker" "parts:workers"; do
    old=${pair%%:*} new=${pair#*:}
    grep -q "‘$old’ is deprecated: use $new\$\|'$old' is deprecated: use $new\$\|‘$old’ is deprecated: use $new \[" "$T/cc.log" ||
        { cat "$T/cc.log" >&2; die "no deprecation warning for '$old' naming '$new'"; }
done

say "it links the older symbols of libshardkit.so"
nm -u "$T/older" >"$T/undefined"
for sym in shard_augment_new shard_augment_free shard_augment_step_init shard_augment_draw \
           shard_augment_apply shard_augment_boxes shard_augment_mask shard_augment_layout \
           shard_augment_dtype shard_augment_fixed_size shard_augment_workspace_new \
           shard_augment_workspace_free shard_transform shard_transform_from; do
    grep -q " U $sym\$" "$T/undefined" || die "the program does not call '$sym'"
    nm -D --defined-only "$BUILD/libshardkit.so" | grep -q " T $sym\$" ||
        die "libshardkit.so does not export '$sym'"
done
readelf -d "$T/older" | grep -q 'NEEDED.*libshardkit\.so\.' || die "not linked to the shared library"

say "each older name does what its new one does"
mkdir -p "$T/src/a"
i=0
while [ $i -lt 6 ]; do
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/$i.jpg"
    i=$((i + 1))
done
shardify "$T/src" "$T/dst" --size 24 --quiet
LD_LIBRARY_PATH="$BUILD" "$T/older" "$T/dst" >"$T/out" || { cat "$T/out" >&2; die "older names differ"; }
# the geometry: older_names.c's 50x20 picture, 12 by the shorter side and a
# centre crop; six samples in batches of one: worker 1 of 2 makes the odd ones
printf 'ok transforms\nok geometry 12x12\nok loader batches 1 3 5\n' >"$T/want"
cmp -s "$T/want" "$T/out" || { diff "$T/want" "$T/out" >&2; die "unexpected output"; }
say "a program of the tools' helpers 0.1.0 exported still builds, links them and gets what it got"
# shardkit/json.h declares them with jansson's struct json_t, without <jansson.h>
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations $extra \
    -I"$SHARDKIT_TOP/include" $(pkg-config --cflags jansson) "$SHARDKIT_TOP/tests/fixtures/older_helpers.c" \
    -L"$BUILD" -lshardkit $(pkg-config --libs jansson) -o "$T/helpers" 2>"$T/cc.log" ||
    { cat "$T/cc.log" >&2; die "a program using the tools' older helpers does not build"; }
for old in shard_quote shard_redact_urls shard_utf8_len shard_utf8_shown_len shard_size_parse \
           shard_size_format shard_size_unit shard_json_set_key shard_json_set_bytes; do
    grep -q "‘$old’ is deprecated: no longer in the API, removed in 0.3.0\|'$old' is deprecated: no longer in the API, removed in 0.3.0" "$T/cc.log" ||
        { cat "$T/cc.log" >&2; die "no deprecation warning for '$old' giving its removal"; }
    nm -u "$T/helpers" | grep -q " U $old\$" || die "the program does not call '$old' of the library"
done
LD_LIBRARY_PATH="$BUILD" "$T/helpers" >"$T/out" || { cat "$T/out" >&2; die "the older helpers failed"; }
cat >"$T/want" <<'WANT'
quote a\x09b\\c
redact get https://***@host/d
utf8 3 0
size 0 16777216 -3 1.5 KiB 1048576 MiB
json {"key_hex":"ff","path":"p"}
WANT
cmp -s "$T/want" "$T/out" || { diff "$T/want" "$T/out" >&2; die "the older helpers give other results"; }

echo "older names checks passed"
