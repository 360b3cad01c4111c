/* test_loader_resume.c - the loader on what is left of an epoch and on
 * mixtures (shardkit/loader.h): a resumed start reads its rank's plan of
 * the rest (shard_dataset_plan_resumed) in batches, from any batch and
 * with any number of workers; remainder keep whose new ranks would make
 * different batch counts is refused naming them; a mixture's loader reads
 * the mixture's plan, each sample from its source (pixels, label, index),
 * and refuses fields. */
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

static const uint64_t counts_a[] = {9, 1, 0, 14, 7}; /* 31 samples */
static const uint64_t counts_b[] = {12, 5};          /* 17 samples */

struct fixture {
    struct mkds *a, *b;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct mkds_options o = {0, -1, -1, 0, -1};
    f->a = mkds_new(counts_a, 5, &o);
    f->b = mkds_new(counts_b, 2, &o);
    *state = f;
    return f->a && f->b ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    mkds_free(f->a);
    mkds_free(f->b);
    free(f);
    return 0;
}

static struct shard_loader_options options(uint32_t batch, uint32_t rank, uint32_t world,
                                           enum shard_remainder rem)
{
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = batch;
    o.threads = 2;
    o.plan.seed = 17;
    o.plan.shuffle_buffer = 5;
    o.plan.rank = rank;
    o.plan.world_size = world;
    o.plan.remainder = rem;
    return o;
}

/* Every batch a started loader makes: its number, then its (source,
 * index) pairs, appended to out (room for cap values); how many values. */
static size_t drain(struct shard_loader *l, uint64_t *out, size_t cap)
{
    struct shard_batch *b;
    struct shard_err err;
    size_t n = 0;
    int rc;
    while ((rc = shard_loader_next(l, -1, &b, &err)) == 1) {
        const struct shard_batch_info *in = shard_batch_info(b);
        assert_true(n + 1 + in->count <= cap);
        out[n++] = in->number;
        for (uint32_t j = 0; j < in->count; j++)
            out[n++] = (uint64_t)in->sources[j] << 48 | in->indices[j];
        shard_batch_free(b);
    }
    if (rc)
        fail_msg("next: %s", err.msg);
    return n;
}

/* The batches of a plan from batch `from` on, as drain lays them out. */
static size_t plan_batches(const struct shard_plan *p, uint32_t batch, uint64_t from, uint64_t *out)
{
    size_t n = 0;
    const uint64_t count = shard_plan_count(p);
    for (uint64_t b = from; b * batch < count; b++) {
        out[n++] = b;
        for (uint64_t i = b * batch; i < count && i < (b + 1) * batch; i++)
            out[n++] = shard_plan_indices(p)[i];
    }
    return n;
}

static void test_a_resumed_start_reads_its_rank_s_plan_of_the_rest(void **state)
{
    struct fixture *f = *state;
    struct shard_dataset *ds = mkds_open(f->a);
    uint64_t got[256], want[256];
    const uint32_t worlds[] = {1, 2, 3};
    for (size_t a = 0; a < 3; a++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t taken = 0; taken <= 12; taken += 4)
                for (uint32_t r = 0; r < worlds[b]; r++) {
                    const struct shard_plan_segment done[] = {
                        {worlds[a], taken, SHARD_REMAINDER_PAD}};
                    struct shard_loader_options o = options(3, r, worlds[b], SHARD_REMAINDER_PAD);
                    struct shard_plan *p;
                    struct shard_err err;
                    assert_int_equal(shard_dataset_plan_resumed(ds, &o.plan, done, 1, &p, &err), 0);
                    size_t nw = plan_batches(p, 3, 0, want);
                    struct shard_loader *l;
                    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), 0);
                    uint64_t batches;
                    assert_int_equal(shard_loader_resumed_batch_count(l, 0, done, 1, &batches,
                                                                      &err),
                                     0);
                    assert_int_equal(batches, (shard_plan_count(p) + 2) / 3);
                    assert_int_equal(shard_loader_start_resumed(l, 0, done, 1, 0, &err), 0);
                    assert_int_equal(shard_loader_started_batch_count(l), batches);
                    size_t ng = drain(l, got, 256);
                    assert_int_equal(ng, nw);
                    assert_memory_equal(got, want, nw * sizeof *got);
                    assert_int_equal(shard_loader_position(l), batches);
                    shard_loader_free(l);
                    shard_plan_free(p);
                }
    shard_dataset_close(ds);
}

