/* dataset.c - an open dataset: manifest, lazily opened shards, reading one
 * record by its footer row (see shardkit/dataset.h).
 *
 * All shard bytes come through the fetch seam (fetch.h), as ranges: the
 * header and trailer, the footer, then one frame per record.  A shard's file
 * is opened once, under its own mutex, and its footer loaded then; a read
 * holds the footer (a pin, sk_dataset_footer_pin) while it uses it, and a
 * footer no read holds is released once the epoch plan has passed its shard
 * or when the loaded ones exceed a budget, so that the memory a dataset
 * keeps does not grow with its samples.  zstd contexts are reused through a
 * small pool, so a read costs one ranged read plus the decompression and
 * decode.
 *
 * A location starting with http://, https:// or s3:// is read through the
 * HTTP backend (fetch_http.h), with the dataset's options
 * (shard_dataset_open_ex): manifest.json with one GET, shards as ranges.
 *
 * Every read counts its cost - time in the read, decompress and decode
 * stages, bytes - in the dataset's counters (read/observer.h, public as
 * shard_dataset_stats), and reports spans to an observer when one was given
 * at open (shard_dataset_options.observer: shardbench's traces); without one a span costs a pointer
 * test. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#include <zstd.h>

#include "image/encode_internal.h"
#include "manifest/manifest_internal.h"
#include "net/s3.h"
#include "read/cache.h"
#include "read/cache_plan.h"
#include "read/dataset_internal.h"
#include "read/fetch.h"
#include "read/fetch_http.h"
#include "read/observer.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "util/endian.h"
#include "util/fsutil.h"
#include "util/grow.h"
#include "format/record_internal.h"
#include "format/shard_reader.h"
#include "shardkit/dataset.h"
#include "shardkit/format.h"
#include "shardkit/util.h"
#include "shardx/shardx.h"
#include "image/image_internal.h"

/* Largest frame a record within SHARD_RECORD_MAX_BYTES can compress to. */
#define FRAME_MAX_BYTES ZSTD_COMPRESSBOUND(SHARD_RECORD_MAX_BYTES)
/* Largest manifest.json fetched over HTTP. */
#define REMOTE_MANIFEST_MAX_BYTES (1ull << 30)

/* A shard's state.  Its file, once opened, stays open until the dataset is
 * closed; its footer (the part of a dataset's memory that grows with the
 * samples: ~40 bytes and the key per record) is loaded when a read needs it
 * and released when no read holds it and either the epoch plan has passed
 * the shard (sk_dataset_let_go) or the loaded footers exceed
 * DATASET_FOOTER_BUDGET (the least recently used first). */
struct ds_shard {
    pthread_mutex_t lock; /* one load at a time; writes of `file` under it */
    /* set by the first load, then kept; atomic, as `opened`'s readers (the
     * node-local cache's planner, advice) read it without the lock while a
     * later load or a let-go writes it */
    struct fetch_file *_Atomic file;
    _Atomic int opened;        /* `file` is set (read without the lock: a read waiting
                                * for another thread's open does not hold up advice) */
    struct sk_shard_head head; /* header number, trailer, footer (its arrays while loaded) */
    /* under the dataset's footers_lock: */
    int loaded;                   /* head.footer holds its arrays */
    int kept;                     /* loaded for good (sk_dataset_shard_footer) */
    int let_go;                   /* release once no read holds it */
    uint32_t pins;                /* reads holding the footer */
    uint64_t bytes;               /* the footer's memory */
    struct ds_shard *prev, *next; /* in the list of loaded unpinned footers */
};

/* Footers kept loaded with no read holding them, at most (bytes): a random
 * access pattern keeps this much of them, an epoch only the shards it is in. */
#define DATASET_FOOTER_BUDGET (256ull << 20)
/* Footer memory freed at once above which it is given back to the system. */
#define FOOTER_TRIM_BYTES (1ull << 20)

struct shard_dataset {
    struct shard_manifest manifest;
    uint64_t manifest_xxh3; /* XXH3-64 of manifest.json's bytes: the dataset's identity */
    char *location;         /* as opened: a directory, a URL, s3://BUCKET/PREFIX */
    int remote;
    struct fetch *store;
    struct sk_cache *cache;     /* the node-local cache of a remote dataset, or NULL */
    struct sk_cache_plan *plan; /* the epoch plan followed: shards let go, and with a
                                 * cache its next shards opened into it */
    uint64_t *first;            /* first[s]: index of shard s's record 0; first[S] = N */
    struct ds_shard *shards;
    uint32_t shards_init; /* how many shard mutexes were initialised */
    /* Loaded footers: their states (struct ds_shard), the unpinned ones in
     * least recently used order (idle_head first), what they take. */
    pthread_mutex_t footers_lock;
    struct ds_shard *idle_head, *idle_tail;
    struct sk_footer_stats footers;
    uint64_t footer_budget;
    _Atomic unsigned char *keys_checked; /* per index file: its key table's hash checked */
    pthread_mutex_t pool_lock;
    struct shard_record_decoder **pool;
    size_t pool_len;
    size_t pool_cap;
    /* Items of freed iterators, buffers and all, for the next iterator (the
     * next epoch): re-allocating them would fault in their pages again. */
    struct shard_item *spare_items;
    size_t spare_len;
    size_t spare_cap;
    struct sk_read_counters counters; /* every read's cost (shard_dataset_stats) */
    struct shard_read_observer observer;
    const struct shard_read_observer *obs; /* &observer, or NULL when none was given */
};

/* Largest index.jsonl fetched whole by the verifier. */
#define REMOTE_INDEX_MAX_BYTES (16ull << 30)

struct list_call {
    int (*fn)(void *user, const char *name);
    void *user;
};

/* sk_s3_list's callback: the entry's name as a string (names with a NUL
 * byte in them are no file of ours and are skipped). */
static int list_one(void *user, const char *name, size_t len, uint64_t size, struct shard_err *err)
{
    struct list_call *c = user;
    if (memchr(name, '\0', len))
        return SHARD_OK;
    char *own = strndup(name, len);
    if (!own)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = c->fn(c->user, own);
    free(own);
    return rc;
}

