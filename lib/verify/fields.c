/* fields.c - the fields of a version 2 dataset: what each index line names,
 * what each record holds, and the counts (see verify_internal.h).
 *
 * The index pass notes, per sample, a bit per field its line names, and
 * checks that required fields are there and that counts.fields and
 * counts.sidecars equal what the lines name.  The deep pass then holds each
 * record's field area against the manifest (declared fields of their
 * declared types, values valid for them: shard_field_check_image), against its
 * index line (the same fields present) and counts the fields the records
 * hold.
 *
 * field_xxh3 (--deep) ties the records to their sources.  Per sample and
 * field: for a text, json or bytes field, whose stored value is its source
 * bytes as they were, and for a table's value, identified by the value as
 * stored, the index line's source_xxh3, which the record's value must hash
 * to; for the other types from a sidecar (numbers, vectors, labels), which
 * are parsed from their file, the xxh3 of the value the record stores,
 * which --source compares with the xxh3 of the value parsed from SRC again
 * (source_fields.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "read/dataset_internal.h"
#include "shardx/shardx.h"
#include "shardkit/source.h"
#include "verify/verify_internal.h"
#include "source/source_internal.h"

/* Whether a field's identity in the index lines is that of the value a
 * record stores: a text, json or bytes value is its source bytes unchanged,
 * and a table's or a COCO file's value is identified by the value as
 * stored. */
static int identity_is_stored(const struct shard_field_decl *d)
{
    return d->type == SHARD_FIELD_TEXT || d->type == SHARD_FIELD_JSON ||
           d->type == SHARD_FIELD_BYTES || d->column || d->coco;
}

/* A tally per BOXES and MASK field in the report (--deep): -1 when out of
 * memory (the report's release frees what was made). */
static int begin_tallies(struct verify_run *v)
{
    const struct shard_config *c = &v->m->config;
    struct shard_verify_report *r = v->report;
    uint32_t n = 0;
    for (uint32_t f = 0; f < c->field_count; f++)
        n += c->fields[f].type == SHARD_FIELD_BOXES || c->fields[f].type == SHARD_FIELD_MASK;
    if (!n)
        return 0;
    if (!(r->targets = calloc(n, sizeof *r->targets)))
        return -1;
    for (uint32_t f = 0; f < c->field_count; f++) {
        const struct shard_field_decl *d = &c->fields[f];
        if (d->type != SHARD_FIELD_BOXES && d->type != SHARD_FIELD_MASK)
            continue;
        struct shard_target_tally *t = &r->targets[r->target_count++];
        t->field = f;
        t->mask = d->type == SHARD_FIELD_MASK;
        if (!(t->name = strdup(d->name)) ||
            !(t->classes = calloc(d->class_count ? d->class_count : 1, sizeof *t->classes)))
            return -1;
        for (uint32_t k = 0; k < d->class_count; k++) {
            t->classes[k].id = d->classes[k].id;
            if (!(t->classes[k].name = strdup(d->classes[k].name)))
                return -1;
            t->class_count = k + 1;
        }
        if (!(t->per_class = calloc(d->class_count ? d->class_count : 1, sizeof *t->per_class)) ||
            !(t->samples_with = calloc(d->class_count ? d->class_count : 1,
                                       sizeof *t->samples_with)))
            return -1;
    }
    return 0;
}

