/* test_epoch.c - epoch plans: every sample exactly once per epoch across all
 * ranks (uneven shards, more ranks than shards, more ranks than samples, an
 * empty dataset), the drop and pad rules, determinism, and that the plan is
 * exactly what shardkit/dataset.h specifies (re-implemented here from the
 * text, as a Python loader would). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "shardkit.h"
#include "spec.h"

struct layout {
    const char *name;
    uint32_t shards;
    uint64_t counts[24];
};

/* Shard layouts: uneven sizes, empty shards, a single shard, none at all. */
static const struct layout layouts[] = {
    {"empty dataset", 0, {0}},
    {"one empty shard", 1, {0}},
    {"one sample", 1, {1}},
    {"one shard", 1, {50}},
    {"uneven", 4, {1, 2, 3, 100}},
    {"empty shards between", 5, {7, 0, 7, 0, 13}},
    {"many small", 17, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2}},
    {"two big", 2, {500, 499}},
};

static const uint32_t worlds[] = {1, 2, 3, 4, 7, 8, 16, 64, 1000};
static const uint64_t buffers[] = {0, 1, 3, 1024};

static uint64_t total(const struct layout *l)
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < l->shards; s++)
        n += l->counts[s];
    return n;
}

static struct shard_plan *plan_for(const struct layout *l, uint64_t seed, uint64_t epoch,
                                   uint32_t rank, uint32_t world, uint64_t buffer,
                                   enum shard_remainder rem)
{
    struct shard_plan_options o = spec_plan_options(seed, epoch, rank, world, buffer, rem);
    struct shard_plan *p;
    struct shard_err err;
    assert_int_equal(shard_plan_new(&p, l->counts, l->shards, &o, &err), 0);
    return p;
}

/* Visit counts of one epoch over all ranks, plus the shortest and longest
 * rank plan and the summed padding. */
static uint32_t *visit_epoch(const struct layout *l, uint64_t epoch, uint32_t world,
                             uint64_t buffer, enum shard_remainder rem, uint64_t *min,
                             uint64_t *max, uint64_t *padded, uint64_t *dropped)
{
    uint64_t n = total(l);
    uint32_t *count = calloc(n ? n : 1, sizeof *count);
    assert_non_null(count);
    *min = UINT64_MAX;
    *max = 0;
    *padded = 0;
    for (uint32_t r = 0; r < world; r++) {
        struct shard_plan *p = plan_for(l, 42, epoch, r, world, buffer, rem);
        uint64_t c = shard_plan_count(p);
        const uint64_t *idx = shard_plan_indices(p);
        for (uint64_t i = 0; i < c; i++) {
            assert_true(idx[i] < n);
            count[idx[i]]++;
        }
        *min = c < *min ? c : *min;
        *max = c > *max ? c : *max;
        *padded += shard_plan_padded(p);
        *dropped = shard_plan_dropped(p);
        shard_plan_free(p);
    }
    return count;
}

static void test_every_sample_is_visited_exactly_once_per_epoch_across_ranks(void **state)
{
    (void)state;
    for (size_t li = 0; li < sizeof layouts / sizeof *layouts; li++) {
        const struct layout *l = &layouts[li];
        uint64_t n = total(l);
        for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
            for (size_t bi = 0; bi < sizeof buffers / sizeof *buffers; bi++) {
                for (uint64_t epoch = 0; epoch < 3; epoch++) {
                    uint64_t min, max, padded, dropped;
                    uint32_t *count = visit_epoch(l, epoch, worlds[wi], buffers[bi],
                                                  SHARD_REMAINDER_KEEP, &min, &max, &padded,
                                                  &dropped);
                    for (uint64_t g = 0; g < n; g++)
                        if (count[g] != 1)
                            fail_msg("%s, world %u, buffer %llu, epoch %llu: sample %llu "
                                     "visited %u times",
                                     l->name, worlds[wi], (unsigned long long)buffers[bi],
                                     (unsigned long long)epoch, (unsigned long long)g, count[g]);
                    /* ranks differ by at most one sample; nothing padded or dropped */
                    assert_true(max - min <= 1);
                    assert_int_equal(min, n / worlds[wi]);
                    assert_int_equal(padded, 0);
                    assert_int_equal(dropped, 0);
                    free(count);
                }
            }
        }
    }
}

static void test_drop_gives_every_rank_floor_and_leaves_out_the_remainder(void **state)
{
    (void)state;
    for (size_t li = 0; li < sizeof layouts / sizeof *layouts; li++) {
        const struct layout *l = &layouts[li];
        uint64_t n = total(l);
        for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
            uint32_t w = worlds[wi];
            uint64_t min, max, padded, dropped, missing = 0;
            uint32_t *count = visit_epoch(l, 1, w, 16, SHARD_REMAINDER_DROP, &min, &max, &padded,
                                          &dropped);
            for (uint64_t g = 0; g < n; g++) {
                assert_true(count[g] <= 1);
                missing += count[g] == 0;
            }
            assert_int_equal(min, n / w);
            assert_int_equal(max, n / w);
            assert_int_equal(missing, n % w);
            assert_int_equal(dropped, n % w);
            assert_int_equal(padded, 0);
            free(count);
        }
    }
}

