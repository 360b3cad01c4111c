/* fields.c - a record's field area: field types, building the area, and
 * walking and checking it (format version 2; see shardkit/format.h and
 * manifests/FORMAT.md "Fields").
 *
 * An entry is field:u16 type:u8 reserved:u8 value_bytes:u32, then the value;
 * entries follow each other without padding, in increasing field number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/endian.h"
#include "format/record_internal.h"
#include "shardkit/format.h"

#define ENTRY_OFF_FIELD 0
#define ENTRY_OFF_TYPE 2
#define ENTRY_OFF_RESERVED 3
#define ENTRY_OFF_BYTES 4

static const char *const type_names[] = {
    [SHARD_FIELD_TEXT] = "text",
    [SHARD_FIELD_JSON] = "json",
    [SHARD_FIELD_INT] = "int",
    [SHARD_FIELD_FLOAT] = "float",
    [SHARD_FIELD_FLOAT32] = "float32",
    [SHARD_FIELD_INT64] = "int64",
    [SHARD_FIELD_LABELS] = "labels",
    [SHARD_FIELD_BYTES] = "bytes",
    [SHARD_FIELD_BOXES] = "boxes",
    [SHARD_FIELD_MASK] = "mask",
    [SHARD_FIELD_INSTANCES] = "instances",
    [SHARD_FIELD_IMAGE] = "image",
};
#define TYPE_COUNT (sizeof type_names / sizeof type_names[0])

const char *shard_field_type_name(enum shard_field_type t)
{
    return (unsigned)t < TYPE_COUNT ? type_names[t] : NULL;
}

int shard_field_type_is_vector(enum shard_field_type t)
{
    return t == SHARD_FIELD_FLOAT32 || t == SHARD_FIELD_INT64;
}

int shard_field_type_parse(const char *s, enum shard_field_type *type, uint32_t *length,
                           struct shard_err *err)
{
    size_t n = strcspn(s, "[");
    for (unsigned t = 1; t < TYPE_COUNT; t++) {
        if (strlen(type_names[t]) != n || memcmp(s, type_names[t], n) != 0)
            continue;
        *type = (enum shard_field_type)t;
        *length = 0;
        if (!shard_field_type_is_vector(*type)) {
            if (s[n])
                return shard_err_set(err, SHARD_EINVAL, "type '%s' takes no length", type_names[t]);
            return SHARD_OK;
        }
        /* "float32[512]": a decimal length, no sign, no leading zero */
        const char *p = s + n;
        if (*p != '[' || p[1] < '1' || p[1] > '9')
            return shard_err_set(err, SHARD_EINVAL, "type '%s' needs a length: '%s[N]'",
                                 type_names[t], type_names[t]);
        uint64_t v = 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if ((v = v * 10 + (uint64_t)(*p - '0')) > SHARD_FIELD_VECTOR_MAX)
                break;
        if (v > SHARD_FIELD_VECTOR_MAX)
            return shard_err_set(err, SHARD_EINVAL, "vector length in '%s' exceeds %u", s,
                                 SHARD_FIELD_VECTOR_MAX);
        if (p[0] != ']' || p[1])
            return shard_err_set(err, SHARD_EINVAL, "bad vector type '%s' (want '%s[N]')", s,
                                 type_names[t]);
        *length = (uint32_t)v;
        return SHARD_OK;
    }
    return shard_err_set(err, SHARD_EINVAL,
                         "unknown field type '%s' (text, json, int, float, float32[N], "
                         "int64[N], labels, bytes, boxes, mask, instances, image)",
                         s);
}

/* The size rule of a type: 0 when `len` bytes can be a value of it. */
static int size_fits(enum shard_field_type t, uint64_t len)
{
    switch (t) {
    case SHARD_FIELD_INT:
    case SHARD_FIELD_FLOAT: return len == 8;
    case SHARD_FIELD_FLOAT32:
    case SHARD_FIELD_LABELS: return len % 4 == 0;
    case SHARD_FIELD_INT64: return len % 8 == 0;
    case SHARD_FIELD_BOXES: return len % SHARD_BOX_BYTES == 0;
    case SHARD_FIELD_MASK: return len >= SHARD_MASK_HEADER_BYTES;
    case SHARD_FIELD_IMAGE: return len >= SHARD_IMAGE_HEADER_BYTES;
    case SHARD_FIELD_INSTANCES: return len >= SHARD_INSTANCES_HEADER_BYTES && len % 4 == 0;
    case SHARD_FIELD_TEXT:
    case SHARD_FIELD_JSON:
    case SHARD_FIELD_BYTES: return 1;
    }
    return 0;
}

