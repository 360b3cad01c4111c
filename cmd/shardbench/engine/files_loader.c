/* files_loader.c - the naive small-file loader the shards are compared with
 * (see internal.h).
 *
 * What a DataLoader over a plain ImageFolder does, in C and on threads, so
 * that the comparison measures the data layout and not the language: per
 * sample one open/read/close (or one GET), a full decode (no DCT-domain
 * scaling: a plain loader decodes the whole image) and a resize to the
 * training geometry.  The hand-off to the consumer is shard_iter's: a ring
 * of queue_depth items, threads claiming positions in order but never more
 * than depth ahead of the consumer, samples handed out in list order by
 * exchanging buffers.  (The library's ordered ring is private to it; this
 * one, a mutex and two conditions, is the engine's.) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "shardx.h"

#define SLOTS_PER_THREAD 4
#define MAX_THREADS 1024
#define MAX_FILE_BYTES (1ull << 30)

/* One position of the list in the ring. */
struct files_slot {
    struct shard_item item;
    struct shard_err err;
    int rc;
    int ready; /* filled, not yet taken */
};

struct files_loader {
    int root_fd;
    struct shard_remote *remote;
    const struct shard_keylist *keys;
    const uint64_t *order;
    uint64_t count;
    struct files_loader_options o;
    struct bench_probe *probe;
    uint32_t depth;
    struct files_slot *slots; /* position p in slots[p % depth] */
    pthread_mutex_t lock;
    pthread_cond_t room;  /* a thread waits for the consumer to free a slot */
    pthread_cond_t ready; /* the consumer waits for its position to be filled */
    uint64_t claimed;     /* the next position a thread takes */
    uint64_t taken;       /* the next position the consumer takes */
    int stop;
    pthread_t *threads;
    int started;
};

/* A thread's reusable buffers. */
struct files_scratch {
    struct shard_buf bytes;
    struct shard_image decoded;
    struct shard_image tmp;
};

static void scratch_release(struct files_scratch *s)
{
    shard_buf_release(&s->bytes);
    shard_image_release(&s->decoded);
    shard_image_release(&s->tmp);
}

/* Read, decode and resize keys[k] into *item.  Errors name the key. */
static int load_one(struct files_loader *l, uint64_t k, struct files_scratch *s,
                    struct shard_item *item, struct shard_err *err)
{
    size_t key_len;
    const char *key = shard_keylist_get(l->keys, (size_t)k, &key_len);
    uint64_t start = trace_now(), t = start;
    const char *what = "read";
    int rc = l->remote ? shard_remote_get(l->remote, key, MAX_FILE_BYTES, &s->bytes, err)
                       : shard_read_source_file(l->root_fd, key, MAX_FILE_BYTES, &s->bytes, err);
    atomic_fetch_add_explicit(&l->probe->bytes_read, s->bytes.len, memory_order_relaxed);
    t = bench_probe_stage(l->probe, STAGE_READ, t);
    if (!rc) {
        what = "decode";
        struct shard_decode_options dopt;
        shard_decode_options_init(&dopt); /* target 0: full size, as a plain loader */
        rc = shard_decode(s->bytes.data, s->bytes.len, &dopt, &s->decoded, err);
        t = bench_probe_stage(l->probe, STAGE_DECODE, t);
    }
    if (!rc) {
        what = "resize";
        struct shard_geometry g;
        rc = shard_geometry_compute(s->decoded.width, s->decoded.height, l->o.size, l->o.fit,
                                    l->o.upscale, &g)
                 ? shard_err_set(err, SHARD_EINVAL, "empty image")
                 : shard_geometry_apply(&s->decoded, &g, &s->tmp, &item->pixels, err);
        bench_probe_stage(l->probe, STAGE_RESIZE, t);
    }
    if (!rc)
        rc = shard_buf_reserve(&item->key, key_len + 1, err);
    if (rc) {
        char quoted[SHARDX_QUOTE_SIZE];
        shard_err_prefix(err, rc, "cannot %s '%s'", what,
                         shardx_quote(key, key_len, quoted, sizeof quoted));
        item->pixels.width = item->pixels.height = 0;
        item->key.len = 0;
        return rc;
    }
    memcpy(item->key.data, key, key_len + 1);
    item->key.len = key_len;
    item->index = k;
    item->shard = 0;
    item->record = 0;
    item->label = SHARD_NO_LABEL;
    item->width = item->pixels.width;
    item->height = item->pixels.height;
    item->channels = 3;
    item->codec = SHARD_CODEC_RAW;
    item->stored.len = 0;
    bench_probe_sample_done(l->probe, start, trace_now());
    return SHARD_OK;
}

