/* run.h - what the files of one shardify run share (private).
 *
 * A run goes through phases, each in its own file:
 *   shardify.c          the run itself: options, sources, workers, the
 *                       convert pipeline, cleanup
 *   spool.c             archives: the one streaming pass into a spool file
 *   order.c             labels, the sample order, and the state resume checks
 *   resume.c            adopting the finished shards of an interrupted run
 *   publish.c           index.jsonl, manifest.json, run.json, cleanup
 *   incremental.c       reusing the records of a previous dataset
 */
#ifndef SHARDKIT_CONVERT_RUN_H
#define SHARDKIT_CONVERT_RUN_H

#include <stdint.h>

#include "convert/assembler.h"
#include "convert/destination.h"
#include "convert/fields.h"
#include "record/record_build.h"
#include "shardkit/shardify.h"
#include "shardkit/source.h"
#include "source/source_internal.h"

#define SPOOL_FILE "spool"

/* What the spool phase learned about one archive entry. */
struct spooled {
    uint64_t offset; /* payload position in the spool file */
    uint64_t len;
    uint32_t width;
    uint32_t height;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    char *reason;  /* non-NULL: rejected */
    char *warning; /* non-NULL: the decoder warning it was accepted despite */
};

/* Where the spool phase put an archive's sidecar file (by the order the
 * entries came in: sk_sidecars_file_ordinal). */
struct spooled_sidecar {
    uint64_t offset;
    uint64_t len;
    uint64_t too_large; /* not read: larger than the limit */
    char *problem;      /* no bytes: why (a damaged entry, a hard link ...), or NULL */
};

struct slot {
    uint64_t pos;   /* order position (convert) */
    int is_sidecar; /* spool: the entry is a sidecar file, its ordinal is `cand` */
    uint64_t cand;  /* candidate index */
    int ok;         /* converted; else `why` says why it is rejected */
    int fatal;      /* an error that must stop the run (not the input's fault) */
    struct shard_buf input;
    struct shard_buf payload;
    struct shard_buf frame;
    uint64_t frame_xxh3;
    uint32_t width;
    uint32_t height;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    uint64_t too_large;
    const char *problem; /* archive entry without bytes: why (points into `why`) */
    int link_only;       /* archive hard link without data: resolved after the pass */
    struct shard_err why;
    char warning[SHARD_ERRMSG_SIZE]; /* ok: "" or the decoder warning it was accepted despite */
    int hashed;                      /* source_* already computed from `input` */
    int outcome;                     /* incremental: enum sk_reuse_outcome */
    struct sk_placement place;       /* where the converted image's pixels went */
    struct shard_field_set fields;   /* the sample's field area (a dataset with fields) */
    struct sk_field_result field_result;
    struct shard_buf sidecar; /* a sidecar file's bytes, reused */
    double t_read;            /* thread-seconds spent on this slot, by kind */
    double t_hash;
    double t_decode;
    double t_copy;
};

