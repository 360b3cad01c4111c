/* report.h - what a shardify run reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream, so each format
 * shows the same facts: report_text.c for people (stderr), report_json.c
 * for programs (--json on stdout).  Another format (an HTML report for
 * `--report FILE.html`) is one more file defining one more report_writer,
 * called from main.c with the file it opened. */
#ifndef SHARDIFY_REPORT_H
#define SHARDIFY_REPORT_H

#include <stdio.h>

#include "shardkit.h"

struct report {
    const char *src;
    const char *dst;
    const struct shardify_options *options; /* what the run was asked */
    int status;                             /* shardify_run's result: 0 or a shard_status */
    const struct shard_err *err;            /* why, when status is not 0 */
    const struct shardify_summary *summary; /* the counts, as far as the run got */
};

typedef void report_writer(const struct report *r, FILE *out);

/* The error, or the summary line, the first rejects and any warning. */
report_writer report_write_text;
/* Only the warnings (what --quiet still shows). */
report_writer report_write_warnings;
/* One JSON object on one line (docs/guide/shardify.md, "The --json summary"). */
report_writer report_write_json;

/* shardify_options.progress: a bar or plain lines on stderr; `user` is a
 * struct cli_progress. */
void report_show_progress(const struct shardify_progress *p, void *user);

#endif
