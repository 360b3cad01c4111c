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
say "make install into a staging directory"
make -s -C "$SHARDKIT_TOP" BUILD="$BUILD" install DESTDIR="$T/stage" PREFIX=/opt/shardkit \
    >"$T/install.log" 2>&1 || { cat "$T/install.log"; die "make install failed"; }
root="$T/stage/opt/shardkit"
major=$(sed -n 's/^#define SHARDKIT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$SHARDKIT_TOP/include/shardkit/api.h")
for f in bin/shardify bin/shardcheck bin/shardcat bin/shardbench bin/shardreport bin/shardkit-nightly \
         lib/libshardkit.a \
         lib/libshardkit.so "lib/libshardkit.so.$major" include/shardkit.h \
         include/shardkit/api.h include/shardkit/dataset.h lib/pkgconfig/shardkit.pc \
         lib/libshardkit-read.a lib/pkgconfig/shardkit-read.pc; do
    [ -e "$root/$f" ] || die "not installed: $f"
done
grep -q '^prefix=/opt/shardkit$' "$root/lib/pkgconfig/shardkit.pc" || die "prefix in shardkit.pc"

say "the installed headers include no jansson.h (in either tier), and no header of lib/ is installed"
n=0
for h in "$root"/include/shardkit.h "$root"/include/shardkit/*.h; do
    cc -E -H -DSHARDKIT_EXPERIMENTAL -I"$root/include" -x c "$h" 2>&1 >/dev/null |
        grep 'jansson\.h' && die "the installed $(basename "$h") includes <jansson.h>"
    n=$((n + 1))
done
[ "$n" -gt 10 ] || die "only $n headers installed"
find "$root/include" -name 'shardx*.h' -o -name '*_internal.h' | grep . && die "private headers installed"

say "a program built with pkg-config against the shared library reads a dataset"
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
pc --cflags --libs shardkit >"$T/flags" || die "pkg-config cannot resolve shardkit"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(cat "$T/flags") -o "$T/reader" ||
    die "cannot build against the installed library"
readelf -d "$T/reader" | grep -q "NEEDED.*\[libshardkit.so.$major\]" ||
    die "the program does not link libshardkit.so.$major"
mkdir -p "$T/src/c"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/c/one.jpg"
shardify "$T/src" "$T/dst" --size 32 --quiet
LD_LIBRARY_PATH="$root/lib" "$T/reader" "$T/dst" >"$T/read.out"
# rgb.jpg is 333x250: shorter side 32, longer floor(333 * 32 / 250) = 42
[ "$(cat "$T/read.out")" = "1 c/one.jpg 42x32" ] || die "reader printed '$(cat "$T/read.out")'"
LD_LIBRARY_PATH="$root/lib" ldd "$T/reader" | grep -q "libshardkit.so.$major => $root/lib/" ||
    die "the program did not load the installed shared library"

say "the same program links the static library (dependencies shared)"
# pkg-config --static would also want the static libraries of libvips's own
# dependencies, which Debian does not ship: take the direct ones instead.
requires=$(pc --print-requires-private shardkit | awk '{print $1}' | tr '\n' ' ')
# shellcheck disable=SC2046,SC2086
cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(pc --cflags shardkit) "$root/lib/libshardkit.a" \
    $(pkg-config --libs $requires) $(sed -n 's/^Libs.private: //p' "$root/lib/pkgconfig/shardkit.pc") \
    -o "$T/reader-static" ||
    die "cannot link the static library"
readelf -d "$T/reader-static" | grep -q "libshardkit" && die "the static program needs libshardkit.so"
[ "$("$T/reader-static" "$T/dst")" = "1 c/one.jpg 42x32" ] || die "the static reader differs"

say "the same program links the reader's archive (shardkit-read.pc), without libvips or glib"
pc --cflags --libs shardkit-read >"$T/read-flags" || die "pkg-config cannot resolve shardkit-read"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror $extra "$T/reader.c" $(cat "$T/read-flags") -o "$T/reader-read" ||
    die "cannot build against the installed reader's archive"
ldd "$T/reader-read" >"$T/read.ldd"
grep -q 'libjpeg\.so' "$T/read.ldd" || die "the reader links no libjpeg (not the whole tree?)"
if grep -E 'lib(vips|glib-2\.0|gobject-2\.0|shardkit)' "$T/read.ldd" >&2; then
    die "the program built with shardkit-read.pc loads libvips, glib or libshardkit.so"
fi
[ "$("$T/reader-read" "$T/dst")" = "1 c/one.jpg 42x32" ] || die "the reader's archive reads otherwise"

say "the installed nightly job runs the installed tools: one night publishes a version"
# PATH holds the installed programs only (not the build's)
env -u SHARDKIT_BIN PATH="$root/bin:/usr/bin:/bin" SHARDKIT_SRC="$T/src" SHARDKIT_ROOT="$T/nightly" \
    SHARDKIT_OPTIONS="--size 32" shardkit-nightly >"$T/nightly.out" 2>&1 ||
    { cat "$T/nightly.out"; die "the installed shardkit-nightly failed"; }
[ "$(json "$T/nightly/runs/latest.json" 'd["status"], d["samples"]["new"]')" = "('published', 1)" ] ||
    die "the installed job's record: $(cat "$T/nightly/runs/latest.json")"
[ "$(readlink "$T/nightly/current")" = "$(json "$T/nightly/runs/latest.json" 'd["version"]')" ] ||
    die "current is not the run's version: $(readlink "$T/nightly/current")"
echo "install checks passed"
