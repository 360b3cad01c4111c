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

/* A tally's values as numbers for a histogram (their counts beside). */
static int tally_histogram(struct cli_histogram *h, const struct shard_tally *t, size_t bins)
{
    double *values = malloc((t->count ? t->count : 1) * sizeof *values);
    if (!values)
        return -1;
    for (size_t i = 0; i < t->count; i++)
        values[i] = (double)t->values[i];
    int rc = cli_histogram_make_counted(h, values, t->counts, t->count, bins, CLI_SCALE_LINEAR);
    free(values);
    return rc;
}

/* Stored bytes of every record, as the shard footers the check read say. */
static int size_records(struct dataset_summary *s, const struct shard_verify_report *r)
{
    s->shards_sized = r->shards_sized;
    if (r->shards_sized < s->manifest.shard_count) {
        char why[96];
        snprintf(why, sizeof why, "%llu shard footers could not be read",
                 (unsigned long long)(s->manifest.shard_count - r->shards_sized));
        note(s, "stored sizes leave out shards", why);
    }
    return tally_histogram(&s->record_bytes, &r->record_bytes, SUMMARY_SIZE_BINS);
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
static int keep_warned(struct dataset_summary *s, const struct shard_warned_sample *from)
{
    if (s->warned_count == SUMMARY_WARNED_LISTED)
        return 0;
    if (!s->warned && !(s->warned = calloc(SUMMARY_WARNED_LISTED, sizeof *s->warned)))
        return -1;
    struct warned_sample *w = &s->warned[s->warned_count];
    w->key = malloc(from->key_len + 1);
    w->warning = strdup(from->warning);
    if (!w->key || !w->warning) {
        free(w->key);
        free(w->warning);
        return -1;
    }
    memcpy(w->key, from->key, from->key_len + 1);
    w->key_len = from->key_len;
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

/* Samples per field and text lengths, as the index lines say. */
static int count_fields(struct dataset_summary *s, const struct shard_verify_report *r)
{
    for (uint32_t f = 0; s->fields && f < s->field_count && r->field_lines; f++) {
        s->fields[f].samples = r->field_lines[f];
        if (s->fields[f].decl->type == SHARD_FIELD_TEXT && r->text_lengths[f].count &&
            tally_histogram(&s->fields[f].lengths, &r->text_lengths[f], SUMMARY_LENGTH_BINS))
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
 * decoder warning, and the fields, as the check read them in the index. */
static int measure_dimensions(struct dataset_summary *s, const struct shard_verify_report *r)
{
    if (!r->index_read) {
        note(s, "dimensions and fields' samples left out",
             "the index could not be read to its end");
        return 0;
    }
    for (size_t i = 0; i < r->warned_count; i++)
        if (keep_warned(s, &r->warned[i]))
            return -1;
    if (count_fields(s, r))
        return -1;
    const struct shard_tally *t = &r->dimensions;
    for (size_t i = 0; i < t->count; i++) {
        uint32_t w = (uint32_t)(t->values[i] >> 32), h = (uint32_t)t->values[i];
        if (i == 0 || w < s->min_width)
            s->min_width = w;
        if (w > s->max_width)
            s->max_width = w;
        if (i == 0 || h < s->min_height)
            s->min_height = h;
        if (h > s->max_height)
            s->max_height = h;
        consider(s, t->values[i], t->counts[i]);
    }
    if (t->others)
        note(s, "dimensions", "more distinct sizes than counted; the rest are left out");
    s->have_dimensions = 1;
    return 0;
}

int summary_load(struct dataset_summary *s, const char *dst, const struct shard_verify_report *r)
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
    if (rc || !s->config || group_rejects(s) || start_fields(s) || size_records(s, r) ||
        measure_dimensions(s, r)) {
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
