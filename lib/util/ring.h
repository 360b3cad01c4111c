/* ring.h - the ordered ring: positions worked on by many threads and handed
 * on in list order, in bounded memory (private).
 *
 * The library's one mechanism for "many threads work, the results come out
 * in order": the reader's iterator, the batch loader, the conversion's
 * read-ahead of source files and the conversion's pipeline all use it.
 * (shardbench's files loader, a program on the public API, has its own.)
 *
 * A list of positions 0..count-1 (or open-ended, count SK_RING_OPEN, until
 * sk_ring_close says where it ends) is claimed in order by any number of
 * producer threads and handed on in groups of `group` consecutive positions
 * (the last group may be shorter).  The ring coordinates positions,
 * readiness, per-position status and errors, and stopping; the data stays
 * the user's: it keeps `depth` slots of `group` cells each, and position p
 * lives in slot sk_ring_slot(q, p) (= (p / group) % depth), cell p % group -
 * or flat, in cell sk_ring_cell(q, p) of depth * group.
 *
 * Producers:
 *   while (sk_ring_claim(q, -1, &p) == SK_RING_READY) {
 *       struct shard_err *e = sk_ring_err(q, p);   // cleared by the claim
 *       int rc = work_on(p, slot sk_ring_slot(q, p), e);
 *       sk_ring_done(q, p, rc);
 *   }
 * Positions are claimed in increasing order, each once.  Group k uses slot
 * k % depth, and its positions are claimed only once group k - depth has
 * been released (bounded memory: at most depth * group positions are
 * claimed, done or taken and not released), so the cells of a claimed
 * position are never in use by another group.  Between its claim and
 * sk_ring_done a position's cells (the user's and its error cell) belong to
 * its producer.
 *
 * A group is taken, its cells belong to the taker, then it is released and
 * its slot goes back to the producers.  Each ring is consumed in one of
 * three ways:
 *
 * 1. One consumer, in order (the iterator, the loaders):
 *      struct sk_ring_group g;
 *      while (sk_ring_wait(q, -1, &g) == SK_RING_READY) {
 *          use slot g.slot: positions g.first .. g.first + g.len - 1, each
 *          with sk_ring_rc(q, p) (and sk_ring_err(q, p) when it failed);
 *          sk_ring_release(q);         // the oldest taken group
 *      }
 *    The consumer may hold up to `depth` groups at once.
 *
 * 2. Takers of given groups, any number of them, in any order (the
 *    read-ahead: each conversion thread takes the file of the position it
 *    converts):
 *      if (sk_ring_take(q, k, -1, &g) == SK_RING_READY) {
 *          use group k;
 *          sk_ring_release_group(q, k);
 *      }
 *    Every group must be taken and released once, or producers wait for its
 *    slot forever (until stopped).
 *
 * 3. No consumer thread: whichever producer completes the next group
 *    consumes it, and goes on while the following one is complete (the
 *    conversion's pipeline: the output is written in order by the threads
 *    that build it, with no writer thread and no batch barrier):
 *      int w = sk_ring_done_take(q, p, rc, &g);
 *      while (w == SK_RING_READY) {
 *          consume group g;
 *          w = sk_ring_release_take(q, &g);
 *      }
 *    One producer at a time holds this consumer's role; groups are consumed
 *    in order, one at a time.  No complete group is left behind: the role is
 *    given up, and a group found complete, under one lock.
 *
 * Wake-ups.  A consumer or taker sleeps only for the one group it waits for
 * (each slot has its own condition), and is woken when that group is
 * complete - not for every position done: a wake-up that finds nothing
 * costs a context switch.  A producer blocked on a full ring is woken when
 * the slot of the next position to claim is released, and then wakes the
 * next blocked producer if there is another position for it.
 *
 * Stopping: sk_ring_stop makes every claim return SK_RING_STOPPED and every
 * wait or take return SK_RING_STOPPED, blocked ones at once.  Positions being
 * worked on are not interrupted: their producers finish them (sk_ring_done
 * is still allowed), find nothing more to claim and return.  So a consumer
 * that stops mid-list calls stop, joins its producers and frees everything,
 * without waiting for the list to end.
 *
 * Timeouts: every call that can block takes timeout_ms: < 0 waits as long
 * as it takes, 0 only looks, > 0 returns SK_RING_NOT_YET after about that
 * many milliseconds (a caller - a Python binding - can then check for
 * Ctrl-C and wait again).  Timed waits are on CLOCK_MONOTONIC (util/clock.h).
 *
 * All functions are thread-safe. */
#ifndef SHARDKIT_RING_H
#define SHARDKIT_RING_H

#include <stdint.h>

#include "shardkit/error.h"

struct sk_ring;

/* A list whose length is not known yet: sk_ring_close ends it. */
#define SK_RING_OPEN UINT64_MAX

/* What the calls that can block return (besides SHARD_EINVAL for misuse). */
enum sk_ring_status {
    SK_RING_END = 0,     /* nothing more: every position claimed, every group taken */
    SK_RING_READY = 1,   /* a position was claimed, or a group is complete and now taken */
    SK_RING_NOT_YET = 2, /* the timeout passed first (or, consuming in turn, the next
                          * group is not complete); nothing was claimed or taken */
    SK_RING_STOPPED = 3, /* sk_ring_stop was called; nothing was claimed or taken */
};

