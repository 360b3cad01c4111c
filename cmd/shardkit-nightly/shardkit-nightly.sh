#!/bin/sh
# shardkit-nightly - rebuild a dataset from its source, prove it, publish it.
#
# Usage: shardkit-nightly [--src SRC] [--root ROOT] [--keep K] [--max-loss PCT] [-- SHARDIFY_OPTION...]
# Rebuild a dataset from its source, prove it, publish it: one run a night.
#
# Each run:
#   1.  removes what earlier runs left unpublished in ROOT/versions (a
#       version that failed its check, what a killed run left), so that its
#       space is free for this run;
#   2.  shardify SRC into ROOT/versions/<UTC time stamp>/ (a new directory;
#       with --allow-empty, as step 3 judges an empty version):
#       incrementally from the current version when there is one and SRC is
#       a directory (shardify --incremental-or-full: unchanged files keep
#       their records, only new and changed ones are converted; a change of
#       options rebuilds in full); a shardify that fails leaves no version;
#   3.  refuses a version that lost more than PCT percent of the current
#       version's samples (--max-loss, default 10; an empty version is
#       refused even on the first run): an emptied or unmounted SRC, a
#       mistyped prefix;
#   4.  shardcheck --deep --source SRC on it (plus SHARDKIT_CHECK_OPTIONS),
#       and the optional site hook SHARDKIT_NIGHTLY_BEFORE_CHECK before it;
#   5.  only when all pass and the check's reports are kept: adds the
#       version to ROOT/versions/.published, then points ROOT/current at it,
#       atomically (a new symlink renamed over the old one), so a reader
#       sees the old dataset or the new one, never a mixture;
#   6.  prunes ROOT/versions to the K newest published versions (the current
#       one is never removed; a version refused by steps 3-4 is kept for
#       inspection until the next run);
#   7.  writes ROOT/runs/<stamp>.json, a summary for monitoring (its
#       fields: docs/guide/nightly.md), next to the tools' full output
#       (<stamp>.shardify.json, <stamp>.shardcheck.json, the shardcheck
#       report page <stamp>.html) and their messages (<stamp>.log), and
#       copies the summary to ROOT/runs/latest.json;
#   8.  renders ROOT/index.html, the history of the runs (shardreport
#       nightly), when shardreport is there (a page that cannot be written
#       is a warning).
# A run that fails leaves `current` as it was.  Runs on one ROOT never
# overlap: the second exits with status 4 (ROOT/.nightly.lock, flock(1)).
#
# Writes: every file the job keeps is written as a new temporary, read
# back, fsync'd and renamed into place; a write that fails (a full disk)
# leaves the old file as it was and is an error, never a silently shorter
# file.  versions/.published only ever grows by a version (before `current`
# is switched to it) or loses versions that are gone; a version is pruned
# only when K newer published versions are kept.
#
# Links: ROOT itself may be a symbolic link (resolved once, like cd); inside
# ROOT the job follows none.  versions/ and runs/ are opened once and
# reached through /proc/self/fd/N (the very directories, whatever becomes of
# their names, like openat on a descriptor); every file it writes is created
# new (noclobber: O_EXCL) and renamed into place, and removal never goes
# through a link.  A link where the job keeps its own directory or file
# (versions, runs, .nightly.lock, versions/.published) stops the run with
# status 2 before anything is written.
#
# Options (each wins over its environment variable):
#   --src SRC         source directory or archive (required; SHARDKIT_SRC)
#   --root ROOT       where versions/, current, runs/ live (required;
#                     SHARDKIT_ROOT)
#   --keep K          published versions to keep (default 7; SHARDKIT_KEEP)
#   --max-loss PCT    the largest share of the current version's samples, in
#                     percent (0-100), a new version may lose and still be
#                     published (default 10; 100 publishes whatever
#                     verifies; SHARDKIT_MAX_LOSS)
#   -- OPTION...      shardify options, after those of SHARDKIT_OPTIONS
#   -h, --help        show this help
#   --version         show the version
#
# Environment:
#   SHARDKIT_SRC, SHARDKIT_ROOT, SHARDKIT_KEEP, SHARDKIT_MAX_LOSS
#                     as --src, --root, --keep and --max-loss
#   SHARDKIT_OPTIONS  shardify options (e.g. --size 256 --codec jpeg)
#   SHARDKIT_CHECK_OPTIONS
#                     more shardcheck options (e.g. --visitation 8)
#   SHARDKIT_BIN      directory holding shardify, shardcheck and shardreport
#                     (default: found on PATH)
#   SHARDKIT_KEEP_RUNS
#                     run records to keep in runs/ (default 100)
#   SHARDKIT_NIGHTLY_BEFORE_CHECK
#                     a shell command run after shardify, before shardcheck,
#                     with VERSION_DIR and SRC exported; non-zero fails the
#                     run like a failed check (site checks; tests use it)
#
# Options after -- reach shardify exactly as given.  SHARDKIT_OPTIONS and
# SHARDKIT_CHECK_OPTIONS are split into words as a shell splits a command
# line, but nothing in them is evaluated: blanks (space, tab, newline)
# separate words; '...' quotes anything but '; "..." quotes anything, a
# backslash in it quoting \ " $ ` and newline; outside quotes a backslash
# quotes the next character.  $, `, *, ?, [, ~, #, ; and the like are plain
# characters: no variable, command, file name or comment.  An unterminated
# quote is a usage error.
#
# Exit status: 0 published; 1 shardify failed; 2 usage error (a missing or
# bad setting, options shardify refused, a symbolic link where the job keeps
# its own directory or file); 3 the new version failed verification; 4
# another run holds the lock on ROOT, nothing done; 5 not published, a write
# it needs failed; 6 not published, it lost more samples than --max-loss
# allows; 7 published, but a record after it could not be written.  Only 0
# and 7 publish (shardkit-nightly(1), EXIT STATUS, says more).
set -u

