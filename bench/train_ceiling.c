/*
 * train_ceiling.c - the fastest the jpeg training pipeline can run on this
 * machine: what shardkit.Loader does to a sample, from memory, and nothing
 * else.
 *
 * Every record's payload is read once into memory; then, for each sample
 * of an epoch, one thread does exactly the Loader's per-sample work on
 * JPEG records: the transforms' choices drawn for the stored size
 * (shard_transforms_draw, seed 0, the sample's index), the crop-aware
 * decode (only the region around RandomResizedCrop's box: the library's
 * sk_decode_payload_box), and resize, flip and normalise into the sample's
 * place in a float32 NCHW batch of 64 (shard_transforms_apply).  No file
 * reads, no zstd, no queue, no consumer, no Python.  DCT scaling applies
 * when the crop's box is at least twice the output on both sides: the
 * count of such samples is printed (none for 256-px shards and 224-px
 * crops, whose boxes are at most 256 px), and the Loader does not use it
 * (its pixels are a full decode's, torchvision's), so neither does this.
 *
 * The ceiling is one core's rate (samples over the thread's CPU time, the
 * median of --reps epochs) times --cores (default: the CPUs available): what
 * that many cores could deliver if they did nothing else.  The wall-clock
 * rate of --cores threads running it at once is printed beside it.
 *
 * Build (make bench builds it): see the Makefile (-Ilib: the read path's
 * own decode).
 * Run:
 *   train_ceiling [--threads N] [--reps R] [--crop C] [--json] DATASET
 *
 * Exit status: 0 done; 1 the dataset cannot be read or a sample fails;
 * 2 usage error.
 */
#include "ceiling_common.h"
#include "image/decode_internal.h"
#include "image/encode_internal.h"
#include "loader/transforms_internal.h"
#include "train_steps.h"
#include "shardkit.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "train_ceiling"
#define DEFAULT_REPS 5
#define DEFAULT_CROP 224
#define BATCH 64 /* the batch the output is written into, as the benchmark's */
#define CHUNK 4  /* samples a thread takes at a time (OpenMP dynamic schedule) */

static void usage(FILE *to)
{
    fputs("Usage: train_ceiling [--threads N] [--reps R] [--crop C] [--json] DATASET\n"
          "Run the Loader's per-sample work on every sample of a local jpeg shard dataset\n"
          "from memory - RandomResizedCrop(C) (default 224) decoding only the crop's region,\n"
          "a horizontal flip, Normalize, float32 NCHW - R times (default 5), and print one\n"
          "core's samples/s times N (default: the CPUs available): the ceiling of the jpeg\n"
          "training pipeline on those cores.\n",
          to);
}

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What one thread needs. */
struct worker {
    struct shard_transforms_workspace *ws;
    struct shard_transforms_draws d;
    struct shard_image img;
    uint8_t *batch; /* BATCH samples of the output */
};

/* The Loader's work on payload p (sample i of epoch e) into slot; 0 or -1
 * (message in msg).  *scaled: 1 when DCT scaling would apply. */
static int one_sample(const struct shard_transforms *t, const struct payload *p, uint64_t e,
                      uint64_t i, struct worker *w, void *slot, uint32_t crop, int *scaled,
                      char *msg, size_t msg_size)
{
    struct shard_err err = {0};
    struct sk_jpeg_box box = {0};
    int rc = shard_transforms_draw(t, p->width, p->height, 0, e, i, &w->d, &err);
    if (!rc && p->codec == SHARD_CODEC_JPEG &&
        sk_transforms_first_box(t, &w->d, &box.left, &box.top, &box.width, &box.height)) {
        *scaled = box.width >= 2 * crop && box.height >= 2 * crop;
        rc = sk_decode_payload_box(p->codec, p->data, p->len, p->width, p->height, &box, &w->img,
                                   &err);
        if (!rc)
            sk_transforms_draws_in_region(&w->d, box.region_left, box.region_top, w->img.width,
                                          w->img.height);
    } else if (!rc) {
        rc = shard_decode_payload(p->codec, p->data, p->len, p->width, p->height, &w->img, &err);
    }
    if (!rc)
        rc = shard_transforms_apply(t, &w->img, &w->d, w->ws, slot, &err);
    if (rc)
        snprintf(msg, msg_size, "sample %llu: %s", (unsigned long long)i, err.msg);
    return rc ? -1 : 0;
}

/* One epoch on `threads` threads: wall seconds into *wall and the CPU
 * seconds of the threads summed into *cpu; 0, or -1 on a failure. */
