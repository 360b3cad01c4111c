/* internal.h - the pieces of the benchmark engine (see bench.h): the naive
 * files loader and the page-cache dropper. */
#ifndef SHARDBENCH_INTERNAL_H
#define SHARDBENCH_INTERNAL_H

#include <stdint.h>

#include "bench.h"
#include "probe.h"

/* ---- the files loader (files_loader.c) --------------------------------------
 *
 * The small-file baseline: `threads` threads take list positions in order
 * and, per sample, read the whole source file (open/read/close below
 * root_fd, or one GET through an HTTP backend), decode it at full size and
 * resize it to the geometry shardify would make; the consumer receives the
 * samples in list order through a ring of queue_depth slots, exactly as
 * from shard_iter.  The keys and the order must outlive the loader. */

struct files_loader_options {
    int threads;          /* >= 1 */
    uint32_t queue_depth; /* 0: 4 per thread */
    uint32_t size;
    enum shard_fit fit;
    int upscale;
};

struct files_loader;

/* Read keys[order[i]] for i in 0..count from root_fd (when remote is NULL)
 * or with a GET each from `remote`, reporting stages, bytes and samples to
 * `probe` (which must outlive the loader).  Its threads start at once.  0,
 * SHARD_EINVAL, SHARD_ENOMEM or SHARD_EIO (threads could not start). */
int files_loader_new(struct files_loader **out, int root_fd, struct shard_remote *remote,
                     const struct shard_keylist *keys, const uint64_t *order, uint64_t count,
                     const struct files_loader_options *o, struct bench_probe *probe,
                     struct shard_err *err);

/* As shard_iter_next: 1 and a sample (key, width, height, pixels; label
 * SHARD_NO_LABEL, codec raw, index = the key's number), 0 at the end, or a
 * negative error for this entry naming the key ("cannot decode 'a.jpg':
 * truncated JPEG"); the next call continues with the next entry. */
int files_loader_next(struct files_loader *l, struct shard_item *item, struct shard_err *err);

void files_loader_free(struct files_loader *l); /* accepts NULL */

/* ---- dropping the page cache (cold.c) ------------------------------- */

struct cold_stats {
    uint64_t files;
    uint64_t failed;   /* files that could not be opened or advised */
    uint64_t pages;    /* pages of the files */
    uint64_t resident; /* pages still cached after the advice (mincore) */
    int measured;      /* resident could be measured for every file */
    int first_errno;   /* why the first failure failed */
};

/* posix_fadvise(POSIX_FADV_DONTNEED) the whole of file `name` below dir_fd,
 * then count with mincore how many of its pages are still cached (dirty
 * pages, for one, are not dropped).  Accumulates into *st; never fails. */
void cold_drop_file(int dir_fd, const char *name, struct cold_stats *st);

#endif
