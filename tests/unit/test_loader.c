/* test_loader.c - the batch loader and the transforms (shardkit/loader.h):
 * batches are the epoch plan in order, whatever the thread count and the
 * number of parts; a start at batch k repeats an uninterrupted run's later
 * batches byte for byte; batches outlive their loader; damaged samples fail
 * their batch or are skipped; bad transform lists are refused by name; float16
 * output rounds to nearest even; float32 planes hold each byte normalised. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "mkdataset.h"
#include "shardkit.h"

static const uint64_t counts[] = {9, 1, 0, 14, 7};
#define SHARDS (sizeof counts / sizeof *counts)
#define SAMPLES 31

static int setup(void **state)
{
    return mkds_setup_counts(state, counts, SHARDS);
}

static struct shard_loader *loader_ok(struct shard_dataset *ds, const struct shard_transforms *a,
                                      const struct shard_loader_options *o)
{
    struct shard_loader *l;
    struct shard_err err;
    if (shard_loader_new(&l, ds, a, o, &err))
        fail_msg("cannot make a loader: %s", err.msg);
    return l;
}

static struct shard_transforms *transforms_ok(const struct shard_transform_step *steps, size_t n,
                                              enum shard_layout layout, enum shard_dtype dtype)
{
    struct shard_transforms *a;
    struct shard_err err;
    if (shard_transforms_new(&a, steps, n, layout, dtype, &err))
        fail_msg("cannot make transforms: %s", err.msg);
    return a;
}

/* Every batch of epoch `epoch` from batch `first` on, as one hash per batch
 * (indices, labels, sizes and values); returns how many. */
static size_t epoch_hashes(struct shard_loader *l, uint64_t epoch, uint64_t first, uint64_t *out,
                           size_t cap)
{
    struct shard_err err;
    assert_int_equal(shard_loader_start(l, epoch, first, &err), 0);
    size_t n = 0;
    struct shard_batch *b;
    int rc;
    while ((rc = shard_loader_next(l, -1, &b, &err)) == 1) {
        const struct shard_batch_info *in = shard_batch_info(b);
        size_t value = shard_dtype_size(in->dtype);
        XXH3_state_t *h = XXH3_createState();
        XXH3_64bits_reset(h);
        XXH3_64bits_update(h, in->indices, in->count * sizeof *in->indices);
        XXH3_64bits_update(h, in->labels, in->count * sizeof *in->labels);
        for (uint32_t j = 0; j < in->count; j++)
            XXH3_64bits_update(h, in->samples[j],
                               (size_t)in->widths[j] * in->heights[j] * 3 * value);
        assert_true(n < cap);
        out[n++] = XXH3_64bits_digest(h);
        XXH3_freeState(h);
        shard_batch_free(b);
    }
    assert_int_equal(rc, 0);
    return n;
}

