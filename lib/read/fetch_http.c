/* fetch_http.c - the HTTP backend of fetch.h: libcurl, range requests,
 * windows cached and read ahead by a few connections (see fetch_http.h).
 *
 * Requests go through the library's HTTP engine (net/http.h: retries,
 * statuses, time-out, cancellation, the connection pool), whose client is
 * the backend's own for http(s), the S3 location's for s3://.
 *
 * Locking: one mutex per backend guards the job queue, every file's window
 * table and the window cache's accounting; transfers and
 * copies out of a window run unlocked (a window being copied from is
 * pinned, so it is not evicted under the reader).  One condition variable
 * wakes the connection threads (work), another everyone waiting for a
 * window or for a closing file's jobs to drain (done). */
#include "read/fetch_http.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <xxhash.h>

#include "net/http.h"
#include "net/s3.h"
#include "read/observer.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "shardkit/api.h"
#include "shardx/shardx.h"

#define TAIL_MAX (1u << 20) /* bytes fetched when a file is opened */
#define RANGE_TEXT 64

#define SPARE_BUFFERS 64 /* released window buffers kept for reuse */

enum window_state { WINDOW_EMPTY = 0, WINDOW_LOADING, WINDOW_READY };

struct http_job;

struct window {
    enum window_state state;
    uint8_t *data;
    size_t len;
    size_t cap;           /* bytes allocated at data */
    uint64_t last_use;    /* LRU tick */
    unsigned pins;        /* readers copying out of it */
    unsigned waiters;     /* readers waiting for it: it is not evicted under them */
    uint64_t generation;  /* completed fetches, successful or not */
    struct http_job *job; /* while queued and not yet started */
    int demand;           /* a reader waits for it (no eviction-free skip) */
    int rc;               /* the last fetch's result */
    char *error;          /* the last failure's message (malloc'd) */
};

struct http_file {
    struct fetch_file base;
    struct http_fetch *owner;
    char *url;
    char *shown;   /* the name messages use: the URL, or s3://BUCKET/KEY */
    uint8_t *tail; /* the last tail_len bytes, from the open request */
    uint64_t tail_offset;
    size_t tail_len;
    struct window *windows; /* window_count entries */
    uint64_t window_count;
    unsigned pending; /* jobs queued or running for this file */
    int kept;         /* its windows stay through sk_fetch_http_drop_window_cache */
    int closing;
    volatile sig_atomic_t cancel;  /* set when it closes: its fetches under way stop */
    struct http_file *prev, *next; /* the backend's open files */
};

struct http_job {
    struct http_file *file;
    uint64_t window;
    struct http_job *prev, *next;
};

struct http_fetch {
    struct fetch base;
    char *base_url;   /* without a trailing '/' (http) */
    struct sk_s3 *s3; /* or an S3 location: its settings */
    struct fetch_http_options o;
    pthread_mutex_t lock;
    pthread_cond_t work; /* connection threads: a job was queued, or stop */
    pthread_cond_t done; /* a window completed, or a job of a closing file ended */
    struct http_job *head, *tail;
    struct http_file *files;
    uint64_t cache_used;  /* bytes allocated to loading and ready windows */
    uint64_t spare_bytes; /* bytes held in spares; both count against window_cache_bytes */
    uint64_t tick;
    uint64_t pending;              /* window fetches queued or running, all files */
    struct sk_http http;           /* the client of an http(s) location */
    int http_ready;                /* http was initialised */
    struct sk_http *client;        /* &http, or the S3 location's */
    volatile sig_atomic_t closing; /* the backend is being freed: requests stop */
    /* Window buffers released by eviction, kept for the next window: a fresh
     * 8 MiB buffer costs thousands of page faults as the transfer fills it. */
    struct spare {
        uint8_t *data;
        size_t cap;
    } spares[SPARE_BUFFERS];
    size_t spare_count;
    pthread_t *threads;
    int started;
    int stop;
};

static const struct fetch_ops http_ops;

/* ---- small helpers --------------------------------------------------------- */

