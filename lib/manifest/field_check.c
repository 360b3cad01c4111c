/* field_check.c - whether a stored field value is one of its declared type
 * (shard_field_check, see shardkit/manifest.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <jansson.h>

#include "util/endian.h"
#include "shardkit/manifest.h"
#include "shardx/shardx.h"

/* 0 when p[0..len) is valid UTF-8, else the offset of the first bad byte
 * plus one. */
static size_t utf8_bad_at(const uint8_t *p, uint64_t len)
{
    for (uint64_t i = 0; i < len;) {
        size_t n = shardx_utf8_len(p + i, (size_t)(len - i));
        if (!n)
            return (size_t)i + 1;
        i += n;
    }
    return 0;
}

static int compare_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

static double get_f64(const uint8_t *p)
{
    uint64_t bits = get_le64(p);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static float get_f32(const uint8_t *p)
{
    uint32_t bits = get_le32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int32_t shard_field_class_find(const struct shard_field_decl *d, uint32_t id)
{
    uint32_t lo = 0, hi = d->class_count; /* classes are sorted by id */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->classes[mid].id == id)
            return (int32_t)mid;
        if (d->classes[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

uint32_t shard_field_mask_value_bytes(const struct shard_field_decl *d)
{
    return (d->class_count && d->classes[d->class_count - 1].id > 255) ||
                   (d->has_ignore && d->ignore > 255)
               ? 2
               : 1;
}

int shard_field_mask_value_valid(const struct shard_field_decl *d, uint32_t v)
{
    return (d->has_ignore && v == d->ignore) || shard_field_class_find(d, v) >= 0;
}

/* A BOXES value: its boxes' coordinates finite and ordered (and inside a
 * width x height image unless width is 0), classes declared, flags known. */
static int check_boxes(const struct shard_field_decl *decl, const uint8_t *value, uint64_t len,
                       uint32_t width, uint32_t height, struct shard_err *err)
{
    if (len % SHARD_BOX_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes are no list of boxes",
                             (unsigned long long)len);
    for (uint64_t i = 0; i < len / SHARD_BOX_BYTES; i++) {
        const uint8_t *b = value + i * SHARD_BOX_BYTES;
        float x0 = get_f32(b), y0 = get_f32(b + 4), x1 = get_f32(b + 8), y1 = get_f32(b + 12);
        uint32_t cls = get_le32(b + 16), flags = get_le32(b + 20);
        if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "box %llu has a coordinate that is not "
                                 "finite",
                                 (unsigned long long)i);
        if (!(x0 < x1 && y0 < y1))
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "box %llu (%g, %g, %g, %g) is empty or "
                                 "reversed",
                                 (unsigned long long)i, x0, y0, x1, y1);
        if (width && (x0 < 0 || y0 < 0 || x1 > (float)width || y1 > (float)height))
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "box %llu (%g, %g, %g, %g) is not inside "
                                 "the %ux%u image",
                                 (unsigned long long)i, x0, y0, x1, y1, width, height);
        if (cls > INT32_MAX || shard_field_class_find(decl, cls) < 0)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "box %llu has class %d, which the field "
                                 "does not declare",
                                 (unsigned long long)i, (int32_t)cls);
        if (flags & ~SHARD_BOX_CROWD)
            return shard_err_set(err, SHARD_ECORRUPT, "box %llu has unknown flags 0x%x",
                                 (unsigned long long)i, flags);
    }
    return SHARD_OK;
}

/* The largest of p[0..n): 16 bytes a step (SSE2's byte maxima: every x86-64
 * has them), the rest one by one. */
static uint8_t max_byte(const uint8_t *p, uint64_t n)
{
    uint8_t max = 0;
    uint64_t i = 0;
#if defined(__SSE2__)
    __m128i m = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16)
        m = _mm_max_epu8(m, _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
    uint8_t lanes[16];
    _mm_storeu_si128((__m128i *)(void *)lanes, m);
    for (int j = 0; j < 16; j++)
        max = lanes[j] > max ? lanes[j] : max;
#endif
    for (; i < n; i++)
        max = p[i] > max ? p[i] : max;
    return max;
}

/* A MASK value: its header, its size (width x height unless width is 0),
 * every value a declared class. */
/* An IMAGE value: its header (RGB, raw, reserved bytes 0), its size, and
 * when width is not 0 the record's width x height. */
static int check_image(const uint8_t *value, uint64_t len, uint32_t width, uint32_t height,
                       struct shard_err *err)
{
    struct shard_field_grid g;
    int rc = shard_field_image_decode(value, len, &g, err);
    if (!rc && width && (g.width != width || g.height != height))
        rc = shard_err_set(err, SHARD_ECORRUPT, "a %ux%u image field on a %ux%u image", g.width,
                           g.height, width, height);
    return rc;
}

