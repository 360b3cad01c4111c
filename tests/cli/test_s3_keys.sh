#!/bin/sh
# test_s3_keys.sh - keys that need encoding, on two S3 implementations:
# moto's server, which (like AWS and MinIO) answers a listing asked with
# encoding-type=url with percent-encoded keys and puts <EncodingType> after
# them, and s3rver, which ignores the parameter.  Sources are generated
# (tests/fixtures/s3_sources.py) and uploaded with boto3, whose reading of
# the store checks what shardify wrote.  On both:
#  - an s3:// source whose keys hold spaces, '+', '=', '%', '?', '#', NFC
#    and NFD forms, emoji and control bytes converts every file, to the same
#    dataset as the same files in a directory (no 'file vanished' reject);
#  - to a DST prefix that needs encoding too, and boto3 reads back that
#    dataset;
#  - shardcheck --source s3://... verifies it, and fails, naming the key,
#    when an object changed or went away;
#  - the DST prefix is guarded: no replacement without --overwrite, and
#    --overwrite leaves none of the old dataset's extra shards.
# s3rver writes keys into its listings unencoded, so it cannot list a key
# with a byte XML 1.0 cannot carry (control bytes): there, the run fails
# saying that the answer is no listing, and publishes nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

OPTS="--size 32 --shard-size 4K"
B="s3://$S3_BUCKET"
DST_PREFIX="dst a+b=c%41 $(printf '\342\230\203')?#/ds"      # space + = %41 a snowman ? #

# the sources: every hostile name, and those an XML 1.0 listing can carry
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_sources.py" keys "$T/src" >"$T/count.all"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_sources.py" keys "$T/src-xml" --xml-safe >"$T/count.xml"
"$PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_sources.py" keys "$T/ctl" --not-xml >/dev/null
shardify "$T/src" "$T/local" $OPTS --quiet
shardify "$T/src-xml" "$T/local-xml" $OPTS --quiet
shardify "$T/src-xml" "$T/local-xml-big" --size 32 --shard-size 64K --quiet

# of_kind KIND: the source KIND is given ($src), its directory's dataset
# ($local) and its number of files ($count): every hostile name on moto, those
# an XML 1.0 listing can carry on s3rver
of_kind() {
    case $1 in
    moto) src=$T/src local=$T/local count=$(cat "$T/count.all") ;;
    s3rver) src=$T/src-xml local=$T/local-xml count=$(cat "$T/count.xml") ;;
    esac
}

# each store started, its source uploaded under src/ and converted from there
# into the DST prefix that needs encoding (which the cases read, and none
# changes)
stores="moto"
if have_s3rver; then stores="moto s3rver"; else echo "s3rver: not tried (Node.js and npm are not installed)"; fi
for kind in $stores; do
    start_store "$kind"
    export AWS_ENDPOINT_URL=$ENDPOINT
    of_kind "$kind"
    boto put-tree "$S3_BUCKET" src "$src" || die "$kind: boto3 could not upload the source"
    [ "$(boto keys "$S3_BUCKET" src | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = "$count" ] ||
        die "$kind: boto3 does not list the $count objects it put"
    shardify "$B/src" "$B/$DST_PREFIX" $OPTS --quiet || die "$kind: shardify s3:// to s3:// failed"
    unset AWS_ENDPOINT_URL
done

# converts_like_the_directory KIND: an s3:// source with hostile keys
# converts every file, like the directory
converts_like_the_directory() {
    kind=$1
    use_store "$kind"
    of_kind "$kind"
    shardify "$B/src" "$C/out" $OPTS --json >"$C/out.json" 2>"$C/out.err" ||
        { cat "$C/out.err" >&2; die "$kind: shardify from s3:// failed"; }
    [ "$(json "$C/out.json" "(d['samples'], d['rejected'])")" = "($count, 0)" ] ||
        { cat "$C/out.err" >&2; die "$kind: not every object became a sample"; }
    same_tree "$local" "$C/out"
}

# read_back_by_boto3 KIND: the same dataset in the DST prefix that needs
# encoding (the set-up's), read back by boto3
read_back_by_boto3() {
    kind=$1
    use_store "$kind"
    of_kind "$kind"
    boto get-tree "$S3_BUCKET" "$DST_PREFIX" "$C/back"
    same_tree "$local" "$C/back"
    [ "$(json "$C/back/manifest.json" "len(d['shards'])")" -ge 3 ] ||
        die "too few shards to prove anything"
}

# shardcheck_source KIND: shardcheck --source s3://... verifies the set-up's
# DST, and fails when the source changed (the case's own copy of the source,
# under check-src/, is the one changed)
shardcheck_source() {
    kind=$1
    use_store "$kind"
    of_kind "$kind"
    boto put-tree "$S3_BUCKET" check-src "$src" || die "$kind: boto3 could not upload the source"
    shardcheck --source "$B/check-src" "$B/$DST_PREFIX" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "$kind: shardcheck --source s3:// failed"; }
    must_say "$count samples" "$C/check.out"
    changed="plus+sign.jpg" gone=$(printf 'caf\303\251.jpg')
    boto put "$S3_BUCKET" "check-src/$changed" "$src/a+b c.jpg"
    boto delete "$S3_BUCKET" "check-src/$gone"
    must_fail 1 shardcheck --source "$B/check-src" "$B/$DST_PREFIX"
    must_say "$changed" "$T/stdout"
    must_say "$gone" "$T/stdout"
    boto put "$S3_BUCKET" "check-src/$changed" "$src/$changed"
    boto put "$S3_BUCKET" "check-src/$gone" "$src/$gone"
    shardcheck --source "$B/check-src" "$B/$DST_PREFIX" >"$C/check.out" 2>&1 ||
        { cat "$C/check.out" >&2; die "$kind: the restored source does not verify"; }
}

