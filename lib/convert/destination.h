/* destination.h - the destination directory: what it may hold, its lock, cleanup (private).
 *
 * DST is opened once, as given (a symbolic link given as DST is followed,
 * like cd: that is the user's choice), and DST/.shardify once relative to it
 * (O_NOFOLLOW).  Every later file operation of the run is an *at() call on
 * one of these two descriptors that never follows a link: a link planted
 * where shardify keeps its own file or directory is an error naming it, and
 * nothing outside DST is ever written, truncated, renamed or removed. */
#ifndef SHARDKIT_DST_H
#define SHARDKIT_DST_H

#include "shardkit/shardify.h"

/* The interrupted run's sample order, in DST/.shardify (see order.c). */
#define DST_STATE_FILE "state.json"

struct dst {
    char *path;       /* DST as given (messages only) */
    char *work;       /* DST/.shardify (messages only) */
    int fd;           /* DST, opened once */
    int work_fd;      /* DST/.shardify, opened once relative to fd */
    int lock_fd;      /* flock'd DST/.shardify/lock */
    char *created;    /* the outermost directory this run created on the way to DST */
    int created_work; /* this run created DST/.shardify */
    int has_manifest; /* a complete previous output is present */
    int has_output;   /* any shardify file at the top of DST */
    int has_state;    /* an interrupted run left its state */
};

/* Check, before creating anything, that DST is not inside SRC (nor SRC
 * inside DST), that DST holds nothing but shardify output with no symbolic
 * link among it, and that `mode` allows the run; then create DST if missing,
 * take the lock and apply `mode`: FRESH refuses previous output, OVERWRITE
 * removes it (manifest first, so no manifest ever names a replaced shard),
 * RESUME keeps an interrupted run's state (and refuses a complete dataset).
 * A refused run leaves nothing behind that it created. */
int sk_dst_open(struct dst **out, const char *path, const char *src, enum shardify_mode mode,
                struct shard_err *err);

/* Remove DST/.shardify and its contents, then release the lock. */
int sk_dst_cleanup_work(struct dst *d, struct shard_err *err);

/* Remove shard files and work files from shard number `first` on (used when
 * resume cannot reuse them). */
int sk_dst_remove_from(struct dst *d, uint32_t first, struct shard_err *err);

/* Release the lock and free.  The work directory stays for --resume when it
 * holds anything worth resuming; otherwise what the run created is removed:
 * the lock, the work directory, and DST itself when this run created it and
 * it is empty.  Accepts NULL. */
void sk_dst_close(struct dst *d);

#endif