static int check_mask(const struct shard_field_decl *decl, const uint8_t *value, uint64_t len,
                      uint32_t width, uint32_t height, struct shard_err *err)
{
    if (len < SHARD_MASK_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "a mask of %llu bytes has no header",
                             (unsigned long long)len);
    uint32_t w = get_le32(value), h = get_le32(value + 4), bytes = value[8];
    if (value[9] || value[10] || value[11])
        return shard_err_set(err, SHARD_ECORRUPT, "a mask's reserved bytes are not 0");
    if (bytes != shard_field_mask_value_bytes(decl))
        return shard_err_set(err, SHARD_ECORRUPT, "a mask of %u-byte values, declared %u", bytes,
                             shard_field_mask_value_bytes(decl));
    if (w == 0 || h == 0 || (uint64_t)w * h * bytes != len - SHARD_MASK_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "a %ux%u mask of %llu bytes", w, h,
                             (unsigned long long)len);
    if (width && (w != width || h != height))
        return shard_err_set(err, SHARD_ECORRUPT, "a %ux%u mask on a %ux%u image", w, h, width,
                             height);
    const uint8_t *p = value + SHARD_MASK_HEADER_BYTES;
    uint64_t n = (uint64_t)w * h;
    if (bytes == 1) {
        /* the common case, on every read: a table of the 256 values, and one pass
         * that only notes whether any is undeclared */
        uint8_t undeclared[256];
        memset(undeclared, 1, sizeof undeclared);
        for (uint32_t i = 0; i < decl->class_count; i++)
            if (decl->classes[i].id < 256)
                undeclared[decl->classes[i].id] = 0;
        if (decl->has_ignore && decl->ignore < 256) /* kept as it is, as a class is */
            undeclared[decl->ignore] = 0;
        /* classes 0..k all declared (the usual list): the largest value tells,
         * a loop compilers turn into vector maxima */
        uint32_t k = 0;
        while (k < 256 && !undeclared[k])
            k++;
        uint8_t any = 0;
        if (k == 256 || memchr(undeclared + k, 0, 256 - k) == NULL) {
            any = k < 256 && max_byte(p, n) >= k;
        } else {
            for (uint64_t i = 0; i < n; i++)
                any |= undeclared[p[i]];
        }
        for (uint64_t i = 0; any && i < n; i++)
            if (undeclared[p[i]])
                return shard_err_set(err, SHARD_ECORRUPT,
                                     "mask value %u at (%llu, %llu) is no "
                                     "declared class",
                                     p[i], (unsigned long long)(i % w),
                                     (unsigned long long)(i / w));
        return SHARD_OK;
    }
    /* which values are declared: one bit each */
    uint8_t *known = calloc(SHARD_MASK_CLASS_MAX / 8 + 1, 1);
    if (!known)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < decl->class_count; i++)
        if (decl->classes[i].id <= SHARD_MASK_CLASS_MAX)
            known[decl->classes[i].id >> 3] |= (uint8_t)(1u << (decl->classes[i].id & 7));
    if (decl->has_ignore && decl->ignore <= SHARD_MASK_CLASS_MAX)
        known[decl->ignore >> 3] |= (uint8_t)(1u << (decl->ignore & 7));
    int rc = SHARD_OK;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v = bytes == 1 ? p[i] : get_le16(p + 2 * i);
        if (!(known[v >> 3] & (1u << (v & 7)))) {
            rc = shard_err_set(err, SHARD_ECORRUPT,
                               "mask value %u at (%llu, %llu) is no "
                               "declared class",
                               v, (unsigned long long)(i % w), (unsigned long long)(i / w));
            break;
        }
    }
    free(known);
    return rc;
}

/* An INSTANCES value: its header, and each mask's runs covering exactly
 * its width x height (of the record's width x height unless width is 0). */
static int check_instances(const uint8_t *value, uint64_t len, uint32_t width, uint32_t height,
                           struct shard_err *err)
{
    uint32_t w, h, count;
    int rc = shard_field_instances_decode(value, len, &w, &h, &count, NULL, err);
    if (!rc && width && (w != width || h != height))
        rc = shard_err_set(err, SHARD_ECORRUPT, "%ux%u instance masks on a %ux%u image", w, h,
                           width, height);
    return rc;
}

