/* incremental.c - an incremental run: reusing the records of a previous
 * dataset built with the same config from an earlier state of SRC.
 *
 * The previous dataset's index and rejects become a table by key.  A thread
 * that has read a source file hashes it; when the previous dataset has the
 * key with the same bytes, the record it stored is what a conversion would
 * give (the same build, the same config), so its frame is copied as bytes
 * after its xxh3 is checked against the previous footer; a damaged one is
 * converted again from the source.  Only the label number inside the frame
 * can differ (a class added or removed renumbers the sorted labels): then
 * the stored payload is put in a new frame, without decoding the image.
 * Records go through the assembler like converted ones, in the new order,
 * so shards, index and manifest are those of a full run; the manifest adds
 * only its "lineage". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <xxhash.h>

#include "convert/run.h"
#include "manifest/manifest_internal.h"
#include "shardkit/format.h"
#include "source/source_internal.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "util/grow.h"

/* One candidate of the previous dataset: a sample or a reject (its key is
 * the same number in sk_prev.keys). */
struct prev_entry {
    uint64_t source_bytes;
    uint64_t source_xxh3;
    uint64_t record; /* sample: record number in its shard */
    int32_t label;   /* sample: label number in the previous dataset */
    uint32_t shard;
    uint32_t width;
    uint32_t height;
    uint32_t channels; /* sample: its stored form */
    uint32_t depth;
    char *text;      /* sample: its decoder warning or NULL; reject: its reason */
    uint64_t fields; /* sample: its field identities, sk_prev.sources[fields ..] */
    uint32_t field_count;
    uint8_t is_reject;
    uint8_t has_source;
    uint8_t seen; /* written only by the serialised consumer */
};

struct sk_prev {
    const char *path;
    struct shard_manifest m;
    uint64_t manifest_xxh3;
    struct prev_entry *entries;
    uint64_t count;
    uint64_t cap;
    struct shard_keylist keys;
    uint64_t *table;           /* entry number + 1; 0 is an empty slot */
    size_t table_cap;          /* a power of two, at least twice count */
    struct shard_file **files; /* per shard of m; NULL: unusable, its records reconverted */
    struct shard_record_decoder **decoders; /* per thread, for re-framing */
    int threads;
    struct shard_buf scratch;           /* the serialised consumer's frame buffer */
    struct shard_field_source *sources; /* the samples' field identities (a dataset with fields) */
    uint64_t source_count, source_cap;
};

/* ---- options ---------------------------------------------------------------- */

/* The manifest's config fields and the options that set them; a flag that
 * turns a setting off (--no-upscale sets "upscale" false) is `negates`. */
static const struct {
    const char *field;
    const char *option;
    int negates;
} config_options[] = {
    {"size", "--size", 0},
    {"fit", "--fit", 0},
    {"upscale", "--no-upscale", 1},
    {"codec", "--codec", 0},
    {"quality", "--quality", 0},
    {"zstd_level", "--zstd-level", 0},
    {"shard_size", "--shard-size", 0},
    {"labels", "--labels", 0},
    {"classes", "--classes", 0},
    {"split", "--split", 0},
    {"keys", "--keys", 0},
    {"annotations_key", "--key-column", 0},
    {"shuffle", "--no-shuffle", 1},
    {"shuffle_seed", "--shuffle-seed", 0},
    {"order", "--order", 0},
    {"max_pixels", "--max-pixels", 0},
    {"max_file_bytes", "--max-file-size", 0},
    {"fields", "--field", 0},
    {"annotations", "--annotations", 0},
    {"max_field_bytes", "--max-field-bytes", 0},
};

/* The option that sets `field` (*negates: whether it is a flag that turns
 * the setting off), or the field's own name for a setting without one
 * ("background"). */
static const char *option_of(const char *field, int *negates)
{
    *negates = 0;
    for (size_t i = 0; i < sizeof config_options / sizeof *config_options; i++)
        if (!strcmp(config_options[i].field, field)) {
            *negates = config_options[i].negates;
            return config_options[i].option;
        }
    return field;
}

/* How a setting of value v reads in terms of its option: a flag that turns
 * it off is "given" when v is false ("--no-upscale given there"); other
 * options show their value.  `json` is v as JSON; the result is static or
 * `json`. */