/* manifest.json of a remote dataset: one GET. */
static int load_remote_manifest(struct shard_dataset *ds, sk_manifest_problem_fn problem,
                                void *user, struct shard_err *err)
{
    struct shard_buf text = {0};
    int rc = sk_fetch_http_get(ds->store, SHARD_MANIFEST_FILE, REMOTE_MANIFEST_MAX_BYTES, &text,
                               err);
    if (rc == SHARD_ENOTFOUND)
        shard_err_prefix(err, rc, "no manifest");
    if (!rc && problem)
        rc = sk_manifest_load_buffer_lenient((const char *)text.data, text.len, &ds->manifest,
                                             problem, user, err);
    else if (!rc)
        rc = shard_manifest_load_buffer((const char *)text.data, text.len, &ds->manifest, err);
    if (!rc)
        ds->manifest_xxh3 = XXH3_64bits(text.data, text.len);
    shard_buf_release(&text);
    return rc;
}

/* Size and XXH3-64 of shard `ms` read through the node-local cache: the
 * cached copy, or the server's bytes as they are downloaded into it. */
static int hash_cached(struct shard_dataset *ds, const struct shard_manifest_shard *ms,
                       uint64_t *bytes, uint64_t *xxh3, struct shard_err *err)
{
    enum { PIECE = 64 << 10 };
    struct fetch_file *f = NULL;
    uint8_t *buf = malloc(PIECE);
    XXH3_state_t *h = XXH3_createState();
    int rc = buf && h ? sk_cache_open(ds->cache, ds->store, ms->file, ms->bytes, ms->xxh3, &f, err)
                      : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc)
        XXH3_64bits_reset(h);
    for (uint64_t off = 0; !rc && off < f->size; off += PIECE) {
        size_t n = f->size - off < PIECE ? (size_t)(f->size - off) : PIECE;
        rc = fetch_read(f, off, buf, n, err);
        if (!rc)
            XXH3_64bits_update(h, buf, n);
    }
    if (!rc) {
        *bytes = f->size;
        *xxh3 = XXH3_64bits_digest(h);
    }
    fetch_close(f);
    XXH3_freeState(h);
    free(buf);
    return rc;
}

int sk_dataset_hash_file(struct shard_dataset *ds, const char *name, uint64_t *bytes,
                         uint64_t *xxh3, struct shard_err *err)
{
    for (uint32_t s = 0; ds->cache && s < ds->manifest.shard_count; s++)
        if (!strcmp(ds->manifest.shards[s].file, name))
            return hash_cached(ds, &ds->manifest.shards[s], bytes, xxh3, err);
    if (ds->remote)
        return sk_fetch_http_hash(ds->store, name, bytes, xxh3, err);
    char *path = sk_fs_join(ds->location, name);
    int rc = path ? sk_fs_hash_file(path, bytes, xxh3, err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    free(path);
    return rc;
}

int sk_dataset_index_open_file(struct shard_dataset *ds, uint32_t i,
                               struct shard_index_reader **out, struct shard_err *err)
{
    const struct shard_manifest *m = &ds->manifest;
    const char *name = m->index_count ? m->indexes[i].file : m->index_file;
    if (!ds->remote) {
        char *path = sk_fs_join(ds->location, name);
        int rc = path ? shard_index_reader_open(out, path, err)
                      : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        free(path);
        return rc;
    }
    struct shard_buf text = {0};
    char *shown = sk_fetch_http_shown(ds->store, name);
    int rc = shown ? sk_fetch_http_get(ds->store, name, REMOTE_INDEX_MAX_BYTES, &text, err)
                   : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc)
        rc = sk_index_reader_open_buffer(out, shown, &text, err);
    shard_buf_release(&text);
    free(shown);
    return rc;
}

static int open_index_file(void *ctx, uint32_t i, struct shard_index_reader **out,
                           struct shard_err *err)
{
    return sk_dataset_index_open_file(ctx, i, out, err);
}

int sk_dataset_index_open(struct shard_dataset *ds, struct shard_index_reader **out,
                          struct shard_err *err)
{
    if (ds->manifest.index_count <= 1)
        return sk_dataset_index_open_file(ds, 0, out, err);
    return sk_index_reader_open_chain(out, &ds->manifest, open_index_file, ds, err);
}

int sk_dataset_open_table(struct shard_dataset *ds, const char *name, uint64_t bytes,
                          struct fetch_file **out, struct shard_err *err)
{
    int rc = ds->remote ? sk_fetch_http_open_sized(ds->store, name, bytes, out, err)
                        : fetch_open(ds->store, name, out, err);
    if (!rc && (*out)->size != bytes) {
        rc = shard_err_set(err, SHARD_ECORRUPT, "'%s' has %llu bytes, the manifest says %llu", name,
                           (unsigned long long)(*out)->size, (unsigned long long)bytes);
        fetch_close(*out);
        *out = NULL;
    }
    return rc;
}

int sk_dataset_read_table(struct shard_dataset *ds, struct fetch_file *f, uint64_t offset,
                          void *buf, size_t len, struct shard_err *err)
{
    return ds->remote ? sk_fetch_http_read_direct(f, offset, buf, len, err)
                      : fetch_read(f, offset, buf, len, err);
}

int sk_dataset_keys_checked(struct shard_dataset *ds, uint32_t i)
{
    return atomic_load(&ds->keys_checked[i]);
}

void sk_dataset_keys_set_checked(struct shard_dataset *ds, uint32_t i)
{
    atomic_store(&ds->keys_checked[i], 1);
}

int sk_dataset_list(struct shard_dataset *ds, int (*fn)(void *user, const char *name), void *user,
                    struct shard_err *err)
{
    if (ds->remote) {
        struct sk_s3 *s3 = sk_fetch_http_s3(ds->store);
        if (!s3)
            return shard_err_set(err, SHARD_EUNSUPPORTED, "an HTTP location cannot be listed");
        struct list_call call = {fn, user};
        return sk_s3_list(s3, 0, list_one, &call, err);
    }
    DIR *d = opendir(ds->location);
    if (!d)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", ds->location);
    int rc = SHARD_OK;
    struct dirent *de;
    while (!rc && (de = readdir(d)))
        rc = fn(user, de->d_name);
    closedir(d);
    return rc;
}

void shard_dataset_drop_window_cache(struct shard_dataset *ds)
{
    sk_fetch_http_drop_window_cache(ds->store);
}

int shard_dataset_open(struct shard_dataset **out, const char *location, struct shard_err *err)
{
    return shard_dataset_open_ex(out, location, NULL, err);
}

void shard_dataset_stats(const struct shard_dataset *ds, struct shard_read_stats *out)
{
    sk_read_counters_get(&ds->counters, out);
}

/* The node-local cache the options (or the environment) ask for, into
 * ds->cache: none without a directory. */
