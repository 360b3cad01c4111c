/* verify.c - shard_verify(): the manifest and shard-file checks, the problem
 * list, and the order of the passes (see shardkit/verify.h and
 * verify_internal.h).
 *
 * The default pass must catch a changed byte anywhere in a shard, so it
 * hashes every shard file whole (XXH3-64, streamed) and compares with the
 * manifest; shards are hashed in parallel, one per thread at a time.  Then
 * each shard's header, trailer and footer are read through the dataset
 * reader (the same code training uses), which the later passes reuse. */
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
    free(r->labels_note);
    free(r->fields_note);
    for (uint32_t i = 0; i < r->label_tally_count; i++)
        free(r->labels[i].name);
    free(r->labels);
    memset(r, 0, sizeof *r);
}

/* ---- the problem list ---------------------------------------------------- */

int sk_verify_problem(struct verify_run *v, enum shard_check check, int code, int64_t shard,
                      int64_t record, const char *key, size_t key_len, const char *fmt, ...)
{
    char msg[SHARD_ERRMSG_SIZE + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct shard_problem p = {check, code, shard, record, NULL, 0, strdup(msg)};
    if (key && (p.key = malloc(key_len + 1))) {
        memcpy(p.key, key, key_len);
        p.key[key_len] = '\0';
        p.key_len = key_len;
    }
    int rc = SHARD_OK;
    pthread_mutex_lock(&v->lock);
    struct shard_verify_report *r = v->report;
    if (r->problem_count >= SHARD_VERIFY_MAX_PROBLEMS) {
        r->problems_not_kept++;
        goto drop;
    }
    if (!p.message || (key && !p.key)) {
        rc = SHARD_ENOMEM;
        goto drop;
    }
    if (SK_GROW(r->problems, v->problems_cap, r->problem_count + 1, 64)) {
        rc = SHARD_ENOMEM;
        goto drop;
    }
    r->problems[r->problem_count++] = p;
    pthread_mutex_unlock(&v->lock);
    return SHARD_OK;
drop:
    pthread_mutex_unlock(&v->lock);
    free(p.key);
    free(p.message);
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

/* ---- shard files ------------------------------------------------------------ */

/* Hash shard s whole and compare with the manifest; then read its footer. */
static void check_shard(struct verify_run *v, uint32_t s, uint64_t *hashed, double *busy)
{
    const struct shard_manifest_shard *ms = &v->m->shards[s];
    struct shard_err e;
    shard_err_clear(&e);
    uint64_t bytes = 0, h = 0;
    double t0 = sk_now_seconds();
    int rc = sk_dataset_hash_file(v->ds, ms->file, &bytes, &h, &e);
    *busy += sk_now_seconds() - t0;
    if (rc == SHARD_ENOTFOUND) {
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s: missing", ms->file);
        return;
    }
    if (rc) {
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s: cannot be hashed: %s",
                          ms->file, rc == SHARD_ENOMEM ? "out of memory" : e.msg);
        return;
    }
    *hashed += bytes;
    if (bytes != ms->bytes)
        sk_verify_problem(v, SHARD_CHECK_SHARD, SHARD_EMISMATCH, s, -1, NULL, 0,
                          "%s: %llu bytes, manifest says %llu", ms->file, (unsigned long long)bytes,
                          (unsigned long long)ms->bytes);
    if (h != ms->xxh3) {
        char got[17], want[17];
        shard_hex64(h, got);
        shard_hex64(ms->xxh3, want);
        sk_verify_problem(v, SHARD_CHECK_SHARD, SHARD_EMISMATCH, s, -1, NULL, 0,
                          "%s: xxh3 is %s, manifest says %s", ms->file, got, want);
    }
    const struct shard_footer *footer;
    shard_err_clear(&e);
    rc = sk_dataset_shard_footer(v->ds, s, &footer, &e);
    if (rc) {
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s", e.msg);
        return;
    }
    v->footers[s] = footer;
    if ((rc = sk_dataset_shard_check_name(v->ds, s, &e)))
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s", e.msg);
    /* a version 2 dataset's records carry fields: its shards are version 2 */
    if (footer->version != v->m->version)
        sk_verify_problem(v, SHARD_CHECK_SHARD, SHARD_EMISMATCH, s, -1, NULL, 0,
                          "%s: format version %u, the manifest's is %u", ms->file, footer->version,
                          v->m->version);
}

static void check_shards(struct verify_run *v)
{
    uint32_t n = v->m->shard_count;
    uint64_t hashed = 0;
    double busy = 0, t0 = sk_now_seconds();
    int threads = v->threads < (int)n ? v->threads : (int)(n ? n : 1);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+ : hashed, busy)
    for (uint32_t s = 0; s < n; s++)
        check_shard(v, s, &hashed, &busy);
    struct shard_verify_rate *rate = &v->report->hash;
    rate->bytes = hashed;
    rate->items = n;
    rate->seconds = sk_now_seconds() - t0;
    rate->busy_seconds = busy;
    rate->threads = threads;
    v->all_footers = 1;
    for (uint32_t s = 0; s < n; s++)
        if (!v->footers[s])
            v->all_footers = 0;
}

