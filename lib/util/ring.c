/* ring.c - the ordered ring (see ring.h).
 *
 * One mutex guards everything here; the user's cells are never touched.
 * Group k uses slot k % depth, and each slot records the group it is for:
 * slot s starts for group s, and releasing group k gives its slot to group
 * k + depth with zeroed tallies.  So a position of group k may be claimed
 * once its slot is for k, and group k is complete once its slot is for k
 * and has `done` equal to the group's length - whatever order groups are
 * released in (in order by the one consumer, in any order by takers).
 * Producers all wait for the same thing (the slot of next_claim) on one
 * condition, woken one at a time; consumers and takers wait for a group on
 * its slot's condition. */
#include "util/ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

#define NS_PER_MS 1000000u

struct ring_slot {
    uint64_t group;        /* the group the slot is for */
    uint32_t done;         /* positions of that group marked done */
    uint32_t failed;       /* ... of which with an error */
    int taken;             /* that group is taken, not released */
    unsigned waiting;      /* consumers or takers asleep on `filled` */
    pthread_cond_t filled; /* its group is complete, the list ended, or stop */
};

struct sk_ring {
    pthread_mutex_t lock;
    pthread_cond_t room; /* producers: next_claim's slot is theirs, or the end */
    uint64_t count;      /* positions (SK_RING_OPEN until closed) */
    uint64_t groups;     /* ceil(count / group) */
    uint32_t depth;
    uint32_t group;
    uint64_t next_claim; /* the next position a producer gets */
    uint64_t done_end;   /* 1 + the highest position marked done, or 0 */
    uint64_t taken;      /* groups taken in order (ways 1 and 3) */
    uint64_t released;   /* ... and released (<= taken) */
    int consuming;       /* way 3: a producer holds the consumer's role */
    int stop;
    unsigned producers_waiting; /* asleep on `room` */
    struct ring_slot *slots;
    int *rc;                /* per cell */
    struct shard_err *errs; /* per cell */
    struct sk_ring_counts counts;
};

static uint64_t groups_of(uint64_t count, uint32_t group)
{
    return count / group + (count % group != 0);
}

int sk_ring_new(struct sk_ring **out, uint64_t count, uint32_t depth, uint32_t group,
                struct shard_err *err)
{
    *out = NULL;
    if (!depth || !group || (uint64_t)depth * group > UINT32_MAX ||
        (uint64_t)depth * group > SIZE_MAX / sizeof(struct shard_err))
        return shard_err_set(err, SHARD_EINVAL, "ring of %u slots of %u positions", depth, group);
    struct sk_ring *q = calloc(1, sizeof *q);
    if (!q)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t cells = (size_t)depth * group;
    q->slots = calloc(depth, sizeof *q->slots);
    q->rc = calloc(cells, sizeof *q->rc);
    q->errs = calloc(cells, sizeof *q->errs);
    if (!q->slots || !q->rc || !q->errs) {
        free(q->slots);
        free(q->rc);
        free(q->errs);
        free(q);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    /* timed waits measure on the monotonic clock: a wall-clock jump must not
     * shorten or stretch them */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->room, &attr);
    for (uint32_t s = 0; s < depth; s++) {
        q->slots[s].group = s;
        pthread_cond_init(&q->slots[s].filled, &attr);
    }
    pthread_condattr_destroy(&attr);
    q->count = count;
    q->groups = groups_of(count, group);
    q->depth = depth;
    q->group = group;
    *out = q;
    return SHARD_OK;
}

void sk_ring_free(struct sk_ring *q)
{
    if (!q)
        return;
    for (uint32_t s = 0; s < q->depth; s++)
        pthread_cond_destroy(&q->slots[s].filled);
    pthread_cond_destroy(&q->room);
    pthread_mutex_destroy(&q->lock);
    free(q->slots);
    free(q->rc);
    free(q->errs);
    free(q);
}

uint32_t sk_ring_slot(const struct sk_ring *q, uint64_t p)
{
    return (uint32_t)((p / q->group) % q->depth);
}

uint32_t sk_ring_cell(const struct sk_ring *q, uint64_t p)
{
    return sk_ring_slot(q, p) * q->group + (uint32_t)(p % q->group);
}

static struct ring_slot *slot_of_group(const struct sk_ring *q, uint64_t k)
{
    return &q->slots[k % q->depth];
}

/* Positions in group k (< groups). */
static uint32_t group_len(const struct sk_ring *q, uint64_t k)
{
    uint64_t first = k * q->group;
    return q->count - first < q->group ? (uint32_t)(q->count - first) : q->group;
}

