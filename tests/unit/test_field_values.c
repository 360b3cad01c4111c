/* test_field_values.c - the decoders of the structured field values
 * (shardkit/format.h "the structured values, decoded"): boxes, masks of 1-
 * and 2-byte values, instance masks and image fields; and a batch's
 * instance masks (shard_batch_instances).  Values are built
 * here byte by byte, as manifests/FORMAT.md lays them out, and the decoded
 * numbers are written out by hand, never taken from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit.h"

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void lef32(uint8_t *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    le32(p, bits);
}

static void test_boxes_decode_in_stored_order(void **state)
{
    (void)state;
    uint8_t v[2 * 24];
    lef32(v, 1.5f), lef32(v + 4, 2.0f), lef32(v + 8, 10.25f), lef32(v + 12, 20.0f);
    le32(v + 16, 3), le32(v + 20, 0);
    lef32(v + 24, 0.0f), lef32(v + 28, 0.5f), lef32(v + 32, 4.0f), lef32(v + 36, 8.0f);
    le32(v + 40, 70000), le32(v + 44, 1); /* a crowd region */
    struct shard_box out[2];
    uint64_t count = 9;
    struct shard_err err;
    assert_int_equal(shard_field_boxes_decode(v, sizeof v, NULL, &count, &err), 0);
    assert_int_equal(count, 2);
    assert_int_equal(shard_field_boxes_decode(v, sizeof v, out, &count, &err), 0);
    assert_true(out[0].x0 == 1.5f && out[0].y0 == 2.0f && out[0].x1 == 10.25f &&
                out[0].y1 == 20.0f);
    assert_int_equal(out[0].cls, 3);
    assert_int_equal(out[0].flags, 0);
    assert_true(out[1].x0 == 0.0f && out[1].y0 == 0.5f && out[1].x1 == 4.0f && out[1].y1 == 8.0f);
    assert_int_equal(out[1].cls, 70000);
    assert_int_equal(out[1].flags, SHARD_BOX_CROWD);
    assert_int_equal(shard_field_boxes_decode(v, 0, out, &count, &err), 0);
    assert_int_equal(count, 0);
    assert_int_equal(shard_field_boxes_decode(v, 30, out, &count, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "30 bytes are no whole boxes (24 each)");
}

