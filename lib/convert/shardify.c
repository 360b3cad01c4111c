/* shardify.c - the conversion run: shardify_run() and its convert phase.
 *
 * Phases (see run.h for the files of the others):
 *   1. scan     list candidates (directory walk; for an archive, the spool
 *               phase reads it once, converting entries into a spool file)
 *   2. order    sort keys, label them, shuffle with the seed; record the
 *               order's hash in DST/.shardify/state.json
 *   3. resume   adopt finished shards of an interrupted run of the same order
 *   4. convert  the ordered pipeline: read, decode, resize, encode, frame on
 *               all threads; append to shards in sample order (here)
 *   5. publish  index.jsonl, then manifest.json, then remove .shardify
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "convert/pipeline.h"
#include "net/s3.h"
#include "convert/run.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "shardkit/format.h"
#include "shardx/shardx.h"

#define SLOTS_PER_THREAD 16
/* An S3 source's files: fetched this many at once, this many positions ahead. */
#define REMOTE_CONNECTIONS 16
#define REMOTE_AHEAD 64
/* A directory's files: opened and advised into the page cache by this many
 * threads, this many positions ahead per thread (a cold disk then reads
 * while the threads decode; see BENCHMARKS.md §1).  One adviser keeps up (an
 * open and an fadvise per file) and wakes the threads half as often as two. */
#define LOCAL_ADVISERS 1
#define LOCAL_AHEAD_PER_THREAD 32
#define PROGRESS_INTERVAL 0.1

void shardify_options_init(struct shardify_options *o)
{
    memset(o, 0, sizeof *o);
    shard_config_init(&o->config);
    /* a new dataset keeps each image's own form */
    o->config.channels = SHARD_PIXELS_AUTO;
    o->config.depth = SHARD_DEPTH_AUTO;
}

void shardify_summary_release(struct shardify_summary *s)
{
    if (!s)
        return;
    for (uint64_t i = 0; i < s->reject_count; i++)
        shard_reject_release(&s->rejects[i]);
    free(s->rejects);
    s->rejects = NULL;
    s->reject_count = 0;
    for (uint64_t i = 0; i < s->warning_count; i++)
        shard_sample_release(&s->warnings[i]);
    free(s->warnings);
    s->warnings = NULL;
    s->warning_count = 0;
    for (uint32_t i = 0; s->field_names && i < s->field_count; i++)
        free(s->field_names[i]);
    free(s->field_names);
    free(s->field_samples);
    s->field_names = NULL;
    s->field_samples = NULL;
    s->field_count = 0;
}

/* The fields part of the summary (copies: the run is freed first). */
static void summarize_fields(const struct run *r, struct shardify_summary *s)
{
    const struct shard_config *c = &r->config;
    if (!c->field_count || s->field_names)
        return;
    s->field_names = calloc(c->field_count, sizeof *s->field_names);
    s->field_samples = calloc(c->field_count, sizeof *s->field_samples);
    if (!s->field_names || !s->field_samples) {
        free(s->field_names);
        free(s->field_samples);
        s->field_names = NULL;
        s->field_samples = NULL;
        return; /* the summary goes without them */
    }
    s->field_count = c->field_count;
    const uint64_t *counts = r->as ? sk_assembler_field_samples(r->as) : NULL;
    for (uint32_t i = 0; i < c->field_count; i++) {
        s->field_names[i] = strdup(c->fields[i].name);
        s->field_samples[i] = counts ? counts[i] : 0;
    }
    s->sidecars = r->as ? sk_assembler_sidecars(r->as) : 0;
    s->orphans = sk_field_sources_orphan_count(r->fields);
    s->annotation_rows = sk_field_sources_table_rows(r->fields);
    s->annotation_rows_unmatched = r->annotation_rows_unmatched;
    s->coco_images = sk_field_sources_coco_images(r->fields);
    s->coco_images_unmatched = r->coco_images_unmatched;
    s->coco_annotations = sk_field_sources_coco_annotations(r->fields);
    s->coco_annotations_unmatched = r->coco_annotations_unmatched;
    s->boxes = r->boxes;
    s->boxes_dropped = r->boxes_dropped;
}

void sk_run_progress(struct run *r, int force)
{
    if (!r->o->progress)
        return;
    double t = sk_now_seconds();
    if (!force && t - r->last_progress < PROGRESS_INTERVAL)
        return;
    r->last_progress = t;
    /* a part counts its own range of the order */
    uint64_t first = r->part_bounds ? r->part_bounds[r->o->part] : 0;
    struct shardify_progress p = {
        .done = r->done - first,
        .total = (r->part_bounds ? r->end_pos : r->n) - first,
        .samples = r->as ? sk_assembler_samples(r->as) : 0,
        .rejected = r->as ? sk_assembler_reject_count(r->as) : 0,
        .bytes_out = r->as ? sk_assembler_bytes(r->as) : 0,
        .elapsed = t - r->t0,
        .phase = r->phase,
    };
    r->o->progress(&p, r->o->progress_user);
}

