/*
 * resize.c - antialiased resampling of 8-bit interleaved images
 * (shard_resize, shard_geometry_apply; the engine is declared in resize_internal.h).
 *
 * A separable filter in fixed point, the way Pillow resamples: for each axis
 * every output sample gets a list of input taps whose weights come from a
 * kernel stretched by the reduction factor, so shrinking is antialiased
 * whatever the factor.  The two passes stream row by row (no full-size
 * intermediate image), in the order that costs less: vertical first (one
 * intermediate row) or horizontal first (a ring of as many horizontally
 * resampled rows as the vertical filter has taps).
 *
 * Determinism: weights are computed from the geometry alone, the arithmetic
 * is integer, and the scalar, SSE2/SSSE3 and AVX2 kernels compute exactly the
 * same sums, so the bytes depend only on (pixels, sizes, filter) - never on
 * the thread count or the CPU.  No state outlives a call: thread-safe.
 */
#include "image/resize_internal.h"
#include "image/image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Weights are fixed point with WEIGHT_BITS fraction bits and each output's
 * weights sum to exactly WEIGHT_ONE, so a flat area stays exactly flat.
 * 14 bits keep every product and pairwise sum inside int16 x int16 -> int32
 * (pmaddwd): |weight| < 2 * WEIGHT_ONE and pixels <= 255. */
#define WEIGHT_BITS 14
#define WEIGHT_ONE (1 << WEIGHT_BITS)
#define WEIGHT_ROUND (1 << (WEIGHT_BITS - 1))

/* Relative cost of one horizontal tap on a pixel against one vertical tap on
 * a byte (the vertical pass is 16 bytes per instruction group, the
 * horizontal one gathers each pixel's taps); used only to pick the order. */
#define HORIZONTAL_TAP_COST 6

/* Bytes of slack after each intermediate row: the SIMD horizontal kernels
 * load 16 bytes at a time, so near the end of a row they read past it. */
#define ROW_SLACK 16
/* At most this many pixels at the end of a row are copied so that the SIMD
 * kernels can finish it (more only when a huge reduction has huge taps). */
#define EDGE_PIXELS 64
#define SCRATCH_ALIGN 16

/* Taps of one axis, for a window of outputs. */
struct taps {
    uint32_t count;  /* weights per output: even, the same for every output */
    uint32_t *first; /* per output: the input index of its first weight */
    uint32_t *used;  /* per output: how many leading weights may be non-zero
                      * (even, <= count; the rest are 0) */
    int16_t *weight; /* per output: `count` weights summing to WEIGHT_ONE;
                      * the weight of an index >= the input size is 0 */
};

/* ---- filter kernels --------------------------------------------------------- */

static double kernel_triangle(double x)
{
    x = fabs(x);
    return x < 1 ? 1 - x : 0;
}

/* Catmull-Rom (Keys, a = -0.5), as Pillow's BICUBIC. */
static double kernel_cubic(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0;
}

/* Weight of input sample i for the output centred at `center` (input
 * coordinates, pixel i spanning [i, i + 1)).  `scale` is input/output. */
static double tap_weight(enum shard_resize_filter filter, double scale, double center, int64_t i)
{
    if (filter == SHARD_RESIZE_AREA && scale > 1) {
        /* the output pixel covers [center - scale/2, center + scale/2) */
        double lo = center - scale / 2, hi = center + scale / 2;
        double a = lo > (double)i ? lo : (double)i;
        double b = hi < (double)(i + 1) ? hi : (double)(i + 1);
        return b > a ? b - a : 0;
    }
    double stretch = scale > 1 ? scale : 1;
    double x = ((double)i + 0.5 - center) / stretch;
    return filter == SHARD_RESIZE_CUBIC ? kernel_cubic(x) : kernel_triangle(x);
}

/* Half-width, in input samples, outside which every weight is 0. */
static double filter_support(enum shard_resize_filter filter, double scale)
{
    double stretch = scale > 1 ? scale : 1;
    if (filter == SHARD_RESIZE_AREA && scale > 1)
        return scale / 2;
    return filter == SHARD_RESIZE_CUBIC ? 2 * stretch : stretch;
}

/* Most inputs any output can touch, rounded up to even: an interval of
 * length 2 * support meets at most ceil(2 * support) + 1 unit cells. */
static uint32_t taps_bound(enum shard_resize_filter filter, uint32_t in, double extent,
                           uint32_t out)
{
    double cells = ceil(2 * filter_support(filter, extent / out)) + 1;
    uint32_t bound = cells < (double)in ? (uint32_t)cells : in;
    return bound + (bound & 1);
}

/* Fill t for outputs [start, start + n) of an axis of `in` inputs whose
 * span [origin, origin + extent) is resampled to `out` (the whole axis:
 * origin 0, extent `in`).  t->first, t->used and t->weight hold n entries,
 * the weights at a stride of `bound` (taps_bound) until t->count is known;
 * `exact` is scratch for n * bound doubles. */