static int compare_names(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The manifest's shard file names, sorted (borrowed from the manifest). */
static const char **sorted_names(const struct shard_manifest *m)
{
    const char **names = malloc((m->shard_count ? m->shard_count : 1) * sizeof *names);
    if (!names)
        return NULL;
    for (uint32_t s = 0; s < m->shard_count; s++)
        names[s] = m->shards[s].file;
    qsort(names, m->shard_count, sizeof *names, compare_names);
    return names;
}

/* A file listed twice would be read twice: its samples would count double. */
static void check_listed_once(struct verify_run *v, const char **names)
{
    for (uint32_t i = 1; i < v->m->shard_count; i++)
        if (!strcmp(names[i - 1], names[i]) && (i < 2 || strcmp(names[i - 2], names[i])))
            sk_verify_problem(v, SHARD_CHECK_MANIFEST, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "manifest: '%s' is listed in \"shards\" more than once", names[i]);
}

struct stray_walk {
    struct verify_run *v;
    const char **names;
};

static int check_stray(void *user, const char *name)
{
    struct stray_walk *w = user;
    size_t len = strlen(name), ext = strlen(SHARD_FILE_EXT);
    if (strncmp(name, "shard-", 6) || len <= ext || strcmp(name + len - ext, SHARD_FILE_EXT))
        return 0;
    if (!bsearch(&name, w->names, w->v->m->shard_count, sizeof *w->names, compare_names))
        sk_verify_problem(w->v, SHARD_CHECK_SHARD, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "%s: in the dataset directory but not listed in the manifest", name);
    return 0;
}

/* Names that look like shard files but are not listed: left over, or the
 * manifest lost track of them.  A dataset that cannot be listed (over
 * HTTP) or whose listing fails is let be: its shards were checked already. */
static void check_stray_shards(struct verify_run *v, const char **names)
{
    struct stray_walk w = {v, names};
    struct shard_err e;
    (void)sk_dataset_list(v->ds, check_stray, &w, &e);
}

/* ---- the run ---------------------------------------------------------------- */

/* One tally per label of the manifest and one for the unlabeled samples,
 * with the manifest's counts; the passes add what they count. */
static int start_label_tallies(struct verify_run *v, struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    struct shard_verify_report *r = v->report;
    r->labels = calloc((size_t)m->label_count + 1, sizeof *r->labels);
    if (!r->labels)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %u labels", m->label_count);
    r->label_tally_count = m->label_count + 1;
    for (uint32_t i = 0; i < m->label_count; i++) {
        if (!(r->labels[i].name = strdup(m->labels[i])))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory for %u labels", m->label_count);
        r->labels[i].manifest = m->label_samples[i];
    }
    r->labels[m->label_count].manifest = m->unlabeled;
    return SHARD_OK;
}

static int manifest_problem(void *user, const struct shard_err *e)
{
    return sk_verify_problem(user, SHARD_CHECK_MANIFEST, e->code, -1, -1, NULL, 0, "%s", e->msg);
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

static int run_passes(struct verify_run *v, struct shard_err *err)
{
    const struct shard_verify_options *o = v->o;
    v->footers = calloc(v->m->shard_count ? v->m->shard_count : 1, sizeof *v->footers);
    v->index_width = calloc(v->samples ? v->samples : 1, sizeof *v->index_width);
    v->index_height = calloc(v->samples ? v->samples : 1, sizeof *v->index_height);
    const char **names = sorted_names(v->m);
    if (!v->footers || !v->index_width || !v->index_height || !names) {
        free(names);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %llu samples",
                             (unsigned long long)v->samples);
    }
    int rc = start_label_tallies(v, err);
    if (!rc)
        rc = sk_verify_fields_begin(v, err);
    if (rc) {
        free(names);
        return rc;
    }
    check_listed_once(v, names);
    sk_verify_orphans_listed(v);
    check_shards(v);
    check_stray_shards(v, names);
    free(names);
    rc = sk_verify_index(v, err);
    if (!rc && o->deep)
        rc = sk_verify_deep(v, err);
    if (!rc && o->source)
        rc = sk_verify_source(v, err);
    if (!rc && o->fidelity)
        rc = sk_verify_fidelity(v, err);
    if (!rc && o->world_size_count)
        rc = sk_verify_visitation(v, err);
    return rc;
}

int shard_verify(const char *dst, const struct shard_verify_options *o,
                 struct shard_verify_report *report, struct shard_err *err)
{
    memset(report, 0, sizeof *report);
    int rc = check_options(o, err);
    if (rc)
        return rc;
    struct verify_run v;
    memset(&v, 0, sizeof v);
    v.o = o;
    v.report = report;
    v.dst = dst;
    v.threads = o->threads > 0 ? o->threads : shard_available_cpus();
    report->threads = v.threads;
    pthread_mutex_init(&v.lock, NULL);

    struct shard_err e;
    shard_err_clear(&e);
    /* contradictions in the manifest are listed and checking goes on with
     * what can still be read */
    rc = sk_dataset_open_lenient(&v.ds, dst, manifest_problem, &v, &e);
    if (rc == SHARD_ECORRUPT || rc == SHARD_EUNSUPPORTED) {
        /* a manifest that is there but wrong is a finding, not an I/O error */
        rc = sk_verify_problem(&v, SHARD_CHECK_MANIFEST, rc, -1, -1, NULL, 0, "%s", e.msg);
        if (rc)
            shard_err_set(err, rc, "out of memory");
        goto out;
    }
    if (rc) {
        *err = e;
        goto out;
    }
    v.m = shard_dataset_manifest(v.ds);
    v.samples = shard_dataset_size(v.ds);
    report->shards = v.m->shard_count;
    report->fields = v.m->config.field_count;
    report->samples = v.samples;
    rc = run_passes(&v, err);
out:
    if (report->problem_count)
        qsort(report->problems, report->problem_count, sizeof *report->problems, compare_problems);
    if (rc)
        shard_verify_report_release(report);
    free(v.footers);
    free(v.index_width);
    free(v.index_height);
    sk_verify_fields_end(&v);
    shard_dataset_close(v.ds);
    pthread_mutex_destroy(&v.lock);
    return rc;
}
