/* destination_s3.c - the store's side of an s3:// destination (see
 * destination.h): where it is staged, what the store holds, deleting,
 * uploading, and the multipart upload a crash left behind. */
#include "convert/destination.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "net/s3.h"
#include "util/fsutil.h"
#include "shardkit/format.h"
#include "shardkit/manifest.h"

#define HASH_HEX 17

/* ---- where it is staged ---------------------------------------------------------- */

int sk_dst_s3_staging(const struct sk_s3 *s3, const char *work_dir, char **path,
                      struct shard_err *err)
{
    *path = NULL;
    if (work_dir) {
        if (!work_dir[0])
            return shard_err_set(err, SHARD_EINVAL, "--work-dir is an empty path");
        *path = strdup(work_dir);
    } else {
        /* one directory per bucket and prefix (not per endpoint: a run
         * resumed through another address of the same store finds its
         * work; what it adopts is checked against the store anyway) */
        XXH3_state_t *h = XXH3_createState();
        if (!h)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        XXH3_64bits_reset(h);
        XXH3_64bits_update(h, s3->bucket, strlen(s3->bucket) + 1);
        XXH3_64bits_update(h, s3->prefix, strlen(s3->prefix) + 1);
        char hex[HASH_HEX];
        shard_hex64(XXH3_64bits_digest(h), hex);
        XXH3_freeState(h);
        const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if ((!cache || cache[0] != '/') && (!home || !home[0]))
            return shard_err_set(err, SHARD_EINVAL,
                                 "no work directory for '%s/%s': set "
                                 "XDG_CACHE_HOME or HOME, or pass --work-dir",
                                 s3->bucket, s3->prefix);
        size_t n = (cache ? strlen(cache) : strlen(home) + 8) + strlen(s3->bucket) + 64;
        if ((*path = malloc(n))) {
            if (cache && cache[0] == '/')
                snprintf(*path, n, "%s/shardkit/shardify/s3-%s-%s", cache, s3->bucket, hex);
            else
                snprintf(*path, n, "%s/.cache/shardkit/shardify/s3-%s-%s", home, s3->bucket, hex);
        }
    }
    return *path ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

int sk_dst_s3_check_nesting(const char *src, const struct sk_s3 *dst, struct shard_err *err)
{
    if (!sk_s3_is_location(src))
        return SHARD_OK;
    struct sk_s3 *s;
    int rc = sk_s3_open(&s, src, err);
    if (rc)
        return rc;
    /* prefixes as directories: "a" holds "a/b", not "ab" */
    size_t ns = strlen(s->prefix), nd = strlen(dst->prefix);
    if (!strcmp(s->bucket, dst->bucket) && !strcmp(s->endpoint, dst->endpoint)) {
        if (nd >= ns && !strncmp(dst->prefix, s->prefix, ns) &&
            (!ns || dst->prefix[ns] == '/' || dst->prefix[ns] == '\0'))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "destination 's3://%s/%s' is inside the "
                               "source '%s'",
                               dst->bucket, dst->prefix, src);
        else if (ns > nd && !strncmp(s->prefix, dst->prefix, nd) && (!nd || s->prefix[nd] == '/'))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "source '%s' is inside the destination "
                               "'s3://%s/%s'",
                               src, dst->bucket, dst->prefix);
    }
    sk_s3_free(s);
    return rc;
}

/* ---- what the store holds ------------------------------------------------------------- */

static int inspect_object(void *user, const char *name, size_t len, uint64_t size,
                          struct shard_err *err)
{
    struct dst *d = user;
    char *own = strndup(name, len);
    if (!own)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    if (memchr(name, '\0', len) || !sk_dst_is_output_name(own) || !strcmp(own, SHARDIFY_WORK_DIR))
        rc = shard_err_set(err, SHARD_EEXIST,
                           "destination '%s' holds '%s', which shardify "
                           "did not write; choose an empty or new prefix",
                           d->name, own);
    else if (!strcmp(own, SHARD_MANIFEST_FILE))
        d->has_manifest = 1;
    else
        d->has_output = 1;
    free(own);
    return rc;
}

int sk_dst_s3_inspect(struct dst *d, struct shard_err *err)
{
    return sk_s3_list(d->remote, 0, inspect_object, d, err);
}

/* ---- deleting ------------------------------------------------------------------------- */

struct removal {
    struct dst *d;
    int keep_manifest;
    uint32_t first_shard;
};

static int remove_object(void *user, const char *name, size_t len, uint64_t size,
                         struct shard_err *err)
{
    struct removal *r = user;
    char *own = strndup(name, len);
    if (!own)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint32_t n;
    int rc = SHARD_OK;
    int ours = sk_dst_is_output_name(own) && strcmp(own, SHARDIFY_WORK_DIR) &&
               strcmp(own, SHARD_MANIFEST_FILE);
    if (ours && !(sk_dst_is_shard_name(own, &n) && n < r->first_shard))
        rc = sk_s3_delete(r->d->remote, own, err);
    free(own);
    return rc;
}