/* From batch `from` of the rest, workers 0..n-1 make batches from + k,
 * from + k + n, ...: together, in number order, the plan's batches from
 * `from` on, whatever n. */
static void test_a_resumed_start_splits_its_batches_among_any_number_of_workers(void **state)
{
    struct fixture *f = *state;
    struct shard_dataset *ds = mkds_open(f->a);
    const struct shard_plan_segment done[] = {{3, 2, SHARD_REMAINDER_DROP}};
    enum { BATCH = 2, MOST = 32 };
    for (uint32_t workers = 1; workers <= 4; workers++)
        for (uint64_t from = 0; from <= 5; from++) {
            struct shard_loader_options o = options(BATCH, 1, 2, SHARD_REMAINDER_DROP);
            struct shard_plan *p;
            struct shard_err err;
            assert_int_equal(shard_dataset_plan_resumed(ds, &o.plan, done, 1, &p, &err), 0);
            uint64_t want[256], all[256], slot[MOST][1 + BATCH], made[MOST] = {0};
            const uint64_t batches = (shard_plan_count(p) + BATCH - 1) / BATCH;
            size_t nw = plan_batches(p, BATCH, from, want), na = 0;
            for (uint32_t k = 0; k < workers; k++) {
                o.worker = k;
                o.workers = workers;
                struct shard_loader *l;
                struct shard_batch *b;
                assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), 0);
                assert_int_equal(shard_loader_start_resumed(l, 0, done, 1, from, &err), 0);
                while (shard_loader_next(l, -1, &b, &err) == 1) {
                    const struct shard_batch_info *in = shard_batch_info(b);
                    assert_int_equal((in->number - from) % workers, k);
                    assert_true(in->number < MOST && !made[in->number]);
                    made[in->number] = 1 + in->count;
                    slot[in->number][0] = in->number;
                    memcpy(slot[in->number] + 1, in->indices, in->count * sizeof *in->indices);
                    shard_batch_free(b);
                }
                shard_loader_free(l);
            }
            for (uint64_t b = from; b < batches; b++) {
                assert_true(made[b]);
                memcpy(all + na, slot[b], made[b] * sizeof *all);
                na += made[b];
            }
            assert_int_equal(na, nw);
            assert_memory_equal(all, want, nw * sizeof *all);
            shard_plan_free(p);
        }
    shard_dataset_close(ds);
}

static void test_keep_whose_new_ranks_would_differ_is_refused_naming_the_counts(void **state)
{
    struct fixture *f = *state;
    struct shard_dataset *ds = mkds_open(f->a);
    /* 31 samples over 2 ranks in batches of 2: 8 and 8; after one rank took
     * 2, 29 are left: 15 and 14 samples, 8 and 7 batches */
    struct shard_loader_options o = options(2, 0, 2, SHARD_REMAINDER_KEEP);
    struct shard_loader *l;
    struct shard_err err;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), 0);
    const struct shard_plan_segment done[] = {{1, 2, SHARD_REMAINDER_KEEP}};
    uint64_t batches = 99;
    assert_int_equal(shard_loader_resumed_batch_count(l, 0, done, 1, &batches, &err), SHARD_EINVAL);
    assert_int_equal(batches, 99);
    assert_string_equal(err.msg,
                        "remainder keep gives the 2 ranks unequal batch counts: 29 samples left "
                        "of the epoch in batches of 2 are 8 batches on the ranks with 15 samples "
                        "and 7 on those with 14, so a distributed loop would hang: use remainder "
                        "pad or drop");
    assert_int_equal(shard_loader_start_resumed(l, 0, done, 1, 0, &err), SHARD_EINVAL);
    struct shard_batch *b;
    assert_int_equal(shard_loader_next(l, -1, &b, &err), SHARD_EINVAL); /* nothing started */
    /* 27 left: 14 and 13, 7 batches each */
    const struct shard_plan_segment two[] = {{1, 4, SHARD_REMAINDER_KEEP}};
    assert_int_equal(shard_loader_start_resumed(l, 0, two, 1, 8, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "batch 8 is beyond the 7 of the epoch");
    assert_int_equal(shard_loader_start_resumed(l, 0, two, 1, 7, &err), 0);
    assert_int_equal(shard_loader_next(l, -1, &b, &err), 0);
    shard_loader_free(l);
    shard_dataset_close(ds);
}

