/* index_check.c - index.jsonl against the footers and the manifest; keys
 * unique; counts and by_label against what the shards hold.
 *
 * The index is streamed (one line in memory at a time) and walked in step
 * with the footers in stored order, so a missing, extra, repeated or
 * reordered line is reported precisely: every record the index lacks is
 * named by shard, record and key.  Uniqueness of keys is checked by sorting
 * (xxh3 of key, sample index) pairs - 16 bytes per sample - and comparing
 * the keys of equal hashes, which scales to tens of millions of samples. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "read/dataset_internal.h"
#include "util/fsutil.h"
#include "util/quote.h"
#include "verify/verify_internal.h"

/* Walking the index in step with the footers. */
struct index_walk {
    struct verify_run *v;
    uint64_t cursor;         /* next sample index expected */
    uint64_t lines;          /* sample lines read */
    uint64_t warned;         /* of them, lines with a "warning" */
    uint64_t *field_samples; /* per declared field: lines that name it */
    uint64_t sidecars;       /* values of sidecar fields the lines name */
};

static uint32_t shard_of(const struct verify_run *v, uint64_t g, uint64_t *record)
{
    uint32_t s;
    shard_dataset_locate(v->ds, g, &s, record, NULL);
    return s;
}

/* Records [cursor, until) are not in the index. */
static void report_missing(struct index_walk *w, uint64_t until)
{
    struct verify_run *v = w->v;
    for (; w->cursor < until; w->cursor++) {
        uint64_t r;
        uint32_t s = shard_of(v, w->cursor, &r);
        size_t len;
        const char *key = sk_verify_footer_key(v, s, r, &len);
        char q[SHARD_QUOTE_SIZE];
        if (key)
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                              "%s record %llu (key '%s'): not in %s", v->m->shards[s].file,
                              (unsigned long long)r, sk_quote_bytes(key, len, q, sizeof q),
                              v->m->index_file);
        else
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, NULL, 0,
                              "%s record %llu: not in %s", v->m->shards[s].file,
                              (unsigned long long)r, v->m->index_file);
    }
}

static void check_line(struct index_walk *w, const struct shard_sample *smp, uint64_t line)
{
    struct verify_run *v = w->v;
    const struct shard_manifest *m = v->m;
    char q[SHARD_QUOTE_SIZE], q2[SHARD_QUOTE_SIZE];
    sk_quote_bytes(smp->key, smp->key_len, q, sizeof q);
    if (smp->shard >= m->shard_count || smp->record >= m->shards[smp->shard].samples) {
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, smp->key, smp->key_len,
                          "%s line %llu (key '%s'): shard %u record %llu does not exist",
                          m->index_file, (unsigned long long)line, q, smp->shard,
                          (unsigned long long)smp->record);
        return;
    }
    uint32_t s = smp->shard;
    uint64_t r = smp->record, g = sk_dataset_shard_first(v->ds, s) + r;
    if (g < w->cursor) {
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, smp->key,
                          smp->key_len,
                          "%s line %llu (key '%s'): %s record %llu is listed again or out of "
                          "order",
                          m->index_file, (unsigned long long)line, q, m->shards[s].file,
                          (unsigned long long)r);
        return;
    }
    report_missing(w, g);
    w->cursor = g + 1;
    v->index_width[g] = smp->width;
    v->index_height[g] = smp->height;
    sk_verify_index_line_fields(v, g, smp, line);
    if (smp->label != SHARD_NO_LABEL && (uint32_t)smp->label >= m->label_count)
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, smp->key,
                          smp->key_len, "%s line %llu (key '%s'): label %d does not exist",
                          m->index_file, (unsigned long long)line, q, smp->label);
    size_t len;
    const char *key = sk_verify_footer_key(v, s, r, &len);
    if (!key)
        return; /* the shard was already reported */
    if (len != smp->key_len || memcmp(key, smp->key, len))
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                          "%s record %llu (key '%s'): %s line %llu names key '%s'",
                          m->shards[s].file, (unsigned long long)r,
                          sk_quote_bytes(key, len, q2, sizeof q2), m->index_file,
                          (unsigned long long)line, q);
    else if (v->footers[s]->rows[r].label != smp->label)
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                          "%s record %llu (key '%s'): label %d, %s line %llu says %d",
                          m->shards[s].file, (unsigned long long)r, q, v->footers[s]->rows[r].label,
                          m->index_file, (unsigned long long)line, smp->label);
}

