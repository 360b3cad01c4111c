/* test_ring.c - the ordered ring (lib/util/ring.h) on its own.
 *
 * With real threads: groups come out whole and in list order from any
 * number of producers, to one consumer, to many takers of given groups, or
 * to whichever producer completes the next group; a position's cells are
 * never in use by two positions at once (so no more than depth * group are
 * out); errors stay with their position; a timed wait says "not yet";
 * stopping frees producers blocked on a full ring and consumers blocked on
 * an empty one; closing an open-ended list ends it for everyone waiting; a
 * consumer sleeps only for its own group and a release wakes one producer,
 * not all.  And a property: over thousands of random schedules played out
 * on one thread (every call that could block only looks), in every way of
 * consuming, with random lengths, depths, groups, failures, closes and
 * stops, positions are claimed in order, each taken exactly once, in order
 * where the way says so, and the ring never deadlocks. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/ring.h"

/* A hung thread must fail the test, not hang the suite. */
#define HANG_SECONDS 60

/* A small seeded generator (splitmix64): schedules are reproducible. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n)
{
    return n ? next_random(s) % n : 0;
}

/* Sometimes give the processor away, sometimes sleep a little: the threads'
 * interleaving changes from run to run and from step to step. */
static void jitter(uint64_t *s)
{
    uint64_t r = below(s, 16);
    if (r < 4)
        sched_yield();
    else if (r == 4)
        usleep((useconds_t)below(s, 200));
}

static uint64_t groups_of(uint64_t count, uint32_t group)
{
    return count / group + (count % group != 0);
}

/* ---- real threads -------------------------------------------------------------- */

enum way { IN_ORDER = 1, BY_GROUP = 2, IN_TURN = 3 };