void shard_dataset_options_init(struct shard_dataset_options *o)
{
    memset(o, 0, sizeof *o);
    o->connections = SHARD_DATASET_DEFAULT_CONNECTIONS;
    o->window_bytes = SHARD_DATASET_DEFAULT_WINDOW;
    o->window_cache_bytes = SHARD_DATASET_DEFAULT_WINDOW_CACHE;
    o->retries = SHARD_DATASET_DEFAULT_RETRIES;
    o->timeout_seconds = SHARD_DATASET_DEFAULT_TIMEOUT;
}

int sk_dataset_options_check(const struct shard_dataset_options *o, struct shard_err *err)
{
    if (o->connections < 1 || o->connections > SHARD_DATASET_MAX_CONNECTIONS)
        return shard_err_set(err, SHARD_EINVAL, "connections %d is not in 1..%d", o->connections,
                             SHARD_DATASET_MAX_CONNECTIONS);
    if (o->window_bytes < SHARD_DATASET_MIN_WINDOW || o->window_bytes > SHARD_DATASET_MAX_WINDOW)
        return shard_err_set(err, SHARD_EINVAL, "window of %llu bytes is not in %llu..%llu",
                             (unsigned long long)o->window_bytes,
                             (unsigned long long)SHARD_DATASET_MIN_WINDOW,
                             (unsigned long long)SHARD_DATASET_MAX_WINDOW);
    if (o->window_cache_bytes < o->window_bytes)
        return shard_err_set(err, SHARD_EINVAL,
                             "window cache of %llu bytes is smaller than the window "
                             "(%llu bytes)",
                             (unsigned long long)o->window_cache_bytes,
                             (unsigned long long)o->window_bytes);
    if (o->retries < 0 || o->retries > SHARD_DATASET_MAX_RETRIES)
        return shard_err_set(err, SHARD_EINVAL, "retries %d is not in 0..%d", o->retries,
                             SHARD_DATASET_MAX_RETRIES);
    if (!(o->timeout_seconds > 0 && o->timeout_seconds <= SHARD_DATASET_MAX_TIMEOUT))
        return shard_err_set(err, SHARD_EINVAL,
                             "timeout of %g s is not more than 0 and at most "
                             "%d",
                             o->timeout_seconds, SHARD_DATASET_MAX_TIMEOUT);
    if (!(o->rtt_ms >= 0 && o->rtt_ms <= SHARD_DATASET_MAX_RTT))
        return shard_err_set(err, SHARD_EINVAL,
                             "a simulated round trip of %g ms is not in "
                             "0..%.0f",
                             o->rtt_ms, SHARD_DATASET_MAX_RTT);
    return SHARD_OK;
}

void sk_fetch_http_options_init(struct fetch_http_options *o)
{
    memset(o, 0, sizeof *o);
    shard_dataset_options_init(&o->reading);
}

int sk_fetch_http_options_from(struct fetch_http_options *o,
                               const struct shard_dataset_options *reading, struct shard_err *err)
{
    sk_fetch_http_options_init(o);
    if (reading)
        o->reading = *reading;
    return sk_dataset_options_check(&o->reading, err);
}

int sk_fetch_http_is_url(const char *location)
{
    return !strncmp(location, "http://", 7) || !strncmp(location, "https://", 8);
}

int sk_fetch_http_is_remote(const char *location)
{
    return sk_fetch_http_is_url(location) || sk_s3_is_location(location);
}

char *sk_fetch_http_url(const struct fetch *fs, const char *name)
{
    const struct http_fetch *h = (const struct http_fetch *)fs;
    if (h->s3) {
        char *key = sk_s3_key(h->s3, name);
        char *url = key ? sk_s3_url(h->s3, key, NULL) : NULL;
        free(key);
        return url;
    }
    char *path = sk_s3_encode(name, 1);
    if (!path)
        return NULL;
    size_t n = strlen(h->base_url) + strlen(path) + 2;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "%s/%s", h->base_url, path);
    free(path);
    return url;
}

char *sk_fetch_http_shown(const struct fetch *fs, const char *name)
{
    const struct http_fetch *h = (const struct http_fetch *)fs;
    if (!h->s3) { /* a URL as given, but never its password */
        char *url = sk_fetch_http_url(fs, name), *shown = shardx_redact_urls(url);
        free(url);
        return shown;
    }
    char *key = sk_s3_key(h->s3, name);
    char *shown = key ? sk_s3_name(h->s3, key) : NULL;
    free(key);
    return shown;
}

