/* sidecars.c - the files that go with an image by sharing its stem
 * (a/0001.jpg with a/0001.txt, a/0001.json), see source_internal.h.
 *
 * Memory: the sidecar files' keys in one keylist, 4 bytes of owner per file,
 * and, while resolving, 8 bytes per candidate (its index sorted by stem;
 * with sample stems and an orphan, once more by sample stem); nothing per
 * candidate is kept afterwards: finding an image's sidecar is a binary
 * search of stem + suffix among the files (then of sample stem + suffix). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/source_internal.h"
#include "util/grow.h"
#include "shardx/shardx.h"

struct sk_sidecars {
    char **suffixes; /* declared, as given (repeats allowed) */
    size_t *suffix_len;
    uint32_t suffix_count;
    struct shard_keylist files; /* sidecar files, sorted by key once resolved */
    int32_t *owner;             /* per file (sorted): the suffix it belongs by, -1: orphan */
    size_t *ordinal;            /* per file (sorted): the order it was added in */
    size_t *orphans;            /* positions of the orphans, in key order */
    size_t orphan_count;
    struct refused_file {
        size_t ordinal; /* as added, so increasing */
        const char *reason;
    } * refused;
    size_t refused_count, refused_cap;
    int resolved;
    int sample_stems;   /* a file may belong by its sample's stem (sk_sidecars_sample_stems) */
    uint8_t *by_sample; /* per file (sorted), with sample_stems: 1 when it belongs so */
};

int sk_sidecars_new(struct sk_sidecars **out, const char *const *suffixes, uint32_t count,
                    struct shard_err *err)
{
    *out = NULL;
    struct sk_sidecars *s = calloc(1, sizeof *s);
    if (!s || !(s->suffixes = calloc(count ? count : 1, sizeof *s->suffixes)) ||
        !(s->suffix_len = calloc(count ? count : 1, sizeof *s->suffix_len))) {
        sk_sidecars_free(s);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        const char *x = suffixes[i];
        if ((x[0] != '.' && x[0] != '_') || !x[1] || strchr(x, '/')) {
            sk_sidecars_free(s);
            return shard_err_set(err, SHARD_EINVAL,
                                 "a sidecar suffix is '.' or '_' and a name "
                                 "without '/' ('.txt', '_mask.png'), not '%s'",
                                 x);
        }
        if (!(s->suffixes[i] = strdup(x))) {
            sk_sidecars_free(s);
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
        s->suffix_len[i] = strlen(x);
        s->suffix_count = i + 1;
    }
    *out = s;
    return SHARD_OK;
}

void sk_sidecars_free(struct sk_sidecars *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; s->suffixes && i < s->suffix_count; i++)
        free(s->suffixes[i]);
    free(s->suffixes);
    free(s->suffix_len);
    shard_keylist_release(&s->files);
    free(s->owner);
    free(s->ordinal);
    free(s->orphans);
    free(s->refused);
    free(s->by_sample);
    free(s);
}

void sk_sidecars_sample_stems(struct sk_sidecars *s)
{
    s->sample_stems = 1;
}

static int ends_with(const char *name, size_t len, const char *suffix, size_t n)
{
    return len > n && memcmp(name + len - n, suffix, n) == 0;
}

int sk_sidecars_suffix_of(const struct sk_sidecars *s, const char *name, size_t len)
{
    int best = -1;
    for (uint32_t i = 0; i < s->suffix_count; i++)
        if (ends_with(name, len, s->suffixes[i], s->suffix_len[i]) &&
            (best < 0 || s->suffix_len[i] > s->suffix_len[best]))
            best = (int)i;
    /* "a/.txt" is a hidden file named ".txt", not the sidecar of "a/" */
    if (best >= 0 && name[len - s->suffix_len[best] - 1] == '/')
        return -1;
    return best;
}

int sk_sidecars_add_file(struct sk_sidecars *s, const char *key, size_t len, struct shard_err *err)
{
    return shard_keylist_add(&s->files, key, len, err);
}

size_t sk_sidecars_file_count(const struct sk_sidecars *s)
{
    return s->files.count;
}

void sk_sidecars_truncate(struct sk_sidecars *s, size_t count)
{
    if (count < s->files.count) {
        s->files.arena_len = s->files.offsets[count];
        s->files.count = count;
    }
    while (s->refused_count && s->refused[s->refused_count - 1].ordinal >= count)
        s->refused_count--;
}

int sk_sidecars_add_refused(struct sk_sidecars *s, const char *key, size_t len, const char *reason,
                            struct shard_err *err)
{
    if (SK_GROW(s->refused, s->refused_cap, s->refused_count + 1, 16))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    s->refused[s->refused_count] = (struct refused_file){s->files.count, reason};
    int rc = shard_keylist_add(&s->files, key, len, err);
    if (!rc)
        s->refused_count++;
    return rc;
}