static int open_cache(struct shard_dataset *ds, const struct shard_dataset_options *o,
                      struct shard_err *err)
{
    const char *dir = o->cache_dir ? o->cache_dir : getenv("SHARDKIT_CACHE_DIR");
    if (!dir || !*dir)
        return SHARD_OK;
    uint64_t limit = o->cache_limit;
    const char *env = getenv("SHARDKIT_CACHE_LIMIT");
    if (!limit && env && *env && shardx_size_parse(env, &limit))
        return shard_err_set(err, SHARD_EINVAL,
                             "SHARDKIT_CACHE_LIMIT: '%s' is not a size "
                             "(bytes, or a number with K, M, G or T)",
                             env);
    int rc = sk_cache_new(&ds->cache, dir, limit, o, &ds->manifest, &ds->counters, err);
    if (rc || !ds->manifest.shard_count)
        return rc;
    /* shards opened ahead: as many as the connections' windows hold, at
     * most one per connection, and at most half the limit's worth */
    uint64_t total = 0;
    for (uint32_t s = 0; s < ds->manifest.shard_count; s++)
        total += ds->manifest.shards[s].bytes;
    uint64_t mean = total / ds->manifest.shard_count ? total / ds->manifest.shard_count : 1;
    uint64_t ahead = (uint64_t)o->connections * o->window_bytes / mean;
    if (ahead > (uint64_t)o->connections)
        ahead = (uint64_t)o->connections;
    if (limit && ahead > limit / 2 / mean)
        ahead = limit / 2 / mean;
    return sk_cache_plan_new(&ds->plan, ds, ds->cache, ahead ? (uint32_t)ahead : 1, err);
}

size_t shard_dataset_cache_warning(const struct shard_dataset *ds, char *buf, size_t size)
{
    if (!ds->cache) {
        if (size)
            buf[0] = '\0';
        return 0;
    }
    return sk_cache_warning(ds->cache, buf, size);
}

/* Open `location` (how its manifest is loaded: see the callers). */
static int open_dataset(struct shard_dataset **out, const char *location,
                        const struct fetch_http_options *http,
                        const struct shard_read_observer *observer, sk_manifest_problem_fn problem,
                        void *user, struct shard_err *err)
{
    *out = NULL;
    struct shard_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&ds->pool_lock, NULL);
    pthread_mutex_init(&ds->footers_lock, NULL);
    ds->footer_budget = DATASET_FOOTER_BUDGET;
    if (observer) {
        ds->observer = *observer;
        ds->obs = &ds->observer;
    }
    int rc;
    if (!(ds->location = strdup(location))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    ds->remote = sk_fetch_http_is_remote(location);
    if (ds->remote) {
        struct fetch_http_options o;
        if (http)
            o = *http;
        else
            sk_fetch_http_options_init(&o);
        o.reading.observer = ds->obs;
        o.counters = &ds->counters;
        rc = sk_fetch_http_new(&ds->store, location, &o, err);
        if (!rc)
            rc = load_remote_manifest(ds, problem, user, err);
        if (!rc)
            rc = open_cache(ds, &o.reading, err);
    } else {
        rc = sk_fetch_local_new(&ds->store, location, err);
        if (!rc && problem)
            rc = sk_manifest_load_lenient(location, &ds->manifest, problem, user, err);
        else if (!rc)
            rc = shard_manifest_load(location, &ds->manifest, err);
        /* The identity is read after the load (jansson read the text
         * itself): a manifest renamed over this one in between, by a
         * re-publish at that very moment, would give the new text's hash.
         * The load refused whatever is not a readable manifest, so this
         * read is of a regular file. */
        uint64_t bytes;
        if (!rc)
            rc = sk_dataset_hash_file(ds, SHARD_MANIFEST_FILE, &bytes, &ds->manifest_xxh3, err);
    }
    if (rc)
        goto fail;
    uint32_t n = ds->manifest.shard_count;
    ds->first = malloc(((size_t)n + 1) * sizeof *ds->first);
    ds->shards = calloc(n ? n : 1, sizeof *ds->shards);
    if (!ds->first || !ds->shards) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    uint64_t total = 0;
    for (uint32_t s = 0; s < n; s++) {
        ds->first[s] = total;
        /* a strict load checked that the sum is counts.samples; after a
         * lenient one the shards' own counts are what can be read */
        total += ds->manifest.shards[s].samples;
        pthread_mutex_init(&ds->shards[s].lock, NULL);
        ds->shards_init = s + 1;
    }
    ds->first[n] = total;
    if (!ds->plan && (rc = sk_cache_plan_new(&ds->plan, ds, NULL, 1, err)))
        goto fail;
    if (!(ds->keys_checked = calloc(ds->manifest.index_count + 1, 1))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    *out = ds;
    return SHARD_OK;
fail:
    shard_dataset_close(ds);
    return rc;
}

int shard_dataset_open_ex(struct shard_dataset **out, const char *location,
                          const struct shard_dataset_options *o, struct shard_err *err)
{
    struct fetch_http_options http;
    int rc = sk_fetch_http_options_from(&http, o, err);
    if (rc) {
        *out = NULL;
        return rc;
    }
    return open_dataset(out, location, &http, http.reading.observer, NULL, NULL, err);
}

int sk_dataset_open_lenient(struct shard_dataset **out, const char *location,
                            sk_manifest_problem_fn problem, void *user, struct shard_err *err)
{
    return open_dataset(out, location, NULL, NULL, problem, user, err);
}

void shard_dataset_close(struct shard_dataset *ds)
{
    if (!ds)
        return;
    sk_cache_plan_free(ds->plan); /* its opens first */
    for (uint32_t s = 0; s < ds->shards_init; s++) {
        fetch_close(ds->shards[s].file);
        shard_footer_free(&ds->shards[s].head.footer);
        pthread_mutex_destroy(&ds->shards[s].lock);
    }
    for (size_t i = 0; i < ds->pool_len; i++)
        shard_record_decoder_free(ds->pool[i]);
    free(ds->pool);
    for (size_t i = 0; i < ds->spare_len; i++)
        shard_item_release(&ds->spare_items[i]);
    free(ds->spare_items);
    pthread_mutex_destroy(&ds->pool_lock);
    pthread_mutex_destroy(&ds->footers_lock);
    free(ds->shards);
    free(ds->first);
    free((void *)ds->keys_checked);
    sk_cache_free(ds->cache);
    fetch_free(ds->store);
    shard_manifest_release(&ds->manifest);
    free(ds->location);
    free(ds);
}

const struct shard_manifest *shard_dataset_manifest(const struct shard_dataset *ds)
{
    return &ds->manifest;
}

uint64_t shard_dataset_manifest_xxh3(const struct shard_dataset *ds)
{
    return ds->manifest_xxh3;
}

uint64_t shard_dataset_size(const struct shard_dataset *ds)
{
    return ds->first[ds->manifest.shard_count];
}

uint32_t shard_dataset_shard_count(const struct shard_dataset *ds)
{
    return ds->manifest.shard_count;
}

uint64_t sk_dataset_shard_first(const struct shard_dataset *ds, uint32_t s)
{
    return ds->first[s];
}

int shard_dataset_locate(const struct shard_dataset *ds, uint64_t index, uint32_t *shard,
                         uint64_t *record, struct shard_err *err)
{
    uint32_t n = ds->manifest.shard_count;
    if (index >= ds->first[n])
        return shard_err_set(err, SHARD_ENOTFOUND, "no sample %llu in a dataset of %llu",
                             (unsigned long long)index, (unsigned long long)ds->first[n]);
    /* the last shard whose first index is <= index (skips empty shards) */
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ds->first[mid] <= index)
            lo = mid;
        else
            hi = mid;
    }
    *shard = lo;
    *record = index - ds->first[lo];
    return SHARD_OK;
}

