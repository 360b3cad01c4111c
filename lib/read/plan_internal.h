/* plan_internal.h - what the epoch plans of a dataset and of a mixture share
 * (private to lib/read): an epoch sequence looked up by position, and the
 * plan of an epoch resumed on another number of ranks (shardkit/dataset.h,
 * "The rest of an epoch"). */
#ifndef SHARDKIT_READ_PLAN_INTERNAL_H
#define SHARDKIT_READ_PLAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/dataset.h"
#include "shardkit/error.h"

/* An epoch sequence of `length` entries (a dataset's E, a mixture's M) and
 * how its rank plans are made. */
struct sk_epoch_seq {
    uint64_t length;
    /* the rank plans' windows (dataset.h step 3): 0 or 1 for none */
    uint64_t window;
    /* out[i] = the entry at positions[i], for n positions in ascending
     * order (repeats allowed), each below length.  0 or an error. */
    int (*lookup)(void *ctx, const uint64_t *positions, size_t n, uint64_t *out,
                  struct shard_err *err);
    void *ctx;
};

/* Rank o->rank of o->world_size's plan of segment `count` of epoch o->epoch
 * (done[0..count) the segments read before; count 0: the ordinary plan of
 * the sequence), by the rules of dataset.h.  0, SHARD_EINVAL, SHARD_ENOMEM
 * or the lookup's error. */
int sk_plan_resumed(const struct sk_epoch_seq *q, const struct shard_plan_options *o,
                    const struct shard_plan_segment *done, size_t count, struct shard_plan **out,
                    struct shard_err *err);

/* Rank o->rank of o->world_size's slice [*begin, *end) of a list of n
 * entries by o->remainder (dataset.h step 2; indices from n on are pad's),
 * and how many entries no rank takes (drop). */
void sk_plan_rank_slice(uint64_t n, const struct shard_plan_options *o, uint64_t *begin,
                        uint64_t *end, uint64_t *dropped);

/* The sample counts of ds's shards (malloc'd: shard_dataset_shard_count
 * of them), or NULL when out of memory. */
uint64_t *sk_dataset_shard_counts(const struct shard_dataset *ds);

/* A plan holding indices[0..count) (malloc'd, taken over: freed on failure
 * too), of ranks sharing `shared` entries.  NULL when out of memory. */
struct shard_plan *sk_plan_adopt(uint64_t *indices, uint64_t count, uint64_t padded,
                                 uint64_t dropped, uint64_t shared);

/* The entries the ranks of p's segment share (before the rank split: the
 * dataset's samples, a mixture's L, what was left of a resumed epoch). */
uint64_t sk_plan_shared(const struct shard_plan *p);

/* The entries at sorted `offsets` (n of them, each below the shards'
 * total) of the plan of rank 0 of 1 with remainder keep, shuffle, seed,
 * epoch and buffer of o (its rank, world_size and remainder are ignored),
 * over shards of shard_samples[0..shard_count): windows of the plan are
 * made only where an offset falls.  0 or SHARD_ENOMEM. */
int sk_plan_entries_at(const uint64_t *shard_samples, uint32_t shard_count,
                       const struct shard_plan_options *o, const uint64_t *offsets, size_t n,
                       uint64_t *out, struct shard_err *err);

#endif
