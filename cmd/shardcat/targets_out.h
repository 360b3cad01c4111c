/* targets_out.h - boxes and masks (format version 2) as files a person can
 * read, and drawn on their image (shardcat --draw).
 *
 * A boxes value becomes JSON: one object a box, {"box": [x0, y0, x1, y1],
 * "class": ID, "name": its class name, "crowd": bool}, in stored order,
 * coordinates as short as read back to the stored float32.  A mask becomes
 * a grey PNG of its values (8-bit, or 16-bit for 2-byte values): the class
 * ids themselves, as a mask sidecar holds them.  Drawing paints, on the
 * sample's pixels, each mask's outlines (a pixel whose class differs from
 * its right or lower neighbour's, in the colour of the class other than 0)
 * and then each box's outline (its first and last columns and rows), each
 * class in its own colour (targets_class_colour). */
#ifndef SHARDCAT_TARGETS_OUT_H
#define SHARDCAT_TARGETS_OUT_H

#include "shardkit.h"

/* Append a boxes value of field d as JSON (and a newline) to out. */
int targets_boxes_json(const struct shard_field_decl *d, const uint8_t *value, size_t len,
                       struct shard_buf *out, struct shard_err *err);

/* Append a mask value as a grey PNG to out. */
int targets_mask_png(const uint8_t *value, size_t len, struct shard_buf *out,
                     struct shard_err *err);

/* The colour boxes and outlines of class `id` are drawn in. */
void targets_class_colour(uint32_t id, uint8_t rgb[3]);

/* Draw the boxes and mask outlines of `it` (of the dataset whose manifest
 * is m) on img, an RGB copy of its pixels. */
void targets_draw(const struct shard_manifest *m, const struct shard_item *it,
                  struct shard_image *img);

#endif
