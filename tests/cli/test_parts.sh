#!/bin/sh
# test_parts.sh - conversion in parts: `shardify --part I/N` (and --part auto
# from Slurm's and Kubernetes' variables), `shardify merge DST`, every merge
# refusal with its message, and the merged dataset against a single run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parts_lib.sh"

OPTS="--quiet --size 64 --shard-size 64K"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" >/dev/null

# convert_parts_of SRC DST N [ARGS...]: parts 0..N-1 of SRC into DST, one after the other
convert_parts_of() {
    src=$1 dst=$2 n=$3
    shift 3
    i=0
    while [ "$i" -lt "$n" ]; do
        shardify $OPTS "$@" --part "$i/$n" "$src" "$dst" || die "part $i/$n of $src failed"
        i=$((i + 1))
    done
}
# convert_parts DST N [ARGS...]: the same of $T/raw
convert_parts() {
    dst=$1 n=$2
    shift 2
    convert_parts_of "$T/raw" "$dst" "$n" "$@"
}

# ---- --part I/N and its usage errors -----------------------------------------
say "usage errors of --part and --parts"
must_fail 2 shardify --part 3/3 "$T/raw" "$T/u"
must_say "--part: '3/3': parts are numbered 0..N-1" "$T/err"
must_fail 2 shardify --part 1 "$T/raw" "$T/u"
must_say "--part: '1' is not I/N or auto" "$T/err"
must_fail 2 shardify --part 1/x "$T/raw" "$T/u"
must_say "--part: '1/x' is not I/N or auto" "$T/err"
must_fail 2 shardify --part 1/3 --incremental "$T/prev" "$T/raw" "$T/u"
must_say "--part and --incremental cannot be used together" "$T/err"
[ ! -e "$T/u" ] || die "a refused run created DST"
must_fail 2 shardify --part 1/3 --parts 4 "$T/raw" "$T/u"
must_say "--part 1/3 and --parts 4 disagree" "$T/err"
must_fail 2 shardify --parts 4 "$T/raw" "$T/u"
must_say "--parts is for --part auto" "$T/err"
must_fail 2 shardify --part 0/1001 "$T/raw" "$T/u"
must_say "at most 1000" "$T/err"
[ ! -e "$T/u" ] || die "a usage error created DST"
shardify --help >"$T/help"
must_say "--part I/N" "$T/help"
must_say "shardify merge" "$T/help"

say "an archive SRC is not converted in parts"
(cd "$T/raw" && tar cf "$T/raw.tar" .)
must_fail 1 shardify $OPTS --part 0/2 "$T/raw.tar" "$T/u"
must_say "an archive SRC cannot be converted in parts" "$T/err"

say "--part 1/3 converts its own contiguous share, balanced by source bytes"
shardify --size 64 --shard-size 64K --json --part 1/3 "$T/raw" "$T/one" >"$T/one.json" 2>"$T/one.err"
must_say "part 1 of 3 is in '$T/one/parts/1-of-3'; once all 3 are: shardify merge '$T/one'" "$T/one.err"
[ -f "$T/one/parts/1-of-3/manifest.json" ] || die "part 1/3 did not publish DST/parts/1-of-3"
[ ! -e "$T/one/manifest.json" ] || die "a part published DST/manifest.json"
[ ! -e "$T/one/parts/0-of-3" ] || die "part 1/3 wrote another part"
"$PYTHON" - "$T/raw" "$T/one/parts/1-of-3" <<'PY'
import json, os, sys
raw, part = sys.argv[1], sys.argv[2]
info = json.load(open(os.path.join(part, "part.json")))
bounds = info["bounds"]
assert (info["part"], info["parts"]) == (1, 3), info
assert (info["first"], info["end"]) == (bounds[1], bounds[2]), info
assert bounds[0] == 0 and bounds[3] == info["listing"]["candidates"], bounds
assert bounds == sorted(bounds), bounds
m = json.load(open(os.path.join(part, "manifest.json")))
assert m["counts"]["samples"] + m["counts"]["rejected"] == bounds[2] - bounds[1], m["counts"]
# every shard is numbered from 1 * (1000000 // 3)
assert all(s["file"].startswith("shard-3333") for s in m["shards"]), m["shards"]
# the split is by bytes: each part's share of the source bytes is within one
# file of a third (the order is the shuffled one; the files' sizes decide)
sizes = {}
for d, _, files in os.walk(raw):
    for f in files:
        p = os.path.join(d, f)
        sizes[os.path.relpath(p, raw)] = os.lstat(p).st_size + 1
