/* decode_png.c - PNG to 8-bit RGB with libpng 1.6, limits set before reading.
 *
 * What comes out: palette expanded, gray replicated to RGB, 16-bit samples
 * scaled to 8 bits with rounding (png_set_scale_16, not the truncating
 * strip_16), alpha and tRNS composited over o->background with libpng's
 * rounding ((fg*a + bg*(255-a)) / 255), Adam7 interlacing undone.
 *
 * No gamma correction: gAMA, cHRM, sRGB and iCCP are ignored (like most image
 * loaders used for training, e.g. Pillow), so stored samples come out as-is.
 * Every ancillary chunk except tRNS and eXIf is discarded unread, which also
 * takes the zTXt/iTXt/iCCP decompression bombs off the table.
 *
 * Damage is an error: a read past the end ("truncated PNG"), a CRC mismatch
 * in any chunk (libpng only warns for ancillary ones by default), a broken
 * zlib stream.  libpng's warnings and "benign" errors (warnings when
 * reading) are sorted by their text; with only IHDR, PLTE, tRNS, IDAT, IEND
 * and eXIf handled, these are all libpng 1.6 can give us:
 *
 *   accepted: every pixel still comes from the file's own data
 *     "PLTE: ignored in grayscale PNG", "PLTE: invalid", "PLTE: out of place"
 *                  a suggested palette of a gray or truecolour image (for a
 *                  palette image these are errors): never used for pixels
 *     "tRNS: invalid with alpha channel"
 *                  the image has a full alpha channel; tRNS means nothing
 *     "IEND: invalid"  an IEND with data, after the image
 *     "IDAT: Extra compressed data", "IDAT: Too much image data"
 *                  bytes after the image in a stream that ended with a
 *                  matching checksum
 *     "<chunk>: chunk data is too large"
 *                  a chunk over libpng's size hint, read or skipped as usual
 *     "eXIf: too short", "eXIf: incorrect byte-order specifier",
 *     "eXIf: duplicate"
 *                  EXIF that cannot be read or comes twice: ignored (the
 *                  first is used), as for JPEG (exif.c)
 *     "tRNS chunk has out-of-range samples for bit_depth", for a grey key
 *                  that is the 8-bit form of a grey level (trns_key_kept):
 *                  its low bits, which libpng uses, are that level
 *   rejected: pixels are invented or not what the file says
 *     "tRNS: invalid", "tRNS: out of place", "tRNS: duplicate",
 *     "PLTE: tRNS must be after"
 *                  transparency that libpng drops
 *     "tRNS chunk has out-of-range samples for bit_depth", other keys
 *                  a colour key libpng masks to the bit depth
 *     "Read palette index exceeding num_palette"
 *                  pixels use colours the palette does not have (libpng
 *                  checks only rows it hands out as palette indexes, so with
 *                  png_set_expand we never see it: such pixels come out
 *                  black, from the zeros libpng pads the palette with)
 *     "IDAT: <zlib message>", e.g. "incorrect data check"
 *                  the image stream fails its checksum or is damaged
 *                  after the last row
 *     "eXIf: out of memory" and anything else: not known to be harmless
 * Warnings that precede an error (IHDR checks) are reported by the error.
 * A rejected warning is remembered and reported once libpng returns; the
 * accepted ones are counted and the first is reported (decode_warnings).
 *
 * Limits: the dimensions are read from IHDR and checked against
 * o->max_pixels before libpng runs; png_set_user_limits repeats the check
 * per side (a side longer than max_pixels cannot fit, so the per-side limit
 * is min(max_pixels, 2^31-1), the PNG maximum).  All of libpng's and zlib's
 * memory goes through a counting allocator capped at o->max_memory.
 *
 * setjmp discipline as in decode_jpeg.c: the session struct belongs to the
 * caller of decode_guarded(), which takes the setjmp and after a longjmp
 * reads only its unmodified parameters.
 */
#include "image/decode_internal.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

/* signature, then the IHDR chunk: length(4) "IHDR"(4) width(4) height(4) ... */
#define IHDR_TYPE_OFFSET 12
#define IHDR_WIDTH_OFFSET 16
#define IHDR_HEIGHT_OFFSET 20
#define IHDR_SIZE_END 24
/* Largest chunk libpng accepts (IDAT excepted: its limit follows from the
 * image size).  libpng checks every chunk's length against it, even chunks we
 * discard unread, so a tighter value would only reject files that stock
 * libpng reads; this is libpng's stock default.  What we actually buffer
 * (PLTE, tRNS, eXIf) is far smaller, and the allocator cap bounds it all. */
