/* handoff.c - the bounded, ordered hand-off (see handoff.h).
 *
 * One mutex guards the counters below and the per-slot tallies; the user's
 * cells are never touched here.  Group k uses slot k % depth.  Its positions
 * may be claimed only once group k - depth has been released (k < released
 * + depth), and releasing a group zeroes its slot's tallies, so a slot's
 * `done` always counts positions of the one group that owns the slot: the
 * consumer's group is complete when done == its length.  Timed waits are on
 * CLOCK_MONOTONIC, the clock of util/clock.h. */
#include "read/handoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

#define NS_PER_MS 1000000u

struct sk_handoff {
    pthread_mutex_t lock;
    pthread_cond_t room;       /* workers: a group was released, or stop */
    pthread_cond_t filled;     /* the consumer: its group is complete, or stop */
    uint64_t count;            /* positions */
    uint64_t groups;           /* ceil(count / group) */
    uint32_t depth;
    uint32_t group;
    uint64_t next_claim;       /* the next position a worker gets */
    uint64_t taken;            /* groups taken by the consumer */
    uint64_t released;         /* groups released by the consumer (<= taken) */
    uint32_t *done;            /* per slot: positions of its group marked done */
    uint32_t *failed;          /* per slot: ... of which with an error */
    int *rc;                   /* per cell */
    struct shard_err *errs;    /* per cell */
    unsigned workers_waiting;  /* workers asleep on `room` */
    int consumer_waiting;      /* the consumer asleep on `filled` */
    int stop;
};

int sk_handoff_new(struct sk_handoff **out, uint64_t count, uint32_t depth, uint32_t group,
                   struct shard_err *err)
{
    *out = NULL;
    if (!depth || !group || (uint64_t)depth * group > UINT32_MAX ||
        (uint64_t)depth * group > SIZE_MAX / sizeof(struct shard_err))
        return shard_err_set(err, SHARD_EINVAL, "hand-off of %u slots of %u positions", depth,
                             group);
    struct sk_handoff *q = calloc(1, sizeof *q);
    if (!q)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    /* timed waits measure on the monotonic clock: a wall-clock jump must not
     * shorten or stretch them */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->room, NULL);
    pthread_cond_init(&q->filled, &attr);
    pthread_condattr_destroy(&attr);
    size_t cells = (size_t)depth * group;
    q->count = count;
    q->groups = count / group + (count % group != 0);
    q->depth = depth;
    q->group = group;
    q->done = calloc(depth, sizeof *q->done);
    q->failed = calloc(depth, sizeof *q->failed);
    q->rc = calloc(cells, sizeof *q->rc);
    q->errs = calloc(cells, sizeof *q->errs);
    if (!q->done || !q->failed || !q->rc || !q->errs) {
        sk_handoff_free(q);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    *out = q;
    return SHARD_OK;
}

void sk_handoff_free(struct sk_handoff *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->room);
    pthread_cond_destroy(&q->filled);
    pthread_mutex_destroy(&q->lock);
    free(q->done);
    free(q->failed);
    free(q->rc);
    free(q->errs);
    free(q);
}

uint32_t sk_handoff_slot(const struct sk_handoff *q, uint64_t p)
{
    return (uint32_t)((p / q->group) % q->depth);
}

uint32_t sk_handoff_cell(const struct sk_handoff *q, uint64_t p)
{
    return sk_handoff_slot(q, p) * q->group + (uint32_t)(p % q->group);
}

/* Positions in group k. */
static uint32_t group_len(const struct sk_handoff *q, uint64_t k)
{
    uint64_t first = k * q->group;
    return q->count - first < q->group ? (uint32_t)(q->count - first) : q->group;
}

