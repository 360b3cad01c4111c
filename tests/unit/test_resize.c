/* test_resize.c - output geometry (lib/image/image.c) and resampling (lib/image/resize.c).
 *
 * Expectations come from independent rules, never from earlier output of the
 * code: the geometry rule is re-derived here, a flat image must stay flat, a
 * ramp must stay monotonic, fine detail shrunk by an integer factor must
 * average out, a smooth band-limited pattern must survive, and every SIMD
 * kernel must give the bytes of the portable one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/resize_internal.h"
#include "shardkit/image.h"

#define PI 3.14159265358979323846

static const enum shard_resize_filter all_filters[] = {SHARD_RESIZE_TRIANGLE, SHARD_RESIZE_AREA,
                                                       SHARD_RESIZE_CUBIC};
#define N_FILTERS (sizeof all_filters / sizeof all_filters[0])

/* ---- helpers ------------------------------------------------------------------ */

/* xorshift32: reproducible noise without global state */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static void make_image(struct shard_image *img, uint32_t w, uint32_t h, uint32_t channels)
{
    assert_int_equal(shard_image_alloc(img, w, h, channels, NULL), 0);
}

static void fill_noise(struct shard_image *img, uint32_t seed)
{
    for (uint32_t y = 0; y < img->height; y++)
        for (size_t i = 0; i < (size_t)img->width * img->channels; i++)
            img->pixels[y * img->stride + i] = (uint8_t)(next_random(&seed) >> 24);
}

static uint8_t *pixel(const struct shard_image *img, uint32_t x, uint32_t y)
{
    return img->pixels + (size_t)y * img->stride + (size_t)x * img->channels;
}

static void resize_ok(const struct shard_image *src, uint32_t w, uint32_t h,
                      enum shard_resize_filter filter, struct shard_image *dst)
{
    struct shard_err err = {0};
    int rc = sk_resample(src, w, h, 0, 0, w, h, filter, NULL, dst, &err);
    if (rc)
        fail_msg("resize %ux%u -> %ux%u: %s", src->width, src->height, w, h, err.msg);
    assert_int_equal(dst->width, w);
    assert_int_equal(dst->height, h);
}

static int same_pixels(const struct shard_image *a, const struct shard_image *b)
{
    if (a->width != b->width || a->height != b->height || a->channels != b->channels)
        return 0;
    for (uint32_t y = 0; y < a->height; y++)
        if (memcmp(pixel(a, 0, y), pixel(b, 0, y), (size_t)a->width * a->channels))
            return 0;
    return 1;
}

/* ---- geometry ----------------------------------------------------------------- */

/* The documented rule, written out case by case: the side `fit` picks becomes
 * `size`, the other floor(other * size / side) but at least 1; nothing
 * changes when that side already equals size, or is smaller and upscaling
 * is off; crop keeps a centred min(size, short side) square, the odd pixel
 * going right/bottom. */
static void expected_geometry(uint32_t w, uint32_t h, uint32_t size, enum shard_fit fit,
                              int upscale, struct shard_geometry *g)
{
    uint32_t short_side = w < h ? w : h, long_side = w < h ? h : w;
    uint32_t side = fit == SHARD_FIT_LONG ? long_side : short_side;
    int width_is_side = fit == SHARD_FIT_LONG ? w >= h : w <= h;
    memset(g, 0, sizeof *g);
    if (side == size || (side < size && !upscale)) {
        g->scaled_w = w;
        g->scaled_h = h;
    } else if (width_is_side) {
        unsigned long long other = (unsigned long long)h * size / w;
        g->scaled_w = size;
        g->scaled_h = other < 1 ? 1 : other > UINT32_MAX ? UINT32_MAX : (uint32_t)other;
    } else {
        unsigned long long other = (unsigned long long)w * size / h;
        g->scaled_h = size;
        g->scaled_w = other < 1 ? 1 : other > UINT32_MAX ? UINT32_MAX : (uint32_t)other;
    }
    g->out_w = g->scaled_w;
    g->out_h = g->scaled_h;
    if (fit == SHARD_FIT_CROP) {
        uint32_t square = size;
        if (g->scaled_w < square)
            square = g->scaled_w;
        if (g->scaled_h < square)
            square = g->scaled_h;
        g->out_w = g->out_h = square;
        g->crop_x = (g->scaled_w - square) / 2;
        g->crop_y = (g->scaled_h - square) / 2;
    }
}

