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

# the tree the cases check: a formatted file, the same unformatted, and a
# copy of it in a folder of its own (pending)
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

case_a_file_clang_format_would_change_is_named_and_the_check_fails() {
    must_fail 1 sh "$FORMAT" check -p lib/later lib/done
    must_say "format: 'lib/done/bad.c' is not formatted (make format rewrites it)" "$T/err"
    if grep -F "good.c" "$T/err" >&2; then die "a formatted file was named"; fi
    if grep -F "pending.c" "$T/err" >&2; then die "a pending file was checked"; fi
}

case_a_c_file_in_no_folder_of_either_list_fails_the_check() {
    must_fail 1 sh "$FORMAT" check lib/done
    must_say "format: 'lib/later/pending.c' is in no folder of FORMAT_DIRS or FORMAT_PENDING" "$T/err"
}

case_a_pending_file_is_left_out_by_its_own_name_as_well_as_by_its_folders() {
    sh "$FORMAT" files -p lib/done/bad.c lib/done lib/later >"$C/files"
    printf 'lib/done/good.c\nlib/later/pending.c\n' | cmp -s - "$C/files" ||
        { cat "$C/files" >&2; die "files: wrong list"; }
}

case_fix_formats_the_file_and_the_program_stays_the_same() {
    # fix rewrites the tree: a copy of it
    cp -r "$T/t" "$C/t"
    cd "$C/t"
    cc -std=c11 -c -o "$C/before.o" lib/done/bad.c
    sh "$FORMAT" fix -p lib/later lib/done
    cmp -s lib/done/bad.c lib/done/good.c ||
        { diff lib/done/good.c lib/done/bad.c >&2 || true; die "fix did not write the house style"; }
    cmp -s lib/later/pending.c "$T/pending.orig" || die "fix touched a pending file"
    cc -std=c11 -c -o "$C/after.o" lib/done/bad.c
    objdump -d "$C/before.o" | tail -n +3 >"$C/before.dis"
    objdump -d "$C/after.o" | tail -n +3 >"$C/after.dis"
    cmp -s "$C/before.dis" "$C/after.dis" || die "formatting changed the code"
    sh "$FORMAT" check -p lib/later lib/done
}

case_an_unknown_mode_no_folder_or_a_missing_folder_is_a_usage_error_status_2() {
    must_fail 2 sh "$FORMAT" tidy lib/done
    must_fail 2 sh "$FORMAT" check -p lib/later
    must_fail 2 sh "$FORMAT" check lib/missing
    must_say "format: 'lib/missing' is not a folder" "$T/err"
}

case_make_format_check_passes_on_the_tree() {
    cd "$TOP"
    make -s --no-print-directory format-check >"$C/make.out" 2>&1 ||
        { cat "$C/make.out" >&2; die "make format-check failed: run make format"; }
    [ ! -s "$C/make.out" ] || { cat "$C/make.out" >&2; die "make format-check printed something"; }
}

run_cases
