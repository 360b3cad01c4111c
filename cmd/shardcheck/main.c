/* shardcheck - prove that a shardify output is intact and is the same
 * experiment as its source.  The flow: options (options.c), shard_verify()
 * (the library), the report (report_text.c, report_json.c). */
#include <stdio.h>

#include "cli.h"
#include "options.h"
#include "report.h"
#include "shardkit.h"

#define PROG "shardcheck"

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
    struct report r = {o.dst, &o.verify, &verify};
    if (o.json)
        report_write_json(&r, stdout);
    else
        report_write_text(&r, stdout);
    rc = report_problem_total(&r) ? CLI_EXIT_FAILED : CLI_EXIT_OK;
    shard_verify_report_release(&verify);
    return rc;
}
