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

say "a dataset of 6000 samples in 9 shards, its index split in 3 files"
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

say "the split index verifies, default pass and --deep; its files are no strays"
shardcheck "$T/multi" >"$T/out" || { cat "$T/out"; die "the split dataset did not verify"; }
must_say "verified '$T/multi': $shards shards, 6000 samples" "$T/out"
shardcheck --deep "$T/multi" >"$T/out" || { cat "$T/out"; die "--deep did not verify"; }

say "--source on the split index: each sample held to SRC, a difference naming its index file"
shardcheck --source "$T/src" "$T/multi" >"$T/out" || { cat "$T/out"; die "--source did not verify"; }
mkdir "$T/src2"
cp "$T/src"/*.tar "$T/src2/"
"$PYTHON" - "$T/src2/00004.tar" <<'PY' >"$T/recaptioned"
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
must_fail 1 shardcheck --source "$T/src2" "$T/multi"
must_say "source: field 'caption' of '$(cat "$T/recaptioned")' changed since sharding: " "$T/stdout"
grep -q "index-[012]-of-3.jsonl says " "$T/stdout" || { cat "$T/stdout"; die "no index file named"; }

# same_report DST N...: `shardcheck --part I/N` for every I, then --combine,
# give the exit status, the --json report (but the passes' rates) and the
# text (but its rate lines) the whole check gives ($OPTS: more options).
OPTS=""
same_report() {
    d=$1
    shift
    set +e
    shardcheck --json $OPTS "$d" >"$T/whole.json" 2>"$T/whole.err"
    want=$?
    shardcheck $OPTS "$d" >"$T/whole.txt" 2>&1
    set -e
    for n in "$@"; do
        rm -rf "$T/r"
        mkdir "$T/r"
        i=0
        while [ $i -lt "$n" ]; do
            shardcheck --part "$i/$n" --result "$T/r/" $OPTS "$d" >"$T/part.out" 2>&1 ||
                { cat "$T/part.out"; die "part $i of $n of '$d' wrote no result"; }
            must_say "part $i of $n of '$d' checked" "$T/part.out"
            i=$((i + 1))
        done
        set +e
        shardcheck --combine --json "$T/r" "$d" >"$T/comb.json" 2>"$T/comb.err"
        got=$?
        shardcheck --combine "$T/r" "$d" >"$T/comb.txt" 2>&1
        set -e
        [ "$got" -eq "$want" ] ||
            { cat "$T/comb.err"; die "$n parts of '$d' exit $got, whole $want"; }
        "$PYTHON" - "$T/whole.json" "$T/comb.json" "$T/whole.txt" "$T/comb.txt" <<'PY' ||
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

say "clean: the same report whole and in 1, 2, 3 and 7 parts"
same_report "$T/multi" 1 2 3 7
# each part read the lines of its own shards, found by the binary search on
# each index file: none read more, even where a file is split among parts
"$PYTHON" - "$T/multi" "$T/r"/shardcheck-part-*-of-7.jsonl <<'PY' || die "a part read others' lines"
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

say "an index in 70 files (most of them empty), checked with 48 file descriptors"
cp -r "$T/one" "$T/many"
damaged "$T/many" # its index moved about below, on purpose
"$PYTHON" "$IF" split "$T/many" "$("$PYTHON" -c 'print(",".join(["1"] * 30 + ["2"] * 20 + ["4"] * 17 + ["6", "7"]))')"
[ "$(ls "$T/many" | grep -c '^index-.*-of-70.keys$')" -eq 70 ] || die "the index was not split in 70"
(ulimit -n 48 && shardcheck --deep "$T/many" >"$T/out") || { cat "$T/out"; die "70 index files"; }
"$PYTHON" - "$T/many/index-67-of-70.jsonl" <<'PY' >"$T/lost"
import json, sys
lines = open(sys.argv[1], "rb").readlines()
print(json.loads(lines.pop(3))["key"])
open(sys.argv[1], "wb").writelines(lines)
PY
must_fail 1 shardcheck "$T/many"
must_say "(key '$(cat "$T/lost")'): not in index-67-of-70.jsonl" "$T/stdout"
same_report "$T/many" 1 4

say "damage planted in different places"
cp -r "$T/multi" "$T/bad"
damaged "$T/bad" # damage planted below, on purpose
"$PYTHON" - "$T/bad" <<'PY' >"$T/planted"
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
must_fail 1 shardcheck "$T/bad"
changed=$(sed -n 's/^changed //p' "$T/planted")
lost=$(sed -n 's/^lost //p' "$T/planted")
must_say "$(json "$T/bad/manifest.json" 'd["shards"][4]["file"]'): xxh3 is " "$T/stdout"
must_say "(key '$changed'): index-0-of-3.jsonl line 11 names key 'renamed/$changed'" "$T/stdout"
must_say "index-0-of-3.jsonl line 32 (key '" "$T/stdout"
must_say "'): shard-000000.shard record 30 is listed again or out of order" "$T/stdout"
set -- $(sed -n 's/^moved //p' "$T/planted")
must_say "index-0-of-3.jsonl line $2 (key '$1'): shard-000000.shard record 50 is listed again" \
    "$T/stdout"
must_say "(key '$lost'): not in index-1-of-3.jsonl" "$T/stdout"
set -- $(sed -n 's/^nowhere //p' "$T/planted")
must_say "index-2-of-3.jsonl line $2 (key '$1'): shard 99 record " "$T/stdout"
must_say "index-1-of-3.jsonl: $(($(wc -l <"$T/bad/index-1-of-3.jsonl"))) lines, manifest says" \
    "$T/stdout"
must_say "index-0-of-3.keys: its entries are not sorted by key hash and line" "$T/stdout"
must_say "index-2-of-3.keys does not hold the xxh3 and line of each key of index-2-of-3.jsonl" \
    "$T/stdout"
must_say "counts.unlabeled: the shards hold 6000 unlabeled samples, manifest says 5999" "$T/stdout"
must_say "index-3-of-4.keys: in the dataset directory but not listed in the manifest" "$T/stdout"
same_report "$T/bad" 1 2 3 5 8
OPTS=--deep
same_report "$T/bad" 3
OPTS=""

say "a duplicate key: shard 0 copied under a new name, its lines added to the last index file"
cp -r "$T/multi" "$T/dup"
"$PYTHON" "$IF" duplicate "$T/dup" >/dev/null # the key tables a writer would have written
must_fail 1 shardcheck "$T/dup"
must_say "duplicate key '" "$T/stdout"
must_say "': shard-000000.shard record 0 and $(printf 'shard-%06d.shard' "$shards") record 0" \
    "$T/stdout"
same_report "$T/dup" 1 2 4

say "the combine refuses what is not every part of one check of the dataset"
rm -rf "$T/r2" "$T/r3" "$T/rone"
mkdir "$T/r2" "$T/r3" "$T/rone"
for i in 0 1; do shardcheck --part $i/2 --result "$T/r2/" "$T/multi" >/dev/null; done
for i in 0 1 2; do shardcheck --part $i/3 --result "$T/r3/" "$T/multi" >/dev/null; done
for i in 0 1; do shardcheck --part $i/2 --result "$T/rone/" "$T/one" >/dev/null; done
shardcheck --combine "$T/r2" "$T/multi" >/dev/null || die "the results of two parts do not combine"
must_fail 1 shardcheck --combine "$T/rone" "$T/multi"
must_say "shardcheck-part-0-of-2.jsonl' is a result of another dataset" "$T/err"
must_fail 1 shardcheck --combine "$T/r2" "$T/r3/shardcheck-part-1-of-3.jsonl" "$T/multi"
must_say "results of two checks" "$T/err"
must_fail 1 shardcheck --combine "$T/r3/shardcheck-part-0-of-3.jsonl" \
    "$T/r3/shardcheck-part-2-of-3.jsonl" "$T/multi"
must_say "part 1 of 3: no result" "$T/err"
must_fail 1 shardcheck --combine "$T/r2" "$T/r2/shardcheck-part-1-of-2.jsonl" "$T/multi"
must_say "part 1 of 2 is given twice" "$T/err"
must_fail 1 shardcheck --combine --json "$T/r3/shardcheck-part-0-of-3.jsonl" "$T/multi"
[ "$(json "$T/stdout" 'd["verified"]')" = False ] || die "--json of a refused combine says verified"
must_say "part 1 of 3: no result" "$T/err"
head -c 200 "$T/r2/shardcheck-part-1-of-2.jsonl" >"$T/cut.jsonl"
must_fail 1 shardcheck --combine "$T/r2/shardcheck-part-0-of-2.jsonl" "$T/cut.jsonl" "$T/multi"
must_say "cut.jsonl" "$T/err"
cp "$T/r3/shardcheck-part-1-of-3.jsonl" "$T/r3/.hidden"
printf '{"x": 1}\n' >"$T/r3/notes.jsonl"
shardcheck --combine "$T/r3" "$T/multi" >/dev/null || die "a directory's other files were taken"

say "--part auto: Slurm's array task, a Kubernetes Indexed Job's index"
rm -rf "$T/ra"
mkdir "$T/ra"
SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=2 \
    shardcheck --part auto --result "$T/ra/" "$T/multi" >"$T/out"
must_say "part 1 of 2 of '$T/multi' checked" "$T/out"
JOB_COMPLETION_INDEX=0 shardcheck --part auto --parts 2 --result "$T/ra" --json "$T/multi" >"$T/out"
want="(0, 2, '$T/ra/shardcheck-part-0-of-2.jsonl')"
[ "$(json "$T/out" 'd["part"], d["parts"], d["result"]')" = "$want" ] ||
    die "JOB_COMPLETION_INDEX: $(cat "$T/out")"
shardcheck --combine "$T/ra" "$T/multi" >"$T/out" || die "the automatic parts do not combine"
must_fail 2 env JOB_COMPLETION_INDEX=0 shardcheck --part auto --result "$T/ra/" "$T/multi"
must_say "--parts N" "$T/err"

say "usage: --part needs --result and checks only the default pass and --deep"
must_fail 2 shardcheck --part 0/2 "$T/multi"
must_say "--part needs --result" "$T/err"
must_fail 2 shardcheck --part 2/2 --result "$T/x" "$T/multi"
must_fail 2 shardcheck --part 0/2 --result "$T/x" --source "$T/src" "$T/multi"
must_fail 2 shardcheck --combine --deep "$T/r2" "$T/multi"
must_fail 2 shardcheck --combine "$T/multi"
must_fail 2 shardcheck --result "$T/x" "$T/multi"
[ ! -e "$T/x" ] || die "a usage error wrote a result"

say "a dataset written before key tables: checked whole as before, not in parts"
cp -r "$T/one" "$T/old"
"$PYTHON" - "$T/old" <<'PY'
import json, os, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
os.unlink(os.path.join(d, m["index"].pop("keys")["file"]))
json.dump(m, open(d + "/manifest.json", "w"), indent=2)
PY
shardcheck "$T/old" >"$T/out" ||
    { cat "$T/out"; die "a dataset without key tables did not verify"; }
must_fail 1 shardcheck --part 0/2 --result "$T/x" "$T/old"
must_say "has no key tables (it was written before them): check it whole" "$T/err"
[ ! -e "$T/x" ] || die "a refused part wrote a result"

say "all shardcheck parts tests passed"
