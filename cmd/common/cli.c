/* cli.c - shared command-line helpers (see cli.h). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>
#include <unistd.h>

#include "shardkit.h"
#include "shardx.h"

#define PLAIN_PROGRESS_SECONDS 5.0
#define BAR_WIDTH 30

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || !*s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    return shardx_size_parse(s, out) ? -1 : 0;
}

const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    return shardx_size_format(bytes, buf, size);
}

int cli_write_file(const char *prog, const char *path, void (*write)(FILE *out, const void *ctx),
                   const void *ctx)
{
    FILE *f = fopen(path, "w"); /* nofollow: the output file the user named */
    if (!f) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", prog, path, strerror(errno));
        return CLI_EXIT_FAILED;
    }
    write(f, ctx);
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", prog, path, strerror(errno));
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

/* One word of a command line, quoted as needed, onto f. */
static void quote_word(FILE *f, const char *w)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_@%+=:,./-";
    size_t len = strlen(w);
    if (len && strspn(w, plain) == len) {
        fputs(w, f);
        return;
    }
    /* a character that shows as nothing, as a space or as something else,
     * or reorders the text around it (shardx_utf8_shown_len), is shown as
     * the bytes it is: what a reader sees, and copies, is what runs */
    int printable = 1;
    for (size_t i = 0; i < len && printable;) {
        size_t n = shardx_utf8_shown_len((const unsigned char *)w + i, len - i);
        printable = n != 0;
        i += n;
    }
    if (printable) {
        fputc('\'', f);
        for (const char *p = w; *p; p++) {
            if (*p == '\'')
                fputs("'\\''", f); /* end the quote, a quoted quote, quote again */
            else
                fputc(*p, f);
        }
        fputc('\'', f);
        return;
    }
    fputs("$'", f);
    for (size_t i = 0; i < len;) {
        size_t n = shardx_utf8_shown_len((const unsigned char *)w + i, len - i);
        if (n == 1 && (w[i] == '\'' || w[i] == '\\'))
            fprintf(f, "\\%c", w[i]);
        else if (n)
            fwrite(w + i, 1, n, f);
        else
            fprintf(f, "\\x%02x", (unsigned char)w[i]);
        i += n ? n : 1;
    }
    fputc('\'', f);
}

char *cli_command_line(int argc, char *const *argv)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    int failed = 0;
    for (int i = 0; i < argc && !failed; i++) {
        char *word = shardx_redact_urls(argv[i]); /* a password reaches no report */
        if (i)
            fputc(' ', f);
        if (word)
            quote_word(f, word);
        failed = !word;
        free(word);
    }
    if (fclose(f) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}

/* The program the stdout check names (cli_check_stdout_at_exit): state an
 * atexit handler can reach, set once before any output. */
static const char *stdout_prog;

/* Flush and close stdout; when that, or any write before it, failed, say
 * so and exit 1 (as coreutils' close_stdout does): output that was lost is
 * a failure, never an exit 0. */
static void close_stdout(void)
{
    int failed_before = ferror(stdout);
    errno = 0;
    int flushed = fflush(stdout) == 0;
    int why = flushed ? 0 : errno;
    int closed = fclose(stdout) == 0;
    if (!closed && !why)
        why = errno;
    /* a stdout closed by the caller (>&-) to which nothing was written is fine */
    if (!failed_before && flushed && (closed || why == EBADF))
        return;
    if (why)
        fprintf(stderr, "%s: cannot write standard output: %s\n", stdout_prog, strerror(why));
    else
        fprintf(stderr, "%s: cannot write standard output: a write failed\n", stdout_prog);
    _exit(CLI_EXIT_FAILED);
}

void cli_check_stdout_at_exit(const char *prog)
{
    stdout_prog = prog;
    atexit(close_stdout);
}

int cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
    return CLI_EXIT_USAGE;
}

int cli_parse_threads(const char *prog, const char *arg, int *out)
{
    uint64_t v;
    if (cli_parse_u64(arg, 1, CLI_MAX_THREADS, &v))
        return cli_usage_error(prog, "--threads: '%s' is not a number in 1..%d", arg,
                               CLI_MAX_THREADS);
    *out = (int)v;
    return CLI_EXIT_OK;
}

int cli_parse_options(int argc, char **argv, const struct option *longopts, cli_option_handler *one,
                      void *ctx)
{
    int opt, rc;
    opterr = 0; /* the messages are ours (cli_other_option) */
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
        if ((rc = one(opt, ctx, argv)) != CLI_EXIT_OK)
            return rc;
    return CLI_EXIT_OK;
}

