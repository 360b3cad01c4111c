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

say "boto3 and shardkit find the same settings, case by case"
"$BOTO_PYTHON" "$SHARDKIT_TOP/tests/fixtures/s3_settings_compare.py" "$SHARDKIT_BIN/shardbench" \
    "$T/cases" >"$T/compare.out" 2>&1 || { cat "$T/compare.out" >&2; die "shardkit differs from boto3"; }
cat "$T/compare.out"
must_say "boto3 and shardkit agree on every case" "$T/compare.out"
[ "$(grep -c '^ok ' "$T/compare.out")" -ge 25 ] || die "too few cases were compared"
echo "s3 settings tests passed"