/* ---- requests -------------------------------------------------------------------- */

/* The client's event hook: the reader's counters and spans. */
static void on_event(void *user, enum sk_http_event e, uint64_t start_ns, uint64_t end_ns,
                     uint64_t n)
{
    const struct http_fetch *h = user;
    switch (e) {
    case SK_HTTP_ATTEMPT: sk_read_count(h->o.counters, SK_READ_REQUESTS, n); break;
    case SK_HTTP_RECEIVED: sk_read_count(h->o.counters, SK_READ_BYTES_TRANSFERRED, n); break;
    case SK_HTTP_BACKOFF:
        sk_read_count(h->o.counters, SK_READ_RETRIES, 1);
        sk_read_span(h->o.reading.observer, SHARD_SPAN_BACKOFF, start_ns, end_ns);
        break;
    case SK_HTTP_DELAY:
        sk_read_count(h->o.counters, SK_READ_RTT_NS, end_ns - start_ns);
        sk_read_span(h->o.reading.observer, SHARD_SPAN_RTT, start_ns, end_ns);
        break;
    case SK_HTTP_DONE:
        sk_read_span(h->o.reading.observer, SHARD_SPAN_HTTP, start_ns, end_ns);
        break;
    }
}

/* Exactly len bytes at offset of a file of known size, in one request. */
static int request_range(struct http_file *f, uint64_t offset, uint8_t *dst, size_t len,
                         struct shard_err *err)
{
    char range[RANGE_TEXT];
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
    struct sk_http_request rq = {.url = f->url,
                                 .shown = f->shown,
                                 .range = range,
                                 .dst = dst,
                                 .cap = len,
                                 .cancel = &f->cancel};
    int rc = sk_http_perform(f->owner->client, &rq, err);
    if (rc)
        return rc;
    if (rq.status == 416 || rq.total != f->base.size)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "'%s' changed on the server: %llu bytes when opened, now %llu",
                             f->shown, (unsigned long long)f->base.size,
                             (unsigned long long)rq.total);
    if (rq.range_start != offset || rq.received != len || rq.range_end != offset + len - 1)
        return shard_err_set(err, SHARD_ENET, "'%s': asked for bytes %s, got %llu-%llu (%llu)",
                             f->shown, range, (unsigned long long)rq.range_start,
                             (unsigned long long)rq.range_end, (unsigned long long)rq.received);
    return SHARD_OK;
}