static int walk_index(struct verify_run *v, struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    struct shard_index_reader *rd;
    struct shard_err e;
    int rc = sk_dataset_index_open(v->ds, &rd, &e);
    if (rc) {
        sk_verify_problem(v, SHARD_CHECK_INDEX, rc, -1, -1, NULL, 0, "%s: %s", m->index_file,
                          rc == SHARD_ENOTFOUND ? "missing" : e.msg);
        return SHARD_OK;
    }
    shard_index_reader_set_config(rd, &m->config);
    struct index_walk w = {v, 0, 0, 0, NULL, 0};
    uint64_t line = 0, bad_lines = 0;
    if (m->config.field_count &&
        !(w.field_samples = calloc(m->config.field_count, sizeof *w.field_samples))) {
        shard_index_reader_close(rd);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (;;) {
        struct shard_sample smp;
        rc = shard_index_reader_next(rd, &smp, &e);
        if (rc == 0)
            break;
        line++;
        if (rc < 0) {
            /* a bad line is reported and skipped; a read error ends the walk */
            sk_verify_problem(v, SHARD_CHECK_INDEX, rc, -1, -1, NULL, 0, "%s", e.msg);
            if (rc == SHARD_EIO || rc == SHARD_ENOMEM)
                break;
            bad_lines++;
            continue;
        }
        w.lines++;
        w.warned += smp.warning != NULL;
        for (uint32_t i = 0; i < smp.field_count; i++) {
            w.field_samples[smp.fields[i].field]++;
            w.sidecars += m->config.fields[smp.fields[i].field].sidecar != NULL;
        }
        check_line(&w, &smp, line);
    }
    report_missing(&w, v->samples);
    if (rc == 0) {
        uint64_t bytes = shard_index_reader_bytes(rd), h = shard_index_reader_xxh3(rd);
        if (bytes != m->index_bytes)
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "%s: %llu bytes, manifest says %llu", m->index_file,
                              (unsigned long long)bytes, (unsigned long long)m->index_bytes);
        if (h != m->index_xxh3) {
            char got[17], want[17];
            shard_hex64(h, got);
            shard_hex64(m->index_xxh3, want);
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "%s: xxh3 is %s, manifest says %s", m->index_file, got, want);
        }
        if (line != m->index_entries)
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "%s: %llu lines, manifest says %llu entries", m->index_file,
                              (unsigned long long)line, (unsigned long long)m->index_entries);
        if (w.warned != m->warned)
            sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "counts.warned: %s has %llu samples stored despite a decoder "
                              "warning, manifest says %llu",
                              m->index_file, (unsigned long long)w.warned,
                              (unsigned long long)m->warned);
        if (!bad_lines) /* else the counts would only repeat the lines reported */
            sk_verify_index_field_counts(v, w.field_samples, w.sidecars);
    }
    free(w.field_samples);
    shard_index_reader_close(rd);
    return SHARD_OK;
}

/* ---- unique keys -------------------------------------------------------- */

struct key_ref {
    uint64_t hash;
    uint64_t index;
};