void sk_run_summarize(const struct run *r, struct shardify_summary *s)
{
    /* r->n once scanning or spooling is done; by archive, the archives done */
    s->candidates = r->by_archive ? r->candidates_total : r->keys.count;
    s->ignored = r->stats.ignored + r->stats.ignored_symlinks + r->stats.ignored_special;
    s->labels = r->label_count;
    s->label_rows = r->label_rows;
    s->label_rows_unmatched = r->label_rows_unmatched;
    s->reused_shards = r->reused_shards;
    s->bytes_in = r->bytes_in;
    s->threads = r->threads;
    s->timing = r->timing;
    s->has_lineage = r->has_lineage;
    s->lineage = r->lineage;
    if (r->lineage.full_rebuild) {
        snprintf(s->full_rebuild, sizeof s->full_rebuild, "%s", r->lineage.full_rebuild);
        s->lineage.full_rebuild = s->full_rebuild;
    }
    if (r->as) {
        s->samples = sk_assembler_samples(r->as);
        s->rejected = sk_assembler_reject_count(r->as);
        s->unlabeled = sk_assembler_unlabeled(r->as);
        s->warned = sk_assembler_warned(r->as);
        s->bytes_out = sk_assembler_bytes(r->as);
        sk_assembler_shards(r->as, &s->shards);
        const struct sk_stored_images *st = sk_assembler_stored(r->as);
        memcpy(s->pixel_forms, st->forms, sizeof s->pixel_forms);
        s->mixed = sk_stored_images_form(st, &s->channels, &s->depth) > 1;
    }
    summarize_fields(r, s);
}

static int validate(const struct shardify_options *o, struct shard_err *err)
{
    const struct shard_config *c = &o->config;
    if (c->size == 0)
        return shard_err_set(err, SHARD_EINVAL, "--size must be a positive number");
    if (c->quality < 1 || c->quality > 100)
        return shard_err_set(err, SHARD_EINVAL, "--quality must be within 1..100");
    if (c->zstd_level < SHARD_ZSTD_LEVEL_MIN || c->zstd_level > SHARD_ZSTD_LEVEL_MAX)
        return shard_err_set(err, SHARD_EINVAL,
                             "--zstd-level must be within %d..%d (0: the "
                             "codec's default)",
                             SHARD_ZSTD_LEVEL_MIN, SHARD_ZSTD_LEVEL_MAX);
    if (c->shard_size < SHARD_HEADER_BYTES + SHARD_TRAILER_BYTES + 1024)
        return shard_err_set(err, SHARD_EINVAL, "--shard-size is too small");
    if (c->max_pixels == 0)
        return shard_err_set(err, SHARD_EINVAL, "--max-pixels must be positive");
    if (o->parts && o->incremental)
        return shard_err_set(err, SHARD_EINVAL, "a part cannot be converted incrementally");
    if (c->order == SHARD_ORDER_ARCHIVE && !o->archives)
        return shard_err_set(err, SHARD_EINVAL,
                             "the stored order by archive is for a folder of archives "
                             "(--archives)");
    return SHARD_OK;
}

/* ---- slots and builders ----------------------------------------------------- */

void sk_run_reject_slot(struct slot *s, const struct shard_err *e)
{
    s->ok = 0;
    s->why = *e;
}

static int make_builders(struct run *r, struct shard_err *err)
{
    r->builders = calloc((size_t)r->threads, sizeof *r->builders);
    r->nslots = (size_t)r->threads * SLOTS_PER_THREAD;
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (!r->builders || !r->slots)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (int i = 0; i < r->threads; i++) {
        int rc = sk_record_builder_new(&r->builders[i], &r->config, err);
        if (rc)
            return rc;
    }
    return SHARD_OK;
}

static void free_builders(struct run *r)
{
    for (int i = 0; r->builders && i < r->threads; i++)
        sk_record_builder_free(r->builders[i]);
    free(r->builders);
    for (size_t i = 0; r->slots && i < r->nslots; i++) {
        shard_buf_release(&r->slots[i].input);
        shard_buf_release(&r->slots[i].payload);
        shard_buf_release(&r->slots[i].frame);
        shard_field_set_release(&r->slots[i].fields);
        shard_buf_release(&r->slots[i].sidecar);
    }
    free(r->slots);
}

void sk_run_hash_input(struct slot *s)
{
    if (s->hashed)
        return;
    double t0 = sk_now_seconds();
    s->has_source = 1;
    s->source_bytes = s->input.len;
    s->source_xxh3 = XXH3_64bits(s->input.data, s->input.len);
    s->hashed = 1;
    s->t_hash += sk_now_seconds() - t0;
}

void sk_run_convert_input(struct run *r, int thread, struct slot *s)
{
    sk_run_hash_input(s);
    double t1 = sk_now_seconds();
    struct shard_err e;
    shard_err_clear(&e);
    struct shard_record_meta stored;
    if (sk_record_build(r->builders[thread], s->input.data, s->input.len, &s->payload, &stored,
                        s->warning, &s->place, &e) != 0) {
        sk_run_reject_slot(s, &e);
    } else {
        s->ok = 1;
        s->width = stored.width, s->height = stored.height;
        s->channels = stored.channels, s->depth = stored.depth;
    }
    s->t_decode += sk_now_seconds() - t1;
}

