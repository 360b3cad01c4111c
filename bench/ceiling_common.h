/* ceiling_common.h - what the ceiling benchmarks (read_ceiling.c,
 * write_ceiling.c) share: a clock and the median of repeated passes. */
#ifndef SHARDKIT_BENCH_CEILING_COMMON_H
#define SHARDKIT_BENCH_CEILING_COMMON_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h" /* cmd/common: number parsing and usage errors, as the tools */

#define CEILING_MAX_REPS 1000

static inline double ceiling_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int ceiling_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n-1], n >= 1 (sorts v). */
static inline double ceiling_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, ceiling_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The arguments both ceilings take, at argv[*i] (*i advanced past a value):
 * --threads N, --reps R, --json and the one operand (*operand).  1: taken;
 * negative: minus the exit status of a usage error (reported), which is
 * anything else: call it after the program's own options. */
static inline int ceiling_common_argument(const char *prog, int argc, char **argv, int *i,
                                          int *threads, int *reps, int *json, const char **operand)
{
    const char *a = argv[*i];
    uint64_t v;
    if (!strcmp(a, "--threads") && *i + 1 < argc)
        return cli_parse_threads(prog, argv[++*i], threads) ? -CLI_EXIT_USAGE : 1;
    if (!strcmp(a, "--reps") && *i + 1 < argc) {
        if (cli_parse_u64(argv[++*i], 1, CEILING_MAX_REPS, &v))
            return -cli_usage_error(prog, "--reps: '%s' is not a number in 1..%d", argv[*i],
                                    CEILING_MAX_REPS);
        *reps = (int)v;
        return 1;
    }
    if (!strcmp(a, "--json")) {
        *json = 1;
        return 1;
    }
    if (a[0] == '-' || *operand)
        return -cli_usage_error(prog, "unexpected argument '%s'", a);
    *operand = a;
    return 1;
}

#endif