int shard_dataset_index_of(const struct shard_dataset *ds, uint32_t shard, uint64_t record,
                           uint64_t *index, struct shard_err *err)
{
    if (shard >= ds->manifest.shard_count || record >= ds->manifest.shards[shard].samples)
        return shard_err_set(err, SHARD_ENOTFOUND, "no record %llu in shard %u",
                             (unsigned long long)record, shard);
    *index = ds->first[shard] + record;
    return SHARD_OK;
}

/* ---- opening a shard ---------------------------------------------------- */

/* Whether name is "shard-NNNNNN.shard", with NNNNNN in *n. */
static int number_in_name(const char *name, uint32_t *n)
{
    unsigned v;
    int end = 0;
    if (sscanf(name, "shard-%6u" SHARD_FILE_EXT "%n", &v, &end) == 1 && end > 0 &&
        name[end] == '\0' && strlen(name) == 6 + 6 + strlen(SHARD_FILE_EXT)) {
        *n = v;
        return 1;
    }
    return 0;
}

static int shard_read(void *ctx, uint64_t offset, void *buf, size_t len, struct shard_err *err)
{
    return fetch_read(ctx, offset, buf, len, err);
}

/* Read shard s's header, trailer and footer into *head (the caller holds
 * sh->lock), opening its file on first use (kept in sh->file): sk_shard_open
 * through the fetch backend, and the footer's record count against the
 * manifest's.  Errors are not yet prefixed. */
static int load_shard(struct shard_dataset *ds, uint32_t s, struct ds_shard *sh,
                      struct sk_shard_head *head, struct shard_err *err)
{
    const struct shard_manifest_shard *ms = &ds->manifest.shards[s];
    struct fetch_file *f = sh->file;
    uint64_t start = sk_now_ns();
    int rc = SHARD_OK;
    if (!f)
        rc = ds->cache ? sk_cache_open(ds->cache, ds->store, ms->file, ms->bytes, ms->xxh3, &f, err)
                       : fetch_open(ds->store, ms->file, &f, err);
    if (!rc)
        rc = sk_shard_open(f->size, shard_read, f, head, err);
    if (!rc && head->footer.record_count != ms->samples) {
        rc = shard_err_set(err, SHARD_ECORRUPT, "footer lists %llu records, manifest says %llu",
                           (unsigned long long)head->footer.record_count,
                           (unsigned long long)ms->samples);
        shard_footer_free(&head->footer);
    }
    if (!rc) {
        sk_read_count(&ds->counters, SK_READ_BYTES_REQUESTED, head->bytes_read);
        sh->file = f;
        atomic_store(&sh->opened, 1);
    } else if (f != sh->file) {
        fetch_close(f);
    }
    sk_read_span(ds->obs, SHARD_SPAN_OPEN_SHARD, start, sk_now_ns());
    return rc;
}

int sk_dataset_shard_check_name(struct shard_dataset *ds, uint32_t s, struct shard_err *err)
{
    const char *file = ds->manifest.shards[s].file;
    uint32_t named;
    if (number_in_name(file, &named) && named != ds->shards[s].head.index)
        return shard_err_set(err, SHARD_ECORRUPT, "%s: the header says shard %u, the file name %u",
                             file, ds->shards[s].head.index, named);
    return SHARD_OK;
}

int sk_dataset_shard_check_version(struct shard_dataset *ds, uint32_t s, struct shard_err *err)
{
    /* a version 3 dataset's shards are of the layout its fields ask for */
    uint16_t shard = ds->shards[s].head.footer.version,
             dataset = sk_config_format_version(&ds->manifest.config);
    if (shard != dataset)
        return shard_err_set(err, SHARD_ECORRUPT, "%s: a version %u shard in a version %u dataset",
                             ds->manifest.shards[s].file, shard, dataset);
    return SHARD_OK;
}

/* ---- loaded footers (under footers_lock) ---------------------------------- */

static void idle_remove(struct shard_dataset *ds, struct ds_shard *sh)
{
    if (sh->prev)
        sh->prev->next = sh->next;
    else if (ds->idle_head == sh)
        ds->idle_head = sh->next;
    else
        return; /* not in the list */
    if (sh->next)
        sh->next->prev = sh->prev;
    else
        ds->idle_tail = sh->prev;
    sh->prev = sh->next = NULL;
}

static void idle_append(struct shard_dataset *ds, struct ds_shard *sh)
{
    sh->prev = ds->idle_tail;
    sh->next = NULL;
    if (ds->idle_tail)
        ds->idle_tail->next = sh;
    else
        ds->idle_head = sh;
    ds->idle_tail = sh;
}

/* Free sh's footer arrays (no read holds them); its record count, version
 * and header stay.  Returns the bytes freed. */
static uint64_t release_footer(struct shard_dataset *ds, struct ds_shard *sh)
{
    idle_remove(ds, sh);
    struct shard_footer gone = sh->head.footer;
    sh->head.footer.rows = NULL;
    sh->head.footer.keys = NULL;
    sh->head.footer.key_offsets = NULL;
    shard_footer_free(&gone);
    sh->loaded = sh->let_go = 0;
    ds->footers.loaded--;
    ds->footers.bytes -= sh->bytes;
    return sh->bytes;
}