/* ---- convert ---------------------------------------------------------------- */

/* A slot's buffer larger than this is let go once consumed (an image is
 * rarely larger; a decompression bomb's entries are). */
#define SLOT_KEEP_BYTES (16u << 20)

void sk_run_release_slot(struct run *r, struct slot *s)
{
    sk_budget_give(&r->budget, s->held);
    s->held = 0;
    if (s->input.cap > SLOT_KEEP_BYTES)
        shard_buf_release(&s->input);
    if (s->payload.cap > SLOT_KEEP_BYTES)
        shard_buf_release(&s->payload);
}

struct next_pos {
    const struct run *r;
    uint64_t pos;
};

/* Whether position pos is the next the pipeline consumes. */
static int is_next(void *ctx)
{
    const struct next_pos *n = ctx;
    return n->pos == __atomic_load_n(&n->r->next_pos, __ATOMIC_ACQUIRE);
}

/* Whether order position pos is the next the pipeline consumes (the
 * read-ahead's question, sk_prefetch_budget). */
static int is_next_order(void *ctx, uint64_t pos)
{
    const struct run *r = ctx;
    return r->pos_base + pos == __atomic_load_n(&r->next_pos, __ATOMIC_ACQUIRE);
}

/* A source file of `size` bytes is about to be read into the slot: room
 * for it in the budget, which the next position to be consumed takes at
 * once (the others it waits for are consumed after it). */
static int hold_input(struct run *r, struct slot *s, uint64_t size)
{
    if (size > r->config.max_file_bytes) /* refused unread */
        return SHARD_OK;
    struct next_pos n = {r, s->pos};
    int rc = sk_budget_take(&r->budget, size, r->o->cancel, is_next, &n);
    if (!rc)
        s->held += size;
    return rc;
}

void **sk_run_slot_pointers(struct run *r, struct shard_err *err)
{
    void **slots = calloc(r->nslots, sizeof *slots);
    if (!slots) {
        shard_err_set(err, SHARD_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < r->nslots; i++)
        slots[i] = &r->slots[i];
    return slots;
}

/* ---- convert: the ordered pipeline ------------------------------------------ */

/* A sidecar file (sk_sidecar_read_fn): of a directory or an S3 prefix, or
 * from the spool of an archive. */
int sk_run_read_sidecar(void *ctx, size_t file, const char *key, uint64_t max_bytes,
                        struct shard_buf *buf, int *fatal, struct shard_err *err)
{
    const struct run *r = ctx;
    if (!r->archive) {
        int rc = sk_source_root_read(&r->root, key, max_bytes, buf, err);
        /* as for images: the store's failures are not the file's */
        *fatal = rc == SHARD_ENET || rc == SHARD_EINTR || rc == SHARD_ENOMEM;
        return rc;
    }
    size_t ordinal = sk_sidecars_file_ordinal(sk_field_sources_sidecars(r->fields), file);
    const struct spooled_sidecar *sp = &r->spooled_sidecars[ordinal];
    if (sp->problem)
        return shard_err_set(err, SHARD_EIO, "%s", sp->problem);
    uint64_t size = sp->too_large ? sp->too_large : sp->len;
    if (size > max_bytes)
        return shard_err_set(err, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                             (unsigned long long)size, (unsigned long long)max_bytes);
    buf->len = 0;
    int rc = shard_buf_reserve(buf, sp->len ? (size_t)sp->len : 1, err);
    *fatal = rc != 0;
    if (!rc && sp->len &&
        pread(r->spool_fd, buf->data, sp->len, (off_t)sp->offset) != (ssize_t)sp->len) {
        rc = shard_err_set(err, SHARD_EIO, "cannot read the spool '%s'", r->spool_path);
        *fatal = 1;
    }
    if (!rc)
        buf->len = (size_t)sp->len;
    return rc;
}

/* The slot's fields, once its image is read (and hashed): 0 with the field
 * area in s->fields, or the slot is a reject (or fatal: the store failed). */
static int build_fields(struct run *r, struct slot *s, const char *key, size_t key_len)
{
    if (!r->fields)
        return SHARD_OK;
    struct shard_err e;
    int rc = sk_field_sources_build(r->fields, s->cand, key, key_len,
                                    sk_field_sources_geometric(r->fields) ? &s->place : NULL,
                                    sk_run_read_sidecar, r, &s->sidecar, &s->fields,
                                    &s->field_result, &e);
    s->t_read += s->field_result.read_seconds;
    if (rc == SHARD_ECORRUPT)
        sk_run_reject_slot(s, &e);
    else if (rc) {
        s->why = e;
        s->fatal = rc;
    }
    return rc;
}

static int convert_claim(void *ctx, uint64_t pos, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    pos += r->start_pos;
    if (pos >= r->end_pos)
        return 0;
    s->pos = r->pos_base + pos;
    s->cand = r->order[pos];
    return 1;
}

/* The candidates convert_work rejects without opening them: read-ahead
 * must not open them either (a fifo would block, a link is never followed). */
static int never_open(void *ctx, uint64_t cand)
{
    struct run *r = ctx;
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, cand, &key_len);
    return key_len > SHARD_KEY_MAX || shard_refusals_find(&r->refused, key, key_len) != NULL;
}

