/* fsutil.h - durable file operations shared by the writers (private). */
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
/* Join dir and name into a malloc'd path. */
char *sk_fs_join(const char *dir, const char *name);

#endif
