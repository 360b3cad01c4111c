#!/bin/sh
# test_shardcheck_parts.sh - shardcheck on a dataset whose index is in several
# files, as a merge of parts keeps it (written here by tests/cli/index_files.py
# from manifests/FORMAT.md, not by shardify), and a check in parts: with damage
# planted in different places (a shard byte, index lines changed, lost, moved
# to another file, key tables unsorted or holding another key, counts, a stray
# file, a duplicate key), `shardcheck --part I/N` for every I and `shardcheck
# --combine` give the report and the exit status a whole `shardcheck` gives,
# for several N and with --deep; each problem names its index file and line.
# The combine refuses results of another dataset, of another N, a part given
# twice, and names a missing part; --part auto takes the part from Slurm and
# Kubernetes; a dataset without key tables is checked whole only.
. "$(dirname "$0")/lib.sh"

GEN=$SHARDKIT_BIN/../bench/gen_archives
[ -x "$GEN" ] || die "no '$GEN' (make builds it)"
IF=$SHARDKIT_TOP/tests/cli/index_files.py

# the datasets the cases read: 6000 samples in 9 shards ($T/one), the same
# with its index split in 3 files ($T/multi), and the results of a check of
# $T/multi in 2 parts ($T/r2)
mkdir -p "$T/src"
"$GEN" --per-tar 1000 "$T/src" 6000
shardify --archives "$T/src" "$T/one" --labels none --field caption=text,from=.txt --size 32 \
    --shard-size 640K --quiet
shards=$(json "$T/one/manifest.json" 'len(d["shards"])')
[ "$shards" -ge 8 ] || die "expected at least 8 shards, got $shards"
cp -r "$T/one" "$T/multi"
"$PYTHON" "$IF" split "$T/multi" 3,6
for f in index-0-of-3 index-1-of-3 index-2-of-3; do
    [ -f "$T/multi/$f.jsonl" ] && [ -f "$T/multi/$f.keys" ] || die "no $f in $(ls "$T/multi")"
done
[ ! -e "$T/multi/index.jsonl" ] || die "index.jsonl left beside the split index"
mkdir "$T/r2"
for i in 0 1; do shardcheck --part $i/2 --result "$T/r2/" "$T/multi" >/dev/null; done

case_the_split_index_verifies_default_pass_and_deep_its_files_are_no_strays() {
    shardcheck "$T/multi" >"$C/out" || { cat "$C/out"; die "the split dataset did not verify"; }
    must_say "verified '$T/multi': $shards shards, 6000 samples" "$C/out"
    shardcheck --deep "$T/multi" >"$C/out" || { cat "$C/out"; die "--deep did not verify"; }
}

