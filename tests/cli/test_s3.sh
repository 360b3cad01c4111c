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
# put_dir DIR PREFIX: upload every file of DIR (flat) under PREFIX/
put_dir() {
    (cd "$1" && ls) | awk -v d="$1" -v u="$ENDPOINT/$BUCKET/$2" -v h="$H" '
        NR > 1 { print "next" }
        { printf "url = \"%s/%s\"\nupload-file = \"%s/%s\"\nheader = \"%s\"\noutput = /dev/null\n",
                 u, $0, d, $0, h }' >"$T/put.cfg"
    curl -sS -f --no-progress-meter --parallel --parallel-max 8 -K "$T/put.cfg" || die "cannot upload '$1'"
}
# same_as_local DIR PREFIX: every dataset file of DIR (not run.json) is an
# object under PREFIX with the same bytes
same_as_local() {
    for f in $(cd "$1" && ls | grep -v '^run.json$'); do
        get "$2/$f" "$T/object" || die "'$2/$f' is not in the store"
        cmp -s "$T/object" "$1/$f" || die "'$2/$f' differs from '$1/$f'"
    done
}

SRC=$T/src
mkdir -p "$SRC"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 60 | while read -r f; do
    cp "$SAMPLE/$f" "$SRC/"
done
OPTS="--size 48 --shard-size 32K"

# ---- round trip -------------------------------------------------------------------
say "shardify to s3:// publishes what a local run writes, byte for byte"
shardify "$SRC" "$T/local" $OPTS --json >"$T/local.json" 2>"$T/local.err"
shardify "$SRC" "$B/ds" $OPTS --json >"$T/remote.json" 2>"$T/remote.err" ||
    { cat "$T/remote.err" >&2; die "shardify to s3:// failed"; }
[ "$(json "$T/remote.json" "d['shards']")" -ge 3 ] || die "too few shards to prove anything"
same_as_local "$T/local" ds
[ "$(status_of ds/run.json)" = 200 ] || die "run.json was not uploaded"
[ ! -e "$T/cache/shardkit" ] || die "the work directory was left behind: $(find "$T/cache")"

say "shardcheck --deep verifies the dataset in the store"
shardcheck --deep "$B/ds" --json >"$T/check.json" 2>"$T/check.err" ||
    { cat "$T/check.err" >&2; die "shardcheck --deep of s3:// failed"; }
[ "$(json "$T/check.json" "d['verified']")" = True ] || die "not verified"

say "shardcat and shardbench read the same samples from the store"
shardcat "$B/ds" --limit 12 --out "$T/cat-remote" >"$T/cat.out" 2>&1
shardcat "$T/local" --limit 12 --out "$T/cat-local" >/dev/null 2>&1
diff -r "$T/cat-local" "$T/cat-remote" >/dev/null || die "shardcat's PNGs differ"
shardbench shards "$B/ds" --epochs 2 --digests "$T/remote.digests" --trace "$T/trace.json" \
    --json >"$T/bench.json" 2>"$T/bench.err" || { cat "$T/bench.err" >&2; die "shardbench failed"; }
shardbench shards "$T/local" --epochs 2 --digests "$T/local.digests" >/dev/null 2>&1
cmp -s "$T/local.digests" "$T/remote.digests" || die "the pixels read from s3:// differ"
[ "$(json "$T/bench.json" "d['first_epoch']['requests'] > 0")" = True ] ||
    die "no request counted"

say "the Python Dataset and Loader read the same samples from the store"
shardkit_python - "$B/ds" "$T/local" >"$T/py.out" 2>&1 <<'PY' || { cat "$T/py.out" >&2; die "Python over s3:// failed"; }
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
must_say "ok 60" "$T/py.out"

say "the requests are signed with SigV4 and carry the S3 headers"
must_say "Authorization: AWS4-HMAC-SHA256 Credential=S3RVER/" "$T/main.wire"
grep -aq 'SignedHeaders=[a-z;-]*x-amz-content-sha256' "$T/main.wire" ||
    die "x-amz-content-sha256 is not signed"
must_say "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$T/main.wire"
must_say "x-amz-security-token: $TOKEN" "$T/main.wire"
must_say "Range: bytes=" "$T/main.wire"