void shard_field_set_clear(struct shard_field_set *s)
{
    s->area.len = 0;
    s->count = 0;
    s->last = -1;
}

void shard_field_set_release(struct shard_field_set *s)
{
    if (!s)
        return;
    shard_buf_release(&s->area);
    memset(s, 0, sizeof *s);
}

int shard_field_set_add(struct shard_field_set *s, uint32_t field, enum shard_field_type type,
                        const void *value, size_t len, struct shard_err *err)
{
    if (field >= SHARD_FIELDS_MAX || (s->count && (int64_t)field <= s->last))
        return shard_err_set(err, SHARD_EINVAL, "field %u added out of order", field);
    if (!shard_field_type_name(type) || !size_fits(type, len))
        return shard_err_set(err, SHARD_EINVAL, "a value of %zu bytes is no %s", len,
                             shard_field_type_name(type) ? shard_field_type_name(type)
                                                         : "known type");
    if ((uint64_t)len > UINT32_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "a field value of %zu bytes exceeds 4 GiB", len);
    uint8_t h[SHARD_FIELD_ENTRY_BYTES];
    put_le16(h + ENTRY_OFF_FIELD, (uint16_t)field);
    h[ENTRY_OFF_TYPE] = (uint8_t)type;
    h[ENTRY_OFF_RESERVED] = 0;
    put_le32(h + ENTRY_OFF_BYTES, (uint32_t)len);
    size_t was = s->area.len;
    int rc = shard_buf_append(&s->area, h, sizeof h, err);
    if (!rc && len)
        rc = shard_buf_append(&s->area, value, len, err);
    if (rc) {
        s->area.len = was;
        return rc;
    }
    s->count++;
    s->last = (int32_t)field;
    return SHARD_OK;
}

int sk_fields_check_area(const uint8_t *area, uint64_t len, uint32_t count, struct shard_err *err)
{
    uint64_t at = 0;
    int64_t last = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (len - at < SHARD_FIELD_ENTRY_BYTES)
            return shard_err_set(err, SHARD_ECORRUPT, "field entry %u is cut short", i);
        const uint8_t *h = area + at;
        uint32_t field = get_le16(h + ENTRY_OFF_FIELD);
        enum shard_field_type type = (enum shard_field_type)h[ENTRY_OFF_TYPE];
        uint64_t bytes = get_le32(h + ENTRY_OFF_BYTES);
        at += SHARD_FIELD_ENTRY_BYTES;
        if ((int64_t)field <= last || field >= SHARD_FIELDS_MAX)
            return shard_err_set(err, SHARD_ECORRUPT, "field entry %u: field %u out of order", i,
                                 field);
        if (!shard_field_type_name(type))
            return shard_err_set(err, SHARD_ECORRUPT, "field entry %u: unknown type %u", i,
                                 (unsigned)h[ENTRY_OFF_TYPE]);
        if (h[ENTRY_OFF_RESERVED] != 0)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "field entry %u: its reserved byte is %u, not 0", i,
                                 (unsigned)h[ENTRY_OFF_RESERVED]);
        if (bytes > len - at)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "field entry %u: value runs past the "
                                 "record",
                                 i);
        if (!size_fits(type, bytes))
            return shard_err_set(err, SHARD_ECORRUPT, "field entry %u: %llu bytes are no %s", i,
                                 (unsigned long long)bytes, shard_field_type_name(type));
        at += bytes;
        last = field;
    }
    if (at != len)
        return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes after the last field entry",
                             (unsigned long long)(len - at));
    return SHARD_OK;
}

uint32_t shard_record_fields(const struct shard_record_view *view, struct shard_field_value *out,
                             uint32_t cap)
{
    const uint8_t *p = view->fields;
    for (uint32_t i = 0; i < view->field_count && i < cap; i++) {
        out[i].field = get_le16(p + ENTRY_OFF_FIELD);
        out[i].type = (enum shard_field_type)p[ENTRY_OFF_TYPE];
        out[i].len = get_le32(p + ENTRY_OFF_BYTES);
        out[i].data = p + SHARD_FIELD_ENTRY_BYTES;
        p += SHARD_FIELD_ENTRY_BYTES + out[i].len;
    }
    return view->field_count;
}