const char *sk_sidecars_file_refusal(const struct sk_sidecars *s, size_t i)
{
    if (!s->refused_count)
        return NULL;
    size_t ordinal = s->ordinal[i], lo = 0, hi = s->refused_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->refused[mid].ordinal == ordinal)
            return s->refused[mid].reason;
        if (s->refused[mid].ordinal < ordinal)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Bytes of key's stem: up to the last '.' of its last component (the whole
 * key when that has none). */
static size_t stem_len(const char *key, size_t len)
{
    for (size_t i = len; i > 0; i--) {
        if (key[i - 1] == '/')
            break;
        if (key[i - 1] == '.')
            return i - 1;
    }
    return len;
}

/* Bytes of key's sample stem (WebDataset's sample key): up to the first '.'
 * of its last component, when that is not its first byte; else stem_len. */
static size_t sample_stem_len(const char *key, size_t len)
{
    size_t start = len;
    while (start > 0 && key[start - 1] != '/')
        start--;
    const char *dot = memchr(key + start, '.', len - start);
    return dot && dot > key + start ? (size_t)(dot - key) : stem_len(key, len);
}

static int compare_sample_stems(const void *pa, const void *pb, void *ctx)
{
    const struct shard_keylist *k = ctx;
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    const char *ka = k->arena + k->offsets[a], *kb = k->arena + k->offsets[b];
    int c = sk_key_compare(ka, sample_stem_len(ka, k->lengths[a]), kb,
                           sample_stem_len(kb, k->lengths[b]));
    return c ? c : (a > b) - (a < b);
}

/* How many candidates (sorted[0..n) by sample stem) have the sample stem
 * stem[0..len): 0, 1 or 2 (two or more). */
