/* coco.c - a COCO annotation file (instances_*.json): its images, their
 * annotations and its categories, read once with jansson and looked up by
 * sample key (see source_internal.h, "COCO annotation files").
 *
 * The file is kept parsed: the per-image work (boxes, masks) reads the
 * annotation objects in place, from any thread (nothing is written to the
 * tree after loading, so reads need no lock).  Lookups: the images sorted by
 * file_name (a key), the annotations of each image listed in file order. */
#include <math.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "source/coco_rle.h"
#include "source/source_internal.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"

/* A box or polygon point may lie this far outside its image (the rounding
 * of the tools that wrote it) and is then clipped; farther is an error. */
#define COCO_SLACK 1.0

struct coco_image {
    const char *file_name; /* in the tree */
    size_t file_len;
    json_int_t id;
    uint32_t width, height; /* as the file says, 0 when it does not */
    uint64_t first, count;  /* its annotations: ann[first .. first + count) */
};

struct image_id {
    json_int_t id;
    size_t image; /* position in the sorted images */
};

struct sk_coco {
    char *path;
    char *description;
    json_t *root;
    struct coco_image *images; /* sorted by file_name */
    size_t image_count;
    json_t **ann;                         /* annotation objects, grouped by image, file order */
    uint64_t annotation_count;            /* in the file */
    uint64_t annotations_orphan;          /* whose image_id names no images entry */
    struct shard_field_class *categories; /* sorted by id; names point into the tree */
    uint32_t category_count;
};

void sk_coco_free(struct sk_coco *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->description);
    json_decref(c->root);
    free(c->images);
    free(c->ann);
    free(c->categories);
    free(c);
}

static int compare_images(const void *pa, const void *pb)
{
    const struct coco_image *a = pa, *b = pb;
    return sk_key_compare(a->file_name, a->file_len, b->file_name, b->file_len);
}

