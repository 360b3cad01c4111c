#!/bin/sh
# s3_server.sh - a private S3 server (s3rver, from npm) on loopback for the
# S3 tests and benchmarks.
#
#   bench/s3_server.sh start PREFIX [BUCKET...]
#       install s3rver 3 with npm into NPM_DIR (default build/npm of the
#       checkout) unless it is there, start it on a free port with its data
#       in PREFIX/data, make each BUCKET, and print the endpoint URL (also
#       kept in PREFIX/url).  PREFIX (created if missing) holds the pid, the
#       port and the log.  PORT=N in the environment picks the port.
#   bench/s3_server.sh stop PREFIX       stop it (by its pid); wait until it is gone
#   bench/s3_server.sh restart PREFIX    stop, then start on the same port and data
#   bench/s3_server.sh url PREFIX        print the endpoint URL
#   bench/s3_server.sh install           only install s3rver (CI does it first)
#
# s3rver does not check signatures, and needs the x-amz-content-sha256
# header on every request (shardkit sends it; the curl calls here do too).
# Exit status: 0 done; 1 s3rver could not be installed, started or stopped;
# 2 usage error; 3 Node.js or npm is not installed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/server_lib.sh"
NPM_DIR=${NPM_DIR:-$here/../build/npm}
S3RVER_VERSION=${S3RVER_VERSION:-3}

usage() { sed -n '4,19s/^# \{0,1\}//p' "$0" >&2; exit 2; }
die() { echo "s3_server.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
    echo "s3_server.sh: Node.js and npm are not installed" >&2; exit 3; }

[ $# -ge 1 ] || usage
cmd=$1
[ "$cmd" = install ] || [ $# -ge 2 ] || usage
prefix=${2:-}
shift
[ $# -eq 0 ] || shift

install() {
    [ -x "$NPM_DIR/node_modules/.bin/s3rver" ] && return 0
    mkdir -p "$NPM_DIR"
    npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent "s3rver@$S3RVER_VERSION" \
        >"$NPM_DIR/install.log" 2>&1 || die "npm could not install s3rver: $(tail -n 5 "$NPM_DIR/install.log")"
}

pid_of() { [ -s "$prefix/pid" ] && cat "$prefix/pid"; }

# answers PORT: s3rver answers a listing of all buckets
answers() {
    curl -s -o /dev/null -w '%{http_code}' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
        "http://127.0.0.1:$1/" 2>/dev/null | grep -q '^200$'
}

launch() {  # port: 0 when it answers, 1 when it died (port taken?)
    mkdir -p "$prefix/data"
    : >"$prefix/log"
    # s3rver's continuation tokens (listings of more than 1000 keys) use DES,
    # which the OpenSSL 3 of Node.js 17+ has only in its legacy provider
    NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--openssl-legacy-provider" \
    "$NPM_DIR/node_modules/.bin/s3rver" -d "$prefix/data" -a 127.0.0.1 -p "$1" --silent \
        >>"$prefix/log" 2>&1 </dev/null &
    echo $! >"$prefix/pid"
    wait_answering "$prefix/pid" "s3rver on port $1 ($prefix/log)" answers "$1"
}

stop() {
    stop_pidfile "$prefix/pid" s3rver
}

start() {  # [port]
    mkdir -p "$prefix"
    prefix=$(cd "$prefix" && pwd)
    if [ -n "${1:-}" ]; then
        launch "$1" || die "cannot start s3rver on port $1: $(tail -n 3 "$prefix/log")"
        port=$1
    else
        launch_on_a_port s3rver "$prefix/log"
    fi
    echo "$port" >"$prefix/port"
    echo "http://127.0.0.1:$port" >"$prefix/url"
}

case $cmd in
install)
    install
    ;;
start)
    [ -z "$(pid_of || true)" ] || die "a server is already running in '$prefix'"
    install
    start
    for bucket in "$@"; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT \
            -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$(cat "$prefix/url")/$bucket")
        [ "$code" = 200 ] || [ "$code" = 409 ] || die "cannot make bucket '$bucket' (HTTP $code)"
    done
    cat "$prefix/url"
    ;;
stop)
    stop
    ;;
restart)
    [ -s "$prefix/port" ] || die "no server was started in '$prefix'"
    stop
    start "$(cat "$prefix/port")"
    ;;
url)
    cat "$prefix/url"
    ;;
*)
    usage
    ;;
esac
