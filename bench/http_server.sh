#!/bin/sh
# http_server.sh - start and stop a private nginx on loopback for shardbench's
# remote tests and benchmarks (configuration: bench/nginx.conf).
#
#   bench/http_server.sh start PREFIX NAME=DIR [NAME=DIR...]
#       serve each DIR under http://127.0.0.1:PORT/NAME/ on a free port; print
#       the base URL (also kept in PREFIX/url).  PREFIX (created if missing)
#       holds the configuration, pid, logs (PREFIX/access.log: one line per
#       request) and temporary files.  PORT=N in the environment picks the port.
#   bench/http_server.sh stop PREFIX       fast shutdown; wait until it is gone
#   bench/http_server.sh restart PREFIX    stop, then start on the same port
#   bench/http_server.sh url PREFIX        print the base URL
#
# Exit status: 0 done; 1 nginx could not start or stop; 2 usage error;
# 3 nginx is not installed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/server_lib.sh"
NGINX=${NGINX:-nginx}
PATH="$PATH:/usr/sbin:/sbin"

usage() { sed -n '4,16s/^# \{0,1\}//p' "$0" >&2; exit 2; }
die() { echo "http_server.sh: $*" >&2; exit 1; }

if ! command -v "$NGINX" >/dev/null 2>&1; then
    echo "http_server.sh: nginx is not installed" >&2
    exit 3
fi

[ $# -ge 2 ] || usage
cmd=$1
prefix=$2
shift 2

pid_of() { [ -s "$prefix/nginx.pid" ] && cat "$prefix/nginx.pid"; }

launch() {  # port
    user=""
    [ "$(id -u)" -eq 0 ] && user="user root;"
    sed -e "s/@PORT@/$1/" -e "s/@USER@/$user/" "$here/nginx.conf" >"$prefix/nginx.conf"
    : >"$prefix/error.log"
    "$NGINX" -p "$prefix/" -c "$prefix/nginx.conf" -e "$prefix/error.log" 2>>"$prefix/error.log"
}

stop() {
    stop_pidfile "$prefix/nginx.pid" nginx
}

start() {  # [port]
    mkdir -p "$prefix/tmp" "$prefix/www"
    prefix=$(cd "$prefix" && pwd)
    if [ -n "${1:-}" ]; then
        launch "$1" || die "cannot start nginx on port $1: $(tail -n 3 "$prefix/error.log")"
        port=$1
    else
        tries=0
        while :; do
            port=${PORT:-$(random_port)}
            launch "$port" && break
            tries=$((tries + 1))
            if [ -n "${PORT:-}" ] || [ $tries -ge 20 ] ||
               ! grep -q "Address already in use" "$prefix/error.log"; then
                die "cannot start nginx: $(tail -n 3 "$prefix/error.log")"
            fi
        done
    fi
    echo "$port" >"$prefix/port"
    echo "http://127.0.0.1:$port" >"$prefix/url"
    cat "$prefix/url"
}

case $cmd in
start)
    [ $# -ge 1 ] || usage
    [ -z "$(pid_of || true)" ] || die "a server is already running in '$prefix'"
    mkdir -p "$prefix/www"
    for mount in "$@"; do
        name=${mount%%=*}
        dir=${mount#*=}
        case $name in ""|*/*|.*) die "bad mount name in '$mount'" ;; esac
        [ "$name" != "$mount" ] && [ -d "$dir" ] || die "'$mount' is not NAME=DIR"
        rm -f "$prefix/www/$name"
        ln -s "$(cd "$dir" && pwd)" "$prefix/www/$name"
    done
    start
    ;;
stop)
    stop
    ;;
restart)
    [ -s "$prefix/port" ] || die "no server was started in '$prefix'"
    stop
    start "$(cat "$prefix/port")" >/dev/null
    ;;
url)
    cat "$prefix/url"
    ;;
*)
    usage
    ;;
esac
