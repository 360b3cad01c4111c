/* manifest_internal.h - writing a manifest inside an open directory (private). */
#ifndef SHARDKIT_MANIFEST_INTERNAL_H
#define SHARDKIT_MANIFEST_INTERNAL_H

#include "shardkit/image.h"
#include "shardkit/manifest.h"

/* shard_manifest_write into the open directory `dirfd`: the temporary and
 * manifest.json are reached with *at() calls on dirfd and never through a
 * symbolic link (see util/fsutil.h).  `dir` names the directory in messages.
 * shard_manifest_write(dir) opens dir and calls this. */
int sk_manifest_write_at(int dirfd, const char *dir, const struct shard_manifest *m,
                         struct shard_err *err);

/* shard_index_reader_open on index.jsonl held in memory (a remote
 * dataset's, fetched whole): the reader takes the buffer over (it frees
 * buf->data when closed, and zeroes *buf).  `name` names it in messages. */
int sk_index_reader_open_buffer(struct shard_index_reader **out, const char *name,
                                struct shard_buf *buf, struct shard_err *err);

#endif
