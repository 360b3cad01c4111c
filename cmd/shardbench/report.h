/* report.h - what a shardbench run reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream, so each format
 * shows the same facts: report_text.c for people, report_json.c for
 * programs (--json).  Another format (an HTML report for `--report
 * FILE.html`) is one more file defining one more report_writer, called from
 * main.c with the file it opened.  (roofline.c reports the roofline
 * subcommand the same way, from its own result.) */
#ifndef SHARDBENCH_REPORT_H
#define SHARDBENCH_REPORT_H

#include <stdio.h>

#include "options.h"
#include "shardkit.h"

struct report {
    enum command command;                     /* files, shards or compare */
    const char *src;
    const char *dst;
    const struct shard_bench_result *files;   /* the files run (files, compare) */
    const struct shard_bench_result *shards;  /* the shards run (shards, compare) */
};

typedef void report_writer(const struct report *r, FILE *out);

/* Per run: rates, stages, latency, bytes; compare adds the ratio. */
report_writer report_write_text;
/* One JSON object (compare: both runs and the ratio). */
report_writer report_write_json;

/* One JSON line per first-epoch sample (--digests): key, width, height,
 * xxh3 of the pixels. */
void report_write_digests(const struct shard_bench_result *r, FILE *out);

/* What the writers share (report.c). */
/* The phase a run is summed up by: the steady epochs, or the first alone. */
const struct shard_bench_phase *report_headline(const struct shard_bench_result *r);
/* compare: shards/files samples per second, and which epochs it compares. */
double report_ratio(const struct report *r);
const char *report_ratio_basis(const struct report *r);
/* The single run of files or shards. */
const struct shard_bench_result *report_single(const struct report *r, const char **location);
/* Samples that failed in a run. */
uint64_t report_errors(const struct shard_bench_result *r);

#define REPORT_MS 1e3

#endif
