/* decode_jpeg.c - JPEG to RGB with libjpeg(-turbo 2.1), strict about damage.
 *
 * libjpeg reports fatal errors through error_exit (which must not return: we
 * longjmp back) and recoverable damage through emit_message(-1) warnings.
 * jpeg_mem_src answers a premature end of data with such a warning and a fake
 * EOI, so a truncated file would "succeed" as a grey-padded image.  So each
 * warning is sorted (libjpeg-turbo 2.1's whole JWRN_* list):
 *
 *   accepted: every pixel still comes from the file's own data
 *     JWRN_EXTRANEOUS_DATA  when the skipped bytes lie between two marker
 *                           segments, outside any scan ("3 extraneous bytes
 *                           before marker 0xdb"): no image data is skipped
 *     JWRN_JFIF_MAJOR       an unknown JFIF version number: metadata
 *     JWRN_ADOBE_XFORM      an unknown Adobe transform code: the colour space
 *                           defaults (YCbCr, or YCCK for 4 components), as in
 *                           every libjpeg-based reader
 *     JWRN_NOT_SEQUENTIAL   a baseline scan header with zeroed spectral
 *                           parameters: read as the full scan it is
 *     JWRN_BOGUS_ICC        an ICC profile marker (we never read the profile)
 *   rejected: pixels are invented or wrong
 *     JWRN_JPEG_EOF         premature end of file: the rest is grey padding
 *     JWRN_HIT_MARKER       premature end of a scan: blocks filled with zeros
 *     JWRN_HUFF_BAD_CODE, JWRN_ARITH_BAD_CODE
 *                           corrupt entropy-coded data
 *     JWRN_MUST_RESYNC      a restart marker missing: data skipped
 *     JWRN_BOGUS_PROGRESSION  progressive scans out of order: coefficients
 *                           missing or refined without a base
 *     JWRN_EXTRANEOUS_DATA  when the bytes follow a scan's entropy-coded
 *                           data: the scan held more data than its blocks
 *                           used, which is how a flipped bit there usually
 *                           shows (84 of 109 detected flips in ImageNet
 *                           photos gave only "extraneous bytes before marker
 *                           0xd9")
 *     JWRN_TOO_MUCH_DATA    our own misuse (cannot happen)
 *     anything else         not known to be harmless
 * A rejected warning stops the decode at once; accepted ones are counted
 * and the first is reported (decode_warnings).
 *
 * setjmp discipline: the libjpeg state lives in a struct jpeg_session owned by
 * sk_decode_jpeg(), and setjmp is taken in decode_guarded(), which the
 * session is passed to by pointer.  After a longjmp decode_guarded() only
 * reads its parameters (never modified), so no local needs to be volatile,
 * and sk_decode_jpeg() destroys the decompressor on every path.  Every
 * allocation made after setjmp comes from libjpeg's own pools (freed by
 * jpeg_destroy_decompress) or is the caller's output image (freed by them).
 */
#include "image/decode_internal.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

/* A hostile progressive JPEG can hold thousands of tiny scans and take
 * minutes to decode; real encoders write about ten.  libjpeg-turbo's own
 * TurboJPEG 3 API suggests this value for its scan limit. */
#define MAX_SCANS 500
#define EXIF_MARKER (JPEG_APP0 + 1)
#define EXIF_HEADER "Exif\0\0"
#define EXIF_HEADER_SIZE 6
#define RGB_CHANNELS 3
#define CMYK_CHANNELS 4
/* Rows handed to jpeg_read_scanlines at once (it may return fewer). */
#define ROWS_PER_READ 4
/* Markers the segment walk needs that jpeglib.h does not name. */
#define MARKER_PREFIX 0xff
#define MARKER_SOI 0xd8
#define MARKER_SOS 0xda
#define MARKER_TEM 0x01
#define RESTART_MARKERS 8
/* SOI, the first 2 bytes */
#define SOI_BYTES 2

/* Quality settings, the libjpeg defaults.  On the ImageNet sample (one core)
 * the fast IDCT and plain upsampling together save only ~4% of decode time,
 * while the fast IDCT changes samples by 1.2 on average (up to 25) and plain
 * upsampling moves chroma edges by up to 69. */
#define DCT_METHOD JDCT_ISLOW
#define FANCY_UPSAMPLING TRUE

/* Where between_segments() stopped. */
struct segment_walk {
    size_t pos;
    int boundary; /* pos is where a segment outside a scan ends */
    int in_scan;  /* pos is inside entropy-coded data */
};

