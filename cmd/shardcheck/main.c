/* shardcheck - prove that a shardify output is intact and is the same
 * experiment as its source.  The flow: options (options.c), shard_verify()
 * (the library), what the dataset holds (summary.c, for --json and
 * --report), the report (report_text.c, report_json.c, report_html.c). */
#include <stdio.h>

#include "cli.h"
#include "options.h"
#include "report.h"
#include "shardkit.h"

#define PROG "shardcheck"

static void write_page(FILE *out, const void *report)
{
    report_write_html(report, out);
}

int main(int argc, char **argv)
{
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    struct shard_verify_report verify;
    struct shard_err err;
    shard_err_clear(&err);
    if (shard_verify(o.dst, &o.verify, &verify, &err)) {
        /* the checks could not run: DST, its manifest or SRC unreadable */
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        shard_verify_report_release(&verify);
        return CLI_EXIT_FAILED;
    }
    /* what the dataset holds, for the formats that show it (the text shows
     * the fields); a dataset whose manifest cannot be read has nothing to
     * show but its problems */
    struct dataset_summary summary;
    int summarize = o.json || o.report_file || verify.fields;
    int described = summarize && summary_load(&summary, o.dst) == 0;
    struct report r = {o.dst, &o.verify, &verify, described ? &summary : NULL};
    if (o.json)
        report_write_json(&r, stdout);
    else
        report_write_text(&r, stdout);
    rc = report_problem_total(&r) ? CLI_EXIT_FAILED : CLI_EXIT_OK;
    if (o.report_file && cli_write_file(PROG, o.report_file, write_page, &r))
        rc = CLI_EXIT_FAILED;
    if (summarize)
        summary_release(&summary);
    shard_verify_report_release(&verify);
    return rc;
}
