/* decode_internal.h - what the decoder files in lib/ share (private).
 *
 * shard_decode() (decode.c) checks the input size, sniffs the signature and
 * hands the bytes to one of the format decoders below.  Each decoder checks
 * the declared dimensions with sk_decode_check_pixels() before it allocates
 * pixels, fills *out with 8-bit RGB (or the source's own form, see
 * sk_decode_wants_rgb8) and reports the EXIF orientation it found
 * (1..8; 1 when there is none), which decode.c applies afterwards.  The libvips
 * decoder rotates by itself and always reports 1.
 *
 * Only decode_vips.c uses libvips: the read path (record payloads are JPEG,
 * PNG or raw) decodes through sk_decode_image without it, and the reader's
 * archive (libshardkit-read.a) leaves that file out.
 *
 * All of them are thread-safe: their state lives on the caller's stack.
 */
#ifndef SHARDKIT_DECODE_INTERNAL_H
#define SHARDKIT_DECODE_INTERNAL_H

#include "shardkit/image.h"

/* EXIF orientation values (TIFF tag 0x0112). */
#define SHARD_ORIENTATION_NORMAL 1
#define SHARD_ORIENTATION_MAX 8

/* ---- decode.c ------------------------------------------------------------ */

/* A decoder of the formats sk_decode_image does not decode itself (WebP,
 * TIFF, GIF): fills *out with upright 8-bit RGB, checking the declared size
 * with sk_decode_check_pixels first. */
typedef int sk_format_decoder(enum shard_image_format format, const uint8_t *data, size_t len,
                              const struct shard_decode_options *o, struct shard_image *out,
                              struct shard_err *err);

/* shard_decode_ex, with the decoder of WebP, TIFF and GIF given by the
 * caller: shard_decode_ex passes the libvips one; NULL (the payload decoder)
 * refuses those formats with SHARD_EUNSUPPORTED, so whatever calls this with
 * NULL links without libvips.  o may be NULL (the defaults), info too. */
int sk_decode_image(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                    struct shard_image *out, struct shard_decode_info *info,
                    sk_format_decoder *vips, struct shard_err *err);

/* 1 when o asks for 8-bit RGB (channels 0 or 3, depth 0 or 8: shardkit
 * 0.1.0's output), which the decoders make by their RGB paths; otherwise
 * they give the source's own form (channels 1..4, 8 or 16 bits) and
 * sk_decode_image converts it to the one asked for. */
int sk_decode_wants_rgb8(const struct shard_decode_options *o);

/* SHARD_ELIMIT with "declared WxH exceeds --max-pixels N" when w*h is over
 * o->max_pixels (0: no limit); otherwise 0. */
int sk_decode_check_pixels(uint32_t w, uint32_t h, const struct shard_decode_options *o,
                           struct shard_err *err);

/* The harmless warnings of one decode (see shard_decode): how many, and the
 * text of the first, which is what gets reported. */
#define DECODE_WARNING_TEXT_SIZE (SHARD_ERRMSG_SIZE - 64) /* room for the rest */
struct decode_warnings {
    unsigned count;
    char first[DECODE_WARNING_TEXT_SIZE];
};

/* Count a harmless warning (library text, already in our message style). */
void sk_decode_warning_add(struct decode_warnings *w, const char *text);

/* out (SHARD_ERRMSG_SIZE bytes): "" when there was none, else
 * "<LABEL> warning: <first>", with " (and N more)" when there were several. */
void sk_decode_warning_report(const struct decode_warnings *w, const char *label, char *out);

/* Copy a message from an image library into dst (NUL-terminated, truncated
 * to n bytes), lower-casing its first letter when it starts an ordinary word
 * ("Bogus marker length" -> "bogus marker length"; "IDAT: CRC error" is kept),
 * so the text fits our lower-case message style. */
void sk_decode_copy_reason(char *dst, size_t n, const char *msg);

/* ---- sniff.c ------------------------------------------------------------- */

/* Upper-case label used in messages: "JPEG", "PNG", "WEBP", ... */
const char *sk_format_label(enum shard_image_format f);

/* ---- exif.c -------------------------------------------------------------- */