/* A slot as convert_work receives it: nothing done yet. */
static void slot_reset(struct slot *s)
{
    s->ok = 0;
    s->fatal = 0;
    s->has_source = 0;
    s->hashed = 0;
    s->outcome = SK_REUSE_NONE;
    s->t_read = s->t_hash = s->t_decode = s->t_copy = 0;
    s->warning[0] = '\0';
    s->field_result.count = 0;
    s->field_result.bytes_read = 0;
}

/* An archive's candidate, converted when it was spooled: its payload read
 * back from the spool into s->payload.  1 when the record is to be framed,
 * 0 when the slot is done (a reject, or fatal). */
static int work_spooled(struct run *r, struct slot *s, const char *key, size_t key_len)
{
    const struct spooled *sp = &r->spooled[s->cand];
    struct shard_err e;
    shard_err_clear(&e);
    s->has_source = sp->has_source;
    s->source_bytes = sp->source_bytes;
    s->source_xxh3 = sp->source_xxh3;
    if (key_len > SHARD_KEY_MAX) { /* an archive's names have no length limit */
        shard_err_set(&e, SHARD_ELIMIT, "key is longer than %u bytes", SHARD_KEY_MAX);
        sk_run_reject_slot(s, &e);
        return 0;
    }
    if (sp->reason) {
        shard_err_set(&e, SHARD_ECORRUPT, "%s", sp->reason);
        sk_run_reject_slot(s, &e);
        return 0;
    }
    const char *refusal = shard_refusals_find(&r->refused, key, key_len);
    if (refusal) { /* images sharing a stem with sidecars declared */
        shard_err_set(&e, SHARD_EUNSUPPORTED, "%s", refusal);
        sk_run_reject_slot(s, &e);
        return 0;
    }
    s->place = sp->place; /* a boxes or mask field is placed where the pixels went */
    if (build_fields(r, s, key, key_len))
        return 0;
    s->width = sp->width;
    s->height = sp->height;
    s->channels = sp->channels;
    s->depth = sp->depth;
    if (sp->warning)
        snprintf(s->warning, sizeof s->warning, "%s", sp->warning);
    s->payload.len = 0;
    int rc = shard_buf_reserve(&s->payload, sp->len ? sp->len : 1, &e);
    ssize_t got = rc ? -1 : pread(r->spool_fd, s->payload.data, sp->len, (off_t)sp->offset);
    if (got != (ssize_t)sp->len) {
        shard_err_set(&s->why, SHARD_EIO, "cannot read the spool '%s'", r->spool_path);
        s->fatal = SHARD_EIO;
        return 0;
    }
    s->payload.len = sp->len;
    return 1;
}

/* A file's candidate (a directory or a store): read (or taken from the
 * read-ahead), hashed, then reused from the previous dataset or converted.
 * 1 when the record is to be framed, 0 when the slot is done. */
static int work_file(struct run *r, int thread, struct slot *s, const char *key, size_t key_len)
{
    struct shard_err e;
    shard_err_clear(&e);
    /* a prefetched position is taken whatever becomes of it */
    int fd = -1;
    int rc = r->prefetch ? sk_prefetch_take(r->prefetch, s->pos, &s->input, &fd, &s->held, &e)
                         : SHARD_OK;
    /* refused and over-long keys are never opened, not even ahead
     * (never_open): fd is -1 for them */
    const char *refusal = shard_refusals_find(&r->refused, key, key_len);
    if (refusal) { /* never opened: see shard_scan_dir */
        shard_err_set(&e, SHARD_EUNSUPPORTED, "%s", refusal);
        sk_run_reject_slot(s, &e);
        return 0;
    }
    if (key_len > SHARD_KEY_MAX) {
        shard_err_set(&e, SHARD_ELIMIT, "key is longer than %u bytes", SHARD_KEY_MAX);
        sk_run_reject_slot(s, &e);
        return 0;
    }
    double t0 = sk_now_seconds();
    struct stat st;
    int known = fd >= 0 && fstat(fd, &st) == 0;
    if (known && S_ISREG(st.st_mode) && hold_input(r, s, (uint64_t)st.st_size)) {
        close(fd);
        shard_err_set(&s->why, SHARD_EINTR, "interrupted");
        s->fatal = SHARD_EINTR;
        return 0;
    }
    if (fd >= 0) /* opened ahead (a directory): read it now, as its size was taken */
        rc = sk_source_file_read_stat(fd, known ? &st : NULL, r->config.max_file_bytes, &s->input,
                                      &e);
    else if (!r->prefetch)
        rc = sk_source_root_read(&r->root, key, r->config.max_file_bytes, &s->input, &e);
    s->t_read += sk_now_seconds() - t0;
    if (rc == SHARD_ENET || rc == SHARD_EINTR) {
        s->why = e; /* the store, not the file */
        s->fatal = rc;
        return 0;
    }
    if (rc) {
        sk_run_reject_slot(s, &e);
        return 0;
    }
    sk_run_hash_input(s); /* a reject for its fields still has its identity */
    /* boxes and masks follow the image: their fields once it is converted */
    int geometric = sk_field_sources_geometric(r->fields);
    if (!geometric && build_fields(r, s, key, key_len))
        return 0;
    if (r->prev && sk_run_reuse(r, thread, s, key, key_len))
        return 0; /* the previous dataset's record (or reject) */
    sk_run_convert_input(r, thread, s);
    return s->ok && !(geometric && build_fields(r, s, key, key_len));
}

