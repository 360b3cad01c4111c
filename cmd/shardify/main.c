/* shardify - convert a folder or archive of images into zstd shards.
 * The flow: options (options.c), shardify_run() (the library), the report
 * (report_text.c, report_json.c). */
#include <signal.h>
#include <stdio.h>

#include <string.h>

#include "cli.h"
#include "merge.h"
#include "options.h"
#include "report.h"
#include "shardkit.h"

static volatile sig_atomic_t cancel_requested;

static void on_signal(int sig)
{
    cancel_requested = 1;
    /* a second signal stops at once */
    signal(sig, SIG_DFL);
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit("shardify");
    if (argc > 1 && !strcmp(argv[1], "merge"))  /* a SRC named so is given as ./merge */
        return merge_main(argc - 1, argv + 1);
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    struct cli_progress progress;
    cli_progress_init(&progress);
    o.run.cancel = &cancel_requested;
    if (!o.quiet) {
        o.run.progress = report_show_progress;
        o.run.progress_user = &progress;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    struct shardify_summary summary;
    struct shard_err err;
    shard_err_clear(&err);
    rc = shardify_run(o.src, o.dst, &o.run, &summary, &err);
    cli_progress_end(&progress);
    struct report r = {o.src, o.dst, &o.run, rc, &err, &summary};
    if (rc || !o.quiet)
        report_write_text(&r, stderr);
    else
        report_write_warnings(&r, stderr);
    if (o.json)
        report_write_json(&r, stdout);
    shardify_summary_release(&summary);
    return rc ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
