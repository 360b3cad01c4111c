#!/bin/sh
# test_deps.sh - each make target installs only what it needs
# (scripts/deps.sh groups): `make demo` installs no browser, no cluster, no
# compiler of fuzz targets and none of the libraries only benchmarks link;
# `make test` installs what the tests run; each library the benchmarks link
# is in bench's group; the library and the programs link none of them.
. "$(dirname "$0")/lib.sh"

TOP=$SHARDKIT_TOP
DEPS="$TOP/scripts/deps.sh"
BENCH_ONLY="libyuv-dev libswscale-dev libavutil-dev"

# lacks GROUP PACKAGE...: GROUP installs none of the packages (its list in $C)
lacks() {
    g=$1
    shift
    sh "$DEPS" --list "$g" >"$C/$g.list" || die "deps.sh --list $g failed"
    for p in "$@"; do
        if grep -qx -- "$p" "$C/$g.list"; then die "the $g group installs $p"; fi
    done
}
# has GROUP PACKAGE...: GROUP installs each of the packages (its list in $C)
has() {
    g=$1
    shift
    sh "$DEPS" --list "$g" >"$C/$g.list" || die "deps.sh --list $g failed"
    for p in "$@"; do
        grep -qx -- "$p" "$C/$g.list" || die "the $g group does not install $p"
    done
}

case_each_make_target_starts_by_installing_its_own_group() {
    for target in demo test sanitize check bench fuzz python screenshots deb format format-check; do
        case $target in
        sanitize) group=test ;;
        check) group=demo ;;
        format-check) group=format ;;
        *) group=$target ;;
        esac
        make -C "$TOP" -n --no-print-directory BUILD="$C/build" "$target" >"$C/make.out" 2>&1 ||
            { cat "$C/make.out" >&2; die "make -n $target failed"; }
        head -n 1 "$C/make.out" | grep -qx "scripts/deps.sh $group" ||
            { head -n 3 "$C/make.out" >&2; die "make $target does not start with scripts/deps.sh $group"; }
    done
}

case_with_deps_no_no_target_installs_anything() {
    for target in demo test check; do
        make -C "$TOP" -n --no-print-directory BUILD="$C/build" DEPS=no "$target" >"$C/make.out" 2>&1 ||
            { cat "$C/make.out" >&2; die "make -n DEPS=no $target failed"; }
        ! grep -q "scripts/deps.sh" "$C/make.out" || die "make DEPS=no $target runs scripts/deps.sh"
    done
}

case_make_demo_installs_the_build_and_pillow_nothing_of_the_tests_benchmarks_or_fuzzing() {
    has demo build-essential libvips-dev python3-pil
    lacks demo chromium munge slurm-wlm clang libfuzzer-14-dev python3-torch nginx \
        libturbojpeg0-dev $BENCH_ONLY
}

case_make_test_installs_what_the_tests_run_not_the_benchmark_only_libraries() {
    has test libcmocka-dev libturbojpeg0-dev python3-pytest python3-torch chromium munge \
        slurm-wlm nginx strace curl libjpeg-turbo-progs python3-pil
    lacks test clang libfuzzer-14-dev $BENCH_ONLY
}

case_make_test_installs_the_manual_page_and_completion_tools_make_deb_the_packaging_make_demo_neither() {
    has test help2man pandoc bash-completion zsh
    has deb debhelper dh-python debootstrap help2man pandoc python3-numpy python3-pil
    lacks demo help2man pandoc debhelper dh-python debootstrap
}

case_make_format_and_make_test_install_clang_format_14_the_version_dot_clang_format_is_written_for() {
    has format clang-format-14
    has test clang-format-14
}

case_make_bench_and_make_fuzz_install_the_libraries_and_compilers_only_they_use() {
    has bench $BENCH_ONLY libturbojpeg0-dev
    has fuzz clang libfuzzer-14-dev
    lacks build python3-pil chromium $BENCH_ONLY
}

case_an_unknown_group_is_an_error_naming_it() {
    must_fail 2 sh "$DEPS" --list demo nonsense
    must_say "unknown group 'nonsense'" "$T/err"
}

case_the_library_and_the_programs_link_none_of_the_benchmark_only_libraries() {
    make -C "$TOP" -n -B --no-print-directory BUILD="$C/build" build >"$C/build.out" 2>&1 ||
        { cat "$C/build.out" >&2; die "make -n build failed"; }
    grep -q -- "-o $C/build/bin/shardify" "$C/build.out" || die "make -n build shows no link of shardify"
    if grep -E -- "-lyuv|-lswscale|-lavutil|-lturbojpeg" "$C/build.out" >&2; then
        die "the build links a benchmark library"
    fi
}

run_cases
