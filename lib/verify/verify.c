/* verify.c - shard_verify(): the problem list and the run of a whole check
 * (see shardkit/verify.h and verify_internal.h).
 *
 * A whole check is the walk of one share holding every shard (share.c),
 * settled by the combine (combine.c) as the parts of a check in parts are,
 * so that both give the same report; then the passes that need the whole
 * dataset at once (--source, --fidelity, --visitation). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "util/fsutil.h"
#include "util/grow.h"
#include "shardkit/source.h"
#include "verify/verify_internal.h"

#define DEFAULT_EPOCHS 2

void shard_verify_options_init(struct shard_verify_options *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = DEFAULT_EPOCHS;
    shard_plan_options_init(&o->plan);
}

const char *shard_check_name(enum shard_check c)
{
    switch (c) {
    case SHARD_CHECK_MANIFEST: return "manifest";
    case SHARD_CHECK_SHARD: return "shard";
    case SHARD_CHECK_INDEX: return "index";
    case SHARD_CHECK_KEYS: return "keys";
    case SHARD_CHECK_COUNTS: return "counts";
    case SHARD_CHECK_RECORD: return "record";
    case SHARD_CHECK_SOURCE: return "source";
    case SHARD_CHECK_FIDELITY: return "fidelity";
    case SHARD_CHECK_VISITATION: return "visitation";
    }
    return "unknown";
}

void shard_verify_report_release(struct shard_verify_report *r)
{
    if (!r)
        return;
    for (uint64_t i = 0; i < r->problem_count; i++) {
        free(r->problems[i].key);
        free(r->problems[i].message);
    }
    free(r->problems);
    for (uint64_t i = 0; i < r->fidelity_count; i++)
        free(r->fidelity[i].key);
    free(r->fidelity);
    free(r->visitation);
    for (uint32_t i = 0; r->targets && i < r->target_count; i++) {
        for (uint32_t k = 0; r->targets[i].classes && k < r->targets[i].class_count; k++)
            free(r->targets[i].classes[k].name);
        free(r->targets[i].classes);
        free(r->targets[i].name);
        free(r->targets[i].per_class);
        free(r->targets[i].samples_with);
    }
    free(r->targets);
    sk_shard_tally_release(&r->record_bytes);
    sk_shard_tally_release(&r->dimensions);
    for (uint32_t f = 0; r->text_lengths && f < r->fields; f++)
        sk_shard_tally_release(&r->text_lengths[f]);
    free(r->text_lengths);
    free(r->field_lines);
    for (size_t i = 0; i < r->warned_count; i++) {
        free(r->warned[i].key);
        free(r->warned[i].warning);
    }
    free(r->warned);
    free(r->labels_note);
    free(r->fields_note);
    for (uint32_t i = 0; i < r->label_tally_count; i++)
        free(r->labels[i].name);
    free(r->labels);
    memset(r, 0, sizeof *r);
}

/* ---- the problem list ---------------------------------------------------- */

