#!/bin/sh
# test_reports.sh - the HTML reports, opened in a real browser (headless
# Chromium, tests/browser/render.py): shardcheck --report on the demo data,
# on a damaged dataset and on keys that are markup, quotes and bytes that
# are not UTF-8; shardbench --report of a comparison with a consumer step;
# the nightly job's report per version and its index of runs; the contact
# sheet of stored images with their captions.  Every page
# renders with no console message, no page error and no network request,
# runs no script, fits a phone and prints; its screenshots are not blank;
# its DOM holds the numbers of the matching --json (check_report.py); a
# reader of the demo's report sees 48 samples in 4 labels kept and the 4
# rejected files with their reasons.  (Over HTTP, with nginx on loopback,
# when nginx is installed.)
. "$(dirname "$0")/lib.sh"

command -v chromium >/dev/null 2>&1 || die "chromium is not installed (scripts/deps.sh installs it)"
RENDER="$SHARDKIT_TOP/tests/browser/render.py"
CHECK="$SHARDKIT_TOP/tests/browser/check_report.py"
P="$T/pages"
mkdir -p "$P"

# ---- the set-up: every page and its --json, rendered in Chromium once ----------
# the demo data: its dataset, and shardcheck --report beside --json
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null
shardify "$T/raw" "$T/shards" --size 64 --shard-size 32K --quiet
shardcheck --deep --source "$T/raw" --visitation 1,2,3 --fidelity 10 "$T/shards" \
    --report "$P/check.html" --json >"$T/check.json" || die "the demo data does not verify"
# a dataset that cannot be read
must_fail 1 shardcheck "$T/nothing-here" --report "$P/none.html" --json
mv "$T/stdout" "$T/none.json"
# a damaged dataset
cp -R "$T/shards" "$T/bad"
"$PYTHON" - "$T/bad/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
by = m["counts"]["by_label"]
by["apple"] += 1          # still adds up to counts.samples, no longer to the shards
by["boat"] -= 1
json.dump(m, open(sys.argv[1], "w"), indent=2)
EOF
cp -R "$T/raw" "$T/raw2"
rm "$T/raw2/cloud/img_038.png"
must_fail 1 shardcheck --source "$T/raw2" "$T/bad" --report "$P/bad.html" --json
mv "$T/stdout" "$T/bad.json"
# a manifest that cannot be read
cp -R "$T/shards" "$T/nomanifest"
echo '{"format": "shardkit", "version": 1' >"$T/nomanifest/manifest.json"
must_fail 1 shardcheck "$T/nomanifest" --report "$P/nomanifest.html" --json
mv "$T/stdout" "$T/nomanifest.json"
# keys that are markup, quotes and bytes that are not UTF-8; then a problem naming such a key
H="$T/hostile"
mkdir -p "$H/<b>lab'el\"&amp;"
label="$H/<b>lab'el\"&amp;"
cp "$T/raw/apple/img_004.png" "$label/<script>alert(1)<!--.png"
cp "$T/raw/apple/img_004.png" "$label/q\"uo'te &amp; .png"
cp "$T/raw/apple/img_004.png" "$label/$(printf 'bytes-\377\376-\033.png')"
: >"$label/<img src=x onerror=alert(1)>.jpg"
cp "$SHARDKIT_FIXTURES/junk_before_dqt.jpg" "$label/<u>warned.jpg"  # kept, with a warning
shardify "$H" "$T/hshards" --size 32 --quiet
shardcheck --source "$H" --fidelity 4 "$T/hshards" --report "$P/hostile.html" --json \
    >"$T/hostile.json" || die "the hostile dataset does not verify"
