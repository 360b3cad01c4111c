/* iter.c - the prefetching iterator (see shardkit/dataset.h).
 *
 * Worker threads read the list's samples into a ring of `depth` items
 * through the library's ordered ring (util/ring.h, groups of one sample,
 * one consumer): position p is read into items[p % depth], at most `depth`
 * positions ahead of the consumer, which takes them in list order by exchanging buffers with the
 * ring.  Reading, decompressing and decoding all happen in workers, in
 * parallel and ahead of the consumer; memory is bounded by `depth` items.
 * Before reading position p, a worker also tells the dataset which samples
 * come next, up to p + depth (sk_dataset_advise), so that their bytes are
 * being fetched - by the kernel, or over HTTP - while earlier ones are
 * decoded.  Advice stops at a later sample whose shard no read has opened
 * yet and resumes from there at a later claim. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "util/ring.h"

#define DEFAULT_THREADS 2
#define SLOTS_PER_THREAD 4
/* More reader threads than this is a mistake, not a configuration. */
#define MAX_THREADS 1024

struct shard_iter {
    struct shard_dataset *ds;
    uint64_t *indices;
    uint64_t count;
    unsigned flags;
    uint32_t depth;
    struct sk_ring *queue;    /* unused without worker threads */
    struct shard_item *items; /* the ring: items[sk_ring_slot(queue, p)] */
    pthread_t *threads;
    int started;              /* worker threads running */
    _Atomic uint64_t advised; /* positions before this one were advised */
    uint64_t consumed;
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
    uint64_t p;
    while (sk_ring_claim(it->queue, -1, &p) == SK_RING_READY) {
        sk_dataset_advise_ahead(it->ds, it->indices, it->count, p, it->depth, &it->advised);
        struct shard_item *item = &it->items[sk_ring_slot(it->queue, p)];
        int rc = shard_dataset_read(it->ds, it->indices[p], it->flags, item,
                                    sk_ring_err(it->queue, p));
        sk_ring_done(it->queue, p, rc);
    }
    return NULL;
}

void shard_iter_free(struct shard_iter *it)
{
    if (!it)
        return;
    if (it->queue)
        sk_ring_stop(it->queue);
    for (int i = 0; i < it->started; i++)
        pthread_join(it->threads[i], NULL);
    for (uint32_t i = 0; it->items && i < it->depth; i++)
        sk_dataset_item_put(it->ds, &it->items[i]);
    sk_ring_free(it->queue);
    free(it->items);
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
    it->ds = ds;
    it->count = count;
    it->flags = o->flags;
    it->depth = o->queue_depth ? o->queue_depth
                               : (uint32_t)(o->threads ? o->threads : 1) * SLOTS_PER_THREAD;
    it->indices = malloc((count ? count : 1) * sizeof *indices);
    it->items = calloc(it->depth, sizeof *it->items);
    it->threads = calloc(o->threads ? (size_t)o->threads : 1, sizeof *it->threads);
    int rc = !it->indices || !it->items || !it->threads
                 ? shard_err_set(err, SHARD_ENOMEM, "out of memory")
                 : sk_ring_new(&it->queue, count, it->depth, 1, err);
    if (rc) {
        shard_iter_free(it);
        return rc;
    }
    if (count)
        memcpy(it->indices, indices, count * sizeof *indices);
    /* the previous iterator's buffers, when there was one */
    for (uint32_t i = 0; i < it->depth && sk_dataset_item_take(ds, &it->items[i]); i++)
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

int sk_item_ring_take(struct sk_ring *q, struct shard_item *ring, struct shard_item *item,
                      struct shard_err *err)
{
    struct sk_ring_group g;
    int w = sk_ring_wait(q, -1, &g);
    if (w == SK_RING_END)
        return 0;
    if (w != SK_RING_READY) /* cannot happen: nobody else stops or holds the queue */
        return shard_err_set(err, SHARD_EINVAL, "loader queue in an unexpected state (%d)", w);
    int rc = sk_ring_rc(q, g.first);
    if (rc && err)
        *err = *sk_ring_err(q, g.first);
    if (!rc)
        swap_items(item, &ring[g.slot]);
    sk_ring_release(q);
    return rc ? rc : 1;
}

int shard_iter_next(struct shard_iter *it, struct shard_item *item, struct shard_err *err)
{
    if (it->consumed >= it->count)
        return 0;
    if (it->started == 0) {
        /* no workers: read on the caller's thread (following the list as
         * workers do: the shards it has passed are let go) */
        sk_dataset_advise_ahead(it->ds, it->indices, it->count, it->consumed, it->depth,
                                &it->advised);
        int rc = shard_dataset_read(it->ds, it->indices[it->consumed], it->flags, item, err);
        it->consumed++;
        return rc ? rc : 1;
    }
    it->consumed++;
    return sk_item_ring_take(it->queue, it->items, item, err);
}

uint64_t shard_iter_position(const struct shard_iter *it)
{
    return it->consumed;
}