biggest = max(sizes.values())
total = sum(sizes[k] for k in sizes if k.lower().endswith((".jpg", ".jpeg", ".png", ".webp",
                                                           ".tif", ".tiff", ".gif", ".bmp")))
keys = [json.loads(l)["key"] for l in open(os.path.join(part, "index.jsonl"))]
keys += [r["key"] for r in m["rejected"]]
share = sum(sizes[k] for k in keys)
assert abs(share - total / 3) <= biggest, (share, total / 3, biggest)
PY

# ---- --part auto -----------------------------------------------------------
# auto_part WANT VAR=VALUE... [-- ARGS]: `shardify --part auto` under that
# environment converts part WANT (I-of-N) and nothing else
auto_part() {
    want=$1
    shift
    rm -rf "$T/auto"
    env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$@" shardify $OPTS --part auto \
        ${AUTO_ARGS:-} "$T/raw" "$T/auto" || die "--part auto under $* failed"
    [ "$(ls "$T/auto/parts")" = "$want" ] || die "--part auto under $* wrote $(ls "$T/auto/parts")"
}
say "--part auto: a Slurm job array"
auto_part 1-of-3 SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3
auto_part 2-of-3 SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3
auto_part 1-of-3 SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_STEP=2 \
    SLURM_ARRAY_TASK_COUNT=3
say "--part auto: a Kubernetes Indexed Job"
AUTO_ARGS="--parts 4" auto_part 3-of-4 JOB_COMPLETION_INDEX=3

say "--part auto: a missing or inconsistent environment is a usage error naming the variable"
# auto_refused TEXT VAR=VALUE... [-- ARGS]
auto_refused() {
    text=$1
    shift
    must_fail 2 env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u SLURM_ARRAY_TASK_MIN \
        -u SLURM_ARRAY_TASK_STEP -u JOB_COMPLETION_INDEX "$@" shardify --part auto \
        ${AUTO_ARGS:-} "$T/raw" "$T/u"
    must_say "$text" "$T/err"
    [ ! -e "$T/u" ] || die "a refused --part auto created DST"
}
auto_refused "neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX" SHARDKIT_UNUSED=1
auto_refused "SLURM_ARRAY_TASK_COUNT is not set" SLURM_ARRAY_TASK_ID=1
auto_refused "SLURM_ARRAY_TASK_ID='x' is not a whole number" SLURM_ARRAY_TASK_ID=x \
    SLURM_ARRAY_TASK_COUNT=3
auto_refused "SLURM_ARRAY_TASK_ID=3 is not one of the 3 tasks of an array from SLURM_ARRAY_TASK_MIN=0" \
    SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=3
auto_refused "SLURM_ARRAY_TASK_ID=1 is not one of the 3 tasks of an array from SLURM_ARRAY_TASK_MIN=2" \
    SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=2 SLURM_ARRAY_TASK_COUNT=3
AUTO_ARGS="--parts 4" auto_refused "--parts 4, but SLURM_ARRAY_TASK_COUNT is 3" \
    SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3
auto_refused "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job): give the job's completions with --parts N" \
    JOB_COMPLETION_INDEX=1
AUTO_ARGS="--parts 3" auto_refused "JOB_COMPLETION_INDEX=3 is not below --parts 3" \
    JOB_COMPLETION_INDEX=3
AUTO_ARGS="--parts 3" auto_refused "JOB_COMPLETION_INDEX='-1' is not a whole number" \
    JOB_COMPLETION_INDEX=-1
auto_refused "both SLURM_ARRAY_TASK_ID (Slurm) and JOB_COMPLETION_INDEX (Kubernetes) are set" \
    SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 JOB_COMPLETION_INDEX=0

# ---- the merged dataset is the single run's ----------------------------------
say "3 parts merged hold the samples, labels, hashes, pixels and rejects of one run"
shardify $OPTS "$T/raw" "$T/single"
convert_parts "$T/merged" 3
shardify merge --json "$T/merged" >"$T/merge.json" 2>"$T/merge.err" || {
    cat "$T/merge.err" >&2; die "merge failed"; }
[ "$(json "$T/merge.json" 'd["status"], d["parts"]')" = "('ok', 3)" ] || die "merge --json"
shardcheck --deep --source "$T/raw" "$T/merged" >"$T/check" 2>&1 || {
    cat "$T/check" >&2; die "shardcheck --deep --source refused the merged dataset"; }