int sk_handoff_claim(struct sk_handoff *q, uint64_t *p)
{
    pthread_mutex_lock(&q->lock);
    while (!q->stop && q->next_claim < q->count &&
           q->next_claim / q->group >= q->released + q->depth) {
        q->workers_waiting++;
        pthread_cond_wait(&q->room, &q->lock);
        q->workers_waiting--;
    }
    int got = !q->stop && q->next_claim < q->count;
    if (got) {
        *p = q->next_claim++;
        uint32_t cell = sk_handoff_cell(q, *p);
        q->rc[cell] = SHARD_OK;
        shard_err_clear(&q->errs[cell]);
    }
    pthread_mutex_unlock(&q->lock);
    return got;
}

struct shard_err *sk_handoff_err(struct sk_handoff *q, uint64_t p)
{
    return &q->errs[sk_handoff_cell(q, p)];
}

void sk_handoff_done(struct sk_handoff *q, uint64_t p, int rc)
{
    uint64_t k = p / q->group;
    uint32_t slot = (uint32_t)(k % q->depth);
    pthread_mutex_lock(&q->lock);
    q->rc[sk_handoff_cell(q, p)] = rc;
    if (rc)
        q->failed[slot]++;
    /* wake the consumer only for the group it waits for, once complete */
    if (++q->done[slot] == group_len(q, k) && q->consumer_waiting && k == q->taken)
        pthread_cond_signal(&q->filled);
    pthread_mutex_unlock(&q->lock);
}

int sk_handoff_rc(const struct sk_handoff *q, uint64_t p)
{
    return q->rc[sk_handoff_cell(q, p)];
}

/* The absolute CLOCK_MONOTONIC time timeout_ms from now. */
static struct timespec deadline_after(long timeout_ms)
{
    uint64_t ns = sk_now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
    return (struct timespec){(time_t)(ns / SK_NS_PER_SECOND), (long)(ns % SK_NS_PER_SECOND)};
}

int sk_handoff_wait(struct sk_handoff *q, long timeout_ms, struct sk_handoff_group *g)
{
    struct timespec deadline;
    if (timeout_ms > 0)
        deadline = deadline_after(timeout_ms);
    int status;
    pthread_mutex_lock(&q->lock);
    uint64_t k = q->taken;
    uint32_t slot = (uint32_t)(k % q->depth);
    if (q->stop) {
        status = SK_HANDOFF_STOPPED;
    } else if (k == q->groups) {
        status = SK_HANDOFF_END;
    } else if (k >= q->released + q->depth) {
        status = SHARD_EINVAL;  /* its slot is still held by the consumer */
    } else {
        uint32_t len = group_len(q, k);
        status = SK_HANDOFF_READY;
        while (!q->stop && q->done[slot] < len) {
            if (timeout_ms == 0) {
                status = SK_HANDOFF_NOT_YET;
                break;
            }
            q->consumer_waiting = 1;
            int w = timeout_ms < 0 ? pthread_cond_wait(&q->filled, &q->lock)
                                   : pthread_cond_timedwait(&q->filled, &q->lock, &deadline);
            q->consumer_waiting = 0;
            if (w == ETIMEDOUT && q->done[slot] < len) {
                status = SK_HANDOFF_NOT_YET;
                break;
            }
        }
        if (status == SK_HANDOFF_READY && q->stop)
            status = SK_HANDOFF_STOPPED;
        if (status == SK_HANDOFF_READY) {
            *g = (struct sk_handoff_group){
                .first = k * q->group, .len = len, .slot = slot, .failed = q->failed[slot]};
            q->taken++;
        }
    }
    pthread_mutex_unlock(&q->lock);
    return status;
}

void sk_handoff_release(struct sk_handoff *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->released < q->taken) {
        uint32_t slot = (uint32_t)(q->released % q->depth);
        q->done[slot] = 0;
        q->failed[slot] = 0;
        q->released++;
        /* `group` positions became claimable */
        if (q->workers_waiting)
            pthread_cond_broadcast(&q->room);
    }
    pthread_mutex_unlock(&q->lock);
}

void sk_handoff_stop(struct sk_handoff *q)
{
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_broadcast(&q->room);
    pthread_cond_broadcast(&q->filled);
    pthread_mutex_unlock(&q->lock);
}
