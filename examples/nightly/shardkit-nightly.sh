#!/bin/sh
# shardkit-nightly.sh - rebuild a dataset from its source, prove it, publish it.
#
#   shardkit-nightly.sh [--src SRC] [--root ROOT] [--keep K] [-- SHARDIFY_OPTION...]
#
# Each run:
#   1. shardify SRC into ROOT/versions/<UTC time stamp>/ (a new directory):
#      incrementally from the current version when there is one and SRC is
#      a directory (shardify --incremental-or-full: unchanged files keep
#      their records, only new and changed ones are converted; a change of
#      options rebuilds in full);
#   2. shardcheck --deep --source SRC on it (plus SHARDKIT_CHECK_OPTIONS), and
#      the optional site hook SHARDKIT_NIGHTLY_BEFORE_CHECK before it;
#   3. only when both pass: points ROOT/current at the new version, atomically
#      (a new symlink renamed over the old one), so a reader sees the old
#      dataset or the new one, never a mixture;
#   4. prunes ROOT/versions to the K newest published versions (the current
#      one is never removed; a version that failed its check is kept for
#      inspection until the next run);
#   5. writes ROOT/runs/<stamp>.json, a summary for monitoring (see README.md),
#      next to the tools' full output (<stamp>.shardify.json,
#      <stamp>.shardcheck.json, the shardcheck report page <stamp>.html) and
#      their messages (<stamp>.log), and copies the summary to
#      ROOT/runs/latest.json;
#   6. renders ROOT/index.html, the history of the runs (shardreport nightly),
#      when shardreport is there (a page that cannot be written is a warning).
# A run that fails leaves `current` as it was.  Runs on one ROOT never
# overlap: the second exits with status 4 (ROOT/.nightly.lock, flock(1)).
#
# Links: ROOT itself may be a symbolic link (resolved once, like cd); inside
# ROOT the script follows none.  versions/ and runs/ are opened once and
# reached through /proc/self/fd/N (the very directories, whatever becomes of
# their names, like openat on a descriptor); every file it writes is created
# new (noclobber: O_EXCL) and renamed into place, and removal never goes
# through a link.  A link where the script keeps its own directory or file
# (versions, runs, .nightly.lock, versions/.published) stops the run with
# status 2 before anything is written.
#
# Settings (arguments win over the environment):
#   --src SRC      SHARDKIT_SRC      source directory or archive (required)
#   --root ROOT    SHARDKIT_ROOT     where versions/, current, runs/ live (required)
#   --keep K       SHARDKIT_KEEP     published versions to keep (default 7)
#   -- OPTIONS     SHARDKIT_OPTIONS  shardify options (e.g. --size 256 --codec jpeg)
#                  SHARDKIT_CHECK_OPTIONS  more shardcheck options (e.g. --visitation 8)
#                  SHARDKIT_BIN      directory holding shardify, shardcheck and
#                                    shardreport (default: found on PATH)
#                  SHARDKIT_KEEP_RUNS  run records to keep in runs/ (default 100)
#                  SHARDKIT_NIGHTLY_BEFORE_CHECK  a shell command run after shardify,
#                                    before shardcheck, with VERSION_DIR and SRC
#                                    exported; non-zero fails the run like a
#                                    failed check (site checks; tests use it)
# Exit status:
#   0  a new version was built, verified and published
#   1  shardify failed: nothing new was published
#   2  usage error (missing or bad setting), or ROOT holds a symbolic link where
#      the script keeps its own directory or file: nothing was done
#   3  the new version failed verification (shardcheck or the hook): not published
#   4  another run holds the lock on ROOT: nothing was done
#   5  the new version verified but could not be published (switching `current`)
set -u

usage() {
    sed -n '3,4p' "$0" | sed 's/^# *//' >&2
    echo "see the comments at the top of $0 and examples/nightly/README.md" >&2
    exit 2
}

