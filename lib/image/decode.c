/* decode.c - the decoders' common path: limits, dispatch by signature, EXIF
 * orientation.
 *
 * The format decoders live in decode_jpeg.c, decode_png.c and decode_vips.c;
 * sk_decode_image decides which one runs (by the leading bytes, never the
 * file name) and turns the image upright afterwards, so every decoder shares
 * one orientation implementation.  It reaches the libvips decoder only
 * through the pointer its caller passes: shard_decode (decode_vips.c) passes
 * it, the payload decoder (encode.c) does not, so this file and the read path
 * link without libvips.
 */
#include "image/decode_internal.h"
#include "image/image_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_PIXELS 100000000ULL
#define DEFAULT_MAX_FILE_BYTES (1ULL << 30)
#define DEFAULT_MAX_MEMORY (1ULL << 30)

void shard_decode_options_init(struct shard_decode_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_pixels = DEFAULT_MAX_PIXELS;
    o->max_file_bytes = DEFAULT_MAX_FILE_BYTES;
    o->max_memory = DEFAULT_MAX_MEMORY;
    o->target = 0;
    o->fit = SHARD_FIT_SHORT;
    o->background[0] = o->background[1] = o->background[2] = 255;
}

int sk_decode_wants_rgb8(const struct shard_decode_options *o)
{
    return (o->channels == 0 || o->channels == SHARD_PIXELS_RGB) &&
           (o->depth == 0 || o->depth == 8);
}

/* The form o asks for an image decoded in `img`'s own form. */
static void wanted_form(const struct shard_decode_options *o, const struct shard_image *img,
                        uint32_t *channels, uint32_t *depth)
{
    *channels = o->channels == SHARD_PIXELS_AUTO ? img->channels
                : o->channels == 0               ? SHARD_PIXELS_RGB
                                                 : o->channels;
    *depth = o->depth == SHARD_DEPTH_AUTO ? (img->depth == 16 ? 16 : 8) : o->depth == 16 ? 16 : 8;
}

int sk_decode_check_pixels(uint32_t w, uint32_t h, const struct shard_decode_options *o,
                           struct shard_err *err)
{
    if (o->max_pixels && (uint64_t)w * h > o->max_pixels)
        return shard_err_set(err, SHARD_ELIMIT, "declared %ux%u exceeds --max-pixels %llu", w, h,
                             (unsigned long long)o->max_pixels);
    return SHARD_OK;
}

void sk_decode_warning_add(struct decode_warnings *w, const char *text)
{
    if (w->count++ == 0)
        snprintf(w->first, sizeof w->first, "%s", text);
}

void sk_decode_warning_report(const struct decode_warnings *w, const char *label, char *out)
{
    out[0] = '\0';
    if (w->count == 1)
        snprintf(out, SHARD_ERRMSG_SIZE, "%s warning: %s", label, w->first);
    else if (w->count > 1)
        snprintf(out, SHARD_ERRMSG_SIZE, "%s warning: %s (and %u more)", label, w->first,
                 w->count - 1);
}

void sk_decode_copy_reason(char *dst, size_t n, const char *msg)
{
    if (!n)
        return;
    snprintf(dst, n, "%s", msg ? msg : "");
    if (isupper((unsigned char)dst[0]) && islower((unsigned char)dst[1]))
        dst[0] = (char)tolower((unsigned char)dst[0]);
}

/* ---- orientation ---------------------------------------------------------- */

static size_t pixel_bytes(const struct shard_image *img)
{
    return (size_t)img->channels * sk_image_sample_bytes(img);
}

static void swap_pixel(uint8_t *a, uint8_t *b, size_t n)
{
    for (size_t c = 0; c < n; c++) {
        uint8_t t = a[c];
        a[c] = b[c];
        b[c] = t;
    }
}

static void mirror_rows(struct shard_image *img)
{
    size_t px = pixel_bytes(img);
    for (uint32_t y = 0; y < img->height; y++) {
        uint8_t *row = img->pixels + y * img->stride;
        for (uint32_t l = 0, r = img->width - 1; l < r; l++, r--)
            swap_pixel(row + (size_t)l * px, row + (size_t)r * px, px);
    }
}

