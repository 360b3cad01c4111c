/* field_check.c - whether a stored field value is one of its declared type
 * (shard_field_check, see shardkit/manifest.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/endian.h"
#include "shardkit/manifest.h"

/* 0 when p[0..len) is valid UTF-8, else the offset of the first bad byte
 * plus one. */
static size_t utf8_bad_at(const uint8_t *p, uint64_t len)
{
    for (uint64_t i = 0; i < len;) {
        size_t n = shard_utf8_len(p + i, (size_t)(len - i));
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
    case SHARD_FIELD_BYTES:
        return SHARD_OK;
    }
    return shard_err_set(err, SHARD_ECORRUPT, "unknown field type %d", (int)decl->type);
}