static int compare_key_refs(const void *pa, const void *pb)
{
    const struct key_ref *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int check_unique_keys(struct verify_run *v, struct shard_err *err)
{
    if (v->samples > SIZE_MAX / sizeof(struct key_ref))
        return shard_err_set(err, SHARD_ENOMEM, "too many samples");
    struct key_ref *refs = malloc((v->samples ? v->samples : 1) * sizeof *refs);
    if (!refs)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %llu keys",
                             (unsigned long long)v->samples);
    uint64_t n = 0;
    for (uint32_t s = 0; s < v->m->shard_count; s++) {
        const struct shard_footer *f = v->footers[s];
        uint64_t first = sk_dataset_shard_first(v->ds, s);
        for (uint64_t r = 0; f && r < f->record_count; r++)
            refs[n++] = (struct key_ref){XXH3_64bits(f->keys + f->key_offsets[r],
                                                     f->rows[r].key_len),
                                         first + r};
    }
    qsort(refs, n, sizeof *refs, compare_key_refs);
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i + 1;
        while (j < n && refs[j].hash == refs[i].hash)
            j++;
        /* within a run of equal hashes, compare every later key with the earlier ones */
        for (uint64_t b = i + 1; b < j; b++) {
            uint64_t rb, ra;
            uint32_t sb = shard_of(v, refs[b].index, &rb);
            size_t lb, la;
            const char *kb = sk_verify_footer_key(v, sb, rb, &lb);
            for (uint64_t a = i; a < b; a++) {
                uint32_t sa = shard_of(v, refs[a].index, &ra);
                const char *ka = sk_verify_footer_key(v, sa, ra, &la);
                if (la != lb || memcmp(ka, kb, la))
                    continue;
                char q[SHARD_QUOTE_SIZE];
                sk_verify_problem(v, SHARD_CHECK_KEYS, SHARD_EMISMATCH, sb, (int64_t)rb, kb, lb,
                                  "duplicate key '%s': %s record %llu and %s record %llu",
                                  sk_quote_bytes(kb, lb, q, sizeof q), v->m->shards[sa].file,
                                  (unsigned long long)ra, v->m->shards[sb].file,
                                  (unsigned long long)rb);
                break;
            }
        }
        i = j;
    }
    free(refs);
    return SHARD_OK;
}

/* ---- counts ---------------------------------------------------------------- */

/* counts.by_label and counts.unlabeled against the labels the footers hold
 * (the records themselves, not the index: a damaged index is reported above
 * and must not hide what the shards contain). */
static int check_counts(struct verify_run *v, struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    if (!v->all_footers)
        return SHARD_OK; /* unreadable shards were reported; counts would only repeat that */
    uint64_t *by_label = calloc(m->label_count ? m->label_count : 1, sizeof *by_label);
    if (!by_label)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t unlabeled = 0, out_of_range = 0;
    for (uint32_t s = 0; s < m->shard_count; s++) {
        const struct shard_footer *f = v->footers[s];
        for (uint64_t r = 0; r < f->record_count; r++) {
            int32_t label = f->rows[r].label;
            if (label == SHARD_NO_LABEL) {
                unlabeled++;
            } else if ((uint32_t)label >= m->label_count) {
                size_t len;
                const char *key = sk_verify_footer_key(v, s, r, &len);
                char q[SHARD_QUOTE_SIZE];
                sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                                  "%s record %llu (key '%s'): label %d, but the manifest has %u "
                                  "labels",
                                  m->shards[s].file, (unsigned long long)r,
                                  sk_quote_bytes(key, len, q, sizeof q), label, m->label_count);
                out_of_range++;
            } else {
                by_label[label]++;
            }
        }
    }
    struct shard_verify_report *report = v->report;
    for (uint32_t i = 0; i < m->label_count; i++)
        report->labels[i].shards = by_label[i];
    report->labels[m->label_count].shards = unlabeled;
    report->labels_counted = 1;
    for (uint32_t i = 0; i < m->label_count; i++)
        if (by_label[i] != m->label_samples[i])
            sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "counts.by_label['%s']: the shards hold %llu samples, manifest says "
                              "%llu",
                              m->labels[i], (unsigned long long)by_label[i],
                              (unsigned long long)m->label_samples[i]);
    if (unlabeled != m->unlabeled)
        sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "counts.unlabeled: the shards hold %llu unlabeled samples, manifest says "
                          "%llu",
                          (unsigned long long)unlabeled, (unsigned long long)m->unlabeled);
    free(by_label);
    return SHARD_OK;
}

int sk_verify_index(struct verify_run *v, struct shard_err *err)
{
    int rc = walk_index(v, err);
    if (!rc)
        rc = check_unique_keys(v, err);
    if (!rc)
        rc = check_counts(v, err);
    return rc;
}
