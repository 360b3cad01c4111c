/* manifest.c - manifest.json: the dataset's description (see shardkit/manifest.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "manifest/manifest_internal.h"
#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "shardkit/format.h"

#define DEFAULT_SIZE 512
#define DEFAULT_QUALITY 90
#define DEFAULT_ZSTD_LEVEL 3
#define DEFAULT_ZSTD_LEVEL_RAW (-100)
#define DEFAULT_SHARD_SIZE (256ull << 20)
#define DEFAULT_MAX_PIXELS 100000000ull
#define DEFAULT_MAX_FILE_BYTES (1ull << 30)
#define DUMP_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER)

void shard_config_init(struct shard_config *c)
{
    memset(c, 0, sizeof *c);
    c->size = DEFAULT_SIZE;
    c->fit = SHARD_FIT_SHORT;
    c->upscale = 1;
    c->codec = SHARD_CODEC_JPEG;
    c->quality = DEFAULT_QUALITY;
    c->zstd_level = 0;
    c->shard_size = DEFAULT_SHARD_SIZE;
    c->shuffle = 1;
    c->max_pixels = DEFAULT_MAX_PIXELS;
    c->max_file_bytes = DEFAULT_MAX_FILE_BYTES;
    c->background[0] = c->background[1] = c->background[2] = 255;
    c->channels = SHARD_PIXELS_RGB;
    c->depth = 8;
}

int shard_config_zstd_level(const struct shard_config *c)
{
    if (c->zstd_level)
        return c->zstd_level;
    return c->codec == SHARD_CODEC_RAW ? DEFAULT_ZSTD_LEVEL_RAW : DEFAULT_ZSTD_LEVEL;
}

void shard_config_release(struct shard_config *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; c->fields && i < c->field_count; i++)
        shard_field_decl_release(&c->fields[i]);
    free(c->fields);
    c->fields = NULL;
    c->field_count = 0;
    char **owned[] = {&c->labels, &c->annotations,     &c->coco, &c->classes,
                      &c->split,  &c->annotations_key, &c->keys};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) {
        free(*owned[i]);
        *owned[i] = NULL;
    }
}

uint16_t sk_config_format_version(const struct shard_config *c)
{
    return c->field_count ? SHARD_FORMAT_VERSION_FIELDS : SHARD_FORMAT_VERSION;
}

uint16_t sk_manifest_version(const struct shard_manifest *m)
{
    /* 0 (a manifest filled in before version 3 existed) is 8-bit RGB */
    if ((m->channels && m->channels != SHARD_PIXELS_RGB) || (m->depth && m->depth != 8) || m->mixed)
        return SHARD_MANIFEST_VERSION_PIXELS;
    return sk_config_format_version(&m->config);
}

/* 1 when the config declares a BOXES field. */
static int config_has_boxes(const struct shard_config *c)
{
    for (uint32_t i = 0; i < c->field_count; i++)
        if (c->fields[i].type == SHARD_FIELD_BOXES)
            return 1;
    return 0;
}

int32_t shard_config_field(const struct shard_config *c, const char *name)
{
    for (uint32_t i = 0; i < c->field_count; i++)
        if (!strcmp(c->fields[i].name, name))
            return (int32_t)i;
    return -1;
}

int shard_field_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > SHARD_FIELD_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        int letter = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        int other = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
        if (!letter && (i == 0 || !other))
            return 0;
    }
    return 1;
}

/* config.fields[i] as the manifest writes it */
static json_t *field_decl_to_json(const struct shard_field_decl *d)
{
    char type[48];
    if (shard_field_type_is_vector(d->type))
        snprintf(type, sizeof type, "%s[%u]", shard_field_type_name(d->type), d->length);
    else
        snprintf(type, sizeof type, "%s", shard_field_type_name(d->type));
    json_t *o = json_object();
    int bad = !o || json_object_set_new(o, "name", json_string(d->name)) ||
              json_object_set_new(o, "type", json_string(type));
    if (d->sidecar)
        bad |= json_object_set_new(o, "sidecar", json_string(d->sidecar));
    else if (d->folder)
        bad |= json_object_set_new(o, "folder", json_string(d->folder));
    else if (d->coco)
        bad |= json_object_set_new(o, "coco", json_string(d->coco));
    else
        bad |= json_object_set_new(o, "column", json_string(d->column ? d->column : ""));
    bad |= json_object_set_new(o, "required", json_boolean(d->required));
    if (d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_MASK) {
        json_t *classes = json_array();
        bad |= !classes;
        for (uint32_t i = 0; classes && i < d->class_count; i++)
            bad |= json_array_append_new(classes,
                                         json_pack("{s:I, s:s}", "id", (json_int_t)d->classes[i].id,
                                                   "name", d->classes[i].name));
        bad |= json_object_set_new(o, "classes", classes);
    }
    if (d->has_ignore)
        bad |= json_object_set_new(o, "ignore", json_integer(d->ignore));
    if (d->replace)
        bad |= json_object_set_new(o, "replace", json_string(d->replace));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *config_to_json(const struct shard_config *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "size", json_integer(c->size));
    bad |= json_object_set_new(o, "fit", json_string(shard_fit_name(c->fit)));
    bad |= json_object_set_new(o, "upscale", json_boolean(c->upscale));
    bad |= json_object_set_new(o, "codec", json_string(shard_codec_name(c->codec)));
    bad |= json_object_set_new(o, "quality", json_integer(c->quality));
    bad |= json_object_set_new(o, "zstd_level", json_integer(shard_config_zstd_level(c)));
    bad |= sk_jsonkey_set_uint(o, "shard_size", c->shard_size);
    bad |= json_object_set_new(o, "labels", json_string(c->labels ? c->labels : "dir"));
    bad |= json_object_set_new(o, "shuffle", json_boolean(c->shuffle));
    /* seeds are 64-bit: a string keeps every value exact in any JSON reader */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->shuffle_seed);
    bad |= json_object_set_new(o, "shuffle_seed", json_string(seed));
    /* only when by archive: other datasets keep the config they always had */
    if (c->order == SHARD_ORDER_ARCHIVE)
        bad |= json_object_set_new(o, "order", json_string("archive"));
    /* only when set, likewise */
    if (c->classes)
        bad |= json_object_set_new(o, "classes", json_string(c->classes));
    if (c->split)
        bad |= json_object_set_new(o, "split", json_string(c->split));
    if (c->annotations_key)
        bad |= json_object_set_new(o, "annotations_key", json_string(c->annotations_key));
    if (c->keys)
        bad |= json_object_set_new(o, "keys", json_string(c->keys));
    bad |= sk_jsonkey_set_uint(o, "max_pixels", c->max_pixels);
    bad |= sk_jsonkey_set_uint(o, "max_file_bytes", c->max_file_bytes);
    bad |= json_object_set_new(o, "background",
                               json_pack("[iii]", c->background[0], c->background[1],
                                         c->background[2]));
    /* version 2 only: a dataset without fields keeps the config it always had */
    if (c->field_count) {
        json_t *fields = json_array();
        bad |= !fields;
        for (uint32_t i = 0; fields && i < c->field_count; i++) {
            json_t *f = field_decl_to_json(&c->fields[i]);
            bad |= !f || json_array_append_new(fields, f);
        }
        bad |= json_object_set_new(o, "fields", fields);
        if (c->annotations)
            bad |= json_object_set_new(o, "annotations", json_string(c->annotations));
        if (c->coco)
            bad |= json_object_set_new(o, "coco", json_string(c->coco));
        bad |= sk_jsonkey_set_uint(o, "max_field_bytes", c->max_field_bytes);
        if (config_has_boxes(c))
            bad |= json_object_set_new(o, "boxes",
                                       json_string(c->boxes_strict ? "strict" : "clamp"));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int shard_config_dump(const struct shard_config *c, char **out, struct shard_err *err)
{
    json_t *o = config_to_json(c);
    *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "cannot serialise the config");
}