rm "$label/<script>alert(1)<!--.png"
must_fail 1 shardcheck --source "$H" "$T/hshards" --report "$P/hostile-bad.html" --json
mv "$T/stdout" "$T/hostile-bad.json"
# the contact sheet: captions, and a sample it cannot read
"$PYTHON" - "$T/cap" <<'EOF'
import os, sys
from PIL import Image
d = sys.argv[1]
os.makedirs(d)
for i in range(60):
    Image.new("RGB", (160 + i, 90 + 2 * i), (4 * i, 255 - 4 * i, 128)).save(f"{d}/{i:03d}.jpg")
    with open(f"{d}/{i:03d}.note", "w") as f:
        f.write(f"note {i}")
    if i % 5 == 3:
        continue  # no caption
    caption = {0: '<script>alert(1)</script> & "quotes"', 1: "two\nlines",
               5: "café ☕ x" + "é" * 200}.get(i, f"a picture, number {i}")
    with open(f"{d}/{i:03d}.txt", "w", encoding="utf-8") as f:
        f.write(caption)
EOF
shardify "$T/cap" "$T/capshards" --size 96 --labels none --no-shuffle --quiet \
    --field note=text,from=.note --field caption=text,from=.txt
shardcheck --deep "$T/capshards" --report "$P/captions.html" --json >"$T/captions.json" ||
    die "the captioned dataset does not verify"
sheet() {  # FILE EXPR: EXPR on the contact sheet's samples (s) of the --json in FILE
    json "$1" "[$2 for s in d['contact_sheet']['samples']]"
}
cp -R "$T/capshards" "$T/capbad"
"$PYTHON" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(100); b = f.read(1); f.seek(100); f.write(bytes([b[0] ^ 0xff]))' \
    "$T/capbad/shard-000000.shard"
must_fail 1 shardcheck "$T/capbad" --report "$P/captions-bad.html" --json
mv "$T/stdout" "$T/captions-bad.json"
# shardbench compare (files against shards with a consumer step), and files
cp -R "$T/raw" "$T/clean"
rm "$T/clean/apple/truncated.jpg" "$T/clean/boat/empty.jpg" "$T/clean/cloud/notes.jpg" \
    "$T/clean/dune/badcrc.png"
shardbench compare "$T/clean" "$T/shards" --epochs 3 --batch 8 --threads 2 --step-ms 1 \
    --report "$P/bench.html" --json >"$T/bench.json" || die "shardbench compare failed"
shardbench files "$T/clean" --epochs 1 --limit 20 --report "$P/bench-files.html" --json \
    >"$T/bench-files.json" || die "shardbench files failed"
# shardbench shards --report over HTTP: requests and bytes
remote=0
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    HTTP_SERVER="$SHARDKIT_TOP/bench/http_server.sh"
    on_exit '"$HTTP_SERVER" stop "$T/http" >/dev/null 2>&1 || true'
    U=$("$HTTP_SERVER" start "$T/http" shards="$T/shards") || die "cannot start nginx"
    shardbench shards "$U/shards" --epochs 2 --rtt 1 --window 16K --report "$P/bench-remote.html" \
        --json >"$T/bench-remote.json" || die "shardbench over HTTP failed"
    "$HTTP_SERVER" stop "$T/http" >/dev/null
    remote=1
