#!/bin/bash
# The Debian packages of shardkit, and their test in a clean Debian 12 root.
#
#   scripts/deb.sh build BUILD   dpkg-buildpackage (debian/) on a copy of the
#                                sources in BUILD/deb/src; the packages land
#                                in BUILD/deb (make deb)
#   scripts/deb.sh test BUILD    install BUILD/deb/*.deb into a clean Debian 12
#                                root and use them there, then purge them and
#                                check that nothing of them is left (make
#                                deb-test; root, or sudo)
#
# The test's root is debootstrap's minbase of bookworm, plus man-db and
# bash-completion, from the Debian mirror this machine's apt is configured
# with (its sources of bookworm, bookworm-updates and bookworm-security, as
# apt-get indextargets lists them; DEBIAN_MIRROR=URL names another),
# kept as BUILD/deb/cache/bookworm.tar; the packages apt downloads are kept in
# BUILD/deb/cache/archives.  Each test extracts a fresh root from it, in its
# own mount namespace (its mounts die with it), and removes it afterwards.
# In the root: apt installs the packages' dependencies (and gcc, libc6-dev
# and pkg-config, to build a program against the library); the file system is
# listed; apt installs the packages; there: man pages, bash completion, a
# conversion of the demo data (shardify), a check (shardcheck --deep
# --source), an export (shardcat), a Python import and read, a C program
# built with pkg-config that reads through libshardkit.so.0; then apt purges
# the packages, and the file system must list exactly what it listed before,
# and no file the packages held (dpkg -L) may be left.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
SUITE=bookworm
PACKAGES="shardkit libshardkit0 libshardkit-dev python3-shardkit"

die() { echo "deb: $*" >&2; exit 1; }
say() { echo "deb: [$(date +%T)] $*"; }

version() { sed -n 's/^#define SHARDKIT_VERSION "\(.*\)"/\1/p' "$top/include/shardkit/api.h"; }

build() {
    local out=$1 v changelog src
    v=$(version)
    changelog=$(cd "$top" && dpkg-parsechangelog -S Version)
    [ "$v" = "$changelog" ] ||
        die "debian/changelog is at version $changelog, include/shardkit/api.h at $v: add a changelog entry (dch -v $v)"
    src=$out/src/shardkit-$v
    rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
    mkdir -p "$src"
    # the sources as they are in the work tree: tracked and new files, not
    # what .gitignore leaves out (build products)
    if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$top" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
            tar --null -T - -cf -) | tar -xf - -C "$src"
    else
        (cd "$top" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$src"
    fi
    say "building the packages in $src (log: $out/build.log)"
    if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
            dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
        tail -n 40 "$out/build.log" >&2
        die "dpkg-buildpackage failed (log: $out/build.log)"
    fi
    mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
    rm -rf "$out/src"
    for p in $PACKAGES; do
        [ -f "$out/${p}_${v}_$(dpkg --print-architecture).deb" ] || die "no package $p was built"
    done
    say "built: $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
}

# ---- the test ---------------------------------------------------------------

in_root() {  # CMD...: run CMD in the root, with a clean environment
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# listing FILE: every path of the root's file system with its type, but for
# what changes by itself (package databases and caches, logs, /tmp)
listing() {
    (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
        -o -path ./tmp -o -path ./var/tmp -o -path ./var/cache -o -path ./var/log \
        -o -path ./var/lib/apt -o -path ./var/lib/dpkg \) -prune -o -printf '%y %p\n') |
        LC_ALL=C sort >"$1"
}

# the apt sources of SUITE, SUITE-updates and SUITE-security, a line "URI
# SUITE" each, as this machine's apt configuration names them (DEBIAN_MIRROR:
# that mirror for the first two)
apt_sources() {
    local r
    if [ -n "${DEBIAN_MIRROR:-}" ]; then
        printf '%s %s\n' "$DEBIAN_MIRROR" "$SUITE" "$DEBIAN_MIRROR" "$SUITE-updates"
    fi
    for r in "$SUITE" "$SUITE-updates" "$SUITE-security"; do
        [ -n "${DEBIAN_MIRROR:-}" ] && [ "$r" != "$SUITE-security" ] && continue
        apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
            'Identifier: Packages' 'Component: main' "Release: $r" 2>/dev/null | sort -u | sed -n 1p
    done
}

mirror() {  # the mirror of SUITE itself
    local m
    m=$(apt_sources | awk -v s="$SUITE" '$2 == s { print $1; exit }')
    [ -n "$m" ] || die "this machine's apt has no source of Debian $SUITE main (/etc/apt/sources.list, /etc/apt/sources.list.d): add one, or name a mirror with DEBIAN_MIRROR=URL"
    echo "${m%/}"
}

