# s3_lib.sh - what the S3 tests on two implementations share (sourced after
# lib.sh by test_s3_keys.sh, test_s3_uploads.sh and test_s3_botocore.sh):
# moto's server (Python; behaves like AWS and MinIO: encoded listings,
# ListMultipartUploads) and s3rver (Node.js; bench/s3_server.sh), each
# started on loopback and stopped by its pid; boto3 as the independent
# client (tests/fixtures/s3_client.py); settings that owe nothing to this
# machine's ~/.aws.
#
# moto_server missing: the test skips, unless SHARDKIT_REQUIRE_MOTO=1 (CI
# sets it): then it fails.

S3_TOP=$SHARDKIT_TOP
S3_BUCKET=shardkit-test
S3_STORES=""      # the prefixes of the servers started, stopped at exit

# need_moto: $BOTO_PYTHON, the Python that moto_server runs in (with boto3)
need_moto() {
    BOTO_PYTHON=$("$S3_TOP/bench/moto_server.sh" python 2>"$T/moto.find") && return 0
    if [ "${SHARDKIT_REQUIRE_MOTO:-0}" = 1 ]; then
        cat "$T/moto.find" >&2
        die "moto_server is required here (SHARDKIT_REQUIRE_MOTO=1) and was not found"
    fi
    skip "$(cat "$T/moto.find")"
}

# have_s3rver: Node.js and npm are there (bench/s3_server.sh installs s3rver)
have_s3rver() {
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1
}
# no_s3rver: (a case of s3rver) it cannot run here, and says so
no_s3rver() {
    have_s3rver && return 1
    echo "s3rver: not tried (Node.js and npm are not installed)"
}
# on_s3rver FN ARGS...: FN ARGS... s3rver, where s3rver can run
on_s3rver() {
    no_s3rver || "$@" s3rver
}

s3_cleanup() {
    for p in $(cat "$T/recorders" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    for s in $S3_STORES; do
        case $s in
        *moto) "$S3_TOP/bench/moto_server.sh" stop "$s" >/dev/null 2>&1 || true ;;
        *) "$S3_TOP/bench/s3_server.sh" stop "$s" >/dev/null 2>&1 || true ;;
        esac
    done
}
on_exit s3_cleanup

# start_store KIND: start KIND (moto or s3rver) with the bucket $S3_BUCKET;
# sets $ENDPOINT and $STORE (its prefix: STORE/port holds its port)
start_store() {
    STORE=$T/store-$1
    S3_STORES="$S3_STORES $STORE"
    case $1 in
    moto) ENDPOINT=$("$S3_TOP/bench/moto_server.sh" start "$STORE" "$S3_BUCKET") ||
              die "moto_server did not start" ;;
    s3rver) ENDPOINT=$("$S3_TOP/bench/s3_server.sh" start "$STORE" "$S3_BUCKET") ||
              die "s3rver did not start" ;;
    esac
}

# use_store KIND: (in a case) talk to the KIND the set-up started: sets
# $STORE and $ENDPOINT, and AWS_ENDPOINT_URL for the tools
use_store() {
    STORE=$T/store-$1
    ENDPOINT=$(cat "$STORE/url") || die "no $1 server was started"
    export AWS_ENDPOINT_URL=$ENDPOINT
}

# boto CMD ARGS...: tests/fixtures/s3_client.py against $ENDPOINT
boto() {
    "$BOTO_PYTHON" "$S3_TOP/tests/fixtures/s3_client.py" "$ENDPOINT" "$@"
}

# recorder NAME [--hold PATTERN]: a recording proxy in front of the store
# of $STORE (tests/fixtures/tcp_recorder.py); prints its endpoint.  Its log
# is $T/NAME.wire; its pid goes to $T/recorders (this runs in a command
# substitution: a variable would not come back).
recorder() {
    name=$1; shift
    rm -f "$T/$name.port"
    "$PYTHON" "$S3_TOP/tests/fixtures/tcp_recorder.py" "$(cat "$STORE/port")" "$T/$name.wire" \
        "$T/$name.port" "$@" >"$T/$name.log" 2>&1 </dev/null &
    echo $! >>"$T/recorders"
    i=0
    while [ ! -s "$T/$name.port" ]; do
        i=$((i + 1)); [ $i -le $POLL_STEPS ] || die "the recorder did not start"
        sleep 0.05
    done
    echo "http://127.0.0.1:$(cat "$T/$name.port")"
}

# The settings, as the AWS CLI would find them; nothing from this machine's
# own ~/.aws.  Neither server checks signatures (moto does check that a
# request is signed before it lets one delete a private object).
mkdir -p "$T/home"
export HOME="$T/home" XDG_CACHE_HOME="$T/cache"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE \
    AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL AWS_DEFAULT_REGION AWS_SESSION_TOKEN \
    AWS_SECURITY_TOKEN AWS_IGNORE_CONFIGURED_ENDPOINT_URLS SHARDKIT_S3_PART_SIZE \
    SHARDKIT_S3_NO_SIGN_REQUEST 2>/dev/null || true
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
