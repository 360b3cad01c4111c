/*
 * write_ceiling.c - the fastest shardify could convert a folder of images on
 * this machine: its per-image computation alone, from memory.
 *
 * Every candidate file under SRC (the files shardify would convert, in the
 * same sorted order) is read once into memory; then --threads OpenMP threads
 * go over them again and again, as shardify's workers would, but with
 * nothing else to do: no file reads, no source hashing, no record framing,
 * no shard writing, no ordering.  Two stages:
 *
 *   decode  shard_decode_ex() with shardify's options (DCT-scaled to the
 *           smallest M/8 that keeps the fitted side >= --size): the decode
 *           shardify would run, and nothing else
 *   build   decode, resize/crop and encode the payload: the record build
 *           shardify's workers run per image (lib/record/record_build.c)
 *
 * shardify's images/s divided by a stage's images/s, same threads, same
 * run, says how much room is left: against `decode`, what resizing,
 * encoding and everything else cost; against `build`, what the pipeline
 * around the record build (reads, hashes, frames, the assembler) costs.
 *
 * Build (make bench builds it):  make build/bench/write_ceiling
 * Run:
 *   write_ceiling [--size N] [--fit short|long|crop] [--codec jpeg|raw|png] [--quality Q]
 *                 [--threads N] [--reps R] [--json] SRC
 *
 * Exit status: 0 done; 1 the folder cannot be read; 2 usage error.  Images
 * that do not decode are counted (shardify rejects them too) and skipped.
 */
#include "ceiling_common.h"
#include "record/record_build.h" /* lib/: the record build shardify's workers run */
#include "shardkit.h"

#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "write_ceiling"
#define DEFAULT_REPS 5
#define CHUNK 4 /* images a thread takes at a time (OpenMP dynamic schedule) */

enum stage { STAGE_DECODE, STAGE_BUILD, STAGE_COUNT };
static const char *const STAGE_NAMES[STAGE_COUNT] = {"decode", "build"};

struct source {
    uint8_t *data;
    size_t len;
};

static void usage(FILE *to)
{
    fputs("Usage: write_ceiling [--size N] [--fit short|long|crop] [--codec jpeg|raw|png]\n"
          "                     [--quality Q] [--threads N] [--reps R] [--json] SRC\n"
          "Read every image shardify would convert from SRC into memory, then decode it\n"
          "(at shardify's DCT scale) and build its record payload R times (default 5) with\n"
          "N threads (default: the CPUs available); print images/s per stage: the ceiling\n"
          "of shardify on this machine.\n",
          to);
}

/* One pass of stage st over all sources; seconds.  *failed: images that did
 * not convert (the same every pass). */
static double pass(enum stage st, const struct shard_config *c, const struct source *src, size_t n,
                   int threads, size_t *failed)
{
    size_t bad = 0;
    double t0 = ceiling_now_s();
#pragma omp parallel num_threads(threads) reduction(+ : bad)
    {
        struct shard_decode_options o;
        shard_decode_options_init(&o);
        o.max_pixels = c->max_pixels;
        o.max_file_bytes = c->max_file_bytes;
        o.target = c->size;
        o.fit = c->fit;
        struct shard_image img = {0};
        struct shard_decode_info info;
        struct shard_buf payload = {0};
        struct record_builder *b = NULL;
        struct shard_err err = {0};
        if (st == STAGE_BUILD && sk_record_builder_new(&b, c, &err))
            b = NULL;
#pragma omp for schedule(dynamic, CHUNK)
        for (size_t i = 0; i < n; i++) {
            struct shard_record_meta stored;
            int rc = st == STAGE_DECODE
                         ? shard_decode_ex(src[i].data, src[i].len, &o, &img, &info, &err)
                     : b ? sk_record_build(b, src[i].data, src[i].len, &payload, &stored, NULL,
                                           NULL, &err)
                         : -1;
            bad += rc != 0;
        }
        sk_record_builder_free(b);
        shard_buf_release(&payload);
        shard_image_release(&img);
    }
    *failed = bad;
    return ceiling_now_s() - t0;
}

/* Read every candidate under `root` (sorted, as shardify orders them before
 * shuffling).  0 or 1 (message printed). */