#define CHUNK_MALLOC_MAX 8000000u
/* Most ancillary chunks kept (we keep none but eXIf: a backstop). */
#define CHUNK_CACHE_MAX 128
#define EXIF_HEADER "Exif\0\0"
#define EXIF_HEADER_SIZE 6
#define RGB_CHANNELS 3
#define MEMORY_LIMIT_FMT "PNG needs more than --max-memory %llu bytes"

/* Header in front of each block from the counting allocator. */
union block_header {
    size_t size;
    max_align_t align;
};

struct png_session {
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t len, pos;
    png_bytep *rows;  /* row pointers into the output image; malloc */
    uint8_t *exif;    /* EXIF_HEADER + eXIf chunk, for libexif; malloc */
    uint64_t mem_cap; /* 0: no cap */
    uint64_t mem_used;
    int mem_refused; /* the cap refused an allocation */
    int mem_failed;  /* malloc failed */
    int code;        /* set by a callback before it jumps */
    char reason[SHARD_ERRMSG_SIZE];
    struct decode_warnings warnings; /* the accepted ones */
    char lossy[SHARD_ERRMSG_SIZE];   /* "" or the first rejected warning */
    int trns_over_depth;             /* TRNS_OVER_DEPTH was given (see trns_key_kept) */
};

/* libpng's warning for a tRNS colour key over the image's bit depth */
#define TRNS_OVER_DEPTH "tRNS chunk has out-of-range samples for bit_depth"

/* The accepted class of the table at the top of this file: libpng's text
 * after the "<chunk>: " that png_chunk_warning puts in front, and that
 * chunk (NULL: any). */
static const struct {
    const char *chunk;
    const char *text;
} harmless_warnings[] = {
    {"PLTE", "ignored in grayscale PNG"},
    {"PLTE", "invalid"},
    {"PLTE", "out of place"},
    {"tRNS", "invalid with alpha channel"},
    {"IEND", "invalid"},
    {"IDAT", "Extra compressed data"},
    {"IDAT", "Too much image data"},
    {NULL, "chunk data is too large"},
    {"eXIf", "too short"},
    {"eXIf", "incorrect byte-order specifier"},
    {"eXIf", "duplicate"},
};
/* "IHDR: " */
#define CHUNK_PREFIX_BYTES 6

/* ---- callbacks ------------------------------------------------------------- */

static png_voidp on_malloc(png_structp png, png_alloc_size_t n)
{
    struct png_session *s = png_get_mem_ptr(png);
    if (s->mem_cap && n > s->mem_cap - s->mem_used) {
        s->mem_refused = 1;
        return NULL;
    }
    if (n > SIZE_MAX - sizeof(union block_header)) {
        s->mem_failed = 1;
        return NULL;
    }
    union block_header *h = malloc(sizeof *h + n);
    if (!h) {
        s->mem_failed = 1;
        return NULL;
    }
    h->size = n;
    s->mem_used += n;
    return h + 1;
}

static void on_free(png_structp png, png_voidp p)
{
    if (!p)
        return;
    struct png_session *s = png_get_mem_ptr(png);
    union block_header *h = (union block_header *)p - 1;
    s->mem_used -= h->size;
    free(h);
}

static void on_read(png_structp png, png_bytep dst, size_t n)
{
    struct png_session *s = png_get_io_ptr(png);
    if (n > s->len - s->pos) {
        s->code = SHARD_ECORRUPT;
        snprintf(s->reason, sizeof s->reason, "truncated PNG");
        png_error(png, "truncated");
    }
    memcpy(dst, s->data + s->pos, n);
    s->pos += n;
}

static void on_error(png_structp png, png_const_charp msg)
{
    struct png_session *s = png_get_error_ptr(png);
    if (!s->code) {
        if (s->mem_refused) {
            s->code = SHARD_ELIMIT;
            snprintf(s->reason, sizeof s->reason, MEMORY_LIMIT_FMT, (unsigned long long)s->mem_cap);
        } else if (s->mem_failed) {
            s->code = SHARD_ENOMEM;
            snprintf(s->reason, sizeof s->reason, "out of memory decoding PNG");
        } else {
            char text[SHARD_ERRMSG_SIZE - 32];
            sk_decode_copy_reason(text, sizeof text, msg);
            s->code = SHARD_ECORRUPT;
            snprintf(s->reason, sizeof s->reason, "corrupt PNG: %s", text);
        }
    }
    png_longjmp(png, 1);
}

