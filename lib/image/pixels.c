/* pixels.c - pixel forms: their names, the widest of two, and converting an
 * image from one form to another (channels 1..4, 8 or 16 bits). */
#include "shardkit/image.h"
#include "image/image_internal.h"

#include <string.h>

/* clang-format off */
static const char *const pixel_names[] = {
    [SHARD_PIXELS_GRAY] = "gray",
    [SHARD_PIXELS_GRAY_ALPHA] = "gray-alpha",
    [SHARD_PIXELS_RGB] = "rgb",
    [SHARD_PIXELS_RGBA] = "rgba",
};
/* clang-format on */

int shard_pixels_parse(const char *s, uint32_t *channels)
{
    if (!strcmp(s, "auto")) {
        *channels = SHARD_PIXELS_AUTO;
        return SHARD_OK;
    }
    for (uint32_t c = SHARD_PIXELS_GRAY; c <= SHARD_PIXELS_RGBA; c++)
        if (!strcmp(s, pixel_names[c])) {
            *channels = c;
            return SHARD_OK;
        }
    return SHARD_EINVAL;
}

const char *shard_pixels_name(uint32_t channels)
{
    if (channels == SHARD_PIXELS_AUTO)
        return "auto";
    if (channels >= SHARD_PIXELS_GRAY && channels <= SHARD_PIXELS_RGBA)
        return pixel_names[channels];
    return "unknown";
}

int shard_depth_parse(const char *s, uint32_t *depth)
{
    if (!strcmp(s, "auto"))
        *depth = SHARD_DEPTH_AUTO;
    else if (!strcmp(s, "8"))
        *depth = 8;
    else if (!strcmp(s, "16"))
        *depth = 16;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

static int has_colour(uint32_t c)
{
    return c >= SHARD_PIXELS_RGB;
}

static int has_alpha(uint32_t c)
{
    return c == SHARD_PIXELS_GRAY_ALPHA || c == SHARD_PIXELS_RGBA;
}

void sk_pixels_widest(uint32_t c1, uint32_t d1, uint32_t c2, uint32_t d2, uint32_t *channels,
                      uint32_t *depth)
{
    int colour = has_colour(c1) || has_colour(c2), alpha = has_alpha(c1) || has_alpha(c2);
    *channels = (colour ? SHARD_PIXELS_RGB : SHARD_PIXELS_GRAY) + (alpha ? 1 : 0);
    *depth = d1 == 16 || d2 == 16 ? 16 : 8;
}

/* ---- conversion ----------------------------------------------------------- */

static inline uint32_t load(const uint8_t *row, size_t i, int wide)
{
    if (!wide)
        return row[i];
    uint16_t v;
    memcpy(&v, row + 2 * i, 2);
    return v;
}

static inline void store(uint8_t *row, size_t i, int wide, uint32_t v)
{
    if (!wide) {
        row[i] = (uint8_t)v;
        return;
    }
    uint16_t s = (uint16_t)v;
    memcpy(row + 2 * i, &s, 2);
}

/* v (of maximum `from_max`) at the maximum `to_max`, rounded (8 <-> 16 bits). */
static inline uint32_t rescale(uint32_t v, uint32_t from_max, uint32_t to_max)
{
    if (from_max == to_max)
        return v;
    if (to_max > from_max)
        return v * (to_max / from_max); /* 255 * 257 = 65535: exact */
    return (v * to_max + from_max / 2) / from_max;
}

/* over a background b of colour v with alpha a, all at maximum m */
static inline uint32_t over(uint32_t v, uint32_t a, uint32_t b, uint32_t m)
{
    return (uint32_t)(((uint64_t)v * a + (uint64_t)b * (m - a) + m / 2) / m);
}

static inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b)
{
    return (uint32_t)(((uint64_t)r * 299 + (uint64_t)g * 587 + (uint64_t)b * 114 + 500) / 1000);
}

int shard_image_convert(const struct shard_image *src, uint32_t channels, uint32_t depth,
                        const uint8_t background[3], struct shard_image *dst, struct shard_err *err)
{
    uint32_t sc = src->channels, sd = src->depth == 16 ? 16 : 8;
    if (sc < 1 || sc > SHARD_PIXELS_RGBA)
        return shard_err_set(err, SHARD_EINVAL, "cannot convert an image of %u channels", sc);
    int rc = shard_image_alloc_form(dst, src->width, src->height, channels, depth, err);
    if (rc)
        return rc;
    const int swide = sd == 16, dwide = depth == 16;
    const uint32_t m = swide ? 65535 : 255, dm = dwide ? 65535 : 255;
    uint32_t bg[3];
    for (int i = 0; i < 3; i++)
        bg[i] = rescale(background ? background[i] : 255, 255, m);
    const int s_alpha = has_alpha(sc), d_alpha = has_alpha(channels);
    const int s_colour = has_colour(sc), d_colour = has_colour(channels);
    const uint32_t s_colours = s_colour ? 3 : 1, d_colours = d_colour ? 3 : 1;
    for (uint32_t y = 0; y < src->height; y++) {
        const uint8_t *in = src->pixels + (size_t)y * src->stride;
        uint8_t *out = dst->pixels + (size_t)y * dst->stride;
        for (uint32_t x = 0; x < src->width; x++) {
            size_t si = (size_t)x * sc, di = (size_t)x * channels;
            uint32_t v[3], a = s_alpha ? load(in, si + s_colours, swide) : m;
            for (uint32_t c = 0; c < 3; c++)
                v[c] = load(in, si + (s_colour ? c : 0), swide);
            if (s_alpha && !d_alpha)
                for (uint32_t c = 0; c < 3; c++)
                    v[c] = over(v[c], a, s_colour ? bg[c] : bg[0], m);
            if (d_colour)
                for (uint32_t c = 0; c < 3; c++)
                    store(out, di + c, dwide, rescale(v[c], m, dm));
            else
                store(out, di, dwide, rescale(s_colour ? luma(v[0], v[1], v[2]) : v[0], m, dm));
            if (d_alpha)
                store(out, di + d_colours, dwide, rescale(a, m, dm));
        }
    }
    return SHARD_OK;
}
