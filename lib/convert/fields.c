/* fields.c - a run's fields: where each value comes from, reading and
 * parsing it, and the sample's field area (see fields.h). */
#include "convert/fields.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "util/clock.h"
#include "util/endian.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "image/decode_internal.h"
#include "image/values.h"
#include "manifest/field_parse.h"
#include "record/record_build.h"
#include "source/source_internal.h"

#define SIDECAR_PREFIX "sidecar:"
#define COLUMN_PREFIX "column:"
#define NONE UINT32_MAX

/* Where the class label comes from when not the labeler. */
enum class_from { CLASS_LABELER, CLASS_SIDECAR, CLASS_COLUMN };

/* The names read for one candidate: its class, and its `labels` fields'
 * names in field order, or the reason one of them could not be read. */
struct names {
    uint64_t off;   /* in sources->arena: the names, each as len:u32 + bytes */
    uint32_t count; /* names of the labels fields, the class not counted */
    int has_class;
    uint32_t class_len; /* the class name follows the labels' names */
    char *class_reason; /* why its class cannot be read (the sample is rejected), or NULL */
};

/* A labels field's value read ahead (its sidecar or cell), per candidate. */
struct label_value {
    uint64_t numbers; /* in sources->numbers: the label numbers, once known */
    uint32_t count;
    int present;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    char *reason; /* why it cannot be taken (the sample is rejected), or NULL */
};

struct sk_field_sources {
    struct shard_config *config;
    struct sk_sidecars *sidecars; /* NULL: no sidecar sources */
    uint32_t *suffix_of;          /* per field: its sidecar suffix's index, or NONE */
    struct sk_annotations *table;
    struct sk_annotation_column *cols;
    uint32_t ncols;
    uint32_t *col_of; /* per field: its column, or NONE */
    char *table_name; /* the table's file name, for messages */
    enum class_from class_from;
    uint32_t class_source; /* suffix or column of the class */
    /* labels read ahead: `labels` fields and a sidecar or column class */
    uint32_t *label_fields; /* the `labels` fields' numbers */
    uint32_t label_field_count;
    uint64_t candidates;
    struct names *names;        /* per candidate */
    struct label_value *values; /* per candidate x label_field_count */
    struct shard_buf arena;
    uint32_t *numbers;
    size_t numbers_len;
    struct sk_coco *coco;              /* --coco, or NULL */
    struct sk_mask_folder **folder_of; /* per field: its mask folder (from=DIR/), or NULL */
    int geometric;                     /* a boxes or mask field: built once the image is */
};

void sk_field_sources_free(struct sk_field_sources *p)
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
    for (uint64_t i = 0; p->names && i < p->candidates; i++)
        free(p->names[i].class_reason);
    free(p->names);
    for (uint64_t i = 0; p->values && i < p->candidates * p->label_field_count; i++)
        free(p->values[i].reason);
    free(p->values);
    shard_buf_release(&p->arena);
    free(p->numbers);
    sk_coco_free(p->coco);
    for (uint32_t f = 0; p->folder_of && p->config && f < p->config->field_count; f++)
        sk_mask_folder_free(p->folder_of[f]);
    free(p->folder_of);
    free(p);
}

/* ---- setting up ---------------------------------------------------------------- */

/* The fields --coco declares after the --field ones. */
static uint32_t coco_field_count(const struct shardify_options *o)
{
    return o->coco ? 1 + (o->coco_mask != 0) + (o->coco_instances != 0) : 0;
}