static const char *as_given(const json_t *v, int negates, const char *json)
{
    if (negates && json_is_boolean(v))
        return json_is_true(v) ? "not given" : "given";
    return json ? json : "?";
}

/* The first config field that differs, named by its option, with both values. */
static int compare_configs(const char *prev, const struct shard_config *was,
                           const struct shard_config *now, struct shard_err *err)
{
    char *a = NULL, *b = NULL;
    json_t *ja = NULL, *jb = NULL;
    int rc = shard_config_dump(was, &a, err);
    if (!rc)
        rc = shard_config_dump(now, &b, err);
    if (rc)
        goto out;
    ja = json_loads(a, 0, NULL);
    jb = json_loads(b, 0, NULL);
    if (!ja || !jb) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    const char *field;
    json_t *va;
    json_object_foreach(ja, field, va) {
        json_t *vb = json_object_get(jb, field);
        if (vb && json_equal(va, vb))
            continue;
        char *sa = json_dumps(va, JSON_ENCODE_ANY | JSON_COMPACT);
        char *sb = vb ? json_dumps(vb, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        int negates;
        const char *option = option_of(field, &negates);
        rc = shard_err_set(err, SHARD_EMISMATCH,
                           "%s differs from the previous dataset '%s' (%s there, %s here)", option,
                           prev, as_given(va, negates, sa),
                           vb ? as_given(vb, negates, sb) : "none");
        free(sa);
        free(sb);
        goto out;
    }
    json_object_foreach(jb, field, va) { /* a setting PREV does not have */
        if (json_object_get(ja, field))
            continue;
        char *sb = json_dumps(va, JSON_ENCODE_ANY | JSON_COMPACT);
        int negates;
        rc = shard_err_set(err, SHARD_EMISMATCH,
                           "%s differs from the previous dataset '%s' (none there, %s here)",
                           option_of(field, &negates), prev, sb ? sb : "?");
        free(sb);
        goto out;
    }
out:
    json_decref(ja);
    json_decref(jb);
    free(a);
    free(b);
    return rc;
}

static int same_directory(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Why a run with boxes, mask or image fields is never incremental: they are
 * made from the image's geometry as it is converted, and a reused record is
 * copied, not converted. */
#define GEOMETRIC_NOT_INCREMENTAL                                                  \
    "boxes, mask and image fields are made as their images are converted, and an " \
    "incremental run copies records"

int sk_prev_check_places(const char *prev, const char *src, const char *dst, struct shard_err *err)
{
    struct stat st;
    if (sk_source_is_s3(prev) || !strncmp(prev, "http://", 7) || !strncmp(prev, "https://", 8))
        return shard_err_set(err, SHARD_EINVAL,
                             "--incremental: the previous dataset '%s' "
                             "must be a local directory",
                             prev);
    if (src && !sk_source_is_s3(src) && stat(src, &st) == 0 && !S_ISDIR(st.st_mode))
        return shard_err_set(err, SHARD_EINVAL,
                             "--incremental needs a directory or s3:// "
                             "source, not the archive '%s'",
                             src);
    if (dst && same_directory(prev, dst))
        return shard_err_set(err, SHARD_EINVAL,
                             "--incremental: the previous dataset '%s' "
                             "cannot be DST itself: write the new one beside it",
                             prev);
    return SHARD_OK;
}

static int load_manifest(const char *prev, const struct shard_config *config,
                         struct shard_manifest *m, uint64_t *manifest_xxh3, struct shard_err *err)
{
    return sk_prev_load_manifest(prev, config, "directory", m, manifest_xxh3, err);
}

int sk_prev_load_manifest(const char *prev, const struct shard_config *config, const char *kind,
                          struct shard_manifest *m, uint64_t *manifest_xxh3, struct shard_err *err)
{
    int rc = shard_manifest_load(prev, m, err);
    if (rc == SHARD_EUNSUPPORTED)
        return shard_err_set(err, rc,
                             "the previous dataset '%s' was built by another format "
                             "version: an incremental run needs one of version %d",
                             prev, SHARD_MANIFEST_VERSION);
    if (rc)
        return shard_err_prefix(err, rc, "previous dataset");
    if (strcmp(m->source_kind, kind))
        rc = shard_err_set(err, SHARD_EMISMATCH,
                           "the previous dataset '%s' was built from %s, not %s", prev,
                           !strcmp(m->source_kind, "archives")  ? "a folder of archives"
                           : !strcmp(m->source_kind, "archive") ? "an archive"
                                                                : "a directory",
                           !strcmp(kind, "archives") ? "a folder of archives" : "a directory");
    if (!rc)
        rc = compare_configs(prev, &m->config, config, err);
    char *path = rc ? NULL : sk_fs_join(prev, SHARD_MANIFEST_FILE);
    uint64_t bytes;
    if (!rc && !path)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc)
        rc = sk_fs_hash_file(path, &bytes, manifest_xxh3, err);
    free(path);
    if (rc)
        shard_manifest_release(m);
    return rc;
}

int shardify_check_previous(const char *prev, const char *src, const char *dst,
                            const struct shardify_options *o, struct shard_err *err)
{
    int rc = sk_prev_check_places(prev, src, dst, err);
    if (rc)
        return rc;
    struct shard_labeler *lb;
    if ((rc = shard_labeler_new(&lb, o->labels ? o->labels : "dir", err)))
        return rc;
    struct shard_config config = o->config; /* as shardify_run resolves it */
    config.labels = strdup(shard_labeler_describe(lb));
    config.zstd_level = shard_config_zstd_level(&o->config);
    config.fields = NULL;
    config.field_count = 0;
    config.annotations = NULL;
    config.coco = NULL;
    config.classes = NULL;
    config.annotations_key = NULL;
    config.keys = NULL;
    config.split = o->split ? strdup(o->split) : NULL;
    struct sk_field_sources *sources = NULL; /* declares the fields, reads the table */
    rc = config.labels ? sk_field_sources_new(&sources, o, o->labels, &config, err)
                       : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && o->classes)
        rc = sk_run_read_classes(o->classes, NULL, NULL, &config.classes, err);
    struct sk_key_selection *selection = NULL;
    if (!rc && o->keys && !(rc = sk_key_selection_load(&selection, o->keys, err)) &&
        !(config.keys = strdup(sk_key_selection_describe(selection))))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    sk_key_selection_free(selection);
    if (!rc && sk_field_sources_geometric(sources)) /* a full run, whatever PREV is */
        rc = shard_err_set(err, SHARD_EMISMATCH, "%s", GEOMETRIC_NOT_INCREMENTAL);
    struct shard_manifest m;
    uint64_t id;
    if (!rc)
        rc = sk_prev_load_manifest(prev, &config,
                                   config.order == SHARD_ORDER_ARCHIVE ? "archives" : "directory",
                                   &m, &id, err);
    if (!rc)
        shard_manifest_release(&m);
    sk_field_sources_free(sources);
    shard_config_release(&config);
    shard_labeler_free(lb);
    return rc;
}

