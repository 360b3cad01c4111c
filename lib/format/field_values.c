/* field_values.c - the structured field values decoded (BOXES, MASK,
 * INSTANCES, IMAGE; shardkit/format.h "the structured values, decoded" and
 * manifests/FORMAT.md "Boxes and masks", "Image fields"): the one place a
 * reader learns their byte layouts. */
#include <string.h>

#include "format/record_internal.h"
#include "util/endian.h"

/* A box's members, after one another: x0 y0 x1 y1 (f32), class (i32), flags (u32). */
#define BOX_OFF_CLASS 16
#define BOX_OFF_FLAGS 20
/* A grid's header: width:u32 height:u32, then a MASK's value_bytes or an
 * IMAGE's channels and codec. */
#define GRID_OFF_HEIGHT 4
#define GRID_OFF_BYTE8 8
#define GRID_OFF_BYTE9 9
/* An INSTANCES value's header: width:u32 height:u32 count:u32 reserved:u32. */
#define INST_OFF_HEIGHT 4
#define INST_OFF_COUNT 8
#define INST_OFF_RESERVED 12

static float get_lef32(const uint8_t *p)
{
    uint32_t bits = get_le32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int shard_field_boxes_decode(const uint8_t *value, uint64_t len, struct shard_box *out,
                             uint64_t *count, struct shard_err *err)
{
    if (len % SHARD_BOX_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes are no whole boxes (%u each)",
                             (unsigned long long)len, SHARD_BOX_BYTES);
    *count = len / SHARD_BOX_BYTES;
    for (uint64_t i = 0; out && i < *count; i++) {
        const uint8_t *p = value + i * SHARD_BOX_BYTES;
        out[i].x0 = get_lef32(p);
        out[i].y0 = get_lef32(p + 4);
        out[i].x1 = get_lef32(p + 8);
        out[i].y1 = get_lef32(p + 12);
        out[i].cls = (int32_t)get_le32(p + BOX_OFF_CLASS);
        out[i].flags = get_le32(p + BOX_OFF_FLAGS);
    }
    return SHARD_OK;
}

/* The grid after a header of `header` bytes whose width and height are
 * its first two u32: `what` names the value in messages. */
static int grid_decode(const uint8_t *value, uint64_t len, uint64_t header, uint32_t channels,
                       uint32_t value_bytes, const char *what, struct shard_field_grid *out,
                       struct shard_err *err)
{
    uint32_t w = get_le32(value), h = get_le32(value + GRID_OFF_HEIGHT);
    if (w == 0 || h == 0 || (uint64_t)w * h * channels * value_bytes != len - header)
        return shard_err_set(err, SHARD_ECORRUPT, "a %ux%u %s of %llu bytes", w, h, what,
                             (unsigned long long)len);
    *out = (struct shard_field_grid){.width = w,
                                     .height = h,
                                     .channels = channels,
                                     .value_bytes = value_bytes,
                                     .values = value + header};
    return SHARD_OK;
}

int shard_field_mask_decode(const uint8_t *value, uint64_t len, struct shard_field_grid *out,
                            struct shard_err *err)
{
    if (len < SHARD_MASK_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "a mask of %llu bytes has no header",
                             (unsigned long long)len);
    uint32_t bytes = value[GRID_OFF_BYTE8];
    if (value[9] || value[10] || value[11])
        return shard_err_set(err, SHARD_ECORRUPT, "a mask's reserved bytes are not 0");
    if (bytes != 1 && bytes != 2)
        return shard_err_set(err, SHARD_ECORRUPT, "a mask of %u-byte values (1 or 2)", bytes);
    return grid_decode(value, len, SHARD_MASK_HEADER_BYTES, 1, bytes, "mask", out, err);
}

int shard_field_image_decode(const uint8_t *value, uint64_t len, struct shard_field_grid *out,
                             struct shard_err *err)
{
    if (len < SHARD_IMAGE_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "an image of %llu bytes has no header",
                             (unsigned long long)len);
    uint32_t channels = value[GRID_OFF_BYTE8], codec = value[GRID_OFF_BYTE9];
    if (value[10] || value[11])
        return shard_err_set(err, SHARD_ECORRUPT, "an image's reserved bytes are not 0");
    if (channels != 3 || codec != SHARD_CODEC_RAW)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "an image of %u channels and codec %u (3 and raw are known)", channels,
                             codec);
    return grid_decode(value, len, SHARD_IMAGE_HEADER_BYTES, channels, 1, "image", out, err);
}

void shard_field_grid_copy(const struct shard_field_grid *g, void *out)
{
    size_t n = (size_t)g->width * g->height * g->channels;
    if (g->value_bytes == 1) {
        memcpy(out, g->values, n);
        return;
    }
    uint16_t *o = out;
    for (size_t i = 0; i < n; i++)
        o[i] = get_le16(g->values + 2 * i);
}

void sk_instance_fill(const uint8_t *counts, uint32_t runs, uint32_t w, uint32_t h, uint8_t *dst,
                      size_t stride)
{
    uint64_t at = 0, pixels = (uint64_t)w * h;
    for (uint32_t r = 0; r < runs && at < pixels; r++) {
        uint64_t n = get_le32(counts + 4 * (size_t)r);
        for (uint64_t i = 0; i < n && at < pixels; i++, at++)
            dst[(size_t)(at % h) * stride + (size_t)(at / h)] = (uint8_t)(r & 1);
    }
}

int shard_field_instances_decode(const uint8_t *value, uint64_t len, uint32_t *width,
                                 uint32_t *height, uint32_t *count, uint8_t *masks,
                                 struct shard_err *err)
{
    if (len < SHARD_INSTANCES_HEADER_BYTES || len % 4)
        return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes are no instance masks",
                             (unsigned long long)len);
    uint32_t w = get_le32(value), h = get_le32(value + INST_OFF_HEIGHT);
    uint32_t n = get_le32(value + INST_OFF_COUNT);
    if (get_le32(value + INST_OFF_RESERVED))
        return shard_err_set(err, SHARD_ECORRUPT, "instance masks' reserved bytes are not 0");
    if (w == 0 || h == 0)
        return shard_err_set(err, SHARD_ECORRUPT, "instance masks of %ux%u", w, h);
    uint64_t at = SHARD_INSTANCES_HEADER_BYTES, pixels = (uint64_t)w * h;
    for (uint32_t k = 0; k < n; k++) {
        if (len - at < 4)
            return shard_err_set(err, SHARD_ECORRUPT, "instance mask %u is cut short", k);
        uint64_t runs = get_le32(value + at), sum = 0;
        at += 4;
        if (runs == 0 || runs > (len - at) / 4)
            return shard_err_set(err, SHARD_ECORRUPT, "instance mask %u is cut short", k);
        for (uint64_t i = 0; i < runs; i++)
            sum += get_le32(value + at + 4 * i);
        if (sum != pixels)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "instance mask %u covers %llu pixels, not %llu", k,
                                 (unsigned long long)sum, (unsigned long long)pixels);
        if (masks)
            sk_instance_fill(value + at, (uint32_t)runs, w, h, masks + (size_t)k * pixels, w);
        at += 4 * runs;
    }
    if (at != len)
        return shard_err_set(err, SHARD_ECORRUPT, "%llu bytes follow the %u instance masks",
                             (unsigned long long)(len - at), n);
    *width = w;
    *height = h;
    *count = n;
    return SHARD_OK;
}