base_root() {  # the cached minbase tarball, made when missing
    local cache=$1
    [ -f "$cache/$SUITE.tar" ] && return 0
    command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
    local MIRROR
    MIRROR=$(mirror)
    say "debootstrap $SUITE from $MIRROR (once; kept as $cache/$SUITE.tar)"
    rm -rf "$cache/root"
    mkdir -p "$cache/debootstrap"
    debootstrap --variant=minbase --include=man-db,bash-completion \
        --cache-dir="$cache/debootstrap" "$SUITE" "$cache/root" "$MIRROR" \
        >"$cache/debootstrap.log" 2>&1 || { tail -n 20 "$cache/debootstrap.log" >&2; die "debootstrap failed"; }
    tar -C "$cache/root" -cf "$cache/$SUITE.tar.tmp" . && mv "$cache/$SUITE.tar.tmp" "$cache/$SUITE.tar"
    rm -rf "$cache/root"
}

inside() {  # the test proper, in a private mount namespace
    local out=$1 cache=$1/cache
    root=$out/root
    rm -rf "$root"
    mkdir -p "$root" "$cache/archives/partial"
    tar -C "$root" -xf "$cache/$SUITE.tar"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mirror >/dev/null
    apt_sources | awk '{ print "deb " $1 " " $2 " main" }' >"$root/etc/apt/sources.list"
    mount -t proc proc "$root/proc"
    mount --bind "$cache/archives" "$root/var/cache/apt/archives"

    say "apt-get update, and the packages' dependencies"
    in_root apt-get update -q >"$out/apt.log" 2>&1 || { tail "$out/apt.log" >&2; die "apt-get update failed"; }
    mkdir -p "$root/tmp/debs"
    local deps="" p
    for p in $PACKAGES; do
        cp "$out/${p}_"*.deb "$root/tmp/debs/"
        deps="$deps, $(dpkg-deb -f "$out/${p}_"*.deb Depends)"
    done
    # their dependencies but one another, and what the test builds a C program with
    deps=$(echo "${deps#, }, gcc, libc6-dev, pkg-config" | tr ',' '\n' | sed 's/^ *//' |
        grep -vE "^($(echo "$PACKAGES" | tr ' ' '|'))( |$)" | paste -sd, -)
    in_root apt-get satisfy -y -q --no-install-recommends "$deps" >>"$out/apt.log" 2>&1 ||
        { tail -n 30 "$out/apt.log" >&2; die "cannot install the dependencies: $deps"; }
    listing "$out/before.list"

    say "apt-get install ${PACKAGES}"
    in_root sh -c 'apt-get install -y -q --no-install-recommends /tmp/debs/*.deb' \
        >"$out/install.log" 2>&1 || { tail -n 30 "$out/install.log" >&2; die "apt-get install failed"; }
    grep -q '^0 upgraded, 4 newly installed' "$out/install.log" ||
        die "apt installed more than the four packages: $(grep 'newly installed' "$out/install.log")"

    say "using them"
    mkdir -p "$root/tmp/t"
    /usr/bin/python3 "$top/examples/make_demo_data.py" "$root/tmp/t/raw" >/dev/null
    cp "$top/scripts/deb_check.sh" "$root/tmp/t/check.sh"
    in_root sh /tmp/t/check.sh >"$out/check.log" 2>&1 ||
        { cat "$out/check.log" >&2; die "the installed packages failed their check (log: $out/check.log)"; }
    for p in $PACKAGES; do in_root dpkg -L "$p"; done | LC_ALL=C sort -u >"$out/files.list"

    say "apt-get purge ${PACKAGES}"
    # shellcheck disable=SC2086
    in_root apt-get purge -y -q $PACKAGES >"$out/purge.log" 2>&1 ||
        { tail -n 30 "$out/purge.log" >&2; die "apt-get purge failed"; }
    listing "$out/after.list"
    if ! cmp -s "$out/before.list" "$out/after.list"; then
        diff "$out/before.list" "$out/after.list" >&2 || true
        die "the root differs after the purge from before the install (above: < gone, > left)"
    fi
    local f left=0
    while IFS= read -r f; do
        [ "$f" = "/." ] && continue
        if [ -e "$root$f" ] || [ -L "$root$f" ]; then
            # a directory the root had before (/usr/bin) stays
            grep -qxF "d .$f" "$out/before.list" && continue
            echo "left behind: $f" >&2; left=1
        fi
    done <"$out/files.list"
    [ $left -eq 0 ] || die "the purge left files of the packages behind"
    say "nothing of the packages is left ($(wc -l <"$out/files.list") paths checked)"
}

test_packages() {
    local out=$1
    [ "$(id -u)" -eq 0 ] || die "the package test needs root (chroot, mounts): run it as root or with sudo"
    ls "$out"/shardkit_*.deb >/dev/null 2>&1 || die "no packages in $out (make deb)"
    mkdir -p "$out/cache"
    base_root "$out/cache"
    local start=$SECONDS status=0
    unshare --mount --propagation private "$0" _inside "$out" || status=$?
    rm -rf "$out/root"
    [ $status -eq 0 ] || exit $status
    say "package test passed in $((SECONDS - start)) s"
}

case ${1:-} in
build) build "$(cd "${2:?usage: scripts/deb.sh build BUILD}" && pwd)/deb" ;;
test) test_packages "$(cd "${2:?usage: scripts/deb.sh test BUILD}" && pwd)/deb" ;;
_inside) inside "$2" ;;
*) echo "usage: scripts/deb.sh build|test BUILD" >&2; exit 2 ;;
esac
