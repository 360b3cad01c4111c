/* options.h - shardcheck's command line: the usage text and its parsing. */
#ifndef SHARDCHECK_OPTIONS_H
#define SHARDCHECK_OPTIONS_H

#include "shardkit.h"

struct options {
    struct shard_verify_options verify; /* what shard_verify takes */
    const char *dst;
    int json;                /* --json: the report as JSON on stdout */
    const char *report_file; /* --report: the report as an HTML page */
    /* --part I/N (or auto) and --parts: part of parts; part_value NULL for
     * a whole check */
    const char *part_value;
    uint64_t parts_option;
    uint32_t part, parts;
    const char *result; /* --result PATH */
    /* --combine: the results, files or directories of them */
    int combine;
    const char *const *results;
    size_t result_count;
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