/* Add a valid BOXES or MASK value of field d to its tally t (thread-safe). */
static void tally_value(struct shard_target_tally *t, const struct shard_field_decl *d,
                        const uint8_t *value, size_t len)
{
    uint32_t *seen = NULL; /* per value: boxes of each class, or pixels of each value */
    uint64_t items;
    if (d->type == SHARD_FIELD_BOXES) {
        items = len / SHARD_BOX_BYTES;
        if (!(seen = calloc(d->class_count ? d->class_count : 1, sizeof *seen)))
            return; /* a tally is a summary: without memory it is left short */
        for (uint64_t i = 0; i < items; i++) {
            const uint8_t *p = value + i * SHARD_BOX_BYTES + 16;
            uint32_t id = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                          (uint32_t)p[3] << 24;
            int32_t k = shard_field_class_find(d, id); /* the value was checked: k >= 0 */
            if (k >= 0)
                seen[k]++;
        }
        uint64_t max = __atomic_load_n(&t->max_boxes, __ATOMIC_RELAXED);
        while (items > max && !__atomic_compare_exchange_n(&t->max_boxes, &max, items, 0,
                                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    } else {
        uint32_t bytes = value[8];
        items = (len - SHARD_MASK_HEADER_BYTES) / bytes;
        uint32_t values = bytes == 2 ? 65536u : 256u;
        uint32_t *hist = calloc(values, sizeof *hist);
        if (!hist || !(seen = calloc(d->class_count ? d->class_count : 1, sizeof *seen))) {
            free(hist);
            return;
        }
        const uint8_t *p = value + SHARD_MASK_HEADER_BYTES;
        for (uint64_t i = 0; i < items; i++)
            hist[bytes == 2 ? (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8 : p[i]]++;
        for (uint32_t k = 0; k < d->class_count; k++)
            if (d->classes[k].id < values)
                seen[k] = hist[d->classes[k].id];
        free(hist);
    }
    __atomic_fetch_add(&t->samples, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&t->items, items, __ATOMIC_RELAXED);
    for (uint32_t k = 0; k < d->class_count; k++)
        if (seen[k]) {
            __atomic_fetch_add(&t->per_class[k], seen[k], __ATOMIC_RELAXED);
            __atomic_fetch_add(&t->samples_with[k], 1, __ATOMIC_RELAXED);
        }
    free(seen);
}

/* The tally of field f, or NULL. */
static struct shard_target_tally *tally_of(struct verify_run *v, uint32_t f)
{
    for (uint32_t i = 0; i < v->report->target_count; i++)
        if (v->report->targets[i].field == f)
            return &v->report->targets[i];
    return NULL;
}

int sk_verify_fields_begin(struct verify_run *v, struct shard_err *err)
{
    const struct shard_config *c = &v->m->config;
    if (!c->field_count)
        return SHARD_OK;
    v->field_count = c->field_count;
    v->field_bytes = (c->field_count + 7) / 8;
    uint64_t n = v->window_cap ? v->window_cap : 1; /* the window's samples */
    if (n > SIZE_MAX / v->field_bytes || n > SIZE_MAX / sizeof(uint64_t) / v->field_count)
        return shard_err_set(err, SHARD_ENOMEM, "too many samples");
    v->index_fields = calloc(n, v->field_bytes);
    if (!v->index_fields)
        goto nomem;
    if (v->o->deep) {
        v->field_xxh3 = calloc(n * v->field_count, sizeof *v->field_xxh3);
        v->record_field_samples = calloc(v->field_count, sizeof *v->record_field_samples);
        if (!v->field_xxh3 || !v->record_field_samples)
            goto nomem;
        if (v->o->source && !(v->record_read = calloc(n, 1)))
            goto nomem;
        if (begin_tallies(v))
            goto nomem;
    }
    return SHARD_OK;
nomem:
    return shard_err_set(err, SHARD_ENOMEM, "out of memory for the fields of %llu samples",
                         (unsigned long long)v->samples);
}

void sk_verify_fields_end(struct verify_run *v)
{
    free(v->index_fields);
    free(v->field_xxh3);
    free(v->record_read);
    free(v->record_field_samples);
    v->index_fields = v->record_read = NULL;
    v->field_xxh3 = v->record_field_samples = NULL;
}

/* ---- index lines ----------------------------------------------------------------- */

void sk_verify_index_line_fields(struct verify_run *v, uint64_t g, const struct shard_sample *smp,
                                 const struct sk_line_ref *at)
{
    const struct shard_config *c = &v->m->config;
    if (!v->index_fields)
        return;
    uint8_t named[(SHARD_FIELDS_MAX + 7) / 8];
    memset(named, 0, sizeof named);
    for (uint32_t i = 0; i < smp->field_count; i++) {
        uint32_t f = smp->fields[i].field; /* declared: the line parsed */
        named[f / 8] |= (uint8_t)(1u << (f % 8));
    }
    uint64_t slot = sk_verify_slot(v, g);
    if (sk_verify_in_window(v, g) && v->index_hits[slot] == 1) {
        memcpy(v->index_fields + slot * v->field_bytes, named, v->field_bytes);
        for (uint32_t i = 0; v->field_xxh3 && i < smp->field_count; i++)
            if (identity_is_stored(&c->fields[smp->fields[i].field]))
                v->field_xxh3[slot * v->field_count + smp->fields[i].field] =
                    smp->fields[i].source_xxh3;
    }
    for (uint32_t f = 0; f < c->field_count; f++) {
        if (!c->fields[f].required || sk_verify_field_bit(named, v->field_bytes, 0, f))
            continue;
        char q[SHARDX_QUOTE_SIZE];
        uint32_t s;
        uint64_t r;
        shard_dataset_locate(v->ds, g, &s, &r, NULL);
        sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, smp->key,
                               smp->key_len, at,
                               "%s line " SK_LINE_MARK
                               " (key '%s'): no field '%s', which the config requires",
                               v->m->indexes[at->file].file,
                               shardx_quote(smp->key, smp->key_len, q, sizeof q),
                               c->fields[f].name);
    }
}

/* counts.fields and counts.sidecars against what `whose` ("index.jsonl
 * names") holds. */
static void compare_counts(struct verify_run *v, const char *whose, const uint64_t *field_samples,
                           uint64_t sidecars)
{
    const struct shard_manifest *m = v->m;
    for (uint32_t f = 0; f < v->field_count; f++)
        if (field_samples[f] != m->field_samples[f])
            sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "counts.fields['%s']: %s %llu samples with it, manifest says %llu",
                              m->config.fields[f].name, whose, (unsigned long long)field_samples[f],
                              (unsigned long long)m->field_samples[f]);
    if (sidecars != m->sidecars)
        sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "counts.sidecars: %s %llu values taken from sidecar files, manifest "
                          "says %llu",
                          whose, (unsigned long long)sidecars, (unsigned long long)m->sidecars);
}

