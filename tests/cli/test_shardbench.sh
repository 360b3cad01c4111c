# test_shardbench.sh - shardbench on real files: compare's JSON and its
# ratio, a Chrome trace whose spans nest, the consumer's wait share, --cold,
# roofline's numbers, usage errors; and over HTTP against a real nginx on
# loopback (started and stopped here, bench/http_server.sh): the samples read
# over HTTP equal the local ones by key and pixel hash, shards are read in
# few range requests, a 404 names the URL, and a server restarted in the
# middle of a read is survived by retrying.  Speed is benchmarked
# (bench/read_throughput.sh), not asserted here beyond "shards beat files".
. "$(dirname "$0")/lib.sh"

TOP=${SHARDKIT_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
HTTP_SERVER="$TOP/bench/http_server.sh"
SRC=$T/src
RAW=$T/raw
JPG=$T/jpg
N=100

# ---- the set-up the cases read: a small source, 100 photos of the photo sample
# (apostrophes in names included), its raw and jpeg datasets and its keys
mkdir -p "$SRC"
{ ls "$SAMPLE" | grep "'" | head -n 4
  ls "$SAMPLE" | grep -v "'" | grep -i '\.jpe\?g$' | head -n $((N - 4)); } >"$T/pick"
while IFS= read -r f; do cp "$SAMPLE/$f" "$SRC/$f"; done <"$T/pick"
shard_size=400K

say "shardify the source twice: raw and jpeg, several shards"
shardify "$SRC" "$RAW" --size 64 --codec raw --shard-size $shard_size --quiet
shardify "$SRC" "$JPG" --size 64 --quiet
# leave only the samples in SRC (the demo data has broken files), so that both
# loaders read the same set
"$PYTHON" -c '
import json, os, sys
for r in json.load(open(sys.argv[1]))["rejected"]:
    os.remove(os.path.join(sys.argv[2], r["key"]))' "$RAW/manifest.json" "$SRC"
samples=$(json "$RAW/manifest.json" "d['counts']['samples']")
[ "$(json "$RAW/manifest.json" "len(d['shards'])")" -ge 3 ] || die "expected several raw shards"
# the dataset's keys, one per line (the files loader's list for a URL)
"$PYTHON" -c '
import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["key"])' "$RAW/index.jsonl" >"$T/keys"
# compare's JSON, which the compare case and the consumer's wait case read
shardbench compare "$SRC" "$RAW" --threads 2 --json >"$T/cmp.json"

# ---- usage errors ------------------------------------------------------------------
case_usage_errors_exit_2_and_name_the_problem() {
    must_fail 2 shardbench
    must_say "missing command" "$T/err"
    must_fail 2 shardbench fetch "$RAW"
    must_say "unknown command 'fetch'" "$T/err"
    must_fail 2 shardbench files
    must_say "'files' takes 1 operand" "$T/err"
    must_fail 2 shardbench compare "$SRC"
    must_fail 2 shardbench shards "$RAW" --threads 0
    must_say "--threads" "$T/err"
    must_fail 2 shardbench files "$SRC" --fit wide
    must_say "--fit: 'wide'" "$T/err"
    must_fail 2 shardbench files "$SRC" --step-ms -1
    must_fail 2 shardbench shards "$RAW" --size 64
    must_say "belong to the files loader" "$T/err"
    must_fail 2 shardbench shards "$RAW" --frobnicate
    must_say "unknown option '--frobnicate'" "$T/err"
    must_fail 2 shardbench files http://127.0.0.1:9/raw
    must_say "a URL cannot be listed" "$T/err"
    must_fail 2 shardbench compare "$SRC" "$RAW" --digests "$C/d"
    must_fail 2 shardbench roofline --bandwidth 100GB/s --intensity 2
    must_say "needs --bandwidth, --intensity and --peak" "$T/err"
    must_fail 2 shardbench roofline --bandwidth 100GFLOP/s --intensity 2 --peak 1TFLOP/s
    must_say "is not a bandwidth" "$T/err"
    must_fail 2 shardbench -xy shards "$RAW"
    must_say "unknown option '-x'" "$T/err"
    if grep -q "unknown option 'shards'" "$T/err"; then die "the command was named as the option"; fi
    must_fail 2 shardbench shards "$RAW" --timeout 0
    must_say "--timeout: '0' is not a number of seconds" "$T/err"
    shardbench --help >"$C/help"
    must_say "shardbench compare SRC|URL DST|URL" "$C/help"
    must_say "--timeout S" "$C/help"
}

