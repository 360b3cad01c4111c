/* loader.c - the batch loader (see shardkit/loader.h).
 *
 * A batch is one allocation per array (indices, labels, sample pointers,
 * sizes, per-place status) plus, with a fixed output size, one buffer of
 * batch_size samples that the transforms write into in place, or else one
 * place (an item and an output buffer) per sample.  Batches are recycled
 * through a pool shared with the batches handed out, so a batch may outlive
 * its loader, and a recycled batch's memory is already faulted in.
 *
 * Threads.  An epoch's list of plan entries goes through the library's
 * ordered ring (util/ring.h) in groups of batch_size: group g is the
 * loader's g-th batch of the epoch, filled in ring slot sk_ring_slot() -
 * ring[slot] is the batch being filled there.  Reader threads
 * claim entries in order, read and transform each into its place and mark it
 * done; the consumer waits for a whole group, swaps a fresh batch into the
 * slot and releases it, so the filled batch is the consumer's alone and the
 * threads go on into the fresh one.  At most `prefetch` batches are being
 * filled or waiting.  Without threads, next() fills the batch itself.
 *
 * Fields.  Each selected field has its arrays in the batch, allocated with
 * it: presence flags, and a number's or vector's rows, which the thread
 * filling place j writes in place; a variable-length value (text, JSON,
 * bytes, labels) is copied into place j's own buffer, and the consumer lays
 * the kept samples' values back to back when it finishes the batch. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "format/record_internal.h"
#include "format/shard_reader.h"
#include "loader/transforms_internal.h"
#include "util/grow.h"
#include "read/dataset_internal.h"
#include "read/plan_internal.h"
#include "util/ring.h"
#include "shardkit/format.h"
#include "shardkit/loader.h"
#include "shardkit/mixture.h"
#include "shardkit/source.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "util/endian.h"
#include "image/image_internal.h"

#define DEFAULT_BATCH 64
#define DEFAULT_THREADS 2
#define DEFAULT_PREFETCH 2
/* More threads than this is a mistake, not a configuration. */
#define MAX_THREADS 1024
/* Free batches the pool keeps for reuse beyond those in flight. */
#define POOL_SPARE 4

/* A selected field (shard_loader_options.fields). */
struct loader_field {
    uint32_t field; /* field number */
    enum shard_field_type type;
    uint32_t length;  /* values per row of a stacked field, else 0 */
    size_t width;     /* bytes per value: 8 (INT, FLOAT, INT64), 4 (FLOAT32,
                       * LABELS), 1 (TEXT, JSON, BYTES) */
    size_t row_bytes; /* a stacked field's bytes per sample; 0: variable length */
};

/* A selected field's arrays in a batch. */
struct batch_field {
    uint8_t *present;       /* capacity flags */
    uint8_t *values;        /* stacked: capacity rows */
    uint64_t *start, *len;  /* variable: place j's value in the batch's var[j] */
    uint64_t *offsets;      /* variable: capacity + 1, of the kept samples in arena */
    struct shard_buf arena; /* variable: the kept samples' values back to back */
};

/* One sample's place in a batch whose samples have their own sizes. */
struct place {
    struct shard_item item; /* read into directly; its pixels are the sample
                             * when nothing transforms them */
    struct shard_buf out;   /* the transformed sample otherwise */
};

struct loader_pool {
    pthread_mutex_t lock;
    int loader_alive;
    uint64_t outstanding; /* batches handed out and not yet freed */
    struct shard_batch **spare;
    size_t len, cap;
};

struct shard_batch {
    struct shard_batch_info info;
    struct loader_pool *pool;
    uint32_t capacity;
    uint32_t field_count; /* selected fields */
    size_t sample_bytes;  /* with a fixed size */
    uint8_t *data;
    uint64_t *indices;
    uint32_t *sources;
    int32_t *labels;
    void **samples;
    uint32_t *widths, *heights;
    int *rc; /* per place: 0 or the failure */
    struct shard_err *errs;
    uint64_t *skipped_indices;
    uint32_t *skipped_sources;
    struct place *places;       /* without a fixed size */
    struct batch_field *fields; /* one per selected field */
    struct shard_buf *var;      /* with a variable-length field: capacity buffers, place
                                 * j's values */
    struct shard_batch_field *info_fields;
};

/* What one thread needs to fill places. */
struct filler {
    struct shard_loader *loader;
    struct shard_item item; /* the decoded sample, with a fixed size */
    struct shard_transforms_workspace *ws;
    struct shard_transforms_draws draws;
    uint64_t index;              /* the sample being read, for choose_box */
    struct shard_image instance; /* an INSTANCES value's mask, decoded */
    uint8_t *keep;               /* the sample's boxes that the transforms kept */
    size_t keep_count, keep_cap; /* keep_count: its boxes (0: none seen yet) */
    int has_keep;                /* the boxes were transformed: keep says which stay */
    struct shard_image form;     /* a sample converted to the channels asked for */
};

/* A mixture's source in the started epoch: its entries of the list, in
 * list order, for the dataset's read-ahead and footer release. */
struct source_list {
    uint64_t *list; /* indices in the source */
    uint64_t len;
    _Atomic uint64_t advised;
};

struct shard_loader {
    struct shard_dataset *ds;        /* the dataset; a mixture's first source */
    const struct shard_mixture *mix; /* NULL: the plain dataset ds */
    uint64_t shared;                 /* entries the ranks share per epoch: the dataset's
                                      * samples, the mixture's L */
    const struct shard_transforms *transforms;
    struct shard_loader_options o;
    int identity;   /* samples are the stored pixels */
    int crop_first; /* the transforms start with a crop: JPEG records
                     * are decoded only around its box */
    int fixed;
    uint32_t fixed_w, fixed_h;
    size_t sample_bytes;
    uint32_t channels, depth; /* the dataset's stored form (samples are given in it) */
    uint64_t plan_count, dropped;
    struct loader_field *fields; /* the selected fields, field_count of them */
    uint32_t field_count;
    int has_variable;                   /* one of them has values of variable length */
    int geometric;                      /* one of them is a BOXES, MASK, INSTANCES or IMAGE
                                         * field */
    int16_t selected[SHARD_FIELDS_MAX]; /* field number -> index in fields, or -1 */
    uint64_t epoch_batches;             /* batches of the rank's epoch */
    uint64_t batches;                   /* of them, this part's */
    struct loader_pool *pool;
    /* the started epoch: this worker makes the rank's batches from + worker,
     * from + worker + workers, ... (todo of them); position counts from base */
    int started;
    uint64_t epoch, position, base, from, todo;
    uint64_t started_batches; /* the rank's batches of the started plan */
    uint64_t *list;           /* this worker's plan entries, batch after batch */
    uint64_t list_len;
    uint32_t *list_source; /* a mixture's: each entry's source, and its place in */
    uint64_t *list_place;  /* that source's list */
    struct source_list *sources;
    uint64_t failed_index;
    uint32_t failed_source;
    struct filler *fillers; /* one per thread; fillers[0] also fills inline (threads 0) */
    int filler_count;
    pthread_t *threads;
    int running;               /* threads started for the epoch */
    struct sk_ring *queue;     /* the epoch's ring, with threads */
    struct shard_batch **ring; /* prefetch batches: ring[slot] is being filled */
    struct shard_batch *fresh; /* the batch to swap in for the next one taken */
    _Atomic uint64_t advised;  /* list positions before it were advised */
    /* Stopping: the reads of the threads (cancel) and of next() filling a
     * batch itself (inline: also the caller's interrupt) end within
     * SK_CANCEL_POLL_MS of `stopping` (util/cancel.h). */
    volatile sig_atomic_t stopping;
    struct sk_cancel cancel, inline_cancel;
    int (*interrupted)(void *user);
    void *interrupt_user;
    /* stats */
    _Atomic uint64_t transform_ns, samples, batch_count, skipped, failed_batches, wait_ns, busy_ns;
    _Atomic uint64_t busy_since; /* 0: no epoch in progress */
};

/* The values a batch holds: the transforms' output, or without any the
 * stored samples' own (uint16 for a 16-bit dataset). */