void sk_verify_index_field_counts(struct verify_run *v, const uint64_t *field_samples,
                                  uint64_t sidecars)
{
    char whose[256];
    if (v->m->index_count > 1)
        snprintf(whose, sizeof whose, "the index files name");
    else
        snprintf(whose, sizeof whose, "%s names", v->m->indexes[0].file);
    if (v->field_count && v->m->field_samples)
        compare_counts(v, whose, field_samples, sidecars);
}

/* Whether key ends in a declared sidecar suffix (of a field or the class),
 * or is a PNG file below a declared mask folder. */
static int sidecar_named(const struct shard_config *c, const char *key, size_t len)
{
    static const char class_prefix[] = "sidecar:";
    for (uint32_t f = 0; f <= c->field_count; f++) {
        const char *suffix = f < c->field_count ? c->fields[f].sidecar
                             : c->labels &&
                                     !strncmp(c->labels, class_prefix, sizeof class_prefix - 1)
                                 ? c->labels + sizeof class_prefix - 1
                                 : NULL;
        size_t n = suffix ? strlen(suffix) : 0;
        if (suffix && len > n && !memcmp(key + len - n, suffix, n) && key[len - n - 1] != '/')
            return 1;
        /* a mask folder's file: the folder, then a path ending in ".png" */
        const char *dir = f < c->field_count ? c->fields[f].folder : NULL;
        n = dir ? strlen(dir) : 0;
        if (dir && len > n + 4 && !memcmp(key, dir, n) && !memcmp(key + len - 4, ".png", 4) &&
            key[len - 5] != '/')
            return 1;
    }
    return 0;
}

void sk_verify_orphans_listed(struct verify_run *v)
{
    const struct shard_manifest *m = v->m;
    if (!m->orphan_count)
        return;
    for (uint64_t i = 0; i < m->orphan_count; i++) {
        const struct shard_orphan *o = &m->orphans[i];
        char q[SHARDX_QUOTE_SIZE];
        if (!sidecar_named(&m->config, o->key, o->key_len))
            sk_verify_problem(v, SHARD_CHECK_MANIFEST, SHARD_EMISMATCH, -1, -1, o->key, o->key_len,
                              "manifest: orphan '%s' is not named like a sidecar file of a "
                              "declared suffix",
                              shardx_quote(o->key, o->key_len, q, sizeof q));
        if (i > 0 && sk_key_compare(m->orphans[i - 1].key, m->orphans[i - 1].key_len, o->key,
                                    o->key_len) >= 0)
            sk_verify_problem(v, SHARD_CHECK_MANIFEST, SHARD_EMISMATCH, -1, -1, o->key, o->key_len,
                              "manifest: orphan '%s' is listed twice or out of key order",
                              shardx_quote(o->key, o->key_len, q, sizeof q));
    }
}

/* ---- records ------------------------------------------------------------------------- */

