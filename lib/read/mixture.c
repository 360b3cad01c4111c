/* mixture.c - weighted mixtures of datasets and their epoch plans (the
 * rules are specified in shardkit/mixture.h; keep the two in step).
 *
 * A rank's plan never lists the epoch: its positions of M are looked up by
 * drawing the sources from M's start to its last position (a stream of L
 * draws, no memory), and each source's entries come from the windows of
 * its passes that the rank's draws fall in (sk_plan_entries_at). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "read/plan_internal.h"
#include "shardkit/mixture.h"
#include "util/random.h"

struct source {
    struct shard_dataset *ds;
    uint64_t n, base; /* samples, and the mixture's number of the first */
    uint64_t *counts; /* the shards' sample counts */
    uint32_t shards;
    double weight;     /* relative to the sum */
    double cumulative; /* C_s */
    uint64_t quota;    /* q_s */
    int32_t *map;      /* LABELS_MERGED: label number -> merged number */
    uint32_t labels;   /* the source's label count */
};

struct shard_mixture {
    struct source *src;
    uint32_t count;
    uint64_t size, length;
    enum shard_mixture_rule rule;
    enum shard_mixture_labels labels;
    char **merged; /* LABELS_MERGED: the class names, sorted by bytes */
    uint32_t merged_count;
};

static const char *const rule_names[] = {"replace", "stop_on_shortest", "stop_on_longest"};
static const char *const labels_names[] = {"own", "merged"};

int shard_mixture_rule_parse(const char *s, enum shard_mixture_rule *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, rule_names[i])) {
            *out = (enum shard_mixture_rule)i;
            return SHARD_OK;
        }
    return SHARD_EINVAL;
}

const char *shard_mixture_rule_name(enum shard_mixture_rule r)
{
    return (unsigned)r < 3 ? rule_names[r] : "unknown";
}

int shard_mixture_labels_parse(const char *s, enum shard_mixture_labels *out)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, labels_names[i])) {
            *out = (enum shard_mixture_labels)i;
            return SHARD_OK;
        }
    return SHARD_EINVAL;
}

void shard_mixture_options_init(struct shard_mixture_options *o)
{
    memset(o, 0, sizeof *o);
    o->rule = SHARD_MIXTURE_REPLACE;
    o->labels = SHARD_MIXTURE_LABELS_OWN;
}

void shard_mixture_free(struct shard_mixture *m)
{
    if (!m)
        return;
    for (uint32_t s = 0; m->src && s < m->count; s++) {
        free(m->src[s].counts);
        free(m->src[s].map);
    }
    free(m->src);
    for (uint32_t k = 0; m->merged && k < m->merged_count; k++)
        free(m->merged[k]);
    free(m->merged);
    free(m);
}

/* floor(c * L) for 0 <= c <= 1 and L below 2^53. */
static uint64_t floor_of(double c, uint64_t length)
{
    return (uint64_t)floor(c * (double)length);
}

/* q_s for an epoch of `length` into q[0..count). */
static void quotas(const struct shard_mixture *m, uint64_t length, uint64_t *q)
{
    uint64_t before = 0;
    for (uint32_t s = 0; s < m->count; s++) {
        uint64_t upto = s + 1 == m->count ? length : floor_of(m->src[s].cumulative, length);
        q[s] = upto - before;
        before = upto;
    }
}

/* Whether every q_s for `length` is at most (longest 0) or at least
 * (longest 1) its source's size. */
static int fits(const struct shard_mixture *m, uint64_t length, int longest, uint64_t *q)
{
    quotas(m, length, q);
    for (uint32_t s = 0; s < m->count; s++)
        if (longest ? q[s] < m->src[s].n : q[s] > m->src[s].n)
            return 0;
    return 1;
}

/* L by the rule (mixture.h) and each q_s, or SHARD_EINVAL when L is beyond
 * the limit. */
static int epoch_length(struct shard_mixture *m, uint64_t epoch_size, struct shard_err *err)
{
    const double limit = (double)SHARD_MIXTURE_MAX_EPOCH;
    uint64_t *q = malloc(m->count * sizeof *q);
    if (!q)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t length = epoch_size ? epoch_size : m->size;
    if (m->rule == SHARD_MIXTURE_STOP_ON_SHORTEST) {
        double bound = limit;
        for (uint32_t s = 0; s < m->count; s++) {
            double b = floor((double)(m->src[s].n + 1) / m->src[s].weight) + 1;
            bound = b < bound ? b : bound;
        }
        length = (uint64_t)bound;
        while (length && !fits(m, length, 0, q))
            length--;
    } else if (m->rule == SHARD_MIXTURE_STOP_ON_LONGEST) {
        double bound = 0;
        for (uint32_t s = 0; s < m->count; s++) {
            double b = floor((double)(m->src[s].n - 1) / m->src[s].weight);
            bound = b > bound ? b : bound;
        }
        length = bound < limit ? (uint64_t)bound : SHARD_MIXTURE_MAX_EPOCH + 1;
        while (length <= SHARD_MIXTURE_MAX_EPOCH && !fits(m, length, 1, q))
            length++;
    }
    if (m->rule != SHARD_MIXTURE_REPLACE && epoch_size && epoch_size < length)
        length = epoch_size;
    int rc = SHARD_OK;
    if (length > SHARD_MIXTURE_MAX_EPOCH) {
        rc = shard_err_set(err, SHARD_EINVAL, "a mixture epoch of more than %llu entries (rule %s)",
                           (unsigned long long)SHARD_MIXTURE_MAX_EPOCH,
                           shard_mixture_rule_name(m->rule));
    } else {
        m->length = length;
        quotas(m, length, q);
        for (uint32_t s = 0; s < m->count; s++)
            m->src[s].quota = q[s];
    }
    free(q);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* LABELS_MERGED: the union of the sources' class names, sorted, and each
 * source's map into it.  0 or -1 when out of memory (shard_mixture_free
 * frees what was made). */
static int merge_labels(struct shard_mixture *m)
{
    size_t all = 0;
    for (uint32_t s = 0; s < m->count; s++)
        all += m->src[s].labels;
    if (!(m->merged = malloc((all ? all : 1) * sizeof *m->merged)))
        return -1;
    for (uint32_t s = 0; s < m->count; s++) { /* borrowed from the manifests, then copied */
        const struct shard_manifest *mf = shard_dataset_manifest(m->src[s].ds);
        for (uint32_t k = 0; k < mf->label_count; k++)
            m->merged[m->merged_count++] = mf->labels[k];
    }
    qsort(m->merged, m->merged_count, sizeof *m->merged, by_name);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < m->merged_count; i++)
        if (!kept || strcmp(m->merged[kept - 1], m->merged[i]))
            m->merged[kept++] = m->merged[i];
    m->merged_count = 0;
    for (uint32_t i = 0; i < kept; i++, m->merged_count++)
        if (!(m->merged[i] = strdup(m->merged[i])))
            return -1;
    for (uint32_t s = 0; s < m->count; s++) {
        const struct shard_manifest *mf = shard_dataset_manifest(m->src[s].ds);
        if (!(m->src[s].map = malloc((mf->label_count ? mf->label_count : 1) * sizeof(int32_t))))
            return -1;
        for (uint32_t k = 0; k < mf->label_count; k++) {
            char **at = bsearch(&mf->labels[k], m->merged, m->merged_count, sizeof *m->merged,
                                by_name);
            m->src[s].map[k] = (int32_t)(at - m->merged);
        }
    }
    return 0;
}

int shard_mixture_new(struct shard_mixture **out, struct shard_dataset *const *sources,
                      const double *weights, uint32_t count, const struct shard_mixture_options *o,
                      struct shard_err *err)
{
    *out = NULL;
    if (count == 0 || count > SHARD_MIXTURE_MAX_SOURCES)
        return shard_err_set(err, SHARD_EINVAL, "a mixture has 1 to %u sources, not %u",
                             SHARD_MIXTURE_MAX_SOURCES, count);
    if ((unsigned)o->rule > SHARD_MIXTURE_STOP_ON_LONGEST)
        return shard_err_set(err, SHARD_EINVAL, "unknown mixture rule %d", o->rule);
    if ((unsigned)o->labels > SHARD_MIXTURE_LABELS_MERGED)
        return shard_err_set(err, SHARD_EINVAL, "unknown mixture labels option %d", o->labels);
    if (o->epoch_size > SHARD_MIXTURE_MAX_EPOCH)
        return shard_err_set(err, SHARD_EINVAL, "epoch_size %llu is above %llu",
                             (unsigned long long)o->epoch_size,
                             (unsigned long long)SHARD_MIXTURE_MAX_EPOCH);
    double sum = 0;
    for (uint32_t s = 0; s < count; s++) {
        if (!(weights[s] > 0 && isfinite(weights[s])))
            return shard_err_set(err, SHARD_EINVAL,
                                 "the weight of source %u is %g: weights must be finite and "
                                 "above 0",
                                 s, weights[s]);
        if (shard_dataset_size(sources[s]) == 0)
            return shard_err_set(err, SHARD_EINVAL, "source %u has no samples", s);
        sum += weights[s];
    }
    if (!isfinite(sum))
        return shard_err_set(err, SHARD_EINVAL, "the weights' sum is not finite");
    struct shard_mixture *m = calloc(1, sizeof *m);
    if (!m || !(m->src = calloc(count, sizeof *m->src))) {
        free(m);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    m->count = count;
    m->rule = o->rule;
    m->labels = o->labels;
    int rc = SHARD_OK;
    double cumulative = 0;
    for (uint32_t s = 0; s < count; s++) {
        struct source *src = &m->src[s];
        src->ds = sources[s];
        src->n = shard_dataset_size(sources[s]);
        src->base = m->size;
        src->shards = shard_dataset_shard_count(sources[s]);
        src->labels = shard_dataset_manifest(sources[s])->label_count;
        src->weight = weights[s] / sum;
        cumulative += weights[s];
        src->cumulative = s + 1 == count ? 1.0 : cumulative / sum;
        if (!(src->counts = sk_dataset_shard_counts(sources[s]))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto fail;
        }
        if (src->n > SHARD_MIXTURE_MAX_EPOCH - m->size) {
            rc = shard_err_set(err, SHARD_EINVAL, "the sources hold more than %llu samples",
                               (unsigned long long)SHARD_MIXTURE_MAX_EPOCH);
            goto fail;
        }
        m->size += src->n;
    }
    if ((rc = epoch_length(m, o->epoch_size, err)))
        goto fail;
    if (m->labels == SHARD_MIXTURE_LABELS_MERGED && merge_labels(m)) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    *out = m;
    return SHARD_OK;
fail:
    shard_mixture_free(m);
    return rc;
}

uint32_t shard_mixture_source_count(const struct shard_mixture *m)
{
    return m->count;
}

struct shard_dataset *shard_mixture_source(const struct shard_mixture *m, uint32_t s)
{
    return s < m->count ? m->src[s].ds : NULL;
}

double shard_mixture_weight(const struct shard_mixture *m, uint32_t s)
{
    return s < m->count ? m->src[s].weight : 0;
}

uint64_t shard_mixture_quota(const struct shard_mixture *m, uint32_t s)
{
    return s < m->count ? m->src[s].quota : 0;
}

uint64_t shard_mixture_epoch_size(const struct shard_mixture *m)
{
    return m->length;
}

uint64_t shard_mixture_size(const struct shard_mixture *m)
{
    return m->size;
}

enum shard_mixture_rule shard_mixture_rule(const struct shard_mixture *m)
{
    return m->rule;
}

enum shard_mixture_labels shard_mixture_labels(const struct shard_mixture *m)
{
    return m->labels;
}

int shard_mixture_locate(const struct shard_mixture *m, uint64_t sample, uint32_t *source,
                         uint64_t *index, struct shard_err *err)
{
    if (sample >= m->size)
        return shard_err_set(err, SHARD_ENOTFOUND, "no sample %llu in a mixture of %llu",
                             (unsigned long long)sample, (unsigned long long)m->size);
    uint32_t lo = 0, hi = m->count; /* base[lo] <= sample < base[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->src[mid].base <= sample)
            lo = mid;
        else
            hi = mid;
    }
    *source = lo;
    *index = sample - m->src[lo].base;
    return SHARD_OK;
}

uint32_t shard_mixture_label_count(const struct shard_mixture *m)
{
    return m->labels == SHARD_MIXTURE_LABELS_MERGED ? m->merged_count : 0;
}

const char *shard_mixture_label(const struct shard_mixture *m, uint32_t k)
{
    return m->labels == SHARD_MIXTURE_LABELS_MERGED && k < m->merged_count ? m->merged[k] : NULL;
}

int32_t shard_mixture_label_of(const struct shard_mixture *m, uint32_t source, int32_t label)
{
    if (m->labels != SHARD_MIXTURE_LABELS_MERGED || source >= m->count || label < 0 ||
        (uint32_t)label >= m->src[source].labels)
        return label;
    return m->src[source].map[label];
}

/* ---- plans ------------------------------------------------------------- */

/* What the lookup of M needs: the mixture and the plan's options. */
struct lookup {
    const struct shard_mixture *m;
    const struct shard_plan_options *o;
};

/* M at sorted positions: step 1 draws the sources up to the last one,
 * noting each position's (source, draw); step 2 takes each source's
 * entries pass by pass. */
static int mixture_lookup(void *ctx, const uint64_t *positions, size_t n, uint64_t *out,
                          struct shard_err *err)
{
    const struct lookup *lk = ctx;
    const struct shard_mixture *m = lk->m;
    const uint32_t K = m->count;
    uint64_t *left = malloc(K * sizeof *left), *drawn = calloc(K, sizeof *drawn);
    uint32_t *source = malloc(n * sizeof *source);
    uint64_t *draw = malloc(n * sizeof *draw);
    size_t *first = calloc((size_t)K + 1, sizeof *first), *order = malloc(n * sizeof *order);
    uint64_t *offsets = malloc(n * sizeof *offsets), *got = malloc(n * sizeof *got);
    int rc = SHARD_OK;
    if (!left || !drawn || !source || !draw || !first || !order || !offsets || !got) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    /* 1: the sources of positions 0 .. positions[n - 1] */
    uint64_t remaining = m->length;
    for (uint32_t s = 0; s < K; s++)
        left[s] = m->src[s].quota;
    uint64_t state = sk_derive(lk->o->seed, SK_TAG_MIXTURE, lk->o->epoch, 0, 0);
    for (uint64_t j = 0, i = 0; i < n; j++) {
        uint64_t u = sk_random_below(&state, remaining), acc = left[0];
        uint32_t s = 0;
        while (u >= acc)
            acc += left[++s];
        for (; i < n && positions[i] == j; i++) {
            source[i] = s;
            draw[i] = drawn[s];
        }
        drawn[s]++;
        left[s]--;
        remaining--;
    }
    /* 2: the entries grouped by source (ascending draws), pass by pass */
    for (size_t i = 0; i < n; i++)
        first[source[i] + 1]++;
    for (uint32_t s = 0; s < K; s++)
        first[s + 1] += first[s];
    memcpy(left, first, K * sizeof *left); /* next slot of each source */
    for (size_t i = 0; i < n; i++)
        order[left[source[i]]++] = i;
    for (uint32_t s = 0; s < K && !rc; s++) {
        const struct source *src = &m->src[s];
        for (size_t a = first[s]; a < first[s + 1] && !rc;) {
            const uint64_t pass = draw[order[a]] / src->n;
            size_t b = a;
            for (; b < first[s + 1] && draw[order[b]] / src->n == pass; b++)
                offsets[b - a] = draw[order[b]] - pass * src->n;
            struct shard_plan_options po;
            shard_plan_options_init(&po);
            po.shuffle = lk->o->shuffle;
            po.shuffle_buffer = lk->o->shuffle_buffer;
            po.seed = sk_derive(lk->o->seed, SK_TAG_MIXTURE_PASS, lk->o->epoch, s, pass);
            rc = sk_plan_entries_at(src->counts, src->shards, &po, offsets, b - a, got, err);
            for (size_t k = a; !rc && k < b; k++)
                out[order[k]] = src->base + got[k - a];
            a = b;
        }
    }
out:
    free(left);
    free(drawn);
    free(source);
    free(draw);
    free(first);
    free(order);
    free(offsets);
    free(got);
    return rc;
}

int shard_mixture_plan_resumed(const struct shard_mixture *m, const struct shard_plan_options *o,
                               const struct shard_plan_segment *done, size_t count,
                               struct shard_plan **out, struct shard_err *err)
{
    struct lookup lk = {m, o};
    const struct sk_epoch_seq q = {m->length, 0, mixture_lookup, &lk};
    return sk_plan_resumed(&q, o, done, count, out, err);
}

int shard_mixture_plan(const struct shard_mixture *m, const struct shard_plan_options *o,
                       struct shard_plan **out, struct shard_err *err)
{
    return shard_mixture_plan_resumed(m, o, NULL, 0, out, err);
}
