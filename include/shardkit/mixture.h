/*
 * shardkit/mixture.h - a weighted mixture of datasets: one epoch drawn from
 * several datasets (its sources) by weight, sample by sample, for the
 * loader (shard_loader_new_mixture, shardkit/loader.h) and for any reader
 * of its plans.
 *
 * A mixture is an opaque handle with a create/free pair (the free accepts
 * NULL), immutable once made: its plans may be made from many threads.
 * Its sources are open datasets that must stay open until it is freed.
 *
 * Sample numbers.  Sample i of source s is the mixture's sample base_s + i,
 * base_s = n_0 + ... + n_{s-1} (n_s: source s's samples); plans list these
 * numbers, and shard_mixture_locate turns one back into (source, index).
 *
 * The epoch.  Sources 0..K-1 with weights w_s (> 0, taken relative to their
 * sum) make epochs of L entries (L by the rule, below), of which source s
 * gives exactly q_s = floor(C_s * L) - floor(C_{s-1} * L), where C_s =
 * (w_0 + ... + w_s) / (w_0 + ... + w_{K-1}) in IEEE double arithmetic,
 * summed in source order, C_{-1} = 0 and C_{K-1} = 1: within one of w_s * L,
 * and summing to L.  The epoch sequence M[0..L) of epoch e with seed x:
 *
 *  1. Sources, sample by sample: from the SplitMix64 stream seeded with
 *     derive(x, 5, e, 0, 0) (shardkit/dataset.h), position j draws u =
 *     below(R) (Lemire's bounded draw, manifests/FORMAT.md's bounded(R)),
 *     where r_s draws of source s are still to come (q_s at j = 0) and R is
 *     their sum; its source is the first s with u < r_0 + ... + r_s.  Every
 *     position is drawn by weight (the remaining shares), every epoch has
 *     exactly q_s of each source.
 *  2. Samples: the c-th draw of source s (c = 0, 1, ...) takes entry c mod
 *     n_s of pass floor(c / n_s), and pass k of source s is the source's
 *     ordinary plan of rank 0 of 1 (remainder keep; shardkit/dataset.h)
 *     with seed derive(x, 6, e, s, k), epoch 0, and the plan options'
 *     shuffle and shuffle buffer: shards in a shuffled order, samples
 *     shuffled in windows.  A pass visits each sample of its source once:
 *     a source is visited without repeats until its pass is exhausted, then
 *     again in a new order (upsampled).
 *
 * L, by the rule:
 *
 *   SHARD_MIXTURE_REPLACE           L = epoch_size (0: n_0 + ... + n_{K-1});
 *                                   a source whose q_s is above n_s is
 *                                   upsampled, one below n_s sees q_s of its
 *                                   samples, others each epoch.
 *   SHARD_MIXTURE_STOP_ON_SHORTEST  the largest L at most min_s floor((n_s +
 *                                   1) / w_s) + 1 with every q_s <= n_s: the
 *                                   epoch ends as the first source runs out,
 *                                   and nothing repeats.
 *   SHARD_MIXTURE_STOP_ON_LONGEST   the smallest L at least max_s floor((n_s
 *                                   - 1) / w_s) with every q_s >= n_s: every
 *                                   source is visited whole, the others
 *                                   upsampled.
 *
 * (w_s here relative to the sum.)  With epoch_size > 0 a stop rule's L is at
 * most epoch_size.  L is the same in every epoch.
 *
 * Ranks.  Rank r of W takes its slice of M by the remainder rule of
 * shardkit/dataset.h's step 2 with N = L (pad's entries beyond L repeat
 * M[p mod L]), in M's order: M is interleaved at random and every pass is
 * shuffled, so there is no window shuffle (the options' shuffle_buffer
 * shapes the passes).  An epoch resumed on another number of ranks
 * (shard_mixture_plan_resumed) follows "The rest of an epoch" of
 * shardkit/dataset.h with M for E and no windows.  A rank's plan is made
 * in time of order L (the draws up to its slice) and the memory of its own
 * entries, not of the sources'.
 *
 * Labels.  With SHARD_MIXTURE_LABELS_OWN a sample's label is its source's
 * own label number (a loader's batch says each sample's source).  With
 * SHARD_MIXTURE_LABELS_MERGED the sources' class names are merged by name
 * into one list, sorted by bytes as a manifest's labels are, and a
 * sample's label is its class's number in that list (shard_mixture_label,
 * shard_mixture_label_of give the mapping).
 *
 * Tiers (shardkit/api.h): experimental (SHARDKIT_EXPERIMENTAL), but for
 * the types: the functions are declared only with the macro.
 */
#ifndef SHARDKIT_MIXTURE_H
#define SHARDKIT_MIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/dataset.h"
#include "shardkit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum shard_mixture_rule {
    SHARD_MIXTURE_REPLACE = 0,
    SHARD_MIXTURE_STOP_ON_SHORTEST = 1,
    SHARD_MIXTURE_STOP_ON_LONGEST = 2,
};