void sk_verify_record_fields(struct verify_run *v, uint64_t g, const struct shard_item *it)
{
    if (!v->field_count)
        return;
    const struct shard_config *c = &v->m->config;
    const char *file = v->m->shards[it->shard].file;
    const char *key = (const char *)it->key.data;
    char q[SHARDX_QUOTE_SIZE];
    shardx_quote(key, it->key.len, q, sizeof q);
    uint64_t slot = sk_verify_slot(v, g); /* g is in the window */
    int have_line = v->index_hits[slot] != 0;
#define FIELD_PROBLEM(...)                                                                         \
    sk_verify_problem(v, SHARD_CHECK_RECORD, SHARD_EMISMATCH, it->shard, (int64_t)it->record, key, \
                      it->key.len, __VA_ARGS__)
    uint8_t held[(SHARD_FIELDS_MAX + 7) / 8];
    memset(held, 0, sizeof held);
    for (uint32_t i = 0; i < it->field_count; i++) {
        const struct shard_field_value *fv = &it->fields[i];
        if (fv->field >= c->field_count) {
            FIELD_PROBLEM("%s record %llu (key '%s'): field number %u is not declared (the "
                          "config declares %u)",
                          file, (unsigned long long)it->record, q, fv->field, c->field_count);
            continue;
        }
        const struct shard_field_decl *d = &c->fields[fv->field];
        held[fv->field / 8] |= (uint8_t)(1u << (fv->field % 8));
        uint64_t h = XXH3_64bits(fv->data, (size_t)fv->len);
        struct shard_err e;
        if (fv->type != d->type)
            FIELD_PROBLEM("%s record %llu (key '%s'): field '%s' is stored as %s, the config "
                          "declares %s",
                          file, (unsigned long long)it->record, q, d->name,
                          shard_field_type_name(fv->type) ? shard_field_type_name(fv->type)
                                                          : "an unknown type",
                          shard_field_type_name(d->type));
        else if (shard_field_check_image(d, fv->data, fv->len, v->m->label_count, it->width,
                                         it->height, &e))
            FIELD_PROBLEM("%s record %llu (key '%s'): field '%s': %s", file,
                          (unsigned long long)it->record, q, d->name, e.msg);
        else if (d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_MASK) {
            struct shard_target_tally *t = tally_of(v, fv->field);
            if (t)
                tally_value(t, d, fv->data, (size_t)fv->len);
        }
        uint64_t *stored = v->field_xxh3 + slot * v->field_count + fv->field;
        if (!identity_is_stored(d)) {
            *stored = h; /* for --source to compare with the value SRC gives */
        } else if (have_line &&
                   sk_verify_field_bit(v->index_fields, v->field_bytes, slot, fv->field) &&
                   *stored != h) {
            char got[17], want[17];
            shard_hex64(h, got);
            shard_hex64(*stored, want);
            FIELD_PROBLEM("%s record %llu (key '%s'): field '%s' holds %llu bytes with xxh3 "
                          "%s, not the value %s names (xxh3 %s)",
                          file, (unsigned long long)it->record, q, d->name,
                          (unsigned long long)fv->len, got, sk_verify_index_name(v, it->shard),
                          want);
        }
#pragma omp atomic
        v->record_field_samples[fv->field]++;
        if (d->sidecar) {
#pragma omp atomic
            v->record_sidecars++;
        }
    }
    for (uint32_t f = 0; f < c->field_count; f++) {
        int in_record = (held[f / 8] >> (f % 8)) & 1;
        if (c->fields[f].required && !in_record)
            FIELD_PROBLEM("%s record %llu (key '%s'): no field '%s', which the config requires",
                          file, (unsigned long long)it->record, q, c->fields[f].name);
        if (have_line && in_record != sk_verify_field_bit(v->index_fields, v->field_bytes, slot, f))
            FIELD_PROBLEM("%s record %llu (key '%s'): %s field '%s', %s says it %s", file,
                          (unsigned long long)it->record, q, in_record ? "holds" : "has no",
                          c->fields[f].name, sk_verify_index_name(v, it->shard),
                          in_record ? "has none" : "has one");
    }
#undef FIELD_PROBLEM
    if (v->record_read)
        v->record_read[slot] = 1;
}

void sk_verify_record_field_counts(struct verify_run *v)
{
    if (v->field_count && v->m->field_samples)
        compare_counts(v, "the records hold", v->record_field_samples, v->record_sidecars);
}
