#!/bin/sh
# test_clang_format.sh - the C sources follow .clang-format: `make format-check`
# passes on the tree; scripts/format.sh, which it runs, names a file that is
# not formatted and fails, `fix` formats it (the same tokens, checked by the
# compiler's output), and a C file in no folder of the Makefile's lists fails
# the check too.  Skipped when clang-format 14 is not installed
# (scripts/deps.sh test installs it).
. "$(dirname "$0")/lib.sh"

TOP=$SHARDKIT_TOP
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
command -v "$CLANG_FORMAT" >/dev/null 2>&1 ||
    skip "$CLANG_FORMAT is not installed (scripts/deps.sh format installs it)"
export CLANG_FORMAT
FORMAT="$TOP/scripts/format.sh"

say "a file clang-format would change is named, and the check fails"
mkdir -p "$T/t/lib/done" "$T/t/lib/later"
cp "$TOP/.clang-format" "$T/t/"
cat >"$T/t/lib/done/good.c" <<'EOF'
static int twice(int x)
{
    return 2 * x;
}

int f(int x)
{
    if (x > 0)
        return twice(x);
    return 0;
}
EOF
cat >"$T/t/lib/done/bad.c" <<'EOF'
static int twice(int x) { return 2*x; }

int f(int x) {
  if (x>0) return twice(x);
  return 0;
}
EOF
cp "$T/t/lib/done/bad.c" "$T/t/lib/later/pending.c"
cp "$T/t/lib/done/bad.c" "$T/pending.orig"
cd "$T/t"
must_fail 1 sh "$FORMAT" check -p lib/later lib/done
must_say "format: 'lib/done/bad.c' is not formatted (make format rewrites it)" "$T/err"
if grep -F "good.c" "$T/err" >&2; then die "a formatted file was named"; fi
if grep -F "pending.c" "$T/err" >&2; then die "a pending file was checked"; fi

say "a C file in no folder of either list fails the check"
must_fail 1 sh "$FORMAT" check lib/done
must_say "format: 'lib/later/pending.c' is in no folder of FORMAT_DIRS or FORMAT_PENDING" "$T/err"

say "a pending file is left out by its own name as well as by its folder's"
sh "$FORMAT" files -p lib/done/bad.c lib/done lib/later >"$T/files"
printf 'lib/done/good.c\nlib/later/pending.c\n' | cmp -s - "$T/files" ||
    { cat "$T/files" >&2; die "files: wrong list"; }

say "fix formats the file, and the program stays the same"
cc -std=c11 -c -o "$T/before.o" lib/done/bad.c
sh "$FORMAT" fix -p lib/later lib/done
cmp -s lib/done/bad.c lib/done/good.c ||
    { diff lib/done/good.c lib/done/bad.c >&2 || true; die "fix did not write the house style"; }
cmp -s lib/later/pending.c "$T/pending.orig" || die "fix touched a pending file"
cc -std=c11 -c -o "$T/after.o" lib/done/bad.c
objdump -d "$T/before.o" | tail -n +3 >"$T/before.dis"
objdump -d "$T/after.o" | tail -n +3 >"$T/after.dis"
cmp -s "$T/before.dis" "$T/after.dis" || die "formatting changed the code"
sh "$FORMAT" check -p lib/later lib/done

say "usage errors"
must_fail 2 sh "$FORMAT" tidy lib/done
must_fail 2 sh "$FORMAT" check -p lib/later
must_fail 2 sh "$FORMAT" check lib/missing
must_say "format: 'lib/missing' is not a folder" "$T/err"

say "make format-check passes on the tree"
cd "$TOP"
make -s --no-print-directory format-check >"$T/make.out" 2>&1 ||
    { cat "$T/make.out" >&2; die "make format-check failed: run make format"; }
[ ! -s "$T/make.out" ] || { cat "$T/make.out" >&2; die "make format-check printed something"; }

echo "all format checks passed"