/* Orientation (1..8) stored in IFD0 of an EXIF block that starts with the
 * "Exif\0\0" header (a JPEG APP1 payload).  1 when absent or unreadable:
 * a broken EXIF block never makes an image undecodable. */
int sk_exif_orientation(const uint8_t *exif, size_t len);

/* ---- decode_jpeg.c ------------------------------------------------------- */

/* libjpeg-turbo scales the IDCT by M / SK_JPEG_SCALE_DENOM, M = 1..16. */
#define SK_JPEG_SCALE_DENOM 8

/* The DCT scaling numerator M for a w x h JPEG, decoded at M/8: the smallest
 * of 1, 2 and 4 that keeps the side `fit` scales to `target` (short side for
 * SHARD_FIT_SHORT and SHARD_FIT_CROP, long side for SHARD_FIT_LONG) at least
 * `target` pixels once scaled (libjpeg gives ceil(side * M / 8)); 8 (full
 * size) when none does or target is 0.  The other M/8 scales were measured
 * and rejected (BENCHMARKS.md §1): libjpeg-turbo 2.1 has SIMD code only for the
 * 8x8, 4x4 and 2x2 IDCTs, so 3/8, 5/8, 6/8 and 7/8 decode slower than full
 * size, and their truncated IDCT scores 2-3 dB below a full-size decode
 * resampled by shard_resize. */
unsigned sk_jpeg_scale_num(uint32_t w, uint32_t h, uint32_t target, enum shard_fit fit);

/* *source_w x *source_h: the size the header declares, before DCT scaling;
 * *scale_num: the M of the M/8 scale decoded at (8: full size).
 * warning (SHARD_ERRMSG_SIZE bytes): "" or the harmless warnings met. */
int sk_decode_jpeg(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                   struct shard_image *out, int *orientation, uint32_t *source_w,
                   uint32_t *source_h, unsigned *scale_num, char *warning, struct shard_err *err);

/* A box of a JPEG to decode (sk_decode_jpeg_box), in the image's pixels,
 * and where the region decoded for it starts. */
struct sk_jpeg_box {
    uint32_t left, top, width, height; /* in: inside the image */
    uint32_t region_left, region_top;  /* out: the decoded region's first pixel */
};

/* sk_decode_jpeg returns this (> 0, not an error) for a box when the JPEG
 * carries an EXIF orientation other than 1: the box cannot be placed before
 * the image is turned, so decode it whole instead. */
#define SK_JPEG_NEEDS_FULL 1

/* Decode, at full scale, only the part of a JPEG that holds box: out gets
 * the region [region_left, region_left + out->width) x [region_top,
 * region_top + out->height), which contains the box, and the box's pixels
 * equal those of a full decode byte for byte.  Columns are cropped with
 * jpeg_crop_scanline, rows before the region skipped with
 * jpeg_skip_scanlines (one iMCU of margin on each side keeps fancy
 * upsampling exact); the rows after it are still entropy-decoded and the
 * stream read to its end, so damage anywhere is reported as by
 * sk_decode_jpeg.  No EXIF orientation is applied: SK_JPEG_NEEDS_FULL when
 * there is one.  Errors as sk_decode_jpeg, and SHARD_EINVAL for a box
 * outside the image. */
int sk_decode_jpeg_box(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                       struct sk_jpeg_box *box, struct shard_image *out, uint32_t *source_w,
                       uint32_t *source_h, char *warning, struct shard_err *err);

/* ---- decode_png.c -------------------------------------------------------- */

/* warning as for sk_decode_jpeg. */
int sk_decode_png(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                  struct shard_image *out, int *orientation, char *warning, struct shard_err *err);

/* A grey or palette PNG's stored numbers, not its colours (a mask of class
 * ids): out gets channels 1 (palette indices, grey of 1..8 bits, unscaled)
 * or 2 (16-bit grey, each value little-endian).  No orientation is applied
 * (an eXIf chunk is ignored) and nothing is composited.  The same limits,
 * damage rules and warnings as sk_decode_png; SHARD_ENOTIMAGE when data is
 * no PNG, SHARD_EUNSUPPORTED for colour or alpha. */
int sk_decode_png_values(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                         struct shard_image *out, char *warning, struct shard_err *err);

#endif
