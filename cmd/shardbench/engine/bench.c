/* bench.c - the benchmark harness: epochs, the emulated training loop, and
 * the numbers (see bench.h).
 *
 * One run: open the source (list the files, or open the dataset: the
 * startup), then per epoch build the epoch's order, optionally drop the
 * page cache, start the loader (files_loader or shard_iter, both handing
 * out samples in order through a bounded ring) and consume it in batches on
 * this thread.  The shard reader counts its own stages and bytes (the
 * dataset's counters, shard_dataset_stats; the files loader's GETs are
 * counted by shard_remote_stats) and reports spans to the run's probe
 * (probe.h, the observer of shardkit/dataset.h), which the files loader
 * reports to directly; the consumer times its own waits and steps.  Counters are snapshotted around
 * each epoch, so the first epoch and the steady ones are measured apart. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "internal.h"

#define DEFAULT_EPOCHS 2
#define DEFAULT_BATCH 64
#define DEFAULT_SIZE 512
#define QUEUE_PER_THREAD 4
#define QUEUE_MAX (1u << 20)
#define NS 1e9
#define MB 1e6

static const char *const stage_names[STAGE_COUNT] = {
    "read", "decompress", "decode", "resize", "queue wait", "consumer step",
};

/* Consumer-side span names (loader-side ones are the read path's,
 * shard_read_span_name). */
#define SPAN_EPOCH "epoch"
#define SPAN_BATCH "batch"

const char *bench_stage_name(enum bench_stage s)
{
    return (unsigned)s < STAGE_COUNT ? stage_names[s] : "unknown";
}

const char *bench_mode_name(enum bench_mode m)
{
    return m == BENCH_SHARDS ? "shards" : "files";
}

static double now_seconds(void)
{
    return (double)trace_now() / NS;
}

/* Process CPU time, user + system. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / NS;
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * NS)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void bench_options_init(struct bench_options *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = DEFAULT_EPOCHS;
    o->batch = DEFAULT_BATCH;
    o->size = DEFAULT_SIZE;
    o->fit = SHARD_FIT_SHORT;
    o->upscale = 1;
    o->shuffle = 1;
    shard_dataset_options_init(&o->reading);
}

/* ---- keys ------------------------------------------------------------------- */

/* How a file that is not a regular one is named ("not a regular file: fifo"). */
static const char *not_regular(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFIFO: return "not a regular file: fifo";
    case S_IFSOCK: return "not a regular file: socket";
    case S_IFCHR: return "not a regular file: character device";
    case S_IFBLK: return "not a regular file: block device";
    case S_IFDIR: return "not a regular file: directory";
    }
    return "not a regular file: unknown type";
}

/* Open `path` for reading, refusing at once what is not a regular file (a
 * FIFO would wait for a writer: O_NONBLOCK until fstat has seen the type). */
static int open_list(const char *path, FILE **out, struct shard_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC); /* nofollow: named */
    if (fd < 0)
        return errno == ENOENT ? shard_err_set(err, SHARD_ENOTFOUND, "file is missing")
                               : shard_err_errno(err, SHARD_EIO, errno, "cannot open");
    struct stat st;
    int rc = SHARD_OK;
    if (fstat(fd, &st) != 0 || fcntl(fd, F_SETFL, O_RDONLY) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot open");
    else if (!S_ISREG(st.st_mode))
        rc = shard_err_set(err, SHARD_EIO, "%s", not_regular(st.st_mode));
    else if (!(*out = fdopen(fd, "rb")))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (rc)
        close(fd);
    return rc;
}

int bench_keys_from_file(const char *path, struct shard_keylist *keys, struct shard_err *err)
{
    FILE *f = NULL;
    int rc = open_list(path, &f, err);
    if (rc)
        return shard_err_prefix(err, rc, "cannot open key list '%s'", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t number = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        number++;
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n')
            len--;
        if (len && line[len - 1] == '\r')
            len--;
        if (!len)
            continue;
        if (len > SHARD_KEY_MAX || memchr(line, '\0', len)) {
            rc = shard_err_set(err, SHARD_EINVAL, "key list '%s' line %llu: not a key", path,
                               (unsigned long long)number);
            break;
        }
        if ((rc = shard_keylist_add(keys, line, len, err)))
            break;
    }
    if (!rc && ferror(f))
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read key list '%s'", path);
    free(line);
    fclose(f);
    return rc;
}

