#!/bin/sh
# test_install.sh - `make install` with PREFIX and DESTDIR gives programs, the
# shared library (with its soname links), the static library, headers and a
# shardkit.pc with which a program using the public API compiles, links
# against the shared library (or, with --static, the static one) and reads a
# dataset; and the reader's archive with shardkit-read.pc, with which the same
# program links without libvips or glib; and bin/shardkit-nightly, the
# nightly job, which publishes a night's version with the installed tools.
. "$(dirname "$0")/lib.sh"

BUILD=$(cd "$SHARDKIT_BIN/.." && pwd)
# the cases read what make install put into a staging directory, a program
# using the public API and a dataset for it to read
make -s -C "$SHARDKIT_TOP" BUILD="$BUILD" install DESTDIR="$T/stage" PREFIX=/opt/shardkit \
    >"$T/install.log" 2>&1 || { cat "$T/install.log"; die "make install failed"; }
root="$T/stage/opt/shardkit"
major=$(sed -n 's/^#define SHARDKIT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$SHARDKIT_TOP/include/shardkit/api.h")
cat >"$T/reader.c" <<'C'
#include <shardkit.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    struct shard_dataset *ds;
    struct shard_item item = {0};
    struct shard_err err;
    if (argc != 2 || shard_dataset_open(&ds, argv[1], &err)) {
        fprintf(stderr, "%s\n", argc == 2 ? err.msg : "usage: reader DST");
        return 1;
    }
    int rc = shard_dataset_read(ds, 0, SHARD_READ_PIXELS, &item, &err);
    if (!rc)
        printf("%llu %s %ux%u\n", (unsigned long long)shard_dataset_size(ds),
               (const char *)item.key.data, item.pixels.width, item.pixels.height);
    shard_item_release(&item);
    shard_dataset_close(ds);
    return rc ? 1 : 0;
}
C
extra=""
# a sanitizer build's library needs the sanitizer runtime in the program too
if nm "$root/lib/libshardkit.a" 2>/dev/null | grep -q __asan_; then
    extra="-fsanitize=address,undefined"
fi
pc() { PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$T/stage" pkg-config "$@"; }
mkdir -p "$T/src/c"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/c/one.jpg"
shardify "$T/src" "$T/dst" --size 32 --quiet

case_make_install_puts_programs_libraries_headers_and_pkg_config_files_under_prefix_in_destdir() {
    for f in bin/shardify bin/shardcheck bin/shardcat bin/shardbench bin/shardreport bin/shardkit-nightly \
             lib/libshardkit.a \
             lib/libshardkit.so "lib/libshardkit.so.$major" include/shardkit.h \
             include/shardkit/api.h include/shardkit/dataset.h lib/pkgconfig/shardkit.pc \
             lib/libshardkit-read.a lib/pkgconfig/shardkit-read.pc; do
        [ -e "$root/$f" ] || die "not installed: $f"
    done
    grep -q '^prefix=/opt/shardkit$' "$root/lib/pkgconfig/shardkit.pc" || die "prefix in shardkit.pc"
}

case_the_installed_headers_include_no_jansson_h_in_either_tier_and_no_header_of_lib_is_installed() {
    n=0
    for h in "$root"/include/shardkit.h "$root"/include/shardkit/*.h; do
        cc -E -H -DSHARDKIT_EXPERIMENTAL -I"$root/include" -x c "$h" 2>&1 >/dev/null |
            grep 'jansson\.h' && die "the installed $(basename "$h") includes <jansson.h>"
        n=$((n + 1))
    done
    [ "$n" -gt 10 ] || die "only $n headers installed"
    if find "$root/include" -name 'shardx*.h' -o -name '*_internal.h' | grep .; then
        die "private headers installed"
    fi
}

case_a_program_built_with_pkg_config_against_the_shared_library_reads_a_dataset() {
    pc --cflags --libs shardkit >"$C/flags" || die "pkg-config cannot resolve shardkit"
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(cat "$C/flags") -o "$C/reader" ||
        die "cannot build against the installed library"
    readelf -d "$C/reader" | grep -q "NEEDED.*\[libshardkit.so.$major\]" ||
        die "the program does not link libshardkit.so.$major"
    LD_LIBRARY_PATH="$root/lib" "$C/reader" "$T/dst" >"$C/read.out"
    # rgb.jpg is 333x250: shorter side 32, longer floor(333 * 32 / 250) = 42
    [ "$(cat "$C/read.out")" = "1 c/one.jpg 42x32" ] || die "reader printed '$(cat "$C/read.out")'"
    LD_LIBRARY_PATH="$root/lib" ldd "$C/reader" | grep -q "libshardkit.so.$major => $root/lib/" ||
        die "the program did not load the installed shared library"
}

case_the_same_program_links_the_static_library_its_dependencies_shared() {
    # pkg-config --static would also want the static libraries of libvips's own
    # dependencies, which Debian does not ship: take the direct ones instead.
    requires=$(pc --print-requires-private shardkit | awk '{print $1}' | tr '\n' ' ')
    # shellcheck disable=SC2046,SC2086
    cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(pc --cflags shardkit) "$root/lib/libshardkit.a" \
        $(pkg-config --libs $requires) $(sed -n 's/^Libs.private: //p' "$root/lib/pkgconfig/shardkit.pc") \
        -o "$C/reader-static" ||
        die "cannot link the static library"
    if readelf -d "$C/reader-static" | grep -q "libshardkit"; then
        die "the static program needs libshardkit.so"
    fi
    [ "$("$C/reader-static" "$T/dst")" = "1 c/one.jpg 42x32" ] || die "the static reader differs"
}

case_the_same_program_links_the_readers_archive_with_shardkit_read_pc_without_libvips_or_glib() {
    pc --cflags --libs shardkit-read >"$C/read-flags" || die "pkg-config cannot resolve shardkit-read"
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(cat "$C/read-flags") -o "$C/reader-read" ||
        die "cannot build against the installed reader's archive"
    ldd "$C/reader-read" >"$C/read.ldd"
    grep -q 'libjpeg\.so' "$C/read.ldd" || die "the reader links no libjpeg (not the whole tree?)"
    if grep -E 'lib(vips|glib-2\.0|gobject-2\.0|shardkit)' "$C/read.ldd" >&2; then
        die "the program built with shardkit-read.pc loads libvips, glib or libshardkit.so"
    fi
    [ "$("$C/reader-read" "$T/dst")" = "1 c/one.jpg 42x32" ] || die "the reader's archive reads otherwise"
}

case_the_installed_nightly_job_runs_the_installed_tools_one_night_publishes_a_version() {
    # PATH holds the installed programs only (not the build's)
    env -u SHARDKIT_BIN PATH="$root/bin:/usr/bin:/bin" SHARDKIT_SRC="$T/src" SHARDKIT_ROOT="$C/nightly" \
        SHARDKIT_OPTIONS="--size 32" shardkit-nightly >"$C/nightly.out" 2>&1 ||
        { cat "$C/nightly.out"; die "the installed shardkit-nightly failed"; }
    [ "$(json "$C/nightly/runs/latest.json" 'd["status"], d["samples"]["new"]')" = "('published', 1)" ] ||
        die "the installed job's record: $(cat "$C/nightly/runs/latest.json")"
    [ "$(readlink "$C/nightly/current")" = "$(json "$C/nightly/runs/latest.json" 'd["version"]')" ] ||
        die "current is not the run's version: $(readlink "$C/nightly/current")"
}

run_cases
