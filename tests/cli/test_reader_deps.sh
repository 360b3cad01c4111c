#!/bin/sh
# test_reader_deps.sh - the reader's archive (libshardkit-read.a, which the
# Python extension links) holds no libvips decoder and needs neither libvips
# nor glib: no member refers to their symbols, and every member links, with
# undefined symbols forbidden, on the reader's link line (make
# print-read-ldlibs), which names neither.  The checks are first shown to
# catch the libvips decoder planted in a copy of the archive.
# (python/tests/test_reader_libraries.py checks the extension itself.)
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
read_a="$BUILD/libshardkit-read.a"
[ -f "$read_a" ] || die "no $read_a: the build makes the reader's archive"
# only the converter's side of shardkit links these
converter_only='lib(vips|vips-cpp|glib-2\.0|gobject-2\.0|gio-2\.0|gmodule-2\.0|archive|csv|gomp)\.so'

ldlibs=$(make -s -C "$SHARDKIT_TOP" --no-print-directory BUILD="$BUILD" print-read-ldlibs) ||
    die "make print-read-ldlibs failed"
# a sanitizer build's objects need the sanitizer runtimes
if nm "$read_a" 2>/dev/null | grep -q __asan_; then
    ldlibs="$ldlibs -fsanitize=address,undefined"
fi

# Members of archive $1 that use a libvips or glib symbol, one "member: symbol" a line.
vips_users() {
    nm -A -u "$1" 2>/dev/null | awk '$NF ~ /^(vips_|g_|VIPS_)/ {print $1, $NF}'
}

# Link every member of archive $1 into a shared object $2, no undefined
# symbol allowed, with the reader's link line; the linker's messages in $C/link.err.
link_all() {
    # shellcheck disable=SC2086
    cc -shared -Wl,--no-undefined -Wl,--exclude-libs,libzstd.a -o "$2" \
        -Wl,--whole-archive "$1" -Wl,--no-whole-archive $ldlibs 2>"$C/link.err"
}

case_the_readers_link_line_names_none_of_the_converters_libraries() {
    if printf '%s\n' "$ldlibs" | grep -Eq -- '-lvips|-lglib|-lgobject|-larchive|-fopenmp'; then
        die "the reader's link line names the converter's libraries: $ldlibs"
    fi
}

case_the_checks_catch_the_libvips_decoder_planted_in_a_copy_of_the_archive() {
    cp "$read_a" "$C/planted.a"
    ar rcs "$C/planted.a" "$BUILD/obj/lib/image/decode_vips.o"
    [ -n "$(vips_users "$C/planted.a")" ] || die "a member using libvips went unnoticed"
    if link_all "$C/planted.a" "$C/planted.so"; then
        die "the planted archive linked without libvips"
    fi
    must_say "undefined reference to \`vips_" "$C/link.err"
}

case_no_member_of_the_readers_archive_is_the_libvips_decoder_or_uses_libvips_or_glib() {
    ar t "$read_a" >"$C/members"
    if grep -qx 'decode_vips.o' "$C/members"; then die "libshardkit-read.a holds decode_vips.o"; fi
    for m in dataset.o loader.o decode_jpeg.o decode_png.o encode.o; do
        grep -qx "$m" "$C/members" || die "libshardkit-read.a lacks $m, which reading needs"
    done
    found=$(vips_users "$read_a")
    [ -z "$found" ] || { echo "$found" >&2; die "members of the reader's archive use libvips"; }
}

case_every_member_links_on_the_readers_link_line_and_the_result_loads_no_libvips_or_glib() {
    link_all "$read_a" "$C/reader.so" ||
        { cat "$C/link.err" >&2; die "the reader's archive does not link alone"; }
    ldd "$C/reader.so" >"$C/ldd"
    grep -q 'libjpeg\.so' "$C/ldd" || { cat "$C/ldd" >&2; die "ldd lists no libjpeg (not the whole tree?)"; }
    if grep -E "$converter_only" "$C/ldd" >&2; then
        die "the reader's archive loads the converter's libraries"
    fi
    nm -D --defined-only "$C/reader.so" | grep -q ' T shard_dataset_open$' ||
        die "the linked archive does not define shard_dataset_open"
}

run_cases
