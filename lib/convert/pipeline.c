/* pipeline.c - ordered parallel pipeline on OpenMP threads (see pipeline.h).
 *
 * The items go through the library's ordered ring (util/ring.h), open-ended
 * (the claim callback says where the list ends), in groups of one, one ring
 * slot per caller's slot, consumed in turn: whichever thread completes the
 * next item consumes it and the ready ones after it.  Claims are serialised
 * here, so that the claim callback sees positions one at a time, in order. */
#include "convert/pipeline.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/cancel.h"
#include "util/ring.h"

struct pipe {
    const struct pipeline_ops *ops;
    void **slots;
    struct sk_ring *ring;
    volatile sig_atomic_t *cancel;
    pthread_mutex_t claim_lock; /* serialises claim(); guards `cancelled` */
    int cancelled;              /* no more claims; what was claimed is consumed */
    pthread_mutex_t err_lock;   /* guards the two below */
    int rc;
    struct shard_err first_err;
};

/* The run fails with rc: stop claiming and consuming. */
static void fail(struct pipe *p, int rc, const struct shard_err *e)
{
    pthread_mutex_lock(&p->err_lock);
    if (!p->rc) {
        p->rc = rc;
        if (e->code)
            p->first_err = *e;
        else
            shard_err_set(&p->first_err, rc, "%s", shard_strerror(rc));
    }
    pthread_mutex_unlock(&p->err_lock);
    sk_ring_stop(p->ring);
}

/* Claim the next item into its slot.  1 with *pos, or 0 when there is
 * nothing more to claim (the end, an error or a cancel): then, when the
 * list was just closed, *pos is the withdrawn position. */
static int claim_next(struct pipe *p, uint64_t *pos, int *closed)
{
    int got = 0;
    *closed = 0;
    pthread_mutex_lock(&p->claim_lock);
    if (sk_ring_claim(p->ring, -1, pos) == SK_RING_READY) {
        struct shard_err e;
        shard_err_clear(&e);
        int rc = 0;
        if (sk_flag_get(p->cancel))
            p->cancelled = 1;
        else
            rc = p->ops->claim(p->ops->ctx, *pos, p->slots[sk_ring_slot(p->ring, *pos)], &e);
        if (rc > 0) {
            got = 1;
        } else if (rc == 0) { /* the end, or cancelled: this position is not an item */
            sk_ring_close(p->ring, *pos);
            *closed = 1;
        } else {
            fail(p, rc, &e);
        }
    }
    pthread_mutex_unlock(&p->claim_lock);
    return got;
}

/* Consume items in order for as long as this thread holds the ring's
 * consumer role (w is what gave it). */
static void consume_in_turn(struct pipe *p, int w, struct sk_ring_group *g)
{
    while (w == SK_RING_READY) {
        struct shard_err e;
        shard_err_clear(&e);
        int rc = p->ops->consume(p->ops->ctx, p->slots[g->slot], &e);
        if (rc < 0) {
            fail(p, rc, &e);
            return;
        }
        w = sk_ring_release_take(p->ring, g);
    }
}

static void thread_work(struct pipe *p, int thread)
{
    uint64_t pos;
    int closed;
    struct sk_ring_group g;
    while (claim_next(p, &pos, &closed)) {
        p->ops->work(p->ops->ctx, thread, p->slots[sk_ring_slot(p->ring, pos)]);
        consume_in_turn(p, sk_ring_done_take(p->ring, pos, SHARD_OK, &g), &g);
    }
    if (closed) /* nothing is marked: only takes the role if an item is left */
        consume_in_turn(p, sk_ring_done_take(p->ring, pos, SHARD_OK, &g), &g);
}

int sk_pipeline_run(const struct pipeline_ops *ops, void **slots, size_t nslots, int threads,
                    volatile sig_atomic_t *cancel, struct shard_err *err)
{
    if (nslots == 0 || nslots > UINT32_MAX || threads < 1)
        return shard_err_set(err, SHARD_EINVAL, "pipeline needs slots and threads");
    struct pipe p;
    memset(&p, 0, sizeof p);
    p.ops = ops;
    p.slots = slots;
    p.cancel = cancel;
    int rc = sk_ring_new(&p.ring, SK_RING_OPEN, (uint32_t)nslots, 1, err);
    if (rc)
        return rc;
    pthread_mutex_init(&p.claim_lock, NULL);
    pthread_mutex_init(&p.err_lock, NULL);

#pragma omp parallel num_threads(threads)
    thread_work(&p, omp_get_thread_num());

    rc = p.rc;
    if (rc && err)
        *err = p.first_err;
    if (!rc && p.cancelled)
        rc = shard_err_set(err, SHARD_EINTR, "interrupted");
    pthread_mutex_destroy(&p.err_lock);
    pthread_mutex_destroy(&p.claim_lock);
    sk_ring_free(p.ring);
    return rc;
}
