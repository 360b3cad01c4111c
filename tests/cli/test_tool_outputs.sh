#!/bin/sh
# test_tool_outputs.sh - what every tool writes fails loudly and names its
# subject whatever the subject is:
#   - a standard output that cannot be written (/dev/full: a full disk) is an
#     error, exit 1 with a message, for every tool, whether the output is cut
#     in the middle or only its last flush fails, and for --help too;
#   - --json with paths that are not UTF-8 names them as index.jsonl names
#     keys (NAME_hex, the bytes in hex), and a message that quotes such a
#     path keeps it as \xNN, never dropping the field or the document;
#   - shardcheck --json and --report say why when DST or SRC cannot be read;
#   - a password given in an http(s):// URL appears in no message, no JSON,
#     no page and no text (nginx on loopback, when it is installed).
. "$(dirname "$0")/lib.sh"

"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
shardify "$T/raw" "$T/shards" --size 32 --quiet
# holds FILE EXPR: the Python expression EXPR holds for the JSON document
# in FILE (bound to d); T is $T as bytes, C the case's directory $C as bytes,
# BAD the hostile name below, h(b) the hex of bytes b (how the JSON names
# them), q(b) bytes b as the tools' messages quote them (\xNN for what is not
# UTF-8).
holds() {
    T="$T" C="$C" BAD="$bad" "$PYTHON" - "$1" "$2" <<'EOF' || die "$(head -c 600 "$1"): not $2"
import json, os, sys
d = json.load(open(sys.argv[1]))
T, C, BAD = os.environb[b"T"], os.environb[b"C"], os.environb[b"BAD"]
h = bytes.hex
q = lambda b: b.decode("utf-8", "backslashreplace")
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}
bad=$(printf 'data-\377\376-"q"')
# a ROOT of one published run, for shardreport
mkdir -p "$T/root/runs"
echo '{"status": "published", "published": true}' >"$T/root/runs/20240101T000000Z.json"
# nginx serving $T/shards at $U (for the passwords in URLs), when it is installed
HTTP_SERVER="$SHARDKIT_TOP/bench/http_server.sh"
U=""
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    on_exit '"$HTTP_SERVER" stop "$T/http" >/dev/null 2>&1 || true'
    U=$("$HTTP_SERVER" start "$T/http" shards="$T/shards") || die "cannot start nginx"
fi

# ---- a standard output that cannot be written ----------------------------------------------
# full CMD...: CMD, stdout on /dev/full, must exit 1 saying so.
full() {
    set +e
    "$@" >/dev/full 2>"$T/err"
    got=$?
    set -e
    [ "$got" -eq 1 ] || { cat "$T/err" >&2; die "'$*' >/dev/full exited $got, expected 1"; }
    must_say "cannot write standard output: No space left on device" "$T/err"
}
case_stdout_on_a_full_disk_every_tool_exits_1_and_says_so() {
    full shardify "$T/raw" "$C/full1" --size 32 --quiet --json
    full shardify merge --help
    full shardcheck "$T/shards"
    # longer than stdio's buffer (the device's block size): cut in the middle
    full shardcheck "$T/shards" --json --visitation 1,2,3,4,5,6,7,8
    [ "$(shardcheck "$T/shards" --json --visitation 1,2,3,4,5,6,7,8 | wc -c)" -gt "$(stat -c %o /dev/full)" ] ||
        die "the JSON fits one buffer"
    full shardcat --help
    full shardcat --version
    full shardbench shards "$T/shards" --epochs 1 --json
    full shardbench shards "$T/shards" --epochs 1
    full shardbench roofline --bandwidth 1GB/s --intensity 1 --peak 1GFLOP/s --json
    full shardreport nightly "$T/root" --json --out "$C/index.html"
    full shardreport nightly "$T/root" --out "$C/index.html"
}

case_a_stdout_closed_before_the_run_output_lost_is_an_error_too() {
    set +e
    shardcheck "$T/shards" --json >&- 2>"$C/err"
    got=$?
    set -e
    [ "$got" -eq 1 ] || die "shardcheck with stdout closed exited $got"
    must_say "cannot write standard output" "$C/err"
}

case_a_stdout_that_works_exit_0_nothing_said() {
    shardcheck "$T/shards" --json >"$C/ok.json" 2>"$C/err" || die "shardcheck failed"
    [ ! -s "$C/err" ] || die "stderr: $(cat "$C/err")"
}

# ---- paths that are not UTF-8 (made under the case's $C: C in holds) ---------------------------
case_json_names_a_path_that_is_not_utf8_by_its_bytes_in_hex() {
    cp -R "$T/shards" "$C/$bad"
    shardbench shards "$C/$bad" --epochs 1 --json >"$C/b.json" || die "shardbench on a non-UTF-8 path"
    holds "$C/b.json" 'd["location_hex"] == h(C + b"/" + BAD) and "location" not in d and d["samples_per_epoch"] == 48'
    shardbench compare "$T/raw" "$C/$bad" --epochs 1 --json >"$C/bc.json" 2>/dev/null || true
    holds "$C/bc.json" 'd["shards"]["location_hex"] == h(C + b"/" + BAD) and d["files"]["location"] == q(T + b"/raw")'
    cp -R "$T/raw" "$C/src-$bad"
    shardcheck --source "$C/src-$bad" "$C/$bad" --json >"$C/c.json" || die "shardcheck on a non-UTF-8 path"
    holds "$C/c.json" 'd["dataset_hex"] == h(C + b"/" + BAD) and d["source"]["path_hex"] == h(C + b"/src-" + BAD) and d["verified"]'
}

