/* fsutil.c - durable file operations (see fsutil.h). */
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#define HASH_CHUNK (1u << 20)

char *sk_fs_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t n = a;
    if (a && dir[a - 1] != '/')
        p[n++] = '/';
    memcpy(p + n, name, b + 1);
    return p;
}

int sk_fs_write_all(int fd, const void *buf, size_t n, const char *what, struct shard_err *err)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return shard_err_errno(err, SHARD_EIO, errno, "cannot write '%s'", what);
        }
        p += w;
        n -= (size_t)w;
    }
    return SHARD_OK;
}

int sk_fs_sync_dir(const char *dir, struct shard_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open directory '%s'", dir);
    int rc = SHARD_OK;
    if (fsync(fd) != 0 && errno != EINVAL)  /* some filesystems refuse dir fsync */
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot fsync directory '%s'", dir);
    close(fd);
    return rc;
}

int sk_fs_rename_durable(const char *dir, const char *old_path, const char *new_path,
                      struct shard_err *err)
{
    if (rename(old_path, new_path) != 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot rename '%s' to '%s'", old_path,
                               new_path);
    return sk_fs_sync_dir(dir, err);
}

int sk_fs_commit(int fd, int rc, const char *dir, const char *tmp, const char *final,
              struct shard_err *err)
{
    if (!rc && fsync(fd) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot fsync '%s'", tmp);
    if (close(fd) != 0 && !rc)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot close '%s'", tmp);
    if (!rc)
        rc = sk_fs_rename_durable(dir, tmp, final, err);
    if (rc)
        unlink(tmp);
    return rc;
}

int sk_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                    struct shard_err *err)
{
    char tmpname[512];
    snprintf(tmpname, sizeof tmpname, ".%s.tmp", name);
    char *tmp = sk_fs_join(dir, tmpname), *final = sk_fs_join(dir, name);
    int rc = SHARD_OK, fd;
    if (!tmp || !final) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", tmp);
        goto out;
    }
    rc = sk_fs_commit(fd, sk_fs_write_all(fd, data, len, tmp, err), dir, tmp, final, err);
out:
    free(tmp);
    free(final);
    return rc;
}

int sk_fs_hash_file(const char *path, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot open '%s'", path);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint8_t *buf = malloc(HASH_CHUNK);
    XXH3_state_t *st = XXH3_createState();
    int rc = SHARD_OK;
    uint64_t total = 0;
    if (!buf || !st) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    XXH3_64bits_reset(st);
    for (;;) {
        ssize_t r = read(fd, buf, HASH_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s'", path);
            goto out;
        }
        if (r == 0)
            break;
        XXH3_64bits_update(st, buf, (size_t)r);
        total += (uint64_t)r;
    }
    *bytes = total;
    *xxh3 = XXH3_64bits_digest(st);
out:
    XXH3_freeState(st);
    free(buf);
    close(fd);
    return rc;
}

int sk_fs_open_read(int dir_fd, const char *name, int *fd, uint64_t *size, struct shard_err *err)
{
    *fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (*fd < 0) {
        if (errno == ENOENT)
            return shard_err_set(err, SHARD_ENOTFOUND, "file is missing");
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open");
    }
    struct stat st;
    errno = 0;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return shard_err_errno(err, SHARD_EIO, e ? e : EINVAL, "not a readable file");
    }
    *size = (uint64_t)st.st_size;
    return SHARD_OK;
}

int sk_fs_pread_all(int fd, uint64_t size, uint64_t offset, void *buf, size_t len,
                    struct shard_err *err)
{
    uint8_t *p = buf;
    if (offset > size || len > size - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "file ends early: %zu bytes at %llu of %llu",
                             len, (unsigned long long)offset, (unsigned long long)size);
    while (len) {
        ssize_t r = pread(fd, p, len, (off_t)offset);
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
