/*
 * shardkit/merge.h - one dataset from the parts of a conversion in parts.
 *
 * `shardify --part I/N SRC DST` (shardify_options.part/parts) writes part I
 * into DST/parts/I-of-N.  shardify_merge() checks that every part 0..N-1 is
 * there, complete (its manifest published, every shard it lists present with
 * its size, its index matching its manifest), built from the same listing of
 * SRC with the same options by the same format version, and that the parts'
 * ranges tile the sample order; then it publishes DST/manifest.json and
 * DST/index.jsonl over all the parts' shards, which are hard-linked into DST
 * under their own names (no shard byte is rewritten).
 *
 * The merged dataset holds exactly the samples (keys, labels, source sizes
 * and hashes, pixels) and rejects of a single run with the same options, in
 * the same stored order, so sample indices, epoch plans and visitation are
 * those of the single run.  What differs is where the samples are stored:
 * the shard files (their names, count and boundaries follow the split), the
 * "shard" and "record" fields of index lines, and so the index's size and
 * hash in the manifest.  Everything else in manifest.json is equal.  The
 * merged manifest depends on the parts only: merging the same parts again
 * gives the same bytes.
 *
 * Tiers (shardkit/api.h): stable.
 */
#ifndef SHARDKIT_MERGE_H
#define SHARDKIT_MERGE_H

#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct shardify_merge_summary {
    uint32_t parts;
    uint64_t samples;
    uint64_t rejected;
    uint32_t shards;
    uint64_t bytes; /* shard bytes */
    double seconds;
    /* The form the dataset reads as (the widest of the parts'), and whether
     * its samples are of more than one form (format version 3). */
    uint32_t channels;
    uint32_t depth;
    int mixed;
};

/* Merge the parts in DST/parts into the dataset DST (a local directory).
 * Errors, each naming the part and what differs, with nothing published
 * (a manifest a previous merge published stays): SHARD_ENOTFOUND (no
 * DST/parts, a part missing), SHARD_EINVAL (parts of different counts),
 * SHARD_EINVAL also for a DST that is a URL (s3://: merge on a file system),
 * SHARD_EEXIST (a part incomplete: no manifest yet, a shard missing or of
 * another size), SHARD_EMISMATCH (options, listing, split or format version
 * other than part 0's), SHARD_ELOCKED (another merge of DST is running),
 * SHARD_EIO.  Hard links need DST/parts on DST's file system. */
SHARD_API int shardify_merge(const char *dst, struct shardify_merge_summary *summary,
                             struct shard_err *err);

#ifdef __cplusplus
}
#endif
#endif