static void taps_fill(struct taps *t, enum shard_resize_filter filter, uint32_t in, double origin,
                      double extent, uint32_t out, uint32_t start, uint32_t n, uint32_t bound,
                      double *exact)
{
    const double scale = extent / out, support = filter_support(filter, scale);
    int64_t widest = 1;
    /* exact weights of each output's non-zero span, from exact[j * bound] */
    for (uint32_t j = 0; j < n; j++) {
        double center = origin + ((double)(start + j) + 0.5) * scale;
        int64_t lo = (int64_t)floor(center - support), hi = (int64_t)ceil(center + support);
        lo = lo < 0 ? 0 : lo;
        hi = hi > (int64_t)in ? (int64_t)in : hi;
        double *e = exact + (size_t)j * bound;
        int64_t kept = 0;
        for (int64_t i = lo; i < hi; i++) {
            double w = tap_weight(filter, scale, center, i);
            if (kept == 0 && w == 0) {
                lo = i + 1; /* trim zero weights in front */
                continue;
            }
            e[kept++] = w;
        }
        while (kept > 0 && e[kept - 1] == 0)
            kept--;      /* and behind */
        if (kept == 0) { /* not for these kernels; stay safe for any */
            lo = (int64_t)floor(center);
            lo = lo < 0 ? 0 : lo >= (int64_t)in ? (int64_t)in - 1 : lo;
            e[kept++] = 1;
        }
        t->first[j] = (uint32_t)lo;
        t->used[j] = (uint32_t)kept;
        widest = kept > widest ? kept : widest;
    }
    t->count = (uint32_t)(widest + (widest & 1)); /* SIMD kernels take taps in pairs */

    for (uint32_t j = 0; j < n; j++) {
        const int64_t lo = t->first[j], span = t->used[j];
        const double *e = exact + (size_t)j * bound;
        /* Start early enough that all `count` taps lie inside the input when
         * it is wide enough; the extra taps get weight 0. */
        int64_t first = lo;
        if (first + (int64_t)t->count > (int64_t)in)
            first = (int64_t)in - (int64_t)t->count;
        if (first < 0)
            first = 0;
        double sum = 0;
        for (int64_t k = 0; k < span; k++)
            sum += e[k];
        /* Quantise the running total, not each weight: the weights then sum
         * to exactly WEIGHT_ONE (a flat area stays flat) and each is within
         * one unit of its exact value, even when a huge reduction makes
         * every weight smaller than a unit. */
        int16_t *w = t->weight + (size_t)j * t->count;
        double running = 0;
        long before = 0;
        for (uint32_t k = 0; k < t->count; k++) {
            int64_t i = first + (int64_t)k;
            if (i >= lo && i < lo + span)
                running += e[i - lo] / sum;
            long upto = i >= lo + span - 1 ? WEIGHT_ONE : lrint(running * WEIGHT_ONE);
            w[k] = (int16_t)(upto - before);
            before = upto;
        }
        t->first[j] = (uint32_t)first;
        /* the leading weights that may be non-zero, even: what the vertical
         * pass reads for this output row */
        int64_t used = lo + span - first;
        t->used[j] = (uint32_t)(used + (used & 1));
    }
}

/* ---- kernels: one output row ---------------------------------------------------
 *
 * Each pass has a portable scalar kernel and x86 SIMD kernels chosen at run
 * time (SSE2 is part of x86-64; SSSE3 and AVX2 are checked with cpuid).  All
 * of them compute the same integer sums - acc = WEIGHT_ROUND + sum(w * x),
 * then acc >> WEIGHT_BITS clamped to 0..255 - so the output never depends on
 * the CPU the code runs on. */

static inline uint8_t round_to_u8(int32_t acc)
{
    if (acc < 0)
        return 0;
    acc >>= WEIGHT_BITS;
    return acc > 255 ? 255 : (uint8_t)acc;
}

/* (w[0], w[1]) as one 32-bit lane, the operand pmaddwd pairs samples with. */
static inline int32_t weight_pair(const int16_t *w)
{
    return (int32_t)((uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[1] << 16);
}

/* Vertical pass: dst[i] = sum_k w[k] * rows[k][i] for i in [from, n).
 * `count` is even.  The SIMD variants return where they stopped, for the
 * next one to finish the tail. */
static void vertical_scalar(const uint8_t *const *rows, const int16_t *w, uint32_t count,
                            uint8_t *dst, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        int32_t acc = WEIGHT_ROUND;
        for (uint32_t k = 0; k < count; k++)
            acc += w[k] * rows[k][i];
        dst[i] = round_to_u8(acc);
    }
}

/* Horizontal pass, one pixel of any channel count: `taps` inputs from p. */
static inline void horizontal_pixel(const uint8_t *p, const int16_t *w, uint32_t taps,
                                    uint32_t channels, uint8_t *out)
{
    for (uint32_t c = 0; c < channels; c++) {
        int32_t acc = WEIGHT_ROUND;
        for (uint32_t k = 0; k < taps; k++)
            acc += w[k] * p[k * channels + c];
        out[c] = round_to_u8(acc);
    }
}

/* The same two passes on 16-bit samples (scalar only): n and `channels`
 * count bytes, as for 8-bit ones, so that the row layout is the same. */
static inline uint16_t round_to_u16(int64_t acc)
{
    if (acc < 0)
        return 0;
    acc >>= WEIGHT_BITS;
    return acc > 65535 ? 65535 : (uint16_t)acc;
}

static inline uint16_t load16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static void vertical_scalar16(const uint8_t *const *rows, const int16_t *w, uint32_t count,
                              uint8_t *dst, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        int64_t acc = WEIGHT_ROUND;
        for (uint32_t k = 0; k < count; k++)
            acc += (int64_t)w[k] * load16(rows[k] + i);
        uint16_t v = round_to_u16(acc);
        memcpy(dst + i, &v, 2);
    }
}

static inline void horizontal_pixel16(const uint8_t *p, const int16_t *w, uint32_t taps,
                                      uint32_t channel_bytes, uint8_t *out)
{
    for (uint32_t c = 0; c < channel_bytes; c += 2) {
        int64_t acc = WEIGHT_ROUND;
        for (uint32_t k = 0; k < taps; k++)
            acc += (int64_t)w[k] * load16(p + k * channel_bytes + c);
        uint16_t v = round_to_u16(acc);
        memcpy(out + c, &v, 2);
    }
}