/* ---- the table of previous candidates --------------------------------------- */

uint64_t *sk_key_slot(const struct shard_keylist *keys, uint64_t *table, size_t cap,
                      const char *key, size_t len)
{
    size_t i = (size_t)XXH3_64bits(key, len) & (cap - 1);
    for (;; i = (i + 1) & (cap - 1)) {
        uint64_t n = table[i];
        if (!n ||
            (keys->lengths[n - 1] == len && !memcmp(keys->arena + keys->offsets[n - 1], key, len)))
            return &table[i];
    }
}

static uint64_t *table_slot(const struct sk_prev *p, const char *key, size_t len)
{
    return sk_key_slot(&p->keys, p->table, p->table_cap, key, len);
}

static struct prev_entry *find_entry(const struct sk_prev *p, const char *key, size_t len)
{
    uint64_t n = *table_slot(p, key, len);
    return n ? &p->entries[n - 1] : NULL;
}

static int add_entry(struct sk_prev *p, const char *key, size_t key_len, struct prev_entry **out,
                     struct shard_err *err)
{
    size_t cap = (size_t)p->cap;
    if (SK_GROW(p->entries, cap, (size_t)p->count + 1, 1024))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->cap = cap;
    int rc = shard_keylist_add(&p->keys, key, key_len, err);
    if (rc)
        return rc;
    struct prev_entry *e = &p->entries[p->count++];
    memset(e, 0, sizeof *e);
    *out = e;
    return SHARD_OK;
}

