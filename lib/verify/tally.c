/* tally.c - distinct values counted, for the histograms a report draws
 * (see verify_internal.h and shard_tally in shardkit/verify.h).
 *
 * A tally is an open-addressing hash table of (value, count), so counting a
 * dataset's record sizes or caption lengths takes memory that follows the
 * distinct values, never the samples.  Past SHARD_TALLY_MAX distinct values
 * it rounds every value down to a multiple of 2^shift, raising the shift
 * until they fit (a histogram of 30 bins hardly notices), or, when asked not
 * to round (the dimensions: width << 32 | height), counts the newcomers in
 * `others`.  Tallies of parts merge into the tally of the whole. */
#include <stdlib.h>
#include <string.h>

#include "verify/verify_internal.h"

#define TALLY_FIRST_CAP 64u

void sk_tally_init(struct sk_tally *t, int no_rounding)
{
    memset(t, 0, sizeof *t);
    t->no_rounding = no_rounding;
}

void sk_tally_release(struct sk_tally *t)
{
    if (!t)
        return;
    free(t->slots);
    int no_rounding = t->no_rounding;
    sk_tally_init(t, no_rounding);
}

static size_t slot_of(uint64_t v, size_t cap)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    return (size_t)v & (cap - 1);
}

/* Count (value, n) into the table, which has room (no rounding, no growth). */
static void put(uint64_t *slots, size_t cap, size_t *used, uint64_t v, uint64_t n)
{
    size_t i = slot_of(v, cap);
    while (slots[2 * i] && slots[2 * i] != v + 1)
        i = (i + 1) & (cap - 1);
    if (!slots[2 * i]) {
        slots[2 * i] = v + 1;
        (*used)++;
    }
    slots[2 * i + 1] += n;
}

/* Rebuild t in a table of `cap` slots, every value rounded to t->shift. */
static int rebuild(struct sk_tally *t, size_t cap)
{
    uint64_t *slots = calloc(cap, 2 * sizeof *slots);
    if (!slots)
        return SHARD_ENOMEM;
    size_t used = 0;
    uint64_t mask = t->shift >= 64 ? 0 : ~0ULL << t->shift;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[2 * i])
            put(slots, cap, &used, (t->slots[2 * i] - 1) & mask, t->slots[2 * i + 1]);
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    t->used = used;
    return SHARD_OK;
}

/* Count value v n times into the table, rounded as the tally rounds. */
static int count_value(struct sk_tally *t, uint64_t v, uint64_t n)
{
    uint64_t r = t->shift >= 64 ? 0 : v & (~0ULL << t->shift);
    if (r == UINT64_MAX) /* a slot holds value + 1: the largest value goes one down */
        r--;
    if (!t->cap && rebuild(t, TALLY_FIRST_CAP))
        return SHARD_ENOMEM;
    size_t i = slot_of(r, t->cap);
    while (t->slots[2 * i] && t->slots[2 * i] != r + 1)
        i = (i + 1) & (t->cap - 1);
    if (t->slots[2 * i]) {
        t->slots[2 * i + 1] += n;
        return SHARD_OK;
    }
    if (t->used >= SHARD_TALLY_MAX) {
        if (t->no_rounding) {
            t->others += n;
            return SHARD_OK;
        }
        /* round coarser until the distinct values fit in half the room */
        while (t->used > SHARD_TALLY_MAX / 2) {
            t->shift++;
            if (rebuild(t, t->cap))
                return SHARD_ENOMEM;
        }
        return count_value(t, v, n);
    }
    if (2 * (t->used + 1) > t->cap) { /* at most half full: short probes */
        if (rebuild(t, 2 * t->cap))
            return SHARD_ENOMEM;
        i = slot_of(r, t->cap);
        while (t->slots[2 * i])
            i = (i + 1) & (t->cap - 1);
    }
    t->slots[2 * i] = r + 1;
    t->slots[2 * i + 1] = n;
    t->used++;
    return SHARD_OK;
}

int sk_tally_restore(struct sk_tally *t, const struct shard_tally *from)
{
    t->shift = from->shift;
    for (size_t i = 0; i < from->count; i++)
        if (from->counts[i] && count_value(t, from->values[i], from->counts[i]))
            return SHARD_ENOMEM;
    t->total = from->total;
    t->min = from->min;
    t->max = from->max;
    t->others = from->others;
    return SHARD_OK;
}

int sk_tally_add(struct sk_tally *t, uint64_t v, uint64_t n)
{
    if (!n)
        return SHARD_OK;
    if (!t->total || v < t->min)
        t->min = v;
    if (!t->total || v > t->max)
        t->max = v;
    t->total += n;
    return count_value(t, v, n);
}

int sk_tally_each(const struct sk_tally *t, int (*fn)(void *ctx, uint64_t v, uint64_t n), void *ctx)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[2 * i]) {
            int rc = fn(ctx, t->slots[2 * i] - 1, t->slots[2 * i + 1]);
            if (rc)
                return rc;
        }
    return SHARD_OK;
}

int sk_tally_merge(struct sk_tally *t, const struct sk_tally *from)
{
    if (from->shift > t->shift) {
        t->shift = from->shift;
        if (t->cap && rebuild(t, t->cap))
            return SHARD_ENOMEM;
    }
    for (size_t i = 0; i < from->cap; i++)
        if (from->slots[2 * i] && count_value(t, from->slots[2 * i] - 1, from->slots[2 * i + 1]))
            return SHARD_ENOMEM;
    t->others += from->others;
    /* min, max and total are those of the values seen, not of the slots */
    if (from->total) {
        t->min = t->total && t->min < from->min ? t->min : from->min;
        t->max = t->total && t->max > from->max ? t->max : from->max;
    }
    t->total += from->total;
    return SHARD_OK;
}

void sk_shard_tally_release(struct shard_tally *t)
{
    if (!t)
        return;
    free(t->values);
    free(t->counts);
    memset(t, 0, sizeof *t);
}

static int compare_pairs(const void *pa, const void *pb)
{
    const uint64_t *a = pa, *b = pb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

int sk_tally_export(const struct sk_tally *t, struct shard_tally *out)
{
    sk_shard_tally_release(out);
    size_t n = t->used;
    uint64_t *pairs = malloc((n ? n : 1) * 2 * sizeof *pairs);
    out->values = malloc((n ? n : 1) * sizeof *out->values);
    out->counts = malloc((n ? n : 1) * sizeof *out->counts);
    if (!pairs || !out->values || !out->counts) {
        free(pairs);
        sk_shard_tally_release(out);
        return SHARD_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[2 * i]) {
            pairs[2 * k] = t->slots[2 * i] - 1;
            pairs[2 * k + 1] = t->slots[2 * i + 1];
            k++;
        }
    qsort(pairs, k, 2 * sizeof *pairs, compare_pairs);
    for (size_t i = 0; i < k; i++) {
        out->values[i] = pairs[2 * i];
        out->counts[i] = pairs[2 * i + 1];
    }
    free(pairs);
    out->count = k;
    out->total = t->total;
    out->min = t->min;
    out->max = t->max;
    out->shift = t->shift;
    out->others = t->others;
    return SHARD_OK;
}
