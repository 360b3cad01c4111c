/* summary.c - what a dataset holds, for the reports (see summary.h). */
#include "summary.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void note(struct dataset_summary *s, const char *what, const char *why)
{
    size_t used = strlen(s->note);
    snprintf(s->note + used, sizeof s->note - used, "%s%s: %s", used ? "; " : "", what, why);
}

/* The form of a reason shared by its kind: the text before the first ':'
 * (the detail after it differs from file to file), every run of digits
 * written N.  Malloc'd, or NULL. */
static char *reason_kind(const char *reason)
{
    size_t len = strcspn(reason, ":");
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (isdigit((unsigned char)reason[i])) {
            *o++ = 'N';
            while (i + 1 < len && isdigit((unsigned char)reason[i + 1]))
                i++;
        } else {
            *o++ = reason[i];
        }
    }
    *o = '\0';
    return out;
}

static int compare_reasons(const void *pa, const void *pb)
{
    const struct reject_reason *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return strcmp(a->reason, b->reason);
}

static int group_rejects(struct dataset_summary *s)
{
    const struct shard_manifest *m = &s->manifest;
    if (!m->reject_count)
        return 0;
    s->reasons = calloc(m->reject_count, sizeof *s->reasons);
    if (!s->reasons)
        return -1;
    for (uint64_t i = 0; i < m->reject_count; i++) {
        char *kind = reason_kind(m->rejects[i].reason ? m->rejects[i].reason : "");
        if (!kind)
            return -1;
        size_t k = 0;
        while (k < s->reason_count && strcmp(s->reasons[k].reason, kind))
            k++;
        if (k == s->reason_count)
            s->reasons[s->reason_count++].reason = kind;
        else
            free(kind);
        s->reasons[k].count++;
    }
    qsort(s->reasons, s->reason_count, sizeof *s->reasons, compare_reasons);
    return 0;
}

/* Stored bytes of every record, from the shard footers. */
static int size_records(struct dataset_summary *s, const char *dst)
{
    const struct shard_manifest *m = &s->manifest;
    uint64_t cap = m->samples ? m->samples : 1, n = 0;
    double *bytes = malloc(cap * sizeof *bytes);
    if (!bytes)
        return -1;
    for (uint32_t i = 0; i < m->shard_count; i++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dst, m->shards[i].file) < 0) {
            free(bytes);
            return -1;
        }
        struct shard_file *f;
        struct shard_err err;
        int rc = shard_file_open(&f, path, &err);
        free(path);
        if (rc) {
            note(s, "stored sizes leave out a shard", err.msg);
            continue;
        }
        const struct shard_footer *footer = shard_file_footer(f);
        for (uint64_t r = 0; r < footer->record_count; r++) {
            if (n == cap) {
                double *grown = realloc(bytes, 2 * cap * sizeof *bytes);
                if (!grown) {
                    shard_file_close(f);
                    free(bytes);
                    return -1;
                }
                bytes = grown;
                cap *= 2;
            }
            bytes[n++] = (double)footer->rows[r].frame_bytes;
        }
        shard_file_close(f);
        s->shards_sized++;
    }
    int rc = cli_histogram_make(&s->record_bytes, bytes, n, SUMMARY_SIZE_BINS, CLI_SCALE_LINEAR);
    free(bytes);
    return rc;
}

static int compare_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

static int compare_dimensions(const void *pa, const void *pb)
{
    const struct dimension_count *a = pa, *b = pb;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    if (a->width != b->width)
        return a->width < b->width ? -1 : 1;
    return (a->height > b->height) - (a->height < b->height);
}

/* Keep run [w x h] of `count` samples if it is among the most common. */
static void consider(struct dataset_summary *s, uint64_t wh, uint64_t count)
{
    struct dimension_count d = {(uint32_t)(wh >> 32), (uint32_t)wh, count};
    s->distinct_dimensions++;
    if (s->top_count < SUMMARY_TOP_DIMENSIONS) {
        s->top[s->top_count++] = d;
    } else if (compare_dimensions(&d, &s->top[SUMMARY_TOP_DIMENSIONS - 1]) < 0) {
        s->top[SUMMARY_TOP_DIMENSIONS - 1] = d;
    } else {
        return;
    }
    qsort(s->top, s->top_count, sizeof *s->top, compare_dimensions);
}