static int load(const char *root, const struct shard_config *c, struct source **out, size_t *n,
                uint64_t *bytes)
{
    struct shard_keylist keys = {0};
    struct shard_scan_stats stats = {0};
    struct shard_err err = {0};
    struct shard_buf buf = {0};
    struct source *src = NULL;
    size_t count = 0;
    int rc = 1, fd = -1;
    if (shard_scan_dir(root, &keys, NULL, &stats, &err)) {
        fprintf(stderr, PROG ": %s\n", err.msg);
        goto out;
    }
    shard_keylist_sort(&keys);
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    src = calloc(keys.count ? keys.count : 1, sizeof *src);
    if (fd < 0 || !src) {
        fprintf(stderr, PROG ": cannot read '%s'\n", root);
        goto out;
    }
    *bytes = 0;
    for (size_t i = 0; i < keys.count; i++) {
        const char *key = shard_keylist_get(&keys, i, NULL);
        if (shard_read_source_file(fd, key, c->max_file_bytes, &buf, &err))
            continue; /* shardify rejects it without decoding */
        src[count].data = malloc(buf.len ? buf.len : 1);
        if (!src[count].data) {
            fprintf(stderr, PROG ": out of memory\n");
            goto out;
        }
        memcpy(src[count].data, buf.data, buf.len);
        src[count].len = buf.len;
        *bytes += buf.len;
        count++;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    shard_buf_release(&buf);
    shard_keylist_release(&keys);
    *out = src;
    *n = count;
    return rc;
}

int main(int argc, char **argv)
{
    int threads = shard_available_cpus(), reps = DEFAULT_REPS, json = 0;
    const char *root = NULL;
    struct shard_config c;
    shard_config_init(&c);
    for (int i = 1, taken; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--size") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], 1, UINT32_MAX, &v))
                return cli_usage_error(PROG, "--size: '%s' is not a positive number", argv[i]);
            c.size = (uint32_t)v;
        } else if (!strcmp(a, "--quality") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], 1, 100, &v))
                return cli_usage_error(PROG, "--quality: '%s' is not a number in 1..100", argv[i]);
            c.quality = (int)v;
        } else if (!strcmp(a, "--fit") && i + 1 < argc) {
            if (shard_fit_parse(argv[++i], &c.fit))
                return cli_usage_error(PROG, "--fit: '%s' is not short, long or crop", argv[i]);
        } else if (!strcmp(a, "--codec") && i + 1 < argc) {
            if (shard_codec_parse(argv[++i], &c.codec))
                return cli_usage_error(PROG, "--codec: '%s' is not jpeg, raw or png", argv[i]);
        } else if ((taken = ceiling_common_argument(PROG, argc, argv, &i, &threads, &reps, &json,
                                                    &root)) < 0) {
            return -taken;
        }
    }
    if (!root) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    c.zstd_level = shard_config_zstd_level(&c); /* as shardify_run resolves it */

    struct source *src = NULL;
    size_t n = 0, failed = 0;
    uint64_t bytes = 0;
    double rate[STAGE_COUNT] = {0};
    double *times = calloc((size_t)reps, sizeof *times);
    int rc = load(root, &c, &src, &n, &bytes);
    if (!rc && (!times || n == 0)) {
        fprintf(stderr, PROG ": %s\n", times ? "no image to convert" : "out of memory");
        rc = 1;
    }
    if (rc)
        goto out;
    pass(STAGE_DECODE, &c, src, n, threads, &failed); /* warm up: caches, thread pool */
    for (int st = 0; st < STAGE_COUNT; st++) {
        for (int r = 0; r < reps; r++)
            times[r] = pass((enum stage)st, &c, src, n, threads, &failed);
        rate[st] = (double)n / ceiling_median(times, reps);
    }
    if (json) {
        printf("{\"images\": %zu, \"failed\": %zu, \"source_bytes\": %llu, \"threads\": %d, "
               "\"reps\": %d, \"size\": %u, \"fit\": \"%s\", \"codec\": \"%s\", "
               "\"images_per_second\": {\"%s\": %.1f, \"%s\": %.1f}}\n",
               n, failed, (unsigned long long)bytes, threads, reps, c.size, shard_fit_name(c.fit),
               shard_codec_name(c.codec), STAGE_NAMES[STAGE_DECODE], rate[STAGE_DECODE],
               STAGE_NAMES[STAGE_BUILD], rate[STAGE_BUILD]);
    } else {
        printf("%zu images (%zu do not convert), --size %u, %d threads, median of %d passes\n", n,
               failed, c.size, threads, reps);
        for (int st = 0; st < STAGE_COUNT; st++)
            printf("  %-7s %8.0f images/s  (%.3f ms per image per thread)\n", STAGE_NAMES[st],
                   rate[st], 1e3 * threads / rate[st]);
    }
out:
    for (size_t i = 0; src && i < n; i++)
        free(src[i].data);
    free(src);
    free(times);
    return rc;
}
