#!/bin/sh
# test_layers.sh - the folders of lib/ depend on each other in the order the
# table of lib/README.md gives (a folder uses only folders of lower layers):
#   - at link level: every undefined symbol of a folder's objects
#     (BUILD/obj/lib/FOLDER/*.o), resolved to the folder whose objects define
#     it, is an edge;
#   - at compile level: every include of another folder's header ("F/x.h")
#     or of a public header ("shardkit/x.h", owned by the folder the table
#     names), and every include between public headers, is an edge;
#   - no edge goes up or sideways, and no folders reach each other (cycle);
#   - every SHARD_API function is defined by the folder implementing its
#     header;
#   - the benchmark is no folder of lib/ (shardbench's engine lives with the
#     program, on the public API: test_symbols.sh);
#   - the programs' helpers (lib/shardx, compiled into the programs too) use
#     no other folder and no public header: a program compiles them with
#     -Ilib/shardx alone.
# Each check is first shown to catch a planted violation.
. "$(dirname "$0")/lib.sh"

LIB="$SHARDKIT_TOP/lib"
INC="$SHARDKIT_TOP/include"
OBJ="$SHARDKIT_BIN/../obj/lib"
[ -d "$LIB/read" ] || die "no lib/read under $SHARDKIT_TOP"
[ -f "$LIB/README.md" ] || die "no lib/README.md: the layer order is written there"
[ -d "$OBJ/read" ] || die "no objects in $OBJ: the build makes them"

