#!/bin/sh
# test_read_ahead.sh - shardify opens a directory source's files ahead of its
# workers (and asks the kernel to read them): every candidate is opened once,
# a candidate the scan refused (a link, a fifo) is never opened, nothing
# outside SRC is opened, and reading ahead changes no byte of the output.
. "$(dirname "$0")/lib.sh"

strace_works || skip "strace cannot trace here"

# the source every case reads: SRC, with a link and a fifo the scan refuses, and
# $T/outside, beside it
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

# (no "outside" in the name: the case's own paths are in the log it greps)
case_each_candidate_is_opened_once_refused_ones_and_files_not_in_src_never() {
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
        strace -f -o "$C/open.log" -e trace=open,openat,openat2 \
        shardify "$SRC" "$C/dir" --size 32 --threads 2 --shard-size 64K --quiet
    if grep -E 'open.*(link\.jpg|pipe\.jpg|secret\.jpg|outside)' "$C/open.log"; then
        die "a refused candidate or a file outside SRC was opened"
    fi
    for f in a/img0.jpg a/img39.jpg b/img17.jpg b/rot.png b/cut.jpg; do
        n=$(grep -c "open.*\"$f\"" "$C/open.log" || true)
        [ "$n" = 1 ] || die "'$f' opened $n times, expected once"
    done
    [ "$(json "$C/dir/manifest.json" 'd["counts"]["samples"]')" = 81 ] ||
        die "samples: $(cat "$C/dir/manifest.json")"
}

case_the_output_equals_the_same_files_read_from_an_archive_no_read_ahead_and_other_thread_counts() {
    # a copy of SRC without the link and the fifo: the same candidates, so the same shuffled order
    mkdir "$C/src"
    cp -r "$SRC/a" "$SRC/b" "$C/src/"
    rm "$C/src/a/link.jpg" "$C/src/b/pipe.jpg"
    (cd "$C/src" && tar cf "$C/src.tar" a b)
    shardify "$C/src" "$C/dir" --size 32 --threads 2 --shard-size 64K --quiet
    shardify "$C/src.tar" "$C/tar" --size 32 --threads 2 --shard-size 64K --quiet
    shardify "$C/src" "$C/one" --size 32 --threads 1 --shard-size 64K --quiet
    shardify "$C/src" "$C/three" --size 32 --threads 3 --shard-size 64K --quiet
    ls "$C/dir"/*.shard >"$C/shards"
    [ "$(wc -l <"$C/shards")" -gt 1 ] || die "expected several shards"
    for out in tar one three; do
        for f in $(cd "$C/dir" && ls *.shard) index.jsonl; do
            cmp -s "$C/dir/$f" "$C/$out/$f" || die "'$f' differs between the directory run and '$out'"
        done
    done
    same_tree "$C/dir" "$C/one"
}

run_cases
