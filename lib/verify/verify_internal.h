/* verify_internal.h - what the passes of shard_verify() share (private).
 *
 * The default pass and --deep walk a share of the shards (all of them, or a
 * part's: shard_verify_part) in windows of a few shards, so that memory
 * follows the window, not the dataset; what only the whole can tell is
 * settled afterwards by the combine, the same code for a whole check and
 * for parts:
 *   verify.c          the problem list, the run of a whole check
 *   share.c           the walk of a share: shard files (size, whole-file xxh3,
 *                     footers), labels, and each window's index lines and records
 *   index_check.c     the index lines of a share against the footers: order,
 *                     records no line names, fields, what the reports describe
 *   keys_check.c      key tables (content, order, hashes) and unique keys
 *   combine.c         the parts' findings into one report
 *   result.c          a part's result file
 *   tally.c           distinct values counted (shard_tally)
 *   deep.c            --deep: every record of a window decompressed and decoded
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

struct fetch_file;
struct sk_index_walk;
struct sk_key_ref;
struct verify_run;

/* Where a message names an index line by number: a part that reads an
 * index file from its middle does not know how many lines come before, so
 * the message holds SK_LINE_MARK where the number goes and the problem
 * says which line it is; the combine, which knows every part's line
 * counts, writes the number in. */
#define SK_LINE_MARK "\x01"

/* A line of index file `file`: the line-th (0-based) that part `part` read
 * of it. */
struct sk_line_ref {
    uint32_t part;
    uint32_t file;
    uint64_t line;
};

/* A problem as a pass finds it. */
struct sk_problem {
    struct shard_problem p; /* its message holds SK_LINE_MARK when `has_line` */
    int has_line;
    struct sk_line_ref at;
};

/* Distinct values counted (tally.c): a hash table, made a shard_tally for
 * the report.  Rounds past SHARD_TALLY_MAX values, or with `no_rounding`
 * counts the newcomers in `others`. */
struct sk_tally {
    uint64_t *slots; /* value + 1 (0: empty), then its count: 2 words a slot */
    size_t cap;      /* slots, a power of two */
    size_t used;
    uint64_t total, min, max, others;
    uint32_t shift;
    int no_rounding;
};
void sk_tally_init(struct sk_tally *t, int no_rounding);
void sk_tally_release(struct sk_tally *t); /* accepts NULL */
/* Count value v `n` times.  0 or SHARD_ENOMEM. */
int sk_tally_add(struct sk_tally *t, uint64_t v, uint64_t n);
/* Add every value of `from` (as counted there) to t. */
int sk_tally_merge(struct sk_tally *t, const struct sk_tally *from);
/* The tally `from` describes, into t (empty, of its kind): its result file's. */
int sk_tally_restore(struct sk_tally *t, const struct shard_tally *from);
/* The report's form: values ascending (out is released first). */
int sk_tally_export(const struct sk_tally *t, struct shard_tally *out);
/* Visit each (value, count) of t in no particular order. */
int sk_tally_each(const struct sk_tally *t, int (*fn)(void *ctx, uint64_t v, uint64_t n),
                  void *ctx);
void sk_shard_tally_release(struct shard_tally *t); /* accepts NULL */

/* A record of the share no line a part read in its window named: settled by
 * the combine, which drops it when some stray line names it. */
struct sk_uncovered {
    uint64_t g;    /* its sample index */
    int32_t label; /* the footer's */
    int have_key;  /* the footer could be read */
    char *key;     /* the footer's: key_len bytes + NUL */
    size_t key_len;
};

/* A line that named a record outside the window its part held as it read
 * it (out of order, or another part's record). */
struct sk_stray {
    uint64_t g;
    struct sk_line_ref at;
    int32_t label;
    char *key; /* the line's: key_len bytes + NUL */
    size_t key_len;
};

/* A part's reading of index file `file`: whole lines [start, end). */
struct sk_segment {
    uint64_t start, end;
    uint64_t lines;     /* every line, bad ones too */
    uint64_t bad_lines; /* lines that are no sample */
    uint64_t key_sum;   /* keys_check.c: each line's key and number mixed, from 0 at start */
    int complete;       /* read to `end` */
};

/* A part's reading of a key table: its entries [start, end), those whose
 * hash is in the part's range. */
struct sk_table_range {
    uint64_t count; /* its entries, as its header says */
    uint64_t start, end;
    uint64_t sum; /* keys_check.c: each entry mixed, as the lines' key_sum */
    int usable;   /* its header is a key table's, its size that of its count */
    int sorted;   /* [start, end) sorted by hash and line, every hash in range */
};