static enum shard_dtype loader_dtype(const struct shard_loader *l)
{
    if (l->identity || !l->transforms)
        return l->depth == 16 ? SHARD_DTYPE_UINT16 : SHARD_DTYPE_UINT8;
    return shard_transforms_dtype(l->transforms);
}

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void shard_loader_options_init(struct shard_loader_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch_size = DEFAULT_BATCH;
    shard_plan_options_init(&o->plan);
    /* every rank the same batch count (one rank: the same plan as keep) */
    o->plan.remainder = SHARD_REMAINDER_PAD;
    o->threads = DEFAULT_THREADS;
    o->box_min_size = 1.0;
}

/* ---- batches ------------------------------------------------------------------- */

static void batch_destroy(struct shard_batch *b)
{
    if (!b)
        return;
    for (uint32_t j = 0; b->places && j < b->capacity; j++) {
        shard_item_release(&b->places[j].item);
        shard_buf_release(&b->places[j].out);
    }
    free(b->places);
    for (uint32_t k = 0; b->fields && k < b->field_count; k++) {
        struct batch_field *f = &b->fields[k];
        free(f->present);
        free(f->values);
        free(f->start);
        free(f->len);
        free(f->offsets);
        shard_buf_release(&f->arena);
    }
    free(b->fields);
    for (uint32_t j = 0; b->var && j < b->capacity; j++)
        shard_buf_release(&b->var[j]);
    free(b->var);
    free(b->info_fields);
    free(b->data);
    free(b->indices);
    free(b->sources);
    free(b->labels);
    free(b->samples);
    free(b->widths);
    free(b->heights);
    free(b->rc);
    free(b->errs);
    free(b->skipped_indices);
    free(b->skipped_sources);
    free(b);
}

/* The arrays of the selected fields in a new batch b: 0, or -1 when out of
 * memory (batch_destroy frees what was made). */
static int batch_create_fields(const struct shard_loader *l, struct shard_batch *b)
{
    const uint32_t n = b->capacity;
    b->field_count = l->field_count;
    if (!(b->fields = calloc(l->field_count, sizeof *b->fields)) ||
        !(b->info_fields = calloc(l->field_count, sizeof *b->info_fields)) ||
        (l->has_variable && !(b->var = calloc(n, sizeof *b->var))))
        return -1;
    for (uint32_t k = 0; k < l->field_count; k++) {
        const struct loader_field *lf = &l->fields[k];
        struct batch_field *f = &b->fields[k];
        if (!(f->present = calloc(n, 1)))
            return -1;
        if (lf->row_bytes) { /* row_bytes * n was checked when the loader was made */
            if (!(f->values = calloc(n, lf->row_bytes)))
                return -1;
        } else if (!(f->start = calloc(n, sizeof *f->start)) ||
                   !(f->len = calloc(n, sizeof *f->len)) ||
                   !(f->offsets = calloc((size_t)n + 1, sizeof *f->offsets))) {
            return -1;
        }
    }
    return 0;
}

static struct shard_batch *batch_create(const struct shard_loader *l, struct shard_err *err)
{
    const uint32_t n = l->o.batch_size;
    struct shard_batch *b = calloc(1, sizeof *b);
    if (!b)
        goto fail;
    b->pool = l->pool;
    b->capacity = n;
    b->sample_bytes = l->sample_bytes;
    b->indices = malloc(n * sizeof *b->indices);
    b->sources = malloc(n * sizeof *b->sources);
    b->labels = malloc(n * sizeof *b->labels);
    b->samples = calloc(n, sizeof *b->samples);
    b->widths = malloc(n * sizeof *b->widths);
    b->heights = malloc(n * sizeof *b->heights);
    b->rc = calloc(n, sizeof *b->rc);
    b->errs = malloc(n * sizeof *b->errs);
    b->skipped_indices = malloc(n * sizeof *b->skipped_indices);
    b->skipped_sources = malloc(n * sizeof *b->skipped_sources);
    if (!b->indices || !b->sources || !b->labels || !b->samples || !b->widths || !b->heights ||
        !b->rc || !b->errs || !b->skipped_indices || !b->skipped_sources)
        goto fail;
    if (l->fixed) {
        /* sample_bytes * n was checked when the loader was made */
        if (!(b->data = malloc(l->sample_bytes * n)))
            goto fail;
    } else if (!(b->places = calloc(n, sizeof *b->places))) {
        goto fail;
    }
    if (l->field_count && batch_create_fields(l, b))
        goto fail;
    return b;
fail:
    batch_destroy(b);
    shard_err_set(err, SHARD_ENOMEM, "cannot allocate a batch of %u samples", n);
    return NULL;
}