/* Release idle footers, least recently used first, down to the budget.
 * Returns the bytes freed. */
static uint64_t trim_footers(struct shard_dataset *ds)
{
    uint64_t freed = 0;
    while (ds->footers.bytes > ds->footer_budget && ds->idle_head)
        freed += release_footer(ds, ds->idle_head);
    return freed;
}

/* After footers of `freed` bytes were freed (no lock held): give the
 * memory back to the system.  A footer is a few large blocks, which the C
 * library keeps in its heap once its threshold for mapping blocks of their
 * own has grown past them; footers of different sizes coming and going then
 * leave holes that stay resident and would let a long epoch's memory creep
 * with the shards it has read. */
static void return_memory(uint64_t freed)
{
#ifdef __GLIBC__
    if (freed >= FOOTER_TRIM_BYTES)
        malloc_trim(0);
#else
    (void)freed;
#endif
}

/* The memory a footer of n records and `keys` key bytes takes. */
static uint64_t footer_bytes(const struct shard_footer *f)
{
    uint64_t n = f->record_count, keys = 0;
    if (n)
        keys = f->key_offsets[n - 1] + f->rows[n - 1].key_len;
    return n * (sizeof *f->rows + sizeof *f->key_offsets) + keys;
}

int sk_dataset_footer_pin(struct shard_dataset *ds, uint32_t s, const struct shard_footer **footer,
                          struct shard_err *err)
{
    if (s >= ds->manifest.shard_count)
        return shard_err_set(err, SHARD_ENOTFOUND, "no shard %u", s);
    struct ds_shard *sh = &ds->shards[s];
    int rc = SHARD_OK;
    pthread_mutex_lock(&ds->footers_lock);
    int loaded = sh->loaded;
    if (loaded && sh->pins++ == 0)
        idle_remove(ds, sh);
    pthread_mutex_unlock(&ds->footers_lock);
    if (!loaded) {
        /* another thread's load may wait for a server that stalls: a
         * cancelled thread stops waiting for it */
        if (sk_cancel_lock(&sh->lock))
            return shard_err_set(err, SHARD_EINTR, "%s: " SK_CANCELLED_MESSAGE,
                                 ds->manifest.shards[s].file);
        pthread_mutex_lock(&ds->footers_lock);
        loaded = sh->loaded; /* by another read meanwhile */
        if (loaded && sh->pins++ == 0)
            idle_remove(ds, sh);
        pthread_mutex_unlock(&ds->footers_lock);
        struct sk_shard_head head;
        /* a failure is not remembered: a later read tries again */
        if (!loaded && (rc = load_shard(ds, s, sh, &head, err)))
            shard_err_prefix(err, rc, "%s", ds->manifest.shards[s].file);
        if (!loaded && !rc) {
            pthread_mutex_lock(&ds->footers_lock);
            sh->head = head;
            sh->loaded = 1;
            sh->pins = 1;
            sh->bytes = footer_bytes(&head.footer);
            struct sk_footer_stats *st = &ds->footers;
            st->loads++;
            if (++st->loaded > st->loaded_peak)
                st->loaded_peak = st->loaded;
            if ((st->bytes += sh->bytes) > st->bytes_peak)
                st->bytes_peak = st->bytes;
            uint64_t freed = trim_footers(ds);
            pthread_mutex_unlock(&ds->footers_lock);
            return_memory(freed);
        }
        pthread_mutex_unlock(&sh->lock);
    }
    if (!rc)
        *footer = &sh->head.footer;
    return rc;
}

void sk_dataset_footer_unpin(struct shard_dataset *ds, uint32_t s)
{
    struct ds_shard *sh = &ds->shards[s];
    uint64_t freed = 0;
    pthread_mutex_lock(&ds->footers_lock);
    if (--sh->pins == 0 && !sh->kept) {
        if (sh->let_go)
            freed = release_footer(ds, sh);
        else
            idle_append(ds, sh);
        freed += trim_footers(ds);
    }
    pthread_mutex_unlock(&ds->footers_lock);
    return_memory(freed);
}

void sk_dataset_let_go(struct shard_dataset *ds, uint32_t s)
{
    struct ds_shard *sh = &ds->shards[s];
    uint64_t freed = 0;
    pthread_mutex_lock(&ds->footers_lock);
    if (sh->loaded && !sh->kept) {
        if (sh->pins)
            sh->let_go = 1;
        else
            freed = release_footer(ds, sh);
    }
    pthread_mutex_unlock(&ds->footers_lock);
    return_memory(freed);
}

void sk_dataset_footer_stats(struct shard_dataset *ds, struct sk_footer_stats *out)
{
    pthread_mutex_lock(&ds->footers_lock);
    *out = ds->footers;
    pthread_mutex_unlock(&ds->footers_lock);
}

void sk_dataset_set_footer_budget(struct shard_dataset *ds, uint64_t bytes)
{
    pthread_mutex_lock(&ds->footers_lock);
    ds->footer_budget = bytes;
    uint64_t freed = trim_footers(ds);
    pthread_mutex_unlock(&ds->footers_lock);
    return_memory(freed);
}

int sk_dataset_shard_footer(struct shard_dataset *ds, uint32_t s,
                            const struct shard_footer **footer, struct shard_err *err)
{
    int rc = sk_dataset_footer_pin(ds, s, footer, err);
    if (!rc) {
        pthread_mutex_lock(&ds->footers_lock);
        ds->shards[s].kept = 1;
        ds->shards[s].let_go = 0;
        pthread_mutex_unlock(&ds->footers_lock);
        sk_dataset_footer_unpin(ds, s);
    }
    return rc;
}

void sk_dataset_shard_release(struct shard_dataset *ds, uint32_t s)
{
    if (s >= ds->manifest.shard_count)
        return;
    struct ds_shard *sh = &ds->shards[s];
    uint64_t freed = 0;
    pthread_mutex_lock(&sh->lock);
    pthread_mutex_lock(&ds->footers_lock);
    int held = sh->pins != 0;
    if (sh->loaded && !held) {
        sh->kept = 0;
        freed = release_footer(ds, sh);
    }
    pthread_mutex_unlock(&ds->footers_lock);
    if (!held && atomic_load(&sh->opened)) { /* a later load opens it again */
        atomic_store(&sh->opened, 0);
        fetch_close(sh->file);
        sh->file = NULL;
    }
    pthread_mutex_unlock(&sh->lock);
    return_memory(freed);
}

