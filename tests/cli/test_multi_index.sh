# test_multi_index.sh - the readers on datasets whose index is in several
# files (a dataset merged from parts: manifest "indexes", each file's shards
# relative to its first) and on key tables, both written here from
# manifests/FORMAT.md alone (tests/fixtures/split_index.py), not by shardify:
# every key is found at its index by Dataset.index_of (str and bytes, keys
# that are not UTF-8 among them), shardcat DST KEY and shardbench --keys, in
# a dataset of one index file, of three, of three without key tables and of
# one written before key tables, locally and over HTTP (a real nginx on
# loopback, when installed); absent keys are absent; a crafted table whose
# entries collide is answered by the footers' keys; a damaged table is an
# error naming it, never a wrong sample; a Loader epoch reads every sample.
. "$(dirname "$0")/lib.sh"

TOP=${SHARDKIT_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
HTTP_SERVER="$TOP/bench/http_server.sh"
SPLIT="$TOP/tests/fixtures/split_index.py"
SRC=$T/src
mkdir -p "$SRC/a" "$SRC/b"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 150 >"$T/pick"
i=0
while IFS= read -r f; do
    i=$((i + 1))
    if [ $((i % 2)) = 0 ]; then cp "$SAMPLE/$f" "$SRC/a/$f"; else cp "$SAMPLE/$f" "$SRC/b/$f"; fi
done <"$T/pick"
# keys that are not UTF-8, or need escaping in JSON
cp "$SAMPLE/$(head -n 1 "$T/pick")" "$SRC/a/$(printf 'latin1-\351.jpg')"
cp "$SAMPLE/$(head -n 1 "$T/pick")" "$SRC/b/$(printf 'bad-\377\376.jpg')"
cp "$SAMPLE/$(head -n 1 "$T/pick")" "$SRC/b/quote\"back\\slash.jpg"

# the datasets every case reads: one dataset of many shards, and its index
# split three ways, with and without key tables, and written before them
shardify "$SRC" "$T/one" --size 32 --shard-size 16K --labels none --quiet
for d in three bare old; do cp -r "$T/one" "$T/$d"; done
"$PYTHON" "$SPLIT" "$T/three" 3 >/dev/null
"$PYTHON" "$SPLIT" "$T/bare" 3 --no-keys >/dev/null
"$PYTHON" - "$T/old" <<'EOF'
import json, os, sys
path = os.path.join(sys.argv[1], "manifest.json")
m = json.load(open(path))
del m["index"]["keys"]  # written before key tables
os.remove(os.path.join(sys.argv[1], "index.keys"))
json.dump(m, open(path, "w"))
EOF
# two keys to ask for: those of lines 7 and 140
k1=$(sed -n 7p "$T/one/index.jsonl" | cut -d'"' -f4)
k2=$(sed -n 140p "$T/one/index.jsonl" | cut -d'"' -f4)

# keys.py DATASET...: every key of one/index.jsonl is found at its line in each
# dataset (by str when it is UTF-8, by bytes always), absent keys are not,
# and a Loader epoch reads each sample once with the keys of the index.
cat >"$T/keys.py" <<'EOF'
import json, sys
import shardkit

ref = sys.argv[1]
keys = []
for line in open(ref + "/index.jsonl", "rb"):
    o = json.loads(line)
    keys.append(bytes.fromhex(o["key_hex"]) if "key_hex" in o else o["key"].encode())
assert any("key_hex" in json.loads(l) for l in open(ref + "/index.jsonl", "rb")), "no odd key"
for location in sys.argv[2:]:
    ds = shardkit.Dataset(location)
    assert len(ds) == len(keys)
    for i, k in enumerate(keys):
        assert ds.index_of(k) == i, (location, k, i)
        assert ds.key_bytes(i) == k
        try:
            text = k.decode()
        except UnicodeDecodeError:
            continue
        assert ds.index_of(text) == i
    for absent in (b"", b"nope.jpg", keys[0] + b"x", b"\xff", keys[-1][:-1]):
        try:
            ds.index_of(absent)
        except KeyError:
            pass
        else:
            raise AssertionError((location, absent))
    seen = []
    for batch in shardkit.Loader(location, 16, threads=2):
        seen += list(batch.indices)
    assert sorted(seen) == list(range(len(keys))), location
    print(location, "ok", len(keys))
EOF

case_one_dataset_of_many_shards_and_its_index_split_three_ways_with_and_without_key_tables() {
    [ -f "$T/one/index.keys" ] || die "shardify wrote no key table"
    [ "$(json "$T/three/manifest.json" "len(d['indexes'])")" = 3 ] || die "no three index files"
    [ "$(json "$T/three/manifest.json" "'index' in d")" = False ] || die "index left beside indexes"
}

case_dataset_index_of_finds_every_key_not_utf_8_ones_too_and_no_absent_one_in_every_layout() {
    shardkit_python "$T/keys.py" "$T/one" "$T/one" "$T/three" "$T/bare" "$T/old" >"$C/keys.out"
    [ "$(grep -c ' ok ' "$C/keys.out")" = 4 ] || { cat "$C/keys.out"; die "a layout failed"; }
}

# cat_keys DATASET OUT: `shardcat DATASET --out OUT` of the keys k2, no-such-key
# (absent), k1 and a/latin1-\351.jpg exits 1
cat_keys() {
    must_fail 1 shardcat "$1" --out "$2" "$k2" no-such-key "$k1" "$(printf 'a/latin1-\351.jpg')"
}

case_shardcat_dst_key_writes_the_same_samples_from_every_layout() {
    for d in one three bare old; do
        cat_keys "$T/$d" "$C/cat-$d"
        must_say "no sample with key 'no-such-key' in '$T/$d'" "$T/err"
        must_say "wrote 3 samples" "$T/err"
        [ "$d" = one ] || same_tree "$C/cat-one" "$C/cat-$d"
    done
}

case_shardbench_keys_reads_exactly_the_samples_of_those_keys() {
    printf '%s\n%s\n' "$k1" "$k2" >"$C/two.keys"
    shardbench shards "$T/three" --keys "$C/two.keys" --epochs 1 --digests "$C/dig.jsonl" >/dev/null
    "$PYTHON" -c 'import json, sys
got = sorted(json.loads(l)["key"] for l in open(sys.argv[1]))
assert got == sorted(sys.argv[2:]), got' "$C/dig.jsonl" "$k1" "$k2"
    printf 'no-such-key\n' >>"$C/two.keys"
    must_fail 1 shardbench shards "$T/three" --keys "$C/two.keys" --epochs 1
    must_say "--keys: no sample with key 'no-such-key'" "$T/err"
}

# ---- crafted and damaged key tables -------------------------------------------------
# table.py DATASET OP: rewrite the key table of DATASET's first index file.
#   collide: two keys' entries under one hash (the first key's), in line order,
#     the manifest updated: the later line's key must still be found
#   flip-hash: the hash of the entry of the file's line 5 changed
#   far-line: the entry of line 5 names a line past the file
#   magic: the magic changed;  short: the last entry cut off
cat >"$T/table.py" <<'EOF'
import json, os, struct, sys
import xxhash
dst, op = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(dst, "manifest.json")))
x = m["indexes"][0] if "indexes" in m else m["index"]
path = os.path.join(dst, x["keys"]["file"])
data = bytearray(open(path, "rb").read())
n = struct.unpack_from("<Q", data, 8)[0]
entries = [struct.unpack_from("<QQ", data, 32 + 16 * i) for i in range(n)]
at = {line: i for i, (h, line) in enumerate(entries)}
if op == "collide":
    # line 3's entry moves under line 9's hash: lines 3 and 9 now collide
    h9 = entries[at[9]][0]
    entries[at[3]] = (h9, 3)
    entries.sort()
    for i, e in enumerate(entries):
        struct.pack_into("<QQ", data, 32 + 16 * i, *e)
    x["keys"]["xxh3"] = "%016x" % xxhash.xxh3_64_intdigest(bytes(data))
    json.dump(m, open(os.path.join(dst, "manifest.json"), "w"))