struct run {
    struct sk_ring *q;
    enum way way;
    uint64_t count; /* the list's length */
    int open;       /* the ring is open-ended: a claim at count closes it */
    uint32_t depth, group;
    _Atomic uint64_t *cells;   /* the user's data: 1 + the position in it, 0: free */
    _Atomic int *claimed;      /* per position: times claimed */
    _Atomic int *taken;        /* per position: times taken */
    _Atomic int shared_cell;   /* a claim found its cell in use */
    _Atomic uint64_t finished; /* positions marked done */
    _Atomic int consumers;     /* in turn: threads consuming now */
    _Atomic int two_consumers; /* ... more than one at once */
    uint64_t next_group;       /* in turn: the next group expected (the role's) */
    int out_of_order;          /* in turn: a group came out of order (the role's) */
    int takers;                /* by group: takers, taker j takes groups j, j + takers, ... */
    int fail_every;            /* positions p % fail_every == 1 fail (0: none) */
    uint64_t seed;
    /* the producer that claims position gate_pos waits until the gate opens */
    uint64_t gate_pos; /* UINT64_MAX: no gate */
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

static void run_init(struct run *r, enum way way, uint64_t count, uint32_t depth, uint32_t group)
{
    memset(r, 0, sizeof *r);
    r->way = way;
    r->count = count;
    r->depth = depth;
    r->group = group;
    r->gate_pos = UINT64_MAX;
    r->takers = 1;
    r->seed = count * 31 + depth * 7 + group;
    pthread_mutex_init(&r->gate_lock, NULL);
    pthread_cond_init(&r->gate_cond, NULL);
    assert_int_equal(sk_ring_new(&r->q, count, depth, group, NULL), 0);
    r->cells = calloc((size_t)depth * group, sizeof *r->cells);
    r->claimed = calloc(count + 1, sizeof *r->claimed);
    r->taken = calloc(count + 1, sizeof *r->taken);
    assert_non_null(r->cells);
    assert_non_null(r->claimed);
    assert_non_null(r->taken);
}

/* The same over a ring that does not know where the list ends. */
static void run_init_open(struct run *r, enum way way, uint64_t count, uint32_t depth,
                          uint32_t group)
{
    run_init(r, way, count, depth, group);
    sk_ring_free(r->q);
    assert_int_equal(sk_ring_new(&r->q, SK_RING_OPEN, depth, group, NULL), 0);
    r->open = 1;
}

static void run_free(struct run *r)
{
    sk_ring_free(r->q);
    pthread_mutex_destroy(&r->gate_lock);
    pthread_cond_destroy(&r->gate_cond);
    free(r->cells);
    free(r->claimed);
    free(r->taken);
}

/* Check a taken group: whole, in its slot, each position's data and status
 * where its producer left them.  Counts each position as taken. */
static void check_group(struct run *r, const struct sk_ring_group *g, uint64_t k)
{
    uint64_t first = k * r->group;
    uint32_t len = r->count - first < r->group ? (uint32_t)(r->count - first) : r->group;
    assert_int_equal(g->first, first);
    assert_int_equal(g->len, len);
    assert_int_equal(g->slot, k % r->depth);
    uint32_t failed = 0;
    for (uint64_t p = g->first; p < g->first + g->len; p++) {
        assert_int_equal(sk_ring_slot(r->q, p), g->slot);
        assert_int_equal(atomic_load(&r->cells[sk_ring_cell(r->q, p)]), p + 1);
        int bad = r->fail_every && p % r->fail_every == 1;
        assert_int_equal(sk_ring_rc(r->q, p), bad ? SHARD_ECORRUPT : 0);
        if (bad) {
            char want[32];
            snprintf(want, sizeof want, "bad %llu", (unsigned long long)p);
            assert_string_equal(sk_ring_err(r->q, p)->msg, want);
            failed++;
        }
        atomic_fetch_add(&r->taken[p], 1);
    }
    assert_int_equal(g->failed, failed);
}

/* Before a group is released: its cells are free again.  A claim that found
 * one still in use would mean two positions share it. */
static void free_cells(struct run *r, const struct sk_ring_group *g)
{
    for (uint64_t p = g->first; p < g->first + g->len; p++)
        atomic_store(&r->cells[sk_ring_cell(r->q, p)], 0);
}

/* In turn: consume what the role gives, checking one consumer at a time and
 * the order. */
static void consume_in_turn(struct run *r, int w, struct sk_ring_group *g, uint64_t *seed)
{
    while (w == SK_RING_READY) {
        if (atomic_fetch_add(&r->consumers, 1) != 0)
            atomic_store(&r->two_consumers, 1);
        if (g->first != r->next_group * r->group)
            r->out_of_order = 1;
        check_group(r, g, r->next_group++);
        jitter(seed);
        free_cells(r, g);
        atomic_fetch_sub(&r->consumers, 1);
        w = sk_ring_release_take(r->q, g);
    }
}

struct producer {
    struct run *r;
    uint64_t seed;
};

static void *producer_main(void *arg)
{
    struct producer *me = arg;
    struct run *r = me->r;
    struct sk_ring_group g;
    uint64_t p;
    while (sk_ring_claim(r->q, -1, &p) == SK_RING_READY) {
        if (r->open && p >= r->count) {      /* the source has nothing at p */
            int rc = sk_ring_close(r->q, p); /* refused when another closed before p */
            assert_true(rc == 0 || (rc == SHARD_EINVAL && p > r->count));
            if (r->way == IN_TURN)
                consume_in_turn(r, sk_ring_done_take(r->q, p, 0, &g), &g, &me->seed);
            break;
        }
        atomic_fetch_add(&r->claimed[p], 1);
        if (atomic_exchange(&r->cells[sk_ring_cell(r->q, p)], p + 1) != 0)
            atomic_store(&r->shared_cell, 1);
        if (p == r->gate_pos)
            gate_wait(r);
        jitter(&me->seed); /* let the others overtake: completion order varies */
        int rc = 0;
        if (r->fail_every && p % r->fail_every == 1)
            rc = shard_err_set(sk_ring_err(r->q, p), SHARD_ECORRUPT, "bad %llu",
                               (unsigned long long)p);
        atomic_fetch_add(&r->finished, 1);
        if (r->way == IN_TURN)
            consume_in_turn(r, sk_ring_done_take(r->q, p, rc, &g), &g, &me->seed);
        else
            sk_ring_done(r->q, p, rc);
    }
    return NULL;
}

static void start(struct run *r, pthread_t *t, struct producer *pr, int n)
{
    for (int i = 0; i < n; i++) {
        pr[i] = (struct producer){r, r->seed * 1000 + (uint64_t)i};
        assert_int_equal(pthread_create(&t[i], NULL, producer_main, &pr[i]), 0);
    }
}

static void join(pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* Every position taken exactly once, no cell shared. */
static void check_all_taken_once(struct run *r)
{
    for (uint64_t p = 0; p < r->count; p++) {
        assert_int_equal(atomic_load(&r->claimed[p]), 1);
        assert_int_equal(atomic_load(&r->taken[p]), 1);
    }
    assert_false(atomic_load(&r->shared_cell));
}

/* The one consumer: every group, in order. */
static void consume_all(struct run *r)
{
    struct sk_ring_group g;
    uint64_t k = 0;
    int w;
    while ((w = sk_ring_wait(r->q, -1, &g)) == SK_RING_READY) {
        check_group(r, &g, k++);
        free_cells(r, &g);
        sk_ring_release(r->q);
    }
    assert_int_equal(w, SK_RING_END);
    assert_int_equal(k, groups_of(r->count, r->group));
    check_all_taken_once(r);
}

struct taker {
    struct run *r;
    int index;
};

static void *taker_main(void *arg)
{
    struct taker *t = arg;
    struct run *r = t->r;
    uint64_t seed = (uint64_t)t->index * 77 + 5;
    struct sk_ring_group g;
    for (uint64_t k = (uint64_t)t->index;; k += (uint64_t)r->takers) {
        int w = sk_ring_take(r->q, k, -1, &g);
        if (w == SK_RING_END)
            break;
        assert_int_equal(w, SK_RING_READY);
        check_group(r, &g, k);
        jitter(&seed);
        free_cells(r, &g);
        sk_ring_release_group(r->q, k);
        /* taken once: again is a mistake */
        assert_int_equal(sk_ring_take(r->q, k, 0, &g), SHARD_EINVAL);
    }
    return NULL;
}

static const struct {
    uint64_t count;
    uint32_t depth, group;
    int producers, takers;
} shapes[] = {
    {1000, 4, 1, 3, 2}, /* the iterator's and the read-ahead's shape */
    {103, 3, 8, 4, 3},  /* batches, the last one short */
    {96, 2, 8, 1, 1},   /* one producer, whole batches */
    {5, 1, 16, 2, 2},   /* one group, shorter than a batch */
    {64, 1, 1, 8, 1},   /* a ring of one */
    {300, 8, 1, 2, 8},  /* as many takers as slots */
    {0, 3, 2, 2, 2},    /* nothing */
};
#define SHAPES (sizeof shapes / sizeof *shapes)

static void test_groups_come_whole_and_in_order_from_any_number_of_producers(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    for (size_t c = 0; c < SHAPES; c++) {
        struct run r;
        run_init(&r, IN_ORDER, shapes[c].count, shapes[c].depth, shapes[c].group);
        pthread_t t[8];
        struct producer pr[8];
        start(&r, t, pr, shapes[c].producers);
        consume_all(&r);
        join(t, shapes[c].producers);
        run_free(&r);
    }
    alarm(0);
}

static void test_errors_stay_with_their_position(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct run r;
    run_init(&r, IN_ORDER, 200, 3, 7);
    r.fail_every = 3;
    pthread_t t[3];
    struct producer pr[3];
    start(&r, t, pr, 3);
    consume_all(&r);
    join(t, 3);
    run_free(&r);
    alarm(0);
}

/* The read-ahead's way: many takers, each taking its own groups when they
 * are complete, in whatever order the threads run. */
static void test_many_takers_take_each_group_once_in_any_order(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    for (size_t c = 0; c < SHAPES; c++) {
        struct run r;
        run_init(&r, BY_GROUP, shapes[c].count, shapes[c].depth, shapes[c].group);
        r.takers = shapes[c].takers;
        r.fail_every = 5;
        pthread_t t[8], tt[8];
        struct producer pr[8];
        struct taker tk[8];
        start(&r, t, pr, shapes[c].producers);
        for (int i = 0; i < r.takers; i++) {
            tk[i] = (struct taker){&r, i};
            assert_int_equal(pthread_create(&tt[i], NULL, taker_main, &tk[i]), 0);
        }
        join(tt, r.takers);
        join(t, shapes[c].producers);
        check_all_taken_once(&r);
        run_free(&r);
    }
    alarm(0);
}

/* The pipeline's way: no consumer thread; whichever producer completes the
 * next group consumes it, one at a time, in order - over a list whose end
 * only the producers find (an open-ended ring, closed where the source
 * ends, and a last group the close cuts short). */
static void test_producers_consume_in_turn_one_at_a_time_in_order(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    for (int open = 0; open < 2; open++) {
        for (size_t c = 0; c < SHAPES; c++) {
            struct run r;
            if (open)
                run_init_open(&r, IN_TURN, shapes[c].count, shapes[c].depth, shapes[c].group);
            else
                run_init(&r, IN_TURN, shapes[c].count, shapes[c].depth, shapes[c].group);
            r.fail_every = 4;
            pthread_t t[8];
            struct producer pr[8];
            start(&r, t, pr, shapes[c].producers);
            join(t, shapes[c].producers);
            assert_int_equal(r.next_group, groups_of(r.count, r.group));
            assert_false(r.out_of_order);
            assert_false(atomic_load(&r.two_consumers));
            check_all_taken_once(&r);
            run_free(&r);
        }
    }
    alarm(0);
}

static void test_an_empty_list_ends_at_once(void **state)
{
    (void)state;
    struct sk_ring *q;
    assert_int_equal(sk_ring_new(&q, 0, 2, 4, NULL), 0);
    uint64_t p;
    struct sk_ring_group g;
    assert_int_equal(sk_ring_claim(q, -1, &p), SK_RING_END);
    assert_int_equal(sk_ring_wait(q, -1, &g), SK_RING_END);
    assert_int_equal(sk_ring_take(q, 0, -1, &g), SK_RING_END);
    sk_ring_free(q);
    struct shard_err err;
    assert_int_equal(sk_ring_new(&q, 10, 0, 4, &err), SHARD_EINVAL);
    assert_null(q);
    assert_int_equal(sk_ring_new(&q, 10, 4, 0, &err), SHARD_EINVAL);
    assert_int_equal(sk_ring_new(&q, 10, 1u << 20, 1u << 13, &err), SHARD_EINVAL);
    sk_ring_free(NULL);
}

/* The timeouts: "not yet" while a group is incomplete or the ring is full
 * (no timing is asserted, only what is returned), the group once its last
 * position is done; and holding every slot is refused instead of waiting
 * forever. */
static void test_a_timed_wait_says_not_yet_until_the_group_is_complete(void **state)
{
    (void)state;
    struct sk_ring *q;
    assert_int_equal(sk_ring_new(&q, 6, 2, 2, NULL), 0);
    struct sk_ring_group g;
    uint64_t a, b, c;
    assert_int_equal(sk_ring_wait(q, 0, &g), SK_RING_NOT_YET);
    assert_int_equal(sk_ring_claim(q, -1, &a), SK_RING_READY);
    assert_int_equal(sk_ring_claim(q, -1, &b), SK_RING_READY);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    sk_ring_done(q, b, 0); /* out of order: the group is still incomplete */
    assert_int_equal(sk_ring_wait(q, 10, &g), SK_RING_NOT_YET);
    sk_ring_done(q, a, 0);
    assert_int_equal(sk_ring_wait(q, 10, &g), SK_RING_READY);
    assert_int_equal(g.first, 0);
    assert_int_equal(g.len, 2);
    /* take group 1 as well without releasing group 0: two slots held */
    assert_int_equal(sk_ring_claim(q, -1, &a), SK_RING_READY);
    assert_int_equal(sk_ring_claim(q, -1, &b), SK_RING_READY);
    sk_ring_done(q, a, 0);
    sk_ring_done(q, b, 0);
    assert_int_equal(sk_ring_wait(q, -1, &g), SK_RING_READY);
    assert_int_equal(g.first, 2);
    /* the ring is full: a claim cannot have position 4 yet */
    assert_int_equal(sk_ring_claim(q, 0, &c), SK_RING_NOT_YET);
    assert_int_equal(sk_ring_claim(q, 10, &c), SK_RING_NOT_YET);
    /* group 2 needs slot 0 back: waiting for it now could never end */
    assert_int_equal(sk_ring_wait(q, -1, &g), SHARD_EINVAL);
    sk_ring_release(q); /* group 0 */
    assert_int_equal(sk_ring_claim(q, 0, &a), SK_RING_READY);
    assert_int_equal(a, 4);
    assert_int_equal(sk_ring_slot(q, a), 0);
    sk_ring_free(q);
}

struct blocked {
    struct sk_ring *q;
    int result;
    uint64_t p;
};

static void *wait_forever(void *arg)
{
    struct blocked *c = arg;
    struct sk_ring_group g;
    c->result = sk_ring_wait(c->q, -1, &g);
    return NULL;
}

static void *claim_forever(void *arg)
{
    struct blocked *c = arg;
    c->result = sk_ring_claim(c->q, -1, &c->p);
    return NULL;
}

/* Wait until someone sleeps in the ring: `sleeps` producers or consumers
 * have gone to sleep (counted under the ring's lock, just before the
 * sleep, which releases it: once the count shows, they are asleep). */
static void until_asleep(struct sk_ring *q, uint64_t producers, uint64_t consumers)
{
    struct sk_ring_counts n;
    for (;;) {
        sk_ring_counts(q, &n);
        if (n.producer_sleeps >= producers && n.consumer_sleeps >= consumers)
            return;
        usleep(1000);
    }
}

/* A consumer that stops mid-list: the ring is full (nothing released), so
 * producers block in their claims; or a group cannot complete (one of its
 * positions is slow: it waits at a gate), so the consumer blocks in its
 * wait.  Stop wakes them all; the slow producer may still finish its
 * position after the stop; then everything is joined and freed. */
static void test_stop_frees_blocked_producers_and_a_blocked_consumer(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct run r;
    run_init(&r, IN_ORDER, 10000, 2, 4);
    r.gate_pos = 9; /* in group 2 */
    pthread_t t[3];
    struct producer pr[3];
    start(&r, t, pr, 3);
    /* groups 0 and 1 fill the ring; the producers then block in their claims */
    while (atomic_load(&r.finished) < 2 * 4)
        sched_yield();
    struct sk_ring_group g;
    for (uint64_t k = 0; k < 2; k++) {
        assert_int_equal(sk_ring_wait(r.q, -1, &g), SK_RING_READY);
        assert_int_equal(g.first, k * 4);
        free_cells(&r, &g);
        sk_ring_release(r.q);
    }
    /* groups 2 and 3 are claimed; position 9 stays at the gate, so group 2
     * cannot complete, and the rest of the producers block again */
    while (!atomic_load(&r.at_gate) || atomic_load(&r.finished) < 4 * 4 - 1)
        sched_yield();
    assert_int_equal(sk_ring_wait(r.q, 0, &g), SK_RING_NOT_YET);
    struct sk_ring_counts before;
    sk_ring_counts(r.q, &before);
    struct blocked c = {r.q, -100, 0};
    pthread_t ct;
    assert_int_equal(pthread_create(&ct, NULL, wait_forever, &c), 0);
    until_asleep(r.q, 0, before.consumer_sleeps + 1);
    sk_ring_stop(r.q);
    pthread_join(ct, NULL);
    assert_int_equal(c.result, SK_RING_STOPPED);
    gate_open(&r); /* the slow position finishes after the stop */
    join(t, 3);
    uint64_t p;
    assert_int_equal(sk_ring_claim(r.q, -1, &p), SK_RING_STOPPED);
    assert_int_equal(sk_ring_wait(r.q, 0, &g), SK_RING_STOPPED);
    assert_int_equal(sk_ring_take(r.q, 5, 0, &g), SK_RING_STOPPED);
    assert_int_equal(atomic_load(&r.finished), 4 * 4);
    assert_false(atomic_load(&r.shared_cell));
    sk_ring_stop(r.q); /* idempotent */
    run_free(&r);
    alarm(0);
}

/* Closing an open-ended list: a consumer waiting for the group past the new
 * end and a producer blocked on the full ring both learn at once; a group
 * the close cuts short is complete with what is done; a close beyond the
 * end, or before a position already done, is refused. */
static void test_closing_an_open_list_ends_it_for_every_waiter(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct sk_ring *q;
    assert_int_equal(sk_ring_new(&q, SK_RING_OPEN, 2, 3, NULL), 0);
    uint64_t p[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(sk_ring_claim(q, 0, &p[i]), SK_RING_READY);
    for (int i = 0; i < 5; i++) /* position 5 is the one the source does not have */
        sk_ring_done(q, p[i], 0);
    struct sk_ring_group g;
    assert_int_equal(sk_ring_wait(q, 0, &g), SK_RING_READY);
    assert_int_equal(g.len, 3);
    sk_ring_release(q);
    /* group 2 (6..8) takes group 0's slot; then a producer waits for group
     * 1's slot (position 9), and the consumer for group 1 (3..5: 5 never
     * comes) */
    assert_int_equal(sk_ring_claim(q, 0, &p[0]), SK_RING_READY);
    assert_int_equal(p[0], 6);
    assert_int_equal(sk_ring_claim(q, 0, &p[0]), SK_RING_READY);
    assert_int_equal(sk_ring_claim(q, 0, &p[0]), SK_RING_READY);
    assert_int_equal(p[0], 8);
    struct blocked consumer = {q, -100, 0}, producer = {q, -100, 0};
    pthread_t ct, pt;
    assert_int_equal(pthread_create(&ct, NULL, wait_forever, &consumer), 0);
    assert_int_equal(pthread_create(&pt, NULL, claim_forever, &producer), 0);
    until_asleep(q, 1, 1);
    assert_int_equal(sk_ring_close(q, 4), SHARD_EINVAL); /* position 4 is done */
    assert_int_equal(sk_ring_close(q, 5), 0);
    pthread_join(ct, NULL);
    pthread_join(pt, NULL);
    assert_int_equal(consumer.result, SK_RING_READY); /* group 1 is 3..4 now */
    assert_int_equal(producer.result, SK_RING_END);
    assert_int_equal(sk_ring_rc(q, 3), 0);
    sk_ring_release(q);
    assert_int_equal(sk_ring_wait(q, -1, &g), SK_RING_END);
    assert_int_equal(sk_ring_close(q, 6), SHARD_EINVAL); /* beyond the end */
    assert_int_equal(sk_ring_close(q, 5), 0);            /* the same end again */
    sk_ring_free(q);
    alarm(0);
}

/* The consumer sleeps for its group only: positions done in later groups,
 * and in its own group before the last one, do not wake it; the last one
 * does, once. */
static void test_the_consumer_is_woken_once_when_its_group_is_complete(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    struct sk_ring *q;
    assert_int_equal(sk_ring_new(&q, 8, 2, 4, NULL), 0);
    uint64_t p;
    for (int i = 0; i < 8; i++)
        assert_int_equal(sk_ring_claim(q, 0, &p), SK_RING_READY);
    struct blocked c = {q, -100, 0};
    pthread_t ct;
    assert_int_equal(pthread_create(&ct, NULL, wait_forever, &c), 0);
    until_asleep(q, 0, 1);
    for (uint64_t i = 7; i >= 1; i--) /* group 1, then group 0 but its first */
        sk_ring_done(q, i, 0);
    usleep(20000); /* a wrong wake-up would have happened by now */
    sk_ring_done(q, 0, 0);
    pthread_join(ct, NULL);
    assert_int_equal(c.result, SK_RING_READY);
    struct sk_ring_counts n;
    sk_ring_counts(q, &n);
    assert_int_equal(n.consumer_sleeps, 1);
    assert_int_equal(n.consumer_idle_wakeups, 0);
    sk_ring_free(q);
    alarm(0);
}

/* Producers blocked on a full ring are woken one at a time: a release that
 * frees one position wakes one producer, not all of them (a herd woken for
 * one position costs every other producer a context switch).  Each release
 * signals at most once, so the producers that wake to find nothing are at
 * most one per release - and every position is still claimed. */
static void test_a_release_wakes_one_blocked_producer_not_all(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    enum { PRODUCERS = 8, COUNT = 400 };
    struct run r;
    run_init(&r, IN_ORDER, COUNT, 1, 1);
    pthread_t t[PRODUCERS];
    struct producer pr[PRODUCERS];
    start(&r, t, pr, PRODUCERS);
    until_asleep(r.q, PRODUCERS - 1, 0); /* all but the one with position 0 */
    consume_all(&r);
    join(t, PRODUCERS);
    struct sk_ring_counts n;
    sk_ring_counts(r.q, &n);
    assert_true(n.producer_idle_wakeups <= COUNT);
    run_free(&r);
    alarm(0);
}

/* ---- a random schedule on one thread -------------------------------------------- */

enum { P_IDLE, P_HOLDING, P_CONSUMING, P_FINISHED };
enum { S_UNCLAIMED, S_CLAIMED, S_DONE, S_TAKEN, S_RELEASED };
#define SIM_MAX_ACTORS 5

struct sim {
    struct sk_ring *q;
    uint64_t seed, rng;
    enum way way;
    uint64_t n; /* the list's length */
    int open;   /* the ring does not know n: a claim at n closes it */
    uint32_t depth, group;
    int producers, takers;
    uint32_t hold_limit; /* in order: groups the consumer holds at most */
    uint64_t stop_at;    /* the step at which the ring is stopped (or never) */
    int stopped;
    uint64_t *cell;       /* per cell: 1 + the position in it, 0: free */
    uint8_t *state;       /* per position */
    int *rc;              /* per position: what it was marked done with */
    uint64_t next_claim;  /* the position the next claim must give */
    uint64_t outstanding; /* positions claimed and not released */
    uint64_t next_group;  /* in order and in turn: the next group due */
    uint64_t taken;       /* positions taken */
    /* producers */
    int p_state[SIM_MAX_ACTORS];
    uint64_t p_pos[SIM_MAX_ACTORS];
    struct sk_ring_group p_group[SIM_MAX_ACTORS];
    /* the one consumer: the groups it holds, oldest first */
    uint64_t held[8];
    uint32_t held_len;
    int consumer_done;
    /* takers: taker j takes groups j, j + takers, ...; holds one at a time */
    uint64_t t_next[SIM_MAX_ACTORS];
    int t_holding[SIM_MAX_ACTORS];
    int t_done[SIM_MAX_ACTORS];
};

#define SIM_FAIL(s, ...)                                                                       \
    do {                                                                                       \
        print_error("schedule seed %llu (way %d, n %llu%s, depth %u, group %u, %d producers, " \
                    "%d takers): ",                                                            \
                    (unsigned long long)(s)->seed, (s)->way, (unsigned long long)(s)->n,       \
                    (s)->open ? " open" : "", (s)->depth, (s)->group, (s)->producers,          \
                    (s)->takers);                                                              \
        print_error(__VA_ARGS__);                                                              \
        print_error("\n");                                                                     \
        fail();                                                                                \
    } while (0)

#define SIM_CHECK(s, cond)            \
    do {                              \
        if (!(cond))                  \
            SIM_FAIL(s, "%s", #cond); \
    } while (0)

/* A group came out (group k, by any way): it is the right one, whole, done,
 * with its statuses; its positions are now taken. */
static void sim_took(struct sim *s, const struct sk_ring_group *g, uint64_t k)
{
    SIM_CHECK(s, !s->stopped);
    uint64_t first = k * s->group;
    SIM_CHECK(s, first < s->n);
    uint32_t len = s->n - first < s->group ? (uint32_t)(s->n - first) : s->group;
    SIM_CHECK(s, g->first == first);
    SIM_CHECK(s, g->len == len);
    SIM_CHECK(s, g->slot == k % s->depth);
    uint32_t failed = 0;
    for (uint64_t p = first; p < first + len; p++) {
        SIM_CHECK(s, s->state[p] == S_DONE);
        SIM_CHECK(s, s->cell[sk_ring_cell(s->q, p)] == p + 1);
        SIM_CHECK(s, sk_ring_rc(s->q, p) == s->rc[p]);
        failed += s->rc[p] != 0;
        s->state[p] = S_TAKEN;
        s->taken++;
    }
    SIM_CHECK(s, g->failed == failed);
}

/* Group k is given back: its cells are free. */
static void sim_released(struct sim *s, uint64_t k)
{
    uint64_t first = k * s->group;
    uint32_t len = s->n - first < s->group ? (uint32_t)(s->n - first) : s->group;
    for (uint64_t p = first; p < first + len; p++) {
        SIM_CHECK(s, s->state[p] == S_TAKEN);
        s->state[p] = S_RELEASED;
        s->cell[sk_ring_cell(s->q, p)] = 0;
        s->outstanding--;
    }
}

/* In turn: a group the role gave (w), or none. */
static void sim_in_turn(struct sim *s, int i, int w)
{
    if (w == SK_RING_READY) {
        SIM_CHECK(s, s->p_group[i].first == s->next_group * s->group);
        sim_took(s, &s->p_group[i], s->next_group++);
        s->p_state[i] = P_CONSUMING;
    } else {
        SIM_CHECK(s, w == SK_RING_NOT_YET || w == SK_RING_END || w == SK_RING_STOPPED);
        s->p_state[i] = P_IDLE;
    }
}

/* One step of producer i; 1 when something happened. */
static int sim_producer(struct sim *s, int i)
{
    uint64_t p;
    switch (s->p_state[i]) {
    case P_IDLE: {
        int w = sk_ring_claim(s->q, 0, &p);
        if (w == SK_RING_NOT_YET)
            return 0;
        if (w == SK_RING_END || w == SK_RING_STOPPED) {
            SIM_CHECK(s, w == SK_RING_STOPPED ? s->stopped : s->next_claim >= s->n);
            s->p_state[i] = P_FINISHED;
            return 1;
        }
        SIM_CHECK(s, w == SK_RING_READY);
        SIM_CHECK(s, !s->stopped);
        SIM_CHECK(s, p == s->next_claim); /* in order, each once */
        s->next_claim++;
        if (p >= s->n) { /* open: the source has nothing at p */
            SIM_CHECK(s, s->open && p == s->n);
            SIM_CHECK(s, sk_ring_close(s->q, p) == 0);
            if (s->way == IN_TURN)
                sim_in_turn(s, i, sk_ring_done_take(s->q, p, 0, &s->p_group[i]));
            return 1;
        }
        SIM_CHECK(s, s->state[p] == S_UNCLAIMED);
        SIM_CHECK(s, s->cell[sk_ring_cell(s->q, p)] == 0); /* no cell shared */
        SIM_CHECK(s, sk_ring_err(s->q, p)->code == 0);     /* cleared by the claim */
        s->cell[sk_ring_cell(s->q, p)] = p + 1;
        s->state[p] = S_CLAIMED;
        SIM_CHECK(s, ++s->outstanding <= (uint64_t)s->depth * s->group);
        s->p_pos[i] = p;
        s->p_state[i] = P_HOLDING;
        return 1;
    }
    case P_HOLDING: {
        p = s->p_pos[i];
        int rc = below(&s->rng, 5) == 0 ? SHARD_ECORRUPT : 0;
        if (rc)
            shard_err_set(sk_ring_err(s->q, p), rc, "bad %llu", (unsigned long long)p);
        s->rc[p] = rc;
        s->state[p] = S_DONE;
        if (s->way == IN_TURN) {
            sim_in_turn(s, i, sk_ring_done_take(s->q, p, rc, &s->p_group[i]));
        } else {
            sk_ring_done(s->q, p, rc);
            s->p_state[i] = P_IDLE;
        }
        return 1;
    }
    case P_CONSUMING:
        sim_released(s, s->next_group - 1);
        sim_in_turn(s, i, sk_ring_release_take(s->q, &s->p_group[i]));
        return 1;
    default: return 0;
    }
}

/* The one consumer gives back the oldest group it holds. */
static void sim_release_oldest(struct sim *s)
{
    sim_released(s, s->held[0]);
    memmove(s->held, s->held + 1, --s->held_len * sizeof *s->held);
    sk_ring_release(s->q);
}

/* One step of the one consumer. */
static int sim_consumer(struct sim *s)
{
    if (s->consumer_done)
        return 0;
    if (s->held_len == s->depth && !s->stopped && s->next_group < groups_of(s->n, s->group) &&
        below(&s->rng, 2)) { /* every slot held: the next group could never come */
        struct sk_ring_group g;
        SIM_CHECK(s, sk_ring_wait(s->q, 0, &g) == SHARD_EINVAL);
    }
    if (s->held_len && (s->held_len == s->hold_limit || below(&s->rng, 2))) {
        sim_release_oldest(s);
        return 1;
    }
    struct sk_ring_group g;
    int w = sk_ring_wait(s->q, 0, &g);
    if (w == SK_RING_NOT_YET && s->held_len) { /* release instead: the producers may need it */
        sim_release_oldest(s);
        return 1;
    }
    if (w == SK_RING_NOT_YET)
        return 0;
    if (w == SK_RING_END || w == SK_RING_STOPPED) {
        SIM_CHECK(s, w == SK_RING_STOPPED ? s->stopped : s->taken == s->n);
        if (s->held_len) /* give back what it holds first */
            sim_release_oldest(s);
        s->consumer_done = !s->held_len;
        return 1;
    }
    SIM_CHECK(s, w == SK_RING_READY);
    sim_took(s, &g, s->next_group);
    s->held[s->held_len++] = s->next_group++;
    return 1;
}

/* One step of taker j. */
static int sim_taker(struct sim *s, int j)
{
    if (s->t_done[j])
        return 0;
    uint64_t k = s->t_next[j];
    struct sk_ring_group g;
    if (s->t_holding[j]) {
        sim_released(s, k);
        sk_ring_release_group(s->q, k);
        s->t_holding[j] = 0;
        s->t_next[j] += (uint64_t)s->takers;
        if (!s->stopped && below(&s->rng, 4) == 0) /* again: a mistake */
            SIM_CHECK(s, sk_ring_take(s->q, k, 0, &g) == SHARD_EINVAL);
        return 1;
    }
    int w = sk_ring_take(s->q, k, 0, &g);
    if (w == SK_RING_NOT_YET)
        return 0;
    if (w == SK_RING_END || w == SK_RING_STOPPED) {
        SIM_CHECK(s, w == SK_RING_STOPPED ? s->stopped : k * s->group >= s->n);
        s->t_done[j] = 1;
        return 1;
    }
    if (w != SK_RING_READY)
        SIM_FAIL(s, "taker %d: group %llu: %d", j, (unsigned long long)k, w);
    sim_took(s, &g, k);
    s->t_holding[j] = 1;
    return 1;
}

static int sim_finished(const struct sim *s)
{
    for (int i = 0; i < s->producers; i++)
        if (s->p_state[i] != P_FINISHED)
            return 0;
    if (s->way == IN_ORDER)
        return s->consumer_done;
    if (s->way == BY_GROUP)
        for (int j = 0; j < s->takers; j++)
            if (!s->t_done[j])
                return 0;
    return 1;
}

/* Step actor a (producers first, then the consumer or the takers). */
static int sim_step(struct sim *s, int a)
{
    if (a < s->producers)
        return sim_producer(s, a);
    if (s->way == IN_ORDER)
        return sim_consumer(s);
    return sim_taker(s, a - s->producers);
}

static void sim_run(uint64_t seed)
{
    struct sim s;
    memset(&s, 0, sizeof s);
    s.seed = s.rng = seed;
    s.way = (enum way)(1 + below(&s.rng, 3));
    s.n = below(&s.rng, 4) == 0 ? below(&s.rng, 4) : below(&s.rng, 80);
    s.open = (int)below(&s.rng, 2);
    s.depth = 1 + (uint32_t)below(&s.rng, 5);
    s.group = 1 + (uint32_t)below(&s.rng, 4);
    s.producers = 1 + (int)below(&s.rng, SIM_MAX_ACTORS);
    s.takers = s.way == BY_GROUP ? 1 + (int)below(&s.rng, SIM_MAX_ACTORS) : 0;
    s.hold_limit = 1 + (uint32_t)below(&s.rng, s.depth);
    s.stop_at = below(&s.rng, 4) == 0 ? below(&s.rng, 4 * s.n + 4) : UINT64_MAX;
    assert_int_equal(sk_ring_new(&s.q, s.open ? SK_RING_OPEN : s.n, s.depth, s.group, NULL), 0);
    s.cell = calloc((size_t)s.depth * s.group, sizeof *s.cell);
    s.state = calloc(s.n + 1, 1);
    s.rc = calloc(s.n + 1, sizeof *s.rc);
    assert_non_null(s.cell);
    assert_non_null(s.state);
    assert_non_null(s.rc);
    for (int j = 0; j < s.takers; j++)
        s.t_next[j] = (uint64_t)j;
    int actors = s.producers + (s.way == IN_ORDER ? 1 : s.takers);
    for (uint64_t step = 0; !sim_finished(&s); step++) {
        if (step == s.stop_at) {
            sk_ring_stop(s.q);
            s.stopped = 1;
        }
        if (sim_step(&s, (int)below(&s.rng, (uint64_t)actors)))
            continue;
        /* nothing happened: does any actor have a move at all? */
        int moved = 0;
        for (int a = 0; a < actors && !moved; a++)
            moved = sim_step(&s, a);
        if (!moved)
            SIM_FAIL(&s, "deadlock at step %llu: %llu of %llu taken", (unsigned long long)step,
                     (unsigned long long)s.taken, (unsigned long long)s.n);
    }
    if (!s.stopped) { /* every position taken exactly once */
        SIM_CHECK(&s, s.taken == s.n);
        for (uint64_t p = 0; p < s.n; p++)
            SIM_CHECK(&s, s.state[p] == S_RELEASED);
        SIM_CHECK(&s, s.outstanding == 0);
    }
    sk_ring_free(s.q);
    free(s.cell);
    free(s.state);
    free(s.rc);
}

static void test_random_schedules_take_every_position_in_order_exactly_once(void **state)
{
    (void)state;
    alarm(HANG_SECONDS);
    for (uint64_t seed = 1; seed <= 5000; seed++)
        sim_run(seed);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_come_whole_and_in_order_from_any_number_of_producers),
        cmocka_unit_test(test_errors_stay_with_their_position),
        cmocka_unit_test(test_many_takers_take_each_group_once_in_any_order),
        cmocka_unit_test(test_producers_consume_in_turn_one_at_a_time_in_order),
        cmocka_unit_test(test_an_empty_list_ends_at_once),
        cmocka_unit_test(test_a_timed_wait_says_not_yet_until_the_group_is_complete),
        cmocka_unit_test(test_stop_frees_blocked_producers_and_a_blocked_consumer),
        cmocka_unit_test(test_closing_an_open_list_ends_it_for_every_waiter),
        cmocka_unit_test(test_the_consumer_is_woken_once_when_its_group_is_complete),
        cmocka_unit_test(test_a_release_wakes_one_blocked_producer_not_all),
        cmocka_unit_test(test_random_schedules_take_every_position_in_order_exactly_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
