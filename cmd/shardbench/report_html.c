/* report_html.c - a shardbench report as one self-contained HTML page (see
 * report.h): throughput files against shards first, then where the time
 * goes, batch latencies, the consumer's wait over time, the machine and the
 * command. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "cli.h"
#include "html.h"

#define PROG "shardbench"
/* The loader's stages, stacked per sample (the consumer's are its own). */
#define LOADER_STAGES 4

static const char *const phase_names[] = {"first epoch", "steady epochs"};

static const struct bench_phase *phase_of(const struct bench_result *r, int i)
{
    return i == 0 ? &r->first : &r->steady;
}

/* The runs of the report, files first: 1 or 2. */
static size_t runs(const struct report *rep, const struct bench_result **out, const char **names,
                   const char **locations)
{
    size_t n = 0;
    if (rep->command != CMD_SHARDS) {
        out[n] = rep->files;
        locations[n] = rep->src;
        names[n++] = "files";
    }
    if (rep->command != CMD_FILES) {
        out[n] = rep->shards;
        locations[n] = rep->dst;
        names[n++] = "shards";
    }
    return n;
}

static void headline(FILE *out, const struct report *rep)
{
    if (rep->command == CMD_COMPARE) {
        double ratio = report_ratio(rep);
        fputs("<div class=\"verdict ok\" id=\"headline\">Shards deliver <span class=\"ratio\" "
              "data-value=\"",
              out);
        html_number(out, ratio);
        fprintf(out, "\">%.2f&times;</span> the samples per second of small files", ratio);
        fputs("<span class=\"detail\">", out);
        html_textf(out, "%.1f against %.1f samples/s, %s; %d threads each.",
                   report_headline(rep->shards)->samples_per_second,
                   report_headline(rep->files)->samples_per_second, report_ratio_basis(rep),
                   rep->shards->threads);
        fputs("</span></div>\n", out);
        return;
    }
    const char *location;
    const struct bench_result *r = report_single(rep, &location);
    fprintf(out, "<div class=\"verdict ok\" id=\"headline\">%.1f samples/s",
            report_headline(r)->samples_per_second);
    fputs("<span class=\"detail\">", out);
    html_textf(out, "%s, %s loader, %d threads.",
               r->steady.epochs ? "steady epochs" : "first epoch", bench_mode_name(r->mode),
               r->threads);
    fputs("</span></div>\n", out);
}

/* samples/s per phase, files beside shards, the ratio noted. */
static void throughput(FILE *out, const struct report *rep)
{
    const struct bench_result *res[2];
    const char *names[2], *locations[2];
    size_t n = runs(rep, res, names, locations);
    double values[4];
    const char *rows[2];
    char notes[2][48];
    const char *note_ptr[2] = {NULL, NULL};
    size_t nrows = 0;
    for (int p = 0; p < 2; p++) {
        int ran = 0;
        for (size_t i = 0; i < n; i++)
            ran |= phase_of(res[i], p)->epochs > 0;
        if (!ran)
            continue;
        for (size_t i = 0; i < n; i++) {
            const struct bench_phase *ph = phase_of(res[i], p);
            values[nrows * n + i] = ph->epochs ? ph->samples_per_second : NAN;
        }
        if (n == 2 && values[nrows * n] > 0 && isfinite(values[nrows * n + 1])) {
            snprintf(notes[nrows], sizeof notes[nrows], "(%.2fx)",
                     values[nrows * n + 1] / values[nrows * n]);
            note_ptr[nrows] = notes[nrows];
        }
        rows[nrows++] = phase_names[p];
    }
    int cold = res[0]->cold;
    char caption[160];
    snprintf(caption, sizeof caption, "Samples per second delivered to the consumer%s%s",
             n == 2 ? ", files against shards (shards/files in brackets)" : "",
             cold ? "; cold: the page cache dropped before every epoch" : "");
    struct chart_bars c = {.id = "throughput",
                           .caption = caption,
                           .unit = "samples/s",
                           .rows = nrows,
                           .row_names = rows,
                           .series = n,
                           .series_names = names,
                           .values = values,
                           .row_notes = note_ptr,
                           .decimals = 1};
    chart_bars(out, &c);
}

/* Each run's loader time per sample, stage by stage, stacked. */
static void stages(FILE *out, const struct report *rep)
{
    const struct bench_result *res[2];
    const char *names[2], *locations[2];
    size_t n = runs(rep, res, names, locations);
    static const enum bench_stage loader[LOADER_STAGES] = {STAGE_READ, STAGE_DECOMPRESS,
                                                           STAGE_DECODE, STAGE_RESIZE};
    const char *stage_names[LOADER_STAGES];
    double values[2 * LOADER_STAGES];
    for (int s = 0; s < LOADER_STAGES; s++)
        stage_names[s] = bench_stage_name(loader[s]);
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < LOADER_STAGES; s++)
            values[i * LOADER_STAGES + s] = report_stage_ms(report_headline(res[i]), loader[s]);
    struct chart_bars c = {.id = "stages",
                           .caption = "Loader time per sample by stage (summed over the "
                                      "loader threads: what one sample costs), ms",
                           .unit = "ms per sample",
                           .rows = n,
                           .row_names = names,
                           .series = LOADER_STAGES,
                           .series_names = stage_names,
                           .values = values,
                           .stacked = 1,
                           .decimals = 3};
    chart_bars(out, &c);
}

