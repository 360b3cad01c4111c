/* cache.h - the node-local shard cache of a remote dataset (private).
 *
 * A directory on local disk (shard_dataset_options.cache_dir) holds whole
 * shards as they were read, shared by every process of the machine that
 * reads a dataset with the same directory:
 *
 *   KEY.shard           a shard whose bytes hash to the manifest's xxh3;
 *                       KEY is "XXH3-BYTES" (16 hex digits, a decimal size):
 *                       the cache is content-addressed, so a re-published
 *                       dataset whose shard changed names another file and
 *                       never gets the old bytes, and an unchanged shard is
 *                       shared by both publications
 *   KEY.lock            flock()ed exclusively by the one process that
 *                       downloads or evicts KEY (the kernel drops it when
 *                       the process dies, kill -9 included); made 0666 and
 *                       locked through a read-only descriptor, so that users
 *                       sharing the directory take each other's locks
 *   KEY.tmp.PID.N       a download under way, renamed to KEY.shard once all
 *                       its bytes hashed to KEY's xxh3: a half-written file
 *                       is never read under the final name
 *   .lock               flock()ed while space is counted and made
 *
 * Any other name is not the cache's and is never touched.
 *
 * Opening a shard: a KEY.shard present is checked (size and xxh3: once per
 * file identity and process) and read locally - a hit; one that fails the
 * check is removed and fetched again.  Absent, the process takes KEY.lock
 * (waiting while another process downloads it - which touches KEY.lock as it
 * goes - then finding it there), makes
 * room (below), and a thread downloads the whole shard through the remote
 * backend's windows (read-ahead across `connections` connections) into the
 * temporary file, hashing as it goes - a miss.  Reads meanwhile come from
 * the part already written, or the remote backend's windows (which the
 * download reads too: shard_dataset_drop_window_cache leaves them); once renamed
 * the file is read locally.  A download may outlast its epoch: the next
 * epoch's first read of the shard counts it as a miss.
 *
 * Readers hold a shared flock on the KEY.shard they read: a process keeps
 * the cached shards of an open dataset open (the CACHE_HELD most recently
 * read ones; later reads of another one open it again).  Eviction takes a
 * shard's KEY.lock and an exclusive flock on it without waiting, so a shard
 * being read or downloaded is never removed.  Which ones go: shards of other
 * datasets (not in this one's manifest), the least recently read first;
 * then shards of the dataset that the epoch has read already
 * (sk_cache_done), the least recently read first.  A shard of the dataset
 * that the epoch has yet to read is never evicted to make room for another
 * of it (with SHARDKIT_CACHE_EVICT=lru it is, least recently read first):
 * in epochs that read every shard once, in any order, it is read before the
 * one it would make room for, so replacing it costs a download and saves
 * none.  A shard is downloaded at most once per epoch (sk_cache_epoch; at
 * most once per open of a dataset read without epochs): one let go and then
 * evicted is read remotely when read again that epoch, so that a plan
 * jumping between many shards never downloads a whole shard per sample.
 *
 * A lock that cannot be had at all (a read-only directory, a lock file that
 * is a link or not a regular file: no file here is opened through a link)
 * is not waited for: the shard is read remotely, with a warning.
 *
 * When the limit cannot be kept (every shard in use) or the disk is full, a
 * shard is read remotely, uncached: counted in cache_skipped; a full disk
 * (or a write that failed) also leaves a warning (sk_cache_warning), never a
 * failed read. */
#ifndef SHARDKIT_READ_CACHE_H
#define SHARDKIT_READ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "read/fetch.h"
#include "shardkit/dataset.h"
#include "shardkit/error.h"
#include "shardkit/manifest.h"

struct sk_read_counters;
struct sk_cache;

/* Shards a process keeps open (and so in use) per dataset: the fds it may
 * take. */
#define CACHE_HELD 256

/* The cache in directory `dir` (created if missing, not its parents) for
 * the dataset of manifest m (copied), at most `limit` bytes of shards (0:
 * as much as the disk takes), downloads read in pieces of 256 KiB (half
 * o's window if smaller); a download by another process that makes no
 * progress for as long as one window fetch may take under o's time-out and
 * retries is not waited for (the shard is read remotely); hits, misses,
 * bytes fetched, evictions and skips are added to `counters` (must outlive
 * the cache).
 * 0, SHARD_EINVAL, SHARD_EIO naming the directory, SHARD_ENOMEM. */
int sk_cache_new(struct sk_cache **out, const char *dir, uint64_t limit,
                 const struct shard_dataset_options *o, const struct shard_manifest *m,
                 struct sk_read_counters *counters, struct shard_err *err);

/* Accepts NULL.  Every file opened through the cache must be closed first. */
void sk_cache_free(struct sk_cache *c);

/* Open shard `name` of `bytes` bytes hashing to `xxh3`, from the cache or
 * through `remote` (the remote backend: also what a shard that cannot be
 * cached is read from).  The errors of fetch_open on `remote`. */
int sk_cache_open(struct sk_cache *c, struct fetch *remote, const char *name, uint64_t bytes,
                  uint64_t xxh3, struct fetch_file **out, struct shard_err *err);

/* A new epoch (plan) begins: no shard of the dataset has been read in it,
 * and each may be downloaded once more (within one epoch a shard is
 * downloaded at most once: one evicted is then read remotely). */
void sk_cache_epoch(struct sk_cache *c);

/* The epoch will not read the shard of `bytes` bytes hashing to `xxh3`
 * again: it is the first of the dataset's shards to evict (after other
 * datasets' ones), and `file` (its sk_cache_open file, or NULL when not
 * open) lets its local copy go - at once, or when its download ends - so
 * that it can be (a read of it finds it again). */
void sk_cache_done(struct sk_cache *c, uint64_t xxh3, uint64_t bytes, struct fetch_file *file);

/* The first warning the cache gave ("" when none) into buf (size bytes);
 * its length. */
size_t sk_cache_warning(struct sk_cache *c, char *buf, size_t size);

#endif
