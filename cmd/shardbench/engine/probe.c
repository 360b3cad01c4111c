/* probe.c - the benchmark's measuring points (see probe.h). */
#include "probe.h"

#include <string.h>

static void trace_queue(struct bench_probe *p, uint64_t done, uint64_t taken, uint64_t now)
{
    trace_counter(p->trace, BENCH_COUNTER_QUEUE, done > taken ? (double)(done - taken) : 0, now);
}

void bench_probe_sample_done(struct bench_probe *p, uint64_t start, uint64_t end)
{
    uint64_t done = atomic_fetch_add_explicit(&p->completed, 1, memory_order_relaxed) + 1;
    uint64_t taken = atomic_load_explicit(&p->consumed, memory_order_relaxed);
    trace_span(p->trace, shard_read_span_name(SHARD_SPAN_SAMPLE), start, end);
    trace_queue(p, done, taken, end);
}

void bench_probe_sample_taken(struct bench_probe *p, uint64_t now)
{
    uint64_t taken = atomic_fetch_add_explicit(&p->consumed, 1, memory_order_relaxed) + 1;
    uint64_t done = atomic_load_explicit(&p->completed, memory_order_relaxed);
    trace_queue(p, done, taken, now);
}

uint64_t bench_probe_stage(struct bench_probe *p, enum bench_stage s, uint64_t start)
{
    uint64_t now = trace_now();
    atomic_fetch_add_explicit(&p->stage_ns[s], now - start, memory_order_relaxed);
    trace_span(p->trace, bench_stage_name(s), start, now);
    return now;
}

/* The read path's spans: stage spans carry the stage names ("read",
 * "decompress", "decode": bench_stage_name's too), a finished sample
 * also moves the queue-depth counter. */
static void on_span(void *user, enum shard_read_span k, uint64_t start, uint64_t end)
{
    struct bench_probe *p = user;
    if (k == SHARD_SPAN_SAMPLE)
        bench_probe_sample_done(p, start, end);
    else
        trace_span(p->trace, shard_read_span_name(k), start, end);
}

static void on_thread(void *user, const char *name)
{
    struct bench_probe *p = user;
    trace_thread_name(p->trace, name);
}

void bench_probe_init(struct bench_probe *p, struct trace *trace)
{
    memset(p, 0, sizeof *p);
    p->trace = trace;
    p->observer = (struct shard_read_observer){.span = on_span, .thread = on_thread, .user = p};
}

const struct shard_read_observer *bench_probe_observer(const struct bench_probe *p)
{
    return p->trace ? &p->observer : NULL;
}