static int build_table(struct sk_prev *p, struct shard_err *err)
{
    p->table_cap = 1024;
    while (p->table_cap < 2 * p->count)
        p->table_cap *= 2;
    p->table = calloc(p->table_cap, sizeof *p->table);
    if (!p->table)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < p->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(&p->keys, i, &len);
        uint64_t *slot = table_slot(p, key, len);
        if (*slot)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "previous dataset '%s': a key is "
                                 "listed twice",
                                 p->path);
        *slot = i + 1;
    }
    return SHARD_OK;
}

static int keep_sources(struct sk_prev *p, struct prev_entry *e, const struct shard_sample *s,
                        struct shard_err *err);

/* Every index line of PREV, held to the manifest's index identity. */
static int load_index(struct sk_prev *p, struct shard_err *err)
{
    struct shard_index_reader *ir = NULL;
    struct shard_sample s;
    int rc = sk_manifest_index_open(p->path, &p->m, &ir, err), got;
    if (!rc)
        shard_index_reader_set_config(ir, &p->m.config);
    while (!rc && (got = shard_index_reader_next(ir, &s, err)) == 1) {
        struct prev_entry *e;
        if (s.shard >= p->m.shard_count ||
            (s.label != SHARD_NO_LABEL && (s.label < 0 || (uint32_t)s.label >= p->m.label_count)))
            rc = shard_err_set(err, SHARD_ECORRUPT,
                               "'%s': an index line names a shard or label "
                               "the manifest does not have",
                               p->path);
        else if (!(rc = add_entry(p, s.key, s.key_len, &e, err))) {
            e->source_bytes = s.source_bytes;
            e->source_xxh3 = s.source_xxh3;
            e->has_source = 1;
            e->shard = s.shard;
            e->record = s.record;
            e->label = s.label;
            e->width = s.width;
            e->height = s.height;
            e->channels = s.channels;
            e->depth = s.depth;
            if (s.warning && !(e->text = strdup(s.warning)))
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            if (!rc && s.field_count)
                rc = keep_sources(p, e, &s, err);
        }
    }
    if (!rc && got < 0)
        rc = got;
    if (!rc && (rc = sk_manifest_index_check(&p->m, ir, err)))
        shard_err_prefix(err, rc, "previous dataset '%s'", p->path);
    shard_index_reader_close(ir);
    return rc;
}

/* A sample's field identities, kept for the comparison with now's. */
static int keep_sources(struct sk_prev *p, struct prev_entry *e, const struct shard_sample *s,
                        struct shard_err *err)
{
    size_t cap = (size_t)p->source_cap;
    if (SK_GROW(p->sources, cap, (size_t)(p->source_count + s->field_count), 1024))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->source_cap = cap;
    e->fields = p->source_count;
    e->field_count = s->field_count;
    memcpy(p->sources + p->source_count, s->fields, s->field_count * sizeof *s->fields);
    p->source_count += s->field_count;
    return SHARD_OK;
}

static int load_rejects(struct sk_prev *p, struct shard_err *err)
{
    for (uint64_t i = 0; i < p->m.reject_count; i++) {
        const struct shard_reject *rj = &p->m.rejects[i];
        struct prev_entry *e;
        int rc = add_entry(p, rj->key, rj->key_len, &e, err);
        if (rc)
            return rc;
        e->is_reject = 1;
        e->has_source = (uint8_t)rj->has_source;
        e->source_bytes = rj->source_bytes;
        e->source_xxh3 = rj->source_xxh3;
        e->text = rj->reason; /* borrowed from the manifest */
    }
    return SHARD_OK;
}

/* Open every shard; one that does not open (or holds other than the
 * manifest says) stays NULL and its records are converted again. */
static int open_shards(struct sk_prev *p, struct shard_err *err)
{
    p->files = calloc(p->m.shard_count ? p->m.shard_count : 1, sizeof *p->files);
    if (!p->files)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < p->m.shard_count; i++) {
        char *path = sk_fs_join(p->path, p->m.shards[i].file);
        struct shard_err e;
        if (!path)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        if (shard_file_open(&p->files[i], path, &e) == SHARD_OK &&
            (shard_file_records(p->files[i]) != p->m.shards[i].samples ||
             shard_file_bytes(p->files[i]) != p->m.shards[i].bytes)) {
            shard_file_close(p->files[i]);
            p->files[i] = NULL;
        }
        free(path);
    }
    return SHARD_OK;
}

