/* test_verify_tally.c - what a check in parts adds up (lib/verify): tallies
 * of distinct values count every value exactly while they are few, round
 * past SHARD_TALLY_MAX values keeping the total, min and max exact (the
 * dimensions' tally counts the newcomers apart instead), and merge into the
 * tally of all the values; the key sums do not depend on the order of the
 * (hash, line) pairs, move a part's lines to their place in the file, and
 * change when a pair does.  The expectations are counted apart, here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verify/verify_internal.h"

/* The tally's exported count of value v (0 when not listed). */
static uint64_t count_of(const struct shard_tally *t, uint64_t v)
{
    for (size_t i = 0; i < t->count; i++)
        if (t->values[i] == v)
            return t->counts[i];
    return 0;
}

static void test_few_values_are_counted_exactly_and_ascending(void **state)
{
    (void)state;
    struct sk_tally t;
    sk_tally_init(&t, 0);
    static const uint64_t values[] = {42, 7, 42, 1000000, 7, 42, 0};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++)
        assert_int_equal(sk_tally_add(&t, values[i], 1), 0);
    assert_int_equal(sk_tally_add(&t, 7, 5), 0);
    struct shard_tally e = {0};
    assert_int_equal(sk_tally_export(&t, &e), 0);
    assert_int_equal(e.count, 4);
    static const uint64_t want_values[] = {0, 7, 42, 1000000}, want_counts[] = {1, 7, 3, 1};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(e.values[i], want_values[i]);
        assert_int_equal(e.counts[i], want_counts[i]);
    }
    assert_int_equal(e.total, 12);
    assert_int_equal(e.min, 0);
    assert_int_equal(e.max, 1000000);
    assert_int_equal(e.shift, 0);
    sk_shard_tally_release(&e);
    sk_tally_release(&t);
    sk_tally_release(NULL);
    sk_shard_tally_release(NULL);
}

static void test_many_values_round_but_keep_total_min_and_max(void **state)
{
    (void)state;
    struct sk_tally t;
    sk_tally_init(&t, 0);
    uint64_t n = 3 * (uint64_t)SHARD_TALLY_MAX, lo = 1000;
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(sk_tally_add(&t, lo + i * 3, 1), 0);
    struct shard_tally e = {0};
    assert_int_equal(sk_tally_export(&t, &e), 0);
    assert_true(e.shift > 0);
    assert_true(e.count <= SHARD_TALLY_MAX);
    assert_int_equal(e.total, n);
    assert_int_equal(e.min, lo);
    assert_int_equal(e.max, lo + (n - 1) * 3);
    /* every value is counted in the bucket it rounds to */
    uint64_t sum = 0, step = (uint64_t)1 << e.shift;
    for (size_t i = 0; i < e.count; i++) {
        assert_int_equal(e.values[i] % step, 0);
        /* the values lo + 3k in [values[i], values[i] + step) */
        uint64_t b = e.values[i], end = b + step, top = lo + (n - 1) * 3;
        uint64_t first = b <= lo ? lo : lo + (b - lo + 2) / 3 * 3;
        uint64_t last = end - 1 < top ? lo + (end - 1 - lo) / 3 * 3 : top;
        assert_int_equal(e.counts[i], first <= last ? (last - first) / 3 + 1 : 0);
        sum += e.counts[i];
    }
    assert_int_equal(sum, n);
    sk_shard_tally_release(&e);
    sk_tally_release(&t);
}

static void test_the_dimensions_count_what_has_no_room_apart(void **state)
{
    (void)state;
    struct sk_tally t;
    sk_tally_init(&t, 1);
    uint64_t n = SHARD_TALLY_MAX + 10;
    for (uint64_t i = 0; i < n; i++)
        assert_int_equal(sk_tally_add(&t, (i + 1) << 32 | 7, 2), 0);
    struct shard_tally e = {0};
    assert_int_equal(sk_tally_export(&t, &e), 0);
    assert_int_equal(e.shift, 0);
    assert_int_equal(e.count, SHARD_TALLY_MAX);
    assert_int_equal(e.others, 20);
    assert_int_equal(e.total, 2 * n);
    assert_int_equal(count_of(&e, (uint64_t)1 << 32 | 7), 2); /* not rounded */
    sk_shard_tally_release(&e);
    sk_tally_release(&t);
}

