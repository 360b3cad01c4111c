/* resize_internal.h - the resampling engine behind shard_resize() (private).
 *
 * shard_resize() always uses SHARD_RESIZE_DEFAULT; the other filters exist so
 * that bench/resize_quality.c can show, on real images, why it was chosen. */
#ifndef SHARDKIT_RESIZE_INTERNAL_H
#define SHARDKIT_RESIZE_INTERNAL_H

#include "shardkit/image.h"

enum shard_resize_filter {
    /* Pillow's BILINEAR: a triangle whose support grows with the reduction
     * factor (interpolation when enlarging). */
    SHARD_RESIZE_TRIANGLE = 0,
    /* Area averaging when shrinking: each output pixel is the mean of the
     * source area it covers, partial pixels weighted by coverage (OpenCV's
     * INTER_AREA); bilinear interpolation when enlarging. */
    SHARD_RESIZE_AREA = 1,
    /* Pillow's BICUBIC (Catmull-Rom, a = -0.5), support grows likewise. */
    SHARD_RESIZE_CUBIC = 2,
};

#define SHARD_RESIZE_DEFAULT SHARD_RESIZE_AREA

/* Resample src to a window of the scaled_w x scaled_h resampled image: the
 * win_w x win_h pixels at (win_x, win_y) are written to dst (reallocated).
 * The pixels of the window are exactly those a full resample would give.
 * `scratch` (may be NULL) is used as raw memory for filter taps and
 * intermediate rows; its capacity is kept for the next call.  src and dst must
 * be different images.  0 or an error. */
int sk_resample(const struct shard_image *src, uint32_t scaled_w, uint32_t scaled_h, uint32_t win_x,
                uint32_t win_y, uint32_t win_w, uint32_t win_h, enum shard_resize_filter filter,
                struct shard_image *scratch, struct shard_image *dst, struct shard_err *err);

/* Which kernels run: the result is the same whichever (the tests check). */
enum shard_simd {
    SHARD_SIMD_NONE = 0,  /* portable C */
    SHARD_SIMD_SSSE3 = 1, /* x86: SSE2 vertical pass, SSSE3 horizontal pass */
    SHARD_SIMD_AVX2 = 2,  /* x86: AVX2 both passes */
};

/* sk_resample with at most the given kernels (less when the CPU lacks
 * them); sk_resample uses the best the CPU has. */
int sk_resample_simd(const struct shard_image *src, uint32_t scaled_w, uint32_t scaled_h,
                     uint32_t win_x, uint32_t win_y, uint32_t win_w, uint32_t win_h,
                     enum shard_resize_filter filter, enum shard_simd simd,
                     struct shard_image *scratch, struct shard_image *dst, struct shard_err *err);

/* A part of a source image, in pixel units (pixel i spans [i, i + 1)):
 * [x0, x1) x [y0, y1), inside the image, of positive size. */
struct sk_box {
    double x0, y0, x1, y1;
};

/* sk_resample_simd resampling the part `box` of src (not the whole image) to
 * scaled_w x scaled_h: output pixel j is centred on box->x0 + (j + 0.5) *
 * (box->x1 - box->x0) / scaled_w.  Taps outside the box but inside the image
 * are used (as at any inner edge); NULL is the whole image. */
int sk_resample_box(const struct shard_image *src, const struct sk_box *box, uint32_t scaled_w,
                    uint32_t scaled_h, uint32_t win_x, uint32_t win_y, uint32_t win_w,
                    uint32_t win_h, enum shard_resize_filter filter, enum shard_simd simd,
                    struct shard_image *scratch, struct shard_image *dst, struct shard_err *err);

#endif