static int warning_is_harmless(const char *msg)
{
    const char *text = msg;
    size_t n = strlen(msg);
    int prefixed = n > CHUNK_PREFIX_BYTES && msg[4] == ':' && msg[5] == ' ';
    if (prefixed)
        text = msg + CHUNK_PREFIX_BYTES;
    for (size_t i = 0; i < sizeof harmless_warnings / sizeof harmless_warnings[0]; i++) {
        const char *chunk = harmless_warnings[i].chunk;
        if (strcmp(text, harmless_warnings[i].text) == 0 &&
            (!chunk || (prefixed && memcmp(msg, chunk, 4) == 0)))
            return 1;
    }
    return 0;
}

/* libpng goes on after a warning; a rejected one is reported when it
 * returns (no jump out of libpng mid-chunk).  The library never prints. */
static void on_warning(png_structp png, png_const_charp msg)
{
    struct png_session *s = png_get_error_ptr(png);
    char text[SHARD_ERRMSG_SIZE - 32];
    sk_decode_copy_reason(text, sizeof text, msg);
    if (warning_is_harmless(msg ? msg : ""))
        sk_decode_warning_add(&s->warnings, text);
    else if (msg && !strcmp(msg, TRNS_OVER_DEPTH)) /* told apart once the key is known */
        s->trns_over_depth = 1;
    else if (!s->lossy[0])
        snprintf(s->lossy, sizeof s->lossy, "corrupt PNG: %s", text);
}

/* ---- helpers ------------------------------------------------------------------ */

/* After png_read_info: the tRNS colour key that was over the bit depth
 * (TRNS_OVER_DEPTH).  libpng uses the key's low bits.  A grey key that is
 * the 8-bit form of a grey level of the image (level x 255 / (2^depth - 1):
 * 255 for a 1-bit image's white, as Pillow writes it) has that level in its
 * low bits, so the transparent grey is the one the writer meant and the
 * pixels are Pillow's: the sample is kept, with the warning.  Any other key
 * is rejected (libpng would make another grey transparent). */
