/* mkdataset.h - build small datasets for the reader and verifier tests
 * directly with the shard writer, the index-line writer and the manifest
 * writer (no images, no shardify): raw 4x3 records whose pixels are a
 * function of the sample's stored-order index.  With fields (mkds_options),
 * a version 2 dataset whose samples carry the MKDS_FIELDS fields below, of
 * every type, each value (or its absence) a function of the index too, and
 * on request records or shards that contradict the manifest.  Header-only
 * (static functions) so each test program stays self-contained. */
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

/* ---- fields (version 2) ----------------------------------------------------------- */

enum {
    MKDS_CAPTION, /* text: absent when g % 5 == 2, empty (not absent) when g % 7 == 0 */
    MKDS_META,    /* json: absent when g % 3 == 1 */
    MKDS_SCORE,   /* int: absent when g % 4 == 0 */
    MKDS_WEIGHT,  /* float: absent when g is odd */
    MKDS_EMB,     /* float32[3]: absent when g % 6 == 5 */
    MKDS_IDS,     /* int64[2]: always there */
    MKDS_TAGS,    /* labels: absent when g % 5 == 0, an empty list when g % 5 == 3 */
    MKDS_BLOB,    /* bytes: absent when g % 4 == 3, g % 5 bytes long (so sometimes empty) */
    MKDS_FIELDS
};
#define MKDS_EMB_LEN 3
#define MKDS_IDS_LEN 2
#define MKDS_VALUE_MAX 128

static const struct shard_field_decl mkds_field_decls[MKDS_FIELDS] = {
    {.name = "caption", .type = SHARD_FIELD_TEXT, .sidecar = ".txt"},
    {.name = "meta", .type = SHARD_FIELD_JSON, .sidecar = ".json"},
    {.name = "score", .type = SHARD_FIELD_INT, .column = "score"},
    {.name = "weight", .type = SHARD_FIELD_FLOAT, .column = "weight"},
    {.name = "emb", .type = SHARD_FIELD_FLOAT32, .length = MKDS_EMB_LEN, .sidecar = ".emb"},
    {.name = "ids",
     .type = SHARD_FIELD_INT64,
     .length = MKDS_IDS_LEN,
     .sidecar = ".ids",
     .required = 1},
    {.name = "tags", .type = SHARD_FIELD_LABELS, .sidecar = ".tags"},
    {.name = "blob", .type = SHARD_FIELD_BYTES, .sidecar = ".bin"},
};

