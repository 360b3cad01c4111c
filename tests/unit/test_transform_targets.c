/* test_transform_targets.c - boxes and masks through the transforms' drawn
 * choices (shard_transforms_boxes, shard_transforms_mask), against values worked
 * out by hand from transforms.v2's rules: a resize scales boxes without
 * clamping them, a crop moves and clamps them (a padded centre crop moves
 * them by the padding), a flip mirrors x, boxes under the minimum size go
 * with their class and flags, a mask is resampled about pixel centres,
 * padded with 0 and mirrored with its image; the box's class and flags
 * travel with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit.h"

static struct shard_transforms *make(const struct shard_transform_step *steps, size_t n)
{
    struct shard_transforms *a;
    struct shard_err err;
    if (shard_transforms_new(&a, steps, n, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, &err))
        fail_msg("%s", err.msg);
    return a;
}

static void draw(const struct shard_transforms *a, uint32_t w, uint32_t h,
                 struct shard_transforms_draws *d)
{
    struct shard_err err;
    if (shard_transforms_draw(a, w, h, 1, 0, 0, d, &err))
        fail_msg("%s", err.msg);
}

static void put_box(uint8_t *p, float x0, float y0, float x1, float y1, uint32_t cls,
                    uint32_t flags)
{
    float f[4] = {x0, y0, x1, y1};
    memcpy(p, f, sizeof f); /* the test host is little-endian, as the format */
    memcpy(p + 16, &cls, 4);
    memcpy(p + 20, &flags, 4);
}

static void assert_box(const uint8_t *p, float x0, float y0, float x1, float y1, uint32_t cls,
                       uint32_t flags)
{
    float f[4];
    uint32_t c, fl;
    memcpy(f, p, sizeof f);
    memcpy(&c, p + 16, 4);
    memcpy(&fl, p + 20, 4);
    assert_float_equal(f[0], x0, 1e-4);
    assert_float_equal(f[1], y0, 1e-4);
    assert_float_equal(f[2], x1, 1e-4);
    assert_float_equal(f[3], y1, 1e-4);
    assert_int_equal(c, cls);
    assert_int_equal(fl, flags);
}

static void test_resize_scales_and_a_padded_crop_moves_and_clamps(void **state)
{
    (void)state;
    struct shard_transform_step st[3];
    shard_transform_step_init(&st[0], SHARD_TRANSFORM_RESIZE);
    st[0].height = 50, st[0].width = 100; /* 200 x 100 -> 100 x 50: half */
    shard_transform_step_init(&st[1], SHARD_TRANSFORM_CENTER_CROP);
    st[1].height = 60, st[1].width = 80; /* from 100 x 50: left 10, top -5 (padded) */
    shard_transform_step_init(&st[2], SHARD_TRANSFORM_HORIZONTAL_FLIP);
    st[2].p = 0; /* never */
    struct shard_transforms *a = make(st, 3);
    struct shard_transforms_draws d;
    draw(a, 200, 100, &d);
    assert_int_equal(d.step[1].left, 10);
    assert_int_equal(d.step[1].top, -5);
    uint8_t boxes[4 * SHARD_BOX_BYTES];
    put_box(boxes, 40, 20, 60, 60, 3, SHARD_BOX_CROWD); /* -> (20,10,30,30) -> (10,15,20,35) */
    put_box(boxes + 24, 0, 0, 30, 100, 4, 0);           /* -> (0,0,15,50) -> (0,5,5,55) */
    put_box(boxes + 48, 0, 0, 19, 100, 5, 0);           /* -> (0,0,9.5,50): left of the crop */
    put_box(boxes + 72, 150, 90, 200, 100, 6, 0);       /* -> (75,45,100,50) -> (65,50,90,55) */
    size_t kept = shard_transforms_boxes(a, &d, 0, 0, 1.0, boxes, 4, boxes);
    assert_int_equal(kept, 3);
    assert_box(boxes, 10, 15, 20, 35, 3, SHARD_BOX_CROWD);
    assert_box(boxes + 24, 0, 5, 5, 55, 4, 0);
    assert_box(boxes + 48, 65, 50, 80, 55, 6, 0); /* clamped to the crop */
    shard_transforms_free(a);
}

