/* test_handoff.c - the bounded hand-off (lib/read/handoff.h) on its own, with
 * real threads: groups come out whole and in list order from any number of
 * workers, never more than depth * group positions are out, errors stay
 * with their position, a timed wait says "not yet", and stopping frees
 * workers blocked on a full ring and a consumer blocked on an empty one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "read/handoff.h"

/* A hung thread must fail the test, not hang the suite. */
#define HANG_SECONDS 60

struct run {
    struct sk_handoff *q;
    uint64_t count;
    uint32_t depth, group;
    uint64_t *cells;                 /* the user's data: depth * group cells */
    _Atomic int *claimed;            /* per position: times claimed */
    _Atomic uint64_t released;       /* groups the consumer released (counted before) */
    _Atomic uint64_t finished;       /* positions marked done */
    _Atomic int too_far;             /* a claim beyond released + depth groups */
    int fail_every;                  /* positions p % fail_every == 1 fail (0: none) */
    /* the worker that claims position gate_pos waits until the gate opens */
    uint64_t gate_pos;               /* UINT64_MAX: no gate */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_cond;
    int gate_open;
    _Atomic int at_gate;
};

static void gate_wait(struct run *r)
{
    atomic_store(&r->at_gate, 1);
    pthread_mutex_lock(&r->gate_lock);
    while (!r->gate_open)
        pthread_cond_wait(&r->gate_cond, &r->gate_lock);
    pthread_mutex_unlock(&r->gate_lock);
}

static void gate_open(struct run *r)
{
    pthread_mutex_lock(&r->gate_lock);
    r->gate_open = 1;
    pthread_cond_broadcast(&r->gate_cond);
    pthread_mutex_unlock(&r->gate_lock);
}

static void *worker(void *arg)
{
    struct run *r = arg;
    uint64_t p;
    while (sk_handoff_claim(r->q, &p)) {
        if (p / r->group >= atomic_load(&r->released) + r->depth)
            atomic_store(&r->too_far, 1);
        atomic_fetch_add(&r->claimed[p], 1);
        if (p == r->gate_pos)
            gate_wait(r);
        sched_yield();  /* let the others overtake: completion order varies */
        r->cells[sk_handoff_cell(r->q, p)] = p * 10;
        int rc = 0;
        if (r->fail_every && p % r->fail_every == 1)
            rc = shard_err_set(sk_handoff_err(r->q, p), SHARD_ECORRUPT, "bad %llu",
                               (unsigned long long)p);
        sk_handoff_done(r->q, p, rc);
        atomic_fetch_add(&r->finished, 1);
    }
    return NULL;
}

static void run_init(struct run *r, uint64_t count, uint32_t depth, uint32_t group)
{
    memset(r, 0, sizeof *r);
    r->count = count;
    r->depth = depth;
    r->group = group;
    r->gate_pos = UINT64_MAX;
    pthread_mutex_init(&r->gate_lock, NULL);
    pthread_cond_init(&r->gate_cond, NULL);
    assert_int_equal(sk_handoff_new(&r->q, count, depth, group, NULL), 0);
    r->cells = calloc((size_t)depth * group, sizeof *r->cells);
    r->claimed = calloc(count ? count : 1, sizeof *r->claimed);
    assert_non_null(r->cells);
    assert_non_null(r->claimed);
}

static void run_free(struct run *r)
{
    sk_handoff_free(r->q);
    pthread_mutex_destroy(&r->gate_lock);
    pthread_cond_destroy(&r->gate_cond);
    free(r->cells);
    free(r->claimed);
}

static void start(struct run *r, pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, r), 0);
}

