/* image.c - pixel buffers, output geometry and the names of fits and codecs. */
#include "shardkit/image.h"
#include "image/image_internal.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void *) != 8 || sizeof(struct shard_decode_options) == 40,
               "struct shard_decode_options keeps shardkit 0.1.0's size");

static int alloc_bytes(struct shard_image *img, uint32_t w, uint32_t h, uint32_t channels,
                       uint32_t depth, struct shard_err *err)
{
    size_t pixel = (size_t)channels * (depth == 16 ? 2 : 1);
    size_t stride = (size_t)w * pixel; /* cannot overflow: both < 2^32, size_t is 64-bit */
    if (stride / pixel != w || (size_t)h > SIZE_MAX / stride)
        return shard_err_set(err, SHARD_ELIMIT, "image %ux%u is too large", w, h);
    size_t bytes = stride * h;
    if (bytes > img->capacity) {
        /* No realloc: the old contents are not needed and copying them costs. */
        free(img->pixels ? img->pixels - img->offset : NULL);
        img->pixels = malloc(bytes);
        img->capacity = img->pixels ? bytes : 0;
        img->offset = 0;
        if (!img->pixels) {
            img->width = img->height = img->channels = 0;
            img->stride = 0;
            return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %ux%u image", w, h);
        }
    }
    img->width = w;
    img->height = h;
    img->channels = channels;
    img->depth = depth;
    img->stride = stride;
    return SHARD_OK;
}

int shard_image_alloc(struct shard_image *img, uint32_t w, uint32_t h, uint32_t channels,
                      struct shard_err *err)
{
    if (w == 0 || h == 0 || channels == 0)
        return shard_err_set(err, SHARD_EINVAL, "empty image %ux%u", w, h);
    return alloc_bytes(img, w, h, channels, 8, err);
}

int shard_image_alloc_form(struct shard_image *img, uint32_t w, uint32_t h, uint32_t channels,
                           uint32_t depth, struct shard_err *err)
{
    if (w == 0 || h == 0)
        return shard_err_set(err, SHARD_EINVAL, "empty image %ux%u", w, h);
    if (channels < 1 || channels > SHARD_PIXELS_RGBA || (depth != 8 && depth != 16))
        return shard_err_set(err, SHARD_EINVAL, "no pixel form of %u channels of %u bits", channels,
                             depth);
    return alloc_bytes(img, w, h, channels, depth, err);
}

uint32_t sk_image_sample_bytes(const struct shard_image *img)
{
    return img->depth == 16 ? 2 : 1;
}

void shard_image_release(struct shard_image *img)
{
    if (!img)
        return;
    free(img->pixels ? img->pixels - img->offset : NULL);
    memset(img, 0, sizeof *img);
}

int shard_fit_parse(const char *s, enum shard_fit *out)
{
    if (!strcmp(s, "short"))
        *out = SHARD_FIT_SHORT;
    else if (!strcmp(s, "long"))
        *out = SHARD_FIT_LONG;
    else if (!strcmp(s, "crop"))
        *out = SHARD_FIT_CROP;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

const char *shard_fit_name(enum shard_fit f)
{
    switch (f) {
    case SHARD_FIT_SHORT: return "short";
    case SHARD_FIT_LONG: return "long";
    case SHARD_FIT_CROP: return "crop";
    }
    return "unknown";
}

int shard_codec_parse(const char *s, enum shard_codec *out)
{
    if (!strcmp(s, "raw"))
        *out = SHARD_CODEC_RAW;
    else if (!strcmp(s, "jpeg"))
        *out = SHARD_CODEC_JPEG;
    else if (!strcmp(s, "png"))
        *out = SHARD_CODEC_PNG;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

const char *shard_codec_name(enum shard_codec c)
{
    switch (c) {
    case SHARD_CODEC_RAW: return "raw";
    case SHARD_CODEC_JPEG: return "jpeg";
    case SHARD_CODEC_PNG: return "png";
    }
    return "unknown";
}

/* other * size / side, rounded down, within 1..UINT32_MAX (a sliver such as
 * 1x8388611 scaled up would not fit 32 bits; --max-pixels refuses it later). */
static uint32_t scale_side(uint32_t other, uint32_t size, uint32_t side)
{
    uint64_t v = (uint64_t)other * size / side;
    return v == 0 ? 1 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int shard_geometry_compute(uint32_t w, uint32_t h, uint32_t size, enum shard_fit fit, int upscale,
                           struct shard_geometry *g)
{
    if (w == 0 || h == 0 || size == 0)
        return SHARD_EINVAL;
    memset(g, 0, sizeof *g);
    int wide = w >= h;
    uint32_t side = fit == SHARD_FIT_LONG ? (wide ? w : h) : (wide ? h : w);

    if (side == size || (!upscale && side < size)) {
        g->scaled_w = w;
        g->scaled_h = h;
    } else if (fit == SHARD_FIT_LONG ? wide : !wide) {
        /* the width is the side being set */
        g->scaled_w = size;
        g->scaled_h = scale_side(h, size, w);
    } else {
        g->scaled_h = size;
        g->scaled_w = scale_side(w, size, h);
    }
    g->out_w = g->scaled_w;
    g->out_h = g->scaled_h;
    if (fit == SHARD_FIT_CROP) {
        g->out_w = g->scaled_w < size ? g->scaled_w : size;
        g->out_h = g->scaled_h < size ? g->scaled_h : size;
        if (g->out_w > g->out_h)
            g->out_w = g->out_h; /* no upscale and a small image: keep a square */
        if (g->out_h > g->out_w)
            g->out_h = g->out_w;
        /* centred; an odd leftover pixel goes to the right/bottom */
        g->crop_x = (g->scaled_w - g->out_w) / 2;
        g->crop_y = (g->scaled_h - g->out_h) / 2;
    }
    return SHARD_OK;
}