say "an s3:// source converts like the same files in a directory (and shardcheck --source reads it)"
put_dir "$SRC" src
shardify "$B/src" "$B/from-s3" $OPTS --quiet || die "shardify from s3:// failed"
same_as_local "$T/local" from-s3
shardcheck --source "$B/src" "$B/from-s3" >"$T/source.out" 2>&1 ||
    { cat "$T/source.out" >&2; die "shardcheck --source s3:// failed"; }
shardbench files "$B/src" --epochs 1 --size 48 --digests "$T/files-remote.digests" \
    >/dev/null 2>&1 || die "shardbench files of an s3:// source failed"
shardbench files "$SRC" --epochs 1 --size 48 --digests "$T/files-local.digests" >/dev/null 2>&1
cmp -s "$T/files-local.digests" "$T/files-remote.digests" || die "shardbench files differ"

say "more than 1000 objects: the listing's pages, and the same dataset as the directory's"
put_dir "$SAMPLE" many
shardify "$SAMPLE" "$T/local-many" --size 32 --quiet
shardify "$B/many" "$B/many-out" --size 32 --json >"$T/many.json" 2>/dev/null ||
    die "shardify of 1000+ objects failed"
[ "$(json "$T/many.json" "d['samples'] + d['ignored']")" -gt 1000 ] || die "too few objects"
same_as_local "$T/local-many" many-out
must_say "continuation-token=" "$T/main.wire"

# ---- settings -----------------------------------------------------------------------
say "credentials, region and endpoint from a profile in ~/.aws (AWS_PROFILE)"
mkdir -p "$HOME/.aws"
printf '[other]\naws_access_key_id = S3RVER\naws_secret_access_key = %s\n' "$SECRET" \
    >"$HOME/.aws/credentials"
printf '[profile other]\nregion = eu-west-3\nservices = store\n[services store]\ns3 =\n  endpoint_url = %s\n' \
    "$AWS_ENDPOINT_URL" >"$HOME/.aws/config"
( unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_ENDPOINT_URL
  AWS_PROFILE=other shardcheck "$B/ds" >/dev/null 2>&1 ) || die "the profile was not used"
must_say "/eu-west-3/s3/aws4_request" "$T/main.wire"
rm -rf "$HOME/.aws"

say "no credentials: an error; unsigned requests only when asked (SHARDKIT_S3_NO_SIGN_REQUEST)"
: >"$T/main.wire"
( unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
  must_fail 1 shardcheck "$B/ds"
  must_say "no AWS credentials for the profile 'default'" "$T/err"
  [ ! -s "$T/main.wire" ] || die "a request went out without credentials"
  SHARDKIT_S3_NO_SIGN_REQUEST=true shardcheck "$B/ds" >/dev/null 2>&1 ) ||
    die "an unsigned read failed"
grep -aq '^Authorization:' "$T/main.wire" && die "an anonymous request was signed"
must_say "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$T/main.wire"

# ---- the destination's rules ---------------------------------------------------------
say "a previous dataset needs --overwrite, which replaces it"
must_fail 1 shardify "$SRC" "$B/ds" $OPTS --quiet
must_say "holds a previous shardify output; pass --overwrite" "$T/err"
shardify "$SRC" "$B/ds" --size 40 --shard-size 32K --overwrite --quiet || die "--overwrite failed"
get ds/manifest.json "$T/m.json"
[ "$(json "$T/m.json" "d['config']['size']")" = 40 ] || die "the dataset was not replaced"
shardcheck "$B/ds" >/dev/null 2>&1 || die "the replaced dataset does not verify"

say "a prefix holding something else is refused"
printf 'x' >"$T/note.txt"
curl -sS -f -X PUT -H "$H" --upload-file "$T/note.txt" "$ENDPOINT/$BUCKET/other/note.txt" \
    -o /dev/null
must_fail 1 shardify "$SRC" "$B/other" $OPTS --quiet
must_say "holds 'note.txt', which shardify did not write" "$T/err"
[ "$(status_of other/manifest.json)" = 404 ] || die "a refused run published"

# ---- failures -------------------------------------------------------------------------
say "a missing bucket is an error naming it"
must_fail 1 shardbench shards s3://no-such-bucket-here/ds --epochs 1
must_say "'s3://no-such-bucket-here/ds/manifest.json'" "$T/err"
must_say "NoSuchBucket" "$T/err"
must_fail 1 shardify "$SRC" s3://no-such-bucket-here/ds $OPTS --quiet
must_say "NoSuchBucket" "$T/err"