static void test_boxes_under_the_minimum_go_with_their_class(void **state)
{
    (void)state;
    struct shard_transform_step st[1];
    shard_transform_step_init(&st[0], SHARD_TRANSFORM_HORIZONTAL_FLIP);
    st[0].p = 1;
    struct shard_transforms *a = make(st, 1);
    struct shard_transforms_draws d;
    draw(a, 100, 50, &d);
    uint8_t in[3 * SHARD_BOX_BYTES], out[3 * SHARD_BOX_BYTES];
    put_box(in, 10, 10, 12.5f, 40, 1, 0);   /* 2.5 wide */
    put_box(in + 24, 20, 10, 40, 11, 2, 0); /* 1 high */
    put_box(in + 48, 0, 0, 30, 20, 3, SHARD_BOX_CROWD);
    size_t kept = shard_transforms_boxes(a, &d, 0, 0, 2.0, in, 3, out);
    assert_int_equal(kept, 2); /* the 1-high box is under 2 */
    assert_box(out, 87.5f, 10, 90, 40, 1, 0);
    assert_box(out + 24, 70, 0, 100, 20, 3, SHARD_BOX_CROWD);
    /* min_size 0 keeps every box that is not empty */
    assert_int_equal(shard_transforms_boxes(a, &d, 0, 0, 0, in, 3, out), 3);
    shard_transforms_free(a);
}

static void test_a_mask_is_resampled_about_centres_padded_with_0_and_mirrored(void **state)
{
    (void)state;
    /* a 4 x 2 mask of values 1..8, resized to 2 x 1 (each output pixel the
     * input pixel holding its centre: x 1 and 3, y 1), centre-cropped to 4 x 1
     * (padding of 1 each side), flipped */
    struct shard_transform_step st[3];
    shard_transform_step_init(&st[0], SHARD_TRANSFORM_RESIZE);
    st[0].height = 1, st[0].width = 2;
    shard_transform_step_init(&st[1], SHARD_TRANSFORM_CENTER_CROP);
    st[1].height = 1, st[1].width = 4;
    shard_transform_step_init(&st[2], SHARD_TRANSFORM_HORIZONTAL_FLIP);
    st[2].p = 1;
    struct shard_transforms *a = make(st, 3);
    struct shard_transforms_draws d;
    draw(a, 4, 2, &d);
    uint8_t values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct shard_image mask = {
        .pixels = values, .width = 4, .height = 2, .channels = 1, .stride = 4};
    struct shard_transforms_workspace *w;
    struct shard_err err;
    assert_int_equal(shard_transforms_workspace_new(&w, &err), 0);
    uint8_t out[4] = {9, 9, 9, 9};
    assert_int_equal(shard_transforms_mask(a, &mask, &d, w, out, &err), 0);
    uint8_t want[4] = {0, 8, 6, 0}; /* resized (6, 8), padded (0, 6, 8, 0), mirrored */
    assert_memory_equal(out, want, 4);
    /* 2-byte values move as one */
    uint16_t wide[8] = {1, 2, 3, 4, 5, 6, 7, 0x1234};
    struct shard_image mask16 = {
        .pixels = (uint8_t *)wide, .width = 4, .height = 2, .channels = 2, .stride = 8};
    uint16_t out16[4];
    assert_int_equal(shard_transforms_mask(a, &mask16, &d, w, out16, &err), 0);
    assert_int_equal(out16[1], 0x1234);
    assert_int_equal(out16[2], 6);
    /* a mask of another size than the draws' is refused */
    mask.width = 3;
    assert_int_equal(shard_transforms_mask(a, &mask, &d, w, out, &err), SHARD_EINVAL);
    shard_transforms_workspace_free(w);
    shard_transforms_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_scales_and_a_padded_crop_moves_and_clamps),
        cmocka_unit_test(test_boxes_under_the_minimum_go_with_their_class),
        cmocka_unit_test(test_a_mask_is_resampled_about_centres_padded_with_0_and_mirrored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