case_an_output_file_that_cannot_be_written_is_a_usage_error_before_the_run_starts() {
    must_fail 2 shardbench shards "$RAW" --trace "$T/no-such-dir/trace.json"
    must_say "--trace: cannot write '$T/no-such-dir/trace.json'" "$T/err"
    [ ! -s "$T/stdout" ] || die "the run started although its trace could not be written"
    mkdir -p "$C/a-directory"
    must_fail 2 shardbench files "$SRC" --trace "$C/a-directory"
    must_say "--trace: cannot write '$C/a-directory'" "$T/err"
    must_fail 2 shardbench shards "$RAW" --digests "$T/no-such-dir/d.jsonl"
    must_say "--digests: cannot write '$T/no-such-dir/d.jsonl'" "$T/err"
    [ ! -e "$T/no-such-dir" ] || die "a directory was created"
}

case_nothing_to_read_or_samples_that_failed_exit_1_saying_so() {
    : >"$C/empty.keys"
    must_fail 1 shardbench files "$SRC" --keys "$C/empty.keys"
    must_say "--keys: '$C/empty.keys' lists no keys" "$T/err"
    mkdir -p "$C/nothing"
    must_fail 1 shardbench files "$C/nothing" --epochs 1
    must_say "no samples to read in '$C/nothing'" "$T/err"
    mkdir -p "$C/mixed"
    head -n 3 "$T/keys" | while IFS= read -r k; do cp "$SRC/$k" "$C/mixed/"; done
    echo "not an image" >"$C/mixed/broken.jpg"
    must_fail 1 shardbench files "$C/mixed" --size 32 --epochs 1 --json
    [ "$(json "$T/stdout" "(d['first_epoch']['samples'], d['errors'])")" = "(3, 1)" ] ||
        die "the report must still be written: $(cat "$T/stdout")"
    must_say "1 sample of '$C/mixed' failed; the first: " "$T/err"
}

case_a_missing_dataset_or_folder_is_an_error_naming_it_exit_1() {
    must_fail 1 shardbench shards "$C/nowhere"
    must_say "$C/nowhere" "$T/err"
    must_fail 1 shardbench files "$C/nowhere"
    must_say "$C/nowhere" "$T/err"
    must_fail 1 shardbench files "$SRC" --keys "$C/no-such-list"
    must_say "no-such-list" "$T/err"
}

# ---- roofline ------------------------------------------------------------------------
case_roofline_100_gb_s_x_2_flop_b_is_200_gflop_s_memory_bound_x_20_capped_at_the_peak() {
    shardbench roofline --bandwidth 100GB/s --intensity 2 --peak 1000GFLOP/s >"$C/roof"
    must_say "attainable: 200 GFLOP/s (memory-bound)" "$C/roof"
    must_say "ridge point: 10 FLOP/B" "$C/roof"
    shardbench roofline --bandwidth 100GB/s --intensity 20 --peak 1000GFLOP/s >"$C/roof"
    must_say "attainable: 1000 GFLOP/s (compute-bound)" "$C/roof"
    shardbench roofline --bandwidth 100GB/s --intensity 10 --peak 1000GFLOP/s --json >"$C/roof.json"
    roof="(d['attainable_flop_per_second'], d['ridge_flop_per_byte'], d['bound'])"
    [ "$(json "$C/roof.json" "$roof")" = "(1000000000000.0, 10.0, 'compute')" ] ||
        die "the ridge point itself is compute-bound"
    shardbench roofline --bandwidth 1.5TB/s --intensity 0.5FLOP/B --peak 19.5TFLOP/s >"$C/roof"
    must_say "attainable: 0.75 TFLOP/s (memory-bound)" "$C/roof"
    shardbench roofline --bandwidth 1GiB/s --intensity 1 --peak 1e12 --json >"$C/roof.json"
    [ "$(json "$C/roof.json" "d['attainable_flop_per_second']")" = 1073741824.0 ] || die "GiB/s"
}