static void test_geometry_follows_the_documented_rule_for_many_shapes(void **state)
{
    (void)state;
    static const uint32_t sides[] = {1,   2,   3,   7,   63,  224,  255,  256,   257,
                                     375, 500, 511, 512, 513, 1000, 2400, 65535, 4000000};
    static const uint32_t sizes[] = {1, 2, 64, 224, 256, 512, 4096};
    static const enum shard_fit fits[] = {SHARD_FIT_SHORT, SHARD_FIT_LONG, SHARD_FIT_CROP};
    size_t n_sides = sizeof sides / sizeof *sides, checked = 0;
    for (size_t a = 0; a < n_sides; a++)
        for (size_t b = 0; b < n_sides; b++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                for (size_t f = 0; f < 3; f++)
                    for (int up = 0; up <= 1; up++) {
                        struct shard_geometry got, want;
                        assert_int_equal(shard_geometry_compute(sides[a], sides[b], sizes[s],
                                                                fits[f], up, &got),
                                         0);
                        expected_geometry(sides[a], sides[b], sizes[s], fits[f], up, &want);
                        if (memcmp(&got, &want, sizeof got))
                            fail_msg("%ux%u size %u fit %s upscale %d: got scaled %ux%u "
                                     "window %ux%u at (%u,%u), expected %ux%u %ux%u (%u,%u)",
                                     sides[a], sides[b], sizes[s], shard_fit_name(fits[f]), up,
                                     got.scaled_w, got.scaled_h, got.out_w, got.out_h, got.crop_x,
                                     got.crop_y, want.scaled_w, want.scaled_h, want.out_w,
                                     want.out_h, want.crop_x, want.crop_y);
                        checked++;
                    }
    assert_true(checked > 4000);
}

static void test_geometry_examples_from_torchvision(void **state)
{
    (void)state;
    struct shard_geometry g;
    /* Resize(256) on 500x375 gives 341x256; CenterCrop(224) after it starts at (58,16) */
    assert_int_equal(shard_geometry_compute(500, 375, 256, SHARD_FIT_SHORT, 1, &g), 0);
    assert_int_equal(g.scaled_w, 341);
    assert_int_equal(g.scaled_h, 256);
    assert_int_equal(shard_geometry_compute(500, 375, 256, SHARD_FIT_CROP, 1, &g), 0);
    assert_int_equal(g.out_w, 256);
    assert_int_equal(g.out_h, 256);
    assert_int_equal(g.crop_x, (341 - 256) / 2);
    assert_int_equal(g.crop_y, 0);
    assert_int_equal(shard_geometry_compute(0, 10, 256, SHARD_FIT_SHORT, 1, &g), SHARD_EINVAL);
    assert_int_equal(shard_geometry_compute(10, 10, 0, SHARD_FIT_SHORT, 1, &g), SHARD_EINVAL);
}

/* ---- what resampling must preserve --------------------------------------------- */

static const uint32_t shapes[][4] = {
    /* src w, h -> dst w, h: shrink by integer and odd factors, enlarge, mixed,
     * tiny, one row or column, and a large reduction */
    {500, 375, 341, 256}, {375, 500, 256, 341}, {64, 48, 512, 384}, {7, 5, 3, 2},
    {1, 1, 9, 4},         {9, 4, 1, 1},         {301, 1, 17, 1},    {1, 301, 1, 17},
    {640, 480, 80, 60},   {100, 100, 33, 67},   {33, 67, 100, 100}, {2, 2, 4, 4},
    {4000, 30, 32, 1},    {257, 255, 256, 256},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static void test_flat_colour_stays_exactly_that_colour(void **state)
{
    (void)state;
    static const uint8_t colours[][4] = {{0, 0, 0, 0}, {255, 255, 255, 255}, {12, 200, 97, 3}};
    struct shard_image src = {0}, dst = {0};
    for (uint32_t channels = 1; channels <= 4; channels++)
        for (size_t s = 0; s < N_SHAPES; s++)
            for (size_t f = 0; f < N_FILTERS; f++)
                for (size_t c = 0; c < 3; c++) {
                    make_image(&src, shapes[s][0], shapes[s][1], channels);
                    for (uint32_t y = 0; y < src.height; y++)
                        for (uint32_t x = 0; x < src.width; x++)
                            memcpy(pixel(&src, x, y), colours[c], channels);
                    resize_ok(&src, shapes[s][2], shapes[s][3], all_filters[f], &dst);
                    assert_int_equal(dst.channels, channels);
                    for (uint32_t y = 0; y < dst.height; y++)
                        for (uint32_t x = 0; x < dst.width; x++)
                            if (memcmp(pixel(&dst, x, y), colours[c], channels))
                                fail_msg("%u channels %ux%u -> %ux%u filter %d: pixel (%u,%u) "
                                         "changed colour",
                                         channels, shapes[s][0], shapes[s][1], shapes[s][2],
                                         shapes[s][3], (int)all_filters[f], x, y);
                }
    shard_image_release(&src);
    shard_image_release(&dst);
}

static void test_horizontal_ramp_stays_monotonic_and_rows_stay_equal(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    for (size_t s = 0; s < N_SHAPES; s++) {
        if (shapes[s][0] < 2 || shapes[s][2] < 2)
            continue;
        make_image(&src, shapes[s][0], shapes[s][1], 3);
        for (uint32_t y = 0; y < src.height; y++)
            for (uint32_t x = 0; x < src.width; x++) {
                uint8_t v = (uint8_t)((x * 255u) / (src.width - 1));
                uint8_t *p = pixel(&src, x, y);
                p[0] = v, p[1] = (uint8_t)(255 - v), p[2] = (uint8_t)(v / 2);
            }
        for (size_t f = 0; f < N_FILTERS; f++) {
            resize_ok(&src, shapes[s][2], shapes[s][3], all_filters[f], &dst);
            for (uint32_t y = 0; y < dst.height; y++) {
                if (memcmp(pixel(&dst, 0, y), pixel(&dst, 0, 0), (size_t)dst.width * 3))
                    fail_msg("filter %d %ux%u: row %u differs from row 0", (int)all_filters[f],
                             dst.width, dst.height, y);
                for (uint32_t x = 1; x < dst.width; x++) {
                    const uint8_t *a = pixel(&dst, x - 1, y), *b = pixel(&dst, x, y);
                    if (b[0] < a[0] || b[1] > a[1] || b[2] < a[2])
                        fail_msg("filter %d %ux%u -> %ux%u: ramp not monotonic at x=%u "
                                 "(%u,%u,%u then %u,%u,%u)",
                                 (int)all_filters[f], src.width, src.height, dst.width, dst.height,
                                 x, a[0], a[1], a[2], b[0], b[1], b[2]);
                }
            }
            /* the ends stay near the ends (no wrap-around, no darkening) */
            assert_true(pixel(&dst, 0, 0)[0] < 64);
            assert_true(pixel(&dst, dst.width - 1, 0)[0] > 191);
        }
    }
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* A one-pixel checkerboard has the highest frequency an image can hold.
 * Shrunk by an integer factor it must average to mid-grey; point sampling
 * (an aliased resize) would give pure black or pure white. */
static void test_checkerboard_shrunk_4x_and_3x_becomes_mid_grey(void **state)
{
    (void)state;
    static const uint32_t factors[] = {3, 4};
    struct shard_image src = {0}, dst = {0};
    make_image(&src, 240, 240, 3);
    for (uint32_t y = 0; y < 240; y++)
        for (uint32_t x = 0; x < 240; x++)
            memset(pixel(&src, x, y), (x + y) % 2 ? 255 : 0, 3);
    for (size_t i = 0; i < 2; i++)
        for (size_t f = 0; f < N_FILTERS; f++) {
            uint32_t n = 240 / factors[i];
            resize_ok(&src, n, n, all_filters[f], &dst);
            for (uint32_t y = 0; y < n; y++)
                for (uint32_t x = 0; x < n; x++)
                    for (int c = 0; c < 3; c++) {
                        int v = pixel(&dst, x, y)[c];
                        /* odd factors leave one extra pixel of one phase: 5/9
                         * or 4/9 of 255 at worst for the area filter */
                        if (v < 100 || v > 155)
                            fail_msg("filter %d, %ux shrink: pixel (%u,%u) is %d, not grey",
                                     (int)all_filters[f], factors[i], x, y, v);
                    }
            if (factors[i] == 4) /* even factor: exact halves */
                for (uint32_t y = 0; y < n; y++)
                    for (uint32_t x = 0; x < n; x++) {
                        int v = pixel(&dst, x, y)[0];
                        if (v < 126 || v > 129)
                            fail_msg("filter %d: 4x shrink gave %d at (%u,%u)", (int)all_filters[f],
                                     v, x, y);
                    }
        }
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* Averaging k independent samples divides the spread by sqrt(k): the output
 * of a big non-integer reduction of white noise must be much flatter than
 * the input, as it is only if every input pixel contributes. */
static double spread(const struct shard_image *img)
{
    double sum = 0, sum2 = 0, n = (double)img->width * img->height * img->channels;
    for (uint32_t y = 0; y < img->height; y++)
        for (size_t i = 0; i < (size_t)img->width * img->channels; i++) {
            double v = pixel(img, 0, y)[i];
            sum += v;
            sum2 += v * v;
        }
    return sqrt(sum2 / n - (sum / n) * (sum / n));
}

static void test_large_reduction_of_noise_averages_every_pixel(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    make_image(&src, 1003, 757, 3);
    fill_noise(&src, 12345);
    double before = spread(&src);
    assert_true(before > 70); /* uniform 0..255: about 74 */
    for (size_t f = 0; f < N_FILTERS; f++) {
        resize_ok(&src, 160, 120, all_filters[f], &dst); /* 6.27x */
        double after = spread(&dst);
        /* >= 39 input pixels per output for the narrowest (area) filter:
         * 74 / sqrt(39) = 12; point sampling would keep about 74 */
        if (after > 15)
            fail_msg("filter %d: spread %.1f -> %.1f, shrinking is aliased", (int)all_filters[f],
                     before, after);
    }
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* A smooth pattern, well below the output's Nyquist limit, must come out as
 * the same pattern sampled at the output pixel centres. */
static double pattern(double x, double y)
{
    return 128 + 60 * sin(2 * PI * x / 97.0) + 50 * cos(2 * PI * y / 71.0);
}

static void test_smooth_pattern_survives_shrinking_and_enlarging(void **state)
{
    (void)state;
    static const uint32_t sizes[][4] = {{500, 375, 341, 256},
                                        {400, 300, 700, 525},
                                        {1200, 900, 300, 225}};
    struct shard_image src = {0}, dst = {0};
    for (size_t s = 0; s < 3; s++) {
        make_image(&src, sizes[s][0], sizes[s][1], 3);
        for (uint32_t y = 0; y < src.height; y++)
            for (uint32_t x = 0; x < src.width; x++)
                memset(pixel(&src, x, y), (int)lrint(pattern(x + 0.5, y + 0.5)), 3);
        for (size_t f = 0; f < N_FILTERS; f++) {
            resize_ok(&src, sizes[s][2], sizes[s][3], all_filters[f], &dst);
            double sx = (double)src.width / dst.width, sy = (double)src.height / dst.height;
            double sse = 0;
            size_t n = 0;
            /* away from the borders, where every filter has its full support */
            for (uint32_t y = 8; y + 8 < dst.height; y++)
                for (uint32_t x = 8; x + 8 < dst.width; x++) {
                    double d = pixel(&dst, x, y)[0] - pattern((x + 0.5) * sx, (y + 0.5) * sy);
                    sse += d * d;
                    n++;
                }
            double psnr = 10 * log10(255.0 * 255.0 * (double)n / sse);
            if (psnr < 30)
                fail_msg("filter %d, %ux%u -> %ux%u: PSNR %.1f dB against the pattern",
                         (int)all_filters[f], src.width, src.height, dst.width, dst.height, psnr);
        }
    }
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* Enlarging two pixels (0 and 255) to four is linear interpolation between
 * the pixel centres (at 0.5 and 1.5), clamped at the borders:
 * centres 0.25, 0.75, 1.25, 1.75 -> 0, 63.75, 191.25, 255. */
static void test_enlarging_interpolates_between_pixel_centres(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    make_image(&src, 2, 1, 3);
    memset(pixel(&src, 0, 0), 0, 3);
    memset(pixel(&src, 1, 0), 255, 3);
    static const uint8_t expect[] = {0, 64, 191, 255};
    resize_ok(&src, 4, 1, SHARD_RESIZE_DEFAULT, &dst);
    for (uint32_t x = 0; x < 4; x++)
        assert_int_equal(pixel(&dst, x, 0)[1], expect[x]);
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* Area averaging by 1.5: output pixel 0 covers [0, 1.5), pixel 1 [1.5, 3). */
static void test_area_filter_weights_pixels_by_coverage(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    make_image(&src, 3, 1, 1);
    src.pixels[0] = 0, src.pixels[1] = 90, src.pixels[2] = 240;
    resize_ok(&src, 2, 1, SHARD_RESIZE_AREA, &dst);
    assert_int_equal(dst.pixels[0], 30);  /* (0 * 1 + 90 * 0.5) / 1.5 */
    assert_int_equal(dst.pixels[1], 190); /* (90 * 0.5 + 240 * 1) / 1.5 */
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* A reduction so large that each tap's weight is below one fixed-point unit
 * still sums to exactly one (flat stays flat) and splits a two-tone row. */
static void test_huge_reduction_keeps_weights_summing_to_one(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    make_image(&src, 120000, 1, 3);
    for (uint32_t x = 0; x < 120000; x++)
        memset(pixel(&src, x, 0), x < 60000 ? 10 : 250, 3);
    resize_ok(&src, 2, 1, SHARD_RESIZE_DEFAULT, &dst);
    assert_int_equal(pixel(&dst, 0, 0)[0], 10);
    assert_int_equal(pixel(&dst, 1, 0)[0], 250);
    resize_ok(&src, 1, 1, SHARD_RESIZE_DEFAULT, &dst);
    assert_in_range(pixel(&dst, 0, 0)[0], 128, 132); /* the mean, 130 */
    shard_image_release(&src);
    shard_image_release(&dst);
}

/* ---- sizes, windows, copies --------------------------------------------------- */

static void test_output_has_requested_size_and_tight_stride(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0};
    for (size_t s = 0; s < N_SHAPES; s++) {
        make_image(&src, shapes[s][0], shapes[s][1], 3);
        fill_noise(&src, (uint32_t)s + 1);
        assert_int_equal(shard_resize(&src, shapes[s][2], shapes[s][3], &dst, NULL), 0);
        assert_int_equal(dst.width, shapes[s][2]);
        assert_int_equal(dst.height, shapes[s][3]);
        assert_int_equal(dst.channels, 3);
        assert_int_equal(dst.stride, (size_t)shapes[s][2] * 3);
        assert_true(dst.capacity >= dst.stride * dst.height);
    }
    shard_image_release(&src);
    shard_image_release(&dst);
}

static void copy_window(const struct shard_image *full, uint32_t x0, uint32_t y0, uint32_t w,
                        uint32_t h, struct shard_image *out)
{
    make_image(out, w, h, full->channels);
    for (uint32_t y = 0; y < h; y++)
        memcpy(pixel(out, 0, y), pixel(full, x0, y0 + y), (size_t)w * full->channels);
}

static void test_crop_is_the_centred_window_of_the_full_resize(void **state)
{
    (void)state;
    static const uint32_t cases[][3] = {
        /* w, h, size: landscape, portrait, odd leftovers, enlarging, square */
        {500, 375, 224},
        {375, 500, 224},
        {333, 501, 101},
        {60, 45, 128},
        {300, 300, 256}};
    struct shard_image src = {0}, tmp = {0}, cropped = {0}, full = {0}, window = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        make_image(&src, cases[i][0], cases[i][1], 3);
        fill_noise(&src, 77 + (uint32_t)i);
        struct shard_geometry g;
        assert_int_equal(shard_geometry_compute(src.width, src.height, cases[i][2], SHARD_FIT_CROP,
                                                1, &g),
                         0);
        assert_int_equal(g.out_w, cases[i][2]);
        assert_int_equal(g.out_h, cases[i][2]);
        /* centred: equal margins, the odd pixel on the right/bottom */
        uint32_t right = g.scaled_w - g.out_w - g.crop_x, bottom = g.scaled_h - g.out_h - g.crop_y;
        assert_true(right == g.crop_x || right == g.crop_x + 1);
        assert_true(bottom == g.crop_y || bottom == g.crop_y + 1);

        assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &cropped, NULL), 0);
        assert_int_equal(shard_resize(&src, g.scaled_w, g.scaled_h, &full, NULL), 0);
        copy_window(&full, g.crop_x, g.crop_y, g.out_w, g.out_h, &window);
        if (!same_pixels(&cropped, &window))
            fail_msg("%ux%u crop %u: transform differs from resize-then-cut", src.width, src.height,
                     cases[i][2]);
    }
    shard_image_release(&src);
    shard_image_release(&tmp);
    shard_image_release(&cropped);
    shard_image_release(&full);
    shard_image_release(&window);
}

static void test_transform_without_resampling_copies_the_pixels(void **state)
{
    (void)state;
    struct shard_image src = {0}, tmp = {0}, dst = {0}, window = {0};
    make_image(&src, 200, 150, 3);
    fill_noise(&src, 5);
    struct shard_geometry g;
    /* already at size: short side 150 */
    assert_int_equal(shard_geometry_compute(200, 150, 150, SHARD_FIT_SHORT, 1, &g), 0);
    assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &dst, NULL), 0);
    assert_true(same_pixels(&src, &dst));
    /* smaller than size, no upscaling, cropped: a centred 150 square, copied */
    assert_int_equal(shard_geometry_compute(200, 150, 256, SHARD_FIT_CROP, 0, &g), 0);
    assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &dst, NULL), 0);
    copy_window(&src, 25, 0, 150, 150, &window);
    assert_true(same_pixels(&window, &dst));
    shard_image_release(&src);
    shard_image_release(&tmp);
    shard_image_release(&dst);
    shard_image_release(&window);
}

