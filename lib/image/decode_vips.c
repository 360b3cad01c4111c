/* decode_vips.c - WebP, TIFF and GIF to 8-bit RGB through libvips 8.14, and
 * shard_decode(), the decoder of source images, which reaches them.
 *
 * shard_decode and shard_decode_ex live here, beside the only code that
 * uses libvips, so that whatever calls them links libvips and nothing else
 * does: record payloads (JPEG, PNG, raw) are decoded through sk_decode_image
 * without this file, and the reader's archive leaves it out.
 *
 * Each format goes to its own loader (the one our sniffer chose, not
 * whatever libvips would guess), opened with fail_on=error so truncation and
 * decoder errors fail instead of giving a partly grey image.  Only the header
 * is read at first, so the size is checked against max_pixels before any
 * pixel is decoded.  Then: EXIF autorotation, conversion to sRGB, alpha
 * flattened onto the background, 8-bit, the first 3 bands; GIF and TIFF give
 * their first frame/page only (the loaders' default).
 *
 * Error text: libvips keeps one process-wide error buffer.  Under OpenMP,
 * another thread's failure can land in it between our failure and our read,
 * so its text could name the wrong image; our reasons therefore say only
 * which stage failed, and we clear the buffer so it does not grow stale.
 *
 * The libvips process setup (vips_ready_for_us) runs once, under pthread_once:
 * untrusted loaders blocked (ImageMagick, and with it BMP), no libvips
 * threads of its own (we run inside OpenMP's threads), operation cache off.
 */
#include "image/decode_internal.h"

#include <pthread.h>
#include <string.h>

#include <vips/vips.h>

#define RGB_CHANNELS 3
#define MAX_ALPHA_8BIT 255.0
/* Intermediate images of one decode, all owned by one context object. */
enum step { STEP_LOAD, STEP_ROTATE, STEP_SRGB, STEP_UCHAR, STEP_FLAT, STEP_BANDS, STEP_COUNT };

static pthread_once_t vips_once = PTHREAD_ONCE_INIT;
static int vips_ready; /* written only inside vips_once */

/* The library never prints: libvips (and libtiff, libwebp through it) report
 * damaged input as GLib warnings on stderr, while our caller already gets the
 * failure with its reason. */
static void drop_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer user)
{
    (void)domain, (void)level, (void)message, (void)user;
}

static void start_vips(void)
{
    g_log_set_handler("VIPS",
                      G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO |
                          G_LOG_LEVEL_DEBUG,
                      drop_log, NULL);
    if (VIPS_INIT("shardkit"))
        return;
    vips_block_untrusted_set(TRUE);
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    vips_ready = 1;
}

static int vips_ready_for_us(struct shard_err *err)
{
    pthread_once(&vips_once, start_vips);
    if (!vips_ready) {
        vips_error_clear();
        return shard_err_set(err, SHARD_EUNSUPPORTED, "unsupported: libvips cannot start");
    }
    return SHARD_OK;
}

/* Open the loader for `format`; reads the header only.  0 or SHARD_ECORRUPT
 * (no message: the caller names the format). */
static int load_header(enum shard_image_format format, const uint8_t *data, size_t len,
                       VipsImage **out)
{
    /* The loaders read the buffer and never write it; their API is not const. */
    void *buf = (void *)data;
    int failed;
    switch (format) {
    case SHARD_FORMAT_WEBP:
        failed = vips_webpload_buffer(buf, len, out, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
        break;
    case SHARD_FORMAT_TIFF:
        failed = vips_tiffload_buffer(buf, len, out, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
        break;
    case SHARD_FORMAT_GIF:
        failed = vips_gifload_buffer(buf, len, out, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
        break;
    default: failed = 1;
    }
    return failed ? SHARD_ECORRUPT : SHARD_OK;
}

static int flatten(VipsImage *in, VipsImage **out, const uint8_t background[3])
{
    VipsArrayDouble *bg = vips_array_double_newv(3, (double)background[0], (double)background[1],
                                                 (double)background[2]);
    int rc = vips_flatten(in, out, "background", bg, "max_alpha", MAX_ALPHA_8BIT, NULL);
    vips_area_unref(VIPS_AREA(bg));
    return rc;
}

/* The libvips pipeline from the header to 8-bit sRGB without alpha.
 * t[] is owned by the caller's context.  0 or SHARD_EUNSUPPORTED (a libvips
 * error: a colour layout it cannot convert; no message). */
static int to_rgb8(VipsImage **t, const uint8_t background[3], VipsImage **result)
{
    VipsImage *cur = t[STEP_LOAD];
    if (vips_autorot(cur, &t[STEP_ROTATE], NULL))
        return SHARD_EUNSUPPORTED;
    cur = t[STEP_ROTATE];
    if (vips_image_get_interpretation(cur) != VIPS_INTERPRETATION_sRGB) {
        if (vips_colourspace(cur, &t[STEP_SRGB], VIPS_INTERPRETATION_sRGB, NULL))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_SRGB];
    }
    if (vips_image_get_format(cur) != VIPS_FORMAT_UCHAR) {
        if (vips_cast_uchar(cur, &t[STEP_UCHAR], NULL))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_UCHAR];
    }
    if (vips_image_hasalpha(cur)) {
        if (flatten(cur, &t[STEP_FLAT], background))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_FLAT];
    }
    if (vips_image_get_bands(cur) != RGB_CHANNELS ||
        vips_image_get_format(cur) != VIPS_FORMAT_UCHAR) {
        VipsImage *bands;
        if (vips_extract_band(cur, &bands, 0, "n", RGB_CHANNELS, NULL))
            return SHARD_EUNSUPPORTED;
        int rc = vips_cast_uchar(bands, &t[STEP_BANDS], NULL);
        g_object_unref(bands);
        if (rc)
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_BANDS];
    }
    *result = cur;
    return SHARD_OK;
}