/* What a horizontal kernel reads: a row whose pixel 0 is input column col0,
 * `avail` bytes of it readable (slack included), `in` input columns in all
 * (taps at or past `in` have weight 0: the scalar kernel skips them, the SIMD
 * ones multiply whatever readable bytes are there by 0). */
struct hrow {
    const uint8_t *src;
    size_t avail;
    uint32_t col0, in, channels; /* channels: bytes per pixel */
    int wide;                    /* 16-bit samples */
};

static void horizontal_scalar(const struct hrow *r, const struct taps *t, uint8_t *dst,
                              uint32_t from, uint32_t n)
{
    for (uint32_t x = from; x < n; x++) {
        uint32_t first = t->first[x];
        uint32_t taps = first + t->count > r->in ? r->in - first : t->count;
        const uint8_t *p = r->src + (size_t)(first - r->col0) * r->channels;
        const int16_t *w = t->weight + (size_t)x * t->count;
        if (r->wide)
            horizontal_pixel16(p, w, taps, r->channels, dst + (size_t)x * r->channels);
        else
            horizontal_pixel(p, w, taps, r->channels, dst + (size_t)x * r->channels);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_SIMD 1
#include <immintrin.h>

/* The SIMD horizontal kernels (3 channels) load 16 bytes per group of four
 * taps, starting at the group's first pixel, and spread them with pshufb
 * into int16 pairs (R_k R_k+1 G_k G_k+1 B_k B_k+1 0 0) for pmaddwd. */
#define Z (-128) /* pshufb: a zero byte */
#define PAIR_MASK(k)                                                                               \
    3 * (k), Z, 3 * (k) + 3, Z, 3 * (k) + 1, Z, 3 * (k) + 4, Z, 3 * (k) + 2, Z, 3 * (k) + 5, Z, Z, \
        Z, Z, Z

/* How many leading outputs the SIMD kernels may take: those whose 16-byte
 * loads stay inside the readable bytes (taps are monotonic, so they form a
 * prefix; horizontal_row() gives the few at the right edge a padded copy). */
static uint32_t simd_prefix(const struct hrow *r, const struct taps *t, uint32_t n)
{
    size_t tail = 12 * (size_t)((t->count + 3) / 4 - 1) + 16; /* bytes read from a start */
    while (n > 0 && (size_t)(t->first[n - 1] - r->col0) * 3 + tail > r->avail)
        n--;
    return n;
}

/* The weighted sum of one pixel's `count` taps from p, 16 bytes per four
 * taps.  Inlined with a constant count, the loops unroll. */
__attribute__((target("ssse3"), always_inline)) static inline __m128i
pixel_sum_ssse3(const uint8_t *p, const int16_t *w, uint32_t count)
{
    const __m128i mask01 = _mm_setr_epi8(PAIR_MASK(0)), mask23 = _mm_setr_epi8(PAIR_MASK(2));
    __m128i acc = _mm_set1_epi32(WEIGHT_ROUND);
    uint32_t k = 0;
    for (; k + 4 <= count; k += 4, p += 12) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i wv = _mm_loadl_epi64((const __m128i *)(w + k));
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi8(v, mask01),
                                                _mm_shuffle_epi32(wv, 0x00)));
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi8(v, mask23),
                                                _mm_shuffle_epi32(wv, 0x55)));
    }
    if (k < count) { /* a last pair */
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_shuffle_epi8(v, mask01),
                                                _mm_set1_epi32(weight_pair(w + k))));
    }
    acc = _mm_srai_epi32(acc, WEIGHT_BITS);
    return _mm_packus_epi16(_mm_packs_epi32(acc, acc), acc); /* the pixel in bytes 0..2 */
}

/* Outputs [x, end) one at a time; end <= simd_prefix().  Returns end. */
__attribute__((target("ssse3"), always_inline)) static inline uint32_t
horizontal_ssse3_n(const uint8_t *src, uint32_t col0, const uint32_t *first, const int16_t *weight,
                   uint32_t count, uint8_t *dst, uint32_t x, uint32_t end, uint32_t n)
{
    for (; x < end; x++) {
        __m128i px = pixel_sum_ssse3(src + (size_t)(first[x] - col0) * 3,
                                     weight + (size_t)x * count, count);
        int32_t rgb = _mm_cvtsi128_si32(px);
        /* 4 bytes when the next pixel will overwrite the 4th: one store */
        memcpy(dst + (size_t)x * 3, &rgb, x + 1 < n ? 4 : 3);
    }
    return x;
}

__attribute__((target("ssse3"))) static uint32_t
horizontal_ssse3(const struct hrow *r, const struct taps *t, uint8_t *dst, uint32_t x, uint32_t n)
{
    uint32_t end = simd_prefix(r, t, n);
    const uint32_t c = t->count;
    switch (c) { /* the common tap counts, unrolled */
    case 2: return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, 2, dst, x, end, n);
    case 4: return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, 4, dst, x, end, n);
    case 6: return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, 6, dst, x, end, n);
    case 8: return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, 8, dst, x, end, n);
    default: return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, c, dst, x, end, n);
    }
}

/* Two outputs at once, one per 128-bit lane, while x + 1 < end and x + 2 < n
 * (the 4th byte stored for pixel x + 1 lands on pixel x + 2, written
 * later).  Returns where it stopped. */
