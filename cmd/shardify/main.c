/* shardify - convert a folder or archive of images into zstd shards.
 * The flow: options (options.c), shardify_run() (the library), the report
 * (report_text.c, report_json.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "merge.h"
#include "options.h"
#include "report.h"
#include "shardkit.h"

#define PROG "shardify"

/* Seconds an interrupted run has to finish the samples under way; then it
 * ends without them, as a killed run would (resumable all the same).  Only
 * a thread blocked on a source file that never answers (a stalled network
 * filesystem) needs that long. */
#define INTERRUPT_GRACE_SECONDS 5

static volatile sig_atomic_t cancel_requested;

static void on_signal(int sig)
{
    (void)sig;
    __atomic_store_n(&cancel_requested, 1, __ATOMIC_RELAXED); /* read by the run's threads */
    alarm(INTERRUPT_GRACE_SECONDS);
    /* a second signal, of either kind, stops at once */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
}

static void on_grace_over(int sig)
{
    static const char msg[] = PROG ": " SHARDIFY_INTERRUPTED "\n";
    (void)sig;
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(CLI_EXIT_FAILED);
}

/* The first SIGINT or SIGTERM asks the run to stop: it ends as interrupted,
 * resumable, within INTERRUPT_GRACE_SECONDS.  Not signal(), which restarts
 * interrupted system calls (SA_RESTART): a system call the run is blocked
 * in (an open on a stalled network filesystem) must fail with EINTR rather
 * than wait again, so that the run ends at once. */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_grace_over;
    sigaction(SIGALRM, &sa, NULL);
}

/* The run is over: a signal now stops the report as it stops any tool, and
 * no write of it is left half done by an EINTR. */
static void release_signals(void)
{
    alarm(0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
}

/* One run of SRC (the split o->run.split of it) into dst, and its report. */
static int convert(struct options *o, const char *dst, struct cli_progress *progress)
{
    struct shardify_summary summary;
    struct shard_err err;
    shard_err_clear(&err);
    int rc = shardify_run(o->src, dst, &o->run, &summary, &err);
    cli_progress_end(progress);
    struct report r = {o->src, dst, &o->run, rc, &err, &summary};
    if (rc || !o->quiet)
        report_write_text(&r, stderr);
    else
        report_write_warnings(&r, stderr);
    if (o->json)
        report_write_json(&r, stdout);
    shardify_summary_release(&summary);
    return rc ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit("shardify");
    if (argc > 1 && !strcmp(argv[1], "merge")) /* a SRC named so is given as ./merge */
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
    catch_signals();

    if (!o.split_count) {
        rc = convert(&o, o.dst, &progress);
    } else { /* SRC laid out in splits: each into DST/NAME, one after the other */
        rc = CLI_EXIT_OK;
        if (strncmp(o.dst, "s3://", 5) && mkdir(o.dst, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "%s: cannot create '%s': %s\n", PROG, o.dst, strerror(errno));
            rc = CLI_EXIT_FAILED;
        }
        for (size_t i = 0; !rc && i < o.split_count; i++) {
            char dst[4096];
            snprintf(dst, sizeof dst, "%s/%s", o.dst, o.splits[i]);
            if (!(rc = options_for_split(&o, o.splits[i])))
                rc = convert(&o, dst, &progress);
        }
    }
    release_signals();
    options_release(&o);
    return rc;
}
