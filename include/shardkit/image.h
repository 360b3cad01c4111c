/*
 * shardkit/image.h - decoding, resizing and encoding images.
 *
 * Pixels are interleaved, row-major (HWC), of 1 to 4 channels (grey, grey
 * and alpha, RGB, RGBA: a "pixel form") of 8 or 16 bits each; a 16-bit
 * sample is a uint16_t in the host's byte order.  Decoders produce 8-bit RGB
 * unless their options ask for another form (shard_decode_options.channels
 * and .depth), always with any EXIF orientation already applied, so every
 * stored sample looks the way a careful viewer shows it.
 *
 * Ownership: a struct shard_image owns its memory.  It may be reused across
 * calls (its capacity is kept, which avoids page faults in tight loops) and is
 * released with shard_image_release(), which accepts NULL and zeroed structs;
 * struct shard_buf (shardkit/util.h) works the same way.
 *
 * Tiers (shardkit/api.h): struct shard_image and its allocation and
 * release, the names of forms, fits, codecs and formats, and the geometry
 * (shard_geometry_compute, _apply, _apply_decoded: the loader's transforms
 * use them) are stable; decoding, resizing, encoding, sniffing, converting
 * forms and parsing names are experimental (SHARDKIT_EXPERIMENTAL); the
 * older names at the end are deprecated.
 */
#ifndef SHARDKIT_IMAGE_H
#define SHARDKIT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- images ------------------------------------------------------------- */

struct shard_image {
    uint8_t *pixels; /* owned; width*height*channels samples, rows `stride` bytes apart */
    uint32_t width;
    uint32_t height;
    uint32_t channels; /* 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (SHARD_PIXELS_*) */
    size_t stride;     /* bytes per row; width*channels*(depth/8) for images made here */
    size_t capacity;   /* bytes usable from `pixels` on */
    size_t offset;     /* bytes of its allocation before `pixels`: 0, except after a
                        * raw shard read, which leaves the pixels where the record
                        * was decompressed instead of copying them out */
    /* Bits per sample: 8, or 16 (each sample a uint16_t in host order); 0 is
     * read as 8 (an image filled in by a program written before 16-bit
     * images existed, positionally or not: it is the last member). */
    uint32_t depth;
};

/* (Re)shape *img to w x h x channels of 8 bits, reusing its memory when large
 * enough.  Contents are undefined.  Refuses sizes whose byte count overflows
 * size_t.  0, SHARD_ENOMEM or SHARD_ELIMIT. */
SHARD_API int shard_image_alloc(struct shard_image *img, uint32_t w, uint32_t h, uint32_t channels,
                                struct shard_err *err);
/* shard_image_alloc of `depth` bits per sample (8 or 16; SHARD_EINVAL for
 * any other, and for channels outside 1..4). */
SHARD_API int shard_image_alloc_form(struct shard_image *img, uint32_t w, uint32_t h,
                                     uint32_t channels, uint32_t depth, struct shard_err *err);
/* Free the pixels and zero the struct.  Accepts NULL. */
SHARD_API void shard_image_release(struct shard_image *img);

/* ---- pixel forms -------------------------------------------------------- */

/* Channels of a pixel form; the names are shard_pixels_name's. */
#define SHARD_PIXELS_GRAY 1u       /* "gray" */
#define SHARD_PIXELS_GRAY_ALPHA 2u /* "gray-alpha" */
#define SHARD_PIXELS_RGB 3u        /* "rgb" */
#define SHARD_PIXELS_RGBA 4u       /* "rgba" */
/* As channels or depth of a request (shard_decode_options, a conversion's
 * config): the source's own ("auto"). */
#define SHARD_PIXELS_AUTO 255u
#define SHARD_DEPTH_AUTO 255u

/* The name of 1..4 channels or SHARD_PIXELS_AUTO; "unknown" for others. */
SHARD_API const char *shard_pixels_name(uint32_t channels);

#ifdef SHARDKIT_EXPERIMENTAL
/* Parse "gray", "gray-alpha", "rgb", "rgba" or "auto" (SHARD_PIXELS_AUTO)
 * into *channels.  0 or SHARD_EINVAL. */
SHARD_API int shard_pixels_parse(const char *s, uint32_t *channels);
/* Parse "8", "16" or "auto" (SHARD_DEPTH_AUTO) into *depth.  0 or SHARD_EINVAL. */
SHARD_API int shard_depth_parse(const char *s, uint32_t *depth);

