/* iter.c - the prefetching iterator (see shardkit/dataset.h).
 *
 * A ring of `depth` slots; list position p always uses slot p % depth.
 * Workers claim positions in order, but only while p < consumed + depth, so
 * the slot of a claimed position is never in use by another position: the
 * one before it in that slot (p - depth) has already been handed out, and
 * the one after (p + depth) cannot be claimed yet.  The consumer waits for
 * the slot of position `consumed` to be marked ready and exchanges buffers
 * with it.  Reading, decompressing and decoding all happen in workers, in
 * parallel and ahead of the consumer; memory is bounded by `depth` items.
 * Before reading position p, a worker also tells the dataset which samples
 * come next, up to p + depth (sk_dataset_advise), so that their bytes are being
 * fetched - by the kernel, or over HTTP - while earlier ones are decoded.
 * Advice stops at a later sample whose shard no read has opened yet and
 * resumes from there at a later claim. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"

#define DEFAULT_THREADS 2
#define SLOTS_PER_THREAD 4
/* More reader threads than this is a mistake, not a configuration. */
#define MAX_THREADS 1024

struct iter_slot {
    uint64_t pos;             /* the list position this slot holds, when ready */
    int ready;
    int rc;
    struct shard_err err;
    struct shard_item item;
};

struct shard_iter {
    struct shard_dataset *ds;
    uint64_t *indices;
    uint64_t count;
    unsigned flags;
    uint32_t depth;
    struct iter_slot *slots;
    pthread_t *threads;
    int started;              /* worker threads running */
    pthread_mutex_t lock;     /* guards everything below and slot.ready/pos/rc */
    pthread_cond_t room;      /* workers: a position became claimable, or stop */
    pthread_cond_t filled;    /* consumer: a slot became ready */
    uint64_t next_claim;
    uint64_t advised;         /* positions before this one were advised */
    uint64_t consumed;
    int consumer_waiting;     /* the consumer sleeps on `filled` for position consumed */
    int stop;
};

void shard_iter_options_init(struct shard_iter_options *o)
{
    memset(o, 0, sizeof *o);
    o->threads = DEFAULT_THREADS;
    o->flags = SHARD_READ_PIXELS;
}

static void *worker(void *arg)
{
    struct shard_iter *it = arg;
    pthread_mutex_lock(&it->lock);
    for (;;) {
        while (!it->stop && it->next_claim < it->count &&
               it->next_claim >= it->consumed + it->depth)
            pthread_cond_wait(&it->room, &it->lock);
        if (it->stop || it->next_claim >= it->count)
            break;
        uint64_t p = it->next_claim++;
        struct iter_slot *slot = &it->slots[p % it->depth];
        uint64_t from = it->advised, to = p + 1 + it->depth;
        if (to > it->count)
            to = it->count;
        if (to > from)
            it->advised = to;
        pthread_mutex_unlock(&it->lock);
        for (uint64_t q = from; q < to; q++)
            if (!sk_dataset_advise(it->ds, it->indices[q]) && q > p) {
                /* its shard is not open yet: a later claim asks again (one
                 * already claimed is skipped: its read opens the shard, or
                 * fails and says why) */
                pthread_mutex_lock(&it->lock);
                if (q < it->advised)
                    it->advised = q;
                pthread_mutex_unlock(&it->lock);
                break;
            }

        shard_err_clear(&slot->err);
        int rc = shard_dataset_read(it->ds, it->indices[p], it->flags, &slot->item, &slot->err);

        pthread_mutex_lock(&it->lock);
        slot->rc = rc;
        slot->pos = p;
        slot->ready = 1;
        /* wake the consumer only for the position it waits for: a wake-up
         * for any other costs a context switch on a busy machine */
        if (it->consumer_waiting && p == it->consumed)
            pthread_cond_signal(&it->filled);
    }
    pthread_mutex_unlock(&it->lock);
    return NULL;
}

static void stop_workers(struct shard_iter *it)
{
    pthread_mutex_lock(&it->lock);
    it->stop = 1;
    pthread_cond_broadcast(&it->room);
    pthread_mutex_unlock(&it->lock);
    for (int i = 0; i < it->started; i++)
        pthread_join(it->threads[i], NULL);
    it->started = 0;
}