__attribute__((target("avx2"), always_inline)) static inline uint32_t
horizontal_avx2_n(const uint8_t *src, uint32_t col0, const uint32_t *first, const int16_t *weight,
                  uint32_t count, uint8_t *dst, uint32_t x, uint32_t end, uint32_t n)
{
    const __m256i mask01 = _mm256_setr_epi8(PAIR_MASK(0), PAIR_MASK(0));
    const __m256i mask23 = _mm256_setr_epi8(PAIR_MASK(2), PAIR_MASK(2));
    const __m256i round = _mm256_set1_epi32(WEIGHT_ROUND);
    for (; x + 1 < end && x + 2 < n; x += 2) {
        const uint8_t *pa = src + (size_t)(first[x] - col0) * 3;
        const uint8_t *pb = src + (size_t)(first[x + 1] - col0) * 3;
        const int16_t *wa = weight + (size_t)x * count, *wb = wa + count;
        __m256i acc = round;
        uint32_t k = 0;
        for (; k + 4 <= count; k += 4, pa += 12, pb += 12) {
            __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(
                                                    _mm_loadu_si128((const __m128i *)pa)),
                                                _mm_loadu_si128((const __m128i *)pb), 1);
            __m256i wv = _mm256_inserti128_si256(_mm256_castsi128_si256(
                                                     _mm_loadl_epi64((const __m128i *)(wa + k))),
                                                 _mm_loadl_epi64((const __m128i *)(wb + k)), 1);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_shuffle_epi8(v, mask01),
                                                          _mm256_shuffle_epi32(wv, 0x00)));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_shuffle_epi8(v, mask23),
                                                          _mm256_shuffle_epi32(wv, 0x55)));
        }
        if (k < count) {
            __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(
                                                    _mm_loadu_si128((const __m128i *)pa)),
                                                _mm_loadu_si128((const __m128i *)pb), 1);
            __m256i wv = _mm256_inserti128_si256(_mm256_castsi128_si256(
                                                     _mm_set1_epi32(weight_pair(wa + k))),
                                                 _mm_set1_epi32(weight_pair(wb + k)), 1);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_shuffle_epi8(v, mask01), wv));
        }
        acc = _mm256_srai_epi32(acc, WEIGHT_BITS);
        acc = _mm256_packus_epi16(_mm256_packs_epi32(acc, acc), acc);
        int32_t a = _mm_cvtsi128_si32(_mm256_castsi256_si128(acc));
        int32_t b = _mm_cvtsi128_si32(_mm256_extracti128_si256(acc, 1));
        memcpy(dst + (size_t)x * 3, &a, 4);
        memcpy(dst + (size_t)x * 3 + 3, &b, 4);
    }
    return x;
}

__attribute__((target("avx2"))) static uint32_t
horizontal_avx2(const struct hrow *r, const struct taps *t, uint8_t *dst, uint32_t x, uint32_t n)
{
    const uint32_t end = simd_prefix(r, t, n), c = t->count;
    const uint8_t *src = r->src;
    switch (c) { /* the common tap counts, unrolled */
    case 2: x = horizontal_avx2_n(src, r->col0, t->first, t->weight, 2, dst, x, end, n); break;
    case 4: x = horizontal_avx2_n(src, r->col0, t->first, t->weight, 4, dst, x, end, n); break;
    case 6: x = horizontal_avx2_n(src, r->col0, t->first, t->weight, 6, dst, x, end, n); break;
    case 8: x = horizontal_avx2_n(src, r->col0, t->first, t->weight, 8, dst, x, end, n); break;
    default: x = horizontal_avx2_n(src, r->col0, t->first, t->weight, c, dst, x, end, n); break;
    }
    /* an odd one left before the edge */
    return horizontal_ssse3_n(r->src, r->col0, t->first, t->weight, c, dst, x, end, n);
}

__attribute__((target("sse2"))) static size_t vertical_sse2(const uint8_t *const *rows,
                                                            const int16_t *w, uint32_t count,
                                                            uint8_t *dst, size_t i, size_t n)
{
    const __m128i zero = _mm_setzero_si128(), round = _mm_set1_epi32(WEIGHT_ROUND);
    for (; i + 16 <= n; i += 16) {
        __m128i acc0 = round, acc1 = round, acc2 = round, acc3 = round;
        for (uint32_t k = 0; k < count; k += 2) {
            /* (row k, row k+1) byte pairs against (w[k], w[k+1]) */
            __m128i pair = _mm_set1_epi32(weight_pair(w + k));
            __m128i a = _mm_loadu_si128((const __m128i *)(rows[k] + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(rows[k + 1] + i));
            __m128i lo = _mm_unpacklo_epi8(a, b), hi = _mm_unpackhi_epi8(a, b);
            acc0 = _mm_add_epi32(acc0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), pair));
            acc1 = _mm_add_epi32(acc1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), pair));
            acc2 = _mm_add_epi32(acc2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), pair));
            acc3 = _mm_add_epi32(acc3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), pair));
        }
        __m128i lo16 = _mm_packs_epi32(_mm_srai_epi32(acc0, WEIGHT_BITS),
                                       _mm_srai_epi32(acc1, WEIGHT_BITS));
        __m128i hi16 = _mm_packs_epi32(_mm_srai_epi32(acc2, WEIGHT_BITS),
                                       _mm_srai_epi32(acc3, WEIGHT_BITS));
        _mm_storeu_si128((__m128i *)(dst + i), _mm_packus_epi16(lo16, hi16));
    }
    return i;
}

