/* destination.h - the destination directory: what it may hold, its lock, cleanup (private).
 *
 * DST is opened once, as given (a symbolic link given as DST is followed,
 * like cd: that is the user's choice), and DST/.shardify once relative to it
 * (O_NOFOLLOW).  Every later file operation of the run is an *at() call on
 * one of these two descriptors that never follows a link: a link planted
 * where shardify keeps its own file or directory is an error naming it, and
 * nothing outside DST is ever written, truncated, renamed or removed.
 *
 * An s3:// DST (destination_s3.c) is that same machinery on a local
 * staging directory - the work directory given with --work-dir, else
 * $XDG_CACHE_HOME/shardkit/shardify/s3-BUCKET-HASH (~/.cache when unset; HASH
 * of the bucket and prefix) -
 * where the lock, the state, the journals and each file being written live,
 * plus the store: each finished file is uploaded (sk_dst_publish) and its
 * staged copy removed, shards as they are finished, then index.jsonl, then
 * manifest.json, the commit point.  The store is listed (one level) with the
 * same rules as a directory: only shardify's names, and the mode decides
 * what a previous output means; --overwrite deletes the old manifest object
 * first.  A multipart upload under way is recorded in the work directory
 * (DST_UPLOAD_FILE) and aborted by the next run when a crash left it. */
#ifndef SHARDKIT_DST_H
#define SHARDKIT_DST_H

#include "shardkit/shardify.h"

/* The interrupted run's sample order, in DST/.shardify (see order.c). */
#define DST_STATE_FILE "state.json"
/* The multipart upload under way (s3:// DST): "NAME\tUPLOAD_ID\n". */
#define DST_UPLOAD_FILE "upload"

struct sk_s3;

struct dst {
    char *name;           /* DST as the user named it: the path, or s3://BUCKET/PREFIX (messages) */
    struct sk_s3 *remote; /* an s3:// DST: the store (then `path` is the staging directory) */
    char *path;           /* DST as given, or the staging directory (messages only) */
    char *work;           /* DST/.shardify (messages only) */
    int fd;               /* DST, opened once */
    int work_fd;          /* DST/.shardify, opened once relative to fd */
    int lock_fd;          /* flock'd DST/.shardify/lock */
    char *created;        /* the outermost directory this run created on the way to DST */
    int created_work;     /* this run created DST/.shardify */
    int has_manifest;     /* a complete previous output is present */
    int has_output;       /* any shardify file at the top of DST */
    int has_state;        /* an interrupted run left its state */
    /* Why the multipart uploads other runs left below an s3:// DST could
     * not all be looked for or aborted, or "" (the run goes on). */
    char uploads_warning[SHARD_ERRMSG_SIZE];
};

/* Check, before creating anything, that DST is not inside SRC (nor SRC
 * inside DST), that DST holds nothing but shardify output with no symbolic
 * link among it, and that `mode` allows the run; then create DST if missing,
 * take the lock and apply `mode`: FRESH refuses previous output, OVERWRITE
 * removes it (manifest first, so no manifest ever names a replaced shard),
 * RESUME keeps an interrupted run's state (and refuses a complete dataset).
 * A refused run leaves nothing behind that it created. */
int sk_dst_open(struct dst **out, const char *path, const char *src, const char *work_dir,
                enum shardify_mode mode, struct shard_err *err);

/* File `name` of DST is finished: for an s3:// DST, upload it and remove
 * the staged copy (a file no longer staged was uploaded by an earlier run
 * and is left as it is); nothing to do for a local DST. */
int sk_dst_publish(struct dst *d, const char *name, struct shard_err *err);

/* Size and XXH3-64 of the finished file `name`: the local (or staged) file,
 * else, for an s3:// DST, the uploaded object.  Never through a link. */
int sk_dst_hash(struct dst *d, const char *name, uint64_t *bytes, uint64_t *xxh3,
                struct shard_err *err);

/* Shard file names "shard-NNNNNN.shard" (*n gets the number; n may be NULL),
 * and every name shardify writes at the top of DST. */
int sk_dst_is_shard_name(const char *name, uint32_t *n);
/* "index.jsonl", "index.keys", and a merge's "index-I-of-N.jsonl" and
 * "index-I-of-N.keys". */
int sk_dst_is_index_name(const char *name);
int sk_dst_is_output_name(const char *name);

/* destination_s3.c: the store's side of an s3:// DST (see above). */
/* The staging directory of the s3:// DST `location` (malloc'd in *path). */
int sk_dst_s3_staging(const struct sk_s3 *s3, const char *work_dir, char **path,
                      struct shard_err *err);
/* List the store: foreign names are refused; sets has_manifest, has_output. */
int sk_dst_s3_inspect(struct dst *d, struct shard_err *err);
/* Delete the store's shardify objects: the manifest first (unless kept),
 * then the shards from `first_shard` on and the other files. */
int sk_dst_s3_remove(struct dst *d, int keep_manifest, uint32_t first_shard, struct shard_err *err);
/* Abort the multipart upload a crashed run recorded, if any. */
int sk_dst_s3_abort_recorded(struct dst *d, struct shard_err *err);
/* Abort the multipart uploads under way of shardify's file names below the
 * prefix (ListMultipartUploads), whoever started them: a run killed on
 * another machine leaves them where no work directory here records them.
 * A store that cannot list them, or an upload that cannot be aborted, is
 * said in d->uploads_warning and does not stop the run; 0 or SHARD_ENOMEM. */
int sk_dst_s3_abort_orphans(struct dst *d, struct shard_err *err);
/* Upload the staged file `name`, then remove it from the staging directory. */
int sk_dst_s3_publish(struct dst *d, const char *name, struct shard_err *err);
/* Nesting of two s3:// locations, as check_nesting does for directories. */
int sk_dst_s3_check_nesting(const char *src, const struct sk_s3 *dst, struct shard_err *err);

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
