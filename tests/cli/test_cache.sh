# test_cache.sh - the node-local shard cache (--cache-dir, SHARDKIT_CACHE_DIR)
# against a real nginx on loopback (bench/http_server.sh), requests counted
# in its access log: a second read is served from the cache with no shard
# request; two processes at once fetch each shard once; a damaged cache
# file is detected and fetched again; kill -9 in the middle of a download
# leaves a cache that works, for another user sharing it too; a lock that
# cannot be had (a read-only directory, a link planted as a lock file) is a
# warning and a remote read at once, and nothing is made outside the
# directory; a re-published dataset is never served its old
# shards; a limit smaller than the dataset is kept by evicting; a download
# that outlasts its epoch fetches no byte twice and counts in the next; a
# full disk reads remotely with a warning.  Every read's samples are
# compared, by key and pixel hash, with the local dataset's.
. "$(dirname "$0")/lib.sh"

TOP=${SHARDKIT_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
HTTP_SERVER="$TOP/bench/http_server.sh"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] ||
    skip "nginx is not installed (scripts/deps.sh installs it): cache tests not run"

SRC=$T/src
mkdir -p "$SRC"
ls "$SAMPLE" | grep -v "'" | grep -i '\.jpe\?g$' | head -n 120 >"$T/pick"
while IFS= read -r f; do cp "$SAMPLE/$f" "$SRC/$f"; done <"$T/pick"
shardify "$SRC" "$T/raw" --size 64 --codec raw --shard-size 400K --quiet
shardify "$SRC" "$T/other" --size 48 --codec raw --shard-size 400K --quiet
mkdir -p "$T/src80"
head -n 80 "$T/pick" | while IFS= read -r f; do cp "$SRC/$f" "$T/src80/$f"; done
shardify "$T/src80" "$T/one" --size 64 --codec raw --shard-size 100M --quiet
# the folder served as /pub/, which the re-publishing case publishes in
mkdir -p "$T/pub"
S=$(json "$T/raw/manifest.json" "len(d['shards'])")
BYTES=$(json "$T/raw/manifest.json" "sum(s['bytes'] for s in d['shards'])")
[ "$S" -ge 5 ] || die "expected several shards, got $S"

HTTP=$T/http
stop_server() { "$HTTP_SERVER" stop "$HTTP" >/dev/null 2>&1 || true; }
on_exit stop_server
U=$("$HTTP_SERVER" start "$HTTP" raw="$T/raw" other="$T/other" pub="$T/pub" one="$T/one") ||
    die "cannot start nginx"
LOG=$HTTP/access.log
# shard_requests PATH: requests for shard files under /PATH/ logged so far
shard_requests() { grep -c " GET \"/$1/shard-" "$LOG" || true; }
# cache_of JSON PHASE KEY: a cache counter of shardbench --json's phase
cache_of() { json "$1" "d['$2']['cache']['$3']"; }
# intact DIR: every KEY.shard in the cache DIR is, byte for byte, the
# published shard whose manifest entry (xxh3, bytes) KEY names; no
# temporary file is left
intact() {
    "$PYTHON" - "$1" "$T/raw" "$T/other" "$T/one" <<'EOF' || die "a cached shard is not a published one"
import filecmp, json, os, sys
known = {}
for d in sys.argv[2:]:
    for s in json.load(open(os.path.join(d, "manifest.json")))["shards"]:
        known["%s-%d.shard" % (s["xxh3"], s["bytes"])] = os.path.join(d, s["file"])
for name in os.listdir(sys.argv[1]):
    assert ".tmp." not in name, name
    if name.endswith(".shard"):
        assert name in known, name
        assert filecmp.cmp(os.path.join(sys.argv[1], name), known[name], shallow=False), name
EOF
}
# slow_download DIR: a shardbench reading through the cache DIR slowly (one
# connection, 16 KiB windows, 300 ms before each request) in the background,
# its pid in $slow, once its first download is under way
slow_download() {
    shardbench shards "$U/raw" --epochs 1 --rtt 300 --window 16K --connections 1 \
        --cache-dir "$1" >/dev/null 2>&1 &
    slow=$!
    i=0
    until ls "$1" 2>/dev/null | grep -q '\.tmp\.'; do
        i=$((i + 1))
        [ $i -le $POLL_STEPS ] || die "no download under way in the cache"
        sleep 0.05
    done
}
shardbench shards "$T/raw" --epochs 1 --digests "$T/local.jsonl" >/dev/null
shardbench shards "$T/other" --epochs 1 --digests "$T/other.jsonl" >/dev/null
sort "$T/local.jsonl" >"$T/local.sorted"  # a plan's order is not the dataset's

