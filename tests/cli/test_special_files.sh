#!/bin/sh
# test_special_files.sh - a FIFO (or a socket, a character device, a
# directory) where a tool expects a file it reads - a dataset's manifest,
# index or shard, a part's files in DST/parts/I-of-N, a previous dataset of
# --incremental, a --labels or --keys file - is refused at once with a
# message naming it, and the tool exits 1: nothing waits for a writer that
# never comes.  Every run is under `timeout`; being killed is a failure.
. "$(dirname "$0")/lib.sh"

OPTS="--quiet --size 32"
# seconds a refusal may take, sanitizer builds and a loaded machine included
LIMIT=20

"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/raw" --count 12 >/dev/null
shardify $OPTS "$T/raw" "$T/ds" || die "shardify of the sample failed"
SHARD=$(json "$T/ds/manifest.json" 'd["shards"][0]["file"]')
SAMPLES=$(json "$T/ds/manifest.json" 'd["counts"]["samples"]')

# prompt CODE TEXT CMD...: CMD exits with CODE within $LIMIT s, and its
# stdout or stderr says TEXT (fixed string).
prompt() {
    want=$1 text=$2
    shift 2
    set +e
    timeout -k 2 "$LIMIT" "$@" >"$T/out" 2>&1 </dev/null
    got=$?
    set -e
    case $got in 124 | 137) cat "$T/out" >&2; die "'$*' hung: killed after $LIMIT s" ;; esac
    [ "$got" -eq "$want" ] || { cat "$T/out" >&2; die "'$*' exited $got, expected $want"; }
    must_say "$text" "$T/out"
}

# plant KIND PATH: replace PATH (a file) with a KIND: fifo, socket, dir or
# chardev (a link to /dev/zero, which is followed where links are).
plant() {
    rm -f "$2"
    case $1 in
    fifo) mkfifo "$2" ;;
    socket) "$PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$2" ;;
    dir) mkdir "$2" ;;
    chardev) ln -s /dev/zero "$2" ;;
    esac
}
# copy_with KIND NAME: a copy of the dataset, $T/c, with NAME planted as KIND
copy_with() {
    rm -rf "$T/c"
    cp -r "$T/ds" "$T/c"
    plant "$1" "$T/c/$2"
}

# ---- a dataset read by shardcheck, shardcat, shardbench -----------------------------
say "shardcheck: manifest, index and shard as a FIFO"
copy_with fifo manifest.json
prompt 1 "cannot read manifest '$T/c/manifest.json': not a regular file: fifo" shardcheck "$T/c"
copy_with fifo index.jsonl
prompt 1 "cannot read '$T/c/index.jsonl': not a regular file: fifo" shardcheck "$T/c"
copy_with fifo "$SHARD"
prompt 1 "cannot read '$T/c/$SHARD': not a regular file: fifo" shardcheck "$T/c"

say "shardcheck: the other kinds of special file, each named as what it is"
copy_with socket index.jsonl
prompt 1 "cannot read '$T/c/index.jsonl': not a regular file: socket" shardcheck "$T/c"
copy_with dir manifest.json
prompt 1 "cannot read manifest '$T/c/manifest.json': not a regular file: directory" \
    shardcheck "$T/c"
copy_with chardev manifest.json
prompt 1 "cannot read manifest '$T/c/manifest.json': not a regular file: character device" \
    shardcheck "$T/c"

say "shardcat and shardbench: a shard or the index as a FIFO"
copy_with fifo "$SHARD"
prompt 1 "$SHARD: not a regular file: fifo" shardcat "$T/c" --out "$T/cat1"
prompt 1 "$SHARD: not a regular file: fifo" shardbench shards "$T/c" --epochs 1
# a key is found through the key table, never the index
copy_with fifo index.keys
KEY=$(head -n 1 "$T/ds/index.jsonl" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["key"])')
prompt 1 "cannot read key table 'index.keys': not a regular file: fifo" shardcat "$T/c" "$KEY" --out "$T/cat2"

# ---- inputs named by an option ----------------------------------------------------
say "--labels and --keys as a FIFO or a device"
mkfifo "$T/labels.csv" "$T/keys.txt"
prompt 1 "cannot read label file '$T/labels.csv': not a regular file: fifo" \
    shardify $OPTS --labels "$T/labels.csv" "$T/raw" "$T/l1"
[ ! -e "$T/l1" ] || die "a refused run created DST"
prompt 1 "cannot read label file '/dev/zero': not a regular file: character device" \
    shardify $OPTS --labels /dev/zero "$T/raw" "$T/l1"
prompt 1 "cannot open key list '$T/keys.txt': not a regular file: fifo" \
    shardbench files "$T/raw" --keys "$T/keys.txt" --epochs 1
# shardcheck --source re-derives labels from the CSV file they came from
(cd "$T/raw" && find . -type f -name '*.png' | sed 's|^\./||; s|$|,pictures|') >"$T/real.csv"
shardify $OPTS --labels "$T/real.csv" "$T/raw" "$T/csv" || die "shardify --labels failed"
prompt 1 "cannot read label file '$T/labels.csv': not a regular file: fifo" \
    shardcheck --source "$T/raw" --labels "$T/labels.csv" "$T/csv"

# ---- shardify --incremental PREV ----------------------------------------------------
say "--incremental: PREV's manifest or index as a FIFO is refused, nothing published"
copy_with fifo manifest.json
prompt 1 "cannot read manifest '$T/c/manifest.json': not a regular file: fifo" \
    shardify $OPTS --incremental "$T/c" "$T/raw" "$T/i1"
[ ! -e "$T/i1/manifest.json" ] || die "a refused incremental run published"
copy_with fifo index.jsonl
prompt 1 "cannot open '$T/c/index.jsonl': not a regular file: fifo" \
    shardify $OPTS --incremental "$T/c" "$T/raw" "$T/i2"
[ ! -e "$T/i2/manifest.json" ] || die "a refused incremental run published"

say "--incremental: a shard of PREV as a FIFO is a damaged record: converted again"
copy_with fifo "$SHARD"
prompt 0 "reconverted (damaged in '$T/c')" \
    shardify --size 32 --incremental "$T/c" "$T/raw" "$T/i3"
[ "$(json "$T/i3/manifest.json" 'd["lineage"]["reconverted"]')" = "$SAMPLES" ] ||
    die "not every sample of the FIFO shard was converted again"

# ---- shardify merge -------------------------------------------------------------------
say "merge: a part's part.json, manifest, index or shard as a FIFO"
shardify $OPTS --part 0/2 "$T/raw" "$T/p" && shardify $OPTS --part 1/2 "$T/raw" "$T/p" ||
    die "the parts failed"
PART_SHARD=$(json "$T/p/parts/1-of-2/manifest.json" 'd["shards"][0]["file"]')
# copy_parts_with NAME: a copy of the parts, $T/m, with part 1's NAME a FIFO
copy_parts_with() {
    rm -rf "$T/m"
    cp -r "$T/p" "$T/m"
    plant fifo "$T/m/parts/1-of-2/$1"
}
for f in part.json manifest.json index.jsonl; do
    copy_parts_with "$f"
    prompt 1 "'$T/m/parts/1-of-2/$f': not a regular file: fifo" shardify merge "$T/m"
    [ ! -e "$T/m/manifest.json" ] || die "a refused merge published ($f a FIFO)"
done
copy_parts_with "$PART_SHARD"
prompt 1 "part 1 of 2 is incomplete: '$T/m/parts/1-of-2/$PART_SHARD'" shardify merge "$T/m"
[ ! -e "$T/m/manifest.json" ] || die "a refused merge published (a shard a FIFO)"