static void trns_key_kept(struct png_session *s)
{
    if (!s->trns_over_depth)
        return;
    int depth = png_get_bit_depth(s->png, s->info);
    png_bytep alpha;
    int n;
    png_color_16p key = NULL;
    if (png_get_color_type(s->png, s->info) == PNG_COLOR_TYPE_GRAY && depth < 8 &&
        png_get_tRNS(s->png, s->info, &alpha, &n, &key) && key && key->gray <= 255 &&
        key->gray % (255 / ((1 << depth) - 1)) == 0)
        sk_decode_warning_add(&s->warnings, TRNS_OVER_DEPTH);
    else if (!s->lossy[0])
        snprintf(s->lossy, sizeof s->lossy, "corrupt PNG: %s", TRNS_OVER_DEPTH);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* IHDR must be the first chunk (libpng rejects anything else), so the
 * declared size is at a fixed offset.  0 when there is no IHDR to read;
 * libpng then reports what is wrong. */
static int declared_size(const uint8_t *data, size_t len, uint32_t *w, uint32_t *h)
{
    if (len < IHDR_SIZE_END || memcmp(data + IHDR_TYPE_OFFSET, "IHDR", 4) != 0)
        return 0;
    *w = be32(data + IHDR_WIDTH_OFFSET);
    *h = be32(data + IHDR_HEIGHT_OFFSET);
    return 1;
}

static int find_orientation(struct png_session *s)
{
    png_uint_32 n = 0;
    png_bytep exif = NULL;
    if (!png_get_eXIf_1(s->png, s->info, &n, &exif) || !exif || n == 0)
        return SHARD_ORIENTATION_NORMAL;
    /* libexif wants the JPEG APP1 layout: "Exif\0\0" then the TIFF header */
    s->exif = malloc((size_t)n + EXIF_HEADER_SIZE);
    if (!s->exif)
        return SHARD_ORIENTATION_NORMAL;
    memcpy(s->exif, EXIF_HEADER, EXIF_HEADER_SIZE);
    memcpy(s->exif + EXIF_HEADER_SIZE, exif, n);
    return sk_exif_orientation(s->exif, (size_t)n + EXIF_HEADER_SIZE);
}

/* Transformations that turn any PNG into 8-bit RGB. */
static void request_rgb8(png_structp png, png_infop info, const uint8_t background[3])
{
    int color_type = png_get_color_type(png, info);
    png_set_expand(png); /* palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha */
    if (png_get_bit_depth(png, info) == 16)
        png_set_scale_16(png);
    if (!(color_type & PNG_COLOR_MASK_COLOR))
        png_set_gray_to_rgb(png);
    if ((color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) {
        /* In output terms (need_expand 0): 8-bit RGB.  With no gamma set
         * anywhere libpng composites linearly on the stored values. */
        png_color_16 bg = {0};
        bg.red = background[0];
        bg.green = background[1];
        bg.blue = background[2];
        bg.gray = background[0];
        png_set_background_fixed(png, &bg, PNG_BACKGROUND_GAMMA_SCREEN, 0, PNG_FP_1);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Transformations that keep the PNG's own form: its channels (a palette
 * becomes RGB, or RGBA with a tRNS chunk; a grey tRNS key becomes an alpha
 * channel) and its depth (under 8 bits becomes 8; 16 stays 16, in the
 * host's byte order). */
static void request_native(png_structp png, png_infop info)
{
    png_set_expand(png);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (png_get_bit_depth(png, info) == 16)
        png_set_swap(png);
#endif
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Transformations that give each pixel's stored number: a palette index
 * (not its colour) or a grey level, unscaled (a 2-bit grey 3 stays 3), one
 * byte each, or two for a 16-bit grey.  1 when the PNG holds such numbers,
 * 0 for colour or alpha images. */
static int request_values(png_structp png, png_infop info)
{
    int color_type = png_get_color_type(png, info);
    if (color_type != PNG_COLOR_TYPE_GRAY && color_type != PNG_COLOR_TYPE_PALETTE)
        return 0;
    if (png_get_bit_depth(png, info) < 8)
        png_set_packing(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return 1;
}

/* ---- decoding ------------------------------------------------------------------ */

/* Limits and chunk handling common to both decodes (see the top). */
static void session_setup(struct png_session *s, const struct shard_decode_options *o)
{
    png_structp png = s->png;
    uint32_t side_max = PNG_UINT_31_MAX;
    if (o->max_pixels && o->max_pixels < side_max)
        side_max = (uint32_t)o->max_pixels;
    png_set_user_limits(png, side_max, side_max);
    png_set_chunk_malloc_max(png, CHUNK_MALLOC_MAX);
    png_set_chunk_cache_max(png, CHUNK_CACHE_MAX);
    png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
    /* Discard every ancillary chunk except tRNS (which libpng always keeps
     * with a negative count) and eXIf. */
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_AS_DEFAULT, (png_const_bytep) "eXIf", 1);
    png_set_read_fn(png, s, on_read);
}

/* Read the image's rows (as requested from libpng: `channels` bytes a
 * pixel) into out, then the chunks after them.  Called inside a guarded
 * decode: libpng's errors jump to its setjmp. */
static int read_rows(struct png_session *s, struct shard_image *out, uint32_t w, uint32_t h,
                     uint32_t channels, uint32_t depth, struct shard_err *err)
{
    png_structp png = s->png;
    int rc = shard_image_alloc_form(out, w, h, channels, depth, err);
    if (rc)
        return rc;
    s->rows = malloc((size_t)h * sizeof *s->rows);
    if (!s->rows)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %u PNG row pointers", h);
    for (uint32_t y = 0; y < h; y++)
        s->rows[y] = out->pixels + (size_t)y * out->stride;
    png_read_image(png, s->rows);
    /* the chunks after the image data up to IEND, so damage there and a
     * missing end are reported too */
    png_read_end(png, NULL);
    if (s->mem_refused || s->mem_failed) /* libpng only warned: something was left out */
        png_error(png, "out of memory");
    if (s->lossy[0])
        return shard_err_set(err, SHARD_ECORRUPT, "%s", s->lossy);
    return SHARD_OK;
}

static int decode_guarded(struct png_session *s, const struct shard_decode_options *o,
                          struct shard_image *out, int *orientation, struct shard_err *err)
{
    png_structp png = s->png;
    png_infop info = s->info;
    if (setjmp(png_jmpbuf(png)))
        return shard_err_set(err, s->code ? s->code : SHARD_ECORRUPT, "%s", s->reason);
    session_setup(s, o);
    png_read_info(png, info);
    trns_key_kept(s);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    *orientation = find_orientation(s);
    if (sk_decode_wants_rgb8(o)) {
        request_rgb8(png, info, o->background);
    } else {
        request_native(png, info);
    }
    uint32_t channels = png_get_channels(png, info), depth = png_get_bit_depth(png, info);
    if (channels < 1 || channels > 4 || (depth != 8 && depth != 16) ||
        (sk_decode_wants_rgb8(o) && (channels != RGB_CHANNELS || depth != 8)) ||
        png_get_rowbytes(png, info) != (size_t)w * channels * (depth / 8))
        return shard_err_set(err, SHARD_EUNSUPPORTED, "unsupported: PNG layout (color type %d)",
                             png_get_color_type(png, info));

    return read_rows(s, out, w, h, channels, depth, err);
}

/* The values of a grey or palette PNG into out (channels: bytes per value,
 * 16-bit values little-endian). */
static int decode_values_guarded(struct png_session *s, const struct shard_decode_options *o,
                                 struct shard_image *out, struct shard_err *err)
{
    png_structp png = s->png;
    png_infop info = s->info;
    if (setjmp(png_jmpbuf(png)))
        return shard_err_set(err, s->code ? s->code : SHARD_ECORRUPT, "%s", s->reason);
    session_setup(s, o);
    png_read_info(png, info);
    trns_key_kept(s);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (!request_values(png, info))
        return shard_err_set(err, SHARD_EUNSUPPORTED,
                             "a PNG of colour type %d (%s), not grey "
                             "or palette values",
                             png_get_color_type(png, info),
                             png_get_color_type(png, info) & PNG_COLOR_MASK_ALPHA ? "with alpha"
                                                                                  : "RGB");
    uint32_t bytes = png_get_bit_depth(png, info) == 16 ? 2 : 1;
    if (png_get_channels(png, info) != 1 || png_get_rowbytes(png, info) != (size_t)w * bytes)
        return shard_err_set(err, SHARD_EUNSUPPORTED, "unsupported: PNG layout (color type %d)",
                             png_get_color_type(png, info));
    int rc = read_rows(s, out, w, h, bytes, 8, err);
    if (rc)
        return rc;
    for (uint32_t y = 0; bytes == 2 && y < h; y++) { /* PNG's big-endian to little */
        uint8_t *p = out->pixels + (size_t)y * out->stride;
        for (uint32_t x = 0; x < w; x++, p += 2) {
            uint8_t t = p[0];
            p[0] = p[1];
            p[1] = t;
        }
    }
    return SHARD_OK;
}

static int decode_png(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                      struct shard_image *out, int *orientation, char *warning, int values,
                      struct shard_err *err)
{
    *orientation = SHARD_ORIENTATION_NORMAL;
    warning[0] = '\0';
    uint32_t w, h;
    if (declared_size(data, len, &w, &h)) {
        int rc = sk_decode_check_pixels(w, h, o, err);
        if (rc)
            return rc;
    }

    struct png_session s;
    memset(&s, 0, sizeof s);
    s.data = data;
    s.len = len;
    s.mem_cap = o->max_memory;
    s.png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning, &s, on_malloc,
                                     on_free);
    if (s.png)
        s.info = png_create_info_struct(s.png);
    int rc;
    if (s.png && s.info)
        rc = values ? decode_values_guarded(&s, o, out, err)
                    : decode_guarded(&s, o, out, orientation, err);
    else if (s.mem_refused)
        rc = shard_err_set(err, SHARD_ELIMIT, MEMORY_LIMIT_FMT, (unsigned long long)s.mem_cap);
    else
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot create a PNG decoder");
    if (!rc)
        sk_decode_warning_report(&s.warnings, "PNG", warning);
    png_destroy_read_struct(&s.png, &s.info, NULL);
    free(s.rows);
    free(s.exif);
    return rc;
}

int sk_decode_png(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                  struct shard_image *out, int *orientation, char *warning, struct shard_err *err)
{
    return decode_png(data, len, o, out, orientation, warning, 0, err);
}

int sk_decode_png_values(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                         struct shard_image *out, char *warning, struct shard_err *err)
{
    int orientation;
    if (len < 8 || shard_sniff(data, len) != SHARD_FORMAT_PNG)
        return shard_err_set(err, SHARD_ENOTIMAGE, "not a PNG");
    return decode_png(data, len, o, out, &orientation, warning, 1, err);
}
