#!/bin/sh
# test_report_hostile.sh - the HTML reports against hostile input, read the
# way a person reads them: in headless Chromium (tests/browser).
#   - shardbench's "exact command": a dataset path, a report name and digests
#     name made of quotes, backslashes, a newline, bytes that are not UTF-8,
#     $(...), backticks and invisible characters.  The command is copied from
#     the page as Chromium renders it and run by bash, with a stub program in
#     place of shardbench: the same arguments must arrive, nothing else may
#     run, and the page shows exactly the command the JSON has.
#   - shardcheck's page shows a problem's message exactly as the JSON has it
#     (a message quotes a key once; the page must not quote it again).
#   - a name holding characters that would make text lie (U+202E, a
#     zero-width space, a no-break space) shows as its bytes in the tools'
#     messages and on the pages of shardcheck and shardbench.
#   - shardreport links only files inside ROOT: a run record naming '..',
#     an absolute path, a link that leaves ROOT or a javascript: URL gets no
#     link, and a name with '#', '?', '%' or a space is linked percent-encoded.
. "$(dirname "$0")/lib.sh"

command -v chromium >/dev/null 2>&1 || die "chromium is not installed (scripts/deps.sh installs it)"
command -v bash >/dev/null 2>&1 || die "bash is not installed"
READ="$SHARDKIT_TOP/tests/browser/page_read.py"
RENDER="$SHARDKIT_TOP/tests/browser/render.py"
CHECK="$SHARDKIT_TOP/tests/browser/check_report.py"

# the set-up: the demo source without its broken files ($T/raw); each case
# writes its pages ($P) and what Chromium rendered ($C/out) under its $C
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
rm "$T/raw/apple/truncated.jpg" "$T/raw/boat/empty.jpg" "$T/raw/cloud/notes.jpg" \
    "$T/raw/dune/badcrc.png"

case_shardbench_report_the_command_copied_from_the_page_runs_the_same_argv_in_bash() {
    P="$C/pages"
    mkdir -p "$P" "$C/paste" "$C/stub"
    shardify "$T/raw" "$C/shards" --size 32 --quiet
    # every character a shell or a browser could treat specially
    nl='
'
    hostile="x';touch PWNED;#\"\$(touch PWNED2)\`touch PWNED3\` \\ b\\\\s \\' !x${nl}n$(printf '\377\376\t')\
$(printf '\302\240nbsp \342\200\256rlo \342\200\213zw \303\251t\303\251')"
    DS="$C/$hostile"
    mv "$C/shards" "$DS"
    REPORT="$P/cmd.html"
    DIGESTS="$C/digests '$hostile.txt"
    set -- shards "$DS" --epochs 1 --batch 4 --threads 1 --digests "$DIGESTS" --report "$REPORT" --json
    shardbench "$@" >"$C/cmd.json" || die "shardbench on the hostile path failed"
    [ -s "$REPORT" ] && [ -s "$DIGESTS" ] || die "shardbench wrote no report or digests"
    "$PYTHON" "$READ" "$REPORT" copy command >"$C/copied" || die "the page shows no command"
    "$PYTHON" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["command"] != open(sys.argv[2], encoding="utf-8").read())' \
        "$C/cmd.json" "$C/copied" ||
        die "the page shows '$(cat "$C/copied")', the JSON '$(json "$C/cmd.json" 'd["command"]')'"
    case "$(cat "$C/copied")" in "shardbench "*) ;; *) die "the command does not start with 'shardbench '" ;; esac
    # the stub writes the arguments it is given, each ending in a NUL
    printf '#!/bin/sh\nprintf "%%s\\0" "$@" >"%s"\n' "$C/argv" >"$C/stub/shardbench"
    chmod +x "$C/stub/shardbench"
    (cd "$C/paste" && PATH="$C/stub:$PATH" bash "$C/copied") || die "bash could not run the copied command"
    printf '%s\0' "$@" >"$C/argv.want"
    cmp -s "$C/argv" "$C/argv.want" || {
        od -c "$C/argv" | head -20 >&2
        die "the copied command gives other arguments than the ones shardbench was given"
    }
    [ -z "$(find "$T" -name 'PWNED*')" ] || die "pasting the command ran: $(find "$T" -name 'PWNED*')"
    "$PYTHON" "$RENDER" "$C/out" "$REPORT" >"$C/render.out" ||
        { cat "$C/render.out" >&2; die "the page did not render"; }
    "$PYTHON" "$CHECK" page "$C/render.out" || die "the page misbehaved in the browser"
    "$PYTHON" "$CHECK" shardbench "$C/out/cmd.dom.html" "$C/cmd.json" || die "cmd.html"
}