static void prev_free(struct sk_prev *p)
{
    if (!p)
        return;
    for (uint64_t i = 0; i < p->count; i++)
        if (!p->entries[i].is_reject)
            free(p->entries[i].text);
    free(p->entries);
    shard_keylist_release(&p->keys);
    free(p->table);
    for (uint32_t i = 0; p->files && i < p->m.shard_count; i++)
        shard_file_close(p->files[i]);
    free(p->files);
    for (int i = 0; p->decoders && i < p->threads; i++)
        shard_record_decoder_free(p->decoders[i]);
    free(p->decoders);
    shard_buf_release(&p->scratch);
    free(p->sources);
    shard_manifest_release(&p->m);
    free(p);
}

static int prev_open(struct sk_prev **out, const struct run *r, const char *dst,
                     struct shard_err *err)
{
    *out = NULL;
    struct sk_prev *p = calloc(1, sizeof *p);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->path = r->o->incremental;
    p->threads = r->threads;
    int rc = sk_prev_check_places(p->path, r->src, sk_source_is_s3(dst) ? NULL : dst, err);
    if (!rc && !(rc = load_manifest(p->path, &r->config, &p->m, &p->manifest_xxh3, err)) &&
        !(rc = load_index(p, err)) && !(rc = load_rejects(p, err)) && !(rc = build_table(p, err)) &&
        !(rc = open_shards(p, err))) {
        p->decoders = calloc((size_t)p->threads, sizeof *p->decoders);
        if (!p->decoders)
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        for (int i = 0; !rc && i < p->threads; i++)
            rc = shard_record_decoder_new(&p->decoders[i], err);
    }
    if (rc) {
        prev_free(p);
        return rc;
    }
    *out = p;
    return SHARD_OK;
}

/* ---- the run's side ---------------------------------------------------------- */

int sk_run_open_previous(struct run *r, const char *dst, struct shard_err *err)
{
    if (!r->o->incremental)
        return SHARD_OK;
    if (r->config.order == SHARD_ORDER_ARCHIVE)
        return sk_prev_archives_open(r, dst, err);
    r->has_lineage = 1;
    r->lineage.full_rebuild = NULL;
    struct shard_err why;
    int rc = sk_field_sources_geometric(r->fields)
                 ? shard_err_set(&why, SHARD_EMISMATCH, "%s", GEOMETRIC_NOT_INCREMENTAL)
                 : prev_open(&r->prev, r, dst, &why);
    if (!rc) {
        r->lineage.previous_manifest_xxh3 = r->prev->manifest_xxh3;
        return SHARD_OK;
    }
    return sk_prev_unusable(r, rc, &why, err);
}

int sk_prev_unusable(struct run *r, int rc, const struct shard_err *why_in, struct shard_err *err)
{
    struct shard_err why = *why_in;
    if (!r->o->incremental_or_full || rc == SHARD_ENOMEM) {
        *err = why;
        return rc;
    }
    /* a full rebuild, saying why (in the manifest, so as UTF-8 text: a path
     * that is not is shown with \xNN escapes); the previous manifest's
     * identity if it has one */
    shardx_quote(why.msg, strlen(why.msg), r->full_rebuild, sizeof r->full_rebuild);
    r->lineage.full_rebuild = r->full_rebuild;
    char *path = sk_fs_join(r->o->incremental, SHARD_MANIFEST_FILE);
    uint64_t bytes;
    if (!path || sk_fs_hash_file(path, &bytes, &r->lineage.previous_manifest_xxh3, &why))
        r->lineage.previous_manifest_xxh3 = 0;
    free(path);
    return SHARD_OK;
}

void sk_run_close_previous(struct run *r)
{
    prev_free(r->prev);
    r->prev = NULL;
    sk_prev_archives_free(r->prev_archives);
    r->prev_archives = NULL;
}

/* Do label numbers a (previous dataset) and b (this run) name the same class? */
static int same_label(const struct run *r, int32_t a, int32_t b)
{
    if (a == SHARD_NO_LABEL || b == SHARD_NO_LABEL)
        return a == b;
    return a == b && !strcmp(r->prev->m.labels[a], r->label_names[b]);
}

/* The previous record of `e` into s->frame: copied when its label stands,
 * else its payload in a new frame.  Anything damaged is an error (the
 * caller converts the source instead). */
