# server_lib.sh - what the loopback servers of the tests and benchmarks
# share (sourced by http_server.sh and s3_server.sh; POSIX sh).  The caller
# defines die().

# random_port: 20000..59999, from /dev/urandom
random_port() {
    n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
    echo $((20000 + n % 40000))
}

# stop_pidfile FILE NAME: stop the process whose pid FILE holds (TERM, then
# wait up to 10 s for it to go), and remove FILE.  No FILE: nothing to do.
stop_pidfile() {
    [ -s "$1" ] || return 0
    pid=$(cat "$1")
    kill -TERM "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
    i=0
    while kill -0 "$pid" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 200 ] || die "$2 (pid $pid) did not stop"
        sleep 0.05
    done
    rm -f "$1"
}
