/* mkdataset.h - build small datasets for the reader and verifier tests
 * directly with the shard writer, the index-line writer and the manifest
 * writer (no images, no shardify): raw 4x3 records whose pixels are a
 * function of the sample's stored-order index.  Header-only (static
 * functions) so each test program stays self-contained. */
#ifndef SHARDKIT_TEST_MKDATASET_H
#define SHARDKIT_TEST_MKDATASET_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "shardkit.h"

#define MKDS_W 4
#define MKDS_H 3
#define MKDS_PIXEL_BYTES (MKDS_W * MKDS_H * 3)
#define MKDS_MAX_SHARDS 64
#define MKDS_LABELS 3

static const char *const mkds_label_names[MKDS_LABELS] = {"ant", "bee", "cat"};

struct mkds {
    char dir[96];
    uint32_t shards;
    uint64_t counts[MKDS_MAX_SHARDS];
    uint64_t samples;
    /* when set, this sample gets the key of sample 0 (a duplicate) */
    int64_t duplicate_of_first;
};

/* Label of sample g: every fourth sample has none. */
static inline int32_t mkds_label(uint64_t g)
{
    return g % 4 == 3 ? SHARD_NO_LABEL : (int32_t)(g % MKDS_LABELS);
}

/* Key of sample g: "LABEL/gNNNN.png" ("gNNNN.png" when unlabeled), so the
 * "dir" label rule gives its label back. */
static inline size_t mkds_key(const struct mkds *d, uint64_t g, char *out, size_t size)
{
    if (d->duplicate_of_first >= 0 && g == (uint64_t)d->duplicate_of_first)
        g = 0;
    int32_t label = mkds_label(g);
    int n = label == SHARD_NO_LABEL
                ? snprintf(out, size, "g%04llu.png", (unsigned long long)g)
                : snprintf(out, size, "%s/g%04llu.png", mkds_label_names[label],
                           (unsigned long long)g);
    return (size_t)n;
}

static inline void mkds_pixels(uint64_t g, uint8_t *px)
{
    for (size_t i = 0; i < MKDS_PIXEL_BYTES; i++)
        px[i] = (uint8_t)(g * 37 + i * 11 + 5);
}

static inline void mkds_path(const struct mkds *d, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", d->dir, name);
}

