#!/bin/sh
# test_words.sh - one word per concept (CONTRIBUTING.md, "Words"): the public
# headers, the tools' help, the Python package and the documentation do not
# use a word for what the table says it is not.  A *worker* is a loader's
# share of an epoch (a DataLoader worker), never a thread: the threads of a
# conversion, of an iterator or of the libraries are threads.  The *cache* is
# the node-local cache of whole shards on disk; the in-memory windows of a
# remote dataset are the *window cache* (window_cache_bytes, window_cache=,
# --window-cache), never the cache alone.  The table itself names the uses it
# forbids, and the deprecated aliases keep 0.1.0's names: both are left out
# (a line that names an older name says so: deprecated, older name, 0.1.0;
# a header's "older names" section).
. "$(dirname "$0")/lib.sh"

cd "$SHARDKIT_TOP" || die "no checkout"
files=$(find include/shardkit cmd lib python/shardkit docs man examples -type f \
    \( -name '*.[ch]' -o -name '*.py' -o -name '*.pyi' -o -name '*.md' -o -name '*.sh' \) 2>/dev/null;
    ls ./*.md | grep -v CHANGELOG.md)
[ "$(printf '%s\n' $files | wc -l)" -gt 100 ] || die "too few files to look at"

# window_cache_uses FILE...: the lines of FILEs naming the window cache by
# 0.1.0's names (cache_bytes, shard_dataset_drop_cache, SHARD_DATASET_DEFAULT_CACHE,
# a cache= keyword or parameter, a "cache" key, --cache) but for those that say
# they are older names, a header's "older names" section and the Words table
window_cache_uses() {
    for f in "$@"; do
        awk '/^\/\* ---- older names/ { older = 1 } !older && !/^\| \*\*/ { print FILENAME ":" FNR ": " $0 }' "$f"
    done | grep -E '(^|[^_[:alnum:]])cache_bytes([^_[:alnum:]]|$)|shard_dataset_drop_cache\b|SHARD_DATASET_DEFAULT_CACHE\b|(^|[^_[:alnum:]])cache=|(^|[^_[:alnum:]])cache: *(int|SupportsIndex)\b|["'"'"']cache["'"'"']|(^|[^-_[:alnum:]])--cache([^-_[:alnum:]]|$)' |
        grep -v -i -E 'deprecat|older[ _]name|0\.1\.0' || true
}

case_no_worker_thread_anywhere_a_worker_is_a_loaders_share_of_an_epoch() {
    # (examples quote gloo's own words about its threads)
    bad=$(printf '%s\n' $files | xargs grep -n -i -E 'worker threads?\b|threads? \(workers\)' 2>/dev/null |
        grep -v "gloo's worker threads" || true)
    [ -z "$bad" ] || { printf '%s\n' "$bad" >&2; die "a thread called a worker (say: thread)"; }
}

case_the_library_and_the_tools_say_worker_only_in_the_loader_elsewhere_a_thread_is_a_thread() {
    bad=$(find lib cmd -name '*.[ch]' ! -path 'lib/loader/*' -exec grep -n -i -H 'worker' {} + || true)
    [ -z "$bad" ] || { printf '%s\n' "$bad" >&2; die "a thread called a worker (say: thread)"; }
}

case_no_bare_cache_for_the_window_cache_in_headers_python_docs_or_any_tools_help() {
    for tool in shardify "shardify merge" shardcheck shardcat shardreport shardbench; do
        # shellcheck disable=SC2086
        "$SHARDKIT_BIN"/$tool --help >"$C/help-$(echo "$tool" | tr ' ' -)" || die "$tool --help"
    done
    grep -q -- '--window-cache SIZE' "$C/help-shardbench" || die "shardbench --help has no --window-cache"
    # (docs/reference/python.md is generated from python/shardkit, read here: its
    # signatures list the deprecated keywords with the others)
    # shellcheck disable=SC2046
    bad=$(window_cache_uses include/shardkit/*.h python/shardkit/*.py python/shardkit/*.pyi \
        $(find docs man \( -name '*.md' -o -name '*.h2m' \) ! -path docs/reference/python.md) \
        $(ls ./*.md | grep -v CHANGELOG.md) "$C"/help-*)
    [ -z "$bad" ] || {
        printf '%s\n' "$bad" >&2
        die "the window cache called the cache (say: window cache)"
    }
}

case_the_words_table_names_every_word_the_project_defines() {
    for w in sample record item payload key location worker part transform "stored order" "epoch plan" \
             "window cache" cache; do
        grep -q "^| \*\*$w\*\*" CONTRIBUTING.md || die "CONTRIBUTING.md's Words table has no '$w'"
    done
}

case_a_word_the_table_forbids_for_a_thing_is_caught_the_check_itself() {
    printf 'the conversion has 4 worker threads\n' >"$C/planted.md"
    grep -q -i -E 'worker threads?\b' "$C/planted.md" || die "the pattern misses a planted use"
    cat >"$C/planted.h" <<'EOF'
    o.cache_bytes = 1 << 20;
shard_dataset_drop_cache(ds);
ds = shardkit.Dataset(url, cache=64 << 20)
    cache: int | None = None,
options["cache"]
shardbench shards URL --cache 64M
`shardbench --connections --window --cache --retries`
    o.window_cache_bytes = 1 << 20; /* cache_bytes_fetched, cache_dir=, --cache-dir, cache_warning */
    uint64_t cache_bytes SHARD_DEPRECATED("use window_cache_bytes");
`cache=`, once the window cache's keyword (0.1.0's)
/* ---- older names (deprecated) -------
SHARD_API void shard_dataset_drop_cache(struct shard_dataset *ds)
EOF
    window_cache_uses "$C/planted.h" | sed 's/^[^:]*:\([0-9]*\):.*/\1/' | tr '\n' ' ' >"$C/caught"
    [ "$(cat "$C/caught")" = "1 2 3 4 5 6 7 " ] ||
        die "the window cache check caught lines $(cat "$C/caught"), not 1-7"
}

run_cases
