/* report_text.c - a shardbench report for people, on stdout (see report.h). */
#include "report.h"

#include "cli.h"

static void print_phase_row(FILE *out, const char *label, const struct bench_phase *ph)
{
    fprintf(out, "  %-22s %10.1f %9.1f %8.3f %9.1f /%8.1f %6.1f%%\n", label, ph->samples_per_second,
            ph->mb_per_second, ph->cpu_seconds_per_sample * REPORT_MS, ph->batch_p50 * REPORT_MS,
            ph->batch_p99 * REPORT_MS, 100 * ph->wait_fraction);
}

static void print_run(FILE *out, const char *location, const struct bench_result *r)
{
    char bytes[32];
    fprintf(out, "%s %s%s: %llu sample%s per epoch at %u px (%s), %d thread%s, batch %u",
            bench_mode_name(r->mode), location, r->remote ? " (HTTP)" : "",
            (unsigned long long)r->samples_per_epoch, r->samples_per_epoch == 1 ? "" : "s", r->size,
            shard_fit_name(r->fit), r->threads, r->threads == 1 ? "" : "s", r->batch);
    if (r->step_ms > 0)
        fprintf(out, ", consumer step %.3g ms", r->step_ms);
    if (r->remote)
        fprintf(out, ", rtt %.3g ms (simulated)", r->rtt_ms);
    fprintf(out, "\n  startup %.3f s, first batch after %.3f s\n", r->startup_seconds,
            r->first_batch_seconds);
    fprintf(out, "  %-22s %10s %9s %8s %19s %7s\n", "", "samples/s", "MB/s", "CPU ms",
            "batch p50/p99 ms", "waited");
    print_phase_row(out, "epoch 1 (first)", &r->first);
    if (r->steady.epochs) {
        char label[32];
        if (r->steady.epochs == 1)
            snprintf(label, sizeof label, "epoch 2 (steady)");
        else
            snprintf(label, sizeof label, "epochs 2-%u (steady)", r->steady.epochs + 1);
        print_phase_row(out, label, &r->steady);
    }
    const struct bench_phase *ph = report_headline(r);
    fprintf(out, "  per sample (%s):", r->steady.epochs ? "steady" : "first epoch");
    const char *sep = " ";
    for (int s = 0; s < STAGE_COUNT; s++) {
        if (!report_stage_shown(r->mode, (enum bench_stage)s))
            continue;
        if (s == STAGE_QUEUE_WAIT)
            sep = " | consumer: ";
        fprintf(out, "%s%s %.3f ms", sep, bench_stage_name((enum bench_stage)s),
                report_stage_ms(ph, (enum bench_stage)s));
        sep = ", ";
    }
    fprintf(out, "\n  bytes read %s", cli_format_bytes(ph->bytes_read, bytes, sizeof bytes));
    if (r->remote)
        fprintf(out, ", %llu HTTP requests, %llu retries, %.3f s of simulated rtt slept",
                (unsigned long long)ph->requests, (unsigned long long)ph->retries, ph->rtt_seconds);
    fprintf(out, "\n");
    if (r->cached)
        fprintf(out,
                "  node-local cache: %llu hits, %llu misses, %s fetched, %llu evictions, "
                "%llu shards read uncached\n",
                (unsigned long long)ph->cache_hits, (unsigned long long)ph->cache_misses,
                cli_format_bytes(ph->cache_bytes_fetched, bytes, sizeof bytes),
                (unsigned long long)ph->cache_evictions, (unsigned long long)ph->cache_skipped);
    if (r->step_ms > 0)
        fprintf(out, "  the consumer waited for input %.1f%% of the time (input-bound share)\n",
                100 * ph->wait_fraction);
    if (r->cold && r->cold_dropped && r->cold_resident >= 0)
        fprintf(out,
                "  cold: page cache dropped before each epoch (%.1f%% of the pages still "
                "cached afterwards, worst epoch)\n",
                100 * r->cold_resident);
    else if (r->cold)
        fprintf(out, "  cold: %s\n",
                r->cold_dropped ? "page cache dropped before each epoch" : "NOT cold");
    if (r->cold && r->cold_note[0])
        fprintf(out, "        %s\n", r->cold_note);
    if (report_errors(r))
        fprintf(out, "  %llu samples failed; the first: %s\n", (unsigned long long)report_errors(r),
                r->first_error);
}

void report_write_text(const struct report *r, FILE *out)
{
    if (r->command != CMD_COMPARE) {
        const char *location;
        const struct bench_result *single = report_single(r, &location);
        print_run(out, location, single);
        return;
    }
    print_run(out, r->src, r->files);
    print_run(out, r->dst, r->shards);
    fprintf(out, "shards/files: %.2fx samples per second (%s, same %d threads)\n", report_ratio(r),
            report_ratio_basis(r), r->files->threads);
}