# ---- compare, locally ----------------------------------------------------------------
case_compare_json_samples_per_second_of_both_sides_and_their_ratio_shards_beat_files() {
    "$PYTHON" - "$T/cmp.json" "$samples" <<'EOF' || die "compare JSON"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
f, s = d["files"], d["shards"]
assert d["mode"] == "compare"
for side, mode in ((f, "files"), (s, "shards")):
    assert side["mode"] == mode and side["threads"] == 2 and side["batch"] == 64, side
    assert side["samples_per_second"] > 0 and side["samples_per_epoch"] == n, side
    for ph in (side["first_epoch"], side["steady"]):
        assert ph["epochs"] == 1 and ph["samples"] == n and ph["errors"] == 0, ph
        assert ph["samples_per_second"] > 0 and ph["mb_per_second"] > 0, ph
        assert ph["bytes_read"] > 0 and ph["cpu_seconds_per_sample"] > 0, ph
        assert 0 < ph["batch_latency_ms"]["p50"] <= ph["batch_latency_ms"]["p99"], ph
        assert set(ph["stage_ms_per_sample"]) == {"read", "decompress", "decode", "resize",
                                                 "queue wait", "consumer step"}, ph
        assert ph["requests"] == 0, "local reads are not HTTP requests"
    assert side["startup_seconds"] >= 0 and side["first_batch_seconds"] > 0
# the files side resized to the dataset's geometry; each side measured its own stages
assert f["size"] == 64 and f["fit"] == "short" and s["size"] == 64
assert f["steady"]["stage_ms_per_sample"]["resize"] > 0
assert f["steady"]["stage_ms_per_sample"]["decompress"] == 0
assert s["steady"]["stage_ms_per_sample"]["decompress"] > 0
assert s["steady"]["stage_ms_per_sample"]["resize"] == 0
ratio = s["samples_per_second"] / f["samples_per_second"]
assert abs(d["ratio"] - ratio) < 1e-6 * ratio, (d["ratio"], ratio)
assert d["ratio"] > 1, "shards are not faster than small files: %.2f" % d["ratio"]
EOF
}

case_the_text_report_shows_both_sides_the_stages_and_the_ratio() {
    shardbench compare "$SRC" "$JPG" --epochs 3 --limit 50 >"$C/cmp.txt"
    must_say "epoch 1 (first)" "$C/cmp.txt"
    must_say "epochs 2-3 (steady)" "$C/cmp.txt"
    must_say "decompress" "$C/cmp.txt"
    must_say "resize" "$C/cmp.txt"
    must_say "shards/files:" "$C/cmp.txt"
}

case_limit_epochs_and_seconds_bound_the_run() {
    shardbench shards "$RAW" --limit 7 --epochs 3 --batch 4 --json >"$C/lim.json"
    lim="(d['first_epoch']['samples'], d['steady']['samples'], d['steady']['epochs'],
          d['first_epoch']['batches'])"
    [ "$(json "$C/lim.json" "$lim")" = "(7, 14, 2, 2)" ] || die "--limit 7 --epochs 3 --batch 4"
    shardbench files "$SRC" --size 32 --epochs 1000 --seconds 1 --json >"$C/sec.json"
    [ "$(json "$C/sec.json" "d['steady'] is None or d['steady']['epochs'] < 999")" = True ] ||
        die "--seconds 1 did not stop the run"
}

case_keys_the_files_loader_reads_exactly_the_listed_keys() {
    head -n 10 "$T/keys" >"$C/keys10"
    shardbench files "$SRC" --keys "$C/keys10" --size 32 --epochs 1 --digests "$C/k.jsonl" --json \
        >"$C/k.json"
    [ "$(json "$C/k.json" "d['first_epoch']['samples']")" = 10 ] || die "--keys read other samples"
    "$PYTHON" -c '
import json, sys
got = sorted(json.loads(l)["key"] for l in open(sys.argv[1]))
want = sorted(l.rstrip("\n") for l in open(sys.argv[2]))
assert got == want, (got, want)' "$C/k.jsonl" "$C/keys10" || die "digests name other keys"
}

# ---- the consumer's wait -----------------------------------------------------------------
case_step_ms_a_slow_consumer_barely_waits_for_shards_with_no_step_it_always_waits() {
    shardbench shards "$JPG" --batch 8 --step-ms 25 --epochs 2 --json >"$C/step.json"
    "$PYTHON" - "$C/step.json" <<'EOF' || die "wait fraction with a slow consumer"
import json, sys
d = json.load(open(sys.argv[1]))
st = d["steady"]
assert d["step_ms"] == 25
assert st["wait_fraction"] < 0.3, st["wait_fraction"]
# the steps themselves are accounted: about 25 ms per batch
assert 20 < st["stage_ms_per_sample"]["consumer step"] * 8 < 60, st["stage_ms_per_sample"]
EOF
    [ "$(json "$T/cmp.json" "d['files']['steady']['wait_fraction'] > 0.8")" = True ] ||
        die "a consumer without a step should wait nearly all the time"
}

