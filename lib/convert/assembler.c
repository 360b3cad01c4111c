/* assembler.c - records into shards, in sample order, with journals (see assembler.h). */
#include "convert/assembler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/grow.h"
#include "format/writer_internal.h"
#include "shardkit/format.h"
#include "image/image_internal.h"
#include "manifest/manifest_internal.h"

#define NAME_BYTES 64

struct assembler {
    struct dst *dst;
    const struct shard_config *config;
    uint32_t label_count;
    uint64_t *label_samples;
    uint64_t unlabeled;
    uint64_t samples;
    uint64_t bytes;
    uint64_t *field_samples;        /* per declared field: samples that have it */
    uint64_t sidecars;              /* sidecar files stored as fields */
    struct sk_stored_images stored; /* the samples' forms and sizes */

    struct shard_manifest_shard *shards; /* finished shards */
    uint32_t shard_count;
    uint32_t shard_base;  /* number (header, file name) of shards[0]: see start_at */
    uint32_t shard_limit; /* most shards this run may write */
    uint32_t shard_cap;

    struct shard_sample *warned; /* samples stored despite a decoder warning */
    uint64_t warned_count;
    uint64_t warned_cap;

    struct shard_reject *rejects;
    uint64_t reject_count;
    uint64_t reject_cap;
    uint64_t pending_from; /* first reject not yet in a journal */
    uint64_t pending_pos;  /* order position of that reject */

    /* the shard being written */
    struct shard_writer *writer;
    struct journal_writer *journal;
    char shard_tmp[NAME_BYTES + 8]; /* names in DST/.shardify */
    char journal_tmp[NAME_BYTES + 8];
    uint64_t pos_start;
    uint64_t pos_next; /* next order position expected */
};

