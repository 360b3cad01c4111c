/* shardcat - write stored samples as PNG files, so a person can look at
 * exactly what training will see and a test can compare pixels with a
 * reference.  The flow: options (options.c), the samples to write (all, or
 * the keys found by lookup.c), reading them with the dataset reader's
 * prefetching iterator (shardkit/dataset.h), and writing each into the
 * output directory (out_dir.c) under its name (safe_name.c), with its
 * fields beside it as sidecar files (fields_out.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fields_out.h"
#include "lookup.h"
#include "options.h"
#include "out_dir.h"
#include "safe_name.h"
#include "shardkit.h"
#include "targets_out.h"

#define PROG "shardcat"
#define PNG_SUFFIX ".png"

/* What a run did. */
struct tally {
    uint64_t written; /* files in DIR */
    uint64_t failed;  /* samples not written: damaged, unencodable, unwritable */
    uint64_t missing; /* KEYs not in the dataset */
};

/* Encode one sample as PNG (with its boxes and mask outlines drawn when
 * `drawn`, scratch for it) and write it under its name.  0 or -1 (named). */
static int write_sample(struct out_dir *dir, const struct shard_manifest *m,
                        const struct shard_item *it, int drawn, struct shard_image *scratch,
                        struct shard_buf *png)
{
    char name[SAFE_NAME_SIZE], shown[SHOWN_KEY_SIZE];
    const char *key = (const char *)it->key.data;
    struct shard_err err;
    int shortened;
    if (!safe_name(key, it->key.len, PNG_SUFFIX, name, &shortened)) {
        fprintf(stderr, "%s: key '%s' is longer than %u bytes\n", PROG,
                key_for_message(key, it->key.len, shown), SHARD_KEY_MAX);
        return -1;
    }
    const struct shard_image *pixels = &it->pixels;
    /* the stored form (grey, alpha, 16 bits kept), but drawn on in 8-bit RGB */
    if (drawn) {
        if (shard_image_convert(&it->pixels, SHARD_PIXELS_RGB, 8, m->config.background, scratch,
                                &err)) {
            fprintf(stderr, "%s: '%s/%s': %s\n", PROG, dir->path, name, err.msg);
            return -1;
        }
        targets_draw(m, it, scratch);
        pixels = scratch;
    }
    if (shard_encode(pixels, SHARD_CODEC_PNG, 0, png, &err)) {
        fprintf(stderr, "%s: cannot encode '%s/%s': %s\n", PROG, dir->path, name, err.msg);
        return -1;
    }
    if (out_dir_write(dir, PROG, name, (struct out_owner){it->index, OUT_DIR_IMAGE}, png->data,
                      png->len))
        return -1;
    return shortened ? out_dir_list(dir, PROG, name, key, it->key.len) : 0;
}

/* Read the samples at indices[0..count) and write each.  0, or -1 when
 * they cannot be read at all (message printed). */
static int write_all(struct shard_dataset *ds, const struct options *o, struct out_dir *dir,
                     const uint64_t *indices, uint64_t count, struct tally *t)
{
    struct shard_iter_options io;
    shard_iter_options_init(&io);
    io.threads = o->threads ? o->threads : shard_available_cpus();
    io.flags = SHARD_READ_PIXELS;
    struct shard_iter *it;
    struct shard_err err;
    if (shard_iter_new(&it, ds, indices, count, &io, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        return -1;
    }
    struct shard_item item;
    struct shard_buf png = {0};
    struct shard_image scratch = {0};
    memset(&item, 0, sizeof item);
    int rc;
    while ((rc = shard_iter_next(it, &item, &err)) != 0) {
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", PROG, err.msg);
            t->failed++;
        } else if (write_sample(dir, shard_dataset_manifest(ds), &item, o->draw, &scratch, &png) ||
                   fields_write(dir, PROG, shard_dataset_manifest(ds), &item)) {
            t->failed++;
        } else {
            t->written++;
        }
    }
    shard_buf_release(&png);
    shard_image_release(&scratch);
    shard_item_release(&item);
    shard_iter_free(it);
    return 0;
}

/* Who wrote a file (out_dir.h), for a message: "the image of 'b.jpg'",
 * "field 'seg' of 'b.jpg.jpeg'". */
static void owner_name(void *ctx, struct out_owner who, char *buf, size_t size)
{
    struct shard_dataset *ds = ctx;
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    const char *key;
    size_t len;
    struct shard_err err;
    char shown[SHOWN_KEY_SIZE];
    if (shard_dataset_key(ds, who.index, &key, &len, &err))
        snprintf(shown, sizeof shown, "(sample %llu)", (unsigned long long)who.index);
    else
        key_for_message(key, len, shown);
    if (who.what == OUT_DIR_IMAGE)
        snprintf(buf, size, "the image of '%s'", shown);
    else if (who.what < m->config.field_count)
        snprintf(buf, size, "field '%s' of '%s'", m->config.fields[who.what].name, shown);
    else
        snprintf(buf, size, "field number %u of '%s'", who.what, shown);
}

/* Every sample in stored order (malloc'd), or NULL. */
static uint64_t *every_index(uint64_t count)
{
    uint64_t *indices = malloc((count ? count : 1) * sizeof *indices);
    for (uint64_t i = 0; indices && i < count; i++)
        indices[i] = i;
    return indices;
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit(PROG);
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    struct shard_err err;
    struct shard_dataset *ds = NULL;
    struct out_dir dir = {.fd = -1};
    struct tally t = {0, 0, 0};
    uint64_t *indices = NULL, count = 0;
    if (shard_dataset_open(&ds, o.dst, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        return CLI_EXIT_FAILED;
    }
    if ((rc = out_dir_open(&dir, PROG, o.out)))
        goto out;
    dir.owner_name = owner_name;
    dir.owner_ctx = ds;
    rc = CLI_EXIT_FAILED;
    if (o.key_count) {
        if (lookup_keys(ds, o.dst, o.keys, o.key_count, &indices, &count, &t.missing))
            goto out;
    } else if (!(indices = every_index(count = shard_dataset_size(ds)))) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    if (count > o.limit)
        count = o.limit;
    if (write_all(ds, &o, &dir, indices, count, &t))
        goto out;
    if (out_dir_write_listing(&dir, PROG))
        t.failed++;
    fprintf(stderr, "%s: wrote %llu sample%s to '%s'", PROG, (unsigned long long)t.written,
            t.written == 1 ? "" : "s", dir.path);
    if (t.failed)
        fprintf(stderr, "; %llu could not be written (named above)", (unsigned long long)t.failed);
    fputc('\n', stderr);
    rc = t.failed || t.missing ? CLI_EXIT_FAILED : CLI_EXIT_OK;
out:
    free(indices);
    out_dir_close(&dir);
    shard_dataset_close(ds);
    return rc;
}