/* Convert src to `channels` x `depth` bits into dst (reallocated; src and
 * dst must differ).  Grey to colour copies the grey; colour to grey is the
 * luma 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601, Pillow's "L"), rounded;
 * an alpha channel added is opaque; one removed is composited over
 * `background` (RGB, 8-bit; its red for grey); 8 to 16 bits multiplies by
 * 257 (exact: 255 becomes 65535), 16 to 8 rounds v * 255 / 65535.  0 or an
 * error (SHARD_EINVAL for a form outside 1..4 x 8/16). */
SHARD_API int shard_image_convert(const struct shard_image *src, uint32_t channels, uint32_t depth,
                                  const uint8_t background[3], struct shard_image *dst,
                                  struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- sniffing ----------------------------------------------------------- */

enum shard_image_format {
    SHARD_FORMAT_UNKNOWN = 0,
    SHARD_FORMAT_JPEG,
    SHARD_FORMAT_PNG,
    SHARD_FORMAT_WEBP,
    SHARD_FORMAT_TIFF,
    SHARD_FORMAT_GIF,
    SHARD_FORMAT_BMP,
};

/* "jpeg", "png", ... or "unknown". */
SHARD_API const char *shard_format_name(enum shard_image_format f);

#ifdef SHARDKIT_EXPERIMENTAL
/* Identify an image by its leading bytes (never by file name: ImageNet holds
 * a PNG named .JPEG).  Returns SHARD_FORMAT_UNKNOWN when nothing matches. */
SHARD_API enum shard_image_format shard_sniff(const uint8_t *data, size_t len);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- geometry ----------------------------------------------------------- */

enum shard_fit {
    SHARD_FIT_SHORT = 0, /* shorter side becomes `size` (torchvision Resize(size)) */
    SHARD_FIT_LONG = 1,  /* longer side becomes `size` */
    SHARD_FIT_CROP = 2,  /* shorter side becomes `size`, then centre crop size x size */
};

/* "short" / "long" / "crop", or "unknown". */
SHARD_API const char *shard_fit_name(enum shard_fit f);
#ifdef SHARDKIT_EXPERIMENTAL
/* Parse "short" / "long" / "crop".  0 or SHARD_EINVAL. */
SHARD_API int shard_fit_parse(const char *s, enum shard_fit *out);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_geometry {
    uint32_t scaled_w, scaled_h; /* size after resampling */
    uint32_t crop_x, crop_y;     /* top-left of the kept window inside the scaled image */
    uint32_t out_w, out_h;       /* final size (== scaled size unless cropping) */
};

/* Compute where an image of w x h ends up.  The side that is scaled to `size`
 * gets exactly `size`; the other side is floor(other * size / side), at least 1
 * (the same rule as torchvision's Resize).  With upscale == 0 an image whose
 * relevant side is already <= size keeps its size (and a crop window is then
 * min(size, side) square).  0 or SHARD_EINVAL (zero sizes). */
SHARD_API int shard_geometry_compute(uint32_t w, uint32_t h, uint32_t size, enum shard_fit fit,
                                     int upscale, struct shard_geometry *g);

/* ---- decoding ----------------------------------------------------------- */

struct shard_decode_options {
    uint64_t max_pixels;     /* refuse images whose header declares more (0: no limit) */
    uint64_t max_file_bytes; /* refuse inputs larger than this (0: no limit) */
    uint64_t max_memory;     /* decoder working-memory cap in bytes (0: library default) */
    /* Hint for DCT-domain downscaling: when target > 0, a JPEG may be decoded
     * at 1/2, 1/4 or 1/8 scale as long as the side that `fit` scales to
     * `target` stays >= target (shard_decode_info says where the picture
     * lies in it).  0 decodes at full size. */
    uint32_t target;
    enum shard_fit fit;
    uint8_t background[3]; /* alpha is composited over this colour (default white) */
    /* The pixel form to decode to (both sit where the struct had padding, and
     * 0 keeps shardkit 0.1.0's output): channels 0 or SHARD_PIXELS_RGB is RGB,
     * 1, 2 or 4 another form (shard_image_convert's rules), SHARD_PIXELS_AUTO
     * the source's own (a grey JPEG or PNG gives 1 channel, a PNG with alpha
     * or a tRNS chunk 2 or 4, a palette PNG 3 or 4); depth 0 or 8 is 8 bits,
     * 16 is 16, SHARD_DEPTH_AUTO 16 for a 16-bit PNG or TIFF, else 8. */
    uint8_t channels;
    uint8_t depth;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Defaults: max_pixels 100000000, max_file_bytes 1 GiB, max_memory 1 GiB,
 * target 0, fit short, background white (255,255,255). */
SHARD_API void shard_decode_options_init(struct shard_decode_options *o);

/* Decode an in-memory image to 8-bit RGB with EXIF orientation applied.
 * JPEG: libjpeg-turbo (grayscale -> RGB, CMYK/YCCK incl. Adobe-inverted -> RGB,
 *       a premature end of data is an error, not a grey-padded image).
 * PNG:  libpng (palette, gray, 16-bit, alpha composited on o->background,
 *       interlaced; user limits set).
 * WebP, TIFF, GIF: libvips with untrusted loaders blocked.  BMP is refused
 *       (SHARD_EUNSUPPORTED): libvips 8.14 reads it only through ImageMagick,
 *       which is not hardened for untrusted input.
 * `o` may be NULL for the defaults.  After a failure *out may be released
 * but its contents are undefined.
 * The dimensions declared by the header are checked against o->max_pixels
 * before any pixel buffer is allocated.
 * On success *out holds the image (its previous memory is reused or freed).
 * Errors: SHARD_ENOTIMAGE ("not an image: unknown signature"), SHARD_ECORRUPT
 * ("truncated JPEG" ...), SHARD_EUNSUPPORTED ("unsupported: 12-bit JPEG"),
 * SHARD_ELIMIT ("declared 40000x40000 exceeds --max-pixels 100000000"),
 * SHARD_ENOMEM.  err->msg carries the specific reason, without a file name.
 * Decoder warnings: libjpeg and libpng report recoverable damage as
 * warnings.  One after which every pixel still comes from the file's own
 * data (junk bytes between JPEG marker segments, an unknown JFIF version,
 * data after a PNG's image stream ...) is accepted and reported in
 * shard_decode_info.warning; one after which pixels are invented or dropped
 * (premature end, corrupt entropy-coded data, extra bytes after a JPEG
 * scan, a PNG checksum or transparency that does not apply ...) is an
 * SHARD_ECORRUPT error, as is any warning not known to be harmless.
 * shard_decode and shard_decode_ex link libvips: the
 * reader's archive (libshardkit-read.a) leaves them out. */
SHARD_API int shard_decode(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                           struct shard_image *out, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* What shard_decode_ex learned besides the pixels. */
struct shard_decode_info {
    enum shard_image_format format;
    int orientation;        /* EXIF orientation 1..8 that was applied (1: none) */
    uint32_t source_width;  /* the image's full size, upright (after orientation), */
    uint32_t source_height; /* before any DCT-domain downscaling */
    /* Where the picture lies in the decoded image, in its pixels (pixel i
     * spans [i, i + 1)): [box_x0, box_x1) x [box_y0, box_y1).  The whole
     * image, except after a DCT-scaled decode of a side that the scale does
     * not divide: libjpeg decodes ceil(side * M / 8) pixels for side * M / 8
     * of picture, so the picture ends inside the last pixel (the first one
     * when orientation mirrors that axis).  shard_geometry_apply_decoded() resamples
     * from this box, so that the picture is not stretched by that fraction. */
    double box_x0, box_y0, box_x1, box_y1;
    /* "" or the decoder warning the image was accepted despite, e.g.
     * "JPEG warning: 3 extraneous bytes before marker 0xdb" (with
     * " (and N more)" when there were several).  Only warnings that lose no
     * pixel data are accepted (see shard_decode); the others are errors. */
    char warning[SHARD_ERRMSG_SIZE];
};

#ifdef SHARDKIT_EXPERIMENTAL
/* shard_decode, also filling *info (when not NULL).  Output geometry must be
 * computed from info->source_width x source_height, not from the decoded size:
 * a DCT-scaled decode rounds its size up, so the two can differ by a pixel. */
SHARD_API int shard_decode_ex(const uint8_t *data, size_t len, const struct shard_decode_options *o,
                              struct shard_image *out, struct shard_decode_info *info,
                              struct shard_err *err);

/* ---- resizing ----------------------------------------------------------- */

/* Resample src to dst_w x dst_h (antialiased when shrinking).  dst is
 * (re)allocated.  src and dst must be different images.  0 or an error. */
SHARD_API int shard_resize(const struct shard_image *src, uint32_t dst_w, uint32_t dst_h,
                           struct shard_image *dst, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Apply a geometry: resample to g->scaled_w x g->scaled_h and cut the
 * g->out_w x g->out_h window at (crop_x, crop_y).  When no resampling is
 * needed the pixels are copied.  `tmp` is scratch space the caller may reuse
 * across calls.  0 or an error. */
SHARD_API int shard_geometry_apply(const struct shard_image *src, const struct shard_geometry *g,
                                   struct shard_image *tmp, struct shard_image *dst,
                                   struct shard_err *err);

/* shard_geometry_apply of an image shard_decode_ex() made: resamples the picture's
 * box in src (info->box_*), not the whole of src, to g (computed from
 * info->source_width x source_height).  Use it after a DCT-scaled decode.
 * 0 or an error. */
SHARD_API int shard_geometry_apply_decoded(const struct shard_image *src,
                                           const struct shard_decode_info *info,
                                           const struct shard_geometry *g, struct shard_image *tmp,
                                           struct shard_image *dst, struct shard_err *err);

/* ---- encoding (the payload stored in a record) -------------------------- */

enum shard_codec {
    SHARD_CODEC_RAW = 0,  /* the samples as they are, row-major HWC (16-bit ones little-endian) */
    SHARD_CODEC_JPEG = 1, /* baseline JPEG, libjpeg-turbo: 4:2:0 YCbCr, or 1 grey component */
    SHARD_CODEC_PNG = 2,  /* PNG of the image's form (grey, grey+alpha, RGB, RGBA; 8 or 16 bits) */
};

/* "raw" / "jpeg" / "png", or "unknown". */
SHARD_API const char *shard_codec_name(enum shard_codec c);

#ifdef SHARDKIT_EXPERIMENTAL
/* Parse "raw" / "jpeg" / "png".  0 or SHARD_EINVAL. */
SHARD_API int shard_codec_parse(const char *s, enum shard_codec *out);

/* Encode img with `codec` into out (replacing its contents): raw and PNG
 * take any form (1..4 channels of 8 or 16 bits), JPEG grey or RGB of 8 bits
 * (SHARD_EINVAL for another).  quality (1..100) is used for JPEG only.
 * Deterministic: the same pixels and options always give the same bytes.
 * 0 or an error. */
SHARD_API int shard_encode(const struct shard_image *img, enum shard_codec codec, int quality,
                           struct shard_buf *out, struct shard_err *err);

/* Decode a stored payload back to 8-bit RGB pixels (whatever form it was
 * stored in: shardkit 0.1.0's reading) and check that it has the dimensions
 * the record declares.  For RAW the bytes are copied (they must be 8-bit
 * RGB); JPEG and PNG are decoded as shard_decode does, but without libvips (a
 * payload is never WebP, TIFF or GIF), so the reader's archive has it.
 * 0, SHARD_ECORRUPT (size or dimension mismatch, damaged stream) or an error. */
SHARD_API int shard_decode_payload(enum shard_codec codec, const uint8_t *data, size_t len,
                                   uint32_t width, uint32_t height, struct shard_image *out,
                                   struct shard_err *err);

/* shard_decode_payload of a payload stored as `channels` (1..4) of `depth`
 * (8 or 16) bits, a record's form: *out gets exactly that form, and a
 * payload that holds another (a grey PNG in an RGB record) is SHARD_ECORRUPT,
 * as a raw payload of another size is. */
SHARD_API int shard_decode_payload_form(enum shard_codec codec, const uint8_t *data, size_t len,
                                        uint32_t width, uint32_t height, uint32_t channels,
                                        uint32_t depth, struct shard_image *out,
                                        struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- older names (deprecated) --------------------------------------------
 *
 * shardkit 0.1.0's names of the functions above, kept so that a program
 * written against them still compiles (the compiler warns and names the new
 * one) and one built against them still links and runs: each is exported
 * under its old name and does exactly what the new one does.
 * CONTRIBUTING.md's "Words" says why the names changed. */

SHARD_API int shard_transform(const struct shard_image *src, const struct shard_geometry *g,
                              struct shard_image *tmp, struct shard_image *dst,
                              struct shard_err *err) SHARD_DEPRECATED("use shard_geometry_apply");
SHARD_API int shard_transform_from(const struct shard_image *src,
                                   const struct shard_decode_info *info,
                                   const struct shard_geometry *g, struct shard_image *tmp,
                                   struct shard_image *dst, struct shard_err *err)
    SHARD_DEPRECATED("use shard_geometry_apply_decoded");

#ifdef __cplusplus
}
#endif
#endif