case_a_message_that_names_a_path_not_utf8_quotes_its_bytes_never_dropping_the_field() {
    must_fail 1 shardify "$C/no-$bad" "$C/out" --json
    holds "$T/stdout" 'd["status"] == "failed" and d["error"] == "cannot read source \x27%s\x27: No such file or directory" % q(C + b"/no-" + BAD)'
    mkdir -p "$C/root-$bad/runs"
    cp "$T/root/runs/20240101T000000Z.json" "$C/root-$bad/runs/$(printf '2024\377').json"
    shardreport nightly "$C/root-$bad" --json --out "$C/index.html" >"$C/r.json" ||
        die "shardreport on a non-UTF-8 ROOT"
    holds "$C/r.json" 'd["root_hex"] == h(C + b"/root-" + BAD) and [r.get("run_hex") for r in d["runs"]] == [h(b"2024\xff")]'
}

# ---- shardcheck when DST or SRC cannot be read ------------------------------------------------
case_shardcheck_json_and_report_say_why_when_dst_cannot_be_read() {
    must_fail 1 shardcheck "$C/no-$bad" --json --report "$C/none.html"
    must_say "cannot open dataset directory '$C/no-$bad'" "$T/err"
    holds "$T/stdout" 'd["dataset_hex"] == h(C + b"/no-" + BAD) and d["verified"] is False and d["problem_count"] == 0 and d["error"] == "cannot open dataset directory \x27%s\x27: No such file or directory" % q(C + b"/no-" + BAD)'
    must_say 'data-verified="false">Not verified: the dataset could not be checked' "$C/none.html"
    must_say "cannot open dataset directory &#39;$C/no-data-\\xff\\xfe-&quot;q&quot;&#39;" "$C/none.html"
}

case_shardcheck_json_and_report_say_why_when_src_cannot_be_read() {
    must_fail 1 shardcheck --source "$C/nothing" "$T/shards" --json --report "$C/nosrc.html"
    holds "$T/stdout" 'd["dataset"] == q(T + b"/shards") and d["verified"] is False and d["source"]["path"] == q(C + b"/nothing") and q(C + b"/nothing") in d["error"]'
    must_say "Not verified: the dataset could not be checked" "$C/nosrc.html"
}

# ---- passwords in URLs ------------------------------------------------------------------------
case_a_password_in_a_url_reaches_no_message_json_page_or_text() {
    command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] ||
        skip "passwords in URLs: nginx is not installed"
    # nginx asks for no password; the one in the URL is sent and must be shown nowhere
    A=$(echo "$U" | sed 's|^http://|http://alice:s3cr3t-pw@|')
    S=$(echo "$U" | sed 's|^http://|http://***@|')
    O="$C/o"
    mkdir -p "$O"
    shardbench shards "$A/shards" --epochs 1 --json --report "$O/bench.html" >"$O/bench.json" \
        2>"$O/bench.err" || die "shardbench over HTTP: $(cat "$O/bench.err")"
    [ "$(json "$O/bench.json" 'd["location"], d["samples_per_epoch"]')" = "('$S/shards', 48)" ] ||
        die "shardbench location: $(json "$O/bench.json" 'd["location"]')"
    json "$O/bench.json" 'd["command"]' | grep -qF "shardbench shards '$S/shards' --epochs 1" ||
        die "shardbench command: $(json "$O/bench.json" 'd["command"]')"
    shardbench shards "$A/shards" --epochs 1 >"$O/bench.txt" 2>&1 || die "shardbench text"
    must_say "$S/shards" "$O/bench.txt"
    shardcheck "$A/shards" --json --report "$O/check.html" >"$O/check.json" 2>"$O/check.err" ||
        die "shardcheck over HTTP: $(cat "$O/check.err")"
    [ "$(json "$O/check.json" 'd["dataset"], d["verified"]')" = "('$S/shards', True)" ] ||
        die "shardcheck dataset: $(json "$O/check.json" 'd["dataset"]')"
    must_say "$S/shards" "$O/check.html"
    shardcheck "$A/shards" >"$O/check.txt" 2>&1 || die "shardcheck text"
    must_say "verified '$S/shards'" "$O/check.txt"
    # the library's messages (a 404), whichever tool prints them
    must_fail 1 shardcheck "$A/nothing" --json --report "$O/check404.html"
    cp "$T/stdout" "$O/check404.json"
    cp "$T/err" "$O/check404.err"
    must_say "cannot read '$S/nothing/manifest.json': HTTP 404 Not Found" "$O/check404.err"
    [ "$(json "$O/check404.json" '"HTTP 404" in d["error"], d["dataset"]')" = "(True, '$S/nothing')" ] ||
        die "shardcheck 404 --json: $(cat "$O/check404.json")"
    must_fail 1 shardbench shards "$A/nothing" --epochs 1
    cp "$T/err" "$O/bench404.err"
    must_say "cannot read '$S/nothing/manifest.json': HTTP 404 Not Found" "$O/bench404.err"
    must_fail 1 shardcat "$A/nothing" --out "$O/cat"
    cp "$T/err" "$O/cat.err"
    must_say "cannot read '$S/nothing/manifest.json': HTTP 404 Not Found" "$O/cat.err"
    if grep -rl 's3cr3t-pw' "$O" >&2; then
        die "the password appears in the files above"
    fi
}

run_cases