/* The absolute CLOCK_MONOTONIC time timeout_ms from now. */
static struct timespec deadline_after(long timeout_ms)
{
    uint64_t ns = sk_now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
    return (struct timespec){(time_t)(ns / SK_NS_PER_SECOND), (long)(ns % SK_NS_PER_SECOND)};
}

/* Sleep on c (the lock held) until woken, or until the deadline when
 * timeout_ms > 0.  1 when the deadline passed. */
static int sleep_on(struct sk_ring *q, pthread_cond_t *c, long timeout_ms,
                    const struct timespec *deadline)
{
    int w = timeout_ms < 0 ? pthread_cond_wait(c, &q->lock)
                           : pthread_cond_timedwait(c, &q->lock, deadline);
    return w == ETIMEDOUT;
}

/* What a claim would get now. */
static int claim_status(const struct sk_ring *q)
{
    if (q->stop)
        return SK_RING_STOPPED;
    if (q->next_claim >= q->count)
        return SK_RING_END;
    uint64_t k = q->next_claim / q->group;
    return slot_of_group(q, k)->group == k ? SK_RING_READY : SK_RING_NOT_YET;
}

/* A sleeping producer has something to find: wake one (it wakes the next in
 * turn when there is more, see sk_ring_claim). */
static void wake_a_producer(struct sk_ring *q)
{
    if (q->producers_waiting && claim_status(q) != SK_RING_NOT_YET)
        pthread_cond_signal(&q->room);
}

int sk_ring_claim(struct sk_ring *q, long timeout_ms, uint64_t *p)
{
    struct timespec deadline = {0, 0};
    if (timeout_ms > 0)
        deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&q->lock);
    int status = claim_status(q);
    while (status == SK_RING_NOT_YET && timeout_ms != 0) {
        q->producers_waiting++;
        q->counts.producer_sleeps++;
        int timed_out = sleep_on(q, &q->room, timeout_ms, &deadline);
        q->producers_waiting--;
        status = claim_status(q);
        if (status == SK_RING_NOT_YET) {
            if (timed_out)
                break;
            q->counts.producer_idle_wakeups++;
        }
    }
    if (status == SK_RING_READY) {
        *p = q->next_claim++;
        uint32_t cell = sk_ring_cell(q, *p);
        q->rc[cell] = SHARD_OK;
        shard_err_clear(&q->errs[cell]);
    }
    if (status != SK_RING_NOT_YET)
        wake_a_producer(q);
    pthread_mutex_unlock(&q->lock);
    return status;
}

struct shard_err *sk_ring_err(struct sk_ring *q, uint64_t p)
{
    return &q->errs[sk_ring_cell(q, p)];
}

int sk_ring_rc(const struct sk_ring *q, uint64_t p)
{
    return q->rc[sk_ring_cell(q, p)];
}

/* The lock held: position p is done with rc (ignored when withdrawn). */
static void mark_done(struct sk_ring *q, uint64_t p, int rc)
{
    if (p >= q->count)
        return;
    uint64_t k = p / q->group;
    struct ring_slot *s = slot_of_group(q, k);
    q->rc[sk_ring_cell(q, p)] = rc;
    if (rc)
        s->failed++;
    if (p >= q->done_end)
        q->done_end = p + 1;
    /* only whoever waits for this group, and only once it is complete */
    if (++s->done == group_len(q, k) && s->waiting)
        pthread_cond_broadcast(&s->filled);
}

void sk_ring_done(struct sk_ring *q, uint64_t p, int rc)
{
    pthread_mutex_lock(&q->lock);
    mark_done(q, p, rc);
    pthread_mutex_unlock(&q->lock);
}

