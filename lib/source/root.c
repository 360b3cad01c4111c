/* root.c - a source's files in a directory or below an S3 prefix: scan and
 * read them the same way (see source_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/s3.h"
#include "source/source_internal.h"

int sk_source_is_s3(const char *src)
{
    return sk_s3_is_location(src);
}

int sk_source_root_open(struct sk_source_root *r, const char *src, struct shard_err *err)
{
    memset(r, 0, sizeof *r);
    r->src = src;
    r->fd = -1;
    if (sk_s3_is_location(src))
        return sk_s3_open(&r->s3, src, err);
    r->fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the SRC named */
    if (r->fd < 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot open source '%s'", src);
    return SHARD_OK;
}

void sk_source_root_close(struct sk_source_root *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    sk_s3_free(r->s3);
    r->s3 = NULL;
    free(r->sizes);
    r->sizes = NULL;
}

struct listing {
    struct shard_keylist *keys;
    struct shard_scan_stats *st;
    struct sk_sidecars *side;
    uint64_t *sizes; /* keys[i]'s listed size (grown with keys) */
    size_t sizes_cap;
};

static int list_object(void *user, const char *name, size_t len, uint64_t size,
                       struct shard_err *err)
{
    struct listing *l = user;
    if (!len || name[len - 1] == '/') /* a "directory" marker, no file */
        return SHARD_OK;
    if (!memchr(name, '\0', len) && l->side && sk_sidecars_suffix_of(l->side, name, len) >= 0) {
        l->st->sidecars++;
        return sk_sidecars_add_file(l->side, name, len, err);
    }
    if (memchr(name, '\0', len) || !shard_is_candidate(name, len)) {
        l->st->ignored++;
        return SHARD_OK;
    }
    l->st->candidates++;
    if (l->keys->count == l->sizes_cap) {
        size_t cap = l->sizes_cap ? 2 * l->sizes_cap : 1024;
        uint64_t *grown = realloc(l->sizes, cap * sizeof *grown);
        if (!grown)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        l->sizes = grown;
        l->sizes_cap = cap;
    }
    l->sizes[l->keys->count] = size;
    return shard_keylist_add(l->keys, name, len, err);
}

/* The order of keys[a] and keys[b] (qsort_r over indices). */
static int compare_listed(const void *pa, const void *pb, void *arg)
{
    const struct shard_keylist *keys = arg;
    size_t la, lb;
    const char *a = shard_keylist_get(keys, *(const size_t *)pa, &la);
    const char *b = shard_keylist_get(keys, *(const size_t *)pb, &lb);
    return sk_key_compare(a, la, b, lb);
}

int sk_source_root_scan(struct sk_source_root *r, struct shard_keylist *keys,
                        struct sk_sidecars *side, struct shard_refusals *refused,
                        struct shard_scan_stats *st, struct shard_err *err)
{
    if (!r->s3)
        return sk_scan_dir(r->src, keys, side, refused, st, err);
    struct shard_keylist found = {0};
    struct shard_scan_stats seen = {0};
    size_t side_before = side ? sk_sidecars_file_count(side) : 0;
    struct listing l = {&found, &seen, side, NULL, 0};
    int rc = sk_s3_list(r->s3, 1, list_object, &l, err);
    if (rc == SHARD_ENOTFOUND)
        shard_err_prefix(err, rc, "cannot read source '%s'", r->src);
    /* into an empty list, in key order, with each key's listed size: the
     * list's later sort changes nothing (the keys of a store are unique) */
    size_t *by_key = NULL;
    int sized = !rc && keys->count == 0 && found.count > 0;
    if (sized && (!(by_key = malloc(found.count * sizeof *by_key)) ||
                  !(r->sizes = malloc(found.count * sizeof *r->sizes))))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; sized && !rc && i < found.count; i++)
        by_key[i] = i;
    if (sized && !rc)
        qsort_r(by_key, found.count, sizeof *by_key, compare_listed, &found);
    for (size_t i = 0; !rc && i < found.count; i++) {
        size_t len, at = sized ? by_key[i] : i;
        const char *key = shard_keylist_get(&found, at, &len);
        if (sized)
            r->sizes[i] = l.sizes[at];
        rc = shard_keylist_add(keys, key, len, err);
    }
    free(by_key);
    free(l.sizes);
    if (rc) {
        free(r->sizes);
        r->sizes = NULL;
    }
    if (!rc) { /* a failed scan adds nothing, as shard_scan_dir */
        st->candidates += seen.candidates;
        st->ignored += seen.ignored;
        st->sidecars += seen.sidecars;
    } else if (side) {
        sk_sidecars_truncate(side, side_before);
    }
    shard_keylist_release(&found);
    return rc;
}

int sk_source_root_read(const struct sk_source_root *r, const char *key, uint64_t max_bytes,
                        struct shard_buf *buf, struct shard_err *err)
{
    if (!r->s3)
        return shard_read_source_file(r->fd, key, max_bytes, buf, err);
    int rc = sk_s3_get(r->s3, key, max_bytes, buf, err);
    if (rc == SHARD_ENOTFOUND)
        return shard_err_set(err, SHARD_ENOTFOUND, "file vanished");
    return rc;
}

int shard_scan_location(const char *location, struct shard_keylist *keys,
                        struct shard_refusals *refused, struct shard_scan_stats *st,
                        struct shard_err *err)
{
    if (!sk_s3_is_location(location))
        return shard_scan_dir(location, keys, refused, st, err);
    struct sk_source_root root;
    int rc = sk_source_root_open(&root, location, err);
    if (!rc)
        rc = sk_source_root_scan(&root, keys, NULL, refused, st, err);
    sk_source_root_close(&root);
    return rc;
}
