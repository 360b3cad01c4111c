#!/bin/sh
# test_symbols.sh - libshardkit.so exports exactly the functions include/
# declares with SHARD_API, listed in their two tiers (stable, and
# experimental: declared only with SHARDKIT_EXPERIMENTAL) and the deprecated
# older names: nothing internal leaks (sk_, and the programs' helpers
# shardx_), nothing public is missing, no data symbol is exported, a program
# without the macro cannot see an experimental function, and no public
# header includes <jansson.h>.  Also: the soname carries the major version,
# and libzstd is linked statically.  shardbench's engine (cmd/shardbench/engine)
# is no part of the libraries and calls only what include/ declares.
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
so="$BUILD/libshardkit.so"
[ -e "$so" ] || die "no $so: the build makes the shared library"

# "NAME" per line of every function declared SHARD_API by the public headers,
# preprocessed as a program compiling with the flags $@ sees them (SHARD_API
# is the visibility attribute then); $T/deprecated.raw gets those marked
# SHARD_DEPRECATED.
declared() {
    for h in "$SHARDKIT_TOP"/include/shardkit.h "$SHARDKIT_TOP"/include/shardkit/*.h; do
        cc -E -P "$@" -I"$SHARDKIT_TOP/include" -x c "$h" | tr '\n' ' ' | tr ';' '\n' |
            grep 'visibility *( *"default" *)'
    done | sort -u >"$T/decls"
    grep 'deprecated *(' "$T/decls" | sed 's/.*visibility *( *"default" *) *) *)//' |
        grep -o '^[^(]*(' | sed 's/ *($//; s/.*[ *]//' | sort -u >"$T/deprecated.raw"
    sed 's/.*visibility *( *"default" *) *) *)//' "$T/decls" | grep -o '^[^(]*(' |
        sed 's/ *($//; s/.*[ *]//' | sort -u
}
# the declarations the cases read: every one ($T/declared), those a program
# sees without SHARDKIT_EXPERIMENTAL ($T/visible) and the older names
# ($T/deprecated)
declared -DSHARDKIT_EXPERIMENTAL >"$T/declared"
cp "$T/deprecated.raw" "$T/deprecated"
declared >"$T/visible"
[ "$(wc -l <"$T/declared")" -gt 100 ] || die "found only $(wc -l <"$T/declared") declarations"
grep -qx shard_dataset_open "$T/visible" && grep -qx shard_augment_new "$T/deprecated" ||
    die "the declarations were not read: $(head -n 5 "$T/declared")"
# the tiers: stable is what a program sees without the macro but the older
# names, experimental what only the macro shows
comm -23 "$T/visible" "$T/deprecated" >"$T/stable"
comm -23 "$T/declared" "$T/visible" >"$T/experimental"

# "SYMBOL" per line: what the objects $@ call of the library's namespaces
# (sk_, shard_) that the declared list does not hold.
private_calls() {
    nm -u "$@" | awk '$1 == "U" && $2 ~ /^(sk|shard)_/ {print $2}' | sort -u |
        comm -23 - "$T/declared"
}

case_the_soname_is_libshardkit_so_major() {
    major=$(sed -n 's/^#define SHARDKIT_VERSION_MAJOR \([0-9]*\)$/\1/p' \
        "$SHARDKIT_TOP/include/shardkit/api.h")
    [ -n "$major" ] || die "no SHARDKIT_VERSION_MAJOR in api.h"
    objdump -p "$so" | grep -q "SONAME *libshardkit.so.$major\$" || die "soname is not libshardkit.so.$major"
}

case_the_exported_functions_are_the_stable_tier_the_experimental_tier_and_the_older_names() {
    both=$(comm -12 "$T/experimental" "$T/deprecated")
    [ -z "$both" ] || die "an older name is declared only with SHARDKIT_EXPERIMENTAL: $both"
    for tier in stable experimental deprecated; do
        echo "  $tier ($(wc -l <"$T/$tier")): $(tr '\n' ' ' <"$T/$tier")"
    done
    grep -qx shard_dataset_open "$T/stable" && grep -qx shard_loader_new "$T/stable" &&
        grep -qx shardify_run "$T/stable" && grep -qx shard_verify "$T/stable" &&
        grep -qx shard_manifest_load "$T/stable" || die "the stable tier lacks a stable function"
    grep -qx shard_file_open "$T/experimental" && grep -qx shard_mixture_new "$T/experimental" ||
        die "the experimental tier lacks an experimental function"
    nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "W" || $2 == "i" {print $3}' |
        sort -u >"$C/exported"
    if ! cmp -s "$T/declared" "$C/exported"; then
        echo "exported but not declared (<) / declared but not exported (>):" >&2
        comm -3 "$C/exported" "$T/declared" | sed 's/^\t/> /; t; s/^/< /' >&2
        die "the shared library's exports differ from include/"
    fi
}

case_a_program_that_does_not_define_shardkit_experimental_sees_no_experimental_function() {
    # One reference to each experimental function: each is an error without
    # the macro, and the program compiles with it.
    {
        echo '#include <shardkit.h>'
        echo 'void *experimental[] = {'
        sed 's/.*/    (void *)\&&,/' "$T/experimental"
        echo '};'
    } >"$C/planted_tier.c"
    cc -std=c11 -DSHARDKIT_EXPERIMENTAL -I"$SHARDKIT_TOP/include" $(pkg-config --cflags libzstd) \
        -c "$C/planted_tier.c" -o "$C/planted_tier.o" 2>"$C/cc.log" ||
        { cat "$C/cc.log" >&2; die "the experimental tier does not compile with SHARDKIT_EXPERIMENTAL"; }
    if cc -std=c11 -I"$SHARDKIT_TOP/include" -c "$C/planted_tier.c" -o "$C/planted_tier.o" \
        2>"$C/cc.log"; then
        die "a program without SHARDKIT_EXPERIMENTAL compiled experimental functions"
    fi
    grep -o "‘shard[a-z0-9_]*’ undeclared\|'shard[a-z0-9_]*' undeclared" "$C/cc.log" |
        sed "s/[‘’']//g; s/ undeclared//" | sort -u >"$C/hidden"
    cmp -s "$C/hidden" "$T/experimental" || {
        comm -3 "$C/hidden" "$T/experimental" >&2
        die "the experimental functions a program without the macro cannot see differ from the tier"
    }
}

