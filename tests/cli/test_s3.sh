#!/bin/sh
# test_s3.sh - datasets on an S3-compatible store: a real S3 implementation
# (s3rver, installed with npm by bench/s3_server.sh) on loopback, behind a
# proxy that records every byte the tools send (tests/fixtures/tcp_recorder.py).
# Round trip: shardify to s3://, shardcheck --deep, shardcat and shardbench
# from s3:// give what the same run written locally gives; an s3:// source of
# more than 1000 objects (listing pages) converts like the same files in a
# directory; requests are signed (SigV4) and no secret shows anywhere; a
# multipart upload survives the server killed and restarted under it; a run
# killed in the middle of an upload publishes no manifest and --resume
# finishes it (aborting the dead upload); a missing bucket, a wrong endpoint
# and a shard deleted behind the manifest's back are errors naming them;
# no credentials is an error, and requests go unsigned only when asked.
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    skip "Node.js and npm are not installed (scripts/deps.sh installs them)"

TOP=$SHARDKIT_TOP
S3_SERVER="$TOP/bench/s3_server.sh"
RECORDER="$TOP/tests/fixtures/tcp_recorder.py"
SRV=$T/s3
BUCKET=shardkit-test
cleanup() {
    for p in $(cat "$T/recorders" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    "$S3_SERVER" stop "$SRV" >/dev/null 2>&1 || true
}
on_exit cleanup

say "s3rver on loopback, with a bucket"
ENDPOINT=$("$S3_SERVER" start "$SRV" "$BUCKET") || die "s3rver did not start"

# recorder NAME [--hold PATTERN]: a recording proxy in front of s3rver;
# prints its endpoint.  Its log is $T/NAME.wire; its pid goes to $T/recorders
# (this runs in a command substitution: a variable would not come back).
recorder() {
    name=$1; shift
    rm -f "$T/$name.port"
    "$PYTHON" "$RECORDER" "$(cat "$SRV/port")" "$T/$name.wire" "$T/$name.port" "$@" \
        >"$T/$name.log" 2>&1 </dev/null &
    echo $! >>"$T/recorders"
    i=0
    while [ ! -s "$T/$name.port" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || die "the recorder did not start"
        sleep 0.05
    done
    echo "http://127.0.0.1:$(cat "$T/$name.port")"
}

# The settings, as the AWS CLI would find them; nothing from this machine's
# own ~/.aws.  s3rver knows the access key S3RVER and checks no signature.
SECRET="secret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
TOKEN="token-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
mkdir -p "$T/home"
export HOME="$T/home" XDG_CACHE_HOME="$T/cache"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE \
    AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION SHARDKIT_S3_PART_SIZE 2>/dev/null || true
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY="$SECRET" AWS_SESSION_TOKEN="$TOKEN"
export AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=$(recorder main)
B="s3://$BUCKET"

# The test's own look at the store goes straight to s3rver, unsigned.
H="x-amz-content-sha256: UNSIGNED-PAYLOAD"
get() { curl -sS -f -H "$H" "$ENDPOINT/$BUCKET/$1" -o "$2"; }
status_of() { curl -s -o /dev/null -w '%{http_code}' -H "$H" "$ENDPOINT/$BUCKET/$1"; }
delete() { curl -sS -f -X DELETE -H "$H" "$ENDPOINT/$BUCKET/$1" -o /dev/null; }
# put_dir DIR PREFIX: upload every file of DIR (flat) under PREFIX/ (in a
# case: its curl config is $C/put.cfg)
put_dir() {
    (cd "$1" && ls) | awk -v d="$1" -v u="$ENDPOINT/$BUCKET/$2" -v h="$H" '
        NR > 1 { print "next" }
        { printf "url = \"%s/%s\"\nupload-file = \"%s/%s\"\nheader = \"%s\"\noutput = /dev/null\n",
                 u, $0, d, $0, h }' >"$C/put.cfg"
    curl -sS -f --no-progress-meter --parallel --parallel-max 8 -K "$C/put.cfg" || die "cannot upload '$1'"
}
# same_as_local DIR PREFIX: every dataset file of DIR (not run.json) is an
# object under PREFIX with the same bytes (in a case: each fetched to $C/object)
same_as_local() {
    for f in $(cd "$1" && ls | grep -v '^run.json$'); do
        get "$2/$f" "$C/object" || die "'$2/$f' is not in the store"
        cmp -s "$C/object" "$1/$f" || die "'$2/$f' differs from '$1/$f'"
    done
}

SRC=$T/src
mkdir -p "$SRC"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 60 | while read -r f; do
    cp "$SAMPLE/$f" "$SRC/"
done
OPTS="--size 48 --shard-size 32K"

# no_secret FILE_OR_DIR...: (in a case) the secret key is in none of them
# (a directory: in no file below it), the session token in none but the
# requests (*.wire, which carry it)
no_secret() {
    for f in "$@"; do
        [ -e "$f" ] || continue
        hit=$(grep -rlaF -- "$SECRET" "$f" | head -n 1)
        [ -z "$hit" ] || die "the secret key is in '$hit'"
        case $f in *.wire) continue ;; esac
        hit=$(grep -rlaF -- "$TOKEN" "$f" | head -n 1)
        [ -z "$hit" ] || die "the session token is in '$hit'"
    done
}

# the round trip's dataset, which most cases read: the same run written locally
# and to s3://.../ds (through the recorder main)
shardify "$SRC" "$T/local" $OPTS --json >"$T/local.json" 2>"$T/local.err"
shardify "$SRC" "$B/ds" $OPTS --json >"$T/remote.json" 2>"$T/remote.err" ||
    { cat "$T/remote.err" >&2; die "shardify to s3:// failed"; }

# the uploads' source: raw shards of more than two 5 MiB parts
RAW="--size 128 --codec raw --zstd-level -100 --shard-size 12M --no-shuffle"
BIG=$T/big
mkdir -p "$BIG"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 200 | while read -r f; do
    cp "$SAMPLE/$f" "$BIG/"
done
shardify "$BIG" "$T/local-big" $RAW --quiet
[ "$(stat -c %s "$T/local-big/shard-000000.shard")" -gt $((10 << 20)) ] ||
    die "shard 0 is too small for a multipart upload in 5 MiB parts"

# held_upload NAME: start `shardify $BIG $B/NAME $RAW` in the background
# through a recorder NAME that holds the upload of part 2 of shard 0 (its
# output in $C/NAME.out); return once it is held, with the run's pid in
# $run_pid (release the request with `touch $T/NAME.wire.release`).
held_upload() {
    E=$(recorder "$1" --hold "partNumber=2")
    AWS_ENDPOINT_URL=$E shardify "$BIG" "$B/$1" $RAW --quiet >"$C/$1.out" 2>&1 &
    run_pid=$!
    held=$run_pid
    i=0
    while [ ! -e "$T/$1.wire.held" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || die "no request was held"
        sleep 0.05
    done
}

# ---- round trip -------------------------------------------------------------------
case_shardify_to_s3_publishes_what_a_local_run_writes_byte_for_byte() {
    [ "$(json "$T/remote.json" "d['shards']")" -ge 3 ] || die "too few shards to prove anything"
    same_as_local "$T/local" ds
    [ "$(status_of ds/run.json)" = 200 ] || die "run.json was not uploaded"
    [ ! -e "$T/cache/shardkit" ] || die "the work directory was left behind: $(find "$T/cache")"
}

case_shardcheck_deep_verifies_the_dataset_in_the_store() {
    shardcheck --deep "$B/ds" --json >"$C/check.json" 2>"$C/check.err" ||
        { cat "$C/check.err" >&2; die "shardcheck --deep of s3:// failed"; }
    [ "$(json "$C/check.json" "d['verified']")" = True ] || die "not verified"
    no_secret "$C"
}

case_shardcat_and_shardbench_read_the_same_samples_from_the_store() {
    shardcat "$B/ds" --limit 12 --out "$C/cat-remote" >"$C/cat.out" 2>&1
    shardcat "$T/local" --limit 12 --out "$C/cat-local" >/dev/null 2>&1
    diff -r "$C/cat-local" "$C/cat-remote" >/dev/null || die "shardcat's PNGs differ"
    shardbench shards "$B/ds" --epochs 2 --digests "$C/remote.digests" --trace "$C/trace.json" \
        --json >"$C/bench.json" 2>"$C/bench.err" || { cat "$C/bench.err" >&2; die "shardbench failed"; }
    shardbench shards "$T/local" --epochs 2 --digests "$C/local.digests" >/dev/null 2>&1
    cmp -s "$C/local.digests" "$C/remote.digests" || die "the pixels read from s3:// differ"
    [ "$(json "$C/bench.json" "d['first_epoch']['requests'] > 0")" = True ] ||
        die "no request counted"
    no_secret "$C"
}

case_the_python_dataset_and_loader_read_the_same_samples_from_the_store() {
    shardkit_python - "$B/ds" "$T/local" >"$C/py.out" 2>&1 <<'PY' || { cat "$C/py.out" >&2; die "Python over s3:// failed"; }
import sys
import numpy as np
import shardkit
remote, local = shardkit.Dataset(sys.argv[1]), shardkit.Dataset(sys.argv[2])
assert len(remote) == len(local) > 0, (len(remote), len(local))
assert remote.manifest == local.manifest
for i in range(len(local)):
    a, b = remote[i], local[i]
    assert a.key == b.key and a.label == b.label, (a.key, b.key)
    assert np.array_equal(a.image, b.image), a.key
seen = []
for batch in shardkit.Loader(remote, 8, seed=3, threads=2):
    seen += list(batch.keys)
assert sorted(seen) == sorted(local[i].key for i in range(len(local))), "loader epoch"
try:
    shardkit.Dataset(sys.argv[1] + "-missing")
except FileNotFoundError as e:
    assert "-missing" in str(e), e
else:
    raise AssertionError("a missing s3:// dataset opened")
print("ok", len(remote))
PY
    must_say "ok 60" "$C/py.out"
    no_secret "$C"
}

# (its own recorder, signed, sees a run that writes and the reads of its dataset)
case_the_requests_are_signed_with_sigv4_and_carry_the_s3_headers() {
    E=$(recorder signed)
    export AWS_ENDPOINT_URL=$E
    shardify "$SRC" "$B/signed" $OPTS --quiet || die "shardify to s3:// failed"
    shardcheck --deep "$B/signed" >/dev/null 2>&1 || die "shardcheck --deep of s3:// failed"
    shardcat "$B/signed" --limit 12 --out "$C/cat" >/dev/null 2>&1
    shardbench shards "$B/signed" --epochs 1 >/dev/null 2>&1 || die "shardbench failed"
    must_say "Authorization: AWS4-HMAC-SHA256 Credential=S3RVER/" "$T/signed.wire"
    grep -aq 'SignedHeaders=[a-z;-]*x-amz-content-sha256' "$T/signed.wire" ||
        die "x-amz-content-sha256 is not signed"
    must_say "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$T/signed.wire"
    must_say "x-amz-security-token: $TOKEN" "$T/signed.wire"
    must_say "Range: bytes=" "$T/signed.wire"
    no_secret "$C" "$T/signed.wire"
}

case_an_s3_source_converts_like_the_same_files_in_a_directory_and_shardcheck_source_reads_it() {
    put_dir "$SRC" src
    shardify "$B/src" "$B/from-s3" $OPTS --quiet || die "shardify from s3:// failed"
    same_as_local "$T/local" from-s3
    shardcheck --source "$B/src" "$B/from-s3" >"$C/source.out" 2>&1 ||
        { cat "$C/source.out" >&2; die "shardcheck --source s3:// failed"; }
    shardbench files "$B/src" --epochs 1 --size 48 --digests "$C/files-remote.digests" \
        >/dev/null 2>&1 || die "shardbench files of an s3:// source failed"
    shardbench files "$SRC" --epochs 1 --size 48 --digests "$C/files-local.digests" >/dev/null 2>&1
    cmp -s "$C/files-local.digests" "$C/files-remote.digests" || die "shardbench files differ"
    no_secret "$C"
}

# (its own recorder, many, sees the listing's pages)
case_more_than_1000_objects_are_listed_in_pages_and_give_the_directorys_dataset() {
    E=$(recorder many)
    export AWS_ENDPOINT_URL=$E
    put_dir "$SAMPLE" many
    shardify "$SAMPLE" "$C/local-many" --size 32 --quiet
    shardify "$B/many" "$B/many-out" --size 32 --json >"$C/many.json" 2>/dev/null ||
        die "shardify of 1000+ objects failed"
    [ "$(json "$C/many.json" "d['samples'] + d['ignored']")" -gt 1000 ] || die "too few objects"
    same_as_local "$C/local-many" many-out
    must_say "continuation-token=" "$T/many.wire"
    no_secret "$C" "$T/many.wire"
}

# ---- settings -----------------------------------------------------------------------
# (its own HOME, and its own recorder, profile, which the profile names)
case_credentials_region_and_endpoint_come_from_a_profile_in_the_aws_files() {
    E=$(recorder profile)
    export HOME="$C/home" AWS_ENDPOINT_URL=$E
    mkdir -p "$HOME/.aws"
    printf '[other]\naws_access_key_id = S3RVER\naws_secret_access_key = %s\n' "$SECRET" \
        >"$HOME/.aws/credentials"
    printf '[profile other]\nregion = eu-west-3\nservices = store\n[services store]\ns3 =\n  endpoint_url = %s\n' \
        "$AWS_ENDPOINT_URL" >"$HOME/.aws/config"
    ( unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_ENDPOINT_URL
      AWS_PROFILE=other shardcheck "$B/ds" >/dev/null 2>&1 ) || die "the profile was not used"
    must_say "/eu-west-3/s3/aws4_request" "$T/profile.wire"
    rm -rf "$HOME/.aws"
    no_secret "$C" "$T/profile.wire"
}

# (its own recorder, nocred, which sees no request before the unsigned one)
case_no_credentials_is_an_error_and_requests_go_unsigned_only_when_asked() {
    E=$(recorder nocred)
    export AWS_ENDPOINT_URL=$E
    ( unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
      must_fail 1 shardcheck "$B/ds"
      must_say "no AWS credentials for the profile 'default'" "$T/err"
      [ ! -s "$T/nocred.wire" ] || die "a request went out without credentials"
      SHARDKIT_S3_NO_SIGN_REQUEST=true shardcheck "$B/ds" >/dev/null 2>&1 ) ||
        die "an unsigned read failed"
    grep -aq '^Authorization:' "$T/nocred.wire" && die "an anonymous request was signed"
    must_say "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$T/nocred.wire"
    no_secret "$C" "$T/nocred.wire"
}

# ---- the destination's rules ---------------------------------------------------------
# (on its own previous dataset, replaced)
case_a_previous_dataset_needs_overwrite_which_replaces_it() {
    shardify "$SRC" "$B/replaced" $OPTS --quiet || die "shardify to s3:// failed"
    must_fail 1 shardify "$SRC" "$B/replaced" $OPTS --quiet
    must_say "holds a previous shardify output; pass --overwrite" "$T/err"
    shardify "$SRC" "$B/replaced" --size 40 --shard-size 32K --overwrite --quiet || die "--overwrite failed"
    get replaced/manifest.json "$C/m.json"
    [ "$(json "$C/m.json" "d['config']['size']")" = 40 ] || die "the dataset was not replaced"
    shardcheck "$B/replaced" >/dev/null 2>&1 || die "the replaced dataset does not verify"
    no_secret "$C"
}

case_a_prefix_holding_something_else_is_refused() {
    printf 'x' >"$C/note.txt"
    curl -sS -f -X PUT -H "$H" --upload-file "$C/note.txt" "$ENDPOINT/$BUCKET/other/note.txt" \
        -o /dev/null
    must_fail 1 shardify "$SRC" "$B/other" $OPTS --quiet
    must_say "holds 'note.txt', which shardify did not write" "$T/err"
    [ "$(status_of other/manifest.json)" = 404 ] || die "a refused run published"
}

# ---- failures -------------------------------------------------------------------------
case_a_missing_bucket_is_an_error_naming_it() {
    must_fail 1 shardbench shards s3://no-such-bucket-here/ds --epochs 1
    must_say "'s3://no-such-bucket-here/ds/manifest.json'" "$T/err"
    must_say "NoSuchBucket" "$T/err"
    must_fail 1 shardify "$SRC" s3://no-such-bucket-here/ds $OPTS --quiet
    must_say "NoSuchBucket" "$T/err"
}

case_a_wrong_endpoint_is_an_error_naming_the_object_and_the_endpoint_after_retries() {
    AWS_ENDPOINT_URL=http://127.0.0.1:9 must_fail 1 shardcheck "$B/ds"
    must_say "'s3://$BUCKET/ds/manifest.json'" "$T/err"
    must_say "127.0.0.1 port 9" "$T/err"
}

case_a_shard_deleted_behind_the_manifests_back_is_named_by_shardcheck() {
    shardify "$SRC" "$B/gone" $OPTS --quiet
    delete gone/shard-000001.shard
    must_fail 1 shardcheck "$B/gone"
    must_say "shard-000001.shard: missing" "$T/stdout"
}

# ---- uploads: multipart, the server restarted, a run killed ---------------------------------
case_the_server_killed_in_the_middle_of_a_multipart_upload_and_restarted_the_run_goes_on() {
    export SHARDKIT_S3_PART_SIZE=5M
    held_upload restart
    "$S3_SERVER" restart "$SRV" >/dev/null || die "s3rver did not restart"
    touch "$T/restart.wire.release"
    wait $run_pid || { cat "$C/restart.out" >&2; die "the upload did not survive the restart"; }
    held=""
    same_as_local "$T/local-big" restart
    must_say "?uploads=" "$T/restart.wire"
    must_say "partNumber=3&uploadId=" "$T/restart.wire"
    no_secret "$C" "$T/restart.wire"
}

# (its own cache, so its own work directory; the --resume through its own
# recorder, resume)
case_a_run_killed_in_the_middle_of_an_upload_publishes_nothing_and_resume_finishes_it() {
    export SHARDKIT_S3_PART_SIZE=5M XDG_CACHE_HOME="$C/cache"
    held_upload killed
    kill -KILL $run_pid
    wait $run_pid 2>/dev/null || true
    held=""
    touch "$T/killed.wire.release"
    [ "$(status_of killed/manifest.json)" = 404 ] || die "a killed run published a manifest"
    work=$(ls -d "$C"/cache/shardkit/shardify/s3-"$BUCKET"-*)
    [ -s "$work/.shardify/upload" ] || die "the upload under way was not recorded"
    must_fail 1 shardify "$BIG" "$B/killed" $RAW --quiet
    must_say "interrupted shardify run; pass --resume" "$T/err"
    E=$(recorder resume)
    AWS_ENDPOINT_URL=$E shardify "$BIG" "$B/killed" $RAW --resume --quiet || die "--resume failed"
    same_as_local "$T/local-big" killed
    # (s3rver answers AbortMultipartUpload with 405: the request is what counts)
    grep -aq "^DELETE /$BUCKET/killed/shard-000000.shard?uploadId=" "$T/resume.wire" ||
        die "the killed run's multipart upload was not aborted"
    [ ! -e "$work" ] || die "the work directory was left behind"
    no_secret "$C" "$T/killed.wire" "$T/resume.wire"
}

# ---- no secret anywhere -------------------------------------------------------------------
# (the set-up's outputs, its requests and the store; each case above checks its own)
case_the_secret_key_appears_in_no_output_record_trace_work_file_or_request() {
    for f in "$T"/*.json "$T"/*.err "$T"/*.out "$T"/*.digests "$T"/*.wire; do
        [ -f "$f" ] || continue
        if grep -aqF -- "$SECRET" "$f"; then die "the secret key is in '$f'"; fi
    done
    if grep -raqF -- "$SECRET" "$SRV/data"; then die "the secret key was stored"; fi
    for f in "$T"/*.json "$T"/*.err "$T"/*.out; do
        [ -f "$f" ] || continue
        if grep -aqF -- "$TOKEN" "$f"; then die "the session token is in '$f'"; fi
    done
}

run_cases