/* The previous record of `e` (key `key`) into `frame`, checked: the footer
 * row names this key and label, and the frame bytes hash to its xxh3. */
static int read_prev_frame(const struct sk_prev *p, const struct prev_entry *e, const char *key,
                           size_t key_len, struct shard_buf *frame, uint64_t *xxh3,
                           struct shard_err *err)
{
    const struct shard_file *f = p->files[e->shard];
    if (!f || e->record >= shard_file_records(f))
        return shard_err_set(err, SHARD_ECORRUPT, "previous shard unusable");
    const struct shard_footer *ft = shard_file_footer(f);
    const struct shard_index_row *row = &ft->rows[e->record];
    if (row->key_len != key_len || memcmp(ft->keys + ft->key_offsets[e->record], key, key_len) ||
        row->label != e->label)
        return shard_err_set(err, SHARD_ECORRUPT, "previous footer disagrees with its index");
    int rc = shard_file_read_frame(f, e->record, frame, err);
    if (rc)
        return rc;
    *xxh3 = XXH3_64bits(frame->data, frame->len);
    if (*xxh3 != row->frame_xxh3)
        return shard_err_set(err, SHARD_ECORRUPT, "previous record damaged");
    return SHARD_OK;
}

/* Are the field identities of `e` those of now (fields[0..count))? */
static int same_sources(const struct sk_prev *p, const struct prev_entry *e,
                        const struct shard_field_source *fields, uint32_t count)
{
    if (e->field_count != count)
        return 0;
    const struct shard_field_source *was = p->sources + e->fields;
    for (uint32_t i = 0; i < count; i++)
        if (was[i].field != fields[i].field || was[i].source_bytes != fields[i].source_bytes ||
            was[i].source_xxh3 != fields[i].source_xxh3)
            return 0;
    return 1;
}

/* A dataset with fields: the previous record when it is the record of now
 * (same class label, the same field area byte for byte: a label number
 * inside a `labels` field may have moved too), else its payload in a new
 * frame with the label and the fields (built already, in s->fields) of now.
 * The image is never decoded. */
static int take_record_fields(struct run *r, int thread, const struct prev_entry *e, struct slot *s,
                              const char *key, size_t key_len, struct shard_err *err)
{
    int rc = read_prev_frame(r->prev, e, key, key_len, &s->frame, &s->frame_xxh3, err);
    struct shard_record_view view;
    if (!rc)
        rc = shard_record_decode(r->prev->decoders[thread], s->frame.data, s->frame.len,
                                 &s->frame_xxh3, &view, err);
    if (rc)
        return rc;
    int32_t label = r->label_of[s->cand];
    int label_stands = same_label(r, e->label, label) && view.meta.label == label;
    int fields_stand = view.fields_len == s->fields.area.len &&
                       view.field_count == s->fields.count &&
                       (!view.fields_len ||
                        !memcmp(view.fields, s->fields.area.data, view.fields_len));
    if (label_stands && fields_stand) {
        s->outcome = SK_REUSE_COPIED;
        return SHARD_OK;
    }
    rc = sk_record_build_frame(r->builders[thread], key, key_len, label, &view.meta, view.payload,
                               (size_t)view.payload_len, &s->fields, &s->frame, &s->frame_xxh3,
                               err);
    s->outcome = fields_stand ? SK_REUSE_RELABELED : SK_REUSE_REFIELDED;
    return rc;
}

static int take_record(struct run *r, int thread, const struct prev_entry *e, struct slot *s,
                       const char *key, size_t key_len, struct shard_err *err)
{
    if (r->fields)
        return take_record_fields(r, thread, e, s, key, key_len, err);
    int rc = read_prev_frame(r->prev, e, key, key_len, &s->frame, &s->frame_xxh3, err);
    int32_t label = r->label_of[s->cand];
    if (rc || same_label(r, e->label, label)) {
        s->outcome = SK_REUSE_COPIED;
        return rc;
    }
    /* the label number moved: the same payload in a new frame */
    struct shard_record_view view;
    rc = shard_record_decode(r->prev->decoders[thread], s->frame.data, s->frame.len, &s->frame_xxh3,
                             &view, err);
    if (!rc)
        rc = sk_record_build_frame(r->builders[thread], key, key_len, label, &view.meta,
                                   view.payload, (size_t)view.payload_len, NULL, &s->frame,
                                   &s->frame_xxh3, err);
    s->outcome = SK_REUSE_RELABELED;
    return rc;
}