static void test_source_with_padded_stride_is_read_correctly(void **state)
{
    (void)state;
    struct shard_image tight = {0}, padded = {0}, a = {0}, b = {0};
    make_image(&tight, 123, 77, 3);
    fill_noise(&tight, 9);
    /* the same pixels with 13 spare bytes per row */
    size_t stride = 123 * 3 + 13;
    padded = tight;
    padded.pixels = malloc(stride * 77);
    assert_non_null(padded.pixels);
    padded.stride = stride;
    padded.capacity = stride * 77;
    for (uint32_t y = 0; y < 77; y++) {
        memcpy(padded.pixels + y * stride, pixel(&tight, 0, y), 123 * 3);
        memset(padded.pixels + y * stride + 123 * 3, 0xAB, 13);
    }
    assert_int_equal(shard_resize(&tight, 50, 40, &a, NULL), 0);
    assert_int_equal(shard_resize(&padded, 50, 40, &b, NULL), 0);
    assert_true(same_pixels(&a, &b));
    shard_image_release(&tight);
    shard_image_release(&padded);
    shard_image_release(&a);
    shard_image_release(&b);
}

/* ---- determinism ---------------------------------------------------------------- */

static void test_every_simd_kernel_gives_the_portable_bytes(void **state)
{
    (void)state;
    static const enum shard_simd levels[] = {SHARD_SIMD_SSSE3, SHARD_SIMD_AVX2};
    struct shard_image src = {0}, scalar = {0}, simd = {0}, scratch = {0};
    uint32_t seed = 99;
    for (int round = 0; round < 60; round++) {
        uint32_t sw = 1 + next_random(&seed) % 700, sh = 1 + next_random(&seed) % 300;
        uint32_t dw = 1 + next_random(&seed) % 700, dh = 1 + next_random(&seed) % 300;
        make_image(&src, sw, sh, 3);
        fill_noise(&src, seed);
        for (size_t f = 0; f < N_FILTERS; f++) {
            assert_int_equal(sk_resample_simd(&src, dw, dh, 0, 0, dw, dh, all_filters[f],
                                              SHARD_SIMD_NONE, &scratch, &scalar, NULL),
                             0);
            for (size_t l = 0; l < 2; l++) {
                assert_int_equal(sk_resample_simd(&src, dw, dh, 0, 0, dw, dh, all_filters[f],
                                                  levels[l], &scratch, &simd, NULL),
                                 0);
                if (!same_pixels(&scalar, &simd))
                    fail_msg("%ux%u -> %ux%u filter %d: SIMD level %d differs from C", sw, sh, dw,
                             dh, (int)all_filters[f], (int)levels[l]);
            }
        }
    }
    shard_image_release(&src);
    shard_image_release(&scalar);
    shard_image_release(&simd);
    shard_image_release(&scratch);
}