same_as_single "$T/single" "$T/merged" 48
shardcheck --visitation 1,3,8 --epochs 3 "$T/merged" >"$T/check" 2>&1 || {
    cat "$T/check" >&2; die "visitation of the merged dataset"; }
shardcat "$T/single" --out "$T/cat-single" >/dev/null 2>&1
shardcat "$T/merged" --out "$T/cat-merged" >/dev/null 2>&1
diff -r "$T/cat-single" "$T/cat-merged" >/dev/null || die "exported samples differ"

say "the merge keeps each part's index and key table as they are, linked, not copied"
[ ! -e "$T/merged/index.jsonl" ] || die "a merge of 3 parts wrote one index"
for i in 0 1 2; do
    for f in jsonl keys; do
        [ "$T/merged/index-$i-of-3.$f" -ef "$T/merged/parts/$i-of-3/index.$f" ] ||
            die "index-$i-of-3.$f is not part $i's index.$f"
    done
done
[ "$(json "$T/merged/manifest.json" "[x['file'] for x in d['indexes']]")" = \
  "['index-0-of-3.jsonl', 'index-1-of-3.jsonl', 'index-2-of-3.jsonl']" ] || die "the indexes listed"

say "merging the same parts again gives byte-identical manifest and index"
cp "$T/merged/manifest.json" "$T/manifest.first"
tree_state "$T/merged" >"$T/merged.state"
shardify merge --quiet "$T/merged"
cmp -s "$T/merged/manifest.json" "$T/manifest.first" || die "a second merge changed the manifest"
grep -v ' run.json \|/run.json$' "$T/merged.state" >"$T/merged.state1"
tree_state "$T/merged" | grep -v ' run.json \|/run.json$' >"$T/merged.state2"
cmp -s "$T/merged.state1" "$T/merged.state2" || die "a second merge changed the files"

say "parts written to separate DSTs and gathered into one merge the same"
for i in 0 1 2; do
    shardify $OPTS --part "$i/3" "$T/raw" "$T/machine$i"
    mkdir -p "$T/gathered/parts"
    cp -r "$T/machine$i/parts/$i-of-3" "$T/gathered/parts/"
done
shardify merge --quiet "$T/gathered"
cmp -s "$T/gathered/manifest.json" "$T/manifest.first" || die "gathered parts merge otherwise"

say "--resume works per part: a part killed half-way continues alone"
if strace_works; then
    rm -rf "$T/resumed"
    small="--quiet --size 64 --shard-size 8K"
    shardify $small --part 0/2 "$T/raw" "$T/resumed"
    # part 1 (shards numbered from 500000) killed as it starts its second shard;
    # files in DST are named bare, relative to DST/.shardify (see test_faults.sh)
    set +e
    strace -f -o /dev/null -P journal-500001.jsonl.tmp -e trace=openat \
        -e inject=openat:signal=KILL:when=1 \
        shardify $small --part 1/2 "$T/raw" "$T/resumed" >/dev/null 2>&1
    got=$?
    set -e
    [ "$got" -eq 137 ] || die "part 1/2 was not killed (exit $got)"
    [ ! -e "$T/resumed/parts/1-of-2/manifest.json" ] || die "the killed part published"
    must_fail 1 shardify merge "$T/resumed"
    must_say "part 1 of 2 is incomplete" "$T/err"
    shardify $small --resume --part 1/2 --json "$T/raw" "$T/resumed" >"$T/resume.json"
    [ "$(json "$T/resume.json" 'd["reused_shards"]')" -ge 1 ] || die "the resumed part reused nothing"
    shardify merge --quiet "$T/resumed"
    shardcheck --deep --source "$T/raw" "$T/resumed" >"$T/check" 2>&1 || {
        cat "$T/check" >&2; die "the resumed part's merge does not check out"; }
    shardify $small "$T/raw" "$T/single8"
    same_as_single "$T/single8" "$T/resumed" 48
fi

# ---- every merge refusal, naming the part and what differs -------------------
# refused TEXT: `shardify merge $T/m` fails naming TEXT and changes nothing in $T/m
refused() {
    tree_state "$T/m" >"$T/m.state"
    must_fail 1 shardify merge "$T/m"
    must_say "$1" "$T/err"
    same_state "$T/m.state" "$T/m" "a refused merge changed DST"
}
fresh_parts() {
    rm -rf "$T/m"
    cp -r "$T/merged" "$T/m"
    rm -f "$T/m/manifest.json" "$T/m"/index* "$T/m/run.json" "$T/m"/shard-*
}

