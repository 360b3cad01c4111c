/* targets_out.c - boxes and masks written and drawn (see targets_out.h). */
#include "targets_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <png.h>

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float le_f32(const uint8_t *p)
{
    uint32_t bits = le32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- boxes as JSON ------------------------------------------------------------- */

/* A float32 in the fewest digits that read back as it. */
static void float_text(float v, char *out, size_t n)
{
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(out, n, "%.*g", digits, (double)v);
        if ((float)strtod(out, NULL) == v)
            return;
    }
}

int targets_boxes_json(const struct shard_field_decl *d, const uint8_t *value, size_t len,
                       struct shard_buf *out, struct shard_err *err)
{
    int rc = shard_buf_append(out, "[", 1, err);
    for (size_t i = 0; !rc && i < len / SHARD_BOX_BYTES; i++) {
        const uint8_t *p = value + i * SHARD_BOX_BYTES;
        char x[4][24];
        for (int k = 0; k < 4; k++)
            float_text(le_f32(p + 4 * k), x[k], sizeof x[k]);
        uint32_t id = le32(p + 16);
        int32_t at = shard_field_class_find(d, id);
        json_t *name = json_string(at >= 0 ? d->classes[at].name : "");
        char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
        json_decref(name);
        if (!quoted)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        char *line = NULL;
        int n = asprintf(&line,
                         "%s{\"box\": [%s, %s, %s, %s], \"class\": %u, \"name\": %s, "
                         "\"crowd\": %s}",
                         i ? ",\n " : "", x[0], x[1], x[2], x[3], id, quoted,
                         le32(p + 20) & SHARD_BOX_CROWD ? "true" : "false");
        free(quoted);
        if (n < 0)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        rc = shard_buf_append(out, line, (size_t)n, err);
        free(line);
    }
    return rc ? rc : shard_buf_append(out, "]\n", 2, err);
}

/* ---- masks as PNG ------------------------------------------------------------- */

struct png_out {
    struct shard_buf *buf;
    int failed;
};

static void on_write(png_structp png, png_bytep data, size_t n)
{
    struct png_out *o = png_get_io_ptr(png);
    struct shard_err e;
    if (!o->failed && shard_buf_append(o->buf, data, n, &e))
        o->failed = 1;
}

static void on_flush(png_structp png)
{
    (void)png;
}

int targets_mask_png(const uint8_t *value, size_t len, struct shard_buf *out, struct shard_err *err)
{
    uint32_t w = le32(value), h = le32(value + 4), bytes = value[8];
    /* the reader checked the header against the value's length */
    if (len < SHARD_MASK_HEADER_BYTES || (bytes != 1 && bytes != 2))
        return shard_err_set(err, SHARD_ECORRUPT, "a mask of %u-byte values", bytes);
    const uint8_t *values = value + SHARD_MASK_HEADER_BYTES;
    uint8_t *row = malloc((size_t)w * bytes);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    struct png_out o = {out, 0};
    int rc = SHARD_OK;
    if (!row || !png || !info) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto done;
    }
    if (setjmp(png_jmpbuf(png))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot encode a %ux%u mask as PNG", w, h);
        goto done;
    }
    png_set_write_fn(png, &o, on_write, on_flush);
    png_set_IHDR(png, info, w, h, bytes * 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *in = values + (size_t)y * w * bytes;
        for (uint32_t x = 0; x < w; x++) { /* PNG's 16-bit samples are big-endian */
            if (bytes == 1)
                row[x] = in[x];
            else
                row[2 * x] = in[2 * x + 1], row[2 * x + 1] = in[2 * x];
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    if (o.failed)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
done:
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(row);
    return rc;
}

/* ---- drawing ------------------------------------------------------------------ */

void targets_class_colour(uint32_t id, uint8_t rgb[3])
{
    /* well apart for neighbouring ids, never black */
    uint32_t h = id * 2654435761u;
    rgb[0] = (uint8_t)(64 + (h >> 24) % 192);
    rgb[1] = (uint8_t)(64 + (h >> 16) % 192);
    rgb[2] = (uint8_t)(64 + (h >> 8) % 192);
}

static void put(struct shard_image *img, int64_t x, int64_t y, const uint8_t rgb[3])
{
    if (x < 0 || y < 0 || x >= img->width || y >= img->height)
        return;
    memcpy(img->pixels + (size_t)y * img->stride + (size_t)x * 3, rgb, 3);
}

/* A box's outline: the pixels of its first and last columns and rows (pixel
 * i spans [i, i + 1): a box [x0, x1) holds columns floor(x0) .. ceil(x1) - 1). */
static void draw_box(struct shard_image *img, const uint8_t *p)
{
    float f[4];
    for (int k = 0; k < 4; k++)
        f[k] = le_f32(p + 4 * k);
    int64_t x0 = (int64_t)f[0], y0 = (int64_t)f[1];
    int64_t x1 = (int64_t)f[2], y1 = (int64_t)f[3];
    if ((float)x1 < f[2])
        x1++;
    if ((float)y1 < f[3])
        y1++;
    x1--, y1--; /* the last column and row */
    uint8_t rgb[3];
    targets_class_colour(le32(p + 16), rgb);
    for (int64_t x = x0; x <= x1; x++)
        put(img, x, y0, rgb), put(img, x, y1, rgb);
    for (int64_t y = y0; y <= y1; y++)
        put(img, x0, y, rgb), put(img, x1, y, rgb);
}

static uint32_t mask_at(const uint8_t *v, uint32_t bytes, uint32_t w, uint32_t x, uint32_t y)
{
    size_t i = (size_t)y * w + x;
    return bytes == 1 ? v[i] : (uint32_t)v[2 * i] | (uint32_t)v[2 * i + 1] << 8;
}

/* A mask's outlines: each pixel whose value differs from its right or lower
 * neighbour's is painted in the colour of the class that is not 0 there. */
static void draw_mask(struct shard_image *img, const uint8_t *value)
{
    uint32_t w = le32(value), h = le32(value + 4), bytes = value[8];
    if (w != img->width || h != img->height)
        return; /* the reader checked the size: not reached */
    const uint8_t *v = value + SHARD_MASK_HEADER_BYTES;
#define AT(x, y) mask_at(v, bytes, w, (x), (y))
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t c = AT(x, y);
            uint32_t other = c;
            if (x + 1 < w && AT(x + 1, y) != c)
                other = AT(x + 1, y);
            else if (y + 1 < h && AT(x, y + 1) != c)
                other = AT(x, y + 1);
            if (other == c)
                continue;
            uint8_t rgb[3];
            targets_class_colour(c ? c : other, rgb);
            put(img, x, y, rgb);
        }
#undef AT
}

void targets_draw(const struct shard_manifest *m, const struct shard_item *it,
                  struct shard_image *img)
{
    for (int pass = 0; pass < 2; pass++) /* mask outlines first, boxes over them */
        for (uint32_t i = 0; i < it->field_count; i++) {
            const struct shard_field_value *fv = &it->fields[i];
            if (fv->field >= m->config.field_count)
                continue;
            enum shard_field_type t = m->config.fields[fv->field].type;
            if (pass == 0 && t == SHARD_FIELD_MASK && fv->len >= SHARD_MASK_HEADER_BYTES)
                draw_mask(img, fv->data);
            for (size_t b = 0;
                 pass == 1 && t == SHARD_FIELD_BOXES && b < (size_t)fv->len / SHARD_BOX_BYTES; b++)
                draw_box(img, fv->data + b * SHARD_BOX_BYTES);
        }
}
