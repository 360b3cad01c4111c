/* handoff.h - a bounded, ordered hand-off from worker threads to one
 * consumer (private).
 *
 * A list of `count` positions 0..count-1 is worked on by any number of
 * worker threads and handed to one consumer in list order, in groups of
 * `group` consecutive positions (the last group may be shorter).  The queue
 * coordinates positions, readiness, per-position errors and stopping; the
 * data stays the user's: it keeps `depth` ring slots of `group` cells each,
 * and position p lives in slot sk_handoff_slot(q, p) (= (p / group) % depth),
 * cell p % group - or flat, in cell sk_handoff_cell(q, p) of depth * group.
 *
 * Users: the shard iterator (iter.c) and the benchmark's files loader, with
 * group 1 (a slot holds one sample); a loader handing out whole batches
 * (group = batch size) whose samples workers write in place into one
 * contiguous batch buffer per slot.
 *
 * Workers:
 *   while (sk_handoff_claim(q, &p)) {
 *       struct shard_err *e = sk_handoff_err(q, p);   // cleared by the claim
 *       int rc = work_on(p, slot sk_handoff_slot(q, p), e);
 *       sk_handoff_done(q, p, rc);
 *   }
 * Positions are claimed in order, each once.  A claim blocks while position
 * p's group is `depth` or more groups ahead of the oldest group the consumer
 * has not released (so at most depth * group positions are outstanding:
 * claimed, done or taken, and not released): the slot of a claimed position
 * is never in use by another group.  Between its claim and sk_handoff_done
 * the position's cells (the user's and its error cell) belong to the worker.
 *
 * Consumer:
 *   struct sk_handoff_group g;
 *   while ((w = sk_handoff_wait(q, -1, &g)) == SK_HANDOFF_READY) {
 *       use slot g.slot: positions g.first .. g.first + g.len - 1, each with
 *       sk_handoff_rc(q, p) (and sk_handoff_err(q, p) when it failed);
 *       sk_handoff_release(q);          // the slot goes back to the workers
 *   }
 * Groups are taken in order; between its wait and its release a group's
 * cells belong to the consumer.  A consumer may hold up to `depth` groups
 * (release gives back the oldest taken one).  The consumer is woken only
 * when the group it waits for becomes complete (not for every position
 * done: a wake-up that finds nothing costs a context switch).
 *
 * Stopping: sk_handoff_stop makes every claim (blocked or later) return 0
 * and every wait return SK_HANDOFF_STOPPED, at once.  Positions being worked
 * on are not interrupted: their workers finish them (sk_handoff_done is
 * still allowed), find no more to claim and return.  So a consumer that
 * stops mid-list calls stop, joins its workers and frees everything,
 * without waiting for the list to end.
 *
 * Waiting with a timeout: sk_handoff_wait(q, 100, &g) returns
 * SK_HANDOFF_NOT_YET after about 100 ms without a complete group, so that a
 * caller (a Python binding) can check for Ctrl-C and wait again.
 *
 * All functions are thread-safe; one thread is the consumer at a time. */
#ifndef SHARDKIT_HANDOFF_H
#define SHARDKIT_HANDOFF_H

#include <stdint.h>

#include "shardkit/error.h"

struct sk_handoff;

/* What sk_handoff_wait returns (besides SHARD_EINVAL for misuse). */
enum sk_handoff_wait {
    SK_HANDOFF_END = 0,      /* every group has been taken */
    SK_HANDOFF_READY = 1,    /* the next group is complete and now taken: *g says which */
    SK_HANDOFF_NOT_YET = 2,  /* the timeout passed first; nothing was taken */
    SK_HANDOFF_STOPPED = 3,  /* sk_handoff_stop was called; nothing was taken */
};

/* A group taken by the consumer. */
struct sk_handoff_group {
    uint64_t first;    /* list position of its first cell */
    uint32_t len;      /* positions in it: `group`, fewer for the last group */
    uint32_t slot;     /* its ring slot, 0..depth-1 */
    uint32_t failed;   /* positions in it marked done with an error */
};

/* A queue for positions 0..count-1 in groups of `group` (>= 1), with `depth`
 * (>= 1) slots.  *out is NULL on failure.  0, SHARD_EINVAL (depth or group
 * 0, depth * group too large) or SHARD_ENOMEM. */
int sk_handoff_new(struct sk_handoff **out, uint64_t count, uint32_t depth, uint32_t group,
                   struct shard_err *err);

/* Free the queue (no thread may be using it: stop it and join the workers
 * first).  Accepts NULL. */
void sk_handoff_free(struct sk_handoff *q);

/* Where position p's data lives: its slot (0..depth-1), and its cell in a
 * flat array of depth * group (slot * group + p % group). */
uint32_t sk_handoff_slot(const struct sk_handoff *q, uint64_t p);
uint32_t sk_handoff_cell(const struct sk_handoff *q, uint64_t p);

/* Worker: claim the next position, blocking while it is too far ahead (see
 * above).  1 with *p set, or 0 when every position is claimed or the queue
 * is stopped: the worker should then return. */
int sk_handoff_claim(struct sk_handoff *q, uint64_t *p);

/* Position p's error cell: cleared by the claim, filled by the worker when
 * it fails, read by the consumer after the group is taken. */
struct shard_err *sk_handoff_err(struct sk_handoff *q, uint64_t p);

/* Worker: position p (claimed by this worker) is finished with rc (0 or a
 * negative status; with an error, fill sk_handoff_err(q, p) first). */
void sk_handoff_done(struct sk_handoff *q, uint64_t p, int rc);

/* Consumer: wait for the next group to be complete and take it (*g).
 * timeout_ms < 0 waits as long as it takes; 0 only looks.  Returns one of
 * enum sk_handoff_wait, or SHARD_EINVAL when `depth` groups are already
 * taken and not released (the next one could never be claimed). */
int sk_handoff_wait(struct sk_handoff *q, long timeout_ms, struct sk_handoff_group *g);

/* The rc position p was marked done with (p in a group the consumer has
 * taken). */
int sk_handoff_rc(const struct sk_handoff *q, uint64_t p);

/* Consumer: give the oldest taken group's slot back to the workers.  No-op
 * when no group is taken. */
void sk_handoff_release(struct sk_handoff *q);

/* Stop: claims return 0 and waits return SK_HANDOFF_STOPPED from now on,
 * blocked ones at once.  Idempotent. */
void sk_handoff_stop(struct sk_handoff *q);

#endif