struct run {
    const struct shardify_options *o;
    struct shard_config config; /* o->config with labels described */
    int threads;
    double t0;
    const char *src;
    char *dst_path; /* DST, or a part's DST/parts/I-of-N (malloc'd) */
    int archive;
    char **archive_names; /* --archives: the archives in SRC, in key order */
    size_t archive_count;
    struct sk_source_root root;   /* a directory or an S3 prefix (not an archive) */
    struct sk_prefetch *prefetch; /* an S3 prefix: its files fetched ahead (convert) */
    struct shard_archive *ar;
    struct dst *dst;
    struct shard_labeler *labeler;
    struct sk_field_sources *fields; /* NULL: no fields, no sidecar or column class */
    uint64_t annotation_rows_unmatched;
    uint64_t coco_images_unmatched; /* images of the COCO file naming no candidate */
    uint64_t coco_annotations_unmatched;
    uint64_t boxes, boxes_dropped; /* stored, and left empty by the crop (samples only) */
    struct shard_keylist keys;     /* candidates: sorted (directory) or archive order */
    struct shard_refusals refused; /* directory candidates refused by the scan */
    struct shard_scan_stats stats;
    uint64_t n;
    uint64_t *order;    /* order[pos] = candidate */
    int32_t *label_of;  /* per candidate */
    char **label_names; /* sorted display names */
    uint32_t label_count;
    uint64_t label_rows;           /* of a CSV label file */
    uint64_t label_rows_unmatched; /* ... naming no candidate */
    struct spooled *spooled;       /* archive only, per candidate */
    uint64_t spooled_cap;
    struct spooled_sidecar *spooled_sidecars; /* archive only, per sidecar file */
    uint64_t spooled_sidecars_cap;
    int spool_fd;
    uint64_t spool_bytes;
    char *spool_path;
    struct record_builder **workers;
    struct slot *slots;
    size_t nslots;
    struct assembler *as;
    uint64_t start_pos;    /* first order position converted in this run */
    uint64_t end_pos;      /* one past the last position (r->n but for a part) */
    uint32_t shard_base;   /* number of the first shard (a part: see parts.c) */
    uint64_t *part_bounds; /* a part: the parts' first positions, parts + 1 of them */
    uint32_t reused_shards;
    uint64_t bytes_in;
    uint64_t done;
    double last_progress;
    const char *phase;
    struct shardify_timing timing; /* summed in consume (serialised) */
    struct sk_prev *prev;          /* incremental: the previous dataset, or NULL */
    int has_lineage;
    struct shard_lineage lineage;
    char full_rebuild[SHARD_ERRMSG_SIZE]; /* why an incremental run reused nothing, or "" */
};

/* The manifest's source.kind: "directory" (a directory or an S3 prefix),
 * "archive", or "archives" (a directory of them). */
#define SK_RUN_SOURCE_KIND(r) \
    ((r)->archive_count ? "archives" : (r)->archive ? "archive" : "directory")

/* shardify.c */
/* Report progress (at most every PROGRESS_INTERVAL unless `force`). */
void sk_run_progress(struct run *r, int force);
/* The summary's counts as they stand (all but the rejects and the time):
 * final once converting is done, how far the run got when it failed. */
void sk_run_summarize(const struct run *r, struct shardify_summary *s);
/* The slot's input is a source file's bytes: hash it (once: s->hashed). */
void sk_run_hash_input(struct slot *s);
/* The slot's input is a source file's bytes: hash it and convert it; on
 * failure the slot becomes a reject with the reason. */
void sk_run_convert_input(struct run *r, int thread, struct slot *s);
void sk_run_reject_slot(struct slot *s, const struct shard_err *e);
/* The slots as the void pointers sk_pipeline_run takes (malloc'd). */
void **sk_run_slot_pointers(struct run *r, struct shard_err *err);
/* A sidecar file of the run's source (sk_sidecar_read_fn; ctx is the run):
 * of a directory or an S3 prefix, or from an archive's spool. */
int sk_run_read_sidecar(void *ctx, size_t file, const char *key, uint64_t max_bytes,
                        struct shard_buf *buf, int *fatal, struct shard_err *err);

/* spool.c: read the archive once, converting into the spool. */
int sk_run_spool_archive(struct run *r, struct shard_err *err);

/* order.c */
int sk_run_assign_labels(struct run *r, struct shard_err *err);
int sk_run_make_order(struct run *r, struct shard_err *err);
/* After converting: labels asked for (--labels) that label no sample are an
 * error (so are labels that label no candidate, found by assign_labels). */
int sk_run_check_labels_used(const struct run *r, struct shard_err *err);
/* After converting: a run of no sample (an empty SRC, every candidate
 * rejected) is an error unless --allow-empty, and so is a declared field
 * that no sample has; a part is checked by its merge. */
