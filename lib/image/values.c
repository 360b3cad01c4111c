/* values.c - value images (masks) and boxes through an image's geometry
 * (see values.h). */
#include "image/values.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where stored pixel (x, y) of a w x h image goes upright (decode.c's
 * transpose_into table, solved for the output):
 *   2 (w-1-x, y)  3 (w-1-x, h-1-y)  4 (x, h-1-y)
 *   5 (y, x)      6 (h-1-y, x)      7 (h-1-y, w-1-x)  8 (y, w-1-x) */
int sk_values_orient(const struct shard_image *in, int orientation, struct shard_image *out,
                     struct shard_err *err)
{
    const uint32_t w = in->width, h = in->height, bytes = in->channels;
    int turned = orientation >= 5 && orientation <= 8;
    int rc = shard_image_alloc(out, turned ? h : w, turned ? w : h, bytes, err);
    if (rc)
        return rc;
    int rev_x = orientation == 2 || orientation == 3 || orientation == 7 || orientation == 8;
    int rev_y = orientation == 3 || orientation == 4 || orientation == 6 || orientation == 7;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *row = in->pixels + (size_t)y * in->stride;
        uint32_t ry = rev_y ? h - 1 - y : y;
        for (uint32_t x = 0; x < w; x++) {
            uint32_t rx = rev_x ? w - 1 - x : x;
            /* a quarter turn: the stored row becomes the upright column */
            uint32_t ox = turned ? ry : rx, oy = turned ? rx : ry;
            memcpy(out->pixels + (size_t)oy * out->stride + (size_t)ox * bytes,
                   row + (size_t)x * bytes, bytes);
        }
    }
    return SHARD_OK;
}

void sk_box_orient(double b[4], int orientation, uint32_t w, uint32_t h)
{
    int turned = orientation >= 5 && orientation <= 8;
    int rev_x = orientation == 2 || orientation == 3 || orientation == 7 || orientation == 8;
    int rev_y = orientation == 3 || orientation == 4 || orientation == 6 || orientation == 7;
    double x0 = rev_x ? w - b[2] : b[0], x1 = rev_x ? w - b[0] : b[2];
    double y0 = rev_y ? h - b[3] : b[1], y1 = rev_y ? h - b[1] : b[3];
    if (turned) {
        b[0] = y0, b[2] = y1;
        b[1] = x0, b[3] = x1;
    } else {
        b[0] = x0, b[2] = x1;
        b[1] = y0, b[3] = y1;
    }
}

/* The source index of output index i of an axis: the pixel holding its
 * centre, clamped to [0, size). */
static uint32_t source_index(double origin, double scale, uint32_t i, uint32_t size)
{
    double c = floor(origin + ((double)i + 0.5) * scale);
    return c < 0 ? 0 : c >= size ? size - 1 : (uint32_t)c;
}

int sk_values_nearest(const struct shard_image *src, double x0, double y0, double x1, double y1,
                      uint32_t scaled_w, uint32_t scaled_h, uint32_t win_x, uint32_t win_y,
                      uint32_t win_w, uint32_t win_h, int mirror, struct shard_image *dst,
                      struct shard_err *err)
{
    if (!src || !src->pixels || !dst || src == dst || src->channels < 1 || src->channels > 2 ||
        !(x0 >= 0 && x0 < x1 && x1 <= src->width && y0 >= 0 && y0 < y1 && y1 <= src->height) ||
        scaled_w == 0 || scaled_h == 0 || win_w == 0 || win_h == 0 || win_w > scaled_w ||
        win_x > scaled_w - win_w || win_h > scaled_h || win_y > scaled_h - win_h)
        return shard_err_set(err, SHARD_EINVAL, "nearest: no window of a value image");
    const uint32_t bytes = src->channels;
    int rc = shard_image_alloc(dst, win_w, win_h, bytes, err);
    if (rc)
        return rc;
    uint32_t *cols = malloc((size_t)win_w * sizeof *cols);
    if (!cols)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    const double sx = (x1 - x0) / scaled_w, sy = (y1 - y0) / scaled_h;
    for (uint32_t i = 0; i < win_w; i++)
        cols[mirror ? win_w - 1 - i : i] = source_index(x0, sx, win_x + i, src->width);
    for (uint32_t j = 0; j < win_h; j++) {
        const uint8_t *row = src->pixels +
                             (size_t)source_index(y0, sy, win_y + j, src->height) * src->stride;
        uint8_t *out = dst->pixels + (size_t)j * dst->stride;
        if (bytes == 1)
            for (uint32_t i = 0; i < win_w; i++)
                out[i] = row[cols[i]];
        else
            for (uint32_t i = 0; i < win_w; i++)
                memcpy(out + 2 * (size_t)i, row + 2 * (size_t)cols[i], 2);
    }
    free(cols);
    return SHARD_OK;
}
