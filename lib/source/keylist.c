/* keylist.c - a compact list of byte-string keys and its sort (see shardkit/source.h).
 *
 * Keys live back to back in one arena, each followed by a NUL; per key we
 * keep only a 64-bit offset and a 32-bit length, so ten million keys cost
 * 120 MB of index on top of their bytes.
 *
 * Sorting is a multikey quicksort on 8-byte digits: every key in a range
 * carries its next 8 bytes, read big-endian into a uint64_t ("head"), in a
 * temporary array.  A three-way partition on heads compares integers only;
 * the run of equal heads is then sorted on the following 8 bytes.  Image
 * keys share long prefixes ("n01440764/n01440764_"), which a plain
 * comparison sort would memcmp over and over; here every byte of a key is
 * loaded once per level.  Small ranges use insertion sort and a range that
 * partitions badly falls back to heapsort, so the worst case stays
 * O(n log n) per 8-byte level.
 */
#include "shardkit/source.h"

#include <stdlib.h>
#include <string.h>

#include "source/source_internal.h"
#include "util/grow.h"

#define KEYLIST_INITIAL_KEYS 1024
#define KEYLIST_INITIAL_ARENA (64 * 1024)
/* Ranges at most this long are finished with insertion sort. */
#define INSERTION_SORT_MAX 16
/* Bytes per sort digit: the size of a head. */
#define DIGIT_BYTES 8

int shard_keylist_add(struct shard_keylist *l, const char *key, size_t len, struct shard_err *err)
{
    /* A NUL inside would make the NUL-terminated view of the key lie. */
    if (len > UINT32_MAX || memchr(key, '\0', len))
        return shard_err_set(err, SHARD_EINVAL, "key of %zu bytes is too long or contains NUL",
                             len);
    /* offsets and lengths grow alike: l->cap is the capacity of both once
     * both have grown */
    size_t offsets_cap = l->cap, lengths_cap = l->cap;
    if (SK_GROW(l->offsets, offsets_cap, l->count + 1, KEYLIST_INITIAL_KEYS) ||
        SK_GROW(l->lengths, lengths_cap, l->count + 1, KEYLIST_INITIAL_KEYS))
        return shard_err_set(err, SHARD_ENOMEM, "cannot grow the key list to %zu keys",
                             l->count + 1);
    l->cap = lengths_cap;
    if (len + 1 > SIZE_MAX - l->arena_len)
        return shard_err_set(err, SHARD_ENOMEM, "key arena overflow");
    size_t need = l->arena_len + len + 1;
    if (SK_GROW(l->arena, l->arena_cap, need, KEYLIST_INITIAL_ARENA))
        return shard_err_set(err, SHARD_ENOMEM, "cannot grow the key arena to %zu bytes", need);
    memcpy(l->arena + l->arena_len, key, len);
    l->arena[l->arena_len + len] = '\0';
    l->offsets[l->count] = l->arena_len;
    l->lengths[l->count] = (uint32_t)len;
    l->arena_len = need;
    l->count++;
    return SHARD_OK;
}

int sk_key_compare(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    return c ? c : (a_len > b_len) - (a_len < b_len);
}

const char *shard_keylist_get(const struct shard_keylist *l, size_t i, size_t *len)
{
    if (len)
        *len = l->lengths[i];
    return l->arena + l->offsets[i];
}

void shard_keylist_release(struct shard_keylist *l)
{
    if (!l)
        return;
    free(l->arena);
    free(l->offsets);
    free(l->lengths);
    memset(l, 0, sizeof *l);
}

/* ---- sorting ------------------------------------------------------------ */

/* The arrays a sort permutes in lockstep.  heads may be NULL (the
 * allocation-free fallback), in which case only full comparisons are used. */
struct sorter {
    const char *arena;
    uint64_t *offsets;
    uint32_t *lengths;
    uint64_t *heads;
};

/* A range [lo, hi) whose keys all share their first `depth` bytes (and are
 * at least that long); heads hold bytes depth..depth+7. */
