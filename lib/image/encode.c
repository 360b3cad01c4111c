/*
 * encode.c - record payloads: shard_encode() (RAW, JPEG, PNG) and
 * shard_decode_payload().
 *
 * Both encoders write straight into the caller's struct shard_buf (libjpeg
 * through a destination manager, libpng through a write callback), so the
 * buffer's capacity is reused from one image to the next.  Output is
 * deterministic: fixed settings, no timestamps, no text chunks, no choices
 * that depend on anything but the pixels.
 *
 * setjmp discipline (libjpeg and libpng report fatal errors by longjmp): each
 * encoder keeps everything it must clean up in a session struct owned by the
 * caller and passes it by pointer to a function that takes the setjmp and
 * does the work; after a longjmp only that struct is read, so no local needs
 * to be volatile, and the caller releases the library state on every path.
 */
#include "image/encode_internal.h"
#include "image/decode_internal.h"
#include "image/image_internal.h"

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#define RGB_CHANNELS 3
#define JPEG_MAX_SIDE 65500u /* JPEG_MAX_DIMENSION in libjpeg */
/* First reservation for an encoded image; grown geometrically after. */
#define ENCODE_INITIAL_BYTES 16384
/* libjpeg/libpng error text (libjpeg needs JMSG_LENGTH_MAX) */
#define LIB_MSG_SIZE JMSG_LENGTH_MAX
#define GROW_FAILED "out of memory for the encoded image"

/* The bytes of one row of img's pixels. */
static size_t row_bytes(const struct shard_image *img)
{
    return (size_t)img->width * img->channels * sk_image_sample_bytes(img);
}

/* img is an image `codec` can store: any form for raw and PNG (1..4
 * channels, 8 or 16 bits), grey or RGB of 8 bits for JPEG. */
static int check_image(const struct shard_image *img, enum shard_codec codec, struct shard_err *err)
{
    const char *name = codec == SHARD_CODEC_RAW ? "raw" : codec == SHARD_CODEC_PNG ? "PNG" : "JPEG";
    if (!img || !img->pixels || img->width == 0 || img->height == 0)
        return shard_err_set(err, SHARD_EINVAL, "cannot encode %s: empty image", name);
    if (img->channels < 1 || img->channels > 4 ||
        (img->depth && img->depth != 8 && img->depth != 16))
        return shard_err_set(err, SHARD_EINVAL, "cannot encode %s: %u channels of %u bits", name,
                             img->channels, img->depth);
    if (codec == SHARD_CODEC_JPEG &&
        (img->depth == 16 || (img->channels != 1 && img->channels != 3)))
        return shard_err_set(err, SHARD_EINVAL,
                             "cannot encode JPEG: %s of %u bits (JPEG stores "
                             "gray or rgb of 8 bits)",
                             shard_pixels_name(img->channels), img->depth == 16 ? 16 : 8);
    if (img->stride < row_bytes(img))
        return shard_err_set(err, SHARD_EINVAL, "cannot encode %s: stride %zu below row size", name,
                             img->stride);
    return SHARD_OK;
}

/* 16-bit samples in the host's order to little-endian, in place (nothing to
 * do on a little-endian host). */
static void samples_to_le(uint8_t *p, size_t bytes)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i + 1 < bytes; i += 2) {
        uint8_t t = p[i];
        p[i] = p[i + 1];
        p[i + 1] = t;
    }
#else
    (void)p, (void)bytes;
#endif
}

/* ---- RAW ----------------------------------------------------------------------- */

static int encode_raw(const struct shard_image *img, struct shard_buf *out, struct shard_err *err)
{
    size_t row = row_bytes(img);
    if ((size_t)img->height > SIZE_MAX / row)
        return shard_err_set(err, SHARD_ELIMIT, "image %ux%u is too large", img->width,
                             img->height);
    int rc = shard_buf_reserve(out, row * img->height, err);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < img->height; y++)
        memcpy(out->data + (size_t)y * row, img->pixels + (size_t)y * img->stride, row);
    out->len = row * img->height;
    if (img->depth == 16)
        samples_to_le(out->data, out->len);
    return SHARD_OK;
}

