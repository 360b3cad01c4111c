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

# the datasets the cases read: a single run, and the same source in 3 parts
# merged (its merge's --json summary in $T/merge.json)
shardify $OPTS "$T/raw" "$T/single"
convert_parts "$T/merged" 3
shardify merge --json "$T/merged" >"$T/merge.json" 2>"$T/merge.err" || {
    cat "$T/merge.err" >&2; die "merge failed"; }

# $T/pm: a merged dataset whose parts were converted again with smaller
# shards, so that the next merge needs shard names the published one lacks
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
# $T/pmfs: $T/pm with its parts on another file system (a tmpfs, mounted here
# so that it is unmounted when the test ends), when one can be mounted
cp -a "$T/pm" "$T/pmfs"
mv "$T/pmfs/parts" "$T/pmfs.parts"
pmfs=""
if mount_tmpfs "$T/pmfs/parts" 64m; then
    cp -r "$T/pmfs.parts"/. "$T/pmfs/parts/"
    pmfs=yes
fi

# ---- --part I/N and its usage errors -----------------------------------------
case_usage_errors_of_part_and_parts() {
    must_fail 2 shardify --part 3/3 "$T/raw" "$C/u"
    must_say "--part: '3/3': parts are numbered 0..N-1" "$T/err"
    must_fail 2 shardify --part 1 "$T/raw" "$C/u"
    must_say "--part: '1' is not I/N or auto" "$T/err"
    must_fail 2 shardify --part 1/x "$T/raw" "$C/u"
    must_say "--part: '1/x' is not I/N or auto" "$T/err"
    must_fail 2 shardify --part 1/3 --incremental "$C/prev" "$T/raw" "$C/u"
    must_say "--part and --incremental cannot be used together" "$T/err"
    [ ! -e "$C/u" ] || die "a refused run created DST"
    must_fail 2 shardify --part 1/3 --parts 4 "$T/raw" "$C/u"
    must_say "--part 1/3 and --parts 4 disagree" "$T/err"
    must_fail 2 shardify --parts 4 "$T/raw" "$C/u"
    must_say "--parts is for --part auto" "$T/err"
    must_fail 2 shardify --part 0/1001 "$T/raw" "$C/u"
    must_say "at most 1000" "$T/err"
    [ ! -e "$C/u" ] || die "a usage error created DST"
    shardify --help >"$C/help"
    must_say "--part I/N" "$C/help"
    must_say "shardify merge" "$C/help"
}

case_an_archive_src_is_not_converted_in_parts() {
    (cd "$T/raw" && tar cf "$C/raw.tar" .)
    must_fail 1 shardify $OPTS --part 0/2 "$C/raw.tar" "$C/u"
    must_say "an archive SRC cannot be converted in parts" "$T/err"
}

case_part_1_of_3_converts_its_own_contiguous_share_balanced_by_source_bytes() {
    shardify --size 64 --shard-size 64K --json --part 1/3 "$T/raw" "$C/one" >"$C/one.json" 2>"$C/one.err"
    must_say "part 1 of 3 is in '$C/one/parts/1-of-3'; once all 3 are: shardify merge '$C/one'" "$C/one.err"
    [ -f "$C/one/parts/1-of-3/manifest.json" ] || die "part 1/3 did not publish DST/parts/1-of-3"
    [ ! -e "$C/one/manifest.json" ] || die "a part published DST/manifest.json"
    [ ! -e "$C/one/parts/0-of-3" ] || die "part 1/3 wrote another part"
    "$PYTHON" - "$T/raw" "$C/one/parts/1-of-3" <<'PY'
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
}