VERSION=@VERSION@ # the build's (make puts it in bin/shardkit-nightly)

usage() {
    sed -n '3,4p' "$0" | sed 's/^# *//' >&2
    echo "see 'shardkit-nightly --help' or shardkit-nightly(1)" >&2
    exit 2
}

# --help: the comment above, from the usage line to the exit statuses (the
# manual page shardkit-nightly(1) is made from it)
help() {
    sed -n '4,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 0
}

# ---- words and JSON ----------------------------------------------------------------

# shq WORD: $_q gets WORD quoted for `eval "set -- ..."` (any bytes).
shq() {
    _s=$1 _r=
    while :; do
        case $_s in
        *\'*) _r="$_r${_s%%\'*}'\\''" _s=${_s#*\'} ;;
        *) break ;;
        esac
    done
    _q="'$_r$_s'"
}

# Split the variable WORDS into words (the rules above) and print each one
# quoted for eval; status 1 (2) on an unterminated single (double) quote.
SPLIT_AWK='
function quoted(w,    out, k) {
    out = ""
    while ((k = index(w, "\047")) > 0) {
        out = out substr(w, 1, k - 1) "\047\\\047\047"
        w = substr(w, k + 1)
    }
    return "\047" out w "\047"
}
BEGIN {
    s = ENVIRON["WORDS"]; n = length(s); out = ""; w = ""; inword = 0; q = ""
    for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        if (q == "\047") {
            if (c == "\047") q = ""; else w = w c
            continue
        }
        if (q == "\"") {
            if (c == "\"") { q = ""; continue }
            if (c == "\\" && i < n) {
                d = substr(s, i + 1, 1)
                if (d == "\n") { i++; continue }
                if (d == "\\" || d == "\"" || d == "$" || d == "`") { w = w d; i++; continue }
            }
            w = w c
            continue
        }
        if (c == " " || c == "\t" || c == "\n") {
            if (inword) { out = out " " quoted(w); w = ""; inword = 0 }
            continue
        }
        if (c == "\\" && i < n) {
            i++
            d = substr(s, i, 1)
            if (d != "\n") { w = w d; inword = 1 }
            continue
        }
        inword = 1
        if (c == "\047" || c == "\"") q = c; else w = w c
    }
    if (q != "") exit q == "\"" ? 2 : 1
    if (inword) out = out " " quoted(w)
    printf "%s", out
}'