static inline void mkds_le(uint8_t *p, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Field f of sample g as a record stores it: 1 with its bytes in buf (room
 * for MKDS_VALUE_MAX) and *len, or 0 when the sample does not have it. */
static inline int mkds_field_value(uint64_t g, uint32_t f, uint8_t *buf, size_t *len)
{
    *len = 0;
    switch (f) {
    case MKDS_CAPTION:
        if (g % 5 == 2)
            return 0;
        if (g % 7 != 0) /* "caption ✓ N": UTF-8 beyond ASCII */
            *len = (size_t)snprintf((char *)buf, MKDS_VALUE_MAX, "caption \xe2\x9c\x93 %llu",
                                    (unsigned long long)g);
        return 1;
    case MKDS_META:
        if (g % 3 == 1)
            return 0;
        *len = (size_t)snprintf((char *)buf, MKDS_VALUE_MAX,
                                "{\"g\": %llu, \"deep\": {\"list\": [1, \"\xc3\xbc\", null]}}",
                                (unsigned long long)g);
        return 1;
    case MKDS_SCORE:
        if (g % 4 == 0)
            return 0;
        mkds_le(buf, (uint64_t)((int64_t)g * 1000 - 7000), 8);
        *len = 8;
        return 1;
    case MKDS_WEIGHT: {
        if (g % 2)
            return 0;
        double d = (double)g / 8 - 1;
        uint64_t bits;
        memcpy(&bits, &d, 8);
        mkds_le(buf, bits, 8);
        *len = 8;
        return 1;
    }
    case MKDS_EMB: {
        if (g % 6 == 5)
            return 0;
        float v[MKDS_EMB_LEN] = {(float)g, -0.5f * (float)g, 1e-3f};
        for (int i = 0; i < MKDS_EMB_LEN; i++) {
            uint32_t bits;
            memcpy(&bits, &v[i], 4);
            mkds_le(buf + 4 * i, bits, 4);
        }
        *len = 4 * MKDS_EMB_LEN;
        return 1;
    }
    case MKDS_IDS:
        mkds_le(buf, g, 8);
        mkds_le(buf + 8, (uint64_t) - (int64_t)(g << 33), 8);
        *len = 16;
        return 1;
    case MKDS_TAGS:
        if (g % 5 == 0)
            return 0;
        if (g % 5 != 3) { /* one or two distinct labels */
            mkds_le(buf, g % MKDS_LABELS, 4);
            *len = 4;
            if (g % 2) {
                mkds_le(buf + 4, (g + 1) % MKDS_LABELS, 4);
                *len = 8;
            }
        }
        return 1;
    case MKDS_BLOB:
        if (g % 4 == 3)
            return 0;
        *len = g % 5;
        for (size_t i = 0; i < *len; i++)
            buf[i] = (uint8_t)(g * 7 + i);
        return 1;
    }
    return 0;
}

/* A sample's fields that contradict the manifest (a well-formed record). */
enum mkds_damage {
    MKDS_WRONG_TYPE = 1,     /* its score stored as a float (declared int) */
    MKDS_UNDECLARED,         /* one more field, number MKDS_FIELDS, that none declares */
    MKDS_SHORT_VECTOR,       /* its emb with one float less than declared */
    MKDS_LABEL_OUT_OF_RANGE, /* its tags (not empty) naming label MKDS_LABELS: no such label */
    MKDS_BAD_JSON,           /* its meta (a sample that has one) cut short: not JSON */
};

/* How mkds_build_opts builds a dataset (zero, and -1 for the indices: mkds_build's). */
struct mkds_options {
    int fields;                 /* version 2: every sample carries the MKDS_FIELDS fields */
    int64_t duplicate_of_first; /* when >= 0, this sample gets the key of sample 0 */
    int64_t damaged;            /* when >= 0, this sample's fields have `damage` */
    enum mkds_damage damage;
    int64_t odd_shard; /* when >= 0, this shard is written in the other version
                        * (1 in a version 2 dataset, 2 in a version 1 one) */
};

/* The field area of sample g as o asks (empty without fields). */
static inline void mkds_field_set(const struct mkds_options *o, uint64_t g,
                                  struct shard_field_set *set)
{
    struct shard_err err;
    shard_field_set_clear(set);
    enum mkds_damage damage = o->damaged >= 0 && g == (uint64_t)o->damaged ? o->damage : 0;
    for (uint32_t f = 0; o->fields && f < MKDS_FIELDS; f++) {
        uint8_t v[MKDS_VALUE_MAX];
        size_t len;
        if (!mkds_field_value(g, f, v, &len))
            continue;
        enum shard_field_type t = mkds_field_decls[f].type;
        if (f == MKDS_SCORE && damage == MKDS_WRONG_TYPE)
            t = SHARD_FIELD_FLOAT;
        if (f == MKDS_EMB && damage == MKDS_SHORT_VECTOR)
            len -= 4;
        if (f == MKDS_TAGS && damage == MKDS_LABEL_OUT_OF_RANGE && len >= 4)
            mkds_le(v + len - 4, MKDS_LABELS, 4);
        if (f == MKDS_META && damage == MKDS_BAD_JSON)
            len = 7; /* '{"g": N' */
        if (shard_field_set_add(set, f, t, v, len, &err))
            abort();
    }
    if (damage == MKDS_UNDECLARED &&
        shard_field_set_add(set, MKDS_FIELDS, SHARD_FIELD_TEXT, "x", 1, &err))
        abort();
}

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
    int n = label == SHARD_NO_LABEL ? snprintf(out, size, "g%04llu.png", (unsigned long long)g)
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

/* Create a dataset of `shards` shards holding counts[s] samples each, as o
 * says. */
static inline void mkds_build_opts(struct mkds *d, const uint64_t *counts, uint32_t shards,
                                   const struct mkds_options *o)
{
    memset(d, 0, sizeof *d);
    d->duplicate_of_first = o->duplicate_of_first;
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
    struct shard_field_set set = {0};
    uint64_t by_label[MKDS_LABELS] = {0}, unlabeled = 0, g = 0, field_samples[MKDS_FIELDS] = {0};
    struct shard_config fields_config; /* names the fields in index lines */
    memset(&fields_config, 0, sizeof fields_config);
    fields_config.fields = (struct shard_field_decl *)mkds_field_decls;
    fields_config.field_count = o->fields ? MKDS_FIELDS : 0;
    for (uint32_t s = 0; s < shards; s++) {
        char path[160];
        d->counts[s] = counts[s];
        shard_file_name(s, names[s], sizeof names[s]);
        mkds_path(d, names[s], path, sizeof path);
        struct shard_writer *w;
        int v2 = (o->fields != 0) != (o->odd_shard >= 0 && s == (uint32_t)o->odd_shard);
        if (shard_writer_open_version(&w, path, s, v2 ? 2 : 1, &err))
            abort();
        for (uint64_t r = 0; r < counts[s]; r++, g++) {
            char key[64];
            size_t key_len = mkds_key(d, g, key, sizeof key);
            uint8_t px[MKDS_PIXEL_BYTES];
            mkds_pixels(g, px);
            struct shard_record_meta meta = {mkds_label(g), MKDS_W, MKDS_H, 3, SHARD_CODEC_RAW};
            uint64_t h;
            mkds_field_set(o, g, &set);
            if ((v2 ? shard_record_encode_fields(enc, &meta, (const uint8_t *)key, key_len, px,
                                                 sizeof px, &set, &frame, &h, &err)
                    : shard_record_encode(enc, &meta, (const uint8_t *)key, key_len, px, sizeof px,
                                          &frame, &h, &err)) ||
                shard_writer_add(w, frame.data, frame.len, h, (const uint8_t *)key, key_len,
                                 meta.label, &err))
                abort();
            /* each field's source identity: made up, as the pixels' is */
            struct shard_field_source sources[MKDS_FIELDS];
            uint32_t nsources = 0;
            for (uint32_t f = 0; o->fields && f < MKDS_FIELDS; f++) {
                uint8_t v[MKDS_VALUE_MAX];
                size_t len;
                if (mkds_field_value(g, f, v, &len)) {
                    sources[nsources++] = (struct shard_field_source){f, len, 0xf00d0000ull + g};
                    field_samples[f]++;
                }
            }
            struct shard_sample smp = {key,
                                       key_len,
                                       meta.label,
                                       s,
                                       r,
                                       MKDS_W,
                                       MKDS_H,
                                       1000 + g,
                                       0x1234000000000000ull + g,
                                       NULL,
                                       nsources ? sources : NULL,
                                       nsources};
            if (shard_sample_line_fields(&smp, &fields_config, &index, &err))
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
    m.config.size = MKDS_H; /* 4x3: the short side is 3 */
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
    if (o->fields) {
        m.version = SHARD_MANIFEST_VERSION_FIELDS;
        m.config.fields = (struct shard_field_decl *)mkds_field_decls;
        m.config.field_count = MKDS_FIELDS;
        m.config.max_field_bytes = SHARD_MAX_FIELD_BYTES_DEFAULT;
        m.field_samples = field_samples;
    }
    if (shard_manifest_write(d->dir, &m, &err))
        abort();
    shard_field_set_release(&set);
    shard_buf_release(&frame);
    shard_buf_release(&index);
    shard_record_encoder_free(enc);
}

/* The options of a version 2 dataset whose samples carry the fields,
 * nothing duplicated or damaged. */
static inline struct mkds_options mkds_fields_options(void)
{
    struct mkds_options o = {1, -1, -1, 0, -1};
    return o;
}

/* Without fields; sample duplicate_of_first (>= 0) gets the key of sample 0. */
static inline void mkds_build_with(struct mkds *d, const uint64_t *counts, uint32_t shards,
                                   int64_t duplicate_of_first)
{
    struct mkds_options o = {0, duplicate_of_first, -1, 0, -1};
    mkds_build_opts(d, counts, shards, &o);
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

/* A dataset built as o says, in a malloc'd struct (NULL when out of
 * memory); mkds_free removes and frees it (and accepts NULL). */
static inline struct mkds *mkds_new(const uint64_t *counts, uint32_t shards,
                                    const struct mkds_options *o)
{
    struct mkds *d = malloc(sizeof *d);
    if (d)
        mkds_build_opts(d, counts, shards, o);
    return d;
}

static inline void mkds_free(struct mkds *d)
{
    if (!d)
        return;
    mkds_remove(d);
    free(d);
}

/* cmocka fixtures over a dataset built by mkds_build (include cmocka.h
 * first): a setup builds one with `counts` (and options o) in *state, the
 * teardown removes it; mkds_open opens it or fails the test. */
static inline int mkds_setup_opts(void **state, const uint64_t *counts, size_t shards,
                                  const struct mkds_options *o)
{
    *state = mkds_new(counts, (uint32_t)shards, o);
    return *state ? 0 : -1;
}

static inline int mkds_setup_counts(void **state, const uint64_t *counts, size_t shards)
{
    struct mkds_options o = {0, -1, -1, 0, -1};
    return mkds_setup_opts(state, counts, shards, &o);
}

static inline int mkds_teardown(void **state)
{
    mkds_free(*state);
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