elif op == "flip-hash":
    data[32 + 16 * at[5]] ^= 0x55
elif op == "far-line":
    struct.pack_into("<Q", data, 32 + 16 * at[5] + 8, 10 ** 9)
elif op == "magic":
    data[0] ^= 1
elif op == "short":
    del data[-16:]
open(path, "wb").write(bytes(data))
print(x["keys"]["file"])
EOF
# ask.py ONE DATASET LINE...: index_of in DATASET of the keys of those lines of
# ONE/index.jsonl
cat >"$T/ask.py" <<'EOF'
import json, sys
import shardkit
lines = open(sys.argv.pop(1) + "/index.jsonl", "rb").read().splitlines()
ds = shardkit.Dataset(sys.argv[1])
for n in sys.argv[2:]:
    o = json.loads(lines[int(n)])
    key = bytes.fromhex(o["key_hex"]) if "key_hex" in o else o["key"].encode()
    try:
        print(n, ds.index_of(key))
    except KeyError:
        print(n, "absent")
    except shardkit.ShardkitError as e:
        print(n, "error:", e)
EOF

case_colliding_hashes_the_footers_key_tells_the_samples_apart() {
    cp -r "$T/three" "$C/coll"
    "$PYTHON" "$T/table.py" "$C/coll" collide >/dev/null
    shardkit_python "$T/ask.py" "$T/one" "$C/coll" 9 3 >"$C/coll.out"
    must_say "9 9" "$C/coll.out"
    must_say "3 absent" "$C/coll.out" # its entry is gone: the table, checked whole, says so
}