/* The first line of a part that names a record (the combine holds it to the
 * previous part's last). */
struct sk_first_line {
    int have;
    uint64_t g;
    struct sk_line_ref at;
    char *key; /* the line's */
    size_t key_len;
};

/* What one part of a check found that only every part together settles
 * (the whole check is the part 0 of 1). */
struct sk_part {
    uint32_t part, parts;
    uint32_t field_count;            /* the dataset's declared fields */
    uint32_t first_shard, end_shard; /* its share [first_shard, end_shard) */
    uint64_t hash_lo, hash_hi;       /* its key hashes [hash_lo, hash_hi]; inclusive */
    int deep;
    uint64_t manifest_xxh3;
    double seconds;
    struct shard_verify_rate hash_rate, deep_rate;
    /* footers */
    uint64_t *label_shards; /* per label, then unlabeled: the footers' labels */
    int all_footers;        /* every footer of the share was read */
    uint32_t shards_sized;
    struct sk_tally record_bytes;
    /* index lines */
    struct sk_segment *segments; /* per index file (start == end: none read) */
    uint64_t warned;
    uint64_t *field_lines; /* per declared field */
    uint64_t sidecars;
    struct sk_first_line first;
    int have_last;
    uint64_t last_g; /* the last line's record */
    struct sk_uncovered *uncovered;
    size_t uncovered_count, uncovered_cap;
    struct sk_stray *strays;
    size_t stray_count, stray_cap;
    uint64_t lost; /* uncovered records and strays past SHARD_VERIFY_MAX_PROBLEMS */
    struct sk_tally dimensions;
    struct sk_tally *text_lengths; /* per declared field */
    struct shard_warned_sample *warned_samples;
    size_t warned_count;
    /* --deep */
    uint64_t *record_field_samples; /* per declared field: the records holding it */
    uint64_t record_sidecars;
    int deep_complete;                  /* every record of the share was read */
    struct shard_target_tally *targets; /* what the BOXES and MASK values hold (counts only) */
    uint32_t target_count;
    /* key tables, per index file */
    struct sk_table_range *tables;
};

/* *p empty, with room for what a part of v's dataset counts.  0 or
 * SHARD_ENOMEM (release it then too). */
int sk_part_alloc(struct verify_run *v, struct sk_part *p);
/* A new part `part` of v->parts (v's shares planned), empty.  0 or
 * SHARD_ENOMEM. */
int sk_verify_part_new(struct verify_run *v, uint32_t part, struct sk_part **out);
void sk_part_release(struct sk_part *p); /* accepts NULL; frees what p holds, not p */

struct verify_run {
    const struct shard_verify_options *o;
    struct shard_verify_report *report;
    const char *dst;
    struct shard_dataset *ds;
    const struct shard_manifest *m;
    int threads;
    uint64_t samples;            /* the shards' samples */
    uint32_t index_files;        /* m->index_count, at least 1 */
    uint32_t *file_first;        /* index file k covers shards [file_first[k],
                                  * file_first[k + 1]) (index_files + 1) */
    int key_tables;              /* every index file has a key table */
    struct sk_part *part;        /* what the walk of the share gathers */
    uint32_t parts;              /* the check's parts (1: a whole check) */
    uint32_t *share_starts;      /* part i's shards [share_starts[i],
                                  * share_starts[i + 1]) (parts + 1) */
    struct sk_index_walk *walk;  /* index_check.c's reading of the share */
    struct sk_key_ref *key_refs; /* legacy datasets: every key's (xxh3, sample) */
    size_t key_ref_count, key_ref_cap;
    uint64_t *line_bases;        /* the combine's: lines before part i's of file k,
                                  * [i * index_files + k] */
    uint32_t demand[2];          /* shards opened for a key outside the window
                                  * (sk_verify_key_of), or SK_NO_SHARD */
    struct sk_problem *problems; /* what the passes found */
    size_t problem_count, problems_cap;
    uint64_t problems_not_kept;
    /* The window of the share being walked: shards [window_start,
     * window_end), samples [window_first, window_first + window_samples);
     * the per-sample arrays below hold window_cap samples. */
    uint32_t window_start, window_end;
    uint64_t window_first, window_samples, window_cap;
    const struct shard_footer **footers; /* per shard: the footer, in the window; NULL
                                          * outside it or when it could not be read */
    /* Per sample of the window, from its index line (0 when no line named it). */
    uint8_t *index_hits; /* lines naming it (at most 255) */
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
    pthread_mutex_t lock;           /* guards the problem list */
};