# words NAME VALUE: $_words gets VALUE (the environment variable NAME)
# split into quoted words, or the run stops with a usage error.
words() {
    _words=$(WORDS=$2 LC_ALL=C awk "$SPLIT_AWK") && return 0
    [ $? -eq 2 ] && _what=double || _what=single
    echo "shardkit-nightly: $1 has an unterminated $_what quote; see the quoting rules in 'shardkit-nightly --help'" >&2
    exit 2
}

# JSON for any bytes: UTF-8 is kept, quotes, backslashes and control bytes
# are escaped, a byte that is not UTF-8 becomes the text \xNN (as in the
# tools' messages).  Modes: s WORD (a string; null when empty), a WORD...
# (an array of strings), x WORD (the hex of WORD's bytes when it is not
# UTF-8, else nothing).
JSON_AWK='
function utf8_length(s, i, n,    c, need, lo, hi, k, b) {
    c = ord[substr(s, i, 1)]
    if (c < 128) return 1
    if (c >= 194 && c <= 223) need = 1
    else if (c >= 224 && c <= 239) need = 2
    else if (c >= 240 && c <= 244) need = 3
    else return 0
    if (i + need > n) return 0
    lo = 128; hi = 191
    if (c == 224) lo = 160; else if (c == 237) hi = 159
    else if (c == 240) lo = 144; else if (c == 244) hi = 143
    b = ord[substr(s, i + 1, 1)]
    if (b < lo || b > hi) return 0
    for (k = 2; k <= need; k++) {
        b = ord[substr(s, i + k, 1)]
        if (b < 128 || b > 191) return 0
    }
    return need + 1
}
function json_string(s,    n, i, k, c, o, out) {
    n = length(s); out = "\""
    for (i = 1; i <= n; i += k) {
        k = utf8_length(s, i, n)
        if (k > 1) { out = out substr(s, i, k); continue }
        c = substr(s, i, 1); o = ord[c]; k = 1
        if (o >= 128) out = out sprintf("\\\\x%02x", o)
        else if (c == "\"") out = out "\\\""
        else if (c == "\\") out = out "\\\\"
        else if (c == "\n") out = out "\\n"
        else if (c == "\t") out = out "\\t"
        else if (c == "\r") out = out "\\r"
        else if (o < 32 || o == 127) out = out sprintf("\\u%04x", o)
        else out = out c
    }
    return out "\""
}
function is_utf8(s,    n, i, k) {
    n = length(s)
    for (i = 1; i <= n; i += k)
        if (!(k = utf8_length(s, i, n))) return 0
    return 1
}
BEGIN {
    for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i
    mode = ARGV[1]
    if (mode == "s") {
        printf "%s", (ARGC < 3 || ARGV[2] == "") ? "null" : json_string(ARGV[2])
    } else if (mode == "a") {
        printf "["
        for (i = 2; i < ARGC; i++) printf "%s%s", (i > 2) ? ", " : "", json_string(ARGV[i])
        printf "]"
    } else if (mode == "x" && !is_utf8(ARGV[2])) {
        n = length(ARGV[2])
        for (i = 1; i <= n; i++) printf "%02x", ord[substr(ARGV[2], i, 1)]
    }
    exit 0
}'
json() { LC_ALL=C awk -- "$JSON_AWK" "$@"; }

# ---- settings ------------------------------------------------------------------------

SRC=${SHARDKIT_SRC:-}
ROOT=${SHARDKIT_ROOT:-}
KEEP=${SHARDKIT_KEEP:-7}
KEEP_RUNS=${SHARDKIT_KEEP_RUNS:-100}
MAX_LOSS=${SHARDKIT_MAX_LOSS:-10}
HOOK=${SHARDKIT_NIGHTLY_BEFORE_CHECK:-}
words SHARDKIT_OPTIONS "${SHARDKIT_OPTIONS:-}"
OPTIONS_Q=$_words
words SHARDKIT_CHECK_OPTIONS "${SHARDKIT_CHECK_OPTIONS:-}"
CHECK_OPTIONS_Q=$_words
while [ $# -gt 0 ]; do
    case $1 in
    --src) [ $# -ge 2 ] || usage; SRC=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || usage; ROOT=$2; shift 2 ;;
    --keep) [ $# -ge 2 ] || usage; KEEP=$2; shift 2 ;;
    --max-loss) [ $# -ge 2 ] || usage; MAX_LOSS=$2; shift 2 ;;
    --)
        shift
        for a; do
            shq "$a"
            OPTIONS_Q="$OPTIONS_Q $_q"
        done
        break
        ;;
    -h | --help) help ;;
    --version) echo "shardkit-nightly $VERSION"; exit 0 ;;
    *) printf "shardkit-nightly: unknown argument '%s'\n" "$1" >&2; usage ;;
    esac
