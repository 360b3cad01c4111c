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

/* "dir/name" (or "name") into buf, for messages: a message is at most
 * SHARD_ERRMSG_SIZE bytes, so neither needs more. */
static const char *shown(char *buf, size_t size, const char *dir, const char *name)
{
    size_t n = dir ? strlen(dir) : 0;
    snprintf(buf, size, "%s%s%s", dir ? dir : "", n && dir[n - 1] != '/' ? "/" : "", name);
    return buf;
}

int sk_fs_err_link(struct shard_err *err, const char *dir, const char *name)
{
    char where[SHARD_ERRMSG_SIZE];
    return shard_err_set(err, SHARD_EEXIST,
                         "'%s' is a symbolic link; shardkit never follows a link where it "
                         "keeps its own files: remove it",
                         shown(where, sizeof where, dir, name));
}

int sk_fs_check_own_at(int dirfd, const char *dir, const char *name, int want_dir,
                       struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? SHARD_OK
                               : shard_err_errno(err, SHARD_EIO, errno, "cannot inspect '%s'",
                                                 shown(where, sizeof where, dir, name));
    if (S_ISLNK(st.st_mode))
        return sk_fs_err_link(err, dir, name);
    if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return shard_err_set(err, SHARD_EEXIST,
                             "'%s' is not a %s, so shardify did not write it: remove it",
                             shown(where, sizeof where, dir, name),
                             want_dir ? "directory" : "regular file");
    return SHARD_OK;
}

int sk_fs_open_dir_at(int dirfd, const char *dir, const char *name, int *fd,
                      struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    *fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0)
        return SHARD_OK;
    int e = errno;
    if (e == ENOENT)
        return shard_err_errno(err, SHARD_ENOTFOUND, e, "cannot open '%s'",
                               shown(where, sizeof where, dir, name));
    int rc = sk_fs_check_own_at(dirfd, dir, name, 1, err);  /* a link, a file */
    return rc ? rc : shard_err_errno(err, SHARD_EIO, e, "cannot open '%s'",
                                     shown(where, sizeof where, dir, name));
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

int sk_fs_create_at(int dirfd, const char *dir, const char *name, mode_t mode, int *fd,
                    struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    *fd = -1;
    if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot remove the stale '%s'",
                               shown(where, sizeof where, dir, name));
    *fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (*fd < 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'",
                               shown(where, sizeof where, dir, name));
    return SHARD_OK;
}

int sk_fs_open_at(int dirfd, const char *dir, const char *name, int *fd, struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    /* O_NONBLOCK: a FIFO planted under this name must not hang the run */
    *fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) {
        if (errno == ELOOP)
            return sk_fs_err_link(err, dir, name);
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot open '%s'", shown(where, sizeof where, dir, name));
    }
    struct stat st;
    int e = fstat(*fd, &st) != 0 ? errno : 0;
    if (e || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return e ? shard_err_errno(err, SHARD_EIO, e, "cannot open '%s'",
                                   shown(where, sizeof where, dir, name))
                 : shard_err_set(err, SHARD_EEXIST, "'%s' is not a regular file",
                                 shown(where, sizeof where, dir, name));
    }
    return SHARD_OK;
}

int sk_fs_sync_dirfd(int dirfd, const char *dir, struct shard_err *err)
{
    if (fsync(dirfd) != 0 && errno != EINVAL)  /* some filesystems refuse dir fsync */
        return shard_err_errno(err, SHARD_EIO, errno, "cannot fsync directory '%s'",
                               dir ? dir : ".");
    return SHARD_OK;
}

int sk_fs_rename_at(int old_dirfd, const char *old_dir, const char *old_name, int new_dirfd,
                    const char *new_dir, const char *new_name, struct shard_err *err)
{
    if (renameat(old_dirfd, old_name, new_dirfd, new_name) != 0) {
        char a[SHARD_ERRMSG_SIZE], b[SHARD_ERRMSG_SIZE];
        return shard_err_errno(err, SHARD_EIO, errno, "cannot rename '%s' to '%s'",
                               shown(a, sizeof a, old_dir, old_name),
                               shown(b, sizeof b, new_dir, new_name));
    }
    return sk_fs_sync_dirfd(new_dirfd, new_dir, err);
}

int sk_fs_commit_at(int fd, int rc, int dirfd, const char *dir, const char *tmp,
                    const char *final, struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    if (!rc && fsync(fd) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot fsync '%s'",
                             shown(where, sizeof where, dir, tmp));
    if (close(fd) != 0 && !rc)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot close '%s'",
                             shown(where, sizeof where, dir, tmp));
    if (!rc)
        rc = sk_fs_rename_at(dirfd, dir, tmp, dirfd, dir, final, err);
    if (rc)
        unlinkat(dirfd, tmp, 0);
    return rc;
}

int sk_fs_write_atomic_at(int dirfd, const char *dir, const char *name, const void *data,
                          size_t len, struct shard_err *err)
{
    char tmp[512], where[SHARD_ERRMSG_SIZE];
    if ((size_t)snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= sizeof tmp)
        return shard_err_set(err, SHARD_EINVAL, "file name '%s' is too long", name);
    int fd;
    int rc = sk_fs_create_at(dirfd, dir, tmp, 0644, &fd, err);
    if (rc)
        return rc;
    rc = sk_fs_write_all(fd, data, len, shown(where, sizeof where, dir, tmp), err);
    return sk_fs_commit_at(fd, rc, dirfd, dir, tmp, name, err);
}

int sk_fs_hash_fd(int fd, const char *what, uint64_t *bytes, uint64_t *xxh3,
                  struct shard_err *err)
{
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
        ssize_t r = pread(fd, buf, HASH_CHUNK, (off_t)total);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s'", what);
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
    return rc;
}

int sk_fs_hash_file(const char *path, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot open '%s'", path);
    int rc = sk_fs_hash_fd(fd, path, bytes, xxh3, err);
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