static void test_pad_gives_every_rank_ceil_and_repeats_the_start_of_the_epoch(void **state)
{
    (void)state;
    for (size_t li = 0; li < sizeof layouts / sizeof *layouts; li++) {
        const struct layout *l = &layouts[li];
        uint64_t n = total(l);
        for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
            uint32_t w = worlds[wi];
            uint64_t c = n ? (n + w - 1) / w : 0, extra = c * w - (n ? n : 0);
            uint64_t min, max, padded, dropped, repeats = 0;
            uint32_t *count = visit_epoch(l, 2, w, 0, SHARD_REMAINDER_PAD, &min, &max, &padded,
                                          &dropped);
            for (uint64_t g = 0; g < n; g++) {
                assert_true(count[g] >= 1);
                repeats += count[g] - 1;
            }
            assert_int_equal(min, c);
            assert_int_equal(max, c);
            assert_int_equal(repeats, extra);
            assert_int_equal(padded, extra);
            free(count);

            /* with no window shuffle, ranks in order spell E then E's start again */
            if (!n)
                continue;
            uint64_t *all = malloc(c * w * sizeof *all), at = 0;
            for (uint32_t r = 0; r < w; r++) {
                struct shard_plan *p = plan_for(l, 42, 2, r, w, 0, SHARD_REMAINDER_PAD);
                memcpy(all + at, shard_plan_indices(p), c * sizeof *all);
                at += c;
                shard_plan_free(p);
            }
            for (uint64_t i = n; i < c * w; i++)
                assert_int_equal(all[i], all[i % n]);
            free(all);
        }
    }
}

static void test_more_ranks_than_shards_split_shards_into_sequential_runs(void **state)
{
    (void)state;
    const struct layout two = {"two", 2, {10, 10}};
    for (uint32_t r = 0; r < 4; r++) {
        struct shard_plan *p = plan_for(&two, 9, 0, r, 4, 0, SHARD_REMAINDER_KEEP);
        assert_int_equal(shard_plan_count(p), 5);
        const uint64_t *idx = shard_plan_indices(p);
        /* a run of consecutive records of one shard */
        for (uint64_t i = 1; i < 5; i++)
            assert_int_equal(idx[i], idx[i - 1] + 1);
        assert_int_equal(idx[0] / 10, idx[4] / 10);
        shard_plan_free(p);
    }
}

static void test_more_ranks_than_samples_leave_some_ranks_empty_unless_padded(void **state)
{
    (void)state;
    const struct layout three = {"three", 1, {3}};
    uint64_t nonempty = 0;
    for (uint32_t r = 0; r < 8; r++) {
        struct shard_plan *p = plan_for(&three, 0, 0, r, 8, 1024, SHARD_REMAINDER_KEEP);
        assert_true(shard_plan_count(p) <= 1);
        nonempty += shard_plan_count(p);
        shard_plan_free(p);
        p = plan_for(&three, 0, 0, r, 8, 1024, SHARD_REMAINDER_PAD);
        assert_int_equal(shard_plan_count(p), 1);
        shard_plan_free(p);
        p = plan_for(&three, 0, 0, r, 8, 1024, SHARD_REMAINDER_DROP);
        assert_int_equal(shard_plan_count(p), 0);
        assert_int_equal(shard_plan_dropped(p), 3);
        shard_plan_free(p);
    }
    assert_int_equal(nonempty, 3);
}

static int same(const struct shard_plan *a, const struct shard_plan *b)
{
    return shard_plan_count(a) == shard_plan_count(b) &&
           !memcmp(shard_plan_indices(a), shard_plan_indices(b),
                   shard_plan_count(a) * sizeof(uint64_t));
}

static void test_plans_are_deterministic_and_change_with_epoch_and_seed(void **state)
{
    (void)state;
    const struct layout *l = &layouts[6];
    struct shard_plan *a = plan_for(l, 5, 3, 1, 2, 8, SHARD_REMAINDER_KEEP);
    struct shard_plan *b = plan_for(l, 5, 3, 1, 2, 8, SHARD_REMAINDER_KEEP);
    struct shard_plan *other_epoch = plan_for(l, 5, 4, 1, 2, 8, SHARD_REMAINDER_KEEP);
    struct shard_plan *other_seed = plan_for(l, 6, 3, 1, 2, 8, SHARD_REMAINDER_KEEP);
    assert_true(same(a, b));
    assert_false(same(a, other_epoch));
    assert_false(same(a, other_seed));
    shard_plan_free(a);
    shard_plan_free(b);
    shard_plan_free(other_epoch);
    shard_plan_free(other_seed);
}

