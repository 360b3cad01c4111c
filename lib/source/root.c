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
}

struct listing {
    struct shard_keylist *keys;
    struct shard_scan_stats *st;
    struct sk_sidecars *side;
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
    return shard_keylist_add(l->keys, name, len, err);
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
    struct listing l = {&found, &seen, side};
    int rc = sk_s3_list(r->s3, 1, list_object, &l, err);
    if (rc == SHARD_ENOTFOUND)
        shard_err_prefix(err, rc, "cannot read source '%s'", r->src);
    for (size_t i = 0; !rc && i < found.count; i++) {
        size_t len;
        const char *key = shard_keylist_get(&found, i, &len);
        rc = shard_keylist_add(keys, key, len, err);
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