static void test_batches_are_the_plan_in_order_for_any_threads_and_workers(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_err err;
    static const int threads[] = {0, 1, 3};
    static const uint32_t sizes[] = {1, 4, 7, 40};
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < 4; s++)
            for (uint32_t workers = 1; workers <= 3; workers++)
                for (int drop = 0; drop <= 1; drop++) {
                    struct shard_loader_options o;
                    shard_loader_options_init(&o);
                    o.batch_size = sizes[s];
                    o.drop_last = drop;
                    o.threads = threads[t];
                    o.plan.seed = 3;
                    o.plan.epoch = 1; /* the plan of the epoch started below */
                    o.plan.shuffle_buffer = 5;
                    o.plan.rank = 1;
                    o.plan.world_size = 2;
                    struct shard_plan *plan;
                    assert_int_equal(shard_dataset_plan(ds, &o.plan, &plan, &err), 0);
                    const uint64_t *want = shard_plan_indices(plan);
                    uint64_t count = shard_plan_count(plan);
                    uint64_t visible = drop ? count / sizes[s] * sizes[s] : count;
                    uint64_t got[SAMPLES] = {0};
                    uint64_t total = 0;
                    for (uint32_t worker = 0; worker < workers; worker++) {
                        o.worker = worker;
                        o.workers = workers;
                        struct shard_loader *l = loader_ok(ds, NULL, &o);
                        assert_int_equal(shard_loader_start(l, 1, 0, &err), 0);
                        struct shard_batch *b;
                        uint64_t handed = 0;
                        while (shard_loader_next(l, -1, &b, &err) == 1) {
                            const struct shard_batch_info *in = shard_batch_info(b);
                            assert_int_equal(in->number % workers, worker);
                            assert_int_equal(in->epoch, 1);
                            assert_false(in->fixed);
                            for (uint32_t j = 0; j < in->count; j++) {
                                uint64_t pos = in->number * sizes[s] + j;
                                assert_true(pos < visible);
                                assert_int_equal(in->indices[j], want[pos]);
                                assert_int_equal(in->labels[j], mkds_label(want[pos]));
                                uint8_t px[MKDS_PIXEL_BYTES];
                                mkds_pixels(want[pos], px);
                                assert_memory_equal(in->samples[j], px, sizeof px);
                                got[pos]++;
                                total++;
                            }
                            handed++;
                            shard_batch_free(b);
                        }
                        assert_int_equal(handed, shard_loader_batch_count(l));
                        assert_int_equal(shard_loader_position(l), handed);
                        shard_loader_free(l);
                    }
                    assert_int_equal(total, visible);
                    for (uint64_t p = 0; p < visible; p++)
                        assert_int_equal(got[p], 1);
                    shard_plan_free(plan);
                }
    shard_dataset_close(ds);
}

static void train_steps(struct shard_transform_step *s)
{
    shard_transform_step_init(&s[0], SHARD_TRANSFORM_RANDOM_RESIZED_CROP);
    s[0].height = 2, s[0].width = 3;
    shard_transform_step_init(&s[1], SHARD_TRANSFORM_HORIZONTAL_FLIP);
    shard_transform_step_init(&s[2], SHARD_TRANSFORM_NORMALIZE);
    for (int c = 0; c < 3; c++)
        s[2].mean[c] = 0.5, s[2].std[c] = 0.25;
}

static void test_a_start_at_batch_k_repeats_the_uninterrupted_batches(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_transform_step steps[3];
    train_steps(steps);
    struct shard_transforms *a = transforms_ok(steps, 3, SHARD_LAYOUT_NCHW, SHARD_DTYPE_FLOAT32);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = 4;
    o.threads = 2;
    uint64_t whole[16], rest[16], again[16];
    struct shard_loader *l = loader_ok(ds, a, &o);
    size_t n = epoch_hashes(l, 5, 0, whole, 16);
    assert_int_equal(n, (SAMPLES + 3) / 4);
    assert_int_equal(n, shard_loader_batch_count(l));
    /* another epoch differs */
    assert_int_equal(epoch_hashes(l, 6, 0, again, 16), n);
    assert_memory_not_equal(whole, again, n * sizeof *whole);
    shard_loader_free(l);
    for (int threads = 0; threads <= 3; threads++)
        for (uint64_t k = 0; k <= n; k++) {
            o.threads = threads;
            l = loader_ok(ds, a, &o);
            assert_int_equal(epoch_hashes(l, 5, k, rest, 16), n - k);
            if (n > k)
                assert_memory_equal(rest, whole + k, (n - k) * sizeof *whole);
            shard_loader_free(l);
        }
    struct shard_err err;
    l = loader_ok(ds, a, &o);
    assert_int_equal(shard_loader_start(l, 0, n + 1, &err), SHARD_EINVAL);
    shard_loader_free(l);
    shard_transforms_free(a);
    shard_dataset_close(ds);
}