SRC=${SHARDKIT_SRC:-}
ROOT=${SHARDKIT_ROOT:-}
KEEP=${SHARDKIT_KEEP:-7}
KEEP_RUNS=${SHARDKIT_KEEP_RUNS:-100}
OPTIONS=${SHARDKIT_OPTIONS:-}
CHECK_OPTIONS=${SHARDKIT_CHECK_OPTIONS:-}
HOOK=${SHARDKIT_NIGHTLY_BEFORE_CHECK:-}
while [ $# -gt 0 ]; do
    case $1 in
    --src) [ $# -ge 2 ] || usage; SRC=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || usage; ROOT=$2; shift 2 ;;
    --keep) [ $# -ge 2 ] || usage; KEEP=$2; shift 2 ;;
    --) shift; OPTIONS="$OPTIONS $*"; break ;;
    -h | --help) usage ;;
    *) echo "shardkit-nightly: unknown argument '$1'" >&2; usage ;;
    esac
done
if [ -z "$SRC" ] || [ -z "$ROOT" ]; then
    echo "shardkit-nightly: SRC and ROOT are required" >&2
    usage
fi
case $KEEP in '' | *[!0-9]* | 0) echo "shardkit-nightly: --keep must be a positive number" >&2; exit 2 ;; esac
case $KEEP_RUNS in '' | *[!0-9]*) echo "shardkit-nightly: SHARDKIT_KEEP_RUNS must be a number" >&2; exit 2 ;; esac

if [ -n "${SHARDKIT_BIN:-}" ]; then
    SHARDIFY=$SHARDKIT_BIN/shardify
    SHARDCHECK=$SHARDKIT_BIN/shardcheck
    SHARDREPORT=$SHARDKIT_BIN/shardreport
else
    SHARDIFY=$(command -v shardify) || { echo "shardkit-nightly: shardify not found on PATH" >&2; exit 2; }
    SHARDCHECK=$(command -v shardcheck) || { echo "shardkit-nightly: shardcheck not found on PATH" >&2; exit 2; }
    SHARDREPORT=$(command -v shardreport) || SHARDREPORT=""
fi

mkdir -p -- "$ROOT" || exit 2
# ROOT as given may be a symbolic link (the user's choice, like cd): resolved
# once, here.  Nothing inside ROOT is followed.
ROOT=$(cd -P -- "$ROOT" && pwd -P) || exit 2

# refuse NAME WHAT: ROOT/NAME is not what the script keeps there; stop
# before writing anything.
refuse() {
    echo "shardkit-nightly: '$ROOT/$1' is $2; the script keeps its own files there and follows no link inside ROOT: remove it" >&2
    exit 2
}

# same_file NAME FD: ROOT/NAME itself (not through a link) is the file or
# directory open on descriptor FD.
same_file() {
    [ "$(stat -c %d:%i -- "$ROOT/$1" 2>/dev/null)" = "$(stat -L -c %d:%i "/proc/self/fd/$2" 2>/dev/null)" ]
}

# One run at a time per ROOT (cron and systemd may overlap a slow run).
if command -v flock >/dev/null 2>&1; then
    [ ! -L "$ROOT/.nightly.lock" ] || refuse .nightly.lock "a symbolic link"
    exec 9>>"$ROOT/.nightly.lock" || exit 2    # >>: never truncates anything
    same_file .nightly.lock 9 || refuse .nightly.lock "not the file just opened (a link?)"
    if ! flock -n 9; then
        echo "shardkit-nightly: another run holds '$ROOT/.nightly.lock'; nothing done" >&2
        exit 4
    fi
fi

