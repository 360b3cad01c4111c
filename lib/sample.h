/* sample.h - converting one source image into one record (private).
 * A sample_worker holds everything one thread reuses from sample to sample:
 * decoder options, pixel buffers, payload buffer and a zstd context. */
#ifndef SHARDKIT_SAMPLE_H
#define SHARDKIT_SAMPLE_H

#include "shardkit/format.h"
#include "shardkit/manifest.h"

struct sample_worker;

int sample_worker_new(struct sample_worker **out, const struct shard_config *c,
                      struct shard_err *err);
void sample_worker_free(struct sample_worker *w);

/* Decode `data`, resize and crop per the config, and encode the payload into
 * `payload`.  On failure err holds the reason (no file name) and the sample
 * is to be rejected. */
int sample_convert(struct sample_worker *w, const uint8_t *data, size_t len,
                   struct shard_buf *payload, uint32_t *width, uint32_t *height,
                   struct shard_err *err);

/* Wrap a payload into a record frame. */
int sample_frame(struct sample_worker *w, const char *key, size_t key_len, int32_t label,
                 uint32_t width, uint32_t height, const uint8_t *payload, size_t payload_len,
                 struct shard_buf *frame, uint64_t *frame_xxh3, struct shard_err *err);

#endif
