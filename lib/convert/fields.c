/* fields.c - a run's fields: where each value comes from, reading and
 * parsing it, and the sample's field area (see fields.h). */
#include "convert/fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "util/clock.h"
#include "util/endian.h"
#include "util/quote.h"
#include "manifest/field_parse.h"
#include "source/source_internal.h"

#define SIDECAR_PREFIX "sidecar:"
#define COLUMN_PREFIX "column:"
#define NONE UINT32_MAX

/* Where the class label comes from when not the labeler. */
enum class_from { CLASS_LABELER, CLASS_SIDECAR, CLASS_COLUMN };

/* The names read for one candidate: its class, and its `labels` fields'
 * names in field order, or the reason one of them could not be read. */
struct names {
    uint64_t off;              /* in plan->arena: the names, each as len:u32 + bytes */
    uint32_t count;            /* names of the labels fields, the class not counted */
    int has_class;
    uint32_t class_len;        /* the class name follows the labels' names */
};

/* A labels field's value read ahead (its sidecar or cell), per candidate. */
struct label_value {
    uint64_t numbers;          /* in plan->numbers: the label numbers, once known */
    uint32_t count;
    int present;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    char *reason;              /* why it cannot be taken (the sample is rejected), or NULL */
};

struct sk_field_plan {
    struct shard_config *config;
    struct sk_sidecars *sidecars;     /* NULL: no sidecar sources */
    uint32_t *suffix_of;              /* per field: its sidecar suffix's index, or NONE */
    struct sk_annotations *table;
    struct sk_annotation_column *cols;
    uint32_t ncols;
    uint32_t *col_of;                 /* per field: its column, or NONE */
    char *table_name;                 /* the table's file name, for messages */
    enum class_from class_from;
    uint32_t class_source;            /* suffix or column of the class */
    /* labels read ahead: `labels` fields and a sidecar or column class */
    uint32_t *label_fields;           /* the `labels` fields' numbers */
    uint32_t label_field_count;
    uint64_t candidates;
    struct names *names;              /* per candidate */
    struct label_value *values;       /* per candidate x label_field_count */
    struct shard_buf arena;
    uint32_t *numbers;
    size_t numbers_len;
};

void sk_field_plan_free(struct sk_field_plan *p)
{
    if (!p)
        return;
    sk_sidecars_free(p->sidecars);
    free(p->suffix_of);
    sk_annotations_free(p->table);
    free(p->cols);
    free(p->col_of);
    free(p->table_name);
    free(p->label_fields);
    free(p->names);
    for (uint64_t i = 0; p->values && i < p->candidates * p->label_field_count; i++)
        free(p->values[i].reason);
    free(p->values);
    shard_buf_release(&p->arena);
    free(p->numbers);
    free(p);
}

/* ---- setting up ---------------------------------------------------------------- */

static int parse_declarations(struct sk_field_plan *p, const struct shardify_options *o,
                              struct shard_config *c, struct shard_err *err)
{
    if (o->field_count > SHARD_FIELDS_MAX)
        return shard_err_set(err, SHARD_EINVAL, "%u fields declared, at most %u", o->field_count,
                             SHARD_FIELDS_MAX);
    c->fields = calloc(o->field_count ? o->field_count : 1, sizeof *c->fields);
    if (!c->fields)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < o->field_count; i++) {
        struct shard_err e;
        int rc = shard_field_decl_parse(o->fields[i], o->annotations != NULL, &c->fields[i], &e);
        if (rc)
            return shard_err_set(err, rc, "--field %s", e.msg);
        c->field_count = i + 1;
        if (shard_config_field(c, c->fields[i].name) != (int32_t)i)
            return shard_err_set(err, SHARD_EINVAL, "--field '%s' is declared twice",
                                 c->fields[i].name);
    }
    return SHARD_OK;
}