/* The same with 32 bytes per step (in-lane unpacks and packs keep order). */
__attribute__((target("avx2"))) static size_t vertical_avx2(const uint8_t *const *rows,
                                                            const int16_t *w, uint32_t count,
                                                            uint8_t *dst, size_t i, size_t n)
{
    const __m256i zero = _mm256_setzero_si256(), round = _mm256_set1_epi32(WEIGHT_ROUND);
    for (; i + 32 <= n; i += 32) {
        __m256i acc0 = round, acc1 = round, acc2 = round, acc3 = round;
        for (uint32_t k = 0; k < count; k += 2) {
            __m256i pair = _mm256_set1_epi32(weight_pair(w + k));
            __m256i a = _mm256_loadu_si256((const __m256i *)(rows[k] + i));
            __m256i b = _mm256_loadu_si256((const __m256i *)(rows[k + 1] + i));
            __m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), pair));
            acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), pair));
            acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), pair));
            acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), pair));
        }
        __m256i lo16 = _mm256_packs_epi32(_mm256_srai_epi32(acc0, WEIGHT_BITS),
                                          _mm256_srai_epi32(acc1, WEIGHT_BITS));
        __m256i hi16 = _mm256_packs_epi32(_mm256_srai_epi32(acc2, WEIGHT_BITS),
                                          _mm256_srai_epi32(acc3, WEIGHT_BITS));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_packus_epi16(lo16, hi16));
    }
    return i;
}
#else
#define HAVE_X86_SIMD 0
#endif

/* The best kernels this CPU runs (cpuid facts, read-only: thread-safe). */
static enum shard_simd simd_best(void)
{
#if HAVE_X86_SIMD
    if (__builtin_cpu_supports("avx2"))
        return SHARD_SIMD_AVX2;
    if (__builtin_cpu_supports("ssse3"))
        return SHARD_SIMD_SSSE3;
#endif
    return SHARD_SIMD_NONE;
}

static void vertical_row(enum shard_simd simd, int wide, const uint8_t *const *rows,
                         const int16_t *w, uint32_t count, uint8_t *dst, size_t n)
{
    if (wide) {
        vertical_scalar16(rows, w, count, dst, n);
        return;
    }
    size_t i = 0;
#if HAVE_X86_SIMD
    /* A ragged tail is redone as one last full block ending at n: it
     * rewrites some bytes with the same values (dst never aliases rows). */
    if (simd == SHARD_SIMD_AVX2 && n >= 32) {
        i = vertical_avx2(rows, w, count, dst, 0, n);
        if (i < n)
            i = vertical_avx2(rows, w, count, dst, n - 32, n);
    } else if (simd != SHARD_SIMD_NONE && n >= 16) {
        i = vertical_sse2(rows, w, count, dst, 0, n);
        if (i < n)
            i = vertical_sse2(rows, w, count, dst, n - 16, n);
    }
#else
    (void)simd;
#endif
    vertical_scalar(rows, w, count, dst, i, n);
}

static void horizontal_row(enum shard_simd simd, const struct hrow *r, const struct taps *t,
                           uint8_t *dst, uint32_t n)
{
    uint32_t x = 0;
#if HAVE_X86_SIMD
    if (r->channels == 3 && !r->wide && simd != SHARD_SIMD_NONE) {
        x = simd == SHARD_SIMD_AVX2 ? horizontal_avx2(r, t, dst, 0, n)
                                    : horizontal_ssse3(r, t, dst, 0, n);
        /* The outputs at the right edge would load past the row: give them
         * a copy of its last pixels followed by slack (their taps past the
         * input have weight 0, so what the slack holds never counts). */
        size_t from = (size_t)(t->first[x < n ? x : 0] - r->col0) * 3;
        if (x < n && r->avail - from <= EDGE_PIXELS * 3) {
            uint8_t edge[EDGE_PIXELS * 3 + ROW_SLACK] = {0};
            memcpy(edge, r->src + from, r->avail - from);
            struct hrow tail = {edge, sizeof edge, t->first[x], r->in, 3, 0};
            x = simd == SHARD_SIMD_AVX2 ? horizontal_avx2(&tail, t, dst, x, n)
                                        : horizontal_ssse3(&tail, t, dst, x, n);
        }
    }
#else
    (void)simd;
#endif
    horizontal_scalar(r, t, dst, x, n);
}

/* ---- scratch memory ------------------------------------------------------------- */

/* Carves aligned blocks out of one allocation. */
struct carve {
    size_t used;
    uint8_t *base; /* NULL while sizing */
    int overflow;
};

static void *carve(struct carve *c, size_t count, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || c->used > SIZE_MAX - bytes - SCRATCH_ALIGN) {
        c->overflow = 1;
        return NULL;
    }
    size_t at = c->used;
    c->used = (at + bytes + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
    return c->base ? c->base + at : NULL;
}

struct resample_layout {
    struct taps tx, ty;
    uint32_t bound_x, bound_y; /* taps_bound() of each axis: the weight strides */
    double *exact;             /* taps_fill's scratch, for the larger axis */
    const uint8_t **rows;      /* ty.count row pointers */
    uint8_t *buf;              /* vertical first: one row; horizontal first: the ring */
    int64_t *ring_row;         /* horizontal first: the input row in each ring slot */
    size_t buf_row_bytes;      /* bytes per row in buf, slack included */
};

/* Carve the layout out of `c` (only sizing it when c->base is NULL). */
static void layout_carve(struct resample_layout *p, struct carve *c, int need_h, int need_v,
                         int vertical_first, uint32_t win_w, uint32_t win_h, size_t row_bytes)
{
    size_t exact = 0;
    if (need_h) {
        p->tx.first = carve(c, win_w, sizeof *p->tx.first);
        p->tx.used = carve(c, win_w, sizeof *p->tx.used);
        p->tx.weight = carve(c, (size_t)win_w * p->bound_x, sizeof *p->tx.weight);
        exact = (size_t)win_w * p->bound_x;
    }
    if (need_v) {
        p->ty.first = carve(c, win_h, sizeof *p->ty.first);
        p->ty.used = carve(c, win_h, sizeof *p->ty.used);
        p->ty.weight = carve(c, (size_t)win_h * p->bound_y, sizeof *p->ty.weight);
        p->rows = carve(c, p->bound_y, sizeof *p->rows);
        if ((size_t)win_h * p->bound_y > exact)
            exact = (size_t)win_h * p->bound_y;
    }
    p->exact = carve(c, exact, sizeof *p->exact);
    if (need_h && need_v) {
        size_t rows = vertical_first ? 1 : p->bound_y;
        if (row_bytes > SIZE_MAX - ROW_SLACK)
            c->overflow = 1;
        p->buf_row_bytes = row_bytes + ROW_SLACK;
        p->buf = carve(c, rows, p->buf_row_bytes);
        p->ring_row = vertical_first ? NULL : carve(c, rows, sizeof *p->ring_row);
    }
}

