/* record_internal.h - what lib/ files share about record decoders (private). */
#ifndef SHARDKIT_RECORD_INTERNAL_H
#define SHARDKIT_RECORD_INTERNAL_H

#include "shardkit/format.h"

/* A buffer owned by the decoder for the caller to read a frame into before
 * decoding it with the same decoder (the frame and its content are separate
 * buffers, so decoding does not clobber the frame). */
struct shard_buf *sk_record_decoder_frame(struct shard_record_decoder *dec);

/* shard_record_decode, decompressing into `content` (grown as needed, with
 * shard_buf_reserve) instead of the decoder's own buffer: the view then
 * points into `content`.  A raw read uses it to decompress straight into the
 * memory its pixels will be read from. */
int sk_record_decode_into(struct shard_record_decoder *dec, const uint8_t *frame, size_t frame_len,
                          const uint64_t *expect_xxh3, struct shard_record_view *view,
                          struct shard_buf *content, struct shard_err *err);

/* Check a version 2 record's field area of `len` bytes holding `count`
 * entries (see shardkit/format.h, "Fields"): 0 or SHARD_ECORRUPT with the
 * reason. */
int sk_fields_check_area(const uint8_t *area, uint64_t len, uint32_t count, struct shard_err *err);

/* One mask of an INSTANCES value (`runs` run lengths, u32 each at `counts`,
 * of 0 and 1 in turn over w x h pixels in column-major order) into dst: h
 * rows of w bytes, `stride` apart, 1 inside and 0 elsewhere.  The runs were
 * checked (shard_field_instances_decode, shard_field_check_image). */
void sk_instance_fill(const uint8_t *counts, uint32_t runs, uint32_t w, uint32_t h, uint8_t *dst,
                      size_t stride);

#endif