static int epoch(const struct shard_transforms *t, const struct payload *ps, size_t n, uint64_t e,
                 int threads, uint32_t crop, size_t sample_bytes, double *wall, double *cpu,
                 size_t *scaled)
{
    int failed = 0;
    char msg[600] = "";
    double total_cpu = 0, t0 = ceiling_now_s();
    size_t scaled_count = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total_cpu, scaled_count)
    {
        struct worker w = {0};
        struct shard_err err;
        char mine[600];
        int ok = !shard_transforms_workspace_new(&w.ws, &err) &&
                 (w.batch = malloc(sample_bytes * BATCH)) != NULL;
        double c0 = thread_cpu_s();
#pragma omp for schedule(dynamic, CHUNK)
        for (size_t i = 0; i < n; i++) {
            int s = 0;
            if (failed)
                continue;
            if (!ok || one_sample(t, &ps[i], e, i, &w, w.batch + (i % BATCH) * sample_bytes, crop,
                                  &s, mine, sizeof mine)) {
#pragma omp critical
                {
                    if (!failed)
                        snprintf(msg, sizeof msg, "%s", ok ? mine : "out of memory");
                    failed = 1;
                }
            }
            scaled_count += (size_t)s;
        }
        total_cpu += thread_cpu_s() - c0;
        shard_image_release(&w.img);
        shard_transforms_workspace_free(w.ws);
        free(w.batch);
    }
    *wall = ceiling_now_s() - t0;
    *cpu = total_cpu;
    *scaled = scaled_count;
    if (failed)
        fprintf(stderr, "%s: %s\n", PROG, msg);
    return failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    int threads = omp_get_num_procs(), reps = DEFAULT_REPS, json = 0;
    uint32_t crop = DEFAULT_CROP;
    const char *location = NULL;
    for (int i = 1, taken; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--crop") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], 1, SHARD_TRANSFORMS_MAX_SIDE, &v))
                return cli_usage_error(PROG, "--crop: '%s' is not a size in 1..%u", argv[i],
                                       SHARD_TRANSFORMS_MAX_SIDE);
            crop = (uint32_t)v;
        } else if ((taken = ceiling_common_argument(PROG, argc, argv, &i, &threads, &reps, &json,
                                                    &location)) < 0) {
            return -taken;
        }
    }
    if (!location) {
        usage(stderr);
        return 2;
    }
    struct payload *ps;
    size_t n;
    uint64_t shard_bytes;
    if (ceiling_load_payloads(PROG, location, &ps, &n, &shard_bytes))
        return 1;
    struct shard_transform_step steps[TRAIN_STEPS];
    train_steps_init(steps, crop);
    struct shard_transforms *t = NULL;
    struct shard_err err;
    double *one = calloc((size_t)reps, sizeof *one), *all = calloc((size_t)reps, sizeof *all);
    int rc = 0;
    if (shard_transforms_new(&t, steps, TRAIN_STEPS, SHARD_LAYOUT_NCHW, SHARD_DTYPE_FLOAT32,
                             &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        rc = 1;
    } else if (!one || !all) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = 1;
    }
    const size_t sample_bytes = (size_t)crop * crop * 3 * sizeof(float);
    size_t scaled = 0;
    double wall, cpu;
    /* a warm-up epoch, then --reps epochs on one thread (its CPU time) and
     * as many on all threads (wall time), alternating */
    if (!rc && epoch(t, ps, n, 0, threads, crop, sample_bytes, &wall, &cpu, &scaled))
        rc = 1;
    for (int r = 0; r < reps && !rc; r++) {
        if (epoch(t, ps, n, (uint64_t)r + 1, 1, crop, sample_bytes, &wall, &cpu, &scaled) ||
            (one[r] = (double)n / cpu,
             epoch(t, ps, n, (uint64_t)r + 1, threads, crop, sample_bytes, &wall, &cpu, &scaled)))
            rc = 1;
        else
            all[r] = (double)n / wall;
    }
    if (!rc) {
        double core = ceiling_median(one, reps), together = ceiling_median(all, reps);
        if (json)
            printf("{\"samples\": %zu, \"crop\": %u, \"reps\": %d, \"cores\": %d, "
                   "\"one_core_samples_per_second\": %.1f, \"ceiling_samples_per_second\": "
                   "%.1f, \"threads_samples_per_second\": %.1f, \"cpu_ms_per_sample\": %.4f, "
                   "\"dct_scaled_samples\": %zu}\n",
                   n, crop, reps, threads, core, core * threads, together, 1e3 / core, scaled);
        else
            printf("%zu samples, RandomResizedCrop(%u) + flip + Normalize, float32 NCHW, median of "
                   "%d epochs\n  one core     %8.0f samples/s (%.3f ms CPU per sample)\n"
                   "  ceiling      %8.0f samples/s (one core x %d)\n"
                   "  %d threads  %8.0f samples/s (wall)\n"
                   "  boxes at least twice the output (DCT scaling): %zu of %zu\n",
                   n, crop, reps, core, 1e3 / core, core * threads, threads, threads, together,
                   scaled, n);
    }
    shard_transforms_free(t);
    free(one);
    free(all);
    ceiling_payloads_free(ps, n);
    return rc;
}
