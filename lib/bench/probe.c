/* probe.c - the benchmark's measuring points (see probe.h). */
#include "bench/probe.h"

uint64_t sk_bench_probe_stage(struct bench_probe *p, enum shard_bench_stage s, uint64_t start)
{
    if (!p)
        return 0;
    uint64_t now = shard_trace_now();
    atomic_fetch_add_explicit(&p->stage_ns[s], now - start, memory_order_relaxed);
    shard_trace_span(p->trace, shard_bench_stage_name(s), start, now);
    return now;
}

void sk_bench_probe_span(struct bench_probe *p, const char *name, uint64_t start, uint64_t end)
{
    if (p)
        shard_trace_span(p->trace, name, start, end);
}

void sk_bench_probe_sample_done(struct bench_probe *p, uint64_t start)
{
    if (!p)
        return;
    uint64_t now = shard_trace_now();
    uint64_t done = atomic_fetch_add_explicit(&p->counter[BENCH_COMPLETED], 1,
                                              memory_order_relaxed) + 1;
    uint64_t taken = atomic_load_explicit(&p->counter[BENCH_CONSUMED], memory_order_relaxed);
    shard_trace_span(p->trace, BENCH_SPAN_SAMPLE, start, now);
    shard_trace_counter(p->trace, BENCH_COUNTER_QUEUE, done > taken ? (double)(done - taken) : 0,
                        now);
}
