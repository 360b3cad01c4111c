/* test_pipeline.c - the ordered parallel pipeline and the sample-order shuffle:
 * output order never depends on the thread count or on how long items take. */
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "convert/pipeline.h"
#include "util/random.h"

struct job {
    uint64_t n;
    uint64_t *out; /* consumed positions, in consumption order */
    uint64_t consumed;
    uint64_t fail_at;       /* consume fails at this position (UINT64_MAX: never) */
    uint64_t claim_fail_at; /* claim fails at this position (0: never) */
    volatile sig_atomic_t *cancel;
    uint64_t cancel_at;
    int max_concurrent_consumers;
    int consumers;
};

struct item {
    uint64_t pos;
    uint64_t value;
};

static int claim(void *ctx, uint64_t pos, void *slot, struct shard_err *err)
{
    struct job *j = ctx;
    struct item *it = slot;
    if (pos >= j->n)
        return 0;
    if (j->claim_fail_at && pos == j->claim_fail_at)
        return shard_err_set(err, SHARD_ENET, "source lost at %llu", (unsigned long long)pos);
    if (j->cancel && pos == j->cancel_at)
        *j->cancel = 1;
    it->pos = pos;
    return 1;
}

static void work(void *ctx, int thread, void *slot)
{
    struct item *it = slot;
    /* uneven work: some items take far longer than others */
    struct timespec ts = {0, (long)((it->pos * 7919) % 13) * 20000};
    nanosleep(&ts, NULL);
    it->value = it->pos * it->pos;
}

static int consume(void *ctx, void *slot, struct shard_err *err)
{
    struct job *j = ctx;
    struct item *it = slot;
    int now;
#pragma omp atomic capture
    now = ++j->consumers;
    if (now > j->max_concurrent_consumers)
        j->max_concurrent_consumers = now;
    if (it->value != it->pos * it->pos)
        return shard_err_set(err, SHARD_ECORRUPT, "slot reused too early");
    if (it->pos == j->fail_at) {
#pragma omp atomic
        j->consumers--;
        return shard_err_set(err, SHARD_EIO, "disk full at %llu", (unsigned long long)it->pos);
    }
    j->out[j->consumed++] = it->pos;
#pragma omp atomic
    j->consumers--;
    return 0;
}

static int run(struct job *j, int threads, size_t nslots, struct shard_err *err)
{
    struct item *items = calloc(nslots, sizeof *items);
    void **slots = calloc(nslots, sizeof *slots);
    for (size_t i = 0; i < nslots; i++)
        slots[i] = &items[i];
    struct pipeline_ops ops = {j, claim, work, consume};
    int rc = sk_pipeline_run(&ops, slots, nslots, threads, j->cancel, err);
    free(items);
    free(slots);
    return rc;
}

static void test_items_are_consumed_in_order_one_at_a_time(void **state)
{
    (void)state;
    int thread_counts[] = {1, 2, 3, 8};
    size_t slot_counts[] = {1, 2, 5, 64};
    for (size_t t = 0; t < 4; t++) {
        for (size_t s = 0; s < 4; s++) {
            struct job j = {.n = 500, .fail_at = UINT64_MAX};
            j.out = calloc(j.n, sizeof *j.out);
            struct shard_err err;
            assert_int_equal(run(&j, thread_counts[t], slot_counts[s], &err), 0);
            assert_int_equal(j.consumed, j.n);
            for (uint64_t i = 0; i < j.n; i++)
                assert_int_equal(j.out[i], i);
            assert_int_equal(j.max_concurrent_consumers, 1);
            free(j.out);
        }
    }
}

static void test_a_consume_error_stops_the_run_with_that_error(void **state)
{
    (void)state;
    struct job j = {.n = 300, .fail_at = 123};
    j.out = calloc(j.n, sizeof *j.out);
    struct shard_err err;
    assert_int_equal(run(&j, 4, 16, &err), SHARD_EIO);
    assert_string_equal(err.msg, "disk full at 123");
    assert_int_equal(j.consumed, 123);
    free(j.out);
}

static void test_a_claim_error_stops_the_run_with_that_error(void **state)
{
    (void)state;
    struct job j = {.n = 300, .fail_at = UINT64_MAX, .claim_fail_at = 77};
    j.out = calloc(j.n, sizeof *j.out);
    struct shard_err err;
    assert_int_equal(run(&j, 3, 8, &err), SHARD_ENET);
    assert_string_equal(err.msg, "source lost at 77");
    assert_true(j.consumed <= 77);
    for (uint64_t i = 0; i < j.consumed; i++)
        assert_int_equal(j.out[i], i);
    free(j.out);
}

static void test_cancel_stops_claiming_and_reports_interrupted(void **state)
{
    (void)state;
    volatile sig_atomic_t cancel = 0;
    struct job j = {.n = 1000, .fail_at = UINT64_MAX, .cancel = &cancel, .cancel_at = 100};
    j.out = calloc(j.n, sizeof *j.out);
    struct shard_err err;
    assert_int_equal(run(&j, 3, 8, &err), SHARD_EINTR);
    assert_true(j.consumed >= 100 && j.consumed < 1000);
    for (uint64_t i = 0; i < j.consumed; i++)
        assert_int_equal(j.out[i], i);
    free(j.out);
}

static void test_empty_input_finishes_at_once(void **state)
{
    (void)state;
    struct job j = {.n = 0, .fail_at = UINT64_MAX};
    struct shard_err err;
    assert_int_equal(run(&j, 2, 4, &err), 0);
    assert_int_equal(j.consumed, 0);
}

static void test_shuffle_is_a_seeded_permutation(void **state)
{
    (void)state;
    enum { N = 1000 };
    uint64_t a[N], b[N], c[N];
    for (int i = 0; i < N; i++)
        a[i] = b[i] = c[i] = (uint64_t)i;
    sk_shuffle(a, N, 7);
    sk_shuffle(b, N, 7);
    sk_shuffle(c, N, 8);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    int seen[N] = {0}, fixed = 0;
    for (int i = 0; i < N; i++) {
        assert_true(a[i] < N);
        seen[a[i]]++;
        fixed += a[i] == (uint64_t)i;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(seen[i], 1);
    assert_true(fixed < 10); /* a shuffle, not the identity */
    /* position 0 takes every value about equally often across seeds */
    int first[4] = {0};
    for (uint64_t seed = 0; seed < 4000; seed++) {
        uint64_t v[4] = {0, 1, 2, 3};
        sk_shuffle(v, 4, seed);
        first[v[0]]++;
    }
    for (int i = 0; i < 4; i++)
        assert_true(first[i] > 850 && first[i] < 1150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items_are_consumed_in_order_one_at_a_time),
        cmocka_unit_test(test_a_consume_error_stops_the_run_with_that_error),
        cmocka_unit_test(test_a_claim_error_stops_the_run_with_that_error),
        cmocka_unit_test(test_cancel_stops_claiming_and_reports_interrupted),
        cmocka_unit_test(test_empty_input_finishes_at_once),
        cmocka_unit_test(test_shuffle_is_a_seeded_permutation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
