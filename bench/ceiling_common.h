/* ceiling_common.h - what the ceiling benchmarks (read_ceiling.c,
 * write_ceiling.c, train_ceiling.c) share: a clock, the median of repeated
 * passes, the common arguments, and a dataset's payloads read into memory. */
#ifndef SHARDKIT_BENCH_CEILING_COMMON_H
#define SHARDKIT_BENCH_CEILING_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h" /* cmd/common: number parsing and usage errors, as the tools */
#include "shardkit.h"

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

/* A record's payload as stored, in memory. */
struct payload {
    enum shard_codec codec;
    uint32_t width, height;
    uint8_t *data;
    size_t len;
    uint32_t channels, depth;           /* the record's own form */
    uint32_t read_channels, read_depth; /* the form the reader gives (the dataset's) */
    uint8_t background[3];              /* the dataset's, for an alpha removed */
};

static inline void ceiling_payloads_free(struct payload *ps, size_t n)
{
    for (size_t i = 0; ps && i < n; i++)
        free(ps[i].data);
    free(ps);
}

/* Every record's payload of the dataset at `location`, read once into
 * memory: *out (n of them, free with ceiling_payloads_free), and the
 * dataset's shard bytes.  0, or 1 with the reason printed after "PROG: ". */
static inline int ceiling_load_payloads(const char *prog, const char *location,
                                        struct payload **out, size_t *count, uint64_t *shard_bytes)
{
    struct shard_err err = {0};
    struct shard_dataset *ds = NULL;
    *out = NULL;
    *count = 0;
    if (shard_dataset_open(&ds, location, &err)) {
        fprintf(stderr, "%s: %s: %s\n", prog, location, err.msg);
        return 1;
    }
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    size_t n = (size_t)shard_dataset_size(ds);
    *shard_bytes = 0;
    for (uint32_t s = 0; s < m->shard_count; s++)
        *shard_bytes += m->shards[s].bytes;
    struct payload *ps = calloc(n ? n : 1, sizeof *ps);
    struct shard_item item = {0};
    int rc = ps ? 0 : 1;
    if (!ps)
        fprintf(stderr, "%s: out of memory\n", prog);
    for (size_t i = 0; ps && i < n && !rc; i++) {
        if (shard_dataset_read(ds, i, SHARD_READ_STORED, &item, &err)) {
            fprintf(stderr, "%s: %s\n", prog, err.msg);
            rc = 1;
        } else if (!(ps[i].data = malloc(item.stored.len ? item.stored.len : 1))) {
            fprintf(stderr, "%s: out of memory\n", prog);
            rc = 1;
        } else {
            ps[i] = (struct payload){item.codec,        item.width,
                                     item.height,       ps[i].data,
                                     item.stored.len,   item.stored_channels,
                                     item.stored_depth, item.channels,
                                     item.depth,        {0}};
            memcpy(ps[i].background, m->config.background, sizeof ps[i].background);
            memcpy(ps[i].data, item.stored.data, item.stored.len);
        }
    }
    shard_item_release(&item);
    shard_dataset_close(ds);
    if (!rc && n == 0) {
        fprintf(stderr, "%s: %s holds no samples\n", prog, location);
        rc = 1;
    }
    if (rc) {
        ceiling_payloads_free(ps, n);
        return 1;
    }
    *out = ps;
    *count = n;
    return 0;
}

#endif