static int compare_ids(const void *pa, const void *pb)
{
    const struct image_id *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

static int compare_classes(const void *pa, const void *pb)
{
    const struct shard_field_class *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

/* The file is wrong as a whole: SHARD_EINVAL naming it. */
#define BAD_FILE(...) coco_bad(c, err, __VA_ARGS__)
static int coco_bad(const struct sk_coco *c, struct shard_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int coco_bad(const struct sk_coco *c, struct shard_err *err, const char *fmt, ...)
{
    char what[SHARD_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return shard_err_set(err, SHARD_EINVAL, "COCO file '%s': %s", c->path, what);
}

static int load_categories(struct sk_coco *c, struct shard_err *err)
{
    const json_t *cats = json_object_get(c->root, "categories");
    size_t n = json_array_size(cats);
    if (!json_is_array(cats) || n == 0)
        return BAD_FILE("no \"categories\" (an array of {id, name})");
    if (n > SHARD_FIELD_CLASSES_MAX)
        return BAD_FILE("%zu categories, at most %u", n, SHARD_FIELD_CLASSES_MAX);
    if (!(c->categories = calloc(n, sizeof *c->categories)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(cats, i);
        const json_t *id = json_object_get(o, "id"), *name = json_object_get(o, "name");
        if (!json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > INT32_MAX || !json_is_string(name) ||
            json_string_length(name) == 0 ||
            strlen(json_string_value(name)) != json_string_length(name))
            return BAD_FILE("categories[%zu] is not {\"id\": 0..2147483647, \"name\": a "
                            "non-empty string}",
                            i);
        c->categories[i].id = (uint32_t)json_integer_value(id);
        c->categories[i].name = (char *)json_string_value(name);
    }
    qsort(c->categories, n, sizeof *c->categories, compare_classes);
    for (size_t i = 1; i < n; i++)
        if (c->categories[i].id == c->categories[i - 1].id)
            return BAD_FILE("category id %u is listed twice", c->categories[i].id);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->categories[i].name, c->categories[j].name))
                return BAD_FILE("category name '%s' is listed twice (ids %u and %u)",
                                c->categories[i].name, c->categories[j].id, c->categories[i].id);
    c->category_count = (uint32_t)n;
    return SHARD_OK;
}

static int load_images(struct sk_coco *c, struct image_id **ids, struct shard_err *err)
{
    const json_t *images = json_object_get(c->root, "images");
    size_t n = json_array_size(images);
    if (!json_is_array(images))
        return BAD_FILE("no \"images\" (an array of {id, file_name})");
    c->images = calloc(n ? n : 1, sizeof *c->images);
    *ids = calloc(n ? n : 1, sizeof **ids);
    if (!c->images || !*ids)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(images, i);
        const json_t *id = json_object_get(o, "id"), *name = json_object_get(o, "file_name");
        const json_t *w = json_object_get(o, "width"), *h = json_object_get(o, "height");
        if (!json_is_integer(id) || !json_is_string(name) || json_string_length(name) == 0)
            return BAD_FILE("images[%zu] is not {\"id\": an integer, \"file_name\": a "
                            "non-empty string}",
                            i);
        if ((w && (!json_is_integer(w) || json_integer_value(w) < 1 ||
                   json_integer_value(w) > UINT32_MAX)) ||
            (h && (!json_is_integer(h) || json_integer_value(h) < 1 ||
                   json_integer_value(h) > UINT32_MAX)))
            return BAD_FILE("images[%zu] has a width or height that is no positive integer", i);
        struct coco_image *im = &c->images[i];
        im->file_name = json_string_value(name);
        im->file_len = json_string_length(name);
        im->id = json_integer_value(id);
        im->width = w ? (uint32_t)json_integer_value(w) : 0;
        im->height = h ? (uint32_t)json_integer_value(h) : 0;
    }
    c->image_count = n;
    qsort(c->images, n, sizeof *c->images, compare_images);
    for (size_t i = 0; i < n; i++) {
        if (i && !compare_images(&c->images[i - 1], &c->images[i])) {
            char shown[SHARDX_QUOTE_SIZE];
            return BAD_FILE("two images name the file '%s'",
                            shardx_quote(c->images[i].file_name, c->images[i].file_len, shown,
                                         sizeof shown));
        }
        (*ids)[i] = (struct image_id){c->images[i].id, i};
    }
    qsort(*ids, n, sizeof **ids, compare_ids);
    for (size_t i = 1; i < n; i++)
        if ((*ids)[i].id == (*ids)[i - 1].id)
            return BAD_FILE("image id %lld is listed twice", (long long)(*ids)[i].id);
    return SHARD_OK;
}

/* The images entry of image id `id`: its position, or -1. */
static int64_t image_of_id(const struct image_id *ids, size_t n, json_int_t id)
{
    struct image_id want = {id, 0};
    const struct image_id *hit = bsearch(&want, ids, n, sizeof *ids, compare_ids);
    return hit ? (int64_t)hit->image : -1;
}

/* The annotations, grouped by image in file order (counting, then placing). */
static int load_annotations(struct sk_coco *c, const struct image_id *ids, struct shard_err *err)
{
    const json_t *anns = json_object_get(c->root, "annotations");
    if (!anns)
        return SHARD_OK; /* a file of images only: every image has no box */
    if (!json_is_array(anns))
        return BAD_FILE("\"annotations\" is not an array");
    size_t n = json_array_size(anns);
    c->annotation_count = n;
    int64_t *owner = malloc((n ? n : 1) * sizeof *owner);
    c->ann = malloc((n ? n : 1) * sizeof *c->ann);
    if (!owner || !c->ann) {
        free(owner);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(anns, i);
        const json_t *image_id = json_object_get(o, "image_id");
        if (!json_is_object(o) || !json_is_integer(image_id)) {
            free(owner);
            return BAD_FILE("annotations[%zu] has no integer \"image_id\"", i);
        }
        owner[i] = image_of_id(ids, c->image_count, json_integer_value(image_id));
        if (owner[i] < 0)
            c->annotations_orphan++;
        else
            c->images[owner[i]].count++;
    }
    uint64_t at = 0;
    for (size_t i = 0; i < c->image_count; i++) {
        c->images[i].first = at;
        at += c->images[i].count;
        c->images[i].count = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (owner[i] >= 0) {
            struct coco_image *im = &c->images[owner[i]];
            c->ann[im->first + im->count++] = json_array_get(anns, i);
        }
    free(owner);
    return SHARD_OK;
}

int sk_coco_load(struct sk_coco **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct sk_coco *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    struct shard_buf text = {0};
    struct image_id *ids = NULL;
    int rc = sk_fs_read_file(AT_FDCWD, path, &text, err);
    if (rc) {
        rc = shard_err_prefix(err, rc, "cannot read COCO file '%s'", path);
        goto out;
    }
    json_error_t jerr;
    c->root = json_loadb((const char *)text.data, text.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!c->root || !json_is_object(c->root)) {
        rc = c->root ? BAD_FILE("not a JSON object")
                     : BAD_FILE("line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        goto out;
    }
    if ((rc = load_categories(c, err)) || (rc = load_images(c, &ids, err)) ||
        (rc = load_annotations(c, ids, err)))
        goto out;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t size = strlen(base) + sizeof "file::0123456789abcdef";
    if (!(c->description = malloc(size))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(c->description, size, "file:%s:%016llx", base,
             (unsigned long long)XXH3_64bits(text.data, text.len));
out:
    free(ids);
    shard_buf_release(&text);
    if (rc) {
        sk_coco_free(c);
        return rc;
    }
    *out = c;
    return SHARD_OK;
}

const char *sk_coco_describe(const struct sk_coco *c)
{
    return c->description;
}

const struct shard_field_class *sk_coco_categories(const struct sk_coco *c, uint32_t *count)
{
    *count = c->category_count;
    return c->categories;
}

uint64_t sk_coco_image_count(const struct sk_coco *c)
{
    return c->image_count;
}

uint64_t sk_coco_annotation_count(const struct sk_coco *c)
{
    return c->annotation_count;
}

int64_t sk_coco_image(const struct sk_coco *c, const char *key, size_t len)
{
    size_t lo = 0, hi = c->image_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct coco_image *im = &c->images[mid];
        int d = sk_key_compare(key, len, im->file_name, im->file_len);
        if (d == 0)
            return (int64_t)mid;
        if (d < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

int sk_coco_unmatched(const struct sk_coco *c, const struct shard_keylist *keys, uint64_t *images,
                      uint64_t *annotations, struct shard_err *err)
{
    uint8_t *matched = calloc(c->image_count ? c->image_count : 1, 1);
    if (!matched)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < keys->count; i++) {
        size_t len;
        const char *key = shard_keylist_get(keys, i, &len);
        int64_t im = sk_coco_image(c, key, len);
        if (im >= 0)
            matched[im] = 1;
    }
    *images = 0;
    *annotations = c->annotations_orphan;
    for (size_t i = 0; i < c->image_count; i++)
        if (!matched[i]) {
            (*images)++;
            *annotations += c->images[i].count;
        }
    free(matched);
    return SHARD_OK;
}

/* ---- one image's annotations ------------------------------------------------------ */

/* The annotation's name in messages: "annotation 1234" (its id), else by
 * position. */
static void ann_name(const json_t *a, char *out, size_t n)
{
    const json_t *id = json_object_get(a, "id");
    if (json_is_integer(id))
        snprintf(out, n, "annotation %lld", (long long)json_integer_value(id));
    else
        snprintf(out, n, "an annotation without an id");
}

/* The stated size of image `image` against its file's stored size w x h:
 * 0, or SHARD_ECORRUPT with the reason. */
static int check_size(const struct sk_coco *c, int64_t image, uint32_t w, uint32_t h,
                      struct shard_err *why)
{
    const struct coco_image *im = &c->images[image];
    if ((im->width && im->width != w) || (im->height && im->height != h)) {
        if (im->width == h && im->height == w)
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "the COCO file says %ux%u, the image is "
                                 "%ux%u as stored: annotations are in the stored pixels, "
                                 "before EXIF orientation",
                                 im->width, im->height, w, h);
        return shard_err_set(why, SHARD_ECORRUPT,
                             "the COCO file says %ux%u, the image is "
                             "%ux%u",
                             im->width, im->height, w, h);
    }
    return SHARD_OK;
}

int sk_coco_boxes(const struct sk_coco *c, int64_t image, uint32_t w, uint32_t h, int clamp,
                  struct shard_buf *out, uint64_t *outside, struct shard_err *why)
{
    out->len = 0;
    int rc = check_size(c, image, w, h, why);
    const struct coco_image *im = &c->images[image];
    if (!rc)
        rc = shard_buf_reserve(out, (size_t)im->count * sizeof(struct sk_coco_box) + 1, why);
    for (uint64_t k = 0; !rc && k < im->count; k++) {
        const json_t *a = c->ann[im->first + k];
        char name[64];
        ann_name(a, name, sizeof name);
        const json_t *bbox = json_object_get(a, "bbox"), *cat = json_object_get(a, "category_id");
        const json_t *crowd = json_object_get(a, "iscrowd");
        double v[4];
        int ok = json_is_array(bbox) && json_array_size(bbox) == 4;
        for (int i = 0; ok && i < 4; i++) {
            const json_t *x = json_array_get(bbox, (size_t)i);
            v[i] = json_number_value(x);
            ok = json_is_number(x) && isfinite(v[i]);
        }
        if (!ok)
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: \"bbox\" is not [x, y, width, "
                                 "height] of four numbers",
                                 name);
        if (!(v[2] > 0 && v[3] > 0) && !clamp)
            return shard_err_set(why, SHARD_ECORRUPT, "%s: bbox [%g, %g, %g, %g] is empty", name,
                                 v[0], v[1], v[2], v[3]);
        struct sk_coco_box b = {{v[0], v[1], v[0] + v[2], v[1] + v[3]}, 0, 0, 0};
        if (!clamp && (b.b[0] < -COCO_SLACK || b.b[1] < -COCO_SLACK || b.b[2] > w + COCO_SLACK ||
                       b.b[3] > h + COCO_SLACK))
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: bbox [%g, %g, %g, %g] is outside "
                                 "the %ux%u image",
                                 name, v[0], v[1], v[2], v[3], w, h);
        b.b[0] = b.b[0] < 0 ? 0 : b.b[0];
        b.b[1] = b.b[1] < 0 ? 0 : b.b[1];
        b.b[2] = b.b[2] > w ? w : b.b[2];
        b.b[3] = b.b[3] > h ? h : b.b[3];
        if (!(b.b[0] < b.b[2] && b.b[1] < b.b[3]) && clamp) {
            ++*outside; /* wholly outside, or empty: dropped, as torchvision's reference does */
            continue;
        }
        if (!(b.b[0] < b.b[2] && b.b[1] < b.b[3]))
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: bbox [%g, %g, %g, %g] is outside "
                                 "the %ux%u image",
                                 name, v[0], v[1], v[2], v[3], w, h);
        uint32_t n;
        const struct shard_field_class *cats = sk_coco_categories(c, &n);
        struct shard_field_decl probe = {.classes = (struct shard_field_class *)cats,
                                         .class_count = n};
        if (!json_is_integer(cat))
            return shard_err_set(why, SHARD_ECORRUPT, "%s: no integer category_id", name);
        if (json_integer_value(cat) < 0 || json_integer_value(cat) > INT32_MAX ||
            shard_field_class_find(&probe, (uint32_t)json_integer_value(cat)) < 0)
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: category_id %lld is no category of "
                                 "the file",
                                 name, (long long)json_integer_value(cat));
        b.cls = (uint32_t)json_integer_value(cat);
        if (crowd && !(json_is_integer(crowd) &&
                       (json_integer_value(crowd) == 0 || json_integer_value(crowd) == 1)))
            return shard_err_set(why, SHARD_ECORRUPT, "%s: iscrowd is not 0 or 1", name);
        b.flags = crowd && json_integer_value(crowd) ? SHARD_BOX_CROWD : 0;
        b.ann = (uint32_t)k;
        memcpy(out->data + out->len, &b, sizeof b);
        out->len += sizeof b;
    }
    return rc;
}

/* Paint one annotation's segmentation with `value` into mask (w x h,
 * row-major, `bytes` per value).  0 or SHARD_ECORRUPT naming what is
 * malformed. */
static int paint_segmentation(const json_t *a, const char *name, uint32_t w, uint32_t h,
                              uint32_t value, struct shard_image *mask, struct shard_err *why)
{
    const json_t *seg = json_object_get(a, "segmentation");
    struct sk_rle rle = {0};
    int rc = SHARD_OK;
    if (json_is_array(seg)) { /* polygons: their union */
        for (size_t p = 0; !rc && p < json_array_size(seg); p++) {
            const json_t *poly = json_array_get(seg, p);
            size_t n = json_array_size(poly);
            if (!json_is_array(poly) || n < 6 || n % 2)
                return shard_err_set(why, SHARD_ECORRUPT,
                                     "%s: polygon %zu is not a list of "
                                     "at least 3 points (x, y)",
                                     name, p);
            double *xy = malloc(n * sizeof *xy);
            if (!xy)
                return shard_err_set(why, SHARD_ENOMEM, "out of memory");
            for (size_t i = 0; !rc && i < n; i++) {
                const json_t *x = json_array_get(poly, i);
                xy[i] = json_number_value(x);
                double limit = i % 2 ? h : w;
                if (!json_is_number(x) || !isfinite(xy[i]) || xy[i] < -COCO_SLACK ||
                    xy[i] > limit + COCO_SLACK)
                    rc = shard_err_set(why, SHARD_ECORRUPT,
                                       "%s: polygon %zu point %zu is "
                                       "outside the %ux%u image",
                                       name, p, i / 2, w, h);
            }
            if (!rc)
                rc = sk_rle_from_polygon(xy, n / 2, h, w, &rle, why);
            if (!rc)
                sk_rle_paint(&rle, value, mask);
            free(xy);
            sk_rle_release(&rle);
        }
        return rc;
    }
    const json_t *size = json_object_get(seg, "size"), *counts = json_object_get(seg, "counts");
    if (!json_is_object(seg) || !json_is_array(size) || json_array_size(size) != 2 || !counts)
        return shard_err_set(why, SHARD_ECORRUPT,
                             "%s: \"segmentation\" is neither polygons "
                             "nor RLE {size, counts}",
                             name);
    json_int_t sh = json_integer_value(json_array_get(size, 0));
    json_int_t sw = json_integer_value(json_array_get(size, 1));
    if (sh != (json_int_t)h || sw != (json_int_t)w)
        return shard_err_set(why, SHARD_ECORRUPT,
                             "%s: RLE of size [%lld, %lld], the image is "
                             "[%u, %u] (height, width)",
                             name, (long long)sh, (long long)sw, h, w);
    if (json_is_string(counts))
        rc = sk_rle_from_string(json_string_value(counts), h, w, &rle, why);
    else if (json_is_array(counts))
        rc = sk_rle_from_counts(counts, h, w, &rle, why);
    else
        rc = shard_err_set(why, SHARD_ECORRUPT, "RLE counts are neither a string nor a list");
    if (rc)
        rc = shard_err_prefix(why, rc, "%s", name);
    else
        sk_rle_paint(&rle, value, mask);
    sk_rle_release(&rle);
    return rc;
}

int sk_coco_mask(const struct sk_coco *c, int64_t image, uint32_t w, uint32_t h, uint32_t bytes,
                 struct shard_image *mask, struct shard_err *why)
{
    int rc = check_size(c, image, w, h, why);
    if (!rc)
        rc = shard_image_alloc(mask, w, h, bytes, why);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < h; y++)
        memset(mask->pixels + (size_t)y * mask->stride, 0, (size_t)w * bytes);
    const struct coco_image *im = &c->images[image];
    uint32_t n;
    const struct shard_field_class *cats = sk_coco_categories(c, &n);
    struct shard_field_decl probe = {.classes = (struct shard_field_class *)cats, .class_count = n};
    for (uint64_t k = 0; !rc && k < im->count; k++) {
        const json_t *a = c->ann[im->first + k];
        char name[64];
        ann_name(a, name, sizeof name);
        const json_t *cat = json_object_get(a, "category_id");
        if (!json_is_integer(cat) || json_integer_value(cat) < 0 ||
            json_integer_value(cat) > INT32_MAX ||
            shard_field_class_find(&probe, (uint32_t)json_integer_value(cat)) < 0)
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "%s: category_id is no category of the "
                                 "file",
                                 name);
        rc = paint_segmentation(a, name, w, h, (uint32_t)json_integer_value(cat), mask, why);
    }
    return rc;
}

int sk_coco_instance(const struct sk_coco *c, int64_t image, uint32_t ann, uint32_t w, uint32_t h,
                     struct shard_image *mask, struct shard_err *why)
{
    int rc = check_size(c, image, w, h, why);
    if (!rc)
        rc = shard_image_alloc(mask, w, h, 1, why);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < h; y++)
        memset(mask->pixels + (size_t)y * mask->stride, 0, w);
    const struct coco_image *im = &c->images[image];
    if (ann >= im->count)
        return shard_err_set(why, SHARD_EINVAL, "no annotation %u of the image", ann);
    const json_t *a = c->ann[im->first + ann];
    char name[64];
    ann_name(a, name, sizeof name);
    return paint_segmentation(a, name, w, h, 1, mask, why);
}