static void test_batches_outlive_their_loader_and_a_loader_stops_mid_epoch(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_transform_step steps[3];
    train_steps(steps);
    struct shard_transforms *a = transforms_ok(steps, 3, SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT16);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = 3;
    o.threads = 4;
    struct shard_err err;
    struct shard_batch *kept[2];
    struct shard_loader *l = loader_ok(ds, a, &o);
    assert_int_equal(shard_loader_start(l, 0, 0, &err), 0);
    assert_int_equal(shard_loader_next(l, -1, &kept[0], &err), 1);
    assert_int_equal(shard_loader_next(l, -1, &kept[1], &err), 1);
    const struct shard_batch_info *in = shard_batch_info(kept[1]);
    assert_true(in->fixed);
    assert_int_equal(in->width, 3);
    assert_int_equal(in->height, 2);
    assert_int_equal(in->number, 1);
    uint16_t copy[3 * 2 * 3 * 3];
    memcpy(copy, in->data, sizeof copy);
    shard_loader_stop(l);
    struct shard_batch *none;
    assert_int_equal(shard_loader_next(l, -1, &none, &err), SHARD_EINVAL);
    assert_null(none);
    shard_loader_free(l); /* mid-epoch, with batches out */
    assert_memory_equal(in->data, copy, sizeof copy);
    shard_batch_free(kept[0]);
    shard_batch_free(kept[1]);
    shard_batch_free(NULL);
    shard_loader_free(NULL);
    shard_transforms_free(a);
    shard_dataset_close(ds);
}

/* The offset of record r's frame in a shard of d. */
static uint64_t frame_offset(const struct mkds *d, const char *name, uint64_t r)
{
    char path[160];
    mkds_path(d, name, path, sizeof path);
    struct shard_file *f;
    struct shard_err err;
    if (shard_file_open(&f, path, &err))
        fail_msg("%s", err.msg);
    uint64_t off = shard_file_footer(f)->rows[r].offset;
    shard_file_close(f);
    return off;
}

