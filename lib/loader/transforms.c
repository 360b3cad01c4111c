/* transforms.c - sample transforms: the random choices (specified in
 * shardkit/loader.h) and applying them to pixels, written straight into the
 * caller's output in its layout and dtype.
 *
 * Geometry first, pixels second: shard_transforms_draw() walks the steps on
 * sizes alone (so a loader knows every output's size, and can place it,
 * before decoding), and shard_transforms_apply() replays those choices on the
 * pixels.  Crops are views into the current image (no copy); resampling goes
 * through the library's resampler (image/resize_internal.h) with the
 * triangle filter, ping-ponging between two workspace images; the last image
 * is converted once, while it is written to the output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
/* x86-64 only: its float arithmetic is SSE's, single rounding per operation,
 * as the table's values were computed (x87's excess precision is not). */
#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_X86_SIMD 1
#include <immintrin.h>
#else
#define HAVE_X86_SIMD 0
#endif

#include "util/endian.h"
#include "util/random.h"
#include "image/resize_internal.h"
#include "image/values.h"
#include "loader/transforms_internal.h"
#include "shardkit/loader.h"
#include "image/image_internal.h"

/* torchvision's get_params: attempts before the centre fallback. */
#define RRC_ATTEMPTS 10
#define CHANNELS 3     /* RGB: a NORMALIZE step's means, the SIMD writer's pixels */
#define MAX_CHANNELS 4 /* RGBA */
/* The filter torchvision uses (Pillow's antialiased BILINEAR). */
#define TRANSFORM_FILTER SHARD_RESIZE_TRIANGLE

struct shard_transforms {
    struct shard_transform_step steps[SHARD_TRANSFORMS_MAX_STEPS];
    size_t count;
    enum shard_layout layout;
    enum shard_dtype dtype;
    /* the value written for each channel's byte: x / 255 or NORMALIZE's
     * (the fourth, RGBA's alpha, is x / 255: a step has 3 means) */
    float lut32[MAX_CHANNELS][256];
    uint16_t lut16[MAX_CHANNELS][256];
    float mean[MAX_CHANNELS], std[MAX_CHANNELS]; /* NORMALIZE's, as floats (0 and 1 without) */
    int avx2; /* the AVX2 float32 planar writer runs here, and gives lut32's values */
    int fixed;
    uint32_t fixed_w, fixed_h;
};

struct shard_transforms_workspace {
    struct shard_image img[2];  /* resampled or copied images, used in turn */
    struct shard_image scratch; /* the resampler's taps and rows */
    struct shard_image mask[2]; /* a mask's resampled or padded values, used in turn */
};

static const char *op_name(enum shard_transform_op op)
{
    switch (op) {
    case SHARD_TRANSFORM_RANDOM_RESIZED_CROP: return "random_resized_crop";
    case SHARD_TRANSFORM_CENTER_CROP: return "center_crop";
    case SHARD_TRANSFORM_RESIZE: return "resize";
    case SHARD_TRANSFORM_HORIZONTAL_FLIP: return "horizontal_flip";
    case SHARD_TRANSFORM_NORMALIZE: return "normalize";
    }
    return "unknown";
}

void shard_transform_step_init(struct shard_transform_step *s, enum shard_transform_op op)
{
    memset(s, 0, sizeof *s);
    s->op = op;
    s->scale[0] = 0.08;
    s->scale[1] = 1.0;
    s->ratio[0] = 3.0 / 4.0;
    s->ratio[1] = 4.0 / 3.0;
    s->p = 0.5;
    for (int c = 0; c < CHANNELS; c++)
        s->std[c] = 1.0;
}

int shard_layout_parse(const char *s, enum shard_layout *out)
{
    if (!strcmp(s, "NHWC"))
        *out = SHARD_LAYOUT_NHWC;
    else if (!strcmp(s, "NCHW"))
        *out = SHARD_LAYOUT_NCHW;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

int shard_dtype_parse(const char *s, enum shard_dtype *out)
{
    if (!strcmp(s, "uint8"))
        *out = SHARD_DTYPE_UINT8;
    else if (!strcmp(s, "float32"))
        *out = SHARD_DTYPE_FLOAT32;
    else if (!strcmp(s, "float16"))
        *out = SHARD_DTYPE_FLOAT16;
    else if (!strcmp(s, "uint16"))
        *out = SHARD_DTYPE_UINT16;
    else
        return SHARD_EINVAL;
    return SHARD_OK;
}

size_t shard_dtype_size(enum shard_dtype d)
{
    return d == SHARD_DTYPE_FLOAT32                              ? 4
           : d == SHARD_DTYPE_FLOAT16 || d == SHARD_DTYPE_UINT16 ? 2
                                                                 : 1;
}

/* float32 -> IEEE binary16, round to nearest, ties to even (as torch's and
 * numpy's conversions). */
static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) /* inf, nan (kept quiet) */
        return sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0);
    if (mag >= 0x477ff000u) /* >= 65520 rounds to inf */
        return sign | 0x7c00u;
    if (mag < 0x38800000u) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        float a;
        memcpy(&a, &mag, sizeof a);
        return sign | (uint16_t)lrintf(a * 16777216.0f); /* exact scaling; 1024 is 2^-14 */
    }
    /* normal: round the 13 dropped bits to even, then rebias 127 -> 15 */
    uint32_t rounded = mag + 0xfffu + ((mag >> 13) & 1u);
    return sign | (uint16_t)((rounded - 0x38000000u) >> 13);
}

/* Symbolic output size after the steps, when it does not depend on the input. */
static void find_fixed_size(struct shard_transforms *a)
{
    int known = 0;
    uint32_t w = 0, h = 0;
    for (size_t k = 0; k < a->count; k++) {
        const struct shard_transform_step *s = &a->steps[k];
        switch (s->op) {
        case SHARD_TRANSFORM_RANDOM_RESIZED_CROP:
        case SHARD_TRANSFORM_CENTER_CROP: known = 1, w = s->width, h = s->height; break;
        case SHARD_TRANSFORM_RESIZE:
            if (s->width) {
                known = 1, w = s->width, h = s->height;
            } else if (known) {
                uint32_t sh = w <= h ? w : h, lg = w <= h ? h : w;
                uint64_t nl = (uint64_t)s->height * lg / sh;
                if (w <= h)
                    w = s->height, h = (uint32_t)nl;
                else
                    h = s->height, w = (uint32_t)nl;
                if (nl == 0 || nl > SHARD_TRANSFORMS_MAX_SIDE)
                    known = 0;
            }
            break;
        case SHARD_TRANSFORM_HORIZONTAL_FLIP:
        case SHARD_TRANSFORM_NORMALIZE: break;
        }
    }
    a->fixed = known;
    a->fixed_w = known ? w : 0;
    a->fixed_h = known ? h : 0;
}