struct range {
    size_t lo, hi;
    size_t depth;
    unsigned budget; /* partitions left before falling back to heapsort */
};

/* Bytes depth..depth+7 of key i, big-endian, zero-padded past the end.
 * Keys hold no NUL, so padding sorts a shorter key before its extensions. */
static uint64_t load_head(const struct sorter *s, size_t i, size_t depth)
{
    size_t len = s->lengths[i];
    if (depth >= len)
        return 0;
    const unsigned char *p = (const unsigned char *)s->arena + s->offsets[i] + depth;
    size_t n = len - depth;
    uint64_t h = 0;
    if (n >= DIGIT_BYTES) { /* the common case: one unaligned big-endian load */
        memcpy(&h, p, sizeof h);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        h = __builtin_bswap64(h);
#elif !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
        h = 0;
        for (size_t k = 0; k < DIGIT_BYTES; k++)
            h = (h << 8) | p[k];
#endif
        return h;
    }
    for (size_t k = 0; k < n; k++)
        h |= (uint64_t)p[k] << (56 - 8 * k);
    return h;
}

static void swap_entries(const struct sorter *s, size_t i, size_t j)
{
    uint64_t o = s->offsets[i];
    s->offsets[i] = s->offsets[j];
    s->offsets[j] = o;
    uint32_t n = s->lengths[i];
    s->lengths[i] = s->lengths[j];
    s->lengths[j] = n;
    if (s->heads) {
        uint64_t h = s->heads[i];
        s->heads[i] = s->heads[j];
        s->heads[j] = h;
    }
}

/* Byte order of keys i and j, both known to agree on their first `depth`
 * bytes: memcmp on the rest, a prefix first. */
static int compare_from(const struct sorter *s, size_t i, size_t j, size_t depth)
{
    if (s->heads && s->heads[i] != s->heads[j])
        return s->heads[i] < s->heads[j] ? -1 : 1;
    size_t skip = s->heads ? depth + DIGIT_BYTES : depth;
    size_t li = s->lengths[i], lj = s->lengths[j];
    size_t n = li < lj ? li : lj;
    if (n > skip) {
        int c = memcmp(s->arena + s->offsets[i] + skip, s->arena + s->offsets[j] + skip, n - skip);
        if (c)
            return c;
    }
    return (li > lj) - (li < lj);
}

static void insertion_sort(const struct sorter *s, size_t lo, size_t hi, size_t depth)
{
    for (size_t i = lo + 1; i < hi; i++)
        for (size_t j = i; j > lo && compare_from(s, j - 1, j, depth) > 0; j--)
            swap_entries(s, j - 1, j);
}

static void sift_down(const struct sorter *s, size_t lo, size_t root, size_t n, size_t depth)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && compare_from(s, lo + child, lo + child + 1, depth) < 0)
            child++;
        if (compare_from(s, lo + root, lo + child, depth) >= 0)
            return;
        swap_entries(s, lo + root, lo + child);
        root = child;
    }
}

/* Complete sort of [lo, hi) with no allocation and O(n log n) comparisons. */
static void heap_sort(const struct sorter *s, size_t lo, size_t hi, size_t depth)
{
    size_t n = hi - lo;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(s, lo, i, n, depth);
    for (size_t end = n; end-- > 1;) {
        swap_entries(s, lo, lo + end);
        sift_down(s, lo, 0, end, depth);
    }
}

static unsigned log2_floor(size_t n)
{
    unsigned r = 0;
    while (n >>= 1)
        r++;
    return r;
}

static uint64_t median_of_three(uint64_t a, uint64_t b, uint64_t c)
{
    if (a > b) {
        uint64_t t = a;
        a = b;
        b = t;
    }
    if (b > c)
        b = c;
    return a > b ? a : b;
}

/* Pending ranges live on a heap-allocated stack; push_range returns 0 or
 * SHARD_ENOMEM. */
struct range_stack {
    struct range *items;
    size_t len, cap;
};