/* ---- JPEG ---------------------------------------------------------------------- */

struct jpeg_session {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr error;
    struct jpeg_destination_mgr dest;
    jmp_buf jump;
    struct shard_buf *out;
    int created;            /* jpeg_create_compress ran: destroy */
    int code;               /* the shard_status of a failure */
    char msg[LIB_MSG_SIZE]; /* and its text */
};

static void jpeg_on_error(j_common_ptr cinfo)
{
    struct jpeg_session *s = (struct jpeg_session *)cinfo->client_data;
    if (!s->code) {
        s->code = SHARD_EINVAL;
        (*cinfo->err->format_message)(cinfo, s->msg);
    }
    longjmp(s->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo, int level)
{
    (void)cinfo, (void)level; /* warnings while compressing our own pixels: none expected */
}

/* Destination manager: libjpeg writes into the unused tail of the buffer. */
static void dest_init(j_compress_ptr cinfo)
{
    struct jpeg_session *s = (struct jpeg_session *)cinfo->client_data;
    if (shard_buf_reserve(s->out, ENCODE_INITIAL_BYTES, NULL)) {
        s->code = SHARD_ENOMEM;
        snprintf(s->msg, sizeof s->msg, GROW_FAILED);
        jpeg_on_error((j_common_ptr)cinfo);
    }
    s->out->len = 0;
    s->dest.next_output_byte = s->out->data;
    s->dest.free_in_buffer = s->out->cap;
}

/* Called when the space is used up: all of it is data. */
static boolean dest_grow(j_compress_ptr cinfo)
{
    struct jpeg_session *s = (struct jpeg_session *)cinfo->client_data;
    size_t used = s->out->cap;
    if (used > SIZE_MAX / 2 || shard_buf_reserve(s->out, used * 2, NULL)) {
        s->code = SHARD_ENOMEM;
        snprintf(s->msg, sizeof s->msg, GROW_FAILED);
        jpeg_on_error((j_common_ptr)cinfo);
    }
    s->dest.next_output_byte = s->out->data + used;
    s->dest.free_in_buffer = s->out->cap - used;
    return TRUE;
}

static void dest_term(j_compress_ptr cinfo)
{
    struct jpeg_session *s = (struct jpeg_session *)cinfo->client_data;
    s->out->len = (size_t)(s->dest.next_output_byte - s->out->data);
}

/* Runs under setjmp; returns 0, or 1 after a longjmp (s->code says why). */
static int jpeg_guarded(struct jpeg_session *s, const struct shard_image *img, int quality)
{
    if (setjmp(s->jump))
        return 1;
    struct jpeg_compress_struct *c = &s->cinfo;
    jpeg_create_compress(c);
    s->created = 1;
    c->dest = &s->dest;
    c->image_width = img->width;
    c->image_height = img->height;
    int grey = img->channels == 1;
    c->input_components = grey ? 1 : RGB_CHANNELS;
    c->in_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(c);
    jpeg_set_quality(c, quality, TRUE);
    /* Fixed choices, whatever the library defaults: baseline Huffman tables
     * (no optimisation pass), accurate integer DCT, YCbCr 4:2:0 as Pillow
     * writes by default. */
    c->optimize_coding = FALSE;
    c->arith_code = FALSE;
    c->dct_method = JDCT_ISLOW;
    if (!grey) {
        c->comp_info[0].h_samp_factor = 2;
        c->comp_info[0].v_samp_factor = 2;
        c->comp_info[1].h_samp_factor = c->comp_info[1].v_samp_factor = 1;
        c->comp_info[2].h_samp_factor = c->comp_info[2].v_samp_factor = 1;
    }
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        JSAMPROW row = img->pixels + (size_t)c->next_scanline * img->stride;
        jpeg_write_scanlines(c, &row, 1);
    }
    jpeg_finish_compress(c);
    return 0;
}