fi
# the nightly job: a report per version and ROOT/index.html, the history of its runs
ROOT="$T/root"
nightly() {  # EXPECTED_STATUS [VAR=VALUE...]
    want=$1; shift
    set +e
    env SHARDKIT_BIN="$SHARDKIT_BIN" SHARDKIT_SRC="$T/nsrc" SHARDKIT_ROOT="$ROOT" \
        SHARDKIT_OPTIONS="--size 32 --shard-size 32K" "$@" shardkit-nightly >/dev/null 2>"$T/nightly.err"
    got=$?
    set -e
    [ "$got" -eq "$want" ] || { cat "$T/nightly.err" >&2; die "nightly exited $got, expected $want"; }
    sleep 1  # the next run gets a stamp of its own
}
cp -R "$T/raw" "$T/nsrc"
nightly 0
cp "$T/raw/apple/img_004.png" "$T/nsrc/apple/extra.png"
nightly 3 SHARDKIT_NIGHTLY_BEFORE_CHECK="exit 1"
nightly 0
last=$(json "$ROOT/runs/latest.json" 'd["run"]')
cp "$ROOT/index.html" "$P/index.html"
cp "$ROOT/runs/$last.html" "$P/nightly-version.html"
cp "$ROOT/runs/$last.shardcheck.json" "$T/nightly-version.json"
# every page in Chromium
"$PYTHON" "$RENDER" "$T/out" "$P"/*.html >"$T/render.out" || { cat "$T/render.out" >&2; die "a page did not render"; }

case_the_demo_data_shardcheck_report_beside_json() {
    [ -s "$P/check.html" ] || die "no report written"
    [ "$(json "$T/check.json" 'd["dataset"], d["contents"]["counts"]["samples"]')" = "('$T/shards', 48)" ] ||
        die "--json: dataset is the path, contents what it holds"
    # what a reader must find, without JSON
    grep -qF '48 samples in 4 labels kept, 4 files rejected' "$P/check.html" ||
        die "the verdict does not say what was kept"
}

case_report_a_page_that_cannot_be_written_is_a_usage_error_before_any_work() {
    must_fail 2 shardcheck "$T/shards" --report "$C/no/such/dir/r.html"
    must_say "--report: cannot write '$C/no/such/dir/r.html'" "$T/err"
    [ ! -e "$C/no" ] || die "something was created"
    must_fail 2 shardcheck "$T/shards" --report
}

case_a_dataset_that_cannot_be_read_the_page_and_the_json_say_why() {
    [ "$(json "$T/none.json" 'd["verified"], d["error"]')" = \
      "(False, \"cannot open dataset directory '$T/nothing-here': No such file or directory\")" ] ||
        die "--json of a dataset that cannot be read: $(cat "$T/none.json")"
    must_say "Not verified: the dataset could not be checked" "$P/none.html"
}

case_a_damaged_dataset_its_problems_and_the_label_whose_counts_differ() {
    [ "$(json "$T/bad.json" '[l["label"] for l in d["labels"] if l["differs"]]')" = "['apple', 'boat', 'cloud']" ] ||
        die "labels that differ: $(json "$T/bad.json" 'd["labels"]')"
}

case_a_manifest_that_cannot_be_read_the_page_holds_the_verdict_and_the_problem() {
    must_say "Not verified: 1 problem" "$P/nomanifest.html"
}

case_keys_that_are_markup_quotes_and_bytes_that_are_not_utf_8_show_as_text() {
    [ "$(json "$T/hostile.json" 'd["contents"]["counts"]["warned"], len(d["contents"]["warned_samples"])')" = "(1, 1)" ] ||
        die "the sample stored despite a warning: $(json "$T/hostile.json" 'd["contents"]["counts"]')"
    if grep -q '<script>alert' "$P/hostile.html"; then
        die "a key's markup reached the page as markup"
    fi
    must_say "&lt;script&gt;alert(1)&lt;!--.png" "$P/hostile-bad.html"
}

case_the_contact_sheet_48_of_60_samples_evenly_spread_with_the_field_caption_not_the_first_text_field() {
    [ "$(json "$T/captions.json" 'd["contact_sheet"]["caption_field"]')" = caption ] ||
        die "captions from field $(json "$T/captions.json" 'd["contact_sheet"]["caption_field"]')"
    [ "$(sheet "$T/captions.json" 's["index"]')" = "$("$PYTHON" -c 'print([i * 60 // 48 for i in range(48)])')" ] ||
        die "the samples shown: $(sheet "$T/captions.json" 's["index"]')"
    [ "$(json "$T/captions.json" '[(s["key"], s["caption"]) for s in d["contact_sheet"]["samples"][:4]] == [("000.jpg", "<script>alert(1)</script> & \"quotes\""), ("001.jpg", "two\nlines"), ("002.jpg", "a picture, number 2"), ("003.jpg", None)]')" = True ] ||
        die "captions: $(sheet "$T/captions.json" '(s["key"], s["caption"])' | cut -c1-300)"
    # a long caption is cut at a character's boundary, to at most 300 bytes (byte
    # 300 is within an é: 299)
    [ "$(json "$T/captions.json" '[(s["caption_cut"], len(s["caption"].encode()), ("café ☕ x" + "é" * 200).startswith(s["caption"])) for s in d["contact_sheet"]["samples"] if s["index"] == 5]')" = "[(True, 299, True)]" ] ||
        die "the long caption: $(sheet "$T/captions.json" 's["caption"]')"
    # thumbnails fit 128 px: 160x90 stored as 170x96 is shown as 128x72
    [ "$(json "$T/captions.json" 'd["contact_sheet"]["samples"][0]["width"], d["contact_sheet"]["samples"][0]["thumb_width"], d["contact_sheet"]["samples"][0]["thumb_height"]')" = "(170, 128, 72)" ] ||
        die "thumbnail size: $(json "$T/captions.json" 'd["contact_sheet"]["samples"][0]')"
    if grep -qF '<script>alert(1)</script>' "$P/captions.html"; then
        die "a caption's markup reached the page as markup"
    fi
    [ "$(grep -o 'data:image/jpeg;base64,' "$P/captions.html" | wc -l)" -eq 48 ] || die "not 48 thumbnails"
    [ "$(wc -c <"$P/captions.html")" -lt 400000 ] || die "the page is $(wc -c <"$P/captions.html") bytes"
    # --json alone reads no images
    shardcheck "$T/capshards" --json >"$C/nosheet.json"
    [ "$(json "$C/nosheet.json" '"contact_sheet" in d')" = False ] || die "--json alone has a contact sheet"
}

case_the_contact_sheet_names_a_sample_it_cannot_read() {
    [ "$(json "$T/captions-bad.json" '[("error" in s, s.get("key")) for s in d["contact_sheet"]["samples"][:2]]')" = "[(True, '000.jpg'), (False, '001.jpg')]" ] ||
        die "the damaged sample: $(json "$T/captions-bad.json" 'd["contact_sheet"]["samples"][:2]')"
}

case_shardbench_compare_report_files_against_shards_with_a_consumer_step() {
    [ "$(json "$T/bench.json" 'len(d["files"]["wait_over_time"]) > 0, sum(d["shards"]["batch_latency_histogram"]["counts"]) == d["shards"]["first_epoch"]["batches"] + d["shards"]["steady"]["batches"]')" = "(True, True)" ] ||
        die "the latencies and waits of every batch: $(cat "$T/bench.json")"
    [ "$(json "$T/bench.json" 'd["command"]')" = "shardbench compare $T/clean $T/shards --epochs 3 --batch 8 --threads 2 --step-ms 1 --report $P/bench.html --json" ] ||
        die "command: $(json "$T/bench.json" 'd["command"]')"
    must_fail 2 shardbench roofline --bandwidth 1GB/s --intensity 1 --peak 1GFLOP/s --report "$P/x.html"
    must_say "--report belongs to files, shards and compare" "$T/err"
    must_fail 2 shardbench shards "$T/shards" --report "$C/no/such/dir/r.html"
    must_say "--report: cannot write '$C/no/such/dir/r.html'" "$T/err"
}

case_the_nightly_job_a_report_per_version_and_root_index_html_the_history_of_its_runs() {
    [ -f "$ROOT/index.html" ] || die "the nightly job wrote no index"
    runs=$(cd "$ROOT/runs" && ls | grep -c '^[0-9TZ-]*\.json$')
    [ "$runs" -eq 3 ] || die "$runs run records"
    reports=$(cd "$ROOT/runs" && ls | grep -c '\.html$')
    [ "$reports" -eq 2 ] || die "$reports report pages: one per checked version expected"
    [ "$(json "$ROOT/runs/latest.json" 'd["report"]')" = "runs/$last.html" ] || die "the record names no report"
    if ls -a "$ROOT" | grep -q '\.tmp'; then die "a temporary was left in ROOT"; fi
}

case_shardreport_json_out_an_unreadable_record_usage_errors() {
    # on a copy of ROOT: a run record is added to it (and shardreport may write its index)
    cp -R "$ROOT" "$C/root"
    shardreport nightly "$C/root" --json >"$C/index.json"
    # the later runs are incremental from the first (the second was not published)
    [ "$(json "$C/index.json" '[(r["status"], r["samples"], r["reused"], r["added"]) for r in d["runs"]]')" = "[('published', 48, None, None), ('check_failed', 49, 48, 1), ('published', 49, 48, 1)]" ] ||
        die "index rows: $(cat "$C/index.json")"
    echo '{"run": "x", "status": ' >"$C/root/runs/20000101T000000Z.json"
    must_fail 1 shardreport nightly "$C/root" --out "$C/index2.html"
    must_say "cannot read run record '$C/root/runs/20000101T000000Z.json': not JSON" "$T/err"
    must_say "20000101T000000Z     unreadable" "$T/stdout"
    grep -qF '<td class="bad">unreadable</td>' "$C/index2.html" || die "the unreadable record has no row"
    rm "$C/root/runs/20000101T000000Z.json"
    must_fail 2 shardreport nightly
    must_fail 2 shardreport weekly "$C/root"
    must_fail 2 shardreport nightly "$C/root" --out "$C/no/such/dir/x.html"
    must_fail 1 shardreport nightly "$T/nothing-here"
    mkdir "$C/linked"
    ln -s "$C/root/runs" "$C/linked/runs"
    must_fail 1 shardreport nightly "$C/linked"
    must_say "cannot read '$C/linked/runs'" "$T/err"
    [ ! -e "$C/linked/index.html" ] || die "an index for a ROOT whose runs/ is a link"
}

case_every_page_in_chromium_no_console_message_error_or_request_fits_a_phone_prints() {
    "$PYTHON" "$CHECK" page "$T/render.out" || die "a page misbehaved in the browser"
}

case_each_page_holds_the_numbers_of_its_json() {
    "$PYTHON" "$CHECK" shardcheck "$T/out/check.dom.html" "$T/check.json" || die "check.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/bad.dom.html" "$T/bad.json" || die "bad.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/nomanifest.dom.html" "$T/nomanifest.json" ||
        die "nomanifest.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/none.dom.html" "$T/none.json" || die "none.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/hostile.dom.html" "$T/hostile.json" || die "hostile.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/hostile-bad.dom.html" "$T/hostile-bad.json" || die "hostile-bad.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/captions.dom.html" "$T/captions.json" || die "captions.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/captions-bad.dom.html" "$T/captions-bad.json" ||
        die "captions-bad.html"

    "$PYTHON" "$CHECK" shardbench "$T/out/bench.dom.html" "$T/bench.json" || die "bench.html"
    "$PYTHON" "$CHECK" shardbench "$T/out/bench-files.dom.html" "$T/bench-files.json" ||
        die "bench-files.html"
    if [ $remote -eq 1 ]; then
        "$PYTHON" "$CHECK" shardbench "$T/out/bench-remote.dom.html" "$T/bench-remote.json" ||
            die "bench-remote.html"
        "$PYTHON" "$CHECK" text "$T/out/bench-remote.dom.html" "(HTTP)" \
            "a simulated round trip of 1 ms before every request" || die "the remote run's page"
    fi

    "$PYTHON" "$CHECK" nightly "$T/out/index.dom.html" "$ROOT" || die "index.html"
    "$PYTHON" "$CHECK" shardcheck "$T/out/nightly-version.dom.html" "$T/nightly-version.json" ||
        die "the nightly version's report"
}

case_what_a_reader_of_the_demos_report_sees() {
    "$PYTHON" "$CHECK" text "$T/out/check.dom.html" \
        "48 samples in 4 labels kept, 4 files rejected" \
        "apple/truncated.jpgtruncated JPEG" "boat/empty.jpgnot an image: empty file" \
        "cloud/notes.jpgnot an image: unknown signature" \
        "dune/badcrc.pngcorrupt PNG: IDA[AB]: invalid chunk type" || die "the demo's report"
    "$PYTHON" "$CHECK" text "$T/out/hostile.dom.html" "<script>alert(1)<!--.png" \
        "q\"uo'te &amp; .png" "bytes-\\xff\\xfe-\\x1b.png" "<img src=x onerror=alert(1)>.jpg" \
        "<b>lab'el\"&amp;" "<u>warned.jpgJPEG warning: 3 extraneous bytes before marker 0xdb" ||
        die "hostile keys are not shown as text"
    "$PYTHON" "$CHECK" text "$T/out/bad.dom.html" "Not verified" "counts.by_label['apple']" ||
        die "the damaged dataset's report"
    "$PYTHON" "$CHECK" text "$T/out/captions.dom.html" "What training sees" \
        "000.jpg<script>alert(1)</script> & \"quotes\"" "001.jpgtwo\\x0alines" \
        "002.jpga picture, number 2" || die "the captions' report"
}

case_the_checks_can_fail_a_number_changed_in_the_dom_is_caught() {
    sed 's/data-value="12"/data-value="13"/' "$T/out/check.dom.html" >"$C/changed.dom.html"
    if "$PYTHON" "$CHECK" shardcheck "$C/changed.dom.html" "$T/check.json" 2>"$T/err"; then
        die "a changed label count passed"
    fi
    must_say "label 'apple': bars [13.0, 13.0]" "$T/err"
    sed 's/a picture, number 2</a picture, number 3</' "$T/out/captions.dom.html" >"$C/changed.dom.html"
    if "$PYTHON" "$CHECK" shardcheck "$C/changed.dom.html" "$T/captions.json" 2>"$T/err"; then
        die "a changed caption passed"
    fi
    must_say "contact sheet: sample 2's caption ['a picture, number 3']" "$T/err"
    sed 's/data-value="48"/data-value="47"/' "$T/out/index.dom.html" >"$C/changed.dom.html"
    if "$PYTHON" "$CHECK" nightly "$C/changed.dom.html" "$ROOT" 2>"$T/err"; then
        die "a changed run passed"
    fi
    must_say "samples: shown 47" "$T/err"
    echo '{"file": "x", "console": [{"type": "error", "text": "boom"}], "exceptions": [], "log": [], "requests": ["http://192.0.2.1/"], "scripts": 0, "images": 0, "phone_overflow_px": 30, "pdf_pages": 1, "screenshot": "'"$T/out/check.png"'", "full_screenshot": "'"$T/out/check.png"'", "phone_screenshot": "'"$T/out/check.png"'"}' >"$C/fake.out"
    if "$PYTHON" "$CHECK" page "$C/fake.out" 2>"$T/err"; then
        die "a page with errors passed"
    fi
    must_say "console messages" "$T/err"
    must_say "network requests ['http://192.0.2.1/']" "$T/err"
    must_say "30 px wider than a phone" "$T/err"
    "$PYTHON" -c 'from PIL import Image; Image.new("RGB", (300, 200), "white").save("'"$C/blank.png"'")'
    echo '{"file": "x", "console": [], "exceptions": [], "log": [], "requests": [], "scripts": 0, "images": 0, "phone_overflow_px": 0, "pdf_pages": 1, "screenshot": "'"$C/blank.png"'", "full_screenshot": "'"$T/out/check.png"'", "phone_screenshot": "'"$T/out/check.png"'"}' >"$C/fake.out"
    if "$PYTHON" "$CHECK" page "$C/fake.out" 2>"$T/err"; then
        die "a blank screenshot passed"
    fi
    must_say "looks blank" "$T/err"
}

run_cases
