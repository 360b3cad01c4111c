#!/bin/sh
# test_nightly.sh - shardkit-nightly (cmd/shardkit-nightly) over a source that
# changes between runs: each good run publishes a new verified version by
# switching `current`; KEEP bounds the versions kept; a run whose
# verification fails, or whose shardify fails, leaves `current` alone; two
# runs never overlap; every run leaves a JSON summary, valid whatever bytes
# SRC and ROOT hold; options reach shardify exactly as given; a version
# that lost its samples is not published.  (A full disk: test_nightly_full.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nightly_lib.sh"

ROOT="$T/root"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src" SHARDKIT_KEEP=2
export SHARDKIT_OPTIONS="--size 32 --shard-size 64K"

# ---- one ROOT night after night: the set-up runs the job on it ------------------
# snap N: ROOT, the source and the job's messages as run N left them, kept in
# $T/step/N; at N (in a case): ROOT, $S (the source), $E (the messages) and
# $run are those of run N, where the case checks what that run did.
snap() {
    mkdir -p "$T/step/$1"
    cp -a "$ROOT" "$T/step/$1/root"
    cp -a "$SHARDKIT_SRC" "$T/step/$1/src"
    cp "$T/nightly.err" "$T/step/$1/nightly.err"
    echo "$run" >"$T/step/$1/run"
}
at() {
    ROOT=$T/step/$1/root S=$T/step/$1/src E=$T/step/$1/nightly.err
    run=$(cat "$T/step/$1/run")
}