static int check_size(size_t k, const struct shard_transform_step *s, struct shard_err *err)
{
    int need_width = s->op != SHARD_TRANSFORM_RESIZE;
    if (s->height == 0 || s->height > SHARD_TRANSFORMS_MAX_SIDE)
        return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): size %u is outside 1..%u", k,
                             op_name(s->op), s->height, SHARD_TRANSFORMS_MAX_SIDE);
    if ((need_width && s->width == 0) || s->width > SHARD_TRANSFORMS_MAX_SIDE)
        return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): width %u is outside 1..%u", k,
                             op_name(s->op), s->width, SHARD_TRANSFORMS_MAX_SIDE);
    return SHARD_OK;
}

static int check_range(size_t k, const struct shard_transform_step *s, const char *name,
                       const double *r, struct shard_err *err)
{
    if (!(isfinite(r[0]) && isfinite(r[1]) && r[0] > 0 && r[0] <= r[1]))
        return shard_err_set(err, SHARD_EINVAL,
                             "step %zu (%s): %s (%g, %g) must be two finite numbers with "
                             "0 < first <= second",
                             k, op_name(s->op), name, r[0], r[1]);
    return SHARD_OK;
}

static int check_step(size_t k, const struct shard_transform_step *s, int after_normalize,
                      enum shard_dtype dtype, struct shard_err *err)
{
    int rc = SHARD_OK;
    if (after_normalize && s->op != SHARD_TRANSFORM_HORIZONTAL_FLIP)
        return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): only flips may follow normalize", k,
                             op_name(s->op));
    switch (s->op) {
    case SHARD_TRANSFORM_RANDOM_RESIZED_CROP:
        if ((rc = check_size(k, s, err)) || (rc = check_range(k, s, "scale", s->scale, err)) ||
            (rc = check_range(k, s, "ratio", s->ratio, err)))
            return rc;
        return SHARD_OK;
    case SHARD_TRANSFORM_CENTER_CROP:
    case SHARD_TRANSFORM_RESIZE: return check_size(k, s, err);
    case SHARD_TRANSFORM_HORIZONTAL_FLIP:
        if (!(s->p >= 0 && s->p <= 1))
            return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): p %g is outside 0..1", k,
                                 op_name(s->op), s->p);
        return SHARD_OK;
    case SHARD_TRANSFORM_NORMALIZE:
        if (dtype == SHARD_DTYPE_UINT8 || dtype == SHARD_DTYPE_UINT16)
            return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): needs a float dtype, not %s", k,
                                 op_name(s->op), dtype == SHARD_DTYPE_UINT8 ? "uint8" : "uint16");
        for (int c = 0; c < CHANNELS; c++) {
            if (!isfinite(s->mean[c]))
                return shard_err_set(err, SHARD_EINVAL, "step %zu (%s): mean[%d] is %g", k,
                                     op_name(s->op), c, s->mean[c]);
            if (!isfinite(s->std[c]) || s->std[c] == 0 || !isfinite((float)s->std[c]) ||
                (float)s->std[c] == 0)
                return shard_err_set(err, SHARD_EINVAL,
                                     "step %zu (%s): std[%d] is %g (must be finite, non-zero)", k,
                                     op_name(s->op), c, s->std[c]);
        }
        return SHARD_OK;
    }
    return shard_err_set(err, SHARD_EINVAL, "step %zu: unknown op %d", k, (int)s->op);
}

/* ---- float32 NCHW with AVX2 ---------------------------------------------------- */

#if HAVE_X86_SIMD
/* pshufb masks taking channel c's bytes of 16 RGB pixels (48 bytes, three
 * loads) into one register, in pixel order; -1 gives a zero byte. */
#define N (-1)
static const int8_t deinterleave[CHANNELS][3][16] = {
    {{0, 3, 6, 9, 12, 15, N, N, N, N, N, N, N, N, N, N},
     {N, N, N, N, N, N, 2, 5, 8, 11, 14, N, N, N, N, N},
     {N, N, N, N, N, N, N, N, N, N, N, 1, 4, 7, 10, 13}},
    {{1, 4, 7, 10, 13, N, N, N, N, N, N, N, N, N, N, N},
     {N, N, N, N, N, 0, 3, 6, 9, 12, 15, N, N, N, N, N},
     {N, N, N, N, N, N, N, N, N, N, N, 2, 5, 8, 11, 14}},
    {{2, 5, 8, 11, 14, N, N, N, N, N, N, N, N, N, N, N},
     {N, N, N, N, N, 1, 4, 7, 10, 13, N, N, N, N, N, N},
     {N, N, N, N, N, N, N, N, N, N, 0, 3, 6, 9, 12, 15}},
};
#undef N
#define PIXELS_PER_BLOCK 16

/* 8 bytes -> the table's values, computed as the table was: x / 255, then
 * (v - mean) / std, each operation rounded once (IEEE division is exact to
 * the last bit, so the values are the table's; planes_avx2_agree checks). */
__attribute__((target("avx2"))) static inline __m256 values8(__m128i bytes, __m256 scale,
                                                             __m256 mean, __m256 std)
{
    __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    return _mm256_div_ps(_mm256_sub_ps(_mm256_div_ps(v, scale), mean), std);
}

/* One image row of n RGB pixels to its three float32 plane rows out[c]
 * (mirrored when asked): 16 pixels per block, the rest with the table. */
