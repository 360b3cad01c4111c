#!/bin/sh
# test_nightly_full.sh - shardkit-nightly (cmd/shardkit-nightly) on a full disk.
# ROOT is on a small tmpfs (as test_faults.sh fakes a full disk for
# shardify): first a disk that fills up in the middle of a run, then free
# space stepped from none to a few hundred KB, one run per step, so that
# each write of a run (the new version, the tools' reports, the report
# page, versions/.published, the run record, latest.json, index.html) is in
# turn the one that fails.  At every step `current`, versions/.published
# and the versions kept are intact, a published version's reports are
# whole, no temporary is left, and the exit status says what happened.
# Needs root (a tmpfs mount); says SKIP without.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nightly_lib.sh"

BIG=64m
mount_tmpfs "$T/disk" $BIG || skip "disk full: cannot mount a size-capped tmpfs (needs root and CAP_SYS_ADMIN)"
ROOT="$T/disk/root"
export SHARDKIT_ROOT="$ROOT" SHARDKIT_SRC="$T/src" SHARDKIT_OPTIONS="--size 32 --shard-size 64K"
"$PYTHON" "$SHARDKIT_TOP/examples/make_demo_data.py" "$T/src" >/dev/null

published_list() { cat "$ROOT/versions/.published" 2>/dev/null || true; }
# has_published V: versions/.published lists V
has_published() { published_list | grep -qxF -- "$1"; }

# snapshot: remember current, versions/.published and the state of every
# published version (in $T/snap)
snapshot() {
    rm -rf "$T/snap" && mkdir "$T/snap"
    cur_before=$(current)
    published_list >"$T/snap/.published"
    while read -r v; do
        [ ! -d "$ROOT/versions/$v" ] || tree_state "$ROOT/versions/$v" >"$T/snap/$v"
    done <"$T/snap/.published"
}
# intact V WHY: published version V is there, byte for byte as in the snapshot
intact() {
    [ -d "$ROOT/versions/$1" ] || die "$2: versions/$1 is gone"
    same_state "$T/snap/$1" "$ROOT/versions/$1" "$2: versions/$1 changed"
}
no_temporaries() {
    left=$(find "$ROOT" \( -name '*.tmp' -o -name '.current.*' \) -print)
    [ -z "$left" ] || die "$1: temporaries left: $left"
}

# ---- the disk fills up in the middle of a run ---------------------------------------------

say "three published versions"
export SHARDKIT_KEEP=3
nightly 0
v1=$run
nightly 0
v2=$run
nightly 0
v3=$run
[ "$(published_list | tr '\n' ' ')" = "$v1 $v2 $v3 " ] || die "published: $(published_list)"

say "the disk fills up after shardify: not published (exit 5), versions/.published and every version intact"
snapshot
export FILLER="$T/disk/filler"
SHARDKIT_NIGHTLY_BEFORE_CHECK='head -c 1G /dev/zero >"$FILLER" 2>/dev/null; exit 0' \
    must_fail 5 shardkit-nightly
must_say "No space left on device" "$T/err"
must_say "not published" "$T/err"
[ "$(current)" = "versions/$v3" ] || die "current moved to '$(current)'"
cmp -s "$T/snap/.published" "$ROOT/versions/.published" ||
    die "versions/.published changed: '$(published_list | tr '\n' ' ')'"
for v in $v1 $v2 $v3; do intact "$v" "a full disk"; done
no_temporaries "a full disk"

say "space freed: the next run publishes and keeps the K newest published versions, the previous current among them"
rm "$FILLER"
nightly 0
v5=$run
[ "$(current)" = "versions/$v5" ] || die "current is '$(current)'"
[ "$(published_list | tr '\n' ' ')" = "$v2 $v3 $v5 " ] || die "published: $(published_list | tr '\n' ' ')"
[ "$(versions)" = "$v2 $v3 $v5 " ] || die "versions: $(versions)"
for v in $v2 $v3; do intact "$v" "the run after a full disk"; done

# ---- free space stepped across a run ---------------------------------------------------------

# With KEEP=2 every published run prunes a version, whose space the writes
# after it then use; with KEEP=50 none is pruned, and the last writes of a
# published run (its record, latest.json) may be the ones that fail.
seen=""
for keep in 2 50; do
say "free space stepped from 0 to 400 KB, KEEP=$keep: every step keeps current, versions/.published and the kept versions"
export SHARDKIT_KEEP=$keep
nightly 0  # (prunes to the new KEEP)
steps="$(seq 0 4 196) $(seq 200 40 400)"
for kb in $steps; do
    snapshot
    used=$(df -k --output=used "$T/disk" | tail -n 1 | tr -d ' ')
    mount -o "remount,size=$((used + kb))k" "$T/disk"
    set +e
    shardkit-nightly >"$T/out" 2>"$T/err"
    code=$?
    set -e
    mount -o "remount,size=$BIG" "$T/disk"
    at="with $kb KB free (exit $code)"
    case " $seen " in *" $code "*) ;; *) seen="$seen $code" ;; esac
    new=$(current)
    case $code in
    0 | 7)
        [ "$new" != "$cur_before" ] || die "$at: current did not move"
        has_published "${new#versions/}" || die "$at: versions/.published does not list the new current"
        # the previous current is among the KEEP=2 newest published versions
        intact "${cur_before#versions/}" "$at"
        has_published "${cur_before#versions/}" || die "$at: the previous current is no longer listed"
        shardcheck "$ROOT/current" >/dev/null || die "$at: current does not verify"
        # its reports are whole
        stamp=${new#versions/}
        "$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))' \
            "$ROOT/runs/$stamp.shardcheck.json" "$ROOT/runs/$stamp.shardify.json" ||
            die "$at: a report of the published version is not whole"
        [ "$(tail -c 8 "$ROOT/runs/$stamp.html")" = "</html>" ] || die "$at: its report page is not whole"
        if [ "$code" -eq 0 ]; then
            [ "$(json "$ROOT/runs/latest.json" 'd["run"], d["status"], d["exit_code"]')" = \
              "('$stamp', 'published', 0)" ] || die "$at: latest.json: $(cat "$ROOT/runs/latest.json")"
        else
            must_say "warning: cannot write" "$T/err"
        fi
        ;;
    1 | 5)
        [ "$new" = "$cur_before" ] || die "$at: current moved to '$new'"
        # nothing published is gone, nothing is unlisted
        while read -r v; do
            intact "$v" "$at"
            has_published "$v" || die "$at: versions/.published lost $v"
        done <"$T/snap/.published"
        shardcheck "$ROOT/current" >/dev/null || die "$at: current does not verify"
        [ "$code" -eq 5 ] || must_say "shardify failed" "$T/err"
        [ "$code" -eq 1 ] || must_say "not published" "$T/err"
        grep -qF -e "No space left on device" -e "disk full" "$T/err" ||
            { cat "$T/err" >&2; die "$at: the messages do not say the disk is full"; }
        ;;
    *)
        cat "$T/err" >&2
        die "$at: not an exit status a full disk should give"
        ;;
    esac
    no_temporaries "$at"
done
done
echo "exit statuses seen: $seen"
for code in 0 1 5 7; do
    case " $seen " in *" $code "*) ;; *) die "no step gave exit status $code (seen:$seen)" ;; esac
done

say "after the sweep: a run with room publishes, and keeps KEEP versions"
SHARDKIT_KEEP=2 nightly 0
[ "$(versions | wc -w)" -eq 2 ] || die "versions: $(versions)"
shardcheck --deep --source "$T/src" "$ROOT/current" >/dev/null || die "current does not verify"

echo "all nightly disk-full checks passed"
