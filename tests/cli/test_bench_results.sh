#!/bin/sh
# test_bench_results.sh - every benchmark writes its raw results under
# bench/results/ (bench/results_lib.sh for the shell ones, bench/results.py
# for the Python ones): what it printed, headed by the command, the commit and
# the machine, with the benchmark's exit status kept; one run inside another
# writes into the outer file only; --help and SHARDKIT_BENCH_RESULTS=no write
# none.  Run on planted benchmarks in a copy of bench/, then every benchmark
# of bench/ is held to calling it.
. "$(dirname "$0")/lib.sh"

# the planted benchmarks every case copies: $T/top/bench
B=$T/top/bench
mkdir -p "$B"
cp "$SHARDKIT_TOP/bench/results_lib.sh" "$SHARDKIT_TOP/bench/results.py" "$B/"
cat >"$B/outer.sh" <<'SH'
#!/bin/sh
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"
echo "outer says $*"
echo "outer warns" >&2
sh "$(dirname "$0")/inner.sh"
python3 "$(dirname "$0")/pyinner.py" hello
exit "${OUTER_EXIT:-0}"
SH
cat >"$B/inner.sh" <<'SH'
#!/bin/sh
set -eu
. "$(dirname "$0")/results_lib.sh"
keep_results "$@"
echo "inner says"
SH
for name in pyinner pyouter; do
    cat >"$B/$name.py" <<'PY'
import sys


def main():
    print("%s says %s" % (__file__.rsplit("/", 1)[-1], " ".join(sys.argv[1:])))
    print("it warns", file=sys.stderr)
    return int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 0


if __name__ == "__main__":
    import results
    results.keep(__file__)  # the raw results, in bench/results/
    sys.exit(main())
PY
done
# own_bench: the case's own copy of the planted benchmarks, B (in $C/top/bench),
# and its results folder, R: a benchmark writes its results beside it
own_bench() {
    mkdir -p "$C/top"
    cp -r "$T/top/bench" "$C/top/bench"
    B=$C/top/bench
    R=$B/results
}
# one_file NAME: the only results file of NAME, printed
one_file() {
    set -- "$R"/"$1"-*.txt
    [ $# -eq 1 ] && [ -f "$1" ] || die "expected one results file, found: $*"
    echo "$1"
}

case_a_shell_benchmarks_output_is_copied_headed_its_status_kept_inner_runs_write_no_file_of_their_own() {
    own_bench
    set +e
    OUTER_EXIT=3 sh "$B/outer.sh" one two >"$C/out" 2>"$C/err"
    status=$?
    set -e
    [ "$status" -eq 3 ] || die "the benchmark's exit status 3 came back as $status"
    f=$(one_file outer)
    case "$(basename "$f")" in
    outer-[0-9][0-9][0-9][0-9][0-1][0-9][0-3][0-9]T[0-2][0-9][0-5][0-9][0-5][0-9]Z.txt) ;;
    *) die "results file name '$(basename "$f")' is not NAME-YYYYMMDDTHHMMSSZ.txt" ;;
    esac
    sed -n 1p "$f" | grep -qx "# command: $B/outer.sh one two" || die "no command line: $(sed -n 1p "$f")"
    sed -n 2p "$f" | grep -q "^# commit: " || die "no commit line"
    sed -n 3p "$f" | grep -q "^# date: .*; cores: $(nproc); load: " || die "no machine line"
    for line in "outer says one two" "outer warns" "inner says" "pyinner.py says hello" "it warns"; do
        must_say "$line" "$f"
    done
    must_say "outer says one two" "$C/out"
    must_say "raw results: $f" "$C/err"
    [ ! -e "$R"/inner-* ] 2>/dev/null || die "an inner run wrote its own file"
    ls "$R"/pyinner-* >/dev/null 2>&1 && die "an inner Python run wrote its own file"
    [ ! -e "$f.status" ] || die "the status file was left"
}

case_a_python_benchmarks_output_is_copied_and_headed_its_status_kept() {
    own_bench
    set +e
    python3 "$B/pyouter.py" 5 >"$C/out" 2>"$C/err"
    status=$?
    set -e
    [ "$status" -eq 5 ] || die "the Python benchmark's exit status 5 came back as $status"
    f=$(one_file pyouter)
    sed -n 1p "$f" | grep -qx "# command: $B/pyouter.py 5" || die "no command line: $(sed -n 1p "$f")"
    sed -n 3p "$f" | grep -q "^# date: .*; cores: $(nproc); load: " || die "no machine line"
    must_say "pyouter.py says 5" "$f"
    must_say "it warns" "$f"
    must_say "pyouter.py says 5" "$C/out"
    must_say "raw results: $f" "$C/err"
}

case_help_and_shardkit_bench_results_no_write_none_shardkit_bench_results_dir_writes_there() {
    own_bench
    rm -rf "$R"
    sh "$B/inner.sh" --help >/dev/null
    python3 "$B/pyinner.py" --help >/dev/null
    SHARDKIT_BENCH_RESULTS=no sh "$B/inner.sh" >/dev/null
    SHARDKIT_BENCH_RESULTS=no python3 "$B/pyinner.py" >/dev/null
    [ ! -e "$R" ] || die "results written: $(ls "$R")"
    SHARDKIT_BENCH_RESULTS=$C/elsewhere sh "$B/inner.sh" >/dev/null 2>&1
    SHARDKIT_BENCH_RESULTS=$C/elsewhere python3 "$B/pyinner.py" >/dev/null 2>&1
    [ "$(ls "$C/elsewhere" | wc -l)" -eq 2 ] ||
        die "not written to SHARDKIT_BENCH_RESULTS: $(ls "$C/elsewhere")"
}

case_every_benchmark_of_bench_keeps_its_results() {
    # the programs bench/ holds that are no benchmark: servers, helpers others run, generators
    helpers="http_server.sh moto_server.sh s3_server.sh server_lib.sh stores_lib.sh results_lib.sh
             curl_transfer.py make_variants.py pillow_common.py pillow_loader.py pillow_peer.py results.py"
    missing=""
    for f in "$SHARDKIT_TOP"/bench/*.sh "$SHARDKIT_TOP"/bench/*.py; do
        name=$(basename "$f")
        case " $(echo $helpers) " in *" $name "*) continue ;; esac
        case "$name" in
        *.sh) grep -q '^keep_results "\$@"' "$f" || missing="$missing $name" ;;
        *.py) grep -q '^    results.keep(__file__)' "$f" || missing="$missing $name" ;;
        esac
    done
    [ -z "$missing" ] || die "benchmarks that do not keep their raw results:$missing"
    git -C "$SHARDKIT_TOP" check-ignore -q bench/results/x.txt || die "bench/results/ is not ignored by git"
}

run_cases
