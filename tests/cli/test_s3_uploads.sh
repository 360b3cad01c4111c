#!/bin/sh
# test_s3_uploads.sh - the multipart uploads a run leaves under an s3://
# DST prefix when it dies are aborted by the next run on that prefix, from
# whatever machine (ListMultipartUploads), not only by a run that finds the
# upload recorded in its own work directory.  On moto's server, with boto3
# listing the uploads under way:
#  - --overwrite aborts the uploads of shardify's names under the prefix,
#    and none other (another name, a sibling or a parent prefix);
#  - a run killed in the middle of a multipart upload on "machine A" (its
#    own --work-dir) is cleaned up by a run on "machine B" (another
#    --work-dir): by --resume once A had finished a shard, by a plain run
#    when A had finished none (the prefix looks empty); the dataset is the
#    one a local run writes.
# s3rver does not implement ListMultipartUploads: there the run goes on and
# says that it could not look.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

B="s3://$S3_BUCKET"
# raw shards of noise: two shards of more than two 5 MiB parts each
RAW="--size 256 --codec raw --zstd-level -100 --shard-size 12M --no-shuffle"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_sources.py" noise "$T/big" 130 >/dev/null
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_sources.py" keys "$T/small" --xml-safe >/dev/null
shardify "$T/big" "$T/local-big" $RAW --quiet
for s in 0 1; do
    [ "$(stat -c %s "$T/local-big/shard-00000$s.shard")" -gt $((10 << 20)) ] ||
        die "shard $s is too small for a multipart upload in 5 MiB parts"
done

# uploads PREFIX: the keys of the uploads under way below PREFIX/, one a line
uploads() {
    boto uploads "$S3_BUCKET" "$1" | "$PYTHON" -c '
import json, sys
for key, _ in json.load(sys.stdin):
    print(key)'
}

# killed_on_a NAME PATTERN: `shardify $T/big $B/NAME/ds $RAW` on machine A
# (--work-dir $T/NAME-a), through a recorder that holds the first request
# holding PATTERN, killed once it is held
killed_on_a() {
    E=$(recorder "$1" --hold "$2")
    AWS_ENDPOINT_URL=$E shardify "$T/big" "$B/$1/ds" $RAW --work-dir "$T/$1-a" --quiet \
        >"$T/$1.out" 2>&1 &
    run_pid=$!
    held=$run_pid
    i=0
    while [ ! -e "$T/$1.wire.held" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || { cat "$T/$1.out" >&2; die "no request was held"; }
        sleep 0.05
    done
    kill -KILL $run_pid
    wait $run_pid 2>/dev/null || true
    held=""
    touch "$T/$1.wire.release"
    [ -s "$T/$1-a/.shardify/upload" ] || die "machine A did not record its upload"
}

start_store moto
export AWS_ENDPOINT_URL=$ENDPOINT SHARDKIT_S3_PART_SIZE=5M

say "moto: --overwrite aborts the uploads of shardify's names left under the prefix, and only those"
shardify "$T/small" "$B/ow/ds" --size 32 --quiet || die "the first run failed"
for key in ow/ds/shard-000005.shard ow/ds/manifest.json ow/ds/index.jsonl ow/ds/notes.txt \
    ow/ds-sibling/shard-000000.shard ow/shard-000000.shard; do
    boto start-upload "$S3_BUCKET" "$key" >/dev/null
done
[ "$(uploads ow | wc -l)" -eq 6 ] || die "boto3 does not list the 6 uploads it started"
shardify "$T/small" "$B/ow/ds" --size 32 --overwrite --quiet 2>"$T/ow.err" ||
    { cat "$T/ow.err" >&2; die "--overwrite failed"; }
printf 'ow/ds-sibling/shard-000000.shard\now/ds/notes.txt\now/shard-000000.shard\n' >"$T/ow.want"
uploads ow >"$T/ow.left"
cmp -s "$T/ow.want" "$T/ow.left" ||
    { diff "$T/ow.want" "$T/ow.left" >&2; die "--overwrite aborted the wrong uploads"; }
[ ! -s "$T/ow.err" ] || { cat "$T/ow.err" >&2; die "a warning where nothing went wrong"; }

say "moto: a run killed mid-upload on machine A after a finished shard; --resume on machine B"
killed_on_a resumed "shard-000001.shard?partNumber=2"
[ "$(uploads resumed/ds)" = resumed/ds/shard-000001.shard ] || die "A left no upload under way"
[ "$(boto keys "$S3_BUCKET" resumed/ds)" = '["shard-000000.shard"]' ] ||
    die "A should have finished shard 0 only"
must_fail 1 shardify "$T/big" "$B/resumed/ds" $RAW --work-dir "$T/resumed-b" --quiet
must_say "interrupted shardify run; pass --resume" "$T/err"
shardify "$T/big" "$B/resumed/ds" $RAW --work-dir "$T/resumed-b" --resume --quiet ||
    die "--resume on machine B failed"
[ -z "$(uploads resumed/ds)" ] || die "machine A's upload was not aborted: $(uploads resumed/ds)"
boto get-tree "$S3_BUCKET" resumed/ds "$T/resumed-back"
same_tree "$T/local-big" "$T/resumed-back"

say "moto: a run killed mid-upload on machine A before any shard; a plain run on machine B"
killed_on_a fresh "shard-000000.shard?partNumber=2"
[ "$(uploads fresh/ds)" = fresh/ds/shard-000000.shard ] || die "A left no upload under way"
[ "$(boto keys "$S3_BUCKET" fresh/ds)" = '[]' ] || die "A should have finished no shard"
shardify "$T/big" "$B/fresh/ds" $RAW --work-dir "$T/fresh-b" --quiet || die "machine B failed"
[ -z "$(uploads fresh/ds)" ] || die "machine A's upload was not aborted: $(uploads fresh/ds)"
boto get-tree "$S3_BUCKET" fresh/ds "$T/fresh-back"
same_tree "$T/local-big" "$T/fresh-back"

if have_s3rver; then
    say "s3rver: no ListMultipartUploads: the run goes on and says so"
    start_store s3rver
    export AWS_ENDPOINT_URL=$ENDPOINT
    shardify "$T/small" "$B/ow/ds" --size 32 --quiet 2>"$T/s3rver.err" ||
        { cat "$T/s3rver.err" >&2; die "s3rver: the first run failed"; }
    must_say "warning: cannot list the multipart uploads under 's3://$S3_BUCKET/ow/ds': HTTP 501 Not Implemented" "$T/s3rver.err"
    must_say "multipart uploads other runs left there are not aborted" "$T/s3rver.err"
    shardify "$T/small" "$B/ow/ds" --size 40 --overwrite --quiet 2>"$T/s3rver.err" ||
        { cat "$T/s3rver.err" >&2; die "s3rver: --overwrite failed"; }
    must_say "multipart uploads other runs left there are not aborted" "$T/s3rver.err"
    boto get-tree "$S3_BUCKET" ow/ds "$T/s3rver-back"
    [ "$(json "$T/s3rver-back/manifest.json" "d['config']['size']")" = 40 ] ||
        die "s3rver: the dataset was not replaced"
else
    echo "s3rver: not tried (Node.js and npm are not installed)"
fi
echo "s3 upload tests passed"
