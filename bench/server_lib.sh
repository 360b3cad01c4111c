# server_lib.sh - what the loopback servers of the tests and benchmarks
# share (sourced by http_server.sh, s3_server.sh and moto_server.sh; POSIX
# sh).  The caller defines die().

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

# wait_answering PIDFILE NAME CHECK...: poll CHECK (a command) every 0.05 s
# for up to 30 s while the process whose pid PIDFILE holds lives: 0 once
# CHECK succeeds; 1 when the process died (PIDFILE is removed); dies when
# it neither answers nor dies.
wait_answering() {
    pidfile=$1 name=$2
    shift 2
    i=0
    while [ $i -lt 600 ]; do
        "$@" && return 0
        kill -0 "$(cat "$pidfile")" 2>/dev/null || { rm -f "$pidfile"; return 1; }
        sleep 0.05
        i=$((i + 1))
    done
    die "$name did not answer"
}

# launch_on_a_port NAME LOG: the caller's launch PORT (0 when the server
# answers, 1 when it died) on $PORT, else on random ports until one works
# (20 tries); sets $port.  Dies naming NAME and the end of LOG.
launch_on_a_port() {
    tries=0
    while :; do
        port=${PORT:-$(random_port)}
        launch "$port" && return 0
        tries=$((tries + 1))
        [ -z "${PORT:-}" ] && [ $tries -lt 20 ] || die "cannot start $1: $(tail -n 3 "$2")"
    done
}
