/* cache_plan.h - the epoch plan as the readers move along it: the shards it
 * has passed let go, and for the node-local cache its next shards opened
 * ahead of the reader (private).
 *
 * Every dataset learns each epoch's plan from its iterator's or loader's
 * list (sk_cache_plan_at with position 0: a new list, a new epoch) and then,
 * as the readers move along it, lets go of each shard the plan has finished
 * with (the plan's last sample of it, once the readers are past it): its
 * footer is released (sk_dataset_let_go), so that an epoch holds the
 * footers of the few shards it is reading, not of every shard it has read.
 * A dataset read through the cache (read/cache.h) also:
 *
 *   - opens the next `ahead` shards of the plan, in the order of their first
 *     sample in it, on up to 8 threads of its own (at most `ahead`):
 *     opening a shard through the cache is a hit (checked there, not on a
 *     reader's thread) or a miss whose download starts then - the shard is
 *     in the cache, or on its way, when the readers get to it;
 *   - tells the cache which shards the epoch has finished with (the plan's
 *     last sample of each, once the readers are past it): those are evicted
 *     first when a shard the epoch has yet to read needs room
 *     (sk_cache_done), never one the epoch has yet to read.
 *
 * With a cache limit below the dataset, an epoch then fetches each shard at
 * most once: the shards cached when it starts are read locally, each other
 * one is downloaded once, into room that shards already read make, or read
 * remotely when there is none yet.
 *
 * A shard that fails to open here is not remembered: the reader's own open
 * tries again and reports the error. */
#ifndef SHARDKIT_READ_CACHE_PLAN_H
#define SHARDKIT_READ_CACHE_PLAN_H

#include <stdint.h>

#include "shardkit/dataset.h"
#include "shardkit/error.h"

struct sk_cache;
struct sk_cache_plan;

/* Follow the plans of dataset ds; with a cache c (or NULL: none), prefetch
 * through it `ahead` (at least 1) shards ahead of the readers, the threads
 * starting with the first plan.  0 or SHARD_ENOMEM. */
int sk_cache_plan_new(struct sk_cache_plan **out, struct shard_dataset *ds, struct sk_cache *c,
                      uint32_t ahead, struct shard_err *err);

/* Stops and joins the thread (an open under way finishes first).  Accepts
 * NULL.  Before the dataset's shards are closed. */
void sk_cache_plan_free(struct sk_cache_plan *pf);

/* A reader of list[0..count) is about to read position p; positions before
 * p - margin are read.  Position 0 begins a new plan (and a new epoch of
 * the cache: sk_cache_epoch). */
void sk_cache_plan_at(struct sk_cache_plan *pf, const uint64_t *list, uint64_t count, uint64_t p,
                      uint64_t margin);

#endif
