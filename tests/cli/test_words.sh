#!/bin/sh
# test_words.sh - one word per concept (CONTRIBUTING.md, "Words"): the public
# headers, the tools' help, the Python package and the documentation do not
# use a word for what the table says it is not.  A *worker* is a loader's
# share of an epoch (a DataLoader worker), never a thread: the threads of a
# conversion, of an iterator or of the libraries are threads.  The table
# itself names the uses it forbids, and the deprecated aliases keep 0.1.0's
# names: both are left out.
. "$(dirname "$0")/lib.sh"

cd "$SHARDKIT_TOP" || die "no checkout"
files=$(find include/shardkit cmd lib python/shardkit docs man examples -type f \
    \( -name '*.[ch]' -o -name '*.py' -o -name '*.pyi' -o -name '*.md' -o -name '*.sh' \) 2>/dev/null;
    ls ./*.md | grep -v CHANGELOG.md)
[ "$(printf '%s\n' $files | wc -l)" -gt 100 ] || die "too few files to look at"

say "no 'worker thread': a worker is a loader's share of an epoch"
# (examples quote gloo's own words about its threads)
bad=$(printf '%s\n' $files | xargs grep -n -i -E 'worker threads?\b|threads? \(workers\)' 2>/dev/null |
    grep -v "gloo's worker threads" || true)
[ -z "$bad" ] || { printf '%s\n' "$bad" >&2; die "a thread called a worker (say: thread)"; }

say "the table names every word the project defines"
for w in sample record item payload key location worker part transform "stored order" "epoch plan"; do
    grep -q "^| \*\*$w\*\*" CONTRIBUTING.md || die "CONTRIBUTING.md's Words table has no '$w'"
done

say "a word the table forbids for a thing is caught: the check itself"
printf 'the conversion has 4 worker threads\n' >"$T/planted.md"
grep -q -i -E 'worker threads?\b' "$T/planted.md" || die "the pattern misses a planted use"
echo "words checks passed"