# ---- --part auto -----------------------------------------------------------
# auto_part WANT VAR=VALUE... [-- ARGS]: `shardify --part auto` under that
# environment converts part WANT (I-of-N) and nothing else
auto_part() {
    want=$1
    shift
    rm -rf "$C/auto"
    env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$@" shardify $OPTS --part auto \
        ${AUTO_ARGS:-} "$T/raw" "$C/auto" || die "--part auto under $* failed"
    [ "$(ls "$C/auto/parts")" = "$want" ] || die "--part auto under $* wrote $(ls "$C/auto/parts")"
}
case_part_auto_a_slurm_job_array() {
    auto_part 1-of-3 SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3
    auto_part 2-of-3 SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3
    auto_part 1-of-3 SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_STEP=2 \
        SLURM_ARRAY_TASK_COUNT=3
}
case_part_auto_a_kubernetes_indexed_job() {
    AUTO_ARGS="--parts 4" auto_part 3-of-4 JOB_COMPLETION_INDEX=3
}

# auto_refused TEXT VAR=VALUE... [-- ARGS]
auto_refused() {
    text=$1
    shift
    must_fail 2 env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u SLURM_ARRAY_TASK_MIN \
        -u SLURM_ARRAY_TASK_STEP -u JOB_COMPLETION_INDEX "$@" shardify --part auto \
        ${AUTO_ARGS:-} "$T/raw" "$C/u"
    must_say "$text" "$T/err"
    [ ! -e "$C/u" ] || die "a refused --part auto created DST"
}
case_part_auto_a_missing_or_inconsistent_environment_is_a_usage_error_naming_the_variable() {
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
}

# ---- the merged dataset is the single run's ----------------------------------
case_3_parts_merged_hold_the_samples_labels_hashes_pixels_and_rejects_of_one_run() {
    [ "$(json "$T/merge.json" 'd["status"], d["parts"]')" = "('ok', 3)" ] || die "merge --json"
    shardcheck --deep --source "$T/raw" "$T/merged" >"$C/check" 2>&1 || {
        cat "$C/check" >&2; die "shardcheck --deep --source refused the merged dataset"; }
    same_as_single "$T/single" "$T/merged" 48
    shardcheck --visitation 1,3,8 --epochs 3 "$T/merged" >"$C/check" 2>&1 || {
        cat "$C/check" >&2; die "visitation of the merged dataset"; }
    shardcat "$T/single" --out "$C/cat-single" >/dev/null 2>&1
    shardcat "$T/merged" --out "$C/cat-merged" >/dev/null 2>&1
    diff -r "$C/cat-single" "$C/cat-merged" >/dev/null || die "exported samples differ"
}

case_the_merge_keeps_each_parts_index_and_key_table_as_they_are_linked_not_copied() {
    [ ! -e "$T/merged/index.jsonl" ] || die "a merge of 3 parts wrote one index"
    for i in 0 1 2; do
        for f in jsonl keys; do
            [ "$T/merged/index-$i-of-3.$f" -ef "$T/merged/parts/$i-of-3/index.$f" ] ||
                die "index-$i-of-3.$f is not part $i's index.$f"
        done
    done
    [ "$(json "$T/merged/manifest.json" "[x['file'] for x in d['indexes']]")" = \
      "['index-0-of-3.jsonl', 'index-1-of-3.jsonl', 'index-2-of-3.jsonl']" ] || die "the indexes listed"
}

case_merging_the_same_parts_again_gives_byte_identical_manifest_and_index() {
    # a copy that keeps the merge's hard links
    cp -a "$T/merged" "$C/merged"
    cp "$C/merged/manifest.json" "$C/manifest.first"
    tree_state "$C/merged" >"$C/merged.state"
    shardify merge --quiet "$C/merged"
    cmp -s "$C/merged/manifest.json" "$C/manifest.first" || die "a second merge changed the manifest"
    grep -v ' run.json \|/run.json$' "$C/merged.state" >"$C/merged.state1"
    tree_state "$C/merged" | grep -v ' run.json \|/run.json$' >"$C/merged.state2"
    cmp -s "$C/merged.state1" "$C/merged.state2" || die "a second merge changed the files"
}

