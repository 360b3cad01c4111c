/* pipeline.h - an ordered parallel pipeline (private).
 *
 * Items are claimed one at a time in increasing position order, worked on in
 * parallel by every thread, and consumed strictly in position order by
 * whichever thread finds the next item ready (no dedicated writer thread, no
 * batch barriers: a slow item delays only the consumer, not the other threads,
 * until the ring of slots is full).  This is what makes the output
 * independent of the thread count while keeping every core busy.  The slots
 * are coordinated by the library's ordered ring (util/ring.h). */
#ifndef SHARDKIT_PIPELINE_H
#define SHARDKIT_PIPELINE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "shardkit/error.h"

struct pipeline_ops {
    void *ctx;
    /* Fill `slot` with the input for position `pos`.  Calls are serialised
     * and come in increasing pos order.  1: an item; 0: no more items;
     * negative: stop with that error. */
    int (*claim)(void *ctx, uint64_t pos, void *slot, struct shard_err *err);
    /* Do the work for a claimed slot.  Runs concurrently on `thread`
     * (0..threads-1).  Failures belong in the slot, not here. */
    void (*work)(void *ctx, int thread, void *slot);
    /* Take a worked slot; calls are serialised and in pos order.  Negative
     * stops the pipeline with that error. */
    int (*consume)(void *ctx, void *slot, struct shard_err *err);
};

/* Run until claim() returns 0 and every item is consumed, or an error.
 * `slots` are nslots caller-owned slot objects (reused round-robin).
 * When *cancel becomes non-zero no further item is claimed and SHARD_EINTR is
 * returned once the claimed ones are consumed.  Returns 0 or the first error. */
int sk_pipeline_run(const struct pipeline_ops *ops, void **slots, size_t nslots, int threads,
                    volatile sig_atomic_t *cancel, struct shard_err *err);

#endif