int sk_dataset_open_file(struct shard_dataset *ds, const char *name, struct fetch_file **out,
                         struct shard_err *err)
{
    return fetch_open(ds->store, name, out, err);
}

/* ---- reading a record ---------------------------------------------------- */

static int pool_get(struct shard_dataset *ds, struct shard_record_decoder **out,
                    struct shard_err *err)
{
    pthread_mutex_lock(&ds->pool_lock);
    *out = ds->pool_len ? ds->pool[--ds->pool_len] : NULL;
    pthread_mutex_unlock(&ds->pool_lock);
    return *out ? SHARD_OK : shard_record_decoder_new(out, err);
}

static void pool_put(struct shard_dataset *ds, struct shard_record_decoder *dec)
{
    pthread_mutex_lock(&ds->pool_lock);
    if (SK_GROW(ds->pool, ds->pool_cap, ds->pool_len + 1, 8) == SHARD_OK) {
        ds->pool[ds->pool_len++] = dec;
        dec = NULL;
    }
    pthread_mutex_unlock(&ds->pool_lock);
    shard_record_decoder_free(dec); /* only when the pool could not grow */
}

void shard_item_release(struct shard_item *item)
{
    if (!item)
        return;
    shard_buf_release(&item->key);
    shard_buf_release(&item->stored);
    shard_image_release(&item->pixels);
    free(item->fields);
    shard_buf_release(&item->field_data);
    memset(item, 0, sizeof *item);
}

/* The record's form is one its dataset may hold: 8-bit RGB before version
 * 3; in version 3 one the manifest's stored form is at least as wide as. */
static int check_form(const struct shard_manifest *m, const struct shard_record_meta *meta,
                      struct shard_err *err)
{
    uint32_t channels, depth;
    sk_pixels_widest(meta->channels, meta->depth, m->channels, m->depth, &channels, &depth);
    if (channels != m->channels || depth != m->depth)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "record holds %s of %u bits, wider than the dataset's %s of %u",
                             shard_pixels_name(meta->channels), meta->depth,
                             shard_pixels_name(m->channels), m->depth);
    return SHARD_OK;
}

/* *img in the form m stores (a narrower record widened), tmp as scratch. */
static int widen(const struct shard_manifest *m, struct shard_image *img, struct shard_image *tmp,
                 struct shard_err *err)
{
    if (img->channels == m->channels && (img->depth == 16 ? 16u : 8u) == m->depth)
        return SHARD_OK;
    int rc = shard_image_convert(img, m->channels, m->depth, m->config.background, tmp, err);
    if (rc)
        return rc;
    struct shard_image t = *img;
    *img = *tmp;
    *tmp = t;
    return SHARD_OK;
}

/* Fill *item from a decoded record view. */
static int fill_item(const struct shard_manifest *m, const struct shard_record_view *v,
                     unsigned flags, struct sk_read_box *rb, struct shard_item *item,
                     struct shard_err *err)
{
    item->label = v->meta.label;
    item->width = v->meta.width;
    item->height = v->meta.height;
    item->channels = m->channels;
    item->depth = m->depth;
    item->stored_channels = v->meta.channels;
    item->stored_depth = v->meta.depth;
    item->codec = v->meta.codec;
    item->key.len = 0;
    item->stored.len = 0;
    item->field_count = 0;
    item->pixels.width = item->pixels.height = 0;
    int rc = shard_buf_reserve(&item->key, (size_t)v->key_len + 1, err);
    if (rc)
        return rc;
    memcpy(item->key.data, v->key, v->key_len);
    item->key.data[v->key_len] = '\0';
    item->key.len = v->key_len;
    int rc2 = check_form(m, &v->meta, err);
    if (rc2)
        return rc2;
    if ((flags & SHARD_READ_STORED) &&
        (rc = shard_buf_append(&item->stored, v->payload, v->payload_len, err)))
        return rc;
    if (!(flags & SHARD_READ_PIXELS))
        return SHARD_OK;
    if (rb && v->meta.codec == SHARD_CODEC_JPEG && v->meta.channels == SHARD_PIXELS_RGB &&
        m->channels == SHARD_PIXELS_RGB && m->depth == 8 &&
        rb->choose(rb->ctx, v->meta.width, v->meta.height, &rb->box)) {
        rc = sk_decode_payload_box(v->meta.codec, v->payload, v->payload_len, v->meta.width,
                                   v->meta.height, &rb->box, &item->pixels, err);
        rb->cropped = !rc;
    } else {
        rc = shard_decode_payload_form(v->meta.codec, v->payload, v->payload_len, v->meta.width,
                                       v->meta.height, v->meta.channels, v->meta.depth,
                                       &item->pixels, err);
        if (!rc) {
            struct shard_image tmp = {0};
            rc = widen(m, &item->pixels, &tmp, err);
            shard_image_release(&tmp);
        }
    }
    if (rc)
        item->pixels.width = item->pixels.height = 0;
    return rc;
}

/* Whether value f of a record agrees with the manifest m: a declared field
 * of the declared type whose value is one of that type as the format
 * defines it (shard_field_check_image: UTF-8 text, one JSON value, finite
 * floats, a vector of the declared length, boxes inside the record's image
 * and of declared classes, a mask of its size and declared values); a
 * label list's numbers below the label count (that none is listed twice is
 * left to shardcheck --deep).  0 or SHARD_ECORRUPT. */
static int check_field(const struct shard_manifest *m, const struct shard_field_value *f,
                       const struct shard_record_meta *meta, struct shard_err *err)
{
    const struct shard_config *c = &m->config;
    if (f->field >= c->field_count)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "field %u is not declared (the manifest declares %u)", f->field,
                             c->field_count);
    const struct shard_field_decl *d = &c->fields[f->field];
    if (f->type != d->type)
        return shard_err_set(err, SHARD_ECORRUPT, "field '%s' is stored as %s, declared %s",
                             d->name, shard_field_type_name(f->type),
                             shard_field_type_name(d->type));
    int rc = SHARD_OK;
    if (d->type != SHARD_FIELD_LABELS) {
        rc = shard_field_check_image(d, f->data, f->len, m->label_count, meta->width, meta->height,
                                     err);
    } else {
        /* the decoder checked a multiple of 4 bytes */
        for (uint64_t i = 0; !rc && i < f->len; i += 4) {
            uint32_t label = get_le32(f->data + i);
            if (label >= m->label_count)
                rc = shard_err_set(err, SHARD_ECORRUPT, "label number %u is not below %u", label,
                                   m->label_count);
        }
    }
    return rc ? shard_err_prefix(err, rc, "field '%s'", d->name) : SHARD_OK;
}

