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
    timeout -k 2 "$LIMIT" "$@" >"$C/out" 2>&1 </dev/null
    got=$?
    set -e
    case $got in 124 | 137) cat "$C/out" >&2; die "'$*' hung: killed after $LIMIT s" ;; esac
    [ "$got" -eq "$want" ] || { cat "$C/out" >&2; die "'$*' exited $got, expected $want"; }
    must_say "$text" "$C/out"
}

# plant KIND PATH: replace PATH (a file) with a KIND: fifo, socket, dir or
# chardev (a link to /dev/zero, which is followed where links are).
plant() {
    rm -f "$2"
    case $1 in
    fifo) mkfifo "$2" ;;
    # bound by its name from its directory: a case's path may be longer than
    # AF_UNIX's 108 bytes
    socket) (cd "$(dirname "$2")" && "$PYTHON" -c \
        'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$(basename "$2")") ;;
    dir) mkdir "$2" ;;
    chardev) ln -s /dev/zero "$2" ;;
    esac
}
# copy_with KIND NAME: a copy of the dataset, $C/c, with NAME planted as KIND
copy_with() {
    rm -rf "$C/c"
    cp -r "$T/ds" "$C/c"
    plant "$1" "$C/c/$2"
}

# ---- a dataset read by shardcheck, shardcat, shardbench -----------------------------
case_shardcheck_manifest_index_and_shard_as_a_fifo() {
    copy_with fifo manifest.json
    prompt 1 "cannot read manifest '$C/c/manifest.json': not a regular file: fifo" shardcheck "$C/c"
    copy_with fifo index.jsonl
    prompt 1 "cannot read '$C/c/index.jsonl': not a regular file: fifo" shardcheck "$C/c"
    copy_with fifo "$SHARD"
    prompt 1 "cannot read '$C/c/$SHARD': not a regular file: fifo" shardcheck "$C/c"
}

case_shardcheck_the_other_kinds_of_special_file_each_named_as_what_it_is() {
    copy_with socket index.jsonl
    prompt 1 "cannot read '$C/c/index.jsonl': not a regular file: socket" shardcheck "$C/c"
    copy_with dir manifest.json
    prompt 1 "cannot read manifest '$C/c/manifest.json': not a regular file: directory" \
        shardcheck "$C/c"
    copy_with chardev manifest.json
    prompt 1 "cannot read manifest '$C/c/manifest.json': not a regular file: character device" \
        shardcheck "$C/c"
}

case_shardcat_and_shardbench_a_shard_or_the_index_as_a_fifo() {
    copy_with fifo "$SHARD"
    prompt 1 "$SHARD: not a regular file: fifo" shardcat "$C/c" --out "$C/cat1"
    prompt 1 "$SHARD: not a regular file: fifo" shardbench shards "$C/c" --epochs 1
    # a key is found through the key table, never the index
    copy_with fifo index.keys
    KEY=$(head -n 1 "$T/ds/index.jsonl" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["key"])')
    prompt 1 "cannot read key table 'index.keys': not a regular file: fifo" shardcat "$C/c" "$KEY" --out "$C/cat2"
}

# ---- inputs named by an option ----------------------------------------------------
case_labels_and_keys_as_a_fifo_or_a_device() {
    mkfifo "$C/labels.csv" "$C/keys.txt"
    prompt 1 "cannot read label file '$C/labels.csv': not a regular file: fifo" \
        shardify $OPTS --labels "$C/labels.csv" "$T/raw" "$C/l1"
    [ ! -e "$C/l1" ] || die "a refused run created DST"
    prompt 1 "cannot read label file '/dev/zero': not a regular file: character device" \
        shardify $OPTS --labels /dev/zero "$T/raw" "$C/l1"
    prompt 1 "cannot open key list '$C/keys.txt': not a regular file: fifo" \
        shardbench files "$T/raw" --keys "$C/keys.txt" --epochs 1
    # shardcheck --source re-derives labels from the CSV file they came from
    (cd "$T/raw" && find . -type f -name '*.png' | sed 's|^\./||; s|$|,pictures|') >"$C/real.csv"
    shardify $OPTS --labels "$C/real.csv" "$T/raw" "$C/csv" || die "shardify --labels failed"
    prompt 1 "cannot read label file '$C/labels.csv': not a regular file: fifo" \
        shardcheck --source "$T/raw" --labels "$C/labels.csv" "$C/csv"
}

# ---- shardify --incremental PREV ----------------------------------------------------
case_incremental_prevs_manifest_or_index_as_a_fifo_is_refused_nothing_published() {
    copy_with fifo manifest.json
    prompt 1 "cannot read manifest '$C/c/manifest.json': not a regular file: fifo" \
        shardify $OPTS --incremental "$C/c" "$T/raw" "$C/i1"
    [ ! -e "$C/i1/manifest.json" ] || die "a refused incremental run published"
    copy_with fifo index.jsonl
    prompt 1 "cannot open '$C/c/index.jsonl': not a regular file: fifo" \
        shardify $OPTS --incremental "$C/c" "$T/raw" "$C/i2"
    [ ! -e "$C/i2/manifest.json" ] || die "a refused incremental run published"
}

case_incremental_a_shard_of_prev_as_a_fifo_is_a_damaged_record_converted_again() {
    copy_with fifo "$SHARD"
    prompt 0 "reconverted (damaged in '$C/c')" \
        shardify --size 32 --incremental "$C/c" "$T/raw" "$C/i3"
    [ "$(json "$C/i3/manifest.json" 'd["lineage"]["reconverted"]')" = "$SAMPLES" ] ||
        die "not every sample of the FIFO shard was converted again"
}

# ---- shardify merge -------------------------------------------------------------------
# copy_parts_with NAME: a copy of the case's parts $C/p, $C/m, with part 1's NAME a FIFO
copy_parts_with() {
    rm -rf "$C/m"
    cp -r "$C/p" "$C/m"
    plant fifo "$C/m/parts/1-of-2/$1"
}
case_merge_a_parts_part_json_manifest_index_or_shard_as_a_fifo() {
    shardify $OPTS --part 0/2 "$T/raw" "$C/p" && shardify $OPTS --part 1/2 "$T/raw" "$C/p" ||
        die "the parts failed"
    PART_SHARD=$(json "$C/p/parts/1-of-2/manifest.json" 'd["shards"][0]["file"]')
    for f in part.json manifest.json index.jsonl; do
        copy_parts_with "$f"
        prompt 1 "'$C/m/parts/1-of-2/$f': not a regular file: fifo" shardify merge "$C/m"
        [ ! -e "$C/m/manifest.json" ] || die "a refused merge published ($f a FIFO)"
    done
    copy_parts_with "$PART_SHARD"
    prompt 1 "part 1 of 2 is incomplete: '$C/m/parts/1-of-2/$PART_SHARD'" shardify merge "$C/m"
    [ ! -e "$C/m/manifest.json" ] || die "a refused merge published (a shard a FIFO)"
}

run_cases