case_source_on_the_split_index_each_sample_held_to_src_a_difference_naming_its_index_file() {
    shardcheck --source "$T/src" "$T/multi" >"$C/out" || { cat "$C/out"; die "--source did not verify"; }
    mkdir "$C/src2"
    cp "$T/src"/*.tar "$C/src2/"
    "$PYTHON" - "$C/src2/00004.tar" <<'PY' >"$C/recaptioned"
import io, sys, tarfile
path = sys.argv[1]
members = []
with tarfile.open(path) as t:
    for m in t.getmembers():
        members.append((m, t.extractfile(m).read()))
with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
    done = False
    for m, data in members:
        if not done and m.name.endswith(".txt"):
            data, done = b"another caption", True
            print("%s/%s" % (path.split("/")[-1], m.name[:-4] + ".jpg"))
        m.size = len(data)
        t.addfile(m, io.BytesIO(data))
PY
    must_fail 1 shardcheck --source "$C/src2" "$T/multi"
    must_say "source: field 'caption' of '$(cat "$C/recaptioned")' changed since sharding: " "$T/stdout"
    grep -q "index-[012]-of-3.jsonl says " "$T/stdout" || { cat "$T/stdout"; die "no index file named"; }
}

# same_report DST N...: `shardcheck --part I/N` for every I, then --combine,
# give the exit status, the --json report (but the passes' rates) and the
# text (but its rate lines) the whole check gives ($OPTS: more options); the
# results of the last N are left in $C/r.
OPTS=""
same_report() {
    d=$1
    shift
    set +e
    shardcheck --json $OPTS "$d" >"$C/whole.json" 2>"$C/whole.err"
    want=$?
    shardcheck $OPTS "$d" >"$C/whole.txt" 2>&1
    set -e
    for n in "$@"; do
        rm -rf "$C/r"
        mkdir "$C/r"
        i=0
        while [ $i -lt "$n" ]; do
            shardcheck --part "$i/$n" --result "$C/r/" $OPTS "$d" >"$C/part.out" 2>&1 ||
                { cat "$C/part.out"; die "part $i of $n of '$d' wrote no result"; }
            must_say "part $i of $n of '$d' checked" "$C/part.out"
            i=$((i + 1))
        done
        set +e
        shardcheck --combine --json "$C/r" "$d" >"$C/comb.json" 2>"$C/comb.err"
        got=$?
        shardcheck --combine "$C/r" "$d" >"$C/comb.txt" 2>&1
        set -e
        [ "$got" -eq "$want" ] ||
            { cat "$C/comb.err"; die "$n parts of '$d' exit $got, whole $want"; }
        "$PYTHON" - "$C/whole.json" "$C/comb.json" "$C/whole.txt" "$C/comb.txt" <<'PY' ||
import json, re, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("rates", None)
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print("whole", k, json.dumps(a.get(k))[:2000], file=sys.stderr)
            print("parts", k, json.dumps(b.get(k))[:2000], file=sys.stderr)
    sys.exit(1)
rate = re.compile(r"^  (hashed|deep): ")
x, y = ([l for l in open(p) if not rate.match(l)] for p in sys.argv[3:5])
assert x == y, (x, y)
PY
            die "$n parts of '$d' report otherwise than the whole check"
    done
}

case_clean_the_same_report_whole_and_in_1_2_3_and_7_parts() {
    same_report "$T/multi" 1 2 3 7
    # each part read the lines of its own shards, found by the binary search on
    # each index file: none read more, even where a file is split among parts
    "$PYTHON" - "$T/multi" "$C/r"/shardcheck-part-*-of-7.jsonl <<'PY' || die "a part read others' lines"
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
for path in sys.argv[2:]:
    part = json.loads(open(path).readline())
    first, end = part["shards"]
    want = sum(s["samples"] for s in m["shards"][first:end])
    got = sum(s["lines"] for s in part["index"]["segments"])
    assert got == want, (path, first, end, got, want)
    assert sum(1 for s in part["index"]["segments"] if s["lines"]) <= 2, path
PY
}

case_an_index_in_70_files_most_of_them_empty_checked_with_48_file_descriptors() {
    cp -r "$T/one" "$C/many"
    damaged "$C/many" # its index moved about below, on purpose
    "$PYTHON" "$IF" split "$C/many" "$("$PYTHON" -c 'print(",".join(["1"] * 30 + ["2"] * 20 + ["4"] * 17 + ["6", "7"]))')"
    [ "$(ls "$C/many" | grep -c '^index-.*-of-70.keys$')" -eq 70 ] || die "the index was not split in 70"
    (ulimit -n 48 && shardcheck --deep "$C/many" >"$C/out") || { cat "$C/out"; die "70 index files"; }
    "$PYTHON" - "$C/many/index-67-of-70.jsonl" <<'PY' >"$C/lost"
import json, sys
lines = open(sys.argv[1], "rb").readlines()
print(json.loads(lines.pop(3))["key"])
open(sys.argv[1], "wb").writelines(lines)
PY
    must_fail 1 shardcheck "$C/many"
    must_say "(key '$(cat "$C/lost")'): not in index-67-of-70.jsonl" "$T/stdout"
    same_report "$C/many" 1 4
}

case_damage_planted_in_different_places() {
    cp -r "$T/multi" "$C/bad"
    damaged "$C/bad" # damage planted below, on purpose
    "$PYTHON" - "$C/bad" <<'PY' >"$C/planted"
import json, os, struct, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
def lines(name):
    return open(os.path.join(d, name), "rb").read().splitlines(keepends=True)
def put(name, ls):
    open(os.path.join(d, name), "wb").write(b"".join(ls))
# a byte flipped in the middle of shard 4
shard = os.path.join(d, m["shards"][4]["file"])
with open(shard, "r+b") as f:
    f.seek(os.path.getsize(shard) // 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x40]))
# index-0: line 11 names another key, lines 31 and 32 change places, line
# 51 (shard 0) goes to the end, after shard 2's lines (another part's, when
# the parts are many)
l0 = lines("index-0-of-3.jsonl")
x = json.loads(l0[10]); print("changed", x["key"]); x["key"] = "renamed/" + x["key"]
l0[10] = (json.dumps(x, separators=(",", ":")) + "\n").encode()
l0[30], l0[31] = l0[31], l0[30]
moved = l0.pop(50)
l0.append(moved)
print("moved", json.loads(moved)["key"], len(l0))
# index-1: its line 5 is lost
l1 = lines("index-1-of-3.jsonl")
print("lost", json.loads(l1.pop(4))["key"])
# index-2: a line more, naming a shard it does not have
l2 = lines("index-2-of-3.jsonl")
x = dict(json.loads(l2[-1]), shard=99)
l2.append((json.dumps(x, separators=(",", ":")) + "\n").encode())
print("nowhere", x["key"], len(l2))
put("index-0-of-3.jsonl", l0); put("index-1-of-3.jsonl", l1); put("index-2-of-3.jsonl", l2)
# index-0's key table: two entries change places; index-2's holds another hash
t = bytearray(open(d + "/index-0-of-3.keys", "rb").read())
a, b = 32 + 16 * 100, 32 + 16 * 101
t[a:a + 16], t[b:b + 16] = t[b:b + 16], t[a:a + 16]
open(d + "/index-0-of-3.keys", "wb").write(t)
t = bytearray(open(d + "/index-2-of-3.keys", "rb").read())
t[32 + 16 * 7] ^= 1
open(d + "/index-2-of-3.keys", "wb").write(t)
# the manifest's count of unlabeled samples, and a stray index file
m["counts"]["unlabeled"] -= 1
json.dump(m, open(d + "/manifest.json", "w"), indent=2)
open(d + "/index-3-of-4.keys", "wb").write(b"left over")
PY
    must_fail 1 shardcheck "$C/bad"
    changed=$(sed -n 's/^changed //p' "$C/planted")
    lost=$(sed -n 's/^lost //p' "$C/planted")
    must_say "$(json "$C/bad/manifest.json" 'd["shards"][4]["file"]'): xxh3 is " "$T/stdout"
    must_say "(key '$changed'): index-0-of-3.jsonl line 11 names key 'renamed/$changed'" "$T/stdout"
    must_say "index-0-of-3.jsonl line 32 (key '" "$T/stdout"
    must_say "'): shard-000000.shard record 30 is listed again or out of order" "$T/stdout"
    set -- $(sed -n 's/^moved //p' "$C/planted")
    must_say "index-0-of-3.jsonl line $2 (key '$1'): shard-000000.shard record 50 is listed again" \
        "$T/stdout"
    must_say "(key '$lost'): not in index-1-of-3.jsonl" "$T/stdout"
    set -- $(sed -n 's/^nowhere //p' "$C/planted")
    must_say "index-2-of-3.jsonl line $2 (key '$1'): shard 99 record " "$T/stdout"
    must_say "index-1-of-3.jsonl: $(($(wc -l <"$C/bad/index-1-of-3.jsonl"))) lines, manifest says" \
        "$T/stdout"
    must_say "index-0-of-3.keys: its entries are not sorted by key hash and line" "$T/stdout"
    must_say "index-2-of-3.keys does not hold the xxh3 and line of each key of index-2-of-3.jsonl" \
        "$T/stdout"
    must_say "counts.unlabeled: the shards hold 6000 unlabeled samples, manifest says 5999" "$T/stdout"
    must_say "index-3-of-4.keys: in the dataset directory but not listed in the manifest" "$T/stdout"
    same_report "$C/bad" 1 2 3 5 8
    OPTS=--deep
    same_report "$C/bad" 3
}

case_a_duplicate_key_shard_0_copied_under_a_new_name_its_lines_added_to_the_last_index_file() {
    cp -r "$T/multi" "$C/dup"
    "$PYTHON" "$IF" duplicate "$C/dup" >/dev/null # the key tables a writer would have written
    must_fail 1 shardcheck "$C/dup"
    must_say "duplicate key '" "$T/stdout"
    must_say "': shard-000000.shard record 0 and $(printf 'shard-%06d.shard' "$shards") record 0" \
        "$T/stdout"
    same_report "$C/dup" 1 2 4
}

case_the_combine_refuses_what_is_not_every_part_of_one_check_of_the_dataset() {
    mkdir "$C/r3" "$C/rone"
    for i in 0 1 2; do shardcheck --part $i/3 --result "$C/r3/" "$T/multi" >/dev/null; done
    for i in 0 1; do shardcheck --part $i/2 --result "$C/rone/" "$T/one" >/dev/null; done
    shardcheck --combine "$T/r2" "$T/multi" >/dev/null || die "the results of two parts do not combine"
    must_fail 1 shardcheck --combine "$C/rone" "$T/multi"
    must_say "shardcheck-part-0-of-2.jsonl' is a result of another dataset" "$T/err"
    must_fail 1 shardcheck --combine "$T/r2" "$C/r3/shardcheck-part-1-of-3.jsonl" "$T/multi"
    must_say "results of two checks" "$T/err"
    must_fail 1 shardcheck --combine "$C/r3/shardcheck-part-0-of-3.jsonl" \
        "$C/r3/shardcheck-part-2-of-3.jsonl" "$T/multi"
    must_say "part 1 of 3: no result" "$T/err"
    must_fail 1 shardcheck --combine "$T/r2" "$T/r2/shardcheck-part-1-of-2.jsonl" "$T/multi"
    must_say "part 1 of 2 is given twice" "$T/err"
    must_fail 1 shardcheck --combine --json "$C/r3/shardcheck-part-0-of-3.jsonl" "$T/multi"
    [ "$(json "$T/stdout" 'd["verified"]')" = False ] || die "--json of a refused combine says verified"
    must_say "part 1 of 3: no result" "$T/err"
    head -c 200 "$T/r2/shardcheck-part-1-of-2.jsonl" >"$C/cut.jsonl"
    must_fail 1 shardcheck --combine "$T/r2/shardcheck-part-0-of-2.jsonl" "$C/cut.jsonl" "$T/multi"
    must_say "cut.jsonl" "$T/err"
    cp "$C/r3/shardcheck-part-1-of-3.jsonl" "$C/r3/.hidden"
    printf '{"x": 1}\n' >"$C/r3/notes.jsonl"
    shardcheck --combine "$C/r3" "$T/multi" >/dev/null || die "a directory's other files were taken"
}

case_part_auto_slurms_array_task_a_kubernetes_indexed_jobs_index() {
    mkdir "$C/ra"
    SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=2 \
        shardcheck --part auto --result "$C/ra/" "$T/multi" >"$C/out"
    must_say "part 1 of 2 of '$T/multi' checked" "$C/out"
    JOB_COMPLETION_INDEX=0 shardcheck --part auto --parts 2 --result "$C/ra" --json "$T/multi" >"$C/out"
    want="(0, 2, '$C/ra/shardcheck-part-0-of-2.jsonl')"
    [ "$(json "$C/out" 'd["part"], d["parts"], d["result"]')" = "$want" ] ||
        die "JOB_COMPLETION_INDEX: $(cat "$C/out")"
    shardcheck --combine "$C/ra" "$T/multi" >"$C/out" || die "the automatic parts do not combine"
    must_fail 2 env JOB_COMPLETION_INDEX=0 shardcheck --part auto --result "$C/ra/" "$T/multi"
    must_say "--parts N" "$T/err"
}

case_usage_part_needs_result_and_checks_only_the_default_pass_and_deep() {
    must_fail 2 shardcheck --part 0/2 "$T/multi"
    must_say "--part needs --result" "$T/err"
    must_fail 2 shardcheck --part 2/2 --result "$C/x" "$T/multi"
    must_fail 2 shardcheck --part 0/2 --result "$C/x" --source "$T/src" "$T/multi"
    must_fail 2 shardcheck --combine --deep "$T/r2" "$T/multi"
    must_fail 2 shardcheck --combine "$T/multi"
    must_fail 2 shardcheck --result "$C/x" "$T/multi"
    [ ! -e "$C/x" ] || die "a usage error wrote a result"
}

case_a_dataset_written_before_key_tables_checked_whole_as_before_not_in_parts() {
    cp -r "$T/one" "$C/old"
    "$PYTHON" - "$C/old" <<'PY'
import json, os, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
os.unlink(os.path.join(d, m["index"].pop("keys")["file"]))
json.dump(m, open(d + "/manifest.json", "w"), indent=2)
PY
    shardcheck "$C/old" >"$C/out" ||
        { cat "$C/out"; die "a dataset without key tables did not verify"; }
    must_fail 1 shardcheck --part 0/2 --result "$C/x" "$C/old"
    must_say "has no key tables (it was written before them): check it whole" "$T/err"
    [ ! -e "$C/x" ] || die "a refused part wrote a result"
}

run_cases