case_shardcheck_report_shows_messages_labels_and_options_exactly_as_the_json_has_them() {
    P="$C/pages"
    mkdir -p "$P"
    # a backslash in a label, a key and an option's value: a message quotes the
    # key once (\\); the page must show that, not quote it again
    H="$C/bs"
    mkdir -p "$H/la\\bel"
    cp "$T/raw/apple/img_004.png" "$H/la\\bel/k\\ey.png"
    cp "$T/raw/apple/img_004.png" "$H/la\\bel/gone\\.png"
    cp "$T/raw/boat/img_005.png" "$H/la\\bel/other.png"
    shardify "$H" "$C/bshards" --size 32 --labels 'regex:^([^/\]*\\[^/]*)/' --quiet
    rm "$H/la\\bel/gone\\.png"
    must_fail 1 shardcheck --source "$H" "$C/bshards" --report "$P/bs.html" --json
    mv "$T/stdout" "$C/bs.json"
    [ "$(json "$C/bs.json" '[l["label"] for l in d["labels"]], [p["message"] for p in d["problems"] if "gone" in p["message"]] != []')" = \
      "(['la\\\\bel'], True)" ] || die "the dataset with backslashes: $(cat "$C/bs.json")"
    "$PYTHON" "$RENDER" "$C/out" "$P/bs.html" >"$C/render.out" ||
        { cat "$C/render.out" >&2; die "bs.html did not render"; }
    "$PYTHON" "$CHECK" page "$C/render.out" || die "bs.html misbehaved in the browser"
    "$PYTHON" "$CHECK" shardcheck "$C/out/bs.dom.html" "$C/bs.json" || die "bs.html shows other text than its JSON"
}

case_a_name_holding_u202e_a_zero_width_or_a_no_break_space_shows_as_its_bytes_in_messages_and_pages() {
    P="$C/pages"
    mkdir -p "$P"
    L="$C/lie"
    mkdir -p "$L"
    cp "$T/raw/apple/img_004.png" "$L/ok.png"
    liar=$(printf 'x\342\200\256gnp.exe\342\200\213\302\240.png')
    shown='x\xe2\x80\xaegnp.exe\xe2\x80\x8b\xc2\xa0.png'
    printf 'junk' >"$L/$liar"
    shardify "$L" "$C/lie-shards" --size 32 2>"$C/lie.err"
    must_say "rejected '$shown': not an image" "$C/lie.err"
    rm "$L/$liar"
    must_fail 1 shardcheck --source "$L" "$C/lie-shards" --report "$P/lie.html"
    must_say "source: rejected '$shown'" "$T/stdout"
    must_say "$shown" "$P/lie.html"
    mv "$C/lie-shards" "$C/$liar"
    shardbench shards "$C/$liar" --epochs 1 --threads 1 --report "$P/lie-bench.html" --json >/dev/null ||
        die "shardbench on a dataset named with U+202E failed"
    must_say "$shown" "$P/lie-bench.html"
    for f in "$C/lie.err" "$T/stdout" "$P/lie.html" "$P/lie-bench.html"; do
        for c in '\342\200\256' '\342\200\213' '\302\240'; do
            if grep -q "$(printf "$c")" "$f"; then die "'$f' shows $c as itself"; fi
        done
    done
}

