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

# lacks GROUP PACKAGE...: GROUP installs none of the packages
lacks() {
    g=$1
    shift
    sh "$DEPS" --list "$g" >"$T/$g.list" || die "deps.sh --list $g failed"
    for p in "$@"; do
        if grep -qx -- "$p" "$T/$g.list"; then die "the $g group installs $p"; fi
    done
}
# has GROUP PACKAGE...: GROUP installs each of the packages
has() {
    g=$1
    shift
    sh "$DEPS" --list "$g" >"$T/$g.list" || die "deps.sh --list $g failed"
    for p in "$@"; do
        grep -qx -- "$p" "$T/$g.list" || die "the $g group does not install $p"
    done
}

say "each make target asks for its own group"
for target in demo test sanitize check bench fuzz python screenshots deb format format-check; do
    case $target in
    sanitize) group=test ;;
    check) group=demo ;;
    format-check) group=format ;;
    *) group=$target ;;
    esac
    make -C "$TOP" -n --no-print-directory BUILD="$T/build" "$target" >"$T/make.out" 2>&1 ||
        { cat "$T/make.out" >&2; die "make -n $target failed"; }
    head -n 1 "$T/make.out" | grep -qx "scripts/deps.sh $group" ||
        { head -n 3 "$T/make.out" >&2; die "make $target does not start with scripts/deps.sh $group"; }
done

say "DEPS=no: no target installs anything"
for target in demo test check; do
    make -C "$TOP" -n --no-print-directory BUILD="$T/build" DEPS=no "$target" >"$T/make.out" 2>&1 ||
        { cat "$T/make.out" >&2; die "make -n DEPS=no $target failed"; }
    ! grep -q "scripts/deps.sh" "$T/make.out" || die "make DEPS=no $target runs scripts/deps.sh"
done

say "make demo: the build and Pillow, nothing of the tests, benchmarks or fuzzing"
has demo build-essential libvips-dev python3-pil
lacks demo chromium munge slurm-wlm clang libfuzzer-14-dev python3-torch nginx \
    libturbojpeg0-dev $BENCH_ONLY

say "make test: what the tests run, not the benchmark-only libraries"
has test libcmocka-dev libturbojpeg0-dev python3-pytest python3-torch chromium munge \
    slurm-wlm nginx strace curl libjpeg-turbo-progs python3-pil
lacks test clang libfuzzer-14-dev $BENCH_ONLY

say "make test builds the manual pages and tests the completion; make deb packages; make demo neither"
has test help2man pandoc bash-completion zsh
has deb debhelper dh-python debootstrap help2man pandoc python3-numpy python3-pil
lacks demo help2man pandoc debhelper dh-python debootstrap

say "make format and make test: the clang-format .clang-format is written for"
has format clang-format-14
has test clang-format-14

say "make bench and make fuzz: the libraries and compilers only they use"
has bench $BENCH_ONLY libturbojpeg0-dev
has fuzz clang libfuzzer-14-dev
lacks build python3-pil chromium $BENCH_ONLY

say "an unknown group is an error naming it"
must_fail 2 sh "$DEPS" --list demo nonsense
must_say "unknown group 'nonsense'" "$T/err"

say "the library and the programs link none of the benchmark-only libraries"
make -C "$TOP" -n -B --no-print-directory BUILD="$T/build" build >"$T/build.out" 2>&1 ||
    { cat "$T/build.out" >&2; die "make -n build failed"; }
grep -q -- "-o $T/build/bin/shardify" "$T/build.out" || die "make -n build shows no link of shardify"
if grep -E -- "-lyuv|-lswscale|-lavutil|-lturbojpeg" "$T/build.out" >&2; then
    die "the build links a benchmark library"
fi

echo "all deps checks passed"
