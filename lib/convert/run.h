/* run.h - what the files of one shardify run share (private).
 *
 * A run goes through phases, each in its own file:
 *   shardify.c          the run itself: options, sources, threads, the
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
#include "util/budget.h"

#define SPOOL_FILE "spool"
/* By archive: the archives' lines so far, in the work directory. */
#define SK_ARCHIVES_WORK "archives"
/* Six-digit shard numbers, shared out among the parts (parts.c). */
#define SK_SHARD_NAMES 1000000u

/* What the spool phase learned about one archive entry. */
struct spooled {
    uint64_t offset; /* payload position in the spool file */
    uint64_t len;
    uint32_t width;
    uint32_t height;
    uint32_t channels; /* the stored image's form */
    uint32_t depth;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    char *reason;              /* non-NULL: rejected */
    char *warning;             /* non-NULL: the decoder warning it was accepted despite */
    struct sk_placement place; /* where its pixels went: its boxes and masks follow */
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
    uint32_t channels; /* the stored image's form */
    uint32_t depth;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    uint64_t too_large;
    const char *problem; /* archive entry without bytes: why (points into `why`) */
    int link_only;       /* archive hard link without data: resolved after the pass */
    struct shard_err why;
    char warning[SHARD_ERRMSG_SIZE]; /* ok: "" or the decoder warning it was accepted despite */
    int hashed;                      /* source_* already computed from `input` */
    uint64_t held;                   /* spool: the budget's bytes its input holds */
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
    struct sk_remote_archives *remote; /* an http(s) SRC: its archives, or NULL */
    struct sk_source_root root;        /* a directory or an S3 prefix (not an archive) */
    struct sk_prefetch *prefetch;      /* an S3 prefix: its files fetched ahead (convert) */
    struct sk_archive *ar;
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
    char *split_src;                    /* --split: SRC/NAME, the run's src (malloc'd) */
    struct shard_keylist split_classes; /* --split: the classes of the other splits */
    struct sk_key_selection *selection; /* --keys, or NULL */
    struct shard_field_class *classes;  /* --classes: the fixed list, by id (= position) */
    size_t class_count;
    uint64_t label_rows;           /* of a CSV label file */
    uint64_t label_rows_unmatched; /* ... naming no candidate */
    struct spooled *spooled;       /* archive only, per candidate */
    size_t spooled_cap;
    struct spooled_sidecar *spooled_sidecars; /* archive only, per sidecar file */
    size_t spooled_sidecars_cap;
    int spool_fd;
    uint64_t spool_bytes;
    char *spool_path;
    struct record_builder **builders;
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
    /* by archive (by_archive.c) */
    int by_archive;
    int names_only;               /* the labels' pass: spool names and sidecars, convert nothing */
    uint64_t pos_base;            /* the assembler's position of order position 0 */
    struct label_set *label_set;  /* every archive's names, numbered (order.c) */
    struct shard_keylist orphans; /* the sidecar orphans of the archives done */
    size_t archive_first;         /* the run's (or part's) archives: [first, end) */
    size_t archive_end;
    int archives_fd; /* the archives' lines so far, in the work dir */
    uint64_t archives_lines;
    uint64_t candidates_total;              /* of the archives done */
    uint64_t folder_ignored;                /* files of the folder that are no archive */
    struct sk_prev_archives *prev_archives; /* incremental by archive, or NULL */
    struct sk_budget budget;                /* the source bytes the slots hold (spool.c, convert) */
    uint64_t next_pos; /* the next position convert consumes (atomic: read by the threads) */
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
/* A slot consumed: what it held back to the budget, and a buffer grown for
 * a large file let go, so that memory follows what is held, not what was. */
void sk_run_release_slot(struct run *r, struct slot *s);
/* The slots as the void pointers sk_pipeline_run takes (malloc'd). */
void **sk_run_slot_pointers(struct run *r, struct shard_err *err);
/* A sidecar file of the run's source (sk_sidecar_read_fn; ctx is the run):
 * of a directory or an S3 prefix, or from an archive's spool. */
int sk_run_read_sidecar(void *ctx, size_t file, const char *key, uint64_t max_bytes,
                        struct shard_buf *buf, int *fatal, struct shard_err *err);

/* spool.c: read the archive once, converting into the spool. */
int sk_run_spool_archive(struct run *r, struct shard_err *err);
/* One archive at `path` into the spool, its keys prefixed with `prefix` and
 * '/' (NULL: none), after the candidates already there. */
int sk_run_spool_one(struct run *r, const char *path, const char *prefix, struct shard_err *err);
/* Forget the candidates spooled (a directory of archives by archive: the
 * next archive's take their places): keys, refusals, spool tables, the spool
 * file's bytes. */
void sk_run_spool_reset(struct run *r);

/* An archive's line in archives.jsonl (manifests/FORMAT.md). */
struct sk_archive_line {
    uint64_t bytes;
    uint64_t xxh3;
    uint64_t candidates;
    uint64_t samples;
    uint64_t rejected;
    uint64_t ignored;
};

/* archive_paths.c: an http(s) SRC's archives, expanded and checked (the
 * run's archive_names); the local path of archive k of the run's folder
 * (SRC/NAME, or archive k fetched into the work directory), released with
 * sk_run_archive_done (a fetched one removed); its size (0 when a server did
 * not tell; UINT64_MAX when not found; dir_fd: SRC opened, or -1). */
int sk_run_open_remote(struct run *r, struct shard_err *err);
int sk_run_archive_path(struct run *r, size_t k, char **path, struct shard_err *err);
void sk_run_archive_done(struct run *r, char *path);
uint64_t sk_run_archive_size(const struct run *r, size_t k, int dir_fd);

/* by_archive.c: a directory of archives stored by archive (config.order
 * "archive"): each archive read, ordered and converted before the next, the
 * run's (or its part's) archives only.  Leaves the run as convert() does,
 * ready to publish (the archives' list in the work directory). */
int sk_run_by_archive(struct run *r, struct shard_err *err);
/* Archive k is done: its line into the work directory's list. */
int sk_run_note_archive(struct run *r, size_t k, const struct sk_archive_line *a,
                        struct shard_err *err);

/* incremental_archives.c: an incremental run by archive.  The previous
 * dataset (by archive, the same options) is read in step with the folder:
 * an archive it has with the same name, size and xxh3 gives its records
 * without being read (sk_prev_archives_take returns 1 once they are in the
 * shards); another is converted, its candidates counted against the
 * previous archive of that name (sk_prev_archives_note); an archive of the
 * previous dataset that the folder no longer has is removed.  Memory: the
 * previous dataset's list of archives and one archive's entries. */
struct sk_prev_archives;
int sk_prev_archives_open(struct run *r, const char *dst, struct shard_err *err);
void sk_prev_archives_free(struct sk_prev_archives *p); /* accepts NULL */
int sk_prev_archives_take(struct run *r, size_t k, const struct sk_archive_line *a,
                          struct shard_err *err);
int sk_prev_archives_finish(struct run *r, struct shard_err *err);
/* The lineage of a candidate converted from an archive of the folder. */
void sk_prev_archives_note(struct run *r, const char *key, size_t key_len, int has_source,
                           uint64_t source_bytes, uint64_t source_xxh3);
/* shardify.c: convert order positions [start_pos, end_pos) of the
 * candidates as they stand, as positions pos_base + p of the assembler (the
 * open shard is not finished). */
int sk_run_convert_range(struct run *r, struct shard_err *err);

/* order.c */
/* --classes FILE: its classes by id (*list, *count; list may be NULL when
 * only the description is wanted), checked (ids 0..N-1, names unique), and
 * the config's description of it ("file:<name>:<xxh3>", malloc'd). */
int sk_run_read_classes(const char *path, struct shard_field_class **list, size_t *count,
                        char **describe, struct shard_err *err);
int sk_run_assign_labels(struct run *r, struct shard_err *err);
/* By archive: the class and labels names of the candidates spooled, added
 * to r->label_set (copied: they outlive the archive); once every archive's
 * are in, sk_run_labels_number numbers them as sk_run_assign_labels does;
 * then sk_run_labels_apply labels the candidates of each archive
 * (r->label_of, and the `labels` fields' numbers) from the set.  With
 * --labels none no set is needed: every candidate is unlabeled. */
int sk_run_labels_collect(struct run *r, struct shard_err *err);
int sk_run_labels_number(struct run *r, struct shard_err *err);
int sk_run_labels_apply(struct run *r, struct shard_err *err);
void sk_run_labels_release(struct run *r);
/* By archive: the order of the candidates spooled (one archive): sorted,
 * later entries repeating a name rejected, shuffled with `seed`. */
int sk_run_order_archive(struct run *r, uint64_t seed, struct shard_err *err);
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
/* What makes PREV unusable before its manifest is read: where it is. */
int sk_prev_check_places(const char *prev, const char *src, const char *dst, struct shard_err *err);
/* Load PREV's manifest, of a source of `kind` ("directory", "archives"),
 * and hold it to `config` (labels described); its identity in *xxh3. */
int sk_prev_load_manifest(const char *prev, const struct shard_config *config, const char *kind,
                          struct shard_manifest *m, uint64_t *xxh3, struct shard_err *err);
/* PREV could not be opened (rc, why): an error, or with
 * --incremental-or-full a full rebuild that the lineage explains. */
int sk_prev_unusable(struct run *r, int rc, const struct shard_err *why, struct shard_err *err);
/* A thread's: the slot's input is read; hash it, and when the previous dataset
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
/* The slot of KEY in an open-addressed TABLE of CAP (a power of two) slots,
 * each 0 (empty) or 1 + the key's index in KEYS: the key's slot, or the
 * empty one where it would go (the previous runs' tables of incremental.c and
 * incremental_archives.c). */
uint64_t *sk_key_slot(const struct shard_keylist *keys, uint64_t *table, size_t cap,
                      const char *key, size_t len);
/* The part's ", \"part\": ..." member of the resume state ("" for a whole run). */
void sk_run_part_state(const struct run *r, char *out, size_t size);
/* The text of the state file an interrupted run must match to be resumed:
 * the config, the source kind, "COUNT_NAME": COUNT, "HASH_NAME": HASH in hex
 * and the part (sk_run_part_state); *out is the caller's to free. */
int sk_run_state_text(const struct run *r, const char *count_name, uint64_t count,
                      const char *hash_name, uint64_t hash, char **out, struct shard_err *err);
/* Write DST/SHARDIFY_PART_FILE (before the manifest: a published part has it). */
int sk_run_part_write(struct run *r, struct shard_err *err);

#endif