/* A group taken. */
struct sk_ring_group {
    uint64_t first;  /* list position of its first cell */
    uint32_t len;    /* positions in it: `group`, fewer for the last group */
    uint32_t slot;   /* its slot, 0..depth-1 */
    uint32_t failed; /* positions in it marked done with an error */
};

/* What the ring's threads did while blocked (for tests and tuning): sleeps
 * are waits on a condition; an idle wake-up is one that found what it waited
 * for still missing (not a timeout, not a stop) and slept again. */
struct sk_ring_counts {
    uint64_t producer_sleeps, producer_idle_wakeups;
    uint64_t consumer_sleeps, consumer_idle_wakeups;
};

/* A ring for positions 0..count-1 (count may be SK_RING_OPEN) in groups of
 * `group` (>= 1), with `depth` (>= 1) slots.  *out is NULL on failure.  0,
 * SHARD_EINVAL (depth or group 0, depth * group too large) or
 * SHARD_ENOMEM. */
int sk_ring_new(struct sk_ring **out, uint64_t count, uint32_t depth, uint32_t group,
                struct shard_err *err);

/* Free the ring (no thread may be using it: stop it and join the producers
 * first).  Accepts NULL. */
void sk_ring_free(struct sk_ring *q);

/* Where position p's data lives: its slot (0..depth-1), and its cell in a
 * flat array of depth * group (slot * group + p % group). */
uint32_t sk_ring_slot(const struct sk_ring *q, uint64_t p);
uint32_t sk_ring_cell(const struct sk_ring *q, uint64_t p);

/* Producer: claim the next position, blocking while its slot is held (see
 * above).  SK_RING_READY with *p set, SK_RING_END when every position is
 * claimed, SK_RING_STOPPED, or SK_RING_NOT_YET after timeout_ms. */
int sk_ring_claim(struct sk_ring *q, long timeout_ms, uint64_t *p);

/* Position p's error cell: cleared by the claim, filled by the producer
 * when it fails, read by the taker after the group is taken. */
struct shard_err *sk_ring_err(struct sk_ring *q, uint64_t p);

/* Producer: position p (claimed by this thread) is finished with rc (0 or a
 * negative status; with an error, fill sk_ring_err(q, p) first). */
void sk_ring_done(struct sk_ring *q, uint64_t p, int rc);

/* Producer: the list ends at `end`: positions from `end` on are never
 * claimed.  Positions already claimed from `end` on are withdrawn: their
 * producers drop them (sk_ring_done ignores them).  For an open-ended list
 * whose source has no item at the position just claimed, or a cancelled
 * run: only what was claimed before is handed on.  Waiters learn of the new
 * end at once.  0, or SHARD_EINVAL when `end` is beyond the list or a
 * position from `end` on is already done (the list stays as it was).
 * Consumed in turn (3.), the closer then calls sk_ring_done_take for its
 * withdrawn position: nothing is marked, and it consumes the last group if
 * the close completed it. */
int sk_ring_close(struct sk_ring *q, uint64_t end);

/* 1. The one consumer: wait for the next group to be complete and take it
 * (*g).  SK_RING_READY, SK_RING_END (every group taken), SK_RING_NOT_YET,
 * SK_RING_STOPPED, or SHARD_EINVAL when `depth` groups are taken and not
 * released (the next one could never be claimed). */
int sk_ring_wait(struct sk_ring *q, long timeout_ms, struct sk_ring_group *g);

/* The rc position p was marked done with (p in a group taken). */
int sk_ring_rc(const struct sk_ring *q, uint64_t p);

/* 1. The one consumer: give the oldest taken group's slot back to the
 * producers.  No-op when no group is taken. */
void sk_ring_release(struct sk_ring *q);

/* 2. A taker: wait for group k to be complete and take it (*g).
 * SK_RING_READY, SK_RING_END (k is beyond the list), SK_RING_NOT_YET,
 * SK_RING_STOPPED, or SHARD_EINVAL when group k was taken already. */
int sk_ring_take(struct sk_ring *q, uint64_t k, long timeout_ms, struct sk_ring_group *g);

/* 2. A taker: give group k's slot back to the producers (k taken by this
 * thread). */
void sk_ring_release_group(struct sk_ring *q, uint64_t k);

/* 3. sk_ring_done, then, when nobody holds the consumer's role and the next
 * group is complete, take the role and that group: SK_RING_READY with *g;
 * otherwise SK_RING_NOT_YET (someone else consumes, or nothing is complete),
 * SK_RING_END or SK_RING_STOPPED. */
int sk_ring_done_take(struct sk_ring *q, uint64_t p, int rc, struct sk_ring_group *g);

/* 3. The role's holder: release the group it consumed, and take the next one
 * when it is complete (SK_RING_READY, *g); otherwise give up the role and
 * return SK_RING_NOT_YET, SK_RING_END or SK_RING_STOPPED. */
int sk_ring_release_take(struct sk_ring *q, struct sk_ring_group *g);

/* Stop: claims, waits and takes return SK_RING_STOPPED from now on, blocked
 * ones at once.  Idempotent. */
void sk_ring_stop(struct sk_ring *q);

/* The counts so far. */
void sk_ring_counts(struct sk_ring *q, struct sk_ring_counts *c);

#endif
