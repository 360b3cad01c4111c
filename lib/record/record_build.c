/* record_build.c - one source image to one record: decode, resize, encode, frame. */
#include "record/record_build.h"

#include <stdlib.h>
#include <string.h>

#include "shardkit/image.h"
#include "manifest/manifest_internal.h"

struct record_builder {
    const struct shard_config *config;
    struct shard_decode_options decode;
    struct shard_image decoded;
    struct shard_image converted; /* decoded, in a form the codec stores */
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
    /* the form asked for; a JPEG payload is at most 8-bit RGB (stored_form) */
    w->decode.channels = (uint8_t)c->channels;
    w->decode.depth = (uint8_t)c->depth;
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
    shard_image_release(&w->converted);
    shard_image_release(&w->scratch);
    shard_image_release(&w->out);
    shard_record_encoder_free(w->encoder);
    free(w);
}

/* The decoded image in a form the codec stores: JPEG has neither alpha
 * (composited over the background) nor 16 bits.  *img is w->decoded, or
 * w->converted holding it converted. */
static int stored_form(struct record_builder *w, const struct shard_image **img,
                       struct shard_err *err)
{
    const struct shard_image *d = &w->decoded;
    *img = d;
    if (w->config->codec != SHARD_CODEC_JPEG ||
        ((d->channels == 1 || d->channels == 3) && d->depth != 16))
        return SHARD_OK;
    uint32_t channels = d->channels >= SHARD_PIXELS_RGB ? SHARD_PIXELS_RGB : SHARD_PIXELS_GRAY;
    *img = &w->converted;
    return shard_image_convert(d, channels, 8, w->config->background, &w->converted, err);
}

int sk_record_build(struct record_builder *w, const uint8_t *data, size_t len,
                    struct shard_buf *payload, struct shard_record_meta *stored, char *warning,
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
    const struct shard_image *img;
    if ((rc = stored_form(w, &img, err)))
        return rc;
    rc = shard_geometry_apply_decoded(img, &info, &g, &w->scratch, &w->out, err);
    if (rc)
        return rc;
    rc = shard_encode(&w->out, c->codec, c->quality, payload, err);
    if (rc)
        return rc;
    *stored = (struct shard_record_meta){.label = SHARD_NO_LABEL,
                                         .width = w->out.width,
                                         .height = w->out.height,
                                         .channels = w->out.channels,
                                         .codec = c->codec,
                                         .depth = w->out.depth == 16 ? 16 : 8};
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
                          const struct shard_record_meta *stored, const uint8_t *payload,
                          size_t payload_len, const struct shard_field_set *fields,
                          struct shard_buf *frame, uint64_t *frame_xxh3, struct shard_err *err)
{
    struct shard_record_meta meta = {
        .label = label,
        .width = stored->width,
        .height = stored->height,
        .channels = stored->channels,
        .codec = w->config->codec,
        .depth = stored->depth,
    };
    if (sk_config_format_version(w->config) == SHARD_FORMAT_VERSION_FIELDS)
        return shard_record_encode_fields(w->encoder, &meta, (const uint8_t *)key, key_len, payload,
                                          payload_len, fields, frame, frame_xxh3, err);
    return shard_record_encode(w->encoder, &meta, (const uint8_t *)key, key_len, payload,
                               payload_len, frame, frame_xxh3, err);
}
