/* report.h - what a shardbench run reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream, so each format
 * shows the same facts: report_text.c for people on a terminal,
 * report_json.c for programs (--json), report_html.c for people reading a
 * page (--report FILE.html: throughput files against shards, where each
 * sample's time goes, batch latencies, the consumer's wait over time, the
 * machine and the command).  What the JSON and the HTML report show beyond
 * the results (the latency histogram, the wait over time, the machine, the
 * command) is computed once, by report_prepare(), for both.  (roofline.c
 * reports the roofline subcommand the same way, from its own result.) */
#ifndef SHARDBENCH_REPORT_H
#define SHARDBENCH_REPORT_H

#include <stdio.h>

#include "histogram.h"
#include "options.h"
#include "engine/bench.h"

/* Points of the wait over time at most; more batches are averaged into
 * this many equal slices of the run. */
#define REPORT_WAIT_POINTS 300
/* Bins of the batch latency histogram, at most. */
#define REPORT_LATENCY_BINS 30

/* The consumer's wait for its batches around time t. */
struct wait_point {
    double seconds;   /* from the start of epoch 1: a batch's start, or a slice's middle */
    double wait_ms;   /* a batch's latency, or the mean of the slice's batches */
    uint32_t batches; /* batches it stands for */
};

/* What a run shows beyond its result. */
struct run_view {
    struct cli_histogram latency_ms; /* every batch's latency, in ms */
    struct wait_point *wait;         /* with a consumer step (step_ms > 0), else NULL */
    size_t wait_count;
};

/* The machine a run measured. */
struct report_machine {
    int cpus_available;      /* the CPUs this process may use (affinity, quota) */
    long cpus_online;        /* the host's */
    char cpu[128];           /* the CPU model, or "" */
    char system[3 * 65 + 3]; /* kernel name, release and machine (uname) */
};

struct report {
    enum command command; /* files, shards or compare */
    const char *src;      /* as shown: a URL's password redacted */
    const char *dst;
    const struct bench_result *files;  /* the files run (files, compare) */
    const struct bench_result *shards; /* the shards run (shards, compare) */
    const char *command_line;          /* the exact command, quoted for a shell
                                        * (cli_command_line, before getopt permutes it) */
    /* set by report_prepare */
    struct report_machine machine;
    struct run_view files_view, shards_view;
};

/* Fill the machine and the runs' views of *r (whose results are set).  0,
 * or -1 when out of memory.  Release with report_release (in both cases). */
int report_prepare(struct report *r);
void report_release(struct report *r);

typedef void report_writer(const struct report *r, FILE *out);

/* Per run: rates, stages, latency, bytes; compare adds the ratio. */
report_writer report_write_text;
/* One JSON object (compare: both runs and the ratio). */
report_writer report_write_json;
/* A self-contained HTML page (--report FILE). */
report_writer report_write_html;

/* One JSON line per first-epoch sample (--digests): key, width, height,
 * xxh3 of the pixels. */
void report_write_digests(const struct bench_result *r, FILE *out);

/* What the writers share (report.c). */
/* The phase a run is summed up by: the steady epochs, or the first alone. */
const struct bench_phase *report_headline(const struct bench_result *r);
/* compare: shards/files samples per second, and which epochs it compares. */
double report_ratio(const struct report *r);
const char *report_ratio_basis(const struct report *r);
/* The single run of files or shards. */
const struct bench_result *report_single(const struct report *r, const char **location);
/* Samples that failed in a run. */
uint64_t report_errors(const struct bench_result *r);
/* The view of run `result` (files or shards). */
const struct run_view *report_view(const struct report *r, const struct bench_result *result);
/* The stages worth showing for a mode (no decompress for files, no resize
 * for shards). */
int report_stage_shown(enum bench_mode m, enum bench_stage s);
/* A phase's time per sample in a stage, ms. */
double report_stage_ms(const struct bench_phase *ph, enum bench_stage s);

#define REPORT_MS 1e3

#endif