say "refused: no parts at all"
mkdir -p "$T/m0"
must_fail 1 shardify merge "$T/m0"
must_say "no parts in '$T/m0'" "$T/err"
mkdir "$T/m0/parts"
must_fail 1 shardify merge "$T/m0"
must_say "no parts in '$T/m0/parts'" "$T/err"
must_fail 2 shardify merge
must_say "expected DST" "$T/err"
must_fail 1 shardify merge s3://bucket/dataset
must_say "cannot merge 's3://bucket/dataset': the merge needs a local DST" "$T/err"
shardify merge --help >"$T/help"
must_say "hard-linked" "$T/help"

say "refused: parts that hold no sample, or no sample with a declared field (as a single run refuses them)"
rm -rf "$T/e" "$T/eraw"
mkdir -p "$T/eraw/a"
printf 'not an image' >"$T/eraw/a/bad.jpg"
printf 'nor this' >"$T/eraw/a/worse.jpg"
convert_parts_of "$T/eraw" "$T/e" 2
tree_state "$T/e" >"$T/e.state"
must_fail 1 shardify merge "$T/e"
must_say "none of the 2 candidates of the 2 parts is a sample: every one was rejected (the first, 'a/bad.jpg': not an image" "$T/err"
must_say "an empty dataset is not published (parts run with --allow-empty publish it" "$T/err"
same_state "$T/e.state" "$T/e" "a refused merge changed DST"
rm -rf "$T/e"
shardify $OPTS --allow-empty --part 0/2 "$T/eraw" "$T/e"
shardify $OPTS --part 1/2 "$T/eraw" "$T/e"
must_fail 1 shardify merge "$T/e"
must_say "part 1 of 2 was made with another --allow-empty" "$T/err"
rm -rf "$T/e"
convert_parts_of "$T/eraw" "$T/e" 2 --allow-empty
shardify merge --quiet "$T/e"
[ "$(json "$T/e/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" = "(0, 2)" ] ||
    die "--allow-empty parts: not an empty dataset with its 2 rejects"
rm -rf "$T/e"
convert_parts_of "$T/raw" "$T/e" 2 --field nothing=text
[ ! -e "$T/e/manifest.json" ] || die "a part published a dataset"
tree_state "$T/e" >"$T/e.state"
must_fail 1 shardify merge "$T/e"
must_say "field 'nothing' is declared, and none of the $(json "$T/merged/manifest.json" 'd["counts"]["samples"]') samples of the 2 parts has it" "$T/err"
same_state "$T/e.state" "$T/e" "a refused merge changed DST"
[ ! -e "$T/e/manifest.json" ] || die "a merge published a field that matched nothing"

say "refused: a part missing"
fresh_parts
rm -r "$T/m/parts/2-of-3"
refused "part 2 of 3 is missing: no '$T/m/parts/2-of-3'"

say "refused: a part incomplete (no manifest yet; a shard missing; a shard cut short)"
fresh_parts
rm "$T/m/parts/1-of-3/manifest.json"
refused "part 1 of 3 is incomplete: '$T/m/parts/1-of-3' has no manifest.json yet"
fresh_parts
shard=$(ls "$T/m/parts/2-of-3" | grep '^shard-' | head -1)
rm "$T/m/parts/2-of-3/$shard"
refused "part 2 of 3 is incomplete: cannot find '$T/m/parts/2-of-3/$shard'"
fresh_parts
truncate -s -1 "$T/m/parts/2-of-3/$shard"
refused "part 2 of 3 is incomplete: '$T/m/parts/2-of-3/$shard' has"

say "refused: parts of two splits"
fresh_parts
mkdir "$T/m/parts/0-of-2"
refused "holds parts of two splits"

say "refused: a part made with other options"
fresh_parts
shardify --quiet --size 32 --shard-size 64K --part 1/3 "$T/raw" "$T/other"
rm -r "$T/m/parts/1-of-3"
cp -r "$T/other/parts/1-of-3" "$T/m/parts/"
refused "part 1 of 3 was made with other options: size is 32, part 0's 64"

say "refused: a part made from another listing of SRC"
fresh_parts
cp -r "$T/raw" "$T/raw2"
cp "$T/raw2/$(cd "$T/raw2" && find . -name '*.jpg' | grep -v ' ' | head -1)" "$T/raw2/extra.jpg"
shardify $OPTS --part 2/3 "$T/raw2" "$T/other2"
rm -r "$T/m/parts/2-of-3"
cp -r "$T/other2/parts/2-of-3" "$T/m/parts/"
refused "part 2 of 3 was made from another listing of SRC"

say "refused: a part that split the order otherwise (sizes changed between the runs)"
fresh_parts
rm -rf "$T/raw2" "$T/other2"
cp -r "$T/raw" "$T/raw2"
big=$(cd "$T/raw2" && find . -type f -name '*.jpg' -printf '%s\t%p\n' | sort -n | tail -1 | cut -f2)
head -c 200000 /dev/zero >>"$T/raw2/$big"
shardify $OPTS --part 2/3 "$T/raw2" "$T/other2"
cmp -s "$T/other2/parts/2-of-3/part.json" "$T/m/parts/2-of-3/part.json" &&
    die "the grown file did not move the bounds"
rm -r "$T/m/parts/2-of-3"
cp -r "$T/other2/parts/2-of-3" "$T/m/parts/"
refused "part 2 of 3 split the sample order otherwise"

say "refused: a part made by another format version"
fresh_parts
"$PYTHON" - "$T/m/parts/1-of-3/part.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["manifest_version"] = 2
json.dump(d, open(sys.argv[1], "w"))
PY
refused "part 1 of 3 has another format version: manifest_version is 2, part 0's 1"

say "refused: a directory that is no part; an index that is not its manifest's"
fresh_parts
rm "$T/m/parts/0-of-3/part.json"
refused "part 0 of 3 is not a part: '$T/m/parts/0-of-3' has no part.json"
fresh_parts
echo '{}' >>"$T/m/parts/1-of-3/index.jsonl"
refused "part 1 of 3: '$T/m/parts/1-of-3/index.jsonl' is not the file its manifest lists"
fresh_parts
rm "$T/m/parts/2-of-3/index.keys"
refused "part 2 of 3: '$T/m/parts/2-of-3/index.keys', which its manifest lists, is missing"
say "a part's index changed in place (same size) is merged, never read, and shardcheck finds it"
fresh_parts
sed -i '1s/"record":0/"record":1/' "$T/m/parts/1-of-3/index.jsonl"
shardify merge --quiet "$T/m"
must_fail 1 shardcheck "$T/m"
must_say "index-1-of-3.jsonl" "$T/stdout"

say "a refused merge leaves a previous merge's dataset published"
fresh_parts
shardify merge --quiet "$T/m"
rm "$T/m/parts/1-of-3/manifest.json"
refused "part 1 of 3 is incomplete"
shardcheck "$T/m" >/dev/null 2>&1 || die "the previous merge no longer checks out"

# ---- a merge that fails while publishing -----------------------------------------
# $T/pm: a merged dataset whose parts were converted again with smaller
# shards, so that the next merge needs shard names the published one lacks
rm -rf "$T/pm"
cp -r "$T/merged" "$T/pm"
convert_parts "$T/pm" 3 --overwrite --shard-size 8K
new_name=$("$PYTHON" - "$T/pm" <<'PY'
import glob, json, os, sys
dst = sys.argv[1]
old = {s["file"] for s in json.load(open(os.path.join(dst, "manifest.json")))["shards"]}
new = sorted(s["file"] for m in glob.glob(os.path.join(dst, "parts", "*", "manifest.json"))
             for s in json.load(open(m))["shards"])
print(sorted(set(new) - old)[0])
PY
)
# refused_publish TEXT [PLANTED]: `shardify merge $T/pm` fails naming TEXT,
# before the previous merge is unpublished: DST is as it was, and once
# PLANTED (what is in the way) is removed, the previous merge verifies
refused_publish() {
    tree_state "$T/pm" >"$T/pm.state"
    must_fail 1 shardify merge "$T/pm"
    must_say "$1" "$T/err"
    same_state "$T/pm.state" "$T/pm" "a merge that failed changed DST"
    [ -z "${2:-}" ] || rm -rf "$2"
    shardcheck "$T/pm" >"$T/check" 2>&1 || { cat "$T/check" >&2; die "the previous merge is no longer published"; }
}

say "a directory planted at a shard name the merge needs: refused naming it, the previous merge stays published"
mkdir "$T/pm/$new_name"
refused_publish "'$T/pm/$new_name' is not a regular file, so shardify did not write it: remove it" \
    "$T/pm/$new_name"
ln -s "$T/raw" "$T/pm/$new_name"
refused_publish "'$T/pm/$new_name' is a symbolic link; shardkit never follows a link" "$T/pm/$new_name"

say "a directory planted at the manifest's temporary: refused, the previous merge stays published"
mkdir "$T/pm/.manifest.json.tmp"
refused_publish "cannot remove the stale '$T/pm/.manifest.json.tmp'" "$T/pm/.manifest.json.tmp"

mv "$T/pm/parts" "$T/pm.parts"
if mount_tmpfs "$T/pm/parts" 64m; then
    say "parts on another file system than DST: refused before anything is unpublished"
    cp -r "$T/pm.parts"/. "$T/pm/parts/"
    refused_publish "the parts must be on DST's file system"
    umount "$T/pm/parts"
else
    echo "SKIP: parts on another file system: cannot mount a tmpfs (needs root)"
fi
rmdir "$T/pm/parts"
mv "$T/pm.parts" "$T/pm/parts"

say "with nothing in the way, the parts merge over the previous merge"
shardify merge --quiet "$T/pm"
shardcheck --deep --source "$T/raw" "$T/pm" >"$T/check" 2>&1 || {
    cat "$T/check" >&2; die "the new merge does not check out"; }
[ "$(json "$T/pm/manifest.json" 'len(d["shards"]) > 3')" = True ] || die "not the new parts' merge"
[ -z "$(find "$T/pm" -maxdepth 1 -name '.*.tmp')" ] || die "temporaries left in DST"

# ---- a part into a DST that holds a dataset ------------------------------------------
say "--part into a DST holding a published single-run dataset needs --overwrite, as a plain run does"
rm -rf "$T/sp"
shardify $OPTS --size 32 "$T/raw" "$T/sp"
tree_state "$T/sp" >"$T/sp.state"
must_fail 1 shardify $OPTS --part 0/2 "$T/raw" "$T/sp"
must_say "destination '$T/sp' holds a published dataset, which the merge of the parts will replace; pass --overwrite" "$T/err"
must_fail 1 shardify $OPTS --resume --part 0/2 "$T/raw" "$T/sp"
must_say "pass --overwrite to convert part 0 of 2 into it" "$T/err"
same_state "$T/sp.state" "$T/sp" "a refused part changed DST"
shardify $OPTS --overwrite --part 0/2 "$T/raw" "$T/sp"
shardify $OPTS --overwrite --part 1/2 "$T/raw" "$T/sp"
[ "$(json "$T/sp/manifest.json" 'd["config"]["size"]')" = 32 ] ||
    die "the single-run dataset was replaced before the merge"
shardcheck "$T/sp" >/dev/null 2>&1 || die "the single-run dataset no longer verifies before the merge"
shardify merge --quiet "$T/sp"
[ "$(json "$T/sp/manifest.json" 'd["config"]["size"]')" = 64 ] || die "the merge did not publish the parts"
shardcheck --deep --source "$T/raw" "$T/sp" >/dev/null 2>&1 || die "the merge does not check out"

# ---- links where the parts are kept -----------------------------------------------
say "a symbolic link at DST/parts or at a part: refused by name, never followed"
rm -rf "$T/lk" "$T/elsewhere"
cp -r "$T/merged/parts" "$T/elsewhere"
mkdir "$T/lk"
ln -s "$T/elsewhere" "$T/lk/parts"
tree_state "$T/elsewhere" >"$T/elsewhere.state"
must_fail 1 shardify merge "$T/lk"
must_say "'$T/lk/parts' is a symbolic link; shardkit never follows a link where it keeps its own files" "$T/err"
must_fail 1 shardify $OPTS --overwrite --part 0/3 "$T/raw" "$T/lk"
must_say "'$T/lk/parts' is a symbolic link" "$T/err"
rm "$T/lk/parts"
mkdir "$T/lk/parts"
cp -r "$T/elsewhere/0-of-3" "$T/elsewhere/2-of-3" "$T/lk/parts/"
ln -s "$T/elsewhere/1-of-3" "$T/lk/parts/1-of-3"
must_fail 1 shardify merge "$T/lk"
must_say "part 1 of 3: '$T/lk/parts/1-of-3' is a symbolic link" "$T/err"
must_fail 1 shardify $OPTS --overwrite --part 1/3 "$T/raw" "$T/lk"
must_say "'$T/lk/parts/1-of-3' is a symbolic link" "$T/err"
same_state "$T/elsewhere.state" "$T/elsewhere" "a part run or merge wrote through a link"
[ ! -e "$T/lk/manifest.json" ] || die "a merge through a link published"

echo "PASS"