struct jpeg_failure {
    struct jpeg_error_mgr mgr; /* first: libjpeg hands us &mgr as cinfo->err */
    jmp_buf jump;
    uint64_t max_memory; /* for the message when the memory cap is hit */
    const uint8_t *data; /* the input, to place extraneous bytes */
    size_t len;
    struct segment_walk walk;
    const uint8_t *exif; /* the first APP1 segment holding EXIF, in data */
    size_t exif_len;
    struct decode_warnings warnings; /* the accepted ones */
    int code;                        /* enum shard_status to report */
    char reason[SHARD_ERRMSG_SIZE];
};

struct jpeg_session {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_failure failure;
    struct jpeg_progress_mgr progress;
};

/* ---- error handling --------------------------------------------------------- */

/* libjpeg's text for the pending message, without the "Corrupt JPEG data: "
 * or "Warning: " prefix its warnings carry (we add our own). */
static void library_message(j_common_ptr cinfo, char *text, size_t n)
{
    static const char *const prefixes[] = {"Corrupt JPEG data: ", "Warning: "};
    char raw[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, raw);
    const char *msg = raw;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t plen = strlen(prefixes[i]);
        if (strncmp(msg, prefixes[i], plen) == 0)
            msg += plen;
    }
    sk_decode_copy_reason(text, n, msg);
}

static _Noreturn void fail(j_common_ptr cinfo)
{
    struct jpeg_failure *f = (struct jpeg_failure *)cinfo->err;
    longjmp(f->jump, 1);
}

static _Noreturn void on_error_exit(j_common_ptr cinfo)
{
    struct jpeg_failure *f = (struct jpeg_failure *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    library_message(cinfo, text, sizeof text);
    switch (cinfo->err->msg_code) {
    case JERR_BAD_PRECISION:
        f->code = SHARD_EUNSUPPORTED;
        snprintf(f->reason, sizeof f->reason, "unsupported: %d-bit JPEG",
                 cinfo->err->msg_parm.i[0]);
        break;
    case JERR_SOF_UNSUPPORTED: /* lossless, hierarchical */
    case JERR_ARITH_NOTIMPL:
    case JERR_CONVERSION_NOTIMPL: /* e.g. 2-component images */
    case JERR_NOTIMPL:
    case JERR_IMAGE_TOO_BIG: /* over libjpeg's 65500-pixel side */
    case JERR_WIDTH_OVERFLOW:
        f->code = SHARD_EUNSUPPORTED;
        snprintf(f->reason, sizeof f->reason, "unsupported: %s", text);
        break;
    case JERR_NO_BACKING_STORE:
        /* jmemnobs: the whole-image buffers of a progressive JPEG do not fit
         * under max_memory_to_use and there is no temporary-file fallback. */
        f->code = SHARD_ELIMIT;
        snprintf(f->reason, sizeof f->reason, "JPEG needs more than --max-memory %llu bytes",
                 (unsigned long long)f->max_memory);
        break;
    case JERR_OUT_OF_MEMORY:
        f->code = SHARD_ENOMEM;
        snprintf(f->reason, sizeof f->reason, "out of memory decoding JPEG (%s)", text);
        break;
    default:
        f->code = SHARD_ECORRUPT;
        snprintf(f->reason, sizeof f->reason, "corrupt JPEG: %s", text);
        break;
    }
    fail(cinfo);
}

/* Whether position `at` of a JPEG is where a marker segment outside any
 * scan ends (or SOI does): bytes libjpeg skipped from there on lie between
 * segments and hold no image data.  Walks the segments from SOI the way
 * libjpeg's marker reader does: a segment carries its length; after SOS
 * comes entropy-coded data up to the next marker that is not a stuffed
 * zero or a restart marker; bytes that are not a marker are skipped.
 * libjpeg warns in file order, so each call goes on from where the last
 * stopped (*w): the walk costs one pass over the file, however many
 * warnings there are. */
static int between_segments(const uint8_t *d, size_t len, size_t at, struct segment_walk *w)
{
    size_t p = w->pos;
    int boundary = w->boundary, in_scan = w->in_scan, found = 0;
    while (p < len && p <= at) {
        if (boundary && p == at) {
            found = 1;
            break;
        }
        boundary = 0;
        if (d[p] != MARKER_PREFIX) { /* entropy-coded data, or skipped bytes */
            p++;
            continue;
        }
        size_t q = p + 1;
        while (q < len && d[q] == MARKER_PREFIX) /* fill bytes */
            q++;
        if (q >= len || d[q] == JPEG_EOI || q + 2 >= len) {
            p = len; /* the end: nothing after it is between segments */
            break;
        }
        unsigned m = d[q];
        if (m == 0 || (m >= JPEG_RST0 && m < JPEG_RST0 + RESTART_MARKERS) || m == MARKER_SOI ||
            m == MARKER_TEM) {
            p = q + 1; /* a stuffed zero or a marker without a segment */
            continue;
        }
        p = q + 1 + ((size_t)d[q + 1] << 8 | d[q + 2]);
        in_scan = m == MARKER_SOS;
        boundary = !in_scan;
    }
    w->pos = p;
    w->boundary = boundary;
    w->in_scan = in_scan;
    return found;
}

/* The accepted class of the table at the top of this file. */
static int warning_is_harmless(j_common_ptr cinfo, struct jpeg_failure *f)
{
    switch (cinfo->err->msg_code) {
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_ICC: return 1;
    case JWRN_EXTRANEOUS_DATA: {
        /* next_marker() warns with the source positioned at the marker that
         * ended the skipped bytes (jpeg_mem_src reads our buffer in place) */
        j_decompress_ptr d = (j_decompress_ptr)cinfo;
        const uint8_t *at = cinfo->is_decompressor && d->src ? d->src->next_input_byte : NULL;
        size_t skipped = (size_t)(unsigned)cinfo->err->msg_parm.i[0];
        if (!at || at < f->data || at > f->data + f->len || (size_t)(at - f->data) < skipped)
            return 0;
        return between_segments(f->data, f->len, (size_t)(at - f->data) - skipped, &f->walk);
    }
    default: return 0;
    }
}

/* Level -1 is a warning (recoverable damage); higher levels are trace
 * messages, which we ignore. */
static void on_emit_message(j_common_ptr cinfo, int msg_level)
{
    if (msg_level >= 0)
        return;
    struct jpeg_failure *f = (struct jpeg_failure *)cinfo->err;
    if (warning_is_harmless(cinfo, f)) {
        char text[JMSG_LENGTH_MAX];
        library_message(cinfo, text, sizeof text);
        sk_decode_warning_add(&f->warnings, text);
        return;
    }
    f->code = SHARD_ECORRUPT;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        snprintf(f->reason, sizeof f->reason, "truncated JPEG");
    } else {
        char text[JMSG_LENGTH_MAX];
        library_message(cinfo, text, sizeof text);
        snprintf(f->reason, sizeof f->reason, "corrupt JPEG data: %s", text);
    }
    fail(cinfo);
}

