#!/bin/sh
# test_symbols.sh - libshardkit.so exports exactly the functions include/
# declares with SHARD_API: nothing internal leaks, nothing public is missing,
# and no data symbol is exported.  Also: the soname carries the major version,
# and libzstd is linked statically.  shardbench's engine (cmd/shardbench/engine)
# is no part of the libraries and calls only what include/ declares.
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
so="$BUILD/libshardkit.so"
[ -e "$so" ] || die "no $so: the build makes the shared library"

say "the soname is libshardkit.so.MAJOR"
major=$(sed -n 's/^#define SHARDKIT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$SHARDKIT_TOP/include/shardkit/api.h")
[ -n "$major" ] || die "no SHARDKIT_VERSION_MAJOR in api.h"
objdump -p "$so" | grep -q "SONAME *libshardkit.so.$major\$" || die "soname is not libshardkit.so.$major"

say "exported functions equal the SHARD_API declarations"
# Declarations may span lines: strip each header's comments (the compiler's
# preprocessor, macros unexpanded), join it into one line, then take the
# identifier before the '(' that follows every SHARD_API (but the #define).
for h in "$SHARDKIT_TOP"/include/shardkit.h "$SHARDKIT_TOP"/include/shardkit/*.h; do
    cc -fpreprocessed -dD -E -P "$h" 2>/dev/null | grep -v '^#define SHARD_API' | tr '\n' ' '
    echo
done | grep -o 'SHARD_API[^;(]*(' | sed 's/($//; s/.*[ *]//' | sort -u >"$T/declared"
[ "$(wc -l <"$T/declared")" -gt 100 ] || die "found only $(wc -l <"$T/declared") declarations"
nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "W" || $2 == "i" {print $3}' |
    sort -u >"$T/exported"
if ! cmp -s "$T/declared" "$T/exported"; then
    echo "exported but not declared (<) / declared but not exported (>):" >&2
    comm -3 "$T/exported" "$T/declared" | sed 's/^\t/> /; t; s/^/< /' >&2
    die "the shared library's exports differ from include/"
fi

say "shardbench's engine calls only the public API, and no library holds it"
# "SYMBOL" per line: what the objects $@ call of the library's namespaces
# (sk_, shard_) that the declared list does not hold.
private_calls() {
    nm -u "$@" | awk '$1 == "U" && $2 ~ /^(sk|shard)_/ {print $2}' | sort -u |
        comm -23 - "$T/declared"
}
ENGINE="$BUILD/obj/cmd/shardbench/engine"
ls "$ENGINE"/*.o >/dev/null 2>&1 || die "no objects in $ENGINE: the build makes them"
printf 'int sk_now_ns(void);\nint shard_nosuch(void);\nint shard_version(void);\n' >"$T/planted.c"
printf 'int planted(void) { return sk_now_ns() + shard_nosuch() + shard_version(); }\n' >>"$T/planted.c"
cc -c "$T/planted.c" -o "$T/planted.o"
[ "$(private_calls "$T/planted.o" | tr '\n' ' ')" = "shard_nosuch sk_now_ns " ] ||
    die "a planted private call went unnoticed: $(private_calls "$T/planted.o")"
found=$(private_calls "$ENGINE"/*.o)
[ -z "$found" ] || { echo "$found" >&2; die "shardbench's engine calls the library's internals"; }
nm -u "$ENGINE"/*.o | grep -q ' U shard_dataset_open_ex$' || die "the engine's calls were not read"
nm -g --defined-only "$ENGINE"/*.o | awk 'NF == 3 {print $3}' | sort -u >"$T/engine"
grep -qx bench_run "$T/engine" || die "the engine's functions were not read: $(cat "$T/engine")"
for lib in "$BUILD/libshardkit.a" "$BUILD/libshardkit-read.a" "$so"; do
    nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u |
        comm -12 - "$T/engine" >"$T/inlib"
    [ ! -s "$T/inlib" ] || { cat "$T/inlib" >&2; die "$lib holds shardbench's engine"; }
done

say "no data symbols are exported"
nm -D --defined-only "$so" | awk '$2 ~ /^[BDRGSV]$/ {print $3}' >"$T/data"
[ ! -s "$T/data" ] || { cat "$T/data" >&2; die "data symbols exported"; }

say "internal names stay internal"
nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^sk_' >"$T/leaks" || true
[ ! -s "$T/leaks" ] || { cat "$T/leaks" >&2; die "sk_ functions exported"; }
say "libzstd is linked statically (its experimental API is used), in the library and the programs"
for f in "$so" "$SHARDKIT_BIN/shardify" "$SHARDKIT_BIN/shardcheck"; do
    readelf -d "$f" | grep -q 'NEEDED.*libzstd' && die "'$f' needs the shared libzstd"
done
nm -D --defined-only "$so" | grep -q ' ZSTD_' && die "the shared library exports zstd's symbols"

echo "symbol checks passed: $(wc -l <"$T/exported") functions"