static json_t *reject_to_json(const struct shard_reject *r, struct shard_err *err)
{
    json_t *o = json_object();
    if (!o || sk_jsonkey_set(o, r->key, r->key_len, err) ||
        json_object_set_new(o, "reason", json_string(r->reason ? r->reason : "")) ||
        (r->has_source && (sk_jsonkey_set_uint(o, "source_bytes", r->source_bytes) ||
                           sk_jsonkey_set_hex64(o, "source_xxh3", r->source_xxh3)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* "lineage": an incremental run's previous dataset and what changed since
 * (with `fields`: also the samples whose fields changed). */
static json_t *lineage_to_json(const struct shard_lineage *l, int fields)
{
    json_t *o = json_object();
    int bad = !o;
    bad |= sk_jsonkey_set_hex64(o, "previous_manifest_xxh3", l->previous_manifest_xxh3);
    if (l->full_rebuild) {
        bad |= json_object_set_new(o, "full_rebuild", json_string(l->full_rebuild));
    } else {
        bad |= sk_jsonkey_set_uint(o, "added", l->added);
        bad |= sk_jsonkey_set_uint(o, "changed", l->changed);
        bad |= sk_jsonkey_set_uint(o, "unchanged", l->unchanged);
        bad |= sk_jsonkey_set_uint(o, "removed", l->removed);
        bad |= sk_jsonkey_set_uint(o, "reused", l->reused);
        bad |= sk_jsonkey_set_uint(o, "relabeled", l->relabeled);
        bad |= sk_jsonkey_set_uint(o, "rejected_again", l->rejected_again);
        bad |= sk_jsonkey_set_uint(o, "reconverted", l->reconverted);
        if (fields)
            bad |= sk_jsonkey_set_uint(o, "refielded", l->refielded);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* An index file's entry: {file, entries, bytes, xxh3[, shards][, keys]}
 * (`shards` in the list of a merged dataset only). */
static json_t *index_to_json(const struct shard_manifest_index *x, int with_shards)
{
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "file", json_string(x->file ? x->file : SHARD_INDEX_FILE));
    bad |= sk_jsonkey_set_uint(o, "entries", x->entries);
    bad |= sk_jsonkey_set_uint(o, "bytes", x->bytes);
    bad |= sk_jsonkey_set_hex64(o, "xxh3", x->xxh3);
    if (with_shards)
        bad |= sk_jsonkey_set_uint(o, "shards", x->shards);
    if (x->keys_file) {
        json_t *k = json_object();
        bad |= !k || json_object_set_new(k, "file", json_string(x->keys_file));
        bad |= sk_jsonkey_set_uint(k, "bytes", x->keys_bytes);
        bad |= sk_jsonkey_set_hex64(k, "xxh3", x->keys_xxh3);
        bad |= json_object_set_new(o, "keys", k);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* source: {kind[, archives]} */
static json_t *source_to_json(const struct shard_manifest *m)
{
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "kind",
                               json_string(m->source_kind ? m->source_kind : "directory"));
    if (m->archives_file) {
        json_t *a = json_object();
        bad |= !a || json_object_set_new(a, "file", json_string(m->archives_file));
        bad |= sk_jsonkey_set_uint(a, "entries", m->archives_entries);
        bad |= sk_jsonkey_set_uint(a, "bytes", m->archives_bytes);
        bad |= sk_jsonkey_set_hex64(a, "xxh3", m->archives_xxh3);
        bad |= json_object_set_new(o, "archives", a);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *manifest_to_json(const struct shard_manifest *m, struct shard_err *err)
{
    json_t *root = json_object(), *counts = json_object(), *by_label = json_object();
    json_t *labels = json_array(), *shards = json_array(), *rejected = json_array();
    json_t *index = json_object(), *source = source_to_json(m),
           *config = config_to_json(&m->config);
    int bad = !root || !counts || !by_label || !labels || !shards || !rejected || !index ||
              !source || !config;
    if (bad)
        goto fail;
    bad |= json_object_set_new(root, "format", json_string(SHARD_MANIFEST_FORMAT));
    int v2 = m->config.field_count > 0;
    uint16_t version = sk_manifest_version(m);
    bad |= json_object_set_new(root, "version", json_integer(version));
    /* version 3 only: a dataset of 8-bit RGB keeps the config it always had */
    if (version == SHARD_MANIFEST_VERSION_PIXELS) {
        const struct shard_config *c = &m->config;
        bad |= json_object_set_new(config, "pixels", json_string(shard_pixels_name(c->channels)));
        bad |= json_object_set_new(config, "depth",
                                   c->depth == SHARD_DEPTH_AUTO ? json_string("auto")
                                                                : json_integer(c->depth));
    }
    bad |= json_object_set_new(root, "config", config);
    config = NULL;
    bad |= json_object_set_new(root, "source", source);
    source = NULL;
    for (uint32_t i = 0; i < m->label_count; i++) {
        bad |= json_array_append_new(labels, json_string(m->labels[i]));
        bad |= sk_jsonkey_set_uint(by_label, m->labels[i], m->label_samples[i]);
    }
    bad |= sk_jsonkey_set_uint(counts, "samples", m->samples);
    bad |= sk_jsonkey_set_uint(counts, "rejected", m->rejected);
    bad |= sk_jsonkey_set_uint(counts, "ignored", m->ignored);
    bad |= sk_jsonkey_set_uint(counts, "unlabeled", m->unlabeled);
    /* only when there are some: manifests without stay as they always were */
    if (m->warned)
        bad |= sk_jsonkey_set_uint(counts, "warned", m->warned);
    bad |= json_object_set_new(counts, "by_label", by_label);
    by_label = NULL;
    if (v2) {
        json_t *fields = json_object();
        bad |= !fields;
        for (uint32_t i = 0; fields && i < m->config.field_count; i++)
            bad |= sk_jsonkey_set_uint(fields, m->config.fields[i].name,
                                       m->field_samples ? m->field_samples[i] : 0);
        bad |= json_object_set_new(counts, "fields", fields);
        bad |= sk_jsonkey_set_uint(counts, "sidecars", m->sidecars);
        bad |= sk_jsonkey_set_uint(counts, "orphans", m->orphan_count);
        if (m->config.annotations) {
            bad |= sk_jsonkey_set_uint(counts, "annotation_rows", m->annotation_rows);
            bad |= sk_jsonkey_set_uint(counts, "annotation_rows_unmatched",
                                       m->annotation_rows_unmatched);
        }
        if (m->config.coco) {
            bad |= sk_jsonkey_set_uint(counts, "coco_images", m->coco_images);
            bad |= sk_jsonkey_set_uint(counts, "coco_images_unmatched", m->coco_images_unmatched);
            bad |= sk_jsonkey_set_uint(counts, "coco_annotations", m->coco_annotations);
            bad |= sk_jsonkey_set_uint(counts, "coco_annotations_unmatched",
                                       m->coco_annotations_unmatched);
        }
        if (config_has_boxes(&m->config)) {
            bad |= sk_jsonkey_set_uint(counts, "boxes", m->boxes);
            bad |= sk_jsonkey_set_uint(counts, "boxes_dropped", m->boxes_dropped);
        }
    }
    bad |= json_object_set_new(root, "counts", counts);
    counts = NULL;
    bad |= json_object_set_new(root, "labels", labels);
    labels = NULL;
    for (uint32_t i = 0; i < m->shard_count; i++) {
        const struct shard_manifest_shard *s = &m->shards[i];
        json_t *o = json_object();
        bad |= !o || json_object_set_new(o, "file", json_string(s->file));
        bad |= sk_jsonkey_set_uint(o, "samples", s->samples);
        bad |= sk_jsonkey_set_uint(o, "bytes", s->bytes);
        bad |= sk_jsonkey_set_hex64(o, "xxh3", s->xxh3);
        bad |= json_array_append_new(shards, o);
    }
    bad |= json_object_set_new(root, "shards", shards);
    shards = NULL;
    if (m->index_count > 1) { /* merged from parts: the parts' files */
        json_decref(index);
        index = json_array();
        bad |= !index;
        for (uint32_t i = 0; index && i < m->index_count; i++) {
            json_t *o = index_to_json(&m->indexes[i], 1);
            bad |= !o || json_array_append_new(index, o);
        }
        bad |= json_object_set_new(root, "indexes", index);
    } else {
        /* one file: the four members describe it, indexes[0] adds its keys */
        struct shard_manifest_index one = {0};
        if (m->index_count)
            one = m->indexes[0];
        one.file = m->index_file ? m->index_file : SHARD_INDEX_FILE;
        one.entries = m->index_entries;
        one.bytes = m->index_bytes;
        one.xxh3 = m->index_xxh3;
        json_decref(index);
        index = index_to_json(&one, 0);
        bad |= !index || json_object_set_new(root, "index", index);
    }
    index = NULL;
    for (uint64_t i = 0; i < m->reject_count && !bad; i++) {
        json_t *o = reject_to_json(&m->rejects[i], err);
        bad |= !o || json_array_append_new(rejected, o);
    }
    if (version == SHARD_MANIFEST_VERSION_PIXELS || m->stored_width) {
        json_t *stored = json_pack("{s:s, s:i}", "pixels",
                                   shard_pixels_name(m->channels ? m->channels : SHARD_PIXELS_RGB),
                                   "depth", m->depth ? (int)m->depth : 8);
        if (stored && m->mixed)
            bad |= json_object_set_new(stored, "mixed", json_true());
        if (stored && m->stored_width)
            bad |= json_object_set_new(stored, "size",
                                       json_pack("[II]", (json_int_t)m->stored_width,
                                                 (json_int_t)m->stored_height));
        bad |= !stored || json_object_set_new(root, "stored", stored);
    }
    bad |= json_object_set_new(root, "rejected", rejected);
    rejected = NULL;
    if (v2 && !bad) {
        json_t *orphans = json_array();
        bad |= !orphans;
        for (uint64_t i = 0; orphans && i < m->orphan_count && !bad; i++) {
            json_t *o = json_object();
            bad |= !o || sk_jsonkey_set(o, m->orphans[i].key, m->orphans[i].key_len, err) ||
                   json_array_append_new(orphans, o);
        }
        bad |= json_object_set_new(root, "orphans", orphans);
    }
    if (m->lineage && !bad) { /* last: everything above is what a full run writes */
        json_t *lineage = lineage_to_json(m->lineage, v2);
        bad |= !lineage || json_object_set_new(root, "lineage", lineage);
    }
    if (!bad)
        return root;
fail:
    json_decref(root);
    json_decref(counts);
    json_decref(by_label);
    json_decref(labels);
    json_decref(shards);
    json_decref(rejected);
    json_decref(index);
    json_decref(source);
    json_decref(config);
    shard_err_set(err, SHARD_ENOMEM, "cannot build the manifest");
    return NULL;
}

int shard_manifest_dump(const struct shard_manifest *m, char **out, struct shard_err *err)
{
    *out = NULL;
    json_t *root = manifest_to_json(m, err);
    if (!root)
        return SHARD_ENOMEM; /* manifest_to_json said "cannot build the manifest" */
    char *text = json_dumps(root, DUMP_FLAGS);
    json_decref(root);
    if (!text)
        return shard_err_set(err, SHARD_ENOMEM, "cannot serialise the manifest");
    /* end with a newline like any text file */
    size_t n = strlen(text);
    char *t = realloc(text, n + 2);
    if (!t) {
        free(text);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    *out = t;
    return SHARD_OK;
}

int sk_manifest_write_at(int dirfd, const char *dir, const struct shard_manifest *m,
                         struct shard_err *err)
{
    char *text;
    int rc = shard_manifest_dump(m, &text, err);
    if (rc)
        return rc;
    rc = sk_fs_write_atomic_at(dirfd, dir, SHARD_MANIFEST_FILE, text, strlen(text), err);
    free(text);
    return rc;
}

int shard_manifest_write(const char *dir, const struct shard_manifest *m, struct shard_err *err)
{
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the dataset named */
    if (dirfd < 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open directory '%s'", dir);
    int rc = sk_manifest_write_at(dirfd, dir, m, err);
    close(dirfd);
    return rc;
}

void shard_reject_release(struct shard_reject *r)
{
    if (!r)
        return;
    free(r->key);
    free(r->reason);
    memset(r, 0, sizeof *r);
}

void shard_manifest_release(struct shard_manifest *m)
{
    if (!m)
        return;
    shard_config_release(&m->config);
    free(m->source_kind);
    for (uint32_t i = 0; i < m->label_count; i++)
        free(m->labels[i]);
    free(m->labels);
    free(m->label_samples);
    for (uint32_t i = 0; i < m->shard_count; i++)
        free(m->shards[i].file);
    free(m->shards);
    for (uint64_t i = 0; i < m->reject_count; i++)
        shard_reject_release(&m->rejects[i]);
    free(m->rejects);
    free(m->index_file);
    for (uint32_t i = 0; m->indexes && i < m->index_count; i++) {
        free(m->indexes[i].file);
        free(m->indexes[i].keys_file);
    }
    free(m->indexes);
    free(m->archives_file);
    free(m->field_samples);
    for (uint64_t i = 0; m->orphans && i < m->orphan_count; i++)
        free(m->orphans[i].key);
    free(m->orphans);
    memset(m, 0, sizeof *m);
}

/* ---- loading ------------------------------------------------------------- */

/* How a load treats a manifest that parses but contradicts itself: strict
 * (no callback: the first contradiction fails the load, naming it) or
 * lenient (each is handed to the callback, and loading goes on). */
struct load {
    struct shard_err *err;
    sk_manifest_problem_fn problem;
    void *user;
};

static int bad_field(struct shard_err *err, const char *what)
{
    return shard_err_set(err, SHARD_ECORRUPT, "manifest: %s", what);
}

/* Hand a failure found with a local shard_err on to err (which may be
 * NULL); returns its code. */
static int pass_on(struct shard_err *err, const struct shard_err *e)
{
    if (err)
        *err = *e;
    return e->code;
}

/* A contradiction, as a complete message.  0: go on; else the load fails
 * with it (err set). */
static int contradiction(struct load *l, const struct shard_err *e)
{
    if (l->problem && l->problem(l->user, e) == 0)
        return SHARD_OK;
    return pass_on(l->err, e);
}

static int inconsistent(struct load *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int inconsistent(struct load *l, const char *fmt, ...)
{
    struct shard_err e = {SHARD_ECORRUPT, "manifest: "};
    va_list ap;
    va_start(ap, fmt);
    size_t n = strlen(e.msg);
    vsnprintf(e.msg + n, sizeof e.msg - n, fmt, ap);
    va_end(ap);
    return contradiction(l, &e);
}

/* A file name in DST: plain, no directories, no dot files. */
static int plain_name(const char *s)
{
    return s[0] && s[0] != '.' && !strchr(s, '/');
}

/* A copy of string field `field` of o in *out.  0, SHARD_ENOMEM (with its
 * message) or SHARD_ECORRUPT (o is not an object, or the field is missing or
 * not a string) with no message: the caller names the field. */
static int get_string(const json_t *o, const char *field, char **out, struct shard_err *err)
{
    const json_t *v = json_object_get(o, field); /* NULL when o is not an object */
    if (!json_is_string(v))
        return SHARD_ECORRUPT;
    *out = strdup(json_string_value(v));
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

static int config_base_from_json(const json_t *o, struct shard_config *c, struct shard_err *err);

/* config.fields[i] into *d (zeroed): 0, SHARD_ENOMEM or SHARD_ECORRUPT
 * naming it. */
/* config.fields[i].classes (a BOXES or MASK field's) into d: a non-empty
 * array of {id, name}, ids increasing, names non-empty and unique.
 * 0, SHARD_ENOMEM or SHARD_ECORRUPT naming it. */
static int field_classes_from_json(const json_t *a, size_t i, struct shard_field_decl *d,
                                   struct shard_err *err)
{
    size_t n = json_array_size(a);
    uint32_t max = d->type == SHARD_FIELD_MASK ? SHARD_MASK_CLASS_MAX : INT32_MAX;
    if (!json_is_array(a) || n == 0 || n > SHARD_FIELD_CLASSES_MAX)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu] (a %s field) "
                             "needs \"classes\": 1..%u of {id, name}",
                             i, shard_field_type_name(d->type), SHARD_FIELD_CLASSES_MAX);
    if (!(d->classes = calloc(n, sizeof *d->classes)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++) {
        json_int_t id = -1;
        const char *name = NULL;
        json_error_t jerr;
        if (json_unpack_ex(json_array_get(a, k), &jerr, JSON_STRICT, "{s:I, s:s}", "id", &id,
                           "name", &name) != 0)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "manifest: config.fields[%zu].classes[%zu]: "
                                 "%s",
                                 i, k, jerr.text);
        if (id < 0 || id > (json_int_t)max || (k && id <= (json_int_t)d->classes[k - 1].id) ||
            !name[0])
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "manifest: config.fields[%zu].classes[%zu]: "
                                 "ids must increase within 0..%u and names be non-empty",
                                 i, k, max);
        for (size_t j = 0; j < k; j++)
            if (!strcmp(d->classes[j].name, name))
                return shard_err_set(err, SHARD_ECORRUPT,
                                     "manifest: config.fields[%zu] names "
                                     "class '%s' twice",
                                     i, name);
        d->classes[k].id = (uint32_t)id;
        if (!(d->classes[k].name = strdup(name)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        d->class_count = (uint32_t)(k + 1);
    }
    return SHARD_OK;
}

static int field_decl_from_json(const json_t *o, size_t i, struct shard_field_decl *d,
                                struct shard_err *err)
{
    const char *name = NULL, *type = NULL, *sidecar = NULL, *column = NULL, *coco = NULL;
    const char *folder = NULL, *replace = NULL;
    json_t *classes = NULL, *ignore = NULL;
    int required = 0;
    json_error_t jerr;
    if (json_unpack_ex((json_t *)o, &jerr, JSON_STRICT,
                       "{s:s, s:s, s?s, s?s, s?s, s?s, s:b, s?o, s?o, s?s}", "name", &name, "type",
                       &type, "sidecar", &sidecar, "column", &column, "folder", &folder, "coco",
                       &coco, "required", &required, "classes", &classes, "ignore", &ignore,
                       "replace", &replace) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.fields[%zu]: %s", i, jerr.text);
    struct shard_err e;
    if (!shard_field_name_valid(name))
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.fields[%zu]: bad name", i);
    if (shard_field_type_parse(type, &d->type, &d->length, &e))
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.fields[%zu]: %s", i, e.msg);
    if ((!!sidecar + !!column + !!coco + !!folder) != 1 ||
        (sidecar &&
         ((sidecar[0] != '.' && sidecar[0] != '_') || !sidecar[1] || strchr(sidecar, '/'))) ||
        (column && !column[0]) || (folder && (!folder[0] || folder[strlen(folder) - 1] != '/')))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu] needs one "
                             "source: a \"sidecar\" suffix, a \"column\", a \"folder\" or "
                             "\"coco\"",
                             i);
    if (folder && d->type != SHARD_FIELD_MASK)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: only a mask "
                             "field comes from a \"folder\"",
                             i);
    int geometric = d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_MASK;
    if (coco && !((d->type == SHARD_FIELD_BOXES && !strcmp(coco, SHARD_COCO_BBOX)) ||
                  (d->type == SHARD_FIELD_MASK && !strcmp(coco, SHARD_COCO_SEGMENTATION)) ||
                  (d->type == SHARD_FIELD_INSTANCES && !strcmp(coco, SHARD_COCO_INSTANCES))))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: a boxes field "
                             "takes \"coco\": \"bbox\", a mask \"segmentation\", instances "
                             "\"instances\"",
                             i);
    if (((d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_INSTANCES) && !coco) ||
        (d->type == SHARD_FIELD_MASK && column) || (d->type == SHARD_FIELD_IMAGE && !sidecar))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: a %s field "
                             "cannot come from a %s",
                             i, type,
                             sidecar  ? "sidecar"
                             : coco   ? "COCO file"
                             : column ? "column"
                                      : "folder");
    if (!geometric && classes)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: only boxes and "
                             "mask fields have classes",
                             i);
    if (ignore &&
        (d->type != SHARD_FIELD_MASK || !json_is_integer(ignore) ||
         json_integer_value(ignore) < 0 || json_integer_value(ignore) > SHARD_MASK_CLASS_MAX))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: \"ignore\" is a mask's value in 0..%u",
                             i, SHARD_MASK_CLASS_MAX);
    if (replace && (!folder || !strchr(replace, ':') || strchr(strchr(replace, ':') + 1, ':') ||
                    strchr(replace, '/')))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields[%zu]: \"replace\" is a folder's \"OLD:NEW\"",
                             i);
    if (replace && !(d->replace = strdup(replace)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    d->has_ignore = ignore != NULL;
    d->ignore = ignore ? (uint32_t)json_integer_value(ignore) : 0;
    d->required = required;
    if (!(d->name = strdup(name)) || (sidecar && !(d->sidecar = strdup(sidecar))) ||
        (column && !(d->column = strdup(column))) || (coco && !(d->coco = strdup(coco))) ||
        (folder && !(d->folder = strdup(folder))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = geometric ? field_classes_from_json(classes, i, d, err) : SHARD_OK;
    if (!rc && d->has_ignore && shard_field_class_find(d, d->ignore) >= 0)
        rc = shard_err_set(err, SHARD_ECORRUPT,
                           "manifest: config.fields[%zu]: the ignore value %u is a class's id", i,
                           d->ignore);
    return rc;
}

/* The version 2 members of a config: fields, annotations, max_field_bytes. */
static int config_fields_from_json(const json_t *o, struct shard_config *c, struct shard_err *err)
{
    const json_t *fields = json_object_get(o, "fields");
    size_t n = json_array_size(fields);
    if (!json_is_array(fields) || n == 0 || n > SHARD_FIELDS_MAX)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.fields must list 1..%u "
                             "fields",
                             SHARD_FIELDS_MAX);
    if (!(c->fields = calloc(n, sizeof *c->fields)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        c->field_count = (uint32_t)(i + 1);
        int rc = field_decl_from_json(json_array_get(fields, i), i, &c->fields[i], err);
        if (rc)
            return rc;
        if (shard_config_field(c, c->fields[i].name) != (int32_t)i)
            return shard_err_set(err, SHARD_ECORRUPT, "manifest: field '%s' is declared twice",
                                 c->fields[i].name);
    }
    const json_t *annotations = json_object_get(o, "annotations");
    if (annotations && !json_is_string(annotations))
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.annotations is not a string");
    if (annotations && !(c->annotations = strdup(json_string_value(annotations))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    const json_t *coco = json_object_get(o, "coco");
    if (coco && !json_is_string(coco))
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.coco is not a string");
    if (coco && !(c->coco = strdup(json_string_value(coco))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int from_coco = 0;
    for (uint32_t i = 0; i < c->field_count; i++)
        from_coco |= c->fields[i].coco != NULL;
    if (from_coco != (c->coco != NULL))
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config.%s",
                             c->coco ? "coco names a COCO file that no field comes from"
                                     : "fields come from \"coco\" and config.coco is missing");
    /* datasets made before "boxes" have none: their boxes were strict */
    const json_t *boxes = json_object_get(o, "boxes");
    const char *mode = boxes ? json_string_value(boxes) : "strict";
    if (!mode || (strcmp(mode, "clamp") && strcmp(mode, "strict")) ||
        (boxes && !config_has_boxes(c)))
        return shard_err_set(err, SHARD_ECORRUPT,
                             "manifest: config.boxes is \"clamp\" or \"strict\", with a boxes "
                             "field");
    c->boxes_strict = !strcmp(mode, "strict");
    int rc = sk_jsonkey_uint(o, "max_field_bytes", &c->max_field_bytes, err);
    return rc ? shard_err_prefix(err, rc, "manifest: config") : SHARD_OK;
}

static int config_from_json(const json_t *o, int version, struct shard_config *c,
                            struct shard_err *err)
{
    shard_config_init(c);
    /* the version 2 members are read apart; the rest must be exactly v1's */
    json_t *base = json_copy((json_t *)o);
    if (!base)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    static const char *const v2_members[] = {"fields", "annotations", "coco", "max_field_bytes",
                                             "boxes"};
    int has_v2 = 0;
    for (size_t i = 0; i < sizeof v2_members / sizeof v2_members[0]; i++)
        has_v2 |= json_object_del(base, v2_members[i]) == 0;
    int rc = SHARD_OK;
    const json_t *pixels = json_object_get(o, "pixels"), *depth = json_object_get(o, "depth");
    if (version == SHARD_MANIFEST_VERSION_PIXELS) {
        json_object_del(base, "pixels");
        json_object_del(base, "depth");
        if (!json_is_string(pixels) || shard_pixels_parse(json_string_value(pixels), &c->channels))
            rc = bad_field(err, "config.pixels is not auto, gray, gray-alpha, rgb or rgba");
        else if (json_is_string(depth) && !strcmp(json_string_value(depth), "auto"))
            c->depth = SHARD_DEPTH_AUTO;
        else if (json_is_integer(depth) &&
                 (json_integer_value(depth) == 8 || json_integer_value(depth) == 16))
            c->depth = (uint32_t)json_integer_value(depth);
        else
            rc = bad_field(err, "config.depth is not 8, 16 or \"auto\"");
    }
    const json_t *order = json_object_get(o, "order");
    if (order) {
        json_object_del(base, "order");
        if (json_is_string(order) && !strcmp(json_string_value(order), "archive"))
            c->order = SHARD_ORDER_ARCHIVE;
        else
            rc = bad_field(err, "config.order is not \"archive\"");
    }
    /* the members present only when set: strings, read apart */
    struct {
        const char *name;
        char **to;
    } strings[] = {{"classes", &c->classes},
                   {"split", &c->split},
                   {"annotations_key", &c->annotations_key},
                   {"keys", &c->keys}};
    for (size_t i = 0; !rc && i < sizeof strings / sizeof *strings; i++) {
        const json_t *s = json_object_get(o, strings[i].name);
        if (!s)
            continue;
        json_object_del(base, strings[i].name);
        if (!json_is_string(s) || !json_string_length(s) ||
            ((strings[i].to == &c->classes || strings[i].to == &c->keys) &&
             strncmp(json_string_value(s), "file:", 5)))
            rc = shard_err_set(err, SHARD_ECORRUPT, "manifest: config.%s is not %s",
                               strings[i].name,
                               strings[i].to == &c->classes || strings[i].to == &c->keys
                                   ? "\"file:NAME:XXH3\""
                                   : "a non-empty string");
        else if (!(*strings[i].to = strdup(json_string_value(s))))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (rc)
        ;
    else if (has_v2 && version < SHARD_MANIFEST_VERSION_FIELDS)
        rc = shard_err_set(err, SHARD_ECORRUPT, "manifest: a version 1 config has fields");
    else if (version == SHARD_MANIFEST_VERSION_FIELDS ||
             (version == SHARD_MANIFEST_VERSION_PIXELS && has_v2))
        rc = config_fields_from_json(o, c, err);
    if (!rc)
        rc = config_base_from_json(base, c, err);
    json_decref(base);
    return rc;
}

static int config_base_from_json(const json_t *o, struct shard_config *c, struct shard_err *err)
{
    const char *fit = NULL, *codec = NULL, *labels = NULL, *seed = NULL;
    int upscale = 0, shuffle = 0, bg0 = 0, bg1 = 0, bg2 = 0;
    json_int_t size = 0, quality = 0, level = 0, shard_size = 0, max_pixels = 0, max_file_bytes = 0;
    json_error_t jerr;
    if (json_unpack_ex((json_t *)o, &jerr, JSON_STRICT,
                       "{s:I, s:s, s:b, s:s, s:I, s:I, s:I, s:s, s:b, s:s, s:I, s:I, s:[iii]}",
                       "size", &size, "fit", &fit, "upscale", &upscale, "codec", &codec, "quality",
                       &quality, "zstd_level", &level, "shard_size", &shard_size, "labels", &labels,
                       "shuffle", &shuffle, "shuffle_seed", &seed, "max_pixels", &max_pixels,
                       "max_file_bytes", &max_file_bytes, "background", &bg0, &bg1, &bg2) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: config: %s", jerr.text);
    char *end = NULL;
    unsigned long long s = strtoull(seed, &end, 10);
    if (size <= 0 || size > UINT32_MAX || shard_fit_parse(fit, &c->fit) ||
        shard_codec_parse(codec, &c->codec) || quality < 1 || quality > 100 ||
        level < SHARD_ZSTD_LEVEL_MIN || level > 22 || level == 0 || shard_size <= 0 ||
        max_pixels < 0 || max_file_bytes < 0 || !*seed || *end || bg0 < 0 || bg0 > 255 || bg1 < 0 ||
        bg1 > 255 || bg2 < 0 || bg2 > 255)
        return bad_field(err, "config has an out-of-range value");
    c->size = (uint32_t)size;
    c->upscale = upscale;
    c->quality = (int)quality;
    c->zstd_level = (int)level;
    c->shard_size = (uint64_t)shard_size;
    c->labels = strdup(labels);
    c->shuffle = shuffle;
    c->shuffle_seed = s;
    c->max_pixels = (uint64_t)max_pixels;
    c->max_file_bytes = (uint64_t)max_file_bytes;
    c->background[0] = (uint8_t)bg0;
    c->background[1] = (uint8_t)bg1;
    c->background[2] = (uint8_t)bg2;
    return c->labels ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

static int load_labels(const json_t *root, const json_t *counts, struct shard_manifest *m,
                       struct load *l)
{
    struct shard_err *err = l->err;
    const json_t *labels = json_object_get(root, "labels");
    const json_t *by_label = json_object_get(counts, "by_label");
    if (!json_is_array(labels) || !json_is_object(by_label))
        return bad_field(err, "\"labels\" or \"counts.by_label\" missing");
    size_t n = json_array_size(labels);
    if (n > INT32_MAX)
        return bad_field(err, "too many labels");
    int rc;
    if (json_object_size(by_label) != n &&
        (rc = inconsistent(l, "\"counts.by_label\" does not list every label once")))
        return rc;
    m->labels = calloc(n ? n : 1, sizeof *m->labels);
    m->label_samples = calloc(n ? n : 1, sizeof *m->label_samples);
    if (!m->labels || !m->label_samples)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t sum = 0;
    int unsorted = 0, numbered = n > 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(labels, i);
        if (!json_is_string(v))
            return bad_field(err, "a label is not a string");
        if (!(m->labels[i] = strdup(json_string_value(v))))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        m->label_count = (uint32_t)(i + 1);
        char number[24];
        snprintf(number, sizeof number, "%zu", i);
        numbered &= !strcmp(m->labels[i], number);
        unsorted |= i > 0 && strcmp(m->labels[i - 1], m->labels[i]) >= 0;
    }
    /* sorted by bytes, or the class numbers "0".."N-1" in their order (a
     * numeric class, as WebDataset's .cls: FORMAT.md), or a fixed class
     * list's in its order (config.classes), unique */
    for (size_t i = 0; m->config.classes && unsorted && i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (!strcmp(m->labels[k], m->labels[i]) &&
                (rc = inconsistent(l, "\"labels\" name '%s' twice", m->labels[i])))
                return rc;
    if (unsorted && !numbered && !m->config.classes &&
        (rc = inconsistent(l,
                           "\"labels\" are neither sorted and unique nor the class numbers "
                           "0..%zu",
                           n - 1)))
        return rc;
    for (size_t i = 0; i < n; i++) {
        struct shard_err e;
        if ((rc = sk_jsonkey_uint(by_label, m->labels[i], &m->label_samples[i], &e))) {
            shard_err_prefix(&e, rc, "manifest: counts.by_label");
            if (rc == SHARD_ENOMEM)
                return pass_on(err, &e);
            m->label_samples[i] = 0;
            if ((rc = contradiction(l, &e)))
                return rc;
        }
        sum += m->label_samples[i];
    }
    if (sum + m->unlabeled != m->samples &&
        (rc = inconsistent(l, "counts.by_label plus counts.unlabeled differ from counts.samples")))
        return rc;
    return SHARD_OK;
}

static int load_shards(const json_t *root, struct shard_manifest *m, struct load *l)
{
    struct shard_err *err = l->err;
    const json_t *shards = json_object_get(root, "shards");
    if (!json_is_array(shards))
        return bad_field(err, "\"shards\" missing");
    size_t n = json_array_size(shards);
    if (n > UINT32_MAX)
        return bad_field(err, "too many shards");
    m->shards = calloc(n ? n : 1, sizeof *m->shards);
    if (!m->shards)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(shards, i);
        struct shard_manifest_shard *s = &m->shards[i];
        m->shard_count = (uint32_t)(i + 1);
        int rc = get_string(o, "file", &s->file, err);
        if (rc == SHARD_ENOMEM)
            return rc;
        if (rc || !plain_name(s->file))
            return shard_err_set(err, SHARD_ECORRUPT, "manifest: shards[%zu].file is bad", i);
        if ((rc = sk_jsonkey_uint(o, "samples", &s->samples, err)) ||
            (rc = sk_jsonkey_uint(o, "bytes", &s->bytes, err)) ||
            (rc = sk_jsonkey_hex64(o, "xxh3", &s->xxh3, err)))
            return shard_err_prefix(err, rc, "manifest: shards[%zu]", i);
        sum += s->samples;
    }
    if (sum != m->samples)
        return inconsistent(l, "shards hold %llu samples, counts.samples is %llu",
                            (unsigned long long)sum, (unsigned long long)m->samples);
    return SHARD_OK;
}

/* Entry i of "rejected" into *r: 0, SHARD_ENOMEM or SHARD_ECORRUPT naming
 * it. */
static int load_reject(const json_t *o, size_t i, struct shard_reject *r, struct shard_err *err)
{
    int rc = json_is_object(o) ? sk_jsonkey_get(o, 0, &r->key, &r->key_len, err) : SHARD_ECORRUPT;
    if (!rc)
        rc = get_string(o, "reason", &r->reason, err);
    if (rc == SHARD_ENOMEM)
        return rc;
    if (rc)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: rejected[%zu] is bad", i);
    if (json_object_get(o, "source_xxh3")) {
        r->has_source = 1;
        if ((rc = sk_jsonkey_uint(o, "source_bytes", &r->source_bytes, err)) ||
            (rc = sk_jsonkey_hex64(o, "source_xxh3", &r->source_xxh3, err)))
            return shard_err_prefix(err, rc, "manifest: rejected[%zu]", i);
    }
    return SHARD_OK;
}

/* A reject that does not load is a contradiction: a lenient load leaves it
 * out of m->rejects and goes on. */
static int load_rejects(const json_t *root, struct shard_manifest *m, struct load *l)
{
    struct shard_err *err = l->err;
    const json_t *rejected = json_object_get(root, "rejected");
    if (!json_is_array(rejected))
        return bad_field(err, "\"rejected\" missing");
    size_t n = json_array_size(rejected);
    m->rejects = calloc(n ? n : 1, sizeof *m->rejects);
    if (!m->rejects)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc;
    for (size_t i = 0; i < n; i++) {
        struct shard_reject *r = &m->rejects[m->reject_count++];
        struct shard_err e;
        if ((rc = load_reject(json_array_get(rejected, i), i, r, &e)) == 0)
            continue;
        shard_reject_release(r);
        m->reject_count--;
        if (rc == SHARD_ENOMEM)
            return pass_on(err, &e);
        if ((rc = contradiction(l, &e)))
            return rc;
    }
    if (n != m->rejected)
        return inconsistent(l, "%zu rejects listed, counts.rejected is %llu", n,
                            (unsigned long long)m->rejected);
    return SHARD_OK;
}

/* Version 2: counts.fields, counts.sidecars, counts.orphans, the
 * annotation table's counts, and "orphans". */
static int load_fields(const json_t *root, const json_t *counts, struct shard_manifest *m,
                       struct load *l)
{
    struct shard_err *err = l->err;
    const struct shard_config *c = &m->config;
    const json_t *fields = json_object_get(counts, "fields");
    if (!json_is_object(fields))
        return bad_field(err, "\"counts.fields\" missing");
    if (!(m->field_samples = calloc(c->field_count, sizeof *m->field_samples)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc;
    if (json_object_size(fields) != c->field_count &&
        (rc = inconsistent(l, "\"counts.fields\" does not list every field once")))
        return rc;
    for (uint32_t i = 0; i < c->field_count; i++) {
        struct shard_err e;
        if ((rc = sk_jsonkey_uint(fields, c->fields[i].name, &m->field_samples[i], &e))) {
            shard_err_prefix(&e, rc, "manifest: counts.fields");
            if (rc == SHARD_ENOMEM)
                return pass_on(err, &e);
            if ((rc = contradiction(l, &e)))
                return rc;
        }
        if (m->field_samples[i] > m->samples &&
            (rc = inconsistent(l, "counts.fields.%s is more than counts.samples",
                               c->fields[i].name)))
            return rc;
    }
    if ((rc = sk_jsonkey_uint(counts, "sidecars", &m->sidecars, err)) ||
        (rc = sk_jsonkey_uint(counts, "orphans", &m->orphan_count, err)) ||
        (c->annotations &&
         ((rc = sk_jsonkey_uint(counts, "annotation_rows", &m->annotation_rows, err)) ||
          (rc = sk_jsonkey_uint(counts, "annotation_rows_unmatched", &m->annotation_rows_unmatched,
                                err)))) ||
        (c->coco &&
         ((rc = sk_jsonkey_uint(counts, "coco_images", &m->coco_images, err)) ||
          (rc = sk_jsonkey_uint(counts, "coco_images_unmatched", &m->coco_images_unmatched, err)) ||
          (rc = sk_jsonkey_uint(counts, "coco_annotations", &m->coco_annotations, err)) ||
          (rc = sk_jsonkey_uint(counts, "coco_annotations_unmatched",
                                &m->coco_annotations_unmatched, err)))) ||
        (config_has_boxes(c) &&
         ((rc = sk_jsonkey_uint(counts, "boxes", &m->boxes, err)) ||
          (rc = sk_jsonkey_uint(counts, "boxes_dropped", &m->boxes_dropped, err)))))
        return shard_err_prefix(err, rc, "manifest: counts");
    const json_t *orphans = json_object_get(root, "orphans");
    if (!json_is_array(orphans))
        return bad_field(err, "\"orphans\" missing");
    size_t n = json_array_size(orphans);
    if (n != m->orphan_count && (rc = inconsistent(l, "%zu orphans listed, counts.orphans is %llu",
                                                   n, (unsigned long long)m->orphan_count)))
        return rc;
    m->orphan_count = 0;
    if (!(m->orphans = calloc(n ? n : 1, sizeof *m->orphans)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        struct shard_orphan *o = &m->orphans[m->orphan_count];
        if ((rc = sk_jsonkey_get(json_array_get(orphans, i), 0, &o->key, &o->key_len, err)))
            return rc == SHARD_ENOMEM ? rc : bad_field(err, "an orphan has no key");
        m->orphan_count++;
    }
    return SHARD_OK;
}

/* One index file's entry (`what` names it in messages: "index",
 * "indexes[2]"). */
static int load_index(const json_t *o, int with_shards, const char *what,
                      struct shard_manifest_index *x, struct shard_err *err)
{
    char msg[128];
    int rc = get_string(o, "file", &x->file, err);
    if (rc == SHARD_ENOMEM)
        return rc;
    if (rc || !plain_name(x->file)) {
        snprintf(msg, sizeof msg, "\"%s.file\" missing or not a plain file name", what);
        return bad_field(err, msg);
    }
    uint64_t shards = 0;
    if ((rc = sk_jsonkey_uint(o, "entries", &x->entries, err)) ||
        (rc = sk_jsonkey_uint(o, "bytes", &x->bytes, err)) ||
        (rc = sk_jsonkey_hex64(o, "xxh3", &x->xxh3, err)) ||
        (with_shards && (rc = sk_jsonkey_uint(o, "shards", &shards, err))))
        return shard_err_prefix(err, rc, "manifest: %s", what);
    if (shards > UINT32_MAX)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: %s: too many shards", what);
    x->shards = (uint32_t)shards;
    const json_t *keys = json_object_get(o, "keys");
    if (!keys) /* written before key tables */
        return SHARD_OK;
    if ((rc = get_string(keys, "file", &x->keys_file, err)) == SHARD_ENOMEM)
        return rc;
    if (rc || !plain_name(x->keys_file)) {
        snprintf(msg, sizeof msg, "\"%s.keys.file\" missing or not a plain file name", what);
        return bad_field(err, msg);
    }
    if ((rc = sk_jsonkey_uint(keys, "bytes", &x->keys_bytes, err)) ||
        (rc = sk_jsonkey_hex64(keys, "xxh3", &x->keys_xxh3, err)))
        return shard_err_prefix(err, rc, "manifest: %s.keys", what);
    return SHARD_OK;
}

/* "index" (one file) or "indexes" (a dataset merged from parts), never both. */
static int load_indexes(const json_t *root, struct shard_manifest *m, struct load *l)
{
    struct shard_err *err = l->err;
    const json_t *index = json_object_get(root, "index");
    const json_t *list = json_object_get(root, "indexes");
    if (index && list)
        return bad_field(err, "both \"index\" and \"indexes\"");
    size_t n = list ? json_array_size(list) : 1;
    if (list && (!json_is_array(list) || n == 0 || n > UINT32_MAX))
        return bad_field(err, "\"indexes\" is not a list of index files");
    if (!(m->indexes = calloc(n, sizeof *m->indexes)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    uint64_t shards = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, list ? "indexes[%zu]" : "index", i);
        m->index_count++;
        rc = load_index(list ? json_array_get(list, i) : index, list != NULL, what, &m->indexes[i],
                        err);
        shards += m->indexes[i].shards;
        m->index_entries += m->indexes[i].entries;
        m->index_bytes += m->indexes[i].bytes;
    }
    if (rc)
        return rc;
    if (!list) {
        m->indexes[0].shards = m->shard_count;
        m->index_xxh3 = m->indexes[0].xxh3;
        if (!(m->index_file = strdup(m->indexes[0].file)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else if (shards != m->shard_count) {
        return inconsistent(l, "the index files cover %llu shards, the manifest lists %u",
                            (unsigned long long)shards, m->shard_count);
    }
    return SHARD_OK;
}

/* source.archives, when there: archives.jsonl */
static int load_archives(const json_t *source, struct shard_manifest *m, struct shard_err *err)
{
    const json_t *a = json_object_get(source, "archives");
    if (!a)
        return SHARD_OK;
    int rc = get_string(a, "file", &m->archives_file, err);
    if (rc == SHARD_ENOMEM)
        return rc;
    if (rc || !plain_name(m->archives_file))
        return bad_field(err, "\"source.archives.file\" missing or not a plain file name");
    if ((rc = sk_jsonkey_uint(a, "entries", &m->archives_entries, err)) ||
        (rc = sk_jsonkey_uint(a, "bytes", &m->archives_bytes, err)) ||
        (rc = sk_jsonkey_hex64(a, "xxh3", &m->archives_xxh3, err)))
        return shard_err_prefix(err, rc, "manifest: source.archives");
    return SHARD_OK;
}

/* "stored": the form (version 3 has it; before, 8-bit RGB) and the size. */
static int load_stored(const json_t *root, struct shard_manifest *m, struct shard_err *err)
{
    m->channels = SHARD_PIXELS_RGB;
    m->depth = 8;
    m->stored_width = m->stored_height = 0;
    const json_t *stored = json_object_get(root, "stored");
    if (!stored) {
        if (m->version == SHARD_MANIFEST_VERSION_PIXELS)
            return bad_field(err, "\"stored\" missing in a version 3 manifest");
        return SHARD_OK;
    }
    const char *pixels = NULL;
    json_int_t depth = 0, w = 0, h = 0;
    json_t *size = NULL;
    json_error_t jerr;
    int mixed = 0;
    if (json_unpack_ex((json_t *)stored, &jerr, JSON_STRICT, "{s:s, s:I, s?b, s?o}", "pixels",
                       &pixels, "depth", &depth, "mixed", &mixed, "size", &size) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: stored: %s", jerr.text);
    if (size && json_unpack_ex(size, &jerr, JSON_STRICT, "[II]", &w, &h) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "manifest: stored.size: %s", jerr.text);
    uint32_t channels;
    if (shard_pixels_parse(pixels, &channels) || channels == SHARD_PIXELS_AUTO ||
        (depth != 8 && depth != 16) ||
        (size && (w < 1 || w > UINT32_MAX || h < 1 || h > UINT32_MAX)))
        return bad_field(err, "stored has an out-of-range value");
    m->channels = channels;
    m->depth = (uint32_t)depth;
    m->stored_width = (uint32_t)w;
    m->stored_height = (uint32_t)h;
    m->mixed = mixed;
    if ((m->version == SHARD_MANIFEST_VERSION_PIXELS) !=
        (channels != SHARD_PIXELS_RGB || depth != 8 || mixed))
        return bad_field(err, m->version == SHARD_MANIFEST_VERSION_PIXELS
                                  ? "a version 3 manifest stores 8-bit rgb only"
                                  : "stored is not 8-bit rgb in a version 1 or 2 manifest");
    return SHARD_OK;
}

static int manifest_from_json(const json_t *root, struct shard_manifest *m, struct load *l)
{
    struct shard_err *err = l->err;
    if (!json_is_object(root))
        return bad_field(err, "not a JSON object");
    const json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), SHARD_MANIFEST_FORMAT))
        return bad_field(err, "\"format\" is not \"" SHARD_MANIFEST_FORMAT "\"");
    const json_t *version = json_object_get(root, "version");
    if (!json_is_integer(version) || json_integer_value(version) < SHARD_MANIFEST_VERSION ||
        json_integer_value(version) > SHARD_MANIFEST_VERSION_PIXELS)
        return shard_err_set(err, SHARD_EUNSUPPORTED, "manifest: unsupported version");
    m->version = (uint16_t)json_integer_value(version);
    const json_t *config = json_object_get(root, "config");
    if (!json_is_object(config))
        return bad_field(err, "\"config\" missing");
    int rc = config_from_json(config, m->version, &m->config, err);
    if (rc)
        return rc;
    const json_t *source = json_object_get(root, "source");
    if ((rc = get_string(source, "kind", &m->source_kind, err)) == SHARD_ENOMEM)
        return rc;
    if (rc)
        return bad_field(err, "\"source.kind\" missing");
    const json_t *counts = json_object_get(root, "counts");
    if (!json_is_object(counts))
        return bad_field(err, "\"counts\" missing");
    if ((rc = sk_jsonkey_uint(counts, "samples", &m->samples, err)) ||
        (rc = sk_jsonkey_uint(counts, "rejected", &m->rejected, err)) ||
        (rc = sk_jsonkey_uint(counts, "ignored", &m->ignored, err)) ||
        (rc = sk_jsonkey_uint(counts, "unlabeled", &m->unlabeled, err)) ||
        (json_object_get(counts, "warned") && /* absent: none */
         (rc = sk_jsonkey_uint(counts, "warned", &m->warned, err))))
        return shard_err_prefix(err, rc, "manifest: counts");
    if (m->warned > m->samples &&
        (rc = inconsistent(l, "counts.warned is %llu, more than counts.samples %llu",
                           (unsigned long long)m->warned, (unsigned long long)m->samples)))
        return rc;
    if ((rc = load_labels(root, counts, m, l)) || (rc = load_shards(root, m, l)) ||
        (rc = load_rejects(root, m, l)) ||
        (m->config.field_count && (rc = load_fields(root, counts, m, l))) ||
        (rc = load_stored(root, m, err)))
        return rc;
    if ((rc = load_indexes(root, m, l)) || (rc = load_archives(source, m, err)))
        return rc;
    if (m->index_entries != m->samples)
        return inconsistent(l, "index.entries differs from counts.samples");
    return SHARD_OK;
}

/* `path` names the file in a parse error; NULL: "manifest". */
static int load_buffer(const char *path, const char *text, size_t len, struct shard_manifest *m,
                       struct load *l)
{
    memset(m, 0, sizeof *m);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return path ? shard_err_set(l->err, SHARD_ECORRUPT, "'%s' line %d: %s", path, jerr.line,
                                    jerr.text)
                    : shard_err_set(l->err, SHARD_ECORRUPT, "manifest line %d: %s", jerr.line,
                                    jerr.text);
    int rc = manifest_from_json(root, m, l);
    if (rc)
        shard_manifest_release(m);
    json_decref(root);
    return rc;
}

static int load_file(const char *dir, struct shard_manifest *m, struct load *l)
{
    struct shard_err *err = l->err;
    memset(m, 0, sizeof *m);
    char *path = sk_fs_join(dir, SHARD_MANIFEST_FILE);
    if (!path)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct shard_buf text = {0};
    int rc = sk_fs_read_file(AT_FDCWD, path, &text, err);
    if (rc == SHARD_ENOTFOUND)
        rc = shard_err_set(err, rc, "no manifest: '%s' is missing", path);
    else if (rc)
        rc = shard_err_prefix(err, rc, "cannot read manifest '%s'", path);
    else
        rc = load_buffer(path, (const char *)text.data, text.len, m, l);
    shard_buf_release(&text);
    free(path);
    return rc;
}

int shard_manifest_load(const char *dir, struct shard_manifest *m, struct shard_err *err)
{
    struct load l = {err, NULL, NULL};
    return load_file(dir, m, &l);
}

int sk_manifest_load_lenient(const char *dir, struct shard_manifest *m,
                             sk_manifest_problem_fn problem, void *user, struct shard_err *err)
{
    struct load l = {err, problem, user};
    return load_file(dir, m, &l);
}

int shard_manifest_load_buffer(const char *text, size_t len, struct shard_manifest *m,
                               struct shard_err *err)
{
    struct load l = {err, NULL, NULL};
    return load_buffer(NULL, text, len, m, &l);
}

int sk_manifest_load_buffer_lenient(const char *text, size_t len, struct shard_manifest *m,
                                    sk_manifest_problem_fn problem, void *user,
                                    struct shard_err *err)
{
    struct load l = {err, problem, user};
    return load_buffer(NULL, text, len, m, &l);
}