done
if [ -z "$SRC" ] || [ -z "$ROOT" ]; then
    echo "shardkit-nightly: SRC and ROOT are required" >&2
    usage
fi
case $KEEP in '' | *[!0-9]* | 0) echo "shardkit-nightly: --keep must be a positive number" >&2; exit 2 ;; esac
case $KEEP_RUNS in '' | *[!0-9]*) echo "shardkit-nightly: SHARDKIT_KEEP_RUNS must be a number" >&2; exit 2 ;; esac
case $MAX_LOSS in
'' | *[!0-9]* | ????*) MAX_LOSS=bad ;;
*) [ "$MAX_LOSS" -le 100 ] || MAX_LOSS=bad ;;
esac
if [ "$MAX_LOSS" = bad ]; then
    echo "shardkit-nightly: --max-loss (SHARDKIT_MAX_LOSS) must be a whole percentage, 0 to 100" >&2
    exit 2
fi

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
# once, here.  Nothing inside ROOT is followed.  (The x keeps a name that
# ends in a newline whole.)
ROOT=$(cd -P -- "$ROOT" && pwd -P && echo x) || exit 2
ROOT=${ROOT%?x}

# refuse NAME WHAT: ROOT/NAME is not what the job keeps there; stop
# before writing anything.
refuse() {
    printf "shardkit-nightly: '%s' is %s; the job keeps its own files there and follows no link inside ROOT: remove it\n" \
        "$ROOT/$1" "$2" >&2
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
        printf "shardkit-nightly: another run holds '%s'; nothing done\n" "$ROOT/.nightly.lock" >&2
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
previous=$(readlink "$ROOT/current" 2>/dev/null && echo x) || previous=""
previous=${previous%?x}

# the log: opened once, on descriptor 3.  Its messages also go to stderr, so
# a log that cannot be written (a full disk) loses nothing the caller sees.
log_name="runs/$stamp.log"
{ command exec 3>"$R/$stamp.log"; } 2>/dev/null || {
    printf "shardkit-nightly: warning: cannot create '%s'; messages go to stderr only\n" "$ROOT/$log_name" >&2
    exec 3>/dev/null
    log_name=""
}
log() {
    printf 'shardkit-nightly: %s\n' "$*" >&2
    printf '%s %s\n' "$(date -u +%H:%M:%SZ)" "$*" >&3 2>/dev/null
}

# put DIR NAME TEXT: DIR/NAME holds TEXT and a newline, written as a new
# temporary, read back, fsync'd and renamed over NAME; or put fails, with
# the reason in $put_error, and DIR/NAME is as it was.
put() {
    case $2 in .*) _t="$1/$2.tmp" ;; *) _t="$1/.$2.tmp" ;; esac
    rm -f -- "$_t"
    if _e=$({ printf '%s\n' "$3" | cat >"$_t"; } 2>&1) &&
        _e="the file read back differs" && printf '%s\n' "$3" | cmp -s - "$_t" &&
        _e=$(sync -- "$_t" 2>&1) && _e=$(mv -T -- "$_t" "$1/$2" 2>&1); then
        sync -- "$1" 2>/dev/null || true
        return 0
    fi
    rm -f -- "$_t"
    put_error=${_e##*: }
    put_error=${put_error:-"write failed"}
    return 1
}

# complete_json FILE: FILE is one whole line of JSON as the tools print it
# ("{...}" and a newline): not cut short by a full disk.
complete_json() {
    [ "$(wc -l <"$1" 2>/dev/null)" = 1 ] && [ "$(tail -c 2 "$1" | od -An -c | tr -d ' ')" = '}\n' ]
}

# manifest_samples DIR: the samples DIR/manifest.json counts (empty when unreadable).
manifest_samples() {
    sed -n '/"counts": {/,/}/ s/^ *"samples": *\([0-9][0-9]*\).*/\1/p' "$1/manifest.json" 2>/dev/null |
        head -n 1
}