int sk_field_plan_new(struct sk_field_plan **out, const struct shardify_options *o,
                      const char *labels, struct shard_config *c, struct shard_err *err)
{
    *out = NULL;
    int class_sidecar = labels && !strncmp(labels, SIDECAR_PREFIX, strlen(SIDECAR_PREFIX));
    int class_column = labels && !strncmp(labels, COLUMN_PREFIX, strlen(COLUMN_PREFIX));
    if (!o->field_count && !class_sidecar && !class_column) {
        if (o->annotations)
            return shard_err_set(err, SHARD_EINVAL, "--annotations is read for fields "
                                 "(--field NAME=TYPE) or labels (--labels column:NAME), and "
                                 "none is declared");
        return SHARD_OK;
    }
    if (class_column && !o->annotations)
        return shard_err_set(err, SHARD_EINVAL, "--labels %s needs an --annotations table",
                             labels);
    struct sk_field_plan *p = calloc(1, sizeof *p);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->config = c;
    int rc = parse_declarations(p, o, c, err);
    uint32_t n = c->field_count;
    const char **suffixes = calloc(n + 1, sizeof *suffixes);
    p->suffix_of = calloc(n ? n : 1, sizeof *p->suffix_of);
    p->col_of = calloc(n ? n : 1, sizeof *p->col_of);
    p->cols = calloc(n + 1, sizeof *p->cols);
    p->label_fields = calloc(n ? n : 1, sizeof *p->label_fields);
    if (!rc && (!suffixes || !p->suffix_of || !p->col_of || !p->cols || !p->label_fields))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint32_t nsuffixes = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        const struct shard_field_decl *d = &c->fields[i];
        p->suffix_of[i] = p->col_of[i] = NONE;
        if (d->sidecar) {
            p->suffix_of[i] = nsuffixes;
            suffixes[nsuffixes++] = d->sidecar;
        } else {
            p->col_of[i] = sk_annotation_column_want(p->cols, &p->ncols, d->column,
                                                     d->type == SHARD_FIELD_JSON);
        }
        if (d->type == SHARD_FIELD_LABELS)
            p->label_fields[p->label_field_count++] = i;
    }
    if (!rc && class_sidecar) {
        const char *suffix = labels + strlen(SIDECAR_PREFIX);
        p->class_from = CLASS_SIDECAR;
        p->class_source = nsuffixes;
        suffixes[nsuffixes++] = suffix;
        if (suffix[0] != '.' || !suffix[1] || strchr(suffix, '/'))
            rc = shard_err_set(err, SHARD_EINVAL, "--labels %s: a sidecar suffix is '.' and a "
                               "name without '/' (sidecar:.cls)", labels);
    } else if (!rc && class_column) {
        p->class_from = CLASS_COLUMN;
        const char *column = labels + strlen(COLUMN_PREFIX);
        if (!*column)
            rc = shard_err_set(err, SHARD_EINVAL, "--labels column: needs a column name");
        else
            p->class_source = sk_annotation_column_want(p->cols, &p->ncols, column, 0);
    }
    if (!rc && nsuffixes)
        rc = sk_sidecars_new(&p->sidecars, suffixes, nsuffixes, err);
    if (!rc && o->annotations) {
        const char *slash = strrchr(o->annotations, '/');
        if (!(p->table_name = strdup(slash ? slash + 1 : o->annotations)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else if (!p->ncols)
            rc = shard_err_set(err, SHARD_EINVAL, "--annotations '%s': no field (or --labels) "
                               "reads a column of it", o->annotations);
        else if (!(rc = sk_annotations_load(&p->table, o->annotations, p->cols, p->ncols, err)) &&
                 !(c->annotations = strdup(sk_annotations_describe(p->table))))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    free(suffixes);
    if (rc) {
        sk_field_plan_free(p);
        return rc;
    }
    if (!c->max_field_bytes)
        c->max_field_bytes = SHARD_MAX_FIELD_BYTES_DEFAULT;
    *out = p;
    return SHARD_OK;
}

struct sk_sidecars *sk_field_plan_sidecars(struct sk_field_plan *p)
{
    return p ? p->sidecars : NULL;
}

int sk_field_plan_resolve(struct sk_field_plan *p, const struct shard_keylist *keys,
                          struct shard_refusals *refused, struct shard_err *err)
{
    return p && p->sidecars ? sk_sidecars_resolve(p->sidecars, keys, refused, err) : SHARD_OK;
}

uint64_t sk_field_plan_table_rows(const struct sk_field_plan *p)
{
    return p && p->table ? sk_annotations_rows(p->table) : 0;
}

int sk_field_plan_table_unmatched(const struct sk_field_plan *p, const struct shard_keylist *keys,
                                  uint64_t *unmatched, struct shard_err *err)
{
    *unmatched = 0;
    return p && p->table ? sk_annotations_unmatched(p->table, keys, unmatched, err) : SHARD_OK;
}

/* ---- the bytes of a value --------------------------------------------------------- */

/* Where a value came from, for messages: "'a/0001.txt'" or "'ann.jsonl' line 12". */
struct origin {
    char text[SHARD_QUOTE_SIZE + 64];
};

static void sidecar_origin(struct origin *o, const char *key, size_t len)
{
    char shown[SHARD_QUOTE_SIZE];
    snprintf(o->text, sizeof o->text, "'%s'", shard_quote(key, len, shown, sizeof shown));
}

static void table_origin(const struct sk_field_plan *p, int64_t row, struct origin *o)
{
    snprintf(o->text, sizeof o->text, "'%s' line %llu", p->table_name,
             (unsigned long long)sk_annotations_line(p->table, row));
}

/* The source bytes of a value that comes from suffix `suffix` or column
 * `col` (one is NONE) for candidate key[0..len): 1 with *data and *n (sidecar
 * bytes in `buf`), 0 when absent (*o then names what is missing), or a
 * negative error: for a sidecar that cannot be read, a reason in why
 * (SHARD_ECORRUPT) unless the store failed (SHARD_ENET/EINTR/ENOMEM). */
static int value_bytes(const struct sk_field_plan *p, const char *name, uint32_t suffix,
                       uint32_t col, const char *key, size_t len, sk_sidecar_read_fn read,
                       void *ctx, struct shard_buf *buf, const uint8_t **data, size_t *n,
                       struct origin *o, struct sk_field_result *res, struct shard_err *why)
{
    if (col != NONE) {
        int64_t row = sk_annotations_row(p->table, key, len);
        if (row < 0) {
            snprintf(o->text, sizeof o->text, "no row of '%s'", p->table_name);
            return 0;
        }
        table_origin(p, row, o);
        if (!sk_annotations_value(p->table, row, col, data, n))
            return 0;
        if (*n > p->config->max_field_bytes)
            return shard_err_set(why, SHARD_ECORRUPT, "field '%s': a value of %zu bytes in %s "
                                 "exceeds --max-field-bytes %llu", name, *n, o->text,
                                 (unsigned long long)p->config->max_field_bytes);
        return 1;
    }
    int64_t file = sk_sidecars_find(p->sidecars, key, len, suffix);
    if (file == SK_SIDECAR_TWICE)
        return shard_err_set(why, SHARD_ECORRUPT, "field '%s': the archive holds its sidecar "
                             "twice, so which one is meant cannot be told", name);
    if (file < 0) {
        /* name the file that would be there */
        size_t stem = len;
        for (size_t i = len; i > 0 && key[i - 1] != '/'; i--)
            if (key[i - 1] == '.') {
                stem = i - 1;
                break;
            }
        char want[SHARD_KEY_MAX + SHARD_FIELD_NAME_MAX + 8];
        const char *sfx = NULL;
        for (uint32_t f = 0; f < p->config->field_count && !sfx; f++)
            if (p->suffix_of[f] == suffix)
                sfx = p->config->fields[f].sidecar;
        if (!sfx)  /* the class's */
            sfx = p->config->labels + strlen(SIDECAR_PREFIX);
        size_t sl = strlen(sfx);
        if (stem + sl < sizeof want) {
            memcpy(want, key, stem);
            memcpy(want + stem, sfx, sl);
            sidecar_origin(o, want, stem + sl);
        } else {
            snprintf(o->text, sizeof o->text, "a sidecar '%s'", sfx);
        }
        return 0;
    }
    size_t flen;
    const char *fkey = sk_sidecars_file(p->sidecars, (size_t)file, &flen);
    sidecar_origin(o, fkey, flen);
    double t0 = sk_now_seconds();
    struct shard_err e;
    int fatal = 0;
    int rc = read(ctx, (size_t)file, fkey, p->config->max_field_bytes, buf, &fatal, &e);
    res->read_seconds += sk_now_seconds() - t0;
    if (!rc)
        res->bytes_read += buf->len;
    if (rc && fatal) {
        *why = e;
        return rc == SHARD_ECORRUPT ? SHARD_EIO : rc;  /* never taken for a reject */
    }
    if (rc == SHARD_ELIMIT)
        return shard_err_set(why, SHARD_ECORRUPT, "field '%s': sidecar %s %s (--max-field-bytes)",
                             name, o->text, e.msg);
    if (rc)
        return shard_err_set(why, SHARD_ECORRUPT, "field '%s': sidecar %s: %s", name, o->text,
                             e.msg);
    *data = buf->data;
    *n = buf->len;
    return 1;
}

/* ---- parsing values ---------------------------------------------------------------- */

/* The stored value of a field of declaration d from its source bytes, into
 * out (replacing it): manifest/field_parse.h, which shardcheck shares.
 * LABELS are not parsed here (see read_label_value). */
static int parse_value(const struct shard_field_decl *d, const uint8_t *data, size_t n,
                       const struct origin *o, struct shard_buf *out, struct shard_err *why)
{
    return sk_field_parse_value(d, data, n, o->text, out, why);
}

/* ---- labels read ahead -------------------------------------------------------------- */

int sk_field_plan_has_names(const struct sk_field_plan *p)
{
    return p && (p->label_field_count || p->class_from != CLASS_LABELER);
}

static int append_name(struct shard_buf *arena, const char *name, size_t len,
                       struct shard_err *err)
{
    uint8_t h[4];
    put_le32(h, (uint32_t)len);
    int rc = shard_buf_append(arena, h, 4, err);
    return rc ? rc : shard_buf_append(arena, name, len, err);
}

/* The names of a labels value into the arena: 0, or the reason in *reason. */
static int read_label_value(struct sk_field_plan *p, const struct shard_field_decl *d,
                            const uint8_t *data, size_t n, const struct origin *o,
                            struct label_value *v, uint32_t *count, struct shard_err *err)
{
    struct shard_err why;
    json_t *a = sk_field_parse_label_names(d, data, n, o->text, &why);
    int rc = SHARD_OK;
    for (size_t i = 0; a && !rc && i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        rc = append_name(&p->arena, json_string_value(x), json_string_length(x), err);
    }
    if (rc) {
        json_decref(a);
        return rc;
    }
    if (!a)
        return (v->reason = strdup(why.msg)) ? SHARD_OK
                                             : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    v->count = (uint32_t)json_array_size(a);
    *count += v->count;
    json_decref(a);
    return SHARD_OK;
}

int sk_field_plan_read_names(struct sk_field_plan *p, const struct shard_keylist *keys,
                             const struct shard_refusals *refused, sk_sidecar_read_fn read,
                             void *ctx, struct shard_err *err)
{
    uint64_t n = keys->count;
    p->candidates = n;
    p->names = calloc(n ? n : 1, sizeof *p->names);
    p->values = calloc((n ? n : 1) * (p->label_field_count ? p->label_field_count : 1),
                       sizeof *p->values);
    if (!p->names || !p->values)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct shard_buf buf = {0};
    int rc = SHARD_OK;
    struct sk_field_result ignored = {0};
    for (uint64_t c = 0; !rc && c < n; c++) {
        size_t len;
        const char *key = shard_keylist_get(keys, c, &len);
        struct names *nm = &p->names[c];
        nm->off = p->arena.len;
        if (shard_refusals_find(refused, key, len) || len > SHARD_KEY_MAX)
            continue;  /* never opened, and its sidecars not read */
        for (uint32_t i = 0; !rc && i < p->label_field_count; i++) {
            uint32_t f = p->label_fields[i];
            const struct shard_field_decl *d = &p->config->fields[f];
            struct label_value *v = &p->values[c * p->label_field_count + i];
            const uint8_t *data;
            size_t dn;
            struct origin o;
            struct shard_err why;
            int got = value_bytes(p, d->name, p->suffix_of[f], p->col_of[f], key, len, read,
                                  ctx, &buf, &data, &dn, &o, &ignored, &why);
            if (got == SHARD_ECORRUPT) {
                if (!(v->reason = strdup(why.msg)))
                    rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            } else if (got < 0) {
                *err = why;
                rc = got;
            } else if (got == 1) {
                v->present = 1;
                v->source_bytes = dn;
                v->source_xxh3 = XXH3_64bits(data, dn);
                rc = read_label_value(p, d, data, dn, &o, v, &nm->count, err);
            }
        }
        if (!rc && p->class_from != CLASS_LABELER) {
            const uint8_t *data;
            size_t dn;
            struct origin o;
            struct shard_err why;
            int from_sidecar = p->class_from == CLASS_SIDECAR;
            int got = value_bytes(p, "class", from_sidecar ? p->class_source : NONE,
                                  from_sidecar ? NONE : p->class_source, key, len, read, ctx,
                                  &buf, &data, &dn, &o, &ignored, &why);
            if (got < 0 && got != SHARD_ECORRUPT) {
                *err = why;
                rc = got;
            } else if (got == 1 && sk_field_class_name(data, dn, &data, &dn)) {
                nm->has_class = 1;
                nm->class_len = (uint32_t)dn;
                rc = shard_buf_append(&p->arena, data, dn, err);
            }
        }
    }
    shard_buf_release(&buf);
    return rc;
}

/* Candidate c's names in the arena: the labels' (len:u32 + bytes each), then
 * the class's bytes. */
static const uint8_t *names_at(const struct sk_field_plan *p, uint64_t c, uint64_t *class_at)
{
    const uint8_t *at = p->arena.data + p->names[c].off, *q = at;
    for (uint32_t i = 0; i < p->names[c].count; i++)
        q += 4 + get_le32(q);
    *class_at = (uint64_t)(q - p->arena.data);
    return at;
}

int sk_field_plan_class(const struct sk_field_plan *p, uint64_t cand, const char **name,
                        size_t *len)
{
    if (!p || p->class_from == CLASS_LABELER)
        return -1;
    if (!p->names || !p->names[cand].has_class)
        return 0;
    uint64_t class_at;
    names_at(p, cand, &class_at);
    *name = (const char *)p->arena.data + class_at;
    *len = p->names[cand].class_len;
    return 1;
}

int sk_field_plan_label_name(const struct sk_field_plan *p, uint64_t cand, size_t i,
                             const char **name, size_t *len)
{
    if (!p || !p->names || i >= p->names[cand].count)
        return 0;
    uint64_t class_at;
    const uint8_t *q = names_at(p, cand, &class_at);
    for (size_t k = 0; k < i; k++)
        q += 4 + get_le32(q);
    *len = get_le32(q);
    *name = (const char *)q + 4;
    return 1;
}

int sk_field_plan_number(struct sk_field_plan *p,
                         int32_t (*number)(void *ctx, const char *name, size_t len), void *ctx,
                         struct shard_err *err)
{
    if (!p || !p->names)
        return SHARD_OK;
    size_t total = 0;
    for (uint64_t c = 0; c < p->candidates; c++)
        total += p->names[c].count;
    p->numbers = malloc((total ? total : 1) * sizeof *p->numbers);
    if (!p->numbers)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t c = 0; c < p->candidates; c++) {
        uint64_t class_at;
        const uint8_t *q = names_at(p, c, &class_at);
        for (uint32_t i = 0; i < p->label_field_count; i++) {
            struct label_value *v = &p->values[c * p->label_field_count + i];
            v->numbers = p->numbers_len;
            for (uint32_t k = 0; k < v->count; k++) {
                uint32_t len = get_le32(q);
                p->numbers[p->numbers_len++] = (uint32_t)number(ctx, (const char *)q + 4, len);
                q += 4 + len;
            }
        }
    }
    return SHARD_OK;
}

/* ---- a sample's fields ---------------------------------------------------------------- */

int sk_field_plan_build(const struct sk_field_plan *p, uint64_t cand, const char *key,
                        size_t len, sk_sidecar_read_fn read, void *ctx,
                        struct shard_buf *scratch, struct shard_field_set *out,
                        struct sk_field_result *res, struct shard_err *why)
{
    shard_field_set_clear(out);
    res->count = 0;
    res->sidecars = 0;
    res->read_seconds = 0;
    res->bytes_read = 0;
    const struct shard_config *c = p->config;
    uint32_t labels_seen = 0;
    struct shard_buf value = {0};
    int rc = SHARD_OK;
    for (uint32_t f = 0; !rc && f < c->field_count; f++) {
        const struct shard_field_decl *d = &c->fields[f];
        const uint8_t *data = NULL;
        size_t n = 0;
        struct origin o;
        int got;
        uint64_t source_bytes = 0, source_xxh3 = 0;
        if (d->type == SHARD_FIELD_LABELS) {  /* read ahead, numbered */
            const struct label_value *v = &p->values[cand * p->label_field_count + labels_seen++];
            if (v->reason) {
                rc = shard_err_set(why, SHARD_ECORRUPT, "%s", v->reason);
                break;
            }
            got = v->present;
            if (got) {
                rc = shard_buf_reserve(&value, (size_t)v->count * 4 + 1, why);
                for (uint32_t k = 0; !rc && k < v->count; k++)
                    put_le32(value.data + 4 * k, p->numbers[v->numbers + k]);
                value.len = (size_t)v->count * 4;
                data = value.data;
                n = value.len;
                source_bytes = v->source_bytes;
                source_xxh3 = v->source_xxh3;
                if (p->col_of[f] != NONE) {  /* a table value: the identity of the value stored */
                    source_bytes = n;
                    source_xxh3 = XXH3_64bits(data, n);
                }
                if (p->suffix_of[f] != NONE)
                    res->sidecars++;
            } else if (d->required) {
                got = value_bytes(p, d->name, p->suffix_of[f], p->col_of[f], key, len, read, ctx,
                                  scratch, &data, &n, &o, res, why);
                rc = shard_err_set(why, SHARD_ECORRUPT, "field '%s' is required: %s%s", d->name,
                                   p->suffix_of[f] != NONE ? "no " : "", o.text);
            }
            if (rc || !got)
                continue;
        } else {
            got = value_bytes(p, d->name, p->suffix_of[f], p->col_of[f], key, len, read, ctx,
                              scratch, &data, &n, &o, res, why);
            if (got < 0) {
                rc = got;
                break;
            }
            if (!got) {
                if (d->required)
                    rc = shard_err_set(why, SHARD_ECORRUPT, "field '%s' is required: %s%s",
                                       d->name, p->suffix_of[f] != NONE ? "no " : "", o.text);
                continue;
            }
            if (p->suffix_of[f] != NONE)
                res->sidecars++;
            source_bytes = n;
            source_xxh3 = XXH3_64bits(data, n);
            if ((rc = parse_value(d, data, n, &o, &value, why)))
                break;
            data = value.data;
            n = value.len;
            if (p->col_of[f] != NONE) {  /* a table value: the identity of the value stored */
                source_bytes = n;
                source_xxh3 = XXH3_64bits(data, n);
            }
        }
        if ((rc = shard_field_set_add(out, f, d->type, data, n, why)))
            break;
        res->sources[res->count++] = (struct shard_field_source){f, source_bytes, source_xxh3};
    }
    shard_buf_release(&value);
    return rc;
}
