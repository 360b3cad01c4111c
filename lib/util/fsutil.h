/* fsutil.h - file operations shared by the writers (durable writes) and the
 * readers (ranged reads of a file of known size) (private). */
#ifndef SHARDKIT_FSUTIL_H
#define SHARDKIT_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/error.h"

/* Write `len` bytes to dir/name durably and atomically: dir/.name.tmp is
 * written, fsync'd and renamed over dir/name, then dir is fsync'd.  On
 * failure the temporary file is removed and dir/name is untouched. */
int sk_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                    struct shard_err *err);
/* Finish a temporary written through `fd`: fsync and close it (fd is closed
 * whatever happens), rename tmp over final inside dir and fsync dir.  When
 * `rc` (the writer's result so far) or any step fails, tmp is removed and
 * the first error returned. */
int sk_fs_commit(int fd, int rc, const char *dir, const char *tmp, const char *final,
              struct shard_err *err);
/* fsync a directory so that renames and unlinks in it are durable. */
int sk_fs_sync_dir(const char *dir, struct shard_err *err);
/* rename old -> new inside dir, then fsync dir. */
int sk_fs_rename_durable(const char *dir, const char *old_path, const char *new_path,
                      struct shard_err *err);
/* Size and XXH3-64 of a whole file, read sequentially. */
int sk_fs_hash_file(const char *path, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err);
/* Write all of p to fd (retrying short writes and EINTR). */
int sk_fs_write_all(int fd, const void *p, size_t n, const char *what, struct shard_err *err);
/* Open dir_fd/name read-only (dir_fd may be AT_FDCWD, name a path); it must
 * be a regular file.  On success *fd is the open file and *size its size.
 * 0, SHARD_ENOTFOUND ("file is missing") or SHARD_EIO.  Messages give the
 * reason only: the caller names the file. */
int sk_fs_open_read(int dir_fd, const char *name, int *fd, uint64_t *size, struct shard_err *err);
/* Read exactly len bytes at offset from fd, a file of `size` bytes
 * (retrying short reads and EINTR; safe from many threads at once).  0,
 * SHARD_ECORRUPT (the range passes the end: "file ends early ...") or
 * SHARD_EIO.  Reason only, as above. */
int sk_fs_pread_all(int fd, uint64_t size, uint64_t offset, void *buf, size_t len,
                    struct shard_err *err);
/* Join dir and name into a malloc'd path. */
char *sk_fs_join(const char *dir, const char *name);

#endif