static void test_merged_tallies_are_the_tally_of_every_value(void **state)
{
    (void)state;
    struct sk_tally a, b, all;
    sk_tally_init(&a, 0);
    sk_tally_init(&b, 0);
    sk_tally_init(&all, 0);
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t v = (i * 2654435761u) % 9000;
        assert_int_equal(sk_tally_add(i % 3 ? &a : &b, v, 1), 0);
        assert_int_equal(sk_tally_add(&all, v, 1), 0);
    }
    assert_int_equal(sk_tally_merge(&a, &b), 0);
    struct shard_tally ea = {0}, eall = {0}, restored_e = {0};
    assert_int_equal(sk_tally_export(&a, &ea), 0);
    assert_int_equal(sk_tally_export(&all, &eall), 0);
    assert_int_equal(ea.count, eall.count);
    assert_memory_equal(ea.values, eall.values, ea.count * sizeof *ea.values);
    assert_memory_equal(ea.counts, eall.counts, ea.count * sizeof *ea.counts);
    assert_int_equal(ea.total, eall.total);
    assert_int_equal(ea.min, eall.min);
    assert_int_equal(ea.max, eall.max);
    /* a result file's tally, restored, is the same tally */
    struct sk_tally restored;
    sk_tally_init(&restored, 0);
    assert_int_equal(sk_tally_restore(&restored, &eall), 0);
    assert_int_equal(sk_tally_export(&restored, &restored_e), 0);
    assert_int_equal(restored_e.count, eall.count);
    assert_memory_equal(restored_e.counts, eall.counts, eall.count * sizeof *eall.counts);
    assert_int_equal(restored_e.total, eall.total);
    sk_shard_tally_release(&ea);
    sk_shard_tally_release(&eall);
    sk_shard_tally_release(&restored_e);
    sk_tally_release(&a);
    sk_tally_release(&b);
    sk_tally_release(&all);
    sk_tally_release(&restored);
}

/* Sum of term(hash[i], X^line[i]) over pairs, X^line made by repeated steps. */
static uint64_t pairs_sum(const uint64_t *hash, const uint64_t *line, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 1;
        for (uint64_t k = 0; k < line[i]; k++)
            x = sk_keys_next_power(x);
        sum = sk_keys_add(sum, sk_keys_term(hash[i], x));
    }
    return sum;
}

static void test_key_sums_follow_the_pairs_not_their_order(void **state)
{
    (void)state;
    enum { N = 300, CUT = 117 };
    uint64_t hash[N], line[N], rev_hash[N], rev_line[N];
    for (size_t i = 0; i < N; i++) {
        hash[i] = 0x9e3779b97f4a7c15ULL * (i + 1);
        line[i] = i;
        rev_hash[N - 1 - i] = hash[i];
        rev_line[N - 1 - i] = line[i];
    }
    uint64_t whole = pairs_sum(hash, line, N);
    assert_int_equal(pairs_sum(rev_hash, rev_line, N), whole); /* a table's order */
    /* two parts: the second's lines counted from 0, moved by the lines before */
    uint64_t first = 0, second = 0, x = 1;
    for (size_t i = 0; i < N; i++, x = sk_keys_next_power(x)) {
        if (i == CUT)
            x = 1;
        uint64_t *sum = i < CUT ? &first : &second;
        *sum = sk_keys_add(*sum, sk_keys_term(hash[i], x));
    }
    assert_int_equal(sk_keys_add(first, sk_keys_shift(second, CUT)), whole);
    assert_int_equal(sk_keys_shift(whole, 0), whole);
    /* a hash on another line, a hash changed, a pair lost: another sum */
    line[5] = 6;
    assert_int_not_equal(pairs_sum(hash, line, N), whole);
    line[5] = 5;
    hash[7] ^= 1;
    assert_int_not_equal(pairs_sum(hash, line, N), whole);
    hash[7] ^= 1;
    assert_int_not_equal(pairs_sum(hash, line, N - 1), whole);
}

static void test_key_hash_ranges_tile_the_hashes(void **state)
{
    (void)state;
    for (uint32_t parts = 1; parts <= 9; parts++) {
        uint64_t next = 0;
        for (uint32_t i = 0; i < parts; i++) {
            uint64_t lo, hi;
            sk_keys_hash_range(i, parts, &lo, &hi);
            assert_int_equal(lo, next);
            assert_true(hi >= lo);
            next = hi + 1;
            if (i + 1 == parts)
                assert_int_equal(hi, UINT64_MAX);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_few_values_are_counted_exactly_and_ascending),
        cmocka_unit_test(test_many_values_round_but_keep_total_min_and_max),
        cmocka_unit_test(test_the_dimensions_count_what_has_no_room_apart),
        cmocka_unit_test(test_merged_tallies_are_the_tally_of_every_value),
        cmocka_unit_test(test_key_sums_follow_the_pairs_not_their_order),
        cmocka_unit_test(test_key_hash_ranges_tile_the_hashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
