#!/bin/sh
# test_read_ahead.sh - shardify opens a directory source's files ahead of its
# workers (and asks the kernel to read them): every candidate is opened once,
# a candidate the scan refused (a link, a fifo) is never opened, nothing
# outside SRC is opened, and reading ahead changes no byte of the output.
. "$(dirname "$0")/lib.sh"

strace_works || skip "strace cannot trace here"

SRC="$T/src"
mkdir -p "$SRC/a" "$SRC/b" "$T/outside"
# more files than the read-ahead window of one thread (32), in two labels
i=0
while [ $i -lt 40 ]; do
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$SRC/a/img$i.jpg"
    cp "$SHARDKIT_FIXTURES/gray.jpg" "$SRC/b/img$i.jpg"
    i=$((i + 1))
done
cp "$SHARDKIT_FIXTURES/exif_rot6.png" "$SRC/b/rot.png"
cp "$SHARDKIT_FIXTURES/truncated.jpg" "$SRC/b/cut.jpg"   # opened, then rejected
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/outside/secret.jpg"
ln -s ../../outside/secret.jpg "$SRC/a/link.jpg"            # refused: a link
mkfifo "$SRC/b/pipe.jpg"                                     # refused: a fifo (would block)

say "each candidate is opened once; refused ones and files outside SRC never"
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    strace -f -o "$T/open.log" -e trace=open,openat,openat2 \
    shardify "$SRC" "$T/dir" --size 32 --threads 2 --shard-size 64K --quiet
if grep -E 'open.*(link\.jpg|pipe\.jpg|secret\.jpg|outside)' "$T/open.log"; then
    die "a refused candidate or a file outside SRC was opened"
fi
for f in a/img0.jpg a/img39.jpg b/img17.jpg b/rot.png b/cut.jpg; do
    n=$(grep -c "open.*\"$f\"" "$T/open.log" || true)
    [ "$n" = 1 ] || die "'$f' opened $n times, expected once"
done
[ "$(json "$T/dir/manifest.json" 'd["counts"]["samples"]')" = 81 ] ||
    die "samples: $(cat "$T/dir/manifest.json")"

say "the output equals the same files read from an archive (no read-ahead) and other thread counts"
rm "$SRC/a/link.jpg" "$SRC/b/pipe.jpg"  # the same candidates, so the same shuffled order
(cd "$SRC" && tar cf "$T/src.tar" a b)
shardify "$SRC" "$T/dir" --size 32 --threads 2 --shard-size 64K --quiet --overwrite
shardify "$T/src.tar" "$T/tar" --size 32 --threads 2 --shard-size 64K --quiet
shardify "$SRC" "$T/one" --size 32 --threads 1 --shard-size 64K --quiet
shardify "$SRC" "$T/three" --size 32 --threads 3 --shard-size 64K --quiet
ls "$T/dir"/*.shard >"$T/shards"
[ "$(wc -l <"$T/shards")" -gt 1 ] || die "expected several shards"
for out in tar one three; do
    for f in $(cd "$T/dir" && ls *.shard) index.jsonl; do
        cmp -s "$T/dir/$f" "$T/$out/$f" || die "'$f' differs between the directory run and '$out'"
    done
done
same_tree "$T/dir" "$T/one"
echo "read-ahead checks passed"