static void test_repeated_calls_give_the_same_bytes(void **state)
{
    (void)state;
    struct shard_image src = {0}, first = {0}, again = {0}, tmp = {0};
    make_image(&src, 640, 427, 3);
    fill_noise(&src, 4242);
    struct shard_geometry g;
    assert_int_equal(shard_geometry_compute(640, 427, 224, SHARD_FIT_CROP, 1, &g), 0);
    assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &first, NULL), 0);
    for (int i = 0; i < 3; i++) {
        /* reused output and scratch, then fresh ones */
        assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &again, NULL), 0);
        assert_true(same_pixels(&first, &again));
        shard_image_release(&again);
        shard_image_release(&tmp);
    }
    shard_image_release(&src);
    shard_image_release(&first);
}

#define THREAD_JOBS 48

static void test_openmp_workers_give_the_serial_bytes(void **state)
{
    (void)state;
    struct shard_image src[THREAD_JOBS] = {{0}}, serial[THREAD_JOBS] = {{0}};
    struct shard_image parallel[THREAD_JOBS] = {{0}};
    struct shard_geometry g[THREAD_JOBS];
    for (int i = 0; i < THREAD_JOBS; i++) {
        make_image(&src[i], 100 + 37 * (uint32_t)i, 80 + 23 * (uint32_t)i, 3);
        fill_noise(&src[i], 1000 + (uint32_t)i);
        assert_int_equal(shard_geometry_compute(src[i].width, src[i].height, 96 + 8 * (i % 5),
                                                (enum shard_fit)(i % 3), 1, &g[i]),
                         0);
        struct shard_image tmp = {0};
        assert_int_equal(shard_geometry_apply(&src[i], &g[i], &tmp, &serial[i], NULL), 0);
        shard_image_release(&tmp);
    }
    int failures = 0;
#pragma omp parallel num_threads(4) reduction(+ : failures)
    {
        struct shard_image tmp = {0}; /* per-worker scratch, reused */
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < THREAD_JOBS; i++)
            failures += shard_geometry_apply(&src[i], &g[i], &tmp, &parallel[i], NULL) != 0;
        shard_image_release(&tmp);
    }
    assert_int_equal(failures, 0);
    for (int i = 0; i < THREAD_JOBS; i++) {
        if (!same_pixels(&serial[i], &parallel[i]))
            fail_msg("job %d: the parallel result differs from the serial one", i);
        shard_image_release(&src[i]);
        shard_image_release(&serial[i]);
        shard_image_release(&parallel[i]);
    }
}

