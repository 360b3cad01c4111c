/* record_build.h - converting one source image into one record (private).
 * A record_builder holds everything one thread reuses from sample to sample:
 * decoder options, pixel buffers, payload buffer and a zstd context.  The
 * conversion (lib/convert) runs it, and shardcheck --fidelity (lib/verify)
 * re-runs it on sampled sources. */
#ifndef SHARDKIT_RECORD_BUILD_H
#define SHARDKIT_RECORD_BUILD_H

#include "shardkit/format.h"
#include "shardkit/manifest.h"

struct record_builder;

int sk_record_builder_new(struct record_builder **out, const struct shard_config *c,
                          struct shard_err *err);
void sk_record_builder_free(struct record_builder *w);

/* Where a source image's pixels went in its stored image: what boxes and
 * masks drawn on the source must go through to stay on their pixels. */
struct sk_placement {
    int orientation;             /* EXIF orientation applied (1: none) */
    uint32_t stored_w, stored_h; /* the source's pixel array before orientation (the
                                  * frame COCO's width and height describe) */
    uint32_t source_w, source_h; /* upright: the geometry's input */
    struct shard_geometry g;     /* resample to scaled, keep the crop window */
};

/* Decode `data` in the config's pixel form (config.channels and .depth:
 * the source's own where they say auto; a JPEG payload's form is grey or
 * RGB of 8 bits, alpha composited over the background), resize and crop
 * per the config, and encode the payload into `payload`; *stored gets the
 * stored image's size and form (width, height, channels, depth; codec the
 * config's).  On failure err holds the reason (no file name) and the sample
 * is to be rejected.  `warning` (SHARD_ERRMSG_SIZE bytes, or NULL) receives
 * "" or the decoder warning the image was accepted despite.  `place`
 * (NULL: not wanted) receives where the source's pixels went. */
int sk_record_build(struct record_builder *w, const uint8_t *data, size_t len,
                    struct shard_buf *payload, struct shard_record_meta *stored, char *warning,
                    struct sk_placement *place, struct shard_err *err);

/* Wrap a payload of the image `stored` describes (width, height, channels,
 * depth; its label and codec are not read) into a record frame: of format
 * version 2 with the field area `fields` (NULL: none present) when the
 * config declares fields, else of version 1 (fields must then be NULL). */
int sk_record_build_frame(struct record_builder *w, const char *key, size_t key_len, int32_t label,
                          const struct shard_record_meta *stored, const uint8_t *payload,
                          size_t payload_len, const struct shard_field_set *fields,
                          struct shard_buf *frame, uint64_t *frame_xxh3, struct shard_err *err);

#endif
