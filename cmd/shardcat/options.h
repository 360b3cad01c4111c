/* options.h - shardcat's command line: the usage text and its parsing. */
#ifndef SHARDCAT_OPTIONS_H
#define SHARDCAT_OPTIONS_H

#include <stdint.h>

struct options {
    const char *dst;
    const char *out; /* --out DIR (checked: out_dir_check) */
    char **keys;     /* KEY... */
    int key_count;
    uint64_t limit; /* UINT64_MAX: no limit */
    int threads;    /* 0: the CPUs this process may use */
    int draw;       /* --draw: boxes and mask outlines drawn on the PNGs */
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK, or CLI_EXIT_USAGE with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

#endif