# in_list NAME QUOTED_LIST: NAME is one of the words of QUOTED_LIST.
in_list() {
    _n=$1
    eval "set -- $2"
    for _x; do [ "$_x" = "$_n" ] && return 0; done
    return 1
}

shardify_code=null shardify_seconds=null shardcheck_code=null shardcheck_seconds=null
status="" published=false exit_code=0 hook_code=null error="" pruned_q=""
samples_json=null current_samples_json=null check_out=""

# fail STATUS CODE MESSAGE: the run failed (the first failure is the run's).
fail() {
    status=$1 exit_code=$2 error=$3
    log "$3"
}
# late MESSAGE: a write after the version was published failed.
late() {
    log "warning: $1"
    [ "$exit_code" -ne 0 ] || { exit_code=7 error=$1; }
}

# ---- versions/.published and pruning ------------------------------------------------------

# read_published: $published_list gets the lines of versions/.published (empty
# when there is none); fails when it is there but cannot be read.
read_published() {
    published_list=""
    [ -e "$V/.published" ] || return 0
    published_list=$(cat -- "$V/.published") || return 1
}

# newest_published K: the K newest published versions still in versions/,
# quoted for in_list.
newest_published() {
    _list=$(printf '%s\n' "$published_list" | LC_ALL=C sort -r) || return 1
    _keep="" _n=0 _ifs=$IFS
    IFS='
'
    set -f
    for _v in $_list; do
        case $_v in . | .. | */* | .*) continue ;; esac
        [ "$_n" -lt "$1" ] && [ -d "$V/$_v" ] && [ ! -L "$V/$_v" ] || continue
        shq "$_v"
        _keep="$_keep $_q"
        _n=$((_n + 1))
    done
    set +f
    IFS=$_ifs
}

# prune KEEP_Q: remove every entry of versions/ but the names in KEEP_Q
# (hidden names, .published, are not versions).  rm never follows the name
# it is given: a link is removed as a link.
prune() {
    for _p in "$V"/*; do
        [ -d "$_p" ] || [ -L "$_p" ] || continue
        _d=${_p##*/}
        ! in_list "$_d" "$1" || continue
        if rm -rf -- "$_p"; then
            shq "$_d"
            pruned_q="$pruned_q $_q"
            log "pruned versions/$_d"
        else
            log "warning: cannot remove versions/$_d entirely"
        fi
    done
}

# ---- 1. what earlier runs left unpublished ----------------------------------------------

shq "${previous#versions/}"
current_q=$_q
if read_published; then
    newest_published 1000000000 && prune "$_keep $current_q"
else
    log "warning: cannot read versions/.published; nothing is pruned"
fi

# ---- 2. build ------------------------------------------------------------------------

# Incremental from the current version: only a version of ours (versions/NAME,
# a directory, not a link) and a directory or s3:// source (an archive is
# read whole anyway).
incremental=""
current_dir=""
case $previous in
versions/*/* | versions/.*) ;;
versions/?*)
    if [ -d "$V/${previous#versions/}" ] && [ ! -L "$V/${previous#versions/}" ] &&
        [ -f "$V/${previous#versions/}/manifest.json" ]; then
        current_dir="$V/${previous#versions/}"
        case $SRC in
        s3://*) incremental="$ROOT/$previous" ;;
        *) [ ! -d "$SRC" ] || incremental="$ROOT/$previous" ;;
        esac
    fi
    ;;
esac
eval "set -- $OPTIONS_Q"
[ -z "$incremental" ] || set -- "$@" --incremental-or-full "$incremental"
# an empty version is published by shardify, then judged here (step 3)
set -- --allow-empty "$@"

shq "$SRC"
src_q=$_q
shq "$VERSION_DIR"
dst_q=$_q
shq "$incremental"
log "run $stamp: shardify --allow-empty$OPTIONS_Q${incremental:+ --incremental-or-full $_q} $src_q $dst_q"
s0=$(date +%s)
if ! { command exec 5>"$R/$stamp.shardify.json"; } 2>/dev/null; then
    fail publish_failed 5 "cannot create 'runs/$stamp.shardify.json'; shardify was not run"
else
    # its messages come back through a pipe (a full disk may refuse the log)
    shardify_messages=$("$SHARDIFY" "$@" --json -- "$SRC" "$VERSION_DIR" 2>&1 >&5)
    shardify_code=$?
    exec 5>&-
    printf '%s\n' "$shardify_messages" >&3 2>/dev/null
    shardify_seconds=$(($(date +%s) - s0))
    case $shardify_code in
    0)
        complete_json "$R/$stamp.shardify.json" ||
            fail publish_failed 5 "shardify's report 'runs/$stamp.shardify.json' could not be written whole (disk full?); not published"
        ;;
    2)
        why=$(printf '%s\n' "$shardify_messages" | sed -n 's/^shardify: //p' | head -n 1)
        fail shardify_usage_error 2 "shardify refused its options (usage error): ${why:-see the log}; nothing was built"
        ;;
    *)
        why=$(printf '%s\n' "$shardify_messages" | sed -n 's/^shardify: //p' | tail -n 1)
        fail shardify_failed 1 "shardify failed (exit $shardify_code): ${why:-see the log}; '$ROOT/current' is unchanged"
        ;;
    esac
fi
if [ "$status" = shardify_failed ] || [ "$status" = shardify_usage_error ] ||
    { [ "$status" = publish_failed ] && [ "$shardify_code" = null ]; }; then
    # nothing to inspect: the reason is in the record and the log
    rm -rf -- "${V:?}/$stamp"
fi

# ---- 3. no version that lost its samples ------------------------------------------------

if [ -z "$status" ]; then
    samples=$(manifest_samples "$V/$stamp")
    samples_json=${samples:-null}
    current_samples=""
    [ -z "$current_dir" ] || current_samples=$(manifest_samples "$current_dir")
    current_samples_json=${current_samples:-null}
    if [ -z "$samples" ]; then
        fail publish_failed 5 "cannot read the sample count of '$VERSION_DIR/manifest.json'; not published"
    elif [ "$MAX_LOSS" -lt 100 ] && [ "$samples" -eq 0 ]; then
        fail sample_loss 6 "the new version holds no samples (SRC empty or not mounted?); not published, kept in '$VERSION_DIR' (--max-loss 100 publishes it)"
    elif [ -n "$current_samples" ] && [ "$samples" -lt "$current_samples" ] &&
        [ $(((current_samples - samples) * 100)) -gt $((MAX_LOSS * current_samples)) ]; then
        fail sample_loss 6 "the new version holds $samples samples, the current one $current_samples: it lost more than --max-loss $MAX_LOSS%; not published, kept in '$VERSION_DIR' (a larger --max-loss publishes it)"
    fi
fi

# ---- 4. verify -------------------------------------------------------------------------

if [ -z "$status" ] && [ -n "$HOOK" ]; then
    log "hook: $HOOK"
    VERSION_DIR=$VERSION_DIR SRC=$SRC sh -c "$HOOK" >&3 2>&1
    hook_code=$?
    [ $hook_code -eq 0 ] || fail check_failed 3 "the hook failed (exit $hook_code); not published"
fi
if [ -z "$status" ]; then
    eval "set -- $CHECK_OPTIONS_Q"
    log "shardcheck --deep --source $src_q '$VERSION_DIR'$CHECK_OPTIONS_Q"
    s0=$(date +%s)
    # The report page is created new here (noclobber) and written by
    # shardcheck through the descriptor, never through a name in runs/; the
    # JSON report comes back through a pipe and is written by put().
    if ! { command exec 6>"$R/$stamp.html"; } 2>/dev/null; then
        fail publish_failed 5 "cannot create 'runs/$stamp.html'; not published"
    else
        check_out=$("$SHARDCHECK" --deep --source "$SRC" "$@" --json --report /dev/fd/6 \
            -- "$VERSION_DIR" 2>&3)
        shardcheck_code=$?
        exec 6>&-
        shardcheck_seconds=$(($(date +%s) - s0))
    fi
fi
check_field() {
    v=$(printf '%s\n' "$check_out" | sed -n "s/^[^\"]*\"$1\": *\\([a-z0-9]*\\).*/\\1/p" | head -n 1)
    printf '%s' "${v:-null}"
}
verified=null problem_count=null
case $check_out in '{'*'}') verified=$(check_field verified) problem_count=$(check_field problem_count) ;; esac
if [ -z "$status" ] && [ "$shardcheck_code" != null ]; then
    if [ "$shardcheck_code" -ne 0 ] && [ "$verified" = true ]; then
        # every check passed, but shardcheck could not write its page
        rm -f -- "$R/$stamp.html"
        fail publish_failed 5 "the version verified but shardcheck could not write its report page 'runs/$stamp.html' (disk full?); not published"
    elif [ "$shardcheck_code" -ne 0 ]; then
        [ -s "$R/$stamp.html" ] || rm -f -- "$R/$stamp.html"  # the check could not run
        fail check_failed 3 "shardcheck failed (exit $shardcheck_code); not published, kept in '$VERSION_DIR'"
    elif [ "$verified" != true ]; then
        fail check_failed 3 "shardcheck's report 'runs/$stamp.shardcheck.json' is incomplete; not published"
    fi