# The table of a README: "L FOLDER LAYER" per folder, "H HEADER FOLDER" per
# public header a folder implements.
table() {
    awk -F'|' '$2 ~ /^ *[0-9]+ *$/ {
        layer = $2; folder = $3; gsub(/[ `]/, "", layer); gsub(/[ `]/, "", folder)
        print "L", folder, layer
        n = split($(NF - 1), h, /[ `,]+/)
        for (i = 1; i <= n; i++) if (h[i] ~ /\.h$/) print "H", h[i], folder
    }' "$1"
}

# "FROM TO SYMBOL": a symbol the objects of $1/FROM use and those of $1/TO
# define.
link_edges() {
    for d in "$1"/*/; do
        f=$(basename "$d")
        nm -g --defined-only "$d"*.o 2>/dev/null | awk -v f="$f" 'NF == 3 {print "D", f, $3}'
        nm -u "$d"*.o 2>/dev/null | awk -v f="$f" 'NF == 2 && $1 == "U" {print "U", f, $2}'
    done | awk '$1 == "D" { def[$3] = $2; next }
                { use[$2 " " $3] = 1 }
        END { for (k in use) { split(k, a, " ")
                  if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]], a[2] } }' |
        sort
}

# "FROM TO FILE": the includes of another folder's header in $2 (a lib/),
# and of public headers in $2 and among those of $3 (an include/), as
# edges between the folders of table $1.
include_edges() {
    {
        cat "$1"
        find "$2" -mindepth 2 -maxdepth 2 -name '*.[ch]' -exec awk '
            FNR == 1 { n = split(FILENAME, part, "/"); from = part[n - 1] }
            /^[ \t]*#[ \t]*include[ \t]*"/ {
                s = $0
                sub(/^[ \t]*#[ \t]*include[ \t]*"(\.\.\/)*/, "", s); sub(/".*/, "", s)
                print "I", from, s, part[n - 1] "/" part[n]
            }' {} +
        find "$3/shardkit" -name '*.h' -exec awk '
            FNR == 1 { n = split(FILENAME, part, "/") }
            /^[ \t]*#[ \t]*include[ \t]*"/ {
                s = $0
                sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", s); sub(/".*/, "", s)
                print "P", part[n], s, "shardkit/" part[n]
            }' {} +
    } | awk '
        $1 == "L" { next }
        $1 == "H" { owner[$2] = $3; next }
        $1 == "P" { if (!($2 in owner)) { print "?", "shardkit/" $2, $4; next }
                    $2 = owner[$2] }
        { to = $3
          if (to ~ /^shardkit\//) { sub(/^shardkit\//, "", to)
                                    if (!(to in owner)) { print "?", $3, $4; next }
                                    to = owner[to] }
          else if (index(to, "/") > 1) to = substr(to, 1, index(to, "/") - 1)
          else next
          if (to != $2) print $2, to, $4 }' | sort -u
}

# The edges of stdin ("FROM TO WHAT") against table $1: an edge to a folder
# of the same or a higher layer, or from or to a folder without a row.
against() {
    awk 'NR == FNR { if ($1 == "L") layer[$2] = $3 + 0; next }
         $1 == "?" { print "no row in the table owns " $2 " (" $3 ")"; next }
         !($1 in layer) { print "lib/" $1 " has no row in the table (" $0 ")"; next }
         !($2 in layer) { next }  # outside lib/: a system or library header
         layer[$2] >= layer[$1] { print $1 " (layer " layer[$1] ") uses " $2 " (layer " layer[$2] "): " $3 }' "$1" -
}

# Pairs of folders that reach each other through the edges of stdin.
cycles() {
    awk '$1 != "?" { n[$1] = 1; n[$2] = 1; r[$1 SUBSEP $2] = 1 }
        END {
            for (k in n) for (i in n) for (j in n)
                if (r[i SUBSEP k] && r[k SUBSEP j]) r[i SUBSEP j] = 1
            for (i in n) for (j in n)
                if (i < j && r[i SUBSEP j] && r[j SUBSEP i]) print i " <-> " j
        }'
}

# SHARD_API functions of the public headers in $2 (an include/) defined by
# objects of a folder (of $3, an objects' lib/) other than the one table $1
# says implements the header, or declared in a header no row owns.  The
# functions it read, "F HEADER NAME" a line, in the case's $C/declared.
misplaced() {
    for h in "$2"/shardkit/*.h; do
        cc -fpreprocessed -dD -E -P "$h" 2>/dev/null | grep -v '^#define SHARD_API' | tr '\n' ' ' |
            grep -o 'SHARD_API[^;(]*(' | sed 's/($//; s/.*[ *]//' | sed "s|^|F $(basename "$h") |"
    done >"$C/declared"
    for d in "$3"/*/; do
        nm -g --defined-only "$d"*.o 2>/dev/null | awk -v f="$(basename "$d")" 'NF == 3 {print "D", $3, f}'
    done | cat "$1" "$C/declared" - | awk '
        $1 == "H" { owner[$2] = $3; next }
        $1 == "F" { header[$3] = $2; next }
        $1 == "D" && ($2 in header) {
            h = header[$2]
            if (!(h in owner)) print $2 ": declared in shardkit/" h ", which no row of the table owns"
            else if (owner[h] != $3) print $2 ": declared in shardkit/" h " (" owner[h] ") but defined in lib/" $3
        }' | sort -u
}

# the cases read the table, the objects of lib/ and the edges between its folders
table "$LIB/README.md" >"$T/order"

# The objects of the sources of lib/, without a stale one of a removed source.
for c in "$LIB"/*/*.c; do
    f=$(basename "$(dirname "$c")")
    o="$OBJ/$f/$(basename "$c" .c).o"
    [ -f "$o" ] || die "no $o: the build makes it"
    mkdir -p "$T/objs/$f"
    ln -s "$o" "$T/objs/$f/"
done

# the edges by calls and by includes
link_edges "$T/objs" >"$T/edges"
include_edges "$T/order" "$LIB" "$INC" >"$T/includes"

case_the_table_of_lib_readme_md_has_shardx_and_util_at_the_bottom_convert_and_verify_on_top_every_folder() {
    awk '$1 == "L" {print $2, $3}' "$T/order" | sort -n -k2 >"$C/layers"
    [ "$(head -n 2 "$C/layers" | cut -d' ' -f1 | tr '\n' ' ')" = "shardx util " ] &&
        [ "$(head -n 2 "$C/layers" | cut -d' ' -f2 | sort -u | wc -l)" -eq 2 ] ||
        die "shardx and util (above it) are not the lowest layers: $(cat "$C/layers")"
    top=$(tail -n 1 "$C/layers" | cut -d' ' -f2)
    [ "$(awk -v t="$top" '$2 == t {print $1}' "$C/layers" | sort | tr '\n' ' ')" = "convert verify " ] ||
        die "convert and verify are not the top layer: $(cat "$C/layers")"
    [ ! -d "$LIB/bench" ] && ! grep -q '^L bench ' "$T/order" ||
        die "lib/bench: the benchmark belongs with shardbench (cmd/shardbench/engine), not in the library"
    grep -q '^H image.h image$' "$T/order" || die "the table's header column was not read: $(cat "$T/order")"
    for d in "$LIB"/*/; do
        grep -q "^L $(basename "$d") " "$T/order" || die "lib/$(basename "$d") has no row in lib/README.md"
    done
    awk '$1 == "L" {print $2}' "$T/order" | while read -r f; do
        [ -d "$LIB/$f" ] || die "lib/README.md has a row for lib/$f, which does not exist"
    done
}

case_the_checks_catch_a_planted_upward_call_of_util_into_read_and_its_cycle() {
    # The real objects, and one more in util that calls the reader (an upward edge).
    cp -R "$T/objs" "$C/obj"
    printf 'int shard_dataset_size(const void *d);\n' >"$C/up.c"
    printf 'int sk_up(const void *d) { return shard_dataset_size(d); }\n' >>"$C/up.c"
    cc -c "$C/up.c" -o "$C/obj/util/up.o"
    link_edges "$C/obj" >"$C/edges"
    grep -qx 'util read shard_dataset_size' "$C/edges" ||
        die "util's call into read was not seen: $(cat "$C/edges")"
    against "$T/order" <"$C/edges" >"$C/bad"
    grep -qF 'util (layer 1) uses read (layer 8): shard_dataset_size' "$C/bad" ||
        die "an upward call went unnoticed: $(cat "$C/bad")"
    [ -n "$(cycles <"$C/edges")" ] || die "util -> read -> util is not a cycle"
}

case_the_checks_catch_a_planted_sideways_edge_and_a_folder_without_a_row() {
    # Two folders of one layer: a sideways edge; a folder without a row.
    printf 'L a 1\nL b 1\nL c 2\n' >"$C/order2"
    printf 'a b f\nc a g\nd a h\n' | against "$C/order2" >"$C/bad"
    grep -qF 'a (layer 1) uses b (layer 1): f' "$C/bad" ||
        die "a sideways edge went unnoticed: $(cat "$C/bad")"
    grep -qF 'lib/d has no row' "$C/bad" || die "a folder without a row went unnoticed: $(cat "$C/bad")"
    [ "$(wc -l <"$C/bad")" -eq 2 ] || die "a downward edge was flagged: $(cat "$C/bad")"
}

case_the_checks_catch_a_planted_cycle_of_three_folders_in_objects() {
    mkdir -p "$C/cyc/x" "$C/cyc/y" "$C/cyc/z"
    printf 'void y_f(void);\nvoid x_f(void) { y_f(); }\n' >"$C/x.c"
    printf 'void z_f(void);\nvoid y_f(void) { z_f(); }\n' >"$C/y.c"
    printf 'void x_f(void);\nvoid z_f(void) { x_f(); }\n' >"$C/z.c"
    for f in x y z; do cc -c "$C/$f.c" -o "$C/cyc/$f/$f.o"; done
    link_edges "$C/cyc" | cycles | sort >"$C/cycles"
    printf 'x <-> y\nx <-> z\ny <-> z\n' | cmp -s - "$C/cycles" ||
        die "the cycle x -> y -> z -> x went unnoticed: $(cat "$C/cycles")"
}

case_the_checks_catch_a_planted_public_function_of_image_h_defined_in_util() {
    # the real objects and headers, and a function image.h declares in util
    cp -R "$T/objs" "$C/obj"
    mkdir -p "$C/inc/shardkit"
    cp "$INC"/shardkit/*.h "$C/inc/shardkit/"
    printf 'SHARD_API int shard_planted(void);\n' >>"$C/inc/shardkit/image.h"
    printf 'int shard_planted(void) { return 0; }\n' >"$C/planted.c"
    cc -c "$C/planted.c" -o "$C/obj/util/planted.o"
    misplaced "$T/order" "$C/inc" "$C/obj" >"$C/bad"
    grep -qxF 'shard_planted: declared in shardkit/image.h (image) but defined in lib/util' "$C/bad" ||
        die "image.h's function in util went unnoticed: $(cat "$C/bad")"
}

case_the_checks_catch_planted_upward_includes_and_a_public_header_no_row_owns() {
    # Includes: the read path of the verifier's header, util of the reader's
    # public header, a public header of a higher one's.
    mkdir -p "$C/inc/shardkit"
    cp "$INC"/shardkit/*.h "$C/inc/shardkit/"
    mkdir -p "$C/lib/read" "$C/lib/util"
    printf '#include "util/clock.h"\n#include "shardkit/image.h"\n' >"$C/lib/read/ok.c"
    include_edges "$T/order" "$C/lib" "$INC" | against "$T/order" >"$C/bad"
    [ ! -s "$C/bad" ] || die "clean includes were flagged: $(cat "$C/bad")"
    printf '#  include "shardkit/verify.h"\n' >"$C/lib/read/bad.c"
    printf '#include "shardkit/dataset.h" /* why */\n' >"$C/lib/util/u.c"
    printf '#include "shardkit/loader.h"\n' >>"$C/inc/shardkit/image.h"
    include_edges "$T/order" "$C/lib" "$C/inc" | against "$T/order" >"$C/bad"
    grep -qF 'read (layer 8) uses verify (layer 10): read/bad.c' "$C/bad" &&
        grep -qF 'util (layer 1) uses read (layer 8): util/u.c' "$C/bad" &&
        grep -qF 'image (layer 2) uses loader (layer 9): shardkit/image.h' "$C/bad" ||
        die "upward includes went unnoticed: $(cat "$C/bad")"
    printf '#include "shardkit/nosuch.h"\n' >"$C/lib/util/u.c"
    include_edges "$T/order" "$C/lib" "$INC" | against "$T/order" >"$C/bad"
    grep -qF 'no row in the table owns shardkit/nosuch.h (util/u.c)' "$C/bad" ||
        die "a public header without an owner went unnoticed: $(cat "$C/bad")"
}

case_the_objects_of_each_folder_use_only_folders_of_lower_layers() {
    grep -q '^verify read ' "$T/edges" && grep -q '^loader read ' "$T/edges" ||
        die "lib/verify or lib/loader no longer call lib/read? (the edge list is wrong)"
    against "$T/order" <"$T/edges" >"$C/bad"
    [ ! -s "$C/bad" ] || { cat "$C/bad" >&2; die "calls against the order of lib/README.md"; }
}

case_the_includes_of_each_folder_and_of_the_public_headers_go_only_to_lower_layers() {
    grep -q '^verify read ' "$T/includes" ||
        die "lib/verify no longer includes lib/read? (the edge list is wrong)"
    against "$T/order" <"$T/includes" >"$C/bad"
    [ ! -s "$C/bad" ] || { cat "$C/bad" >&2; die "includes against the order of lib/README.md"; }
}

case_the_programs_helpers_lib_shardx_include_nothing_of_lib_nor_include() {
    grep -n '^[ \t]*#[ \t]*include[ \t]*"' "$LIB"/shardx/*.[ch] | grep -v '"shardx[a-z_]*\.h"' \
        >"$C/bad" || true
    [ ! -s "$C/bad" ] || { cat "$C/bad" >&2; die "lib/shardx includes a header of the library"; }
}

case_no_cycle_between_the_folders_of_lib() {
    found=$(cat "$T/edges" "$T/includes" | cycles)
    [ -z "$found" ] || { echo "$found" >&2; die "folders of lib/ use each other"; }
}

case_each_public_function_is_defined_by_the_folder_implementing_its_header() {
    misplaced "$T/order" "$INC" "$T/objs" >"$C/bad"
    [ ! -s "$C/bad" ] || { cat "$C/bad" >&2; die "public functions defined outside their header's folder"; }
    [ "$(wc -l <"$C/declared")" -gt 100 ] || die "found only $(wc -l <"$C/declared") public functions"
}

run_cases
