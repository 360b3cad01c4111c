/* test_read_memory.c - what a reader holds does not grow with the samples
 * it has read: an epoch (the iterator's, the loader's, with threads or
 * without) holds the footers of the few shards it is reading, not of every
 * shard it has read, and loads each shard's footer once; random reads keep
 * the footers no read holds within the dataset's budget; the key of a
 * sample copied out lets its footer go, the key pointed at keeps it.  The
 * footers are the part of a dataset's memory that grows with its records
 * (~40 bytes and the key each), so counting them holds the bound that
 * bench measures as RSS at 1M and 3M samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mkdataset.h"
#include "read/dataset_internal.h"
#include "shardkit.h"

#define SHARDS MKDS_MAX_SHARDS
#define PER_SHARD 30
#define SAMPLES (SHARDS * PER_SHARD)
/* Shards an epoch may hold at once: the one being read, the next, and the
 * one before while the readers' margin passes its end. */
#define EPOCH_SHARDS 4

static int setup(void **state)
{
    uint64_t counts[SHARDS];
    for (int s = 0; s < SHARDS; s++)
        counts[s] = PER_SHARD;
    return mkds_setup_counts(state, counts, SHARDS);
}

static struct sk_footer_stats footers(struct shard_dataset *ds)
{
    struct sk_footer_stats st;
    sk_dataset_footer_stats(ds, &st);
    return st;
}

/* The shuffled plan of epoch e, a small window (samples move little, as
 * with the default window of 1024 over shards of 250,000). */
static struct shard_plan *plan_of(struct shard_dataset *ds, uint64_t e)
{
    struct shard_plan_options po;
    shard_plan_options_init(&po);
    po.seed = 5;
    po.epoch = e;
    po.shuffle_buffer = 8;
    struct shard_plan *p;
    struct shard_err err;
    if (shard_dataset_plan(ds, &po, &p, &err))
        fail_msg("plan: %s", err.msg);
    return p;
}

static void test_an_iterator_epoch_holds_the_footers_of_the_shards_it_reads(void **state)
{
    const struct mkds *d = *state;
    const int threads[] = {0, 1, 3};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        struct shard_dataset *ds = mkds_open(d);
        for (uint64_t e = 0; e < 2; e++) {
            struct shard_plan *p = plan_of(ds, e);
            struct shard_iter_options io;
            shard_iter_options_init(&io);
            io.threads = threads[t];
            struct shard_iter *it;
            struct shard_err err;
            assert_int_equal(shard_iter_new(&it, ds, shard_plan_indices(p), shard_plan_count(p),
                                            &io, &err),
                             0);
            struct shard_item item = {0};
            uint64_t n = 0;
            int rc;
            while ((rc = shard_iter_next(it, &item, &err)) == 1) {
                assert_int_equal(item.index, shard_plan_indices(p)[n]);
                n++;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(n, SAMPLES);
            shard_item_release(&item);
            shard_iter_free(it);
            shard_plan_free(p);
            struct sk_footer_stats st = footers(ds);
            /* every shard read once per epoch, never more than a few at once */
            assert_int_equal(st.loads, SHARDS * (e + 1));
            if (st.loaded_peak > EPOCH_SHARDS)
                fail_msg("%d threads, epoch %llu: %u footers held at once", threads[t],
                         (unsigned long long)e, st.loaded_peak);
        }
        shard_dataset_close(ds);
    }
}

