/* encode_internal.h - the PNG encoder's knobs and the payload decoder that
 * decodes only a box (private).
 *
 * shard_encode() uses the SHARD_PNG_* settings below; sk_encode_png()
 * takes any others so that bench/png_settings.c can show, on real images,
 * why these. */
#ifndef SHARDKIT_ENCODE_INTERNAL_H
#define SHARDKIT_ENCODE_INTERNAL_H

#include "shardkit/image.h"

/* Chosen with bench/png_settings.c on the ImageNet sample at 256 (numbers in
 * bench/README.md): the Paeth filter on every row and zlib's run-length
 * strategy give photos about the size of level 6 with adaptive filters in a
 * fifth of the time, and depend on nothing but the pixels.  With Z_RLE the
 * level only matters as "not 0". */
#define SHARD_PNG_LEVEL 1
#define SHARD_PNG_FILTERS 0x80 /* PNG_FILTER_PAETH */
#define SHARD_PNG_STRATEGY 3   /* Z_RLE */

/* shard_encode(img, SHARD_CODEC_PNG, ...) with an explicit zlib level (0-9),
 * filter set (PNG_FILTER_NONE ... PNG_ALL_FILTERS) and zlib strategy. */
int sk_encode_png(const struct shard_image *img, int level, int filters, int strategy,
                  struct shard_buf *out, struct shard_err *err);

struct sk_jpeg_box;

/* shard_decode_payload of the part of the image that holds box (which must
 * lie inside width x height): for a JPEG payload, sk_decode_jpeg_box
 * (image/decode_internal.h) decodes the region around the box into *out
 * and sets box->region_left/top to where it lies; any other payload, or a
 * JPEG with an EXIF orientation, is decoded whole (region 0, 0).  The box's
 * pixels are those shard_decode_payload gives, and every error it reports
 * is reported too. */
int sk_decode_payload_box(enum shard_codec codec, const uint8_t *data, size_t len, uint32_t width,
                          uint32_t height, struct sk_jpeg_box *box, struct shard_image *out,
                          struct shard_err *err);

#endif
