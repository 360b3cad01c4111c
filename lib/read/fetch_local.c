/* fetch_local.c - the local-directory backend of fetch.h: open + pread
 * (util/fsutil.h, which shard_file_open reads through too). */
#include "read/fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/fsutil.h"

struct local_fetch {
    struct fetch base;
    int dir_fd;
};

struct local_file {
    struct fetch_file base;
    int fd;
};

static int local_read(struct fetch_file *file, uint64_t offset, void *buf, size_t len,
                      struct shard_err *err)
{
    struct local_file *f = (struct local_file *)file;
    return sk_fs_pread_all(f->fd, f->base.size, offset, buf, len, err);
}

static void local_close(struct fetch_file *file)
{
    struct local_file *f = (struct local_file *)file;
    if (f->fd >= 0)
        close(f->fd);
    free(f);
}

/* Ask the kernel to start reading the range into the page cache (a no-op
 * for pages already there), so that a cold read overlaps the ones before. */
static void local_advise(struct fetch_file *file, uint64_t offset, uint64_t len)
{
    struct local_file *f = (struct local_file *)file;
    if (offset < f->base.size && len)
        (void)posix_fadvise(f->fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

static const struct fetch_file_ops local_file_ops = {local_read, local_close, local_advise};

static int local_open(struct fetch *fs, const char *name, struct fetch_file **out,
                      struct shard_err *err)
{
    struct local_fetch *lf = (struct local_fetch *)fs;
    *out = NULL;
    struct local_file *f = calloc(1, sizeof *f);
    if (!f)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    f->base.ops = &local_file_ops;
    int rc = sk_fs_open_read(lf->dir_fd, name, &f->fd, &f->base.size, err);
    if (rc) {
        local_close(&f->base);
        return rc;
    }
    *out = &f->base;
    return SHARD_OK;
}

static void local_free(struct fetch *fs)
{
    struct local_fetch *lf = (struct local_fetch *)fs;
    if (lf->dir_fd >= 0)
        close(lf->dir_fd);
    free(lf);
}

static const struct fetch_ops local_ops = {local_open, local_free};

int sk_fetch_local_new(struct fetch **out, const char *dir, struct shard_err *err)
{
    *out = NULL;
    struct local_fetch *lf = calloc(1, sizeof *lf);
    if (!lf)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    lf->base.ops = &local_ops;
    lf->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the dataset named */
    if (lf->dir_fd < 0) {
        int e = errno;
        free(lf);
        return shard_err_errno(err, e == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, e,
                               "cannot open dataset directory '%s'", dir);
    }
    *out = &lf->base;
    return SHARD_OK;
}
