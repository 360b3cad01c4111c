#!/bin/sh
# Install the Debian packages a make target needs, but only those that are
# missing.  Runs apt-get as root, or through sudo when it is available.
#   scripts/deps.sh [GROUP...]      (no GROUP: every group, as `make deps`)
#   scripts/deps.sh --list GROUP... the packages of those groups, one a line
#                                   (Node.js and npm, installed only when no
#                                   npm is there, are not listed)
# Each make target asks for its group, so that `make demo` does not install
# a browser, a cluster or the libraries only a benchmark compares against:
#   build        the library and the programs (make, make install)
#   unit         build, and cmocka (make check)
#   demo         build, and Pillow for the generated demo data (make demo)
#   python       build, and what the extension builds with (make python)
#   test         unit, python and demo, and every tool a test runs (make test,
#                make sanitize): libturbojpeg (bench/read_ceiling, run by
#                test_read_ceiling), pytest, mypy (the Python package's types),
#                build (its source distribution),
#                PyTorch, nginx, strace, djpeg,
#                Chromium (test_reports), munge and Slurm (test_slurm),
#                Node.js, npm and curl (test_s3's S3 server), and man's group
#                with bash-completion and zsh (test_man)
#   tsan         test, and clang with LLVM's OpenMP runtime and its Archer
#                tool (make tsan)
#   bench        python and demo, and the libraries and tools the benchmarks
#                compare against or run: libturbojpeg, libyuv, libswscale and
#                libavutil (bench/resize_quality), PyTorch, nginx, Node.js
#                and npm, curl, /usr/bin/time (make bench)
#   fuzz         build, and clang with libFuzzer (make fuzz)
#   format       clang-format 14, the version .clang-format is written for
#                (make format, make format-check; test's group has it too)
#   screenshots  demo, and Chromium (make screenshots)
#   man          build, and help2man, pandoc and Python: the manual pages and
#                the shell completion (make man, make completion, make install)
#   deb          python, man and demo, and debhelper, dh-python and debootstrap:
#                the Debian packages and their test in a clean root (make deb,
#                make deb-test)
set -eu

ALL_GROUPS="build unit demo python test tsan bench fuzz format screenshots man deb"

# packages GROUP: the Debian packages of GROUP, with those of the groups it
# builds on
packages() {
    case $1 in
    build) echo "build-essential pkg-config libjpeg62-turbo-dev libpng-dev libvips-dev
        libzstd-dev libarchive-dev libjansson-dev libxxhash-dev libexif-dev libcsv-dev
        libcurl4-openssl-dev libexpat1-dev" ;;
    unit) packages build; echo "libcmocka-dev" ;;
    demo) packages build; echo "python3 python3-pil" ;;
    python) packages build; echo "python3 python3-dev python3-setuptools python3-numpy" ;;
    test) packages unit; packages python; packages demo; packages man; packages format
        echo "libturbojpeg0-dev python3-jsonschema python3-xxhash python3-zstandard
            python3-pytest python3-mypy python3-build python3-torch python3-torchvision python3-venv python3-pip
            zstd nginx curl strace libjpeg-turbo-progs chromium munge slurm-wlm bash-completion
            zsh" ;;
    bench) packages python; packages demo
        echo "libturbojpeg0-dev libyuv-dev libswscale-dev libavutil-dev python3-torch
            python3-torchvision nginx curl time" ;;
    tsan) packages test; echo "clang libomp-14-dev" ;;
    fuzz) packages build; echo "clang libfuzzer-14-dev libomp-dev" ;;
    format) echo "clang-format-14" ;;
    screenshots) packages demo; echo "chromium" ;;
    man) packages build; echo "help2man pandoc python3" ;;
    deb) packages python; packages man; packages demo
        echo "debhelper dh-python python3-all-dev debootstrap" ;;
    *) echo "deps: unknown group '$1' (groups: $ALL_GROUPS)" >&2; return 1 ;;
    esac
}

list=0
if [ "${1:-}" = "--list" ]; then list=1; shift; fi
[ $# -gt 0 ] || set -- $ALL_GROUPS
pkgs=""
node=0
for g in "$@"; do
    pkgs="$pkgs $(packages "$g")" || exit 2
    case $g in test | bench) node=1 ;; esac
done
pkgs=$(echo $pkgs | tr ' ' '\n' | sort -u)
if [ $list -eq 1 ]; then
    echo "$pkgs"
    exit 0
fi

need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=""
for p in $pkgs; do
    need "$p" || missing="$missing $p"
done
# The S3 tests and benchmarks run s3rver (npm) on Node.js: Debian's packages
# only when no node and npm are installed at all (a Node.js of another
# origin stays).
[ $node -eq 0 ] || command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps: missing packages:$missing (run as root or install sudo)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends $missing