static void test_without_shuffle_one_rank_reads_stored_order(void **state)
{
    (void)state;
    struct shard_plan_options o;
    shard_plan_options_init(&o);
    o.shuffle = 0;
    o.epoch = 7;
    const struct layout *l = &layouts[5];
    struct shard_plan *p;
    struct shard_err err;
    assert_int_equal(shard_plan_new(&p, l->counts, l->shards, &o, &err), 0);
    assert_int_equal(shard_plan_count(p), total(l));
    for (uint64_t i = 0; i < total(l); i++)
        assert_int_equal(shard_plan_indices(p)[i], i);
    shard_plan_free(p);
}

static void test_window_shuffle_moves_samples_less_than_the_buffer(void **state)
{
    (void)state;
    const struct layout *l = &layouts[7];
    struct shard_plan *flat = plan_for(l, 1, 0, 0, 1, 0, SHARD_REMAINDER_KEEP);
    struct shard_plan *mixed = plan_for(l, 1, 0, 0, 1, 8, SHARD_REMAINDER_KEEP);
    uint64_t n = shard_plan_count(flat), moved = 0;
    uint64_t *where = malloc(n * sizeof *where);
    for (uint64_t i = 0; i < n; i++)
        where[shard_plan_indices(flat)[i]] = i;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t from = where[shard_plan_indices(mixed)[i]];
        assert_true(from / 8 == i / 8); /* stays inside its window */
        moved += from != i;
    }
    assert_true(moved > n / 2);
    free(where);
    shard_plan_free(flat);
    shard_plan_free(mixed);
}

static void test_bad_rank_or_world_size_is_refused(void **state)
{
    (void)state;
    struct shard_plan_options o;
    shard_plan_options_init(&o);
    struct shard_plan *p;
    struct shard_err err;
    uint64_t counts[] = {4};
    o.world_size = 0;
    assert_int_equal(shard_plan_new(&p, counts, 1, &o, &err), SHARD_EINVAL);
    assert_null(p);
    o.world_size = 2;
    o.rank = 2;
    assert_int_equal(shard_plan_new(&p, counts, 1, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "rank 2"));
    shard_plan_free(NULL);
}

/* ---- the specification, re-implemented from dataset.h's text (spec.h) -- */

static void test_plan_is_exactly_the_documented_algorithm(void **state)
{
    (void)state;
    const struct layout *l = &layouts[6];
    uint64_t n = total(l), seed = 1234567, epoch = 5, buffer = 6;
    uint32_t world = 3;
    uint64_t order[24], first[24], at = 0, *e = malloc(n * sizeof *e);
    for (uint32_t s = 0; s < l->shards; s++) {
        order[s] = s;
        first[s] = at;
        at += l->counts[s];
    }
    spec_shuffle(order, l->shards, spec_derive(seed, 1, epoch, 0, 0));
    at = 0;
    for (uint32_t k = 0; k < l->shards; k++)
        for (uint64_t r = 0; r < l->counts[order[k]]; r++)
            e[at++] = first[order[k]] + r;
    for (uint32_t rank = 0; rank < world; rank++) {
        uint64_t begin = rank * n / world, end = (rank + 1) * n / world;
        for (uint64_t w0 = begin, k = 0; w0 < end; w0 += buffer, k++)
            spec_shuffle(e + w0, end - w0 < buffer ? end - w0 : buffer,
                         spec_derive(seed, 2, epoch, rank, k));
        struct shard_plan *p = plan_for(l, seed, epoch, rank, world, buffer, SHARD_REMAINDER_KEEP);
        assert_int_equal(shard_plan_count(p), end - begin);
        assert_memory_equal(shard_plan_indices(p), e + begin, (end - begin) * sizeof *e);
        shard_plan_free(p);
    }
    free(e);
}

static void test_remainder_names_round_trip(void **state)
{
    (void)state;
    enum shard_remainder r;
    for (int i = SHARD_REMAINDER_KEEP; i <= SHARD_REMAINDER_PAD; i++) {
        assert_int_equal(shard_remainder_parse(shard_remainder_name(i), &r), 0);
        assert_int_equal(r, i);
    }
    assert_int_equal(shard_remainder_parse("evenly", &r), SHARD_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_sample_is_visited_exactly_once_per_epoch_across_ranks),
        cmocka_unit_test(test_drop_gives_every_rank_floor_and_leaves_out_the_remainder),
        cmocka_unit_test(test_pad_gives_every_rank_ceil_and_repeats_the_start_of_the_epoch),
        cmocka_unit_test(test_more_ranks_than_shards_split_shards_into_sequential_runs),
        cmocka_unit_test(test_more_ranks_than_samples_leave_some_ranks_empty_unless_padded),
        cmocka_unit_test(test_plans_are_deterministic_and_change_with_epoch_and_seed),
        cmocka_unit_test(test_without_shuffle_one_rank_reads_stored_order),
        cmocka_unit_test(test_window_shuffle_moves_samples_less_than_the_buffer),
        cmocka_unit_test(test_bad_rank_or_world_size_is_refused),
        cmocka_unit_test(test_plan_is_exactly_the_documented_algorithm),
        cmocka_unit_test(test_remainder_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
