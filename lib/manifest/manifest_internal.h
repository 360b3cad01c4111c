/* manifest_internal.h - writing a manifest inside an open directory (private). */
#ifndef SHARDKIT_MANIFEST_INTERNAL_H
#define SHARDKIT_MANIFEST_INTERNAL_H

#include "shardkit/manifest.h"

/* shard_manifest_write into the open directory `dirfd`: the temporary and
 * manifest.json are reached with *at() calls on dirfd and never through a
 * symbolic link (see util/fsutil.h).  `dir` names the directory in messages.
 * shard_manifest_write(dir) opens dir and calls this. */
int sk_manifest_write_at(int dirfd, const char *dir, const struct shard_manifest *m,
                         struct shard_err *err);

#endif