fi
if [ -n "$check_out" ] && ! put "$R" "$stamp.shardcheck.json" "$check_out"; then
    if [ -z "$status" ]; then
        fail publish_failed 5 "cannot write shardcheck's report 'runs/$stamp.shardcheck.json': $put_error; not published"
    else
        log "warning: cannot write shardcheck's report 'runs/$stamp.shardcheck.json': $put_error"
    fi
fi

# ---- 5. publish ------------------------------------------------------------------------

if [ -z "$status" ]; then
    if ! read_published; then
        fail publish_failed 5 "cannot read versions/.published; not published"
    elif ! put "$V" .published "${published_list:+$published_list
}$stamp"; then
        fail publish_failed 5 "cannot add $stamp to versions/.published: $put_error; not published"
    else
        tmp_link="$ROOT/.current.$$"
        rm -f -- "$tmp_link"
        # ln -T never puts the link inside a directory of that name; mv -T
        # renames over `current` (a link is replaced, never followed)
        if ln -s -T -- "$version" "$tmp_link" && mv -T -- "$tmp_link" "$ROOT/current"; then
            sync "$ROOT" 2>/dev/null || true
            status=published
            published=true
            log "published: '$ROOT/current' -> $version"
        else
            rm -f -- "$tmp_link"
            # the version was never current: not a published one after all
            put "$V" .published "$published_list" ||
                log "warning: versions/.published lists $stamp, which was not published: $put_error"
            fail publish_failed 5 "cannot switch '$ROOT/current' to $version; it is unchanged"
        fi
    fi
fi
current=$(readlink "$ROOT/current" 2>/dev/null && echo x) || current=""
current=${current%?x}

# ---- 6. prune ----------------------------------------------------------------------------

# Keep: the current version, the KEEP newest published ones, and this run's
# version (published, or refused and kept for inspection).
shq "${current#versions/}"
current_q=$_q
shq "$stamp"
stamp_q=$_q
if read_published && newest_published "$KEEP"; then
    prune "$_keep $current_q $stamp_q"
    # drop the versions that are gone from the list; a list that cannot be
    # written stays as it was (longer, never shorter)
    if [ -e "$V/.published" ]; then
        tidy="" _ifs=$IFS
        IFS='
'
        set -f
        for v in $published_list; do
            case $v in . | .. | */*) continue ;; esac
            [ ! -d "$V/$v" ] || tidy="$tidy$v
"
        done
        set +f
        IFS=$_ifs
        tidy=${tidy%?}
        if [ "$tidy" != "$published_list" ] && ! put "$V" .published "$tidy"; then
            late "cannot rewrite versions/.published without the pruned versions: $put_error (it lists them still)"
        fi
    fi
else
    log "warning: cannot read versions/.published; nothing is pruned"
fi
kept_q=""
for p in "$V"/*; do
    if [ -d "$p" ] || [ -L "$p" ]; then
        shq "${p##*/}"
        kept_q="$kept_q $_q"
    fi
done
# old run records (the summary and its companions) beyond KEEP_RUNS
for f in "$R"/*.json; do
    f=${f##*/}
    case $f in *.*.json | latest.json) continue ;; esac
    printf '%s\n' "${f%.json}"