/* Create a dataset of `shards` shards holding counts[s] samples each. */
static inline void mkds_build_with(struct mkds *d, const uint64_t *counts, uint32_t shards,
                            int64_t duplicate_of_first)
{
    memset(d, 0, sizeof *d);
    d->duplicate_of_first = duplicate_of_first;
    strcpy(d->dir, "/tmp/shardkit-mkds.XXXXXX");
    if (!mkdtemp(d->dir))
        abort();
    d->shards = shards;
    struct shard_err err;
    struct shard_record_encoder *enc;
    if (shard_record_encoder_new(&enc, 3, &err))
        abort();
    struct shard_manifest_shard ms[MKDS_MAX_SHARDS];
    static char names[MKDS_MAX_SHARDS][32];
    struct shard_buf frame = {0}, index = {0};
    uint64_t by_label[MKDS_LABELS] = {0}, unlabeled = 0, g = 0;
    for (uint32_t s = 0; s < shards; s++) {
        char path[160];
        d->counts[s] = counts[s];
        shard_file_name(s, names[s], sizeof names[s]);
        mkds_path(d, names[s], path, sizeof path);
        struct shard_writer *w;
        if (shard_writer_open(&w, path, s, &err))
            abort();
        for (uint64_t r = 0; r < counts[s]; r++, g++) {
            char key[64];
            size_t key_len = mkds_key(d, g, key, sizeof key);
            uint8_t px[MKDS_PIXEL_BYTES];
            mkds_pixels(g, px);
            struct shard_record_meta meta = {mkds_label(g), MKDS_W, MKDS_H, 3, SHARD_CODEC_RAW};
            uint64_t h;
            if (shard_record_encode(enc, &meta, (const uint8_t *)key, key_len, px, sizeof px,
                                    &frame, &h, &err) ||
                shard_writer_add(w, frame.data, frame.len, h, (const uint8_t *)key, key_len,
                                 meta.label, &err))
                abort();
            struct shard_sample smp = {key, key_len, meta.label, s, r, MKDS_W, MKDS_H,
                                       1000 + g, 0x1234000000000000ull + g, NULL, NULL, 0};
            if (shard_sample_line(&smp, &index, &err))
                abort();
            if (meta.label == SHARD_NO_LABEL)
                unlabeled++;
            else
                by_label[meta.label]++;
        }
        ms[s] = (struct shard_manifest_shard){names[s], counts[s], 0, 0};
        if (shard_writer_finish(w, &ms[s].bytes, &ms[s].xxh3, &err))
            abort();
        shard_writer_free(w);
    }
    d->samples = g;
    char path[160];
    mkds_path(d, SHARD_INDEX_FILE, path, sizeof path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(index.data, 1, index.len, f) != index.len || fclose(f))
        abort();

    struct shard_manifest m;
    memset(&m, 0, sizeof m);
    shard_config_init(&m.config);
    m.config.codec = SHARD_CODEC_RAW;
    m.config.size = MKDS_H;  /* 4x3: the short side is 3 */
    m.config.labels = "dir";
    m.source_kind = "directory";
    m.samples = g;
    m.unlabeled = unlabeled;
    m.labels = (char **)mkds_label_names;
    m.label_samples = by_label;
    m.label_count = MKDS_LABELS;
    m.shards = ms;
    m.shard_count = shards;
    m.index_file = SHARD_INDEX_FILE;
    m.index_entries = g;
    m.index_bytes = index.len;
    m.index_xxh3 = XXH3_64bits(index.data, index.len);
    if (shard_manifest_write(d->dir, &m, &err))
        abort();
    shard_buf_release(&frame);
    shard_buf_release(&index);
    shard_record_encoder_free(enc);
}

static inline void mkds_build(struct mkds *d, const uint64_t *counts, uint32_t shards)
{
    mkds_build_with(d, counts, shards, -1);
}

static inline void mkds_remove(struct mkds *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0)
        abort();
}

/* Read a whole file of the dataset into a malloc'd buffer. */
static inline uint8_t *mkds_slurp(const struct mkds *d, const char *name, size_t *len)
{
    char path[160];
    mkds_path(d, name, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (!buf || fread(buf, 1, *len, f) != *len)
        abort();
    fclose(f);
    return buf;
}

static inline void mkds_spit(const struct mkds *d, const char *name, const uint8_t *buf, size_t len)
{
    char path[160];
    mkds_path(d, name, path, sizeof path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
        abort();
}

/* Flip the bits of one byte of a file of the dataset. */
static inline void mkds_flip(const struct mkds *d, const char *name, size_t pos)
{
    size_t len;
    uint8_t *buf = mkds_slurp(d, name, &len);
    buf[pos] ^= 0xff;
    mkds_spit(d, name, buf, len);
    free(buf);
}

/* cmocka fixtures over a dataset built by mkds_build (include cmocka.h
 * first): the group setup builds one with `counts` in *state, the teardown
 * removes it; mkds_open opens it or fails the test. */
static inline int mkds_setup_counts(void **state, const uint64_t *counts, size_t shards)
{
    struct mkds *d = malloc(sizeof *d);
    if (!d)
        return -1;
    mkds_build(d, counts, shards);
    *state = d;
    return 0;
}

static inline int mkds_teardown(void **state)
{
    mkds_remove(*state);
    free(*state);
    return 0;
}

static inline struct shard_dataset *mkds_open(const struct mkds *d)
{
    struct shard_dataset *ds;
    struct shard_err err;
    if (shard_dataset_open(&ds, d->dir, &err))
        fail_msg("cannot open: %s", err.msg);
    return ds;
}

#endif