static int push_range(struct range_stack *st, size_t lo, size_t hi, size_t depth, unsigned budget)
{
    if (hi - lo < 2)
        return 0;
    if (SK_GROW(st->items, st->cap, st->len + 1, 64))
        return SHARD_ENOMEM;
    st->items[st->len++] = (struct range){lo, hi, depth, budget};
    return 0;
}

/* The multikey quicksort.  Returns SHARD_ENOMEM if the range stack could not grow;
 * the caller then finishes with heapsort (the partial work is harmless). */
static int multikey_sort(const struct sorter *s, size_t count)
{
    struct range_stack st = {0};
    int rc = 0;
    for (size_t i = 0; i < count; i++)
        s->heads[i] = load_head(s, i, 0);
    if (push_range(&st, 0, count, 0, 2 * log2_floor(count) + 2))
        rc = SHARD_ENOMEM;
    while (rc == 0 && st.len) {
        struct range r = st.items[--st.len];
        size_t n = r.hi - r.lo;
        if (n <= INSERTION_SORT_MAX) {
            insertion_sort(s, r.lo, r.hi, r.depth);
            continue;
        }
        if (r.budget == 0) {
            heap_sort(s, r.lo, r.hi, r.depth);
            continue;
        }
        uint64_t pivot = median_of_three(s->heads[r.lo], s->heads[r.lo + n / 2],
                                         s->heads[r.hi - 1]);
        /* Dijkstra's three-way partition: < pivot, == pivot, > pivot. */
        size_t lt = r.lo, i = r.lo, gt = r.hi;
        while (i < gt) {
            uint64_t h = s->heads[i];
            if (h < pivot)
                swap_entries(s, lt++, i++);
            else if (h > pivot)
                swap_entries(s, i, --gt);
            else
                i++;
        }
        if (push_range(&st, r.lo, lt, r.depth, r.budget - 1) ||
            push_range(&st, gt, r.hi, r.depth, r.budget - 1)) {
            rc = SHARD_ENOMEM;
            break;
        }
        /* Equal heads whose last byte is 0 ended inside this digit: since
         * keys hold no NUL they are identical, and so already in order. */
        if ((pivot & 0xff) != 0 && gt - lt >= 2) {
            size_t depth = r.depth + DIGIT_BYTES;
            for (size_t k = lt; k < gt; k++)
                s->heads[k] = load_head(s, k, depth);
            if (push_range(&st, lt, gt, depth, 2 * log2_floor(gt - lt) + 2)) {
                rc = SHARD_ENOMEM;
                break;
            }
        }
    }
    free(st.items);
    return rc;
}

void shard_keylist_sort(struct shard_keylist *l)
{
    if (l->count < 2)
        return;
    struct sorter s = {l->arena, l->offsets, l->lengths, NULL};
    /* This function cannot report failure, so when the heads (8 bytes per
     * key) or the range stack cannot be allocated we still sort correctly,
     * only more slowly, with the allocation-free heapsort. */
    s.heads = malloc(l->count * sizeof *s.heads);
    if (s.heads && multikey_sort(&s, l->count) == 0) {
        free(s.heads);
        return;
    }
    free(s.heads);
    s.heads = NULL;
    heap_sort(&s, 0, l->count, 0);
}

int sk_rows_unmatched(uint64_t rows, const struct shard_keylist *keys,
                      int64_t (*row)(const void *ctx, const char *key, size_t len), const void *ctx,
                      uint64_t *unmatched, struct shard_err *err)
{
    *unmatched = 0;
    if (!rows)
        return SHARD_OK;
    /* one bit per row: matched by some key */
    uint8_t *seen = calloc((size_t)(rows + 7) / 8, 1);
    if (!seen)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t matched = 0;
    for (size_t i = 0; i < keys->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(keys, i, &len);
        int64_t r = row(ctx, key, len);
        if (r >= 0 && !(seen[r / 8] & (1u << (r % 8)))) {
            seen[r / 8] |= (uint8_t)(1u << (r % 8));
            matched++;
        }
    }
    free(seen);
    *unmatched = rows - matched;
    return SHARD_OK;
}