case_parts_written_to_separate_dsts_and_gathered_into_one_merge_the_same() {
    for i in 0 1 2; do
        shardify $OPTS --part "$i/3" "$T/raw" "$C/machine$i"
        mkdir -p "$C/gathered/parts"
        cp -r "$C/machine$i/parts/$i-of-3" "$C/gathered/parts/"
    done
    shardify merge --quiet "$C/gathered"
    cmp -s "$C/gathered/manifest.json" "$T/merged/manifest.json" || die "gathered parts merge otherwise"
}

case_resume_works_per_part_a_part_killed_half_way_continues_alone() {
    if strace_works; then
        small="--quiet --size 64 --shard-size 8K"
        shardify $small --part 0/2 "$T/raw" "$C/resumed"
        # part 1 (shards numbered from 500000) killed as it starts its second shard;
        # files in DST are named bare, relative to DST/.shardify (see test_faults.sh)
        set +e
        strace -f -o /dev/null -P journal-500001.jsonl.tmp -e trace=openat \
            -e inject=openat:signal=KILL:when=1 \
            shardify $small --part 1/2 "$T/raw" "$C/resumed" >/dev/null 2>&1
        got=$?
        set -e
        [ "$got" -eq 137 ] || die "part 1/2 was not killed (exit $got)"
        [ ! -e "$C/resumed/parts/1-of-2/manifest.json" ] || die "the killed part published"
        must_fail 1 shardify merge "$C/resumed"
        must_say "part 1 of 2 is incomplete" "$T/err"
        shardify $small --resume --part 1/2 --json "$T/raw" "$C/resumed" >"$C/resume.json"
        [ "$(json "$C/resume.json" 'd["reused_shards"]')" -ge 1 ] || die "the resumed part reused nothing"
        shardify merge --quiet "$C/resumed"
        shardcheck --deep --source "$T/raw" "$C/resumed" >"$C/check" 2>&1 || {
            cat "$C/check" >&2; die "the resumed part's merge does not check out"; }
        shardify $small "$T/raw" "$C/single8"
        same_as_single "$C/single8" "$C/resumed" 48
    fi
}

# ---- every merge refusal, naming the part and what differs -------------------
# refused TEXT: `shardify merge $C/m` fails naming TEXT and changes nothing in $C/m
refused() {
    tree_state "$C/m" >"$C/m.state"
    must_fail 1 shardify merge "$C/m"
    must_say "$1" "$T/err"
    same_state "$C/m.state" "$C/m" "a refused merge changed DST"
}
# fresh_parts: $C/m holds the parts of $T/merged, not merged
fresh_parts() {
    rm -rf "$C/m"
    cp -r "$T/merged" "$C/m"
    rm -f "$C/m/manifest.json" "$C/m"/index* "$C/m/run.json" "$C/m"/shard-*
}

case_refused_no_parts_at_all() {
    mkdir -p "$C/m0"
    must_fail 1 shardify merge "$C/m0"
    must_say "no parts in '$C/m0'" "$T/err"
    mkdir "$C/m0/parts"
    must_fail 1 shardify merge "$C/m0"
    must_say "no parts in '$C/m0/parts'" "$T/err"
    must_fail 2 shardify merge
    must_say "expected DST" "$T/err"
    must_fail 1 shardify merge s3://bucket/dataset
    must_say "cannot merge 's3://bucket/dataset': the merge needs a local DST" "$T/err"
    shardify merge --help >"$C/help"
    must_say "hard-linked" "$C/help"
}

