/* verify_internal.h - what the passes of shard_verify() share (private).
 *
 * verify.c runs the passes in order and owns the problem list:
 *   verify.c          manifest, shard files (size, whole-file xxh3, footers)
 *   index_check.c     index.jsonl against footers and manifest, unique keys, counts
 *   deep.c            --deep: every record decompressed and decoded
 *   source.c          --source: identity with SRC, labels
 *   fidelity.c        --fidelity: the pipeline re-run on sampled sources
 *   visitation.c      --visitation: epoch plans visit every sample once
 *   fields.c          format version 2: the fields of index lines and records
 *   source_fields.c   --source: sidecar files, orphans and the annotation table
 * Passes run their loops on OpenMP threads; sk_verify_problem() may be called
 * from any of them. */
#ifndef SHARDKIT_VERIFY_INTERNAL_H
#define SHARDKIT_VERIFY_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "util/clock.h"
#include "shardkit/dataset.h"
#include "shardkit/format.h"
#include "shardkit/manifest.h"
#include "shardkit/source.h"
#include "shardkit/verify.h"

struct verify_run {
    const struct shard_verify_options *o;
    struct shard_verify_report *report;
    const char *dst;
    struct shard_dataset *ds;
    const struct shard_manifest *m;
    int threads;
    uint64_t samples;                    /* counts.samples */
    const struct shard_footer **footers; /* per shard; NULL when it could not be read */
    int all_footers;                     /* every footer was read */
    /* Per sample, from index.jsonl (0 when its line was missing or bad). */
    uint32_t *index_width;
    uint32_t *index_height;
    /* Fields (format version 2; fields.c): all 0/NULL in version 1. */
    uint32_t field_count;           /* declared fields */
    size_t field_bytes;             /* bytes of one sample's bit set */
    uint8_t *index_fields;          /* per sample, a bit per field its index line names */
    uint64_t *field_xxh3;           /* --deep: samples x field_count (see fields.c) */
    uint8_t *record_read;           /* --deep and --source: per sample, 1 when its
                                     * record's fields were read */
    uint64_t *record_field_samples; /* --deep: per field, records that hold it */
    uint64_t record_sidecars;       /* --deep: values of sidecar fields the records hold */
    pthread_mutex_t lock;           /* guards the report's problem list */
    size_t problems_cap;
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

/* ---- fields (format version 2; fields.c) ---------------------------------- */

/* Allocate the fields' per-sample state (nothing for a version 1 dataset).
 * 0 or SHARD_ENOMEM. */
int sk_verify_fields_begin(struct verify_run *v, struct shard_err *err);
void sk_verify_fields_end(struct verify_run *v);
/* Bit f of sample g's bit set. */
static inline int sk_verify_field_bit(const uint8_t *set, size_t bytes, uint64_t g, uint32_t f)
{
    return (set[g * bytes + f / 8] >> (f % 8)) & 1;
}
/* Index pass: the fields the line of sample g (line `line`) names; a
 * required field missing is a problem. */
void sk_verify_index_line_fields(struct verify_run *v, uint64_t g, const struct shard_sample *smp,
                                 uint64_t line);
/* Index pass, the whole index read: counts.fields and counts.sidecars
 * against what its lines name (per field; sidecar fields' values). */
void sk_verify_index_field_counts(struct verify_run *v, const uint64_t *field_samples,
                                  uint64_t sidecars);
/* Default pass: the manifest's orphans are sorted, each listed once, each
 * named like a sidecar of a declared suffix. */
void sk_verify_orphans_listed(struct verify_run *v);
/* Deep pass: record `g`, read as item `it`, against the manifest and its
 * index line.  Thread-safe. */
void sk_verify_record_fields(struct verify_run *v, uint64_t g, const struct shard_item *it);
/* Deep pass, every record read: counts.fields and counts.sidecars against
 * the records. */
void sk_verify_record_field_counts(struct verify_run *v);

/* ---- reading SRC (source.c) ---------------------------------------------------- */

struct sk_source_root;

/* The key of item i to read, or NULL for none. */
typedef const char *sk_verify_file_key(void *ctx, uint64_t i);
/* Item i's bytes, or why it could not be read (bytes NULL).  0, or
 * SHARD_ENOMEM to stop. */
typedef int sk_verify_file_got(void *ctx, uint64_t i, const struct shard_buf *bytes,
                               const char *why);
/* Read the files key(ctx, i), i in [0, count), of a directory or an S3
 * prefix, at most max_bytes each, on v's threads, handing each to got.  A
 * store that cannot be reached stops the reads: its first words are the
 * error (SHARD_ENET), not a file's fault.  What is read counts in the
 * report's source rate.  0, SHARD_ENET or SHARD_ENOMEM. */
int sk_verify_read_files(struct verify_run *v, const struct sk_source_root *root, uint64_t count,
                         uint64_t max_bytes, sk_verify_file_key *key, sk_verify_file_got *got,
                         void *ctx, struct shard_err *err);

/* The number of label `name` (as the manifest writes names) in m's labels,
 * sorted names or class numbers ("007" is class 7 there), or -1. */
int sk_verify_find_label(const struct shard_manifest *m, const char *name);

/* ---- --source for the fields (source_fields.c) -------------------------------- */

struct source_fields;
struct sk_archive_entry;

/* What --source needs for the fields of v's dataset: the sidecar suffixes
 * to collect, the annotation table (v->o->annotations, read now: one that
 * cannot be read is a problem).  *out is NULL for a dataset without fields
 * or a class taken from them.  0, SHARD_EINVAL (--annotations for a dataset
 * that reads no table) or SHARD_ENOMEM. */
int sk_source_fields_new(struct source_fields **out, struct verify_run *v, struct shard_err *err);
void sk_source_fields_free(struct source_fields *sf); /* accepts NULL */
/* The sidecar files for the scan to collect, or NULL. */
struct sk_sidecars *sk_source_fields_sidecars(struct source_fields *sf);
/* An archive's sidecar entry streaming past, with its bytes. */
int sk_source_fields_entry(struct source_fields *sf, const struct sk_archive_entry *e,
                           const struct shard_buf *bytes, struct shard_err *err);
/* The scan is over: match the sidecar files with the candidates (images
 * sharing a stem are added to `refused`, as shardify refuses them). */
int sk_source_fields_resolve(struct source_fields *sf, const struct shard_keylist *candidates,
                             struct shard_refusals *refused, struct shard_err *err);
/* A directory or S3 prefix: read and hash the sidecar files some candidate
 * has, in parallel.  SHARD_ENET (the store cannot be reached), SHARD_ENOMEM. */
int sk_source_fields_read(struct source_fields *sf, const struct sk_source_root *root,
                          const struct shard_keylist *candidates, struct shard_err *err);
/* Keep the fields index.jsonl names for sample number `sample`. */
int sk_source_fields_keep(struct source_fields *sf, uint64_t sample, const struct shard_sample *smp,
                          struct shard_err *err);
/* Check kept sample `sample` (key, shard, record), whose image is in SRC. */
void sk_source_fields_check(struct source_fields *sf, uint64_t sample, const char *key, size_t len,
                            uint32_t shard, uint64_t record);
/* The orphans and the annotation table's rows against the manifest. */
int sk_source_fields_finish(struct source_fields *sf, const struct shard_keylist *candidates,
                            struct shard_err *err);
/* 1 when the class comes from a sidecar or a column (the labeler gives
 * none): *why is then NULL, or why it cannot be derived. */
int sk_source_fields_has_class(const struct source_fields *sf, const char **why);
/* The class SRC gives the candidate key[0..len): 1 with the name, 0 none. */
int sk_source_fields_class(const struct source_fields *sf, const char *key, size_t len,
                           const char **name, size_t *name_len);

#endif
