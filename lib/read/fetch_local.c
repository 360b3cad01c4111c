/* fetch_local.c - the local-directory backend of fetch.h: open + pread. */
#include "read/fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    uint8_t *p = buf;
    if (offset > f->base.size || len > f->base.size - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "file ends early: %zu bytes at %llu of %llu",
                             len, (unsigned long long)offset, (unsigned long long)f->base.size);
    while (len) {
        ssize_t r = pread(f->fd, p, len, (off_t)offset);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return shard_err_errno(err, SHARD_EIO, errno, "read error");
        if (r == 0)
            return shard_err_set(err, SHARD_ECORRUPT, "file ends early (shrank while open)");
        p += r;
        len -= (size_t)r;
        offset += (uint64_t)r;
    }
    return SHARD_OK;
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
    f->fd = openat(lf->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (f->fd < 0) {
        int e = errno;
        local_close(&f->base);
        if (e == ENOENT)
            return shard_err_set(err, SHARD_ENOTFOUND, "file is missing");
        return shard_err_errno(err, SHARD_EIO, e, "cannot open");
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        local_close(&f->base);
        return shard_err_errno(err, SHARD_EIO, e ? e : EINVAL, "not a readable file");
    }
    f->base.size = (uint64_t)st.st_size;
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
    lf->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lf->dir_fd < 0) {
        int e = errno;
        free(lf);
        return shard_err_errno(err, e == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, e,
                               "cannot open dataset directory '%s'", dir);
    }
    *out = &lf->base;
    return SHARD_OK;
}
