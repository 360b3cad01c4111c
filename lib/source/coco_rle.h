/* coco_rle.h - COCO's run-length encoded masks: from polygons, from the
 * compressed string and from the plain counts of the "segmentation" of an
 * annotation, and painted into a mask of class ids (private).
 *
 * The encoding and the polygon rasteriser are those of the COCO API
 * (pycocotools' common/maskApi.c, Piotr Dollar and Tsung-Yi Lin, 2015,
 * Simplified BSD License: see coco_rle.c), so a mask made here has the
 * pixels pycocotools' annToMask gives; what changed is that hostile input
 * is refused instead of trusted (counts that do not cover the image exactly,
 * strings that do not decode, sizes that overflow). */
#ifndef SHARDKIT_COCO_RLE_H
#define SHARDKIT_COCO_RLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "shardkit/image.h"

/* A binary mask of h x w, column-major (COCO's order): runs of 0s and 1s
 * alternating, starting with 0s; the counts sum to h * w. */
struct sk_rle {
    uint64_t h, w;
    uint64_t *counts;
    size_t count;
};

void sk_rle_release(struct sk_rle *r); /* accepts NULL and a zeroed one */

/* rleFrPoly: the polygon of k points xy[0..2k) (x, y, x, y, ...), the
 * points finite.  0, SHARD_ECORRUPT (a polygon too long to rasterise) or
 * SHARD_ENOMEM. */
int sk_rle_from_polygon(const double *xy, size_t k, uint64_t h, uint64_t w, struct sk_rle *r,
                        struct shard_err *why);
/* rleFrString: COCO's compressed counts (LEB128-like, 6 bits a character
 * from '0').  0, SHARD_ECORRUPT or SHARD_ENOMEM. */
int sk_rle_from_string(const char *s, uint64_t h, uint64_t w, struct sk_rle *r,
                       struct shard_err *why);
/* The plain counts (a JSON array of non-negative integers) of a crowd
 * annotation.  0, SHARD_ECORRUPT or SHARD_ENOMEM. */
int sk_rle_from_counts(const json_t *counts, uint64_t h, uint64_t w, struct sk_rle *r,
                       struct shard_err *why);

/* Set every pixel of r's 1s to `value` in mask (r->w x r->h, row-major,
 * mask->channels bytes per value, little-endian). */
void sk_rle_paint(const struct sk_rle *r, uint32_t value, struct shard_image *mask);

#endif
