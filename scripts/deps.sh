#!/bin/sh
# Install the Debian packages shardkit needs, but only those that are missing.
# Runs apt-get as root, or through sudo when it is available.
set -eu

# package that provides it : how to tell it is present
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

pkgs="build-essential pkg-config libjpeg62-turbo-dev libpng-dev libvips-dev libzstd-dev
libarchive-dev libjansson-dev libxxhash-dev libexif-dev libyuv-dev libturbojpeg0-dev libswscale-dev libavutil-dev libcsv-dev libcmocka-dev
libcurl4-openssl-dev libexpat1-dev python3 python3-pil python3-jsonschema python3-xxhash python3-zstandard zstd time nginx clang libfuzzer-14-dev libomp-dev strace
libjpeg-turbo-progs python3-dev python3-setuptools python3-numpy python3-pytest python3-torch
python3-torchvision python3-venv python3-pip chromium munge slurm-wlm"
# the manual pages and the shell completion (make install, test_man), the
# Debian packages and their test in a clean root (make deb, make deb-test)
pkgs="$pkgs help2man pandoc bash-completion zsh debhelper dh-python python3-all-dev debootstrap"

missing=""
for p in $pkgs; do
    need "$p" || missing="$missing $p"
done
# The S3 tests run s3rver (npm) on Node.js: Debian's packages only when no
# node and npm are installed at all (a Node.js of another origin stays).
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
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