say "a wrong endpoint is an error naming the object and the endpoint (after retries)"
AWS_ENDPOINT_URL=http://127.0.0.1:9 must_fail 1 shardcheck "$B/ds"
must_say "'s3://$BUCKET/ds/manifest.json'" "$T/err"
must_say "127.0.0.1 port 9" "$T/err"

say "a shard deleted behind the manifest's back: shardcheck names it"
shardify "$SRC" "$B/gone" $OPTS --quiet
delete gone/shard-000001.shard
must_fail 1 shardcheck "$B/gone"
must_say "shard-000001.shard: missing" "$T/stdout"

# ---- uploads: multipart, the server restarted, a run killed ---------------------------------
RAW="--size 128 --codec raw --zstd-level -100 --shard-size 12M --no-shuffle"
BIG=$T/big
mkdir -p "$BIG"
ls "$SAMPLE" | grep -i '\.jpe\?g$' | head -n 200 | while read -r f; do
    cp "$SAMPLE/$f" "$BIG/"
done
shardify "$BIG" "$T/local-big" $RAW --quiet
[ "$(stat -c %s "$T/local-big/shard-000000.shard")" -gt $((10 << 20)) ] ||
    die "shard 0 is too small for a multipart upload in 5 MiB parts"
export SHARDKIT_S3_PART_SIZE=5M

# held_upload NAME: start `shardify $BIG $B/NAME $RAW` in the background
# through a recorder NAME that holds the upload of part 2 of shard 0; return
# once it is held, with the run's pid in $run_pid (release the request with
# `touch $T/NAME.wire.release`).
held_upload() {
    E=$(recorder "$1" --hold "partNumber=2")
    AWS_ENDPOINT_URL=$E shardify "$BIG" "$B/$1" $RAW --quiet >"$T/$1.out" 2>&1 &
    run_pid=$!
    held=$run_pid
    i=0
    while [ ! -e "$T/$1.wire.held" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || die "no request was held"
        sleep 0.05
    done
}

say "the server killed in the middle of a multipart upload and restarted: the run goes on"
held_upload restart
"$S3_SERVER" restart "$SRV" >/dev/null || die "s3rver did not restart"
touch "$T/restart.wire.release"
wait $run_pid || { cat "$T/restart.out" >&2; die "the upload did not survive the restart"; }
held=""
same_as_local "$T/local-big" restart
must_say "?uploads=" "$T/restart.wire"
must_say "partNumber=3&uploadId=" "$T/restart.wire"

say "a run killed in the middle of an upload publishes nothing; --resume finishes it"
held_upload killed
kill -KILL $run_pid
wait $run_pid 2>/dev/null || true
held=""
touch "$T/killed.wire.release"
[ "$(status_of killed/manifest.json)" = 404 ] || die "a killed run published a manifest"
work=$(ls -d "$T"/cache/shardkit/shardify/s3-"$BUCKET"-*)
[ -s "$work/.shardify/upload" ] || die "the upload under way was not recorded"
must_fail 1 shardify "$BIG" "$B/killed" $RAW --quiet
must_say "interrupted shardify run; pass --resume" "$T/err"
: >"$T/main.wire"
shardify "$BIG" "$B/killed" $RAW --resume --quiet || die "--resume failed"
same_as_local "$T/local-big" killed
# (s3rver answers AbortMultipartUpload with 405: the request is what counts)
grep -aq "^DELETE /$BUCKET/killed/shard-000000.shard?uploadId=" "$T/main.wire" ||
    die "the killed run's multipart upload was not aborted"
[ ! -e "$work" ] || die "the work directory was left behind"
unset SHARDKIT_S3_PART_SIZE

# ---- no secret anywhere -------------------------------------------------------------------
say "the secret key appears in no output, record, trace, work file or request"
for f in "$T"/*.json "$T"/*.err "$T"/*.out "$T"/*.digests "$T"/*.wire; do
    [ -f "$f" ] || continue
    grep -aqF -- "$SECRET" "$f" && die "the secret key is in '$f'"
done
grep -raqF -- "$SECRET" "$SRV/data" "$T/cat-remote" && die "the secret key was stored"
for f in "$T"/*.json "$T"/*.err "$T"/*.out; do
    grep -aqF -- "$TOKEN" "$f" && die "the session token is in '$f'"
done
echo "s3 tests passed"
