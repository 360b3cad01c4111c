/* pipeline.c - ordered parallel pipeline on OpenMP threads (see pipeline.h). */
#include "convert/pipeline.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_FREE = 0, SLOT_WORKING, SLOT_READY };

struct pipe {
    const struct pipeline_ops *ops;
    void **slots;
    size_t nslots;
    volatile sig_atomic_t *cancel;
    pthread_mutex_t claim_lock;  /* serialises claim() */
    pthread_mutex_t lock;        /* everything below */
    pthread_cond_t changed;      /* a slot became ready or free, or the run ended */
    unsigned char *state;
    uint64_t next_claim;         /* under claim_lock */
    int claim_done;              /* under lock */
    uint64_t claimed;            /* items claimed (under lock) */
    uint64_t next_write;         /* next position to consume (under lock) */
    int writer_busy;             /* a thread is consuming (under lock) */
    int stop;                    /* an error: stop claiming and consuming */
    int cancelled;               /* stop claiming; consume what was claimed */
    int rc;
    struct shard_err first_err;
};

static void fail(struct pipe *p, int rc, const struct shard_err *e)
{
    if (!p->rc) {
        p->rc = rc;
        if (e)
            p->first_err = *e;
        else
            shard_err_set(&p->first_err, rc, "%s", shard_strerror(rc));
    }
    p->stop = 1;
    pthread_cond_broadcast(&p->changed);
}

/* With p->lock held: consume ready slots in order unless someone else is. */
static void drain(struct pipe *p)
{
    if (p->writer_busy)
        return;
    p->writer_busy = 1;
    while (!p->stop && p->next_write < p->claimed &&
           p->state[p->next_write % p->nslots] == SLOT_READY) {
        size_t i = p->next_write % p->nslots;
        struct shard_err e;
        shard_err_clear(&e);
        pthread_mutex_unlock(&p->lock);
        int rc = p->ops->consume(p->ops->ctx, p->slots[i], &e);
        pthread_mutex_lock(&p->lock);
        p->state[i] = SLOT_FREE;
        p->next_write++;
        if (rc < 0)
            fail(p, rc, &e);
        pthread_cond_broadcast(&p->changed);
    }
    p->writer_busy = 0;
}

/* Claim the next item.  Returns the slot index, or -1 when there is nothing
 * more to claim (end, error or cancel). */
static long claim_next(struct pipe *p)
{
    long slot = -1;
    pthread_mutex_lock(&p->claim_lock);
    pthread_mutex_lock(&p->lock);
    uint64_t pos = p->next_claim;
    /* wait for the ring slot of `pos` to be consumed */
    while (!p->stop && !p->claim_done && pos >= p->next_write + p->nslots)
        pthread_cond_wait(&p->changed, &p->lock);
    int go = !p->stop && !p->claim_done;
    if (go && p->cancel && *p->cancel) {
        p->cancelled = 1;
        p->claim_done = 1;
        pthread_cond_broadcast(&p->changed);
        go = 0;
    }
    pthread_mutex_unlock(&p->lock);
    if (go) {
        size_t i = pos % p->nslots;
        struct shard_err e;
        shard_err_clear(&e);
        int rc = p->ops->claim(p->ops->ctx, pos, p->slots[i], &e);
        pthread_mutex_lock(&p->lock);
        if (rc > 0) {
            p->state[i] = SLOT_WORKING;
            p->claimed = pos + 1;
            p->next_claim = pos + 1;
            slot = (long)i;
        } else if (rc == 0) {
            p->claim_done = 1;
            pthread_cond_broadcast(&p->changed);
        } else {
            fail(p, rc, &e);
        }
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->claim_lock);
    return slot;
}

static void worker(struct pipe *p, int thread)
{
    for (;;) {
        long i = claim_next(p);
        if (i < 0)
            break;
        p->ops->work(p->ops->ctx, thread, p->slots[i]);
        pthread_mutex_lock(&p->lock);
        p->state[i] = SLOT_READY;
        drain(p);
        pthread_mutex_unlock(&p->lock);
    }
    /* Nothing left to claim: help consume what others are finishing. */
    pthread_mutex_lock(&p->lock);
    while (!p->stop && p->next_write < p->claimed) {
        drain(p);
        if (!p->stop && p->next_write < p->claimed)
            pthread_cond_wait(&p->changed, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

int sk_pipeline_run(const struct pipeline_ops *ops, void **slots, size_t nslots, int threads,
                 volatile sig_atomic_t *cancel, struct shard_err *err)
{
    if (nslots == 0 || threads < 1)
        return shard_err_set(err, SHARD_EINVAL, "pipeline needs slots and threads");
    struct pipe p;
    memset(&p, 0, sizeof p);
    p.ops = ops;
    p.slots = slots;
    p.nslots = nslots;
    p.cancel = cancel;
    p.state = calloc(nslots, 1);
    if (!p.state)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&p.claim_lock, NULL);
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);

#pragma omp parallel num_threads(threads)
    worker(&p, omp_get_thread_num());

    int rc = p.rc;
    if (rc && err)
        *err = p.first_err;
    if (!rc && p.cancelled)
        rc = shard_err_set(err, SHARD_EINTR, "interrupted");
    pthread_cond_destroy(&p.changed);
    pthread_mutex_destroy(&p.lock);
    pthread_mutex_destroy(&p.claim_lock);
    free(p.state);
    return rc;
}
