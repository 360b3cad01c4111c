/* mask_folder.c - the masks of a folder mirroring SRC's images (the
 * VOC / ADE20K / Cityscapes layout), see source_internal.h.
 *
 * The folder's PNG files are found by the same scan as SRC's and matched
 * with the images by the same code as sidecars (sidecars.c), as the
 * sidecar ".png" of each image stem: images/a/0001.jpg's mask is
 * DIR/a/0001.png, a file of no image is an orphan. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "shardx/shardx.h"

#define MASK_EXTENSION ".png"

struct sk_mask_folder {
    char *folder;                 /* as declared, ending in '/' */
    char *old, *new;              /* replace=OLD:NEW: an image stem's ending OLD is NEW in its
                                   * mask's name; NULL: the stem as it is */
    int fd;                       /* the folder, opened once; -1 */
    struct sk_sidecars *side;     /* its PNG files, as the sidecars ".png" */
    struct shard_keylist orphans; /* files of no image, named folder + path */
};

void sk_mask_folder_free(struct sk_mask_folder *mf)
{
    if (!mf)
        return;
    free(mf->folder);
    free(mf->old);
    free(mf->new);
    if (mf->fd >= 0)
        close(mf->fd);
    sk_sidecars_free(mf->side);
    shard_keylist_release(&mf->orphans);
    free(mf);
}

/* The folder's path: `folder` itself when absolute, else below src. */
static int folder_path(const char *src, const char *folder, char *path, size_t size,
                       struct shard_err *err)
{
    int n = folder[0] == '/' ? snprintf(path, size, "%s", folder)
                             : snprintf(path, size, "%s/%s", src, folder);
    if (n < 0 || (size_t)n >= size)
        return shard_err_set(err, SHARD_EINVAL, "mask folder '%s': path too long", folder);
    return SHARD_OK;
}

/* Whether directory `dir` is src or below it (both exist). */
static int inside(const char *src, const char *dir)
{
    char real_src[PATH_MAX], real_dir[PATH_MAX];
    if (!realpath(src, real_src) || !realpath(dir, real_dir))
        return 0;
    size_t n = strlen(real_src);
    return !strcmp(real_src, "/") ||
           (!strncmp(real_dir, real_src, n) && (real_dir[n] == '/' || real_dir[n] == '\0'));
}

/* The key whose stem the mask of key[0..len) is named after, into out: the
 * key itself, or with replace=OLD:NEW the key with its stem's ending OLD
 * taken off (0 when the stem does not end in OLD: the image has no mask). */
static int mask_key(const struct sk_mask_folder *mf, const char *key, size_t len,
                    struct shard_buf *out, struct shard_err *err)
{
    out->len = 0;
    if (!mf->old)
        return shard_buf_append(out, key, len, err) ? -1 : 1;
    const char *slash = memrchr(key, '/', len), *base = slash ? slash + 1 : key;
    const char *dot = memrchr(base, '.', (size_t)(key + len - base));
    size_t stem = dot && dot > base ? (size_t)(dot - key) : len, n = strlen(mf->old);
    if (stem < n || (size_t)(stem - n) < (size_t)(base - key) || memcmp(key + stem - n, mf->old, n))
        return 0;
    return shard_buf_append(out, key, stem - n, err) ||
                   shard_buf_append(out, key + stem, len - stem, err)
               ? -1
               : 1;
}