# ---- the trace ------------------------------------------------------------------------------
case_trace_valid_chrome_trace_json_every_stage_named_spans_nest_on_each_thread() {
    shardbench compare "$SRC" "$JPG" --limit 40 --batch 8 --step-ms 1 --trace "$C/trace.json" \
        >/dev/null
    "$PYTHON" - "$C/trace.json" <<'EOF' || die "trace"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["displayTimeUnit"] == "ms"
ev = d["traceEvents"]
spans = [e for e in ev if e["ph"] == "X"]
counters = [e for e in ev if e["ph"] == "C"]
meta = [e for e in ev if e["ph"] == "M"]
assert spans and counters and meta
names = {e["name"] for e in spans}
for stage in ("read", "decompress", "decode", "resize", "queue wait", "consumer step",
              "sample", "batch", "epoch"):
    assert stage in names, (stage, names)
assert {e["name"] for e in counters} == {"queue depth"}
assert all(e["args"]["samples"] >= 0 for e in counters)
procs = {e["args"]["name"] for e in meta if e["name"] == "process_name"}
assert {"files loader", "shard reader"} <= procs, procs
threads = {e["args"]["name"] for e in meta if e["name"] == "thread_name"}
assert "consumer" in threads, threads
for e in spans:
    for k in ("name", "ts", "dur", "pid", "tid"):
        assert k in e, e
    assert isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] >= 0, e
# per thread: sorted by start (longest first on ties), every span lies inside
# the enclosing open one or starts after it ends - never a partial overlap
lanes = {}
for e in spans:
    lanes.setdefault((e["pid"], e["tid"]), []).append(e)
for lane, es in lanes.items():
    es.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in es:
        start, end = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1][1] <= start and end > stack[-1][1]:
            stack.pop()  # the open span ended before this one starts
        if stack:
            assert end <= stack[-1][1], ("partial overlap", lane, stack[-1][2], e)
        stack.append((start, end, e))
# the stages of a sample sit inside its "sample" span, on a loader thread
reads = [e for e in spans if e["name"] == "read"]
samples = [e for e in spans if e["name"] == "sample"]
assert len(samples) >= 80 and len(reads) >= 80
EOF
}

# ---- --cold --------------------------------------------------------------------------------
case_cold_drops_the_page_cache_of_the_files_read_and_says_how_cold_it_got() {
    shardbench files "$SRC" --size 32 --cold --limit 20 --json >"$C/cold.json"
    "$PYTHON" - "$C/cold.json" <<'EOF' || die "--cold report"
import json, sys
c = json.load(open(sys.argv[1]))["cold"]
assert c["requested"] is True and c["dropped"] is True, c
assert c["resident_fraction"] is None or 0 <= c["resident_fraction"] <= 1, c
assert "posix_fadvise" in c["note"], c
EOF
    shardbench shards "$RAW" --cold --json >"$C/cold.json"
    [ "$(json "$C/cold.json" "d['cold']['dropped']")" = True ] || die "--cold on shards"
}

# ---- a server that accepts and never answers ------------------------------------------------
# the servers the cases use, stopped when the test ends: this one, a real
# socket server on loopback that accepts every connection and sends nothing
# (H is its URL), and nginx (below)
hang=""
U=""
HTTP=$T/http
stop_server() { "$HTTP_SERVER" stop "$HTTP" >/dev/null 2>&1 || true; }
on_exit '[ -z "$hang" ] || kill $hang 2>/dev/null; [ -z "$U" ] || stop_server'
# it writes its port once it listens, and is killed by its pid
"$PYTHON" - "$T/hang.port" <<'HANG' &
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    held.append(s.accept()[0])
HANG
hang=$!
i=0
while [ ! -f "$T/hang.port" ]; do
    i=$((i + 1))
    [ $i -le 200 ] || die "the hanging server did not start"
    sleep 0.05
done
H="http://127.0.0.1:$(cat "$T/hang.port")"

case_timeout_a_server_that_never_answers_ends_the_run_with_an_error_naming_the_url() {
    # `timeout` only guards the suite against a hang; the run ends by itself
    must_fail 1 timeout 300 shardbench shards "$H/data" --timeout 1 --retries 1
    must_say "cannot read '$H/data/manifest.json': timed out: nothing received for 1 s" "$T/err"
    must_say "(gave up after 2 attempts)" "$T/err"
}