case_refused_parts_that_hold_no_sample_or_no_sample_with_a_declared_field() {
    # (as a single run refuses them)
    mkdir -p "$C/eraw/a"
    printf 'not an image' >"$C/eraw/a/bad.jpg"
    printf 'nor this' >"$C/eraw/a/worse.jpg"
    convert_parts_of "$C/eraw" "$C/e" 2
    tree_state "$C/e" >"$C/e.state"
    must_fail 1 shardify merge "$C/e"
    must_say "none of the 2 candidates of the 2 parts is a sample: every one was rejected (the first, 'a/bad.jpg': not an image" "$T/err"
    must_say "an empty dataset is not published (parts run with --allow-empty publish it" "$T/err"
    same_state "$C/e.state" "$C/e" "a refused merge changed DST"
    rm -rf "$C/e"
    shardify $OPTS --allow-empty --part 0/2 "$C/eraw" "$C/e"
    shardify $OPTS --part 1/2 "$C/eraw" "$C/e"
    must_fail 1 shardify merge "$C/e"
    must_say "part 1 of 2 was made with another --allow-empty" "$T/err"
    rm -rf "$C/e"
    convert_parts_of "$C/eraw" "$C/e" 2 --allow-empty
    shardify merge --quiet "$C/e"
    [ "$(json "$C/e/manifest.json" 'd["counts"]["samples"], d["counts"]["rejected"]')" = "(0, 2)" ] ||
        die "--allow-empty parts: not an empty dataset with its 2 rejects"
    rm -rf "$C/e"
    convert_parts_of "$T/raw" "$C/e" 2 --field nothing=text
    [ ! -e "$C/e/manifest.json" ] || die "a part published a dataset"
    tree_state "$C/e" >"$C/e.state"
    must_fail 1 shardify merge "$C/e"
    must_say "field 'nothing' is declared, and none of the $(json "$T/merged/manifest.json" 'd["counts"]["samples"]') samples of the 2 parts has it" "$T/err"
    same_state "$C/e.state" "$C/e" "a refused merge changed DST"
    [ ! -e "$C/e/manifest.json" ] || die "a merge published a field that matched nothing"
}

case_refused_a_part_missing() {
    fresh_parts
    rm -r "$C/m/parts/2-of-3"
    refused "part 2 of 3 is missing: no '$C/m/parts/2-of-3'"
}

case_refused_a_part_incomplete_no_manifest_yet_a_shard_missing_a_shard_cut_short() {
    fresh_parts
    rm "$C/m/parts/1-of-3/manifest.json"
    refused "part 1 of 3 is incomplete: '$C/m/parts/1-of-3' has no manifest.json yet"
    fresh_parts
    shard=$(ls "$C/m/parts/2-of-3" | grep '^shard-' | head -1)
    rm "$C/m/parts/2-of-3/$shard"
    refused "part 2 of 3 is incomplete: cannot find '$C/m/parts/2-of-3/$shard'"
    fresh_parts
    truncate -s -1 "$C/m/parts/2-of-3/$shard"
    refused "part 2 of 3 is incomplete: '$C/m/parts/2-of-3/$shard' has"
}

case_refused_parts_of_two_splits() {
    fresh_parts
    mkdir "$C/m/parts/0-of-2"
    refused "holds parts of two splits"
}

case_refused_a_part_made_with_other_options() {
    fresh_parts
    shardify --quiet --size 32 --shard-size 64K --part 1/3 "$T/raw" "$C/other"
    rm -r "$C/m/parts/1-of-3"
    cp -r "$C/other/parts/1-of-3" "$C/m/parts/"
    refused "part 1 of 3 was made with other options: size is 32, part 0's 64"
}

case_refused_a_part_made_from_another_listing_of_src() {
    fresh_parts
    cp -r "$T/raw" "$C/raw2"
    cp "$C/raw2/$(cd "$C/raw2" && find . -name '*.jpg' | grep -v ' ' | head -1)" "$C/raw2/extra.jpg"
    shardify $OPTS --part 2/3 "$C/raw2" "$C/other2"
    rm -r "$C/m/parts/2-of-3"
    cp -r "$C/other2/parts/2-of-3" "$C/m/parts/"
    refused "part 2 of 3 was made from another listing of SRC"
}

case_refused_a_part_that_split_the_order_otherwise_sizes_changed_between_the_runs() {
    fresh_parts
    cp -r "$T/raw" "$C/raw2"
    big=$(cd "$C/raw2" && find . -type f -name '*.jpg' -printf '%s\t%p\n' | sort -n | tail -1 | cut -f2)
    head -c 200000 /dev/zero >>"$C/raw2/$big"
    shardify $OPTS --part 2/3 "$C/raw2" "$C/other2"
    if cmp -s "$C/other2/parts/2-of-3/part.json" "$C/m/parts/2-of-3/part.json"; then
        die "the grown file did not move the bounds"
    fi
    rm -r "$C/m/parts/2-of-3"
    cp -r "$C/other2/parts/2-of-3" "$C/m/parts/"
    refused "part 2 of 3 split the sample order otherwise"
}