void shard_iter_free(struct shard_iter *it)
{
    if (!it)
        return;
    stop_workers(it);
    for (uint32_t i = 0; it->slots && i < it->depth; i++)
        sk_dataset_item_put(it->ds, &it->slots[i].item);
    pthread_cond_destroy(&it->room);
    pthread_cond_destroy(&it->filled);
    pthread_mutex_destroy(&it->lock);
    free(it->slots);
    free(it->threads);
    free(it->indices);
    free(it);
}

int shard_iter_new(struct shard_iter **out, struct shard_dataset *ds, const uint64_t *indices,
                   uint64_t count, const struct shard_iter_options *o, struct shard_err *err)
{
    *out = NULL;
    if (o->threads < 0 || o->threads > MAX_THREADS)
        return shard_err_set(err, SHARD_EINVAL, "thread count %d is outside 0..%d", o->threads,
                             MAX_THREADS);
    if (count > SIZE_MAX / sizeof *indices)
        return shard_err_set(err, SHARD_ENOMEM, "index list of %llu entries is too long",
                             (unsigned long long)count);
    uint64_t size = shard_dataset_size(ds);
    for (uint64_t i = 0; i < count; i++)
        if (indices[i] >= size)
            return shard_err_set(err, SHARD_EINVAL,
                                 "entry %llu names sample %llu of a dataset of %llu",
                                 (unsigned long long)i, (unsigned long long)indices[i],
                                 (unsigned long long)size);
    struct shard_iter *it = calloc(1, sizeof *it);
    if (!it)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&it->lock, NULL);
    pthread_cond_init(&it->room, NULL);
    pthread_cond_init(&it->filled, NULL);
    it->ds = ds;
    it->count = count;
    it->flags = o->flags;
    it->depth = o->queue_depth ? o->queue_depth
                               : (uint32_t)(o->threads ? o->threads : 1) * SLOTS_PER_THREAD;
    it->indices = malloc((count ? count : 1) * sizeof *indices);
    it->slots = calloc(it->depth, sizeof *it->slots);
    it->threads = calloc(o->threads ? (size_t)o->threads : 1, sizeof *it->threads);
    if (!it->indices || !it->slots || !it->threads) {
        shard_iter_free(it);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (count)
        memcpy(it->indices, indices, count * sizeof *indices);
    /* the previous iterator's buffers, when there was one */
    for (uint32_t i = 0; i < it->depth && sk_dataset_item_take(ds, &it->slots[i].item); i++)
        ;
    for (int i = 0; i < o->threads; i++) {
        if (pthread_create(&it->threads[i], NULL, worker, it) != 0) {
            shard_iter_free(it);
            return shard_err_set(err, SHARD_EIO, "cannot start %d reader threads", o->threads);
        }
        it->started = i + 1;
    }
    *out = it;
    return SHARD_OK;
}

static void swap_items(struct shard_item *a, struct shard_item *b)
{
    struct shard_item t = *a;
    *a = *b;
    *b = t;
}

int shard_iter_next(struct shard_iter *it, struct shard_item *item, struct shard_err *err)
{
    if (it->consumed >= it->count)
        return 0;
    if (it->started == 0) {
        /* no workers: read on the caller's thread */
        int rc = shard_dataset_read(it->ds, it->indices[it->consumed], it->flags, item, err);
        it->consumed++;
        return rc ? rc : 1;
    }
    pthread_mutex_lock(&it->lock);
    struct iter_slot *slot = &it->slots[it->consumed % it->depth];
    while (!(slot->ready && slot->pos == it->consumed)) {
        it->consumer_waiting = 1;
        pthread_cond_wait(&it->filled, &it->lock);
        it->consumer_waiting = 0;
    }
    int rc = slot->rc;
    if (rc && err)
        *err = slot->err;
    if (!rc)
        swap_items(item, &slot->item);
    slot->ready = 0;
    it->consumed++;
    pthread_cond_broadcast(&it->room);
    pthread_mutex_unlock(&it->lock);
    return rc ? rc : 1;
}

uint64_t shard_iter_position(const struct shard_iter *it)
{
    return it->consumed;
}