case_shardreport_links_only_files_inside_root_whatever_a_run_record_names() {
    ROOT="$C/root"
    R="$ROOT/runs"
    mkdir -p "$R" "$C/outside"
    echo secret >"$C/outside.html"
    echo secret >"$C/outside/x.log"
    ln -s "$C/outside/x.log" "$R/escape.log"      # a link that leads out of ROOT
    ln -s "$C/outside" "$R/escape-dir"             # ... through a directory
    echo page >"$R/A.html"
    echo log >"$R/odd #?%&'\"<b> name.log"       # linked, percent-encoded
    echo log >"$R/B.log"
    ln -s B.log "$R/inside.log"                     # a link that stays inside: linked
    record() {  # NAME REPORT LOG: a run record naming REPORT and LOG (JSON strings)
        printf '{"run": "%s", "status": "published", "published": true, "report": %s, "log": %s}\n' \
            "$1" "$2" "$3" >"$R/$1.json"
    }
    record 20240101T000001Z '"../outside.html"' '"/etc/passwd"'
    record 20240101T000002Z '"javascript:alert(1)"' '"runs/escape.log"'
    record 20240101T000003Z '"runs/A.html"' '"runs/odd #?%&\u0027\"<b> name.log"'
    record 20240101T000004Z "\"$R/A.html\"" '"runs/escape-dir/x.log"'
    record 20240101T000005Z '"runs/../runs/A.html"' '"http://example.com/x.log"'
    record 20240101T000006Z '"runs/missing.html"' '"runs/inside.log"'
    record 20240101T000007Z '"runs"' '"runs/B.log/"'
    shardreport nightly "$ROOT" >/dev/null || die "shardreport on hostile records"
    "$PYTHON" "$READ" "$ROOT/index.html" links >"$C/links.json" || die "the index did not load"
    # every link the browser follows is a file: URL of a regular file inside ROOT,
    # and exactly the files that are there and inside are linked
    ROOT="$ROOT" "$PYTHON" - "$C/links.json" <<'EOF' || die "the index links: $(cat "$C/links.json")"
import json, os, sys, urllib.parse
root = os.path.realpath(os.environ["ROOT"])
links = json.load(open(sys.argv[1]))
targets = []
for a in links:
    u = urllib.parse.urlsplit(a["url"])
    assert u.scheme == "file" and not u.query and not u.fragment, a
    path = os.path.realpath(urllib.parse.unquote(u.path))
    assert path.startswith(root + "/") and os.path.isfile(path), a
    targets.append((a["text"], os.path.relpath(path, root)))
want = sorted([("20240101T000003Z", "runs/A.html"), ("report", "runs/A.html"),
               ("log", "runs/odd #?%&'\"<b> name.log"),
               ("20240101T000004Z", "runs/A.html"), ("report", "runs/A.html"),
               ("log", "runs/B.log")])
assert sorted(targets) == want, (sorted(targets), want)
EOF
    "$PYTHON" "$RENDER" "$C/out" "$ROOT/index.html" >"$C/render.out" ||
        { cat "$C/render.out" >&2; die "index.html did not render"; }
    "$PYTHON" "$CHECK" page "$C/render.out" || die "index.html misbehaved in the browser"
    for what in "report '../outside.html'" "log '/etc/passwd'" "report 'javascript:alert(1)'" \
        "log 'runs/escape.log'" "log 'runs/escape-dir/x.log'" "report 'runs/../runs/A.html'" \
        "log 'http://example.com/x.log'" "report 'runs/missing.html'" "report 'runs'" \
        "log 'runs/B.log/'"; do
        "$PYTHON" "$CHECK" text "$C/out/index.dom.html" "$what (not linked: no file inside ROOT)" ||
            die "the page does not say why $what is not linked"
    done
}

run_cases