/* The record of a converted slot: its payload and fields framed by the
 * thread's builder into s->frame; s->ok says it is ready. */
static void frame_slot(struct run *r, struct record_builder *w, struct slot *s, const char *key,
                       size_t key_len)
{
    struct shard_err e;
    s->ok = 0;
    double t0 = sk_now_seconds();
    struct shard_record_meta stored = {.width = s->width,
                                       .height = s->height,
                                       .channels = s->channels,
                                       .depth = s->depth};
    int rc = sk_record_build_frame(w, key, key_len, r->label_of[s->cand], &stored, s->payload.data,
                                   s->payload.len, r->fields ? &s->fields : NULL, &s->frame,
                                   &s->frame_xxh3, &e);
    s->t_decode += sk_now_seconds() - t0;
    if (rc) {
        s->why = e;
        s->fatal = rc;
        return;
    }
    s->ok = 1;
}

/* The pipeline's work on one position, on any thread: the slot ends framed
 * (ok), a reject, or fatal (the run stops). */
static void convert_work(void *ctx, int thread, void *slot)
{
    struct run *r = ctx;
    struct slot *s = slot;
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, s->cand, &key_len);
    slot_reset(s);
    int ready = r->archive ? work_spooled(r, s, key, key_len)
                           : work_file(r, thread, s, key, key_len);
    if (ready)
        frame_slot(r, r->builders[thread], s, key, key_len);
}

static int consume_slot(struct run *r, struct slot *s, struct shard_err *err)
{
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, s->cand, &key_len);
    int rc;
    if (s->fatal) {
        *err = s->why;
        return s->fatal;
    }
    if (!r->archive && s->has_source)
        r->bytes_in += s->source_bytes;
    if (!r->archive && r->fields) /* an archive's sidecars were counted when spooled */
        r->bytes_in += s->field_result.bytes_read;
    r->done++;
    r->timing.read += s->t_read;
    r->timing.hash += s->t_hash;
    r->timing.decode += s->t_decode;
    r->timing.copy += s->t_copy;
    sk_run_note_candidate(r, key, key_len, r->label_of[s->cand], s->has_source, s->source_bytes,
                          s->source_xxh3, s->field_result.sources, s->field_result.count,
                          s->outcome);
    if (s->ok) {
        struct shard_sample smp = {
            .key = (char *)key,
            .key_len = key_len,
            .label = r->label_of[s->cand],
            .width = s->width,
            .height = s->height,
            .channels = s->channels,
            .depth = s->depth,
            .source_bytes = s->source_bytes,
            .source_xxh3 = s->source_xxh3,
            .warning = s->warning[0] ? s->warning : NULL,
            .fields = r->fields ? s->field_result.sources : NULL,
            .field_count = r->fields ? s->field_result.count : 0,
        };
        if (r->fields) {
            r->boxes += s->field_result.boxes;
            r->boxes_dropped += s->field_result.boxes_dropped;
        }
        double t0 = sk_now_seconds();
        rc = sk_assembler_sample(r->as, s->pos, &smp, s->frame.data, s->frame.len, s->frame_xxh3,
                                 err);
        r->timing.write += sk_now_seconds() - t0;
    } else {
        if (r->o->fail_on_reject) {
            char shown[SHARDX_QUOTE_SIZE];
            return shard_err_set(err, SHARD_EREJECTED, "rejected '%s': %s",
                                 shardx_quote(key, key_len, shown, sizeof shown), s->why.msg);
        }
        struct shard_reject rj = {
            .key = malloc(key_len + 1),
            .key_len = key_len,
            .reason = strdup(s->why.msg),
            .has_source = s->has_source,
            .source_bytes = s->source_bytes,
            .source_xxh3 = s->source_xxh3,
        };
        if (!rj.key || !rj.reason) {
            shard_reject_release(&rj);
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
        memcpy(rj.key, key, key_len + 1);
        rc = sk_assembler_reject(r->as, s->pos, &rj, err);
        shard_reject_release(&rj);
    }
    sk_run_progress(r, 0);
    return rc;
}

/* The pipeline's consumer: one position's record or reject, in order; the
 * slot's budget given back, and the next position told it is next. */
static int convert_consume(void *ctx, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    int rc = consume_slot(r, s, err);
    /* next, then the bytes back: giving them wakes whoever waits, and the
     * next position then knows it is */
    __atomic_store_n(&r->next_pos, s->pos + 1, __ATOMIC_RELEASE);
    sk_run_release_slot(r, s);
    return rc;
}

