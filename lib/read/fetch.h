/* fetch.h - where a dataset's bytes come from (private).
 *
 * The reader never opens a shard itself: it asks a `struct fetch` (one per
 * dataset location) for a named file and then for byte ranges of it.  Ranges
 * are all a reader needs (the trailer, the footer, then one frame per
 * record), so a remote backend - HTTP range requests driven by the footer
 * index - slots in by implementing these two small tables; nothing in the
 * public API changes.  Two backends: a local directory (fetch_local.c, read
 * with pread) and a remote one (fetch_http.c: an http(s) base URL or an S3
 * prefix, libcurl range requests in large windows; see fetch_http.h).
 *
 * Contract for every backend:
 *  - fetch_open() of a missing file fails with SHARD_ENOTFOUND; other
 *    failures are SHARD_EIO (or SHARD_ENET).  Messages give the reason only
 *    ("file is missing"): the caller names the file.
 *  - fetch_read() fills exactly `len` bytes at `offset` or fails: a range
 *    past the end is SHARD_ECORRUPT ("ends early").  It is safe to call from
 *    many threads at once on the same file.
 *  - size is fixed when the file is opened.
 *  - advise(), when a backend has it, only says that a range will be read
 *    soon, so that the backend can start fetching it; it never fails and
 *    never has to be called.
 */
#ifndef SHARDKIT_FETCH_H
#define SHARDKIT_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/error.h"

struct fetch;
struct fetch_file;

struct fetch_ops {
    int (*open)(struct fetch *fs, const char *name, struct fetch_file **out, struct shard_err *err);
    void (*free)(struct fetch *fs);
};

struct fetch_file_ops {
    int (*read)(struct fetch_file *f, uint64_t offset, void *buf, size_t len,
                struct shard_err *err);
    void (*close)(struct fetch_file *f);
    void (*advise)(struct fetch_file *f, uint64_t offset, uint64_t len); /* may be NULL */
};

/* Backends embed these as their first member. */
struct fetch {
    const struct fetch_ops *ops;
};

struct fetch_file {
    const struct fetch_file_ops *ops;
    uint64_t size;
};

/* A backend reading the files of the local directory `dir`. */
int sk_fetch_local_new(struct fetch **out, const char *dir, struct shard_err *err);

static inline int fetch_open(struct fetch *fs, const char *name, struct fetch_file **out,
                             struct shard_err *err)
{
    return fs->ops->open(fs, name, out, err);
}

static inline int fetch_read(struct fetch_file *f, uint64_t offset, void *buf, size_t len,
                             struct shard_err *err)
{
    return f->ops->read(f, offset, buf, len, err);
}

/* [offset, offset + len) of f will be read soon.  Thread-safe. */
static inline void fetch_advise(struct fetch_file *f, uint64_t offset, uint64_t len)
{
    if (f->ops->advise)
        f->ops->advise(f, offset, len);
}

/* Both accept NULL. */
static inline void fetch_close(struct fetch_file *f)
{
    if (f)
        f->ops->close(f);
}

static inline void fetch_free(struct fetch *fs)
{
    if (fs)
        fs->ops->free(fs);
}

#endif