int sk_mask_folder_open(struct sk_mask_folder **out, const char *src, const char *folder,
                        const char *replace, const struct shard_keylist *keys,
                        struct shard_err *err)
{
    *out = NULL;
    const char *png = MASK_EXTENSION;
    struct shard_keylist mapped = {0};
    char *suffix = NULL;
    char path[PATH_MAX];
    struct shard_keylist images = {0};
    struct shard_refusals refused = {0};
    struct shard_scan_stats st = {0};
    struct shard_buf name = {0};
    int rc;
    if (sk_source_is_s3(src))
        return shard_err_set(err, SHARD_EINVAL,
                             "mask folder '%s': a folder is beside a "
                             "directory SRC, not an S3 one",
                             folder);
    if ((rc = folder_path(src, folder, path, sizeof path, err)))
        return rc;
    struct sk_mask_folder *mf = calloc(1, sizeof *mf);
    if (!mf || !(mf->folder = strdup(folder))) {
        free(mf);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (replace) { /* masks named NEW + .png after the stem without OLD */
        const char *colon = strchr(replace, ':');
        size_t size = strlen(colon + 1) + sizeof MASK_EXTENSION;
        if (!(mf->old = strndup(replace, (size_t)(colon - replace))) ||
            !(mf->new = strdup(colon + 1)) || !(suffix = malloc(size))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
        snprintf(suffix, size, "%s%s", mf->new, MASK_EXTENSION);
        png = suffix;
        for (size_t i = 0; !rc && i < keys->count; i++) {
            size_t len;
            const char *key = shard_keylist_get(keys, i, &len);
            int got = mask_key(mf, key, len, &name, err);
            rc = got < 0 ? SHARD_ENOMEM
                 : got   ? shard_keylist_add(&mapped, (const char *)name.data, name.len, err)
                         : SHARD_OK;
        }
        keys = &mapped;
        if (rc)
            goto out;
    }
    if ((mf->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) { /* nofollow: named */
        rc = shard_err_set(err, SHARD_EIO,
                           "cannot open the mask folder '%s' (%s, relative to "
                           "SRC): %s",
                           path, folder, strerror(errno));
        goto out;
    }
    if (inside(src, path)) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "the mask folder '%s' is inside SRC, whose "
                           "images its masks would be: give a folder beside it",
                           folder);
        goto out;
    }
    if ((rc = sk_sidecars_new(&mf->side, &png, 1, err)) ||
        (rc = sk_scan_dir(path, &images, mf->side, &refused, &st, err)) ||
        (rc = sk_sidecars_resolve(mf->side, keys, &refused, err)))
        goto out;
    for (size_t i = 0; !rc && i < sk_sidecars_orphan_count(mf->side); i++) {
        size_t len;
        const char *key = sk_sidecars_orphan(mf->side, i, &len);
        name.len = 0;
        if (!(rc = shard_buf_append(&name, folder, strlen(folder), err)) &&
            !(rc = shard_buf_append(&name, key, len, err)))
            rc = shard_keylist_add(&mf->orphans, (const char *)name.data, name.len, err);
    }
out:
    shard_buf_release(&name);
    shard_keylist_release(&mapped);
    free(suffix);
    shard_keylist_release(&images);
    shard_refusals_release(&refused);
    if (rc) {
        sk_mask_folder_free(mf);
        return rc;
    }
    *out = mf;
    return SHARD_OK;
}

void sk_mask_folder_origin(const struct sk_mask_folder *mf, const char *key, size_t len, char *out,
                           size_t size)
{
    struct shard_buf name = {0}, mapped = {0};
    struct shard_err e;
    char shown[SHARDX_QUOTE_SIZE];
    int got = mask_key(mf, key, len, &mapped, &e);
    if (got == 0)
        snprintf(out, size, "a mask in '%s' (the name does not end in '%s')", mf->folder, mf->old);
    else if (got < 0 ||
             sk_sidecars_name(mf->side, (const char *)mapped.data, mapped.len, 0, &name, &e))
        snprintf(out, size, "its mask in '%s'", mf->folder);
    else
        snprintf(out, size, "'%s%s'", mf->folder,
                 shardx_quote((const char *)name.data, name.len, shown, sizeof shown));
    shard_buf_release(&name);
    shard_buf_release(&mapped);
}

/* The mask file of key[0..len) among the folder's files, or -1. */
static int64_t mask_file(const struct sk_mask_folder *mf, const char *key, size_t len)
{
    struct shard_buf mapped = {0};
    int got = mask_key(mf, key, len, &mapped, NULL);
    int64_t file = got > 0 ? sk_sidecars_find(mf->side, (const char *)mapped.data, mapped.len, 0)
                           : -1;
    shard_buf_release(&mapped);
    return file;
}

int sk_mask_folder_read(const struct sk_mask_folder *mf, const char *key, size_t len,
                        uint64_t max_bytes, struct shard_buf *buf, struct shard_err *err)
{
    int64_t file = mask_file(mf, key, len);
    if (file < 0)
        return shard_err_set(err, SHARD_ENOTFOUND, "no such file");
    const char *fkey = sk_sidecars_file(mf->side, (size_t)file, NULL);
    const char *refusal = sk_sidecars_file_refusal(mf->side, (size_t)file);
    if (refusal) /* a link or special file: never opened */
        return shard_err_set(err, SHARD_EIO, "%s", refusal);
    int fd;
    int rc = sk_source_file_open(mf->fd, fkey, &fd, err);
    return rc ? rc : sk_source_file_read(fd, max_bytes, buf, err);
}

int sk_mask_folder_has(const struct sk_mask_folder *mf, const char *key, size_t len)
{
    return mask_file(mf, key, len) >= 0;
}

size_t sk_mask_folder_orphan_count(const struct sk_mask_folder *mf)
{
    return mf ? mf->orphans.count : 0;
}

const char *sk_mask_folder_orphan(const struct sk_mask_folder *mf, size_t i, size_t *len)
{
    return shard_keylist_get(&mf->orphans, i, len);
}