/* The long option whose getopt value is `val`, or NULL. */
static const struct option *long_option(const struct option *longopts, int val)
{
    for (const struct option *o = longopts; o && o->name; o++)
        if (o->val == val)
            return o;
    return NULL;
}

/* "--size, --shard-size, --shuffle-seed": the long options that `arg`
 * (without its "--" and any "=value") abbreviates.  Returns how many. */
static int abbreviated(const struct option *longopts, const char *arg, char *list, size_t size)
{
    size_t len = strcspn(arg, "=");
    int n = 0;
    list[0] = '\0';
    for (const struct option *o = longopts; o && o->name; o++) {
        if (strncmp(o->name, arg, len) != 0)
            continue;
        size_t used = strlen(list);
        snprintf(list + used, size - used, "%s--%s", n ? ", " : "", o->name);
        n++;
    }
    return n;
}

int cli_other_option(const char *prog, int opt, int version_opt, const char *usage,
                     const struct option *longopts, char **argv)
{
    if (opt == 'h') {
        fputs(usage, stdout);
        exit(CLI_EXIT_OK);
    }
    if (opt == version_opt) {
        printf("%s %s\n", prog, SHARDKIT_VERSION);
        exit(CLI_EXIT_OK);
    }
    /* getopt leaves the option it stopped at in optopt: a short option's
     * character, a long option's value, or 0 for a long option it does not
     * know.  argv[optind - 1] is the argument itself only for a long option:
     * inside a cluster of short options ("-zz") optind has not moved on yet,
     * and GNU getopt may have stepped over operands to get there. */
    const char *arg = argv[optind - 1];
    int is_long = optopt == 0 || optopt >= CLI_FIRST_LONG_OPTION ||
                  (optopt == 'h' && !strncmp(arg, "--", 2));
    if (!is_long)
        return cli_usage_error(prog,
                               opt == ':' ? "option '-%c' needs a value" : "unknown option '-%c'",
                               optopt);
    const struct option *known = optopt ? long_option(longopts, optopt) : NULL;
    if (opt == ':')
        return cli_usage_error(prog, "option '--%s' needs a value", known ? known->name : arg + 2);
    if (known)
        return cli_usage_error(prog, "option '--%s' takes no value (got '%s')", known->name, arg);
    char list[512];
    if (!strncmp(arg, "--", 2) && abbreviated(longopts, arg + 2, list, sizeof list) > 1)
        return cli_usage_error(prog, "option '%s' is ambiguous: it could be %s", arg, list);
    return cli_usage_error(prog, "unknown option '%s'", arg);
}

int cli_check_output(const char *prog, const char *option, const char *path)
{
    /* O_NONBLOCK: a FIFO without a reader is an error, not a hang */
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* nofollow: the user named it */
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644); /* nofollow: named */
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0)
        return cli_usage_error(prog, "%s: cannot write '%s': %s", option, path, strerror(errno));
    close(fd);
    return CLI_EXIT_OK;
}

void cli_progress_init(struct cli_progress *p)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO);
}

void cli_progress_show(struct cli_progress *p, const char *phase, uint64_t done, uint64_t total,
                       double elapsed, const char *extra)
{
    double rate = elapsed > 0 ? done / elapsed : 0;
    if (!p->tty) {
        if (elapsed - p->last_line < PLAIN_PROGRESS_SECONDS)
            return;
        p->last_line = elapsed;
        if (total)
            fprintf(stderr, "%s: %llu/%llu (%.0f%%), %.0f/s, %s\n", phase, (unsigned long long)done,
                    (unsigned long long)total, 100.0 * done / total, rate, extra ? extra : "");
        else
            fprintf(stderr, "%s: %llu, %.0f/s, %s\n", phase, (unsigned long long)done, rate,
                    extra ? extra : "");
        return;
    }
    char bar[BAR_WIDTH + 1];
    int filled = total ? (int)((double)done / total * BAR_WIDTH) : 0;
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    char eta[32] = "";
    if (total && rate > 0 && done < total) {
        double left = (total - done) / rate;
        snprintf(eta, sizeof eta, " ETA %dm%02ds", (int)left / 60, (int)left % 60);
    }
    fprintf(stderr, "\r%-8s [%s] %llu/%llu %.0f/s%s %s\033[K", phase, bar, (unsigned long long)done,
            (unsigned long long)total, rate, eta, extra ? extra : "");
    p->drawn = 1;
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->tty && p->drawn)
        fputc('\n', stderr);
    p->drawn = 0;
}
