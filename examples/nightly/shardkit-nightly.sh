#!/bin/sh
# shardkit-nightly.sh - the nightly job's former path, kept until 0.4.0
# (CHANGELOG.md): the job is the program shardkit-nightly, installed with the
# tools (cmd/shardkit-nightly/).  This runs it: SHARDKIT_BIN's, else PATH's.
echo "shardkit-nightly.sh: deprecated, removed in 0.4.0: run shardkit-nightly, installed with the tools" >&2
nightly=${SHARDKIT_BIN:+$SHARDKIT_BIN/}shardkit-nightly
[ -x "$nightly" ] || nightly=shardkit-nightly
exec "$nightly" "$@"
