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

#include "shardkit/util.h"

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

int sk_fs_open_dir_at(int dirfd, const char *dir, const char *name, int *fd, struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    *fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0)
        return SHARD_OK;
    int e = errno;
    if (e == ENOENT)
        return shard_err_errno(err, SHARD_ENOTFOUND, e, "cannot open '%s'",
                               shown(where, sizeof where, dir, name));
    int rc = sk_fs_check_own_at(dirfd, dir, name, 1, err); /* a link, a file */
    return rc ? rc
              : shard_err_errno(err, SHARD_EIO, e, "cannot open '%s'",
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

const char *sk_fs_not_regular(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFLNK: return SK_FS_NOT_REGULAR_LINK;
    case S_IFIFO: return SK_FS_NOT_REGULAR "fifo";
    case S_IFSOCK: return SK_FS_NOT_REGULAR "socket";
    case S_IFCHR: return SK_FS_NOT_REGULAR "character device";
    case S_IFBLK: return SK_FS_NOT_REGULAR "block device";
    case S_IFDIR: return SK_FS_NOT_REGULAR "directory";
    }
    return SK_FS_NOT_REGULAR "unknown type";
}

/* The open of sk_fs_open_read and sk_fs_open_at (`flags`: 0 or O_NOFOLLOW).
 * -1 with errno set when openat or fstat failed; -2 with *st set when the
 * file is not a regular file; else the fd, in blocking mode, *st its
 * status. */
static int open_regular(int dir_fd, const char *name, int flags, struct stat *st)
{
    /* O_NONBLOCK: opening a FIFO for reading waits for a writer, and a
     * device's open may wait too; a regular file's open never does. */
    /* nofollow: `flags` (sk_fs_open_read's 0: a dataset may be a farm of links) */
    int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
    if (fd < 0 && errno == ENXIO) {
        /* a socket, or a device with no driver: say what it is */
        int e = errno;
        if (fstatat(dir_fd, name, st, flags & O_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
            !S_ISREG(st->st_mode))
            return -2;
        errno = e;
    }
    if (fd < 0)
        return -1;
    int rc = -1, fl;
    if (fstat(fd, st) != 0)
        goto fail;
    if (!S_ISREG(st->st_mode)) {
        rc = -2;
        goto fail;
    }
    if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        goto fail;
    return fd;
fail : {
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}
}

/* The reason-only message of a failed open_regular (rc -1 or -2). */
static int open_failure(int rc, int e, const struct stat *st, struct shard_err *err)
{
    if (rc == -2)
        return shard_err_set(err, SHARD_EIO, "%s", sk_fs_not_regular(st->st_mode));
    if (e == ENOENT)
        return shard_err_set(err, SHARD_ENOTFOUND, "file is missing");
    if (e == EINTR)
        return shard_err_set(err, SHARD_EINTR, "interrupted");
    return shard_err_errno(err, SHARD_EIO, e, "cannot open");
}

int sk_fs_open_at(int dirfd, const char *dir, const char *name, int *fd, struct shard_err *err)
{
    char where[SHARD_ERRMSG_SIZE];
    struct stat st;
    *fd = open_regular(dirfd, name, O_NOFOLLOW, &st);
    if (*fd >= 0)
        return SHARD_OK;
    int e = errno, rc = *fd;
    *fd = -1;
    if (rc == -1 && e == ELOOP)
        return sk_fs_err_link(err, dir, name);
    shown(where, sizeof where, dir, name);
    if (rc == -2)
        return shard_err_set(err, SHARD_EEXIST, "'%s' is %s", where, sk_fs_not_regular(st.st_mode));
    if (e == EINTR)
        return shard_err_set(err, SHARD_EINTR, "interrupted while opening '%s'", where);
    return shard_err_errno(err, e == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, e, "cannot open '%s'",
                           where);
}

int sk_fs_sync_dirfd(int dirfd, const char *dir, struct shard_err *err)
{
    if (fsync(dirfd) != 0 && errno != EINVAL) /* some filesystems refuse dir fsync */
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

int sk_fs_commit_at(int fd, int rc, int dirfd, const char *dir, const char *tmp, const char *final,
                    struct shard_err *err)
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

int sk_fs_hash_fd(int fd, const char *what, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err)
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
    int fd;
    int rc = sk_fs_open_read(AT_FDCWD, path, &fd, NULL, err);
    if (rc)
        return shard_err_prefix(err, rc, "cannot read '%s'", path);
    rc = sk_fs_hash_fd(fd, path, bytes, xxh3, err);
    close(fd);
    return rc;
}

int sk_fs_open_read(int dir_fd, const char *name, int *fd, uint64_t *size, struct shard_err *err)
{
    struct stat st;
    *fd = open_regular(dir_fd, name, 0, &st);
    if (*fd < 0) {
        int e = errno, rc = *fd;
        *fd = -1;
        return open_failure(rc, e, &st, err);
    }
    if (size)
        *size = (uint64_t)st.st_size;
    return SHARD_OK;
}

int sk_fs_read_file(int dir_fd, const char *name, struct shard_buf *out, struct shard_err *err)
{
    out->len = 0;
    int fd;
    uint64_t size;
    int rc = sk_fs_open_read(dir_fd, name, &fd, &size, err);
    if (rc)
        return rc;
    /* Read to the end rather than trusting the size: the file may grow. */
    if (size >= SIZE_MAX)
        rc = shard_err_set(err, SHARD_ELIMIT, "file of %llu bytes is too large",
                           (unsigned long long)size);
    else
        rc = shard_buf_reserve(out, (size_t)size + 1, err);
    while (!rc) {
        if (out->len == out->cap && (rc = shard_buf_reserve(out, out->cap + 1, err)))
            break;
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read");
        if (n <= 0)
            break;
        out->len += (size_t)n;
    }
    close(fd);
    if (rc)
        shard_buf_release(out);
    return rc;
}

int sk_fs_pread_all(int fd, uint64_t size, uint64_t offset, void *buf, size_t len,
                    struct shard_err *err)
{
    uint8_t *p = buf;
    if (offset > size || len > size - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "file ends early: %zu bytes at %llu of %llu", len,
                             (unsigned long long)offset, (unsigned long long)size);
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
