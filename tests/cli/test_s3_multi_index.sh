#!/bin/sh
# test_s3_multi_index.sh - a dataset whose index is in three files, with key
# tables (tests/fixtures/split_index.py, from manifests/FORMAT.md), and one
# without tables, read under an s3:// prefix on moto's server (and s3rver
# when Node.js is there): Dataset.index_of finds every key at its index and
# no absent one (the tables read by range requests, the footers checked), a
# Loader epoch reads every sample, and shardcat DST KEY writes the samples
# the local dataset gives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

SPLIT="$SHARDKIT_TOP/tests/fixtures/split_index.py"
mkdir -p "$T/src"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 60 | while IFS= read -r f; do
    cp "$SAMPLE/$f" "$T/src/$f"
done
shardify "$T/src" "$T/one" --size 32 --shard-size 16K --labels none --quiet
cp -r "$T/one" "$T/three"
cp -r "$T/one" "$T/bare"
"$PYTHON" "$SPLIT" "$T/three" 3 >/dev/null
"$PYTHON" "$SPLIT" "$T/bare" 3 --no-keys >/dev/null
k1=$(sed -n 3p "$T/one/index.jsonl" | cut -d'"' -f4)
k2=$(sed -n 50p "$T/one/index.jsonl" | cut -d'"' -f4)
shardcat "$T/one" --out "$T/cat-one" "$k1" "$k2" 2>/dev/null

cat >"$T/keys.py" <<'EOF'
import json, sys
import shardkit
keys = [json.loads(l)["key"] for l in open(sys.argv[1] + "/index.jsonl")]
for location in sys.argv[2:]:
    ds = shardkit.Dataset(location)
    for i, k in enumerate(keys):
        assert ds.index_of(k) == i, (location, k, i)
    for absent in ("nope.jpg", keys[0] + "x"):
        try:
            ds.index_of(absent)
            raise AssertionError((location, absent))
        except KeyError:
            pass
    seen = sorted(i for b in shardkit.Loader(ds, 8, threads=2) for i in b.indices)
    assert seen == list(range(len(keys))), location
    print(location, "ok")
EOF

# each store started, with three and bare uploaded
stores="moto"
if have_s3rver; then stores="moto s3rver"; fi
for kind in $stores; do
    start_store "$kind"
    for d in three bare; do
        boto put-tree "$S3_BUCKET" "$d" "$T/$d" || die "$kind: boto3 could not upload $d"
    done
done

# every_key_found KIND: every key found under an s3:// prefix of KIND, with
# key tables and without
every_key_found() {
    kind=$1
    use_store "$kind"
    shardkit_python "$T/keys.py" "$T/one" "s3://$S3_BUCKET/three" "s3://$S3_BUCKET/bare" \
        >"$C/keys.out" || die "$kind: index_of"
    [ "$(grep -c ' ok$' "$C/keys.out")" = 2 ] || { cat "$C/keys.out"; die "$kind: a layout failed"; }
}

# shardcat_writes_the_local_samples KIND: shardcat s3://.../three KEY on KIND
# writes the local dataset's samples
shardcat_writes_the_local_samples() {
    kind=$1
    use_store "$kind"
    must_fail 1 shardcat "s3://$S3_BUCKET/three" --out "$C/cat-$kind" "$k1" no-such-key "$k2"
    must_say "no sample with key 'no-such-key' in 's3://$S3_BUCKET/three'" "$T/err"
    same_tree "$T/cat-one" "$C/cat-$kind"
}

case_moto_every_key_found_under_an_s3_prefix_with_key_tables_and_without() {
    every_key_found moto
}

case_moto_shardcat_of_the_three_index_files_writes_the_local_datasets_samples() {
    shardcat_writes_the_local_samples moto
}

case_s3rver_every_key_found_under_an_s3_prefix_with_key_tables_and_without() {
    on_s3rver every_key_found
}

case_s3rver_shardcat_of_the_three_index_files_writes_the_local_datasets_samples() {
    on_s3rver shardcat_writes_the_local_samples
}

run_cases
