/* report.h - what a shardcheck run reports, and the writers that present it.
 *
 * Every writer takes the one struct report and a stream, so each format
 * shows the same facts: report_text.c for people on a terminal,
 * report_json.c for programs (--json), report_html.c for people reading a
 * page (--report FILE.html: the verdict, then what the dataset holds, in
 * charts).  The JSON and the HTML report are written from the same numbers,
 * including the dataset summary (summary.h) both of them show. */
#ifndef SHARDCHECK_REPORT_H
#define SHARDCHECK_REPORT_H

#include <stdio.h>

#include "contact_sheet.h"
#include "shardkit.h"
#include "summary.h"

struct report {
    const char *dst;                            /* DST as shown: a URL's password redacted */
    const char *source;                         /* SRC as shown, or NULL: no --source */
    const struct shard_verify_options *options; /* which passes ran */
    const struct shard_verify_report *verify;   /* what they found */
    const struct dataset_summary *dataset;      /* what DST holds (--json, --report),
                                                 * or NULL: not read, or no manifest */
    const char *error;                          /* why the checks could not run at all
                                                 * (DST or SRC unreadable), or NULL */
    const struct contact_sheet *sheet;          /* a sample of the stored images
                                                 * (--report), or NULL */
};

typedef void report_writer(const struct report *r, FILE *out);

/* Verified or FAILED, the problems (the first 100), each pass's rate. */
report_writer report_write_text;
/* One JSON object, every problem (docs/guide/shardcheck.md, --json). */
report_writer report_write_json;
/* A self-contained HTML page: verdict, problems, counts, a contact sheet of
 * stored images, rejects, labels source against shards, stored sizes,
 * shards, visitation, fidelity, rates and the options the dataset was made
 * with (--report FILE). */
report_writer report_write_html;

/* What the writers share (report.c). */
/* Problems found, kept in the report or not. */
uint64_t report_problem_total(const struct report *r);
/* Whether the dataset is verified: the checks ran and found no problem. */
int report_verified(const struct report *r);
/* amount / seconds; 0 when no time passed. */
double report_per_second(double amount, double seconds);
/* Whether label tally i is shown: a label of the manifest, or the unlabeled
 * samples when any count has some. */
int report_label_shown(const struct report *r, uint32_t i);
/* Whether the counts of label tally i disagree (manifest, shards, and SRC
 * when labels were checked). */
int report_label_differs(const struct report *r, uint32_t i);

#define REPORT_GB 1e9

#endif
