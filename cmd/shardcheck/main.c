/* shardcheck - prove that a shardify output is intact and is the same
 * experiment as its source.  The flow: options (options.c), shard_verify()
 * (the library) or, for a check in parts, shard_verify_part() in each part
 * (parts.c) and shard_verify_combine() at the end, what the dataset holds
 * (summary.c, for --json and --report), a sample of its images
 * (contact_sheet.c, for --report), the report (report_text.c,
 * report_json.c, report_html.c). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "options.h"
#include "parts.h"
#include "report.h"
#include "shardkit.h"
#include "shardx.h"

#define PROG "shardcheck"

static void write_page(FILE *out, const void *report)
{
    report_write_html(report, out);
}

/* Check DST whole, or combine its parts' results (--combine); report. */
static int check(struct options *o, const char *dst, const char *source)
{
    struct shard_verify_report verify;
    struct shard_err err;
    shard_err_clear(&err);
    /* the checks cannot run when DST, its manifest or SRC cannot be read
     * (nor, combined, when the results are not every part's): that is said
     * on stderr, and --json and --report still say it too */
    int unchecked = o->combine ? combine_results(o, &verify, &err)
                               : shard_verify(o->dst, &o->verify, &verify, &err) != 0;
    if (unchecked)
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
    if (o->combine)
        o->verify.deep = verify.deep_ran; /* the report shows the passes the parts ran */
    /* what the dataset holds, for the formats that show it (the text shows
     * the fields); a dataset whose manifest cannot be read has nothing to
     * show but its problems */
    struct dataset_summary summary;
    int summarize = !unchecked && (o->json || o->report_file || verify.fields);
    int described = summarize && summary_load(&summary, o->dst, &verify) == 0;
    /* the page shows a sample of the stored images; a dataset that cannot be
     * opened for it shows none (the verdict says what is wrong with it) */
    struct contact_sheet sheet;
    char *sheet_why = NULL;
    int sheet_loaded = !unchecked && o->report_file;
    if (sheet_loaded && contact_sheet_load(&sheet, o->dst, &sheet_why))
        fprintf(stderr, "%s: no stored images on the page: %s\n", PROG,
                sheet_why ? sheet_why : "out of memory");
    struct report r = {dst,
                       source,
                       &o->verify,
                       &verify,
                       described ? &summary : NULL,
                       unchecked ? err.msg : NULL,
                       sheet_loaded && !sheet_why ? &sheet : NULL};
    if (o->json)
        report_write_json(&r, stdout);
    else if (!unchecked)
        report_write_text(&r, stdout);
    int rc = report_verified(&r) ? CLI_EXIT_OK : CLI_EXIT_FAILED;
    if (o->report_file && cli_write_file(PROG, o->report_file, write_page, &r))
        rc = CLI_EXIT_FAILED;
    if (summarize)
        summary_release(&summary);
    if (sheet_loaded)
        contact_sheet_release(&sheet);
    free(sheet_why);
    shard_verify_report_release(&verify);
    return rc;
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit(PROG);
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    /* what reports and messages name: never a password given in a URL */
    char *dst = shardx_redact_urls(o.dst);
    char *source = o.verify.source ? shardx_redact_urls(o.verify.source) : NULL;
    if (!dst || (o.verify.source && !source)) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = CLI_EXIT_FAILED;
    } else if (o.part_value) {
        rc = check_part(&o, dst);
    } else {
        rc = check(&o, dst, source);
    }
    free(dst);
    free(source);
    return rc;
}
