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
must_fail 2 shardkit-nightly --keep 0
must_fail 2 env SHARDKIT_ROOT= shardkit-nightly
must_fail 2 shardkit-nightly --bogus
must_say "shardkit-nightly: unknown argument '--bogus'" "$T/err"
must_say "Usage: shardkit-nightly [--src SRC]" "$T/err"
must_say "see 'shardkit-nightly --help' or shardkit-nightly(1)" "$T/err"

say "the former path, examples/nightly/shardkit-nightly.sh, warns and runs shardkit-nightly"
FORMER="$SHARDKIT_TOP/examples/nightly/shardkit-nightly.sh"
shardkit-nightly --help >"$T/help"
sh "$FORMER" --help >"$T/former" 2>"$T/err" || die "the former path's --help failed"
cmp -s "$T/help" "$T/former" || die "the former path's --help is not shardkit-nightly's"
[ "$(cat "$T/err")" = "shardkit-nightly.sh: deprecated, removed in 0.4.0: run shardkit-nightly, installed with the tools" ] ||
    die "the former path says: $(cat "$T/err")"
must_fail 2 sh "$FORMER" --keep 0
must_say "shardkit-nightly: --keep must be a positive number" "$T/err"
# as SHARDKIT_BIN names it when PATH has no shardkit-nightly
env PATH=/usr/bin:/bin sh "$FORMER" --help >"$T/former" 2>/dev/null || die "SHARDKIT_BIN's job was not run"
cmp -s "$T/help" "$T/former" || die "the former path ran another job"
# and nothing sends users there: the documentation, units, packaging and
# scripts name shardkit-nightly (the CHANGELOG says where it went)
(cd "$SHARDKIT_TOP" && grep -rlF "examples/nightly/shardkit-nightly.sh" README.md CONTRIBUTING.md \
    docs man debian scripts cmd examples .ci) >"$T/former-refs" || true
[ ! -s "$T/former-refs" ] || die "the former path is still named in: $(tr '\n' ' ' <"$T/former-refs")"

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
    must_fail 4 shardkit-nightly
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

say "a link where the job keeps its own directory or file: exit 2, nothing followed"
for name in versions runs .nightly.lock versions/.published; do
    for target in "$T/decoys/dir" "$T/decoys/file" "$T/decoys/none"; do
        rm -rf "$ROOT" && mkdir -p "$(dirname "$ROOT/$name")"
        ln -s "$target" "$ROOT/$name"
        must_fail 2 shardkit-nightly
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

# ---- options reach shardify exactly as given --------------------------------------------
# A source labelled by a regex; the working directory holds a directory the
# regex would match as a file name pattern ("regex:^(c1)/"), which a shell
# expanding the options would pass instead.
mkdir -p "$T/lsrc/c1" "$T/lsrc/c2" "$T/lsrc/other" "$T/cwd/regex:^(c1)"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/lsrc/c1/a.jpg"
cp "$SHARDKIT_FIXTURES/gray.jpg" "$T/lsrc/c2/b.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/lsrc/other/c.jpg"
ROOT="$T/root3"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/lsrc"
labels() { json "$ROOT/current/manifest.json" 'd["labels"], d["counts"]["unlabeled"]'; }
cd "$T/cwd"

say "SHARDKIT_OPTIONS: quoted words reach shardify as written, nothing expanded"
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

say "options after --: passed on as they are, never globbed"
SHARDKIT_OPTIONS="--size 32" nightly 0 -- --labels 'regex:^(c[0-9])/' --quality 91
[ "$(labels)" = "(['c1', 'c2'], 1)" ] || die "labels: $(labels)"
[ "$(field 'd["options"]')" = "['--size', '32', '--labels', 'regex:^(c[0-9])/', '--quality', '91']" ] ||
    die "options: $(field 'd["options"]')"

say "SHARDKIT_CHECK_OPTIONS: quoted words reach shardcheck as written"
SHARDKIT_OPTIONS="--size 32" SHARDKIT_CHECK_OPTIONS="--visitation '1,3'" nightly 0
[ "$(field 'd["check_options"], d["shardcheck"]["verified"]')" = "(['--visitation', '1,3'], True)" ] ||
    die "check options: $(field 'd["check_options"], d["shardcheck"]')"
cd "$T"

say "an unterminated quote is a usage error: nothing is done"
before=$(ls "$ROOT/runs" | wc -l)
SHARDKIT_OPTIONS="--size '32" must_fail 2 shardkit-nightly
must_say "SHARDKIT_OPTIONS has an unterminated single quote" "$T/err"
SHARDKIT_CHECK_OPTIONS='--visitation "8' must_fail 2 shardkit-nightly
must_say "SHARDKIT_CHECK_OPTIONS has an unterminated double quote" "$T/err"
[ "$(ls "$ROOT/runs" | wc -l)" -eq "$before" ] || die "a refused run left a record"

