/* iter.c - the prefetching iterator (see shardkit/dataset.h).
 *
 * Reader threads read the list's samples into a ring of `depth` items
 * through the library's ordered ring (util/ring.h, groups of one sample,
 * one consumer): position p is read into items[p % depth], at most `depth`
 * positions ahead of the consumer, which takes them in list order by exchanging buffers with the
 * ring.  Reading, decompressing and decoding all happen in the reader threads, in
 * parallel and ahead of the consumer; memory is bounded by `depth` items.
 * Before reading position p, a reader thread also tells the dataset which samples
 * come next, up to p + depth (sk_dataset_advise), so that their bytes are
 * being fetched - by the kernel, or over HTTP - while earlier ones are
 * decoded.  Advice stops at a later sample whose shard no read has opened
 * yet and resumes from there at a later claim.
 *
 * Stopping: the reader threads' reads wait under a cancellation (util/cancel.h)
 * that shard_iter_free sets, so that freeing never waits for a server that
 * stalls; next() looks at the caller's interrupt while it waits, and, with
 * no reader threads, has its own read's waits look at it too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "util/cancel.h"
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
    struct sk_ring *queue;    /* unused without reader threads */
    struct shard_item *items; /* the ring: items[sk_ring_slot(queue, p)] */
    pthread_t *threads;
    int started;              /* reader threads running */
    _Atomic uint64_t advised; /* positions before this one were advised */
    uint64_t consumed;
    volatile sig_atomic_t stopping; /* set by shard_iter_free: the threads' reads end */
    struct sk_cancel cancel;        /* the reader threads' */
    struct sk_cancel inline_cancel; /* next()'s own read (no threads): the interrupt */
    int (*interrupted)(void *user);
    void *interrupt_user;
};

void shard_iter_options_init(struct shard_iter_options *o)
{
    memset(o, 0, sizeof *o);
    o->threads = DEFAULT_THREADS;
    o->flags = SHARD_READ_PIXELS;
}

static void *reader_main(void *arg)
{
    struct shard_iter *it = arg;
    uint64_t p;
    sk_cancel_set(&it->cancel);
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
    sk_flag_put(&it->stopping, 1); /* reads waiting for a server that stalls end now */
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
    it->cancel = (struct sk_cancel){&it->stopping, NULL, NULL};
    it->inline_cancel = (struct sk_cancel){&it->stopping, NULL, NULL};
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
        if (pthread_create(&it->threads[i], NULL, reader_main, it) != 0) {
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

/* The caller's interrupt, as the inline cancellation's poll. */
static int call_interrupt(void *user)
{
    struct shard_iter *it = user;
    return it->interrupted(it->interrupt_user);
}

void shard_iter_set_interrupt(struct shard_iter *it, int (*interrupted)(void *user), void *user)
{
    it->interrupted = interrupted;
    it->interrupt_user = user;
    it->inline_cancel.poll = interrupted ? call_interrupt : NULL;
    it->inline_cancel.user = it;
}

/* The next position from the reader threads' ring: its sample to *item by
 * exchanging buffers (no copy), or its error to *err.  1, 0 at the end, the
 * error, or SHARD_EINTR when the interrupt said stop first. */
static int ring_take(struct shard_iter *it, struct shard_item *item, struct shard_err *err)
{
    struct sk_ring_group g;
    int w;
    while ((w = sk_ring_wait(it->queue, it->interrupted ? SK_CANCEL_POLL_MS : -1, &g)) ==
           SK_RING_NOT_YET)
        if (it->interrupted(it->interrupt_user))
            return shard_err_set(err, SHARD_EINTR, SK_CANCELLED_MESSAGE);
    if (w == SK_RING_END)
        return 0;
    if (w != SK_RING_READY) /* cannot happen: nobody else stops or holds the queue */
        return shard_err_set(err, SHARD_EINVAL, "iterator queue in an unexpected state (%d)", w);
    int rc = sk_ring_rc(it->queue, g.first);
    if (rc && err)
        *err = *sk_ring_err(it->queue, g.first);
    if (!rc)
        swap_items(item, &it->items[g.slot]);
    sk_ring_release(it->queue);
    return rc ? rc : 1;
}

int shard_iter_next(struct shard_iter *it, struct shard_item *item, struct shard_err *err)
{
    if (it->consumed >= it->count)
        return 0;
    if (it->started == 0) {
        /* no threads: read on the caller's thread (following the list as
         * the threads do: the shards it has passed are let go) */
        sk_dataset_advise_ahead(it->ds, it->indices, it->count, it->consumed, it->depth,
                                &it->advised);
        const struct sk_cancel *was = sk_cancel_set(&it->inline_cancel);
        int rc = shard_dataset_read(it->ds, it->indices[it->consumed], it->flags, item, err);
        int stopped = rc == SHARD_EINTR || sk_cancelled();
        sk_cancel_set(was);
        if (stopped) /* the entry is read again by the next call */
            return shard_err_set(err, SHARD_EINTR, SK_CANCELLED_MESSAGE);
        it->consumed++;
        return rc ? rc : 1;
    }
    int rc = ring_take(it, item, err);
    if (rc != SHARD_EINTR)
        it->consumed++;
    return rc;
}

uint64_t shard_iter_position(const struct shard_iter *it)
{
    return it->consumed;
}
