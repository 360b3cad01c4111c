/* transforms_internal.h - what the loader asks of a transform list (private). */
#ifndef SHARDKIT_TRANSFORMS_INTERNAL_H
#define SHARDKIT_TRANSFORMS_INTERNAL_H

#include "shardkit/loader.h"

/* 1 when `a` writes its input of `depth` bits unchanged: no steps, NHWC, uint8
 * (uint16 for 16 bits); NULL too. */
int sk_transforms_is_identity(const struct shard_transforms *a, uint32_t depth);
/* 1 when no step changes the image's size (flips and NORMALIZE only; NULL too). */
int sk_transforms_keeps_size(const struct shard_transforms *a);
/* d->out_bytes for images of `channels` (1..4): shard_transforms_draw counts
 * 3 (RGB).  shard_transforms_apply takes 8-bit images of 1..4 channels and
 * gives as many (a NORMALIZE step's means go to channels 0..2; RGBA's alpha
 * is x / 255). */
void sk_transforms_draws_channels(struct shard_transforms_draws *d,
                                  const struct shard_transforms *a, uint32_t channels);

/* 1 when the first step of `a` is RANDOM_RESIZED_CROP or CENTER_CROP. */
int sk_transforms_starts_with_crop(const struct shard_transforms *a);

/* When the first step of `a` is a crop that stays inside the image
 * (RANDOM_RESIZED_CROP, or CENTER_CROP without padding), its box in the
 * input as drawn in *d: 1 and *left, *top, *width, *height; else 0.  Only
 * those pixels of the input are ever read by shard_transforms_apply. */
int sk_transforms_first_box(const struct shard_transforms *a,
                            const struct shard_transforms_draws *d, uint32_t *left, uint32_t *top,
                            uint32_t *width, uint32_t *height);

/* Draws for an input that is the region of the image d was drawn for whose
 * first pixel is (left, top), width x height, holding the first step's box
 * (sk_transforms_first_box): the same choices, the box moved into the region. */
void sk_transforms_draws_in_region(struct shard_transforms_draws *d, uint32_t left, uint32_t top,
                                   uint32_t width, uint32_t height);

/* shard_transforms_apply writing uint8 RGB, row-major (NHWC), whatever
 * a's layout and dtype: a second image of the sample (an IMAGE field's)
 * through the same crops, resizes and flips as its image, not normalised. */
int sk_transforms_apply_rgb(const struct shard_transforms *a, const struct shard_image *src,
                            const struct shard_transforms_draws *draws,
                            struct shard_transforms_workspace *w, void *dst, struct shard_err *err);

/* shard_transforms_boxes, also telling which boxes stay: keep[i] is 1 when
 * box i is written out, else 0 (keep may be NULL). */
size_t sk_transforms_boxes_keep(const struct shard_transforms *a,
                                const struct shard_transforms_draws *d, double dx, double dy,
                                double min_size, const uint8_t *in, size_t n, uint8_t *out,
                                uint8_t *keep);

#endif