static void flip_rows(struct shard_image *img)
{
    size_t bytes = (size_t)img->width * pixel_bytes(img);
    for (uint32_t t = 0, b = img->height - 1; t < b; t++, b--) {
        uint8_t *top = img->pixels + t * img->stride;
        uint8_t *bottom = img->pixels + b * img->stride;
        for (size_t i = 0; i < bytes; i++) {
            uint8_t v = top[i];
            top[i] = bottom[i];
            bottom[i] = v;
        }
    }
}

/* Orientations 5..8 swap width and height: output row y' is input column
 * y' (or width-1-y') read downwards or upwards.  With (x', y') an output pixel
 * and w x h the input size:
 *   5 transpose          out(x', y') = in(y', x')
 *   6 rotate 90 cw       out(x', y') = in(y', h-1-x')
 *   7 transverse         out(x', y') = in(w-1-y', h-1-x')
 *   8 rotate 90 ccw      out(x', y') = in(w-1-y', x')                       */
static int transpose_into(const struct shard_image *in, int orientation, struct shard_image *out,
                          struct shard_err *err)
{
    int rc = shard_image_alloc_form(out, in->height, in->width, in->channels,
                                    in->depth == 16 ? 16 : 8, err);
    if (rc)
        return rc;
    size_t px = pixel_bytes(in);
    int upwards = orientation == 6 || orientation == 7;    /* x' walks up the column */
    int from_right = orientation == 7 || orientation == 8; /* y' counts from the right */
    ptrdiff_t step = upwards ? -(ptrdiff_t)in->stride : (ptrdiff_t)in->stride;
    for (uint32_t yo = 0; yo < out->height; yo++) {
        uint32_t xi = from_right ? in->width - 1 - yo : yo;
        const uint8_t *src = in->pixels + (size_t)xi * px +
                             (upwards ? (size_t)(in->height - 1) * in->stride : 0);
        uint8_t *dst = out->pixels + yo * out->stride;
        for (uint32_t xo = 0; xo < out->width; xo++, src += step, dst += px)
            memcpy(dst, src, px);
    }
    return SHARD_OK;
}

/* Turn a decoded image upright according to EXIF orientation 1..8. */
static int apply_orientation(struct shard_image *img, int orientation, struct shard_err *err)
{
    switch (orientation) {
    case 2: /* mirrored */ mirror_rows(img); return SHARD_OK;
    case 3: /* upside down */
        mirror_rows(img);
        flip_rows(img);
        return SHARD_OK;
    case 4: /* flipped vertically */ flip_rows(img); return SHARD_OK;
    case 5:
    case 6:
    case 7:
    case 8: {
        /* Not in place: the result goes to a new buffer that replaces the
         * old one (rotated images are rare, so the copy does not matter). */
        struct shard_image rotated = {0};
        int rc = transpose_into(img, orientation, &rotated, err);
        if (rc) {
            shard_image_release(&rotated);
            return rc;
        }
        shard_image_release(img);
        *img = rotated;
        return SHARD_OK;
    }
    default: return SHARD_OK;
    }
}

/* The picture in a decoded image: `width` x `height` decoded pixels, of which
 * the picture covers [0, extent_w) x [0, extent_h) (less than the whole
 * after a DCT-scaled decode that rounded a side up). */
struct picture_box {
    uint32_t width, height;
    double extent_w, extent_h;
};

/* Where the box lands once apply_orientation turned the image upright
 * (transpose_into's table): a mirrored axis puts the partly covered pixel
 * first, a quarter turn swaps the axes. */
static void box_upright(const struct picture_box *b, int orientation,
                        struct shard_decode_info *info)
{
    int turned = orientation >= 5 && orientation <= 8;
    /* which stored axes run backwards in the upright image */
    int rev_x = orientation == 2 || orientation == 3 || orientation == 7 || orientation == 8;
    int rev_y = orientation == 3 || orientation == 4 || orientation == 6 || orientation == 7;
    double x0 = rev_x ? b->width - b->extent_w : 0, x1 = rev_x ? b->width : b->extent_w;
    double y0 = rev_y ? b->height - b->extent_h : 0, y1 = rev_y ? b->height : b->extent_h;
    if (turned) {
        info->box_x0 = y0, info->box_x1 = y1;
        info->box_y0 = x0, info->box_y1 = x1;
    } else {
        info->box_x0 = x0, info->box_x1 = x1;
        info->box_y0 = y0, info->box_y1 = y1;
    }
}

