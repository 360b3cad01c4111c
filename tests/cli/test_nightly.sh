#!/bin/sh
# test_nightly.sh - examples/nightly/shardkit-nightly.sh over a source that
# changes between runs: each good run publishes a new verified version by
# switching `current`; KEEP bounds the versions kept; a run whose
# verification fails, or whose shardify fails, leaves `current` alone; two
# runs never overlap; every run leaves a JSON summary.
. "$(dirname "$0")/lib.sh"

NIGHTLY="$SHARDKIT_TOP/examples/nightly/shardkit-nightly.sh"
ROOT="$T/root"
export SHARDKIT_BIN SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src" SHARDKIT_KEEP=2
export SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
unset SHARDKIT_NIGHTLY_BEFORE_CHECK SHARDKIT_CHECK_OPTIONS 2>/dev/null || true

# nightly EXPECTED_STATUS: run the script; it must exit with that status.
# Sets $run to the run's stamp (from runs/latest.json).
nightly() {
    set +e
    sh "$NIGHTLY" >"$T/nightly.out" 2>"$T/nightly.err"
    got=$?
    set -e
    [ "$got" -eq "$1" ] || { cat "$T/nightly.err" >&2; die "nightly exited $got, expected $1"; }
    run=$(json "$ROOT/runs/latest.json" 'd["run"]')
}
current() { readlink "$ROOT/current"; }
versions() { ls "$ROOT/versions" | tr '\n' ' '; }
field() { json "$ROOT/runs/$run.json" "$1"; }

say "a labelled source with a few broken files"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/src" >/dev/null

say "first run: built, verified, published"
nightly 0
run1=$run
[ "$(current)" = "versions/$run1" ] || die "current is '$(current)'"
[ "$(field 'd["status"], d["published"], d["exit_code"]')" = "('published', True, 0)" ] ||
    die "summary: $(cat "$ROOT/runs/$run1.json")"
[ "$(field 'd["shardify"]["summary"]["samples"], d["shardify"]["summary"]["rejected"]')" = "(48, 4)" ] ||
    die "counts: $(field 'd["shardify"]')"
[ "$(field 'd["shardcheck"]["exit_code"], d["shardcheck"]["verified"]')" = "(0, True)" ] ||
    die "shardcheck: $(field 'd["shardcheck"]')"
[ "$(field 'd["previous"]')" = None ] || die "previous should be null"
[ "$(field 'd["incremental"]')" = None ] || die "the first run has nothing to be incremental from"
shardcheck --deep --source "$T/src" "$ROOT/current" >/dev/null || die "current does not verify"
[ -f "$ROOT/runs/$run1.shardify.json" ] && [ -f "$ROOT/runs/$run1.log" ] || die "run files missing"

