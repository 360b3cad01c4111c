/* probe.h - the measuring points the benchmark places inside the
 * reader, the files loader and the HTTP backend (private).
 *
 * A probe is owned by one benchmark run and handed, through internal
 * functions only, to the code it measures (dataset_set_probe, the HTTP
 * backend's options).  With no probe (NULL) every call below is a branch and
 * nothing else, so the reader pays nothing outside a benchmark; the public
 * reader API is unchanged and has no callbacks.  Counters are atomics:
 * loader threads add to them concurrently and the run takes snapshots
 * between epochs. */
#ifndef SHARDKIT_BENCH_PROBE_H
#define SHARDKIT_BENCH_PROBE_H

#include <stdatomic.h>
#include <stdint.h>

#include "shardkit/bench.h"

enum bench_counter {
    BENCH_BYTES_REQUESTED = 0,  /* bytes the readers asked storage for */
    BENCH_BYTES_TRANSFERRED,    /* bytes received over HTTP */
    BENCH_REQUESTS,             /* HTTP requests made */
    BENCH_RETRIES,              /* HTTP attempts after a transient failure */
    BENCH_RTT_NS,               /* simulated delay slept */
    BENCH_COMPLETED,            /* samples finished by loader threads */
    BENCH_CONSUMED,             /* samples taken by the consumer */
    BENCH_COUNTERS
};

struct bench_probe {
    struct shard_trace *trace;  /* NULL: counters only */
    _Atomic uint64_t stage_ns[SHARD_STAGE_COUNT];
    _Atomic uint64_t counter[BENCH_COUNTERS];
};

/* Span names that are not stages. */
#define BENCH_SPAN_SAMPLE "sample"             /* one sample on a loader thread */
#define BENCH_SPAN_OPEN_SHARD "open shard"     /* header, trailer and footer of a shard */
#define BENCH_SPAN_HTTP "http request"         /* one request, retries included */
#define BENCH_SPAN_RTT "rtt (simulated)"       /* the --rtt sleep inside a request */
#define BENCH_SPAN_BACKOFF "retry backoff"     /* waiting before a retry */
#define BENCH_COUNTER_QUEUE "queue depth"      /* samples ready and not yet consumed */

/* The time now when probing, 0 otherwise (no clock read without a probe). */
static inline uint64_t bench_probe_now(const struct bench_probe *p)
{
    return p ? shard_trace_now() : 0;
}

/* Account [start, now) to stage s and trace it; returns now (the start of
 * the next stage), or 0 without a probe. */
uint64_t sk_bench_probe_stage(struct bench_probe *p, enum shard_bench_stage s, uint64_t start);

/* Trace a span that is not a stage (the names above).  No-op without a
 * probe or trace. */
void sk_bench_probe_span(struct bench_probe *p, const char *name, uint64_t start, uint64_t end);

/* Add to a counter; no-op without a probe. */
static inline void bench_probe_add(struct bench_probe *p, enum bench_counter c, uint64_t n)
{
    if (p)
        atomic_fetch_add_explicit(&p->counter[c], n, memory_order_relaxed);
}

/* A loader thread finished a sample (span [start, now)): count it and trace
 * the queue depth. */
void sk_bench_probe_sample_done(struct bench_probe *p, uint64_t start);

#endif