static void test_a_damaged_sample_fails_its_batch_or_is_skipped(void **state)
{
    struct mkds *d = *state;
    uint64_t at = frame_offset(d, "shard-000003.shard", 4) + 9;
    mkds_flip(d, "shard-000003.shard", at);
    const uint64_t bad = 9 + 1 + 4;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_transform_step crop;
    shard_transform_step_init(&crop, SHARD_TRANSFORM_CENTER_CROP);
    crop.height = 2, crop.width = 2;
    struct shard_transforms *a = transforms_ok(&crop, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = 4;
    o.plan.shuffle = 0;
    struct shard_err err;
    char key[64], want[160];
    mkds_key(d, bad, key, sizeof key);
    snprintf(want, sizeof want, "shard-000003.shard record 4 (key '%s'): ", key);
    for (int skip = 0; skip <= 1; skip++) {
        o.skip_errors = skip;
        o.threads = 2;
        struct shard_loader *l = loader_ok(ds, a, &o);
        assert_int_equal(shard_loader_start(l, 0, 0, &err), 0);
        struct shard_batch *b;
        int rc;
        uint64_t seen = 0, failures = 0;
        while ((rc = shard_loader_next(l, -1, &b, &err)) != 0) {
            if (rc < 0) {
                assert_false(skip);
                assert_int_equal(rc, SHARD_ECORRUPT);
                assert_int_equal(shard_loader_failed_index(l), bad);
                assert_non_null(strstr(err.msg, want));
                assert_int_equal(shard_loader_position(l), bad / 4 + 1);
                failures++;
                continue;
            }
            const struct shard_batch_info *in = shard_batch_info(b);
            for (uint32_t j = 0; j < in->count; j++) {
                assert_int_not_equal(in->indices[j], bad);
                uint8_t px[MKDS_PIXEL_BYTES];
                mkds_pixels(in->indices[j], px);
                /* the centred 2x2 of a 4x3 image: rows 0-1 (round(0.5) = 0), columns 1-2 */
                assert_memory_equal((uint8_t *)in->samples[j], px + 3, 6);
                assert_memory_equal((uint8_t *)in->samples[j] + 6, px + 12 + 3, 6);
                assert_ptr_equal(in->samples[j], (uint8_t *)in->data + j * 12);
            }
            if (in->skipped) {
                assert_int_equal(in->skipped, 1);
                assert_int_equal(in->skipped_indices[0], bad);
                assert_non_null(strstr(in->skipped_errors[0].msg, want));
            }
            seen += in->count;
            shard_batch_free(b);
        }
        struct shard_loader_stats st;
        shard_loader_stats(l, &st);
        assert_int_equal(st.samples, seen);
        if (skip) {
            assert_int_equal(seen, SAMPLES - 1);
            assert_int_equal(st.skipped, 1);
        } else {
            assert_int_equal(failures, 1);
            assert_int_equal(st.failed_batches, 1);
            assert_int_equal(seen, SAMPLES - 4);
        }
        shard_loader_free(l);
    }
    shard_transforms_free(a);
    shard_dataset_close(ds);
    mkds_flip(d, "shard-000003.shard", at);
}

static void test_bad_transform_lists_and_options_are_refused_by_name(void **state)
{
    struct mkds *d = *state;
    struct shard_transform_step s[2];
    struct shard_transforms *a;
    struct shard_err err;
    shard_transform_step_init(&s[0], SHARD_TRANSFORM_NORMALIZE);
    s[0].std[1] = 0;
    assert_int_equal(shard_transforms_new(&a, s, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT32, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "std[1]"));
    s[0].std[1] = 1;
    assert_int_equal(shard_transforms_new(&a, s, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "float dtype"));
    shard_transform_step_init(&s[1], SHARD_TRANSFORM_CENTER_CROP);
    s[1].height = s[1].width = 2;
    assert_int_equal(shard_transforms_new(&a, s, 2, SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT32, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "step 1 (center_crop)"));
    shard_transform_step_init(&s[0], SHARD_TRANSFORM_RANDOM_RESIZED_CROP);
    s[0].height = s[0].width = 8;
    s[0].ratio[0] = 2, s[0].ratio[1] = 1;
    assert_int_equal(shard_transforms_new(&a, s, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "ratio"));
    s[0].ratio[0] = 0.5;
    s[0].width = 0;
    assert_int_equal(shard_transforms_new(&a, s, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "width"));

    struct shard_dataset *ds = mkds_open(d);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    struct shard_loader *l;
    o.batch_size = 0;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "batch_size"));
    o.batch_size = 2;
    o.plan.rank = 2;
    o.plan.world_size = 2;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "rank"));
    o.plan.rank = 0;
    o.worker = 3;
    o.workers = 3;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "worker 3 is outside 3 workers");
    shard_dataset_close(ds);
}

/* Batches of rank `rank` of two with the plan's own count of samples
 * (shard_dataset_plan, not the loader) under `remainder`. */
static uint64_t plan_batches(struct shard_dataset *ds, enum shard_remainder remainder,
                             uint32_t rank, uint32_t batch, int drop_last)
{
    struct shard_plan_options po;
    shard_plan_options_init(&po);
    po.remainder = remainder;
    po.rank = rank;
    po.world_size = 2;
    struct shard_plan *plan;
    struct shard_err err;
    assert_int_equal(shard_dataset_plan(ds, &po, &plan, &err), 0);
    uint64_t n = shard_plan_count(plan);
    shard_plan_free(plan);
    return n / batch + (n % batch && !drop_last);
}

/* Two ranks make the same number of batches, over datasets of 1..300
 * samples and batch sizes 1..17, with and without drop_last: by default
 * (pad) and with drop always; keep where the ranks' shares give the same
 * count, and where they would not, keep is refused, naming the counts. */