static int sample_stem_count(const struct shard_keylist *k, const uint64_t *sorted, size_t n,
                             const char *stem, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first not below */
        size_t mid = lo + (hi - lo) / 2;
        const char *key = k->arena + k->offsets[sorted[mid]];
        if (sk_key_compare(key, sample_stem_len(key, k->lengths[sorted[mid]]), stem, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int count = 0;
    for (size_t i = lo; i < n && count < 2; i++, count++) {
        const char *key = k->arena + k->offsets[sorted[i]];
        if (sk_key_compare(key, sample_stem_len(key, k->lengths[sorted[i]]), stem, len))
            break;
    }
    return count;
}

/* With sample stems: the orphans that belong to a candidate by its sample
 * stem (a/x.right.jpg of suffix ".right.jpg" to a/x.left.jpg, the only
 * candidate of sample stem a/x, when none has the stem a/x) leave the
 * orphans, flagged in by_sample.  0 or SHARD_ENOMEM. */
static int resolve_sample_stems(struct sk_sidecars *s, const struct shard_keylist *keys,
                                struct shard_err *err)
{
    size_t n = keys->count;
    uint64_t *sorted = s->orphan_count ? malloc((n ? n : 1) * sizeof *sorted) : NULL;
    s->by_sample = calloc(s->files.count ? s->files.count : 1, 1);
    if (!s->by_sample || (s->orphan_count && !sorted)) {
        free(sorted);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (size_t i = 0; sorted && i < n; i++)
        sorted[i] = i;
    if (sorted)
        qsort_r(sorted, n, sizeof *sorted, compare_sample_stems, (void *)keys);
    size_t kept = 0;
    for (size_t o = 0; o < s->orphan_count; o++) {
        size_t f = s->orphans[o], len;
        const char *key = shard_keylist_get(&s->files, f, &len);
        for (uint32_t x = 0; x < s->suffix_count; x++) {
            size_t sl = s->suffix_len[x];
            if (!ends_with(key, len, s->suffixes[x], sl) || key[len - sl - 1] == '/' ||
                (s->owner[f] >= 0 && sl <= s->suffix_len[s->owner[f]]) ||
                sample_stem_len(key, len - sl) != len - sl || /* a/x.y is no sample stem */
                sample_stem_count(keys, sorted, n, key, len - sl) != 1)
                continue;
            s->owner[f] = (int32_t)x;
            s->by_sample[f] = 1;
        }
        if (s->owner[f] < 0)
            s->orphans[kept++] = f;
    }
    s->orphan_count = kept;
    free(sorted);
    return SHARD_OK;
}

static int compare_stems(const void *pa, const void *pb, void *ctx)
{
    const struct shard_keylist *k = ctx;
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    const char *ka = k->arena + k->offsets[a], *kb = k->arena + k->offsets[b];
    int c = sk_key_compare(ka, stem_len(ka, k->lengths[a]), kb, stem_len(kb, k->lengths[b]));
    if (c)
        return c;
    /* same stem: by whole key, so the reason names a fixed other */
    c = sk_key_compare(ka, k->lengths[a], kb, k->lengths[b]);
    return c ? c : (a > b) - (a < b);
}

/* Whether some candidate (sorted[0..n) by stem) has stem[0..len). */
static int has_stem(const struct shard_keylist *k, const uint64_t *sorted, size_t n,
                    const char *stem, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *key = k->arena + k->offsets[sorted[mid]];
        int c = sk_key_compare(key, stem_len(key, k->lengths[sorted[mid]]), stem, len);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int compare_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* A group of candidates sharing one stem (sorted by whole key): the first
 * not already refused (among the first `sorted` refusals, those sorted
 * before the groups were looked at) is the stem's image and keeps its
 * sidecars; every other is refused naming it.  Already refused ones keep
 * their own reason. */
static int refuse_group(const struct shard_keylist *k, const uint64_t *group, size_t n,
                        size_t sorted, struct shard_refusals *refused, struct shard_err *err)
{
    /* the sorted part only (its items moved where an addition left them):
     * the groups' refusals are added after it */
    struct shard_refusals before = {refused->items, sorted, sorted};
    size_t kept = n;
    for (size_t i = 0; i < n && kept == n; i++) {
        size_t len;
        const char *key = shard_keylist_get(k, group[i], &len);
        if (!shard_refusals_find(&before, key, len))
            kept = i;
    }
    if (kept == n)
        return SHARD_OK;
    size_t first_len;
    const char *first = shard_keylist_get(k, group[kept], &first_len);
    char shown[SHARDX_QUOTE_SIZE], reason[SHARDX_QUOTE_SIZE + 96];
    snprintf(reason, sizeof reason, "%s'%s', the stem's image (the first by name)", SK_REASON_STEM,
             shardx_quote(first, first_len, shown, sizeof shown));
    for (size_t i = kept + 1; i < n; i++) {
        size_t len;
        const char *key = shard_keylist_get(k, group[i], &len);
        before.items = refused->items;
        if (shard_refusals_find(&before, key, len))
            continue;
        int rc = sk_refusals_add(refused, key, len, reason, err);
        if (rc)
            return rc;
    }
    return SHARD_OK;
}

int sk_sidecars_resolve(struct sk_sidecars *s, const struct shard_keylist *keys,
                        struct shard_refusals *refused, struct shard_err *err)
{
    int rc = SHARD_OK;
    size_t n = keys->count;
    uint64_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    s->owner = malloc((s->files.count ? s->files.count : 1) * sizeof *s->owner);
    s->orphans = malloc((s->files.count ? s->files.count : 1) * sizeof *s->orphans);
    if (!sorted || !s->owner || !s->orphans) {
        free(sorted);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        sorted[i] = i;
    qsort_r(sorted, n, sizeof *sorted, compare_stems, (void *)keys);

    /* candidates sharing a stem */
    size_t refused_before = refused->count;
    for (size_t i = 0; i < n && !rc;) {
        size_t j = i + 1;
        const char *a = keys->arena + keys->offsets[sorted[i]];
        size_t alen = stem_len(a, keys->lengths[sorted[i]]);
        while (j < n) {
            const char *b = keys->arena + keys->offsets[sorted[j]];
            if (sk_key_compare(a, alen, b, stem_len(b, keys->lengths[sorted[j]])))
                break;
            j++;
        }
        if (j - i > 1)
            rc = refuse_group(keys, sorted + i, j - i, refused_before, refused, err);
        i = j;
    }
    if (!rc && refused->count > refused_before)
        sk_refusals_sort(refused);

    /* each file: the longest suffix whose stem is an image's; keys were
     * added in order, so a key's arena offset tells when it was */
    size_t nf = s->files.count;
    uint64_t *added = malloc((nf ? nf : 1) * sizeof *added);
    s->ordinal = malloc((nf ? nf : 1) * sizeof *s->ordinal);
    if (!added || !s->ordinal) {
        free(added);
        free(sorted);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (nf) /* no file found: no offsets either */
        memcpy(added, s->files.offsets, nf * sizeof *added);
    shard_keylist_sort(&s->files);
    for (size_t f = 0; f < nf; f++) {
        const uint64_t *hit = bsearch(&s->files.offsets[f], added, nf, sizeof *added, compare_u64);
        s->ordinal[f] = (size_t)(hit - added);
    }
    free(added);
    for (size_t f = 0; f < s->files.count && !rc; f++) {
        size_t len;
        const char *key = shard_keylist_get(&s->files, f, &len);
        s->owner[f] = -1;
        for (uint32_t x = 0; x < s->suffix_count; x++) {
            size_t sl = s->suffix_len[x];
            if (!ends_with(key, len, s->suffixes[x], sl) || key[len - sl - 1] == '/')
                continue;
            if ((s->owner[f] < 0 || sl > s->suffix_len[s->owner[f]]) &&
                has_stem(keys, sorted, n, key, len - sl))
                s->owner[f] = (int32_t)x;
        }
        if (s->owner[f] < 0)
            s->orphans[s->orphan_count++] = f;
    }
    free(sorted);
    if (!rc && s->sample_stems)
        rc = resolve_sample_stems(s, keys, err);
    s->resolved = !rc;
    return rc;
}

/* The file key[0..stem) + suffix `suffix`, when it belongs by that suffix
 * (and, when `by_sample`, by a sample stem): its position, or -1. */
static int64_t lookup(const struct sk_sidecars *s, const char *key, size_t stem, uint32_t suffix,
                      int by_sample)
{
    size_t sl = s->suffix_len[suffix];
    char small[512];
    char *want = stem + sl <= sizeof small ? small : malloc(stem + sl);
    if (!want)
        return -1;
    memcpy(want, key, stem);
    memcpy(want + stem, s->suffixes[suffix], sl);
    size_t lo = 0, hi = s->files.count;
    int64_t found = -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t mlen;
        const char *m = shard_keylist_get(&s->files, mid, &mlen);
        int c = sk_key_compare(m, mlen, want, stem + sl);
        if (c == 0) {
            found = (int64_t)mid;
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (want != small)
        free(want);
    /* the file may belong by a longer suffix, to another image
     * ("a.meta.json": ".meta.json" of "a", not ".json" of "a.meta") */
    if (found >= 0 &&
        (s->owner[found] < 0 || strcmp(s->suffixes[s->owner[found]], s->suffixes[suffix]) != 0 ||
         (by_sample && !s->by_sample[found])))
        return -1;
    return found;
}

int64_t sk_sidecars_find(const struct sk_sidecars *s, const char *key, size_t len, uint32_t suffix)
{
    size_t stem = stem_len(key, len);
    int64_t found = lookup(s, key, stem, suffix, 0);
    /* a/x.left.jpg's a/x.right.jpg, by the sample stem a/x (resolve_sample_stems) */
    if (found == -1 && s->by_sample && sample_stem_len(key, len) < stem)
        found = lookup(s, key, sample_stem_len(key, len), suffix, 1);
    /* an archive may hold a name twice: which one is meant cannot be told */
    if (found >= 0) {
        size_t len0, len1;
        const char *k0 = shard_keylist_get(&s->files, (size_t)found, &len0);
        for (int d = -1; d <= 1; d += 2) {
            int64_t o = found + d;
            if (o < 0 || (size_t)o >= s->files.count)
                continue;
            const char *k1 = shard_keylist_get(&s->files, (size_t)o, &len1);
            if (sk_key_compare(k0, len0, k1, len1) == 0)
                return SK_SIDECAR_TWICE;
        }
    }
    return found;
}

int sk_sidecars_name(const struct sk_sidecars *s, const char *key, size_t len, uint32_t suffix,
                     struct shard_buf *out, struct shard_err *err)
{
    out->len = 0;
    int rc = shard_buf_append(out, key, stem_len(key, len), err);
    return rc ? rc : shard_buf_append(out, s->suffixes[suffix], s->suffix_len[suffix], err);
}

size_t sk_sidecars_file_ordinal(const struct sk_sidecars *s, size_t i)
{
    return s->ordinal[i];
}

const char *sk_sidecars_file(const struct sk_sidecars *s, size_t i, size_t *len)
{
    return shard_keylist_get(&s->files, i, len);
}

size_t sk_sidecars_orphan_count(const struct sk_sidecars *s)
{
    return s->orphan_count;
}

const char *sk_sidecars_orphan(const struct sk_sidecars *s, size_t i, size_t *len)
{
    return shard_keylist_get(&s->files, s->orphans[i], len);
}

int sk_sidecars_reset(struct sk_sidecars *s, struct shard_keylist *orphans, struct shard_err *err)
{
    int rc = SHARD_OK;
    for (size_t i = 0; orphans && !rc && i < s->orphan_count; i++) {
        size_t len;
        const char *key = sk_sidecars_orphan(s, i, &len);
        rc = shard_keylist_add(orphans, key, len, err);
    }
    shard_keylist_release(&s->files);
    free(s->owner);
    free(s->ordinal);
    free(s->orphans);
    free(s->by_sample);
    s->owner = NULL;
    s->ordinal = NULL;
    s->orphans = NULL;
    s->by_sample = NULL;
    s->orphan_count = 0;
    s->resolved = 0;
    return rc;
}
