#!/bin/sh
# Format the C sources with clang-format (the style is .clang-format), or
# check that they are formatted; `make format` and `make format-check` run
# this with the Makefile's FORMAT_DIRS and FORMAT_PENDING.
#   scripts/format.sh fix|check|files [-p PENDING]... DIR...
# The files are the *.c and *.h under each DIR, less each PENDING (a folder
# or a file: not formatted yet).
#   files  lists them, one a line
#   fix    rewrites them
#   check  names each one clang-format would change, and each C file of the
#          tree (under lib, cmd, include, tests, fuzz, bench, python/src) in
#          no DIR and no PENDING, so that a new folder gets its place in the
#          Makefile; exits 1 when it named any
# Paths are relative to the current directory (make runs it at the top).
# CLANG_FORMAT is the program (default clang-format-14: another version of
# clang-format lays out some lines differently).
set -eu

CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
usage() {
    echo "usage: scripts/format.sh fix|check|files [-p PENDING]... DIR..." >&2
    exit 2
}
[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in fix | check | files) ;; *) usage ;; esac

pending=""
dirs=""
while [ $# -gt 0 ]; do
    case $1 in
    -p) [ $# -ge 2 ] || usage; pending="$pending ${2%/}"; shift 2 ;;
    *) dirs="$dirs ${1%/}"; shift ;;
    esac
done
[ -n "$dirs" ] || usage

# in_list PATH LIST: PATH is an entry of LIST or under one
in_list() {
    for p in $2; do
        case $1 in "$p" | "$p"/*) return 0 ;; esac
    done
    return 1
}

for d in $dirs; do
    [ -d "$d" ] || { echo "format: '$d' is not a folder" >&2; exit 2; }
done
files=$(find $dirs -type f \( -name '*.c' -o -name '*.h' \) | sort | while read -r f; do
    in_list "$f" "$pending" || echo "$f"
done)

case $mode in
files)
    [ -z "$files" ] || echo "$files"
    exit 0
    ;;
esac

command -v "$CLANG_FORMAT" >/dev/null 2>&1 ||
    { echo "format: $CLANG_FORMAT not found (scripts/deps.sh format installs it)" >&2; exit 2; }

if [ "$mode" = fix ]; then
    [ -z "$files" ] || "$CLANG_FORMAT" -i $files
    exit 0
fi

bad=0
for f in $files; do
    if ! "$CLANG_FORMAT" "$f" | cmp -s "$f" -; then
        echo "format: '$f' is not formatted (make format rewrites it)" >&2
        bad=1
    fi
done
tree=$(for t in lib cmd include tests fuzz bench python/src; do
    [ ! -d "$t" ] || find "$t" -type f \( -name '*.c' -o -name '*.h' \)
done | sort)
for f in $tree; do
    if ! in_list "$f" "$dirs $pending"; then
        echo "format: '$f' is in no folder of FORMAT_DIRS or FORMAT_PENDING (Makefile)" >&2
        bad=1
    fi
done
exit $bad
