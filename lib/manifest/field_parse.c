/* field_parse.c - a field's stored value from its source bytes (see
 * field_parse.h and manifests/FORMAT.md, "Where values come from"). */
#include "manifest/field_parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/endian.h"
#include "shardx/shardx.h"

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* bytes without the ASCII white space around them, NUL-terminated, in tmp
 * (at most 63 bytes: a number is never longer); NULL when too long or
 * holding a NUL. */
static const char *trimmed(const uint8_t *data, size_t n, char tmp[64])
{
    while (n && is_space((char)data[0])) {
        data++;
        n--;
    }
    while (n && is_space((char)data[n - 1]))
        n--;
    if (n >= 64 || memchr(data, '\0', n))
        return NULL;
    memcpy(tmp, data, n);
    tmp[n] = '\0';
    return tmp;
}

static int parse_int(const uint8_t *data, size_t n, int64_t *out)
{
    char tmp[64];
    const char *s = trimmed(data, n, tmp);
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_float(const uint8_t *data, size_t n, double *out)
{
    char tmp[64];
    const char *s = trimmed(data, n, tmp);
    if (!s || !*s)
        return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static void put_f64(uint8_t *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put_le64(p, bits);
}

int sk_field_class_name(const uint8_t *data, size_t n, const uint8_t **name, size_t *len)
{
    while (n && is_space((char)data[0])) {
        data++;
        n--;
    }
    while (n && is_space((char)data[n - 1]))
        n--;
    if (!n || memchr(data, '\0', n))
        return 0;
    *name = data;
    *len = n;
    return 1;
}

int sk_field_class_number(const char *name, size_t len, uint32_t *number)
{
    uint64_t v = 0;
    if (!len)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        if (v <= SK_CLASS_NUMBER_MAX)
            v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (v > SK_CLASS_NUMBER_MAX)
        return -1;
    *number = (uint32_t)v;
    return 1;
}

json_t *sk_field_parse_array(const char *name, const uint8_t *data, size_t n, const char *what,
                             uint32_t want, const char *origin, struct shard_err *why)
{
    json_error_t jerr;
    json_t *v = json_loadb((const char *)data, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        shard_err_set(why, SHARD_ECORRUPT,
                      "field '%s': %s is not a JSON array of %s: line %d "
                      "column %d: %s",
                      name, origin, what, jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_array(v)) {
        json_decref(v);
        shard_err_set(why, SHARD_ECORRUPT, "field '%s': %s is not a JSON array of %s", name, origin,
                      what);
        return NULL;
    }
    if (want && json_array_size(v) != want) {
        shard_err_set(why, SHARD_ECORRUPT, "field '%s': %s holds %zu %s, not %u", name, origin,
                      json_array_size(v), what, want);
        json_decref(v);
        return NULL;
    }
    return v;
}

int sk_field_parse_value(const struct shard_field_decl *d, const uint8_t *data, size_t n,
                         const char *origin, struct shard_buf *out, struct shard_err *why)
{
    struct shard_err e;
    out->len = 0;
    switch (d->type) {
    case SHARD_FIELD_TEXT:
    case SHARD_FIELD_JSON:
        if (shard_field_check(d, data, n, 0, &e)) {
            if (d->type == SHARD_FIELD_JSON && !strncmp(e.msg, "invalid JSON: ", 14))
                return shard_err_set(why, SHARD_ECORRUPT, "field '%s': invalid JSON in %s: %s",
                                     d->name, origin, e.msg + 14);
            return shard_err_set(why, SHARD_ECORRUPT, "field '%s': %s in %s", d->name, e.msg,
                                 origin);
        }
        /* fall through */
    case SHARD_FIELD_BYTES: return shard_buf_append(out, data, n, why);
    case SHARD_FIELD_INT: {
        int64_t v;
        if (parse_int(data, n, &v))
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "field '%s': %s is not an integer "
                                 "(a decimal int64)",
                                 d->name, origin);
        int rc = shard_buf_reserve(out, 8, why);
        if (!rc) {
            put_le64(out->data, (uint64_t)v);
            out->len = 8;
        }
        return rc;
    }
    case SHARD_FIELD_FLOAT: {
        double v;
        if (parse_float(data, n, &v))
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "field '%s': %s is not a number (finite, "
                                 "decimal)",
                                 d->name, origin);
        int rc = shard_buf_reserve(out, 8, why);
        if (!rc) {
            put_f64(out->data, v);
            out->len = 8;
        }
        return rc;
    }
    case SHARD_FIELD_FLOAT32:
    case SHARD_FIELD_INT64: {
        int f32 = d->type == SHARD_FIELD_FLOAT32;
        json_t *a = sk_field_parse_array(d->name, data, n, f32 ? "numbers" : "integers", d->length,
                                         origin, why);
        if (!a)
            return SHARD_ECORRUPT;
        int rc = shard_buf_reserve(out, (size_t)d->length * (f32 ? 4 : 8), why);
        for (size_t i = 0; !rc && i < d->length; i++) {
            json_t *x = json_array_get(a, i);
            if (f32) {
                float v = (float)json_number_value(x);
                if (!json_is_number(x) || !isfinite(v)) {
                    rc = shard_err_set(why, SHARD_ECORRUPT,
                                       "field '%s': %s element %zu is not "
                                       "a finite float32",
                                       d->name, origin, i);
                    break;
                }
                uint32_t bits;
                memcpy(&bits, &v, sizeof bits);
                put_le32(out->data + 4 * i, bits);
            } else {
                if (!json_is_integer(x)) {
                    rc = shard_err_set(why, SHARD_ECORRUPT,
                                       "field '%s': %s element %zu is not "
                                       "an integer",
                                       d->name, origin, i);
                    break;
                }
                put_le64(out->data + 8 * i, (uint64_t)json_integer_value(x));
            }
        }
        if (!rc)
            out->len = (size_t)d->length * (f32 ? 4 : 8);
        json_decref(a);
        return rc;
    }
    case SHARD_FIELD_LABELS:    /* their numbers depend on the label list */
    case SHARD_FIELD_BOXES:     /* from a COCO file, in the stored image's pixels */
    case SHARD_FIELD_MASK:      /* an image, resized as its image is */
    case SHARD_FIELD_INSTANCES: /* from a COCO file, likewise */
    case SHARD_FIELD_IMAGE: /* an image, resized as its image is */ break;
    }
    return shard_err_set(why, SHARD_EINVAL, "field '%s': no parser for its type", d->name);
}

json_t *sk_field_parse_label_names(const struct shard_field_decl *d, const uint8_t *data, size_t n,
                                   const char *origin, struct shard_err *why)
{
    json_t *a = sk_field_parse_array(d->name, data, n, "class names", 0, origin, why);
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        size_t len = json_string_length(x);
        if (!json_is_string(x) || len == 0 || len > UINT32_MAX) {
            shard_err_set(why, SHARD_ECORRUPT,
                          "field '%s': %s element %zu is not a class name "
                          "(a non-empty string)",
                          d->name, origin, i);
            json_decref(a);
            return NULL;
        }
        for (size_t j = 0; j < i; j++) {
            json_t *y = json_array_get(a, j);
            if (json_string_length(y) == len &&
                !memcmp(json_string_value(y), json_string_value(x), len)) {
                char shown[SHARDX_QUOTE_SIZE];
                shard_err_set(why, SHARD_ECORRUPT, "field '%s': %s lists '%s' twice", d->name,
                              origin, shardx_quote(json_string_value(x), len, shown, sizeof shown));
                json_decref(a);
                return NULL;
            }
        }
    }
    return a;
}
