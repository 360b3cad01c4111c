/* options.h - shardify's command line: the usage text and its parsing. */
#ifndef SHARDIFY_OPTIONS_H
#define SHARDIFY_OPTIONS_H

#include "shardkit.h"

struct options {
    struct shardify_options run; /* what shardify_run takes */
    const char *src;
    const char *dst;
    int json;                                 /* --json: the summary as JSON on stdout */
    int quiet;                                /* --quiet: no progress or summary on stderr */
    const char *fields[SHARD_FIELDS_MAX + 1]; /* --field, in order (run.fields points here) */
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK; CLI_EXIT_USAGE, or CLI_EXIT_FAILED for a --labels
 * CSV file that cannot be used, with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
