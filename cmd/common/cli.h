/* cli.h - what the command-line tools share: number parsing, option
 * errors, progress display, exit codes.  Library code never prints; the
 * tools talk to the user through these helpers and their report writers
 * (cmd/<tool>/report_*.c). */
#ifndef SHARDKIT_CLI_H
#define SHARDKIT_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* The exit statuses of every tool; docs/reference/exit-status.md is the
 * one table the tools' --help texts summarise. */
enum cli_exit {
    CLI_EXIT_OK = 0,     /* everything asked for was done */
    CLI_EXIT_FAILED = 1, /* the work started and did not fully succeed: a failed run,
                          * a dataset not verified, an item not written, input that
                          * cannot be read (each named in a message) */
    CLI_EXIT_USAGE = 2,  /* the command line is wrong; found before any work starts,
                          * nothing was read or written */
};

/* getopt values of long options without a short form start here, above
 * every character a short option can be. */
#define CLI_FIRST_LONG_OPTION 256

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

/* Handle one option `opt` (optarg set) of a getopt_long loop: CLI_EXIT_OK,
 * or an exit status that stops the parsing. */
typedef int cli_option_handler(int opt, void *ctx, char **argv);

/* Run getopt_long over argv (long options only, besides -h) and call `one`
 * for every option, in order; stops at the first status that is not
 * CLI_EXIT_OK and returns it.  Operands are left from argv[optind] on. */
int cli_parse_options(int argc, char **argv, const struct option *longopts, cli_option_handler *one,
                      void *ctx);

/* The getopt cases every tool shares: -h/--help prints `usage` and exits 0;
 * `version_opt` prints the version and exits 0; a missing value, a value
 * given to an option that takes none, an unknown or an ambiguous option
 * print a usage error naming the argument as the user wrote it ("-z" of
 * "-zz", "--bogus").  Call it from the `default:` case of a getopt_long loop
 * over `longopts`; returns the usage-error status. */
int cli_other_option(const char *prog, int opt, int version_opt, const char *usage,
                     const struct option *longopts, char **argv);

/* An output file named by `option` must be writable before any work starts
 * (an hour of work is not spent on a result that cannot be written):
 * an existing file is opened for writing (not truncated), a missing one is
 * created and removed again.  CLI_EXIT_OK, or the usage-error status with
 * "OPTION: cannot write 'PATH': REASON" printed. */
int cli_check_output(const char *prog, const char *option, const char *path);

/* Write a file the user asked for (a report, digests): open `path` for
 * writing (replacing it), call write(out, ctx), close.  CLI_EXIT_OK, or
 * CLI_EXIT_FAILED with "PROG: cannot write 'PATH': REASON" printed. */
int cli_write_file(const char *prog, const char *path, void (*write)(FILE *out, const void *ctx),
                   const void *ctx);

/* The command line argv[0..argc) as a shell reads it back: words of plain
 * characters as they are, others in single quotes, and words holding bytes
 * that are not printable UTF-8 (control bytes, bytes that are not UTF-8, and
 * characters that show as nothing, as a space, or reorder the text: the
 * white space, default-ignorable and bidirectional controls of Unicode) as
 * $'...' with \xNN.  A URL's password is redacted (shardx_redact_urls), so
 * the line holds none.  Malloc'd, or NULL. */
char *cli_command_line(int argc, char *const *argv);

/* Call first in main: at exit, stdout is flushed and closed, and when that
 * or any write to it failed (a full disk, a closed pipe's EIO, /dev/full),
 * "PROG: cannot write standard output: REASON" is printed and the exit
 * status is 1: a tool never exits 0 when its output was lost. */
void cli_check_stdout_at_exit(const char *prog);

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