int sk_run_check_published(const struct run *r, struct shard_err *err);
/* Fresh run: record the order's state.  Resume: it must match (*resuming set). */
int sk_run_check_state(struct run *r, int *resuming, struct shard_err *err);

/* resume.c: keep the finished shards of an interrupted run that
 * still check out; sets r->start_pos and r->reused_shards. */
int sk_run_adopt_finished(struct run *r, struct shard_err *err);

/* incremental.c: the previous dataset of an incremental run. */
enum sk_reuse_outcome {
    SK_REUSE_NONE = 0,    /* converted (or rejected) from its source */
    SK_REUSE_COPIED,      /* the previous record, copied as bytes */
    SK_REUSE_RELABELED,   /* the previous payload in a new frame (label number moved) */
    SK_REUSE_REFIELDED,   /* the previous payload in a new frame with the fields of now
                           * (a sidecar or a label number in a field changed) */
    SK_REUSE_REJECTED,    /* the previous reject, repeated */
    SK_REUSE_RECONVERTED, /* unchanged, but the previous record was damaged */
    SK_REUSE_ADOPTED,     /* in a finished shard a resumed run kept: what became of it
                           * is worked out again (so the lineage is an uninterrupted run's) */
};
/* Open o->incremental for run r (config.labels described), before DST is
 * opened: PREV may not be `dst` itself.  With o->incremental_or_full, a
 * previous dataset that cannot serve makes a full rebuild (r->full_rebuild
 * says why) instead of an error. */
int sk_run_open_previous(struct run *r, const char *dst, struct shard_err *err);
void sk_run_close_previous(struct run *r);
/* Worker: the slot's input is read; hash it, and when the previous dataset
 * has this key with the same bytes, take its record (or reject) into the
 * slot and return 1; else 0 (convert it; s->outcome may say why). */
int sk_run_reuse(struct run *r, int thread, struct slot *s, const char *key, size_t key_len);
/* Count one candidate in the lineage (serialised: consume, or adoption of
 * a resumed run's journal). */
void sk_run_note_candidate(struct run *r, const char *key, size_t key_len, int32_t label,
                           int has_source, uint64_t source_bytes, uint64_t source_xxh3,
                           const struct shard_field_source *fields, uint32_t field_count,
                           int outcome);
/* After converting: removed = the previous candidates not seen. */
void sk_run_finish_lineage(struct run *r);

/* publish.c: index, manifest, run.json, then remove the work dir. */
int sk_run_publish(struct run *r, struct shardify_summary *sum, struct shard_err *err);
/* The order of a manifest's rejects (qsort): by key, then reason. */
int sk_run_compare_rejects(const void *pa, const void *pb);

/* parts.c: a conversion in parts (o->parts > 0). */
/* r->dst_path: DST/parts/I-of-N for a part, else a copy of dst.  A part of
 * an archive SRC is refused (SHARD_EINVAL): it is read in one pass. */
int sk_run_part_dst(struct run *r, const char *dst, struct shard_err *err);
/* Once the order is known: this part's range of it, balanced by source
 * bytes (sets start_pos, end_pos, part_bounds), and its shard numbers. */
int sk_run_part_setup(struct run *r, struct shard_err *err);
/* Split n files of these weights into `parts` contiguous ranges:
 * bounds[0..parts] (bounds[0] = 0, bounds[parts] = n), part I being
 * [bounds[I], bounds[I+1]).  A file goes to the part in whose share of the
 * total its middle lies, so each bound is within half a file of its ideal
 * place; a part may be empty (fewer files than parts, or one large file). */
void sk_part_bounds(const uint64_t *weights, uint64_t n, uint32_t parts, uint64_t *bounds);
/* The part's ", \"part\": ..." member of the resume state ("" for a whole run). */
void sk_run_part_state(const struct run *r, char *out, size_t size);
/* Write DST/SHARDIFY_PART_FILE (before the manifest: a published part has it). */
int sk_run_part_write(struct run *r, struct shard_err *err);

#endif