static void pool_free(struct loader_pool *p)
{
    for (size_t i = 0; i < p->len; i++)
        batch_destroy(p->spare[i]);
    free(p->spare);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* A batch for the loader to fill: a spare one, or a new one. */
static struct shard_batch *pool_take(struct shard_loader *l, struct shard_err *err)
{
    struct loader_pool *p = l->pool;
    pthread_mutex_lock(&p->lock);
    struct shard_batch *b = p->len ? p->spare[--p->len] : NULL;
    pthread_mutex_unlock(&p->lock);
    return b ? b : batch_create(l, err);
}

/* Give back a batch the loader did not hand out. */
static void pool_return(struct loader_pool *p, struct shard_batch *b)
{
    pthread_mutex_lock(&p->lock);
    if (p->loader_alive && p->len < p->cap) {
        p->spare[p->len++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    batch_destroy(b);
}

void shard_batch_free(struct shard_batch *b)
{
    if (!b)
        return;
    struct loader_pool *p = b->pool;
    pthread_mutex_lock(&p->lock);
    p->outstanding--;
    int last = !p->loader_alive && p->outstanding == 0;
    pthread_mutex_unlock(&p->lock);
    if (last) {
        batch_destroy(b);
        pool_free(p);
    } else {
        pool_return(p, b);
    }
}

const struct shard_batch_info *shard_batch_info(const struct shard_batch *b)
{
    return &b->info;
}

int shard_batch_instances(const struct shard_batch_field *f, uint32_t count, uint32_t j,
                          uint32_t *width, uint32_t *height, uint32_t *masks_count,
                          const uint8_t **masks)
{
    if (f->type != SHARD_FIELD_INSTANCES || j >= count)
        return SHARD_EINVAL;
    if (!f->present[j])
        return SHARD_ENOTFOUND;
    /* what place_instances wrote: the stored header's width, height and
     * count, then the masks' bytes */
    const uint8_t *v = f->data + f->offsets[j];
    uint64_t len = f->offsets[j + 1] - f->offsets[j];
    if (len < SHARD_INSTANCES_HEADER_BYTES)
        return SHARD_EINVAL;
    uint32_t w = get_le32(v), h = get_le32(v + 4), n = get_le32(v + 8);
    if ((uint64_t)w * h * n != len - SHARD_INSTANCES_HEADER_BYTES)
        return SHARD_EINVAL;
    *width = w;
    *height = h;
    *masks_count = n;
    *masks = v + SHARD_INSTANCES_HEADER_BYTES;
    return SHARD_OK;
}

/* ---- filling a place ------------------------------------------------------------ */

static int filler_init(struct filler *w, struct shard_err *err)
{
    memset(w, 0, sizeof *w);
    return shard_transforms_workspace_new(&w->ws, err);
}

static void filler_release(struct filler *w)
{
    shard_item_release(&w->item);
    shard_image_release(&w->instance);
    free(w->keep);
    shard_transforms_workspace_free(w->ws);
    shard_image_release(&w->form);
    memset(w, 0, sizeof *w);
}

/* Name sample `index` in a message that is not the reader's (which names it
 * already): "shard-000001.shard record 7 (key 'a/b.jpg'): ...". */
static void name_sample(struct shard_dataset *ds, uint64_t index, struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    const struct shard_footer *footer;
    if (!shard_dataset_locate(ds, index, &s, &r, NULL) &&
        !sk_dataset_footer_pin(ds, s, &footer, NULL)) {
        sk_shard_record_error(err, err->code, shard_dataset_manifest(ds)->shards[s].file, footer,
                              r);
        sk_dataset_footer_unpin(ds, s);
    }
}

/* sk_read_box's choice for filler w's sample: the choices are drawn for the
 * record's size (as for the decoded image, which has that size), and a
 * first crop's box is all that needs decoding. */
static int choose_box(void *ctx, uint32_t width, uint32_t height, struct sk_jpeg_box *box)
{
    struct filler *w = ctx;
    struct shard_loader *l = w->loader;
    struct shard_err ignored; /* a failed draw is made again, and reported, after the read */
    if (shard_transforms_draw(l->transforms, width, height, l->o.plan.seed, l->epoch, w->index,
                              &w->draws, &ignored))
        return 0;
    return sk_transforms_first_box(l->transforms, &w->draws, &box->left, &box->top, &box->width,
                                   &box->height);
}

/* Copy len bytes of values `width` bytes wide, stored little-endian, to dst
 * in host byte order. */
static void copy_le(uint8_t *dst, const uint8_t *src, size_t len, size_t width)
{
    if (!len) /* an empty value: dst may be a buffer not yet allocated */
        return;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < len; i += width)
        for (size_t k = 0; k < width; k++)
            dst[i + k] = src[i + width - 1 - k];
#else
    (void)width;
    memcpy(dst, src, len);
#endif
}

/* Put the selected fields of the sample read into `item` in place j of b:
 * presence flags, a stacked field's row (zeros when absent), a variable
 * one's value into the place's own buffer. */
static int copy_fields(const struct shard_loader *l, struct shard_batch *b, uint32_t j,
                       const struct shard_item *item, struct shard_err *err)
{
    struct shard_buf *var = l->has_variable ? &b->var[j] : NULL;
    if (var)
        var->len = 0;
    for (uint32_t k = 0; k < l->field_count; k++) {
        b->fields[k].present[j] = 0;
        if (!l->fields[k].row_bytes)
            b->fields[k].len[j] = 0;
    }
    for (uint32_t i = 0; i < item->field_count; i++) {
        const struct shard_field_value *v = &item->fields[i];
        int k = l->selected[v->field]; /* the decoder keeps numbers below SHARD_FIELDS_MAX */
        if (k < 0)
            continue;
        const struct loader_field *lf = &l->fields[k];
        struct batch_field *f = &b->fields[k];
        f->present[j] = 1;
        if (lf->type == SHARD_FIELD_INSTANCES ||
            (!l->identity && (lf->type == SHARD_FIELD_BOXES || lf->type == SHARD_FIELD_MASK ||
                              lf->type == SHARD_FIELD_IMAGE)))
            continue; /* transformed (INSTANCES: decoded) from the record by place_fields */
        if (lf->row_bytes) {
            if (v->len != lf->row_bytes) /* the read checked it against the declaration */
                return shard_err_set(err, SHARD_ECORRUPT, "field %u holds %llu bytes, not %zu",
                                     v->field, (unsigned long long)v->len, lf->row_bytes);
            copy_le(f->values + (size_t)j * lf->row_bytes, v->data, lf->row_bytes, lf->width);
            continue;
        }
        size_t at = var->len;
        int rc = shard_buf_reserve(var, at + (size_t)v->len, err);
        if (rc)
            return rc;
        copy_le(var->data + at, v->data, (size_t)v->len, lf->width);
        var->len = at + (size_t)v->len;
        f->start[j] = at;
        f->len[j] = v->len;
    }
    for (uint32_t k = 0; k < l->field_count; k++)
        if (l->fields[k].row_bytes && !b->fields[k].present[j])
            memset(b->fields[k].values + (size_t)j * l->fields[k].row_bytes, 0,
                   l->fields[k].row_bytes);
    return SHARD_OK;
}

/* An INSTANCES value of item (the read checked its runs), decoded, each
 * mask through the choices its image went through (w->draws; the record's
 * region at dx, dy) unless `identity`, appended to var: the header (the
 * output's width and height, the masks kept, 0) then each mask's values,
 * 1 byte each, row-major.  When the sample's boxes went through the
 * transforms first and are as many, a mask whose box they dropped goes too
 * (Mask R-CNN's masks stay aligned with its boxes). */
static int place_instances(const struct shard_loader *l, struct filler *w, struct shard_buf *var,
                           const struct shard_field_value *v, const struct shard_item *item,
                           uint32_t dx, uint32_t dy, int identity, struct shard_err *err)
{
    const uint8_t *h = v->data;
    uint32_t mw = get_le32(h), mh = get_le32(h + 4), count = get_le32(h + 8);
    uint32_t ow = identity ? item->pixels.width : w->draws.out_width;
    uint32_t oh = identity ? item->pixels.height : w->draws.out_height;
    if ((uint64_t)dx + item->pixels.width > mw || (uint64_t)dy + item->pixels.height > mh)
        return shard_err_set(err, SHARD_ECORRUPT, "instance masks of %ux%u for an image of %ux%u",
                             mw, mh, item->pixels.width, item->pixels.height);
    const uint8_t *keep = w->has_keep && w->keep_count == count ? w->keep : NULL;
    uint32_t kept = 0;
    for (uint32_t k = 0; k < count; k++)
        kept += !keep || keep[k];
    size_t at = var->len, plane = (size_t)ow * oh;
    int rc = shard_buf_reserve(var, at + SHARD_INSTANCES_HEADER_BYTES + kept * plane, err);
    if (!rc)
        rc = shard_image_alloc(&w->instance, mw, mh, 1, err);
    if (rc)
        return rc;
    uint8_t *o = var->data + at;
    memset(o, 0, SHARD_INSTANCES_HEADER_BYTES);
    put_le32(o, ow);
    put_le32(o + 4, oh);
    put_le32(o + 8, kept);
    o += SHARD_INSTANCES_HEADER_BYTES;
    const uint8_t *p = h + SHARD_INSTANCES_HEADER_BYTES;
    for (uint32_t k = 0; k < count && !rc; k++) {
        uint32_t runs = get_le32(p);
        const uint8_t *counts = p + 4;
        p = counts + 4 * (size_t)runs;
        if (keep && !keep[k])
            continue;
        sk_instance_fill(counts, runs, mw, mh, w->instance.pixels, w->instance.stride);
        struct shard_image view = {.pixels = w->instance.pixels + (size_t)dy * w->instance.stride +
                                             dx,
                                   .width = item->pixels.width,
                                   .height = item->pixels.height,
                                   .channels = 1,
                                   .stride = w->instance.stride};
        if (identity)
            for (uint32_t y = 0; y < oh; y++)
                memcpy(o + (size_t)y * ow, view.pixels + (size_t)y * view.stride, ow);
        else
            rc = shard_transforms_mask_fill(l->transforms, &view, &w->draws, w->ws, 0, o, err);
        o += plane;
    }
    if (!rc)
        var->len = at + SHARD_INSTANCES_HEADER_BYTES + kept * plane;
    return rc;
}

/* Without transforms: j's INSTANCES values decoded (the other fields are
 * copied as stored). */
static int identity_instances(const struct shard_loader *l, struct filler *w, struct shard_batch *b,
                              uint32_t j, const struct shard_item *item, struct shard_err *err)
{
    for (uint32_t i = 0; i < item->field_count; i++) {
        const struct shard_field_value *v = &item->fields[i];
        int k = l->selected[v->field];
        if (k < 0 || v->type != SHARD_FIELD_INSTANCES)
            continue;
        size_t at = b->var[j].len;
        int rc = place_instances(l, w, &b->var[j], v, item, 0, 0, 1, err);
        if (rc)
            return rc;
        b->fields[k].start[j] = at;
        b->fields[k].len[j] = b->var[j].len - at;
    }
    return SHARD_OK;
}

/* The part of a MASK or IMAGE value (h: its header of `header` bytes,
 * width:u32 height:u32 then `unit` bytes a pixel; the read checked its
 * size) under item's pixels, the record's region at dx, dy (the whole
 * record unless `cropped`), as a view into the value.  0 or SHARD_ECORRUPT
 * naming the field's `what`. */
static int value_view(const uint8_t *h, size_t header, uint32_t unit, const struct shard_item *item,
                      uint32_t dx, uint32_t dy, int cropped, uint32_t field, const char *what,
                      struct shard_image *view, struct shard_err *err)
{
    uint32_t mw = get_le32(h), mh = get_le32(h + 4);
    if ((uint64_t)dx + item->pixels.width > mw || (uint64_t)dy + item->pixels.height > mh ||
        (!cropped && (mw != item->pixels.width || mh != item->pixels.height)))
        return shard_err_set(err, SHARD_ECORRUPT, "field %u: %s of %ux%u for an image of %ux%u",
                             field, what, mw, mh, item->pixels.width, item->pixels.height);
    const size_t stride = (size_t)mw * unit;
    *view = (struct shard_image){.pixels = (uint8_t *)h + header + (size_t)dy * stride +
                                           (size_t)dx * unit,
                                 .width = item->pixels.width,
                                 .height = item->pixels.height,
                                 .channels = unit,
                                 .stride = stride};
    return SHARD_OK;
}

/* Room in var for a transformed MASK or IMAGE value of `unit` bytes a
 * pixel after its header of `header` bytes, which is written: zeros but
 * the output's width and height and, at byte 8, `unit`.  *out: the header
 * in var; *len: the value's bytes.  0 or SHARD_ENOMEM. */
static int value_begin(struct shard_buf *var, const struct shard_transforms_draws *d, size_t header,
                       uint32_t unit, uint8_t **out, size_t *len, struct shard_err *err)
{
    *len = header + (size_t)d->out_width * d->out_height * unit;
    int rc = shard_buf_reserve(var, var->len + *len, err);
    if (rc)
        return rc;
    uint8_t *o = *out = var->data + var->len;
    memset(o, 0, header);
    put_le32(o, d->out_width);
    put_le32(o + 4, d->out_height);
    o[8] = (uint8_t)unit;
    return SHARD_OK;
}

/* An IMAGE value v of item (the read checked its header and size) through
 * the choices its image went through (w->draws; the record's region at dx,
 * dy), appended to var: the header (the output's width and height, its
 * channels, codec raw: 0) then its pixels, uint8 row-major, whatever the
 * image's layout and dtype. */
static int place_image(const struct shard_loader *l, struct filler *w, struct shard_buf *var,
                       const struct shard_field_value *v, const struct shard_item *item,
                       uint32_t dx, uint32_t dy, int cropped, struct shard_err *err)
{
    struct shard_image view;
    uint8_t *o;
    size_t len;
    int rc = value_view(v->data, SHARD_IMAGE_HEADER_BYTES, v->data[8], item, dx, dy, cropped,
                        v->field, "an image", &view, err);
    if (!rc)
        rc = value_begin(var, &w->draws, SHARD_IMAGE_HEADER_BYTES, view.channels, &o, &len, err);
    if (!rc)
        rc = sk_transforms_apply_rgb(l->transforms, &view, &w->draws, w->ws,
                                     o + SHARD_IMAGE_HEADER_BYTES, err);
    if (!rc)
        var->len += len;
    return rc;
}

/* Place j's BOXES, MASK, INSTANCES and IMAGE values (the record's, in
 * item) through the choices its image went through (w->draws, made for
 * item's pixels: the whole record, or when rb->cropped the region of it at
 * rb->box.region_left, region_top), into the place's buffer. */
static int transform_geometric(const struct shard_loader *l, struct filler *w,
                               struct shard_batch *b, uint32_t j, const struct shard_item *item,
                               const struct sk_read_box *rb, struct shard_err *err)
{
    struct shard_buf *var = &b->var[j];
    const uint32_t dx = rb->cropped ? rb->box.region_left : 0;
    const uint32_t dy = rb->cropped ? rb->box.region_top : 0;
    for (uint32_t i = 0; i < item->field_count; i++) {
        const struct shard_field_value *v = &item->fields[i];
        int k = l->selected[v->field];
        if (k < 0 || (v->type != SHARD_FIELD_BOXES && v->type != SHARD_FIELD_MASK &&
                      v->type != SHARD_FIELD_INSTANCES && v->type != SHARD_FIELD_IMAGE))
            continue;
        const struct loader_field *lf = &l->fields[k];
        struct batch_field *f = &b->fields[k];
        size_t at = var->len;
        if (v->type == SHARD_FIELD_IMAGE) {
            int rc = place_image(l, w, var, v, item, dx, dy, rb->cropped, err);
            if (rc)
                return rc;
            f->start[j] = at;
            f->len[j] = var->len - at;
            continue;
        }
        if (v->type == SHARD_FIELD_INSTANCES) {
            int rc = place_instances(l, w, var, v, item, dx, dy, 0, err);
            if (rc)
                return rc;
            f->start[j] = at;
            f->len[j] = var->len - at;
            continue;
        }
        if (v->type == SHARD_FIELD_BOXES) {
            size_t n = (size_t)v->len / SHARD_BOX_BYTES;
            int rc = shard_buf_reserve(var, at + (size_t)v->len + 1, err);
            if (!rc && SK_GROW(w->keep, w->keep_cap, n + 1, 16))
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            if (rc)
                return rc;
            size_t kept = sk_transforms_boxes_keep(l->transforms, &w->draws, dx, dy,
                                                   l->o.box_min_size, v->data, n, var->data + at,
                                                   w->keep);
            w->keep_count = n;
            w->has_keep = 1;
            f->start[j] = at;
            f->len[j] = kept * SHARD_BOX_BYTES;
            var->len = at + (size_t)f->len[j];
            continue;
        }
        struct shard_image view; /* the read checked the header and the size */
        uint8_t *o;
        size_t out_len;
        int rc = value_view(v->data, SHARD_MASK_HEADER_BYTES, v->data[8], item, dx, dy, rb->cropped,
                            lf->field, "a mask", &view, err);
        if (!rc)
            rc = value_begin(var, &w->draws, SHARD_MASK_HEADER_BYTES, view.channels, &o, &out_len,
                             err);
        const struct shard_field_decl *decl =
            &shard_dataset_manifest(l->ds)->config.fields[v->field];
        if (!rc)
            rc = shard_transforms_mask_fill(l->transforms, &view, &w->draws, w->ws,
                                            decl->has_ignore ? decl->ignore : 0,
                                            o + SHARD_MASK_HEADER_BYTES, err);
        if (rc)
            return rc;
        var->len = at + out_len;
        f->start[j] = at;
        f->len[j] = out_len;
    }
    return SHARD_OK;
}

/* The dataset of plan entry `entry`, with the sample's index in it and its
 * source (0 without a mixture). */
static struct shard_dataset *dataset_of(const struct shard_loader *l, uint64_t entry,
                                        uint64_t *index, uint32_t *source)
{
    *index = entry;
    *source = 0;
    if (!l->mix)
        return l->ds;
    struct shard_err ignored; /* the mixture's plans hold its own numbers only */
    shard_mixture_locate(l->mix, entry, source, index, &ignored);
    return shard_mixture_source(l->mix, *source);
}

/* Read the sample of plan entry `entry` into place j of b and transform it
 * there.  Its transforms are drawn for the entry (a mixture's sample
 * number). */
static void fill_place(struct shard_loader *l, struct filler *w, struct shard_batch *b, uint32_t j,
                       uint64_t entry)
{
    struct shard_err *err = &b->errs[j];
    struct shard_item *item = l->fixed ? &w->item : &b->places[j].item;
    uint64_t index;
    struct shard_dataset *ds = dataset_of(l, entry, &index, &b->sources[j]);
    b->indices[j] = index;
    b->labels[j] = SHARD_NO_LABEL;
    shard_err_clear(err);
    struct sk_read_box rb = {choose_box, w, {0}, 0};
    w->index = entry;
    /* without a selected field, records' fields are neither copied nor checked */
    unsigned flags = SHARD_READ_PIXELS | (l->field_count ? 0 : SHARD_READ_NO_FIELDS);
    int rc = l->crop_first ? sk_dataset_read_box(ds, index, flags, &rb, item, err)
                           : shard_dataset_read(ds, index, flags, item, err);
    if (!rc && l->field_count && (rc = copy_fields(l, b, j, item, err)))
        name_sample(ds, index, err);
    if (rc)
        goto out;
    b->labels[j] = l->mix ? shard_mixture_label_of(l->mix, b->sources[j], item->label)
                          : item->label;
    w->has_keep = 0;
    if (item->pixels.channels != l->channels || item->pixels.depth != l->depth) {
        /* the form asked for (loader options), or a mixture's widest */
        const struct shard_manifest *m = shard_dataset_manifest(ds);
        if ((rc = shard_image_convert(&item->pixels, l->channels, l->depth, m->config.background,
                                      &w->form, err))) {
            name_sample(ds, index, err);
            goto out;
        }
        struct shard_image t = item->pixels;
        item->pixels = w->form;
        w->form = t;
    }
    if (l->identity && l->geometric && (rc = identity_instances(l, w, b, j, item, err))) {
        name_sample(ds, index, err);
        goto out;
    }
    if (l->identity && l->fixed) { /* the manifest's one stored size */
        const struct shard_image *p = &item->pixels;
        size_t row = (size_t)p->width * p->channels * sk_image_sample_bytes(p);
        uint8_t *dst = b->data + (size_t)j * b->sample_bytes;
        if (p->width != l->fixed_w || p->height != l->fixed_h || row * p->height != b->sample_bytes)
            rc = shard_err_set(err, SHARD_ECORRUPT, "a sample of %ux%u, the manifest says %ux%u",
                               p->width, p->height, l->fixed_w, l->fixed_h);
        for (uint32_t y = 0; !rc && y < p->height; y++)
            memcpy(dst + y * row, p->pixels + (size_t)y * p->stride, row);
        if (rc) {
            name_sample(ds, index, err);
            goto out;
        }
        b->samples[j] = dst;
        b->widths[j] = p->width;
        b->heights[j] = p->height;
        goto out;
    }
    if (l->identity) {
        b->samples[j] = item->pixels.pixels;
        b->widths[j] = item->pixels.width;
        b->heights[j] = item->pixels.height;
        goto out;
    }
    uint64_t start = sk_now_ns();
    if (rb.cropped) /* drawn for the record's size by choose_box */
        sk_transforms_draws_in_region(&w->draws, rb.box.region_left, rb.box.region_top,
                                      item->pixels.width, item->pixels.height);
    else
        rc = shard_transforms_draw(l->transforms, item->pixels.width, item->pixels.height,
                                   l->o.plan.seed, l->epoch, entry, &w->draws, err);
    sk_transforms_draws_channels(&w->draws, l->transforms, l->channels);
    void *dst = NULL;
    if (!rc && l->fixed) {
        if (w->draws.out_bytes != b->sample_bytes) /* find_fixed_size and draw disagree */
            rc = shard_err_set(err, SHARD_EINVAL, "transform output of %ux%u, expected %ux%u",
                               w->draws.out_width, w->draws.out_height, l->fixed_w, l->fixed_h);
        dst = b->data + (size_t)j * b->sample_bytes;
    } else if (!rc) {
        struct shard_buf *out = &b->places[j].out;
        rc = shard_buf_reserve(out, w->draws.out_bytes ? w->draws.out_bytes : 1, err);
        dst = out->data;
    }
    if (!rc)
        rc = shard_transforms_apply(l->transforms, &item->pixels, &w->draws, w->ws, dst, err);
    if (!rc && l->geometric)
        rc = transform_geometric(l, w, b, j, item, &rb, err);
    if (!rc) {
        b->samples[j] = dst;
        b->widths[j] = w->draws.out_width;
        b->heights[j] = w->draws.out_height;
    } else {
        name_sample(ds, index, err);
    }
    add(&l->transform_ns, sk_now_ns() - start);
out:
    b->rc[j] = rc;
}

/* The reader of list position p is about to read it: the dataset's
 * read-ahead up to `ahead` entries further, and its footers let go as the
 * list passes their shards (a mixture's sources each along their own
 * entries). */
static void advise_ahead(struct shard_loader *l, uint64_t p, uint64_t ahead)
{
    if (!l->mix) {
        sk_dataset_advise_ahead(l->ds, l->list, l->list_len, p, ahead, &l->advised);
        return;
    }
    const uint32_t s = l->list_source[p];
    struct source_list *sl = &l->sources[s];
    sk_dataset_advise_ahead(shard_mixture_source(l->mix, s), sl->list, sl->len, l->list_place[p],
                            ahead, &sl->advised);
}

static void *filler_main(void *arg)
{
    struct filler *w = arg;
    struct shard_loader *l = w->loader;
    sk_cancel_set(&l->cancel);
    const uint64_t ahead = (uint64_t)l->o.prefetch * l->o.batch_size;
    uint64_t p;
    while (sk_ring_claim(l->queue, -1, &p) == SK_RING_READY) {
        advise_ahead(l, p, ahead);
        struct shard_batch *b = l->ring[sk_ring_slot(l->queue, p)];
        uint32_t j = (uint32_t)(p % l->o.batch_size);
        fill_place(l, w, b, j, l->list[p]);
        sk_ring_done(l->queue, p, b->rc[j]);
    }
    return NULL;
}

/* Failures that are the sample's own, the same on every read. */
static int is_damage(int code)
{
    return code == SHARD_ECORRUPT || code == SHARD_ENOTIMAGE || code == SHARD_EUNSUPPORTED ||
           code == SHARD_ELIMIT;
}

/* Place j's fields move to place `kept` (< j), as its other arrays do when
 * the samples before it that failed are left out; its buffer of
 * variable-length values trades places with kept's. */
static void move_fields(const struct shard_loader *l, struct shard_batch *b, uint32_t j,
                        uint32_t kept)
{
    if (l->has_variable) {
        struct shard_buf t = b->var[kept];
        b->var[kept] = b->var[j];
        b->var[j] = t;
    }
    for (uint32_t k = 0; k < l->field_count; k++) {
        struct batch_field *f = &b->fields[k];
        size_t row = l->fields[k].row_bytes;
        f->present[kept] = f->present[j];
        if (row) {
            memmove(f->values + (size_t)kept * row, f->values + (size_t)j * row, row);
        } else {
            f->start[kept] = f->start[j];
            f->len[kept] = f->len[j];
        }
    }
}

/* The variable-length values of the `count` kept samples back to back in
 * each such field's arena, and the batch's field info. */
static int finish_fields(const struct shard_loader *l, struct shard_batch *b, uint32_t count,
                         struct shard_err *err)
{
    for (uint32_t k = 0; k < l->field_count; k++) {
        const struct loader_field *lf = &l->fields[k];
        struct batch_field *f = &b->fields[k];
        struct shard_batch_field *out = &b->info_fields[k];
        *out = (struct shard_batch_field){lf->field, lf->type, lf->length, f->present,
                                          f->values, NULL,     NULL};
        if (lf->row_bytes)
            continue;
        uint64_t total = 0;
        for (uint32_t i = 0; i < count; i++)
            total += f->len[i];
        f->arena.len = 0;
        int rc = shard_buf_reserve(&f->arena, total ? (size_t)total : 1, err);
        if (rc)
            return rc;
        f->offsets[0] = 0;
        for (uint32_t i = 0; i < count; i++) {
            if (f->len[i]) /* an empty value's buffer may not be allocated */
                memcpy(f->arena.data + f->arena.len, b->var[i].data + f->start[i],
                       (size_t)f->len[i]);
            f->arena.len += (size_t)f->len[i];
            f->offsets[i + 1] = f->arena.len;
        }
        out->data = f->arena.data;
        out->offsets = f->offsets;
    }
    return SHARD_OK;
}

/* A batch whose `count` places are filled: fill in its info, leave out the
 * failed samples (skip_errors) or report the first failure.  0 or that
 * failure's code. */
static int finish_batch(struct shard_loader *l, struct shard_batch *b, uint32_t count,
                        uint64_t number, struct shard_err *err)
{
    uint32_t kept = 0, skipped = 0;
    for (uint32_t j = 0; j < count; j++) {
        if (b->rc[j]) {
            if (!l->o.skip_errors || !is_damage(b->rc[j])) {
                l->failed_index = b->indices[j];
                l->failed_source = b->sources[j];
                if (err)
                    *err = b->errs[j];
                return b->rc[j];
            }
            b->skipped_indices[skipped] = b->indices[j];
            b->skipped_sources[skipped] = b->sources[j];
            b->errs[skipped] = b->errs[j]; /* skipped <= j: moves forward only */
            skipped++;
            continue;
        }
        if (kept != j) {
            b->indices[kept] = b->indices[j];
            b->sources[kept] = b->sources[j];
            b->labels[kept] = b->labels[j];
            b->widths[kept] = b->widths[j];
            b->heights[kept] = b->heights[j];
            move_fields(l, b, j, kept);
            if (l->fixed) {
                memmove(b->data + (size_t)kept * b->sample_bytes,
                        b->data + (size_t)j * b->sample_bytes, b->sample_bytes);
            } else { /* the place moves with its memory */
                struct place t = b->places[kept];
                b->places[kept] = b->places[j];
                b->places[j] = t;
                b->samples[kept] = b->samples[j];
            }
        }
        if (l->fixed)
            b->samples[kept] = b->data + (size_t)kept * b->sample_bytes;
        kept++;
    }
    struct shard_batch_info *info = &b->info;
    memset(info, 0, sizeof *info);
    info->epoch = l->epoch;
    info->number = number;
    info->count = kept;
    info->skipped = skipped;
    info->indices = b->indices;
    info->labels = b->labels;
    info->layout = l->identity || !l->transforms ? SHARD_LAYOUT_NHWC
                                                 : shard_transforms_layout(l->transforms);
    info->dtype = loader_dtype(l);
    info->channels = l->channels;
    info->fixed = l->fixed;
    info->width = l->fixed_w;
    info->height = l->fixed_h;
    info->data = l->fixed ? b->data : NULL;
    info->samples = b->samples;
    info->widths = b->widths;
    info->heights = b->heights;
    info->skipped_indices = b->skipped_indices;
    info->skipped_errors = b->errs;
    info->sources = b->sources;
    info->skipped_sources = b->skipped_sources;
    if (l->field_count) {
        int rc = finish_fields(l, b, kept, err);
        if (rc)
            return rc;
        info->field_count = l->field_count;
        info->fields = b->info_fields;
    }
    add(&l->skipped, skipped);
    return SHARD_OK;
}

/* ---- the loader ------------------------------------------------------------------- */

/* The selected fields of options o into l (whose dataset is set): each
 * declared, none twice, a batch's rows of each within size_t. */
static int select_fields(struct shard_loader *l, const struct shard_loader_options *o,
                         struct shard_err *err)
{
    const struct shard_config *c = &shard_dataset_manifest(l->ds)->config;
    memset(l->selected, 0xff, sizeof l->selected); /* -1: not selected */
    l->field_count = 0;
    if (!o->field_count)
        return SHARD_OK;
    if (!(l->fields = calloc(o->field_count, sizeof *l->fields)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < o->field_count; k++) {
        uint32_t n = o->fields[k];
        if (n >= c->field_count)
            return shard_err_set(err, SHARD_EINVAL,
                                 "field %u is not declared (the dataset "
                                 "declares %u)",
                                 n, c->field_count);
        if (l->selected[n] >= 0)
            return shard_err_set(err, SHARD_EINVAL, "field %u ('%s') is selected twice", n,
                                 c->fields[n].name);
        const struct shard_field_decl *d = &c->fields[n];
        struct loader_field *f = &l->fields[k];
        f->field = n;
        f->type = d->type;
        switch (d->type) {
        case SHARD_FIELD_INT:
        case SHARD_FIELD_FLOAT: f->length = 1, f->width = 8; break;
        case SHARD_FIELD_FLOAT32: f->length = d->length, f->width = 4; break;
        case SHARD_FIELD_INT64: f->length = d->length, f->width = 8; break;
        case SHARD_FIELD_LABELS: f->width = 4; break;
        case SHARD_FIELD_BOXES:
        case SHARD_FIELD_MASK:
        case SHARD_FIELD_INSTANCES:
        case SHARD_FIELD_IMAGE:
            f->width = 1; /* as stored, little-endian; transformed with the image */
            l->geometric = 1;
            break;
        default: /* TEXT, JSON, BYTES */ f->width = 1; break;
        }
        f->row_bytes = (size_t)f->length * f->width;
        if (f->row_bytes && f->row_bytes > SIZE_MAX / o->batch_size)
            return shard_err_set(err, SHARD_ELIMIT,
                                 "field '%s': a batch of %u rows of %zu "
                                 "bytes is too large",
                                 d->name, o->batch_size, f->row_bytes);
        l->has_variable |= !f->row_bytes;
        l->selected[n] = (int16_t)k;
        l->field_count = k + 1;
    }
    return SHARD_OK;
}

/* Batches of a rank's plan of n entries. */
static uint64_t batches_of(uint64_t n, const struct shard_loader_options *o)
{
    return n / o->batch_size + (n % o->batch_size && !o->drop_last);
}

/* With several ranks, every rank must make the same number of batches in
 * every epoch: a distributed loop whose ranks run out at different batches
 * waits forever in its collectives.  pad and drop give every rank the same
 * plan length; keep gives floor(N/W) or ceil(N/W) of the n entries the
 * ranks share (`what` says what they are), refused when those make
 * different batch counts.  0 or SHARD_EINVAL naming the counts. */
static int check_equal_batches(uint64_t n, const char *what, const struct shard_loader_options *o,
                               struct shard_err *err)
{
    const uint64_t w = o->plan.world_size;
    if (w < 2 || o->plan.remainder != SHARD_REMAINDER_KEEP || n % w == 0)
        return SHARD_OK;
    uint64_t few = batches_of(n / w, o), many = batches_of(n / w + 1, o);
    if (few == many)
        return SHARD_OK;
    return shard_err_set(err, SHARD_EINVAL,
                         "remainder keep gives the %llu ranks unequal batch counts: %llu %s "
                         "in batches of %u%s are %llu batches on the ranks with %llu samples and "
                         "%llu on those with %llu, so a distributed loop would hang: use "
                         "remainder pad or drop",
                         (unsigned long long)w, (unsigned long long)n, what, o->batch_size,
                         o->drop_last ? " (drop_last)" : "", (unsigned long long)many,
                         (unsigned long long)(n / w + 1), (unsigned long long)few,
                         (unsigned long long)(n / w));
}

/* This rank's plan of epoch `epoch`: the ordinary one, or with done[0..count)
 * the rest of the epoch after those segments. */
static int make_plan(const struct shard_loader *l, uint64_t epoch,
                     const struct shard_plan_segment *done, size_t count, struct shard_plan **plan,
                     struct shard_err *err)
{
    struct shard_plan_options po = l->o.plan;
    po.epoch = epoch;
    if (l->mix)
        return shard_mixture_plan_resumed(l->mix, &po, done, count, plan, err);
    if (count)
        return shard_dataset_plan_resumed(l->ds, &po, done, count, plan, err);
    return shard_dataset_plan(l->ds, &po, plan, err);
}

static int loader_new(struct shard_loader **out, struct shard_dataset *ds,
                      const struct shard_mixture *mix, const struct shard_transforms *transforms,
                      const struct shard_loader_options *o, struct shard_err *err)
{
    *out = NULL;
    if (o->batch_size == 0)
        return shard_err_set(err, SHARD_EINVAL, "batch_size must be at least 1");
    if (o->threads < 0 || o->threads > MAX_THREADS)
        return shard_err_set(err, SHARD_EINVAL, "threads %d is outside 0..%d", o->threads,
                             MAX_THREADS);
    if (o->plan.world_size == 0 || o->plan.rank >= o->plan.world_size)
        return shard_err_set(err, SHARD_EINVAL, "rank %u is outside a world_size of %u",
                             o->plan.rank, o->plan.world_size);
    if (!(o->box_min_size >= 0 && o->box_min_size < 1e30))
        return shard_err_set(err, SHARD_EINVAL, "box_min_size %g is not a size in pixels",
                             o->box_min_size);
    if (o->workers > 1 && o->worker >= o->workers)
        return shard_err_set(err, SHARD_EINVAL, "worker %u is outside %u workers", o->worker,
                             o->workers);
    if (mix && o->field_count)
        return shard_err_set(err, SHARD_EINVAL,
                             "fields: a mixture's loader carries no fields (its sources number "
                             "their fields each their own way)");
    if ((unsigned)o->plan.remainder > SHARD_REMAINDER_PAD)
        return shard_err_set(err, SHARD_EINVAL, "unknown remainder option %d", o->plan.remainder);
    struct shard_loader *l = calloc(1, sizeof *l);
    if (!l)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    l->ds = ds;
    l->mix = mix;
    l->shared = mix ? shard_mixture_epoch_size(mix) : shard_dataset_size(ds);
    l->transforms = transforms;
    l->o = *o;
    l->cancel = (struct sk_cancel){&l->stopping, NULL, NULL};
    l->inline_cancel = (struct sk_cancel){&l->stopping, NULL, NULL};
    if (!l->o.prefetch)
        l->o.prefetch = DEFAULT_PREFETCH;
    if (l->o.workers <= 1)
        l->o.worker = 0, l->o.workers = 1;
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    uint32_t channels = m->channels, stored_w = m->stored_width, stored_h = m->stored_height;
    l->depth = m->depth;
    /* a mixture's samples in the widest form of its sources, one array
     * without a transform only when they all store one size */
    for (uint32_t s = 1; mix && s < shard_mixture_source_count(mix); s++) {
        const struct shard_manifest *ms = shard_dataset_manifest(shard_mixture_source(mix, s));
        sk_pixels_widest(channels, l->depth, ms->channels, ms->depth, &channels, &l->depth);
        if (ms->stored_width != stored_w || ms->stored_height != stored_h)
            stored_w = stored_h = 0;
    }
    l->channels = o->channels ? o->channels : channels;
    l->identity = sk_transforms_is_identity(transforms, l->depth);
    l->crop_first = !l->identity && sk_transforms_starts_with_crop(transforms);
    l->fixed = transforms && shard_transforms_fixed_size(transforms, &l->fixed_w, &l->fixed_h);
    int rc = SHARD_OK;
    if (o->channels > SHARD_PIXELS_RGBA) {
        rc = shard_err_set(err, SHARD_EINVAL, "channels %u is not 0 or 1..4", o->channels);
        goto fail;
    }
    /* every sample stored at one size: one array without a transform */
    if (!l->fixed && sk_transforms_keeps_size(transforms) && stored_w)
        l->fixed = 1, l->fixed_w = stored_w, l->fixed_h = stored_h;
    if (l->fixed) {
        l->sample_bytes = (size_t)l->fixed_w * l->fixed_h * l->channels *
                          shard_dtype_size(loader_dtype(l));
        if (l->sample_bytes > SIZE_MAX / o->batch_size) {
            rc = shard_err_set(err, SHARD_ELIMIT, "a batch of %u samples of %ux%u is too large",
                               o->batch_size, l->fixed_w, l->fixed_h);
            goto fail;
        }
    }
    if ((rc = select_fields(l, o, err)))
        goto fail;
    /* the count of a rank's plan is the same in every epoch: its slice */
    uint64_t begin, end, ignored;
    sk_plan_rank_slice(l->shared, &l->o.plan, &begin, &end, &ignored);
    l->plan_count = end - begin;
    if ((rc = check_equal_batches(l->shared, "samples", o, err)))
        goto fail;
    uint64_t full = l->plan_count / o->batch_size, rest = l->plan_count % o->batch_size;
    l->dropped = o->drop_last ? rest : 0;
    l->epoch_batches = full + (rest && !o->drop_last);
    /* this worker's batches: b = worker, worker + workers, ... below epoch_batches */
    l->batches = l->o.worker < l->epoch_batches
                     ? (l->epoch_batches - l->o.worker + l->o.workers - 1) / l->o.workers
                     : 0;
    if (!(l->pool = calloc(1, sizeof *l->pool))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&l->pool->lock, NULL);
    l->pool->loader_alive = 1;
    l->pool->cap = (size_t)l->o.prefetch + POOL_SPARE;
    if (!(l->pool->spare = calloc(l->pool->cap, sizeof *l->pool->spare))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    l->filler_count = l->o.threads ? l->o.threads : 1;
    l->fillers = calloc((size_t)l->filler_count, sizeof *l->fillers);
    l->threads = calloc((size_t)l->filler_count, sizeof *l->threads);
    l->ring = calloc(l->o.prefetch, sizeof *l->ring);
    if (!l->fillers || !l->threads || !l->ring) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < l->filler_count; i++) {
        if ((rc = filler_init(&l->fillers[i], err)))
            goto fail;
        l->fillers[i].loader = l;
    }
    *out = l;
    return SHARD_OK;
fail:
    shard_loader_free(l);
    return rc;
}

int shard_loader_new(struct shard_loader **out, struct shard_dataset *ds,
                     const struct shard_transforms *transforms,
                     const struct shard_loader_options *o, struct shard_err *err)
{
    return loader_new(out, ds, NULL, transforms, o, err);
}

int shard_loader_new_mixture(struct shard_loader **out, const struct shard_mixture *mix,
                             const struct shard_transforms *transforms,
                             const struct shard_loader_options *o, struct shard_err *err)
{
    return loader_new(out, shard_mixture_source(mix, 0), mix, transforms, o, err);
}

/* End the epoch in progress: stop and join the threads (each finishes the
 * sample it is on), give the batches in flight back, account the time. */
static void stop_epoch(struct shard_loader *l)
{
    sk_flag_put(&l->stopping, 1); /* reads waiting for a server that stalls end now */
    if (l->queue)
        sk_ring_stop(l->queue);
    for (int i = 0; i < l->running; i++)
        pthread_join(l->threads[i], NULL);
    l->running = 0;
    sk_flag_put(&l->stopping, 0);
    for (uint32_t s = 0; l->ring && s < l->o.prefetch; s++) {
        if (l->ring[s])
            pool_return(l->pool, l->ring[s]);
        l->ring[s] = NULL;
    }
    sk_ring_free(l->queue);
    l->queue = NULL;
    if (l->busy_since) {
        add(&l->busy_ns, sk_now_ns() - l->busy_since);
        l->busy_since = 0;
    }
    free(l->list);
    l->list = NULL;
    l->list_len = 0;
    free(l->list_source);
    free(l->list_place);
    for (uint32_t s = 0; l->sources && s < shard_mixture_source_count(l->mix); s++)
        free(l->sources[s].list);
    free(l->sources);
    l->list_source = NULL;
    l->list_place = NULL;
    l->sources = NULL;
}

/* Start the threads on the epoch's list (threads > 0, a non-empty list). */
static int start_fillers(struct shard_loader *l, struct shard_err *err)
{
    int rc = sk_ring_new(&l->queue, l->list_len, l->o.prefetch, l->o.batch_size, err);
    for (uint32_t s = 0; !rc && s < l->o.prefetch; s++)
        if (!(l->ring[s] = pool_take(l, err)))
            rc = SHARD_ENOMEM;
    atomic_store(&l->advised, 0);
    for (int i = 0; !rc && i < l->o.threads; i++) {
        if (pthread_create(&l->threads[i], NULL, filler_main, &l->fillers[i]) != 0)
            rc = shard_err_set(err, SHARD_EIO, "cannot start %d loader threads", l->o.threads);
        else
            l->running = i + 1;
    }
    return rc;
}

void shard_loader_free(struct shard_loader *l)
{
    if (!l)
        return;
    stop_epoch(l);
    for (int i = 0; l->fillers && i < l->filler_count; i++)
        filler_release(&l->fillers[i]);
    free(l->fillers);
    free(l->threads);
    free(l->ring);
    free(l->fields);
    batch_destroy(l->fresh);
    struct loader_pool *p = l->pool;
    if (p) {
        pthread_mutex_lock(&p->lock);
        p->loader_alive = 0;
        int last = p->outstanding == 0;
        pthread_mutex_unlock(&p->lock);
        if (last) {
            pool_free(p);
        } else { /* the last batch freed frees the pool; spares go now */
            pthread_mutex_lock(&p->lock);
            for (size_t i = 0; i < p->len; i++)
                batch_destroy(p->spare[i]);
            p->len = 0;
            pthread_mutex_unlock(&p->lock);
        }
    }
    free(l);
}

uint64_t shard_loader_batch_count(const struct shard_loader *l)
{
    return l->batches;
}

uint64_t shard_loader_sample_count(const struct shard_loader *l)
{
    return l->plan_count;
}

uint64_t shard_loader_dropped(const struct shard_loader *l)
{
    return l->dropped;
}

uint64_t shard_loader_epoch(const struct shard_loader *l)
{
    return l->epoch;
}

uint64_t shard_loader_position(const struct shard_loader *l)
{
    return l->position;
}

/* The inline cancellation's poll: the caller's interrupt. */
static int call_interrupt(void *user)
{
    struct shard_loader *l = user;
    return l->interrupted(l->interrupt_user);
}

void shard_loader_set_interrupt(struct shard_loader *l, int (*interrupted)(void *user), void *user)
{
    l->interrupted = interrupted;
    l->interrupt_user = user;
    l->inline_cancel.poll = interrupted ? call_interrupt : NULL;
    l->inline_cancel.user = l;
}

uint64_t shard_loader_failed_index(const struct shard_loader *l)
{
    return l->failed_index;
}

uint32_t shard_loader_failed_source(const struct shard_loader *l)
{
    return l->failed_source;
}

/* A mixture's started list split by source: each entry's source and its
 * place in that source's own list.  0 or SHARD_ENOMEM. */
static int split_sources(struct shard_loader *l, struct shard_err *err)
{
    const uint32_t k = shard_mixture_source_count(l->mix);
    const size_t n = l->list_len ? (size_t)l->list_len : 1;
    l->sources = calloc(k, sizeof *l->sources);
    l->list_source = malloc(n * sizeof *l->list_source);
    l->list_place = malloc(n * sizeof *l->list_place);
    if (!l->sources || !l->list_source || !l->list_place)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t index;
    for (uint64_t p = 0; p < l->list_len; p++) {
        dataset_of(l, l->list[p], &index, &l->list_source[p]);
        l->list_place[p] = l->sources[l->list_source[p]].len++;
    }
    for (uint32_t s = 0; s < k; s++) {
        if (!(l->sources[s].list = malloc((l->sources[s].len ? l->sources[s].len : 1) *
                                          sizeof *l->sources[s].list)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        l->sources[s].len = 0;
    }
    for (uint64_t p = 0; p < l->list_len; p++) {
        struct source_list *sl = &l->sources[l->list_source[p]];
        dataset_of(l, l->list[p], &sl->list[sl->len++], &l->list_source[p]);
    }
    return SHARD_OK;
}

/* Start epoch `epoch` (the rest after done[0..count) when count > 0) with
 * this worker's batches from + worker, from + worker + workers, ...; the
 * position counts from base. */
static int start_epoch(struct shard_loader *l, uint64_t epoch,
                       const struct shard_plan_segment *done, size_t count, uint64_t from,
                       uint64_t base, struct shard_err *err)
{
    stop_epoch(l);
    l->started = 0;
    struct shard_plan *plan;
    int rc = make_plan(l, epoch, done, count, &plan, err);
    if (rc)
        return rc;
    const uint64_t size = l->o.batch_size, n = shard_plan_count(plan);
    const uint64_t batches = batches_of(n, &l->o);
    if (count &&
        (rc = check_equal_batches(sk_plan_shared(plan), "samples left of the epoch", &l->o, err))) {
        shard_plan_free(plan);
        return rc;
    }
    if (from > batches) {
        shard_plan_free(plan);
        return shard_err_set(err, SHARD_EINVAL, "batch %llu is beyond the %llu of the epoch",
                             (unsigned long long)from, (unsigned long long)batches);
    }
    /* this worker's batches from `from` on, back to back: all are full but
     * perhaps the epoch's last, which is then the list's last too.  They
     * are moved to the front of the plan's own array (a batch never moves
     * back past where it was), which the list then is: no second array of
     * the epoch's samples. */
    const uint64_t end = n - (l->o.drop_last ? n % size : 0), w = l->o.workers;
    const uint64_t todo = from + l->o.worker < batches ? (batches - from - l->o.worker + w - 1) / w
                                                       : 0;
    uint64_t *list = sk_plan_take_indices(plan);
    shard_plan_free(plan);
    l->list_len = 0;
    for (uint64_t i = 0; i < todo; i++) {
        uint64_t b = from + l->o.worker + i * w;
        uint64_t k = (b + 1) * size <= end ? size : end - b * size;
        memmove(list + l->list_len, list + b * size, k * sizeof *list);
        l->list_len += k;
    }
    l->list = list;
    l->epoch = epoch;
    l->from = from;
    l->base = base;
    l->position = base;
    l->todo = todo;
    l->started_batches = batches;
    l->busy_since = sk_now_ns();
    atomic_store(&l->advised, 0);
    if ((l->mix && (rc = split_sources(l, err))) ||
        (l->o.threads && l->list_len && (rc = start_fillers(l, err)))) {
        stop_epoch(l);
        return rc;
    }
    l->started = 1;
    return SHARD_OK;
}

int shard_loader_start(struct shard_loader *l, uint64_t epoch, uint64_t first,
                       struct shard_err *err)
{
    if (first > l->batches) {
        stop_epoch(l);
        l->started = 0;
        return shard_err_set(err, SHARD_EINVAL, "batch %llu is beyond the %llu of an epoch",
                             (unsigned long long)first, (unsigned long long)l->batches);
    }
    return start_epoch(l, epoch, NULL, 0, first * l->o.workers, first, err);
}

int shard_loader_start_resumed(struct shard_loader *l, uint64_t epoch,
                               const struct shard_plan_segment *done, size_t count, uint64_t from,
                               struct shard_err *err)
{
    return start_epoch(l, epoch, done, count, from, from, err);
}

int shard_loader_resumed_batch_count(const struct shard_loader *l, uint64_t epoch,
                                     const struct shard_plan_segment *done, size_t count,
                                     uint64_t *batches, struct shard_err *err)
{
    struct shard_plan *plan;
    int rc = make_plan(l, epoch, done, count, &plan, err);
    if (rc)
        return rc;
    if (!count ||
        !(rc = check_equal_batches(sk_plan_shared(plan), "samples left of the epoch", &l->o, err)))
        *batches = batches_of(shard_plan_count(plan), &l->o);
    shard_plan_free(plan);
    return rc;
}

uint64_t shard_loader_started_batch_count(const struct shard_loader *l)
{
    return l->started_batches;
}

void shard_loader_stop(struct shard_loader *l)
{
    stop_epoch(l);
    l->started = 0;
}

int shard_loader_next(struct shard_loader *l, int timeout_ms, struct shard_batch **out,
                      struct shard_err *err)
{
    *out = NULL;
    if (!l->started)
        return shard_err_set(err, SHARD_EINVAL, "no epoch started");
    if (l->position - l->base >= l->todo) {
        stop_epoch(l);
        return 0;
    }
    struct shard_batch *b;
    uint32_t count;
    uint64_t start = sk_now_ns();
    if (!l->queue) { /* no threads: fill the batch here */
        uint64_t from = (l->position - l->base) * l->o.batch_size;
        count = (uint32_t)(l->list_len - from < l->o.batch_size ? l->list_len - from
                                                                : l->o.batch_size);
        if (!(b = pool_take(l, err)))
            return SHARD_ENOMEM;
        const struct sk_cancel *was = sk_cancel_set(&l->inline_cancel);
        int stopped = 0;
        for (uint32_t j = 0; j < count && !stopped; j++) {
            advise_ahead(l, from + j, l->o.batch_size);
            fill_place(l, &l->fillers[0], b, j, l->list[from + j]);
            stopped = b->rc[j] == SHARD_EINTR || sk_cancelled();
        }
        sk_cancel_set(was);
        if (stopped) { /* interrupted: the batch is made again by the next start */
            pool_return(l->pool, b);
            add(&l->wait_ns, sk_now_ns() - start);
            return shard_err_set(err, SHARD_EINTR, SK_CANCELLED_MESSAGE);
        }
    } else {
        /* the batch that replaces the one taken, before anything is taken */
        if (!l->fresh && !(l->fresh = pool_take(l, err)))
            return SHARD_ENOMEM;
        struct sk_ring_group g;
        int w = sk_ring_wait(l->queue, timeout_ms, &g);
        add(&l->wait_ns, sk_now_ns() - start);
        if (w == SK_RING_NOT_YET)
            return SHARD_LOADER_WAITING;
        if (w != SK_RING_READY) /* the list ends with the epoch's last batch */
            return w < 0 ? w : shard_err_set(err, SHARD_EINVAL, "the loader was stopped");
        b = l->ring[g.slot];
        l->ring[g.slot] = l->fresh;
        l->fresh = NULL;
        sk_ring_release(l->queue);
        count = g.len;
        start = sk_now_ns(); /* the wait is accounted */
    }
    int rc = finish_batch(l, b, count,
                          l->from + l->o.worker + (l->position - l->base) * l->o.workers, err);
    if (!l->queue)
        add(&l->wait_ns, sk_now_ns() - start);
    l->position++;
    if (rc) {
        add(&l->failed_batches, 1);
        pool_return(l->pool, b);
        return rc;
    }
    pthread_mutex_lock(&l->pool->lock);
    l->pool->outstanding++;
    pthread_mutex_unlock(&l->pool->lock);
    add(&l->samples, b->info.count);
    add(&l->batch_count, 1);
    *out = b;
    return 1;
}

void shard_loader_stats(const struct shard_loader *l, struct shard_loader_stats *s)
{
    memset(s, 0, sizeof *s);
    s->samples = atomic_load(&l->samples);
    s->batches = atomic_load(&l->batch_count);
    s->skipped = atomic_load(&l->skipped);
    s->failed_batches = atomic_load(&l->failed_batches);
    s->transform_ns = atomic_load(&l->transform_ns);
    s->wait_ns = atomic_load(&l->wait_ns);
    s->busy_ns = atomic_load(&l->busy_ns) + (l->busy_since ? sk_now_ns() - l->busy_since : 0);
}
