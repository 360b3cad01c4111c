/* record_build.c - one source image to one record: decode, resize, encode, frame. */
#include "record/record_build.h"

#include <stdlib.h>
#include <string.h>

#include "shardkit/image.h"

struct record_builder {
    const struct shard_config *config;
    struct shard_decode_options decode;
    struct shard_image decoded;
    struct shard_image scratch;
    struct shard_image out;
    struct shard_record_encoder *encoder;
};

int sk_record_builder_new(struct record_builder **out, const struct shard_config *c,
                          struct shard_err *err)
{
    *out = NULL;
    struct record_builder *w = calloc(1, sizeof *w);
    if (!w)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    w->config = c;
    shard_decode_options_init(&w->decode);
    w->decode.max_pixels = c->max_pixels;
    w->decode.max_file_bytes = c->max_file_bytes;
    w->decode.target = c->size;
    w->decode.fit = c->fit;
    for (int i = 0; i < 3; i++)
        w->decode.background[i] = c->background[i];
    int rc = shard_record_encoder_new(&w->encoder, c->zstd_level, err);
    if (rc) {
        free(w);
        return rc;
    }
    *out = w;
    return SHARD_OK;
}

void sk_record_builder_free(struct record_builder *w)
{
    if (!w)
        return;
    shard_image_release(&w->decoded);
    shard_image_release(&w->scratch);
    shard_image_release(&w->out);
    shard_record_encoder_free(w->encoder);
    free(w);
}

int sk_record_build(struct record_builder *w, const uint8_t *data, size_t len,
                    struct shard_buf *payload, uint32_t *width, uint32_t *height, char *warning,
                    struct sk_placement *place, struct shard_err *err)
{
    const struct shard_config *c = w->config;
    struct shard_decode_info info;
    if (warning)
        warning[0] = '\0';
    int rc = shard_decode_ex(data, len, &w->decode, &w->decoded, &info, err);
    if (rc)
        return rc;
    /* geometry from the full size: a DCT-scaled decode is only a head start */
    struct shard_geometry g;
    rc = shard_geometry_compute(info.source_width, info.source_height, c->size, c->fit, c->upscale,
                                &g);
    if (rc)
        return shard_err_set(err, rc, "cannot size a %ux%u image", info.source_width,
                             info.source_height);
    /* A few KB of PNG can hold a 1x60000 sliver whose output, upscaled to
     * the size, is enormous (512x30720000 at --size 512): the output obeys
     * the input's pixel limit, checked before the resampler allocates it. */
    if (c->max_pixels && (uint64_t)g.out_w * g.out_h > c->max_pixels)
        return shard_err_set(err, SHARD_ELIMIT,
                             "%ux%u image would become %ux%u, over "
                             "--max-pixels %llu",
                             info.source_width, info.source_height, g.out_w, g.out_h,
                             (unsigned long long)c->max_pixels);
    rc = shard_geometry_apply_decoded(&w->decoded, &info, &g, &w->scratch, &w->out, err);
    if (rc)
        return rc;
    rc = shard_encode(&w->out, c->codec, c->quality, payload, err);
    if (rc)
        return rc;
    *width = w->out.width;
    *height = w->out.height;
    if (warning)
        memcpy(warning, info.warning, sizeof info.warning);
    if (place) {
        int turned = info.orientation >= 5 && info.orientation <= 8;
        place->orientation = info.orientation;
        place->source_w = info.source_width;
        place->source_h = info.source_height;
        place->stored_w = turned ? info.source_height : info.source_width;
        place->stored_h = turned ? info.source_width : info.source_height;
        place->g = g;
    }
    return SHARD_OK;
}

int sk_record_build_frame(struct record_builder *w, const char *key, size_t key_len, int32_t label,
                          uint32_t width, uint32_t height, const uint8_t *payload,
                          size_t payload_len, const struct shard_field_set *fields,
                          struct shard_buf *frame, uint64_t *frame_xxh3, struct shard_err *err)
{
    struct shard_record_meta meta = {
        .label = label,
        .width = width,
        .height = height,
        .channels = 3,
        .codec = w->config->codec,
    };
    if (shard_config_format_version(w->config) == SHARD_FORMAT_VERSION_FIELDS)
        return shard_record_encode_fields(w->encoder, &meta, (const uint8_t *)key, key_len, payload,
                                          payload_len, fields, frame, frame_xxh3, err);
    return shard_record_encode(w->encoder, &meta, (const uint8_t *)key, key_len, payload,
                               payload_len, frame, frame_xxh3, err);
}