__attribute__((target("avx2"))) static void planes_row_avx2(const struct shard_transforms *a,
                                                            const uint8_t *in, uint32_t n,
                                                            int mirror, float *const out[CHANNELS])
{
    const __m256 scale = _mm256_set1_ps(255.0f);
    const __m128i reverse = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    uint32_t x = 0;
    for (; x + PIXELS_PER_BLOCK <= n; x += PIXELS_PER_BLOCK) {
        /* outputs x.. come from pixels x.., or mirrored from n - 16 - x.. reversed */
        const uint8_t *p = in + (size_t)(mirror ? n - PIXELS_PER_BLOCK - x : x) * CHANNELS;
        __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
        __m128i b2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
        for (int c = 0; c < CHANNELS; c++) {
            const __m128i *m = (const __m128i *)(const void *)deinterleave[c];
            __m128i bytes = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(b0, _mm_loadu_si128(m)),
                                                      _mm_shuffle_epi8(b1, _mm_loadu_si128(m + 1))),
                                         _mm_shuffle_epi8(b2, _mm_loadu_si128(m + 2)));
            if (mirror)
                bytes = _mm_shuffle_epi8(bytes, reverse);
            __m256 mean = _mm256_set1_ps(a->mean[c]), std = _mm256_set1_ps(a->std[c]);
            _mm256_storeu_ps(out[c] + x, values8(bytes, scale, mean, std));
            _mm256_storeu_ps(out[c] + x + 8, values8(_mm_srli_si128(bytes, 8), scale, mean, std));
        }
    }
    for (; x < n; x++) {
        const uint8_t *p = in + (size_t)(mirror ? n - 1 - x : x) * CHANNELS;
        for (int c = 0; c < CHANNELS; c++)
            out[c][x] = a->lut32[c][p[c]];
    }
}

/* 1 when the CPU runs planes_row_avx2 and it gives exactly lut32's values
 * for every byte of every channel, mirrored or not (the arithmetic is the
 * table's, so it does; this keeps it so). */
static int planes_avx2_agree(const struct shard_transforms *a)
{
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    uint8_t row[256 * CHANNELS];
    float got[CHANNELS][256];
    float *const out[CHANNELS] = {got[0], got[1], got[2]};
    for (int x = 0; x < 256; x++)
        for (int c = 0; c < CHANNELS; c++)
            row[x * CHANNELS + c] = (uint8_t)x;
    for (int mirror = 0; mirror < 2; mirror++) {
        planes_row_avx2(a, row, 256, mirror, out);
        for (int c = 0; c < CHANNELS; c++)
            for (int x = 0; x < 256; x++)
                if (memcmp(&got[c][x], &a->lut32[c][mirror ? 255 - x : x], sizeof(float)))
                    return 0;
    }
    return 1;
}
#else
static int planes_avx2_agree(const struct shard_transforms *a)
{
    (void)a;
    return 0;
}
#endif

int shard_transforms_new(struct shard_transforms **out, const struct shard_transform_step *steps,
                         size_t count, enum shard_layout layout, enum shard_dtype dtype,
                         struct shard_err *err)
{
    *out = NULL;
    if (count > SHARD_TRANSFORMS_MAX_STEPS)
        return shard_err_set(err, SHARD_EINVAL, "%zu transforms: at most %d", count,
                             SHARD_TRANSFORMS_MAX_STEPS);
    if (layout != SHARD_LAYOUT_NHWC && layout != SHARD_LAYOUT_NCHW)
        return shard_err_set(err, SHARD_EINVAL, "unknown layout %d", (int)layout);
    if (dtype != SHARD_DTYPE_UINT8 && dtype != SHARD_DTYPE_FLOAT32 &&
        dtype != SHARD_DTYPE_FLOAT16 && dtype != SHARD_DTYPE_UINT16)
        return shard_err_set(err, SHARD_EINVAL, "unknown dtype %d", (int)dtype);
    const struct shard_transform_step *normalize = NULL;
    for (size_t k = 0; k < count; k++) {
        int rc = check_step(k, &steps[k], normalize != NULL, dtype, err);
        if (rc)
            return rc;
        if (steps[k].op == SHARD_TRANSFORM_NORMALIZE)
            normalize = &steps[k];
    }
    struct shard_transforms *a = calloc(1, sizeof *a);
    if (!a)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (count)
        memcpy(a->steps, steps, count * sizeof *steps);
    a->count = count;
    a->layout = layout;
    a->dtype = dtype;
    for (int c = 0; c < MAX_CHANNELS; c++) {
        int normalized = normalize && c < CHANNELS;
        float mean = normalized ? (float)normalize->mean[c] : 0.0f;
        float std = normalized ? (float)normalize->std[c] : 1.0f;
        a->mean[c] = mean;
        a->std[c] = std;
        for (int x = 0; x < 256; x++) {
            /* torchvision: img.float().div(255), then .sub_(mean).div_(std) */
            float v = (float)x / 255.0f;
            if (normalized)
                v = (v - mean) / std;
            a->lut32[c][x] = v;
            a->lut16[c][x] = float_to_half(v);
        }
    }
    a->avx2 = planes_avx2_agree(a);
    find_fixed_size(a);
    *out = a;
    return SHARD_OK;
}

void shard_transforms_free(struct shard_transforms *a)
{
    free(a);
}

enum shard_layout shard_transforms_layout(const struct shard_transforms *a)
{
    return a->layout;
}

enum shard_dtype shard_transforms_dtype(const struct shard_transforms *a)
{
    return a->dtype;
}

int shard_transforms_fixed_size(const struct shard_transforms *a, uint32_t *width, uint32_t *height)
{
    *width = a->fixed_w;
    *height = a->fixed_h;
    return a->fixed;
}

/* ---- the random choices ---------------------------------------------------- */