/* Sample g's slot in the window's arrays, and whether it is in the window. */
static inline int sk_verify_in_window(const struct verify_run *v, uint64_t g)
{
    return g >= v->window_first && g - v->window_first < v->window_samples;
}
static inline uint64_t sk_verify_slot(const struct verify_run *v, uint64_t g)
{
    return g - v->window_first;
}

/* Add a problem (thread-safe).  shard/record are -1 when not applicable,
 * key may be NULL.  The message is printf-formatted and should name its
 * subject.  Returns 0, or SHARD_ENOMEM when the report cannot grow. */
int sk_verify_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                      int64_t record, const char *key, size_t key_len, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* The same about index line `at` (the message holds SK_LINE_MARK where its
 * number goes). */
int sk_verify_line_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                           int64_t record, const char *key, size_t key_len,
                           const struct sk_line_ref *at, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

/* The key of record r of shard s from its footer in the window (NULL when
 * the shard is not in the window or its footer could not be read); *len
 * receives its length. */
const char *sk_verify_footer_key(const struct verify_run *v, uint32_t s, uint64_t r, size_t *len);
/* The key of sample g from its shard's footer, read again when the shard is
 * not in the window (and let go later): a malloc'd copy (*len bytes + NUL),
 * or NULL when the footer cannot be read or out of memory.  Not while a
 * window is walked. */
char *sk_verify_key_of(struct verify_run *v, uint64_t g, size_t *len);
#define SK_NO_SHARD UINT32_MAX
/* Let go of the shards sk_verify_key_of opened. */
void sk_verify_demand_release(struct verify_run *v);

/* Add (a copy of) a sample stored despite a warning to *list, of *count,
 * unless SHARD_VERIFY_WARNED_LISTED are there.  0 or SHARD_ENOMEM. */
int sk_verify_keep_warned(struct shard_warned_sample **list, size_t *count, const char *key,
                          size_t key_len, const char *warning);

/* DST's file `name` (a shard's when shard >= 0), of `bytes` with `xxh3`,
 * against the manifest's want_bytes and want_xxh3: a problem of `check`
 * for each that differs. */
void sk_verify_identity(struct verify_run *v, enum shard_check check, int64_t shard,
                        const char *name, uint64_t bytes, uint64_t xxh3, uint64_t want_bytes,
                        uint64_t want_xxh3);
/* The same, DST's file read whole and hashed (through the node-local cache
 * for a remote dataset's shards); a file missing or that cannot be read is
 * a problem too.  0 when it was hashed (*hashed: its bytes), else the
 * reason it was not. */
int sk_verify_hash_file(struct verify_run *v, enum shard_check check, int64_t shard,
                        const char *name, uint64_t want_bytes, uint64_t want_xxh3,
                        uint64_t *hashed);

/* The index file holding shard s's lines (by the manifest), and its name. */
uint32_t sk_verify_file_of(const struct verify_run *v, uint32_t s);
const char *sk_verify_index_name(const struct verify_run *v, uint32_t s);

/* ---- the walk of a share (share.c, index_check.c, keys_check.c) ------------- */

/* Check the shards of v->part's share, window by window: files, footers,
 * the index lines naming them, with --deep their records; then the part's
 * key hashes and the whole files it hashes.  0 or an error that stops the
 * check (out of memory). */
int sk_verify_share(struct verify_run *v, struct shard_err *err);

/* Index lines (index_check.c): before the first window, where the share's
 * lines are in each index file; for each window, the lines up to its end;
 * after the last, the rest of the share's lines.  window_end() then lists
 * the window's records no line named. */
int sk_verify_index_begin(struct verify_run *v, struct shard_err *err);
int sk_verify_index_window(struct verify_run *v, struct shard_err *err);
int sk_verify_index_window_end(struct verify_run *v, struct shard_err *err);
int sk_verify_index_end(struct verify_run *v, struct shard_err *err);
void sk_verify_index_close(struct verify_run *v);
/* Split the shards into v->parts shares balanced by bytes: part i's are
 * [share_starts[i], share_starts[i + 1]).  0 or SHARD_ENOMEM. */
int sk_verify_plan_shares(struct verify_run *v, uint32_t parts, struct shard_err *err);
/* The part whose share holds shard s (the last part for s == shard count). */
uint32_t sk_verify_share_of(const struct verify_run *v, uint32_t s);
/* Whether part `part` hashes index file k, or its key table, whole (one
 * part hashes each). */