case_refused_a_part_made_by_another_format_version() {
    fresh_parts
    "$PYTHON" - "$C/m/parts/1-of-3/part.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["manifest_version"] = 2
json.dump(d, open(sys.argv[1], "w"))
PY
    refused "part 1 of 3 has another format version: manifest_version is 2, part 0's 1"
}

case_refused_a_directory_that_is_no_part_an_index_that_is_not_its_manifests() {
    fresh_parts
    rm "$C/m/parts/0-of-3/part.json"
    refused "part 0 of 3 is not a part: '$C/m/parts/0-of-3' has no part.json"
    fresh_parts
    echo '{}' >>"$C/m/parts/1-of-3/index.jsonl"
    refused "part 1 of 3: '$C/m/parts/1-of-3/index.jsonl' is not the file its manifest lists"
    fresh_parts
    rm "$C/m/parts/2-of-3/index.keys"
    refused "part 2 of 3: '$C/m/parts/2-of-3/index.keys', which its manifest lists, is missing"
}

case_a_parts_index_changed_in_place_same_size_is_merged_never_read_and_shardcheck_finds_it() {
    fresh_parts
    sed -i '1s/"record":0/"record":1/' "$C/m/parts/1-of-3/index.jsonl"
    shardify merge --quiet "$C/m"
    must_fail 1 shardcheck "$C/m"
    must_say "index-1-of-3.jsonl" "$T/stdout"
}

case_a_refused_merge_leaves_a_previous_merges_dataset_published() {
    fresh_parts
    shardify merge --quiet "$C/m"
    rm "$C/m/parts/1-of-3/manifest.json"
    refused "part 1 of 3 is incomplete"
    shardcheck "$C/m" >/dev/null 2>&1 || die "the previous merge no longer checks out"
}

# ---- a merge that fails while publishing -----------------------------------------
# refused_publish DST TEXT [PLANTED]: `shardify merge DST` (a copy of $T/pm)
# fails naming TEXT, before the previous merge is unpublished: DST is as it
# was, and once PLANTED (what is in the way) is removed, the previous merge
# verifies
refused_publish() {
    tree_state "$1" >"$C/pm.state"
    must_fail 1 shardify merge "$1"
    must_say "$2" "$T/err"
    same_state "$C/pm.state" "$1" "a merge that failed changed DST"
    [ -z "${3:-}" ] || rm -rf "$3"
    shardcheck "$1" >"$C/check" 2>&1 || { cat "$C/check" >&2; die "the previous merge is no longer published"; }
}

case_a_directory_planted_at_a_shard_name_the_merge_needs_is_refused_naming_it_the_previous_merge_stays_published() {
    cp -a "$T/pm" "$C/pm"
    mkdir "$C/pm/$new_name"
    refused_publish "$C/pm" "'$C/pm/$new_name' is not a regular file, so shardify did not write it: remove it" \
        "$C/pm/$new_name"
    ln -s "$T/raw" "$C/pm/$new_name"
    refused_publish "$C/pm" "'$C/pm/$new_name' is a symbolic link; shardkit never follows a link" "$C/pm/$new_name"
}

case_a_directory_planted_at_the_manifests_temporary_is_refused_the_previous_merge_stays_published() {
    cp -a "$T/pm" "$C/pm"
    mkdir "$C/pm/.manifest.json.tmp"
    refused_publish "$C/pm" "cannot remove the stale '$C/pm/.manifest.json.tmp'" "$C/pm/.manifest.json.tmp"
}