static int parse_declarations(struct sk_field_sources *p, const struct shardify_options *o,
                              struct shard_config *c, struct shard_err *err)
{
    uint32_t total = o->field_count + coco_field_count(o);
    if (total > SHARD_FIELDS_MAX)
        return shard_err_set(err, SHARD_EINVAL, "%u fields declared, at most %u", total,
                             SHARD_FIELDS_MAX);
    c->fields = calloc(total ? total : 1, sizeof *c->fields);
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
    /* "boxes", then "mask" (--coco-mask), then "masks" (--coco-instances) */
    static const struct {
        enum shard_field_type type;
        const char *name, *coco;
    } coco_fields[] = {{SHARD_FIELD_BOXES, "boxes", SHARD_COCO_BBOX},
                       {SHARD_FIELD_MASK, "mask", SHARD_COCO_SEGMENTATION},
                       {SHARD_FIELD_INSTANCES, "masks", SHARD_COCO_INSTANCES}};
    for (uint32_t k = 0; o->coco && k < 3; k++) {
        if ((k == 1 && !o->coco_mask) || (k == 2 && !o->coco_instances))
            continue;
        struct shard_field_decl *d = &c->fields[c->field_count];
        d->type = coco_fields[k].type;
        if (!(d->name = strdup(coco_fields[k].name)) || !(d->coco = strdup(coco_fields[k].coco)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        c->field_count++;
        if (shard_config_field(c, d->name) != (int32_t)c->field_count - 1)
            return shard_err_set(err, SHARD_EINVAL,
                                 "--coco declares the field '%s', and a "
                                 "--field of that name is declared too",
                                 d->name);
    }
    (void)p;
    return SHARD_OK;
}

static int compare_classes(const void *pa, const void *pb)
{
    const struct shard_field_class *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

/* d->classes from classes[0..n) (names copied), sorted by id, checked:
 * ids unique and at most `max`, names unique.  `what` names the source in
 * messages. */
static int set_classes(struct shard_field_decl *d, const struct shard_field_class *classes,
                       size_t n, uint32_t max, const char *what, struct shard_err *err)
{
    if (n == 0 || n > SHARD_FIELD_CLASSES_MAX)
        return shard_err_set(err, SHARD_EINVAL, "field '%s': %s lists %zu classes, not 1..%u",
                             d->name, what, n, SHARD_FIELD_CLASSES_MAX);
    if (!(d->classes = calloc(n, sizeof *d->classes)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        d->classes[i].id = classes[i].id;
        if (!(d->classes[i].name = strdup(classes[i].name)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        d->class_count = (uint32_t)(i + 1);
    }
    qsort(d->classes, n, sizeof *d->classes, compare_classes);
    for (size_t i = 0; i < n; i++) {
        if (d->classes[i].id > max)
            return shard_err_set(err, SHARD_EINVAL,
                                 "field '%s': class id %u of %s is above "
                                 "%u",
                                 d->name, d->classes[i].id, what, max);
        if (i && d->classes[i].id == d->classes[i - 1].id)
            return shard_err_set(err, SHARD_EINVAL, "field '%s': %s gives class id %u twice",
                                 d->name, what, d->classes[i].id);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(d->classes[i].name, d->classes[j].name))
                return shard_err_set(err, SHARD_EINVAL,
                                     "field '%s': %s names class '%s' "
                                     "twice",
                                     d->name, what, d->classes[i].name);
    }
    return SHARD_OK;
}

/* A mask field's classes from classes=FILE (sk_class_list_read). */
static int read_classes_file(struct shard_field_decl *d, struct shard_err *err)
{
    struct shard_field_class *list;
    size_t n;
    char what[SHARD_ERRMSG_SIZE / 2];
    snprintf(what, sizeof what, "'%s'", d->classes_file);
    int rc = sk_class_list_read(d->classes_file, SHARD_MASK_CLASS_MAX, &list, &n, NULL, err);
    if (rc)
        return shard_err_prefix(err, rc, "field '%s'", d->name);
    rc = set_classes(d, list, n, SHARD_MASK_CLASS_MAX, what, err);
    int32_t k = !rc && d->has_ignore ? shard_field_class_find(d, d->ignore) : -1;
    if (k >= 0)
        rc = shard_err_set(err, SHARD_EINVAL,
                           "field '%s': ignore=%u is the id of the class '%s' of %s: the ignore "
                           "value is no class",
                           d->name, d->ignore, d->classes[k].name, what);
    sk_class_list_free(list, n);
    return rc;
}

/* The classes of the boxes and mask fields (declared by then). */
static int set_field_classes(struct sk_field_sources *p, struct shard_config *c,
                             struct shard_err *err)
{
    uint32_t ncat = 0;
    const struct shard_field_class *cats = p->coco ? sk_coco_categories(p->coco, &ncat) : NULL;
    for (uint32_t f = 0; f < c->field_count; f++) {
        struct shard_field_decl *d = &c->fields[f];
        int rc = SHARD_OK;
        if (d->type == SHARD_FIELD_BOXES) {
            rc = set_classes(d, cats, ncat, INT32_MAX, "the COCO file's categories", err);
        } else if (d->type == SHARD_FIELD_MASK && d->coco) {
            /* background 0, then the categories */
            struct shard_field_class *all = calloc(ncat + 1, sizeof *all);
            if (!all)
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            all[0] = (struct shard_field_class){0, "background"};
            memcpy(all + 1, cats, ncat * sizeof *cats);
            if (ncat && cats[0].id == 0)
                rc = shard_err_set(err, SHARD_EINVAL,
                                   "field 'mask': the COCO file's category "
                                   "'%s' has id 0, the mask's background",
                                   cats[0].name);
            else
                rc = set_classes(d, all, ncat + 1, SHARD_MASK_CLASS_MAX,
                                 "the COCO file's categories", err);
            free(all);
        } else if (d->type == SHARD_FIELD_MASK) {
            rc = read_classes_file(d, err);
        }
        if (rc)
            return rc;
        free(d->classes_file); /* the manifest keeps the classes themselves */
        d->classes_file = NULL;
        p->geometric |= d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_MASK ||
                        d->type == SHARD_FIELD_INSTANCES || d->type == SHARD_FIELD_IMAGE;
    }
    return SHARD_OK;
}

/* c->labels for a class from the table's column: "column:NAME:" and the
 * table's "file:<name>:<xxh3>", so that the manifest names the table even
 * without fields (a version 1 config has no "annotations"). */
static int describe_class_column(struct shard_config *c, const char *column, const char *table,
                                 struct shard_err *err)
{
    size_t size = strlen(COLUMN_PREFIX) + strlen(column) + 1 + strlen(table) + 1;
    char *text = malloc(size);
    if (!text)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(text, size, "%s%s:%s", COLUMN_PREFIX, column, table);
    free(c->labels);
    c->labels = text;
    return SHARD_OK;
}

int sk_field_sources_new(struct sk_field_sources **out, const struct shardify_options *o,
                         const char *labels, struct shard_config *c, struct shard_err *err)
{
    *out = NULL;
    int class_sidecar = labels && !strncmp(labels, SIDECAR_PREFIX, strlen(SIDECAR_PREFIX));
    int class_column = labels && !strncmp(labels, COLUMN_PREFIX, strlen(COLUMN_PREFIX));
    if ((o->coco_mask || o->coco_instances) && !o->coco)
        return shard_err_set(err, SHARD_EINVAL,
                             "--coco-%s rasterises the annotations of a "
                             "--coco file, and none is given",
                             o->coco_mask ? "mask" : "instances");
    if (!o->field_count && !o->coco && !class_sidecar && !class_column) {
        if (o->annotations)
            return shard_err_set(err, SHARD_EINVAL,
                                 "--annotations is read for fields "
                                 "(--field NAME=TYPE) or labels (--labels column:NAME), and "
                                 "none is declared");
        return SHARD_OK;
    }
    if (class_column && !o->annotations)
        return shard_err_set(err, SHARD_EINVAL, "--labels %s needs an --annotations table", labels);
    struct sk_field_sources *p = calloc(1, sizeof *p);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->config = c;
    int rc = parse_declarations(p, o, c, err);
    if (!rc && o->coco && !(rc = sk_coco_load(&p->coco, o->coco, err)) &&
        !(c->coco = strdup(sk_coco_describe(p->coco))))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc)
        rc = set_field_classes(p, c, err);
    uint32_t n = c->field_count;
    const char **suffixes = calloc(n + 1, sizeof *suffixes);
    p->suffix_of = calloc(n ? n : 1, sizeof *p->suffix_of);
    p->col_of = calloc(n ? n : 1, sizeof *p->col_of);
    p->cols = calloc(n + 1, sizeof *p->cols);
    p->label_fields = calloc(n ? n : 1, sizeof *p->label_fields);
    p->folder_of = calloc(n ? n : 1, sizeof *p->folder_of);
    if (!rc &&
        (!suffixes || !p->suffix_of || !p->col_of || !p->cols || !p->label_fields || !p->folder_of))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    uint32_t nsuffixes = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        const struct shard_field_decl *d = &c->fields[i];
        p->suffix_of[i] = p->col_of[i] = NONE;
        if (d->sidecar) {
            p->suffix_of[i] = nsuffixes;
            suffixes[nsuffixes++] = d->sidecar;
        } else if (d->column) {
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
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--labels %s: a sidecar suffix is '.' and a "
                               "name without '/' (sidecar:.cls)",
                               labels);
    } else if (!rc && class_column) {
        p->class_from = CLASS_COLUMN;
        const char *column = labels + strlen(COLUMN_PREFIX);
        if (!*column)
            rc = shard_err_set(err, SHARD_EINVAL, "--labels column: needs a column name");
        else
            p->class_source = sk_annotation_column_want(p->cols, &p->ncols, column, 0);
    }
    if (!rc && nsuffixes && !(rc = sk_sidecars_new(&p->sidecars, suffixes, nsuffixes, err)))
        sk_sidecars_sample_stems(p->sidecars);
    if (!rc && o->annotations) {
        const char *slash = strrchr(o->annotations, '/');
        if (!(p->table_name = strdup(slash ? slash + 1 : o->annotations)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else if (!p->ncols)
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--annotations '%s': no field (or --labels) "
                               "reads a column of it",
                               o->annotations);
        else if (!(rc = sk_annotations_load(&p->table, o->annotations, o->annotations_key, p->cols,
                                            p->ncols, err)) &&
                 (!(c->annotations = strdup(sk_annotations_describe(p->table))) ||
                  (o->annotations_key && strcmp(o->annotations_key, "key") &&
                   !(c->annotations_key = strdup(o->annotations_key)))))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (!rc && class_column)
        rc = describe_class_column(c, labels + strlen(COLUMN_PREFIX),
                                   sk_annotations_describe(p->table), err);
    free(suffixes);
    if (rc) {
        sk_field_sources_free(p);
        return rc;
    }
    if (!c->max_field_bytes)
        c->max_field_bytes = SHARD_MAX_FIELD_BYTES_DEFAULT;
    *out = p;
    return SHARD_OK;
}

struct sk_sidecars *sk_field_sources_sidecars(struct sk_field_sources *p)
{
    return p ? p->sidecars : NULL;
}

int sk_field_sources_resolve(struct sk_field_sources *p, const char *src,
                             const struct shard_keylist *keys, struct shard_refusals *refused,
                             struct shard_err *err)
{
    int rc = p && p->sidecars ? sk_sidecars_resolve(p->sidecars, keys, refused, err) : SHARD_OK;
    for (uint32_t f = 0; !rc && p && f < p->config->field_count; f++) {
        const struct shard_field_decl *d = &p->config->fields[f];
        if (d->folder &&
            (rc = sk_mask_folder_open(&p->folder_of[f], src, d->folder, d->replace, keys, err)))
            return shard_err_prefix(err, rc, "field '%s'", d->name);
    }
    return rc;
}

uint64_t sk_field_sources_orphan_count(const struct sk_field_sources *p)
{
    if (!p)
        return 0;
    uint64_t n = p->sidecars ? sk_sidecars_orphan_count(p->sidecars) : 0;
    for (uint32_t f = 0; p->folder_of && f < p->config->field_count; f++)
        n += sk_mask_folder_orphan_count(p->folder_of[f]);
    return n;
}

const char *sk_field_sources_orphan(const struct sk_field_sources *p, uint64_t i, size_t *len)
{
    size_t side = p->sidecars ? sk_sidecars_orphan_count(p->sidecars) : 0;
    if (i < side)
        return sk_sidecars_orphan(p->sidecars, (size_t)i, len);
    i -= side;
    for (uint32_t f = 0; f < p->config->field_count; f++) {
        size_t n = sk_mask_folder_orphan_count(p->folder_of[f]);
        if (i < n)
            return sk_mask_folder_orphan(p->folder_of[f], (size_t)i, len);
        i -= n;
    }
    *len = 0;
    return NULL;
}

uint64_t sk_field_sources_table_rows(const struct sk_field_sources *p)
{
    return p && p->table ? sk_annotations_rows(p->table) : 0;
}

int sk_field_sources_table_unmatched(const struct sk_field_sources *p,
                                     const struct shard_keylist *keys, uint64_t *unmatched,
                                     struct shard_err *err)
{
    *unmatched = 0;
    return p && p->table ? sk_annotations_unmatched(p->table, keys, unmatched, err) : SHARD_OK;
}

uint64_t sk_field_sources_coco_images(const struct sk_field_sources *p)
{
    return p && p->coco ? sk_coco_image_count(p->coco) : 0;
}

uint64_t sk_field_sources_coco_annotations(const struct sk_field_sources *p)
{
    return p && p->coco ? sk_coco_annotation_count(p->coco) : 0;
}

int sk_field_sources_coco_unmatched(const struct sk_field_sources *p,
                                    const struct shard_keylist *keys, uint64_t *images,
                                    uint64_t *annotations, struct shard_err *err)
{
    *images = *annotations = 0;
    return p && p->coco ? sk_coco_unmatched(p->coco, keys, images, annotations, err) : SHARD_OK;
}

/* ---- the bytes of a value --------------------------------------------------------- */

/* Where a value came from, for messages: "'a/0001.txt'" or "'ann.jsonl' line 12". */
struct origin {
    char text[SHARDX_QUOTE_SIZE + 64];
};

static void sidecar_origin(struct origin *o, const char *key, size_t len)
{
    char shown[SHARDX_QUOTE_SIZE];
    snprintf(o->text, sizeof o->text, "'%s'", shardx_quote(key, len, shown, sizeof shown));
}

static void table_origin(const struct sk_field_sources *p, int64_t row, struct origin *o)
{
    snprintf(o->text, sizeof o->text, "'%s' line %llu", p->table_name,
             (unsigned long long)sk_annotations_line(p->table, row));
}

/* What a value is for, in messages: field `name`, or the class (NULL). */
struct subject {
    char text[SHARD_FIELD_NAME_MAX + 16];
};

static const char *subject_of(const char *name, struct subject *s)
{
    if (!name)
        return "the class";
    snprintf(s->text, sizeof s->text, "field '%s'", name);
    return s->text;
}

/* The source bytes of a value that comes from suffix `suffix` or column
 * `col` (one is NONE) for candidate key[0..len), of field `name` (NULL: the
 * class): 1 with *data and *n (sidecar bytes in `buf`), 0 when absent (*o
 * then names what is missing), or a negative error: for a sidecar that
 * cannot be read, a reason in why (SHARD_ECORRUPT) unless the store failed
 * (SHARD_ENET/EINTR/ENOMEM). */
static int value_bytes(const struct sk_field_sources *p, const char *field_name, uint32_t suffix,
                       uint32_t col, const char *key, size_t len, sk_sidecar_read_fn read,
                       void *ctx, struct shard_buf *buf, const uint8_t **data, size_t *n,
                       struct origin *o, struct sk_field_result *res, struct shard_err *why)
{
    struct subject subject;
    const char *name = subject_of(field_name, &subject);
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
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: a value of %zu bytes in %s "
                                 "exceeds --max-field-bytes %llu",
                                 name, *n, o->text, (unsigned long long)p->config->max_field_bytes);
        return 1;
    }
    int64_t file = sk_sidecars_find(p->sidecars, key, len, suffix);
    if (file == SK_SIDECAR_TWICE)
        return shard_err_set(why, SHARD_ECORRUPT,
                             "%s: the archive holds its sidecar "
                             "twice, so which one is meant cannot be told",
                             name);
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
        if (!sfx) /* the class's */
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
    const char *refusal = sk_sidecars_file_refusal(p->sidecars, (size_t)file);
    if (refusal) /* a link or special file: never opened */
        return shard_err_set(why, SHARD_ECORRUPT, "%s: sidecar %s: %s", name, o->text, refusal);
    double t0 = sk_now_seconds();
    struct shard_err e;
    int fatal = 0;
    int rc = read(ctx, (size_t)file, fkey, p->config->max_field_bytes, buf, &fatal, &e);
    res->read_seconds += sk_now_seconds() - t0;
    if (!rc)
        res->bytes_read += buf->len;
    if (rc && fatal) {
        *why = e;
        return rc == SHARD_ECORRUPT ? SHARD_EIO : rc; /* never taken for a reject */
    }
    if (rc == SHARD_ELIMIT)
        return shard_err_set(why, SHARD_ECORRUPT, "%s: sidecar %s %s (--max-field-bytes)", name,
                             o->text, e.msg);
    if (rc)
        return shard_err_set(why, SHARD_ECORRUPT, "%s: sidecar %s: %s", name, o->text, e.msg);
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

int sk_field_sources_next_archive(struct sk_field_sources *p, struct shard_keylist *orphans,
                                  struct shard_err *err)
{
    if (!p)
        return SHARD_OK;
    int rc = p->sidecars ? sk_sidecars_reset(p->sidecars, orphans, err) : SHARD_OK;
    free(p->names);
    for (uint64_t i = 0; p->values && i < p->candidates * p->label_field_count; i++)
        free(p->values[i].reason);
    free(p->values);
    free(p->numbers);
    p->names = NULL;
    p->values = NULL;
    p->numbers = NULL;
    p->numbers_len = 0;
    p->candidates = 0;
    p->arena.len = 0;
    return rc;
}

int sk_field_sources_has_table(const struct sk_field_sources *p)
{
    return p && p->table;
}

int sk_field_sources_has_names(const struct sk_field_sources *p)
{
    return p && (p->label_field_count || p->class_from != CLASS_LABELER);
}

static int append_name(struct shard_buf *arena, const char *name, size_t len, struct shard_err *err)
{
    uint8_t h[4];
    put_le32(h, (uint32_t)len);
    int rc = shard_buf_append(arena, h, 4, err);
    return rc ? rc : shard_buf_append(arena, name, len, err);
}

/* The names of a labels value into the arena: 0, or the reason in *reason. */
static int read_label_value(struct sk_field_sources *p, const struct shard_field_decl *d,
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

int sk_field_sources_read_names(struct sk_field_sources *p, const struct shard_keylist *keys,
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
            continue; /* never opened, and its sidecars not read */
        for (uint32_t i = 0; !rc && i < p->label_field_count; i++) {
            uint32_t f = p->label_fields[i];
            const struct shard_field_decl *d = &p->config->fields[f];
            struct label_value *v = &p->values[c * p->label_field_count + i];
            const uint8_t *data;
            size_t dn;
            struct origin o;
            struct shard_err why;
            int got = value_bytes(p, d->name, p->suffix_of[f], p->col_of[f], key, len, read, ctx,
                                  &buf, &data, &dn, &o, &ignored, &why);
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
            int got = value_bytes(p, NULL, from_sidecar ? p->class_source : NONE,
                                  from_sidecar ? NONE : p->class_source, key, len, read, ctx, &buf,
                                  &data, &dn, &o, &ignored, &why);
            if (got == SHARD_ECORRUPT) { /* a class there but unreadable: the sample's reject */
                if (!(nm->class_reason = strdup(why.msg)))
                    rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            } else if (got < 0) {
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
static const uint8_t *names_at(const struct sk_field_sources *p, uint64_t c, uint64_t *class_at)
{
    const uint8_t *at = p->arena.data + p->names[c].off, *q = at;
    for (uint32_t i = 0; i < p->names[c].count; i++)
        q += 4 + get_le32(q);
    *class_at = (uint64_t)(q - p->arena.data);
    return at;
}

int sk_field_sources_check_used(const struct sk_field_sources *p, const uint64_t *field_samples,
                                uint64_t samples, struct shard_err *err)
{
    for (uint32_t f = 0; p && f < p->config->field_count; f++) {
        const struct shard_field_decl *d = &p->config->fields[f];
        char where[SHARDX_QUOTE_SIZE + 2 * SHARD_FIELD_NAME_MAX + 64];
        if (field_samples[f])
            continue;
        if (d->coco)
            snprintf(where, sizeof where, "none is an image of the COCO file");
        else if (d->folder)
            snprintf(where, sizeof where, "none has its mask in '%s'", d->folder);
        else if (p->col_of[f] != NONE)
            snprintf(where, sizeof where, "no row of '%s' gives one a value in column '%s'",
                     p->table_name, d->column);
        else
            snprintf(where, sizeof where, "none has a sidecar '%s'", d->sidecar);
        return shard_err_set(err, SHARD_EINVAL,
                             "field '%s' is declared, and none of the %llu samples has it: %s",
                             d->name, (unsigned long long)samples, where);
    }
    return SHARD_OK;
}

int sk_field_sources_class_from_values(const struct sk_field_sources *p)
{
    return p && p->class_from != CLASS_LABELER;
}

int sk_field_sources_class(const struct sk_field_sources *p, uint64_t cand, const char **name,
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

int sk_field_sources_label_name(const struct sk_field_sources *p, uint64_t cand, size_t i,
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

int sk_field_sources_number(struct sk_field_sources *p,
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

/* ---- boxes and masks: through the image's geometry ----------------------------------- */

int sk_field_sources_geometric(const struct sk_field_sources *p)
{
    return p && p->geometric;
}

/* A box the crop window cuts to less than this many pixels across, in
 * either direction, shows nothing of its object: it is dropped, as
 * torchvision's SanitizeBoundingBoxes (min_size=1) drops it. */
#define BOX_MIN_SIDE 1.0

/* One axis of a box from the upright source to the stored image: scaled,
 * moved by the crop, clipped to [0, out].  0 when the crop leaves less than
 * BOX_MIN_SIDE of it (a box that was that small already stays). */
static int place_axis(double *lo, double *hi, uint32_t source, uint32_t scaled, uint32_t crop,
                      uint32_t out)
{
    double s = (double)scaled / source;
    *lo = *lo * s - crop;
    *hi = *hi * s - crop;
    int clipped = *lo < 0 || *hi > out;
    *lo = *lo < 0 ? 0 : *lo > out ? out : *lo;
    *hi = *hi < 0 ? 0 : *hi > out ? out : *hi;
    return *lo < *hi && !(clipped && *hi - *lo < BOX_MIN_SIDE);
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_le32(p, bits);
}

/* The stored boxes (FORMAT.md's 24 bytes each) of raw boxes in the source's
 * stored pixels, through orientation, resize and crop; those the crop
 * leaves empty, or less than a pixel of across, are dropped and counted. */
static int place_boxes(const struct shard_buf *raw, const struct sk_placement *pl,
                       struct shard_buf *out, uint64_t *kept, uint64_t *dropped, uint32_t *kept_ann,
                       struct shard_err *why)
{
    size_t n = raw->len / sizeof(struct sk_coco_box);
    out->len = 0;
    int rc = shard_buf_reserve(out, n * SHARD_BOX_BYTES + 1, why);
    for (size_t i = 0; !rc && i < n; i++) {
        struct sk_coco_box b;
        memcpy(&b, raw->data + i * sizeof b, sizeof b);
        sk_box_orient(b.b, pl->orientation, pl->stored_w, pl->stored_h);
        int kept_x = place_axis(&b.b[0], &b.b[2], pl->source_w, pl->g.scaled_w, pl->g.crop_x,
                                pl->g.out_w);
        int kept_y = place_axis(&b.b[1], &b.b[3], pl->source_h, pl->g.scaled_h, pl->g.crop_y,
                                pl->g.out_h);
        float f[4] = {(float)b.b[0], (float)b.b[1], (float)b.b[2], (float)b.b[3]};
        if (!kept_x || !kept_y || !(f[0] < f[2] && f[1] < f[3])) { /* the crop left no pixel */
            (*dropped)++;
            continue;
        }
        uint8_t *q = out->data + out->len;
        for (int k = 0; k < 4; k++)
            put_f32(q + 4 * k, f[k]);
        put_le32(q + 16, b.cls);
        put_le32(q + 20, b.flags);
        out->len += SHARD_BOX_BYTES;
        if (kept_ann)
            kept_ann[out->len / SHARD_BOX_BYTES - 1] = b.ann;
        (*kept)++;
    }
    return rc;
}

static int place_mask(const struct shard_image *raw, const struct sk_placement *pl,
                      struct shard_buf *out, struct shard_err *why);

/* Append mask (a placed mask value: header, then 1-byte 0/1 values,
 * row-major) to out as an instance: its runs over the pixels in
 * column-major order (COCO's uncompressed RLE). */
static int append_runs(const struct shard_buf *mask, struct shard_buf *out, struct shard_err *why)
{
    uint32_t w = get_le32(mask->data), h = get_le32(mask->data + 4);
    const uint8_t *v = mask->data + SHARD_MASK_HEADER_BYTES;
    size_t at = out->len; /* the run count, once known */
    uint32_t runs = 0, run = 0;
    uint8_t cur = 0;
    int rc = shard_buf_append(out, "\0\0\0\0", 4, why);
    for (uint32_t x = 0; !rc && x < w; x++)
        for (uint32_t y = 0; !rc && y < h; y++) {
            uint8_t b = v[(size_t)y * w + x] != 0;
            if (b == cur) {
                run++;
                continue;
            }
            uint8_t le[4];
            put_le32(le, run);
            rc = shard_buf_append(out, le, 4, why);
            runs++;
            cur = b;
            run = 1;
        }
    uint8_t le[4];
    put_le32(le, run);
    if (!rc && !(rc = shard_buf_append(out, le, 4, why)))
        put_le32(out->data + at, runs + 1);
    return rc;
}

/* The INSTANCES value of COCO image `image` whose image went where pl says:
 * the mask of each annotation whose box the boxes field keeps (clamped or
 * strict as it is, and left by the crop), in the boxes' order, each
 * rasterised alone and placed as a mask is. */
static int instances_value(const struct sk_field_sources *p, int64_t image,
                           const struct sk_placement *pl, struct shard_buf *scratch,
                           struct shard_buf *value, struct shard_err *why)
{
    uint64_t outside = 0, kept = 0, dropped = 0;
    int rc = sk_coco_boxes(p->coco, image, pl->stored_w, pl->stored_h, !p->config->boxes_strict,
                           scratch, &outside, why);
    size_t n = rc ? 0 : scratch->len / sizeof(struct sk_coco_box);
    uint32_t *anns = rc ? NULL : malloc((n ? n : 1) * sizeof *anns);
    struct shard_buf placed = {0};
    struct shard_image mask = {0};
    if (!rc && !anns)
        rc = shard_err_set(why, SHARD_ENOMEM, "out of memory");
    if (!rc) /* which of them the crop leaves: the boxes field's boxes */
        rc = place_boxes(scratch, pl, value, &kept, &dropped, anns, why);
    value->len = 0;
    if (!rc && !(rc = shard_buf_reserve(value, SHARD_INSTANCES_HEADER_BYTES, why))) {
        memset(value->data, 0, SHARD_INSTANCES_HEADER_BYTES);
        put_le32(value->data, pl->g.out_w);
        put_le32(value->data + 4, pl->g.out_h);
        put_le32(value->data + 8, (uint32_t)kept);
        value->len = SHARD_INSTANCES_HEADER_BYTES;
    }
    for (uint64_t i = 0; !rc && i < kept; i++) {
        rc = sk_coco_instance(p->coco, image, anns[i], pl->stored_w, pl->stored_h, &mask, why);
        if (!rc)
            rc = place_mask(&mask, pl, &placed, why);
        if (!rc)
            rc = append_runs(&placed, value, why);
        shard_image_release(&mask);
    }
    free(anns);
    shard_buf_release(&placed);
    return rc;
}

/* The bytes of mask field f's file in its folder for candidate key[0..len),
 * into buf: 1, 0 when there is none (*o names the file looked for), or
 * SHARD_ECORRUPT with the reason (one that cannot be read). */
static int folder_bytes(const struct sk_field_sources *p, uint32_t f, const char *key, size_t len,
                        struct shard_buf *buf, struct origin *o, struct sk_field_result *res,
                        struct shard_err *why)
{
    const struct shard_field_decl *d = &p->config->fields[f];
    const struct sk_mask_folder *mf = p->folder_of[f];
    sk_mask_folder_origin(mf, key, len, o->text, sizeof o->text);
    if (!sk_mask_folder_has(mf, key, len))
        return 0;
    double t0 = sk_now_seconds();
    struct shard_err e;
    int rc = sk_mask_folder_read(mf, key, len, p->config->max_field_bytes, buf, &e);
    res->read_seconds += sk_now_seconds() - t0;
    if (rc == SHARD_ENOMEM)
        return shard_err_set(why, rc, "out of memory");
    if (rc == SHARD_ENET || rc == SHARD_EINTR) /* not the file's fault: never a reject */
        return shard_err_set(why, rc, "field '%s': mask %s: %s", d->name, o->text, e.msg);
    if (rc)
        return shard_err_set(why, SHARD_ECORRUPT, "field '%s': mask %s: %s%s", d->name, o->text,
                             e.msg, rc == SHARD_ELIMIT ? " (--max-field-bytes)" : "");
    res->bytes_read += buf->len;
    return 1;
}

/* A mask value (header and values) from a mask in the source's stored
 * pixels, through orientation, resize (nearest) and crop. */
static int place_mask(const struct shard_image *raw, const struct sk_placement *pl,
                      struct shard_buf *out, struct shard_err *why)
{
    struct shard_image upright = {0}, placed = {0};
    const struct shard_image *from = raw;
    int rc = SHARD_OK;
    if (pl->orientation != 1) {
        rc = sk_values_orient(raw, pl->orientation, &upright, why);
        from = &upright;
    }
    const struct shard_geometry *g = &pl->g;
    if (!rc)
        rc = sk_values_nearest(from, 0, 0, from->width, from->height, g->scaled_w, g->scaled_h,
                               g->crop_x, g->crop_y, g->out_w, g->out_h, 0, &placed, why);
    size_t row = (size_t)placed.width * placed.channels;
    out->len = 0;
    if (!rc)
        rc = shard_buf_reserve(out, SHARD_MASK_HEADER_BYTES + row * placed.height, why);
    if (!rc) {
        memset(out->data, 0, SHARD_MASK_HEADER_BYTES);
        put_le32(out->data, placed.width);
        put_le32(out->data + 4, placed.height);
        out->data[8] = (uint8_t)placed.channels;
        for (uint32_t y = 0; y < placed.height; y++)
            memcpy(out->data + SHARD_MASK_HEADER_BYTES + y * row,
                   placed.pixels + (size_t)y * placed.stride, row);
        out->len = SHARD_MASK_HEADER_BYTES + row * placed.height;
    }
    shard_image_release(&upright);
    shard_image_release(&placed);
    return rc;
}

/* A mask image's values (a PNG of class ids, file `origin`) for field d, in
 * d's value size, into mask: each value a declared class, the size the
 * image's as stored.  0, SHARD_ECORRUPT with the reason, or SHARD_ENOMEM. */
static int mask_from_png(const struct shard_config *c, const struct shard_field_decl *d,
                         const uint8_t *data, size_t n, const char *origin,
                         const struct sk_placement *pl, struct shard_image *mask,
                         struct shard_err *why)
{
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_pixels = c->max_pixels;
    o.max_file_bytes = c->max_file_bytes;
    struct shard_image png = {0};
    char warning[SHARD_ERRMSG_SIZE];
    struct shard_err e;
    int rc = sk_decode_png_values(data, n, &o, &png, warning, &e);
    if (rc) {
        rc = rc == SHARD_ENOMEM ? rc : SHARD_ECORRUPT;
        shard_err_set(why, rc, "field '%s': mask %s: %s", d->name, origin, e.msg);
        goto out;
    }
    if (png.width != pl->stored_w || png.height != pl->stored_h) {
        int swapped = png.width == pl->stored_h && png.height == pl->stored_w;
        rc = shard_err_set(why, SHARD_ECORRUPT, "field '%s': mask %s is %ux%u, its image %ux%u%s",
                           d->name, origin, png.width, png.height, pl->stored_w, pl->stored_h,
                           swapped && pl->orientation >= 5
                               ? " as stored (masks are in the stored pixels, before EXIF "
                                 "orientation)"
                               : "");
        goto out;
    }
    uint32_t bytes = shard_field_mask_value_bytes(d);
    if ((rc = shard_image_alloc(mask, png.width, png.height, bytes, why)))
        goto out;
    for (uint32_t y = 0; y < png.height && !rc; y++) {
        const uint8_t *in = png.pixels + (size_t)y * png.stride;
        uint8_t *q = mask->pixels + (size_t)y * mask->stride;
        for (uint32_t x = 0; x < png.width; x++) {
            uint32_t v = png.channels == 1 ? in[x] : get_le16(in + 2 * (size_t)x);
            if (!shard_field_mask_value_valid(d, v)) {
                rc = shard_err_set(why, SHARD_ECORRUPT,
                                   "field '%s': mask %s holds value %u at "
                                   "(%u, %u), which is no declared class%s",
                                   d->name, origin, v, x, y,
                                   d->has_ignore ? "" : " (ignore=N declares a value of no class)");
                break;
            }
            q[x * bytes] = (uint8_t)v;
            if (bytes == 2)
                q[x * bytes + 1] = (uint8_t)(v >> 8);
        }
    }
out:
    shard_image_release(&png);
    return rc;
}

/* An IMAGE value (header and raw RGB pixels) from a sidecar image (file
 * `origin`): decoded as an image is (its own EXIF orientation applied), of
 * the upright size of the sample's image, then resampled and cropped to the
 * stored size by the image's geometry (pl->g).  0, SHARD_ECORRUPT with the
 * reason, or SHARD_ENOMEM. */
static int image_value(const struct shard_config *c, const struct shard_field_decl *d,
                       const uint8_t *data, size_t n, const char *origin,
                       const struct sk_placement *pl, struct shard_buf *out, struct shard_err *why)
{
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_pixels = c->max_pixels;
    o.max_file_bytes = c->max_file_bytes;
    for (int i = 0; i < 3; i++)
        o.background[i] = c->background[i];
    struct shard_image decoded = {0}, tmp = {0}, placed = {0};
    struct shard_decode_info info;
    struct shard_err e;
    int rc = shard_decode_ex(data, n, &o, &decoded, &info, &e);
    if (rc) {
        rc = rc == SHARD_ENOMEM ? rc : SHARD_ECORRUPT;
        shard_err_set(why, rc, "field '%s': image %s: %s", d->name, origin, e.msg);
        goto out;
    }
    if (info.source_width != pl->source_w || info.source_height != pl->source_h) {
        rc = shard_err_set(why, SHARD_ECORRUPT, "field '%s': image %s is %ux%u, its sample's %ux%u",
                           d->name, origin, info.source_width, info.source_height, pl->source_w,
                           pl->source_h);
        goto out;
    }
    if ((rc = shard_geometry_apply_decoded(&decoded, &info, &pl->g, &tmp, &placed, &e))) {
        shard_err_set(why, rc == SHARD_ENOMEM ? rc : SHARD_ECORRUPT, "field '%s': image %s: %s",
                      d->name, origin, e.msg);
        rc = rc == SHARD_ENOMEM ? rc : SHARD_ECORRUPT;
        goto out;
    }
    size_t row = (size_t)placed.width * placed.channels;
    out->len = 0;
    if ((rc = shard_buf_reserve(out, SHARD_IMAGE_HEADER_BYTES + row * placed.height, why)))
        goto out;
    memset(out->data, 0, SHARD_IMAGE_HEADER_BYTES);
    put_le32(out->data, placed.width);
    put_le32(out->data + 4, placed.height);
    out->data[8] = (uint8_t)placed.channels;
    out->data[9] = SHARD_CODEC_RAW;
    for (uint32_t y = 0; y < placed.height; y++)
        memcpy(out->data + SHARD_IMAGE_HEADER_BYTES + y * row,
               placed.pixels + (size_t)y * placed.stride, row);
    out->len = SHARD_IMAGE_HEADER_BYTES + row * placed.height;
out:
    shard_image_release(&decoded);
    shard_image_release(&tmp);
    shard_image_release(&placed);
    return rc;
}

/* The value of boxes or mask field f of candidate key[0..len) whose image
 * went where pl says, into value: 1, 0 when the sample has none (*o then
 * says where it was looked for), SHARD_ECORRUPT with a reason to reject the
 * sample, or another error. */
static int geometric_value(const struct sk_field_sources *p, uint32_t f, const char *key,
                           size_t len, const struct sk_placement *pl, sk_sidecar_read_fn read,
                           void *ctx, struct shard_buf *scratch, struct shard_buf *value,
                           struct origin *o, struct sk_field_result *res, uint64_t *source_bytes,
                           uint64_t *source_xxh3, struct shard_err *why)
{
    const struct shard_field_decl *d = &p->config->fields[f];
    struct shard_image mask = {0};
    int rc;
    if (d->coco) {
        int64_t image = sk_coco_image(p->coco, key, len);
        if (image < 0) {
            snprintf(o->text, sizeof o->text, "no image of the COCO file");
            return 0;
        }
        struct shard_err e;
        if (d->type == SHARD_FIELD_BOXES) {
            rc = sk_coco_boxes(p->coco, image, pl->stored_w, pl->stored_h, !p->config->boxes_strict,
                               scratch, &res->boxes_dropped, &e);
            if (!rc)
                rc = place_boxes(scratch, pl, value, &res->boxes, &res->boxes_dropped, NULL, &e);
        } else if (d->type == SHARD_FIELD_INSTANCES) {
            rc = instances_value(p, image, pl, scratch, value, &e);
        } else {
            rc = sk_coco_mask(p->coco, image, pl->stored_w, pl->stored_h,
                              shard_field_mask_value_bytes(d), &mask, &e);
            if (!rc)
                rc = place_mask(&mask, pl, value, &e);
        }
        if (rc) {
            shard_image_release(&mask);
            return shard_err_set(why, rc, "field '%s': %s", d->name, e.msg);
        }
        *source_bytes = value->len; /* identified by the value as stored */
        *source_xxh3 = XXH3_64bits(value->data, value->len);
        shard_image_release(&mask);
        return 1;
    }
    const uint8_t *data;
    size_t n;
    int got = d->folder ? folder_bytes(p, f, key, len, scratch, o, res, why)
                        : value_bytes(p, d->name, p->suffix_of[f], NONE, key, len, read, ctx,
                                      scratch, &data, &n, o, res, why);
    if (d->folder && got > 0) {
        data = scratch->data;
        n = scratch->len;
    }
    if (got <= 0)
        return got;
    res->sidecars++;
    *source_bytes = n;
    *source_xxh3 = XXH3_64bits(data, n);
    if (d->type == SHARD_FIELD_IMAGE) {
        rc = image_value(p->config, d, data, n, o->text, pl, value, why);
        return rc ? rc : 1;
    }
    rc = mask_from_png(p->config, d, data, n, o->text, pl, &mask, why);
    if (!rc)
        rc = place_mask(&mask, pl, value, why);
    shard_image_release(&mask);
    return rc ? rc : 1;
}

/* ---- a sample's fields ---------------------------------------------------------------- */

/* Field f is absent (*o says where it was looked for): 0, or the reject of a
 * required field. */
static int absent(const struct sk_field_sources *p, uint32_t f, const struct origin *o,
                  struct shard_err *why)
{
    const struct shard_field_decl *d = &p->config->fields[f];
    if (!d->required)
        return SHARD_OK;
    return shard_err_set(why, SHARD_ECORRUPT, "field '%s' is required: %s%s", d->name,
                         p->suffix_of[f] != NONE || d->folder ? "no " : "", o->text);
}

int sk_field_sources_build(const struct sk_field_sources *p, uint64_t cand, const char *key,
                           size_t len, const struct sk_placement *place, sk_sidecar_read_fn read,
                           void *ctx, struct shard_buf *scratch, struct shard_field_set *out,
                           struct sk_field_result *res, struct shard_err *why)
{
    shard_field_set_clear(out);
    res->count = 0;
    res->sidecars = 0;
    res->read_seconds = 0;
    res->bytes_read = 0;
    res->boxes = res->boxes_dropped = 0;
    if (p->geometric && !place)
        return shard_err_set(why, SHARD_EINVAL,
                             "boxes, masks and image fields are built once their "
                             "image is converted");
    if (p->names && p->names[cand].class_reason)
        return shard_err_set(why, SHARD_ECORRUPT, "%s", p->names[cand].class_reason);
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
        if (d->type == SHARD_FIELD_LABELS) { /* read ahead, numbered */
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
                if (p->col_of[f] != NONE) { /* a table value: the identity of the value stored */
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
            int geometric = d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_MASK ||
                            d->type == SHARD_FIELD_INSTANCES || d->type == SHARD_FIELD_IMAGE;
            got = geometric ? geometric_value(p, f, key, len, place, read, ctx, scratch, &value, &o,
                                              res, &source_bytes, &source_xxh3, why)
                            : value_bytes(p, d->name, p->suffix_of[f], p->col_of[f], key, len, read,
                                          ctx, scratch, &data, &n, &o, res, why);
            if (got < 0) {
                rc = got;
                break;
            }
            if (!got) {
                rc = absent(p, f, &o, why);
                continue;
            }
            if (geometric) { /* placed, checked and identified by geometric_value */
                data = value.data;
                n = value.len;
            } else {
                if (p->suffix_of[f] != NONE)
                    res->sidecars++;
                source_bytes = n;
                source_xxh3 = XXH3_64bits(data, n);
                if ((rc = parse_value(d, data, n, &o, &value, why)))
                    break;
                data = value.data;
                n = value.len;
                if (p->col_of[f] != NONE) { /* a table value: the identity of the value stored */
                    source_bytes = n;
                    source_xxh3 = XXH3_64bits(data, n);
                }
            }
        }
        if ((rc = shard_field_set_add(out, f, d->type, data, n, why)))
            break;
        res->sources[res->count++] = (struct shard_field_source){f, source_bytes, source_xxh3};
    }
    shard_buf_release(&value);
    return rc;
}