static int scratch_get(struct shard_image *scratch, size_t bytes, uint8_t **out,
                       struct shard_err *err)
{
    /* a scratch image is just memory: 4096-byte rows, one channel */
    const uint32_t row = 4096;
    size_t rows = bytes / row + 1;
    if (rows > UINT32_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "resize needs too much memory");
    int rc = shard_image_alloc(scratch, row, (uint32_t)rows, 1, err);
    *out = rc ? NULL : scratch->pixels;
    return rc;
}

/* ---- the engine ------------------------------------------------------------------ */

/* A box that is the whole of src, or inside it with a positive size. */
static int box_is_valid(const struct shard_image *src, const struct sk_box *b)
{
    return b->x0 >= 0 && b->y0 >= 0 && b->x0 < b->x1 && b->y0 < b->y1 &&
           b->x1 <= (double)src->width && b->y1 <= (double)src->height;
}

/* What one resampling asks for: the part `box` of src (NULL: all of it)
 * resampled to scaled_w x scaled_h, of which the win_w x win_h window at
 * (win_x, win_y) is made, with `filter` and at most the kernels `simd`. */
struct resample_request {
    const struct shard_image *src;
    const struct sk_box *box;
    uint32_t scaled_w, scaled_h;
    uint32_t win_x, win_y, win_w, win_h;
    enum shard_resize_filter filter;
    enum shard_simd simd;
};

/* A resampling under way: which axes are resampled and in which order, the
 * input columns the window reads, and the taps and rows laid out in scratch
 * memory. */
struct resample_pass {
    const struct shard_image *src;
    struct shard_image *dst;
    uint32_t channels, in_w, in_h; /* channels: bytes per pixel */
    int wide;                      /* 16-bit samples: the scalar kernels */
    uint32_t win_x, win_y, win_w, win_h;
    int need_h, need_v, vertical_first;
    uint32_t col_lo, col_hi; /* vertical first: the input columns the window reads */
    enum shard_simd simd;
    struct resample_layout p;
};

static int resample(const struct resample_request *q, struct shard_image *scratch,
                    struct shard_image *dst, struct shard_err *err);

int sk_resample(const struct shard_image *src, uint32_t scaled_w, uint32_t scaled_h, uint32_t win_x,
                uint32_t win_y, uint32_t win_w, uint32_t win_h, enum shard_resize_filter filter,
                struct shard_image *scratch, struct shard_image *dst, struct shard_err *err)
{
    return sk_resample_box(src, NULL, scaled_w, scaled_h, win_x, win_y, win_w, win_h, filter,
                           simd_best(), scratch, dst, err);
}

int sk_resample_simd(const struct shard_image *src, uint32_t scaled_w, uint32_t scaled_h,
                     uint32_t win_x, uint32_t win_y, uint32_t win_w, uint32_t win_h,
                     enum shard_resize_filter filter, enum shard_simd simd,
                     struct shard_image *scratch, struct shard_image *dst, struct shard_err *err)
{
    return sk_resample_box(src, NULL, scaled_w, scaled_h, win_x, win_y, win_w, win_h, filter, simd,
                           scratch, dst, err);
}

int sk_resample_box(const struct shard_image *src, const struct sk_box *box, uint32_t scaled_w,
                    uint32_t scaled_h, uint32_t win_x, uint32_t win_y, uint32_t win_w,
                    uint32_t win_h, enum shard_resize_filter filter, enum shard_simd simd,
                    struct shard_image *scratch, struct shard_image *dst, struct shard_err *err)
{
    struct resample_request q = {.src = src,
                                 .box = box,
                                 .scaled_w = scaled_w,
                                 .scaled_h = scaled_h,
                                 .win_x = win_x,
                                 .win_y = win_y,
                                 .win_w = win_w,
                                 .win_h = win_h,
                                 .filter = filter,
                                 .simd = simd};
    return resample(&q, scratch, dst, err);
}

/* SHARD_EINVAL naming what is wrong with the request (`box`: its box, or the
 * whole of src), else 0. */
static int request_check(const struct resample_request *q, const struct sk_box *box,
                         struct shard_err *err)
{
    const struct shard_image *src = q->src;
    if (!box_is_valid(src, box))
        return shard_err_set(err, SHARD_EINVAL, "resize: box (%g,%g)-(%g,%g) is not inside %ux%u",
                             box->x0, box->y0, box->x1, box->y1, src->width, src->height);
    if (q->scaled_w == 0 || q->scaled_h == 0 || q->win_w == 0 || q->win_h == 0 ||
        q->win_x > q->scaled_w - q->win_w || q->win_w > q->scaled_w ||
        q->win_y > q->scaled_h - q->win_h || q->win_h > q->scaled_h)
        return shard_err_set(err, SHARD_EINVAL,
                             "resize: window %ux%u at (%u,%u) is not inside %ux%u", q->win_w,
                             q->win_h, q->win_x, q->win_y, q->scaled_w, q->scaled_h);
    if (q->filter != SHARD_RESIZE_TRIANGLE && q->filter != SHARD_RESIZE_AREA &&
        q->filter != SHARD_RESIZE_CUBIC)
        return shard_err_set(err, SHARD_EINVAL, "resize: unknown filter %d", (int)q->filter);
    return SHARD_OK;
}

