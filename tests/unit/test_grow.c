/* test_grow.c - arrays that grow by doubling (lib/util/grow.h): an empty
 * array starts at its initial size, a full one doubles until the need fits,
 * a need that fits already changes nothing, and a need whose size in bytes
 * overflows, or that cannot be allocated, is refused with SHARD_ENOMEM and
 * leaves the array and its capacity as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shardkit/error.h"
#include "util/grow.h"

/* Under AddressSanitizer, an allocation too large to make returns NULL (as
 * it does without it) instead of ending the program. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static void test_an_empty_array_starts_at_its_initial_size_and_doubles(void **state)
{
    (void)state;
    uint64_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(SK_GROW(a, cap, 1, 4), SHARD_OK);
    assert_non_null(a);
    assert_int_equal(cap, 4);
    for (uint64_t i = 0; i < 4; i++)
        a[i] = i * 3;
    assert_int_equal(SK_GROW(a, cap, 5, 4), SHARD_OK);
    assert_int_equal(cap, 8);
    assert_int_equal(SK_GROW(a, cap, 17, 4), SHARD_OK); /* 16 is not enough: 32 */
    assert_int_equal(cap, 32);
    for (uint64_t i = 0; i < 4; i++) /* what it held moved with it */
        assert_int_equal(a[i], i * 3);
    a[31] = 7; /* all of it is there (the sanitizers check) */
    free(a);

    /* an initial size below the need: doubled from there */
    a = NULL;
    cap = 0;
    assert_int_equal(SK_GROW(a, cap, 10, 3), SHARD_OK);
    assert_int_equal(cap, 12);
    free(a);
    /* no initial size: the need, then doubling */
    a = NULL;
    cap = 0;
    assert_int_equal(SK_GROW(a, cap, 3, 0), SHARD_OK);
    assert_int_equal(cap, 4);
    free(a);
}

static void test_a_need_that_fits_changes_nothing(void **state)
{
    (void)state;
    char *a = NULL;
    size_t cap = 0;
    assert_int_equal(SK_GROW(a, cap, 0, 8), SHARD_OK); /* nothing needed: nothing made */
    assert_null(a);
    assert_int_equal(cap, 0);
    assert_int_equal(SK_GROW(a, cap, 8, 8), SHARD_OK);
    char *before = a;
    assert_int_equal(SK_GROW(a, cap, 8, 8), SHARD_OK);
    assert_int_equal(SK_GROW(a, cap, 3, 8), SHARD_OK);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 8);
    free(a);
}

static void test_doubling_stops_at_the_need_where_it_would_overflow(void **state)
{
    (void)state;
    /* sk_grow on a capacity past half of what a size_t counts, with no
     * array behind it: it must ask for the need, never a wrapped double
     * (the allocation fails, which leaves both as they were) */
    char *a = NULL;
    size_t cap = SIZE_MAX / 2 + 2;
    assert_int_equal(sk_grow(&a, &cap, SIZE_MAX, 1, 8), SHARD_ENOMEM);
    assert_null(a);
    assert_int_equal(cap, SIZE_MAX / 2 + 2);
}

static void test_a_size_that_overflows_is_refused_and_the_array_kept(void **state)
{
    (void)state;
    uint64_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(SK_GROW(a, cap, 2, 2), SHARD_OK);
    a[0] = 11;
    a[1] = 22;
    uint64_t *before = a;
    /* need * 8 bytes does not fit in a size_t */
    assert_int_equal(SK_GROW(a, cap, SIZE_MAX / 8 + 1, 2), SHARD_ENOMEM);
    assert_int_equal(SK_GROW(a, cap, SIZE_MAX, 2), SHARD_ENOMEM);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 2);
    assert_int_equal(a[0], 11);
    assert_int_equal(a[1], 22);
    /* elements so large that one more overflows */
    struct big {
        char bytes[1 << 20];
    } *b = NULL;
    size_t bcap = 0;
    assert_int_equal(SK_GROW(b, bcap, SIZE_MAX / sizeof *b + 1, 1), SHARD_ENOMEM);
    assert_null(b);
    assert_int_equal(bcap, 0);
    /* a size that fits but cannot be allocated: refused the same way */
    assert_int_equal(SK_GROW(a, cap, SIZE_MAX / 16, 2), SHARD_ENOMEM);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 2);
    assert_int_equal(a[1], 22);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_empty_array_starts_at_its_initial_size_and_doubles),
        cmocka_unit_test(test_a_need_that_fits_changes_nothing),
        cmocka_unit_test(test_doubling_stops_at_the_need_where_it_would_overflow),
        cmocka_unit_test(test_a_size_that_overflows_is_refused_and_the_array_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