int sk_ring_close(struct sk_ring *q, uint64_t end)
{
    pthread_mutex_lock(&q->lock);
    int rc = SHARD_EINVAL;
    if (end <= q->count && end >= q->done_end) {
        q->count = end;
        q->groups = groups_of(end, q->group);
        if (q->next_claim > end)
            q->next_claim = end;
        if (q->producers_waiting)
            pthread_cond_broadcast(&q->room);
        /* a group the end cut short may be complete; one past it is the end */
        for (uint32_t s = 0; s < q->depth; s++)
            if (q->slots[s].waiting)
                pthread_cond_broadcast(&q->slots[s].filled);
        rc = SHARD_OK;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* Whether group k can be taken now. */
static int group_status(const struct sk_ring *q, uint64_t k)
{
    if (q->stop)
        return SK_RING_STOPPED;
    if (k >= q->groups)
        return SK_RING_END;
    const struct ring_slot *s = slot_of_group(q, k);
    return s->group == k && s->done == group_len(q, k) ? SK_RING_READY : SK_RING_NOT_YET;
}

/* The lock held: wait until group k can be taken, or the timeout. */
static int wait_for_group(struct sk_ring *q, uint64_t k, long timeout_ms,
                          const struct timespec *deadline)
{
    struct ring_slot *s = slot_of_group(q, k);
    int status = group_status(q, k);
    while (status == SK_RING_NOT_YET && timeout_ms != 0) {
        s->waiting++;
        q->counts.consumer_sleeps++;
        int timed_out = sleep_on(q, &s->filled, timeout_ms, deadline);
        s->waiting--;
        status = group_status(q, k);
        if (status == SK_RING_NOT_YET) {
            if (timed_out)
                break;
            q->counts.consumer_idle_wakeups++;
        }
    }
    return status;
}

/* The lock held: take complete group k. */
static void take_group(struct sk_ring *q, uint64_t k, struct sk_ring_group *g)
{
    struct ring_slot *s = slot_of_group(q, k);
    s->taken = 1;
    *g = (struct sk_ring_group){.first = k * q->group,
                                .len = group_len(q, k),
                                .slot = (uint32_t)(k % q->depth),
                                .failed = s->failed};
}

/* The lock held: group k (taken) gives its slot to group k + depth. */
static void free_slot(struct sk_ring *q, uint64_t k)
{
    struct ring_slot *s = slot_of_group(q, k);
    s->group = k + q->depth;
    s->done = 0;
    s->failed = 0;
    s->taken = 0;
    wake_a_producer(q);
}

int sk_ring_wait(struct sk_ring *q, long timeout_ms, struct sk_ring_group *g)
{
    struct timespec deadline = {0, 0};
    if (timeout_ms > 0)
        deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&q->lock);
    uint64_t k = q->taken;
    int status;
    if (!q->stop && k < q->groups && k >= q->released + q->depth)
        status = SHARD_EINVAL; /* its slot is held by the consumer itself */
    else
        status = wait_for_group(q, k, timeout_ms, &deadline);
    if (status == SK_RING_READY) {
        take_group(q, k, g);
        q->taken++;
    }
    pthread_mutex_unlock(&q->lock);
    return status;
}

void sk_ring_release(struct sk_ring *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->released < q->taken)
        free_slot(q, q->released++);
    pthread_mutex_unlock(&q->lock);
}

int sk_ring_take(struct sk_ring *q, uint64_t k, long timeout_ms, struct sk_ring_group *g)
{
    struct timespec deadline = {0, 0};
    if (timeout_ms > 0)
        deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&q->lock);
    const struct ring_slot *s = slot_of_group(q, k);
    int status;
    if (!q->stop && k < q->groups && (s->group > k || (s->group == k && s->taken)))
        status = SHARD_EINVAL; /* taken before */
    else
        status = wait_for_group(q, k, timeout_ms, &deadline);
    if (status == SK_RING_READY)
        take_group(q, k, g);
    pthread_mutex_unlock(&q->lock);
    return status;
}

void sk_ring_release_group(struct sk_ring *q, uint64_t k)
{
    pthread_mutex_lock(&q->lock);
    const struct ring_slot *s = slot_of_group(q, k);
    if (s->group == k && s->taken)
        free_slot(q, k);
    pthread_mutex_unlock(&q->lock);
}

/* The lock held, by the consumer's role: take the next group if it is
 * complete, else give up the role. */
static int take_in_turn(struct sk_ring *q, struct sk_ring_group *g)
{
    int status = group_status(q, q->taken);
    if (status == SK_RING_READY) {
        take_group(q, q->taken, g);
        q->taken++;
    }
    q->consuming = status == SK_RING_READY;
    return status;
}

int sk_ring_done_take(struct sk_ring *q, uint64_t p, int rc, struct sk_ring_group *g)
{
    pthread_mutex_lock(&q->lock);
    mark_done(q, p, rc);
    int status = q->consuming ? SK_RING_NOT_YET : take_in_turn(q, g);
    pthread_mutex_unlock(&q->lock);
    return status;
}

int sk_ring_release_take(struct sk_ring *q, struct sk_ring_group *g)
{
    pthread_mutex_lock(&q->lock);
    if (q->released < q->taken)
        free_slot(q, q->released++);
    int status = take_in_turn(q, g);
    pthread_mutex_unlock(&q->lock);
    return status;
}

void sk_ring_stop(struct sk_ring *q)
{
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_broadcast(&q->room);
    for (uint32_t s = 0; s < q->depth; s++)
        pthread_cond_broadcast(&q->slots[s].filled);
    pthread_mutex_unlock(&q->lock);
}

void sk_ring_counts(struct sk_ring *q, struct sk_ring_counts *c)
{
    pthread_mutex_lock(&q->lock);
    *c = q->counts;
    pthread_mutex_unlock(&q->lock);
}