static int add_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                       int64_t record, const char *key, size_t key_len,
                       const struct sk_line_ref *at, const char *fmt, va_list ap)
{
    char msg[SHARD_ERRMSG_SIZE + 256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct sk_problem p = {{check, code, shard, record, NULL, 0, strdup(msg)}, at != NULL, {0}};
    if (at)
        p.at = *at;
    if (key && (p.p.key = malloc(key_len + 1))) {
        memcpy(p.p.key, key, key_len);
        p.p.key[key_len] = '\0';
        p.p.key_len = key_len;
    }
    int rc = SHARD_OK;
    pthread_mutex_lock(&v->lock);
    if (v->problem_count >= SHARD_VERIFY_MAX_PROBLEMS) {
        v->problems_not_kept++;
        goto drop;
    }
    if (!p.p.message || (key && !p.p.key) ||
        SK_GROW(v->problems, v->problems_cap, v->problem_count + 1, 64)) {
        rc = SHARD_ENOMEM;
        goto drop;
    }
    v->problems[v->problem_count++] = p;
    pthread_mutex_unlock(&v->lock);
    return SHARD_OK;
drop:
    pthread_mutex_unlock(&v->lock);
    free(p.p.key);
    free(p.p.message);
    return rc;
}

int sk_verify_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                      int64_t record, const char *key, size_t key_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_problem(v, check, code, shard, record, key, key_len, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int sk_verify_line_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                           int64_t record, const char *key, size_t key_len,
                           const struct sk_line_ref *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_problem(v, check, code, shard, record, key, key_len, at, fmt, ap);
    va_end(ap);
    return rc;
}

static int compare_problems(const void *pa, const void *pb)
{
    const struct shard_problem *a = pa, *b = pb;
    if (a->check != b->check)
        return a->check < b->check ? -1 : 1;
    if (a->shard != b->shard)
        return a->shard < b->shard ? -1 : 1;
    if (a->record != b->record)
        return a->record < b->record ? -1 : 1;
    return strcmp(a->message, b->message);
}

/* The message of p with its line number written in: malloc'd, or NULL. */
static char *with_line(const struct sk_problem *p, uint64_t base)
{
    const char *mark = strstr(p->p.message, SK_LINE_MARK);
    if (!mark)
        return strdup(p->p.message);
    char number[24];
    int n = snprintf(number, sizeof number, "%llu", (unsigned long long)(base + p->at.line + 1));
    size_t head = (size_t)(mark - p->p.message), tail = strlen(mark + 1);
    char *out = malloc(head + (size_t)n + tail + 1);
    if (out) {
        memcpy(out, p->p.message, head);
        memcpy(out + head, number, (size_t)n);
        memcpy(out + head + (size_t)n, mark + 1, tail + 1);
    }
    return out;
}

int sk_verify_finish_problems(struct verify_run *v, const uint64_t *line_bases,
                              struct shard_err *err)
{
    struct shard_verify_report *r = v->report;
    r->problems = calloc(v->problem_count ? v->problem_count : 1, sizeof *r->problems);
    if (!r->problems)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %zu problems", v->problem_count);
    for (size_t i = 0; i < v->problem_count; i++) {
        struct sk_problem *p = &v->problems[i];
        if (p->has_line) {
            uint64_t base = line_bases
                                ? line_bases[(size_t)p->at.part * v->index_files + p->at.file]
                                : 0;
            char *msg = with_line(p, base);
            if (!msg)
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            free(p->p.message);
            p->p.message = msg;
        }
        r->problems[r->problem_count++] = p->p; /* the report takes its strings over */
        p->p.key = p->p.message = NULL;
    }
    r->problems_not_kept = v->problems_not_kept;
    v->problem_count = 0;
    if (r->problem_count)
        qsort(r->problems, r->problem_count, sizeof *r->problems, compare_problems);
    return SHARD_OK;
}

static void free_problems(struct verify_run *v)
{
    for (size_t i = 0; i < v->problem_count; i++) {
        free(v->problems[i].p.key);
        free(v->problems[i].p.message);
    }
    free(v->problems);
    v->problems = NULL;
    v->problem_count = v->problems_cap = 0;
}

const char *sk_verify_footer_key(const struct verify_run *v, uint32_t s, uint64_t r, size_t *len)
{
    const struct shard_footer *f = v->footers ? v->footers[s] : NULL;
    if (!f || r >= f->record_count) {
        *len = 0;
        return NULL;
    }
    *len = f->rows[r].key_len;
    return (const char *)f->keys + f->key_offsets[r];
}

/* Shard s's footer for a key outside the window: the last two shards read
 * so stay open (duplicates of a shard listed twice alternate between two),
 * and an older one is let go. */
static const struct shard_footer *demand_footer(struct verify_run *v, uint32_t s)
{
    if (s != v->demand[0]) {
        if (s != v->demand[1]) {
            if (v->demand[1] != SK_NO_SHARD)
                sk_dataset_shard_release(v->ds, v->demand[1]);
            v->demand[1] = s;
        }
        v->demand[1] = v->demand[0];
        v->demand[0] = s;
    }
    const struct shard_footer *f;
    return sk_dataset_shard_footer(v->ds, s, &f, NULL) ? NULL : f;
}

void sk_verify_demand_release(struct verify_run *v)
{
    for (int i = 0; i < 2; i++) {
        if (v->demand[i] != SK_NO_SHARD && v->ds)
            sk_dataset_shard_release(v->ds, v->demand[i]);
        v->demand[i] = SK_NO_SHARD;
    }
}

char *sk_verify_key_of(struct verify_run *v, uint64_t g, size_t *len)
{
    uint32_t s;
    uint64_t r;
    if (shard_dataset_locate(v->ds, g, &s, &r, NULL))
        return NULL;
    const struct shard_footer *f = v->footers && v->footers[s] ? v->footers[s]
                                                               : demand_footer(v, s);
    char *key = NULL;
    if (f && r < f->record_count && (key = malloc((size_t)f->rows[r].key_len + 1))) {
        *len = f->rows[r].key_len;
        memcpy(key, f->keys + f->key_offsets[r], *len);
        key[*len] = '\0';
    }
    return key;
}

int sk_verify_keep_warned(struct shard_warned_sample **list, size_t *count, const char *key,
                          size_t key_len, const char *warning)
{
    if (*count >= SHARD_VERIFY_WARNED_LISTED)
        return SHARD_OK;
    if (!*list && !(*list = calloc(SHARD_VERIFY_WARNED_LISTED, sizeof **list)))
        return SHARD_ENOMEM;
    struct shard_warned_sample *w = &(*list)[*count];
    w->key = malloc(key_len + 1);
    w->warning = strdup(warning);
    if (!w->key || !w->warning) {
        free(w->key);
        free(w->warning);
        w->key = w->warning = NULL;
        return SHARD_ENOMEM;
    }
    memcpy(w->key, key, key_len);
    w->key[key_len] = '\0';
    w->key_len = key_len;
    (*count)++;
    return SHARD_OK;
}

void sk_verify_identity(struct verify_run *v, enum shard_check check, int64_t shard,
                        const char *name, uint64_t bytes, uint64_t xxh3, uint64_t want_bytes,
                        uint64_t want_xxh3)
{
    if (bytes != want_bytes)
        sk_verify_problem(v, check, SHARD_EMISMATCH, shard, -1, NULL, 0,
                          "%s: %llu bytes, manifest says %llu", name, (unsigned long long)bytes,
                          (unsigned long long)want_bytes);
    if (xxh3 != want_xxh3) {
        char got[17], want[17];
        shard_hex64(xxh3, got);
        shard_hex64(want_xxh3, want);
        sk_verify_problem(v, check, SHARD_EMISMATCH, shard, -1, NULL, 0,
                          "%s: xxh3 is %s, manifest says %s", name, got, want);
    }
}

int sk_verify_hash_file(struct verify_run *v, enum shard_check check, int64_t shard,
                        const char *name, uint64_t want_bytes, uint64_t want_xxh3, uint64_t *hashed)
{
    uint64_t bytes = 0, h = 0;
    struct shard_err e;
    shard_err_clear(&e);
    int rc = sk_dataset_hash_file(v->ds, name, &bytes, &h, &e);
    if (rc == SHARD_ENOTFOUND)
        sk_verify_problem(v, check, rc, shard, -1, NULL, 0, "%s: missing", name);
    else if (rc)
        sk_verify_problem(v, check, rc, shard, -1, NULL, 0, "%s: cannot be hashed: %s", name,
                          rc == SHARD_ENOMEM ? "out of memory" : e.msg);
    else
        sk_verify_identity(v, check, shard, name, bytes, h, want_bytes, want_xxh3);
    if (hashed)
        *hashed = rc ? 0 : bytes;
    return rc;
}

uint32_t sk_verify_file_of(const struct verify_run *v, uint32_t s)
{
    uint32_t lo = 0, hi = v->index_files; /* the last file whose first shard is <= s */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v->file_first[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

const char *sk_verify_index_name(const struct verify_run *v, uint32_t s)
{
    const struct shard_manifest *m = v->m;
    return m->index_count ? m->indexes[sk_verify_file_of(v, s)].file : SHARD_INDEX_FILE;
}

/* ---- a check ------------------------------------------------------------------- */

static int manifest_problem(void *user, const struct shard_err *e)
{
    return sk_verify_problem(user, SHARD_CHECK_MANIFEST, e->code, -1, -1, NULL, 0, "%s", e->msg);
}

/* A part leaves the manifest's contradictions to the combine. */
static int manifest_problem_ignored(void *user, const struct shard_err *e)
{
    (void)user;
    (void)e;
    return 0;
}

static int check_options(const struct shard_verify_options *o, struct shard_err *err)
{
    if (o->fidelity && !o->source)
        return shard_err_set(err, SHARD_EINVAL, "--fidelity needs --source");
    if (o->annotations && !o->source)
        return shard_err_set(err, SHARD_EINVAL, "--annotations needs --source");
    if (o->world_size_count > SHARD_VERIFY_MAX_WORLD_SIZES)
        return shard_err_set(err, SHARD_EINVAL, "at most %d world sizes",
                             SHARD_VERIFY_MAX_WORLD_SIZES);
    for (size_t i = 0; i < o->world_size_count; i++)
        if (o->world_sizes[i] == 0)
            return shard_err_set(err, SHARD_EINVAL, "a world size must be at least 1");
    if (o->world_size_count && o->epochs == 0)
        return shard_err_set(err, SHARD_EINVAL, "--epochs must be at least 1");
    if (o->threads < 0 || isnan(o->min_psnr) || o->min_psnr < 0)
        return shard_err_set(err, SHARD_EINVAL, "bad thread count or PSNR threshold");
    return SHARD_OK;
}

static void run_init(struct verify_run *v, const struct shard_verify_options *o,
                     struct shard_verify_report *report, const char *dst)
{
    memset(report, 0, sizeof *report);
    memset(v, 0, sizeof *v);
    v->o = o;
    v->report = report;
    v->dst = dst;
    v->threads = o->threads > 0 ? o->threads : shard_available_cpus();
    v->demand[0] = v->demand[1] = SK_NO_SHARD;
    report->threads = v->threads;
    pthread_mutex_init(&v->lock, NULL);
}

/* Open v->dst for the check: the dataset with its manifest's contradictions
 * listed (or left to the combine, for a part), and the index files' shards.
 * 0; 1 when the manifest is there but malformed (a problem listed); else
 * the error. */
static int run_open(struct verify_run *v, int list_contradictions, struct shard_err *err)
{
    struct shard_err e;
    shard_err_clear(&e);
    /* contradictions in the manifest are listed and checking goes on with
     * what can still be read */
    int rc = sk_dataset_open_lenient(&v->ds, v->dst,
                                     list_contradictions ? manifest_problem
                                                         : manifest_problem_ignored,
                                     v, &e);
    if (rc == SHARD_ECORRUPT || rc == SHARD_EUNSUPPORTED) {
        /* a manifest that is there but wrong is a finding, not an I/O error */
        *err = e;
        rc = sk_verify_problem(v, SHARD_CHECK_MANIFEST, rc, -1, -1, NULL, 0, "%s", e.msg);
        return rc ? shard_err_set(err, rc, "out of memory") : 1;
    }
    if (rc) {
        *err = e;
        return rc;
    }
    const struct shard_manifest *m = v->m = shard_dataset_manifest(v->ds);
    v->samples = shard_dataset_size(v->ds);
    v->index_files = m->index_count ? m->index_count : 1;
    if (!m->index_count ||
        !(v->file_first = calloc((size_t)v->index_files + 1, sizeof *v->file_first)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    v->key_tables = 1;
    for (uint32_t k = 0; k < v->index_files; k++) {
        uint64_t next = (uint64_t)v->file_first[k] + m->indexes[k].shards;
        v->file_first[k + 1] = next < m->shard_count ? (uint32_t)next : m->shard_count;
        v->key_tables &= m->indexes[k].keys_file != NULL;
    }
    v->file_first[v->index_files] = m->shard_count; /* the last file takes any left */
    struct shard_verify_report *r = v->report;
    r->shards = m->shard_count;
    r->fields = m->config.field_count;
    r->samples = v->samples;
    return SHARD_OK;
}

int sk_part_alloc(struct verify_run *v, struct sk_part *p)
{
    const struct shard_manifest *m = v->m;
    uint32_t nf = m->config.field_count;
    memset(p, 0, sizeof *p);
    p->field_count = nf;
    sk_tally_init(&p->record_bytes, 0);
    sk_tally_init(&p->dimensions, 1);
    p->label_shards = calloc((size_t)m->label_count + 1, sizeof *p->label_shards);
    p->segments = calloc(v->index_files, sizeof *p->segments);
    p->tables = calloc(v->index_files, sizeof *p->tables);
    p->field_lines = calloc((size_t)nf + 1, sizeof *p->field_lines);
    p->text_lengths = calloc((size_t)nf + 1, sizeof *p->text_lengths);
    p->record_field_samples = calloc((size_t)nf + 1, sizeof *p->record_field_samples);
    if (!p->label_shards || !p->segments || !p->tables || !p->field_lines || !p->text_lengths ||
        !p->record_field_samples)
        return SHARD_ENOMEM;
    for (uint32_t f = 0; f < nf; f++)
        sk_tally_init(&p->text_lengths[f], 0);
    return SHARD_OK;
}

int sk_verify_part_new(struct verify_run *v, uint32_t part, struct sk_part **out)
{
    struct sk_part *p = calloc(1, sizeof *p);
    if (!p || sk_part_alloc(v, p)) {
        sk_part_release(p);
        free(p);
        return SHARD_ENOMEM;
    }
    p->part = part;
    p->parts = v->parts;
    p->first_shard = v->share_starts[part];
    p->end_shard = v->share_starts[part + 1];
    sk_keys_hash_range(part, v->parts, &p->hash_lo, &p->hash_hi);
    p->deep = v->o->deep;
    p->manifest_xxh3 = shard_dataset_manifest_xxh3(v->ds);
    *out = p;
    return SHARD_OK;
}

void sk_part_release(struct sk_part *p)
{
    if (!p)
        return;
    free(p->label_shards);
    sk_tally_release(&p->record_bytes);
    free(p->segments);
    free(p->field_lines);
    free(p->first.key);
    for (size_t i = 0; i < p->uncovered_count; i++)
        free(p->uncovered[i].key);
    free(p->uncovered);
    for (size_t i = 0; i < p->stray_count; i++)
        free(p->strays[i].key);
    free(p->strays);
    sk_tally_release(&p->dimensions);
    for (uint32_t f = 0; p->text_lengths && f < p->field_count; f++)
        sk_tally_release(&p->text_lengths[f]);
    free(p->text_lengths);
    for (size_t i = 0; i < p->warned_count; i++) {
        free(p->warned_samples[i].key);
        free(p->warned_samples[i].warning);
    }
    free(p->warned_samples);
    free(p->record_field_samples);
    for (uint32_t i = 0; p->targets && i < p->target_count; i++) {
        free(p->targets[i].per_class);
        free(p->targets[i].samples_with);
    }
    free(p->targets);
    free(p->tables);
    memset(p, 0, sizeof *p);
}

/* Walk the part's share; then what --deep's fields counted is the part's. */
static int run_part(struct verify_run *v, uint32_t part, struct shard_err *err)
{
    if (sk_verify_part_new(v, part, &v->part))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = sk_verify_share(v, err);
    if (!rc && sk_verify_part_take_deep(v))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return rc;
}

static void run_release(struct verify_run *v)
{
    sk_verify_index_close(v);
    sk_verify_demand_release(v);
    free(v->footers);
    free(v->index_hits);
    free(v->index_width);
    free(v->index_height);
    sk_verify_fields_end(v);
    sk_part_release(v->part);
    free(v->part);
    free(v->share_starts);
    free(v->line_bases);
    free(v->file_first);
    free(v->key_refs);
    free_problems(v);
    shard_dataset_close(v->ds);
    pthread_mutex_destroy(&v->lock);
}

/* The source as the config says it was read: a split folder of SRC
 * (config.split), and, when no --annotations is given, a Hugging Face
 * metadata table of that folder when the config's table is one (found as
 * shardify finds it).  *so is o with those; `paths` holds what they point
 * to (freed by the caller). */
static int source_as_converted(const struct verify_run *v, const struct shard_verify_options *o,
                               struct shard_verify_options *so, char *paths[2],
                               struct shard_err *err)
{
    const struct shard_config *c = &v->m->config;
    *so = *o;
    if (!o->source)
        return SHARD_OK;
    if (c->split && !(so->source = paths[0] = sk_fs_join(o->source, c->split)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!o->annotations && c->annotations &&
        (!strncmp(c->annotations, "file:metadata.jsonl:", 20) ||
         !strncmp(c->annotations, "file:metadata.csv:", 18))) {
        int rc = shard_source_metadata(so->source, &paths[1], err);
        if (rc)
            return rc;
        so->annotations = paths[1];
    }
    return SHARD_OK;
}

int shard_verify(const char *dst, const struct shard_verify_options *o,
                 struct shard_verify_report *report, struct shard_err *err)
{
    struct verify_run v;
    struct shard_verify_options so;
    char *paths[2] = {NULL, NULL};
    run_init(&v, o, report, dst);
    int rc = check_options(o, err);
    if (!rc && (rc = run_open(&v, 1, err)) == 1) {
        rc = sk_verify_finish_problems(&v, NULL, err); /* the manifest's problem */
        goto out;
    }
    if (!rc && !(rc = source_as_converted(&v, o, &so, paths, err)))
        v.o = &so;
    if (!rc)
        rc = sk_verify_plan_shares(&v, 1, err);
    if (!rc)
        rc = run_part(&v, 0, err);
    if (!rc)
        rc = sk_verify_combine_parts(&v, v.part, 1, err);
    if (!rc && o->source)
        rc = sk_verify_source(&v, err);
    if (!rc && o->fidelity)
        rc = sk_verify_fidelity(&v, err);
    if (!rc && o->world_size_count)
        rc = sk_verify_visitation(&v, err);
    if (!rc)
        rc = sk_verify_finish_problems(&v, v.line_bases, err);
out:
    if (rc)
        shard_verify_report_release(report);
    run_release(&v);
    free(paths[0]);
    free(paths[1]);
    return rc;
}

int shard_verify_part(const char *dst, const struct shard_verify_options *o, uint32_t part,
                      uint32_t parts, const char *result, struct shard_verify_share *share,
                      struct shard_err *err)
{
    struct shard_verify_report report;
    struct verify_run v;
    memset(share, 0, sizeof *share);
    run_init(&v, o, &report, dst);
    int rc = check_options(o, err);
    if (!rc && (o->source || o->fidelity || o->world_size_count))
        rc = shard_err_set(err, SHARD_EINVAL,
                           "a part checks what the default pass and --deep check: --source, "
                           "--fidelity and --visitation check the whole dataset");
    if (!rc && (parts == 0 || part >= parts))
        rc = shard_err_set(err, SHARD_EINVAL, "no part %u of %u", part, parts);
    if (!rc && (rc = run_open(&v, 0, err)) == 1)
        rc = shard_err_prefix(err, SHARD_ECORRUPT, "%s", dst); /* the combine reports it */
    if (!rc && !v.key_tables)
        rc = shard_err_set(err, SHARD_EUNSUPPORTED,
                           "%s has no key tables (it was written before them): check it whole",
                           dst);
    if (!rc)
        rc = sk_verify_plan_shares(&v, parts, err);
    if (!rc)
        rc = run_part(&v, part, err);
    if (!rc)
        rc = sk_verify_result_write(&v, result, err);
    if (!rc) {
        const struct sk_part *p = v.part;
        share->part = part;
        share->parts = parts;
        share->first_shard = p->first_shard;
        share->shards = p->end_shard - p->first_shard;
        share->samples = sk_dataset_shard_first(v.ds, p->end_shard) -
                         sk_dataset_shard_first(v.ds, p->first_shard);
        for (uint32_t s = p->first_shard; s < p->end_shard; s++)
            share->bytes += v.m->shards[s].bytes;
        share->problems = v.problem_count + v.problems_not_kept;
        share->seconds = p->seconds;
    }
    shard_verify_report_release(&report);
    run_release(&v);
    return rc;
}

/* Read results[0..count), one per part of one check of v's dataset, into
 * parts[] by part number. */
static int read_results(struct verify_run *v, const char *const *results, size_t count,
                        struct sk_part **out, uint32_t *out_parts, struct shard_err *err)
{
    struct sk_part *read = calloc(count ? count : 1, sizeof *read), *parts = NULL;
    const char **from = NULL;
    int rc = read ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint32_t n = 0;
    for (size_t i = 0; !rc && i < count; i++) {
        rc = sk_verify_result_read(v, results[i], &read[i], err);
        if (rc)
            break;
        if (i > 0 && (read[i].parts != n || read[i].deep != read[0].deep))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s' is part %u of %u%s, '%s' of %u%s: results of two checks",
                               results[i], read[i].part, read[i].parts,
                               read[i].deep ? " with --deep" : "", results[0], n,
                               read[0].deep ? " with --deep" : "");
        n = read[0].parts;
    }
    if (!rc && count == 0)
        rc = shard_err_set(err, SHARD_EINVAL, "no result to combine");
    if (!rc && !(parts = calloc(n, sizeof *parts)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && !(from = calloc(n, sizeof *from)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < count; i++) {
        uint32_t k = read[i].part;
        if (from[k]) {
            rc = shard_err_set(err, SHARD_EINVAL, "part %u of %u is given twice: '%s' and '%s'", k,
                               n, from[k], results[i]);
            break;
        }
        from[k] = results[i];
        parts[k] = read[i];
        memset(&read[i], 0, sizeof read[i]);
    }
    if (!rc && (rc = sk_verify_plan_shares(v, n, err)) == SHARD_OK) {
        for (uint32_t k = 0; !rc && k < n; k++) {
            if (!from[k])
                rc = shard_err_set(err, SHARD_EINVAL, "part %u of %u: no result", k, n);
            else if (parts[k].first_shard != v->share_starts[k] ||
                     parts[k].end_shard != v->share_starts[k + 1])
                rc = shard_err_set(err, SHARD_EINVAL,
                                   "'%s' checked shards %u..%u, but part %u of %u of this dataset "
                                   "is shards %u..%u",
                                   from[k], parts[k].first_shard, parts[k].end_shard, k, n,
                                   v->share_starts[k], v->share_starts[k + 1]);
        }
    }
    for (size_t i = 0; read && i < count; i++)
        sk_part_release(&read[i]);
    free(read);
    free(from);
    if (rc) {
        for (uint32_t k = 0; parts && k < n; k++)
            sk_part_release(&parts[k]);
        free(parts);
        return rc;
    }
    *out = parts;
    *out_parts = n;
    return SHARD_OK;
}

int shard_verify_combine(const char *dst, const char *const *results, size_t count,
                         struct shard_verify_report *report, struct shard_err *err)
{
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    struct verify_run v;
    run_init(&v, &o, report, dst);
    struct sk_part *parts = NULL;
    uint32_t n = 0;
    int rc = run_open(&v, 1, err);
    if (rc == 1) { /* the manifest's problem: nothing more can be checked */
        rc = sk_verify_finish_problems(&v, NULL, err);
        goto out;
    }
    if (!rc)
        rc = read_results(&v, results, count, &parts, &n, err);
    if (!rc) {
        o.deep = parts[0].deep;
        report->parts = n;
        rc = sk_verify_fields_begin(&v, err);
    }
    if (!rc)
        rc = sk_verify_combine_parts(&v, parts, n, err);
    if (!rc)
        rc = sk_verify_finish_problems(&v, v.line_bases, err);
out:
    for (uint32_t k = 0; parts && k < n; k++)
        sk_part_release(&parts[k]);
    free(parts);
    if (rc)
        shard_verify_report_release(report);
    run_release(&v);
    return rc;
}
