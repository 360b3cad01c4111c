#!/bin/sh
# moto_server.sh - a private S3 server (moto's, from Python) on loopback for
# the S3 tests: a second implementation beside s3rver (bench/s3_server.sh)
# that behaves like AWS and MinIO where s3rver does not (it honours
# encoding-type=url in listings, lists multipart uploads).
#
#   bench/moto_server.sh start PREFIX [BUCKET...]
#       start `moto_server -H 127.0.0.1 -p PORT` on a free port, make each
#       BUCKET, and print the endpoint URL (also kept in PREFIX/url).  PREFIX
#       (created if missing) holds the pid, the port and the log.  PORT=N in
#       the environment picks the port.
#   bench/moto_server.sh stop PREFIX     stop it (by its pid); wait until it is gone
#   bench/moto_server.sh url PREFIX      print the endpoint URL
#   bench/moto_server.sh python          print the Python interpreter moto_server
#                                        runs in (it has boto3, the tests' own client)
#   bench/moto_server.sh check           say where moto_server and boto3 were found
#
# moto_server is found as MOTO_SERVER, else `moto_server` on PATH (a pyenv
# shim is resolved with `pyenv which`); its interpreter is the one named on
# its first line, and must import boto3 too.  `pip install 'moto[server]'
# boto3` installs both.  moto keeps everything in memory and checks no
# signature.
# Exit status: 0 done; 1 moto_server could not be started or stopped;
# 2 usage error; 3 moto_server (or boto3 beside it) is not installed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/server_lib.sh"

usage() { sed -n '7,19s/^# \{0,1\}//p' "$0" >&2; exit 2; }
die() { echo "moto_server.sh: $*" >&2; exit 1; }
missing() { echo "moto_server.sh: $*" >&2; exit 3; }

# find_moto: sets $server (the moto_server script) and $python (its interpreter)
find_moto() {
    server=${MOTO_SERVER:-$(command -v moto_server 2>/dev/null || true)}
    [ -n "$server" ] && [ -f "$server" ] ||
        missing "moto_server is not installed (pip install 'moto[server]' boto3)"
    if grep -q pyenv "$server" 2>/dev/null && command -v pyenv >/dev/null 2>&1; then
        server=$(pyenv which moto_server 2>/dev/null) ||
            missing "pyenv has no moto_server in its current Python"
    fi
    python=$(sed -n '1s/^#! *//p' "$server")
    case $python in
    */env\ *) python=$(command -v "${python#*/env }" 2>/dev/null || true) ;;
    esac
    [ -n "$python" ] && "$python" -c 'import moto.server, boto3' 2>/dev/null ||
        missing "'$server' runs in '${python:-?}', which cannot import moto.server and boto3"
}

[ $# -ge 1 ] || usage
cmd=$1
case $cmd in
python|check) ;;
*) [ $# -ge 2 ] || usage ;;
esac
prefix=${2:-}
shift
[ $# -eq 0 ] || shift

# answers PORT: moto answers a listing of all buckets
answers() {
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/" 2>/dev/null | grep -q '^200$'
}

launch() {  # port: 0 when it answers, 1 when it died (port taken?)
    : >"$prefix/log"
    "$python" "$server" -H 127.0.0.1 -p "$1" >>"$prefix/log" 2>&1 </dev/null &
    echo $! >"$prefix/pid"
    wait_answering "$prefix/pid" "moto_server on port $1 ($prefix/log)" answers "$1"
}

case $cmd in
python)
    find_moto
    echo "$python"
    ;;
check)
    find_moto
    echo "moto_server: $server (Python $("$python" -c 'import moto, boto3; print(moto.__version__, "with boto3", boto3.__version__)'), $python)"
    ;;
start)
    find_moto
    mkdir -p "$prefix"
    prefix=$(cd "$prefix" && pwd)
    [ ! -s "$prefix/pid" ] || die "a server is already running in '$prefix'"
    launch_on_a_port moto_server "$prefix/log"
    echo "$port" >"$prefix/port"
    echo "http://127.0.0.1:$port" >"$prefix/url"
    for bucket in "$@"; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$port/$bucket")
        [ "$code" = 200 ] || die "cannot make bucket '$bucket' (HTTP $code)"
    done
    cat "$prefix/url"
    ;;
stop)
    stop_pidfile "$prefix/pid" moto_server
    ;;
url)
    cat "$prefix/url"
    ;;
*)
    usage
    ;;
esac