/* Decide the axes and their order, size the scratch memory, take it (from
 * `scratch`, else `own`) and fill the taps: *s is then ready for its rows. */
static int pass_prepare(struct resample_pass *s, const struct resample_request *q,
                        const struct sk_box *box, struct shard_image *scratch,
                        struct shard_image *own, struct shard_err *err)
{
    struct resample_layout *p = &s->p;
    const uint32_t channels = s->channels, in_w = s->in_w, in_h = s->in_h;
    const uint32_t scaled_w = q->scaled_w, scaled_h = q->scaled_h;
    /* an axis whose box is not the whole of it is resampled even where the
     * sizes agree */
    s->need_h = scaled_w != in_w || box->x0 != 0 || box->x1 != (double)in_w;
    s->need_v = scaled_h != in_h || box->y0 != 0 || box->y1 != (double)in_h;
    const int need_h = s->need_h, need_v = s->need_v;
    const double extent_x = box->x1 - box->x0, extent_y = box->y1 - box->y0;
    if (need_h)
        p->bound_x = taps_bound(q->filter, in_w, extent_x, scaled_w);
    if (need_v)
        p->bound_y = taps_bound(q->filter, in_h, extent_y, scaled_h);

    /* Order by estimated cost on the whole image (not the window), so that a
     * window is always cut from the same full result. */
    s->vertical_first = 1;
    if (need_h && need_v) {
        double v_first = (double)scaled_h * in_w * channels * p->bound_y +
                         (double)scaled_h * scaled_w * p->bound_x * HORIZONTAL_TAP_COST;
        double h_first = (double)in_h * scaled_w * p->bound_x * HORIZONTAL_TAP_COST +
                         (double)scaled_h * scaled_w * channels * p->bound_y;
        s->vertical_first = v_first <= h_first;
    }
    /* vertical first keeps only the input columns the window reads */
    s->col_lo = 0, s->col_hi = in_w;
    struct carve c = {0, NULL, 0};
    /* Size, allocate, then lay out for real.  The column range the window
     * reads is known only once the taps are filled, so a vertical-first row
     * is sized for the full width. */
    size_t row_bytes = (size_t)(s->vertical_first ? in_w : s->win_w) * channels;
    layout_carve(p, &c, need_h, need_v, s->vertical_first, s->win_w, s->win_h, row_bytes);
    if (c.overflow)
        return shard_err_set(err, SHARD_ELIMIT, "resize %ux%u -> %ux%u needs too much memory", in_w,
                             in_h, scaled_w, scaled_h);
    int rc;
    if (c.used && (rc = scratch_get(scratch ? scratch : own, c.used, &c.base, err)))
        return rc;
    c.used = 0;
    layout_carve(p, &c, need_h, need_v, s->vertical_first, s->win_w, s->win_h, row_bytes);
    if (need_h) {
        taps_fill(&p->tx, q->filter, in_w, box->x0, extent_x, scaled_w, s->win_x, s->win_w,
                  p->bound_x, p->exact);
        s->col_lo = p->tx.first[0];
        uint32_t last = p->tx.first[s->win_w - 1] + p->tx.count;
        s->col_hi = last < in_w ? last : in_w;
    }
    if (need_v)
        taps_fill(&p->ty, q->filter, in_h, box->y0, extent_y, scaled_h, s->win_y, s->win_h,
                  p->bound_y, p->exact);
    if (need_h && need_v && s->vertical_first) {
        /* The vertical pass fills columns [col_lo, col_hi) of the row; the
         * SIMD loads may read on into the rest, for taps of weight 0: make
         * those bytes defined (0 x garbage is 0, but tools would object). */
        size_t filled = (size_t)(s->col_hi - s->col_lo) * channels;
        memset(p->buf + filled, 0, p->buf_row_bytes - filled);
    }
    return SHARD_OK;
}

/* Output row y when only the horizontal axis is resampled (or none: a copy). */
static inline void row_horizontal_only(const struct resample_pass *s, struct hrow *in_row,
                                       uint32_t y, uint8_t *out)
{
    const uint8_t *row = s->src->pixels + (size_t)(s->win_y + y) * s->src->stride;
    in_row->src = row;
    if (s->need_h)
        horizontal_row(s->simd, in_row, &s->p.tx, out, s->win_w);
    else
        memcpy(out, row + (size_t)s->win_x * s->channels, (size_t)s->win_w * s->channels);
}

/* Output row y, the vertical pass on the input rows as they are in src (then
 * the horizontal pass on its result, when that axis is resampled too). */
static inline void row_vertical_first(struct resample_pass *s, uint32_t y, uint8_t *out)
{
    struct resample_layout *p = &s->p;
    const uint32_t first = p->ty.first[y], used = p->ty.used[y], channels = s->channels;
    const int16_t *w = p->ty.weight + (size_t)y * p->ty.count;
    /* rows as they are in src, from the first column needed */
    uint32_t col = s->need_h ? s->col_lo : s->win_x;
    for (uint32_t k = 0; k < used; k++) {
        uint32_t r = first + k < s->in_h ? first + k : s->in_h - 1; /* weight 0 past the end */
        p->rows[k] = s->src->pixels + (size_t)r * s->src->stride + (size_t)col * channels;
    }
    if (!s->need_h) {
        vertical_row(s->simd, s->wide, p->rows, w, used, out, (size_t)s->win_w * channels);
    } else {
        /* the intermediate row holds columns [col_lo, col_hi), slack after */
        struct hrow mid = {p->buf, p->buf_row_bytes, s->col_lo, s->in_w, channels, s->wide};
        vertical_row(s->simd, s->wide, p->rows, w, used, p->buf,
                     (size_t)(s->col_hi - s->col_lo) * channels);
        horizontal_row(s->simd, &mid, &p->tx, out, s->win_w);
    }
}

