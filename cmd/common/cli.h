/* cli.h - what the command-line tools share: number parsing, progress
 * display, exit codes.  Library code never prints; this is the only place
 * that talks to the user besides each tool's main.c. */
#ifndef SHARDKIT_CLI_H
#define SHARDKIT_CLI_H

#include <stdint.h>
#include <stdio.h>

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILED = 1,
    CLI_EXIT_USAGE = 2,
};

/* Parse a whole decimal number in [min, max].  0 or -1. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Parse a whole decimal number, optionally negative, in [min, max].  0 or -1. */
int cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* Parse a byte size: a number with an optional K, M, G or T suffix (powers
 * of 1024; "KB", "KiB" also accepted).  0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);
/* "12.3 MB" style, into buf. */
const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size);

/* Most threads a tool accepts for --threads. */
#define CLI_MAX_THREADS 1024

/* Parse --threads: 0 and *out set, or the usage-error status (message printed). */
int cli_parse_threads(const char *prog, const char *arg, int *out);

/* The getopt cases every tool shares: -h/--help prints `usage` and exits 0;
 * `version_opt` prints the version and exits 0; a missing value and an
 * unknown option print a usage error.  Call it from the `default:` case;
 * returns the usage-error status. */
int cli_other_option(const char *prog, int opt, int version_opt, const char *usage,
                     char **argv);

/* Print "PROG: usage error: MESSAGE" and the try-help hint; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Progress on stderr: a redrawn bar when stderr is a terminal, plain lines
 * every few seconds when it is not. */
struct cli_progress {
    int tty;
    double last_line;
    int drawn;
};
void cli_progress_init(struct cli_progress *p);
void cli_progress_show(struct cli_progress *p, const char *phase, uint64_t done, uint64_t total,
                       double elapsed, const char *extra);
/* Finish the bar line (newline) if one was drawn. */
void cli_progress_end(struct cli_progress *p);

#endif