int sk_run_convert_range(struct run *r, struct shard_err *err)
{
    __atomic_store_n(&r->next_pos, r->pos_base + r->start_pos, __ATOMIC_RELEASE);
    void **slots = sk_run_slot_pointers(r, err);
    if (!slots)
        return SHARD_ENOMEM;
    struct pipeline_ops ops = {r, convert_claim, convert_work, convert_consume};
    r->phase = "convert";
    int rc = SHARD_OK;
    /* one round trip per file: many under way at once, their listed sizes
     * held to the budget until the slot that takes one is consumed */
    struct sk_prefetch_budget held = {&r->budget, is_next_order, r};
    if (r->root.s3)
        rc = sk_prefetch_new(&r->prefetch, &r->root, &r->keys, r->order, r->start_pos, r->end_pos,
                             r->config.max_file_bytes, REMOTE_CONNECTIONS, REMOTE_AHEAD,
                             SK_PREFETCH_READ, NULL, NULL, &held, err);
    else if (!r->archive) /* a cold disk reads ahead while the threads decode */
        rc = sk_prefetch_new(&r->prefetch, &r->root, &r->keys, r->order, r->start_pos, r->end_pos,
                             r->config.max_file_bytes, LOCAL_ADVISERS,
                             LOCAL_AHEAD_PER_THREAD * (uint32_t)r->threads, SK_PREFETCH_ADVISE,
                             never_open, r, NULL, err);
    if (!rc)
        rc = sk_pipeline_run(&ops, slots, r->nslots, r->threads, r->o->cancel, err);
    sk_prefetch_free(r->prefetch);
    r->prefetch = NULL;
    free(slots);
    return rc;
}

static int convert(struct run *r, struct shard_err *err)
{
    int rc = sk_run_convert_range(r, err);
    double t0 = sk_now_seconds();
    if (!rc)
        rc = sk_assembler_finish(r->as, err);
    r->timing.write += sk_now_seconds() - t0;
    sk_run_progress(r, 1);
    return rc;
}

/* ---- the run ---------------------------------------------------------------- */

static int open_source(struct run *r, struct shard_err *err)
{
    if (sk_source_is_url(r->src)) { /* archives named by URL: a folder of them */
        if (!r->o->archives)
            return shard_err_set(err, SHARD_EINVAL,
                                 "an http(s) SRC names archives: convert them as a folder of "
                                 "archives (shardify_options.archives)");
        r->archive = 1;
        return sk_run_open_remote(r, err);
    }
    if (r->o->archives) { /* a directory of archives: read one after the other */
        if (sk_source_is_s3(r->src))
            return shard_err_set(err, SHARD_EINVAL,
                                 "--archives takes a local directory, not "
                                 "'%s'",
                                 r->src);
        r->archive = 1;
        return sk_archive_dir_list(r->src, &r->archive_names, &r->archive_count, &r->stats, err);
    }
    if (sk_source_is_s3(r->src)) /* an S3 prefix: a directory of objects */
        return sk_source_root_open(&r->root, r->src, err);
    struct stat st;
    if (stat(r->src, &st) != 0)
        return shard_err_errno(err, SHARD_EINVAL, errno, "cannot read source '%s'", r->src);
    if (S_ISDIR(st.st_mode)) {
        if (sk_source_root_open(&r->root, r->src, err) == SHARD_OK)
            return SHARD_OK;
        if (err) /* an unusable SRC is a bad argument of the run */
            err->code = SHARD_EINVAL;
        return SHARD_EINVAL;
    }
    if (!S_ISREG(st.st_mode))
        return shard_err_set(err, SHARD_EINVAL,
                             "source '%s' is neither a directory nor an archive file", r->src);
    r->archive = 1;
    return SHARD_OK;
}

/* --split NAME: SRC/NAME is the run's source, and the classes its keys do
 * not give but the other split folders' do are labels too (read from
 * their keys by the labeler; a sidecar or column class needs --classes). */
