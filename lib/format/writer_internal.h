/* writer_internal.h - creating a shard inside an open directory (private). */
#ifndef SHARDKIT_WRITER_INTERNAL_H
#define SHARDKIT_WRITER_INTERNAL_H

#include <stdint.h>

#include "shardkit/format.h"

/* shard_writer_open for the entry `name` of the open directory `dirfd`:
 * the file is created with O_EXCL|O_NOFOLLOW relative to dirfd (never
 * through a link), and removed with unlinkat on dirfd when the writer is
 * freed unfinished, so dirfd must stay open until shard_writer_free.
 * `dir` is how messages name the directory (NULL: name alone).
 * shard_writer_open(path) is this with AT_FDCWD and format version 1. */
int sk_shard_writer_openat(struct shard_writer **out, int dirfd, const char *dir, const char *name,
                           uint32_t shard_index, uint16_t version, struct shard_err *err);

/* Records appended so far. */
uint64_t sk_writer_records(const struct shard_writer *w);

#endif