/* Output row y, horizontal first: each needed input row is resampled once
 * into the ring (slot = row % count; a window of count consecutive rows never
 * collides), then the vertical pass runs on the ring's rows. */
static inline void row_horizontal_first(struct resample_pass *s, struct hrow *in_row, uint32_t y,
                                        uint8_t *out)
{
    struct resample_layout *p = &s->p;
    const uint32_t first = p->ty.first[y], used = p->ty.used[y];
    const int16_t *w = p->ty.weight + (size_t)y * p->ty.count;
    if (y == 0)
        for (uint32_t k = 0; k < p->ty.count; k++)
            p->ring_row[k] = -1; /* empty */
    for (uint32_t k = 0; k < used; k++) {
        uint32_t r = first + k < s->in_h ? first + k : s->in_h - 1;
        uint32_t slot = r % p->ty.count;
        uint8_t *ring = p->buf + (size_t)slot * p->buf_row_bytes;
        if (p->ring_row[slot] != (int64_t)r) {
            in_row->src = s->src->pixels + (size_t)r * s->src->stride;
            horizontal_row(s->simd, in_row, &p->tx, ring, s->win_w);
            p->ring_row[slot] = r;
        }
        p->rows[k] = ring;
    }
    vertical_row(s->simd, s->wide, p->rows, w, used, out, (size_t)s->win_w * s->channels);
}

static int resample(const struct resample_request *q, struct shard_image *scratch,
                    struct shard_image *dst, struct shard_err *err)
{
    const struct shard_image *src = q->src;
    if (!src || !dst || src == dst || !src->pixels || src->width == 0 || src->height == 0 ||
        src->channels == 0 || src->channels > 4 ||
        src->stride < (size_t)src->width * src->channels * sk_image_sample_bytes(src))
        return shard_err_set(err, SHARD_EINVAL, "resize: invalid source image");
    struct sk_box whole = {0, 0, (double)src->width, (double)src->height};
    const struct sk_box *box = q->box ? q->box : &whole;
    int rc = request_check(q, box, err);
    if (rc)
        return rc;

    struct shard_image own_scratch = {0};
    struct resample_pass s;
    memset(&s, 0, sizeof s);
    s.src = src, s.dst = dst;
    s.wide = src->depth == 16;
    s.channels = src->channels * sk_image_sample_bytes(src);
    s.in_w = src->width, s.in_h = src->height;
    s.win_x = q->win_x, s.win_y = q->win_y, s.win_w = q->win_w, s.win_h = q->win_h;
    s.simd = s.wide ? SHARD_SIMD_NONE : q->simd > simd_best() ? simd_best() : q->simd;
    if ((rc = shard_image_alloc_form(dst, q->win_w, q->win_h, src->channels, s.wide ? 16 : 8, err)))
        return rc;
    if ((rc = pass_prepare(&s, q, box, scratch, &own_scratch, err)))
        goto out;

    /* an input row as the horizontal kernels read it: exactly its pixels */
    struct hrow in_row = {NULL, (size_t)s.in_w * s.channels, 0, s.in_w, s.channels, s.wide};
    for (uint32_t y = 0; y < s.win_h; y++) {
        uint8_t *out = dst->pixels + (size_t)y * dst->stride;
        if (!s.need_v)
            row_horizontal_only(&s, &in_row, y, out);
        else if (!s.need_h || s.vertical_first)
            row_vertical_first(&s, y, out);
        else
            row_horizontal_first(&s, &in_row, y, out);
    }
out:
    shard_image_release(&own_scratch);
    return rc;
}

/* ---- public API ------------------------------------------------------------------ */

int shard_resize(const struct shard_image *src, uint32_t dst_w, uint32_t dst_h,
                 struct shard_image *dst, struct shard_err *err)
{
    return sk_resample(src, dst_w, dst_h, 0, 0, dst_w, dst_h, SHARD_RESIZE_DEFAULT, NULL, dst, err);
}

int shard_geometry_apply(const struct shard_image *src, const struct shard_geometry *g,
                         struct shard_image *tmp, struct shard_image *dst, struct shard_err *err)
{
    if (!g)
        return shard_err_set(err, SHARD_EINVAL, "no geometry to apply");
    /* The window is resampled directly: cropping costs no full-size pass and
     * no copy, and gives the same pixels as resample-then-cut. */
    return sk_resample(src, g->scaled_w, g->scaled_h, g->crop_x, g->crop_y, g->out_w, g->out_h,
                       SHARD_RESIZE_DEFAULT, tmp, dst, err);
}

int shard_geometry_apply_decoded(const struct shard_image *src,
                                 const struct shard_decode_info *info,
                                 const struct shard_geometry *g, struct shard_image *tmp,
                                 struct shard_image *dst, struct shard_err *err)
{
    if (!g || !info)
        return shard_err_set(err, SHARD_EINVAL, "no geometry to apply or no decode info");
    struct sk_box box = {info->box_x0, info->box_y0, info->box_x1, info->box_y1};
    return sk_resample_box(src, &box, g->scaled_w, g->scaled_h, g->crop_x, g->crop_y, g->out_w,
                           g->out_h, SHARD_RESIZE_DEFAULT, simd_best(), tmp, dst, err);
}