say "a shardify usage error is reported as one (exit 2), not as a failed shardify"
published_before=$(current)
SHARDKIT_OPTIONS="--size 32 --no-such-option" nightly 2
must_say "shardify refused its options (usage error" "$T/nightly.err"
must_say "no-such-option" "$T/nightly.err"
[ "$(field 'd["status"], d["exit_code"], d["shardify"]["exit_code"], d["published"]')" = \
  "('shardify_usage_error', 2, 2, False)" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
[ "$(current)" = "$published_before" ] || die "current moved"
[ ! -e "$ROOT/versions/$run" ] || die "a refused shardify left a version"

# ---- a version that lost its samples is not published ----------------------------------
say "a new version that lost more than --max-loss of the current one's samples: exit 6, not published"
ROOT="$T/root4"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/msrc" SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/msrc" >/dev/null
nightly 0
full=$(current)
mv "$T/msrc/dune" "$T/dune.away"  # 12 of 48 samples: 25 % lost
nightly 6
[ "$(current)" = "$full" ] || die "current moved to '$(current)'"
[ "$(field 'd["status"], d["exit_code"], d["published"], d["samples"]')" = \
  "('sample_loss', 6, False, {'new': 36, 'current': 48})" ] || die "summary: $(cat "$ROOT/runs/$run.json")"
must_say "lost more than --max-loss 10%" "$T/nightly.err"
[ -d "$ROOT/versions/$run" ] || die "the refused version is kept for inspection"
[ "$(json "$ROOT/current/manifest.json" 'd["counts"]["samples"]')" = 48 ] || die "current changed"

say "the operator allows a larger loss: published"
SHARDKIT_MAX_LOSS=30 nightly 0
[ "$(current)" = "versions/$run" ] || die "current is '$(current)'"
[ "$(field 'd["max_loss"], d["samples"]')" = "(30, {'new': 36, 'current': 48})" ] ||
    die "summary: $(cat "$ROOT/runs/$run.json")"

say "an emptied SRC (an unmounted mount point) is refused, even with no loss allowed at all"
published_before=$(current)
mkdir "$T/msrc.away" && mv "$T/msrc"/* "$T/msrc.away/"
nightly 6 --max-loss 99
must_say "holds no samples" "$T/nightly.err"
[ "$(current)" = "$published_before" ] || die "an empty version was published"
say "... and published when the operator says so (--max-loss 100)"
nightly 0 --max-loss 100
[ "$(json "$ROOT/current/manifest.json" 'd["counts"]["samples"]')" = 0 ] || die "expected the empty version"
say "the first run publishes no empty version either"
rm -rf "$T/root5"
SHARDKIT_ROOT="$T/root5" must_fail 6 shardkit-nightly
[ ! -e "$T/root5/current" ] || die "an empty first version was published"
for bad in 101 -1 x 5.5 ""; do
    must_fail 2 shardkit-nightly --max-loss "$bad"
    must_say "--max-loss (SHARDKIT_MAX_LOSS) must be a whole percentage" "$T/err"
done

# ---- a detection dataset ------------------------------------------------------------------
say "a detection dataset (--coco): every night after the first rebuilds in full and publishes"
mkdir -p "$T/dsrc"
cp "$SHARDKIT_FIXTURES/rgb.jpg" "$T/dsrc/a.jpg"
cp "$SHARDKIT_FIXTURES/progressive.jpg" "$T/dsrc/b.jpg"
"$PYTHON" - "$T/dsrc" "$T/dcoco.json" <<'PY'
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
(
    ROOT="$T/droot"
    export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/dsrc"
    export SHARDKIT_OPTIONS="--size 32 --labels none --coco $T/dcoco.json"
    nightly 0
    first=$(current)
    nightly 0
    [ "$(current)" = "versions/$run" ] && [ "$(current)" != "$first" ] ||
        die "the second night did not publish: current is '$(current)'"
    field 'd["incremental"]["lineage"]["full_rebuild"]' | grep -qF "boxes, mask and image fields are made" ||
        die "the second night is not a full rebuild saying why: $(field 'd["incremental"]')"
    [ "$(json "$ROOT/current/manifest.json" 'd["counts"]["boxes"]')" = 2 ] || die "boxes lost"
)

# ---- records are JSON whatever the names hold -------------------------------------------
say "run records are valid JSON whatever bytes SRC and ROOT hold"
# quotes, a backslash, control bytes, a newline, bytes that are not UTF-8, and UTF-8
weird=$(printf 'q"uo\\te\001\tn\nl\200\377 \303\251')
cp -r "$T/lsrc" "$T/src $weird"
ROOT="$T/root $weird"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src $weird" SHARDKIT_OPTIONS="--size 32"
nightly 0
# (a manifest holds its options as UTF-8: these have all but the bytes that are not)
texty=$(printf 'q"uo\\te\001\tn\nl \303\251')
SHARDKIT_OPTIONS="--size 32 --labels 'regex:^(c[0-9]|$texty)/'" nightly 0
"$PYTHON" - "$ROOT" "$T/src $weird" "$run" "$texty" <<'PY'
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

echo "all nightly checks passed"
