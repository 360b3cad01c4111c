# results_lib.sh - every benchmark's raw results under bench/results/ (sourced
# by the benchmark scripts, POSIX sh).  `keep_results "$@"` near a script's
# top runs the script again with its output (stdout and stderr) copied to
# bench/results/NAME-YYYYMMDDTHHMMSSZ.txt, headed by the command, the commit
# and the machine; the script's exit status is kept.  A benchmark run from
# another one (make bench's run.sh) writes into the outer one's file, not a
# file of its own; --help writes none.  SHARDKIT_BENCH_RESULTS=DIR writes elsewhere; =no, nowhere.

# keep_results ARGS...: (the script's own arguments) see above
keep_results() {
    [ -z "${SHARDKIT_BENCH_KEEPING:-}" ] || return 0
    [ "${SHARDKIT_BENCH_RESULTS:-}" != no ] || return 0
    for kr_arg in "$@"; do
        case "$kr_arg" in -h | --help) return 0 ;; esac  # no results in a usage text
    done
    SHARDKIT_BENCH_KEEPING=1
    export SHARDKIT_BENCH_KEEPING
    kr_top=$(cd "$(dirname "$0")/.." && pwd)
    kr_dir=${SHARDKIT_BENCH_RESULTS:-$kr_top/bench/results}
    mkdir -p "$kr_dir" || { echo "$(basename "$0"): cannot create '$kr_dir'" >&2; exit 1; }
    kr_file=$kr_dir/$(basename "$0" .sh)-$(date -u +%Y%m%dT%H%M%SZ).txt
    {
        echo "# command: $0 $*"
        echo "# commit: $(git -C "$kr_top" describe --always --dirty 2>/dev/null || echo unknown)"
        echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >"$kr_file"
    kr_status=$kr_file.status
    { sh "$0" "$@" && echo 0 >"$kr_status" || echo $? >"$kr_status"; } 2>&1 | tee -a "$kr_file"
    kr_code=$(cat "$kr_status" 2>/dev/null || echo 1)
    rm -f "$kr_status"
    echo "raw results: $kr_file" >&2
    exit "$kr_code"
}