/* The libvips pipeline from the header to the image's own form: grey or
 * colour (any other colour space becomes sRGB), its alpha kept, 8 or 16
 * bits (any other sample format becomes 8 bits), extra bands dropped.
 * Errors as to_rgb8. */
static int to_native(VipsImage **t, VipsImage **result)
{
    VipsImage *cur = t[STEP_LOAD];
    if (vips_autorot(cur, &t[STEP_ROTATE], NULL))
        return SHARD_EUNSUPPORTED;
    cur = t[STEP_ROTATE];
    VipsInterpretation in = vips_image_get_interpretation(cur);
    int grey = in == VIPS_INTERPRETATION_B_W || in == VIPS_INTERPRETATION_GREY16;
    int wide = vips_image_get_format(cur) == VIPS_FORMAT_USHORT;
    if (!grey && in != VIPS_INTERPRETATION_sRGB && in != VIPS_INTERPRETATION_RGB16) {
        VipsInterpretation to = wide ? VIPS_INTERPRETATION_RGB16 : VIPS_INTERPRETATION_sRGB;
        if (vips_colourspace(cur, &t[STEP_SRGB], to, NULL))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_SRGB];
    }
    VipsBandFormat format = vips_image_get_format(cur);
    if (format != VIPS_FORMAT_UCHAR && format != VIPS_FORMAT_USHORT) {
        if (vips_cast_uchar(cur, &t[STEP_UCHAR], NULL))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_UCHAR];
    }
    int want = (grey ? 1 : RGB_CHANNELS) + (vips_image_hasalpha(cur) ? 1 : 0);
    if (vips_image_get_bands(cur) < want)
        return SHARD_EUNSUPPORTED;
    if (vips_image_get_bands(cur) != want) {
        if (vips_extract_band(cur, &t[STEP_BANDS], 0, "n", want, NULL))
            return SHARD_EUNSUPPORTED;
        cur = t[STEP_BANDS];
    }
    *result = cur;
    return SHARD_OK;
}

static int decode_with(VipsImage *context, enum shard_image_format format, const uint8_t *data,
                       size_t len, const struct shard_decode_options *o, struct shard_image *out,
                       struct shard_err *err)
{
    const char *label = sk_format_label(format);
    VipsImage **t = (VipsImage **)vips_object_local_array(VIPS_OBJECT(context), STEP_COUNT);
    int rc = load_header(format, data, len, &t[STEP_LOAD]);
    if (rc)
        return shard_err_set(err, rc, "corrupt %s: cannot read the header", label);
    rc = sk_decode_check_pixels((uint32_t)vips_image_get_width(t[STEP_LOAD]),
                                (uint32_t)vips_image_get_height(t[STEP_LOAD]), o, err);
    if (rc)
        return rc;

    VipsImage *rgb;
    if ((rc = sk_decode_wants_rgb8(o) ? to_rgb8(t, o->background, &rgb) : to_native(t, &rgb)))
        return shard_err_set(err, rc, "unsupported: %s colour layout", label);
    uint32_t w = (uint32_t)vips_image_get_width(rgb), h = (uint32_t)vips_image_get_height(rgb);
    rc = shard_image_alloc_form(out, w, h, (uint32_t)vips_image_get_bands(rgb),
                                vips_image_get_format(rgb) == VIPS_FORMAT_USHORT ? 16 : 8, err);
    if (rc)
        return rc;
    /* the pixels are decoded here */
    size_t size = 0;
    void *pixels = vips_image_write_to_memory(rgb, &size);
    if (!pixels)
        return shard_err_set(err, SHARD_ECORRUPT, "corrupt %s: cannot decode the pixels", label);
    if (size != (size_t)h * out->stride) {
        g_free(pixels);
        return shard_err_set(err, SHARD_ECORRUPT, "corrupt %s: unexpected pixel count", label);
    }
    memcpy(out->pixels, pixels, size);
    g_free(pixels);
    return SHARD_OK;
}

/* WebP, TIFF and GIF (first frame), EXIF orientation applied: the
 * sk_format_decoder that shard_decode gives sk_decode_image. */
static int decode_vips(enum shard_image_format format, const uint8_t *data, size_t len,
                       const struct shard_decode_options *o, struct shard_image *out,
                       struct shard_err *err)
{
    int rc = vips_ready_for_us(err);
    if (rc)
        return rc;
    VipsImage *context = vips_image_new();
    if (!context)
        return shard_err_set(err, SHARD_ENOMEM, "cannot create a libvips image");
    rc = decode_with(context, format, data, len, o, out, err);
    g_object_unref(context);
    if (rc)
        vips_error_clear();
    return rc;
}

int shard_decode(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                 struct shard_image *out, struct shard_err *err)
{
    return sk_decode_image(data, len, o, out, NULL, decode_vips, err);
}

int shard_decode_ex(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                    struct shard_image *out, struct shard_decode_info *info, struct shard_err *err)
{
    return sk_decode_image(data, len, o, out, info, decode_vips, err);
}
