#!/bin/sh
# Run by scripts/deb.sh test inside the clean root, once the packages are
# installed: what a user of each package does first.  /tmp/t/raw holds the
# demo data (examples/make_demo_data.py).
set -eu
cd /tmp/t
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }

step "the manual pages"
for page in shardify shardify-merge shardcheck shardcat shardbench shardreport shardkit-nightly; do
    man -w "$page" | grep -q "^/usr/share/man/man1/$page.1.gz$" || fail "man -w $page"
done
man -w 5 shardkit-format | grep -q '^/usr/share/man/man5/shardkit-format.5.gz$' || fail "man -w 5 shardkit-format"
MANWIDTH=80 man shardify 2>/dev/null | grep -q -- '--fit short|long|crop' || fail "man shardify shows no --fit"
whatis shardcheck | grep -q '^shardcheck (1) *- prove' || fail "whatis shardcheck: $(whatis shardcheck)"

step "bash completion, as bash-completion loads it"
bash -c '. /usr/share/bash-completion/bash_completion
    _completion_loader shardify
    COMP_WORDS=(shardify --codec ""); COMP_CWORD=2; COMP_LINE="shardify --codec "; COMP_POINT=17
    _shardify shardify "" --codec
    [ "${COMPREPLY[*]}" = "jpeg png raw" ]' || fail "bash does not complete shardify --codec"

step "a conversion, a check, an export"
shardify raw shards --size 64 --quiet || fail "shardify (status $?)"
shardcheck --deep --source raw shards >check.out || { cat check.out; fail "shardcheck"; }
shardcat shards --limit 3 --out look >/dev/null || fail "shardcat"
[ "$(ls look | wc -l)" -eq 3 ] || fail "shardcat wrote $(ls look | wc -l) files, not 3"

step "the nightly job: one night builds, checks and publishes a version"
SHARDKIT_SRC=raw SHARDKIT_ROOT=nightly SHARDKIT_OPTIONS="--size 64" shardkit-nightly >nightly.out 2>&1 ||
    { s=$?; cat nightly.out; fail "shardkit-nightly (status $s)"; }
python3 -c '
import json, os
r = json.load(open("nightly/runs/latest.json"))
assert r["status"] == "published" and os.readlink("nightly/current") == r["version"], r
' || fail "the nightly job published no version"

step "Python: import and read"
python3 -c '
import shardkit
ds = shardkit.Dataset("shards")
s = ds[0]
assert len(ds) > 10 and s.image.ndim == 3 and s.image.shape[2] == 3 and min(s.image.shape[:2]) == 64, s.image.shape
batch, labels = next(iter(shardkit.Loader(ds, 4, threads=1)))
assert len(labels) == 4
print(len(ds), s.key, s.image.shape)
' || fail "python3 cannot read the shards"

step "C: a program built with pkg-config reads through libshardkit.so.0"
cat >reader.c <<'C'
#include <shardkit.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    struct shard_dataset *ds;
    struct shard_item item = {0};
    struct shard_err err;
    if (argc != 2 || shard_dataset_open(&ds, argv[1], &err))
        return 1;
    int rc = shard_dataset_read(ds, 0, SHARD_READ_PIXELS, &item, &err);
    if (!rc)
        printf("%llu %ux%u\n", (unsigned long long)shard_dataset_size(ds), item.pixels.width,
               item.pixels.height);
    shard_item_release(&item);
    shard_dataset_close(ds);
    return rc ? 1 : 0;
}
C
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror reader.c $(pkg-config --cflags --libs shardkit) -o reader || fail "cc"
ldd reader | grep -qE 'libshardkit.so.0 => (/usr)?/lib/' || fail "reader does not load the installed library"
./reader shards | grep -qE '^[0-9]+ [0-9]+x[0-9]+$' || fail "reader"

step "C: the same program built with shardkit-read.pc links the static reader, not libvips"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror reader.c $(pkg-config --cflags --libs shardkit-read) -o reader-static \
    || fail "cc with shardkit-read"
! ldd reader-static | grep -qE 'libshardkit|libvips' || fail "reader-static loads libshardkit or libvips"
./reader-static shards | grep -qE '^[0-9]+ [0-9]+x[0-9]+$' || fail "reader-static"
echo "the installed packages work"
