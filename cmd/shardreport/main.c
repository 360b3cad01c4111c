/* shardreport - the nightly job's index page: a row per run record in
 * ROOT/runs and trend charts.  The flow: options (options.c), the records
 * (runs.c), the page (report_html.c; --json: report_json.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "report.h"

#define PROG "shardreport"
#define INDEX "index.html"

static void write_page(FILE *out, const void *report)
{
    report_write_html(report, out);
}

/* ROOT/index.html, replaced atomically: written as a new temporary in ROOT
 * (never through a link), flushed to disk, renamed over the old page. */
static int write_index(const struct report *r)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", INDEX, (long)getpid());
    int root = open(r->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1; /* nofollow: named */
    FILE *f = NULL;
    if (root < 0 ||
        (fd = openat(root, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0 ||
        !(f = fdopen(fd, "w")))
        goto fail;
    report_write_html(r, f);
    if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0)
        goto fail;
    int closed = fclose(f);
    f = NULL;
    fd = -1;
    if (closed != 0 || renameat(root, tmp, root, INDEX) != 0)
        goto fail;
    close(root);
    return CLI_EXIT_OK;
fail:
    fprintf(stderr, "%s: cannot write '%s/%s': %s\n", PROG, r->root, INDEX, strerror(errno));
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    if (root >= 0) {
        unlinkat(root, tmp, 0);
        close(root);
    }
    return CLI_EXIT_FAILED;
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit(PROG);
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    struct runs runs;
    char why[512];
    if (runs_load(&runs, o.root, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", PROG, why);
        runs_release(&runs);
        return CLI_EXIT_FAILED;
    }
    struct report r = {o.root, &runs};
    rc = o.out ? cli_write_file(PROG, o.out, write_page, &r) : write_index(&r);
    if (o.json)
        report_write_json(&r, stdout);
    else
        report_write_text(&r, stdout);
    for (size_t i = 0; i < runs.count; i++)
        if (runs.rows[i].error) {
            fprintf(stderr, "%s: cannot read run record '%s/runs/%s.json': %s\n", PROG, o.root,
                    runs.rows[i].run, runs.rows[i].error);
            rc = CLI_EXIT_FAILED;
        }
    runs_release(&runs);
    return rc;
}
