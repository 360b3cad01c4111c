/* options.h - shardbench's command line: the usage text and its parsing. */
#ifndef SHARDBENCH_OPTIONS_H
#define SHARDBENCH_OPTIONS_H

#include "engine/bench.h"

enum command { CMD_FILES, CMD_SHARDS, CMD_COMPARE, CMD_ROOFLINE };

struct options {
    enum command command;
    const char *src;            /* files, compare */
    const char *dst;            /* shards, compare */
    struct bench_options bench; /* what bench_run takes */
    int size_given;             /* --size and --fit given: compare keeps them */
    int fit_given;
    const char *keys_file;                    /* --keys */
    const char *trace_file;                   /* --trace (writable: checked here) */
    const char *digests_file;                 /* --digests (writable: checked here) */
    int json;                                 /* --json: the results as JSON on stdout */
    const char *report_file;                  /* --report: the results as an HTML page (writable:
                                               * checked here) */
    const char *bandwidth, *intensity, *peak; /* roofline, not yet parsed */
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