# pin NAME FD: open the directory ROOT/NAME (made if missing) on FD; later
# paths in it go through /proc/self/fd/FD, which is that very directory.
pin() {
    [ ! -L "$ROOT/$1" ] || refuse "$1" "a symbolic link"
    [ -d "$ROOT/$1" ] || mkdir -- "$ROOT/$1" || exit 2
    eval "exec $2<\"\$ROOT/\$1\"" || exit 2
    { [ -d "/proc/self/fd/$2" ] && same_file "$1" "$2"; } || refuse "$1" "not the directory just opened (a link?)"
}
pin versions 7
pin runs 8
V=/proc/self/fd/7    # ROOT/versions
R=/proc/self/fd/8    # ROOT/runs
if [ -L "$V/.published" ]; then
    refuse versions/.published "a symbolic link"
elif [ -e "$V/.published" ] && [ ! -f "$V/.published" ]; then
    refuse versions/.published "not a regular file"
fi
# From here on every file is created new, never an existing one nor through
# a link (noclobber opens with O_EXCL), then renamed into place.
set -C

# ---- the run's name, its record and its log -------------------------------------

# taken STAMP: something of that name (a link included) is in versions/ or runs/.
taken() {
    for p in "$V/$1" "$R/$1.json" "$R/$1.log" "$R/$1.shardify.json" "$R/$1.shardcheck.json" \
        "$R/$1.html"; do
        if [ -e "$p" ] || [ -L "$p" ]; then return 0; fi
    done
    return 1
}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
n=0
base=$stamp
while taken "$stamp"; do
    n=$((n + 1))
    stamp=$(printf '%s-%02d' "$base" "$n")
done
version="versions/$stamp"
VERSION_DIR="$ROOT/$version"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)
previous=$(readlink "$ROOT/current" 2>/dev/null || true)

# the log: opened once, on descriptor 3
exec 3>"$R/$stamp.log" || exit 2
log() {
    echo "shardkit-nightly: $*" >&2
    echo "$(date -u +%H:%M:%SZ) $*" >&3
}

# JSON string (escaped, quoted) or null for an empty value.
json_str() {
    if [ -z "$1" ]; then
        printf 'null'
        return
    fi
    printf '"'
    printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/\r/\\r/g' |
        awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
    printf '"'
}

# The first value of "FIELD": in a JSON file, or null.
json_field() {
    v=$(sed -n "s/^[^\"]*\"$2\": *\\([^,}]*\\).*/\\1/p" "$1" 2>/dev/null | head -n 1)
    printf '%s' "${v:-null}"
}

shardify_code=null shardify_seconds=null shardcheck_code=null shardcheck_seconds=null
status="" published=false exit_code=0 hook_code=null pruned=""

# ---- 1. build ------------------------------------------------------------------------

