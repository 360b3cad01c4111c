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
# in FILE (bound to d); T is $T as bytes, BAD the hostile name below,
# h(b) the hex of bytes b (how the JSON names them), q(b) bytes b as the
# tools' messages quote them (\xNN for what is not UTF-8).
holds() {
    T="$T" BAD="$bad" "$PYTHON" - "$1" "$2" <<'EOF' || die "$(head -c 600 "$1"): not $2"
import json, os, sys
d = json.load(open(sys.argv[1]))
T, BAD = os.environb[b"T"], os.environb[b"BAD"]
h = bytes.hex
q = lambda b: b.decode("utf-8", "backslashreplace")
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}
bad=$(printf 'data-\377\376-"q"')

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
say "stdout on a full disk: every tool exits 1 and says so"
mkdir -p "$T/root/runs"
echo '{"status": "published", "published": true}' >"$T/root/runs/20240101T000000Z.json"
full shardify "$T/raw" "$T/full1" --size 32 --quiet --json
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
full shardreport nightly "$T/root" --json --out "$T/index.html"
full shardreport nightly "$T/root" --out "$T/index.html"
say "a stdout closed before the run: output lost is an error too"
set +e
shardcheck "$T/shards" --json >&- 2>"$T/err"
got=$?
set -e
[ "$got" -eq 1 ] || die "shardcheck with stdout closed exited $got"
must_say "cannot write standard output" "$T/err"
say "a stdout that works: exit 0, nothing said"
shardcheck "$T/shards" --json >"$T/ok.json" 2>"$T/err" || die "shardcheck failed"
[ ! -s "$T/err" ] || die "stderr: $(cat "$T/err")"

# ---- paths that are not UTF-8 -----------------------------------------------------------------
say "--json names a path that is not UTF-8 by its bytes in hex"
cp -R "$T/shards" "$T/$bad"
shardbench shards "$T/$bad" --epochs 1 --json >"$T/b.json" || die "shardbench on a non-UTF-8 path"
holds "$T/b.json" 'd["location_hex"] == h(T + b"/" + BAD) and "location" not in d and d["samples_per_epoch"] == 48'
shardbench compare "$T/raw" "$T/$bad" --epochs 1 --json >"$T/bc.json" 2>/dev/null || true
holds "$T/bc.json" 'd["shards"]["location_hex"] == h(T + b"/" + BAD) and d["files"]["location"] == q(T + b"/raw")'
cp -R "$T/raw" "$T/src-$bad"
shardcheck --source "$T/src-$bad" "$T/$bad" --json >"$T/c.json" || die "shardcheck on a non-UTF-8 path"
holds "$T/c.json" 'd["dataset_hex"] == h(T + b"/" + BAD) and d["source"]["path_hex"] == h(T + b"/src-" + BAD) and d["verified"]'
say "... and a message that names it quotes its bytes (xNN), never dropping the field"
must_fail 1 shardify "$T/no-$bad" "$T/out" --json
holds "$T/stdout" 'd["status"] == "failed" and d["error"] == "cannot read source \x27%s\x27: No such file or directory" % q(T + b"/no-" + BAD)'
mkdir -p "$T/root-$bad/runs"
cp "$T/root/runs/20240101T000000Z.json" "$T/root-$bad/runs/$(printf '2024\377').json"
shardreport nightly "$T/root-$bad" --json --out "$T/index.html" >"$T/r.json" ||
    die "shardreport on a non-UTF-8 ROOT"
holds "$T/r.json" 'd["root_hex"] == h(T + b"/root-" + BAD) and [r.get("run_hex") for r in d["runs"]] == [h(b"2024\xff")]'

# ---- shardcheck when DST or SRC cannot be read ------------------------------------------------
say "shardcheck --json and --report say why when DST cannot be read"
must_fail 1 shardcheck "$T/no-$bad" --json --report "$T/none.html"
must_say "cannot open dataset directory '$T/no-$bad'" "$T/err"
holds "$T/stdout" 'd["dataset_hex"] == h(T + b"/no-" + BAD) and d["verified"] is False and d["problem_count"] == 0 and d["error"] == "cannot open dataset directory \x27%s\x27: No such file or directory" % q(T + b"/no-" + BAD)'
must_say 'data-verified="false">Not verified: the dataset could not be checked' "$T/none.html"
must_say "cannot open dataset directory &#39;$T/no-data-\\xff\\xfe-&quot;q&quot;&#39;" "$T/none.html"
say "... and when SRC cannot be read"
must_fail 1 shardcheck --source "$T/nothing" "$T/shards" --json --report "$T/nosrc.html"
holds "$T/stdout" 'd["dataset"] == q(T + b"/shards") and d["verified"] is False and d["source"]["path"] == q(T + b"/nothing") and q(T + b"/nothing") in d["error"]'
must_say "Not verified: the dataset could not be checked" "$T/nosrc.html"

# ---- passwords in URLs ------------------------------------------------------------------------
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] ||
    skip "passwords in URLs: nginx is not installed"
say "a password in a URL reaches no message, JSON, page or text"
HTTP_SERVER="$SHARDKIT_TOP/bench/http_server.sh"
on_exit '"$HTTP_SERVER" stop "$T/http" >/dev/null 2>&1 || true'
U=$("$HTTP_SERVER" start "$T/http" shards="$T/shards") || die "cannot start nginx"
# nginx asks for no password; the one in the URL is sent and must be shown nowhere
A=$(echo "$U" | sed 's|^http://|http://alice:s3cr3t-pw@|')
S=$(echo "$U" | sed 's|^http://|http://***@|')
O="$T/o"
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

echo "test_tool_outputs: ok"