static int encode_jpeg(const struct shard_image *img, int quality, struct shard_buf *out,
                       struct shard_err *err)
{
    if (quality < 1 || quality > 100)
        return shard_err_set(err, SHARD_EINVAL, "JPEG quality %d is not in 1..100", quality);
    if (img->width > JPEG_MAX_SIDE || img->height > JPEG_MAX_SIDE)
        return shard_err_set(err, SHARD_ELIMIT, "image %ux%u is too large for JPEG (max %u)",
                             img->width, img->height, JPEG_MAX_SIDE);
    struct jpeg_session s;
    memset(&s, 0, sizeof s);
    s.out = out;
    s.cinfo.err = jpeg_std_error(&s.error);
    s.error.error_exit = jpeg_on_error;
    s.error.emit_message = jpeg_on_message;
    s.cinfo.client_data = &s;
    s.dest.init_destination = dest_init;
    s.dest.empty_output_buffer = dest_grow;
    s.dest.term_destination = dest_term;
    out->len = 0;
    int failed = jpeg_guarded(&s, img, quality);
    if (s.created)
        jpeg_destroy_compress(&s.cinfo);
    if (failed) {
        out->len = 0;
        return shard_err_set(err, s.code, "cannot encode JPEG: %s", s.msg);
    }
    return SHARD_OK;
}

/* ---- PNG ----------------------------------------------------------------------- */

struct png_session {
    png_structp png;
    png_infop info;
    struct shard_buf *out;
    int code;
    char msg[LIB_MSG_SIZE];
};

