/* encode_internal.h - the PNG encoder's knobs (private).
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

#endif