static void *thread_main(void *arg)
{
    struct files_loader *l = arg;
    struct files_scratch s = {0};
    trace_thread_name(l->probe->trace, "files loader thread");
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stop && l->claimed < l->count && l->claimed - l->taken >= l->depth)
            pthread_cond_wait(&l->room, &l->lock);
        if (l->stop || l->claimed >= l->count)
            break;
        uint64_t p = l->claimed++;
        struct files_slot *slot = &l->slots[p % l->depth];
        pthread_mutex_unlock(&l->lock);
        shard_err_clear(&slot->err);
        int rc = load_one(l, l->order[p], &s, &slot->item, &slot->err);
        pthread_mutex_lock(&l->lock);
        slot->rc = rc;
        slot->ready = 1;
        if (p == l->taken)
            pthread_cond_signal(&l->ready);
    }
    pthread_mutex_unlock(&l->lock);
    scratch_release(&s);
    return NULL;
}

void files_loader_free(struct files_loader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = 1;
    pthread_cond_broadcast(&l->room);
    pthread_mutex_unlock(&l->lock);
    for (int i = 0; i < l->started; i++)
        pthread_join(l->threads[i], NULL);
    for (uint32_t i = 0; l->slots && i < l->depth; i++)
        shard_item_release(&l->slots[i].item);
    pthread_cond_destroy(&l->room);
    pthread_cond_destroy(&l->ready);
    pthread_mutex_destroy(&l->lock);
    free(l->slots);
    free(l->threads);
    free(l);
}

int files_loader_new(struct files_loader **out, int root_fd, struct shard_remote *remote,
                     const struct shard_keylist *keys, const uint64_t *order, uint64_t count,
                     const struct files_loader_options *o, struct bench_probe *probe,
                     struct shard_err *err)
{
    *out = NULL;
    if (o->threads < 1 || o->threads > MAX_THREADS)
        return shard_err_set(err, SHARD_EINVAL, "thread count %d is outside 1..%d", o->threads,
                             MAX_THREADS);
    for (uint64_t i = 0; i < count; i++)
        if (order[i] >= keys->count)
            return shard_err_set(err, SHARD_EINVAL, "entry %llu names file %llu of %zu",
                                 (unsigned long long)i, (unsigned long long)order[i], keys->count);
    struct files_loader *l = calloc(1, sizeof *l);
    if (!l)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->room, NULL);
    pthread_cond_init(&l->ready, NULL);
    l->root_fd = root_fd;
    l->remote = remote;
    l->keys = keys;
    l->order = order;
    l->count = count;
    l->o = *o;
    l->probe = probe;
    l->depth = o->queue_depth ? o->queue_depth : (uint32_t)o->threads * SLOTS_PER_THREAD;
    l->slots = calloc(l->depth, sizeof *l->slots);
    l->threads = calloc((size_t)o->threads, sizeof *l->threads);
    if (!l->slots || !l->threads) {
        files_loader_free(l);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (int i = 0; i < o->threads; i++) {
        if (pthread_create(&l->threads[i], NULL, thread_main, l) != 0) {
            files_loader_free(l);
            return shard_err_set(err, SHARD_EIO, "cannot start %d loader threads", o->threads);
        }
        l->started = i + 1;
    }
    *out = l;
    return SHARD_OK;
}

int files_loader_next(struct files_loader *l, struct shard_item *item, struct shard_err *err)
{
    if (l->taken >= l->count)
        return 0;
    struct files_slot *slot = &l->slots[l->taken % l->depth];
    pthread_mutex_lock(&l->lock);
    while (!slot->ready)
        pthread_cond_wait(&l->ready, &l->lock);
    pthread_mutex_unlock(&l->lock);
    /* the slot is the consumer's until `taken` moves past it */
    int rc = slot->rc;
    if (rc && err)
        *err = slot->err;
    if (!rc) {
        struct shard_item t = *item;
        *item = slot->item;
        slot->item = t;
    }
    pthread_mutex_lock(&l->lock);
    slot->ready = 0;
    l->taken++;
    pthread_cond_broadcast(&l->room);
    pthread_mutex_unlock(&l->lock);
    return rc ? rc : 1;
}
