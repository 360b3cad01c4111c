/* keys.c - sample keys from the shard footers: the key of an index, and the
 * index of a key (see shardkit/dataset.h).  Keys are read from footers
 * (which every read checks against the record), never from index.jsonl, so
 * this works the same for a remote dataset. */
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "shardkit/source.h"

int shard_dataset_key(struct shard_dataset *ds, uint64_t index, const char **key, size_t *len,
                      struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    const struct shard_footer *footer;
    int rc = shard_dataset_locate(ds, index, &s, &r, err);
    if (!rc)
        rc = sk_dataset_shard_footer(ds, s, &footer, err);
    if (rc)
        return rc;
    *key = (const char *)footer->keys + footer->key_offsets[r];
    *len = footer->rows[r].key_len;
    return SHARD_OK;
}

struct shard_key_index {
    struct shard_dataset *ds;
    uint64_t *order; /* every sample index, sorted by key (shard_key_compare) */
    uint64_t count;
};

/* Keys of all samples, once every footer is open (no call can fail). */
static const char *key_at(struct shard_dataset *ds, uint64_t index, size_t *len)
{
    const char *key = NULL;
    shard_dataset_key(ds, index, &key, len, NULL);
    return key;
}

static int by_key(const void *a, const void *b, void *ctx)
{
    size_t la, lb;
    const char *ka = key_at(ctx, *(const uint64_t *)a, &la);
    const char *kb = key_at(ctx, *(const uint64_t *)b, &lb);
    int c = shard_key_compare(ka, la, kb, lb);
    if (c)
        return c;
    /* equal keys (a damaged dataset): the lower index first */
    uint64_t ia = *(const uint64_t *)a, ib = *(const uint64_t *)b;
    return (ia > ib) - (ia < ib);
}

int shard_key_index_new(struct shard_key_index **out, struct shard_dataset *ds,
                        struct shard_err *err)
{
    *out = NULL;
    uint64_t n = shard_dataset_size(ds);
    const struct shard_footer *footer;
    for (uint32_t s = 0; s < shard_dataset_shard_count(ds); s++) {
        int rc = sk_dataset_shard_footer(ds, s, &footer, err);
        if (rc)
            return rc;
    }
    if (n > SIZE_MAX / sizeof(uint64_t))
        return shard_err_set(err, SHARD_ENOMEM, "a key index of %llu samples is too large",
                             (unsigned long long)n);
    struct shard_key_index *ki = calloc(1, sizeof *ki);
    uint64_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!ki || !order) {
        free(ki);
        free(order);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_key, ds);
    ki->ds = ds;
    ki->order = order;
    ki->count = n;
    *out = ki;
    return SHARD_OK;
}

void shard_key_index_free(struct shard_key_index *ki)
{
    if (!ki)
        return;
    free(ki->order);
    free(ki);
}

int shard_key_index_find(const struct shard_key_index *ki, const char *key, size_t len,
                         uint64_t *index)
{
    uint64_t lo = 0, hi = ki->count; /* the first position whose key is >= key */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        size_t ml;
        const char *mk = key_at(ki->ds, ki->order[mid], &ml);
        if (shard_key_compare(mk, ml, key, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ki->count) {
        size_t ml;
        const char *mk = key_at(ki->ds, ki->order[lo], &ml);
        if (ml == len && memcmp(mk, key, len) == 0) {
            *index = ki->order[lo];
            return SHARD_OK;
        }
    }
    return SHARD_ENOTFOUND;
}
