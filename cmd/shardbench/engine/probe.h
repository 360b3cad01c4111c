/* probe.h - what one benchmark run measures, and how it plugs into the
 * read path.
 *
 * The read path does not know the benchmark: it keeps its own counters
 * (shard_dataset_stats, shard_remote_stats) and reports spans to an
 * observer (struct shard_read_observer, shardkit/dataset.h).  A probe is
 * that observer for one run: it turns the shard reader's (and the HTTP
 * requests') spans into trace events.  The files loader, which is the
 * benchmark's own code, reports its stages here directly and counts the
 * bytes it reads in `bytes_read`.  Counters are atomics: loader threads add
 * to them concurrently and the run takes snapshots between epochs. */
#ifndef SHARDBENCH_PROBE_H
#define SHARDBENCH_PROBE_H

#include <stdatomic.h>
#include <stdint.h>

#include "bench.h"

struct bench_probe {
    struct trace *trace; /* NULL: counters only */
    /* the files loader's stages; the consumer's queue wait and step */
    _Atomic uint64_t stage_ns[STAGE_COUNT];
    _Atomic uint64_t bytes_read;         /* the files loader's file bytes */
    _Atomic uint64_t completed;          /* samples finished by loader threads */
    _Atomic uint64_t consumed;           /* samples taken by the consumer */
    struct shard_read_observer observer; /* the read path's hooks into this probe */
};

/* The queue-depth counter in a trace: samples ready and not yet consumed. */
#define BENCH_COUNTER_QUEUE "queue depth"

/* Start an empty probe recording to `trace` (NULL: none). */
void bench_probe_init(struct bench_probe *p, struct trace *trace);

/* The observer to give the read path: NULL when there is no trace to record
 * into (the read path then makes no calls at all). */
const struct shard_read_observer *bench_probe_observer(const struct bench_probe *p);

/* Account [start, now) to stage s and trace it; returns now (the start of
 * the next stage). */
uint64_t bench_probe_stage(struct bench_probe *p, enum bench_stage s, uint64_t start);

/* A loader thread finished a sample ([start, end)): count it and trace it
 * with the queue depth. */
void bench_probe_sample_done(struct bench_probe *p, uint64_t start, uint64_t end);

/* The consumer took a sample at `now`: count it and trace the queue depth. */
void bench_probe_sample_taken(struct bench_probe *p, uint64_t now);

#endif