/* A table of one row per phase that ran: its name, then cells(out, ph). */
static void phase_rows(FILE *out, const char *id, const char *const *head, size_t columns,
                       const struct bench_result *r,
                       void (*cells)(FILE *out, const struct bench_phase *ph))
{
    html_table_begin(out, id, head, columns);
    for (int p = 0; p < 2; p++) {
        const struct bench_phase *ph = phase_of(r, p);
        if (!ph->epochs)
            continue;
        html_row_begin(out, NULL);
        html_cell(out, phase_names[p]);
        cells(out, ph);
        html_row_end(out);
    }
    html_table_end(out);
}

static void phase_cells(FILE *out, const struct bench_phase *ph)
{
    html_cell_u64(out, ph->epochs);
    html_cell_u64(out, ph->samples);
    html_cell_num(out, ph->seconds, "%.3f");
    html_cell_num(out, ph->samples_per_second, "%.1f");
    html_cell_num(out, ph->mb_per_second, "%.1f");
    html_cell_num(out, ph->batch_p50 * REPORT_MS, "%.3f");
    html_cell_num(out, ph->batch_p99 * REPORT_MS, "%.3f");
    html_cell_num(out, ph->wait_fraction, "%.3f");
    html_cell_num(out, ph->cpu_seconds_per_sample, "%.6f");
    html_cell_u64(out, ph->bytes_read);
    html_cell_u64(out, ph->requests);
    html_cell_u64(out, ph->retries);
}

static void phase_table(FILE *out, const char *id, const struct bench_result *r)
{
    static const char *const head[] = {"phase",         "#epochs",       "#samples",
                                       "#seconds",      "#samples/s",    "#MB/s",
                                       "#batch p50 ms", "#batch p99 ms", "#waited",
                                       "#CPU s/sample", "#bytes read",   "#requests",
                                       "#retries"};
    phase_rows(out, id, head, sizeof head / sizeof *head, r, phase_cells);
}

static void cache_cells(FILE *out, const struct bench_phase *ph)
{
    html_cell_u64(out, ph->cache_hits);
    html_cell_u64(out, ph->cache_misses);
    html_cell_u64(out, ph->cache_bytes_fetched);
    html_cell_u64(out, ph->cache_evictions);
    html_cell_u64(out, ph->cache_skipped);
}

/* The node-local cache's counters per phase (a run with --cache-dir), and
 * its warning. */
static void cache_table(FILE *out, const char *id, const struct bench_result *r)
{
    static const char *const head[] = {"node-local cache", "#hits",      "#misses",
                                       "#bytes fetched",   "#evictions", "#shards uncached"};
    phase_rows(out, id, head, sizeof head / sizeof *head, r, cache_cells);
    if (r->cache_warning[0]) {
        fputs("<p class=\"bad\">", out);
        html_textf(out, "warning: %s", r->cache_warning);
        fputs("</p>\n", out);
    }
}

static void stage_table(FILE *out, const char *id, const struct bench_result *r)
{
    static const char *const head[] = {"stage", "#first epoch ms", "#steady ms"};
    html_table_begin(out, id, head, 3);
    for (int s = 0; s < STAGE_COUNT; s++) {
        if (!report_stage_shown(r->mode, (enum bench_stage)s))
            continue;
        html_row_begin(out, NULL);
        html_cell(out, bench_stage_name((enum bench_stage)s));
        html_cell_num(out, report_stage_ms(&r->first, (enum bench_stage)s), "%.3f");
        if (r->steady.epochs)
            html_cell_num(out, report_stage_ms(&r->steady, (enum bench_stage)s), "%.3f");
        else
            html_cell(out, "");
        html_row_end(out);
    }
    html_table_end(out);
}