case_parts_on_another_file_system_than_dst_refused_before_anything_is_unpublished() {
    if [ -n "$pmfs" ]; then
        # $T/pmfs: the set-up's; a refused merge changes nothing in it
        refused_publish "$T/pmfs" "the parts must be on DST's file system"
    else
        echo "SKIP: parts on another file system: cannot mount a tmpfs (needs root)"
    fi
}

case_with_nothing_in_the_way_the_parts_merge_over_the_previous_merge() {
    cp -a "$T/pm" "$C/pm"
    shardify merge --quiet "$C/pm"
    shardcheck --deep --source "$T/raw" "$C/pm" >"$C/check" 2>&1 || {
        cat "$C/check" >&2; die "the new merge does not check out"; }
    [ "$(json "$C/pm/manifest.json" 'len(d["shards"]) > 3')" = True ] || die "not the new parts' merge"
    [ -z "$(find "$C/pm" -maxdepth 1 -name '.*.tmp')" ] || die "temporaries left in DST"
}

# ---- a part into a DST that holds a dataset ------------------------------------------
case_part_into_a_dst_holding_a_published_single_run_dataset_needs_overwrite_as_a_plain_run_does() {
    shardify $OPTS --size 32 "$T/raw" "$C/sp"
    tree_state "$C/sp" >"$C/sp.state"
    must_fail 1 shardify $OPTS --part 0/2 "$T/raw" "$C/sp"
    must_say "destination '$C/sp' holds a published dataset, which the merge of the parts will replace; pass --overwrite" "$T/err"
    must_fail 1 shardify $OPTS --resume --part 0/2 "$T/raw" "$C/sp"
    must_say "pass --overwrite to convert part 0 of 2 into it" "$T/err"
    same_state "$C/sp.state" "$C/sp" "a refused part changed DST"
    shardify $OPTS --overwrite --part 0/2 "$T/raw" "$C/sp"
    shardify $OPTS --overwrite --part 1/2 "$T/raw" "$C/sp"
    [ "$(json "$C/sp/manifest.json" 'd["config"]["size"]')" = 32 ] ||
        die "the single-run dataset was replaced before the merge"
    shardcheck "$C/sp" >/dev/null 2>&1 || die "the single-run dataset no longer verifies before the merge"
    shardify merge --quiet "$C/sp"
    [ "$(json "$C/sp/manifest.json" 'd["config"]["size"]')" = 64 ] || die "the merge did not publish the parts"
    shardcheck --deep --source "$T/raw" "$C/sp" >/dev/null 2>&1 || die "the merge does not check out"
}

# ---- links where the parts are kept -----------------------------------------------
case_a_symbolic_link_at_dst_parts_or_at_a_part_is_refused_by_name_never_followed() {
    cp -r "$T/merged/parts" "$C/elsewhere"
    mkdir "$C/lk"
    ln -s "$C/elsewhere" "$C/lk/parts"
    tree_state "$C/elsewhere" >"$C/elsewhere.state"
    must_fail 1 shardify merge "$C/lk"
    must_say "'$C/lk/parts' is a symbolic link; shardkit never follows a link where it keeps its own files" "$T/err"
    must_fail 1 shardify $OPTS --overwrite --part 0/3 "$T/raw" "$C/lk"
    must_say "'$C/lk/parts' is a symbolic link" "$T/err"
    rm "$C/lk/parts"
    mkdir "$C/lk/parts"
    cp -r "$C/elsewhere/0-of-3" "$C/elsewhere/2-of-3" "$C/lk/parts/"
    ln -s "$C/elsewhere/1-of-3" "$C/lk/parts/1-of-3"
    must_fail 1 shardify merge "$C/lk"
    must_say "part 1 of 3: '$C/lk/parts/1-of-3' is a symbolic link" "$T/err"
    must_fail 1 shardify $OPTS --overwrite --part 1/3 "$T/raw" "$C/lk"
    must_say "'$C/lk/parts/1-of-3' is a symbolic link" "$T/err"
    same_state "$C/elsewhere.state" "$C/elsewhere" "a part run or merge wrote through a link"
    [ ! -e "$C/lk/manifest.json" ] || die "a merge through a link published"
}

run_cases