static void join(pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* Consume every group, checking each is whole, in order, in its slot, with
 * its errors where the workers put them. */
static void consume_all(struct run *r)
{
    struct sk_handoff_group g;
    uint64_t k = 0;
    int w;
    while ((w = sk_handoff_wait(r->q, -1, &g)) == SK_HANDOFF_READY) {
        uint64_t first = k * r->group;
        uint32_t len = r->count - first < r->group ? (uint32_t)(r->count - first) : r->group;
        assert_int_equal(g.first, first);
        assert_int_equal(g.len, len);
        assert_int_equal(g.slot, k % r->depth);
        uint32_t failed = 0;
        for (uint64_t p = g.first; p < g.first + g.len; p++) {
            assert_int_equal(sk_handoff_slot(r->q, p), g.slot);
            assert_int_equal(r->cells[sk_handoff_cell(r->q, p)], p * 10);
            int bad = r->fail_every && p % r->fail_every == 1;
            assert_int_equal(sk_handoff_rc(r->q, p), bad ? SHARD_ECORRUPT : 0);
            if (bad) {
                char want[32];
                snprintf(want, sizeof want, "bad %llu", (unsigned long long)p);
                assert_string_equal(sk_handoff_err(r->q, p)->msg, want);
                failed++;
            }
        }
        assert_int_equal(g.failed, failed);
        atomic_fetch_add(&r->released, 1);  /* before: the workers' bound stays safe */
        sk_handoff_release(r->q);
        k++;
    }
    assert_int_equal(w, SK_HANDOFF_END);
    assert_int_equal(k, r->count / r->group + (r->count % r->group != 0));
    for (uint64_t p = 0; p < r->count; p++)
        assert_int_equal(atomic_load(&r->claimed[p]), 1);
    assert_false(atomic_load(&r->too_far));
}

static void test_groups_come_whole_and_in_order_from_any_number_of_workers(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    static const struct {
        uint64_t count;
        uint32_t depth, group;
        int threads;
    } cases[] = {
        {1000, 4, 1, 3},   /* the iterator's shape */
        {103, 3, 8, 4},    /* batches, the last one short */
        {96, 2, 8, 1},     /* one worker, whole batches */
        {5, 1, 16, 2},     /* one group, shorter than a batch */
        {64, 1, 1, 8},     /* a ring of one */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct run r;
        run_init(&r, cases[c].count, cases[c].depth, cases[c].group);
        pthread_t t[8];
        start(&r, t, cases[c].threads);
        consume_all(&r);
        join(t, cases[c].threads);
        run_free(&r);
    }
    alarm(0);
}

static void test_errors_stay_with_their_position(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct run r;
    run_init(&r, 200, 3, 7);
    r.fail_every = 3;
    pthread_t t[3];
    start(&r, t, 3);
    consume_all(&r);
    join(t, 3);
    run_free(&r);
    alarm(0);
}

static void test_an_empty_list_ends_at_once(void **state)
{
    (void)state;
    struct sk_handoff *q;
    assert_int_equal(sk_handoff_new(&q, 0, 2, 4, NULL), 0);
    uint64_t p;
    struct sk_handoff_group g;
    assert_int_equal(sk_handoff_claim(q, &p), 0);
    assert_int_equal(sk_handoff_wait(q, -1, &g), SK_HANDOFF_END);
    sk_handoff_free(q);
    struct shard_err err;
    assert_int_equal(sk_handoff_new(&q, 10, 0, 4, &err), SHARD_EINVAL);
    assert_null(q);
    assert_int_equal(sk_handoff_new(&q, 10, 4, 0, &err), SHARD_EINVAL);
}

/* The wait's timeout: "not yet" while a group is incomplete (no timing is
 * asserted, only what is returned), the group once its last position is
 * done; and holding every slot is refused instead of waiting forever. */
static void test_a_timed_wait_says_not_yet_until_the_group_is_complete(void **state)
{
    (void)state;
    struct sk_handoff *q;
    assert_int_equal(sk_handoff_new(&q, 6, 2, 2, NULL), 0);
    struct sk_handoff_group g;
    uint64_t a, b;
    assert_int_equal(sk_handoff_wait(q, 0, &g), SK_HANDOFF_NOT_YET);
    assert_int_equal(sk_handoff_claim(q, &a), 1);
    assert_int_equal(sk_handoff_claim(q, &b), 1);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    sk_handoff_done(q, b, 0);  /* out of order: the group is still incomplete */
    assert_int_equal(sk_handoff_wait(q, 10, &g), SK_HANDOFF_NOT_YET);
    sk_handoff_done(q, a, 0);
    assert_int_equal(sk_handoff_wait(q, 10, &g), SK_HANDOFF_READY);
    assert_int_equal(g.first, 0);
    assert_int_equal(g.len, 2);
    /* take group 1 as well without releasing group 0: two slots held */
    assert_int_equal(sk_handoff_claim(q, &a), 1);
    assert_int_equal(sk_handoff_claim(q, &b), 1);
    sk_handoff_done(q, a, 0);
    sk_handoff_done(q, b, 0);
    assert_int_equal(sk_handoff_wait(q, -1, &g), SK_HANDOFF_READY);
    assert_int_equal(g.first, 2);
    /* group 2 needs slot 0 back: waiting for it now could never end */
    assert_int_equal(sk_handoff_wait(q, -1, &g), SHARD_EINVAL);
    sk_handoff_release(q);  /* group 0 */
    assert_int_equal(sk_handoff_claim(q, &a), 1);
    assert_int_equal(a, 4);
    assert_int_equal(sk_handoff_slot(q, a), 0);
    sk_handoff_free(q);
}

struct blocked_consumer {
    struct sk_handoff *q;
    int result;
};

static void *wait_forever(void *arg)
{
    struct blocked_consumer *c = arg;
    struct sk_handoff_group g;
    c->result = sk_handoff_wait(c->q, -1, &g);
    return NULL;
}

/* A consumer that stops mid-list: the ring is full (nothing released), so
 * workers block in their claims; or a group cannot complete (one of its
 * positions is slow: it waits at a gate), so the consumer blocks in its
 * wait.  Stop wakes them all; the slow worker may still finish its position
 * after the stop; then everything is joined and freed. */
static void test_stop_frees_blocked_workers_and_a_blocked_consumer(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct run r;
    run_init(&r, 10000, 2, 4);
    r.gate_pos = 9;  /* in group 2 */
    pthread_t t[3];
    start(&r, t, 3);
    /* groups 0 and 1 fill the ring; the workers then block in their claims */
    while (atomic_load(&r.finished) < 2 * 4)
        sched_yield();
    struct sk_handoff_group g;
    for (uint64_t k = 0; k < 2; k++) {
        assert_int_equal(sk_handoff_wait(r.q, -1, &g), SK_HANDOFF_READY);
        assert_int_equal(g.first, k * 4);
        atomic_fetch_add(&r.released, 1);
        sk_handoff_release(r.q);
    }
    /* groups 2 and 3 are claimed; position 9 stays at the gate, so group 2
     * cannot complete, and the rest of the workers block again */
    while (!atomic_load(&r.at_gate) || atomic_load(&r.finished) < 4 * 4 - 1)
        sched_yield();
    assert_int_equal(sk_handoff_wait(r.q, 0, &g), SK_HANDOFF_NOT_YET);
    struct blocked_consumer c = {r.q, -100};
    pthread_t ct;
    assert_int_equal(pthread_create(&ct, NULL, wait_forever, &c), 0);
    usleep(20000);  /* most likely asleep in its wait by now (STOPPED either way) */
    sk_handoff_stop(r.q);
    pthread_join(ct, NULL);
    assert_int_equal(c.result, SK_HANDOFF_STOPPED);
    gate_open(&r);  /* the slow position finishes after the stop */
    join(t, 3);
    uint64_t p;
    assert_int_equal(sk_handoff_claim(r.q, &p), 0);
    assert_int_equal(sk_handoff_wait(r.q, 0, &g), SK_HANDOFF_STOPPED);
    assert_int_equal(atomic_load(&r.finished), 4 * 4);
    assert_false(atomic_load(&r.too_far));
    sk_handoff_stop(r.q);  /* idempotent */
    run_free(&r);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_come_whole_and_in_order_from_any_number_of_workers),
        cmocka_unit_test(test_errors_stay_with_their_position),
        cmocka_unit_test(test_an_empty_list_ends_at_once),
        cmocka_unit_test(test_a_timed_wait_says_not_yet_until_the_group_is_complete),
        cmocka_unit_test(test_stop_frees_blocked_workers_and_a_blocked_consumer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
