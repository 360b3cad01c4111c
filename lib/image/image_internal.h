/* image_internal.h - more about images than shardkit/image.h says, for the
 * library only (private): the bytes of a sample, and the form a dataset
 * holding several forms reads as. */
#ifndef SHARDKIT_IMAGE_INTERNAL_H
#define SHARDKIT_IMAGE_INTERNAL_H

#include <stdint.h>

#include "shardkit/image.h"

/* Bytes per sample of img: 2 when img->depth is 16, else 1. */
uint32_t sk_image_sample_bytes(const struct shard_image *img);

/* The wider of two forms, as a dataset holding both reads: colour if either
 * has colour, alpha if either has alpha, 16 bits if either has them. */
void sk_pixels_widest(uint32_t c1, uint32_t d1, uint32_t c2, uint32_t d2, uint32_t *channels,
                      uint32_t *depth);

#endif
