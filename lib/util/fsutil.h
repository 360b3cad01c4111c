/* fsutil.h - file operations shared by the writers (durable writes) and the
 * readers (ranged reads of a file of known size) (private).
 *
 * The *_at functions work on the entry `name` of an open directory `dirfd`
 * and never follow a symbolic link there: what a writer creates, renames or
 * removes is reached through a directory descriptor opened once, so a link
 * planted inside that directory can neither redirect a write nor lead a
 * removal out of it.  `dir` is how messages name the directory (NULL: the
 * messages name `name` alone, e.g. for AT_FDCWD). */
#ifndef SHARDKIT_FSUTIL_H
#define SHARDKIT_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shardkit/error.h"

struct shard_buf;

/* SHARD_EEXIST: "'dir/name' is a symbolic link ..." (the message says that
 * shardkit never follows one there). */
int sk_fs_err_link(struct shard_err *err, const char *dir, const char *name);
/* The entry dir/name is shardkit's own: absent (0), or a directory
 * (want_dir) or regular file, and never a symbolic link; else SHARD_EEXIST
 * naming it ("... is a symbolic link ...", "... is not a directory, so
 * shardify did not write it: remove it"). */
int sk_fs_check_own_at(int dirfd, const char *dir, const char *name, int want_dir,
                       struct shard_err *err);
/* Open the directory dir/name in *fd, never through a link: a link there,
 * or anything but a directory, is SHARD_EEXIST (as sk_fs_check_own_at
 * says), a missing entry SHARD_ENOTFOUND. */
int sk_fs_open_dir_at(int dirfd, const char *dir, const char *name, int *fd, struct shard_err *err);
/* Create dir/name as a new file, open for reading and writing, in *fd.  A
 * stale entry of that name (a killed run's leftover) is removed first
 * (unlinkat: a link is removed, never followed); the file is then created
 * with O_EXCL|O_NOFOLLOW, so no existing file is ever opened or truncated. */
int sk_fs_create_at(int dirfd, const char *dir, const char *name, mode_t mode, int *fd,
                    struct shard_err *err);
/* Open the regular file dir/name read-only in *fd (O_NOFOLLOW), without
 * waiting, as sk_fs_open_read does.  A link there is SHARD_EEXIST, anything
 * but a regular file SHARD_EEXIST ("'dir/name' is not a regular file:
 * fifo"), a missing file SHARD_ENOTFOUND, an open ended by a signal
 * SHARD_EINTR. */
int sk_fs_open_at(int dirfd, const char *dir, const char *name, int *fd, struct shard_err *err);
/* Write `len` bytes to dir/name durably and atomically: dir/.name.tmp is
 * created (sk_fs_create_at), written, fsync'd and renamed over dir/name,
 * then dir is fsync'd.  On failure the temporary file is removed and
 * dir/name is untouched. */
int sk_fs_write_atomic_at(int dirfd, const char *dir, const char *name, const void *data,
                          size_t len, struct shard_err *err);
/* Finish the temporary dir/tmp written through `fd`: fsync and close it (fd
 * is closed whatever happens), rename it over dir/final and fsync dir.  When
 * `rc` (the writer's result so far) or any step fails, tmp is removed and
 * the first error returned. */
int sk_fs_commit_at(int fd, int rc, int dirfd, const char *dir, const char *tmp, const char *final,
                    struct shard_err *err);
/* renameat old_dir/old_name -> new_dir/new_name (a link at either name is
 * moved or replaced, never followed), then fsync new_dir. */
int sk_fs_rename_at(int old_dirfd, const char *old_dir, const char *old_name, int new_dirfd,
                    const char *new_dir, const char *new_name, struct shard_err *err);
/* fsync the open directory `dirfd` so that renames and unlinks in it are
 * durable (filesystems that refuse a directory fsync are let be). */
int sk_fs_sync_dirfd(int dirfd, const char *dir, struct shard_err *err);
/* Size and XXH3-64 of a whole file, read sequentially from the start.
 * sk_fs_hash_fd leaves fd open; `what` names it in messages. */
int sk_fs_hash_file(const char *path, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err);
int sk_fs_hash_fd(int fd, const char *what, uint64_t *bytes, uint64_t *xxh3, struct shard_err *err);
/* Write all of p to fd (retrying short writes and EINTR). */
int sk_fs_write_all(int fd, const void *p, size_t n, const char *what, struct shard_err *err);
/* Open dir_fd/name read-only (dir_fd may be AT_FDCWD, name a path); it must
 * be a regular file.  Every file shardkit reads whole or by ranges (a
 * manifest, an index, a shard, a part file, a label or key list, an archive)
 * is opened here (a source file of a directory by sk_source_file_open, also
 * without waiting), so that none of them can hang a tool: the open is made
 * with O_NONBLOCK, so a FIFO (or a device) where a file is expected is
 * refused at once instead of waiting for a writer that never comes; O_NONBLOCK is
 * cleared once fstat has shown a regular file, and reads block as usual.  A
 * link is followed (a dataset may be a farm of links); the caller's own
 * files use sk_fs_open_at.  A signal that interrupts an open that waits (a
 * stalled network filesystem) ends it: SHARD_EINTR, never a retry, so that
 * a tool asked to stop does stop.  On success *fd is the open file and
 * *size (when size is not NULL) its size.  0, SHARD_ENOTFOUND ("file is
 * missing"), SHARD_EINTR ("interrupted") or SHARD_EIO ("not a regular file:
 * fifo", "cannot open: ...").  Messages give the reason only: the caller
 * names the file. */
int sk_fs_open_read(int dir_fd, const char *name, int *fd, uint64_t *size, struct shard_err *err);
/* The whole of the regular file dir_fd/name (opened as sk_fs_open_read
 * does), read to its end whatever its size said, into out (emptied first;
 * owned by the caller, released on failure).  The same codes and
 * reason-only messages, and SHARD_EIO ("cannot read: ...") or
 * SHARD_ENOMEM. */
int sk_fs_read_file(int dir_fd, const char *name, struct shard_buf *out, struct shard_err *err);
/* "not a regular file: fifo" (socket, character device, block device,
 * directory, symbolic link (never followed), unknown type): what an entry of
 * that st_mode type is, in the words every message and reject reason uses. */
#define SK_FS_NOT_REGULAR "not a regular file: "
#define SK_FS_NOT_REGULAR_LINK SK_FS_NOT_REGULAR "symbolic link (never followed)"
const char *sk_fs_not_regular(unsigned mode);
/* Read exactly len bytes at offset from fd, a file of `size` bytes
 * (retrying short reads and EINTR; safe from many threads at once).  0,
 * SHARD_ECORRUPT (the range passes the end: "file ends early ...") or
 * SHARD_EIO.  Reason only, as above. */
int sk_fs_pread_all(int fd, uint64_t size, uint64_t offset, void *buf, size_t len,
                    struct shard_err *err);
/* Join dir and name into a malloc'd path. */
char *sk_fs_join(const char *dir, const char *name);

#endif
