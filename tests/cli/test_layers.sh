#!/bin/sh
# test_layers.sh - the folders of lib/ depend on each other in one direction:
# the read path (lib/read) includes no benchmark header (it exposes counters
# and an observer, read/observer.h, and lib/bench plugs into those), and no
# two folders include each other, directly or through others (no include
# cycle).  Each check is first shown to catch a planted violation.
. "$(dirname "$0")/lib.sh"

LIB="$SHARDKIT_TOP/lib"
[ -d "$LIB/read" ] && [ -d "$LIB/bench" ] || die "no lib/read or lib/bench under $SHARDKIT_TOP"

# Files under $1/read that include a benchmark header: lib/bench's, the
# public shardkit/bench.h, or the umbrella shardkit.h (which includes it).
read_includes_bench() {
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*bench[^">]*|shardkit\.h)[">]' \
        "$1/read" || true
}

# "FROM TO" for every include in $1/FROM/ of a header in another folder TO
# of $1 ("TO/x.h", "../TO/x.h").
edges() {
    find "$1" -mindepth 2 -maxdepth 2 -name '*.[ch]' -exec awk '
        FNR == 1 { n = split(FILENAME, part, "/"); from = part[n - 1] }
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            s = $0
            sub(/^[ \t]*#[ \t]*include[ \t]*"(\.\.\/)*/, "", s)
            if (index(s, "/") > 1) print from, substr(s, 1, index(s, "/") - 1)
        }' {} + | sort -u | while read -r from to; do
        if [ "$to" != "$from" ] && [ -d "$1/$to" ]; then echo "$from $to"; fi
    done
}

# Pairs of folders that reach each other through includes: "a <-> b".
cycles() {
    edges "$1" | awk '
        { n[$1] = 1; n[$2] = 1; r[$1 SUBSEP $2] = 1 }
        END {
            for (k in n) for (i in n) for (j in n)
                if (r[i SUBSEP k] && r[k SUBSEP j]) r[i SUBSEP j] = 1
            for (i in n) for (j in n)
                if (i < j && r[i SUBSEP j] && r[j SUBSEP i]) print i " <-> " j
        }'
}

say "the checks catch planted violations"
mkdir -p "$T/lib/read" "$T/lib/bench" "$T/lib/util"
printf '#include "util/clock.h"\n' >"$T/lib/read/ok.c"
[ -z "$(read_includes_bench "$T/lib")" ] || die "a clean read path was flagged"
[ -z "$(cycles "$T/lib")" ] || die "a tree without cycles was flagged"
printf '#include "bench/probe.h"\n' >"$T/lib/read/bad.c"
[ -n "$(read_includes_bench "$T/lib")" ] || die "bench/probe.h in lib/read went unnoticed"
printf '#  include "shardkit/bench.h"\n' >"$T/lib/read/bad.c"
[ -n "$(read_includes_bench "$T/lib")" ] || die "shardkit/bench.h in lib/read went unnoticed"
printf '#include "read/ok.h"\n' >"$T/lib/bench/b.c"
printf '#include "util/x.h"\n' >"$T/lib/read/bad.c"
printf '#include "../bench/probe.h"\n' >"$T/lib/util/u.c"
cycles "$T/lib" | sort >"$T/cycles"
printf 'bench <-> read\nbench <-> util\nread <-> util\n' | cmp -s - "$T/cycles" ||
    die "the cycle read -> util -> bench -> read went unnoticed: $(cat "$T/cycles")"

say "no file under lib/read includes a benchmark header"
found=$(read_includes_bench "$LIB")
[ -z "$found" ] || { echo "$found" >&2; die "the read path includes the benchmark"; }

say "no include cycle between the folders of lib/"
found=$(cycles "$LIB")
[ -z "$found" ] || { echo "$found" >&2; edges "$LIB" >&2; die "folders of lib/ include each other"; }
edges "$LIB" | grep -q '^bench read$' || die "lib/bench no longer uses lib/read? (the edge list is wrong)"
echo "layer checks passed: $(edges "$LIB" | wc -l) folder dependencies, no cycle"
