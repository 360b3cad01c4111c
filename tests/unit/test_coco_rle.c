/* test_coco_rle.c - COCO run-length masks from their two stored forms
 * (lib/source/coco_rle.h): the compressed string and the plain counts.
 *
 * A string or a list that covers the image exactly gives its counts (the
 * string's deltas from the count two back undone); one that covers more or
 * fewer pixels, a malformed character, a negative count or a count that is
 * no non-negative integer is refused with SHARD_ECORRUPT and leaves the mask
 * empty (no counts to free), its size still set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "source/coco_rle.h"

static void assert_counts(const struct sk_rle *r, const uint64_t *want, size_t n)
{
    assert_int_equal(r->count, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(r->counts[i], want[i]);
}

static void assert_refused(int rc, const struct sk_rle *r, const struct shard_err *why,
                           const char *text)
{
    assert_int_equal(rc, SHARD_ECORRUPT);
    assert_null(r->counts);
    assert_int_equal(r->count, 0);
    assert_int_equal(r->h, 2);
    assert_int_equal(r->w, 2);
    assert_non_null(strstr(why->msg, text));
}

static void test_string_that_covers_the_image_gives_its_counts(void **state)
{
    (void)state;
    struct shard_err why = {0};
    struct sk_rle r;
    assert_int_equal(sk_rle_from_string("121", 2, 2, &r, &why), SHARD_OK);
    assert_int_equal(r.h, 2);
    assert_int_equal(r.w, 2);
    assert_counts(&r, (const uint64_t[]){1, 2, 1}, 3);
    sk_rle_release(&r);
    /* from the fourth count on, each is stored as its difference from the
     * count two back: "1110" is 1, 1, 1, 0 + 1 */
    assert_int_equal(sk_rle_from_string("1110", 2, 2, &r, &why), SHARD_OK);
    assert_counts(&r, (const uint64_t[]){1, 1, 1, 1}, 4);
    sk_rle_release(&r);
    /* an empty image has no counts */
    assert_int_equal(sk_rle_from_string("", 0, 0, &r, &why), SHARD_OK);
    assert_int_equal(r.count, 0);
    sk_rle_release(&r);
}

static void test_string_that_does_not_decode_or_cover_is_refused(void **state)
{
    (void)state;
    struct shard_err why = {0};
    struct sk_rle r;
    assert_refused(sk_rle_from_string("1 2", 2, 2, &r, &why), &r, &why, "at character 1");
    assert_refused(sk_rle_from_string("O", 2, 2, &r, &why), &r, &why, "negative count");
    assert_refused(sk_rle_from_string("12", 2, 2, &r, &why), &r, &why, "cover 3 of the 4");
    assert_refused(sk_rle_from_string("5", 2, 2, &r, &why), &r, &why, "more than the 2x2");
    /* a number of more than 12 characters (60 bits) */
    assert_refused(sk_rle_from_string("ooooooooooooo1", 2, 2, &r, &why), &r, &why,
                   "at character 12");
    sk_rle_release(&r);
}

static void test_counts_that_cover_the_image_are_taken(void **state)
{
    (void)state;
    struct shard_err why = {0};
    struct sk_rle r;
    json_t *list = json_pack("[iii]", 0, 3, 1);
    assert_int_equal(sk_rle_from_counts(list, 2, 2, &r, &why), SHARD_OK);
    assert_counts(&r, (const uint64_t[]){0, 3, 1}, 3);
    sk_rle_release(&r);
    json_decref(list);
}

static void test_counts_that_are_not_counts_or_do_not_cover_are_refused(void **state)
{
    (void)state;
    struct shard_err why = {0};
    struct sk_rle r;
    json_t *list = json_pack("[ii]", 1, -1);
    assert_refused(sk_rle_from_counts(list, 2, 2, &r, &why), &r, &why, "count 1 is no");
    json_decref(list);
    list = json_pack("[is]", 1, "3");
    assert_refused(sk_rle_from_counts(list, 2, 2, &r, &why), &r, &why, "count 1 is no");
    json_decref(list);
    list = json_pack("[ii]", 1, 2);
    assert_refused(sk_rle_from_counts(list, 2, 2, &r, &why), &r, &why, "cover 3 of the 4");
    json_decref(list);
    list = json_pack("[ii]", 1, 4);
    assert_refused(sk_rle_from_counts(list, 2, 2, &r, &why), &r, &why, "more than the 2x2");
    json_decref(list);
    sk_rle_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_that_covers_the_image_gives_its_counts),
        cmocka_unit_test(test_string_that_does_not_decode_or_cover_is_refused),
        cmocka_unit_test(test_counts_that_cover_the_image_are_taken),
        cmocka_unit_test(test_counts_that_are_not_counts_or_do_not_cover_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
