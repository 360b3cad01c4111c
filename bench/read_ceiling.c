/*
 * read_ceiling.c - the fastest any reader of a shard dataset could deliver
 * decoded samples on this machine: decode only, no I/O.
 *
 * Every record's payload is read once into memory (shard_dataset_read with
 * SHARD_READ_STORED); then the payloads are decoded again and again by
 * --threads OpenMP threads, as the shard reader's loader threads would, but
 * with nothing else to do: no file or network reads, no zstd, no queue, no
 * consumer.  Three decoders:
 *
 *   reader      shard_decode_payload(), exactly what the shard reader runs
 *   turbo-exact the TurboJPEG API, accurate DCT and upsampling (JPEG only)
 *   turbo-fast  the TurboJPEG API with TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE,
 *               the fastest libjpeg-turbo offers (approximate pixels; JPEG only)
 *
 * Samples/s of the best decoder bounds the throughput of a jpeg shard reader
 * on these cores, whatever its I/O; dividing it by a files loader's samples/s
 * bounds the ratio `shardbench compare` can report.  The mean bytes per
 * sample in the shard files (records and their framing) give the transfer
 * needed per sample, to set against a measured link or loopback rate.
 *
 * Build (make bench builds it):
 *   cc -std=c11 -O2 -fopenmp -D_GNU_SOURCE -Iinclude bench/read_ceiling.c build/libshardkit.a \
 *      $(pkg-config --libs ...the library's dependencies...) -lturbojpeg -o read_ceiling
 * Run:
 *   read_ceiling [--threads N] [--reps R] [--json] DATASET
 *
 * Exit status: 0 done; 1 the dataset cannot be read or a payload does not
 * decode; 2 usage error.
 */
#include "ceiling_common.h"
#include "shardkit.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

#define PROG "read_ceiling"
#define DEFAULT_REPS 5
#define CHUNK 4 /* samples a thread takes at a time (OpenMP dynamic schedule) */

enum decoder { DEC_READER, DEC_TURBO_EXACT, DEC_TURBO_FAST, DEC_COUNT };
static const char *const DECODER_NAMES[DEC_COUNT] = {"reader", "turbo-exact", "turbo-fast"};

static void usage(FILE *to)
{
    fputs("Usage: read_ceiling [--threads N] [--reps R] [--json] DATASET\n"
          "Decode every sample of a local shard dataset from memory, R times (default 5),\n"
          "with N threads (default: the CPUs available), and print samples/s per decoder:\n"
          "the ceiling of any reader of these shards on this machine.\n",
          to);
}

/* Decode payload p with decoder d; 0 or -1 (message in msg). */
static int decode_one(enum decoder d, const struct payload *p, tjhandle tj, uint8_t **buf,
                      size_t *cap, struct shard_image *img, char *msg, size_t msg_size)
{
    if (d == DEC_READER) { /* the record's form, widened to the dataset's as the reader does */
        struct shard_err err = {0};
        struct shard_image wide = {0};
        int rc = shard_decode_payload_form(p->codec, p->data, p->len, p->width, p->height,
                                           p->channels, p->depth, img, &err);
        if (!rc && (img->channels != p->read_channels || p->depth != p->read_depth) &&
            !(rc = shard_image_convert(img, p->read_channels, p->read_depth, p->background, &wide,
                                       &err))) {
            struct shard_image t = *img;
            *img = wide;
            wide = t;
        }
        shard_image_release(&wide);
        if (rc) {
            snprintf(msg, msg_size, "%.*s", (int)msg_size - 1, err.msg);
            return -1;
        }
        return 0;
    }
    size_t need = (size_t)p->width * p->height * 3;
    if (need > *cap) {
        uint8_t *n = realloc(*buf, need);
        if (!n) {
            snprintf(msg, msg_size, "out of memory");
            return -1;
        }
        *buf = n;
        *cap = need;
    }
    int flags = d == DEC_TURBO_FAST ? TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE : 0;
    if (tjDecompress2(tj, p->data, (unsigned long)p->len, *buf, (int)p->width, 0, (int)p->height,
                      TJPF_RGB, flags)) {
        snprintf(msg, msg_size, "%s", tjGetErrorStr2(tj));
        return -1;
    }
    return 0;
}

