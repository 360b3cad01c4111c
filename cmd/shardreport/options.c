/* options.c - shardreport's command line (see options.h). */
#include "options.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"

#define PROG "shardreport"

static const char usage_text[] =
    "Usage: shardreport nightly ROOT [--out FILE] [--json]\n"
    "Render the history of the nightly job (shardkit-nightly)\n"
    "as one self-contained HTML page: a row per run record in ROOT/runs (status,\n"
    "samples, rejected, time, the run's shardcheck report and log) and small trend\n"
    "charts of samples, rejects and time.  Nothing is fetched, no script runs.\n"
    "\n"
    "  --out FILE   write the page to FILE (default: ROOT/index.html, replaced\n"
    "               atomically; the page's links are relative to ROOT)\n"
    "  --json       print the rows as one JSON object on stdout (the page's numbers)\n"
    "  -h, --help   show this help\n"
    "  --version    show the version\n"
    "\n"
    "A run record that cannot be read is a row saying why, and the exit status\n"
    "is 1 (the page is still written).\n"
    "\n"
    "Exit status (the same for every shardkit tool): 0 the page was written from\n"
    "every record; 1 a record or ROOT/runs could not be read, or the page could\n"
    "not be written; 2 usage error, found before any work.\n";

enum { OPT_OUT = CLI_FIRST_LONG_OPTION, OPT_JSON, OPT_VERSION };

static const struct option long_options[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int parse_option(int opt, void *ctx, char **argv)
{
    struct options *o = ctx;
    switch (opt) {
    case OPT_OUT: o->out = optarg; break;
    case OPT_JSON: o->json = 1; break;
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

int options_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    int rc = cli_parse_options(argc, argv, long_options, parse_option, o);
    if (rc)
        return rc;
    int n = argc - optind;
    if (n < 1)
        return cli_usage_error(PROG, "missing command: nightly");
    if (strcmp(argv[optind], "nightly"))
        return cli_usage_error(PROG, "unknown command '%s': nightly", argv[optind]);
    if (n != 2)
        return cli_usage_error(PROG, "'nightly' takes one ROOT, got %d operands", n - 1);
    o->root = argv[optind + 1];
    if (o->out)
        return cli_check_output(PROG, "--out", o->out);
    return CLI_EXIT_OK;
}