done | sort -r | tail -n +$((KEEP_RUNS + 1)) | while read -r old; do
    [ "$old" = "$stamp" ] || rm -f -- "$R/$old".json "$R/$old".*.json "$R/$old".log "$R/$old".html
done

# ---- 7. the summary ----------------------------------------------------------------------

# the shardify summary without its lists of rejects and warnings (they stay
# in the full output); only a report printed whole
shardify_summary=null
if complete_json "$R/$stamp.shardify.json"; then
    shardify_summary=$(sed -e 's/,"rejects":\[.*$/}/' "$R/$stamp.shardify.json" 2>/dev/null)
    [ -n "$shardify_summary" ] || shardify_summary=null
fi
# an incremental run: where from, and its lineage (what was added, changed,
# removed, reused ...), as its manifest records it; a JSON string in it may
# hold any character but an unescaped quote
incremental_json=null
if [ -n "$incremental" ]; then
    lineage=$(printf '%s\n' "$shardify_summary" |
        sed -n -E 's/.*,"lineage":(\{("([^"\\]|\\.)*"|[^"}])*\}).*/\1/p')
    incremental_json="{\"previous\": $(json s "$previous"), \"lineage\": ${lineage:-null}}"
fi
report=""
[ -f "$R/$stamp.html" ] && report="runs/$stamp.html"
eval "set -- $OPTIONS_Q"
options_json=$(json a "$@")
eval "set -- $CHECK_OPTIONS_Q"
check_options_json=$(json a "$@")
eval "set -- $kept_q"
kept_json=$(json a "$@")
eval "set -- $pruned_q"
pruned_json=$(json a "$@")
# SRC and ROOT exactly, in hex, when they are not UTF-8
source_hex=$(json x "$SRC")
[ -z "$source_hex" ] || source_hex="
  \"source_hex\": \"$source_hex\","
root_hex=$(json x "$ROOT")
[ -z "$root_hex" ] || root_hex="
  \"root_hex\": \"$root_hex\","

record="{
  \"run\": $(json s "$stamp"),
  \"status\": $(json s "$status"),
  \"published\": $published,
  \"exit_code\": $exit_code,
  \"error\": $(json s "$error"),
  \"started\": $(json s "$started"),
  \"finished\": $(json s "$(date -u +%Y-%m-%dT%H:%M:%SZ)"),
  \"seconds\": $(($(date +%s) - t0)),
  \"source\": $(json s "$SRC"),$source_hex
  \"root\": $(json s "$ROOT"),$root_hex
  \"version\": $(json s "$version"),
  \"current\": $(json s "$current"),
  \"previous\": $(json s "$previous"),
  \"options\": $options_json,
  \"check_options\": $check_options_json,
  \"max_loss\": $MAX_LOSS,
  \"samples\": {\"new\": $samples_json, \"current\": $current_samples_json},
  \"shardify\": {\"exit_code\": $shardify_code, \"seconds\": $shardify_seconds, \"summary\": $shardify_summary},
  \"incremental\": $incremental_json,
  \"hook\": {\"exit_code\": $hook_code},
  \"shardcheck\": {\"exit_code\": $shardcheck_code, \"seconds\": $shardcheck_seconds, \"verified\": $verified, \"problem_count\": $problem_count},
  \"kept_versions\": $kept_json,
  \"pruned_versions\": $pruned_json,
  \"log\": $(json s "$log_name"),
  \"report\": $(json s "$report")
}"
if ! put "$R" "$stamp.json" "$record"; then
    late "cannot write the run record 'runs/$stamp.json': $put_error"
elif ! put "$R" latest.json "$record"; then
    late "cannot write 'runs/latest.json': $put_error (it still describes an earlier run)"
fi

# ---- 8. the index of runs ---------------------------------------------------------------

if [ -n "$SHARDREPORT" ] && [ -x "$SHARDREPORT" ]; then
    "$SHARDREPORT" nightly "$ROOT" >&3 2>&3 ||
        log "warning: '$ROOT/index.html' could not be written (see the log)"
else
    log "note: shardreport not found; '$ROOT/index.html' not written"
fi
log "run $stamp: $status (exit $exit_code); summary in runs/$stamp.json"
exit "$exit_code"