/* One pass over all payloads with decoder d; seconds, or -1 on a failure. */
static double pass(enum decoder d, const struct payload *ps, size_t n, int threads)
{
    int failed = 0;
    char msg[600] = "";
    double t0 = ceiling_now_s();
#pragma omp parallel num_threads(threads)
    {
        tjhandle tj = d == DEC_READER ? NULL : tjInitDecompress();
        uint8_t *buf = NULL;
        size_t cap = 0;
        struct shard_image img = {0};
        char mine[512];
#pragma omp for schedule(dynamic, CHUNK)
        for (size_t i = 0; i < n; i++) {
            if (failed)
                continue;
            if ((d != DEC_READER && !tj) ||
                decode_one(d, &ps[i], tj, &buf, &cap, &img, mine, sizeof mine)) {
#pragma omp critical
                {
                    if (!failed)
                        snprintf(msg, sizeof msg, "sample %zu: %s", i,
                                 tj || d == DEC_READER ? mine : "tjInitDecompress failed");
                    failed = 1;
                }
            }
        }
        shard_image_release(&img);
        free(buf);
        if (tj)
            tjDestroy(tj);
    }
    double t = ceiling_now_s() - t0;
    if (failed) {
        fprintf(stderr, "read_ceiling: %s decoder: %s\n", DECODER_NAMES[d], msg);
        return -1;
    }
    return t;
}

int main(int argc, char **argv)
{
    int threads = omp_get_num_procs(), reps = DEFAULT_REPS, json = 0;
    const char *location = NULL;
    for (int i = 1, taken; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
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
    uint64_t shard_bytes, payload_bytes = 0;
    int same_codec = 1, rc = 0;
    if (ceiling_load_payloads(PROG, location, &ps, &n, &shard_bytes))
        return 1;
    for (size_t i = 0; i < n; i++) {
        payload_bytes += ps[i].len;
        same_codec &= ps[i].codec == ps[0].codec;
    }

    double rate[DEC_COUNT] = {0};
    double *times = calloc((size_t)reps, sizeof *times);
    if (!times) {
        fprintf(stderr, "read_ceiling: out of memory\n");
        rc = 1;
        goto out;
    }
    int jpeg_only = same_codec && ps[0].codec == SHARD_CODEC_JPEG;
    int decoders = jpeg_only ? DEC_COUNT : 1; /* TurboJPEG reads JPEG only */
    pass(DEC_READER, ps, n, threads);         /* warm up: caches, thread pool */
    for (int d = 0; d < decoders && !rc; d++) {
        for (int r = 0; r < reps && !rc; r++)
            if ((times[r] = pass((enum decoder)d, ps, n, threads)) < 0)
                rc = 1;
        if (!rc)
            rate[d] = (double)n / ceiling_median(times, reps);
    }
    free(times);
    if (rc)
        goto out;

    double per_sample = (double)shard_bytes / (double)n;
    if (json) {
        printf("{\"samples\": %zu, \"threads\": %d, \"reps\": %d, \"codec\": \"%s\", "
               "\"shard_bytes_per_sample\": %.0f, \"payload_bytes_per_sample\": %.0f, "
               "\"decode_samples_per_second\": {",
               n, threads, reps, same_codec ? shard_codec_name(ps[0].codec) : "mixed", per_sample,
               (double)payload_bytes / (double)n);
        for (int d = 0; d < decoders; d++)
            printf("%s\"%s\": %.1f", d ? ", " : "", DECODER_NAMES[d], rate[d]);
        printf("}}\n");
    } else {
        printf("%zu samples, %d threads, median of %d passes; %.0f shard bytes per sample\n", n,
               threads, reps, per_sample);
        for (int d = 0; d < decoders; d++)
            printf("  %-12s %8.0f samples/s  (%.3f ms per sample per thread)\n", DECODER_NAMES[d],
                   rate[d], 1e3 * threads / rate[d]);
    }
out:
    ceiling_payloads_free(ps, n);
    return rc;
}