static int split_source(struct run *r, const char *root, struct shard_err *err)
{
    const char *split = r->o->split;
    if (r->o->archives || sk_source_is_s3(root))
        return shard_err_set(err, SHARD_EINVAL,
                             "--split takes a local directory laid out in split folders "
                             "(train/, test/ ...), not '%s'%s",
                             root, r->o->archives ? " with --archives" : "");
    if (!*split || strchr(split, '/') || !strcmp(split, ".") || !strcmp(split, ".."))
        return shard_err_set(err, SHARD_EINVAL, "--split: '%s' is not a folder's name", split);
    if (!(r->split_src = sk_fs_join(root, split)) || !(r->config.split = strdup(split)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->src = r->split_src;
    struct stat st;
    if (stat(r->src, &st) != 0 || !S_ISDIR(st.st_mode))
        return shard_err_set(err, SHARD_EINVAL, "--split %s: '%s' has no folder '%s'", split, root,
                             split);
    return SHARD_OK;
}

/* --split NAME, once the labeler and the fields are set up: the classes of
 * SRC's other split folders. */
static int split_classes(struct run *r, const char *root, struct shard_err *err)
{
    const char *split = r->o->split;
    if (!split || r->o->classes) /* a fixed list is every split's */
        return SHARD_OK;
    char **names;
    size_t count, others;
    int rc = shard_source_splits(root, &names, &count, &others, err);
    for (size_t i = 0; !rc && i < count; i++) {
        if (!strcmp(names[i], split))
            continue;
        if (sk_field_sources_class_from_values(r->fields)) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--split %s: the classes of the split '%s' come from its sidecar "
                               "files or table, which are not read: give --classes FILE",
                               split, names[i]);
            break;
        }
        char *dir = sk_fs_join(root, names[i]);
        struct shard_keylist keys = {0};
        struct shard_refusals refused = {0};
        struct shard_scan_stats stats = {0};
        rc = dir ? sk_scan_dir(dir, &keys, NULL, &refused, &stats, err)
                 : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        for (size_t k = 0; !rc && k < keys.count; k++) {
            size_t len, name_len;
            const char *key = shard_keylist_get(&keys, k, &len), *name;
            if (shard_labeler_label(r->labeler, key, len, &name, &name_len))
                rc = shard_keylist_add(&r->split_classes, name, name_len, err);
        }
        if (rc)
            shard_err_prefix(err, rc, "--split %s: the classes of '%s'", split, dir ? dir : "");
        free(dir);
        shard_keylist_release(&keys);
        shard_refusals_release(&refused);
    }
    shard_splits_free(names, count);
    return rc;
}

/* A signal asked the run to stop (shardify_options.cancel). */
static int cancelled(const struct run *r)
{
    return sk_flag_get(r->o->cancel);
}

static void run_release(struct run *r)
{
    sk_run_close_previous(r);
    sk_remote_archives_free(r->remote);
    sk_field_sources_free(r->fields);
    shard_config_release(&r->config); /* its labels, and the fields the field sources declared */
    free_builders(r);
    sk_assembler_free(r->as);
    sk_archive_close(r->ar);
    sk_source_root_close(&r->root);
    if (r->spool_fd >= 0)
        close(r->spool_fd);
    if (r->spool_path) /* never leave an archive's spool on a full disk */
        unlinkat(r->dst->work_fd, SPOOL_FILE, 0);
    free(r->spool_path);
    for (uint64_t i = 0; r->spooled && i < r->spooled_cap; i++) {
        free(r->spooled[i].reason);
        free(r->spooled[i].warning);
    }
    free(r->spooled);
    for (uint64_t i = 0; r->spooled_sidecars && i < r->spooled_sidecars_cap; i++)
        free(r->spooled_sidecars[i].problem);
    free(r->spooled_sidecars);
    if (r->archives_fd >= 0)
        close(r->archives_fd);
    shard_keylist_release(&r->orphans);
    sk_run_labels_release(r);
    for (size_t i = 0; i < r->archive_count; i++)
        free(r->archive_names[i]);
    free(r->archive_names);
    shard_keylist_release(&r->keys);
    shard_refusals_release(&r->refused);
    free(r->order);
    free(r->part_bounds);
    free(r->label_of);
    for (uint32_t i = 0; r->label_names && i < r->label_count; i++)
        free(r->label_names[i]);
    free(r->label_names);
    sk_class_list_free(r->classes, r->class_count);
    shard_keylist_release(&r->split_classes);
    sk_key_selection_free(r->selection);
    free(r->split_src);
    shard_labeler_free(r->labeler);
    sk_dst_close(r->dst);
    free(r->dst_path);
    sk_budget_destroy(&r->budget);
}

int shardify_run(const char *src, const char *dst, const struct shardify_options *o,
                 struct shardify_summary *summary, struct shard_err *err)
{
    memset(summary, 0, sizeof *summary);
    int rc = validate(o, err);
    if (rc)
        return rc;
    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.t0 = sk_now_seconds();
    r.src = src;
    r.root.fd = -1;
    r.spool_fd = -1;
    r.archives_fd = -1;
    sk_budget_init(&r.budget, o->memory ? o->memory : SHARDIFY_MEMORY_DEFAULT);
    r.config = o->config;
    r.config.labels = NULL;
    r.config.fields = NULL; /* the field sources declare them */
    r.config.field_count = 0;
    r.config.annotations = NULL;
    r.config.coco = NULL;
    r.config.classes = NULL;
    r.config.split = NULL;
    r.config.annotations_key = NULL;
    r.config.keys = NULL;
    r.config.zstd_level = shard_config_zstd_level(&o->config);
    r.threads = o->threads > 0 ? o->threads : shard_available_cpus();
    r.phase = "scan";

