#!/bin/sh
# test_older_names.sh - a program written against shardkit 0.1.0's names
# (struct shard_augment and shard_augment_*, SHARD_AUGMENT_*, shard_transform
# and shard_transform_from, shard_loader_options.part and .parts, the window
# cache's shard_dataset_options.cache_bytes, SHARD_DATASET_DEFAULT_CACHE and
# shard_dataset_drop_cache) still compiles against the current headers, with
# a deprecation warning naming each new name and no other warning; it calls
# the old exported symbols of libshardkit.so, and each gives what its new name
# gives (tests/fixtures/older_names.c compares them, and 0.1.0's option
# layouts; the window cache over HTTP, from nginx).  shardbench's --cache is
# --window-cache, with a warning.
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
[ -e "$BUILD/libshardkit.so" ] || die "no $BUILD/libshardkit.so: the build makes the shared library"
extra=""
# a sanitizer build's library needs the sanitizer runtime in the program too
nm "$BUILD/libshardkit.a" 2>/dev/null | grep -q __asan_ && extra="-fsanitize=address,undefined"

# the set-up: the program of older names built ($T/older, its compiler's
# messages in $T/cc.log); a dataset of six samples ($T/dst), the same raw
# ($T/raw) served by nginx at $U
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations $extra \
    -I"$SHARDKIT_TOP/include" "$SHARDKIT_TOP/tests/fixtures/older_names.c" \
    -L"$BUILD" -lshardkit -o "$T/older" 2>"$T/cc.log" ||
    { cat "$T/cc.log" >&2; die "a program using the older names does not build"; }
mkdir -p "$T/src/a"
i=0
while [ $i -lt 6 ]; do
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/a/$i.jpg"
    i=$((i + 1))
done
shardify "$T/src" "$T/dst" --size 24 --quiet
# the window cache's: a shard of six 4K windows (raw 32x32 samples, 3 KiB each)
shardify "$T/src" "$T/raw" --size 32 --codec raw --quiet
HTTP_SERVER="$SHARDKIT_TOP/bench/http_server.sh"
stop_server() { "$HTTP_SERVER" stop "$T/http" >/dev/null 2>&1 || true; }
on_exit stop_server
U=$("$HTTP_SERVER" start "$T/http" raw="$T/raw") || die "cannot start nginx (scripts/deps.sh installs it)"