enum shard_mixture_labels {
    SHARD_MIXTURE_LABELS_OWN = 0,    /* each source's own label numbers */
    SHARD_MIXTURE_LABELS_MERGED = 1, /* one list of class names, merged by name */
};

#ifdef SHARDKIT_EXPERIMENTAL
/* "replace" / "stop_on_shortest" / "stop_on_longest", and "own" /
 * "merged".  0 or SHARD_EINVAL; the names are static strings ("unknown"
 * for a value out of range). */
SHARD_API int shard_mixture_rule_parse(const char *s, enum shard_mixture_rule *out);
SHARD_API const char *shard_mixture_rule_name(enum shard_mixture_rule r);
SHARD_API int shard_mixture_labels_parse(const char *s, enum shard_mixture_labels *out);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_mixture_options {
    enum shard_mixture_rule rule;
    uint64_t epoch_size; /* entries per epoch (REPLACE), or at most (the stop rules);
                          * 0: by the rule */
    enum shard_mixture_labels labels;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Defaults: REPLACE, epoch_size 0 (every source's samples: L = their sum),
 * LABELS_OWN. */
SHARD_API void shard_mixture_options_init(struct shard_mixture_options *o);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_mixture;

#ifdef SHARDKIT_EXPERIMENTAL
/* A mixture of the `count` datasets sources[0..count) (1 ..
 * SHARD_MIXTURE_MAX_SOURCES of them, each open until the mixture is freed;
 * the same dataset may be given twice) with weights[0..count).
 * SHARD_EINVAL names the source: "source 1 has no samples", "the weight of
 * source 2 is 0: weights must be finite and above 0", too many or too few
 * sources, an epoch of more than SHARD_MIXTURE_MAX_EPOCH entries, an
 * unknown rule or labels option; SHARD_ENOMEM. */
#define SHARD_MIXTURE_MAX_SOURCES 1024u
#define SHARD_MIXTURE_MAX_EPOCH (1ull << 48)
SHARD_API int shard_mixture_new(struct shard_mixture **out, struct shard_dataset *const *sources,
                                const double *weights, uint32_t count,
                                const struct shard_mixture_options *o, struct shard_err *err);
SHARD_API void shard_mixture_free(struct shard_mixture *m); /* accepts NULL */

SHARD_API uint32_t shard_mixture_source_count(const struct shard_mixture *m);
/* Source s (s < the source count). */
SHARD_API struct shard_dataset *shard_mixture_source(const struct shard_mixture *m, uint32_t s);
/* Source s's weight relative to their sum, and its entries per epoch (q_s). */
SHARD_API double shard_mixture_weight(const struct shard_mixture *m, uint32_t s);
SHARD_API uint64_t shard_mixture_quota(const struct shard_mixture *m, uint32_t s);
/* L: entries per epoch (every rank's, before the rank split). */
SHARD_API uint64_t shard_mixture_epoch_size(const struct shard_mixture *m);
/* n_0 + ... + n_{K-1}: the mixture's sample numbers are below it. */
SHARD_API uint64_t shard_mixture_size(const struct shard_mixture *m);
SHARD_API enum shard_mixture_rule shard_mixture_rule(const struct shard_mixture *m);
SHARD_API enum shard_mixture_labels shard_mixture_labels(const struct shard_mixture *m);

/* The source and the index in it of the mixture's sample `sample`.  0 or
 * SHARD_ENOTFOUND (sample >= shard_mixture_size). */
SHARD_API int shard_mixture_locate(const struct shard_mixture *m, uint64_t sample, uint32_t *source,
                                   uint64_t *index, struct shard_err *err);

/* LABELS_MERGED: the merged class names (count, and name k: owned by the
 * mixture); LABELS_OWN: 0 and NULL. */
SHARD_API uint32_t shard_mixture_label_count(const struct shard_mixture *m);
SHARD_API const char *shard_mixture_label(const struct shard_mixture *m, uint32_t k);
/* The label a sample of source s with label `label` (its source's number,
 * or SHARD_NO_LABEL) has in the mixture: LABELS_OWN the same number,
 * LABELS_MERGED its class's number in the merged list; SHARD_NO_LABEL
 * stays, and so does a number out of the source's range. */
SHARD_API int32_t shard_mixture_label_of(const struct shard_mixture *m, uint32_t source,
                                         int32_t label);

/* Rank o->rank of o->world_size's plan of epoch o->epoch (seed, shuffle,
 * shuffle buffer, remainder from o), as above: the mixture's sample
 * numbers.  0, SHARD_EINVAL (a rank outside its world), SHARD_ENOMEM. */
SHARD_API int shard_mixture_plan(const struct shard_mixture *m, const struct shard_plan_options *o,
                                 struct shard_plan **out, struct shard_err *err);

/* The plan of what is left of epoch o->epoch after the segments
 * done[0..count) (shardkit/dataset.h, "The rest of an epoch"). */
SHARD_API int shard_mixture_plan_resumed(const struct shard_mixture *m,
                                         const struct shard_plan_options *o,
                                         const struct shard_plan_segment *done, size_t count,
                                         struct shard_plan **out, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif
