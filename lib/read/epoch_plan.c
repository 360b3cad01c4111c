/* epoch_plan.c - epoch plans: which samples one rank visits, in which order
 * (the rules are specified in shardkit/dataset.h; keep the two in step). */
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "read/plan_internal.h"
#include "util/random.h"
#include "shardkit/dataset.h"

struct shard_plan {
    uint64_t *indices;
    uint64_t count;
    uint64_t padded;
    uint64_t dropped;
    uint64_t shared; /* entries the plan's ranks share (sk_plan_shared) */
};

void shard_plan_options_init(struct shard_plan_options *o)
{
    memset(o, 0, sizeof *o);
    o->shuffle = 1;
    o->world_size = 1;
    o->shuffle_buffer = SHARD_PLAN_DEFAULT_BUFFER;
    o->remainder = SHARD_REMAINDER_KEEP;
}

int shard_remainder_parse(const char *s, enum shard_remainder *out)
{
    if (!strcmp(s, "keep"))
        *out = SHARD_REMAINDER_KEEP;
    else if (!strcmp(s, "drop"))
        *out = SHARD_REMAINDER_DROP;
    else if (!strcmp(s, "pad"))
        *out = SHARD_REMAINDER_PAD;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

const char *shard_remainder_name(enum shard_remainder r)
{
    switch (r) {
    case SHARD_REMAINDER_KEEP: return "keep";
    case SHARD_REMAINDER_DROP: return "drop";
    case SHARD_REMAINDER_PAD: return "pad";
    }
    return "unknown";
}

/* floor(a * b / c) without overflow (a, b < 2^64, c > 0, result <= a). */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
    return (uint64_t)((unsigned __int128)a * b / c);
}

void shard_plan_free(struct shard_plan *p)
{
    if (!p)
        return;
    free(p->indices);
    free(p);
}

/* The rank's slice [begin, end) of positions in the (conceptually repeated)
 * epoch sequence, and how many samples of the epoch no rank visits. */
void sk_plan_rank_slice(uint64_t n, const struct shard_plan_options *o, uint64_t *begin,
                        uint64_t *end, uint64_t *dropped)
{
    uint64_t w = o->world_size, r = o->rank;
    *dropped = 0;
    switch (o->remainder) {
    case SHARD_REMAINDER_DROP: {
        uint64_t q = n / w;
        *begin = r * q;
        *end = *begin + q;
        *dropped = n - q * w;
        return;
    }
    case SHARD_REMAINDER_PAD: {
        uint64_t c = n / w + (n % w != 0);
        *begin = n ? r * c : 0;
        *end = n ? *begin + c : 0;
        return;
    }
    case SHARD_REMAINDER_KEEP: break;
    }
    *begin = mul_div(r, n, w);
    *end = mul_div(r + 1, n, w);
}

int shard_plan_new(struct shard_plan **out, const uint64_t *shard_samples, uint32_t shard_count,
                   const struct shard_plan_options *o, struct shard_err *err)
{
    *out = NULL;
    if (o->world_size == 0 || o->rank >= o->world_size)
        return shard_err_set(err, SHARD_EINVAL, "rank %u is outside a world of %u", o->rank,
                             o->world_size);
    if ((unsigned)o->remainder > SHARD_REMAINDER_PAD)
        return shard_err_set(err, SHARD_EINVAL, "unknown remainder option %d", o->remainder);
    uint64_t n = 0;
    for (uint32_t s = 0; s < shard_count; s++) {
        if (shard_samples[s] > UINT64_MAX / 2 - n)
            return shard_err_set(err, SHARD_EINVAL, "shard sample counts overflow");
        n += shard_samples[s];
    }
    struct shard_plan *p = calloc(1, sizeof *p);
    uint64_t *order = malloc((shard_count ? shard_count : 1) * sizeof *order);
    uint64_t *first = malloc(((size_t)shard_count + 1) * sizeof *first);
    int rc = SHARD_OK;
    if (!p || !order || !first) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }

    /* 1. shard order, and where each shard starts in stored order */
    uint64_t at = 0;
    for (uint32_t s = 0; s < shard_count; s++) {
        order[s] = s;
        first[s] = at;
        at += shard_samples[s];
    }
    if (o->shuffle)
        sk_shuffle(order, shard_count, sk_derive(o->seed, SK_TAG_SHARD_ORDER, o->epoch, 0, 0));

    /* 2. this rank's slice of the epoch sequence */
    uint64_t begin, end;
    sk_plan_rank_slice(n, o, &begin, &end, &p->dropped);
    p->count = end - begin;
    p->shared = n;
    if (p->count > SIZE_MAX / sizeof *p->indices) {
        rc = shard_err_set(err, SHARD_ENOMEM, "plan of %llu entries is too large",
                           (unsigned long long)p->count);
        goto out;
    }
    p->indices = malloc((p->count ? p->count : 1) * sizeof *p->indices);
    if (!p->indices) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot allocate a plan of %llu entries",
                           (unsigned long long)p->count);
        goto out;
    }
    /* Walk the epoch sequence from position `begin` (mod n), shard by
     * shard, without materialising the whole sequence. */
    if (p->count) {
        uint64_t pos = begin % n;
        p->padded = end > n ? end - (begin > n ? begin : n) : 0;
        uint32_t k = 0; /* position of the current shard in `order` */
        uint64_t start = 0;
        while (start + shard_samples[order[k]] <= pos) {
            start += shard_samples[order[k]];
            k++;
        }
        uint64_t offset = pos - start;
        for (uint64_t i = 0; i < p->count; i++) {
            while (offset >= shard_samples[order[k]]) {
                offset = 0;
                k = (k + 1 == shard_count) ? 0 : k + 1;
            }
            p->indices[i] = first[order[k]] + offset;
            offset++;
        }
    }

    /* 3. shuffle inside windows of the buffer size */
    if (o->shuffle && o->shuffle_buffer > 1) {
        for (uint64_t w0 = 0, k = 0; w0 < p->count; w0 += o->shuffle_buffer, k++) {
            uint64_t len = p->count - w0 < o->shuffle_buffer ? p->count - w0 : o->shuffle_buffer;
            sk_shuffle(p->indices + w0, (size_t)len,
                       sk_derive(o->seed, SK_TAG_WINDOW, o->epoch, o->rank, k));
        }
    }
    *out = p;
    p = NULL;
out:
    shard_plan_free(p);
    free(order);
    free(first);
    return rc;
}

uint64_t *sk_dataset_shard_counts(const struct shard_dataset *ds)
{
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    uint64_t *counts = malloc((m->shard_count ? m->shard_count : 1) * sizeof *counts);
    for (uint32_t s = 0; counts && s < m->shard_count; s++)
        counts[s] = m->shards[s].samples;
    return counts;
}

int shard_dataset_plan(const struct shard_dataset *ds, const struct shard_plan_options *o,
                       struct shard_plan **out, struct shard_err *err)
{
    uint64_t *counts = sk_dataset_shard_counts(ds);
    if (!counts)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = shard_plan_new(out, counts, shard_dataset_shard_count(ds), o, err);
    free(counts);
    return rc;
}

uint64_t *sk_plan_take_indices(struct shard_plan *p)
{
    uint64_t *indices = p->indices;
    p->indices = NULL;
    return indices;
}

uint64_t shard_plan_count(const struct shard_plan *p)
{
    return p->count;
}

const uint64_t *shard_plan_indices(const struct shard_plan *p)
{
    return p->indices;
}

uint64_t shard_plan_padded(const struct shard_plan *p)
{
    return p->padded;
}

uint64_t shard_plan_dropped(const struct shard_plan *p)
{
    return p->dropped;
}

struct shard_plan *sk_plan_adopt(uint64_t *indices, uint64_t count, uint64_t padded,
                                 uint64_t dropped, uint64_t shared)
{
    struct shard_plan *p = calloc(1, sizeof *p);
    if (!p) {
        free(indices);
        return NULL;
    }
    *p = (struct shard_plan){indices, count, padded, dropped, shared};
    return p;
}

uint64_t sk_plan_shared(const struct shard_plan *p)
{
    return p->shared;
}

/* A dataset's epoch sequence E (step 1): the shards in the epoch's order,
 * with where each starts in stored order and in E. */
struct sequence {
    const uint64_t *counts;
    uint32_t shards;
    uint64_t *order; /* shard numbers in E's order */
    uint64_t *first; /* first[s]: shard s's first sample index */
};

static void sequence_release(struct sequence *q)
{
    free(q->order);
    free(q->first);
}

static int sequence_make(struct sequence *q, const uint64_t *counts, uint32_t shards,
                         const struct shard_plan_options *o, struct shard_err *err)
{
    memset(q, 0, sizeof *q);
    q->counts = counts;
    q->shards = shards;
    q->order = malloc((shards ? shards : 1) * sizeof *q->order);
    q->first = malloc((shards ? shards : 1) * sizeof *q->first);
    if (!q->order || !q->first) {
        sequence_release(q);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    uint64_t at = 0;
    for (uint32_t s = 0; s < shards; s++) {
        q->order[s] = s;
        q->first[s] = at;
        at += counts[s];
    }
    if (o->shuffle)
        sk_shuffle(q->order, shards, sk_derive(o->seed, SK_TAG_SHARD_ORDER, o->epoch, 0, 0));
    return SHARD_OK;
}

/* E at sorted positions (each below the sample count). */
static int sequence_lookup(void *ctx, const uint64_t *positions, size_t n, uint64_t *out,
                           struct shard_err *err)
{
    (void)err;
    const struct sequence *q = ctx;
    uint32_t k = 0;
    uint64_t start = 0; /* E position of shard order[k]'s first sample */
    for (size_t i = 0; i < n; i++) {
        while (start + q->counts[q->order[k]] <= positions[i])
            start += q->counts[q->order[k++]];
        out[i] = q->first[q->order[k]] + (positions[i] - start);
    }
    return SHARD_OK;
}

int sk_plan_entries_at(const uint64_t *shard_samples, uint32_t shard_count,
                       const struct shard_plan_options *o, const uint64_t *offsets, size_t n,
                       uint64_t *out, struct shard_err *err)
{
    struct sequence q;
    int rc = sequence_make(&q, shard_samples, shard_count, o, err);
    if (rc)
        return rc;
    uint64_t total = 0;
    for (uint32_t s = 0; s < shard_count; s++)
        total += shard_samples[s];
    const uint64_t b = o->shuffle && o->shuffle_buffer > 1 ? o->shuffle_buffer : 1;
    if (b == 1) { /* no windows: the plan is E */
        rc = sequence_lookup(&q, offsets, n, out, err);
        sequence_release(&q);
        return rc;
    }
    /* window by window: each window an offset falls in, made and shuffled */
    const uint64_t room = b < total ? b : total;
    uint64_t *win = malloc((room ? room : 1) * sizeof *win);
    uint64_t *at = malloc((room ? room : 1) * sizeof *at);
    if (!win || !at) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n;) {
        const uint64_t j = offsets[i] / b, from = j * b;
        const uint64_t len = total - from < b ? total - from : b;
        for (uint64_t k = 0; k < len; k++)
            at[k] = from + k;
        sequence_lookup(&q, at, (size_t)len, win, err);
        sk_shuffle(win, (size_t)len, sk_derive(o->seed, SK_TAG_WINDOW, o->epoch, 0, j));
        for (; i < n && offsets[i] < from + len; i++)
            out[i] = win[offsets[i] - from];
    }
out:
    free(win);
    free(at);
    sequence_release(&q);
    return rc;
}

int shard_plan_new_resumed(struct shard_plan **out, const uint64_t *shard_samples,
                           uint32_t shard_count, const struct shard_plan_options *o,
                           const struct shard_plan_segment *done, size_t count,
                           struct shard_err *err)
{
    *out = NULL;
    uint64_t n = 0;
    for (uint32_t s = 0; s < shard_count; s++) {
        if (shard_samples[s] > UINT64_MAX / 2 - n)
            return shard_err_set(err, SHARD_EINVAL, "shard sample counts overflow");
        n += shard_samples[s];
    }
    struct sequence q;
    int rc = sequence_make(&q, shard_samples, shard_count, o, err);
    if (rc)
        return rc;
    const struct sk_epoch_seq seq = {n, o->shuffle_buffer, sequence_lookup, &q};
    rc = sk_plan_resumed(&seq, o, done, count, out, err);
    sequence_release(&q);
    return rc;
}

int shard_dataset_plan_resumed(const struct shard_dataset *ds, const struct shard_plan_options *o,
                               const struct shard_plan_segment *done, size_t count,
                               struct shard_plan **out, struct shard_err *err)
{
    uint64_t *counts = sk_dataset_shard_counts(ds);
    if (!counts)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = shard_plan_new_resumed(out, counts, shard_dataset_shard_count(ds), o, done, count,
                                    err);
    free(counts);
    return rc;
}
