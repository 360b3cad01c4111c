/* test_mixture.c - weighted mixtures of datasets (shardkit/mixture.h): the
 * epoch length and quotas of each rule, and over many seeds the realised
 * proportions of a rank's share within binomial bounds, each source's pass
 * without repeats until it is exhausted, the same plan every time (a
 * restart gives it again), ranks that split the epoch without overlap, the
 * rest of an epoch resumed on other ranks, bad sources and weights refused
 * by name, and the plan exactly as the header's text says. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mkdataset.h"
#include "shardkit.h"
#include "spec.h"

#define SOURCES 3

/* Three sources: 40 samples in 3 shards, 25 in 1, 90 in 4. */
static const uint64_t source_counts[SOURCES][4] = {{10, 20, 10, 0},
                                                   {25, 0, 0, 0},
                                                   {30, 30, 20, 10}};
static const uint32_t source_shards[SOURCES] = {3, 1, 4};

struct fixture {
    struct mkds *d[SOURCES];
    struct shard_dataset *ds[SOURCES];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct mkds_options o = {0, -1, -1, 0, -1};
    for (int s = 0; s < SOURCES; s++)
        if (!(f->d[s] = mkds_new(source_counts[s], source_shards[s], &o)))
            return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int s = 0; s < SOURCES; s++)
        mkds_free(f->d[s]);
    free(f);
    return 0;
}

static void open_all(struct fixture *f)
{
    for (int s = 0; s < SOURCES; s++)
        f->ds[s] = mkds_open(f->d[s]);
}

static void close_all(struct fixture *f)
{
    for (int s = 0; s < SOURCES; s++)
        shard_dataset_close(f->ds[s]);
}

static struct shard_mixture *mixture(struct fixture *f, const double *w,
                                     enum shard_mixture_rule rule, uint64_t epoch_size)
{
    struct shard_mixture_options o;
    shard_mixture_options_init(&o);
    o.rule = rule;
    o.epoch_size = epoch_size;
    struct shard_mixture *m;
    struct shard_err err;
    if (shard_mixture_new(&m, f->ds, w, SOURCES, &o, &err))
        fail_msg("mixture: %s", err.msg);
    return m;
}

static struct shard_plan *plan(const struct shard_mixture *m, uint64_t seed, uint64_t epoch,
                               uint32_t rank, uint32_t world, enum shard_remainder rem,
                               const struct shard_plan_segment *done, size_t count)
{
    struct shard_plan_options o = spec_plan_options(seed, epoch, rank, world, 8, rem);
    struct shard_plan *p;
    struct shard_err err;
    if (shard_mixture_plan_resumed(m, &o, done, count, &p, &err))
        fail_msg("plan: %s", err.msg);
    return p;
}

static const double weights[][SOURCES] = {{0.7, 0.2, 0.1}, {1, 1, 1}, {5, 1, 0.25}};

static void test_each_rule_sets_the_epoch_and_the_quotas(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    const uint64_t n[SOURCES] = {40, 25, 90};
    for (size_t wi = 0; wi < sizeof weights / sizeof *weights; wi++)
        for (int rule = 0; rule < 3; rule++)
            for (uint64_t size = 0; size <= 100; size += 100) {
                struct shard_mixture *m = mixture(f, weights[wi], rule, size);
                uint64_t L = shard_mixture_epoch_size(m), sum = 0;
                int all_within = 1, all_whole = 1;
                double total = weights[wi][0] + weights[wi][1] + weights[wi][2];
                for (uint32_t s = 0; s < SOURCES; s++) {
                    uint64_t q = shard_mixture_quota(m, s);
                    double w = weights[wi][s] / total;
                    assert_true(fabs(shard_mixture_weight(m, s) - w) < 1e-12);
                    assert_true(fabs((double)q - w * (double)L) <= 1.0);
                    sum += q;
                    all_within &= q <= n[s];
                    all_whole &= q >= n[s];
                }
                assert_int_equal(sum, L);
                assert_int_equal(shard_mixture_size(m), 155);
                if (rule == SHARD_MIXTURE_REPLACE) {
                    assert_int_equal(L, size ? size : 155);
                } else if (rule == SHARD_MIXTURE_STOP_ON_SHORTEST) {
                    assert_true(all_within);
                    if (!size || L < size) { /* one more entry would overrun a source */
                        struct shard_mixture *more = mixture(f, weights[wi], rule, L + 1);
                        assert_int_equal(shard_mixture_epoch_size(more), L);
                        shard_mixture_free(more);
                    }
                } else {
                    assert_true(size ? L <= size : all_whole);
                    assert_true(size || L >= 90);
                }
                shard_mixture_free(m);
            }
    close_all(f);
}