static void test_two_ranks_make_the_same_batch_count_or_are_refused(void **state)
{
    (void)state;
    for (uint64_t n = 1; n <= 300; n++) {
        const uint64_t one[] = {n};
        struct mkds_options mo = {0, -1, -1, 0, -1};
        struct mkds *d = mkds_new(one, 1, &mo);
        assert_non_null(d);
        struct shard_dataset *ds = mkds_open(d);
        for (uint32_t batch = 1; batch <= 17; batch++)
            for (int drop = 0; drop <= 1; drop++)
                for (int r = 0; r < 3; r++) {
                    uint64_t got[2] = {0, 0};
                    int refused = 0;
                    char msg[SHARD_ERRMSG_SIZE] = "";
                    for (uint32_t rank = 0; rank < 2; rank++) {
                        struct shard_loader_options o;
                        shard_loader_options_init(&o); /* r == 0: the default */
                        if (r == 1)
                            o.plan.remainder = SHARD_REMAINDER_DROP;
                        if (r == 2)
                            o.plan.remainder = SHARD_REMAINDER_KEEP;
                        o.batch_size = batch;
                        o.drop_last = drop;
                        o.threads = 0;
                        o.plan.rank = rank;
                        o.plan.world_size = 2;
                        struct shard_loader *l;
                        struct shard_err err;
                        if (shard_loader_new(&l, ds, NULL, &o, &err)) {
                            assert_int_equal(err.code, SHARD_EINVAL);
                            refused++;
                            snprintf(msg, sizeof msg, "%s", err.msg);
                            continue;
                        }
                        got[rank] = shard_loader_batch_count(l);
                        shard_loader_free(l);
                    }
                    uint64_t keep0 = plan_batches(ds, SHARD_REMAINDER_KEEP, 0, batch, drop);
                    uint64_t keep1 = plan_batches(ds, SHARD_REMAINDER_KEEP, 1, batch, drop);
                    if (r < 2 || keep0 == keep1) {
                        if (refused || got[0] != got[1])
                            fail_msg("%llu samples, batch %u, drop_last %d, remainder %d: "
                                     "%llu and %llu batches (%s)",
                                     (unsigned long long)n, batch, drop, r,
                                     (unsigned long long)got[0], (unsigned long long)got[1], msg);
                        continue;
                    }
                    assert_int_equal(refused, 2);
                    char said[128];
                    snprintf(said, sizeof said,
                             "are %llu batches on the ranks with %llu "
                             "samples and %llu on those with %llu",
                             (unsigned long long)(keep0 > keep1 ? keep0 : keep1),
                             (unsigned long long)((n + 1) / 2),
                             (unsigned long long)(keep0 > keep1 ? keep1 : keep0),
                             (unsigned long long)(n / 2));
                    if (!strstr(msg, said) || !strstr(msg, "remainder keep"))
                        fail_msg("'%s' does not say '%s'", msg, said);
                }
        shard_dataset_close(ds);
        mkds_free(d);
    }
}

/* One-pixel images through Normalize to float16: the bits. */
static uint16_t half_of(uint8_t x, double mean, double std)
{
    struct shard_transform_step s;
    shard_transform_step_init(&s, SHARD_TRANSFORM_NORMALIZE);
    for (int c = 0; c < 3; c++)
        s.mean[c] = mean, s.std[c] = std;
    struct shard_transforms *a = transforms_ok(&s, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_FLOAT16);
    uint8_t px[3] = {x, x, x};
    struct shard_image img = {px, 1, 1, 3, 3, 3, 0};
    struct shard_transforms_draws dr;
    struct shard_transforms_workspace *w;
    struct shard_err err;
    uint16_t out[3];
    assert_int_equal(shard_transforms_workspace_new(&w, &err), 0);
    assert_int_equal(shard_transforms_draw(a, 1, 1, 0, 0, 0, &dr, &err), 0);
    assert_int_equal(dr.out_bytes, sizeof out);
    assert_int_equal(shard_transforms_apply(a, &img, &dr, w, out, &err), 0);
    shard_transforms_workspace_free(w);
    shard_transforms_free(a);
    assert_int_equal(out[0], out[2]);
    return out[0];
}

