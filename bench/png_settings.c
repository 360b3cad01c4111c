/*
 * png_settings.c - size and speed of PNG payloads per zlib level and libpng
 * filter set, to choose the settings of shard_encode(SHARD_CODEC_PNG).
 *
 * Every JPEG in a folder is decoded and resampled as shardify does it
 * (shard_decode_ex with a DCT-scaling target, shard_geometry_apply_decoded, shorter
 * side = --size), then encoded with each setting; bytes are summed over all images
 * and the encode time (best of --reps, one core) is summarised.  RAW and
 * JPEG q90 are shown for scale.
 *
 * Build from the repository root, after `make build`:
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE -DSHARDKIT_EXPERIMENTAL -Iinclude -Ilib \
 *      bench/png_settings.c build/libshardkit.a \
 *      $(pkg-config --cflags --libs libjpeg libpng vips libexif) -lm -o build/png_settings
 *
 * Run:  build/png_settings [--size 256] [--reps 3] [--limit N] FOLDER
 */
#include "image/encode_internal.h"
#include "shardkit/image.h"

#include <dirent.h>
#include <math.h>
#include <png.h>
#include <zlib.h> /* Z_FILTERED, Z_RLE ... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct setting {
    const char *name;
    enum shard_codec codec;
    int level, filters, strategy;
};

#define FILTERED Z_FILTERED
static const struct setting settings[] = {
    {"raw", SHARD_CODEC_RAW, 0, 0, 0},
    {"jpeg q90", SHARD_CODEC_JPEG, 0, 0, 0},
    {"png 1 none filtered", SHARD_CODEC_PNG, 1, PNG_FILTER_NONE, FILTERED},
    {"png 1 sub filtered", SHARD_CODEC_PNG, 1, PNG_FILTER_SUB, FILTERED},
    {"png 1 up filtered", SHARD_CODEC_PNG, 1, PNG_FILTER_UP, FILTERED},
    {"png 1 paeth filtered", SHARD_CODEC_PNG, 1, PNG_FILTER_PAETH, FILTERED},
    {"png 1 adaptive filtered", SHARD_CODEC_PNG, 1, PNG_ALL_FILTERS, FILTERED},
    {"png 3 paeth filtered", SHARD_CODEC_PNG, 3, PNG_FILTER_PAETH, FILTERED},
    {"png 3 adaptive filtered", SHARD_CODEC_PNG, 3, PNG_ALL_FILTERS, FILTERED},
    {"png 6 adaptive filtered", SHARD_CODEC_PNG, 6, PNG_ALL_FILTERS, FILTERED},
    {"png 1 sub rle", SHARD_CODEC_PNG, 1, PNG_FILTER_SUB, Z_RLE},
    {"png 1 up rle", SHARD_CODEC_PNG, 1, PNG_FILTER_UP, Z_RLE},
    {"png 1 paeth rle", SHARD_CODEC_PNG, 1, PNG_FILTER_PAETH, Z_RLE},
    {"png 1 adaptive rle", SHARD_CODEC_PNG, 1, PNG_ALL_FILTERS, Z_RLE},
    {"png 1 paeth huffman-only", SHARD_CODEC_PNG, 1, PNG_FILTER_PAETH, Z_HUFFMAN_ONLY},
    {"png 1 adaptive huffman-only", SHARD_CODEC_PNG, 1, PNG_ALL_FILTERS, Z_HUFFMAN_ONLY},
    {"shard_encode png (shipped)", SHARD_CODEC_PNG, -1, -1, -1},
};
#define N_SETTINGS (sizeof settings / sizeof settings[0])
#define JPEG_QUALITY 90

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int encode(const struct setting *s, const struct shard_image *img, struct shard_buf *out)
{
    if (s->codec != SHARD_CODEC_PNG || s->level < 0)
        return shard_encode(img, s->codec, JPEG_QUALITY, out, NULL);
    return sk_encode_png(img, s->level, s->filters, s->strategy, out, NULL);
}

static int read_all(const char *path, struct shard_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    b->len = 0;
    uint8_t chunk[1 << 16];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (shard_buf_append(b, chunk, n, NULL))
            rc = -1;
    fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned size = 256;
    int reps = 3;
    size_t limit = 0;
    const char *folder = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
            limit = strtoul(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !folder)
            folder = argv[i];
        else
            folder = NULL, i = argc;
    }
    if (!folder || size == 0 || reps < 1) {
        fprintf(stderr, "usage: png_settings [--size 256] [--reps 3] [--limit N] FOLDER\n");
        return 2;
    }
    struct dirent **names;
    int n_names = scandir(folder, &names, NULL, alphasort);
    if (n_names < 0) {
        perror(folder);
        return 2;
    }
    double *ms[N_SETTINGS];
    double bytes[N_SETTINGS] = {0};
    for (size_t s = 0; s < N_SETTINGS; s++)
        ms[s] = calloc((size_t)n_names + 1, sizeof(double));
    struct shard_buf file = {0}, out = {0};
    struct shard_image decoded = {0}, tmp = {0}, img = {0};
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = size;
    size_t done = 0, failed = 0;
    for (int i = 0; i < n_names && (!limit || done < limit); i++) {
        const char *dot = strrchr(names[i]->d_name, '.');
        if (!dot || (strcasecmp(dot, ".jpeg") && strcasecmp(dot, ".jpg")))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, names[i]->d_name);
        struct shard_geometry g;
        struct shard_decode_info info;
        if (read_all(path, &file) ||
            shard_decode_ex(file.data, file.len, &o, &decoded, &info, NULL) ||
            shard_geometry_compute(info.source_width, info.source_height, size, SHARD_FIT_SHORT, 1,
                                   &g) ||
            shard_geometry_apply_decoded(&decoded, &info, &g, &tmp, &img, NULL)) {
            failed++;
            continue;
        }
        for (size_t s = 0; s < N_SETTINGS; s++) {
            double best = INFINITY;
            for (int r = 0; r < reps; r++) {
                double t0 = now_ms();
                if (encode(&settings[s], &img, &out)) {
                    fprintf(stderr, "png_settings: %s failed on %s\n", settings[s].name, path);
                    return 1;
                }
                double t = now_ms() - t0;
                best = t < best ? t : best;
            }
            ms[s][done] = best;
            bytes[s] += (double)out.len;
        }
        done++;
    }
    printf("%zu images at shorter side %u (%zu failed to decode); encode time best of %d, "
           "one core\n",
           done, size, failed, reps);
    printf("%-30s %12s %10s %9s %9s\n", "setting", "MB total", "vs raw", "ms med", "ms mean");
    for (size_t s = 0; s < N_SETTINGS; s++) {
        double sum = 0;
        for (size_t i = 0; i < done; i++)
            sum += ms[s][i];
        qsort(ms[s], done, sizeof(double), cmp_double);
        double med = done ? (done % 2 ? ms[s][done / 2]
                                      : (ms[s][done / 2 - 1] + ms[s][done / 2]) / 2)
                          : NAN;
        printf("%-30s %12.2f %9.1f%% %9.3f %9.3f\n", settings[s].name, bytes[s] / 1e6,
               100.0 * bytes[s] / bytes[0], med, done ? sum / (double)done : NAN);
        free(ms[s]);
    }
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    shard_buf_release(&file);
    shard_buf_release(&out);
    shard_image_release(&decoded);
    shard_image_release(&tmp);
    shard_image_release(&img);
    return 0;
}