# dst_is_guarded KIND: a DST prefix that needs encoding (the case's own,
# "guarded $DST_PREFIX", which it first converts the source into) is guarded:
# --overwrite needed, and it leaves no old shard
dst_is_guarded() {
    kind=$1
    use_store "$kind"
    of_kind "$kind"
    G="guarded $DST_PREFIX"
    shardify "$B/src" "$B/$G" $OPTS --quiet || die "$kind: shardify s3:// to s3:// failed"
    boto keys "$S3_BUCKET" "$G" >"$C/keys.before"
    must_fail 1 shardify "$B/src" "$B/$G" $OPTS --quiet
    must_say "holds a previous shardify output; pass --overwrite" "$T/err"
    boto keys "$S3_BUCKET" "$G" >"$C/keys.after"
    cmp -s "$C/keys.before" "$C/keys.after" || die "$kind: a refused run changed the DST"
    shardify "$T/src-xml" "$B/$G" --size 32 --shard-size 64K --overwrite --quiet ||
        die "$kind: --overwrite failed"
    boto get-tree "$S3_BUCKET" "$G" "$C/back"
    same_tree "$T/local-xml-big" "$C/back"
}

case_moto_an_s3_source_with_hostile_keys_converts_every_file_like_the_directory() {
    converts_like_the_directory moto
}

case_moto_the_same_dataset_in_a_dst_prefix_that_needs_encoding_is_read_back_by_boto3() {
    read_back_by_boto3 moto
}

case_moto_shardcheck_source_s3_verifies_it_and_fails_naming_the_keys_when_the_source_changed() {
    shardcheck_source moto
}

case_moto_the_encoded_dst_prefix_is_guarded_overwrite_needed_and_it_leaves_no_old_shard() {
    dst_is_guarded moto
}

case_s3rver_an_s3_source_with_hostile_keys_converts_every_file_like_the_directory() {
    on_s3rver converts_like_the_directory
}

case_s3rver_the_same_dataset_in_a_dst_prefix_that_needs_encoding_is_read_back_by_boto3() {
    on_s3rver read_back_by_boto3
}

case_s3rver_shardcheck_source_s3_verifies_it_and_fails_naming_the_keys_when_the_source_changed() {
    on_s3rver shardcheck_source
}

case_s3rver_the_encoded_dst_prefix_is_guarded_overwrite_needed_and_it_leaves_no_old_shard() {
    on_s3rver dst_is_guarded
}

case_s3rver_a_key_with_control_bytes_cannot_be_listed_there_an_error_and_nothing_published() {
    no_s3rver && return 0
    use_store s3rver
    boto put-tree "$S3_BUCKET" ctl "$T/ctl"
    must_fail 1 shardify "$B/ctl" "$B/ctl-out" $OPTS --quiet
    must_say "cannot list 's3://$S3_BUCKET/ctl': the answer is not the XML of a listing" "$T/err"
    [ "$(boto keys "$S3_BUCKET" ctl-out)" = "[]" ] || die "a failed run published"
}

run_cases