/* The library never prints. */
static void on_output_message(j_common_ptr cinfo)
{
    (void)cinfo;
}

static void on_progress(j_common_ptr cinfo)
{
    if (!cinfo->is_decompressor)
        return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > MAX_SCANS) {
        struct jpeg_failure *f = (struct jpeg_failure *)cinfo->err;
        f->code = SHARD_ELIMIT;
        snprintf(f->reason, sizeof f->reason, "progressive JPEG has more than %d scans", MAX_SCANS);
        fail(cinfo);
    }
}

/* ---- helpers ------------------------------------------------------------------ */

unsigned sk_jpeg_scale_num(uint32_t w, uint32_t h, uint32_t target, enum shard_fit fit)
{
    static const unsigned numerators[] = {1, 2, 4}; /* the scales with SIMD IDCTs */
    if (!target || !w || !h)
        return SK_JPEG_SCALE_DENOM;
    uint64_t shorter = w < h ? w : h, longer = w < h ? h : w;
    uint64_t side = fit == SHARD_FIT_LONG ? longer : shorter;
    for (size_t i = 0; i < sizeof numerators / sizeof numerators[0]; i++)
        if ((side * numerators[i] + SK_JPEG_SCALE_DENOM - 1) / SK_JPEG_SCALE_DENOM >= target)
            return numerators[i];
    return SK_JPEG_SCALE_DENOM;
}

/* Read one byte of a marker segment from the source (libjpeg's own marker
 * reader does the same through its INPUT_BYTE macro).  FALSE: suspended,
 * which a memory source never does. */
static boolean next_byte(j_decompress_ptr cinfo, unsigned *byte)
{
    struct jpeg_source_mgr *src = cinfo->src;
    if (src->bytes_in_buffer == 0 && !(*src->fill_input_buffer)(cinfo))
        return FALSE;
    src->bytes_in_buffer--;
    *byte = *src->next_input_byte++;
    return TRUE;
}