static void png_on_error(png_structp png, png_const_charp msg)
{
    struct png_session *s = png_get_error_ptr(png);
    if (!s->code) {
        s->code = SHARD_EINVAL;
        snprintf(s->msg, sizeof s->msg, "%s", msg);
    }
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

static void png_on_write(png_structp png, png_bytep data, png_size_t n)
{
    struct png_session *s = png_get_io_ptr(png);
    if (shard_buf_append(s->out, data, n, NULL)) {
        s->code = SHARD_ENOMEM;
        snprintf(s->msg, sizeof s->msg, GROW_FAILED);
        png_error(png, GROW_FAILED);
    }
}

static void png_on_flush(png_structp png)
{
    (void)png;
}

static int png_guarded(struct png_session *s, const struct shard_image *img, int level, int filters,
                       int strategy)
{
    if (setjmp(png_jmpbuf(s->png)))
        return 1;
    png_set_write_fn(s->png, s, png_on_write, png_on_flush);
    static const int colour_types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                       PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    png_set_IHDR(s->png, s->info, img->width, img->height, img->depth == 16 ? 16 : 8,
                 colour_types[img->channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(s->png, level);
    png_set_compression_strategy(s->png, strategy);
    png_set_filter(s->png, PNG_FILTER_TYPE_BASE, filters);
    png_write_info(s->png, s->info);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (img->depth == 16)
        png_set_swap(s->png); /* the host's uint16_t to PNG's big-endian */
#endif
    for (uint32_t y = 0; y < img->height; y++)
        png_write_row(s->png, img->pixels + (size_t)y * img->stride);
    png_write_end(s->png, NULL);
    return 0;
}

int sk_encode_png(const struct shard_image *img, int level, int filters, int strategy,
                  struct shard_buf *out, struct shard_err *err)
{
    int rc = check_image(img, SHARD_CODEC_PNG, err);
    if (rc)
        return rc;
    if (level < 0 || level > 9 || strategy < 0 || strategy > 4)
        return shard_err_set(err, SHARD_EINVAL, "PNG compression level %d / strategy %d invalid",
                             level, strategy);
    if (img->width > PNG_UINT_31_MAX || img->height > PNG_UINT_31_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "image %ux%u is too large for PNG", img->width,
                             img->height);
    struct png_session s;
    memset(&s, 0, sizeof s);
    s.out = out;
    out->len = 0;
    s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error, png_on_warning);
    if (!s.png)
        return shard_err_set(err, SHARD_ENOMEM, "cannot encode PNG: out of memory");
    s.info = png_create_info_struct(s.png);
    int failed = !s.info || png_guarded(&s, img, level, filters, strategy);
    png_destroy_write_struct(&s.png, &s.info);
    if (failed) {
        out->len = 0;
        if (!s.code)
            return shard_err_set(err, SHARD_ENOMEM, "cannot encode PNG: out of memory");
        return shard_err_set(err, s.code, "cannot encode PNG: %s", s.msg);
    }
    return SHARD_OK;
}

/* ---- public API ---------------------------------------------------------------- */

int shard_encode(const struct shard_image *img, enum shard_codec codec, int quality,
                 struct shard_buf *out, struct shard_err *err)
{
    if (!out)
        return shard_err_set(err, SHARD_EINVAL, "cannot encode: no output buffer");
    int rc;
    switch (codec) {
    case SHARD_CODEC_RAW:
        if ((rc = check_image(img, codec, err)))
            return rc;
        return encode_raw(img, out, err);
    case SHARD_CODEC_JPEG:
        if ((rc = check_image(img, codec, err)))
            return rc;
        return encode_jpeg(img, quality, out, err);
    case SHARD_CODEC_PNG:
        return sk_encode_png(img, SHARD_PNG_LEVEL, SHARD_PNG_FILTERS, SHARD_PNG_STRATEGY, out, err);
    }
    return shard_err_set(err, SHARD_EINVAL, "cannot encode: unknown codec %d", (int)codec);
}

static enum shard_image_format codec_format(enum shard_codec codec)
{
    return codec == SHARD_CODEC_JPEG ? SHARD_FORMAT_JPEG : SHARD_FORMAT_PNG;
}

/* shard_decode_payload (channels 0: any payload, given as 8-bit RGB) and
 * shard_decode_payload_form (exactly channels x depth). */
static int decode_payload(enum shard_codec codec, const uint8_t *data, size_t len, uint32_t width,
                          uint32_t height, uint32_t channels, uint32_t depth,
                          struct shard_image *out, struct shard_err *err)
{
    if (!out || (!data && len))
        return shard_err_set(err, SHARD_EINVAL, "cannot decode payload: no buffer");
    if (width == 0 || height == 0)
        return shard_err_set(err, SHARD_ECORRUPT, "record says %ux%u: an empty image", width,
                             height);
    if (channels && (channels > 4 || (depth != 8 && depth != 16)))
        return shard_err_set(err, SHARD_ECORRUPT, "record says %u channels of %u bits", channels,
                             depth);
    uint32_t form_channels = channels ? channels : RGB_CHANNELS, form_depth = channels ? depth : 8;
    if (codec == SHARD_CODEC_RAW) {
        uint64_t pixel = (uint64_t)form_channels * (form_depth / 8);
        uint64_t expect = (uint64_t)width * height; /* < 2^64: both < 2^32 */
        if (expect > UINT64_MAX / pixel || expect * pixel != len)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "raw payload is %zu bytes, record says %ux%u (%llu bytes)", len,
                                 width, height, (unsigned long long)(expect * pixel));
        int rc = shard_image_alloc_form(out, width, height, form_channels, form_depth, err);
        if (rc)
            return rc;
        size_t row = (size_t)width * (size_t)pixel;
        for (uint32_t y = 0; y < height; y++) {
            memcpy(out->pixels + (size_t)y * out->stride, data + (size_t)y * row, row);
            if (form_depth == 16)
                samples_to_le(out->pixels + (size_t)y * out->stride, row); /* its own inverse */
        }
        return SHARD_OK;
    }
    if (codec != SHARD_CODEC_JPEG && codec != SHARD_CODEC_PNG)
        return shard_err_set(err, SHARD_EINVAL, "cannot decode payload: unknown codec %d",
                             (int)codec);
    /* a payload of the other format is as wrong as a damaged one */
    enum shard_image_format found = shard_sniff(data, len);
    if (found != codec_format(codec))
        return shard_err_set(err, SHARD_ECORRUPT, "payload is %s, record says %s",
                             found == SHARD_FORMAT_UNKNOWN ? "not an image"
                                                           : shard_format_name(found),
                             shard_codec_name(codec));
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 0; /* full size: the record's own dimensions */
    if (channels)
        o.channels = SHARD_PIXELS_AUTO, o.depth = SHARD_DEPTH_AUTO; /* checked below */
    /* no libvips decoder: the sniff above let only JPEG and PNG through */
    int rc = sk_decode_image(data, len, &o, out, NULL, NULL, err);
    if (rc) {
        if (rc == SHARD_ENOTIMAGE) /* the signature was right: damage */
            rc = SHARD_ECORRUPT;
        return shard_err_prefix(err, rc, "%s payload", shard_codec_name(codec));
    }
    if (out->width != width || out->height != height)
        return shard_err_set(err, SHARD_ECORRUPT, "payload is %ux%u, record says %ux%u", out->width,
                             out->height, width, height);
    uint32_t got_depth = out->depth == 16 ? 16 : 8;
    if (out->channels != form_channels || got_depth != form_depth)
        return shard_err_set(err, SHARD_ECORRUPT, "payload is %s of %u bits, record says %s of %u",
                             shard_pixels_name(out->channels), got_depth,
                             shard_pixels_name(form_channels), form_depth);
    return SHARD_OK;
}

int shard_decode_payload(enum shard_codec codec, const uint8_t *data, size_t len, uint32_t width,
                         uint32_t height, struct shard_image *out, struct shard_err *err)
{
    return decode_payload(codec, data, len, width, height, 0, 0, out, err);
}

int shard_decode_payload_form(enum shard_codec codec, const uint8_t *data, size_t len,
                              uint32_t width, uint32_t height, uint32_t channels, uint32_t depth,
                              struct shard_image *out, struct shard_err *err)
{
    if (channels == 0)
        return shard_err_set(err, SHARD_ECORRUPT, "record says 0 channels");
    return decode_payload(codec, data, len, width, height, channels, depth, out, err);
}

int sk_decode_payload_box(enum shard_codec codec, const uint8_t *data, size_t len, uint32_t width,
                          uint32_t height, struct sk_jpeg_box *box, struct shard_image *out,
                          struct shard_err *err)
{
    box->region_left = box->region_top = 0;
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 0; /* full scale: the record's own dimensions */
    /* what only the whole decode handles, or rejects with its own message */
    if (codec != SHARD_CODEC_JPEG || !out || !data || !width || !height ||
        (o.max_file_bytes && len > o.max_file_bytes) || shard_sniff(data, len) != SHARD_FORMAT_JPEG)
        return shard_decode_payload(codec, data, len, width, height, out, err);
    char warning[SHARD_ERRMSG_SIZE];
    uint32_t source_w = 0, source_h = 0;
    int rc = sk_decode_jpeg_box(data, len, &o, box, out, &source_w, &source_h, warning, err);
    if (rc == SK_JPEG_NEEDS_FULL) {
        box->region_left = box->region_top = 0;
        return shard_decode_payload(codec, data, len, width, height, out, err);
    }
    /* before the box check's SHARD_EINVAL: a box of the record's size may
     * not fit a payload of another size */
    if ((!rc || rc == SHARD_EINVAL) && source_w && (source_w != width || source_h != height))
        return shard_err_set(err, SHARD_ECORRUPT, "payload is %ux%u, record says %ux%u", source_w,
                             source_h, width, height);
    if (rc)
        return shard_err_prefix(err, rc, "%s payload", shard_codec_name(codec));
    return SHARD_OK;
}