int sk_verify_hashes_index(const struct verify_run *v, uint32_t part, uint32_t k);
int sk_verify_hashes_table(const struct verify_run *v, uint32_t part, uint32_t k);
/* Line `at` names record g, not after the previous line's. */
void sk_verify_out_of_order(struct verify_run *v, const struct sk_line_ref *at, uint64_t g,
                            const char *key, size_t len);
/* Line `at` (key line_key, label line_label) names record g, whose key and
 * label are key and label: a problem when they differ. */
void sk_verify_line_against_record(struct verify_run *v, uint64_t g, const char *key, size_t len,
                                   int32_t label, const struct sk_line_ref *at,
                                   const char *line_key, size_t line_len, int32_t line_label);
/* No line names record g (key NULL: its footer could not be read). */
void sk_verify_not_in_index(struct verify_run *v, uint64_t g, const char *key, size_t len);

/* Key tables and unique keys (keys_check.c). */
/* What a key table must hold is summed without order, in the field of
 * integers modulo 2^61 - 1: the term of the key hash h on line L is
 * f(h) * X^L (f a mix of h).  A segment starts its lines at X^0; the
 * combine shifts its sum by the lines before it (sum * X^n). */
uint64_t sk_keys_term(uint64_t hash, uint64_t x_power);
uint64_t sk_keys_next_power(uint64_t x_power); /* x_power * X */
uint64_t sk_keys_add(uint64_t a, uint64_t b);
uint64_t sk_keys_shift(uint64_t sum, uint64_t n);
/* The part's range of key hashes. */
void sk_keys_hash_range(uint32_t part, uint32_t parts, uint64_t *lo, uint64_t *hi);
/* Legacy datasets (no key tables): each window's keys collected, then
 * sorted and compared at the end (16 bytes a sample). */
int sk_verify_keys_collect(struct verify_run *v, struct shard_err *err);
/* The part's key tables: its hash range read in every table (order, content
 * sums, duplicate keys), the tables it hashes whole; or the collected keys'
 * duplicates. */
int sk_verify_keys(struct verify_run *v, struct shard_err *err);

/* The combine (combine.c): settle what every part of v->m's check found,
 * parts[0..parts) (v->problems holds their problems), into v->report. */
/* What --deep counted of the fields (v's, and the report's targets) moves
 * into v->part, and is summed back from every part by the combine. */
int sk_verify_part_take_deep(struct verify_run *v);
int sk_verify_combine_parts(struct verify_run *v, struct sk_part *parts, uint32_t count,
                            struct shard_err *err);
/* Turn v->problems into the report's, line numbers written in (`lines` per
 * part and file, or NULL: the whole check's), sorted. */
int sk_verify_finish_problems(struct verify_run *v, const uint64_t *line_bases,
                              struct shard_err *err);

/* Result files (result.c). */
int sk_verify_result_write(struct verify_run *v, const char *path, struct shard_err *err);
/* Read result `path` into *p and its problems into v->problems. */
int sk_verify_result_read(struct verify_run *v, const char *path, struct sk_part *p,
                          struct shard_err *err);

/* The passes.  Each returns 0 or an error that stops verification (out of
 * memory, an unreadable SRC); what they find goes to sk_verify_problem(). */
int sk_verify_deep(struct verify_run *v, struct shard_err *err);
int sk_verify_source(struct verify_run *v, struct shard_err *err);
int sk_verify_fidelity(struct verify_run *v, struct shard_err *err);
int sk_verify_visitation(struct verify_run *v, struct shard_err *err);

/* ---- fields (format version 2; fields.c) ---------------------------------- */

/* Allocate the fields' per-sample state (nothing for a version 1 dataset).
 * 0 or SHARD_ENOMEM. */
int sk_verify_fields_begin(struct verify_run *v, struct shard_err *err);
void sk_verify_fields_end(struct verify_run *v);
/* Bit f of the bit set in slot g. */
static inline int sk_verify_field_bit(const uint8_t *set, size_t bytes, uint64_t g, uint32_t f)
{
    return (set[g * bytes + f / 8] >> (f % 8)) & 1;
}
/* Index pass: the fields line `at`, naming sample g, names (kept for --deep
 * when g is in the window and no line named it before); a required field
 * missing is a problem. */
void sk_verify_index_line_fields(struct verify_run *v, uint64_t g, const struct shard_sample *smp,
                                 const struct sk_line_ref *at);
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