/* The APP1 processor: remembers where the first segment that holds EXIF
 * lies (jpeg_mem_src reads our buffer in place: no copy) and skips every
 * APP1.  jpeg_save_markers would keep them all in a list it appends to by
 * walking it, so thousands of APP1 segments in a hostile file would cost
 * quadratic time. */
static boolean on_app1(j_decompress_ptr cinfo)
{
    struct jpeg_failure *f = (struct jpeg_failure *)cinfo->err;
    struct jpeg_source_mgr *src = cinfo->src;
    unsigned hi, lo;
    if (!next_byte(cinfo, &hi) || !next_byte(cinfo, &lo))
        return FALSE;
    unsigned length = hi << 8 | lo;
    if (length < 2)
        ERREXIT(cinfo, JERR_BAD_LENGTH);
    length -= 2;
    const uint8_t *at = src->next_input_byte;
    if (!f->exif && length >= EXIF_HEADER_SIZE && src->bytes_in_buffer >= length && at >= f->data &&
        at + length <= f->data + f->len && memcmp(at, EXIF_HEADER, EXIF_HEADER_SIZE) == 0) {
        f->exif = at;
        f->exif_len = length;
    }
    if (length)
        (*src->skip_input_data)(cinfo, (long)length);
    return TRUE;
}

/* a * b / 255, rounded to nearest, for a, b in 0..255. */
static uint8_t mul255(unsigned a, unsigned b)
{
    unsigned t = a * b + 128;
    return (uint8_t)((t + (t >> 8)) >> 8);
}

/* Naive CMYK -> RGB (no colour management): R = (255-C)(255-K)/255 ...
 * Adobe applications store CMYK inverted (255 = no ink) and mark such files
 * with an APP14 "Adobe" segment; without it the samples are ink amounts. */