case_the_program_of_older_names_compiles_warning_only_that_each_is_deprecated_naming_its_new_name() {
    grep 'warning:' "$T/cc.log" | grep -v 'is deprecated: use ' >&2 &&
        die "warnings other than deprecations"
    for pair in "shard_augment_new:shard_transforms_new" \
                "shard_augment_step_init:shard_transform_step_init" \
                "shard_augment_apply:shard_transforms_apply" "shard_augment_mask:shard_transforms_mask" \
                "SHARD_AUGMENT_NORMALIZE:SHARD_TRANSFORM_NORMALIZE" \
                "shard_transform:shard_geometry_apply" \
                "shard_transform_from:shard_geometry_apply_decoded" "part:worker" "parts:workers" \
                "cache_bytes:window_cache_bytes" "shard_dataset_drop_cache:shard_dataset_drop_window_cache"; do
        old=${pair%%:*} new=${pair#*:}
        grep -q "‘$old’ is deprecated: use $new\$\|'$old' is deprecated: use $new\$\|‘$old’ is deprecated: use $new \[" "$T/cc.log" ||
            { cat "$T/cc.log" >&2; die "no deprecation warning for '$old' naming '$new'"; }
    done
}

case_it_links_the_older_symbols_of_libshardkit_so() {
    nm -u "$T/older" >"$C/undefined"
    for sym in shard_augment_new shard_augment_free shard_augment_step_init shard_augment_draw \
               shard_augment_apply shard_augment_boxes shard_augment_mask shard_augment_layout \
               shard_augment_dtype shard_augment_fixed_size shard_augment_workspace_new \
               shard_augment_workspace_free shard_transform shard_transform_from \
               shard_dataset_drop_cache; do
        grep -q " U $sym\$" "$C/undefined" || die "the program does not call '$sym'"
        nm -D --defined-only "$BUILD/libshardkit.so" | grep -q " T $sym\$" ||
            die "libshardkit.so does not export '$sym'"
    done
    readelf -d "$T/older" | grep -q 'NEEDED.*libshardkit\.so\.' || die "not linked to the shared library"
}

case_each_older_name_does_what_its_new_one_does_window_cache_over_http_included() {
    LD_LIBRARY_PATH="$BUILD" "$T/older" "$T/dst" "$U/raw" >"$C/out" ||
        { cat "$C/out" >&2; die "older names differ"; }
    # the geometry: older_names.c's 50x20 picture, 12 by the shorter side and a
    # centre crop; six samples in batches of one: worker 1 of 2 makes the odd ones
    printf 'ok transforms\nok geometry 12x12\nok loader batches 1 3 5\nok window cache\n' >"$C/want"
    cmp -s "$C/want" "$C/out" || { diff "$C/want" "$C/out" >&2; die "unexpected output"; }
}

case_shardbenchs_cache_option_is_window_cache_and_says_so() {
    # a window cache smaller than the window is refused, whichever name set it
    must_fail 1 shardbench shards "$T/dst" --window 8K --window-cache 4K
    must_fail 1 shardbench shards "$T/dst" --window 8K --cache 4K
    grep -qx 'shardbench: warning: --cache is deprecated: use --window-cache' "$T/err" ||
        die "no deprecation warning for --cache: $(cat "$T/err")"
    grep -q "window cache of 4096 bytes is smaller than the window (8192 bytes)" "$T/err" ||
        die "--cache did not set the window cache: $(cat "$T/err")"
    shardbench shards "$T/dst" --epochs 1 --window 64K --window-cache 64K --json >"$C/run.json" \
        2>"$C/new.err" || die "--window-cache: $(cat "$C/new.err")"
    [ "$(json "$C/run.json" "d['first_epoch']['samples']")" = 6 ] ||
        die "--window-cache: $(cat "$C/run.json")"
    [ ! -s "$C/new.err" ] || die "--window-cache warns: $(cat "$C/new.err")"
    must_fail 2 shardbench shards "$T/dst" --cache 1K
    grep -q "^shardbench: --cache: '1K' is not a size of at least 4K" "$T/err" ||
        die "--cache's error does not name it: $(cat "$T/err")"
}

case_a_program_of_the_tools_helpers_0_1_0_exported_still_builds_links_them_and_gets_what_it_got() {
    # shardkit/json.h declares them with jansson's struct json_t, without <jansson.h>
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations $extra \
        -I"$SHARDKIT_TOP/include" $(pkg-config --cflags jansson) \
        "$SHARDKIT_TOP/tests/fixtures/older_helpers.c" \
        -L"$BUILD" -lshardkit $(pkg-config --libs jansson) -o "$C/helpers" 2>"$C/cc.log" ||
        { cat "$C/cc.log" >&2; die "a program using the tools' older helpers does not build"; }
    for old in shard_quote shard_redact_urls shard_utf8_len shard_utf8_shown_len shard_size_parse \
               shard_size_format shard_size_unit shard_json_set_key shard_json_set_bytes; do
        grep -q "‘$old’ is deprecated: no longer in the API, removed in 0.4.0\|'$old' is deprecated: no longer in the API, removed in 0.4.0" "$C/cc.log" ||
            { cat "$C/cc.log" >&2; die "no deprecation warning for '$old' giving its removal"; }
        nm -u "$C/helpers" | grep -q " U $old\$" || die "the program does not call '$old' of the library"
    done
    LD_LIBRARY_PATH="$BUILD" "$C/helpers" >"$C/out" || { cat "$C/out" >&2; die "the older helpers failed"; }
    cat >"$C/want" <<'WANT'
quote a\x09b\\c
redact get https://***@host/d
utf8 3 0
size 0 16777216 -3 1.5 KiB 1048576 MiB
json {"key_hex":"ff","path":"p"}
WANT
    cmp -s "$C/want" "$C/out" || { diff "$C/want" "$C/out" >&2; die "the older helpers give other results"; }
}

run_cases
