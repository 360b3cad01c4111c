/* probe.h - what one benchmark run measures, and how it plugs into the
 * read path (private).
 *
 * The read path does not know the benchmark: it keeps its own counters and
 * reports spans to an observer (read/observer.h).  A probe is that observer
 * for one run: it turns the shard reader's (and the HTTP backend's) spans
 * into trace events.  The shard reader's stage times and bytes come from
 * the dataset's own counters (shard_dataset_stats); the files loader, which
 * is the benchmark's own code, reports its stages here directly and counts
 * its bytes (and its HTTP backend's requests) in `read`.  Counters are
 * atomics: loader threads add to them concurrently and the run takes
 * snapshots between epochs. */
#ifndef SHARDKIT_BENCH_PROBE_H
#define SHARDKIT_BENCH_PROBE_H

#include <stdatomic.h>
#include <stdint.h>

#include "read/observer.h"
#include "shardkit/bench.h"

struct bench_probe {
    struct shard_trace *trace;      /* NULL: counters only */
    /* the files loader's stages; the consumer's queue wait and step */
    _Atomic uint64_t stage_ns[SHARD_STAGE_COUNT];
    struct sk_read_counters read;   /* the files loader's bytes and HTTP requests */
    _Atomic uint64_t completed;     /* samples finished by loader threads */
    _Atomic uint64_t consumed;      /* samples taken by the consumer */
    struct sk_read_observer observer;  /* the read path's hooks into this probe */
};

/* The queue-depth counter in a trace: samples ready and not yet consumed. */
#define BENCH_COUNTER_QUEUE "queue depth"

/* Start an empty probe recording to `trace` (NULL: none). */
void sk_bench_probe_init(struct bench_probe *p, struct shard_trace *trace);

/* The observer to give the read path: NULL when there is no trace to record
 * into (the read path then makes no calls at all). */
const struct sk_read_observer *sk_bench_probe_observer(const struct bench_probe *p);

/* Account [start, now) to stage s and trace it; returns now (the start of
 * the next stage). */
uint64_t sk_bench_probe_stage(struct bench_probe *p, enum shard_bench_stage s, uint64_t start);

/* A loader thread finished a sample ([start, end)): count it and trace it
 * with the queue depth. */
void sk_bench_probe_sample_done(struct bench_probe *p, uint64_t start, uint64_t end);

/* The consumer took a sample at `now`: count it and trace the queue depth. */
void sk_bench_probe_sample_taken(struct bench_probe *p, uint64_t now);

#endif