static void cmyk_row_to_rgb(const JSAMPLE *in, uint8_t *out, uint32_t width, int inverted)
{
    for (uint32_t x = 0; x < width; x++, in += CMYK_CHANNELS, out += RGB_CHANNELS) {
        unsigned c = in[0], m = in[1], y = in[2], k = in[3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        out[0] = mul255(c, k);
        out[1] = mul255(m, k);
        out[2] = mul255(y, k);
    }
}

/* ---- decoding ------------------------------------------------------------------ */

/* Read output rows [cinfo->output_scanline, end) into out, row r at row
 * r - first of out. */
static int read_pixels(j_decompress_ptr cinfo, int cmyk, JDIMENSION first, JDIMENSION end,
                       struct shard_image *out)
{
    if (cmyk) {
        /* from libjpeg's image pool: freed by jpeg_destroy_decompress */
        JSAMPARRAY row = (*cinfo->mem->alloc_sarray)((j_common_ptr)cinfo, JPOOL_IMAGE,
                                                     cinfo->output_width * CMYK_CHANNELS, 1);
        while (cinfo->output_scanline < end) {
            uint8_t *dst = out->pixels + (size_t)(cinfo->output_scanline - first) * out->stride;
            if (jpeg_read_scanlines(cinfo, row, 1) != 1)
                return SHARD_ECORRUPT;
            cmyk_row_to_rgb(row[0], dst, cinfo->output_width, cinfo->saw_Adobe_marker);
        }
        return SHARD_OK;
    }
    while (cinfo->output_scanline < end) {
        JSAMPROW rows[ROWS_PER_READ];
        JDIMENSION at = cinfo->output_scanline;
        JDIMENSION n = end - at;
        if (n > ROWS_PER_READ)
            n = ROWS_PER_READ;
        for (JDIMENSION i = 0; i < n; i++)
            rows[i] = out->pixels + (size_t)(at + i - first) * out->stride;
        if (jpeg_read_scanlines(cinfo, rows, n) == 0)
            return SHARD_ECORRUPT; /* cannot happen with a memory source */
    }
    return SHARD_OK;
}

/* Go past the rows after the box to the end of the image, entropy-decoding
 * them.  jpeg_skip_scanlines() to the very end would mark the input as
 * finished without reading it (libjpeg-turbo 2.1 sets eoi_reached), and
 * damage there would go unnoticed: so skip all but the last row, which
 * decodes every iMCU row up to it, and read that one. */
static int skip_to_end(j_decompress_ptr cinfo)
{
    if (cinfo->output_scanline >= cinfo->output_height)
        return SHARD_OK;
    JDIMENSION last = cinfo->output_height - 1;
    if (cinfo->output_scanline < last)
        jpeg_skip_scanlines(cinfo, last - cinfo->output_scanline);
    /* from libjpeg's image pool: freed by jpeg_destroy_decompress */
    JSAMPARRAY row = (*cinfo->mem->alloc_sarray)((j_common_ptr)cinfo, JPOOL_IMAGE,
                                                 cinfo->output_width *
                                                     (JDIMENSION)cinfo->output_components,
                                                 1);
    while (cinfo->output_scanline < cinfo->output_height)
        if (jpeg_read_scanlines(cinfo, row, 1) != 1)
            return SHARD_ECORRUPT;
    return SHARD_OK;
}

/* The region to decode for a box: the box widened by one iMCU on each side
 * (clamped to the image), so that fancy upsampling, which treats the edges
 * of what it decodes as the image's edges, gives the box the pixels of a
 * full decode.  Rows are rounded out to whole iMCU rows too. */
static void box_region(j_decompress_ptr cinfo, const struct sk_jpeg_box *box, JDIMENSION *x0,
                       JDIMENSION *x1, JDIMENSION *y0, JDIMENSION *y1)
{
    JDIMENSION mw = (JDIMENSION)(cinfo->max_h_samp_factor * cinfo->min_DCT_scaled_size);
    JDIMENSION mh = (JDIMENSION)(cinfo->max_v_samp_factor * cinfo->min_DCT_scaled_size);
    JDIMENSION w = cinfo->output_width, h = cinfo->output_height;
    JDIMENSION left = box->left / mw * mw, top = box->top / mh * mh;
    uint64_t right = ((uint64_t)box->left + box->width + mw - 1) / mw * mw + mw;
    uint64_t bottom = ((uint64_t)box->top + box->height + mh - 1) / mh * mh + mh;
    *x0 = left > mw ? left - mw : 0;
    *y0 = top > mh ? top - mh : 0;
    *x1 = right < w ? (JDIMENSION)right : w;
    *y1 = bottom < h ? (JDIMENSION)bottom : h;
}

static int decode_guarded(struct jpeg_session *s, const uint8_t *data, size_t len,
                          const struct shard_decode_options *o, struct sk_jpeg_box *box,
                          struct shard_image *out, int *orientation, uint32_t *source_w,
                          uint32_t *source_h, unsigned *scale_num, struct shard_err *err)
{
    j_decompress_ptr cinfo = &s->cinfo;
    if (setjmp(s->failure.jump))
        return shard_err_set(err, s->failure.code, "%s", s->failure.reason);

    jpeg_create_decompress(cinfo);
    if (o->max_memory)
        cinfo->mem->max_memory_to_use = o->max_memory > LONG_MAX ? LONG_MAX : (long)o->max_memory;
    s->progress.progress_monitor = on_progress;
    cinfo->progress = &s->progress;
    jpeg_mem_src(cinfo, data, (unsigned long)len);
    /* APP14 "Adobe" needs no processor: libjpeg always parses it and sets
     * saw_Adobe_marker. */
    jpeg_set_marker_processor(cinfo, EXIF_MARKER, on_app1);

    if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK)
        return shard_err_set(err, SHARD_ECORRUPT, "corrupt JPEG: no image, only tables");
    int rc = sk_decode_check_pixels(cinfo->image_width, cinfo->image_height, o, err);
    if (rc)
        return rc;
    /* the first APP1 segment that holds EXIF */
    if (s->failure.exif)
        *orientation = sk_exif_orientation(s->failure.exif, s->failure.exif_len);
    *source_w = cinfo->image_width;
    *source_h = cinfo->image_height;
    if (box && *orientation != SHARD_ORIENTATION_NORMAL)
        return SK_JPEG_NEEDS_FULL; /* the box is in upright coordinates */
    if (box &&
        ((uint64_t)box->left + box->width > cinfo->image_width ||
         (uint64_t)box->top + box->height > cinfo->image_height || !box->width || !box->height))
        return shard_err_set(err, SHARD_EINVAL, "box %ux%u at (%u, %u) is outside the %ux%u JPEG",
                             box->width, box->height, box->left, box->top, cinfo->image_width,
                             cinfo->image_height);

    int cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    /* a grey JPEG stays grey unless RGB is asked for (a box is always RGB) */
    int grey = !box && !sk_decode_wants_rgb8(o) && cinfo->jpeg_color_space == JCS_GRAYSCALE;
    /* libjpeg-turbo converts YCbCr, RGB and grayscale to RGB itself; for
     * CMYK/YCCK it only goes as far as CMYK. */
    cinfo->out_color_space = cmyk ? JCS_CMYK : grey ? JCS_GRAYSCALE : JCS_EXT_RGB;
    cinfo->dct_method = DCT_METHOD;
    cinfo->do_fancy_upsampling = FANCY_UPSAMPLING;
    cinfo->scale_num = box ? SK_JPEG_SCALE_DENOM
                           : sk_jpeg_scale_num(cinfo->image_width, cinfo->image_height, o->target,
                                               o->fit);
    cinfo->scale_denom = SK_JPEG_SCALE_DENOM;
    *scale_num = cinfo->scale_num;

    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != (cmyk ? CMYK_CHANNELS : grey ? 1 : RGB_CHANNELS))
        return shard_err_set(err, SHARD_EUNSUPPORTED, "unsupported: JPEG with %d components",
                             cinfo->num_components);
    JDIMENSION x0 = 0, x1 = cinfo->output_width, y0 = 0, y1 = cinfo->output_height;
    if (box) {
        box_region(cinfo, box, &x0, &x1, &y0, &y1);
        JDIMENSION width = x1 - x0;
        if (width < cinfo->output_width)
            jpeg_crop_scanline(cinfo, &x0, &width); /* x0 moves to an iMCU boundary */
        box->region_left = x0;
        box->region_top = y0;
        if (y0)
            jpeg_skip_scanlines(cinfo, y0);
    }
    rc = shard_image_alloc(out, cinfo->output_width, y1 - y0, grey ? 1 : RGB_CHANNELS, err);
    if (rc)
        return rc;
    if (read_pixels(cinfo, cmyk, y0, y1, out) || skip_to_end(cinfo))
        return shard_err_set(err, SHARD_ECORRUPT, "corrupt JPEG: decoder returned no rows");
    /* reads up to EOI, so damage after the last row is still reported */
    jpeg_finish_decompress(cinfo);
    return SHARD_OK;
}