int bench_keys_from_dataset(const char *location, const struct shard_dataset_options *reading,
                            struct shard_keylist *keys, struct shard_err *err)
{
    struct shard_dataset *ds;
    int rc = shard_dataset_open_ex(&ds, location, reading, err);
    if (rc)
        return rc;
    struct shard_buf key = {0};
    for (uint64_t i = 0; i < shard_dataset_size(ds) && !rc; i++)
        if (!(rc = shard_dataset_key_copy(ds, i, &key, err)))
            rc = shard_keylist_add(keys, (const char *)key.data, key.len, err);
    shard_buf_release(&key);
    shard_dataset_close(ds);
    return rc;
}

/* ---- a run ------------------------------------------------------------------ */

struct bench_state {
    enum bench_mode mode;
    const char *location;
    const struct bench_options *o;
    int threads;
    uint32_t queue_depth;
    int is_remote;
    struct bench_probe probe;
    uint64_t deadline_ns; /* 0: none */
    int out_of_time;
    /* files */
    struct shard_keylist own_keys;
    const struct shard_keylist *keys;
    int root_fd;
    struct shard_remote *remote;
    /* shards */
    struct shard_dataset *ds;
    uint64_t *subset; /* the samples of o->shard_keys, in stored order, or NULL */
    uint64_t subset_count;
    /* per epoch */
    uint64_t *order;
    uint64_t count;
    uint64_t first_epoch_ns; /* when epoch 1 started: batches are timed from it */
    uint64_t batch_cap;      /* room in the result's batches */
};

struct snapshot {
    uint64_t stage_ns[STAGE_COUNT];
    struct shard_read_stats read; /* the loader's reads: the dataset's, or the files
                                   * loader's bytes and its GETs' costs */
    double wall;
    double cpu;
};

static void take_snapshot(const struct bench_state *b, struct snapshot *s)
{
    for (int i = 0; i < STAGE_COUNT; i++)
        s->stage_ns[i] = atomic_load(&b->probe.stage_ns[i]);
    if (b->ds) {
        shard_dataset_stats(b->ds, &s->read);
        s->stage_ns[STAGE_READ] += s->read.read_ns;
        s->stage_ns[STAGE_DECOMPRESS] += s->read.decompress_ns;
        s->stage_ns[STAGE_DECODE] += s->read.decode_ns;
    } else {
        memset(&s->read, 0, sizeof s->read);
        if (b->remote)
            shard_remote_stats(b->remote, &s->read);
        s->read.bytes_requested = atomic_load(&b->probe.bytes_read);
    }
    s->wall = now_seconds();
    s->cpu = cpu_seconds();
}

