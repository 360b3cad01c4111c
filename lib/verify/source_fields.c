/* source_fields.c - --source for the fields: every field value a sample
 * has must be what SRC holds now, as the images must (see source.c).
 *
 * SRC's sidecar files are found by the same scan and matched with the
 * images by the same code as shardify's (source/sidecars.c): the scan
 * collects every file named with a declared suffix, resolving gives each
 * to its image or makes it an orphan, and refuses images that share a stem
 * (source.c pairs those with the rejects).  Then, for every sample whose
 * image is in SRC, and every declared field:
 *   - a sidecar field: the file stem + suffix is in SRC exactly when
 *     index.jsonl says the sample has the field, with the size and xxh3 the
 *     line names;
 *   - a column field (with --annotations FILE, the table shardify read):
 *     the sample's row gives a value exactly when the line says so, whose
 *     identity - the value as stored, parsed from the table by shardify's
 *     own parser (manifest/field_parse.h) - is the one the line names
 *     (--deep holds the records to the line);
 *   - with --deep, a sidecar field shardify parsed (numbers, vectors,
 *     labels): the value parsed from SRC again hashes like the one the
 *     record holds (fields.c keeps those hashes); text, json and bytes are
 *     their source bytes, which --deep already holds against index.jsonl.
 * The manifest's orphans must be SRC's, the table must be the one the
 * config names (config.annotations) with the rows counted there, and a
 * class taken from a sidecar or a column (--labels sidecar:SUFFIX,
 * column:NAME) is re-derived from it (sk_source_fields_class).
 *
 * Sidecar files are hashed as they stream past in an archive, or read in
 * parallel from a directory or an S3 prefix; only their identity is kept
 * (and, with --deep, the hash of each value parsed from them, and a class
 * file's class). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "read/dataset_internal.h"
#include "manifest/field_parse.h"
#include "source/source_internal.h"
#include "util/endian.h"
#include "util/jsonkey.h"
#include "shardx/shardx.h"
#include "util/grow.h"
#include "verify/verify_internal.h"

#define NONE UINT32_MAX
#define SIDECAR_PREFIX "sidecar:"
#define COLUMN_PREFIX "column:"

/* The value of a parsed field (--deep) taken from one sidecar file. */
struct parsed_value {
    uint32_t field;
    uint64_t xxh3; /* of the value as shardify would store it */
    char *why;     /* or why it does not parse (malloc'd) */
};

/* A sidecar file of SRC, in the order the scan found it. */
struct side_file {
    uint64_t bytes;
    uint64_t xxh3;
    int hashed;       /* bytes and xxh3 are known */
    int need;         /* a directory's: an image has it, so it is read */
    char *why;        /* why it cannot be read (malloc'd), or NULL */
    char *class_name; /* a class file's class (malloc'd), or NULL */
    struct parsed_value *values;
    uint32_t value_count;
};

/* What index.jsonl names for one sample. */
struct kept_sample {
    uint64_t first; /* in `sources` */
    uint32_t count;
};

struct source_fields {
    struct verify_run *v;
    const struct shard_config *c;
    struct sk_sidecars *side;          /* NULL: no sidecar suffix declared */
    struct sk_mask_folder **folder_of; /* per field: its mask folder (from=DIR/), or NULL */
    uint32_t *suffix_of;               /* per field: its suffix in `side`, or NONE */
    uint32_t class_suffix;             /* the class's suffix, or NONE */
    uint32_t suffix_count;
    struct side_file *files;
    uint64_t file_count;
    size_t file_cap;
    /* the annotation table (--annotations) */
    struct sk_annotations *table;
    struct sk_annotation_column *cols;
    uint32_t ncols;
    uint32_t *col_of;   /* per field: its column, or NONE */
    uint32_t class_col; /* the class's column, or NONE */
    int class_from_column;
    char *class_column;      /* its name (malloc'd) */
    const char *class_table; /* the table config.labels names with it ("file:..."), or NULL */
    char *table_name;
    int table_problem; /* the table could not be read: reported */
    /* the fields each sample's line names */
    struct shard_field_source *sources;
    uint64_t source_count;
    size_t source_cap;
    struct kept_sample *kept;
    uint64_t kept_count; /* samples kept: 0, 1, ... */
    size_t kept_cap;
};

static int stored_as_is(enum shard_field_type t)
{
    return t == SHARD_FIELD_TEXT || t == SHARD_FIELD_JSON || t == SHARD_FIELD_BYTES;
}

/* Whether a sidecar's value is parsed from its bytes alone, so that --deep
 * can parse SRC's file again: numbers, vectors and labels.  Not a mask or
 * an image: each is its file decoded and resized as its sample's image
 * was, so only its file's
 * identity is held to the line (and, by fields.c, its values to the
 * declared classes). */