static void test_a_mixture_s_loader_reads_each_sample_from_its_source(void **state)
{
    struct fixture *f = *state;
    struct shard_dataset *src[2] = {mkds_open(f->a), mkds_open(f->b)};
    const double w[2] = {0.3, 0.7};
    struct shard_mixture_options mo;
    shard_mixture_options_init(&mo);
    mo.epoch_size = 60;
    mo.labels = SHARD_MIXTURE_LABELS_MERGED;
    struct shard_mixture *m;
    struct shard_err err;
    assert_int_equal(shard_mixture_new(&m, src, w, 2, &mo, &err), 0);
    for (uint32_t rank = 0; rank < 2; rank++) {
        struct shard_loader_options o = options(7, rank, 2, SHARD_REMAINDER_PAD);
        struct shard_plan *p;
        assert_int_equal(shard_mixture_plan(m, &o.plan, &p, &err), 0);
        struct shard_loader *l;
        assert_int_equal(shard_loader_new_mixture(&l, m, NULL, &o, &err), 0);
        assert_int_equal(shard_loader_batch_count(l), 5); /* 30 in batches of 7 */
        assert_int_equal(shard_loader_start(l, 0, 0, &err), 0);
        struct shard_batch *b;
        uint64_t at = 0;
        struct shard_item item = {0};
        while (shard_loader_next(l, -1, &b, &err) == 1) {
            const struct shard_batch_info *in = shard_batch_info(b);
            for (uint32_t j = 0; j < in->count; j++, at++) {
                uint32_t s;
                uint64_t i;
                assert_int_equal(shard_mixture_locate(m, shard_plan_indices(p)[at], &s, &i, &err),
                                 0);
                assert_int_equal(in->sources[j], s);
                assert_int_equal(in->indices[j], i);
                assert_int_equal(shard_dataset_read(src[s], i, SHARD_READ_PIXELS, &item, &err), 0);
                assert_int_equal(in->labels[j], shard_mixture_label_of(m, s, item.label));
                assert_memory_equal(in->samples[j], item.pixels.pixels, MKDS_PIXEL_BYTES);
            }
            shard_batch_free(b);
        }
        assert_int_equal(at, shard_plan_count(p));
        shard_item_release(&item);
        shard_loader_free(l);
        shard_plan_free(p);
    }
    /* fields are refused */
    struct shard_loader_options o = options(7, 0, 1, SHARD_REMAINDER_KEEP);
    const uint32_t field = 0;
    o.fields = &field;
    o.field_count = 1;
    struct shard_loader *l;
    assert_int_equal(shard_loader_new_mixture(&l, m, NULL, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "a mixture's loader carries no fields"));
    shard_mixture_free(m);
    shard_dataset_close(src[0]);
    shard_dataset_close(src[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_resumed_start_reads_its_rank_s_plan_of_the_rest),
        cmocka_unit_test(test_a_resumed_start_splits_its_batches_among_any_number_of_workers),
        cmocka_unit_test(test_keep_whose_new_ranks_would_differ_is_refused_naming_the_counts),
        cmocka_unit_test(test_a_mixture_s_loader_reads_each_sample_from_its_source),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
