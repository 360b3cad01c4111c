/* options.h - shardcheck's command line: the usage text and its parsing. */
#ifndef SHARDCHECK_OPTIONS_H
#define SHARDCHECK_OPTIONS_H

#include "shardkit.h"

struct options {
    struct shard_verify_options verify; /* what shard_verify takes */
    const char *dst;
    int json;                /* --json: the report as JSON on stdout */
    const char *report_file; /* --report: the report as an HTML page */
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
