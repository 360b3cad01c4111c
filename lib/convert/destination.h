/* destination.h - the destination directory: what it may hold, its lock, cleanup (private). */
#ifndef SHARDKIT_DST_H
#define SHARDKIT_DST_H

#include "shardkit/shardify.h"

/* The interrupted run's sample order, in DST/.shardify (see order.c). */
#define DST_STATE_FILE "state.json"

struct dst {
    char *path;       /* DST */
    char *work;       /* DST/.shardify */
    int lock_fd;      /* flock'd DST/.shardify/lock */
    int has_manifest; /* a complete previous output is present */
    int has_output;   /* any shardify file at the top of DST */
    int has_state;    /* an interrupted run left its state */
};

/* Create DST if missing, check it holds nothing but shardify output, take the
 * lock, and apply `mode`: FRESH refuses previous output, OVERWRITE removes it
 * (manifest first, so no manifest ever names a replaced shard), RESUME keeps
 * an interrupted run's state (and refuses a complete dataset). */
int sk_dst_open(struct dst **out, const char *path, enum shardify_mode mode, struct shard_err *err);

/* Remove DST/.shardify and its contents, then release the lock. */
int sk_dst_cleanup_work(struct dst *d, struct shard_err *err);

/* Remove shard files and work files from shard number `first` on (used when
 * resume cannot reuse them). */
int sk_dst_remove_from(struct dst *d, uint32_t first, struct shard_err *err);

/* Release the lock and free (the work directory stays, for --resume). */
void sk_dst_close(struct dst *d);

/* Paths: malloc'd "DST/.shardify/<name>" and "DST/<name>". */
char *sk_dst_work_path(const struct dst *d, const char *name);
char *sk_dst_path(const struct dst *d, const char *name);

#endif