static void test_float16_output_rounds_to_nearest_even(void **state)
{
    assert_int_equal(half_of(0, 0, 1), 0x0000);
    assert_int_equal(half_of(255, 0, 1), 0x3c00);           /* 1.0 */
    assert_int_equal(half_of(0, 1, 1), 0xbc00);             /* -1.0 */
    assert_int_equal(half_of(0, 0.5, 1), 0xb800);           /* -0.5 */
    assert_int_equal(half_of(255, 0, 1.0 / 65504), 0x7bff); /* the largest finite half */
    assert_int_equal(half_of(255, 0, 1.0 / 70000), 0x7c00); /* overflows to inf */
    assert_int_equal(half_of(255, 0, 16777216.0), 0x0001);  /* 2^-24: the smallest subnormal */
    assert_int_equal(half_of(255, 0, 33554432.0), 0x0000);  /* 2^-25: a tie, to even (0) */
    /* normal ties: 1 + 2^-11 -> 1.0, 1 + 3 * 2^-11 -> 1 + 2^-9 (even mantissas) */
    assert_int_equal(half_of(255, -ldexp(1, -11), 1), 0x3c00);
    assert_int_equal(half_of(255, -3 * ldexp(1, -11), 1), 0x3c02);
}

/* Normalize to float32 NCHW, mirrored (flip with p = 1) or not, on a row
 * wider than the writer's 16-pixel blocks and not a multiple of them: every
 * value is torchvision's img.float().div(255).sub(mean).div(std) of its own
 * pixel's byte, in float32, bit for bit. */
static void test_float32_planes_are_each_byte_normalised_in_its_place(void **state)
{
    (void)state;
    enum { W = 37, H = 3 };
    const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    uint8_t px[H][W][3];
    uint64_t r = 12345;
    for (size_t i = 0; i < sizeof px; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        ((uint8_t *)px)[i] = (uint8_t)(r >> 56);
    }
    struct shard_image img = {&px[0][0][0], W, H, 3, W * 3, sizeof px, 0};
    for (int mirror = 0; mirror < 2; mirror++) {
        struct shard_transform_step s[2];
        shard_transform_step_init(&s[0], SHARD_TRANSFORM_HORIZONTAL_FLIP);
        s[0].p = mirror;
        shard_transform_step_init(&s[1], SHARD_TRANSFORM_NORMALIZE);
        memcpy(s[1].mean, mean, sizeof mean);
        memcpy(s[1].std, std, sizeof std);
        struct shard_transforms *a = transforms_ok(s, 2, SHARD_LAYOUT_NCHW, SHARD_DTYPE_FLOAT32);
        struct shard_transforms_draws dr;
        struct shard_transforms_workspace *w;
        struct shard_err err;
        float out[3][H][W];
        assert_int_equal(shard_transforms_workspace_new(&w, &err), 0);
        assert_int_equal(shard_transforms_draw(a, W, H, 0, 0, 0, &dr, &err), 0);
        assert_int_equal(dr.out_bytes, sizeof out);
        assert_int_equal(shard_transforms_apply(a, &img, &dr, w, out, &err), 0);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float v = (float)px[y][mirror ? W - 1 - x : x][c] / 255.0f;
                    v = (v - (float)mean[c]) / (float)std[c];
                    if (memcmp(&v, &out[c][y][x], sizeof v))
                        fail_msg("mirror %d, channel %d, (%d, %d): %a, expected %a", mirror, c, x,
                                 y, out[c][y][x], v);
                }
        shard_transforms_workspace_free(w);
        shard_transforms_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_are_the_plan_in_order_for_any_threads_and_workers),
        cmocka_unit_test(test_a_start_at_batch_k_repeats_the_uninterrupted_batches),
        cmocka_unit_test(test_batches_outlive_their_loader_and_a_loader_stops_mid_epoch),
        cmocka_unit_test(test_a_damaged_sample_fails_its_batch_or_is_skipped),
        cmocka_unit_test(test_bad_transform_lists_and_options_are_refused_by_name),
        cmocka_unit_test(test_two_ranks_make_the_same_batch_count_or_are_refused),
        cmocka_unit_test(test_float16_output_rounds_to_nearest_even),
        cmocka_unit_test(test_float32_planes_are_each_byte_normalised_in_its_place),
    };
    return cmocka_run_group_tests(tests, setup, mkds_teardown);
}