int sk_assembler_new(struct assembler **out, struct dst *d, const struct shard_config *c,
                     uint32_t label_count, struct shard_err *err)
{
    *out = NULL;
    struct assembler *a = calloc(1, sizeof *a);
    if (!a || !(a->label_samples = calloc(label_count ? label_count : 1, sizeof(uint64_t))) ||
        !(a->field_samples = calloc(c->field_count ? c->field_count : 1, sizeof(uint64_t)))) {
        if (a)
            free(a->label_samples);
        free(a);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    a->dst = d;
    a->config = c;
    a->label_count = label_count;
    a->shard_limit = UINT32_MAX;
    *out = a;
    return SHARD_OK;
}

void sk_assembler_start_at(struct assembler *a, uint32_t base, uint32_t limit, uint64_t first)
{
    a->shard_base = base;
    a->shard_limit = limit;
    a->pos_next = first;
}

static void drop_open_shard(struct assembler *a)
{
    shard_writer_free(a->writer); /* removes the partial file */
    sk_journal_writer_free(a->journal);
    a->writer = NULL;
    a->journal = NULL;
}

void sk_assembler_free(struct assembler *a)
{
    if (!a)
        return;
    drop_open_shard(a);
    for (uint32_t i = 0; i < a->shard_count; i++)
        free(a->shards[i].file);
    free(a->shards);
    for (uint64_t i = 0; i < a->reject_count; i++)
        shard_reject_release(&a->rejects[i]);
    free(a->rejects);
    for (uint64_t i = 0; i < a->warned_count; i++)
        shard_sample_release(&a->warned[i]);
    free(a->warned);
    free(a->label_samples);
    free(a->field_samples);
    free(a);
}

/* Room in *array (of *cap items of `size` bytes) for item `count`. */
static int make_room(void *array, uint64_t count, uint64_t *cap, size_t size, struct shard_err *err)
{
    size_t grown = (size_t)*cap;
    if (sk_grow(array, &grown, (size_t)count + 1, size, 64))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    *cap = grown;
    return SHARD_OK;
}

/* Keep a copy of a sample that carries a warning, for the summary. */
static int keep_warned(struct assembler *a, const struct shard_sample *s, struct shard_err *err)
{
    int rc = make_room(&a->warned, a->warned_count, &a->warned_cap, sizeof *a->warned, err);
    if (rc)
        return rc;
    struct shard_sample *c = &a->warned[a->warned_count];
    *c = (struct shard_sample){.key = malloc(s->key_len + 1),
                               .key_len = s->key_len,
                               .label = s->label,
                               .shard = s->shard,
                               .record = s->record,
                               .width = s->width,
                               .height = s->height,
                               .source_bytes = s->source_bytes,
                               .source_xxh3 = s->source_xxh3,
                               .warning = strdup(s->warning)};
    if (!c->key || !c->warning) {
        shard_sample_release(c);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    memcpy(c->key, s->key, s->key_len);
    c->key[s->key_len] = '\0';
    a->warned_count++;
    return SHARD_OK;
}

static int count_sample(struct assembler *a, const struct shard_sample *s, struct shard_err *err)
{
    int32_t label = s->label;
    if (s->warning) {
        int rc = keep_warned(a, s, err);
        if (rc)
            return rc;
    }
    if (label == SHARD_NO_LABEL) {
        a->unlabeled++;
    } else if (label >= 0 && (uint32_t)label < a->label_count) {
        a->label_samples[label]++;
    } else {
        return shard_err_set(err, SHARD_ECORRUPT, "label %d is out of range", label);
    }
    uint32_t channels = s->channels ? s->channels : SHARD_PIXELS_RGB,
             depth = s->depth ? s->depth : 8;
    if (channels > SHARD_PIXELS_RGBA || (depth != 8 && depth != 16))
        return shard_err_set(err, SHARD_ECORRUPT, "a sample of %u channels of %u bits", channels,
                             depth);
    struct sk_stored_images *st = &a->stored;
    st->forms[channels][depth == 16]++;
    if (a->samples == 0)
        st->width = s->width, st->height = s->height;
    else if (st->width != s->width || st->height != s->height)
        st->sizes_differ = 1;
    for (uint32_t i = 0; i < s->field_count; i++) {
        uint32_t f = s->fields[i].field;
        if (f >= a->config->field_count)
            return shard_err_set(err, SHARD_ECORRUPT, "field %u is out of range", f);
        a->field_samples[f]++;
        if (a->config->fields[f].sidecar)
            a->sidecars++;
    }
    a->samples++;
    return SHARD_OK;
}

static int push_shard(struct assembler *a, uint32_t index, uint64_t samples, uint64_t bytes,
                      uint64_t xxh3, struct shard_err *err)
{
    if (index != a->shard_base + a->shard_count)
        return shard_err_set(err, SHARD_ECORRUPT, "shard %u out of order", index);
    if (a->shard_count == a->shard_cap) {
        uint32_t cap = a->shard_cap ? 2 * a->shard_cap : 16;
        void *p = realloc(a->shards, cap * sizeof *a->shards);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        a->shards = p;
        a->shard_cap = cap;
    }
    char name[64];
    shard_file_name(index, name, sizeof name);
    struct shard_manifest_shard *s = &a->shards[a->shard_count];
    if (!(s->file = strdup(name)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    s->samples = samples;
    s->bytes = bytes;
    s->xxh3 = xxh3;
    a->shard_count++;
    a->bytes += bytes;
    return SHARD_OK;
}

static int push_reject(struct assembler *a, struct shard_reject *r, struct shard_err *err)
{
    int rc = make_room(&a->rejects, a->reject_count, &a->reject_cap, sizeof *a->rejects, err);
    if (rc)
        return rc;
    a->rejects[a->reject_count++] = *r;
    memset(r, 0, sizeof *r);
    return SHARD_OK;
}

int sk_assembler_adopt_sample(struct assembler *a, const struct shard_sample *s,
                              struct shard_err *err)
{
    return count_sample(a, s, err);
}

int sk_assembler_adopt_reject(struct assembler *a, struct shard_reject *r, struct shard_err *err)
{
    int rc = push_reject(a, r, err);
    a->pending_from = a->reject_count;
    return rc;
}

int sk_assembler_adopt_end(struct assembler *a, const struct journal_end *end,
                           struct shard_err *err)
{
    a->pos_next = end->pos_end;
    a->pending_from = a->reject_count;
    return push_shard(a, end->shard, end->samples, end->bytes, end->xxh3, err);
}

static int open_shard(struct assembler *a, uint64_t pos, struct shard_err *err)
{
    char name[NAME_BYTES], jname[NAME_BYTES];
    uint32_t number = a->shard_base + a->shard_count;
    if (a->shard_count >= a->shard_limit)
        return shard_err_set(err, SHARD_ELIMIT,
                             "a part may write at most %u shards: use a "
                             "larger --shard-size or fewer parts",
                             a->shard_limit);
    shard_file_name(number, name, sizeof name);
    sk_journal_name(number, jname, sizeof jname);
    snprintf(a->shard_tmp, sizeof a->shard_tmp, "%s.tmp", name);
    snprintf(a->journal_tmp, sizeof a->journal_tmp, "%s.tmp", jname);
    const struct dst *d = a->dst;
    unlinkat(d->work_fd, a->shard_tmp, 0); /* a killed run's leftover */
    int rc = sk_shard_writer_openat(&a->writer, d->work_fd, d->work, a->shard_tmp, number,
                                    sk_config_format_version(a->config), err);
    if (!rc)
        rc = sk_journal_writer_open(&a->journal, d->work_fd, d->work, a->journal_tmp, err);
    if (rc)
        return rc;
    /* rejects that came before this shard's first record belong to it */
    a->pos_start = a->reject_count > a->pending_from ? a->pending_pos : pos;
    for (uint64_t i = a->pending_from; !rc && i < a->reject_count; i++)
        rc = sk_journal_writer_reject(a->journal, &a->rejects[i], err);
    a->pending_from = a->reject_count;
    return rc;
}

static int close_shard(struct assembler *a, struct shard_err *err)
{
    uint64_t bytes, xxh3;
    uint32_t index = a->shard_base + a->shard_count;
    uint64_t records = sk_writer_records(a->writer);
    int rc = shard_writer_finish(a->writer, &bytes, &xxh3, err);
    if (rc)
        return rc;
    struct journal_end end = {
        .shard = index,
        .samples = records,
        .bytes = bytes,
        .xxh3 = xxh3,
        .pos_start = a->pos_start,
        .pos_end = a->pos_next,
    };
    rc = sk_journal_writer_finish(a->journal, &end, err);
    if (rc)
        return rc;
    /* journal first, then the shard: a shard under its final name always has
     * a complete journal (see journal.h) */
    char name[NAME_BYTES], jname[NAME_BYTES];
    shard_file_name(index, name, sizeof name);
    sk_journal_name(index, jname, sizeof jname);
    const struct dst *d = a->dst;
    rc = sk_fs_rename_at(d->work_fd, d->work, a->journal_tmp, d->work_fd, d->work, jname, err);
    if (!rc)
        rc = sk_fs_rename_at(d->work_fd, d->work, a->shard_tmp, d->fd, d->path, name, err);
    if (!rc) /* an s3:// DST: uploaded as soon as it is finished */
        rc = sk_dst_publish(a->dst, name, err);
    if (!rc)
        rc = push_shard(a, index, records, bytes, xxh3, err);
    drop_open_shard(a); /* both are finished: nothing is removed */
    return rc;
}

int sk_assembler_sample(struct assembler *a, uint64_t pos, struct shard_sample *s,
                        const uint8_t *frame, size_t frame_len, uint64_t frame_xxh3,
                        struct shard_err *err)
{
    int rc;
    if (pos != a->pos_next)
        return shard_err_set(err, SHARD_EINVAL, "position %llu out of order",
                             (unsigned long long)pos);
    if (a->writer && sk_writer_records(a->writer) > 0 &&
        shard_writer_projected_bytes(a->writer, frame_len, s->key_len) > a->config->shard_size) {
        if ((rc = close_shard(a, err)))
            return rc;
    }
    if (!a->writer && (rc = open_shard(a, pos, err)))
        return rc;
    s->shard = a->shard_count;
    s->record = sk_writer_records(a->writer);
    if ((rc = shard_writer_add(a->writer, frame, frame_len, frame_xxh3, (const uint8_t *)s->key,
                               s->key_len, s->label, err)) ||
        (rc = sk_journal_writer_sample(a->journal, s, a->config, err)) ||
        (rc = count_sample(a, s, err)))
        return rc;
    a->pos_next = pos + 1;
    return SHARD_OK;
}

int sk_assembler_reject(struct assembler *a, uint64_t pos, struct shard_reject *r,
                        struct shard_err *err)
{
    if (pos != a->pos_next)
        return shard_err_set(err, SHARD_EINVAL, "position %llu out of order",
                             (unsigned long long)pos);
    int rc = a->journal ? sk_journal_writer_reject(a->journal, r, err) : SHARD_OK;
    if (!a->journal && a->reject_count == a->pending_from)
        a->pending_pos = pos;
    if (!rc)
        rc = push_reject(a, r, err);
    if (!rc && a->journal)
        a->pending_from = a->reject_count;
    a->pos_next = pos + 1;
    return rc;
}

int sk_assembler_finish(struct assembler *a, struct shard_err *err)
{
    return a->writer ? close_shard(a, err) : SHARD_OK;
}

const struct shard_manifest_shard *sk_assembler_shards(const struct assembler *a, uint32_t *count)
{
    *count = a->shard_count;
    return a->shards;
}

uint64_t sk_assembler_samples(const struct assembler *a)
{
    return a->samples;
}

int sk_stored_images_form(const struct sk_stored_images *st, uint32_t *channels, uint32_t *depth)
{
    int forms = 0;
    *channels = 0, *depth = 0;
    for (uint32_t c = 1; c <= SHARD_PIXELS_RGBA; c++)
        for (uint32_t d = 0; d < 2; d++)
            if (st->forms[c][d]) {
                forms++;
                if (*channels)
                    sk_pixels_widest(*channels, *depth, c, d ? 16 : 8, channels, depth);
                else
                    *channels = c, *depth = d ? 16 : 8;
            }
    if (!*channels) /* no sample: the form of every dataset before version 3 */
        *channels = SHARD_PIXELS_RGB, *depth = 8;
    return forms;
}

const struct sk_stored_images *sk_assembler_stored(const struct assembler *a)
{
    return &a->stored;
}

uint64_t sk_assembler_unlabeled(const struct assembler *a)
{
    return a->unlabeled;
}

const uint64_t *sk_assembler_field_samples(const struct assembler *a)
{
    return a->field_samples;
}

uint64_t sk_assembler_sidecars(const struct assembler *a)
{
    return a->sidecars;
}

const uint64_t *sk_assembler_label_samples(const struct assembler *a)
{
    return a->label_samples;
}

uint64_t sk_assembler_bytes(const struct assembler *a)
{
    return a->bytes;
}

uint64_t sk_assembler_reject_count(const struct assembler *a)
{
    return a->reject_count;
}

uint64_t sk_assembler_warned(const struct assembler *a)
{
    return a->warned_count;
}

struct shard_sample *sk_assembler_take_warned(struct assembler *a, uint64_t *count)
{
    struct shard_sample *w = a->warned;
    *count = a->warned_count;
    a->warned = NULL;
    a->warned_count = a->warned_cap = 0;
    return w;
}

const struct shard_reject *sk_assembler_rejects(const struct assembler *a, uint64_t *count)
{
    *count = a->reject_count;
    return a->rejects;
}

struct shard_reject *sk_assembler_take_rejects(struct assembler *a, uint64_t *count)
{
    struct shard_reject *r = a->rejects;
    *count = a->reject_count;
    a->rejects = NULL;
    a->reject_count = a->reject_cap = 0;
    return r;
}