/* Keep a sample stored despite a decoder warning.  0 or -1 (out of memory). */
static int keep_warned(struct dataset_summary *s, const struct shard_sample *smp)
{
    if (!smp->warning || s->warned_count == SUMMARY_WARNED_LISTED)
        return 0;
    if (!s->warned && !(s->warned = calloc(SUMMARY_WARNED_LISTED, sizeof *s->warned)))
        return -1;
    struct warned_sample *w = &s->warned[s->warned_count];
    w->key = malloc(smp->key_len + 1);
    w->warning = strdup(smp->warning);
    if (!w->key || !w->warning) {
        free(w->key);
        free(w->warning);
        return -1;
    }
    memcpy(w->key, smp->key, smp->key_len);
    w->key[smp->key_len] = '\0';
    w->key_len = smp->key_len;
    s->warned_count++;
    return 0;
}

/* The fields as declared, counted as the manifest says until the index is read. */
static int start_fields(struct dataset_summary *s)
{
    const struct shard_config *c = &s->manifest.config;
    if (!c->field_count)
        return 0;
    if (!(s->fields = calloc(c->field_count, sizeof *s->fields)))
        return -1;
    s->field_count = c->field_count;
    for (uint32_t f = 0; f < c->field_count; f++) {
        struct field_summary *fs = &s->fields[f];
        fs->decl = &c->fields[f];
        const char *name = shard_field_type_name(fs->decl->type);
        if (shard_field_type_is_vector(fs->decl->type))
            snprintf(fs->type, sizeof fs->type, "%s[%u]", name, fs->decl->length);
        else
            snprintf(fs->type, sizeof fs->type, "%s", name ? name : "?");
        fs->samples = s->manifest.field_samples ? s->manifest.field_samples[f] : 0;
    }
    return 0;
}

/* What the index lines say of the fields: samples per field, and each
 * text value's length (lengths[f] grows by one per value, *cap values). */
static int count_fields(struct dataset_summary *s, const struct shard_sample *smp,
                        uint64_t *counted, double **lengths, uint64_t *length_count)
{
    for (uint32_t i = 0; i < smp->field_count; i++) {
        uint32_t f = smp->fields[i].field;
        counted[f]++;
        if (s->fields[f].decl->type != SHARD_FIELD_TEXT)
            continue;
        if (!lengths[f] && !(lengths[f] = malloc((s->manifest.samples ? s->manifest.samples : 1) *
                                                 sizeof *lengths[f])))
            return -1;
        if (length_count[f] < s->manifest.samples) /* more lines than samples: checked elsewhere */
            lengths[f][length_count[f]++] = (double)smp->fields[i].source_bytes;
    }
    return 0;
}

/* Samples per field and text lengths, once the whole index was read. */
static int finish_fields(struct dataset_summary *s, const uint64_t *counted, double **lengths,
                         const uint64_t *length_count)
{
    for (uint32_t f = 0; s->fields && f < s->manifest.config.field_count; f++) {
        s->fields[f].samples = counted[f];
        if (lengths[f] && cli_histogram_make(&s->fields[f].lengths, lengths[f], length_count[f],
                                             SUMMARY_LENGTH_BINS, CLI_SCALE_LINEAR))
            return -1;
    }
    return 0;
}

const char *summary_field_source(const struct field_summary *f, char *buf, size_t size)
{
    if (f->decl->sidecar)
        snprintf(buf, size, "sidecar %s", f->decl->sidecar);
    else if (f->decl->coco)
        snprintf(buf, size, "COCO %s", f->decl->coco);
    else if (f->decl->folder)
        snprintf(buf, size, "folder %s", f->decl->folder);
    else
        snprintf(buf, size, "column %s", f->decl->column ? f->decl->column : "?");
    return buf;
}

/* Stored width and height of every sample, the samples stored despite a
 * decoder warning, and the fields, from index.jsonl. */