/* uniform(a, b) of loader.h: 53 random bits scaled into [a, b). */
static double uniform(uint64_t *state, double lo, double hi)
{
    double u = (double)(sk_splitmix64(state) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}

/* torchvision's RandomResizedCrop.get_params on a w x h image. */
static void random_resized_box(uint64_t *state, const struct shard_transform_step *s, uint32_t w,
                               uint32_t h, struct shard_transform_choice *c)
{
    const double area = (double)w * h;
    const double log_lo = log(s->ratio[0]), log_hi = log(s->ratio[1]);
    for (int attempt = 1; attempt <= RRC_ATTEMPTS; attempt++) {
        double target = area * uniform(state, s->scale[0], s->scale[1]);
        double aspect = exp(uniform(state, log_lo, log_hi));
        double bw = rint(sqrt(target * aspect)), bh = rint(sqrt(target / aspect));
        if (bw > 0 && bw <= w && bh > 0 && bh <= h) {
            c->box_width = (uint32_t)bw;
            c->box_height = (uint32_t)bh;
            c->top = (int32_t)sk_random_below(state, h - c->box_height + 1);
            c->left = (int32_t)sk_random_below(state, w - c->box_width + 1);
            c->attempts = attempt;
            return;
        }
    }
    /* the centre fallback */
    double in_ratio = (double)w / h;
    uint32_t bw = w, bh = h;
    if (in_ratio < s->ratio[0])
        bh = (uint32_t)rint(w / s->ratio[0]);
    else if (in_ratio > s->ratio[1])
        bw = (uint32_t)rint(h * s->ratio[1]);
    /* the rounding cannot leave the image: w / ratio[0] < h, h * ratio[1] < w */
    bw = bw < 1 ? 1 : bw > w ? w : bw;
    bh = bh < 1 ? 1 : bh > h ? h : bh;
    c->box_width = bw;
    c->box_height = bh;
    c->top = (int32_t)((h - bh) / 2);
    c->left = (int32_t)((w - bw) / 2);
    c->attempts = 0;
}

/* CENTER_CROP's offset on one axis of `size` for a crop of `crop`. */
static int32_t center_offset(uint32_t size, uint32_t crop)
{
    if (crop > size) /* padded with (crop - size) // 2 before */
        return -(int32_t)((crop - size) / 2);
    return (int32_t)rint((size - crop) / 2.0);
}

int shard_transforms_draw(const struct shard_transforms *a, uint32_t width, uint32_t height,
                          uint64_t seed, uint64_t epoch, uint64_t index,
                          struct shard_transforms_draws *out, struct shard_err *err)
{
    memset(out, 0, sizeof *out);
    if (width == 0 || height == 0)
        return shard_err_set(err, SHARD_EINVAL, "transform input of %ux%u pixels", width, height);
    uint64_t state = sk_derive(seed, SK_TAG_TRANSFORMS, epoch, 0, index);
    uint32_t w = width, h = height;
    for (size_t k = 0; k < a->count; k++) {
        const struct shard_transform_step *s = &a->steps[k];
        struct shard_transform_choice *c = &out->step[k];
        c->in_width = w, c->in_height = h;
        c->box_width = w, c->box_height = h;
        switch (s->op) {
        case SHARD_TRANSFORM_RANDOM_RESIZED_CROP:
            random_resized_box(&state, s, w, h, c);
            w = s->width, h = s->height;
            break;
        case SHARD_TRANSFORM_CENTER_CROP:
            c->left = center_offset(w, s->width);
            c->top = center_offset(h, s->height);
            c->box_width = w = s->width;
            c->box_height = h = s->height;
            break;
        case SHARD_TRANSFORM_RESIZE:
            if (s->width) {
                w = s->width, h = s->height;
            } else {
                /* torchvision: int(size * long / short); exact in integers */
                uint32_t sh = w <= h ? w : h, lg = w <= h ? h : w;
                uint64_t nl = (uint64_t)s->height * lg / sh;
                if (nl == 0 || nl > SHARD_TRANSFORMS_MAX_SIDE)
                    return shard_err_set(err, SHARD_ELIMIT,
                                         "resize of %ux%u to %u on the short side gives a "
                                         "side of %llu pixels",
                                         w, h, s->height, (unsigned long long)nl);
                if (w <= h)
                    w = s->height, h = (uint32_t)nl;
                else
                    h = s->height, w = (uint32_t)nl;
            }
            break;
        case SHARD_TRANSFORM_HORIZONTAL_FLIP: c->flip = uniform(&state, 0, 1) < s->p; break;
        case SHARD_TRANSFORM_NORMALIZE: break;
        }
        if ((uint64_t)w * h > SHARD_TRANSFORMS_MAX_PIXELS)
            return shard_err_set(err, SHARD_ELIMIT, "transform output of %ux%u exceeds %llu pixels",
                                 w, h, (unsigned long long)SHARD_TRANSFORMS_MAX_PIXELS);
        c->out_width = w, c->out_height = h;
    }
    out->steps = (uint32_t)a->count;
    out->out_width = w;
    out->out_height = h;
    out->out_bytes = (size_t)w * h * CHANNELS * shard_dtype_size(a->dtype);
    return SHARD_OK;
}

/* ---- applying them ----------------------------------------------------------- */

int shard_transforms_workspace_new(struct shard_transforms_workspace **out, struct shard_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

void shard_transforms_workspace_free(struct shard_transforms_workspace *w)
{
    if (!w)
        return;
    shard_image_release(&w->img[0]);
    shard_image_release(&w->img[1]);
    shard_image_release(&w->scratch);
    shard_image_release(&w->mask[0]);
    shard_image_release(&w->mask[1]);
    free(w);
}

/* A view of the box (left, top, bw, bh), inside v, of v's pixels (not owned). */
static struct shard_image subview(const struct shard_image *v, uint32_t left, uint32_t top,
                                  uint32_t bw, uint32_t bh)
{
    struct shard_image s = *v;
    s.pixels = v->pixels + (size_t)top * v->stride +
               (size_t)left * v->channels * sk_image_sample_bytes(v);
    s.width = bw;
    s.height = bh;
    s.capacity = 0;
    s.offset = 0;
    return s;
}

/* The images of one apply: `cur` is a view of src or of one workspace image;
 * the next image made goes to the other one (img[next]). */
struct run {
    struct shard_transforms_workspace *ws;
    struct shard_image cur;
    int next;
    int mirror; /* a flip not yet applied to cur's pixels */
};

static struct shard_image *run_target(struct run *r)
{
    struct shard_image *t = &r->ws->img[r->next];
    r->next ^= 1;
    return t;
}

/* Apply a pending flip to the pixels (before a step that moves them). */
static int run_unmirror(struct run *r, struct shard_err *err)
{
    if (!r->mirror)
        return SHARD_OK;
    struct shard_image *t = run_target(r);
    const uint32_t n = r->cur.channels * sk_image_sample_bytes(&r->cur); /* bytes a pixel */
    int rc = shard_image_alloc_form(t, r->cur.width, r->cur.height, r->cur.channels,
                                    r->cur.depth == 16 ? 16 : 8, err);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < r->cur.height; y++) {
        const uint8_t *in = r->cur.pixels + (size_t)y * r->cur.stride;
        uint8_t *o = t->pixels + (size_t)y * t->stride;
        for (uint32_t x = 0, back = r->cur.width - 1; x < r->cur.width; x++, back--)
            memcpy(o + (size_t)x * n, in + (size_t)back * n, n);
    }
    r->cur = *t;
    r->mirror = 0;
    return SHARD_OK;
}

/* Resample `from` to scaled_w x scaled_h and keep the window (x, y, w, h). */
static int run_resample(struct run *r, const struct shard_image *from, uint32_t scaled_w,
                        uint32_t scaled_h, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
                        struct shard_err *err)
{
    if (scaled_w == from->width && scaled_h == from->height) { /* nothing to resample */
        r->cur = subview(from, x, y, w, h);
        return SHARD_OK;
    }
    struct shard_image *t = run_target(r);
    int rc = sk_resample(from, scaled_w, scaled_h, x, y, w, h, TRANSFORM_FILTER, &r->ws->scratch, t,
                         err);
    if (!rc)
        r->cur = *t;
    return rc;
}

/* CENTER_CROP with padding: the box reaches outside the image. */
static int run_pad_crop(struct run *r, const struct shard_transform_choice *c,
                        struct shard_err *err)
{
    struct shard_image *t = run_target(r);
    const uint32_t n = r->cur.channels * sk_image_sample_bytes(&r->cur); /* bytes a pixel */
    int rc = shard_image_alloc_form(t, c->box_width, c->box_height, r->cur.channels,
                                    r->cur.depth == 16 ? 16 : 8, err);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < t->height; y++)
        memset(t->pixels + (size_t)y * t->stride, 0, (size_t)t->width * n);
    /* the part of the image inside the box */
    int64_t x0 = c->left > 0 ? c->left : 0, y0 = c->top > 0 ? c->top : 0;
    int64_t x1 = (int64_t)c->left + c->box_width, y1 = (int64_t)c->top + c->box_height;
    x1 = x1 < r->cur.width ? x1 : r->cur.width;
    y1 = y1 < r->cur.height ? y1 : r->cur.height;
    for (int64_t y = y0; y < y1 && x1 > x0; y++)
        memcpy(t->pixels + (size_t)(y - c->top) * t->stride + (size_t)(x0 - c->left) * n,
               r->cur.pixels + (size_t)y * r->cur.stride + (size_t)x0 * n, (size_t)(x1 - x0) * n);
    r->cur = *t;
    return SHARD_OK;
}

