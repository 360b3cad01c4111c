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
# published version (in $C/snap)
snapshot() {
    rm -rf "$C/snap" && mkdir "$C/snap"
    cur_before=$(current)
    published_list >"$C/snap/.published"
    while read -r v; do
        [ ! -d "$ROOT/versions/$v" ] || tree_state "$ROOT/versions/$v" >"$C/snap/$v"
    done <"$C/snap/.published"
}
# intact V WHY: published version V is there, byte for byte as in the snapshot
intact() {
    [ -d "$ROOT/versions/$1" ] || die "$2: versions/$1 is gone"
    same_state "$C/snap/$1" "$ROOT/versions/$1" "$2: versions/$1 changed"
}
no_temporaries() {
    left=$(find "$ROOT" \( -name '*.tmp' -o -name '.current.*' \) -print)
    [ -z "$left" ] || die "$1: temporaries left: $left"
}

# own_disk: (in a case) a tmpfs of its own at $DISK ($C/disk) holding a copy
# of the set-up's ROOT, made the case's ROOT; unmounted when the case ends
own_disk() {
    DISK="$C/disk"
    mount_tmpfs "$DISK" $BIG || die "cannot mount a tmpfs at '$DISK'"
    cp -a "$T/disk/root" "$DISK/root"
    ROOT="$DISK/root"
    export SHARDKIT_ROOT="$ROOT"
}
# disk_full_run: the disk fills up after shardify (the hook fills $FILLER):
# the run must exit 5
disk_full_run() {
    export FILLER="$DISK/filler"
    SHARDKIT_NIGHTLY_BEFORE_CHECK='head -c 1G /dev/zero >"$FILLER" 2>/dev/null; exit 0' \
        must_fail 5 shardkit-nightly
}
# space_freed_run: $FILLER removed, the next run; $v5 is its stamp
space_freed_run() {
    rm "$FILLER"
    nightly 0
    v5=$run
}

# ---- the set-up: three published versions on the tmpfs ($T/disk/root) -------------------------
export SHARDKIT_KEEP=3
nightly 0
v1=$run
nightly 0
v2=$run
nightly 0
v3=$run

case_three_nights_publish_three_versions() {
    [ "$(published_list | tr '\n' ' ')" = "$v1 $v2 $v3 " ] || die "published: $(published_list)"
}

# ---- the disk fills up in the middle of a run (each case on its own tmpfs) ----------------------

case_the_disk_filling_up_after_shardify_publishes_nothing_exit_5_published_list_and_every_version_intact() {
    own_disk
    snapshot
    disk_full_run
    must_say "No space left on device" "$T/err"
    must_say "not published" "$T/err"
    [ "$(current)" = "versions/$v3" ] || die "current moved to '$(current)'"
    cmp -s "$C/snap/.published" "$ROOT/versions/.published" ||
        die "versions/.published changed: '$(published_list | tr '\n' ' ')'"
    for v in $v1 $v2 $v3; do intact "$v" "a full disk"; done
    no_temporaries "a full disk"
}

case_space_freed_the_next_run_publishes_and_keeps_the_k_newest_published_the_previous_current_among_them() {
    own_disk
    snapshot
    disk_full_run
    space_freed_run
    [ "$(current)" = "versions/$v5" ] || die "current is '$(current)'"
    [ "$(published_list | tr '\n' ' ')" = "$v2 $v3 $v5 " ] || die "published: $(published_list | tr '\n' ' ')"
    [ "$(versions)" = "$v2 $v3 $v5 " ] || die "versions: $(versions)"
    for v in $v2 $v3; do intact "$v" "the run after a full disk"; done
}

# ---- free space stepped across a run ---------------------------------------------------------

# With KEEP=2 every published run prunes a version, whose space the writes
# after it then use; with KEEP=50 none is pruned, and the last writes of a
# published run (its record, latest.json) may be the ones that fail.  The
# case starts where the run after a full disk left ROOT (it makes both runs
# on its own tmpfs); after the sweep, a run with room publishes.
case_free_space_stepped_from_0_to_400_kb_at_keep_2_and_50_keeps_current_published_and_kept_versions() {
    own_disk
    disk_full_run
    space_freed_run
    seen=""
    for keep in 2 50; do
    say "free space stepped from 0 to 400 KB, KEEP=$keep:" \
        "every step keeps current, versions/.published and the kept versions"
    export SHARDKIT_KEEP=$keep
    nightly 0  # (prunes to the new KEEP)
    steps="$(seq 0 4 196) $(seq 200 40 400)"
    for kb in $steps; do
        snapshot
        used=$(df -k --output=used "$DISK" | tail -n 1 | tr -d ' ')
        mount -o "remount,size=$((used + kb))k" "$DISK"
        set +e
        shardkit-nightly >"$C/out" 2>"$C/err"
        code=$?
        set -e
        mount -o "remount,size=$BIG" "$DISK"
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
                must_say "warning: cannot write" "$C/err"
            fi
            ;;
        1 | 5)
            [ "$new" = "$cur_before" ] || die "$at: current moved to '$new'"
            # nothing published is gone, nothing is unlisted
            while read -r v; do
                intact "$v" "$at"
                has_published "$v" || die "$at: versions/.published lost $v"
            done <"$C/snap/.published"
            shardcheck "$ROOT/current" >/dev/null || die "$at: current does not verify"
            [ "$code" -eq 5 ] || must_say "shardify failed" "$C/err"
            [ "$code" -eq 1 ] || must_say "not published" "$C/err"
            grep -qF -e "No space left on device" -e "disk full" "$C/err" ||
                { cat "$C/err" >&2; die "$at: the messages do not say the disk is full"; }
            ;;
        *)
            cat "$C/err" >&2
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
}

run_cases