# a labelled source with a few broken files
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/src" >/dev/null
# first run
nightly 0
run1=$run
snap 1
# the source changes: 3 files added, 1 modified, 1 removed
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/apple/new_1.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/src/boat/new_2.jpg"
cp "$SHARDKIT_FIXTURES/rgba.png" "$T/src/cloud/new_3.png"
modified=$(cd "$T/src" && ls dune/*.jpg | head -n 1)
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/$modified"
removed=$(cd "$T/src" && ls apple/*.png | head -n 1)
rm "$T/src/$removed"
# second run
nightly 0
run2=$run
snap 2
# third run
nightly 0
run3=$run
snap 3
# a run whose verification fails
# the hook changes the source after shardify and before shardcheck
SHARDKIT_NIGHTLY_BEFORE_CHECK='printf x >>"$SRC/boat/new_2.jpg"' nightly 3
run4=$run
snap 4
# a failing site hook
SHARDKIT_NIGHTLY_BEFORE_CHECK='exit 7' nightly 3
snap 5
# the next good run, with new options
SHARDKIT_OPTIONS="--size 24 --shard-size 64K" nightly 0
run6=$run
snap 6
# shardify failing (source gone)
SHARDKIT_SRC="$T/missing" nightly 1
snap 7

case_first_run_built_verified_published() {
    at 1
    [ "$(current)" = "versions/$run1" ] || die "current is '$(current)'"
    [ "$(field 'd["status"], d["published"], d["exit_code"]')" = "('published', True, 0)" ] ||
        die "summary: $(cat "$ROOT/runs/$run1.json")"
    [ "$(field 'd["shardify"]["summary"]["samples"], d["shardify"]["summary"]["rejected"]')" = "(48, 4)" ] ||
        die "counts: $(field 'd["shardify"]')"
    [ "$(field 'd["shardcheck"]["exit_code"], d["shardcheck"]["verified"]')" = "(0, True)" ] ||
        die "shardcheck: $(field 'd["shardcheck"]')"
    [ "$(field 'd["previous"]')" = None ] || die "previous should be null"
    [ "$(field 'd["incremental"]')" = None ] || die "the first run has nothing to be incremental from"
    shardcheck --deep --source "$S" "$ROOT/current" >/dev/null || die "current does not verify"
    [ -f "$ROOT/runs/$run1.shardify.json" ] && [ -f "$ROOT/runs/$run1.log" ] || die "run files missing"
}

case_second_run_the_new_version_is_published_the_first_is_kept() {
    at 2
    [ "$run2" != "$run1" ] || die "the same stamp twice"
    [ "$(current)" = "versions/$run2" ] || die "current is '$(current)'"
    [ "$(field 'd["previous"]')" = "versions/$run1" ] || die "previous: $(field 'd["previous"]')"
    [ "$(field 'd["shardify"]["summary"]["samples"]')" = 50 ] || die "expected 48 + 3 - 1 samples"
    [ "$(field 'd["incremental"]["previous"]')" = "versions/$run1" ] ||
        die "incremental: $(field 'd["incremental"]')"
    [ "$(field '[d["incremental"]["lineage"][k] for k in ("added", "changed", "removed", "relabeled", "reconverted")]')" = "[3, 1, 1, 0, 0]" ] ||
        die "lineage: $(field 'd["incremental"]')"
    [ "$(field 'd["incremental"]["lineage"]["reused"] + d["incremental"]["lineage"]["rejected_again"] == d["incremental"]["lineage"]["unchanged"] > 40')" = True ] ||
        die "unchanged files were not reused: $(field 'd["incremental"]')"
    [ "$(field 'd["incremental"]["lineage"] == d["shardify"]["summary"]["lineage"]')" = True ] ||
        die "the run record's lineage is not shardify's"
    [ "$(versions)" = "$run1 $run2 " ] || die "versions: $(versions)"
    shardcheck --deep --source "$S" "$ROOT/current" >/dev/null || die "current does not verify"
    # the old version is the old source: it no longer matches, the new one does
    must_fail 1 shardcheck --source "$S" "$ROOT/versions/$run1"
    "$PYTHON" - "$ROOT/versions/$run1" "$ROOT/versions/$run2" "$modified" "$removed" <<'PY'
import json, sys
old, new, modified, removed = sys.argv[1:5]
def index(d):
    return {json.loads(l)["key"]: json.loads(l) for l in open(d + "/index.jsonl")}
a, b = index(old), index(new)
assert modified in a and modified in b
assert a[modified]["source_xxh3"] != b[modified]["source_xxh3"], "modified file not rebuilt"
assert removed in a and removed not in b, "removed file still published"
assert {"apple/new_1.jpg", "boat/new_2.jpg", "cloud/new_3.png"} <= set(b) - set(a)
PY
}

case_third_run_keep_2_prunes_the_oldest_version_never_the_current_one() {
    at 3
    [ "$(current)" = "versions/$run3" ] || die "current is '$(current)'"
    [ "$(versions)" = "$run2 $run3 " ] || die "versions: $(versions)"
    [ "$(field 'd["pruned_versions"]')" = "['$run1']" ] || die "pruned: $(field 'd["pruned_versions"]')"
    [ "$(field '[d["incremental"]["lineage"][k] for k in ("added", "changed", "removed")]')" = "[0, 0, 0]" ] ||
        die "nothing changed: $(field 'd["incremental"]')"
    [ "$(field 'd["incremental"]["lineage"]["reused"]')" = 50 ] || die "every record reused: $(field 'd["incremental"]')"
}

case_a_run_whose_verification_fails_does_not_switch_current() {
    at 4
    [ "$(current)" = "versions/$run3" ] || die "current moved to '$(current)'"
    [ "$(field 'd["status"], d["published"], d["exit_code"]')" = "('check_failed', False, 3)" ] ||
        die "summary: $(cat "$ROOT/runs/$run4.json")"
    [ "$(field 'd["shardcheck"]["exit_code"], d["shardcheck"]["verified"]')" = "(1, False)" ] ||
        die "shardcheck: $(field 'd["shardcheck"]')"
    [ "$(versions)" = "$run2 $run3 $run4 " ] || die "the failed version is kept for inspection: $(versions)"
    shardcheck "$ROOT/current" >/dev/null || die "current does not verify"
}

case_a_failing_site_hook_also_keeps_current() {
    at 5
    [ "$(field 'd["hook"]["exit_code"], d["shardcheck"]["exit_code"]')" = "(7, None)" ] ||
        die "hook: $(cat "$ROOT/runs/$run.json")"
    [ "$(current)" = "versions/$run3" ] || die "current moved"
}

case_the_next_good_run_publishes_and_prunes_the_failed_versions_new_options_rebuild_in_full() {
    at 6
    [ "$(field 'd["incremental"]["previous"]')" = "versions/$run3" ] || die "incremental: $(field 'd["incremental"]')"
    field 'd["incremental"]["lineage"]["full_rebuild"]' | grep -qF -- "--size differs" ||
        die "a change of options is a full rebuild: $(field 'd["incremental"]')"
    [ "$(current)" = "versions/$run6" ] || die "current is '$(current)'"
    [ "$(versions)" = "$run3 $run6 " ] || die "versions: $(versions)"
}

case_shardify_failing_source_gone_leaves_current_alone() {
    at 7
    [ "$(field 'd["status"], d["shardify"]["exit_code"], d["shardcheck"]["exit_code"]')" = \
      "('shardify_failed', 1, None)" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
    [ "$(field 'd["shardify"]["summary"]["status"]')" = failed ] || die "shardify summary"
    [ "$(current)" = "versions/$run6" ] || die "current moved"
}

case_usage_errors_exit_2() {
    export SHARDKIT_ROOT="$C/root"
    must_fail 2 shardkit-nightly --keep 0
    must_fail 2 env SHARDKIT_ROOT= shardkit-nightly
    must_fail 2 shardkit-nightly --bogus
    must_say "shardkit-nightly: unknown argument '--bogus'" "$T/err"
    must_say "Usage: shardkit-nightly [--src SRC]" "$T/err"
    must_say "see 'shardkit-nightly --help' or shardkit-nightly(1)" "$T/err"
}

case_the_former_path_examples_nightly_shardkit_nightly_sh_warns_and_runs_shardkit_nightly() {
    export SHARDKIT_ROOT="$C/root"
    FORMER="$SHARDKIT_TOP/examples/nightly/shardkit-nightly.sh"
    shardkit-nightly --help >"$C/help"
    sh "$FORMER" --help >"$C/former" 2>"$C/err" || die "the former path's --help failed"
    cmp -s "$C/help" "$C/former" || die "the former path's --help is not shardkit-nightly's"
    [ "$(cat "$C/err")" = "shardkit-nightly.sh: deprecated, removed in 0.4.0: run shardkit-nightly, installed with the tools" ] ||
        die "the former path says: $(cat "$C/err")"
    must_fail 2 sh "$FORMER" --keep 0
    must_say "shardkit-nightly: --keep must be a positive number" "$T/err"
    # as SHARDKIT_BIN names it when PATH has no shardkit-nightly
    env PATH=/usr/bin:/bin sh "$FORMER" --help >"$C/former" 2>/dev/null || die "SHARDKIT_BIN's job was not run"
    cmp -s "$C/help" "$C/former" || die "the former path ran another job"
    # and nothing sends users there: the documentation, units, packaging and
    # scripts name shardkit-nightly (the CHANGELOG says where it went)
    (cd "$SHARDKIT_TOP" && grep -rlF "examples/nightly/shardkit-nightly.sh" README.md CONTRIBUTING.md \
        docs man debian scripts cmd examples .ci) >"$C/former-refs" || true
    [ ! -s "$C/former-refs" ] || die "the former path is still named in: $(tr '\n' ' ' <"$C/former-refs")"
}

case_a_run_while_another_holds_the_lock_does_nothing_exit_4() {
    if ! command -v flock >/dev/null 2>&1; then
        echo "SKIP: overlap: flock(1) is not available"
        return 0
    fi
    # on a copy of the last run's ROOT
    cp -a "$T/step/7/root" "$C/root"
    ROOT=$C/root
    export SHARDKIT_ROOT="$ROOT"
    before=$(ls "$ROOT/runs" | wc -l)
    # a holder that releases the lock when it is killed, leaving nothing behind
    "$PYTHON" -c '
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(120)' "$ROOT/.nightly.lock" "$C/locked" &
    holder=$!
    i=0
    until [ -e "$C/locked" ]; do
        sleep 0.05
        i=$((i + 1))
        [ $i -lt 600 ] || die "the lock was never taken"
    done
    must_fail 4 shardkit-nightly
    must_say "another run holds" "$T/err"
    kill "$holder"
    wait "$holder" 2>/dev/null || true
    [ "$(ls "$ROOT/runs" | wc -l)" -eq "$before" ] || die "a locked-out run left a record"
}

case_every_run_record_is_valid_json_latest_json_is_the_newest_no_temporaries() {
    at 7
    "$PYTHON" - "$ROOT/runs" <<'PY'
import json, os, sys
runs = sys.argv[1]
records = [json.load(open(os.path.join(runs, n))) for n in os.listdir(runs)
           if n.endswith(".json") and n.count(".") == 1 and n != "latest.json"]
assert len(records) == 7, [d["run"] for d in records]
for d in records:
    assert isinstance(d["published"], bool) and d["status"], d
    json.load(open(os.path.join(runs, d["run"] + ".shardify.json")))
newest = max(d["run"] for d in records)
assert json.load(open(os.path.join(runs, "latest.json")))["run"] == newest
PY
    [ -z "$(find "$ROOT" -name '*.tmp' -o -name '.current.*')" ] || die "temporaries left in ROOT"
}

# ---- symbolic links planted inside ROOT ---------------------------------------------
# The decoys are what the links point at: an "old version" to prune, files;
# a dangling link points at decoys/none.  After every run they must be byte
# for byte as they were.  decoys: the case's own, in $C/decoys; links_root:
# the case's ROOT, $C/root2, over the source the job ran on last
decoys() {
    mkdir -p "$C/decoys/dir/20000101T000000Z" "$C/decoys/dir/sub"
    echo precious >"$C/decoys/dir/20000101T000000Z/manifest.json"
    echo precious too >"$C/decoys/dir/sub/a.txt"
    echo 12345 >"$C/decoys/file"
    tree_state "$C/decoys" >"$C/decoys.state"
}
decoys_intact() { same_state "$C/decoys.state" "$C/decoys" "$1: files outside ROOT changed"; }
links_root() {
    decoys
    ROOT="$C/root2"
    export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src" SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
}

case_a_link_where_the_job_keeps_its_own_directory_or_file_exit_2_nothing_followed() {
    links_root
    for name in versions runs .nightly.lock versions/.published; do
        for target in "$C/decoys/dir" "$C/decoys/file" "$C/decoys/none"; do
            rm -rf "$ROOT" && mkdir -p "$(dirname "$ROOT/$name")"
            ln -s "$target" "$ROOT/$name"
            must_fail 2 shardkit-nightly
            must_say "'$ROOT/$name' is a symbolic link" "$T/err"
            decoys_intact "a link at $name"
            [ ! -e "$ROOT/current" ] || die "a refused run published"
        done
    done
}

case_links_at_current_at_an_old_version_and_at_runs_latest_json_are_replaced_or_removed_never_followed() {
    links_root
    rm -rf "$ROOT" && mkdir -p "$ROOT/versions" "$ROOT/runs"
    ln -s "$C/decoys/dir" "$ROOT/current"
    ln -s "$C/decoys/dir/20000101T000000Z" "$ROOT/versions/20000101T000000Z"
    ln -s "$C/decoys/file" "$ROOT/runs/latest.json"
    ln -s "$C/decoys/file" "$ROOT/runs/.latest.json.tmp"
    ln -s "$C/decoys/file" "$ROOT/versions/.published.tmp"
    nightly 0
    decoys_intact "links at current, an old version, latest.json"
    [ "$(current)" = "versions/$run" ] || die "current is '$(current)'"
    [ "$(field 'd["pruned_versions"]')" = "['20000101T000000Z']" ] || die "pruned: $(field 'd["pruned_versions"]')"
    [ ! -L "$ROOT/versions/20000101T000000Z" ] || die "the old version's link was not pruned"
    [ -f "$ROOT/runs/latest.json" ] && [ ! -L "$ROOT/runs/latest.json" ] || die "latest.json is still a link"
    [ -z "$(find "$ROOT" -type l ! -path "$ROOT/current")" ] || die "links left: $(find "$ROOT" -type l)"
}

case_links_at_this_runs_own_names_a_fixed_time_stamp_another_stamp_is_chosen_nothing_followed() {
    links_root
    # a ROOT the job has published in
    nightly 0
    mkdir "$C/shim"
    real_date=$(command -v date)
    printf '#!/bin/sh\ncase "$*" in *%%Y%%m%%dT%%H%%M%%SZ*) echo 20300101T000000Z ;; *) exec %s "$@" ;; esac\n' \
        "$real_date" >"$C/shim/date"
    chmod +x "$C/shim/date"
    ln -s "$C/decoys/none" "$ROOT/versions/20300101T000000Z"
    ln -s "$C/decoys/file" "$ROOT/runs/20300101T000000Z.log"
    ln -s "$C/decoys/dir" "$ROOT/runs/20300101T000000Z-01.shardify.json"
    PATH="$C/shim:$PATH" nightly 0
    [ "$run" = 20300101T000000Z-02 ] || die "the run took the stamp '$run'"
    decoys_intact "links at the run's own names"
    shardcheck "$ROOT/current" >/dev/null || die "current does not verify"
}

# ---- options reach shardify exactly as given --------------------------------------------
# A source labelled by a regex; the working directory holds a directory the
# regex would match as a file name pattern ("regex:^(c1)/"), which a shell
# expanding the options would pass instead.
mkdir -p "$T/lsrc/c1" "$T/lsrc/c2" "$T/lsrc/other" "$T/cwd/regex:^(c1)"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/lsrc/c1/a.jpg"
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/lsrc/c2/b.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/lsrc/other/c.jpg"
labels() { json "$ROOT/current/manifest.json" 'd["labels"], d["counts"]["unlabeled"]'; }
# options_root: the case's ROOT, $C/root3, over the labelled source
options_root() {
    ROOT="$C/root3"
    export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/lsrc" SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
}

case_shardkit_options_quoted_words_reach_shardify_as_written_nothing_expanded() {
    options_root
    cd "$T/cwd"
    SHARDKIT_OPTIONS="--size 32 --labels 'regex:^(c[0-9])/'" nightly 0
    [ "$(labels)" = "(['c1', 'c2'], 1)" ] || die "labels: $(labels)"
    [ "$(field 'd["options"]')" = "['--size', '32', '--labels', 'regex:^(c[0-9])/']" ] ||
        die "options: $(field 'd["options"]')"
    # every quoting form: '...', "..." with \" and \\, a backslash outside quotes,
    # tabs and newlines between words, $ and * as plain characters
    SHARDKIT_OPTIONS="$(printf '%s\t\n %s' "--size \"3\"2 --labels regex:^\\(c[0-9]\\)/" \
        "--quality '9'\"0\" --shard-size 64K")" nightly 0
    [ "$(labels)" = "(['c1', 'c2'], 1)" ] || die "labels: $(labels)"
    [ "$(field 'd["options"]')" = "['--size', '32', '--labels', 'regex:^(c[0-9])/', '--quality', '90', '--shard-size', '64K']" ] ||
        die "options: $(field 'd["options"]')"
}

case_options_after_double_dash_passed_on_as_they_are_never_globbed() {
    options_root
    cd "$T/cwd"
    SHARDKIT_OPTIONS="--size 32" nightly 0 -- --labels 'regex:^(c[0-9])/' --quality 91
    [ "$(labels)" = "(['c1', 'c2'], 1)" ] || die "labels: $(labels)"
    [ "$(field 'd["options"]')" = "['--size', '32', '--labels', 'regex:^(c[0-9])/', '--quality', '91']" ] ||
        die "options: $(field 'd["options"]')"
}

case_shardkit_check_options_quoted_words_reach_shardcheck_as_written() {
    options_root
    cd "$T/cwd"
    SHARDKIT_OPTIONS="--size 32" SHARDKIT_CHECK_OPTIONS="--visitation '1,3'" nightly 0
    [ "$(field 'd["check_options"], d["shardcheck"]["verified"]')" = "(['--visitation', '1,3'], True)" ] ||
        die "check options: $(field 'd["check_options"], d["shardcheck"]')"
}

case_an_unterminated_quote_is_a_usage_error_nothing_is_done() {
    options_root
    # a ROOT the job has run in
    SHARDKIT_OPTIONS="--size 32" nightly 0
    before=$(ls "$ROOT/runs" | wc -l)
    SHARDKIT_OPTIONS="--size '32" must_fail 2 shardkit-nightly
    must_say "SHARDKIT_OPTIONS has an unterminated single quote" "$T/err"
    SHARDKIT_CHECK_OPTIONS='--visitation "8' must_fail 2 shardkit-nightly
    must_say "SHARDKIT_CHECK_OPTIONS has an unterminated double quote" "$T/err"
    [ "$(ls "$ROOT/runs" | wc -l)" -eq "$before" ] || die "a refused run left a record"
}

case_a_shardify_usage_error_is_reported_as_one_exit_2_not_as_a_failed_shardify() {
    options_root
    # a ROOT the job has published in
    SHARDKIT_OPTIONS="--size 32" nightly 0
    published_before=$(current)
    SHARDKIT_OPTIONS="--size 32 --no-such-option" nightly 2
    must_say "shardify refused its options (usage error" "$T/nightly.err"
    must_say "no-such-option" "$T/nightly.err"
    [ "$(field 'd["status"], d["exit_code"], d["shardify"]["exit_code"], d["published"]')" = \
      "('shardify_usage_error', 2, 2, False)" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
    [ "$(current)" = "$published_before" ] || die "current moved"
    [ ! -e "$ROOT/versions/$run" ] || die "a refused shardify left a version"
}

# ---- a version that lost its samples is not published ----------------------------------
# the set-up runs the job on a ROOT of its own as the source loses a folder,
# then everything (snap and at: above)
ROOT="$T/root4"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/msrc" SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/msrc" >/dev/null
nightly 0
full=$(current)
mv "$T/msrc/dune" "$T/dune.away"  # 12 of 48 samples: 25 % lost
nightly 6
snap loss
SHARDKIT_MAX_LOSS=30 nightly 0
snap allowed
mkdir "$T/msrc.away" && mv "$T/msrc"/* "$T/msrc.away/"
nightly 6 --max-loss 99
snap emptied
nightly 0 --max-loss 100
snap emptied_allowed

case_a_new_version_that_lost_more_than_max_loss_of_the_current_ones_samples_exit_6_not_published() {
    at loss
    [ "$(current)" = "$full" ] || die "current moved to '$(current)'"
    [ "$(field 'd["status"], d["exit_code"], d["published"], d["samples"]')" = \
      "('sample_loss', 6, False, {'new': 36, 'current': 48})" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
    must_say "lost more than --max-loss 10%" "$E"
    [ -d "$ROOT/versions/$run" ] || die "the refused version is kept for inspection"
    [ "$(json "$ROOT/current/manifest.json" 'd["counts"]["samples"]')" = 48 ] || die "current changed"
}

case_the_operator_allows_a_larger_loss_published() {
    at allowed
    [ "$(current)" = "versions/$run" ] || die "current is '$(current)'"
    [ "$(field 'd["max_loss"], d["samples"]')" = "(30, {'new': 36, 'current': 48})" ] ||
        die "summary: $(cat "$ROOT/runs/$run.json")"
}

case_an_emptied_src_an_unmounted_mount_point_is_refused_even_with_no_loss_allowed_at_all() {
    published_before=$(at allowed && current)
    at emptied
    must_say "holds no samples" "$E"
    [ "$(current)" = "$published_before" ] || die "an empty version was published"
}

case_and_published_when_the_operator_says_so_max_loss_100() {
    at emptied_allowed
    [ "$(json "$ROOT/current/manifest.json" 'd["counts"]["samples"]')" = 0 ] || die "expected the empty version"
}

case_the_first_run_publishes_no_empty_version_either() {
    # the set-up's source, emptied
    export SHARDKIT_SRC="$T/msrc"
    SHARDKIT_ROOT="$C/root5" must_fail 6 shardkit-nightly
    [ ! -e "$C/root5/current" ] || die "an empty first version was published"
    for bad in 101 -1 x 5.5 ""; do
        must_fail 2 shardkit-nightly --max-loss "$bad"
        must_say "--max-loss (SHARDKIT_MAX_LOSS) must be a whole percentage" "$T/err"
    done
}

# ---- a detection dataset ------------------------------------------------------------------
case_a_detection_dataset_coco_every_night_after_the_first_rebuilds_in_full_and_publishes() {
    mkdir -p "$C/dsrc"
    cp "$SHARDKIT_FIXTURES/rgb.jpg" "$C/dsrc/a.jpg"
    cp "$SHARDKIT_FIXTURES/progressive.jpg" "$C/dsrc/b.jpg"
    "$PYTHON" - "$C/dsrc" "$C/dcoco.json" <<'PY'
import json, os, sys
from PIL import Image
src, out = sys.argv[1:3]
images = [{"id": i + 1, "file_name": f, "width": Image.open(os.path.join(src, f)).size[0],
           "height": Image.open(os.path.join(src, f)).size[1]}
          for i, f in enumerate(sorted(os.listdir(src)))]
json.dump({"images": images, "categories": [{"id": 1, "name": "thing"}],
           "annotations": [{"id": i["id"], "image_id": i["id"], "category_id": 1, "iscrowd": 0,
                            "bbox": [2, 3, 20, 10], "area": 200} for i in images]},
          open(out, "w"))
PY
    ROOT="$C/droot"
    export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$C/dsrc"
    export SHARDKIT_OPTIONS="--size 32 --labels none --coco $C/dcoco.json"
    nightly 0
    first=$(current)
    nightly 0
    [ "$(current)" = "versions/$run" ] && [ "$(current)" != "$first" ] ||
        die "the second night did not publish: current is '$(current)'"
    field 'd["incremental"]["lineage"]["full_rebuild"]' | grep -qF "boxes, mask and image fields are made" ||
        die "the second night is not a full rebuild saying why: $(field 'd["incremental"]')"
    [ "$(json "$ROOT/current/manifest.json" 'd["counts"]["boxes"]')" = 2 ] || die "boxes lost"
}

# ---- records are JSON whatever the names hold -------------------------------------------
case_run_records_are_valid_json_whatever_bytes_src_and_root_hold() {
    # quotes, a backslash, control bytes, a newline, bytes that are not UTF-8, and UTF-8
    weird=$(printf 'q"uo\\te\001\tn\nl\200\377 \303\251')
    cp -r "$T/lsrc" "$C/src $weird"
    ROOT="$C/root $weird"
    export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$C/src $weird" SHARDKIT_OPTIONS="--size 32"
    nightly 0
    # (a manifest holds its options as UTF-8: these have all but the bytes that are not)
    texty=$(printf 'q"uo\\te\001\tn\nl \303\251')
    SHARDKIT_OPTIONS="--size 32 --labels 'regex:^(c[0-9]|$texty)/'" nightly 0
    "$PYTHON" - "$ROOT" "$C/src $weird" "$run" "$texty" <<'PY'
import json, os, sys
root, src, run, texty = (os.fsencode(a) for a in sys.argv[1:])
runs = os.path.join(root, b"runs")
shown = lambda b: b.decode("utf-8", "backslashreplace")
for name in (run + b".json", b"latest.json"):
    with open(os.path.join(runs, name), "rb") as f:
        d = json.loads(f.read().decode("utf-8"))  # strict: UTF-8, no raw control bytes
    assert d["source"] == shown(src) and bytes.fromhex(d["source_hex"]) == src, d
    assert d["root"] == shown(root) and bytes.fromhex(d["root_hex"]) == root, d
    assert d["options"][-1] == shown(b"regex:^(c[0-9]|" + texty + b")/"), d
    assert d["status"] == "published", d
PY
}

run_cases