static int box_inside(const struct shard_transform_choice *c)
{
    return c->box_width > 0 && c->box_height > 0 && c->left >= 0 && c->top >= 0 &&
           (uint64_t)c->left + c->box_width <= c->in_width &&
           (uint64_t)c->top + c->box_height <= c->in_height;
}

/* Write v (mirrored when asked) as `T` values through `lut`: the loops are
 * specialised per dtype and layout by inlining with constant arguments. */
#define WRITE_OUTPUT(T, VALUE)                                                                   \
    do {                                                                                         \
        T *o = dst;                                                                              \
        const size_t plane = (size_t)v->width * v->height;                                       \
        const uint32_t n = v->channels;                                                          \
        for (uint32_t y = 0; y < v->height; y++) {                                               \
            const uint8_t *row = v->pixels + (size_t)y * v->stride;                              \
            if (layout == SHARD_LAYOUT_NHWC) {                                                   \
                T *out = o + (size_t)y * v->width * n;                                           \
                for (uint32_t x = 0; x < v->width; x++) {                                        \
                    const uint8_t *p = row + (size_t)(mirror ? v->width - 1 - x : x) * n;        \
                    for (uint32_t c = 0; c < n; c++)                                             \
                        out[(size_t)x * n + c] = VALUE(c, p[c]);                                 \
                }                                                                                \
            } else {                                                                             \
                for (uint32_t c = 0; c < n; c++) {                                               \
                    T *out = o + c * plane + (size_t)y * v->width;                               \
                    for (uint32_t x = 0; x < v->width; x++)                                      \
                        out[x] = VALUE(c, row[(size_t)(mirror ? v->width - 1 - x : x) * n + c]); \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)

#define AS_BYTE(c, x) (x)
#define AS_FLOAT(c, x) (a->lut32[c][x])
#define AS_HALF(c, x) (a->lut16[c][x])

static inline __attribute__((always_inline)) void write_values(const struct shard_transforms *a,
                                                               const struct shard_image *v,
                                                               int mirror, enum shard_layout layout,
                                                               enum shard_dtype dtype, void *dst)
{
    if (dtype == SHARD_DTYPE_UINT8 && layout == SHARD_LAYOUT_NHWC && !mirror) {
        const size_t row = (size_t)v->width * v->channels;
        for (uint32_t y = 0; y < v->height; y++)
            memcpy((uint8_t *)dst + y * row, v->pixels + (size_t)y * v->stride, row);
    } else if (dtype == SHARD_DTYPE_UINT8) {
        WRITE_OUTPUT(uint8_t, AS_BYTE);
    } else if (dtype == SHARD_DTYPE_FLOAT32) {
        WRITE_OUTPUT(float, AS_FLOAT);
    } else {
        WRITE_OUTPUT(uint16_t, AS_HALF);
    }
}

/* The value of 16-bit sample x of channel c in the output's dtype: x / 65535,
 * then NORMALIZE's (v - mean) / std (mean 0 and std 1 without one); uint8
 * output rounds x * 255 / 65535, uint16 is x. */
static inline void put16(const struct shard_transforms *a, uint32_t c, uint16_t x, void *dst,
                         size_t at)
{
    if (a->dtype == SHARD_DTYPE_UINT16) {
        ((uint16_t *)dst)[at] = x;
        return;
    }
    if (a->dtype == SHARD_DTYPE_UINT8) {
        ((uint8_t *)dst)[at] = (uint8_t)(((uint32_t)x * 255 + 32767) / 65535);
        return;
    }
    float v = ((float)x / 65535.0f - a->mean[c]) / a->std[c];
    if (a->dtype == SHARD_DTYPE_FLOAT32)
        ((float *)dst)[at] = v;
    else
        ((uint16_t *)dst)[at] = float_to_half(v);
}

/* write_output of a 16-bit image, or of an 8-bit one to uint16 (x * 257,
 * the 16-bit sample of the same level); scalar: both are rare. */
static void write_output16(const struct shard_transforms *a, const struct shard_image *v,
                           int mirror, void *dst)
{
    const uint32_t n = v->channels, bytes = v->depth == 16 ? 2 : 1;
    const size_t plane = (size_t)v->width * v->height;
    for (uint32_t y = 0; y < v->height; y++) {
        const uint8_t *row = v->pixels + (size_t)y * v->stride;
        for (uint32_t x = 0; x < v->width; x++) {
            const uint8_t *p = row + (size_t)(mirror ? v->width - 1 - x : x) * n * bytes;
            for (uint32_t c = 0; c < n; c++) {
                uint16_t s;
                if (bytes == 2)
                    memcpy(&s, p + 2 * c, 2);
                else
                    s = (uint16_t)(p[c] * 257u);
                size_t at = a->layout == SHARD_LAYOUT_NHWC ? ((size_t)y * v->width + x) * n + c
                                                           : c * plane + (size_t)y * v->width + x;
                put16(a, c, s, dst, at);
            }
        }
    }
}

static void write_output(const struct shard_transforms *a, const struct shard_image *v, int mirror,
                         void *dst)
{
    if (v->depth == 16 || a->dtype == SHARD_DTYPE_UINT16) {
        write_output16(a, v, mirror, dst);
        return;
    }
#if HAVE_X86_SIMD
    if (a->avx2 && v->channels == CHANNELS && a->layout == SHARD_LAYOUT_NCHW &&
        a->dtype == SHARD_DTYPE_FLOAT32) {
        const size_t plane = (size_t)v->width * v->height;
        for (uint32_t y = 0; y < v->height; y++) {
            float *row = (float *)dst + (size_t)y * v->width;
            float *const out[CHANNELS] = {row, row + plane, row + 2 * plane};
            planes_row_avx2(a, v->pixels + (size_t)y * v->stride, v->width, mirror, out);
        }
        return;
    }
#endif
    /* one call per (layout, dtype, mirror), each with constant arguments: each
     * gets its own loops */
#define WRITE_CASE(L, D)                          \
    if (a->layout == (L) && a->dtype == (D)) {    \
        if (mirror)                               \
            write_values(a, v, 1, (L), (D), dst); \
        else                                      \
            write_values(a, v, 0, (L), (D), dst); \
        return;                                   \
    }
    WRITE_CASE(SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8)
    WRITE_CASE(SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT32)
    WRITE_CASE(SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT16)
    WRITE_CASE(SHARD_LAYOUT_NCHW, SHARD_DTYPE_UINT8)
    WRITE_CASE(SHARD_LAYOUT_NCHW, SHARD_DTYPE_FLOAT32)
    WRITE_CASE(SHARD_LAYOUT_NCHW, SHARD_DTYPE_FLOAT16)
#undef WRITE_CASE
}

/* shard_transforms_apply, writing the output in a's layout and dtype, or
 * uint8 NHWC when `rgb`. */
static int apply(const struct shard_transforms *a, const struct shard_image *src,
                 const struct shard_transforms_draws *draws, struct shard_transforms_workspace *w,
                 int rgb, void *dst, struct shard_err *err)
{
    if (!src || !src->pixels || src->channels < 1 || src->channels > MAX_CHANNELS ||
        src->width == 0 || src->height == 0)
        return shard_err_set(err, SHARD_EINVAL,
                             "transform input is not an image of 1 to 4 channels");
    if (draws->steps != a->count || (a->count && (draws->step[0].in_width != src->width ||
                                                  draws->step[0].in_height != src->height)))
        return shard_err_set(err, SHARD_EINVAL,
                             "transform choices were drawn for another image or list");
    struct run r = {w, *src, 0, 0};
    int rc = SHARD_OK;
    for (size_t k = 0; k < a->count && !rc; k++) {
        const struct shard_transform_step *s = &a->steps[k];
        const struct shard_transform_choice *c = &draws->step[k];
        if (c->in_width != r.cur.width || c->in_height != r.cur.height || c->out_width == 0 ||
            c->out_height == 0 || (s->op == SHARD_TRANSFORM_RANDOM_RESIZED_CROP && !box_inside(c)))
            return shard_err_set(err, SHARD_EINVAL,
                                 "transform choices of step %zu do not fit its %ux%u input", k,
                                 r.cur.width, r.cur.height);
        switch (s->op) {
        case SHARD_TRANSFORM_RANDOM_RESIZED_CROP: {
            if ((rc = run_unmirror(&r, err)))
                break;
            struct shard_image box = subview(&r.cur, (uint32_t)c->left, (uint32_t)c->top,
                                             c->box_width, c->box_height);
            rc = run_resample(&r, &box, c->out_width, c->out_height, 0, 0, c->out_width,
                              c->out_height, err);
            break;
        }
        case SHARD_TRANSFORM_RESIZE: {
            if ((rc = run_unmirror(&r, err)))
                break;
            /* a centre crop that follows and stays inside: one windowed resample */
            const struct shard_transform_step *ns = k + 1 < a->count ? &a->steps[k + 1] : NULL;
            const struct shard_transform_choice *nc = &draws->step[k + 1];
            struct shard_image from = r.cur;
            if (ns && ns->op == SHARD_TRANSFORM_CENTER_CROP && box_inside(nc)) {
                rc = run_resample(&r, &from, c->out_width, c->out_height, (uint32_t)nc->left,
                                  (uint32_t)nc->top, nc->box_width, nc->box_height, err);
                k++;
            } else {
                rc = run_resample(&r, &from, c->out_width, c->out_height, 0, 0, c->out_width,
                                  c->out_height, err);
            }
            break;
        }
        case SHARD_TRANSFORM_CENTER_CROP:
            if ((rc = run_unmirror(&r, err)))
                break;
            if (box_inside(c))
                r.cur = subview(&r.cur, (uint32_t)c->left, (uint32_t)c->top, c->box_width,
                                c->box_height);
            else
                rc = run_pad_crop(&r, c, err);
            break;
        case SHARD_TRANSFORM_HORIZONTAL_FLIP: r.mirror ^= c->flip; break;
        case SHARD_TRANSFORM_NORMALIZE: break; /* in the output's values */
        }
    }
    if (rc)
        return rc;
    if (rgb && r.mirror)
        write_values(a, &r.cur, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, dst);
    else if (rgb)
        write_values(a, &r.cur, 0, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, dst);
    else
        write_output(a, &r.cur, r.mirror, dst);
    return SHARD_OK;
}

int shard_transforms_apply(const struct shard_transforms *a, const struct shard_image *src,
                           const struct shard_transforms_draws *draws,
                           struct shard_transforms_workspace *w, void *dst, struct shard_err *err)
{
    return apply(a, src, draws, w, 0, dst, err);
}

int sk_transforms_apply_rgb(const struct shard_transforms *a, const struct shard_image *src,
                            const struct shard_transforms_draws *draws,
                            struct shard_transforms_workspace *w, void *dst, struct shard_err *err)
{
    return apply(a, src, draws, w, 1, dst, err);
}

/* ---- boxes and masks: the same choices ----------------------------------------- */

/* One axis of a box through a step: x' = (x - shift) * scale, clamped to
 * [0, size] when the step crops (torchvision's crop clamps its boxes to the
 * new canvas, its resize only scales them). */
static void box_axis(double *lo, double *hi, double shift, double scale, uint32_t size, int clamp)
{
    *lo = (*lo - shift) * scale;
    *hi = (*hi - shift) * scale;
    if (clamp) {
        *lo = *lo < 0 ? 0 : *lo > size ? size : *lo;
        *hi = *hi < 0 ? 0 : *hi > size ? size : *hi;
    }
}

static float get_f32(const uint8_t *p)
{
    uint32_t bits = get_le32(p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void set_f32(uint8_t *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put_le32(p, bits);
}

size_t shard_transforms_boxes(const struct shard_transforms *a,
                              const struct shard_transforms_draws *d, double dx, double dy,
                              double min_size, const uint8_t *in, size_t n, uint8_t *out)
{
    return sk_transforms_boxes_keep(a, d, dx, dy, min_size, in, n, out, NULL);
}

size_t sk_transforms_boxes_keep(const struct shard_transforms *a,
                                const struct shard_transforms_draws *d, double dx, double dy,
                                double min_size, const uint8_t *in, size_t n, uint8_t *out,
                                uint8_t *keep)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (keep)
            keep[i] = 0;
        const uint8_t *p = in + i * SHARD_BOX_BYTES;
        double x0 = get_f32(p) - dx, y0 = get_f32(p + 4) - dy;
        double x1 = get_f32(p + 8) - dx, y1 = get_f32(p + 12) - dy;
        for (size_t k = 0; k < a->count && k < d->steps; k++) {
            const struct shard_transform_choice *c = &d->step[k];
            switch (a->steps[k].op) {
            case SHARD_TRANSFORM_RANDOM_RESIZED_CROP:
                box_axis(&x0, &x1, c->left, (double)c->out_width / c->box_width, c->out_width, 1);
                box_axis(&y0, &y1, c->top, (double)c->out_height / c->box_height, c->out_height, 1);
                break;
            case SHARD_TRANSFORM_CENTER_CROP:
                box_axis(&x0, &x1, c->left, 1, c->out_width, 1);
                box_axis(&y0, &y1, c->top, 1, c->out_height, 1);
                break;
            case SHARD_TRANSFORM_RESIZE:
                box_axis(&x0, &x1, 0, (double)c->out_width / c->in_width, c->out_width, 0);
                box_axis(&y0, &y1, 0, (double)c->out_height / c->in_height, c->out_height, 0);
                break;
            case SHARD_TRANSFORM_HORIZONTAL_FLIP:
                if (c->flip) {
                    double t = x0;
                    x0 = c->out_width - x1;
                    x1 = c->out_width - t;
                }
                break;
            case SHARD_TRANSFORM_NORMALIZE: break;
            }
        }
        float f[4] = {(float)x0, (float)y0, (float)x1, (float)y1};
        /* SanitizeBoundingBoxes: a box narrower or lower than min_size goes,
         * with its class; so does an empty one whatever min_size */
        if (!(f[2] - f[0] >= min_size && f[3] - f[1] >= min_size && f[2] > f[0] && f[3] > f[1]))
            continue;
        uint8_t *q = out + kept * SHARD_BOX_BYTES;
        memmove(q + 16, p + 16, 8); /* class and flags (q may be p) */
        for (int k = 0; k < 4; k++)
            set_f32(q + 4 * k, f[k]);
        kept++;
        if (keep)
            keep[i] = 1;
    }
    return kept;
}

/* The mask images of one shard_transforms_mask: cur is a view of the input or
 * of one workspace mask; the next one made goes to the other. */
struct mask_run {
    struct shard_transforms_workspace *ws;
    struct shard_image cur;
    int next;
    int mirror;
    uint8_t fill[2]; /* the value written where a crop reaches outside, little-endian */
};

static struct shard_image *mask_target(struct mask_run *r)
{
    struct shard_image *t = &r->ws->mask[r->next];
    r->next ^= 1;
    return t;
}

/* A crop's box (left, top, bw, bh) of cur as cur shows it (a pending flip
 * applied), the fill value where it reaches outside. */
static int mask_crop(struct mask_run *r, int64_t left, int64_t top, uint32_t bw, uint32_t bh,
                     struct shard_err *err)
{
    const uint32_t bytes = r->cur.channels;
    struct shard_image *t = mask_target(r);
    int rc = shard_image_alloc(t, bw, bh, bytes, err);
    if (rc)
        return rc;
    for (uint32_t y = 0; y < bh; y++) {
        uint8_t *o = t->pixels + (size_t)y * t->stride;
        int64_t sy = top + y;
        for (uint32_t x = 0; x < bw; x++) {
            int64_t sx = left + x;
            if (r->mirror)
                sx = (int64_t)r->cur.width - 1 - sx;
            if (sy < 0 || sy >= r->cur.height || sx < 0 || sx >= r->cur.width)
                memcpy(o + (size_t)x * bytes, r->fill, bytes);
            else
                memcpy(o + (size_t)x * bytes,
                       r->cur.pixels + (size_t)sy * r->cur.stride + (size_t)sx * bytes, bytes);
        }
    }
    r->cur = *t;
    r->mirror = 0;
    return SHARD_OK;
}

/* Resample the part [x0, x0 + bw) x [y0, y0 + bh) of cur to out_w x out_h
 * by nearest neighbour (a pending flip applied first, as the image's is),
 * into `into` (mirrored when `mirror`) when given, else into the next
 * workspace mask, which becomes cur. */
static int mask_resample(struct mask_run *r, uint32_t x0, uint32_t y0, uint32_t bw, uint32_t bh,
                         uint32_t out_w, uint32_t out_h, struct shard_image *into, int mirror,
                         struct shard_err *err)
{
    int rc = r->mirror ? mask_crop(r, 0, 0, r->cur.width, r->cur.height, err) : SHARD_OK;
    struct shard_image *t = rc ? NULL : into ? into : mask_target(r);
    if (!rc)
        rc = sk_values_nearest(&r->cur, x0, y0, (double)x0 + bw, (double)y0 + bh, out_w, out_h, 0,
                               0, out_w, out_h, into && mirror, t, err);
    if (!rc && !into)
        r->cur = *t;
    return rc;
}

int shard_transforms_mask(const struct shard_transforms *a, const struct shard_image *mask,
                          const struct shard_transforms_draws *d,
                          struct shard_transforms_workspace *w, void *dst, struct shard_err *err)
{
    return shard_transforms_mask_fill(a, mask, d, w, 0, dst, err);
}

int shard_transforms_mask_fill(const struct shard_transforms *a, const struct shard_image *mask,
                               const struct shard_transforms_draws *d,
                               struct shard_transforms_workspace *w, uint32_t fill, void *dst,
                               struct shard_err *err)
{
    if (!mask || !mask->pixels || mask->channels < 1 || mask->channels > 2 || mask->width == 0 ||
        mask->height == 0)
        return shard_err_set(err, SHARD_EINVAL, "mask input is no image of 1- or 2-byte values");
    if (d->steps != a->count ||
        (a->count && (d->step[0].in_width != mask->width || d->step[0].in_height != mask->height)))
        return shard_err_set(err, SHARD_EINVAL,
                             "transform choices were drawn for another "
                             "size than the mask's %ux%u",
                             mask->width, mask->height);
    if (fill > (mask->channels == 1 ? 255u : 65535u))
        return shard_err_set(err, SHARD_EINVAL, "fill value %u does not fit a %u-byte mask", fill,
                             mask->channels);
    struct mask_run r = {w, *mask, 0, 0, {(uint8_t)fill, (uint8_t)(fill >> 8)}};
    /* the last step that moves pixels, and the flips after it: a resample
     * there writes straight into dst */
    size_t last = a->count;
    int mirror_after = 0;
    for (size_t k = a->count; k-- > 0 && last == a->count;) {
        if (a->steps[k].op == SHARD_TRANSFORM_HORIZONTAL_FLIP)
            mirror_after ^= d->step[k].flip;
        else if (a->steps[k].op != SHARD_TRANSFORM_NORMALIZE)
            last = k;
    }
    const struct shard_transform_choice *lc = last < a->count ? &d->step[last] : NULL;
    struct shard_image out = {.pixels = dst,
                              .capacity = lc ? (size_t)lc->out_width * lc->out_height *
                                                   mask->channels
                                             : 0};
    int rc = SHARD_OK;
    for (size_t k = 0; k < a->count && !rc; k++) {
        const struct shard_transform_choice *c = &d->step[k];
        struct shard_image *into = k == last ? &out : NULL;
        if (c->in_width != r.cur.width || c->in_height != r.cur.height || c->out_width == 0 ||
            c->out_height == 0 ||
            (a->steps[k].op == SHARD_TRANSFORM_RANDOM_RESIZED_CROP && !box_inside(c)))
            return shard_err_set(err, SHARD_EINVAL,
                                 "transform choices of step %zu do not fit "
                                 "the mask's %ux%u",
                                 k, r.cur.width, r.cur.height);
        switch (a->steps[k].op) {
        case SHARD_TRANSFORM_RANDOM_RESIZED_CROP:
            rc = mask_resample(&r, (uint32_t)c->left, (uint32_t)c->top, c->box_width, c->box_height,
                               c->out_width, c->out_height, into, mirror_after, err);
            if (!rc && into)
                return SHARD_OK; /* the rest are flips, done */
            break;
        case SHARD_TRANSFORM_RESIZE:
            if (c->out_width != r.cur.width || c->out_height != r.cur.height) {
                rc = mask_resample(&r, 0, 0, r.cur.width, r.cur.height, c->out_width, c->out_height,
                                   into, mirror_after, err);
                if (!rc && into)
                    return SHARD_OK;
            }
            break;
        case SHARD_TRANSFORM_CENTER_CROP:
            rc = mask_crop(&r, c->left, c->top, c->box_width, c->box_height, err);
            break;
        case SHARD_TRANSFORM_HORIZONTAL_FLIP: r.mirror ^= c->flip; break;
        case SHARD_TRANSFORM_NORMALIZE: break;
        }
    }
    if (rc)
        return rc;
    const uint32_t bytes = r.cur.channels;
    for (uint32_t y = 0; y < r.cur.height; y++) {
        const uint8_t *in = r.cur.pixels + (size_t)y * r.cur.stride;
        uint8_t *o = (uint8_t *)dst + (size_t)y * r.cur.width * bytes;
        if (!r.mirror)
            memcpy(o, in, (size_t)r.cur.width * bytes);
        else
            for (uint32_t x = 0; x < r.cur.width; x++)
                memcpy(o + (size_t)x * bytes, in + (size_t)(r.cur.width - 1 - x) * bytes, bytes);
    }
    return SHARD_OK;
}

int sk_transforms_is_identity(const struct shard_transforms *a, uint32_t depth)
{
    enum shard_dtype stored = depth == 16 ? SHARD_DTYPE_UINT16 : SHARD_DTYPE_UINT8;
    return !a || (a->count == 0 && a->dtype == stored && a->layout == SHARD_LAYOUT_NHWC);
}

int sk_transforms_keeps_size(const struct shard_transforms *a)
{
    for (size_t k = 0; a && k < a->count; k++)
        if (a->steps[k].op != SHARD_TRANSFORM_HORIZONTAL_FLIP &&
            a->steps[k].op != SHARD_TRANSFORM_NORMALIZE)
            return 0;
    return 1;
}

int sk_transforms_starts_with_crop(const struct shard_transforms *a)
{
    return a && a->count > 0 &&
           (a->steps[0].op == SHARD_TRANSFORM_RANDOM_RESIZED_CROP ||
            a->steps[0].op == SHARD_TRANSFORM_CENTER_CROP);
}

int sk_transforms_first_box(const struct shard_transforms *a,
                            const struct shard_transforms_draws *d, uint32_t *left, uint32_t *top,
                            uint32_t *width, uint32_t *height)
{
    const struct shard_transform_choice *c = &d->step[0];
    if (!sk_transforms_starts_with_crop(a) || d->steps != a->count || !box_inside(c))
        return 0;
    *left = (uint32_t)c->left;
    *top = (uint32_t)c->top;
    *width = c->box_width;
    *height = c->box_height;
    return 1;
}

void sk_transforms_draws_in_region(struct shard_transforms_draws *d, uint32_t left, uint32_t top,
                                   uint32_t width, uint32_t height)
{
    struct shard_transform_choice *c = &d->step[0];
    c->in_width = width;
    c->in_height = height;
    c->left -= (int32_t)left;
    c->top -= (int32_t)top;
}

void sk_transforms_draws_channels(struct shard_transforms_draws *d,
                                  const struct shard_transforms *a, uint32_t channels)
{
    d->out_bytes = (size_t)d->out_width * d->out_height * channels * shard_dtype_size(a->dtype);
}
