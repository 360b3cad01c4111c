/* report.h - what a shardcheck run reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream, so each format
 * shows the same facts: report_text.c for people, report_json.c for
 * programs (--json).  Another format (an HTML report for `--report
 * FILE.html`) is one more file defining one more report_writer, called from
 * main.c with the file it opened. */
#ifndef SHARDCHECK_REPORT_H
#define SHARDCHECK_REPORT_H

#include <stdio.h>

#include "shardkit.h"

struct report {
    const char *dst;
    const struct shard_verify_options *options;  /* which passes ran */
    const struct shard_verify_report *verify;    /* what they found */
};

typedef void report_writer(const struct report *r, FILE *out);

/* Verified or FAILED, the problems (the first 100), each pass's rate. */
report_writer report_write_text;
/* One JSON object, every problem (README.md, shardcheck's --json). */
report_writer report_write_json;

/* What the writers share (report.c). */
/* Problems found, kept in the report or not; 0: verified. */
uint64_t report_problem_total(const struct report *r);
/* amount / seconds; 0 when no time passed. */
double report_per_second(double amount, double seconds);

#define REPORT_GB 1e9

#endif
