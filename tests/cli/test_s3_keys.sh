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

stores="moto"
if have_s3rver; then stores="moto s3rver"; else echo "s3rver: not tried (Node.js and npm are not installed)"; fi
for kind in $stores; do
    start_store "$kind"
    export AWS_ENDPOINT_URL=$ENDPOINT
    case $kind in
    moto) src=$T/src local=$T/local count=$(cat "$T/count.all") ;;
    s3rver) src=$T/src-xml local=$T/local-xml count=$(cat "$T/count.xml") ;;
    esac
    boto put-tree "$S3_BUCKET" src "$src" || die "$kind: boto3 could not upload the source"
    [ "$(boto keys "$S3_BUCKET" src | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = "$count" ] ||
        die "$kind: boto3 does not list the $count objects it put"

    say "$kind: an s3:// source with hostile keys converts every file, like the directory"
    shardify "$B/src" "$T/$kind-out" $OPTS --json >"$T/$kind.json" 2>"$T/$kind.err" ||
        { cat "$T/$kind.err" >&2; die "$kind: shardify from s3:// failed"; }
    [ "$(json "$T/$kind.json" "(d['samples'], d['rejected'])")" = "($count, 0)" ] ||
        { cat "$T/$kind.err" >&2; die "$kind: not every object became a sample"; }
    same_tree "$local" "$T/$kind-out"

    say "$kind: the same dataset into a DST prefix that needs encoding, read back by boto3"
    shardify "$B/src" "$B/$DST_PREFIX" $OPTS --quiet || die "$kind: shardify s3:// to s3:// failed"
    boto get-tree "$S3_BUCKET" "$DST_PREFIX" "$T/$kind-back"
    same_tree "$local" "$T/$kind-back"
    [ "$(json "$T/$kind-back/manifest.json" "len(d['shards'])")" -ge 3 ] ||
        die "too few shards to prove anything"

    say "$kind: shardcheck --source s3://... verifies it, and fails when the source changed"
    shardcheck --source "$B/src" "$B/$DST_PREFIX" >"$T/check.out" 2>&1 ||
        { cat "$T/check.out" >&2; die "$kind: shardcheck --source s3:// failed"; }
    must_say "$count samples" "$T/check.out"
    changed="plus+sign.jpg" gone=$(printf 'caf\303\251.jpg')
    boto put "$S3_BUCKET" "src/$changed" "$src/a+b c.jpg"
    boto delete "$S3_BUCKET" "src/$gone"
    must_fail 1 shardcheck --source "$B/src" "$B/$DST_PREFIX"
    must_say "$changed" "$T/stdout"
    must_say "$gone" "$T/stdout"
    boto put "$S3_BUCKET" "src/$changed" "$src/$changed"
    boto put "$S3_BUCKET" "src/$gone" "$src/$gone"
    shardcheck --source "$B/src" "$B/$DST_PREFIX" >"$T/check.out" 2>&1 ||
        { cat "$T/check.out" >&2; die "$kind: the restored source does not verify"; }

    say "$kind: the encoded DST prefix is guarded: --overwrite needed, and it leaves no old shard"
    boto keys "$S3_BUCKET" "$DST_PREFIX" >"$T/keys.before"
    must_fail 1 shardify "$B/src" "$B/$DST_PREFIX" $OPTS --quiet
    must_say "holds a previous shardify output; pass --overwrite" "$T/err"
    boto keys "$S3_BUCKET" "$DST_PREFIX" >"$T/keys.after"
    cmp -s "$T/keys.before" "$T/keys.after" || die "$kind: a refused run changed the DST"
    shardify "$T/src-xml" "$B/$DST_PREFIX" --size 32 --shard-size 64K --overwrite --quiet ||
        die "$kind: --overwrite failed"
    rm -rf "$T/$kind-back"
    boto get-tree "$S3_BUCKET" "$DST_PREFIX" "$T/$kind-back"
    same_tree "$T/local-xml-big" "$T/$kind-back"

    if [ "$kind" = s3rver ]; then
        say "s3rver: a key with control bytes cannot be listed there: an error, nothing published"
        boto put-tree "$S3_BUCKET" ctl "$T/ctl"
        must_fail 1 shardify "$B/ctl" "$B/ctl-out" $OPTS --quiet
        must_say "cannot list 's3://$S3_BUCKET/ctl': the answer is not the XML of a listing" "$T/err"
        [ "$(boto keys "$S3_BUCKET" ctl-out)" = "[]" ] || die "a failed run published"
    fi
    unset AWS_ENDPOINT_URL
done
echo "s3 key tests passed"
