# stores_lib.sh - what the benchmarks reading a dataset from the loopback
# stores share (sourced by remote_throughput.sh and cache_throughput.sh;
# POSIX sh): nginx (http_server.sh) and s3rver (s3_server.sh) under WORK,
# stopped however the script ends, and the dataset shardified to local disk
# and to the store.  The caller sets top, BIN, DATASET and WORK and defines
# log().

HTTP=$WORK/http
S3=$WORK/s3

# stop_servers: stop nginx and s3rver if they run (the EXIT trap; call it
# too once the measuring is done)
stop_servers() {
    "$top/bench/http_server.sh" stop "$HTTP" >/dev/null 2>&1 || true
    "$top/bench/s3_server.sh" stop "$S3" >/dev/null 2>&1 || true
}
trap stop_servers EXIT

# start_s3 BUCKET: s3rver with BUCKET; sets ENDPOINT, and the environment
# that reaches it as the AWS CLI would (s3rver knows the key S3RVER)
start_s3() {
    ENDPOINT=$("$top/bench/s3_server.sh" start "$S3" "$1")
    export AWS_ENDPOINT_URL="$ENDPOINT" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
    export AWS_REGION=us-east-1 XDG_CACHE_HOME="$WORK/xdg"
    unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 2>/dev/null || true
    log "s3rver at $ENDPOINT"
}

# shardify_local OPTIONS...: shardify DATASET to WORK/raw, unless an earlier
# run with the same WORK left it there
shardify_local() {
    if [ ! -f "$WORK/raw/manifest.json" ]; then
        log "shardify to local disk"
        "$BIN/shardify" "$DATASET" "$WORK/raw" "$@"
    fi
}

# shardify_s3 BUCKET OPTIONS...: shardify DATASET to s3://BUCKET/raw (over
# what an earlier run left)
shardify_s3() {
    ss_bucket=$1
    shift
    log "shardify to s3://$ss_bucket/raw"
    "$BIN/shardify" "$DATASET" "s3://$ss_bucket/raw" "$@" --overwrite
}
