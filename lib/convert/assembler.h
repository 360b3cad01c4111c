/* assembler.h - appending records to shards in sample order (private).
 *
 * The assembler receives every order position in order, each either a sample
 * (with its record frame) or a reject.  It starts a new shard when the next
 * record would take the current one past the target size (so a shard exceeds
 * the target only when a single record is larger than it), keeps each
 * shard's journal, and totals what the manifest needs. */
#ifndef SHARDKIT_ASSEMBLE_H
#define SHARDKIT_ASSEMBLE_H

#include "convert/destination.h"
#include "convert/journal.h"
#include "shardkit/manifest.h"

struct assembler;

int sk_assembler_new(struct assembler **out, struct dst *d, const struct shard_config *c,
                     uint32_t label_count, struct shard_err *err);
/* Number the shards from `base` on (a part of a conversion in parts), at
 * most `limit` of them, and expect order position `first` next. */
void sk_assembler_start_at(struct assembler *a, uint32_t base, uint32_t limit, uint64_t first);
/* Free; an open shard and journal are removed (they were never complete). */
void sk_assembler_free(struct assembler *a);

/* Take over finished shard `end->shard` of an interrupted run, with the
 * samples and rejects its journal lists (called in shard order before any new
 * position is added). */
int sk_assembler_adopt_sample(struct assembler *a, const struct shard_sample *s,
                              struct shard_err *err);
int sk_assembler_adopt_reject(struct assembler *a, struct shard_reject *r, struct shard_err *err);
int sk_assembler_adopt_end(struct assembler *a, const struct journal_end *end,
                           struct shard_err *err);

/* Append position `pos`: a sample (s: key, label, width, height, source_*;
 * its shard/record fields are assigned here) with its frame, or a reject
 * (ownership of r's strings passes to the assembler; r is zeroed). */
int sk_assembler_sample(struct assembler *a, uint64_t pos, struct shard_sample *s,
                        const uint8_t *frame, size_t frame_len, uint64_t frame_xxh3,
                        struct shard_err *err);
int sk_assembler_reject(struct assembler *a, uint64_t pos, struct shard_reject *r,
                        struct shard_err *err);

/* Close the open shard, if any.  Rejects after the last shard stay in memory. */
int sk_assembler_finish(struct assembler *a, struct shard_err *err);

/* Results, valid until sk_assembler_free.  take_rejects moves the reject array
 * out (caller frees each with shard_reject_release, then the array);
 * take_warned likewise the samples stored with a decoder warning, in stored
 * order (copies: key, warning, shard, record; shard_sample_release). */
const struct shard_manifest_shard *sk_assembler_shards(const struct assembler *a, uint32_t *count);
uint64_t sk_assembler_samples(const struct assembler *a);
uint64_t sk_assembler_unlabeled(const struct assembler *a);
/* The stored images' forms and sizes, over every sample counted. */
struct sk_stored_images {
    uint64_t forms[5][2];   /* samples by channels (1..4) and depth (8: 0, 16: 1) */
    uint32_t width, height; /* the first sample's size */
    int sizes_differ;       /* 1 when some sample has another */
};
const struct sk_stored_images *sk_assembler_stored(const struct assembler *a);
/* The widest of the forms st counted (3 and 8 when none); returns how many
 * forms it counted (more than 1: a mixed dataset). */
int sk_stored_images_form(const struct sk_stored_images *st, uint32_t *channels, uint32_t *depth);
/* Per declared field: the samples that have it; and the sidecar files
 * stored as fields. */
const uint64_t *sk_assembler_field_samples(const struct assembler *a);
uint64_t sk_assembler_sidecars(const struct assembler *a);
const uint64_t *sk_assembler_label_samples(const struct assembler *a);
uint64_t sk_assembler_bytes(const struct assembler *a);
struct shard_reject *sk_assembler_take_rejects(struct assembler *a, uint64_t *count);
/* The rejects so far, in stored order (owned by a). */
const struct shard_reject *sk_assembler_rejects(const struct assembler *a, uint64_t *count);
uint64_t sk_assembler_reject_count(const struct assembler *a);
uint64_t sk_assembler_warned(const struct assembler *a); /* samples with a warning */
struct shard_sample *sk_assembler_take_warned(struct assembler *a, uint64_t *count);

#endif