# Incremental from the current version: only a version of ours (versions/NAME,
# a directory, not a link) and a directory or s3:// source (an archive is
# read whole anyway).
incremental=""
case $previous in
versions/*/* | versions/.*) ;;
versions/?*)
    if [ -d "$V/${previous#versions/}" ] && [ ! -L "$V/${previous#versions/}" ] &&
        [ -f "$V/${previous#versions/}/manifest.json" ]; then
        case $SRC in
        s3://*) incremental="$ROOT/$previous" ;;
        *) [ ! -d "$SRC" ] || incremental="$ROOT/$previous" ;;
        esac
    fi
    ;;
esac
set --
[ -z "$incremental" ] || set -- --incremental-or-full "$incremental"

log "run $stamp: shardify '$SRC' -> '$VERSION_DIR' $OPTIONS $*"
s0=$(date +%s)
# shellcheck disable=SC2086  # OPTIONS is a list of options
"$SHARDIFY" "$SRC" "$VERSION_DIR" $OPTIONS "$@" --json >"$R/$stamp.shardify.json" 2>&3
shardify_code=$?
shardify_seconds=$(($(date +%s) - s0))
if [ $shardify_code -ne 0 ]; then
    status=shardify_failed
    exit_code=1
    log "shardify failed (exit $shardify_code); '$ROOT/current' is unchanged"
fi

# ---- 2. verify -------------------------------------------------------------------------

if [ -z "$status" ] && [ -n "$HOOK" ]; then
    log "hook: $HOOK"
    VERSION_DIR=$VERSION_DIR SRC=$SRC sh -c "$HOOK" >&3 2>&1
    hook_code=$?
    if [ $hook_code -ne 0 ]; then
        status=check_failed
        exit_code=3
        log "the hook failed (exit $hook_code); not published"
    fi
fi
if [ -z "$status" ]; then
    log "shardcheck --deep --source '$SRC' '$VERSION_DIR' $CHECK_OPTIONS"
    s0=$(date +%s)
    # the report page is created new here (noclobber) and written by
    # shardcheck through the descriptor, never through a name in runs/
    # shellcheck disable=SC2086
    "$SHARDCHECK" --deep --source "$SRC" $CHECK_OPTIONS --json --report /dev/fd/9 \
        "$VERSION_DIR" >"$R/$stamp.shardcheck.json" 2>&3 9>"$R/$stamp.html"
    shardcheck_code=$?
    shardcheck_seconds=$(($(date +%s) - s0))
    [ -s "$R/$stamp.html" ] || rm -f -- "$R/$stamp.html"  # the check could not run
    if [ $shardcheck_code -ne 0 ]; then
        status=check_failed
        exit_code=3
        log "shardcheck failed (exit $shardcheck_code); not published, kept in '$VERSION_DIR'"
    fi
fi

# ---- 3. publish ------------------------------------------------------------------------

if [ -z "$status" ]; then
    tmp_link="$ROOT/.current.$$"
    rm -f -- "$tmp_link"
    # ln -T never puts the link inside a directory of that name; mv -T
    # renames over `current` (a link is replaced, never followed)
    if ln -s -T -- "$version" "$tmp_link" && mv -T -- "$tmp_link" "$ROOT/current"; then
        sync "$ROOT" 2>/dev/null || true
        rm -f -- "$V/.published.tmp"
        { cat "$V/.published" 2>/dev/null; echo "$stamp"; } >"$V/.published.tmp" &&
            mv -T -- "$V/.published.tmp" "$V/.published"
        status=published
        published=true
        log "published: '$ROOT/current' -> $version"
    else
        rm -f -- "$tmp_link"
        status=publish_failed
        exit_code=5
        log "cannot switch '$ROOT/current' to $version; it is unchanged"
    fi
fi
current=$(readlink "$ROOT/current" 2>/dev/null || true)

# ---- 4. prune ----------------------------------------------------------------------------

# Keep: the current version, the KEEP newest published ones, and this run's
# version (published, or failed and kept for inspection).
# A symbolic link in versions/ is removed as a link: rm never follows the
# name it is given.
keep_list=$(
    if [ -f "$V/.published" ]; then
        sort -r "$V/.published" | while read -r v; do
            [ -d "$V/$v" ] && echo "$v"
        done | head -n "$KEEP"
    fi
    echo "${current#versions/}"
    echo "$stamp"
)
kept=""
for p in "$V"/*; do
    [ -d "$p" ] || [ -L "$p" ] || continue
    d=${p##*/}
    if printf '%s\n' "$keep_list" | grep -qxF "$d"; then
        kept="$kept $d"
    elif rm -rf -- "$p"; then
        pruned="$pruned $d"
        log "pruned versions/$d"
    fi
done
if [ -f "$V/.published" ]; then
    rm -f -- "$V/.published.tmp"
    while read -r v; do
        [ -d "$V/$v" ] && echo "$v"
    done <"$V/.published" >"$V/.published.tmp"
    mv -T -- "$V/.published.tmp" "$V/.published"
fi
# old run records (the summary and its companions) beyond KEEP_RUNS
for f in "$R"/*.json; do
    f=${f##*/}
    case $f in *.*.json | latest.json) continue ;; esac
    echo "${f%.json}"
done | sort -r | tail -n +$((KEEP_RUNS + 1)) | while read -r old; do
    [ "$old" = "$stamp" ] || rm -f -- "$R/$old".json "$R/$old".*.json "$R/$old".log "$R/$old".html
done

# ---- 5. the summary ----------------------------------------------------------------------

list_json() {
    first=1
    printf '['
    for x in $1; do
        [ $first -eq 1 ] || printf ', '
        json_str "$x"
        first=0
    done
    printf ']'
}

# the shardify summary without its list of rejects (that stays in the full output)
shardify_summary=$(sed -e 's/,"rejects":\[.*$/}/' "$R/$stamp.shardify.json" 2>/dev/null)
[ -n "$shardify_summary" ] || shardify_summary=null
# an incremental run: where from, and its lineage (what was added, changed,
# removed, reused ...), as its manifest records it
incremental_json=null
if [ -n "$incremental" ]; then
    lineage=$(sed -n 's/.*"lineage":\({[^}]*}\).*/\1/p' "$R/$stamp.shardify.json" 2>/dev/null)
    incremental_json="{\"previous\": $(json_str "$previous"), \"lineage\": ${lineage:-null}}"
fi
check_file="$R/$stamp.shardcheck.json"

summary="$R/.$stamp.json.tmp"
rm -f -- "$summary"
{
    printf '{\n'
    printf '  "run": %s,\n' "$(json_str "$stamp")"
    printf '  "status": %s,\n' "$(json_str "$status")"
    printf '  "published": %s,\n' "$published"
    printf '  "exit_code": %s,\n' "$exit_code"
    printf '  "started": %s,\n' "$(json_str "$started")"
    printf '  "finished": %s,\n' "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
    printf '  "seconds": %s,\n' "$(($(date +%s) - t0))"
    printf '  "source": %s,\n' "$(json_str "$SRC")"
    printf '  "root": %s,\n' "$(json_str "$ROOT")"
    printf '  "version": %s,\n' "$(json_str "$version")"
    printf '  "current": %s,\n' "$(json_str "$current")"
    printf '  "previous": %s,\n' "$(json_str "$previous")"
    printf '  "options": %s,\n' "$(json_str "$(printf '%s' "$OPTIONS" | sed 's/^ *//; s/  */ /g')")"
    printf '  "shardify": {"exit_code": %s, "seconds": %s, "summary": %s},\n' \
        "$shardify_code" "$shardify_seconds" "$shardify_summary"
    printf '  "incremental": %s,\n' "$incremental_json"
    printf '  "hook": {"exit_code": %s},\n' "$hook_code"
    printf '  "shardcheck": {"exit_code": %s, "seconds": %s, "verified": %s, "problem_count": %s},\n' \
        "$shardcheck_code" "$shardcheck_seconds" "$(json_field "$check_file" verified)" \
        "$(json_field "$check_file" problem_count)"
    printf '  "kept_versions": %s,\n' "$(list_json "$kept")"
    printf '  "pruned_versions": %s,\n' "$(list_json "$pruned")"
    printf '  "log": %s,\n' "$(json_str "runs/$stamp.log")"
    report=""
    [ -f "$R/$stamp.html" ] && report="runs/$stamp.html"
    printf '  "report": %s\n' "$(json_str "$report")"
    printf '}\n'
} >"$summary"
mv -T -- "$summary" "$R/$stamp.json"
rm -f -- "$R/.latest.json.tmp"
cat "$R/$stamp.json" >"$R/.latest.json.tmp" && mv -T -- "$R/.latest.json.tmp" "$R/latest.json"

# ---- 6. the index of runs ---------------------------------------------------------------

if [ -n "$SHARDREPORT" ] && [ -x "$SHARDREPORT" ]; then
    "$SHARDREPORT" nightly "$ROOT" >&3 2>&3 ||
        log "warning: '$ROOT/index.html' could not be written (see the log)"
else
    log "note: shardreport not found; '$ROOT/index.html' not written"
fi
log "run $stamp: $status (exit $exit_code); summary in runs/$stamp.json"
exit $exit_code
