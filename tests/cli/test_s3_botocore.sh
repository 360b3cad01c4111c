#!/bin/sh
# test_s3_botocore.sh - the S3 settings shardkit finds are those boto3
# (botocore, which the AWS CLI is built on) finds from the same config and
# credentials files and variables: endpoint ([services] sections,
# AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, endpoint_url,
# ignore_configured_endpoint_urls), region, access key and session token,
# and the same refusals (a profile that is not there, a malformed file or
# region, half a key pair, no credentials).  tests/fixtures/
# s3_settings_compare.py runs each case through both and compares; boto3 is
# the one beside moto_server (bench/moto_server.sh python).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3_lib.sh"
need_moto

case_boto3_and_shardkit_find_the_same_settings_and_refusals_case_by_case() {
    "$BOTO_PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_settings_compare.py" "$SHARDKIT_BIN/shardbench" \
        "$C/cases" >"$C/compare.out" 2>&1 || { cat "$C/compare.out" >&2; die "shardkit differs from boto3"; }
    # shown as TAP comments: its "ok  CASE" lines are not this script's cases
    sed 's/^/# /' "$C/compare.out"
    must_say "boto3 and shardkit agree on every case" "$C/compare.out"
    [ "$(grep -c '^ok ' "$C/compare.out")" -ge 25 ] || die "too few cases were compared"
}

run_cases