/* sk_decode_jpeg and sk_decode_jpeg_box: box NULL for the whole image. */
static int decode_session(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                          struct sk_jpeg_box *box, struct shard_image *out, int *orientation,
                          uint32_t *source_w, uint32_t *source_h, unsigned *scale_num,
                          char *warning, struct shard_err *err)
{
    warning[0] = '\0';
    if (len > ULONG_MAX) /* jpeg_mem_src takes an unsigned long */
        return shard_err_set(err, SHARD_ELIMIT, "JPEG of %zu bytes is too large", len);
    struct jpeg_session s;
    memset(&s, 0, sizeof s);
    s.cinfo.err = jpeg_std_error(&s.failure.mgr);
    s.failure.mgr.error_exit = on_error_exit;
    s.failure.mgr.emit_message = on_emit_message;
    s.failure.mgr.output_message = on_output_message;
    s.failure.max_memory = o->max_memory;
    s.failure.data = data;
    s.failure.len = len;
    s.failure.walk = (struct segment_walk){SOI_BYTES, 1, 0};
    *orientation = SHARD_ORIENTATION_NORMAL;
    *scale_num = SK_JPEG_SCALE_DENOM;

    int rc = decode_guarded(&s, data, len, o, box, out, orientation, source_w, source_h, scale_num,
                            err);
    if (!rc)
        sk_decode_warning_report(&s.failure.warnings, "JPEG", warning);
    /* safe also when jpeg_create_decompress failed half-way: it zeroes the
     * struct first and destroy skips a NULL memory manager */
    jpeg_destroy_decompress(&s.cinfo);
    return rc;
}

int sk_decode_jpeg(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                   struct shard_image *out, int *orientation, uint32_t *source_w,
                   uint32_t *source_h, unsigned *scale_num, char *warning, struct shard_err *err)
{
    return decode_session(data, len, o, NULL, out, orientation, source_w, source_h, scale_num,
                          warning, err);
}

int sk_decode_jpeg_box(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                       struct sk_jpeg_box *box, struct shard_image *out, uint32_t *source_w,
                       uint32_t *source_h, char *warning, struct shard_err *err)
{
    int orientation;
    unsigned scale_num;
    box->region_left = box->region_top = 0;
    return decode_session(data, len, o, box, out, &orientation, source_w, source_h, &scale_num,
                          warning, err);
}