# as_other CMD...: CMD run as another user (nobody), for at most a minute
as_other() {
    timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
# seconds_since T0: whole seconds from T0 ($(date +%s)) to now
seconds_since() { echo $(( $(date +%s) - $1 )); }
other_user=0
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    chmod 755 "$T"  # the other user reaches the directories below
    other_user=1
fi
# no_other_user: 0 (saying SKIP) when the test cannot act as another user
no_other_user() {
    [ $other_user -eq 0 ] || return 1
    echo "SKIP: shared and read-only caches: needs root and setpriv to act as another user"
}

# a cache of every shard of /raw/ ($T/warm), which the cases that read a warm
# cache copy
shardbench shards "$U/raw" --epochs 1 --cache-dir "$T/warm" >/dev/null
[ "$(ls "$T/warm"/*.shard | wc -l)" -eq "$S" ] || die "not every shard was cached in $T/warm"
# warm_cache DIR: DIR is a copy of the warm cache
warm_cache() {
    cp -a "$T/warm" "$1"
}
# the limit the limited caches keep: half the dataset
limit=$((BYTES / 2))

case_a_second_read_comes_from_the_cache_no_shard_request_every_shard_a_hit() {
    # a training step (20 ms per 16 samples): the downloads, which go on in the
    # background, write some of their bytes within the epoch, whose figures
    # count them (an epoch of 120 samples read from memory may otherwise end
    # before a download of a loaded machine has written any)
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 1 --batch 16 --step-ms 20 --cache-dir "$C/c1" \
        --digests "$C/d1.jsonl" --json >"$C/r1.json"
    cmp -s "$T/local.jsonl" "$C/d1.jsonl" || die "samples read through the cache differ"
    [ "$(cache_of "$C/r1.json" first_epoch misses)" -eq "$S" ] || die "a first read is $S misses"
    fetched=$(cache_of "$C/r1.json" first_epoch bytes_fetched)
    [ "$fetched" -gt 0 ] && [ "$fetched" -le "$BYTES" ] ||
        die "the first read fetched $fetched bytes into the cache, of $BYTES"
    [ "$(ls "$C/c1"/*.shard | wc -l)" -eq "$S" ] || die "not every shard was cached"
    intact "$C/c1"
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 2 --cache-dir "$C/c1" --digests "$C/d2.jsonl" --json \
        --report "$C/r2.html" >"$C/r2.json"
    cmp -s "$T/local.jsonl" "$C/d2.jsonl" || die "samples read from the cache differ"
    [ "$(shard_requests raw)" -eq 0 ] || die "shards requested again: $(cat "$LOG")"
    [ "$(cache_of "$C/r2.json" first_epoch hits)" -eq "$S" ] || die "a second read is $S hits"
    [ "$(cache_of "$C/r2.json" first_epoch misses)" -eq 0 ] || die "a second read missed"
    "$PYTHON" - "$C/r2.html" "$S" <<'EOF' || die "the HTML report does not show the cache"
import re, sys
page, shards = open(sys.argv[1]).read(), sys.argv[2]
table = re.search(r'<table[^>]*id="[^"]*-cache".*?</table>', page, re.S)
assert table, "no cache table"
first = re.search(r"<tr[^>]*>\s*<td[^>]*>first epoch</td>(.*?)</tr>", table.group(0), re.S)
assert first, table.group(0)
cells = re.findall(r"<td[^>]*>([^<]*)</td>", first.group(1))
assert cells[:2] == [shards, "0"], cells
EOF
}

case_the_environment_sets_it_too() {
    warm_cache "$C/c1"
    : >"$LOG"
    SHARDKIT_CACHE_DIR=$C/c1 shardbench shards "$U/raw" --epochs 1 >/dev/null
    [ "$(shard_requests raw)" -eq 0 ] || die "SHARDKIT_CACHE_DIR was not used"
    must_fail 1 env SHARDKIT_CACHE_DIR="$C/c1" SHARDKIT_CACHE_LIMIT=lots shardbench shards "$U/raw"
    must_say "SHARDKIT_CACHE_LIMIT: 'lots' is not a size" "$T/err"
    : >"$C/afile"
    must_fail 1 shardbench shards "$U/raw" --cache-dir "$C/afile/cache"
    must_say "cannot create the cache directory '$C/afile/cache'" "$T/err"
}

case_python_dataset_cache_dir_and_loader_stats_count_the_hits() {
    warm_cache "$C/c1"
    : >"$LOG"
    if with_python "Python through the cache"; then
    shardkit_python - "$U/raw" "$C/c1" "$S" <<'EOF' || die "Python through the cache"
import sys, shardkit
url, cache, shards = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = shardkit.Dataset(url, cache_dir=cache)
assert ds.options["cache_dir"] == cache
loader = shardkit.Loader(ds, 16)
n = sum(len(b.labels) for b in loader)
st = loader.stats
assert n == len(ds) and st["cache_hits"] == shards and st["cache_misses"] == 0, st
assert st["cache_bytes_fetched"] == 0 and ds.cache_warning == "", st
EOF
    [ "$(shard_requests raw)" -eq 0 ] || die "Python requested shards"
    fi
}

case_shardcheck_cache_dir_checks_the_shards_as_it_caches_them_then_checks_the_cache() {
    : >"$LOG"
    shardcheck "$U/raw" --cache-dir "$C/c6" >"$C/check1" || die "shardcheck through the cache"
    [ "$(ls "$C/c6"/*.shard | wc -l)" -eq "$S" ] || die "shardcheck did not fill the cache"
    intact "$C/c6"
    : >"$LOG"
    shardcheck "$U/raw" --cache-dir "$C/c6" >"$C/check2" || die "shardcheck from the cache"
    [ "$(shard_requests raw)" -eq 0 ] || die "shardcheck requested cached shards again"
    must_fail 2 shardcheck "$U/raw" --cache-limit 0
}

case_two_processes_at_once_fetch_each_shard_once() {
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 1 --rtt 20 --window 64K --cache-dir "$C/c2" \
        --digests "$C/p1.jsonl" --json >"$C/p1.json" &
    p1=$!
    shardbench shards "$U/raw" --epochs 1 --rtt 20 --window 64K --cache-dir "$C/c2" \
        --digests "$C/p2.jsonl" --json >"$C/p2.json" &
    p2=$!
    wait $p1 || die "the first process failed"
    wait $p2 || die "the second process failed"
    cmp -s "$T/local.jsonl" "$C/p1.jsonl" && cmp -s "$T/local.jsonl" "$C/p2.jsonl" ||
        die "two processes read other samples"
    # each shard once: one open (the suffix request for its last 64K), then
    # each of its other bytes in one range request, none requested twice (the
    # read-ahead of the last window, whose bytes the suffix brought, may be
    # cancelled unsent when the download is done and the file closes first)
    "$PYTHON" - "$LOG" "$T/raw/manifest.json" <<'EOF' || die "two processes fetched a shard twice"
import collections, json, re, sys
opens, ranges = collections.Counter(), collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.search(r'GET "/raw/(shard-[0-9]+\.shard)" range="bytes=([0-9]*)-([0-9]*)"', line)
    if m and m.group(2) == "":
        opens[m.group(1)] += 1
    elif m:
        ranges[m.group(1)].append((int(m.group(2)), int(m.group(3))))
for s in json.load(open(sys.argv[2]))["shards"]:
    f = s["file"]
    assert opens[f] == 1, (f, opens[f])
    got = sorted(ranges[f])
    assert all(a[1] < b[0] for a, b in zip(got, got[1:])), (f, got)
    end = 0  # bytes [0, end) came, by the ranges and the suffix
    for b, e in sorted(got + [(max(s["bytes"] - 65536, 0), s["bytes"] - 1)]):
        assert b <= end, (f, got, "bytes %d-%d never came" % (end, b - 1))
        end = max(end, e + 1)
    assert end == s["bytes"], (f, got, s["bytes"])
EOF
    misses=$(( $(cache_of "$C/p1.json" first_epoch misses) + $(cache_of "$C/p2.json" first_epoch misses) ))
    hits=$(( $(cache_of "$C/p1.json" first_epoch hits) + $(cache_of "$C/p2.json" first_epoch hits) ))
    [ "$misses" -eq "$S" ] && [ "$hits" -eq "$S" ] || die "$misses misses and $hits hits for $S shards"
    intact "$C/c2"
}

case_a_damaged_cache_file_is_detected_and_fetched_again() {
    warm_cache "$C/c1"
    victim=$(ls "$C/c1"/*.shard | head -n 1)
    "$PYTHON" -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0xff]))' "$victim"
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/c1" --digests "$C/d3.jsonl" --json \
        >"$C/r3.json"
    cmp -s "$T/local.jsonl" "$C/d3.jsonl" || die "a damaged cache file was served"
    [ "$(cache_of "$C/r3.json" first_epoch misses)" -eq 1 ] || die "the damaged shard was not a miss"
    [ "$(shard_requests raw)" -ge 1 ] || die "the damaged shard was not fetched again"
    intact "$C/c1"
}

case_kill_9_in_the_middle_of_a_download_leaves_a_cache_that_works() {
    slow_download "$C/c3"
    victim=$slow
    kill -KILL $victim
    wait $victim 2>/dev/null || true
    ls "$C/c3" | grep -q '\.tmp\.' || die "the killed download left no temporary file to test"
    shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/c3" --digests "$C/d4.jsonl" >/dev/null
    cmp -s "$T/local.jsonl" "$C/d4.jsonl" || die "the cache after kill -9 served other samples"
    [ "$(ls "$C/c3"/*.shard | wc -l)" -eq "$S" ] || die "not every shard was cached after kill -9"
    intact "$C/c3"
}

case_a_download_that_makes_no_progress_its_process_stopped_is_not_waited_for() {
    slow_download "$C/c7"
    stopped=$slow
    held=$stopped  # lib.sh kills it if this case fails
    kill -STOP $stopped
    timeout 120 shardbench shards "$U/raw" --epochs 1 --timeout 1 --retries 0 --cache-dir "$C/c7" \
        --digests "$C/d9.jsonl" --json >"$C/r9.json" || die "a stopped download held another reader"
    cmp -s "$T/local.jsonl" "$C/d9.jsonl" || die "reading past a stopped download changed the samples"
    [ "$(cache_of "$C/r9.json" first_epoch skipped)" -ge 1 ] ||
        die "the shard being downloaded was not read remotely"
    kill -KILL $stopped
    wait $stopped 2>/dev/null || true
    held=""
}

case_a_cache_shared_between_users_another_users_locks_and_a_download_of_theirs_killed() {
    no_other_user && return 0
    mkdir -m 777 "$C/nb"
    mkdir -m 777 "$C/shared"
    slow_download "$C/shared"
    kill -KILL $slow
    wait $slow 2>/dev/null || true
    # lock files as an earlier release left them: 0644, another user's
    ls -a "$C/shared" | grep -q '\.lock$' || die "the killed download left no lock file"
    chmod 644 "$C/shared"/*.lock "$C/shared/.lock" 2>/dev/null || true
    t0=$(date +%s)
    as_other shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/shared" \
        --digests "$C/nb/d11.jsonl" --json >"$C/nb/r11.json" 2>"$C/nb/err11" ||
        { cat "$C/nb/err11" >&2; die "reading a cache another user shares failed (or hung: $(seconds_since $t0) s)"; }
    cmp -s "$T/local.jsonl" "$C/nb/d11.jsonl" || die "a shared cache served other samples"
    if grep -q warning "$C/nb/err11"; then cat "$C/nb/err11" >&2; die "a shared cache warned"; fi
    [ "$(ls "$C/shared"/*.shard | wc -l)" -eq "$S" ] ||
        die "another user's read of the shared cache did not cache every shard"
    intact "$C/shared"
    # the lock files the other user made are 0666, whatever its umask
    made=$(find "$C/shared" -name '*.lock' -user nobody)
    [ -n "$made" ] || die "the other user made no lock file"
    for f in $made; do
        [ "$(stat -c %a "$f")" = 666 ] || die "lock file $f is $(stat -c %a "$f"), not 666"
    done
}

case_a_read_only_cache_directory_a_warning_and_remote_reads_no_wait() {
    no_other_user && return 0
    mkdir -m 777 "$C/nb"
    mkdir -m 755 "$C/ro"
    t0=$(date +%s)
    as_other shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/ro" \
        --digests "$C/nb/d12.jsonl" --json >"$C/nb/r12.json" 2>"$C/nb/err12" ||
        die "reading through a read-only cache failed (or hung: $(seconds_since $t0) s)"
    took=$(seconds_since $t0)
    [ "$took" -le 15 ] || die "a read-only cache directory held the read $took s"
    cmp -s "$T/local.jsonl" "$C/nb/d12.jsonl" || die "a read-only cache changed the samples"
    must_say "warning: cache directory '$C/ro'" "$C/nb/err12"
    must_say ".lock': Permission denied" "$C/nb/err12"
    [ "$(json "$C/nb/r12.json" "d['first_epoch']['cache']['skipped']")" -eq "$S" ] ||
        die "the shards were not read uncached"
    [ -z "$(ls -A "$C/ro")" ] || die "the read-only cache directory changed"
}

case_a_lock_planted_as_a_link_nothing_is_made_or_locked_outside_the_cache_directory() {
    mkdir -p "$C/c8" "$C/elsewhere"
    ln -s "$C/elsewhere/dir.lock" "$C/c8/.lock"
    "$PYTHON" - "$T/raw/manifest.json" "$C/c8" "$C/elsewhere" <<'EOF'
import json, os, sys
for s in json.load(open(sys.argv[1]))["shards"]:
    key = "%s-%d" % (s["xxh3"], s["bytes"])
    os.symlink(os.path.join(sys.argv[3], key + ".lock"), os.path.join(sys.argv[2], key + ".lock"))
EOF
    t0=$(date +%s)
    timeout 60 shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/c8" --digests "$C/d13.jsonl" \
        --json >"$C/r13.json" 2>"$C/err13" || die "planted lock links failed the read"
    [ "$(seconds_since $t0)" -le 15 ] || die "planted lock links held the read $(seconds_since $t0) s"
    cmp -s "$T/local.jsonl" "$C/d13.jsonl" || die "planted lock links changed the samples"
    [ -z "$(ls -A "$C/elsewhere")" ] || die "a planted link made the reader create $(ls "$C/elsewhere")"
    must_say "warning: cache directory '$C/c8'" "$C/err13"
    must_say "Too many levels of symbolic links" "$C/err13"
}

case_a_re_published_dataset_is_never_served_its_old_shards() {
    # /pub/ first publishes the dataset of /raw/, then the other one in its place
    rm -f "$T/pub"/*
    cp "$T/raw"/* "$T/pub/"
    shardbench shards "$U/pub" --epochs 1 --cache-dir "$C/c4" >/dev/null
    rm "$T/pub"/*
    cp "$T/other"/* "$T/pub/"
    shardbench shards "$U/pub" --epochs 1 --cache-dir "$C/c4" --digests "$C/d5.jsonl" --json \
        >"$C/r5.json"
    cmp -s "$T/other.jsonl" "$C/d5.jsonl" || die "the re-published dataset was read from old shards"
    [ "$(cache_of "$C/r5.json" first_epoch hits)" -eq 0 ] || die "an old shard was a hit"
    intact "$C/c4"
}

case_a_limit_of_half_the_dataset_is_kept_by_evicting_and_every_sample_is_still_right() {
    # another dataset's shards (/other/) fill the cache first; reading this one
    # evicts them (a shard in use - held by a reader - is never evicted, so one
    # process alone evicts only once it holds more shards than it keeps open)
    shardbench shards "$U/other" --epochs 1 --cache-dir "$C/c5" --cache-limit $limit >/dev/null
    before=$(ls "$C/c5"/*.shard | wc -l)
    [ "$before" -ge 1 ] || die "the other dataset was not cached"
    shardbench shards "$U/raw" --epochs 2 --cache-dir "$C/c5" --cache-limit $limit \
        --digests "$C/d6.jsonl" --json >"$C/r6.json"
    cmp -s "$T/local.jsonl" "$C/d6.jsonl" || die "a limited cache served other samples"
    used=$(cat "$C/c5"/*.shard | wc -c)
    [ "$used" -le "$limit" ] || die "the cache holds $used bytes over its limit of $limit"
    evicted=$(( $(cache_of "$C/r6.json" first_epoch evictions) + $(cache_of "$C/r6.json" steady evictions) ))
    [ "$evicted" -ge "$before" ] || die "$evicted evictions, $before shards of the other dataset"
    skipped=$(cache_of "$C/r6.json" first_epoch skipped)
    [ "$skipped" -ge 1 ] || die "half the dataset cannot all be cached, yet none was skipped"
    intact "$C/c5"
}

case_a_later_run_the_cached_shards_are_hits_the_others_take_the_room_of_shards_already_read() {
    # shard by shard (--shuffle-buffer 4; --queue-depth 4: a shard is let go
    # once the readers are that far past its last sample): a shard is done with
    # long before the epoch ends; each shard fetched at most once (a shard of
    # 400K is one request: the opening suffix holds all of it), none evicted
    # before it is read.  The earlier run caches the plan's first shard (it
    # reads its first sample, --limit 1), which the epoch has read and let go
    # when it opens its fourth: a miss with no room then takes its room (a
    # cache a limited run left holds shards of its own first reads, in an
    # order the threads decide: maybe none the plan reads before a miss)
    plan8="--seed 3 --shuffle-buffer 4 --queue-depth 4"
    shardbench shards "$U/raw" --epochs 1 $plan8 --limit 1 --cache-dir "$C/c9" --cache-limit $limit \
        >/dev/null
    kept=$(ls "$C/c9"/*.shard | wc -l)
    [ "$kept" -eq 1 ] || die "a run of one sample cached $kept shards"
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 1 $plan8 --cache-dir "$C/c9" \
        --cache-limit $limit --digests "$C/d8.jsonl" --json >"$C/r8.json"
    sort "$C/d8.jsonl" | cmp -s - "$T/local.sorted" || die "a limited cache served other samples"
    [ "$(cache_of "$C/r8.json" first_epoch hits)" -eq "$kept" ] ||
        die "a cached shard was evicted before the epoch read it"
    [ "$(cache_of "$C/r8.json" first_epoch misses)" -eq $((S - kept)) ] ||
        die "hits and misses do not count each shard once"
    [ "$(cache_of "$C/r8.json" first_epoch evictions)" -ge 1 ] ||
        die "no shard already read made room for one the epoch had yet to read"
    twice=$(grep -o ' GET "/raw/shard-[^"]*"' "$LOG" | sort | uniq -d)
    [ -z "$twice" ] || die "fetched twice in one epoch: $twice"
    [ "$(shard_requests raw)" -eq $((S - kept)) ] || die "a cached shard was fetched"
    used=$(cat "$C/c9"/*.shard | wc -c)
    [ "$used" -le "$limit" ] || die "the cache holds $used bytes over its limit of $limit"
    intact "$C/c9"
}

case_several_epochs_in_one_process_each_shard_found_once_per_epoch_fetched_at_most_once() {
    # from a cache of the first epoch's first shard, as above; a training step
    # of 10 ms per 4 samples gives a download time to end before its shard,
    # read, is to make room (a shard still downloading cannot)
    most=$(json "$T/raw/manifest.json" "max(s['bytes'] for s in d['shards'])")
    plan10="--seed 5 --shuffle-buffer 4 --queue-depth 4"
    shardbench shards "$U/raw" --epochs 1 $plan10 --limit 1 --cache-dir "$C/c10" --cache-limit $limit \
        >/dev/null
    : >"$LOG"
    shardbench shards "$U/raw" --epochs 3 $plan10 --batch 4 --step-ms 10 --window 64K \
        --cache-dir "$C/c10" --cache-limit $limit --json >"$C/r10.json"
    for phase in first_epoch steady; do
        eval "$(json "$C/r10.json" \
            "'h=%d m=%d' % (d['$phase']['cache']['hits'], d['$phase']['cache']['misses'])")"
        n=$S
        [ $phase = steady ] && n=$((2 * S))
        [ $((h + m)) -eq $n ] || die "$phase: $h hits and $m misses for $n shard opens"
    done
    [ "$(cache_of "$C/r10.json" steady evictions)" -ge 1 ] ||
        die "later epochs evicted no shard already read"
    # at most a shard's bytes per miss: a hit fetches nothing (no read-ahead
    # advice of a shard let go), a shard fetched again asks no suffix (its size
    # is known; windows of 64K, so that a suffix is not the whole shard): over
    # the run (a download may end in the next epoch), the misses' shards and
    # each shard's first opening suffix
    got=$(json "$C/r10.json" "d['first_epoch']['bytes_read'] + d['steady']['bytes_read']")
    missed=$(($(cache_of "$C/r10.json" first_epoch misses) + $(cache_of "$C/r10.json" steady misses)))
    [ "$got" -le $((missed * most + S * 65536)) ] ||
        die "3 epochs received $got bytes, more than their $missed misses' shards"
    # bytes the server sent per shard, at most 3 shards' worth (and 3 suffixes)
    over=$(grep ' GET "/raw/shard-' "$LOG" | awk '{n[$4] += $NF} END {for (f in n) print f, n[f]}' |
        while read -r f n; do
            [ "$n" -le $((3 * (most + 65536))) ] || echo "$f $n"
        done)
    [ -z "$over" ] || die "a shard fetched more than once per epoch: $over"
    used=$(cat "$C/c10"/*.shard | wc -c)
    [ "$used" -le "$limit" ] || die "the cache holds $used bytes over its limit of $limit"
    intact "$C/c10"
}

case_a_download_that_outlasts_its_epoch_the_next_epoch_finds_its_shard_once_no_byte_fetched_twice() {
    # one shard of 1.3M, downloaded through one connection 100 ms a window of
    # 64K: over 2 s, while each epoch reads two samples of it (under 1 s).  The
    # windows the first epoch's samples fetched ahead of the download are the
    # download's too (shardbench forgets a dataset's windows between epochs:
    # not a download's); the second epoch's reads, all during the download,
    # count the shard once, as a miss
    : >"$LOG"
    shardbench shards "$U/one" --epochs 2 --limit 2 --seed 1 --rtt 100 --window 64K --connections 1 \
        --cache-dir "$C/c11" --json >"$C/r11.json"
    for phase in first_epoch steady; do
        eval "$(json "$C/r11.json" \
            "'h=%d m=%d' % (d['$phase']['cache']['hits'], d['$phase']['cache']['misses'])")"
        [ $((h + m)) -eq 1 ] || die "$phase: $h hits and $m misses of the one shard it read"
    done
    twice=$(grep -o ' GET "/one/shard-[^"]*" range="[^"]*"' "$LOG" | sort | uniq -d)
    [ -z "$twice" ] || die "fetched twice: $twice"
    [ "$(ls "$C/c11"/*.shard | wc -l)" -eq 1 ] || die "the shard was not cached"
    intact "$C/c11"
}

case_a_full_disk_reads_remotely_with_a_warning() {
    mount_tmpfs "$C/full" 100K || skip "a full disk: cannot mount a size-capped tmpfs (needs root)"
    shardbench shards "$U/raw" --epochs 1 --cache-dir "$C/full" --digests "$C/d7.jsonl" --json \
        >"$C/r7.json" 2>"$C/err7"
    cmp -s "$T/local.jsonl" "$C/d7.jsonl" || die "a full cache disk changed the samples"
    must_say "warning: cache directory '$C/full'" "$C/err7"
    must_say "No space left on device" "$C/err7"
    [ "$(cache_of "$C/r7.json" first_epoch skipped)" -eq "$S" ] || die "shards were not read uncached"
    ls "$C/full" | grep -q '\.tmp\.' && die "a full disk left a temporary file"
    if with_python "Python on a full cache disk"; then
    shardkit_python - "$U/raw" "$C/full" <<'EOF' || die "Python on a full cache disk"
import sys, warnings, shardkit
ds = shardkit.Dataset(sys.argv[1], cache_dir=sys.argv[2])
loader = shardkit.Loader(ds, 16, shuffle=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    n = sum(len(b.labels) for b in loader)
    n += sum(len(b.labels) for b in loader)  # a second epoch: the warning is given once
assert n == 2 * len(ds)
said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
assert len(said) == 1 and "No space left on device" in said[0], said
# each shard once per epoch: an epoch does not try a shard it could not cache again
shards = len(ds.manifest["shards"])
assert loader.stats["cache_misses"] == loader.stats["cache_skipped"] == 2 * shards, loader.stats
EOF
    fi
}

run_cases