/* Add one batch to the result's list of them. */
static int batch_add(struct bench_state *b, struct bench_result *r, const struct bench_batch *batch,
                     struct shard_err *err)
{
    if (r->batch_count == b->batch_cap) {
        uint64_t cap = b->batch_cap ? 2 * b->batch_cap : 256;
        struct bench_batch *p = realloc(r->batches, cap * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        r->batches = p;
        b->batch_cap = cap;
    }
    r->batches[r->batch_count++] = *batch;
    return SHARD_OK;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile q (0..1) of v[0..len) (sorted); 0 when empty. */
static double percentile(const double *v, size_t len, double q)
{
    if (!len)
        return 0;
    size_t rank = (size_t)ceil(q * (double)len);
    return v[rank ? rank - 1 : 0];
}

/* Add the epoch between two snapshots to a phase. */
static void phase_add(const struct bench_state *b, struct bench_phase *ph,
                      const struct snapshot *s0, const struct snapshot *s1, uint64_t samples,
                      uint64_t errors, uint64_t batches)
{
    ph->epochs++;
    ph->samples += samples;
    ph->errors += errors;
    ph->batches += batches;
    ph->seconds += s1->wall - s0->wall;
    ph->cpu_seconds += s1->cpu - s0->cpu;
    for (int i = 0; i < STAGE_COUNT; i++)
        ph->stage_seconds[i] += (double)(s1->stage_ns[i] - s0->stage_ns[i]) / NS;
    const struct shard_read_stats *r0 = &s0->read, *r1 = &s1->read;
    ph->bytes_read += b->is_remote ? r1->bytes_transferred - r0->bytes_transferred
                                   : r1->bytes_requested - r0->bytes_requested;
    ph->requests += r1->requests - r0->requests;
    ph->retries += r1->retries - r0->retries;
    ph->rtt_seconds += (double)(r1->rtt_ns - r0->rtt_ns) / NS;
    ph->cache_hits += r1->cache_hits - r0->cache_hits;
    ph->cache_misses += r1->cache_misses - r0->cache_misses;
    ph->cache_bytes_fetched += r1->cache_bytes_fetched - r0->cache_bytes_fetched;
    ph->cache_evictions += r1->cache_evictions - r0->cache_evictions;
    ph->cache_skipped += r1->cache_skipped - r0->cache_skipped;
}

/* The rates of a phase, and the percentiles of its batches' latencies (the
 * first epoch's, or the later ones'). */
static int phase_finish(struct bench_phase *ph, const struct bench_result *r, int steady,
                        struct shard_err *err)
{
    if (ph->seconds > 0) {
        ph->samples_per_second = (double)ph->samples / ph->seconds;
        ph->mb_per_second = (double)ph->bytes_read / ph->seconds / MB;
        ph->wait_fraction = ph->stage_seconds[STAGE_QUEUE_WAIT] / ph->seconds;
    }
    if (ph->samples)
        ph->cpu_seconds_per_sample = ph->cpu_seconds / (double)ph->samples;
    double *v = malloc((r->batch_count ? r->batch_count : 1) * sizeof *v);
    if (!v)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t len = 0;
    for (uint64_t i = 0; i < r->batch_count; i++)
        if ((r->batches[i].epoch > 0) == steady)
            v[len++] = r->batches[i].latency_seconds;
    qsort(v, len, sizeof *v, compare_double);
    ph->batch_p50 = percentile(v, len, 0.50);
    ph->batch_p99 = percentile(v, len, 0.99);
    free(v);
    return SHARD_OK;
}

/* ---- opening the source -------------------------------------------------------- */

/* The remote-reading options of the run: the caller's, with the run's probe
 * as the observer. */
static struct shard_dataset_options reading_of(const struct bench_state *b)
{
    struct shard_dataset_options ro = b->o->reading;
    ro.observer = bench_probe_observer(&b->probe);
    return ro;
}

static int open_files(struct bench_state *b, struct shard_err *err)
{
    const struct bench_options *o = b->o;
    b->keys = o->keys;
    if (b->is_remote) {
        int s3 = !strncmp(b->location, "s3://", 5);
        if (!o->keys && !s3)
            return shard_err_set(err, SHARD_EINVAL,
                                 "'%s': a URL cannot be listed: the files "
                                 "mode needs the sample keys (a key list, or a dataset's)",
                                 b->location);
        struct shard_dataset_options ro = reading_of(b);
        int rc = shard_remote_open(&b->remote, b->location, &ro, err);
        if (rc || o->keys)
            return rc;
        /* an S3 prefix is listed as shardify lists it */
        struct shard_scan_stats st = {0};
        if ((rc = shard_scan_location(b->location, &b->own_keys, NULL, &st, err)))
            return rc;
        shard_keylist_sort(&b->own_keys);
        b->keys = &b->own_keys;
        return SHARD_OK;
    }
    b->root_fd = open(b->location, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: named */
    if (b->root_fd < 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot open the folder '%s'", b->location);
    if (o->keys)
        return SHARD_OK;
    struct shard_scan_stats st = {0};
    int rc = shard_scan_dir(b->location, &b->own_keys, NULL, &st, err);
    if (rc)
        return rc;
    shard_keylist_sort(&b->own_keys);
    b->keys = &b->own_keys;
    return SHARD_OK;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int open_shards(struct bench_state *b, struct shard_err *err)
{
    struct shard_dataset_options ro = reading_of(b);
    int rc = shard_dataset_open_ex(&b->ds, b->location, &ro, err);
    const struct shard_keylist *keys = b->o->shard_keys;
    if (rc || !keys)
        return rc;
    if (!(b->subset = malloc((keys->count ? keys->count : 1) * sizeof *b->subset)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < keys->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(keys, i, &len);
        if ((rc = shard_dataset_find_key(b->ds, key, len, &b->subset[i], err)))
            return shard_err_prefix(err, rc, "--keys");
    }
    b->subset_count = keys->count;
    qsort(b->subset, (size_t)b->subset_count, sizeof *b->subset, compare_u64);
    return SHARD_OK;
}

/* ---- one epoch ------------------------------------------------------------------- */

/* The epoch's list: b->order[0..count).  Shards follow the epoch plan;
 * files are shuffled as a DataLoader with shuffle=True does, by the plan of
 * one shard holding every file with a shuffle buffer of all of them (a
 * Fisher-Yates shuffle of the whole list, seeded from the seed and epoch). */
static int epoch_order(struct bench_state *b, uint32_t epoch, struct shard_err *err)
{
    const struct bench_options *o = b->o;
    struct shard_plan *plan = NULL;
    struct shard_plan_options po;
    shard_plan_options_init(&po);
    po.shuffle = o->shuffle;
    po.seed = o->seed;
    po.epoch = epoch;
    po.shuffle_buffer = o->shuffle_buffer ? o->shuffle_buffer : SHARD_PLAN_DEFAULT_BUFFER;
    int rc;
    if (b->mode == BENCH_SHARDS && b->subset) {
        rc = shard_plan_new(&plan, &b->subset_count, 1, &po, err);
    } else if (b->mode == BENCH_SHARDS) {
        rc = shard_dataset_plan(b->ds, &po, &plan, err);
    } else {
        uint64_t files = b->keys->count;
        po.shuffle_buffer = files;
        rc = shard_plan_new(&plan, &files, 1, &po, err);
    }
    if (rc)
        return rc;
    uint64_t n = shard_plan_count(plan);
    free(b->order);
    b->order = malloc((n ? n : 1) * sizeof *b->order);
    if (!b->order) {
        shard_plan_free(plan);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    memcpy(b->order, shard_plan_indices(plan), n * sizeof *b->order);
    for (uint64_t i = 0; b->subset && i < n; i++)
        b->order[i] = b->subset[b->order[i]];
    shard_plan_free(plan);
    b->count = o->limit && o->limit < n ? o->limit : n;
    return SHARD_OK;
}

/* Drop the page cache of every file this epoch reads. */
static void drop_cache(struct bench_state *b, struct bench_result *r)
{
    struct cold_stats st = {.measured = 1};
    if (b->mode == BENCH_FILES) {
        for (uint64_t i = 0; i < b->count; i++)
            cold_drop_file(b->root_fd, shard_keylist_get(b->keys, (size_t)b->order[i], NULL), &st);
    } else {
        int dir = open(b->location, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: named */
        if (dir < 0) {
            st.failed = st.files = 1;
            st.first_errno = errno;
            st.measured = 0;
        }
        const struct shard_manifest *m = shard_dataset_manifest(b->ds);
        for (uint32_t s = 0; dir >= 0 && s < m->shard_count; s++)
            cold_drop_file(dir, m->shards[s].file, &st);
        if (dir >= 0)
            close(dir);
    }
    double frac = st.pages ? (double)st.resident / (double)st.pages : 0;
    if (st.failed) {
        struct shard_err why;
        shard_err_errno(&why, SHARD_EIO, st.first_errno,
                        "the page cache could not be dropped for %llu of %llu files",
                        (unsigned long long)st.failed, (unsigned long long)st.files);
        r->cold_dropped = 0;
        memcpy(r->cold_note, why.msg, sizeof r->cold_note);
    }
    if (!st.measured)
        r->cold_resident = -1;
    else if (r->cold_resident >= 0 && frac > r->cold_resident)
        r->cold_resident = frac;
}

struct epoch_source {
    struct files_loader *files;
    struct shard_iter *iter;
};

static int source_next(struct epoch_source *src, struct shard_item *item, struct shard_err *err)
{
    return src->files ? files_loader_next(src->files, item, err)
                      : shard_iter_next(src->iter, item, err);
}

static void source_free(struct epoch_source *src)
{
    files_loader_free(src->files);
    shard_iter_free(src->iter);
}

static int source_start(struct bench_state *b, struct epoch_source *src, struct shard_err *err)
{
    memset(src, 0, sizeof *src);
    if (b->mode == BENCH_FILES) {
        struct files_loader_options lo = {
            .threads = b->threads,
            .queue_depth = b->queue_depth,
            .size = b->o->size,
            .fit = b->o->fit,
            .upscale = b->o->upscale,
        };
        return files_loader_new(&src->files, b->root_fd, b->remote, b->keys, b->order, b->count,
                                &lo, &b->probe, err);
    }
    struct shard_iter_options io;
    shard_iter_options_init(&io);
    io.threads = b->threads;
    io.queue_depth = b->queue_depth;
    io.flags = SHARD_READ_PIXELS;
    return shard_iter_new(&src->iter, b->ds, b->order, b->count, &io, err);
}

static int add_digest(struct bench_result *r, const struct shard_item *item, struct shard_err *err)
{
    if ((r->digest_count & (r->digest_count - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        size_t cap = r->digest_count ? 2 * (size_t)r->digest_count : 1;
        struct bench_digest *p = realloc(r->digests, cap * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        r->digests = p;
    }
    struct bench_digest *d = &r->digests[r->digest_count];
    const struct shard_image *px = &item->pixels;
    XXH3_state_t *h = XXH3_createState();
    if (!h || !(d->key = malloc(item->key.len + 1))) {
        XXH3_freeState(h);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    XXH3_64bits_reset(h);
    for (uint32_t y = 0; y < px->height; y++)
        XXH3_64bits_update(h, px->pixels + (size_t)y * px->stride, (size_t)px->width * 3);
    d->xxh3 = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    memcpy(d->key, item->key.data, item->key.len);
    d->key[item->key.len] = '\0';
    d->key_len = item->key.len;
    d->width = px->width;
    d->height = px->height;
    r->digest_count++;
    return SHARD_OK;
}

/* Run epoch `e` and add it to its phase.  A shards-mode read error stops
 * the run (returned); files-mode errors are counted. */
static int run_epoch(struct bench_state *b, uint32_t e, struct bench_result *r,
                     struct shard_err *err)
{
    const struct bench_options *o = b->o;
    struct trace *trace = o->trace;
    int rc = epoch_order(b, e, err);
    if (rc)
        return rc;
    if (o->cold && !b->is_remote)
        drop_cache(b, r);
    if (b->ds)
        shard_dataset_drop_window_cache(b->ds); /* over HTTP every epoch fetches its bytes again */
    struct bench_phase *ph = e == 0 ? &r->first : &r->steady;
    struct snapshot s0, s1;
    take_snapshot(b, &s0);
    uint64_t epoch_start = trace_now();
    if (e == 0)
        b->first_epoch_ns = epoch_start;
    struct epoch_source src;
    if ((rc = source_start(b, &src, err)))
        return rc;
    struct shard_item item = {0};
    struct shard_err item_err;
    uint64_t samples = 0, errors = 0, batches = 0;
    int done = 0;
    while (!done && !rc) {
        uint64_t batch_start = trace_now(), got = 0;
        while (got < o->batch) {
            uint64_t t = trace_now();
            shard_err_clear(&item_err);
            int n = source_next(&src, &item, &item_err);
            uint64_t now = trace_now();
            atomic_fetch_add(&b->probe.stage_ns[STAGE_QUEUE_WAIT], now - t);
            if (n == 0) {
                done = 1;
                break;
            }
            bench_probe_sample_taken(&b->probe, now);
            if (n < 0) {
                errors++;
                if (!r->first_error[0])
                    snprintf(r->first_error, sizeof r->first_error, "%s", item_err.msg);
                if (b->mode == BENCH_SHARDS) {
                    rc = shard_err_set(err, n, "%s", item_err.msg);
                    break;
                }
                continue;
            }
            got++;
            samples++;
            if (o->digests && e == 0 && (rc = add_digest(r, &item, err)))
                break;
            if (b->deadline_ns && now >= b->deadline_ns) {
                b->out_of_time = done = 1;
                break;
            }
        }
        uint64_t have = trace_now();
        if (!got)
            continue;
        batches++;
        trace_span(trace, stage_names[STAGE_QUEUE_WAIT], batch_start, have);
        if (!rc && samples == got && e == 0)
            r->first_batch_seconds = (double)(have - epoch_start) / NS;
        struct bench_batch batch = {e, (uint32_t)got,
                                    (double)(batch_start - b->first_epoch_ns) / NS,
                                    (double)(have - batch_start) / NS};
        if (!rc)
            rc = batch_add(b, r, &batch, err);
        uint64_t step_end = have;
        if (o->step_ms > 0) {
            sleep_seconds(o->step_ms / 1e3);
            step_end = trace_now();
            atomic_fetch_add(&b->probe.stage_ns[STAGE_STEP], step_end - have);
            trace_span(trace, stage_names[STAGE_STEP], have, step_end);
        }
        trace_span(trace, SPAN_BATCH, batch_start, step_end);
    }
    take_snapshot(b, &s1);
    trace_span(trace, SPAN_EPOCH, epoch_start, trace_now());
    source_free(&src);
    shard_item_release(&item);
    phase_add(b, ph, &s0, &s1, samples, errors, batches);
    if (!rc && samples == 0 && errors > 0)
        rc = shard_err_set(err, SHARD_ENOTFOUND, "no sample could be read in epoch %u: %s", e + 1,
                           r->first_error);
    return rc;
}

static int check_options(const struct bench_options *o, struct shard_err *err)
{
    if (o->epochs < 1 || o->batch < 1 || o->threads < 0 || !(o->seconds >= 0) ||
        !(o->step_ms >= 0) || !(o->reading.rtt_ms >= 0) || (o->size < 1))
        return shard_err_set(err, SHARD_EINVAL,
                             "bad benchmark options: epochs, batch and size "
                             "must be at least 1; threads, seconds, step and rtt not negative");
    return SHARD_OK;
}

int bench_run(enum bench_mode mode, const char *location, const struct bench_options *o,
              struct bench_result *r, struct shard_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = check_options(o, err);
    if (rc)
        return rc;
    struct bench_state b = {.mode = mode, .location = location, .o = o, .root_fd = -1};
    b.is_remote = shard_location_is_remote(location);
    b.threads = o->threads ? o->threads : shard_available_cpus();
    b.queue_depth = o->queue_depth;
    if (!b.queue_depth) {
        /* two batches ahead (the loader works through the consumer's step, as
         * a DataLoader's prefetching does), and never fewer than 4 per thread */
        uint64_t two = 2 * (uint64_t)o->batch, per = QUEUE_PER_THREAD * (uint64_t)b.threads;
        uint64_t d = two > per ? two : per;
        b.queue_depth = d > QUEUE_MAX ? QUEUE_MAX : (uint32_t)d;
    }
    bench_probe_init(&b.probe, o->trace);
    r->mode = mode;
    r->remote = b.is_remote;
    r->threads = b.threads;
    r->queue_depth = b.queue_depth;
    r->batch = o->batch;
    r->step_ms = o->step_ms;
    r->rtt_ms = b.is_remote ? o->reading.rtt_ms : 0;
    r->size = o->size;
    r->fit = o->fit;
    r->cold = o->cold;
    if (o->cold) {
        r->cold_dropped = !b.is_remote;
        r->cold_resident = b.is_remote ? -1 : 0;
        if (b.is_remote)
            snprintf(r->cold_note, sizeof r->cold_note,
                     "not done: the server's cache cannot be dropped from the client");
    }
    if (o->trace) {
        trace_process(o->trace, mode == BENCH_FILES ? "files loader" : "shard reader");
        trace_thread_name(o->trace, "consumer");
    }
    double t0 = now_seconds();
    if (o->seconds > 0)
        b.deadline_ns = trace_now() + (uint64_t)(o->seconds * NS);
    rc = mode == BENCH_FILES ? open_files(&b, err) : open_shards(&b, err);
    r->startup_seconds = now_seconds() - t0;
    if (rc)
        goto out;
    if (mode == BENCH_SHARDS) {
        const struct shard_config *c = &shard_dataset_manifest(b.ds)->config;
        r->size = c->size;
        r->fit = c->fit;
    }
    for (uint32_t e = 0; e < o->epochs && !rc && !b.out_of_time; e++) {
        rc = run_epoch(&b, e, r, err);
        if (e == 0)
            r->samples_per_epoch = b.count;
        if (b.deadline_ns && trace_now() >= b.deadline_ns)
            b.out_of_time = 1;
    }
    if (b.ds) {
        struct shard_read_stats st;
        shard_dataset_stats(b.ds, &st);
        r->cached = st.cache_hits + st.cache_misses > 0;
        shard_dataset_cache_warning(b.ds, r->cache_warning, sizeof r->cache_warning);
    }
    /* the rates even of a run that failed (an error already set is kept) */
    struct shard_err *finish_err = rc ? NULL : err;
    int finished = phase_finish(&r->first, r, 0, finish_err);
    if (!finished)
        finished = phase_finish(&r->steady, r, 1, finish_err);
    if (!rc)
        rc = finished;
    if (o->cold && !b.is_remote && !r->cold_note[0])
        snprintf(r->cold_note, sizeof r->cold_note,
                 "posix_fadvise(DONTNEED) on every file before each epoch; caches below the "
                 "page cache (a disk's, a hypervisor's) are not affected");
out:
    shard_dataset_close(b.ds);
    shard_remote_close(b.remote);
    if (b.root_fd >= 0)
        close(b.root_fd);
    shard_keylist_release(&b.own_keys);
    free(b.order);
    free(b.subset);
    return rc;
}

void bench_result_release(struct bench_result *r)
{
    if (!r)
        return;
    for (uint64_t i = 0; i < r->digest_count; i++)
        free(r->digests[i].key);
    free(r->digests);
    free(r->batches);
    memset(r, 0, sizeof *r);
}
