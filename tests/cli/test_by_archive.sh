#!/bin/sh
# A folder of archives stored by archive (shardify --archives, the default
# order; FORMAT.md "Sample order"): the stored order is the one FORMAT.md
# gives, recomputed here by an independent implementation (Python: tarfile,
# xxhash, SplitMix64 and Lemire's bounded draw as written there); parts get
# whole archives, balanced by bytes, read only their own (strace), and
# merge into the samples, order and pixels of one run; classes named in the
# archives are numbered as one run of --order global numbers them; a part
# cannot number them and says so; archives.jsonl lists every archive's
# identity and counts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parts_lib.sh"

GEN=$SHARDKIT_BIN/../bench/gen_archives
[ -x "$GEN" ] || die "no '$GEN' (make builds it)"

# order.py SRC DST SEED: the index's keys are FORMAT.md's order by archive
cat >"$T/order.py" <<'EOF'
import json, os, sys, tarfile, xxhash
M = (1 << 64) - 1
def splitmix(state):
    state = (state + 0x9e3779b97f4a7c15) & M
    z = ((state ^ (state >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return state, z ^ (z >> 31)
def below(state, n):  # Lemire's multiply-and-reject
    state, x = splitmix(state)
    m = x * n
    if m & M < n:
        t = ((1 << 64) - n) % n
        while m & M < t:
            state, x = splitmix(state)
            m = x * n
    return state, m >> 64
def shuffle(v, seed):  # Fisher-Yates from the end
    state = seed
    for i in range(len(v), 1, -1):
        state, j = below(state, i)
        v[i - 1], v[j] = v[j], v[i - 1]
    return v
src, dst, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
want = []
for name in sorted(os.listdir(src), key=lambda n: n.encode()):
    with tarfile.open(os.path.join(src, name)) as t:
        keys = sorted((name + "/" + m.name).encode() for m in t if m.name.endswith(".jpg"))
    want += shuffle(keys, seed ^ xxhash.xxh3_64_intdigest(name.encode()))
m = json.load(open(os.path.join(dst, "manifest.json")))
assert m["config"]["order"] == "archive", m["config"]
got = [json.loads(l)["key"].encode() for l in open(os.path.join(dst, "index.jsonl"))]
assert got == want, "stored order differs at %d" % next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
print("order", len(got))
EOF

# the source the cases read: a folder of 7 tars of unequal sizes, captions
# beside the images, converted once ($T/one); and $T/src2, the same folder
# with a tar added, one removed and one changed (the incremental runs' SRC)
mkdir -p "$T/src"
"$GEN" --per-tar 40 "$T/src" 120
"$GEN" --per-tar 10 --first-tar 3 --seed 7 "$T/src" 40
[ "$(ls "$T/src" | wc -l)" -eq 7 ] || die "the generator wrote $(ls "$T/src")"
OPTS="--labels none --field caption=text,from=.txt --size 24 --codec png --shard-size 16K --quiet"
shardify --archives $OPTS "$T/src" "$T/one"
cp -r "$T/src" "$T/src2"
"$GEN" --per-tar 10 --first-tar 7 --seed 3 "$T/src2" 10          # 00007.tar: new
rm "$T/src2/00002.tar"                                            # removed
"$GEN" --per-tar 10 --first-tar 4 --seed 99 "$T/src2" 10          # 00004.tar: same names, new bytes

case_the_stored_order_is_format_mds_archive_by_archive_for_two_seeds() {
    "$PYTHON" "$T/order.py" "$T/src" "$T/one" 0 || die "the stored order is not FORMAT.md's"
    shardify --archives $OPTS --shuffle-seed 12345 "$T/src" "$C/seeded"
    "$PYTHON" "$T/order.py" "$T/src" "$C/seeded" 12345 || die "the stored order is not FORMAT.md's"
    shardcheck --deep --source "$T/src" "$T/one" >"$C/check" 2>&1 || { cat "$C/check" >&2; die "shardcheck"; }
}

case_archives_jsonl_lists_every_archive_its_size_and_xxh3_candidates_samples_and_rejects() {
    "$PYTHON" - "$T/src" "$T/one" <<'EOF' || die "archives.jsonl is wrong"
import json, os, sys, xxhash
src, dst = sys.argv[1:]
m = json.load(open(os.path.join(dst, "manifest.json")))
a = m["source"]["archives"]
data = open(os.path.join(dst, a["file"]), "rb").read()
assert (a["bytes"], a["xxh3"]) == (len(data), xxhash.xxh3_64_hexdigest(data)), a
lines = [json.loads(l) for l in data.decode().splitlines()]
names = sorted(os.listdir(src))
assert [l["name"] for l in lines] == names and a["entries"] == len(names), lines
for l in lines:
    raw = open(os.path.join(src, l["name"]), "rb").read()
    assert (l["bytes"], l["xxh3"]) == (len(raw), xxhash.xxh3_64_hexdigest(raw)), l
    assert l["candidates"] == l["samples"] + l["rejected"]
index = [json.loads(x)["key"].split("/")[0] for x in open(os.path.join(dst, "index.jsonl"))]
assert [l["samples"] for l in lines] == [index.count(n) for n in names]
EOF
}

case_in_3_parts_whole_archives_each_balanced_by_bytes_only_their_own_archives_read() {
    for i in 0 1 2; do
        if strace_works; then
            # LeakSanitizer cannot run under ptrace: the other runs check leaks
            ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
                strace -f -e trace=openat -o "$C/strace.$i" shardify --archives $OPTS --part "$i/3" "$T/src" "$C/parts"
        else
            shardify --archives $OPTS --part "$i/3" "$T/src" "$C/parts"
        fi
    done
    "$PYTHON" - "$T/src" "$C" <<'EOF' || die "the parts' archives are wrong"
import json, os, sys
src, c = sys.argv[1:]
names = sorted(os.listdir(src))
weight = {n: os.path.getsize(os.path.join(src, n)) + 1 for n in names}
# balanced: an archive goes to the part in whose third of the bytes its middle lies
total, before, part_of = sum(weight.values()), 0, {}
for n in names:
    part_of[n] = min(2, (2 * before + weight[n]) * 3 // (2 * total))
    before += weight[n]
seen = []
for i in range(3):
    lines = [json.loads(l) for l in open(os.path.join(c, "parts/parts/%d-of-3/archives.jsonl" % i))]
    mine = [l["name"] for l in lines]
    seen += mine
    assert mine == [n for n in names if part_of[n] == i], (i, mine)
    st = os.path.join(c, "strace.%d" % i)
    if os.path.exists(st):  # a part opens its own archives, never another's
        opened = {n for n in names for line in open(st) if '/src/%s"' % n in line}
        assert opened == set(mine), (i, sorted(opened), mine)
assert seen == names, seen
EOF
    shardify merge --quiet "$C/parts"
    same_as_single "$T/one" "$C/parts" 160
    cmp -s "$T/one/archives.jsonl" "$C/parts/archives.jsonl" || die "the merged archives.jsonl differs"
}

case_part_of_a_folder_of_archives_with_named_classes_is_refused_naming_the_way_out() {
    must_fail 1 shardify --archives --size 24 --part 0/2 "$T/src" "$C/named"
    must_say "part 0 of 2 reads only its own archives, so it cannot number the classes named in the others" "$T/err"
    [ ! -e "$C/named/parts/0-of-2/manifest.json" ] || die "a refused part published"
    must_fail 2 shardify --archives --order global --part 0/2 "$T/src" "$C/global"
    must_say "--part splits a folder of archives by archive: leave out --order global" "$T/err"
    must_fail 2 shardify --order archive "$T/src" "$C/notarchives"
    must_say "--order is the stored order of a folder of archives: give --archives" "$T/err"
}

case_classes_named_in_the_archives_numbered_as_one_run_in_the_whole_folders_order_numbers_them() {
    mkdir -p "$C/classes"
    "$PYTHON" - "$T/src" "$C/classes" <<'EOF'
import os, sys, tarfile
src, out = sys.argv[1:]
for k, name in enumerate(sorted(os.listdir(src))):
    with tarfile.open(os.path.join(src, name)) as t, tarfile.open(os.path.join(out, name), "w") as o:
        for i, m in enumerate(x for x in t if x.name.endswith(".jpg")):
            data = t.extractfile(m).read()
            m.name = ["kite", "bird", "yak"][(i + k) % (3 if k != 4 else 2)] + "/" + m.name
            import io
            o.addfile(m, io.BytesIO(data))
EOF
    RE='regex:^[^/]+/([^/]+)/'
    shardify --archives --size 24 --labels "$RE" --quiet "$C/classes" "$C/by"
    shardify --archives --size 24 --labels "$RE" --order global --quiet "$C/classes" "$C/whole"
    "$PYTHON" - "$C/by" "$C/whole" <<'EOF' || die "the classes differ from the whole folder's"
import json, os, sys
ms = [json.load(open(os.path.join(d, "manifest.json"))) for d in sys.argv[1:]]
assert ms[0]["labels"] == ms[1]["labels"] == ["bird", "kite", "yak"], ms[0]["labels"]
assert ms[0]["counts"]["by_label"] == ms[1]["counts"]["by_label"]
lab = [{json.loads(l)["key"]: json.loads(l)["label"] for l in open(os.path.join(d, "index.jsonl"))}
       for d in sys.argv[1:]]
assert lab[0] == lab[1]
for k, v in lab[0].items():
    assert ms[0]["labels"][v] == k.split("/")[1], k
EOF
    shardcheck --deep --source "$C/classes" "$C/by" >"$C/check" 2>&1 || { cat "$C/check" >&2; die "shardcheck of named classes"; }
}

case_incremental_a_tar_added_one_removed_one_changed_a_record_damaged_in_prev_the_rest_copied() {
    cp -r "$T/one" "$C/prev"
    # damage one record of 00005.tar in PREV: a byte of its frame (FORMAT.md: the footer's rows)
    "$PYTHON" - "$C/prev" 00005.tar <<'EOF' || die "cannot damage PREV"
import json, os, struct, sys
d, tar = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
line = next(json.loads(l) for l in open(os.path.join(d, "index.jsonl"))
            if json.loads(l)["key"].startswith(tar + "/"))
path = os.path.join(d, m["shards"][line["shard"]]["file"])
data = bytearray(open(path, "rb").read())
footer = struct.unpack_from("<Q", data, len(data) - 40)[0]
offset, size = struct.unpack_from("<QQ", data, footer + 24 + 32 * line["record"])
data[offset + size // 2] ^= 0x40
open(path, "wb").write(data)
EOF
    shardify --archives $OPTS --incremental "$C/prev" "$T/src2" "$C/inc" >"$C/inc.out" 2>&1 ||
        { cat "$C/inc.out" >&2; die "the incremental run failed"; }
    shardify --archives $OPTS "$T/src2" "$C/full"
    "$PYTHON" - "$C/inc" "$C/full" <<'EOF' || die "the incremental run is not the full run"
import json, os, sys
inc, full = sys.argv[1:]
names = sorted((set(os.listdir(inc)) | set(os.listdir(full))) - {"run.json"})
for n in names:
    a, b = (open(os.path.join(d, n), "rb").read() for d in (inc, full))
    if n == "manifest.json":
        a = json.loads(a)
        lineage = a.pop("lineage")
        assert a == json.loads(b), "manifests differ"
    else:
        assert a == b, n
print(lineage)
# src: 00000..00002 of 40, 00003..00006 of 10; now 00002 gone, 00004 changed, 00007 new
want = {"added": 10, "changed": 10, "unchanged": 40 + 40 + 10 + 10 + 10, "removed": 40,
        "reused": 40 + 40 + 10 + 10, "relabeled": 0, "rejected_again": 0, "reconverted": 1,
        "refielded": 0}
assert {k: lineage[k] for k in want} == want, lineage
EOF
    shardcheck --deep --source "$T/src2" "$C/inc" >"$C/check" 2>&1 || { cat "$C/check" >&2; die "shardcheck of the incremental run"; }
}

case_incremental_from_a_dataset_in_the_whole_folders_order_refused_or_rebuilt_in_full() {
    shardify --archives $OPTS --order global "$T/src" "$C/globalprev"
    must_fail 2 shardify --archives $OPTS --incremental "$C/globalprev" "$T/src2" "$C/inc2"
    must_say "differs from the previous dataset" "$T/err"
    shardify --archives $OPTS --incremental-or-full "$C/globalprev" "$T/src2" "$C/inc3"
    [ "$(json "$C/inc3/manifest.json" "'full_rebuild' in d['lineage']")" = True ] || die "no full rebuild"
}

run_cases