/* What an uninterrupted run did with a sample a resumed run adopted from a
 * finished shard: the same checks, without writing anything. */
static int adopted_outcome(struct run *r, const struct prev_entry *e, const char *key,
                           size_t key_len, int32_t label, const struct shard_field_source *fields,
                           uint32_t field_count)
{
    struct shard_err why;
    uint64_t xxh3;
    if (e->is_reject)
        return r->fields && !strncmp(e->text, "field '", 7) ? SK_REUSE_NONE : SK_REUSE_REJECTED;
    if (read_prev_frame(r->prev, e, key, key_len, &r->prev->scratch, &xxh3, &why))
        return SK_REUSE_RECONVERTED;
    if (r->fields && !same_sources(r->prev, e, fields, field_count))
        return SK_REUSE_REFIELDED;
    return same_label(r, e->label, label) ? SK_REUSE_COPIED : SK_REUSE_RELABELED;
}

int sk_run_reuse(struct run *r, int thread, struct slot *s, const char *key, size_t key_len)
{
    sk_run_hash_input(s);
    double t1 = sk_now_seconds();
    const struct prev_entry *e = find_entry(r->prev, key, key_len);
    if (!e || !e->has_source || e->source_bytes != s->source_bytes ||
        e->source_xxh3 != s->source_xxh3)
        return 0;
    struct shard_err why;
    /* rejected for a field: its fields (built by now) can be taken, so the
     * image is converted; an image's own reason stands for the same bytes */
    if (e->is_reject && r->fields && !strncmp(e->text, "field '", 7))
        return 0;
    if (e->is_reject) { /* the same bytes fail the same way */
        shard_err_set(&why, SHARD_ECORRUPT, "%s", e->text);
        sk_run_reject_slot(s, &why);
        s->outcome = SK_REUSE_REJECTED;
        return 1;
    }
    int rc = take_record(r, thread, e, s, key, key_len, &why);
    s->t_copy += sk_now_seconds() - t1;
    if (rc) {
        s->outcome = SK_REUSE_RECONVERTED;
        return 0;
    }
    s->width = e->width;
    s->height = e->height;
    s->channels = e->channels;
    s->depth = e->depth;
    snprintf(s->warning, sizeof s->warning, "%s", e->text ? e->text : "");
    s->ok = 1;
    return 1;
}

void sk_run_note_candidate(struct run *r, const char *key, size_t key_len, int32_t label,
                           int has_source, uint64_t source_bytes, uint64_t source_xxh3,
                           const struct shard_field_source *fields, uint32_t field_count,
                           int outcome)
{
    if (r->prev_archives) {
        sk_prev_archives_note(r, key, key_len, has_source, source_bytes, source_xxh3);
        return;
    }
    if (!r->prev)
        return;
    struct shard_lineage *l = &r->lineage;
    struct prev_entry *e = find_entry(r->prev, key, key_len);
    int same_bytes = e && e->has_source == (has_source != 0) &&
                     (!has_source ||
                      (e->source_bytes == source_bytes && e->source_xxh3 == source_xxh3));
    if (!e)
        l->added++;
    else if (same_bytes)
        l->unchanged++;
    else
        l->changed++;
    if (e)
        e->seen = 1;
    if (outcome == SK_REUSE_ADOPTED)
        outcome = same_bytes && has_source
                      ? adopted_outcome(r, e, key, key_len, label, fields, field_count)
                      : SK_REUSE_NONE;
    switch (outcome) {
    case SK_REUSE_COPIED: l->reused++; break;
    case SK_REUSE_RELABELED: l->relabeled++; break;
    case SK_REUSE_REFIELDED: l->refielded++; break;
    case SK_REUSE_REJECTED: l->rejected_again++; break;
    case SK_REUSE_RECONVERTED: l->reconverted++; break;
    default: break;
    }
}

void sk_run_finish_lineage(struct run *r)
{
    if (!r->prev)
        return;
    r->lineage.removed = 0;
    for (uint64_t i = 0; i < r->prev->count; i++)
        r->lineage.removed += !r->prev->entries[i].seen;
}
