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
# (--work-dir $C/NAME-a), through a recorder that holds the first request
# holding PATTERN, killed once it is held
killed_on_a() {
    E=$(recorder "$1" --hold "$2")
    AWS_ENDPOINT_URL=$E shardify "$T/big" "$B/$1/ds" $RAW --work-dir "$C/$1-a" --quiet \
        >"$C/$1.out" 2>&1 &
    run_pid=$!
    held=$run_pid
    i=0
    while [ ! -e "$T/$1.wire.held" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || { cat "$C/$1.out" >&2; die "no request was held"; }
        sleep 0.05
    done
    kill -KILL $run_pid
    wait $run_pid 2>/dev/null || true
    held=""
    touch "$T/$1.wire.release"
    [ -s "$C/$1-a/.shardify/upload" ] || die "machine A did not record its upload"
}

# the stores: moto, and s3rver when Node.js is there
start_store moto
if have_s3rver; then start_store s3rver; else echo "s3rver: not tried (Node.js and npm are not installed)"; fi
export SHARDKIT_S3_PART_SIZE=5M

case_moto_overwrite_aborts_the_uploads_of_shardifys_names_left_under_the_prefix_and_only_those() {
    use_store moto
    shardify "$T/small" "$B/ow/ds" --size 32 --quiet || die "the first run failed"
    for key in ow/ds/shard-000005.shard ow/ds/manifest.json ow/ds/index.jsonl ow/ds/notes.txt \
        ow/ds-sibling/shard-000000.shard ow/shard-000000.shard; do
        boto start-upload "$S3_BUCKET" "$key" >/dev/null
    done
    [ "$(uploads ow | wc -l)" -eq 6 ] || die "boto3 does not list the 6 uploads it started"
    shardify "$T/small" "$B/ow/ds" --size 32 --overwrite --quiet 2>"$C/ow.err" ||
        { cat "$C/ow.err" >&2; die "--overwrite failed"; }
    printf 'ow/ds-sibling/shard-000000.shard\now/ds/notes.txt\now/shard-000000.shard\n' >"$C/ow.want"
    uploads ow >"$C/ow.left"
    cmp -s "$C/ow.want" "$C/ow.left" ||
        { diff "$C/ow.want" "$C/ow.left" >&2; die "--overwrite aborted the wrong uploads"; }
    [ ! -s "$C/ow.err" ] || { cat "$C/ow.err" >&2; die "a warning where nothing went wrong"; }
}

case_moto_a_run_killed_mid_upload_on_machine_a_after_a_finished_shard_is_resumed_on_machine_b() {
    use_store moto
    killed_on_a resumed "shard-000001.shard?partNumber=2"
    [ "$(uploads resumed/ds)" = resumed/ds/shard-000001.shard ] || die "A left no upload under way"
    [ "$(boto keys "$S3_BUCKET" resumed/ds)" = '["shard-000000.shard"]' ] ||
        die "A should have finished shard 0 only"
    must_fail 1 shardify "$T/big" "$B/resumed/ds" $RAW --work-dir "$C/resumed-b" --quiet
    must_say "interrupted shardify run; pass --resume" "$T/err"
    shardify "$T/big" "$B/resumed/ds" $RAW --work-dir "$C/resumed-b" --resume --quiet ||
        die "--resume on machine B failed"
    [ -z "$(uploads resumed/ds)" ] || die "machine A's upload was not aborted: $(uploads resumed/ds)"
    boto get-tree "$S3_BUCKET" resumed/ds "$C/resumed-back"
    same_tree "$T/local-big" "$C/resumed-back"
}

case_moto_a_run_killed_mid_upload_on_machine_a_before_any_shard_is_cleaned_up_by_a_plain_run_on_b() {
    use_store moto
    killed_on_a fresh "shard-000000.shard?partNumber=2"
    [ "$(uploads fresh/ds)" = fresh/ds/shard-000000.shard ] || die "A left no upload under way"
    [ "$(boto keys "$S3_BUCKET" fresh/ds)" = '[]' ] || die "A should have finished no shard"
    shardify "$T/big" "$B/fresh/ds" $RAW --work-dir "$C/fresh-b" --quiet || die "machine B failed"
    [ -z "$(uploads fresh/ds)" ] || die "machine A's upload was not aborted: $(uploads fresh/ds)"
    boto get-tree "$S3_BUCKET" fresh/ds "$C/fresh-back"
    same_tree "$T/local-big" "$C/fresh-back"
}

case_s3rver_without_list_multipart_uploads_the_run_goes_on_and_says_so() {
    no_s3rver && return 0
    use_store s3rver
    shardify "$T/small" "$B/ow/ds" --size 32 --quiet 2>"$C/s3rver.err" ||
        { cat "$C/s3rver.err" >&2; die "s3rver: the first run failed"; }
    must_say "warning: cannot list the multipart uploads under 's3://$S3_BUCKET/ow/ds': HTTP 501 Not Implemented" \
        "$C/s3rver.err"
    must_say "multipart uploads other runs left there are not aborted" "$C/s3rver.err"
    shardify "$T/small" "$B/ow/ds" --size 40 --overwrite --quiet 2>"$C/s3rver.err" ||
        { cat "$C/s3rver.err" >&2; die "s3rver: --overwrite failed"; }
    must_say "multipart uploads other runs left there are not aborted" "$C/s3rver.err"
    boto get-tree "$S3_BUCKET" ow/ds "$C/s3rver-back"
    [ "$(json "$C/s3rver-back/manifest.json" "d['config']['size']")" = 40 ] ||
        die "s3rver: the dataset was not replaced"
}

run_cases