    if ((o->split && (rc = split_source(&r, src, err))) || (rc = open_source(&r, err)) ||
        (rc = shard_labeler_new(&r.labeler, o->labels ? o->labels : "dir", err)))
        goto out;
    if (!(r.config.labels = strdup(shard_labeler_describe(r.labeler)))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = sk_field_sources_new(&r.fields, o, o->labels, &r.config, err)) ||
        (rc = split_classes(&r, src, err)))
        goto out;
    if (o->classes &&
        (rc = sk_run_read_classes(o->classes, &r.classes, &r.class_count, &r.config.classes, err)))
        goto out;
    if (o->keys && r.archive) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "--keys selects the samples of a directory or an S3 prefix, not of "
                           "an archive");
        goto out;
    }
    if (o->keys && ((rc = sk_key_selection_load(&r.selection, o->keys, err)) ||
                    !(r.config.keys = strdup(sk_key_selection_describe(r.selection))))) {
        rc = rc ? rc : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = sk_run_part_dst(&r, dst, err)) || (rc = sk_run_open_previous(&r, r.dst_path, err)) ||
        (rc = sk_dst_open(&r.dst, r.dst_path, r.src, o->work_dir, o->mode, err)) ||
        (rc = make_builders(&r, err)))
        goto out;
    if (r.dst->remote) /* an upload under way stops at Ctrl-C too */
        r.dst->remote->http.cancel = o->cancel;

    if (r.config.order == SHARD_ORDER_ARCHIVE) { /* a folder of archives, archive by archive */
        if (sk_field_sources_has_table(r.fields)) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "an annotation table is matched against the whole source: "
                               "convert a folder of archives with one with --order global");
            goto out;
        }
        if ((rc = sk_run_by_archive(&r, err)) || (rc = sk_run_check_labels_used(&r, err)))
            goto out;
        if ((rc = sk_run_check_published(&r, err))) {
            if (!sk_assembler_samples(r.as)) /* no shard: nothing to resume */
                sk_dst_cleanup_work(r.dst, NULL);
            goto out;
        }
        sk_run_finish_lineage(&r);
        rc = sk_run_publish(&r, summary, err);
        goto out;
    }
    if (r.archive) {
        rc = sk_run_spool_archive(&r, err);
    } else {
        rc = sk_source_root_scan(&r.root, &r.keys, sk_field_sources_sidecars(r.fields), &r.refused,
                                 &r.stats, err);
        if (!rc && r.selection)
            rc = sk_key_selection_apply(r.selection, &r.keys, &r.stats, err);
        shard_keylist_sort(&r.keys);
        r.n = r.keys.count;
    }
    if (!rc)
        rc = sk_field_sources_resolve(r.fields, r.src, &r.keys, &r.refused, err);
    if (!rc && sk_field_sources_has_names(r.fields)) /* label names read ahead */
        rc = sk_field_sources_read_names(r.fields, &r.keys, &r.refused, sk_run_read_sidecar, &r,
                                         err);
    sk_run_progress(&r, 1);
    if (!rc && cancelled(&r)) /* asked during the scan: record no state for it */
        rc = SHARD_EINTR;
    if (rc || (rc = sk_run_assign_labels(&r, err)) ||
        (rc = sk_field_sources_table_unmatched(r.fields, &r.keys, &r.annotation_rows_unmatched,
                                               err)) ||
        (rc = sk_field_sources_coco_unmatched(r.fields, &r.keys, &r.coco_images_unmatched,
                                              &r.coco_annotations_unmatched, err)) ||
        (rc = sk_run_make_order(&r, err)) ||
        (rc = sk_assembler_new(&r.as, r.dst, &r.config, r.label_count, err)) ||
        (rc = sk_run_part_setup(&r, err)))
        goto out;

    int resuming;
    if ((rc = sk_run_check_state(&r, &resuming, err)))
        goto out;
    if (resuming && (rc = sk_run_adopt_finished(&r, err)))
        goto out;
    double t = sk_now_seconds();
    r.timing.scan = t - r.t0;
    rc = convert(&r, err);
    r.timing.convert = sk_now_seconds() - t;
    if (rc || (rc = sk_run_check_labels_used(&r, err)))
        goto out;
    if ((rc = sk_run_check_published(&r, err))) {
        if (!sk_assembler_samples(r.as) && !r.dst->remote) /* no shard: nothing to resume */
            sk_dst_cleanup_work(r.dst, NULL);
        goto out;
    }
    sk_run_finish_lineage(&r);
    if ((rc = sk_run_publish(&r, summary, err)))
        goto out;
out:
    /* Whatever failed once a signal asked the run to stop (a system call it
     * interrupted: an open that waited fails with EINTR) is that stop. */
    if (rc && cancelled(&r))
        rc = SHARD_EINTR;
    if (rc == SHARD_EINTR)
        shard_err_set(err, SHARD_EINTR, SHARDIFY_INTERRUPTED);
    if (rc) {
        /* the counts known when the run stopped, unless publishing already
         * gave them (and took the rejects out of the assembler) */
        if (!summary->threads)
            sk_run_summarize(&r, summary);
        summary->seconds = sk_now_seconds() - r.t0;
    }
    if (r.dst)
        snprintf(summary->uploads_warning, sizeof summary->uploads_warning, "%s",
                 r.dst->uploads_warning);
    run_release(&r);
    return rc;
}
