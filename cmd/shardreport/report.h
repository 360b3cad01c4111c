/* report.h - what shardreport reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream: report_html.c the
 * nightly index page (a row per run, trend charts), report_json.c the same
 * rows for programs (--json), report_text.c a table on stdout. */
#ifndef SHARDREPORT_REPORT_H
#define SHARDREPORT_REPORT_H

#include <stdio.h>

#include "runs.h"

struct report {
    const char *root;
    const struct runs *runs;
};

typedef void report_writer(const struct report *r, FILE *out);

report_writer report_write_text;
report_writer report_write_json;
report_writer report_write_html;

/* Whether a row is a run that failed (not published; unreadable included). */
int report_run_failed(const struct run_row *row);

#endif