/* Copy the decoded record's field area into the item (one copy: the values
 * point into item->field_data) and check each value against the manifest. */
static int fill_fields(const struct shard_manifest *m, const struct shard_record_view *v,
                       struct shard_item *item, struct shard_err *err)
{
    item->field_count = 0;
    if (!v->field_count)
        return SHARD_OK;
    if (v->field_count > item->field_capacity) {
        /* at most SHARD_FIELDS_MAX: the decoder checked the numbers increase below it */
        struct shard_field_value *p = realloc(item->fields, v->field_count * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        item->fields = p;
        item->field_capacity = v->field_count;
    }
    item->field_data.len = 0;
    int rc = shard_buf_append(&item->field_data, v->fields, (size_t)v->fields_len, err);
    if (rc)
        return rc;
    struct shard_record_view copy = *v;
    copy.fields = item->field_data.data;
    shard_record_fields(&copy, item->fields, v->field_count);
    for (uint32_t i = 0; i < v->field_count; i++)
        if ((rc = check_field(m, &item->fields[i], &v->meta, err)))
            return rc;
    item->field_count = v->field_count;
    return SHARD_OK;
}

/* Pixels of a record decompressed into img's own buffer (by
 * sk_record_decode_into; img->pixels is that buffer's start, offset 0):
 * a raw payload stays where it is and img is pointed at it - a raw read
 * copies nothing after zstd.  Any other codec, in a dataset whose manifest
 * says raw, is decoded into a new image that then replaces img. */
static int place_pixels(const struct shard_manifest *m, const struct shard_record_view *v,
                        struct shard_image *img, struct shard_err *err)
{
    /* a raw payload of the dataset's form (16-bit samples are stored
     * little-endian: the host's order here) is used where it lies */
    int as_is = v->meta.codec == SHARD_CODEC_RAW && v->meta.channels == m->channels &&
                v->meta.depth == m->depth &&
                (v->meta.depth == 8 || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
    if (!as_is) {
        struct shard_image decoded = {0}, tmp = {0};
        int rc = shard_decode_payload_form(v->meta.codec, v->payload, v->payload_len, v->meta.width,
                                           v->meta.height, v->meta.channels, v->meta.depth,
                                           &decoded, err);
        if (!rc)
            rc = widen(m, &decoded, &tmp, err);
        shard_image_release(&tmp);
        if (rc) {
            shard_image_release(&decoded);
            return rc;
        }
        shard_image_release(img);
        *img = decoded;
        return SHARD_OK;
    }
    /* shard_record_decode checked payload_len == width * height * channels
     * * depth / 8, and fill_item the form */
    size_t off = (size_t)(v->payload - img->pixels);
    img->pixels += off;
    img->offset = off;
    img->capacity -= off;
    img->width = v->meta.width;
    img->height = v->meta.height;
    img->channels = v->meta.channels;
    img->depth = v->meta.depth;
    img->stride = (size_t)v->meta.width * v->meta.channels * (v->meta.depth / 8);
    return SHARD_OK;
}

/* Account [start, now) to stage counter c and report it as span k; returns
 * now, the start of the next stage. */
static uint64_t stage_done(struct shard_dataset *ds, enum sk_read_counter c, enum shard_read_span k,
                           uint64_t start)
{
    uint64_t now = sk_now_ns();
    sk_read_count(&ds->counters, c, now - start);
    sk_read_span(ds->obs, k, start, now);
    return now;
}

/* read_record's work, from `start`: open the shard if need be, then the
 * read, decompress and decode stages. */
static int read_stages(struct shard_dataset *ds, uint32_t s, uint64_t r, unsigned flags,
                       struct sk_read_box *rb, struct shard_item *item, uint64_t start,
                       struct shard_err *err)
{
    const struct shard_footer *footer;
    uint64_t t = start;
    int rc = sk_dataset_footer_pin(ds, s, &footer, err);
    if (rc)
        return rc;
    if (!(rc = sk_dataset_shard_check_name(ds, s, err)) &&
        !(rc = sk_dataset_shard_check_version(ds, s, err)) && r >= footer->record_count)
        rc = shard_err_set(err, SHARD_ENOTFOUND, "%s has no record %llu",
                           ds->manifest.shards[s].file, (unsigned long long)r);
    struct shard_record_decoder *dec;
    if (rc || (rc = pool_get(ds, &dec, err))) {
        sk_dataset_footer_unpin(ds, s);
        return rc;
    }
    const struct shard_index_row *row = &footer->rows[r];
    struct shard_buf *frame = sk_record_decoder_frame(dec);
    struct shard_record_view view;
    frame->len = 0;
    /* Pixels of raw records are decompressed straight into the item's pixel
     * buffer and left there (see place_pixels). */
    struct shard_image *img = &item->pixels;
    int in_place = (flags & SHARD_READ_PIXELS) && !(flags & SHARD_READ_STORED) &&
                   ds->manifest.config.codec == SHARD_CODEC_RAW;
    struct shard_buf spot = {0};
    if (in_place && img->pixels) {
        spot.data = img->pixels - img->offset;
        spot.cap = img->offset + img->capacity;
    }
    if (row->frame_bytes > FRAME_MAX_BYTES)
        rc = shard_err_set(err, SHARD_ECORRUPT, "frame of %llu bytes exceeds the record limit",
                           (unsigned long long)row->frame_bytes);
    if (!rc)
        rc = shard_buf_reserve(frame, (size_t)row->frame_bytes, err);
    if (!rc)
        rc = fetch_read(ds->shards[s].file, row->offset, frame->data, (size_t)row->frame_bytes,
                        err);
    sk_read_count(&ds->counters, SK_READ_BYTES_REQUESTED, row->frame_bytes);
    t = stage_done(ds, SK_READ_NS, SHARD_SPAN_READ, t);
    const uint64_t *expect = (flags & SHARD_READ_VERIFY) ? &row->frame_xxh3 : NULL;
    if (!rc && in_place)
        rc = sk_record_decode_into(dec, frame->data, (size_t)row->frame_bytes, expect, &view, &spot,
                                   err);
    else if (!rc)
        rc = shard_record_decode(dec, frame->data, (size_t)row->frame_bytes, expect, &view, err);
    if (in_place) { /* the buffer may have moved or grown: the image owns it again */
        img->pixels = spot.data;
        img->offset = 0;
        img->capacity = spot.cap;
        img->width = img->height = 0;
    }
    t = stage_done(ds, SK_READ_DECOMPRESS_NS, SHARD_SPAN_DECOMPRESS, t);
    if (!rc)
        rc = sk_shard_check_record(footer, r, &view, err);
    if (!rc)
        rc = fill_item(&ds->manifest, &view,
                       in_place ? flags & ~(unsigned)SHARD_READ_PIXELS : flags,
                       in_place ? NULL : rb, item, err);
    /* before place_pixels, which may free the buffer the view points into */
    if (!rc && !(flags & SHARD_READ_NO_FIELDS))
        rc = fill_fields(&ds->manifest, &view, item, err);
    if (!rc && in_place)
        rc = place_pixels(&ds->manifest, &view, img, err);
    pool_put(ds, dec);
    stage_done(ds, SK_READ_DECODE_NS, SHARD_SPAN_DECODE, t);
    if (rc) {
        item->key.len = 0;
        item->field_count = 0;
        rc = sk_shard_record_error(err, rc, ds->manifest.shards[s].file, footer, r);
    }
    sk_dataset_footer_unpin(ds, s);
    if (rc)
        return rc;
    item->shard = s;
    item->record = r;
    item->index = ds->first[s] + r;
    return SHARD_OK;
}

static int read_record(struct shard_dataset *ds, uint32_t s, uint64_t r, unsigned flags,
                       struct sk_read_box *rb, struct shard_item *item, struct shard_err *err)
{
    uint64_t start = sk_now_ns();
    if (rb)
        rb->cropped = 0;
    int rc = read_stages(ds, s, r, flags, rb, item, start, err);
    sk_read_count(&ds->counters, rc ? SK_READ_ERRORS : SK_READ_SAMPLES, 1);
    sk_read_span(ds->obs, SHARD_SPAN_SAMPLE, start, sk_now_ns());
    return rc;
}

void sk_dataset_item_put(struct shard_dataset *ds, struct shard_item *item)
{
    pthread_mutex_lock(&ds->pool_lock);
    if (ds->spare_len == ds->spare_cap && ds->spare_cap < DATASET_SPARE_ITEMS) {
        size_t cap = ds->spare_cap ? 2 * ds->spare_cap : 16;
        if (cap > DATASET_SPARE_ITEMS)
            cap = DATASET_SPARE_ITEMS;
        struct shard_item *p = realloc(ds->spare_items, cap * sizeof *p);
        if (p) {
            ds->spare_items = p;
            ds->spare_cap = cap;
        }
    }
    if (ds->spare_len < ds->spare_cap)
        ds->spare_items[ds->spare_len++] = *item;
    else
        shard_item_release(item);
    pthread_mutex_unlock(&ds->pool_lock);
    memset(item, 0, sizeof *item);
}

int sk_dataset_item_take(struct shard_dataset *ds, struct shard_item *item)
{
    pthread_mutex_lock(&ds->pool_lock);
    int got = ds->spare_len > 0;
    if (got)
        *item = ds->spare_items[--ds->spare_len];
    pthread_mutex_unlock(&ds->pool_lock);
    return got;
}

struct fetch_file *sk_dataset_shard_file(struct shard_dataset *ds, uint32_t s)
{
    struct ds_shard *sh = &ds->shards[s];
    return atomic_load(&sh->opened) ? sh->file : NULL;
}

int sk_dataset_advise(struct shard_dataset *ds, uint64_t index)
{
    uint32_t s;
    uint64_t r;
    struct shard_err err;
    if (shard_dataset_locate(ds, index, &s, &r, &err))
        return 1;
    /* Only shards whose footer a read has loaded: loading one here could
     * repeat a failing open (and its retries) that the read will make and
     * report anyway.  The file stays open once opened. */
    struct ds_shard *sh = &ds->shards[s];
    uint64_t offset = 0, bytes = 0;
    pthread_mutex_lock(&ds->footers_lock);
    int loaded = sh->loaded;
    if (loaded && r < sh->head.footer.record_count) {
        offset = sh->head.footer.rows[r].offset;
        bytes = sh->head.footer.rows[r].frame_bytes;
    }
    pthread_mutex_unlock(&ds->footers_lock);
    if (!loaded)
        return 0;
    if (bytes)
        fetch_advise(sh->file, offset, bytes);
    return 1;
}

void sk_dataset_advise_ahead(struct shard_dataset *ds, const uint64_t *list, uint64_t count,
                             uint64_t p, uint64_t ahead, _Atomic uint64_t *advised)
{
    sk_cache_plan_at(ds->plan, list, count, p, 2 * ahead + 1);
    uint64_t to = p + 1 + ahead, from = atomic_load(advised);
    if (to > count)
        to = count;
    while (from < to && !atomic_compare_exchange_weak(advised, &from, to))
        ;
    for (uint64_t q = from; q < to; q++)
        if (!sk_dataset_advise(ds, list[q]) && q > p) {
            /* its shard is not open yet: a later claim asks again (one
             * already claimed is skipped: its read opens the shard, or
             * fails and says why) */
            uint64_t cur = atomic_load(advised);
            while (q < cur && !atomic_compare_exchange_weak(advised, &cur, q))
                ;
            break;
        }
}

int shard_dataset_read_record(struct shard_dataset *ds, uint32_t shard, uint64_t record,
                              unsigned flags, struct shard_item *item, struct shard_err *err)
{
    if (shard >= ds->manifest.shard_count)
        return shard_err_set(err, SHARD_ENOTFOUND, "no shard %u in a dataset of %u", shard,
                             ds->manifest.shard_count);
    return read_record(ds, shard, record, flags, NULL, item, err);
}

int shard_dataset_read(struct shard_dataset *ds, uint64_t index, unsigned flags,
                       struct shard_item *item, struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    int rc = shard_dataset_locate(ds, index, &s, &r, err);
    return rc ? rc : read_record(ds, s, r, flags, NULL, item, err);
}

int sk_dataset_read_box(struct shard_dataset *ds, uint64_t index, unsigned flags,
                        struct sk_read_box *rb, struct shard_item *item, struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    rb->cropped = 0;
    int rc = shard_dataset_locate(ds, index, &s, &r, err);
    return rc ? rc : read_record(ds, s, r, flags | SHARD_READ_PIXELS, rb, item, err);
}