static void test_a_loader_epoch_holds_the_footers_of_the_shards_it_reads(void **state)
{
    const struct mkds *d = *state;
    const int threads[] = {0, 2};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        struct shard_dataset *ds = mkds_open(d);
        struct shard_loader_options o;
        shard_loader_options_init(&o);
        o.batch_size = 4;
        o.threads = threads[t];
        o.plan.seed = 9;
        o.plan.shuffle_buffer = 8;
        struct shard_loader *l;
        struct shard_err err;
        assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), 0);
        for (uint64_t e = 0; e < 2; e++) {
            assert_int_equal(shard_loader_start(l, e, 0, &err), 0);
            struct shard_batch *b;
            uint64_t batches = 0;
            int rc;
            while ((rc = shard_loader_next(l, -1, &b, &err)) == 1) {
                shard_batch_free(b);
                batches++;
            }
            assert_int_equal(rc, 0);
            assert_int_equal(batches, SAMPLES / 4);
            struct sk_footer_stats st = footers(ds);
            assert_int_equal(st.loads, SHARDS * (e + 1));
            if (st.loaded_peak > EPOCH_SHARDS)
                fail_msg("%d threads: %u footers held at once", threads[t], st.loaded_peak);
        }
        shard_loader_free(l);
        shard_dataset_close(ds);
    }
}

static void test_random_reads_keep_idle_footers_within_the_budget(void **state)
{
    const struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item item = {0};
    struct shard_err err;
    /* one footer's memory, to size the budget by */
    assert_int_equal(shard_dataset_read(ds, 0, SHARD_READ_STORED, &item, &err), 0);
    uint64_t one = footers(ds).bytes;
    assert_true(one > 0);
    sk_dataset_set_footer_budget(ds, 3 * one);
    uint64_t x = 88172645463325252ull; /* xorshift64: samples all over the dataset */
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t g = x % SAMPLES;
        assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_STORED, &item, &err), 0);
        char key[64];
        size_t len = mkds_key(d, g, key, sizeof key);
        assert_int_equal(item.index, g);
        assert_int_equal(item.key.len, len);
        assert_memory_equal(item.key.data, key, len);
    }
    struct sk_footer_stats st = footers(ds);
    assert_true(st.bytes <= 3 * one);
    assert_true(st.bytes_peak <= 4 * one); /* the budget, and the one a read holds */
    assert_true(st.loads > SHARDS);        /* footers were let go and read again */
    shard_item_release(&item);
    shard_dataset_close(ds);
}

static void test_a_copied_key_lets_its_footer_go_a_pointed_key_keeps_it(void **state)
{
    const struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_err err;
    struct shard_buf key = {0};
    assert_int_equal(shard_dataset_key_copy(ds, 0, &key, &err), 0);
    sk_dataset_set_footer_budget(ds, 0);
    for (uint64_t g = 0; g < SAMPLES; g++) {
        char want[64];
        size_t len = mkds_key(d, g, want, sizeof want);
        assert_int_equal(shard_dataset_key_copy(ds, g, &key, &err), 0);
        assert_int_equal(key.len, len);
        assert_memory_equal(key.data, want, len);
        assert_int_equal(key.data[len], '\0');
    }
    assert_int_equal(footers(ds).loaded, 0); /* none held, none idle within a budget of 0 */
    assert_int_equal(shard_dataset_key_copy(ds, SAMPLES, &key, &err), SHARD_ENOTFOUND);
    /* the pointer stays valid while every other footer comes and goes */
    const char *k0;
    size_t len0;
    assert_int_equal(shard_dataset_key(ds, 0, &k0, &len0, &err), 0);
    for (uint64_t g = PER_SHARD; g < SAMPLES; g++)
        assert_int_equal(shard_dataset_key_copy(ds, g, &key, &err), 0);
    char want[64];
    size_t len = mkds_key(d, 0, want, sizeof want);
    assert_int_equal(len0, len);
    assert_memory_equal(k0, want, len);
    assert_int_equal(footers(ds).loaded, 1);
    shard_buf_release(&key);
    shard_dataset_close(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_iterator_epoch_holds_the_footers_of_the_shards_it_reads),
        cmocka_unit_test(test_a_loader_epoch_holds_the_footers_of_the_shards_it_reads),
        cmocka_unit_test(test_random_reads_keep_idle_footers_within_the_budget),
        cmocka_unit_test(test_a_copied_key_lets_its_footer_go_a_pointed_key_keeps_it),
    };
    return cmocka_run_group_tests(tests, setup, mkds_teardown);
}
