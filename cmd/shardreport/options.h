/* options.h - shardreport's command line: the usage text and its parsing. */
#ifndef SHARDREPORT_OPTIONS_H
#define SHARDREPORT_OPTIONS_H

struct options {
    const char *root; /* the nightly job's ROOT */
    const char *out;  /* --out FILE, or NULL: ROOT/index.html, written atomically */
    int json;         /* --json: the index as JSON on stdout */
};

/* Fill *o from the command line.  -h and --version print and exit.
 * CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