static int parsed_from_bytes(enum shard_field_type t)
{
    return !stored_as_is(t) && t != SHARD_FIELD_MASK && t != SHARD_FIELD_BOXES &&
           t != SHARD_FIELD_IMAGE;
}

void sk_source_fields_free(struct source_fields *sf)
{
    if (!sf)
        return;
    sk_sidecars_free(sf->side);
    for (uint64_t i = 0; i < sf->file_count; i++) {
        struct side_file *f = &sf->files[i];
        free(f->why);
        free(f->class_name);
        for (uint32_t k = 0; k < f->value_count; k++)
            free(f->values[k].why);
        free(f->values);
    }
    free(sf->files);
    free(sf->suffix_of);
    for (uint32_t f = 0; sf->folder_of && f < sf->c->field_count; f++)
        sk_mask_folder_free(sf->folder_of[f]);
    free(sf->folder_of);
    sk_annotations_free(sf->table);
    free(sf->cols);
    free(sf->col_of);
    free(sf->class_column);
    free(sf->table_name);
    free(sf->sources);
    free(sf->kept);
    free(sf);
}

/* The note the report carries (the first one set stays). */
static int note(struct source_fields *sf, const char *why, struct shard_err *err)
{
    struct shard_verify_report *r = sf->v->report;
    if (r->fields_note)
        return SHARD_OK;
    if (!(r->fields_note = strdup(why)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* The column `name` (json: as JSON text) among the wanted ones, added when new. */
/* The annotation table, read as shardify reads it; one that cannot be read
 * or is another one is a problem (the values are still compared). */
static int load_table(struct source_fields *sf, struct shard_err *err)
{
    struct verify_run *v = sf->v;
    const char *path = v->o->annotations;
    const char *slash = strrchr(path, '/');
    if (!(sf->table_name = strdup(slash ? slash + 1 : path)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct shard_err e;
    int rc = sk_annotations_load(&sf->table, path, sf->c->annotations_key, sf->cols, sf->ncols, &e);
    if (rc == SHARD_ENOMEM) {
        *err = e;
        return rc;
    }
    if (rc) {
        sf->table_problem = 1;
        return sk_verify_problem(v, SHARD_CHECK_SOURCE, e.code, -1, -1, NULL, 0,
                                 "source: cannot read the annotation table: %s", e.msg);
    }
    /* a class from a column names the table in config.labels (a version 1
     * dataset has no config.annotations); one made before it did names
     * none: its classes are still compared */
    const char *is = sk_annotations_describe(sf->table);
    const char *want = sf->c->annotations ? sf->c->annotations : sf->class_table;
    if (want && strcmp(is, want))
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: the annotation table is '%s', the config says '%s'", is, want);
    return SHARD_OK;
}

int sk_source_fields_new(struct source_fields **out, struct verify_run *v, struct shard_err *err)
{
    *out = NULL;
    const struct shard_config *c = &v->m->config;
    const char *labels = c->labels ? c->labels : "";
    int class_sidecar = !strncmp(labels, SIDECAR_PREFIX, strlen(SIDECAR_PREFIX));
    int class_column = !strncmp(labels, COLUMN_PREFIX, strlen(COLUMN_PREFIX));
    if (!c->field_count && !class_sidecar && !class_column) {
        if (v->o->annotations)
            return shard_err_set(err, SHARD_EINVAL,
                                 "--annotations: the dataset has no field "
                                 "and no class taken from an annotation table");
        return SHARD_OK;
    }
    struct source_fields *sf = calloc(1, sizeof *sf);
    uint32_t n = c->field_count;
    const char **suffixes = calloc(n + 1, sizeof *suffixes);
    int rc = SHARD_OK;
    if (!sf || !suffixes || !(sf->suffix_of = calloc(n + 1, sizeof *sf->suffix_of)) ||
        !(sf->col_of = calloc(n + 1, sizeof *sf->col_of)) ||
        !(sf->cols = calloc(n + 1, sizeof *sf->cols)) ||
        !(sf->folder_of = calloc(n + 1, sizeof *sf->folder_of))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    sf->v = v;
    sf->c = c;
    sf->class_suffix = sf->class_col = NONE;
    /* the suffixes and columns in shardify's order (convert/fields.c) */
    for (uint32_t f = 0; f < n; f++) {
        sf->suffix_of[f] = sf->col_of[f] = NONE;
        if (c->fields[f].sidecar) {
            sf->suffix_of[f] = sf->suffix_count;
            suffixes[sf->suffix_count++] = c->fields[f].sidecar;
        } else if (c->fields[f].column) {
            sf->col_of[f] = sk_annotation_column_want(sf->cols, &sf->ncols, c->fields[f].column,
                                                      c->fields[f].type == SHARD_FIELD_JSON);
        }
    }
    if (class_sidecar) {
        /* a suffix a field has too (".cls" the class and an int field):
         * one suffix, as the scan gives a file the first of equal ones */
        const char *suffix = labels + strlen(SIDECAR_PREFIX);
        for (uint32_t x = 0; x < sf->suffix_count && sf->class_suffix == NONE; x++)
            if (!strcmp(suffixes[x], suffix))
                sf->class_suffix = x;
        if (sf->class_suffix == NONE) {
            sf->class_suffix = sf->suffix_count;
            suffixes[sf->suffix_count++] = suffix;
        }
    } else if (class_column) {
        /* "column:NAME:file:<name>:<xxh3>" (convert/fields.c), or an older
         * "column:NAME" */
        const char *column = labels + strlen(COLUMN_PREFIX), *table = NULL;
        for (const char *at = column; (at = strstr(at, ":file:")); at++)
            table = at;
        sf->class_from_column = 1;
        sf->class_table = table ? table + 1 : NULL;
        if (!(sf->class_column = strndup(column,
                                         table ? (size_t)(table - column) : strlen(column)))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
        sf->class_col = sk_annotation_column_want(sf->cols, &sf->ncols, sf->class_column, 0);
    }
    if (sf->suffix_count && (rc = sk_sidecars_new(&sf->side, suffixes, sf->suffix_count, err)))
        goto out;
    if (sf->side) /* as shardify matches them (convert/fields.c) */
        sk_sidecars_sample_stems(sf->side);
    if (sf->ncols && v->o->annotations)
        rc = load_table(sf, err);
    else if (sf->ncols)
        rc = note(sf,
                  "values from the annotation table were not checked: pass the table "
                  "(--annotations FILE)",
                  err);
    else if (v->o->annotations)
        rc = shard_err_set(err, SHARD_EINVAL,
                           "--annotations: no field of the dataset (and not "
                           "its class) comes from an annotation table");
out:
    free(suffixes);
    if (rc) {
        sk_source_fields_free(sf);
        return rc;
    }
    *out = sf;
    return SHARD_OK;
}

struct sk_sidecars *sk_source_fields_sidecars(struct source_fields *sf)
{
    return sf ? sf->side : NULL;
}

/* ---- sidecar files ------------------------------------------------------------------ */

/* Room for `need` items in the array *items points to (of *cap): sk_grow
 * from 1024, out of memory said in err. */
static int grow(void *items, size_t *cap, size_t need, size_t size, struct shard_err *err)
{
    if (sk_grow(items, cap, need, size, 1024))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

static int add_file(struct source_fields *sf, struct shard_err *err)
{
    int rc = grow(&sf->files, &sf->file_cap, sf->file_count + 1, sizeof *sf->files, err);
    if (!rc)
        memset(&sf->files[sf->file_count++], 0, sizeof *sf->files);
    return rc;
}

/* The label number of class name[0..len), or -1 when the manifest has none. */
static int32_t label_number(const struct shard_manifest *m, const char *name, size_t len)
{
    char *shown = sk_jsonkey_label_name(name, len);
    int32_t found = shown ? sk_verify_find_label(m, shown) : -1;
    free(shown);
    return found;
}

/* The size and xxh3 of the value of parsed field d from source bytes
 * data[0..n) (origin names them), as shardify would store it: 0 with *size
 * and *out, or SHARD_ECORRUPT with the reason in why; SHARD_ENOMEM. */
static int parsed_xxh3(const struct source_fields *sf, const struct shard_field_decl *d,
                       const uint8_t *data, size_t n, const char *origin, uint64_t *size,
                       uint64_t *out, struct shard_err *why)
{
    struct shard_buf value = {0};
    int rc = SHARD_OK;
    if (d->type != SHARD_FIELD_LABELS) {
        rc = sk_field_parse_value(d, data, n, origin, &value, why);
    } else {
        json_t *a = sk_field_parse_label_names(d, data, n, origin, why);
        if (!a)
            return SHARD_ECORRUPT;
        rc = shard_buf_reserve(&value, 4 * json_array_size(a) + 1, why);
        for (size_t i = 0; !rc && i < json_array_size(a); i++) {
            json_t *x = json_array_get(a, i);
            int32_t label = label_number(sf->v->m, json_string_value(x), json_string_length(x));
            char q[SHARDX_QUOTE_SIZE];
            if (label < 0)
                rc = shard_err_set(why, SHARD_ECORRUPT,
                                   "field '%s': %s names class '%s', "
                                   "which is not among the manifest's labels",
                                   d->name, origin,
                                   shardx_quote(json_string_value(x), json_string_length(x), q,
                                                sizeof q));
            else
                put_le32(value.data + 4 * i, (uint32_t)label);
        }
        if (!rc)
            value.len = 4 * json_array_size(a);
        json_decref(a);
    }
    if (!rc) {
        *size = value.len;
        *out = XXH3_64bits(value.data, value.len);
    }
    shard_buf_release(&value);
    return rc;
}

/* What sidecar file f (key[0..len)) gives beside its identity: its class
 * when it is a class file, and with --deep the value of each parsed field
 * whose suffix its name ends in (the one it belongs by is among them). */
static int take_values(struct source_fields *sf, struct side_file *f, const char *key, size_t len,
                       const uint8_t *data, size_t n, struct shard_err *err)
{
    const struct shard_config *c = sf->c;
    char origin[SHARDX_QUOTE_SIZE + 2], q[SHARDX_QUOTE_SIZE];
    snprintf(origin, sizeof origin, "'%s'", shardx_quote(key, len, q, sizeof q));
    if (sf->class_suffix != NONE &&
        sk_sidecars_suffix_of(sf->side, key, len) == (int)sf->class_suffix) {
        const uint8_t *name;
        size_t name_len;
        if (sk_field_class_name(data, n, &name, &name_len) &&
            !(f->class_name = strndup((const char *)name, name_len)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (!sf->v->field_xxh3)
        return SHARD_OK;
    for (uint32_t d = 0; d < c->field_count; d++) {
        const struct shard_field_decl *decl = &c->fields[d];
        size_t sl = decl->sidecar ? strlen(decl->sidecar) : 0;
        if (!decl->sidecar || !parsed_from_bytes(decl->type) || len <= sl ||
            memcmp(key + len - sl, decl->sidecar, sl) || key[len - sl - 1] == '/')
            continue;
        struct parsed_value *p = realloc(f->values, (f->value_count + 1) * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        f->values = p;
        struct parsed_value *pv = &p[f->value_count++];
        memset(pv, 0, sizeof *pv);
        pv->field = d;
        struct shard_err why;
        uint64_t size;
        int rc = parsed_xxh3(sf, decl, data, n, origin, &size, &pv->xxh3, &why);
        if (rc == SHARD_ENOMEM)
            return shard_err_set(err, rc, "out of memory");
        if (rc && !(pv->why = strdup(why.msg)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    return SHARD_OK;
}

/* Sidecar file f's bytes (or why there are none: `problem`, or a size over
 * the limit a sidecar may have). */
static int take_file(struct source_fields *sf, struct side_file *f, const char *key, size_t len,
                     const uint8_t *data, size_t n, const char *problem, uint64_t too_large,
                     struct shard_err *err)
{
    uint64_t max = sf->c->max_field_bytes ? sf->c->max_field_bytes : SHARD_MAX_FIELD_BYTES_DEFAULT;
    char why[SHARD_ERRMSG_SIZE];
    why[0] = '\0';
    if (problem)
        snprintf(why, sizeof why, "%s", problem);
    else if (too_large || n > max)
        snprintf(why, sizeof why, "file of %llu bytes exceeds the limit of %llu",
                 (unsigned long long)(too_large ? too_large : n), (unsigned long long)max);
    if (why[0])
        return (f->why = strdup(why)) ? SHARD_OK
                                      : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    f->bytes = n;
    f->xxh3 = XXH3_64bits(data, n);
    f->hashed = 1;
    return take_values(sf, f, key, len, data, n, err);
}

int sk_source_fields_entry(struct source_fields *sf, const struct sk_archive_entry *e,
                           const struct shard_buf *bytes, struct shard_err *err)
{
    int rc = add_file(sf, err);
    if (!rc)
        rc = sk_sidecars_add_file(sf->side, e->key, e->key_len, err);
    if (rc)
        return rc;
    const char *problem = e->problem     ? e->problem
                          : e->link_only ? "a hard link without data of its own"
                                         : NULL;
    struct side_file *f = &sf->files[sf->file_count - 1];
    double t = sk_now_seconds();
    rc = take_file(sf, f, e->key, e->key_len, bytes->data, bytes->len, problem, e->too_large, err);
    struct shard_verify_rate *rate = &sf->v->report->source;
    rate->busy_seconds += sk_now_seconds() - t;
    rate->bytes += f->hashed ? f->bytes : 0;
    rate->items += (uint64_t)f->hashed;
    return rc;
}

/* Each mask folder's files matched with the candidates, as shardify does. */
static int open_folders(struct source_fields *sf, const struct shard_keylist *candidates,
                        struct shard_err *err)
{
    for (uint32_t f = 0; f < sf->c->field_count; f++) {
        const struct shard_field_decl *d = &sf->c->fields[f];
        int rc;
        if (d->folder && !sf->folder_of[f] &&
            (rc = sk_mask_folder_open(&sf->folder_of[f], sf->v->o->source, d->folder, d->replace,
                                      candidates, err)))
            return shard_err_prefix(err, rc, "field '%s'", d->name);
    }
    return SHARD_OK;
}

int sk_source_fields_resolve(struct source_fields *sf, const struct shard_keylist *candidates,
                             struct shard_refusals *refused, struct shard_err *err)
{
    int rc = sf ? open_folders(sf, candidates, err) : SHARD_OK;
    if (rc || !sf || !sf->side)
        return rc;
    /* a directory's scan added the files: give each its state */
    while (sf->file_count < sk_sidecars_file_count(sf->side))
        if ((rc = add_file(sf, err)))
            return rc;
    sf->v->report->source_sidecars = sk_sidecars_file_count(sf->side);
    rc = sk_sidecars_resolve(sf->side, candidates, refused, err);
    if (!rc)
        sf->v->report->source_orphans = sk_sidecars_orphan_count(sf->side);
    return rc;
}

/* The state of sidecar file `pos` (a position among the sorted files). */
static struct side_file *file_at(const struct source_fields *sf, int64_t pos)
{
    return &sf->files[sk_sidecars_file_ordinal(sf->side, (size_t)pos)];
}

/* A sidecar file to read: one some candidate has. */
static const char *side_file_key(void *ctx, uint64_t i)
{
    const struct source_fields *sf = ctx;
    return file_at(sf, (int64_t)i)->need ? sk_sidecars_file(sf->side, (size_t)i, NULL) : NULL;
}

static int side_file_read(void *ctx, uint64_t i, const struct shard_buf *bytes, const char *why)
{
    struct source_fields *sf = ctx;
    struct side_file *f = file_at(sf, (int64_t)i);
    size_t len;
    const char *key = sk_sidecars_file(sf->side, (size_t)i, &len);
    struct shard_err e;
    if (why)
        return (f->why = strdup(why)) ? SHARD_OK : SHARD_ENOMEM;
    return take_file(sf, f, key, len, bytes->data, bytes->len, NULL, 0, &e);
}

int sk_source_fields_read(struct source_fields *sf, const struct sk_source_root *root,
                          const struct shard_keylist *candidates, struct shard_err *err)
{
    if (!sf || !sf->side)
        return SHARD_OK;
    for (size_t i = 0; i < candidates->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(candidates, i, &len);
        for (uint32_t x = 0; x < sf->suffix_count; x++) {
            int64_t pos = sk_sidecars_find(sf->side, key, len, x);
            if (pos >= 0)
                file_at(sf, pos)->need = 1;
        }
    }
    /* a link or special file named as a sidecar is never opened: it says why */
    for (size_t i = 0; i < sk_sidecars_file_count(sf->side); i++) {
        struct side_file *f = file_at(sf, (int64_t)i);
        const char *refusal = sk_sidecars_file_refusal(sf->side, i);
        if (refusal && f->need) {
            f->need = 0;
            if (!(f->why = strdup(refusal)))
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
    }
    uint64_t max = sf->c->max_field_bytes ? sf->c->max_field_bytes : SHARD_MAX_FIELD_BYTES_DEFAULT;
    return sk_verify_read_files(sf->v, root, sk_sidecars_file_count(sf->side), max, side_file_key,
                                side_file_read, sf, err);
}

/* ---- the samples -------------------------------------------------------------------- */

int sk_source_fields_keep(struct source_fields *sf, uint64_t sample, const struct shard_sample *smp,
                          struct shard_err *err)
{
    if (!sf)
        return SHARD_OK;
    int rc = grow(&sf->kept, &sf->kept_cap, sample + 1, sizeof *sf->kept, err);
    if (!rc)
        rc = grow(&sf->sources, &sf->source_cap, sf->source_count + smp->field_count,
                  sizeof *sf->sources, err);
    if (rc)
        return rc;
    while (sf->kept_count <= sample) /* samples are kept in order: this adds one */
        sf->kept[sf->kept_count++] = (struct kept_sample){sf->source_count, 0};
    sf->kept[sample] = (struct kept_sample){sf->source_count, smp->field_count};
    if (smp->field_count)
        memcpy(sf->sources + sf->source_count, smp->fields, smp->field_count * sizeof *smp->fields);
    sf->source_count += smp->field_count;
    return SHARD_OK;
}

/* The identity index.jsonl names for field f of a kept sample, or NULL. */
static const struct shard_field_source *named(const struct source_fields *sf, uint64_t sample,
                                              uint32_t f)
{
    const struct kept_sample *k = &sf->kept[sample];
    for (uint32_t i = 0; i < k->count; i++)
        if (sf->sources[k->first + i].field == f)
            return &sf->sources[k->first + i];
    return NULL;
}

/* One sample being checked, for the messages. */
struct checked {
    struct source_fields *sf;
    const char *key;
    size_t len;
    char q[SHARDX_QUOTE_SIZE]; /* the key, quoted */
    int64_t shard;
    int64_t record;
    uint64_t g; /* its place in stored order */
};

#define SAMPLE_PROBLEM(c, code, ...)                                                           \
    sk_verify_problem((c)->sf->v, SHARD_CHECK_SOURCE, code, (c)->shard, (c)->record, (c)->key, \
                      (c)->len, __VA_ARGS__)

/* The value's identity in SRC against the line's: `origin` `is` ("is", a
 * sidecar file; "gives a value of", a table's value as stored) so many
 * bytes with that xxh3. */
static void compare_identity(const struct checked *c, const char *field, const char *origin,
                             const char *is, uint64_t bytes, uint64_t xxh3,
                             const struct shard_field_source *idx)
{
    if (bytes == idx->source_bytes && xxh3 == idx->source_xxh3)
        return;
    char got[17], want[17];
    shard_hex64(xxh3, got);
    shard_hex64(idx->source_xxh3, want);
    SAMPLE_PROBLEM(c, SHARD_EMISMATCH,
                   "source: field '%s' of '%s' changed since sharding: %s %s %llu bytes with "
                   "xxh3 %s, %s says %llu bytes with xxh3 %s",
                   field, c->q, origin, is, (unsigned long long)bytes, got,
                   sk_verify_index_name(c->sf->v, (uint32_t)c->shard),
                   (unsigned long long)idx->source_bytes, want);
}

/* --deep: the value parsed from SRC against the record's (fields.c). */
static void compare_value(const struct checked *c, uint32_t f, const char *origin, uint64_t xxh3,
                          const char *why)
{
    const struct verify_run *v = c->sf->v;
    const char *field = v->m->config.fields[f].name;
    if (!v->record_read || c->g == UINT64_MAX || !v->record_read[c->g])
        return;
    if (why)
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH, "source: %s (the record holds a value)", why);
    else if (xxh3 != v->field_xxh3[c->g * v->field_count + f])
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH,
                       "source: field '%s' of '%s': the record holds another value than %s "
                       "gives",
                       field, c->q, origin);
}

/* Whether the file `origin` of field `field` is in `where` exactly when the
 * index line names the field (idx): 1 when both are, else 0 and the
 * difference reported. */
static int as_named(const struct checked *c, const char *field, const char *origin,
                    const char *where, int present, const struct shard_field_source *idx)
{
    const char *index_file = sk_verify_index_name(c->sf->v, (uint32_t)c->shard);
    if (present && idx)
        return 1;
    if (idx)
        SAMPLE_PROBLEM(c, SHARD_ENOTFOUND,
                       "source: field '%s' of '%s': %s is not in %s (%s names its %llu bytes)",
                       field, c->q, origin, where, index_file,
                       (unsigned long long)idx->source_bytes);
    else if (present)
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH,
                       "source: %s is in %s, but %s says '%s' has no field "
                       "'%s'",
                       origin, where, index_file, c->q, field);
    return 0;
}

static void check_sidecar_field(struct checked *c, uint32_t f, const struct shard_field_source *idx,
                                struct shard_buf *name)
{
    struct source_fields *sf = c->sf;
    const struct shard_field_decl *d = &sf->c->fields[f];
    int64_t pos = sk_sidecars_find(sf->side, c->key, c->len, sf->suffix_of[f]);
    if (pos == SK_SIDECAR_TWICE) {
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH,
                       "source: the sidecar of field '%s' of '%s' is in SRC twice", d->name, c->q);
        return;
    }
    char q[SHARDX_QUOTE_SIZE], origin[SHARDX_QUOTE_SIZE + 2];
    struct shard_err e;
    if (sk_sidecars_name(sf->side, c->key, c->len, sf->suffix_of[f], name, &e))
        snprintf(origin, sizeof origin, "its sidecar");
    else
        snprintf(origin, sizeof origin, "'%s'",
                 shardx_quote((const char *)name->data, name->len, q, sizeof q));
    if (!as_named(c, d->name, origin, "SRC", pos >= 0, idx))
        return;
    const struct side_file *file = file_at(sf, pos);
    if (!file->hashed) {
        SAMPLE_PROBLEM(c, SHARD_EIO, "source: field '%s' of '%s': %s cannot be read: %s", d->name,
                       c->q, origin, file->why ? file->why : "unknown");
        return;
    }
    compare_identity(c, d->name, origin, "is", file->bytes, file->xxh3, idx);
    for (uint32_t k = 0; k < file->value_count; k++)
        if (file->values[k].field == f)
            compare_value(c, f, origin, file->values[k].xxh3, file->values[k].why);
}

/* A mask from a folder: its file there now against the line's identity
 * (read here: one file per sample that has the field). */
static void check_folder_field(struct checked *c, uint32_t f, const struct shard_field_source *idx,
                               struct shard_buf *bytes)
{
    struct source_fields *sf = c->sf;
    const struct shard_field_decl *d = &sf->c->fields[f];
    const struct sk_mask_folder *mf = sf->folder_of[f];
    char origin[SHARDX_QUOTE_SIZE + 2 * SHARD_FIELD_NAME_MAX];
    sk_mask_folder_origin(mf, c->key, c->len, origin, sizeof origin);
    if (!as_named(c, d->name, origin, "its folder", sk_mask_folder_has(mf, c->key, c->len), idx))
        return;
    struct shard_err e;
    uint64_t max = sf->c->max_field_bytes ? sf->c->max_field_bytes : SHARD_MAX_FIELD_BYTES_DEFAULT;
    double t = sk_now_seconds();
    int rc = sk_mask_folder_read(mf, c->key, c->len, max, bytes, &e);
    struct shard_verify_rate *rate = &sf->v->report->source;
    rate->busy_seconds += sk_now_seconds() - t;
    if (rc) {
        SAMPLE_PROBLEM(c, SHARD_EIO, "source: field '%s' of '%s': %s cannot be read: %s", d->name,
                       c->q, origin, e.msg);
        return;
    }
    rate->bytes += bytes->len;
    rate->items++;
    compare_identity(c, d->name, origin, "is", bytes->len, XXH3_64bits(bytes->data, bytes->len),
                     idx);
}

static void check_column_field(struct checked *c, uint32_t f, const struct shard_field_source *idx)
{
    struct source_fields *sf = c->sf;
    const struct shard_field_decl *d = &sf->c->fields[f];
    const char *index_file = sk_verify_index_name(sf->v, (uint32_t)c->shard);
    int64_t row = sk_annotations_row(sf->table, c->key, c->len);
    const uint8_t *data = NULL;
    size_t n = 0;
    int present = sk_annotations_value(sf->table, row, sf->col_of[f], &data, &n);
    char origin[256];
    if (row < 0)
        snprintf(origin, sizeof origin, "'%s' (which has no row for it)", sf->table_name);
    else
        snprintf(origin, sizeof origin, "'%s' line %llu", sf->table_name,
                 (unsigned long long)sk_annotations_line(sf->table, row));
    if (!present) {
        if (idx)
            SAMPLE_PROBLEM(c, SHARD_ENOTFOUND,
                           "source: field '%s' of '%s': %s gives no value (%s names %llu bytes)",
                           d->name, c->q, origin, index_file,
                           (unsigned long long)idx->source_bytes);
        return;
    }
    if (!idx) {
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH,
                       "source: %s gives field '%s' of '%s' a value, but %s "
                       "says it has none",
                       origin, d->name, c->q, index_file);
        return;
    }
    /* a table value's identity is the value as stored (manifests/FORMAT.md):
     * parsed as shardify parses it; --deep holds the records to the line */
    uint64_t size = n, h = XXH3_64bits(data, n);
    struct shard_err why;
    int rc = stored_as_is(d->type) ? SHARD_OK
                                   : parsed_xxh3(sf, d, data, n, origin, &size, &h, &why);
    if (rc)
        SAMPLE_PROBLEM(c, SHARD_EMISMATCH, "source: %s (%s names a value of %llu bytes)", why.msg,
                       index_file, (unsigned long long)idx->source_bytes);
    else
        compare_identity(c, d->name, origin, "gives a value of", size, h, idx);
}

void sk_source_fields_check(struct source_fields *sf, uint64_t sample, const char *key, size_t len,
                            uint32_t shard, uint64_t record)
{
    if (!sf || sample >= sf->kept_count)
        return;
    const struct verify_run *v = sf->v;
    struct checked c = {sf, key, len, "", shard, (int64_t)record, UINT64_MAX};
    shardx_quote(key, len, c.q, sizeof c.q);
    if (shard < v->m->shard_count && record < v->m->shards[shard].samples)
        c.g = sk_dataset_shard_first(v->ds, shard) + record;
    struct shard_buf name = {0};
    for (uint32_t f = 0; f < sf->c->field_count; f++) {
        const struct shard_field_source *idx = named(sf, sample, f);
        if (sf->suffix_of[f] != NONE)
            check_sidecar_field(&c, f, idx, &name);
        else if (sf->folder_of[f])
            check_folder_field(&c, f, idx, &name);
        else if (sf->col_of[f] != NONE && sf->table)
            check_column_field(&c, f, idx);
    }
    shard_buf_release(&name);
}

/* ---- what the whole of SRC gives ------------------------------------------------------- */

static int compare_orphans(const void *pa, const void *pb)
{
    const struct shard_orphan *a = pa, *b = pb;
    return sk_key_compare(a->key, a->key_len, b->key, b->key_len);
}

/* The manifest's orphans against SRC's sidecar files of no image. */
static int check_orphans(struct source_fields *sf, struct shard_err *err)
{
    struct verify_run *v = sf->v;
    const struct shard_manifest *m = v->m;
    uint64_t listed = m->orphan_count;
    struct shard_orphan *mine = malloc((listed ? listed : 1) * sizeof *mine);
    if (!mine)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (listed)
        memcpy(mine, m->orphans, listed * sizeof *mine);
    qsort(mine, listed, sizeof *mine, compare_orphans);
    /* SRC's sidecar files of no image, and each mask folder's files of none */
    size_t found = sf->side ? sk_sidecars_orphan_count(sf->side) : 0, i = 0;
    for (uint32_t f = 0; f < sf->c->field_count; f++)
        found += sk_mask_folder_orphan_count(sf->folder_of[f]);
    struct shard_orphan *theirs = malloc((found ? found : 1) * sizeof *theirs);
    if (!theirs) {
        free(mine);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (; sf->side && k < sk_sidecars_orphan_count(sf->side); k++)
        theirs[k].key = (char *)sk_sidecars_orphan(sf->side, k, &theirs[k].key_len);
    for (uint32_t f = 0; f < sf->c->field_count; f++)
        for (size_t x = 0; x < sk_mask_folder_orphan_count(sf->folder_of[f]); x++, k++)
            theirs[k].key = (char *)sk_mask_folder_orphan(sf->folder_of[f], x, &theirs[k].key_len);
    if (found)
        qsort(theirs, found, sizeof *theirs, compare_orphans);
    uint64_t j = 0;
    char q[SHARDX_QUOTE_SIZE];
    while (i < found || j < listed) {
        size_t len = i < found ? theirs[i].key_len : 0;
        const char *key = i < found ? theirs[i].key : NULL;
        int cmp = !key          ? 1
                  : j >= listed ? -1
                                : sk_key_compare(key, len, mine[j].key, mine[j].key_len);
        if (cmp < 0)
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, key, len,
                              "source: '%s' is a sidecar file of no image in SRC, but not one "
                              "of the manifest's orphans",
                              shardx_quote(key, len, q, sizeof q));
        else if (cmp > 0)
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, mine[j].key,
                              mine[j].key_len,
                              "source: orphan '%s' of the manifest is not a sidecar file of no "
                              "image in SRC (gone, or an image has its stem now)",
                              shardx_quote(mine[j].key, mine[j].key_len, q, sizeof q));
        i += cmp <= 0;
        j += cmp >= 0;
    }
    free(theirs);
    free(mine);
    return SHARD_OK;
}

int sk_source_fields_finish(struct source_fields *sf, const struct shard_keylist *candidates,
                            struct shard_err *err)
{
    if (!sf)
        return SHARD_OK;
    struct verify_run *v = sf->v;
    const struct shard_manifest *m = v->m;
    int rc = check_orphans(sf, err);
    if (rc || !sf->table || !sf->c->annotations) /* counted with the table's identity */
        return rc;
    uint64_t rows = sk_annotations_rows(sf->table), unmatched = 0;
    if (rows != m->annotation_rows)
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: the annotation table has %llu rows, "
                          "counts.annotation_rows says %llu",
                          (unsigned long long)rows, (unsigned long long)m->annotation_rows);
    if ((rc = sk_annotations_unmatched(sf->table, candidates, &unmatched, err)))
        return rc;
    if (unmatched != m->annotation_rows_unmatched)
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: %llu rows of the annotation table name no file of SRC, "
                          "counts.annotation_rows_unmatched says %llu",
                          (unsigned long long)unmatched,
                          (unsigned long long)m->annotation_rows_unmatched);
    return SHARD_OK;
}

int sk_source_fields_has_class(const struct source_fields *sf, const char **why)
{
    *why = NULL;
    if (!sf || (sf->class_suffix == NONE && !sf->class_from_column))
        return 0;
    if (sf->class_from_column && !sf->table)
        *why = sf->table_problem
                   ? "the labels came from the annotation table, which could not be read"
                   : "the labels came from an annotation table; pass that table "
                     "(--annotations FILE) to check them";
    return 1;
}

int sk_source_fields_class(const struct source_fields *sf, const char *key, size_t len,
                           const char **name, size_t *name_len)
{
    if (sf->class_suffix != NONE) {
        int64_t pos = sk_sidecars_find(sf->side, key, len, sf->class_suffix);
        const struct side_file *f = pos >= 0 ? file_at(sf, pos) : NULL;
        if (!f || !f->class_name)
            return 0;
        *name = f->class_name;
        *name_len = strlen(f->class_name);
        return 1;
    }
    const uint8_t *data;
    size_t n;
    if (!sk_annotations_value(sf->table, sk_annotations_row(sf->table, key, len), sf->class_col,
                              &data, &n))
        return 0;
    const uint8_t *trimmed;
    if (!sk_field_class_name(data, n, &trimmed, name_len))
        return 0;
    *name = (const char *)trimmed;
    return 1;
}
