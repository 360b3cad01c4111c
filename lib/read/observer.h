/* observer.h - what the read path tells about its own work (private).
 *
 * The read path (dataset, shard backends, iterator) owns two things a
 * client may look at; nothing in it knows who the client is:
 *
 *  - counters (struct sk_read_counters): what reads have cost so far -
 *    samples, time per stage, bytes, HTTP requests.  A dataset keeps one set
 *    for all its reads (and its HTTP backend's); the public face is
 *    struct shard_read_stats and shard_dataset_stats() (shardkit/dataset.h).
 *    Counters are always kept: a few relaxed atomic adds and clock reads per
 *    sample, against the tens of microseconds a sample takes.
 *
 *  - an observer (struct shard_read_observer, public in shardkit/dataset.h):
 *    hooks a client (shardbench's trace) passes at open, in the dataset's
 *    options, to receive spans.  Hooks run on the thread that did the work,
 *    so "which thread" is the calling one; they must be thread-safe and
 *    quick.  Without an observer (NULL) the read path makes no call; the
 *    helpers below hold that rule.
 *
 * Times are sk_now_ns() (util/clock.h). */
#ifndef SHARDKIT_READ_OBSERVER_H
#define SHARDKIT_READ_OBSERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "shardkit/dataset.h"

enum sk_read_counter {
    SK_READ_SAMPLES = 0, /* records read */
    SK_READ_ERRORS,      /* reads that failed */
    SK_READ_NS,          /* stage times, summed over threads */
    SK_READ_DECOMPRESS_NS,
    SK_READ_DECODE_NS,
    SK_READ_BYTES_REQUESTED,   /* shard bytes asked for (frames, headers, trailers, footers) */
    SK_READ_BYTES_TRANSFERRED, /* bytes received over HTTP */
    SK_READ_REQUESTS,          /* HTTP requests */
    SK_READ_RETRIES,           /* HTTP attempts after a transient failure */
    SK_READ_RTT_NS,            /* simulated round-trip delay slept */
    SK_READ_CACHE_HITS,        /* shards found in the node-local cache (read/cache.h) */
    SK_READ_CACHE_MISSES,      /* shards not there: downloaded, or read remotely */
    SK_READ_CACHE_FETCHED,     /* bytes downloaded into the cache */
    SK_READ_CACHE_EVICTIONS,   /* shards removed to stay under the limit or fit the disk */
    SK_READ_CACHE_SKIPPED,     /* shards read remotely, uncached (no room, a full disk) */
    SK_READ_CACHE_CORRUPT,     /* cached shards that failed their check and were fetched again */
    SK_READ_COUNTERS
};

struct sk_read_counters {
    _Atomic uint64_t v[SK_READ_COUNTERS];
};

/* Add n to counter k of c; no-op when c is NULL. */
static inline void sk_read_count(struct sk_read_counters *c, enum sk_read_counter k, uint64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&c->v[k], n, memory_order_relaxed);
}

/* A snapshot of c (each counter read atomically; the set is not one
 * instant when reads are in progress). */
void sk_read_counters_get(const struct sk_read_counters *c, struct shard_read_stats *out);

static inline void sk_read_span(const struct shard_read_observer *o, enum shard_read_span k,
                                uint64_t start_ns, uint64_t end_ns)
{
    if (o && o->span)
        o->span(o->user, k, start_ns, end_ns);
}

static inline void sk_read_thread(const struct shard_read_observer *o, const char *name)
{
    if (o && o->thread)
        o->thread(o->user, name);
}

#endif