case_no_public_header_includes_jansson_h() {
    for h in "$SHARDKIT_TOP"/include/shardkit.h "$SHARDKIT_TOP"/include/shardkit/*.h; do
        if cc -E -H -DSHARDKIT_EXPERIMENTAL -I"$SHARDKIT_TOP/include" -x c "$h" 2>&1 >/dev/null |
            grep -q 'jansson\.h'; then
            die "$(basename "$h") includes <jansson.h>"
        fi
    done
    printf '#include <jansson.h>\n' >"$C/with_jansson.h"
    cc -E -H $(pkg-config --cflags jansson) -x c "$C/with_jansson.h" 2>&1 >/dev/null |
        grep -q 'jansson\.h' || die "a planted include of jansson.h went unnoticed"
}

case_shardbenchs_engine_calls_only_the_public_api_and_no_library_holds_it() {
    ENGINE="$BUILD/obj/cmd/shardbench/engine"
    ls "$ENGINE"/*.o >/dev/null 2>&1 || die "no objects in $ENGINE: the build makes them"
    printf 'int sk_now_ns(void);\nint shard_nosuch(void);\nint shard_version(void);\n' >"$C/planted.c"
    printf 'int planted(void) { return sk_now_ns() + shard_nosuch() + shard_version(); }\n' >>"$C/planted.c"
    cc -c "$C/planted.c" -o "$C/planted.o"
    [ "$(private_calls "$C/planted.o" | tr '\n' ' ')" = "shard_nosuch sk_now_ns " ] ||
        die "a planted private call went unnoticed: $(private_calls "$C/planted.o")"
    found=$(private_calls "$ENGINE"/*.o)
    [ -z "$found" ] || { echo "$found" >&2; die "shardbench's engine calls the library's internals"; }
    nm -u "$ENGINE"/*.o | grep -q ' U shard_dataset_open_ex$' || die "the engine's calls were not read"
    nm -g --defined-only "$ENGINE"/*.o | awk 'NF == 3 {print $3}' | sort -u >"$C/engine"
    grep -qx bench_run "$C/engine" || die "the engine's functions were not read: $(cat "$C/engine")"
    for lib in "$BUILD/libshardkit.a" "$BUILD/libshardkit-read.a" "$so"; do
        nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u |
            comm -12 - "$C/engine" >"$C/inlib"
        [ ! -s "$C/inlib" ] || { cat "$C/inlib" >&2; die "$lib holds shardbench's engine"; }
    done
}

case_no_data_symbols_are_exported() {
    nm -D --defined-only "$so" | awk '$2 ~ /^[BDRGSV]$/ {print $3}' >"$C/data"
    [ ! -s "$C/data" ] || { cat "$C/data" >&2; die "data symbols exported"; }
}

case_internal_names_sk_and_shardx_stay_internal() {
    nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^(sk|shardx)_' >"$C/leaks" || true
    [ ! -s "$C/leaks" ] || { cat "$C/leaks" >&2; die "sk_ or shardx_ functions exported"; }
}

case_libzstd_is_linked_statically_in_the_library_and_the_programs() {
    # (its experimental API is used)
    for f in "$so" "$SHARDKIT_BIN/shardify" "$SHARDKIT_BIN/shardcheck"; do
        if readelf -d "$f" | grep -q 'NEEDED.*libzstd'; then die "'$f' needs the shared libzstd"; fi
    done
    if nm -D --defined-only "$so" | grep -q ' ZSTD_'; then die "the shared library exports zstd's symbols"; fi
}

run_cases
