#!/bin/sh
# test_s3_fields.sh - sidecar fields under an s3:// prefix, on moto's server
# (and s3rver when Node.js is there): the files that share an image's stem
# are found by the listing as in a directory, and the dataset is the one the
# same files in a directory give, byte for byte (shards and index), with
# the same orphans and the same rejects; an annotation table beside it too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

FT="$SHARDKIT_TOP/tests/fixtures/fields_tree.py"
"$PYTHON" "$FT" make "$T/g"
FIELDS=$("$PYTHON" "$FT" args | sed 's/^/--field /' | tr '\n' ' ')
OPTS="--size 16 --labels none --max-field-bytes 4096 --quiet"
# shellcheck disable=SC2086
shardify "$T/g/tree" "$T/local" $OPTS $FIELDS

# each store started, with the tree uploaded under src/
stores="moto"
if have_s3rver; then stores="moto s3rver"; fi
for kind in $stores; do
    start_store "$kind"
    boto put-tree "$S3_BUCKET" src "$T/g/tree" || die "$kind: boto3 could not upload the tree"
done

# sidecars_like_the_directory KIND: the tree under an s3:// prefix of KIND
# gives the directory's dataset
sidecars_like_the_directory() {
    kind=$1
    use_store "$kind"
    # shellcheck disable=SC2086
    shardify "s3://$S3_BUCKET/src" "$C/$kind" $OPTS $FIELDS
    for f in index.jsonl shard-000000.shard; do
        cmp -s "$T/local/$f" "$C/$kind/$f" || die "$kind: $f differs from the directory's"
    done
    "$PYTHON" - "$T/local/manifest.json" "$C/$kind/manifest.json" <<'EOF' || die "$kind: manifest"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("counts", "orphans", "rejected", "labels"):
    assert a[k] == b[k], (k, a[k], b[k])
EOF
    "$PYTHON" "$FT" check "$C/$kind" "$T/g" || die "$kind: the values read back"
}

case_moto_sidecars_under_an_s3_prefix_give_the_directorys_dataset_byte_for_byte() {
    sidecars_like_the_directory moto
}

case_s3rver_sidecars_under_an_s3_prefix_give_the_directorys_dataset_byte_for_byte() {
    on_s3rver sidecars_like_the_directory
}

run_cases