/* ---- dispatch --------------------------------------------------------------- */

int sk_decode_image(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                    struct shard_image *out, struct shard_decode_info *info,
                    sk_format_decoder *vips, struct shard_err *err)
{
    struct shard_decode_options defaults;
    if (!o) {
        shard_decode_options_init(&defaults);
        o = &defaults;
    }
    if (!out || (!data && len))
        return shard_err_set(err, SHARD_EINVAL, "no input or output image");
    if (o->max_file_bytes && len > o->max_file_bytes)
        return shard_err_set(err, SHARD_ELIMIT, "file of %zu bytes exceeds --max-file-bytes %llu",
                             len, (unsigned long long)o->max_file_bytes);
    if (len == 0)
        return shard_err_set(err, SHARD_ENOTIMAGE, "not an image: empty file");

    enum shard_image_format format = shard_sniff(data, len);
    int orientation = SHARD_ORIENTATION_NORMAL;
    uint32_t source_w = 0, source_h = 0; /* 0: the decoded size (no DCT scaling) */
    unsigned scale_num = SK_JPEG_SCALE_DENOM;
    char warning[SHARD_ERRMSG_SIZE] = "";
    int rc;
    switch (format) {
    case SHARD_FORMAT_JPEG:
        rc = sk_decode_jpeg(data, len, o, out, &orientation, &source_w, &source_h, &scale_num,
                            warning, err);
        break;
    case SHARD_FORMAT_PNG: rc = sk_decode_png(data, len, o, out, &orientation, warning, err); break;
    case SHARD_FORMAT_WEBP:
    case SHARD_FORMAT_TIFF:
    case SHARD_FORMAT_GIF:
        if (!vips)
            return shard_err_set(err, SHARD_EUNSUPPORTED,
                                 "unsupported: %s (decoded by libvips, which the reader "
                                 "does not link)",
                                 sk_format_label(format));
        rc = vips(format, data, len, o, out, err);
        break;
    case SHARD_FORMAT_BMP:
        /* libvips 8.14 reads BMP only through ImageMagick, which is among the
         * loaders blocked as unsafe for untrusted input. */
        return shard_err_set(err, SHARD_EUNSUPPORTED,
                             "unsupported: BMP (no loader hardened for untrusted input)");
    default: return shard_err_set(err, SHARD_ENOTIMAGE, "not an image: unknown signature");
    }
    if (rc)
        return rc;
    uint32_t channels, depth;
    wanted_form(o, out, &channels, &depth);
    if (channels != out->channels || depth != (out->depth == 16 ? 16u : 8u)) {
        struct shard_image converted = {0};
        rc = shard_image_convert(out, channels, depth, o->background, &converted, err);
        if (rc) {
            shard_image_release(&converted);
            return rc;
        }
        shard_image_release(out);
        *out = converted;
    }
    if (!source_w || !source_h) {
        source_w = out->width;
        source_h = out->height;
    }
    /* the picture's extent in the decoded pixels, before orientation */
    struct picture_box box = {
        out->width,
        out->height,
        (double)source_w * scale_num / SK_JPEG_SCALE_DENOM,
        (double)source_h * scale_num / SK_JPEG_SCALE_DENOM,
    };
    rc = apply_orientation(out, orientation, err);
    if (rc)
        return rc;
    if (info) {
        int turned = orientation >= 5 && orientation <= 8; /* a quarter turn swaps sides */
        info->format = format;
        info->orientation = orientation;
        info->source_width = turned ? source_h : source_w;
        info->source_height = turned ? source_w : source_h;
        box_upright(&box, orientation, info);
        memcpy(info->warning, warning, sizeof info->warning);
    }
    return SHARD_OK;
}