say "the source changes: 3 files added, 1 modified, 1 removed"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/src/apple/new_1.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/src/boat/new_2.jpg"
cp "$SHARDKIT_FIXTURES/rgba.png" "$T/src/cloud/new_3.png"
modified=$(cd "$T/src" && ls dune/*.jpg | head -n 1)
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/src/$modified"
removed=$(cd "$T/src" && ls apple/*.png | head -n 1)
rm "$T/src/$removed"

say "second run: the new version is published, the first is kept"
nightly 0
run2=$run
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
shardcheck --deep --source "$T/src" "$ROOT/current" >/dev/null || die "current does not verify"
# the old version is the old source: it no longer matches, the new one does
must_fail 1 shardcheck --source "$T/src" "$ROOT/versions/$run1"
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

say "third run: KEEP=2 prunes the oldest version, never the current one"
nightly 0
run3=$run
[ "$(current)" = "versions/$run3" ] || die "current is '$(current)'"
[ "$(versions)" = "$run2 $run3 " ] || die "versions: $(versions)"
[ "$(field 'd["pruned_versions"]')" = "['$run1']" ] || die "pruned: $(field 'd["pruned_versions"]')"
[ "$(field '[d["incremental"]["lineage"][k] for k in ("added", "changed", "removed")]')" = "[0, 0, 0]" ] ||
    die "nothing changed: $(field 'd["incremental"]')"
[ "$(field 'd["incremental"]["lineage"]["reused"]')" = 50 ] || die "every record reused: $(field 'd["incremental"]')"

say "a run whose verification fails does not switch current"
# the hook changes the source after shardify and before shardcheck
SHARDKIT_NIGHTLY_BEFORE_CHECK='printf x >>"$SRC/boat/new_2.jpg"' nightly 3
run4=$run
[ "$(current)" = "versions/$run3" ] || die "current moved to '$(current)'"
[ "$(field 'd["status"], d["published"], d["exit_code"]')" = "('check_failed', False, 3)" ] ||
    die "summary: $(cat "$ROOT/runs/$run4.json")"
[ "$(field 'd["shardcheck"]["exit_code"], d["shardcheck"]["verified"]')" = "(1, False)" ] ||
    die "shardcheck: $(field 'd["shardcheck"]')"
[ "$(versions)" = "$run2 $run3 $run4 " ] || die "the failed version is kept for inspection: $(versions)"
shardcheck "$ROOT/current" >/dev/null || die "current does not verify"

say "a failing site hook also keeps current"
SHARDKIT_NIGHTLY_BEFORE_CHECK='exit 7' nightly 3
[ "$(field 'd["hook"]["exit_code"], d["shardcheck"]["exit_code"]')" = "(7, None)" ] ||
    die "hook: $(cat "$ROOT/runs/$run.json")"
[ "$(current)" = "versions/$run3" ] || die "current moved"

say "the next good run publishes and prunes the failed versions; new options rebuild in full"
SHARDKIT_OPTIONS="--size 24 --shard-size 64K" nightly 0
run6=$run
[ "$(field 'd["incremental"]["previous"]')" = "versions/$run3" ] || die "incremental: $(field 'd["incremental"]')"
field 'd["incremental"]["lineage"]["full_rebuild"]' | grep -qF -- "--size differs" ||
    die "a change of options is a full rebuild: $(field 'd["incremental"]')"
[ "$(current)" = "versions/$run6" ] || die "current is '$(current)'"
[ "$(versions)" = "$run3 $run6 " ] || die "versions: $(versions)"

say "shardify failing (source gone) leaves current alone"
SHARDKIT_SRC="$T/missing" nightly 1
[ "$(field 'd["status"], d["shardify"]["exit_code"], d["shardcheck"]["exit_code"]')" = \
  "('shardify_failed', 1, None)" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
[ "$(field 'd["shardify"]["summary"]["status"]')" = failed ] || die "shardify summary"
[ "$(current)" = "versions/$run6" ] || die "current moved"

say "usage errors exit 2"
must_fail 2 sh "$NIGHTLY" --keep 0
must_fail 2 env SHARDKIT_ROOT= sh "$NIGHTLY"
must_fail 2 sh "$NIGHTLY" --bogus

if command -v flock >/dev/null 2>&1; then
    say "a run while another holds the lock does nothing (exit 4)"
    before=$(ls "$ROOT/runs" | wc -l)
    # a holder that releases the lock when it is killed, leaving nothing behind
    "$PYTHON" -c '
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(120)' "$ROOT/.nightly.lock" "$T/locked" &
    holder=$!
    i=0
    until [ -e "$T/locked" ]; do
        sleep 0.05
        i=$((i + 1))
        [ $i -lt 600 ] || die "the lock was never taken"
    done
    must_fail 4 sh "$NIGHTLY"
    must_say "another run holds" "$T/err"
    kill "$holder"
    wait "$holder" 2>/dev/null || true
    [ "$(ls "$ROOT/runs" | wc -l)" -eq "$before" ] || die "a locked-out run left a record"
else
    echo "SKIP: overlap: flock(1) is not available"
fi

say "every run record is valid JSON; latest.json is the newest; no temporaries"
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

# ---- symbolic links planted inside ROOT ---------------------------------------------
# The decoys are what the links point at: an "old version" to prune, files;
# a dangling link points at decoys/none.  After every run they must be byte
# for byte as they were.
mkdir -p "$T/decoys/dir/20000101T000000Z" "$T/decoys/dir/sub"
echo precious >"$T/decoys/dir/20000101T000000Z/manifest.json"
echo precious too >"$T/decoys/dir/sub/a.txt"
echo 12345 >"$T/decoys/file"
tree_state "$T/decoys" >"$T/decoys.state"
decoys_intact() { same_state "$T/decoys.state" "$T/decoys" "$1: files outside ROOT changed"; }
ROOT="$T/root2"
export SHARDKIT_ROOT="$ROOT"

say "a link where the script keeps its own directory or file: exit 2, nothing followed"
for name in versions runs .nightly.lock versions/.published; do
    for target in "$T/decoys/dir" "$T/decoys/file" "$T/decoys/none"; do
        rm -rf "$ROOT" && mkdir -p "$(dirname "$ROOT/$name")"
        ln -s "$target" "$ROOT/$name"
        must_fail 2 sh "$NIGHTLY"
        must_say "'$ROOT/$name' is a symbolic link" "$T/err"
        decoys_intact "a link at $name"
        [ ! -e "$ROOT/current" ] || die "a refused run published"
    done
done

say "links at current, at an old version and at runs/latest.json are replaced or removed, never followed"
rm -rf "$ROOT" && mkdir -p "$ROOT/versions" "$ROOT/runs"
ln -s "$T/decoys/dir" "$ROOT/current"
ln -s "$T/decoys/dir/20000101T000000Z" "$ROOT/versions/20000101T000000Z"
ln -s "$T/decoys/file" "$ROOT/runs/latest.json"
ln -s "$T/decoys/file" "$ROOT/runs/.latest.json.tmp"
ln -s "$T/decoys/file" "$ROOT/versions/.published.tmp"
nightly 0
decoys_intact "links at current, an old version, latest.json"
[ "$(current)" = "versions/$run" ] || die "current is '$(current)'"
[ "$(field 'd["pruned_versions"]')" = "['20000101T000000Z']" ] || die "pruned: $(field 'd["pruned_versions"]')"
[ ! -L "$ROOT/versions/20000101T000000Z" ] || die "the old version's link was not pruned"
[ -f "$ROOT/runs/latest.json" ] && [ ! -L "$ROOT/runs/latest.json" ] || die "latest.json is still a link"
[ -z "$(find "$ROOT" -type l ! -path "$ROOT/current")" ] || die "links left: $(find "$ROOT" -type l)"

say "links at this run's own names (a fixed time stamp): another stamp is chosen, nothing followed"
mkdir "$T/shim"
real_date=$(command -v date)
printf '#!/bin/sh\ncase "$*" in *%%Y%%m%%dT%%H%%M%%SZ*) echo 20300101T000000Z ;; *) exec %s "$@" ;; esac\n' \
    "$real_date" >"$T/shim/date"
chmod +x "$T/shim/date"
ln -s "$T/decoys/none" "$ROOT/versions/20300101T000000Z"
ln -s "$T/decoys/file" "$ROOT/runs/20300101T000000Z.log"
ln -s "$T/decoys/dir" "$ROOT/runs/20300101T000000Z-01.shardify.json"
PATH="$T/shim:$PATH" nightly 0
[ "$run" = 20300101T000000Z-02 ] || die "the run took the stamp '$run'"
decoys_intact "links at the run's own names"
shardcheck "$ROOT/current" >/dev/null || die "current does not verify"

echo "all nightly checks passed"