static void test_masks_decode_with_one_and_two_byte_values(void **state)
{
    (void)state;
    /* 3 x 2, 1-byte values 0 1 2 / 255 4 5 */
    uint8_t m1[12 + 6] = {3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 255, 4, 5};
    struct shard_field_grid g;
    struct shard_err err;
    assert_int_equal(shard_field_mask_decode(m1, sizeof m1, &g, &err), 0);
    assert_int_equal(g.width, 3);
    assert_int_equal(g.height, 2);
    assert_int_equal(g.channels, 1);
    assert_int_equal(g.value_bytes, 1);
    assert_ptr_equal(g.values, m1 + 12);
    uint8_t out1[6];
    shard_field_grid_copy(&g, out1);
    assert_memory_equal(out1, ((uint8_t[]){0, 1, 2, 255, 4, 5}), 6);
    /* 2 x 1, 2-byte values 300 and 2 (little-endian) */
    uint8_t m2[12 + 4] = {2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0x2c, 0x01, 2, 0};
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), 0);
    assert_int_equal(g.value_bytes, 2);
    uint16_t out2[2];
    shard_field_grid_copy(&g, out2);
    assert_int_equal(out2[0], 300);
    assert_int_equal(out2[1], 2);
    /* what is refused */
    assert_int_equal(shard_field_mask_decode(m2, 11, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask of 11 bytes has no header");
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2 - 1, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 2x1 mask of 15 bytes");
    m2[8] = 3;
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask of 3-byte values (1 or 2)");
    m2[8] = 2, m2[10] = 1;
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask's reserved bytes are not 0");
}

static void test_an_image_field_decodes_as_rgb_rows(void **state)
{
    (void)state;
    /* 1 x 2 RGB, raw: (1,2,3) over (4,5,6) */
    uint8_t v[12 + 6] = {1, 0, 0, 0, 2, 0, 0, 0, 3, SHARD_CODEC_RAW, 0, 0, 1, 2, 3, 4, 5, 6};
    struct shard_field_grid g;
    struct shard_err err;
    assert_int_equal(shard_field_image_decode(v, sizeof v, &g, &err), 0);
    assert_int_equal(g.width, 1);
    assert_int_equal(g.height, 2);
    assert_int_equal(g.channels, 3);
    assert_int_equal(g.value_bytes, 1);
    uint8_t out[6];
    shard_field_grid_copy(&g, out);
    assert_memory_equal(out, ((uint8_t[]){1, 2, 3, 4, 5, 6}), 6);
    v[9] = SHARD_CODEC_JPEG;
    assert_int_equal(shard_field_image_decode(v, sizeof v, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "an image of 3 channels and codec 1 (3 and raw are known)");
    v[9] = SHARD_CODEC_RAW;
    assert_int_equal(shard_field_image_decode(v, sizeof v - 3, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 1x2 image of 15 bytes");
}

/* Two masks of 2 x 3 (width 2, height 3): runs over the pixels column
 * after column (COCO's uncompressed RLE). */
static void test_instances_decode_column_major_runs_to_rows(void **state)
{
    (void)state;
    uint8_t v[16 + 4 + 12 + 4 + 12];
    memset(v, 0, sizeof v);
    le32(v, 2), le32(v + 4, 3), le32(v + 8, 2);
    /* mask 0: 1 zero, 2 ones, 3 zeros: column 0 is 0 1 1, column 1 is 0 0 0 */
    le32(v + 16, 3), le32(v + 20, 1), le32(v + 24, 2), le32(v + 28, 3);
    /* mask 1: 3 zeros, 3 ones: column 1 is all 1 */
    le32(v + 32, 3), le32(v + 36, 3), le32(v + 40, 3), le32(v + 44, 0);
    uint32_t w = 0, h = 0, n = 0;
    struct shard_err err;
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err), 0);
    assert_int_equal(w, 2);
    assert_int_equal(h, 3);
    assert_int_equal(n, 2);
    uint8_t masks[2 * 3 * 2];
    memset(masks, 7, sizeof masks);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, masks, &err), 0);
    /* rows of mask 0: (0 0) (1 0) (1 0); of mask 1: (0 1) (0 1) (0 1) */
    assert_memory_equal(masks, ((uint8_t[]){0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}), 12);
    le32(v + 44, 1); /* mask 1 now covers 7 pixels */
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 1 covers 7 pixels, not 6");
    le32(v + 44, 0);
    le32(v + 8, 3);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 2 is cut short");
    le32(v + 8, 0); /* no object: the header alone, and the runs left over */
    assert_int_equal(shard_field_instances_decode(v, 16, &w, &h, &n, masks, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "32 bytes follow the 0 instance masks");
}

/* A batch's INSTANCES field as the loader lays it out (the stored header's
 * width, height and count, then the masks decoded), made by hand: sample 0
 * has two 2 x 1 masks, sample 1 none, sample 2 lacks the field. */
static void test_a_batchs_instance_masks_are_found_per_sample(void **state)
{
    (void)state;
    uint8_t data[16 + 4 + 16];
    memset(data, 0, sizeof data);
    le32(data, 2), le32(data + 4, 1), le32(data + 8, 2);
    data[16] = 1, data[19] = 1;
    le32(data + 20, 2), le32(data + 24, 1);
    const uint64_t offsets[] = {0, 20, 36, 36};
    const uint8_t present[] = {1, 1, 0};
    struct shard_batch_field f = {.type = SHARD_FIELD_INSTANCES,
                                  .present = present,
                                  .data = data,
                                  .offsets = offsets};
    uint32_t w, h, n;
    const uint8_t *masks;
    assert_int_equal(shard_batch_instances(&f, 3, 0, &w, &h, &n, &masks), 0);
    assert_true(w == 2 && h == 1 && n == 2);
    assert_ptr_equal(masks, data + 16);
    assert_memory_equal(masks, ((uint8_t[]){1, 0, 0, 1}), 4);
    assert_int_equal(shard_batch_instances(&f, 3, 1, &w, &h, &n, &masks), 0);
    assert_true(w == 2 && h == 1 && n == 0);
    assert_int_equal(shard_batch_instances(&f, 3, 2, &w, &h, &n, &masks), SHARD_ENOTFOUND);
    assert_int_equal(shard_batch_instances(&f, 3, 3, &w, &h, &n, &masks), SHARD_EINVAL);
    f.type = SHARD_FIELD_MASK;
    assert_int_equal(shard_batch_instances(&f, 3, 0, &w, &h, &n, &masks), SHARD_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boxes_decode_in_stored_order),
        cmocka_unit_test(test_masks_decode_with_one_and_two_byte_values),
        cmocka_unit_test(test_an_image_field_decodes_as_rgb_rows),
        cmocka_unit_test(test_instances_decode_column_major_runs_to_rows),
        cmocka_unit_test(test_a_batchs_instance_masks_are_found_per_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