/* ---- refusals ----------------------------------------------------------------- */

static void test_invalid_requests_are_refused_with_a_reason(void **state)
{
    (void)state;
    struct shard_image src = {0}, dst = {0}, empty = {0}, tmp = {0};
    struct shard_err err = {0};
    make_image(&src, 10, 10, 3);
    fill_noise(&src, 1);

    assert_int_equal(shard_resize(&src, 0, 5, &dst, &err), SHARD_EINVAL);
    assert_int_equal(err.code, SHARD_EINVAL);
    assert_int_equal(shard_resize(&src, 5, 0, &dst, &err), SHARD_EINVAL);
    assert_int_equal(shard_resize(&empty, 5, 5, &dst, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "source"));
    assert_int_equal(shard_resize(&src, 5, 5, &src, &err), SHARD_EINVAL); /* in place */

    struct shard_geometry g = {20, 20, 15, 0, 10, 10}; /* window past the right edge */
    assert_int_equal(shard_geometry_apply(&src, &g, &tmp, &dst, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "not inside"));
    assert_int_equal(shard_geometry_apply(&src, NULL, &tmp, &dst, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "no geometry to apply");
    assert_int_equal(sk_resample(&src, 5, 5, 0, 0, 5, 5, (enum shard_resize_filter)77, NULL, &dst,
                                 &err),
                     SHARD_EINVAL);
    shard_image_release(&src);
    shard_image_release(&dst);
    shard_image_release(&tmp);
}

static void test_box_of_the_source_is_resampled_as_that_part_alone(void **state)
{
    (void)state;
    struct shard_image src = {0}, part = {0}, from_box = {0}, from_part = {0}, whole = {0};
    struct shard_err err = {0};
    make_image(&src, 41, 30, 3);
    fill_noise(&src, 7);
    /* the whole image as a box: the bytes of a plain resample */
    struct sk_box all = {0, 0, 41, 30};
    for (int simd = SHARD_SIMD_NONE; simd <= SHARD_SIMD_AVX2; simd++) {
        assert_int_equal(sk_resample_box(&src, &all, 13, 9, 0, 0, 13, 9, SHARD_RESIZE_AREA,
                                         (enum shard_simd)simd, NULL, &from_box, &err),
                         0);
        resize_ok(&src, 13, 9, SHARD_RESIZE_AREA, &whole);
        assert_true(same_pixels(&from_box, &whole));
    }
    /* columns [1, 41) x rows [2, 30) halved by area averaging reach no pixel
     * outside the box: the same bytes as resampling that part cut out */
    make_image(&part, 40, 28, 3);
    for (uint32_t y = 0; y < 28; y++)
        memcpy(pixel(&part, 0, y), pixel(&src, 1, y + 2), 40 * 3);
    struct sk_box inner = {1, 2, 41, 30};
    assert_int_equal(sk_resample_box(&src, &inner, 20, 14, 0, 0, 20, 14, SHARD_RESIZE_AREA,
                                     SHARD_SIMD_AVX2, NULL, &from_box, &err),
                     0);
    resize_ok(&part, 20, 14, SHARD_RESIZE_AREA, &from_part);
    assert_true(same_pixels(&from_box, &from_part));
    /* a box outside the image or of no size is refused */
    struct sk_box bad[] = {{0, 0, 42, 30}, {-1, 0, 41, 30}, {5, 0, 5, 30}, {0, 3, 41, 2}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sk_resample_box(&src, &bad[i], 13, 9, 0, 0, 13, 9, SHARD_RESIZE_AREA,
                                         SHARD_SIMD_NONE, NULL, &from_box, &err),
                         SHARD_EINVAL);
        assert_non_null(strstr(err.msg, "box"));
    }
    shard_image_release(&src);
    shard_image_release(&part);
    shard_image_release(&from_box);
    shard_image_release(&from_part);
    shard_image_release(&whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry_follows_the_documented_rule_for_many_shapes),
        cmocka_unit_test(test_geometry_examples_from_torchvision),
        cmocka_unit_test(test_flat_colour_stays_exactly_that_colour),
        cmocka_unit_test(test_horizontal_ramp_stays_monotonic_and_rows_stay_equal),
        cmocka_unit_test(test_checkerboard_shrunk_4x_and_3x_becomes_mid_grey),
        cmocka_unit_test(test_large_reduction_of_noise_averages_every_pixel),
        cmocka_unit_test(test_smooth_pattern_survives_shrinking_and_enlarging),
        cmocka_unit_test(test_enlarging_interpolates_between_pixel_centres),
        cmocka_unit_test(test_area_filter_weights_pixels_by_coverage),
        cmocka_unit_test(test_huge_reduction_keeps_weights_summing_to_one),
        cmocka_unit_test(test_output_has_requested_size_and_tight_stride),
        cmocka_unit_test(test_crop_is_the_centred_window_of_the_full_resize),
        cmocka_unit_test(test_transform_without_resampling_copies_the_pixels),
        cmocka_unit_test(test_source_with_padded_stride_is_read_correctly),
        cmocka_unit_test(test_every_simd_kernel_gives_the_portable_bytes),
        cmocka_unit_test(test_repeated_calls_give_the_same_bytes),
        cmocka_unit_test(test_openmp_workers_give_the_serial_bytes),
        cmocka_unit_test(test_invalid_requests_are_refused_with_a_reason),
        cmocka_unit_test(test_box_of_the_source_is_resampled_as_that_part_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