int shard_field_check_image(const struct shard_field_decl *decl, const uint8_t *value, uint64_t len,
                            uint32_t label_count, uint32_t width, uint32_t height,
                            struct shard_err *err)
{
    if (decl->type == SHARD_FIELD_INSTANCES)
        return check_instances(value, len, width, height, err);
    if (decl->type == SHARD_FIELD_BOXES)
        return check_boxes(decl, value, len, width, height, err);
    if (decl->type == SHARD_FIELD_MASK)
        return check_mask(decl, value, len, width, height, err);
    if (decl->type == SHARD_FIELD_IMAGE)
        return check_image(value, len, width, height, err);
    return shard_field_check(decl, value, len, label_count, err);
}

int shard_field_check(const struct shard_field_decl *decl, const uint8_t *value, uint64_t len,
                      uint32_t label_count, struct shard_err *err)
{
    const char *type = shard_field_type_name(decl->type);
    switch (decl->type) {
    case SHARD_FIELD_TEXT: {
        size_t bad = utf8_bad_at(value, len);
        if (bad)
            return shard_err_set(err, SHARD_ECORRUPT, "text is not valid UTF-8 at byte %zu",
                                 bad - 1);
        return SHARD_OK;
    }
    case SHARD_FIELD_JSON: {
        size_t bad = utf8_bad_at(value, len);
        if (bad)
            return shard_err_set(err, SHARD_ECORRUPT, "JSON is not valid UTF-8 at byte %zu",
                                 bad - 1);
        json_error_t jerr;
        /* any value RFC 8259 allows: integers beyond int64 (a uint64 hash) and
         * \u0000 in strings too; jansson still refuses \u0000 in object keys */
        json_t *v = json_loadb((const char *)value, (size_t)len,
                               JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &jerr);
        if (!v)
            return shard_err_set(err, SHARD_ECORRUPT, "invalid JSON: line %d column %d: %s",
                                 jerr.line, jerr.column, jerr.text);
        json_decref(v);
        return SHARD_OK;
    }
    case SHARD_FIELD_INT:
        return len == 8 ? SHARD_OK
                        : shard_err_set(err, SHARD_ECORRUPT, "an int of %llu bytes",
                                        (unsigned long long)len);
    case SHARD_FIELD_FLOAT:
        if (len != 8)
            return shard_err_set(err, SHARD_ECORRUPT, "a float of %llu bytes",
                                 (unsigned long long)len);
        if (!isfinite(get_f64(value)))
            return shard_err_set(err, SHARD_ECORRUPT, "a float that is not finite");
        return SHARD_OK;
    case SHARD_FIELD_FLOAT32:
    case SHARD_FIELD_INT64: {
        uint64_t size = decl->type == SHARD_FIELD_FLOAT32 ? 4 : 8;
        if (len != (uint64_t)decl->length * size)
            return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes are no %s[%u]",
                                 (unsigned long long)len, type, decl->length);
        for (uint64_t i = 0; decl->type == SHARD_FIELD_FLOAT32 && i < decl->length; i++)
            if (!isfinite(get_f32(value + 4 * i)))
                return shard_err_set(err, SHARD_ECORRUPT, "element %llu is not finite",
                                     (unsigned long long)i);
        return SHARD_OK;
    }
    case SHARD_FIELD_LABELS: {
        if (len % 4)
            return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes are no list of labels",
                                 (unsigned long long)len);
        uint64_t n = len / 4;
        uint32_t *sorted = malloc(n ? (size_t)n * sizeof *sorted : 1);
        if (!sorted)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        for (uint64_t i = 0; i < n; i++)
            sorted[i] = get_le32(value + 4 * i);
        qsort(sorted, (size_t)n, sizeof *sorted, compare_u32);
        int rc = SHARD_OK;
        if (n && sorted[n - 1] >= label_count)
            rc = shard_err_set(err, SHARD_ECORRUPT, "label number %u is not below %u",
                               sorted[n - 1], label_count);
        for (uint64_t i = 1; !rc && i < n; i++)
            if (sorted[i] == sorted[i - 1])
                rc = shard_err_set(err, SHARD_ECORRUPT, "label number %u is listed twice",
                                   sorted[i]);
        free(sorted);
        return rc;
    }
    case SHARD_FIELD_BYTES: return SHARD_OK;
    case SHARD_FIELD_BOXES: return check_boxes(decl, value, len, 0, 0, err);
    case SHARD_FIELD_MASK: return check_mask(decl, value, len, 0, 0, err);
    case SHARD_FIELD_INSTANCES: return check_instances(value, len, 0, 0, err);
    case SHARD_FIELD_IMAGE: return check_image(value, len, 0, 0, err);
    }
    return shard_err_set(err, SHARD_ECORRUPT, "unknown field type %d", (int)decl->type);
}
