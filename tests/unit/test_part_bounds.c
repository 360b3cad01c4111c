/* test_part_bounds.c - the split of a conversion in parts (sk_part_bounds): the
 * parts tile the sample order, each takes its share of the bytes to within
 * one file, and a file goes where its middle falls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert/run.h"

#define MAX_PARTS 16

static void expect_bounds(const uint64_t *weights, uint64_t n, uint32_t parts, const uint64_t *want)
{
    uint64_t got[MAX_PARTS + 1];
    memset(got, 0xff, sizeof got);
    sk_part_bounds(weights, n, parts, got);
    for (uint32_t i = 0; i <= parts; i++)
        assert_int_equal(got[i], want[i]);
}

static void test_equal_files_split_evenly(void **state)
{
    (void)state;
    uint64_t w[10] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    expect_bounds(w, 10, 5, (uint64_t[]){0, 2, 4, 6, 8, 10});
    expect_bounds(w, 10, 1, (uint64_t[]){0, 10});
    expect_bounds(w, 10, 3, (uint64_t[]){0, 3, 7, 10});
}

static void test_split_is_by_bytes_not_count(void **state)
{
    (void)state;
    /* a quarter of the bytes is in the first file: part 0 of 4 gets it alone */
    uint64_t w[7] = {600, 300, 300, 300, 300, 300, 300};
    expect_bounds(w, 7, 4, (uint64_t[]){0, 1, 3, 5, 7});
}

static void test_a_file_goes_where_its_middle_falls(void **state)
{
    (void)state;
    /* total 52: shares end at 10.4, 20.8, 31.2, 41.6; the middles are at
     * 0.5, 1.5 and 27: the large file belongs to part 2 */
    uint64_t w[3] = {1, 1, 50};
    expect_bounds(w, 3, 5, (uint64_t[]){0, 2, 2, 3, 3, 3});
}

static void test_fewer_files_than_parts_leave_parts_empty(void **state)
{
    (void)state;
    uint64_t w[3] = {1, 1, 1};
    expect_bounds(w, 3, 5, (uint64_t[]){0, 1, 1, 2, 2, 3});
    expect_bounds(NULL, 0, 3, (uint64_t[]){0, 0, 0, 0});
}

static void test_random_weights_tile_the_order_within_a_file(void **state)
{
    (void)state;
    uint64_t w[500], bounds[MAX_PARTS + 1];
    srand(7);
    for (int round = 0; round < 50; round++) {
        uint64_t n = 1 + (uint64_t)(rand() % 500), total = 0, biggest = 0;
        uint32_t parts = 1 + (uint32_t)(rand() % MAX_PARTS);
        for (uint64_t i = 0; i < n; i++) {
            w[i] = 1 + (uint64_t)(rand() % (round % 2 ? 1000000 : 100));
            total += w[i];
            biggest = w[i] > biggest ? w[i] : biggest;
        }
        sk_part_bounds(w, n, parts, bounds);
        assert_int_equal(bounds[0], 0);
        assert_int_equal(bounds[parts], n);
        for (uint32_t p = 0; p < parts; p++) {
            assert_true(bounds[p] <= bounds[p + 1]);
            double share = 0, ideal = (double)total / parts;
            for (uint64_t i = bounds[p]; i < bounds[p + 1]; i++)
                share += (double)w[i];
            /* each of its two ends is within half a file of its place */
            assert_true(share <= ideal + (double)biggest && share >= ideal - (double)biggest);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_files_split_evenly),
        cmocka_unit_test(test_split_is_by_bytes_not_count),
        cmocka_unit_test(test_a_file_goes_where_its_middle_falls),
        cmocka_unit_test(test_fewer_files_than_parts_leave_parts_empty),
        cmocka_unit_test(test_random_weights_tile_the_order_within_a_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