# ---- over HTTP: a real nginx on loopback ------------------------------------------------------
# the source and the datasets served by nginx (the HTTP cases), $T/broken (RAW
# with a shard missing) among them; the samples read locally ($T/local.jsonl,
# by key and pixel hash) that three cases compare with
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    mkdir -p "$T/broken"
    cp "$RAW"/* "$T/broken/"
    rm "$T/broken/shard-000001.shard"
    U=$("$HTTP_SERVER" start "$HTTP" src="$SRC" raw="$RAW" jpg="$JPG" broken="$T/broken") ||
        die "cannot start nginx"
    say "nginx serves the source and the datasets at $U"
    shardbench shards "$RAW" --epochs 1 --digests "$T/local.jsonl" >/dev/null
else
    echo "SKIP: nginx is not installed (scripts/deps.sh installs it): HTTP tests not run"
fi
requests() { wc -l <"$HTTP/access.log" | tr -d ' '; }

case_shards_over_http_equal_the_local_shards_by_key_and_pixel_hash_in_few_range_requests() {
    [ -n "$U" ] || return 0
    before=$(requests)
    shardbench shards "$U/raw" --epochs 2 --window 64K --digests "$C/http.jsonl" --json >"$C/h.json"
    cmp -s "$T/local.jsonl" "$C/http.jsonl" || die "samples read over HTTP differ from the local ones"
    [ "$(wc -l <"$C/http.jsonl")" -eq "$samples" ] || die "not every sample came over HTTP"
    "$PYTHON" - "$C/h.json" "$samples" "$(( $(requests) - before ))" "$RAW/manifest.json" <<'EOF' ||
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2]); logged = int(sys.argv[3])
assert d["remote"] is True
first, steady = d["first_epoch"], d["steady"]
assert first["samples"] == n and steady["samples"] == n
# every epoch goes to the server again, in windows, not one request per record
assert 0 < steady["requests"] < n / 2, steady["requests"]
# and each 64 KiB window at most once: reading ahead in the shuffled plan's
# order never fetches a window twice in an epoch when the cache holds them
windows = sum(-(-s["bytes"] // 65536) for s in json.load(open(sys.argv[4]))["shards"])
assert steady["requests"] <= windows * steady["epochs"], (steady["requests"], windows)
assert steady["bytes_read"] > 0
# the server saw them all, plus the manifest (and read-aheads still in
# flight when the run ended: at most one per connection, 8 by default)
counted = first["requests"] + steady["requests"] + 1
assert counted <= logged <= counted + 8, (first["requests"], steady["requests"], logged)
EOF
        die "HTTP shards"
}

case_a_window_cache_of_two_windows_evicting_while_reading_ahead_still_reads_every_sample_right() {
    [ -n "$U" ] || return 0
    shardbench shards "$U/raw" --epochs 2 --window 64K --window-cache 128K --connections 3 \
        --digests "$C/small-cache.jsonl" >/dev/null
    cmp -s "$T/local.jsonl" "$C/small-cache.jsonl" || die "a small window cache changed the samples"
    grep -q ' 206 GET "/raw/shard-000000.shard" range="bytes=' "$HTTP/access.log" ||
        die "no range request in the server log"
}

case_files_over_http_one_get_per_sample_the_same_pixels_as_from_the_local_folder() {
    [ -n "$U" ] || return 0
    shardbench files "$SRC" --keys "$T/keys" --size 48 --epochs 1 --digests "$C/flocal.jsonl" \
        >/dev/null
    before=$(requests)
    shardbench files "$U/src" --keys "$T/keys" --size 48 --epochs 1 --digests "$C/fhttp.jsonl" \
        --json >"$C/fh.json"
    cmp -s "$C/flocal.jsonl" "$C/fhttp.jsonl" || die "files over HTTP differ from local files"
    [ "$(json "$C/fh.json" "d['first_epoch']['requests']")" -eq "$samples" ] ||
        die "the files loader should make one request per sample"
    [ $(( $(requests) - before )) -eq "$samples" ] || die "the server saw other requests"
}

case_rtt_is_slept_before_every_request_and_reported_as_simulated() {
    [ -n "$U" ] || return 0
    shardbench compare "$U/src" "$U/jpg" --rtt 5 --limit 20 --epochs 1 --json >"$C/rtt.json"
    "$PYTHON" - "$C/rtt.json" <<'EOF' || die "--rtt"
import json, sys
d = json.load(open(sys.argv[1]))
f, s = d["files"], d["shards"]
assert f["rtt_simulated"] is True and f["rtt_ms"] == 5 and s["rtt_ms"] == 5
fe = f["first_epoch"]
assert fe["requests"] == 20 and fe["simulated_rtt_seconds"] >= 20 * 0.005 * 0.99, fe
assert fe["stage_ms_per_sample"]["read"] >= 5, fe
assert d["ratio"] > 1, d["ratio"]
EOF
    shardbench shards "$U/jpg" --rtt 5 --epochs 1 >"$C/rtt.txt"
    must_say "rtt 5 ms (simulated)" "$C/rtt.txt"
}

case_a_missing_shard_is_a_404_naming_its_url_a_missing_dataset_names_manifest_json() {
    [ -n "$U" ] || return 0
    must_fail 1 shardbench shards "$U/broken" --no-shuffle
    must_say "cannot read '$U/broken/shard-000001.shard': HTTP 404 Not Found" "$T/err"
    must_fail 1 shardbench shards "$U/nothing-here"
    must_say "no manifest: cannot read '$U/nothing-here/manifest.json': HTTP 404 Not Found" "$T/err"
    shardbench shards "$U/jpg" --cold --epochs 1 --json >"$C/rc.json"
    [ "$(json "$C/rc.json" "(d['cold']['dropped'], 'server' in d['cold']['note'])")" \
      = "(False, True)" ] ||
        die "--cold over HTTP must say it could not be done"
}

# with_own_server FUNCTION: FUNCTION run with an nginx of its own serving RAW
# (HTTP and U its, under the case's $C), stopped whatever FUNCTION does: the
# outage cases stop and restart their server
with_own_server() {
    HTTP=$C/http
    U=$("$HTTP_SERVER" start "$HTTP" raw="$RAW") || die "cannot start nginx"
    set +e
    (
        set -e
        "$1"
    )
    status=$?
    set -e
    stop_server
    return "$status"
}

read_through_a_restart() {
    : >"$HTTP/access.log"
    # small windows, one connection and a simulated round trip: ~100 requests
    # spread over a few seconds, so the restart lands in the middle
    shardbench shards "$U/raw" --window 16K --connections 1 --rtt 20 --epochs 3 \
        --digests "$C/restart.jsonl" --json >"$C/restart.json" 2>"$C/restart.err" &
    bench=$!
    i=0
    while [ "$(requests)" -lt 10 ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { kill $bench; die "the benchmark made no requests"; }
        sleep 0.05
    done
    "$HTTP_SERVER" stop "$HTTP"
    sleep 1
    "$HTTP_SERVER" restart "$HTTP"
    wait $bench || { cat "$C/restart.err" >&2; die "the read did not survive a server restart"; }
    cmp -s "$T/local.jsonl" "$C/restart.jsonl" || die "samples differ after the restart"
    "$PYTHON" - "$C/restart.json" "$samples" <<'EOF' || die "restart"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert d["first_epoch"]["samples"] + d["steady"]["samples"] == 3 * n
retries = d["first_epoch"]["retries"] + d["steady"]["retries"]
assert retries >= 1, "no retry was needed: the restart missed the read"
EOF
}

case_a_server_restarted_in_the_middle_of_a_read_is_survived_by_retrying() {
    [ -n "$U" ] || return 0
    with_own_server read_through_a_restart
}

read_through_an_outage_without_retries() {
    shardbench shards "$U/raw" --window 16K --connections 1 --rtt 20 --retries 0 --epochs 3 \
        >/dev/null 2>"$C/noretry.err" &
    bench=$!
    i=0
    : >"$HTTP/access.log"
    while [ "$(requests)" -lt 5 ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { kill $bench; die "the benchmark made no requests"; }
        sleep 0.05
    done
    "$HTTP_SERVER" stop "$HTTP"
    if wait $bench; then die "a read with --retries 0 survived a dead server"; fi
    must_say "$U/raw/shard-" "$C/noretry.err"
    must_say "gave up after 1 attempt)" "$C/noretry.err"
}

case_with_no_retries_allowed_the_same_outage_is_an_error_naming_the_url() {
    [ -n "$U" ] || return 0
    with_own_server read_through_an_outage_without_retries
}

run_cases
