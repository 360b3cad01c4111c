/* keysel.c - a key list selecting a source's samples (shardify --keys: VOC's
 * ImageSets/Segmentation/train.txt); see source_internal.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "source/source_internal.h"

struct sk_key_selection {
    char *path;
    char *description;
    struct shard_keylist lines; /* sorted */
    uint64_t *line_of;          /* per sorted entry: its line in the file */
};

void sk_key_selection_free(struct sk_key_selection *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->description);
    shard_keylist_release(&s->lines);
    free(s->line_of);
    free(s);
}

const char *sk_key_selection_describe(const struct sk_key_selection *s)
{
    return s->description;
}

static int compare_entries(const void *a, const void *b, void *ctx)
{
    const struct shard_keylist *l = ctx;
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return sk_key_compare(l->arena + l->offsets[x], l->lengths[x], l->arena + l->offsets[y],
                          l->lengths[y]);
}

/* The entry equal to key[0..len), or -1. */
static int64_t find(const struct sk_key_selection *s, const char *key, size_t len)
{
    size_t lo = 0, hi = s->lines.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, n;
        const char *e = shard_keylist_get(&s->lines, mid, &n);
        int c = sk_key_compare(e, n, key, len);
        if (!c)
            return (int64_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Sort the entries, keeping each one's line; a name listed twice is an error. */
static int sort_entries(struct sk_key_selection *s, const uint64_t *lines, struct shard_err *err)
{
    size_t n = s->lines.count;
    uint64_t *perm = malloc((n ? n : 1) * sizeof *perm);
    struct shard_keylist sorted = {0};
    int rc = perm ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && !(s->line_of = malloc((n ? n : 1) * sizeof *s->line_of)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        perm[i] = i;
    if (!rc)
        qsort_r(perm, n, sizeof *perm, compare_entries, &s->lines);
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len;
        const char *key = shard_keylist_get(&s->lines, perm[i], &len);
        s->line_of[i] = lines[perm[i]];
        if (i && !compare_entries(&perm[i - 1], &perm[i], &s->lines)) {
            char q[SHARDX_QUOTE_SIZE];
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--keys '%s': '%s' is listed twice (lines %llu "
                               "and %llu)",
                               s->path, shardx_quote(key, len, q, sizeof q),
                               (unsigned long long)lines[perm[i - 1]],
                               (unsigned long long)lines[perm[i]]);
        }
        if (!rc)
            rc = shard_keylist_add(&sorted, key, len, err);
    }
    free(perm);
    if (!rc) {
        shard_keylist_release(&s->lines);
        s->lines = sorted;
    } else {
        shard_keylist_release(&sorted);
    }
    return rc;
}

int sk_key_selection_load(struct sk_key_selection **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct sk_key_selection *s = calloc(1, sizeof *s);
    struct shard_buf text = {0};
    uint64_t *lines = NULL;
    size_t cap = 0;
    int rc = s && (s->path = strdup(path)) ? SHARD_OK
                                           : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && (rc = sk_fs_read_file(AT_FDCWD, path, &text, err)))
        shard_err_prefix(err, rc, "--keys: cannot read '%s'", path);
    uint64_t no = 0;
    for (size_t pos = 0; !rc && pos < text.len;) {
        const char *p = (const char *)text.data + pos;
        const char *nl = memchr(p, '\n', text.len - pos);
        size_t n = nl ? (size_t)(nl - p) : text.len - pos;
        pos += n + (nl != NULL);
        no++;
        /* a line's first word (VOC's lists hold one); the text has no NUL after it */
        while (n && memchr(" \t\r", p[n - 1], 3))
            n--;
        while (n && memchr(" \t", *p, 2))
            p++, n--;
        size_t word = 0;
        while (word < n && !memchr(" \t", p[word], 2))
            word++;
        n = word;
        if (!n)
            continue;
        if (s->lines.count == cap) {
            uint64_t *bigger = realloc(lines, (cap = cap ? 2 * cap : 64) * sizeof *lines);
            if (!bigger) {
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
                break;
            }
            lines = bigger;
        }
        lines[s->lines.count] = no;
        rc = shard_keylist_add(&s->lines, p, n, err);
    }
    if (!rc && !s->lines.count)
        rc = shard_err_set(err, SHARD_EINVAL, "--keys '%s' lists no key", path);
    if (!rc)
        rc = sort_entries(s, lines, err);
    if (!rc) {
        const char *slash = strrchr(path, '/');
        const char *base = slash ? slash + 1 : path;
        size_t size = strlen(base) + 32;
        if ((s->description = malloc(size)))
            snprintf(s->description, size, "file:%s:%016llx", base,
                     (unsigned long long)XXH3_64bits(text.data, text.len));
        else
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    free(lines);
    shard_buf_release(&text);
    if (rc) {
        sk_key_selection_free(s);
        return rc;
    }
    *out = s;
    return SHARD_OK;
}

int sk_key_selection_apply(const struct sk_key_selection *s, struct shard_keylist *keys,
                           struct shard_scan_stats *st, struct shard_err *err)
{
    struct shard_keylist kept = {0};
    uint8_t *used = calloc(s->lines.count ? s->lines.count : 1, 1);
    int rc = used ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < keys->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(keys, i, &len);
        /* its key, or its stem: the key without the extension of its last component */
        const char *dot = memrchr(key, '.', len), *slash = memrchr(key, '/', len);
        int64_t e = find(s, key, len), stem = -1;
        if (dot && dot > key && (!slash || dot > slash + 1))
            stem = find(s, key, (size_t)(dot - key));
        if (e >= 0 && stem >= 0) {
            char q[SHARDX_QUOTE_SIZE];
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--keys '%s' lists '%s' twice: by its key (line %llu) and by its "
                               "stem (line %llu)",
                               s->path, shardx_quote(key, len, q, sizeof q),
                               (unsigned long long)s->line_of[e],
                               (unsigned long long)s->line_of[stem]);
            break;
        }
        e = e >= 0 ? e : stem;
        if (e < 0) {
            st->ignored++;
            continue;
        }
        used[e] = 1;
        rc = shard_keylist_add(&kept, key, len, err);
    }
    for (size_t i = 0; !rc && i < s->lines.count; i++)
        if (!used[i]) {
            size_t len;
            const char *key = shard_keylist_get(&s->lines, i, &len);
            char q[SHARDX_QUOTE_SIZE];
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--keys '%s' line %llu: '%s' names no image of the source", s->path,
                               (unsigned long long)s->line_of[i],
                               shardx_quote(key, len, q, sizeof q));
        }
    free(used);
    if (rc) {
        shard_keylist_release(&kept);
        return rc;
    }
    st->candidates -= keys->count - kept.count;
    shard_keylist_release(keys);
    *keys = kept;
    return SHARD_OK;
}