/* Over 200 seeds: each epoch's plan has each source's quota, no source
 * repeats a sample within a pass (n_s draws) and each pass is the whole
 * source; the first half of the epoch holds each source within binomial
 * bounds of its weight. */
static void test_draws_follow_the_weights_and_passes_never_repeat(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    const uint64_t n[SOURCES] = {40, 25, 90};
    for (int rule = 0; rule < 3; rule++) {
        struct shard_mixture *m = mixture(f, weights[0], rule, rule ? 0 : 300);
        const uint64_t L = shard_mixture_epoch_size(m);
        double worst = 0;
        for (uint64_t seed = 0; seed < 200; seed++) {
            struct shard_plan *p = plan(m, seed, seed % 3, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
            assert_int_equal(shard_plan_count(p), L);
            const uint64_t *e = shard_plan_indices(p);
            uint64_t drawn[SOURCES] = {0}, half[SOURCES] = {0};
            uint8_t *seen[SOURCES];
            for (int s = 0; s < SOURCES; s++)
                seen[s] = calloc(n[s], 1);
            for (uint64_t j = 0; j < L; j++) {
                uint32_t s;
                uint64_t i;
                struct shard_err err;
                assert_int_equal(shard_mixture_locate(m, e[j], &s, &i, &err), 0);
                if (drawn[s] % n[s] == 0) /* a new pass */
                    memset(seen[s], 0, n[s]);
                if (seen[s][i])
                    fail_msg("rule %s, seed %llu: source %u repeats sample %llu in pass %llu",
                             shard_mixture_rule_name(rule), (unsigned long long)seed, s,
                             (unsigned long long)i, (unsigned long long)(drawn[s] / n[s]));
                seen[s][i] = 1;
                drawn[s]++;
                half[s] += j < L / 2;
            }
            for (uint32_t s = 0; s < SOURCES; s++) {
                assert_int_equal(drawn[s], shard_mixture_quota(m, s));
                double w = shard_mixture_weight(m, s), k = (double)(L / 2);
                double z = fabs((double)half[s] - w * k) / sqrt(k * w * (1 - w));
                worst = z > worst ? z : worst;
                free(seen[s]);
            }
            shard_plan_free(p);
        }
        if (worst > 4.5) /* 7e-6 per check, two-sided */
            fail_msg("rule %s: a half epoch %.2f standard deviations from its weight",
                     shard_mixture_rule_name(rule), worst);
        shard_mixture_free(m);
    }
    close_all(f);
}

static void test_the_same_seed_gives_the_same_plan_and_epochs_differ(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    struct shard_mixture *m = mixture(f, weights[2], SHARD_MIXTURE_REPLACE, 500);
    struct shard_plan *a = plan(m, 9, 1, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
    struct shard_mixture *again = mixture(f, weights[2], SHARD_MIXTURE_REPLACE, 500);
    struct shard_plan *b = plan(again, 9, 1, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
    struct shard_plan *c = plan(m, 9, 2, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
    struct shard_plan *d = plan(m, 10, 1, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
    assert_memory_equal(shard_plan_indices(a), shard_plan_indices(b), 500 * sizeof(uint64_t));
    assert_memory_not_equal(shard_plan_indices(a), shard_plan_indices(c), 500 * sizeof(uint64_t));
    assert_memory_not_equal(shard_plan_indices(a), shard_plan_indices(d), 500 * sizeof(uint64_t));
    shard_plan_free(a);
    shard_plan_free(b);
    shard_plan_free(c);
    shard_plan_free(d);
    shard_mixture_free(m);
    shard_mixture_free(again);
    close_all(f);
}

/* Ranks take consecutive slices of M: with keep, rank 0's plan, then rank
 * 1's, ... is the one rank's plan; pad and drop give every rank the same
 * count. */
static void test_ranks_split_the_epoch_without_overlap(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    const uint32_t worlds[] = {1, 2, 3, 8};
    for (int rule = 0; rule < 3; rule++)
        for (uint64_t seed = 0; seed < 20; seed++) {
            struct shard_mixture *m = mixture(f, weights[seed % 3], rule, 0);
            struct shard_plan *one = plan(m, seed, 0, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
            for (size_t wi = 0; wi < 4; wi++)
                for (int rem = 0; rem < 3; rem++) {
                    uint64_t at = 0, count = 0;
                    for (uint32_t r = 0; r < worlds[wi]; r++) {
                        struct shard_plan *p = plan(m, seed, 0, r, worlds[wi], rem, NULL, 0);
                        uint64_t k = shard_plan_count(p);
                        if (r && rem != SHARD_REMAINDER_KEEP)
                            assert_int_equal(k, count);
                        count = k;
                        for (uint64_t i = 0; i < k; i++, at++)
                            assert_int_equal(shard_plan_indices(p)[i],
                                             shard_plan_indices(one)[at % shard_plan_count(one)]);
                        shard_plan_free(p);
                    }
                    if (rem == SHARD_REMAINDER_KEEP)
                        assert_int_equal(at, shard_plan_count(one));
                }
            shard_plan_free(one);
            shard_mixture_free(m);
        }
    close_all(f);
}

/* Stopped by W ranks that took t entries each, resumed on W': what the new
 * ranks read, with what was taken, is the epoch's plan entry for entry
 * (keep), as multisets. */
static void test_a_mixture_resumes_on_other_ranks_with_the_rest_of_its_epoch(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    const uint32_t worlds[] = {1, 2, 3, 8};
    struct shard_mixture *m = mixture(f, weights[0], SHARD_MIXTURE_REPLACE, 301);
    const uint64_t size = shard_mixture_size(m);
    struct shard_plan *one = plan(m, 5, 0, 0, 1, SHARD_REMAINDER_KEEP, NULL, 0);
    uint32_t *want = calloc(size, sizeof *want), *got = calloc(size, sizeof *got);
    for (uint64_t i = 0; i < shard_plan_count(one); i++)
        want[shard_plan_indices(one)[i]]++;
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 4; b++)
            for (uint64_t t = 0; t <= 301; t += 37) {
                memset(got, 0, size * sizeof *got);
                const struct shard_plan_segment done[] = {{worlds[a], t, SHARD_REMAINDER_KEEP}};
                for (uint32_t r = 0; r < worlds[a]; r++) {
                    struct shard_plan *p = plan(m, 5, 0, r, worlds[a], SHARD_REMAINDER_KEEP, NULL,
                                                0);
                    for (uint64_t i = 0; i < shard_plan_count(p) && i < t; i++)
                        got[shard_plan_indices(p)[i]]++;
                    shard_plan_free(p);
                }
                for (uint32_t r = 0; r < worlds[b]; r++) {
                    struct shard_plan *p = plan(m, 5, 0, r, worlds[b], SHARD_REMAINDER_KEEP, done,
                                                1);
                    for (uint64_t i = 0; i < shard_plan_count(p); i++)
                        got[shard_plan_indices(p)[i]]++;
                    shard_plan_free(p);
                }
                if (memcmp(got, want, size * sizeof *got))
                    fail_msg("%u ranks took %llu each, then %u: not the epoch's entries", worlds[a],
                             (unsigned long long)t, worlds[b]);
            }
    free(want);
    free(got);
    shard_plan_free(one);
    shard_mixture_free(m);
    close_all(f);
}

static void test_bad_sources_and_weights_are_refused_by_name(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    struct shard_mixture_options o;
    shard_mixture_options_init(&o);
    struct shard_mixture *m;
    struct shard_err err;
    const double zero[] = {1, 0, 1}, nan[] = {1, 1, NAN}, negative[] = {-1, 1, 1};
    assert_int_equal(shard_mixture_new(&m, f->ds, zero, 3, &o, &err), SHARD_EINVAL);
    assert_null(m);
    assert_string_equal(err.msg, "the weight of source 1 is 0: weights must be finite and above 0");
    assert_int_equal(shard_mixture_new(&m, f->ds, nan, 3, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "the weight of source 2 is nan"));
    assert_int_equal(shard_mixture_new(&m, f->ds, negative, 3, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "source 0"));
    assert_int_equal(shard_mixture_new(&m, f->ds, weights[0], 0, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "a mixture has 1 to 1024 sources, not 0");
    o.rule = 7;
    assert_int_equal(shard_mixture_new(&m, f->ds, weights[0], 3, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "unknown mixture rule 7");
    enum shard_mixture_rule rule;
    assert_int_equal(shard_mixture_rule_parse("stop_on_longest", &rule), 0);
    assert_int_equal(rule, SHARD_MIXTURE_STOP_ON_LONGEST);
    assert_int_equal(shard_mixture_rule_parse("longest", &rule), SHARD_EINVAL);
    assert_string_equal(shard_mixture_rule_name(SHARD_MIXTURE_STOP_ON_SHORTEST),
                        "stop_on_shortest");
    uint32_t s;
    uint64_t i;
    shard_mixture_options_init(&o);
    m = mixture(f, weights[1], SHARD_MIXTURE_REPLACE, 0);
    assert_int_equal(shard_mixture_locate(m, 155, &s, &i, &err), SHARD_ENOTFOUND);
    assert_int_equal(shard_mixture_locate(m, 64, &s, &i, &err), 0);
    assert_int_equal(s, 1);
    assert_int_equal(i, 24);
    /* own labels: the number stays */
    assert_int_equal(shard_mixture_label_count(m), 0);
    assert_int_equal(shard_mixture_label_of(m, 2, 1), 1);
    shard_mixture_free(m);
    shard_mixture_free(NULL);
    close_all(f);
}

/* The same dataset twice, merged by name: one list of its classes, each
 * source's numbers mapped to themselves. */
static void test_merged_labels_are_the_sources_class_names_by_name(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    struct shard_mixture_options o;
    shard_mixture_options_init(&o);
    o.labels = SHARD_MIXTURE_LABELS_MERGED;
    struct shard_mixture *m;
    struct shard_err err;
    assert_int_equal(shard_mixture_new(&m, f->ds, weights[0], 3, &o, &err), 0);
    assert_int_equal(shard_mixture_label_count(m), MKDS_LABELS);
    for (uint32_t k = 0; k < MKDS_LABELS; k++) {
        assert_string_equal(shard_mixture_label(m, k), mkds_label_names[k]);
        assert_int_equal(shard_mixture_label_of(m, 1, (int32_t)k), k);
    }
    assert_int_equal(shard_mixture_label_of(m, 1, SHARD_NO_LABEL), SHARD_NO_LABEL);
    assert_null(shard_mixture_label(m, MKDS_LABELS));
    shard_mixture_free(m);
    close_all(f);
}

/* ---- the specification, re-implemented from mixture.h's text (spec.h) -- */

static void test_the_plan_is_exactly_the_documented_algorithm(void **state)
{
    struct fixture *f = *state;
    open_all(f);
    const uint64_t n[SOURCES] = {40, 25, 90}, base[SOURCES] = {0, 40, 65};
    const uint64_t seed = 4242, epoch = 3, L = 400;
    struct shard_mixture *m = mixture(f, weights[2], SHARD_MIXTURE_REPLACE, L);
    /* quotas */
    double sum = 0, c[SOURCES];
    for (int s = 0; s < SOURCES; s++)
        sum += weights[2][s];
    double acc = 0;
    uint64_t q[SOURCES], before = 0;
    for (int s = 0; s < SOURCES; s++) {
        acc += weights[2][s];
        c[s] = s + 1 == SOURCES ? 1.0 : acc / sum;
        uint64_t upto = (uint64_t)floor(c[s] * (double)L);
        q[s] = upto - before;
        before = upto;
        assert_int_equal(shard_mixture_quota(m, s), q[s]);
    }
    /* step 1 and 2 */
    uint64_t *e = malloc(L * sizeof *e), state_ = spec_derive(seed, 5, epoch, 0, 0);
    uint64_t left[SOURCES] = {q[0], q[1], q[2]}, drawn[SOURCES] = {0}, remaining = L;
    for (uint64_t j = 0; j < L; j++) {
        uint64_t u = spec_bounded(&state_, remaining), upto = left[0];
        int s = 0;
        while (u >= upto)
            upto += left[++s];
        uint64_t pass = drawn[s] / n[s];
        struct shard_plan_options o;
        shard_plan_options_init(&o);
        o.seed = spec_derive(seed, 6, epoch, (uint64_t)s, pass);
        o.shuffle_buffer = 8;
        struct shard_plan *p;
        struct shard_err err;
        assert_int_equal(shard_plan_new(&p, source_counts[s], source_shards[s], &o, &err), 0);
        e[j] = base[s] + shard_plan_indices(p)[drawn[s] % n[s]];
        shard_plan_free(p);
        drawn[s]++;
        left[s]--;
        remaining--;
    }
    for (uint32_t world = 1; world <= 3; world++)
        for (uint32_t r = 0; r < world; r++) {
            struct shard_plan *p = plan(m, seed, epoch, r, world, SHARD_REMAINDER_KEEP, NULL, 0);
            uint64_t b = r * L / world;
            assert_int_equal(shard_plan_count(p), (r + 1) * L / world - b);
            assert_memory_equal(shard_plan_indices(p), e + b,
                                shard_plan_count(p) * sizeof(uint64_t));
            shard_plan_free(p);
        }
    free(e);
    shard_mixture_free(m);
    close_all(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_rule_sets_the_epoch_and_the_quotas),
        cmocka_unit_test(test_draws_follow_the_weights_and_passes_never_repeat),
        cmocka_unit_test(test_the_same_seed_gives_the_same_plan_and_epochs_differ),
        cmocka_unit_test(test_ranks_split_the_epoch_without_overlap),
        cmocka_unit_test(test_a_mixture_resumes_on_other_ranks_with_the_rest_of_its_epoch),
        cmocka_unit_test(test_bad_sources_and_weights_are_refused_by_name),
        cmocka_unit_test(test_merged_labels_are_the_sources_class_names_by_name),
        cmocka_unit_test(test_the_plan_is_exactly_the_documented_algorithm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
