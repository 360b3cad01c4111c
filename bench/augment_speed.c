/* augment_speed.c - CPU time of the loader's transform stage alone.
 *
 * Decodes the images of a folder once, resamples each to a shorter side of
 * --size (as a shard of that size stores it), then on one thread times
 * shard_transforms_draw + shard_transforms_apply with the training transforms
 * (RandomResizedCrop(--crop) + RandomHorizontalFlip + Normalize, float32
 * NCHW unless --layout/--dtype say otherwise) over every image, --epochs
 * times.  Prints CPU ms per sample (median and fastest epoch) and an xxh3 digest of
 * every output byte of the first epoch, so that two builds can be checked to give the same
 * results as well as compared for speed.
 *
 *   build/bench/augment_speed [--size 256] [--crop 224] [--epochs 5]
 *       [--layout NCHW] [--dtype float32] DIR */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "shardkit/image.h"
#include "shardkit/loader.h"
#include "train_steps.h"

#define MAX_IMAGES 4096
#define MAX_EPOCHS 64
#define BATCH 64 /* samples per batch, as the loader's default */

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
            }
            b = nb;
        }
    }
    fclose(f);
    *data = b;
    *len = n;
    return b ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int usage(void)
{
    fprintf(stderr, "usage: augment_speed [--size N] [--crop N] [--epochs N] [--layout NHWC|NCHW] "
                    "[--dtype uint8|float32|float16] DIR\n");
    return 2;
}

int main(int argc, char **argv)
{
    uint32_t size = 256, crop = 224;
    int epochs = 5;
    enum shard_layout layout = SHARD_LAYOUT_NCHW;
    enum shard_dtype dtype = SHARD_DTYPE_FLOAT32;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--size") && v)
            size = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--crop") && v)
            crop = (uint32_t)strtoul(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--epochs") && v)
            epochs = atoi(v), i++;
        else if (!strcmp(argv[i], "--layout") && v) {
            if (shard_layout_parse(v, &layout))
                return usage();
            i++;
        } else if (!strcmp(argv[i], "--dtype") && v) {
            if (shard_dtype_parse(v, &dtype))
                return usage();
            i++;
        } else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else
            return usage();
    }
    if (!dir || size == 0 || crop == 0 || epochs < 1 || epochs > MAX_EPOCHS)
        return usage();

    static struct shard_image images[MAX_IMAGES];
    size_t count = 0;
    struct shard_err err = {0};
    struct shard_decode_options opt;
    shard_decode_options_init(&opt);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "augment_speed: cannot open '%s'\n", dir);
        return 1;
    }
    struct dirent *e;
    char path[4096];
    /* readdir order differs between file systems: sort by name for the digest */
    char **names = calloc(MAX_IMAGES, sizeof *names);
    size_t nnames = 0;
    while ((e = readdir(d)) && nnames < MAX_IMAGES)
        if (e->d_name[0] != '.')
            names[nnames++] = strdup(e->d_name);
    closedir(d);
    qsort(names, nnames, sizeof *names, cmp_name);
    for (size_t k = 0; k < nnames; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        uint8_t *data = NULL;
        size_t len;
        struct shard_image full = {0};
        if (read_file(path, &data, &len) || shard_decode(data, len, &opt, &full, &err)) {
            free(data);
            continue;
        }
        free(data);
        uint32_t w = full.width, h = full.height;
        uint32_t nw = w <= h ? size : (uint32_t)((uint64_t)size * w / h);
        uint32_t nh = w <= h ? (uint32_t)((uint64_t)size * h / w) : size;
        if (shard_resize(&full, nw, nh, &images[count], &err) == 0)
            count++;
        shard_image_release(&full);
    }
    if (!count) {
        fprintf(stderr, "augment_speed: no image decoded in '%s'\n", dir);
        return 1;
    }

    struct shard_transform_step steps[TRAIN_STEPS];
    train_steps_init(steps, crop);
    size_t nsteps = dtype == SHARD_DTYPE_UINT8 ? TRAIN_STEPS - 1 : TRAIN_STEPS; /* no Normalize */
    struct shard_transforms *a = NULL;
    struct shard_transforms_workspace *ws = NULL;
    if (shard_transforms_new(&a, steps, nsteps, layout, dtype, &err) ||
        shard_transforms_workspace_new(&ws, &err)) {
        fprintf(stderr, "augment_speed: %s\n", err.msg);
        return 1;
    }
    size_t out_bytes = (size_t)crop * crop * 3 * shard_dtype_size(dtype);
    /* the outputs go where a loader puts them: one place after another of a
     * batch far larger than the caches */
    uint8_t *batch = malloc(out_bytes * BATCH);
    if (!batch) {
        fprintf(stderr, "augment_speed: out of memory\n");
        return 1;
    }
    memset(batch, 0, out_bytes * BATCH);
    XXH3_state_t *hash = XXH3_createState();
    XXH3_64bits_reset(hash);
    double per_epoch[MAX_EPOCHS];
    for (int ep = 0; ep < epochs; ep++) {
        double t0 = cpu_seconds();
        for (size_t i = 0; i < count; i++) {
            struct shard_transforms_draws dr;
            if (shard_transforms_draw(a, images[i].width, images[i].height, 7, (uint64_t)ep, i, &dr,
                                      &err) ||
                shard_transforms_apply(a, &images[i], &dr, ws, batch + i % BATCH * out_bytes,
                                       &err)) {
                fprintf(stderr, "augment_speed: %s\n", err.msg);
                return 1;
            }
            if (ep == 0)
                XXH3_64bits_update(hash, batch + i % BATCH * out_bytes, out_bytes);
        }
        per_epoch[ep] = (cpu_seconds() - t0) * 1e3 / (double)count;
    }
    qsort(per_epoch, (size_t)epochs, sizeof *per_epoch, cmp_double);
    printf("%zu images, %u px shorter side, crop %u: %.4f ms CPU per sample (median of %d "
           "epochs; fastest %.4f), digest %016llx\n",
           count, size, crop, per_epoch[epochs / 2], epochs, per_epoch[0],
           (unsigned long long)XXH3_64bits_digest(hash));
    XXH3_freeState(hash);
    free(batch);
    shard_transforms_workspace_free(ws);
    shard_transforms_free(a);
    for (size_t i = 0; i < count; i++)
        shard_image_release(&images[i]);
    for (size_t k = 0; k < nnames; k++)
        free(names[k]);
    free(names);
    return 0;
}
