/* observer.c - the read path's counters and span names (see observer.h). */
#include "read/observer.h"

static const char *const span_names[SHARD_SPAN_COUNT] = {
    "read",       "decompress",   "decode",          "sample",
    "open shard", "http request", "rtt (simulated)", "retry backoff",
};

const char *shard_read_span_name(enum shard_read_span k)
{
    return (unsigned)k < SHARD_SPAN_COUNT ? span_names[k] : "unknown";
}

void sk_read_counters_get(const struct sk_read_counters *c, struct shard_read_stats *out)
{
    uint64_t v[SK_READ_COUNTERS];
    for (int k = 0; k < SK_READ_COUNTERS; k++)
        v[k] = atomic_load_explicit(&c->v[k], memory_order_relaxed);
    *out = (struct shard_read_stats){
        .samples = v[SK_READ_SAMPLES],
        .errors = v[SK_READ_ERRORS],
        .read_ns = v[SK_READ_NS],
        .decompress_ns = v[SK_READ_DECOMPRESS_NS],
        .decode_ns = v[SK_READ_DECODE_NS],
        .bytes_requested = v[SK_READ_BYTES_REQUESTED],
        .bytes_transferred = v[SK_READ_BYTES_TRANSFERRED],
        .requests = v[SK_READ_REQUESTS],
        .retries = v[SK_READ_RETRIES],
        .rtt_ns = v[SK_READ_RTT_NS],
        .cache_hits = v[SK_READ_CACHE_HITS],
        .cache_misses = v[SK_READ_CACHE_MISSES],
        .cache_bytes_fetched = v[SK_READ_CACHE_FETCHED],
        .cache_evictions = v[SK_READ_CACHE_EVICTIONS],
        .cache_skipped = v[SK_READ_CACHE_SKIPPED],
        .cache_corrupt = v[SK_READ_CACHE_CORRUPT],
    };
}