int sk_fetch_http_get(struct fetch *fs, const char *name, uint64_t max_bytes, struct shard_buf *buf,
                      struct shard_err *err)
{
    struct http_fetch *h = (struct http_fetch *)fs;
    if (fs->ops != &http_ops)
        return shard_err_set(err, SHARD_EINVAL, "not an HTTP location");
    char *url = sk_fetch_http_url(fs, name), *shown = sk_fetch_http_shown(fs, name);
    if (!url || !shown) {
        free(url);
        free(shown);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    struct sk_http_request rq = {.url = url, .shown = shown, .out = buf, .max = max_bytes};
    buf->len = 0;
    int rc = sk_http_perform(h->client, &rq, err);
    if (rc == SHARD_ELIMIT)
        shard_err_prefix(err, rc, "'%s'", shown); /* the engine's words do not name it */
    free(url);
    free(shown);
    if (rc)
        buf->len = 0;
    return rc;
}

int sk_fetch_http_hash(struct fetch *fs, const char *name, uint64_t *bytes, uint64_t *xxh3,
                       struct shard_err *err)
{
    struct http_fetch *h = (struct http_fetch *)fs;
    if (fs->ops != &http_ops)
        return shard_err_set(err, SHARD_EINVAL, "not an HTTP location");
    char *url = sk_fetch_http_url(fs, name), *shown = sk_fetch_http_shown(fs, name);
    struct sk_http_request rq = {.url = url, .shown = shown, .hash = XXH3_createState()};
    int rc;
    if (!url || !shown || !rq.hash) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else if (!(rc = sk_http_perform(h->client, &rq, err))) {
        *bytes = rq.received;
        *xxh3 = XXH3_64bits_digest(rq.hash);
    }
    XXH3_freeState(rq.hash);
    free(url);
    free(shown);
    return rc;
}

struct sk_s3 *sk_fetch_http_s3(struct fetch *fs)
{
    return fs->ops == &http_ops ? ((struct http_fetch *)fs)->s3 : NULL;
}

/* ---- windows ---------------------------------------------------------------- */

static uint64_t window_len(const struct http_file *f, uint64_t k)
{
    uint64_t w = f->owner->o.reading.window_bytes, start = k * w;
    return f->base.size - start < w ? f->base.size - start : w;
}

static void job_unlink(struct http_fetch *h, struct http_job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        h->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        h->tail = j->prev;
    j->prev = j->next = NULL;
}

static void job_push(struct http_fetch *h, struct http_job *j, int front)
{
    if (front) {
        j->next = h->head;
        if (h->head)
            h->head->prev = j;
        else
            h->tail = j;
        h->head = j;
    } else {
        j->prev = h->tail;
        if (h->tail)
            h->tail->next = j;
        else
            h->head = j;
        h->tail = j;
    }
}

static void *connection_main(void *arg);

/* Start the connection threads on first use (lock held). */
static int start_threads(struct http_fetch *h, struct shard_err *err)
{
    if (h->started)
        return SHARD_OK;
    for (int i = 0; i < h->o.reading.connections; i++) {
        if (pthread_create(&h->threads[i], NULL, connection_main, h) != 0) {
            if (h->started)
                return SHARD_OK; /* fewer connections, still correct */
            return shard_err_set(err, SHARD_EIO, "cannot start HTTP connection threads");
        }
        h->started = i + 1;
    }
    return SHARD_OK;
}

/* Queue a fetch of window k (lock held).  Demand fetches go first.
 * 0, or SHARD_ENOMEM / SHARD_EIO. */
static int queue_window(struct http_file *f, uint64_t k, int demand, struct shard_err *err)
{
    struct http_fetch *h = f->owner;
    struct window *w = &f->windows[k];
    int rc = start_threads(h, err);
    if (rc)
        return rc;
    struct http_job *j = calloc(1, sizeof *j);
    if (!j)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    j->file = f;
    j->window = k;
    w->state = WINDOW_LOADING;
    w->job = j;
    w->demand = demand;
    f->pending++;
    h->pending++;
    job_push(h, j, demand);
    pthread_cond_signal(&h->work);
    return SHARD_OK;
}

/* Release a window's buffer into the spares (or free it) (lock held).
 * Accepts NULL. */
static void buffer_give(struct http_fetch *h, uint8_t *data, size_t cap)
{
    if (!data)
        return;
    h->cache_used -= cap;
    if (h->spare_count < SPARE_BUFFERS) {
        h->spares[h->spare_count++] = (struct spare){data, cap};
        h->spare_bytes += cap;
    } else {
        free(data);
    }
}

/* Evict the least recently used unpinned ready window (lock held).
 * Returns 0 when there is none. */
static int evict_lru(struct http_fetch *h)
{
    struct window *lru = NULL;
    for (struct http_file *f = h->files; f; f = f->next)
        for (uint64_t k = 0; k < f->window_count; k++) {
            struct window *w = &f->windows[k];
            if (w->state == WINDOW_READY && !w->pins && !w->waiters &&
                (!lru || w->last_use < lru->last_use))
                lru = w;
        }
    if (!lru)
        return 0;
    buffer_give(h, lru->data, lru->cap);
    lru->data = NULL;
    lru->len = lru->cap = 0;
    lru->state = WINDOW_EMPTY;
    return 1;
}

/* A buffer for a window of len bytes within the cache budget (lock held): a
 * spare when one is large enough, else a new one once the least recently
 * used ready windows (whose buffers become spares) and unusable spares are
 * gone.  A read-ahead that still does not fit gets NULL with *no_room set; a
 * reader's fetch goes ahead (the cache then runs over briefly).  NULL without
 * *no_room: out of memory. */
static uint8_t *buffer_for(struct http_fetch *h, size_t len, int demand, size_t *cap, int *no_room)
{
    *no_room = 0;
    for (;;) {
        for (size_t i = 0; i < h->spare_count; i++) {
            if (h->spares[i].cap >= len) {
                uint8_t *data = h->spares[i].data;
                *cap = h->spares[i].cap;
                h->spares[i] = h->spares[--h->spare_count];
                h->spare_bytes -= *cap;
                h->cache_used += *cap;
                return data;
            }
        }
        if (h->cache_used + h->spare_bytes + len <= h->o.reading.window_cache_bytes)
            break;
        if (h->spare_count) { /* too small for this window: give it back */
            struct spare s = h->spares[--h->spare_count];
            h->spare_bytes -= s.cap;
            free(s.data);
            continue;
        }
        if (!evict_lru(h)) {
            if (!demand) {
                *no_room = 1;
                return NULL;
            }
            break;
        }
    }
    *cap = len ? len : 1;
    uint8_t *data = malloc(*cap);
    if (data)
        h->cache_used += *cap;
    return data;
}

void sk_fetch_http_drop_window_cache(struct fetch *fs)
{
    if (fs->ops != &http_ops)
        return;
    struct http_fetch *h = (struct http_fetch *)fs;
    pthread_mutex_lock(&h->lock);
    for (struct http_file *f = h->files; f; f = f->next)
        for (uint64_t k = 0; k < f->window_count && !f->kept; k++) {
            struct window *w = &f->windows[k];
            if (w->state != WINDOW_READY || w->pins || w->waiters)
                continue;
            buffer_give(h, w->data, w->cap);
            w->data = NULL;
            w->len = w->cap = 0;
            w->state = WINDOW_EMPTY;
        }
    pthread_mutex_unlock(&h->lock);
}

static void *connection_main(void *arg)
{
    struct http_fetch *h = arg;
    sk_read_thread(h->o.reading.observer, "http connection");
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->stop && !h->head)
            pthread_cond_wait(&h->work, &h->lock);
        if (h->stop)
            break;
        struct http_job *j = h->head;
        job_unlink(h, j);
        struct http_file *f = j->file;
        struct window *w = &f->windows[j->window];
        uint64_t k = j->window;
        w->job = NULL;
        free(j);
        size_t len = (size_t)window_len(f, k);
        int rc = SHARD_OK;
        struct shard_err err;
        shard_err_clear(&err);
        size_t cap = 0;
        int no_room;
        uint8_t *data = buffer_for(h, len, w->demand, &cap, &no_room);
        if (no_room) { /* a read-ahead that does not fit is dropped */
            w->state = WINDOW_EMPTY;
            f->pending--;
            h->pending--;
            pthread_cond_broadcast(&h->done);
            continue;
        }
        pthread_mutex_unlock(&h->lock);
        if (!data)
            rc = shard_err_set(&err, SHARD_ENOMEM, "cannot allocate a window of %zu bytes", len);
        else if (len)
            rc = request_range(f, k * h->o.reading.window_bytes, data, len, &err);
        pthread_mutex_lock(&h->lock);
        w->generation++;
        w->rc = rc;
        free(w->error);
        w->error = NULL;
        if (rc) {
            buffer_give(h, data, cap);
            w->state = WINDOW_EMPTY;
            w->error = strdup(err.msg);
        } else {
            w->data = data;
            w->len = len;
            w->cap = cap;
            w->state = WINDOW_READY;
            w->last_use = ++h->tick;
        }
        w->demand = 0;
        f->pending--;
        h->pending--;
        pthread_cond_broadcast(&h->done);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Wait until window k is ready and pin it (lock held throughout, released
 * while waiting).  0, the error of the fetch this call waited for, or
 * SHARD_EINTR when the thread's cancellation (util/cancel.h) said stop.  While
 * a reader waits, the window is not evicted: a read-ahead needing room must
 * not take a window from under the reader it was fetched for. */
static int pin_window(struct http_file *f, uint64_t k, struct shard_err *err)
{
    struct http_fetch *h = f->owner;
    struct window *w = &f->windows[k];
    uint64_t asked = 0;
    int waiting = 0, rc = SHARD_OK;
    for (;;) {
        if (w->state == WINDOW_READY) {
            w->pins++;
            w->last_use = ++h->tick;
            break;
        }
        if (waiting && w->state == WINDOW_EMPTY && w->generation != asked) {
            if (w->rc) {
                rc = shard_err_set(err, w->rc, "%s", w->error ? w->error : "window fetch failed");
                break;
            }
            asked = w->generation; /* fetched and gone again: ask once more */
        }
        if (w->state == WINDOW_EMPTY) {
            if ((rc = queue_window(f, k, 1, err)))
                break;
        } else if (w->job && !w->demand) {
            /* queued as read-ahead: a reader needs it now */
            job_unlink(h, w->job);
            job_push(h, w->job, 1);
            w->demand = 1;
        }
        if (!waiting) {
            asked = w->generation;
            waiting = 1;
            w->waiters++;
        }
        /* a reader whose thread is cancelled stops waiting; the fetch goes on */
        if (sk_cancel_wait(&h->done, &h->lock)) {
            rc = shard_err_set(err, SHARD_EINTR, SK_CANCELLED_MESSAGE);
            break;
        }
    }
    if (waiting)
        w->waiters--;
    return rc;
}

/* Queue read-ahead of windows first..last (clipped to the file) that are
 * neither cached nor coming, in order, while fewer than `most` fetches are
 * under way (lock held).  A connection thread skips a read-ahead that would
 * not fit in the cache even after evicting the least recently used windows. */
static void queue_ahead(struct http_file *f, uint64_t first, uint64_t last, uint64_t most)
{
    struct http_fetch *h = f->owner;
    for (uint64_t k = first; k <= last && k < f->window_count && !f->closing; k++) {
        if (f->windows[k].state != WINDOW_EMPTY)
            continue;
        if (h->pending >= most || queue_window(f, k, 0, NULL))
            break;
    }
}

/* The next `connections` windows after `last`: a reader walking a shard in
 * order finds its bytes there. */
static void read_ahead(struct http_file *f, uint64_t last)
{
    queue_ahead(f, last + 1, last + (uint64_t)f->owner->o.reading.connections, UINT64_MAX);
}

static int http_read(struct fetch_file *file, uint64_t offset, void *buf, size_t len,
                     struct shard_err *err)
{
    struct http_file *f = (struct http_file *)file;
    struct http_fetch *h = f->owner;
    uint8_t *out = buf;
    if (offset > f->base.size || len > f->base.size - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "file ends early: %zu bytes at %llu of %llu", len,
                             (unsigned long long)offset, (unsigned long long)f->base.size);
    if (!len)
        return SHARD_OK;
    if (f->tail && offset >= f->tail_offset) {
        memcpy(out, f->tail + (offset - f->tail_offset), len);
        return SHARD_OK;
    }
    if (len >= h->o.reading.window_bytes)
        return request_range(f, offset, out, len, err);
    uint64_t wb = h->o.reading.window_bytes;
    uint64_t first = offset / wb, last = (offset + len - 1) / wb;
    int rc = SHARD_OK;
    pthread_mutex_lock(&h->lock);
    for (uint64_t k = first; k <= last && !rc; k++) {
        rc = pin_window(f, k, err);
        if (rc)
            break;
        struct window *w = &f->windows[k];
        uint64_t start = k * wb;
        uint64_t from = offset > start ? offset - start : 0;
        uint64_t to = offset + len - start < w->len ? offset + len - start : w->len;
        pthread_mutex_unlock(&h->lock);
        memcpy(out + (start + from - offset), w->data + from, (size_t)(to - from));
        pthread_mutex_lock(&h->lock);
        w->pins--;
    }
    if (!rc)
        read_ahead(f, last);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* Queue read-ahead of the windows of [offset, offset + len) that are not
 * cached or coming, in the order asked: a reader walking a shuffled plan
 * says what it will read next, and the windows come in that order.  At most
 * half the cache's windows (and at least `connections`) are on their way at
 * once, so that advice cannot push out windows that are about to be read. */
static void http_advise(struct fetch_file *file, uint64_t offset, uint64_t len)
{
    struct http_file *f = (struct http_file *)file;
    struct http_fetch *h = f->owner;
    uint64_t wb = h->o.reading.window_bytes;
    if (!len || offset >= f->base.size || len >= wb) /* a long read is one request anyway */
        return;
    if (len > f->base.size - offset)
        len = f->base.size - offset;
    if (f->tail && offset >= f->tail_offset)
        return;
    uint64_t most = h->o.reading.window_cache_bytes / wb / 2;
    if (most < (uint64_t)h->o.reading.connections)
        most = (uint64_t)h->o.reading.connections;
    pthread_mutex_lock(&h->lock);
    queue_ahead(f, offset / wb, (offset + len - 1) / wb, most);
    pthread_mutex_unlock(&h->lock);
}

static void http_close(struct fetch_file *file)
{
    struct http_file *f = (struct http_file *)file;
    struct http_fetch *h = f->owner;
    pthread_mutex_lock(&h->lock);
    f->closing = 1;
    sk_flag_put(&f->cancel, 1); /* a fetch retrying a server that is down ends now */
    for (uint64_t k = 0; k < f->window_count; k++) {
        struct window *w = &f->windows[k];
        if (w->job) {
            job_unlink(h, w->job);
            free(w->job);
            w->job = NULL;
            w->state = WINDOW_EMPTY;
            f->pending--;
            h->pending--;
        }
    }
    while (f->pending)
        pthread_cond_wait(&h->done, &h->lock);
    for (uint64_t k = 0; k < f->window_count; k++) {
        struct window *w = &f->windows[k];
        buffer_give(h, w->data, w->cap);
        free(w->error);
    }
    if (f->prev)
        f->prev->next = f->next;
    else if (h->files == f)
        h->files = f->next;
    if (f->next)
        f->next->prev = f->prev;
    pthread_mutex_unlock(&h->lock);
    free(f->windows);
    free(f->tail);
    free(f->url);
    free(f->shown);
    free(f);
}

static const struct fetch_file_ops http_file_ops = {http_read, http_close, http_advise};

int sk_fetch_http_read_direct(struct fetch_file *file, uint64_t offset, void *buf, size_t len,
                              struct shard_err *err)
{
    struct http_file *f = (struct http_file *)file;
    if (offset > f->base.size || len > f->base.size - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "file ends early: %zu bytes at %llu of %llu", len,
                             (unsigned long long)offset, (unsigned long long)f->base.size);
    return len ? request_range(f, offset, buf, len, err) : SHARD_OK;
}

void sk_fetch_http_keep(struct fetch_file *file, int keep)
{
    if (!file || file->ops != &http_file_ops)
        return;
    struct http_file *f = (struct http_file *)file;
    pthread_mutex_lock(&f->owner->lock);
    f->kept = keep;
    pthread_mutex_unlock(&f->owner->lock);
}

/* Open `name`: with one suffix range request (its size and last bytes),
 * or with none when `size` is known (not UINT64_MAX). */
static int open_file(struct fetch *fs, const char *name, uint64_t size, struct fetch_file **out,
                     struct shard_err *err)
{
    struct http_fetch *h = (struct http_fetch *)fs;
    *out = NULL;
    struct http_file *f = calloc(1, sizeof *f);
    if (!f)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    f->base.ops = &http_file_ops;
    f->owner = h;
    int rc = SHARD_OK;
    size_t want = h->o.reading.window_bytes < TAIL_MAX ? (size_t)h->o.reading.window_bytes
                                                       : TAIL_MAX;
    if (!(f->url = sk_fetch_http_url(fs, name)) || !(f->shown = sk_fetch_http_shown(fs, name)) ||
        (size == UINT64_MAX && !(f->tail = malloc(want)))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    if (size != UINT64_MAX) {
        f->base.size = size;
        goto windows;
    }
    char range[RANGE_TEXT];
    snprintf(range, sizeof range, "-%zu", want);
    struct sk_http_request rq = {.url = f->url,
                                 .shown = f->shown,
                                 .range = range,
                                 .dst = f->tail,
                                 .cap = want,
                                 .keep_prefix = 1};
    if ((rc = sk_http_perform(h->client, &rq, err)))
        goto fail;
    if (rq.status == 206 && rq.range_start == 0 && rq.range_end + 1 != rq.total && rq.total > 0) {
        /* a server that reads "-N" as "0-N" (s3rver does) still told the
         * size: ask for the last bytes by their offsets */
        uint64_t start = rq.total > want ? rq.total - want : 0;
        snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, start, rq.total - 1);
        rq.keep_prefix = 0;
        if ((rc = sk_http_perform(h->client, &rq, err)))
            goto fail;
    }
    if (rq.status == 416) { /* an empty file has no suffix */
        f->base.size = 0;
        f->tail_len = 0;
    } else if (rq.range_end + 1 != rq.total || rq.received != rq.range_end - rq.range_start + 1) {
        rc = shard_err_set(err, SHARD_ENET,
                           "'%s': a suffix range came back as bytes "
                           "%llu-%llu of %llu",
                           f->shown, (unsigned long long)rq.range_start,
                           (unsigned long long)rq.range_end, (unsigned long long)rq.total);
        goto fail;
    } else {
        f->base.size = rq.total;
        f->tail_offset = rq.range_start;
        f->tail_len = (size_t)rq.received;
    }
windows:;
    uint64_t wb = h->o.reading.window_bytes;
    f->window_count = (f->base.size + wb - 1) / wb;
    if (f->window_count > SIZE_MAX / sizeof *f->windows ||
        !(f->windows = calloc(f->window_count ? (size_t)f->window_count : 1, sizeof *f->windows))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_lock(&h->lock);
    f->next = h->files;
    if (h->files)
        h->files->prev = f;
    h->files = f;
    pthread_mutex_unlock(&h->lock);
    *out = &f->base;
    return SHARD_OK;
fail:
    free(f->tail);
    free(f->url);
    free(f->shown);
    free(f);
    return rc;
}

static int http_open(struct fetch *fs, const char *name, struct fetch_file **out,
                     struct shard_err *err)
{
    return open_file(fs, name, UINT64_MAX, out, err);
}

int sk_fetch_http_open_sized(struct fetch *fs, const char *name, uint64_t size,
                             struct fetch_file **out, struct shard_err *err)
{
    return open_file(fs, name, size, out, err);
}

static void http_free(struct fetch *fs)
{
    struct http_fetch *h = (struct http_fetch *)fs;
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    sk_flag_put(&h->closing, 1); /* a request under way (retrying a dead server) ends now */
    pthread_cond_broadcast(&h->work);
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; i < h->started; i++)
        pthread_join(h->threads[i], NULL);
    for (struct http_job *j = h->head, *next; j; j = next) {
        next = j->next;
        free(j);
    }
    for (size_t i = 0; i < h->spare_count; i++)
        free(h->spares[i].data);
    free(h->threads);
    pthread_cond_destroy(&h->work);
    pthread_cond_destroy(&h->done);
    pthread_mutex_destroy(&h->lock);
    free(h->base_url);
    sk_s3_free(h->s3);
    if (h->http_ready)
        sk_http_release(&h->http);
    free(h);
}

static const struct fetch_ops http_ops = {http_open, http_free};

int sk_fetch_http_new(struct fetch **out, const char *base, const struct fetch_http_options *o,
                      struct shard_err *err)
{
    *out = NULL;
    if (!sk_fetch_http_is_remote(base))
        return shard_err_set(err, SHARD_EINVAL,
                             "'%s' is not an http://, https:// or s3:// location", base);
    int rc = sk_dataset_options_check(&o->reading, err);
    if (rc)
        return rc;
    struct http_fetch *h = calloc(1, sizeof *h);
    if (!h)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    h->base.ops = &http_ops;
    h->o = *o;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    if (sk_s3_is_location(base)) {
        rc = sk_s3_open(&h->s3, base, err);
        if (!rc)
            h->client = &h->s3->http;
        h->base_url = strdup("");
    } else {
        rc = sk_http_init(&h->http, err);
        h->http_ready = 1;
        h->client = &h->http;
        size_t n = strlen(base);
        while (n > 0 && base[n - 1] == '/')
            n--;
        h->base_url = strndup(base, n);
    }
    if (rc) {
        http_free(&h->base);
        return rc;
    }
    /* the S3 location's own operations (a listing) go by these rules too */
    h->client->retries = h->o.reading.retries;
    h->client->timeout_seconds = h->o.reading.timeout_seconds;
    h->client->rtt_ms = h->o.reading.rtt_ms;
    h->client->cancel = &h->closing;
    h->client->event = on_event;
    h->client->event_user = h;
    h->threads = calloc((size_t)o->reading.connections, sizeof *h->threads);
    if (!h->base_url || !h->threads) {
        http_free(&h->base);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    *out = &h->base;
    return SHARD_OK;
}