static void run_section(FILE *out, const struct report *rep, const char *name, const char *location,
                        const struct bench_result *r)
{
    const struct run_view *v = report_view(rep, r);
    char id[64], heading[96], caption[200];
    snprintf(heading, sizeof heading, "The %s loader", name);
    html_section_begin(out, name, heading);
    fputs("<p>", out);
    html_bytes(out, location, strlen(location));
    html_textf(out,
               "%s: %llu samples per epoch at %u px (%s), %d threads, batch %u, "
               "%u samples read ahead",
               r->remote ? " (HTTP)" : "", (unsigned long long)r->samples_per_epoch, r->size,
               shard_fit_name(r->fit), r->threads, r->batch, r->queue_depth);
    if (r->step_ms > 0)
        html_textf(out, ", a consumer step of %.3g ms per batch", r->step_ms);
    if (r->remote)
        html_textf(out, ", a simulated round trip of %.3g ms before every request", r->rtt_ms);
    html_textf(out, ". Startup %.3f s; the first batch after %.3f s.", r->startup_seconds,
               r->first_batch_seconds);
    fputs("</p>\n", out);
    if (r->cold) {
        fputs("<p class=\"warn\">Cold: ", out);
        if (r->cold_dropped && r->cold_resident >= 0)
            html_textf(out,
                       "page cache dropped before each epoch (%.1f%% of the pages still "
                       "cached afterwards, worst epoch). ",
                       100 * r->cold_resident);
        html_text(out, r->cold_note);
        fputs("</p>\n", out);
    }
    if (report_errors(r)) {
        fputs("<p class=\"bad\">", out);
        html_textf(out, "%llu samples failed; the first: %s", (unsigned long long)report_errors(r),
                   r->first_error);
        fputs("</p>\n", out);
    }
    snprintf(id, sizeof id, "%s-phases", name);
    phase_table(out, id, r);
    if (r->cached) {
        snprintf(id, sizeof id, "%s-cache", name);
        cache_table(out, id, r);
    }

    snprintf(id, sizeof id, "%s-latency", name);
    const struct bench_phase *ph = report_headline(r);
    char mark[64];
    snprintf(mark, sizeof mark, "p99 %.3g ms (p50 %.3g)", ph->batch_p99 * REPORT_MS,
             ph->batch_p50 * REPORT_MS);
    snprintf(caption, sizeof caption,
             "Batch latency, every batch of every epoch: from asking for a batch until "
             "holding all of it%s (%s bins)",
             r->step_ms > 0 ? "" : " (without a consumer step: the interval between batches)",
             cli_scale_name(v->latency_ms.scale));
    struct chart_histogram lat = {.id = id,
                                  .caption = caption,
                                  .x_label = "ms",
                                  .y_label = "batches",
                                  .h = &v->latency_ms,
                                  .mark = ph->batch_p99 * REPORT_MS,
                                  .mark_label = mark};
    chart_histogram(out, &lat);

    if (r->step_ms > 0 && v->wait_count) {
        double *x = malloc(v->wait_count * sizeof *x), *y = malloc(v->wait_count * sizeof *y);
        if (x && y) {
            for (size_t i = 0; i < v->wait_count; i++) {
                x[i] = v->wait[i].seconds;
                y[i] = v->wait[i].wait_ms;
            }
            snprintf(id, sizeof id, "%s-wait", name);
            snprintf(caption, sizeof caption,
                     "The consumer's wait for each batch over the run (%.1f%% of the time "
                     "waited%s)",
                     100 * ph->wait_fraction,
                     v->wait_count < r->batch_count ? "; each point the mean of a slice" : "");
            struct chart_line c = {.id = id,
                                   .caption = caption,
                                   .x_label = "seconds since epoch 1 began",
                                   .y_label = "ms waited",
                                   .points = v->wait_count,
                                   .x = x,
                                   .y = y,
                                   .decimals = 3};
            chart_line(out, &c);
        }
        free(x);
        free(y);
    }
    snprintf(id, sizeof id, "%s-stages", name);
    fputs("<h3>Time per sample by stage</h3>\n", out);
    stage_table(out, id, r);
    html_section_end(out);
}

static void machine_row(FILE *out, const char *key, const char *name, const char *value)
{
    fputs("<tr data-key=\"", out);
    html_text(out, key);
    fputs("\">", out);
    html_cell(out, name);
    html_cell(out, value);
    html_row_end(out);
}

static void machine(FILE *out, const struct report *rep)
{
    const struct report_machine *m = &rep->machine;
    char buf[32];
    html_section_begin(out, "machine", "The machine and the command");
    static const char *const head[] = {"", ""};
    html_table_begin(out, "machine-table", head, 2);
    snprintf(buf, sizeof buf, "%d", m->cpus_available);
    machine_row(out, "cpus_available", "CPUs this process may use", buf);
    snprintf(buf, sizeof buf, "%ld", m->cpus_online);
    machine_row(out, "cpus_online", "CPUs of the host", buf);
    machine_row(out, "cpu", "CPU", m->cpu);
    machine_row(out, "system", "system", m->system);
    html_table_end(out);
    fputs("<pre id=\"command\">", out);
    html_text(out, rep->command_line);
    fputs("</pre>\n", out);
    html_section_end(out);
}

void report_write_html(const struct report *rep, FILE *out)
{
    static const char *const titles[] = {"shardbench files", "shardbench shards",
                                         "shardbench compare"};
    html_begin(out, titles[rep->command < CMD_ROOFLINE ? rep->command : 0], PROG);
    headline(out, rep);
    html_section_begin(out, "throughput-section", "Throughput");
    throughput(out, rep);
    stages(out, rep);
    html_section_end(out);
    const struct bench_result *res[2];
    const char *names[2], *locations[2];
    size_t n = runs(rep, res, names, locations);
    for (size_t i = 0; i < n; i++)
        run_section(out, rep, names[i], locations[i], res[i]);
    machine(out, rep);
    html_end(out, PROG);
}