# damaged_table OP: a damaged key table (OP) is an error naming it, never another sample
damaged_table() {
    op=$1
    cp -r "$T/three" "$C/dmg"
    table=$("$PYTHON" "$T/table.py" "$C/dmg" $op)
    shardkit_python "$T/ask.py" "$T/one" "$C/dmg" 5 0 1 2 3 4 6 7 8 >"$C/dmg.out"
    # each answer is the right index or an error naming the table
    "$PYTHON" - "$C/dmg.out" "$table" <<'EOF' || die "$op: a wrong answer"
import sys
for line in open(sys.argv[1]):
    n, answer = line.split(" ", 1)
    answer = answer.strip()
    assert answer == n or (answer.startswith("error:") and sys.argv[2] in answer), line
EOF
    grep -q "^5 error: .*$table" "$C/dmg.out" || { cat "$C/dmg.out"; die "$op: line 5 not refused"; }
    must_fail 1 shardcat "$C/dmg" --out "$C/cat-dmg-$op" "$(sed -n 6p "$T/one/index.jsonl" | cut -d'"' -f4)"
    must_say "$table" "$T/err"
}
case_a_damaged_key_table_flip_hash_is_an_error_naming_it_never_another_sample() { damaged_table flip-hash; }
case_a_damaged_key_table_far_line_is_an_error_naming_it_never_another_sample() { damaged_table far-line; }
case_a_damaged_key_table_magic_is_an_error_naming_it_never_another_sample() { damaged_table magic; }
case_a_damaged_key_table_short_is_an_error_naming_it_never_another_sample() { damaged_table short; }

# ---- over HTTP ------------------------------------------------------------------------
# the datasets served by nginx (the HTTP case)
HTTP=$T/http
U=""
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    on_exit '"$HTTP_SERVER" stop "$HTTP" >/dev/null 2>&1'
    U=$("$HTTP_SERVER" start "$HTTP" one="$T/one" three="$T/three" bare="$T/bare") ||
        die "cannot start nginx"
else
    echo "SKIP: nginx is not installed (scripts/deps.sh installs it): HTTP part not run"
fi

case_over_http_every_key_found_in_o_log_n_range_requests_shardcat_by_key() {
    [ -n "$U" ] || return 0
    shardkit_python "$T/keys.py" "$T/one" "$U/three" "$U/bare" >"$C/keys.out"
    [ "$(grep -c ' ok ' "$C/keys.out")" = 2 ] || { cat "$C/keys.out"; die "a remote layout failed"; }
    cat_keys "$U/three" "$C/cat-http"
    must_say "wrote 3 samples" "$T/err"
    cat_keys "$T/one" "$C/cat-one"
    same_tree "$C/cat-one" "$C/cat-http"
    before=$(wc -l <"$HTTP/access.log")
    shardkit_python - "$U/three" "$k2" <<'EOF'
import sys, shardkit
ds = shardkit.Dataset(sys.argv[1])
print(ds.index_of(sys.argv[2]))
EOF
    keys_requests=$(tail -n +$((before + 1)) "$HTTP/access.log" | grep -c '\.keys')
    entries=$(json "$T/three/manifest.json" "max(x['entries'] for x in d['indexes'])")
    # a binary search: at most log2(entries) + 2 reads of each of the three tables
    bound=$("$PYTHON" -c "import math; print(3 * (math.ceil(math.log2($entries)) + 3))")
    [ "$keys_requests" -le "$bound" ] || die "$keys_requests key table requests for one key (bound $bound)"
}

run_cases