static int measure_dimensions(struct dataset_summary *s, const char *dst)
{
    const struct shard_manifest *m = &s->manifest;
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dst, m->index_file) < 0)
        return -1;
    struct shard_index_reader *r;
    struct shard_err err;
    int rc = shard_index_reader_open(&r, path, &err);
    free(path);
    if (rc) {
        note(s, "dimensions left out", err.msg);
        return rc == SHARD_ENOMEM ? -1 : 0;
    }
    shard_index_reader_set_config(r, &m->config);
    uint32_t nf = m->config.field_count;
    uint64_t cap = m->samples ? m->samples : 1, n = 0;
    uint64_t *wh = malloc(cap * sizeof *wh);
    uint64_t *counted = calloc(nf + 1, sizeof *counted);
    uint64_t *length_count = calloc(nf + 1, sizeof *length_count);
    double **lengths = calloc(nf + 1, sizeof *lengths);
    struct shard_sample smp;
    if (!counted || !length_count || !lengths) {
        free(wh);
        wh = NULL;
    }
    while (wh && (rc = shard_index_reader_next(r, &smp, &err)) == 1) {
        if (keep_warned(s, &smp) || count_fields(s, &smp, counted, lengths, length_count))
            break;
        if (n == cap) {
            uint64_t *grown = realloc(wh, 2 * cap * sizeof *wh);
            if (!grown)
                break;
            wh = grown;
            cap *= 2;
        }
        wh[n++] = (uint64_t)smp.width << 32 | smp.height;
    }
    shard_index_reader_close(r);
    /* out of memory (a loop left early, or the reader's) */
    int failed = !wh || rc == 1 || rc == SHARD_ENOMEM ||
                 (rc == 0 && finish_fields(s, counted, lengths, length_count));
    for (uint32_t f = 0; lengths && f < nf; f++)
        free(lengths[f]);
    free(lengths);
    free(counted);
    free(length_count);
    if (failed) {
        free(wh);
        return -1;
    }
    if (rc < 0) {
        note(s, "dimensions and fields' samples left out", err.msg);
        free(wh);
        return 0;
    }
    qsort(wh, n, sizeof *wh, compare_u64);
    for (uint64_t i = 0, run = 1; i < n; i++, run++) {
        uint32_t w = (uint32_t)(wh[i] >> 32), h = (uint32_t)wh[i];
        if (i == 0 || w < s->min_width)
            s->min_width = w;
        if (w > s->max_width)
            s->max_width = w;
        if (i == 0 || h < s->min_height)
            s->min_height = h;
        if (h > s->max_height)
            s->max_height = h;
        if (i + 1 == n || wh[i + 1] != wh[i]) {
            consider(s, wh[i], run);
            run = 0;
        }
    }
    s->have_dimensions = 1;
    free(wh);
    return 0;
}

int summary_load(struct dataset_summary *s, const char *dst)
{
    memset(s, 0, sizeof *s);
    struct shard_err err;
    if (shard_manifest_load(dst, &s->manifest, &err)) {
        note(s, "manifest.json", err.msg);
        return -1;
    }
    char *config = NULL;
    int rc = shard_config_dump(&s->manifest.config, &config, &err);
    if (!rc)
        s->config = json_loads(config, 0, NULL);
    free(config);
    if (rc || !s->config || group_rejects(s) || start_fields(s) || size_records(s, dst) ||
        measure_dimensions(s, dst)) {
        summary_release(s);
        note(s, "the summary", "out of memory");
        return -1;
    }
    return 0;
}

void summary_release(struct dataset_summary *s)
{
    if (!s)
        return;
    shard_manifest_release(&s->manifest);
    json_decref(s->config);
    for (size_t i = 0; i < s->reason_count; i++)
        free(s->reasons[i].reason);
    free(s->reasons);
    cli_histogram_release(&s->record_bytes);
    for (size_t i = 0; i < s->warned_count; i++) {
        free(s->warned[i].key);
        free(s->warned[i].warning);
    }
    free(s->warned);
    for (uint32_t f = 0; f < s->field_count; f++)
        cli_histogram_release(&s->fields[f].lengths);
    free(s->fields);
    memset(s, 0, sizeof *s);
}

uint64_t summary_candidates(const struct dataset_summary *s)
{
    return s->manifest.samples + s->manifest.rejected;
}
