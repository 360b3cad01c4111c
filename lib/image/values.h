/* values.h - images of numbers, not colours (masks of class ids), and boxes:
 * the geometry an image goes through, applied to them (private).
 *
 * A value image is a struct shard_image whose `channels` is the bytes of
 * one value (1, or 2 for a little-endian uint16): values are only ever
 * copied, never blended, so one class id is never mixed with another.
 * Coordinates are continuous, pixel i spanning [i, i + 1), as the
 * resampler's (image/resize_internal.h): a mask resampled here with the
 * box and sizes an image was resampled with stays aligned with it. */
#ifndef SHARDKIT_IMAGE_VALUES_H
#define SHARDKIT_IMAGE_VALUES_H

#include "shardkit/image.h"

/* Turn a value image as stored (w x h) upright as EXIF orientation 1..8
 * turns its image (decode.c's table).  out must not be in. */
int sk_values_orient(const struct shard_image *in, int orientation, struct shard_image *out,
                     struct shard_err *err);

/* The part [x0, x1) x [y0, y1) of src (inside it, positive size) resampled
 * to scaled_w x scaled_h by nearest neighbour, and of that the window of
 * win_w x win_h at (win_x, win_y) into dst, mirrored left-right when
 * `mirror`: output pixel (i, j) of the scaled image takes the value whose
 * pixel holds its centre, src(floor(x0 + (i + 0.5) * (x1 - x0) / scaled_w),
 * ...), clamped to the image (the rule of Pillow's NEAREST and torch's
 * "nearest-exact").  0, SHARD_EINVAL or SHARD_ENOMEM. */
int sk_values_nearest(const struct shard_image *src, double x0, double y0, double x1, double y1,
                      uint32_t scaled_w, uint32_t scaled_h, uint32_t win_x, uint32_t win_y,
                      uint32_t win_w, uint32_t win_h, int mirror, struct shard_image *dst,
                      struct shard_err *err);

/* Where the box b = {x0, y0, x1, y1} of an image stored w x h lands once
 * EXIF orientation 1..8 turned it upright. */
void sk_box_orient(double b[4], int orientation, uint32_t w, uint32_t h);

#endif