int sk_dst_s3_remove(struct dst *d, int keep_manifest, uint32_t first_shard, struct shard_err *err)
{
    /* the manifest first: from then on no manifest names a removed shard */
    int rc = keep_manifest ? SHARD_OK : sk_s3_delete(d->remote, SHARD_MANIFEST_FILE, err);
    struct removal r = {d, keep_manifest, first_shard};
    return rc ? rc : sk_s3_list(d->remote, 0, remove_object, &r, err);
}

/* ---- the upload a crash left ----------------------------------------------------------- */

static int record_upload(void *user, const char *name, const char *upload_id, struct shard_err *err)
{
    struct dst *d = user;
    size_t n = strlen(name) + strlen(upload_id) + 3;
    char *line = malloc(n);
    if (!line)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(line, n, "%s\t%s\n", name, upload_id);
    int rc = sk_fs_write_atomic_at(d->work_fd, d->work, DST_UPLOAD_FILE, line, strlen(line), err);
    free(line);
    return rc;
}

static void forget_upload(void *user, const char *name, const char *upload_id)
{
    struct dst *d = user;
    unlinkat(d->work_fd, DST_UPLOAD_FILE, 0);
}

int sk_dst_s3_abort_recorded(struct dst *d, struct shard_err *err)
{
    /* errors other than a broken work directory do not stop the run */
    int fd;
    int rc = sk_fs_open_at(d->work_fd, d->work, DST_UPLOAD_FILE, &fd, err);
    if (rc == SHARD_ENOTFOUND)
        return SHARD_OK;
    if (rc)
        return rc;
    char line[4096];
    ssize_t got = read(fd, line, sizeof line - 1);
    close(fd);
    line[got > 0 ? got : 0] = '\0';
    char *tab = strchr(line, '\t'), *end = tab ? strchr(tab, '\n') : NULL;
    if (tab && end) {
        *tab = *end = '\0';
        struct shard_err why;
        rc = sk_s3_abort(d->remote, line, tab + 1, &why);
        /* best effort: a store that cannot abort uploads (some S3
         * implementations) drops the parts by its own lifecycle rules;
         * one that cannot be reached now is asked again by the next run */
        if (rc && rc != SHARD_EUNSUPPORTED)
            return SHARD_OK;
    }
    unlinkat(d->work_fd, DST_UPLOAD_FILE, 0);
    return SHARD_OK;
}

/* ---- the uploads other runs left ------------------------------------------------------ */

struct orphans {
    struct dst *d;
    int nomem;
};

/* The first thing that went wrong, into d->uploads_warning. */
static void warn_uploads(struct dst *d, const char *why, const char *consequence)
{
    struct shard_err w;
    shard_err_set(&w, SHARD_ENET, "%s; %s", why, consequence);
    if (!d->uploads_warning[0])
        memcpy(d->uploads_warning, w.msg, sizeof d->uploads_warning);
}

static int abort_orphan(void *user, const char *name, size_t len, const char *upload_id,
                        struct shard_err *err)
{
    struct orphans *o = user;
    struct dst *d = o->d;
    char *own = strndup(name, len);
    if (!own) {
        o->nomem = 1;
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    /* only what shardify writes at the top of the prefix: another tool's
     * upload below it (or below a longer prefix) is none of ours */
    if (!memchr(name, '\0', len) && sk_dst_is_output_name(own) && strcmp(own, SHARDIFY_WORK_DIR)) {
        struct shard_err why;
        if (sk_s3_abort(d->remote, own, upload_id, &why))
            warn_uploads(d, why.msg, "it is left as it is");
    }
    free(own);
    return SHARD_OK;
}

int sk_dst_s3_abort_orphans(struct dst *d, struct shard_err *err)
{
    struct orphans o = {d, 0};
    struct shard_err why;
    int rc = sk_s3_list_uploads(d->remote, abort_orphan, &o, &why);
    if (o.nomem || rc == SHARD_ENOMEM)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    /* best effort, as for the recorded upload: a store without
     * ListMultipartUploads (s3rver) or a policy that does not grant it
     * leaves the parts to the bucket's lifecycle rules */
    if (rc)
        warn_uploads(d, why.msg, "multipart uploads other runs left there are not aborted");
    return SHARD_OK;
}

/* ---- uploading ------------------------------------------------------------------------- */

int sk_dst_s3_publish(struct dst *d, const char *name, struct shard_err *err)
{
    int fd;
    int rc = sk_fs_open_at(d->fd, d->path, name, &fd, err);
    if (rc == SHARD_ENOTFOUND)
        return SHARD_OK; /* uploaded by an earlier run */
    if (rc)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot inspect '%s/%s'", d->path, name);
    } else {
        struct sk_s3_upload_hooks hooks = {record_upload, forget_upload, d};
        rc = sk_s3_put_file(d->remote, name, fd, (uint64_t)st.st_size, &hooks, err);
    }
    close(fd);
    if (!rc && unlinkat(d->fd, name, 0) != 0 && errno != ENOENT)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot remove the staged '%s/%s'", d->path,
                             name);
    return rc;
}
