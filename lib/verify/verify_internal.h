/* verify_internal.h - what the passes of shard_verify() share (private).
 *
 * verify.c runs the passes in order and owns the problem list:
 *   verify.c            manifest, shard files (size, whole-file xxh3, footers)
 *   sk_verify_index.c      index.jsonl against footers and manifest, unique keys, counts
 *   sk_verify_deep.c       --deep: every record decompressed and decoded
 *   sk_verify_source.c     --source: identity with SRC, labels
 *   sk_verify_fidelity.c   --fidelity: the pipeline re-run on sampled sources
 *   visitation.c      --visitation: epoch plans visit every sample once
 * Passes run their loops on OpenMP threads; sk_verify_problem() may be called
 * from any of them. */
#ifndef SHARDKIT_VERIFY_INTERNAL_H
#define SHARDKIT_VERIFY_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "util/clock.h"
#include "shardkit/dataset.h"
#include "shardkit/format.h"
#include "shardkit/verify.h"

struct verify_run {
    const struct shard_verify_options *o;
    struct shard_verify_report *report;
    const char *dst;
    struct shard_dataset *ds;
    const struct shard_manifest *m;
    int threads;
    uint64_t samples;                      /* counts.samples */
    const struct shard_footer **footers;   /* per shard; NULL when it could not be read */
    int all_footers;                       /* every footer was read */
    /* Per sample, from index.jsonl (0 when its line was missing or bad). */
    uint32_t *index_width;
    uint32_t *index_height;
    pthread_mutex_t lock;                  /* guards the report's problem list */
    uint64_t problems_cap;
};

/* Add a problem (thread-safe).  shard/record are -1 when not applicable,
 * key may be NULL.  The message is printf-formatted and should name its
 * subject.  Returns 0, or SHARD_ENOMEM when the report cannot grow. */
int sk_verify_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                   int64_t record, const char *key, size_t key_len, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* The key of record r of shard s from its footer (NULL when the footer is
 * unavailable); *len receives its length. */
const char *sk_verify_footer_key(const struct verify_run *v, uint32_t s, uint64_t r, size_t *len);

/* The passes.  Each returns 0 or an error that stops verification (out of
 * memory, an unreadable SRC); what they find goes to sk_verify_problem(). */
int sk_verify_index(struct verify_run *v, struct shard_err *err);
int sk_verify_deep(struct verify_run *v, struct shard_err *err);
int sk_verify_source(struct verify_run *v, struct shard_err *err);
int sk_verify_fidelity(struct verify_run *v, struct shard_err *err);
int sk_verify_visitation(struct verify_run *v, struct shard_err *err);

#endif
