/* test_read_fields.c - reading fields (format version 2): items read from a
 * dataset, by index or by an iterator, carry every field as stored; a field
 * that contradicts the manifest, and a shard of the other format version,
 * are damage named by shard, record and key; the loader's batches carry the
 * selected fields (presence, stacked numbers, values with offsets) aligned
 * with their samples, also when damaged ones are skipped; a version 1
 * dataset reads as it always did.  Expected values come from mkdataset.h's
 * generator (mkds_field_value), never from another read. */
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

static const uint64_t counts[] = {9, 1, 0, 14, 7};
#define SHARDS (sizeof counts / sizeof *counts)
#define SAMPLES 31

static struct mkds *build(const struct mkds_options *o)
{
    struct mkds *d = mkds_new(counts, SHARDS, o);
    assert_non_null(d);
    return d;
}

static int setup(void **state)
{
    struct mkds_options o = mkds_fields_options();
    return mkds_setup_opts(state, counts, SHARDS, &o);
}

/* The fields sample g has, as mkds_field_value makes them, in field order:
 * the item must hold exactly these. */
static void assert_item_fields(const struct shard_item *it, uint64_t g)
{
    uint32_t n = 0;
    for (uint32_t f = 0; f < MKDS_FIELDS; f++) {
        uint8_t want[MKDS_VALUE_MAX];
        size_t len;
        if (!mkds_field_value(g, f, want, &len))
            continue;
        assert_true(n < it->field_count);
        const struct shard_field_value *v = &it->fields[n++];
        assert_int_equal(v->field, f);
        assert_int_equal(v->type, mkds_field_decls[f].type);
        assert_int_equal(v->len, len);
        if (len)
            assert_memory_equal(v->data, want, len);
        /* the values are the item's own copy, not the decoder's */
        assert_true(v->data >= it->field_data.data &&
                    v->data + v->len <= it->field_data.data + it->field_data.len);
    }
    assert_int_equal(it->field_count, n);
}

static void assert_pixels(const struct shard_item *it, uint64_t g)
{
    uint8_t px[MKDS_PIXEL_BYTES];
    mkds_pixels(g, px);
    assert_int_equal(it->index, g);
    assert_int_equal(it->label, mkds_label(g));
    assert_int_equal(it->pixels.width, MKDS_W);
    assert_memory_equal(it->pixels.pixels, px, sizeof px);
}

static void test_items_carry_every_field_as_stored(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    assert_int_equal(shard_dataset_manifest(ds)->version, 2);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    /* forwards, then backwards (the buffers grow and shrink their use) */
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < SAMPLES; i++) {
            uint64_t g = pass ? SAMPLES - 1 - i : i;
            /* the raw in-place read (the field area lies after the pixels) */
            assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err), 0);
            assert_pixels(&it, g);
            assert_item_fields(&it, g);
            /* the stored bytes: another path through the reader */
            assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_STORED, &it, &err), 0);
            assert_int_equal(it.stored.len, MKDS_PIXEL_BYTES);
            assert_item_fields(&it, g);
            /* fields left out on request, and none are stale from the last read */
            assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS | SHARD_READ_NO_FIELDS,
                                                &it, &err),
                             0);
            assert_pixels(&it, g);
            assert_int_equal(it.field_count, 0);
        }
    /* an empty caption is a value of 0 bytes, not an absent field */
    assert_int_equal(shard_dataset_read(ds, 14, SHARD_READ_PIXELS, &it, &err), 0);
    assert_int_equal(it.fields[0].field, MKDS_CAPTION);
    assert_int_equal(it.fields[0].len, 0);
    shard_item_release(&it);
    assert_null(it.fields);
    assert_int_equal(it.field_count, 0);
    assert_int_equal(it.field_data.cap, 0);
    shard_item_release(NULL);
    shard_dataset_close(ds);
}

static void test_iterator_items_carry_fields(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    uint64_t order[SAMPLES];
    for (uint64_t i = 0; i < SAMPLES; i++)
        order[i] = (i * 7) % SAMPLES; /* 7 is prime to 31: every sample once */
    struct shard_err err;
    for (int threads = 0; threads <= 3; threads += 3) {
        struct shard_iter_options o;
        shard_iter_options_init(&o);
        o.threads = threads;
        o.queue_depth = 2;
        struct shard_iter *iter;
        assert_int_equal(shard_iter_new(&iter, ds, order, SAMPLES, &o, &err), 0);
        struct shard_item it;
        memset(&it, 0, sizeof it);
        uint64_t n = 0;
        int rc;
        while ((rc = shard_iter_next(iter, &it, &err)) == 1) {
            assert_pixels(&it, order[n]);
            assert_item_fields(&it, order[n]);
            n++;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(n, SAMPLES);
        shard_iter_free(iter);
        shard_item_release(&it);
    }
    shard_dataset_close(ds);
}

static void test_a_version_1_dataset_reads_as_before(void **state)
{
    (void)state;
    struct mkds_options o = mkds_fields_options();
    o.fields = 0;
    struct mkds *d = build(&o);
    struct shard_dataset *ds = mkds_open(d);
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    assert_int_equal(m->version, 1);
    assert_int_equal(m->config.field_count, 0);
    /* the manifest has no version 2 member at all */
    size_t len;
    char *text = (char *)mkds_slurp(d, SHARD_MANIFEST_FILE, &len);
    text[len - 1] = '\0';
    assert_null(strstr(text, "fields"));
    assert_null(strstr(text, "orphans"));
    free(text);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    for (uint64_t g = 0; g < SAMPLES; g++) {
        assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err), 0);
        assert_pixels(&it, g);
        assert_int_equal(it.field_count, 0);
        assert_int_equal(it.field_data.len, 0);
    }
    shard_item_release(&it);
    shard_dataset_close(ds);
    mkds_free(d);
}

/* Read sample g of a dataset built with `damage` at g: SHARD_ECORRUPT
 * naming the record and saying `why`; the samples around it read. */
static void assert_damage_named(enum mkds_damage damage, uint64_t g, const char *why)
{
    struct mkds_options o = mkds_fields_options();
    o.damaged = (int64_t)g;
    o.damage = damage;
    struct mkds *d = build(&o);
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    uint32_t shard;
    uint64_t record;
    assert_int_equal(shard_dataset_locate(ds, g, &shard, &record, &err), 0);
    char key[64], want[200];
    mkds_key(d, g, key, sizeof key);
    snprintf(want, sizeof want, "shard-%06u.shard record %llu (key '%s'): %s", shard,
             (unsigned long long)record, key, why);
    assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err), SHARD_ECORRUPT);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_int_equal(it.field_count, 0);
    assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_STORED, &it, &err), SHARD_ECORRUPT);
    /* the neighbours are fine, and so is the sample read without its fields */
    assert_int_equal(shard_dataset_read(ds, g - 1, SHARD_READ_PIXELS, &it, &err), 0);
    assert_item_fields(&it, g - 1);
    assert_int_equal(shard_dataset_read(ds, g + 1, SHARD_READ_PIXELS, &it, &err), 0);
    assert_item_fields(&it, g + 1);
    assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS | SHARD_READ_NO_FIELDS, &it, &err),
                     0);
    assert_pixels(&it, g);
    shard_item_release(&it);
    shard_dataset_close(ds);
    mkds_free(d);
}

static void test_a_field_that_contradicts_the_manifest_is_damage_named(void **state)
{
    (void)state;
    /* sample 5 has a score (5 % 4 != 0), 6 an emb and two tags, 11 a list of one */
    assert_damage_named(MKDS_WRONG_TYPE, 5, "field 'score' is stored as float, declared int");
    assert_damage_named(MKDS_UNDECLARED, 12, "field 8 is not declared (the manifest declares 8)");
    assert_damage_named(MKDS_SHORT_VECTOR, 6, "field 'emb': 8 bytes are no float32[3]");
    assert_damage_named(MKDS_LABEL_OUT_OF_RANGE, 11, "field 'tags': label number 3 is not below 3");
    /* 6 % 3 != 1: it has a meta, cut short */
    assert_damage_named(MKDS_BAD_JSON, 6, "field 'meta': invalid JSON: line 1 column ");
}

static void test_a_shard_of_the_other_version_is_damage_named(void **state)
{
    (void)state;
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    for (int fields = 0; fields <= 1; fields++) {
        struct mkds_options o = mkds_fields_options();
        o.fields = fields;
        o.odd_shard = 3;
        struct mkds *d = build(&o);
        struct shard_dataset *ds = mkds_open(d);
        /* shard 3 holds samples 10..23 */
        assert_int_equal(shard_dataset_read(ds, 12, SHARD_READ_PIXELS, &it, &err), SHARD_ECORRUPT);
        const char *want = fields ? "shard-000003.shard: a version 1 shard in a version 2 dataset"
                                  : "shard-000003.shard: a version 2 shard in a version 1 dataset";
        if (!strstr(err.msg, want))
            fail_msg("message '%s' lacks '%s'", err.msg, want);
        /* whatever is read from it, fields or not */
        assert_int_equal(shard_dataset_read(ds, 10, SHARD_READ_STORED | SHARD_READ_NO_FIELDS, &it,
                                            &err),
                         SHARD_ECORRUPT);
        assert_non_null(strstr(err.msg, want));
        /* the other shards read */
        assert_int_equal(shard_dataset_read(ds, 9, SHARD_READ_PIXELS, &it, &err), 0);
        assert_pixels(&it, 9);
        assert_int_equal(shard_dataset_read(ds, 24, SHARD_READ_PIXELS, &it, &err), 0);
        assert_pixels(&it, 24);
        if (fields)
            assert_item_fields(&it, 24);
        else
            assert_int_equal(it.field_count, 0);
        shard_dataset_close(ds);
        mkds_free(d);
    }
    shard_item_release(&it);
}

/* ---- the loader ---------------------------------------------------------------------- */

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Row j of a batch's selected field bf against sample g's value. */
static void assert_batch_field(const struct shard_batch_field *bf, uint32_t j, uint64_t g)
{
    uint8_t want[MKDS_VALUE_MAX];
    size_t len;
    int has = mkds_field_value(g, bf->field, want, &len);
    assert_int_equal(bf->present[j], has);
    assert_int_equal(bf->type, mkds_field_decls[bf->field].type);
    switch (bf->type) {
    case SHARD_FIELD_INT:
    case SHARD_FIELD_INT64: {
        uint32_t n = bf->type == SHARD_FIELD_INT ? 1 : MKDS_IDS_LEN;
        assert_int_equal(bf->length, n);
        assert_null(bf->data);
        const int64_t *row = (const int64_t *)bf->values + (size_t)j * n;
        for (uint32_t k = 0; k < n; k++)
            assert_int_equal(row[k], has ? (int64_t)le(want + 8 * k, 8) : 0);
        break;
    }
    case SHARD_FIELD_FLOAT: {
        assert_int_equal(bf->length, 1);
        double v = ((const double *)bf->values)[j];
        assert_true(v == (has ? (double)g / 8 - 1 : 0.0));
        break;
    }
    case SHARD_FIELD_FLOAT32: {
        assert_int_equal(bf->length, MKDS_EMB_LEN);
        const float *row = (const float *)bf->values + (size_t)j * MKDS_EMB_LEN;
        float expect[MKDS_EMB_LEN] = {(float)g, -0.5f * (float)g, 1e-3f};
        for (uint32_t k = 0; k < MKDS_EMB_LEN; k++)
            assert_true(row[k] == (has ? expect[k] : 0.0f));
        break;
    }
    case SHARD_FIELD_LABELS: {
        assert_int_equal(bf->length, 0);
        assert_null(bf->values);
        uint64_t n = bf->offsets[j + 1] - bf->offsets[j];
        assert_int_equal(n, len);
        const uint32_t *labels = (const uint32_t *)(bf->data + bf->offsets[j]);
        for (uint64_t k = 0; k < n / 4; k++)
            assert_int_equal(labels[k], le(want + 4 * k, 4));
        break;
    }
    default: /* TEXT, JSON, BYTES: the stored bytes */
        assert_int_equal(bf->length, 0);
        assert_null(bf->values);
        assert_int_equal(bf->offsets[j + 1] - bf->offsets[j], len);
        if (len)
            assert_memory_equal(bf->data + bf->offsets[j], want, len);
        break;
    }
    if (!bf->length) /* the values lie back to back from the start */
        assert_int_equal(bf->offsets[0], 0);
}

static const uint32_t every_field[] = {MKDS_TAGS,   MKDS_CAPTION, MKDS_EMB,  MKDS_SCORE,
                                       MKDS_WEIGHT, MKDS_IDS,     MKDS_META, MKDS_BLOB};

/* Every batch of epoch 0 of a loader with options o (and transforms a),
 * checked field by field; returns the samples seen, and the skipped ones in
 * *skipped. */
static uint64_t check_epoch(struct shard_dataset *ds, const struct shard_transforms *a,
                            const struct shard_loader_options *o, uint64_t *skipped)
{
    struct shard_loader *l;
    struct shard_err err;
    if (shard_loader_new(&l, ds, a, o, &err))
        fail_msg("cannot make a loader: %s", err.msg);
    assert_int_equal(shard_loader_start(l, 0, 0, &err), 0);
    struct shard_batch *b;
    int rc;
    uint64_t seen = 0;
    *skipped = 0;
    while ((rc = shard_loader_next(l, -1, &b, &err)) == 1) {
        const struct shard_batch_info *in = shard_batch_info(b);
        assert_int_equal(in->field_count, o->field_count);
        for (uint32_t k = 0; k < in->field_count; k++) {
            assert_int_equal(in->fields[k].field, o->fields[k]);
            for (uint32_t j = 0; j < in->count; j++)
                assert_batch_field(&in->fields[k], j, in->indices[j]);
        }
        for (uint32_t j = 0; j < in->count; j++)
            assert_int_equal(in->labels[j], mkds_label(in->indices[j]));
        seen += in->count;
        *skipped += in->skipped;
        shard_batch_free(b);
    }
    if (rc)
        fail_msg("batch failed: %s", err.msg);
    shard_loader_free(l);
    return seen;
}

static void test_batches_carry_the_selected_fields(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_transform_step crop;
    shard_transform_step_init(&crop, SHARD_TRANSFORM_CENTER_CROP);
    crop.height = 2, crop.width = 2;
    struct shard_err err;
    struct shard_transforms *a;
    assert_int_equal(shard_transforms_new(&a, &crop, 1, SHARD_LAYOUT_NHWC, SHARD_DTYPE_UINT8, &err),
                     0);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = 4;
    o.fields = every_field;
    o.field_count = MKDS_FIELDS;
    uint64_t skipped;
    for (int threads = 0; threads <= 3; threads += 3) {
        o.threads = threads;
        /* a fixed output size, and samples of their own size (the stored pixels) */
        assert_int_equal(check_epoch(ds, a, &o, &skipped), SAMPLES);
        assert_int_equal(check_epoch(ds, NULL, &o, &skipped), SAMPLES);
    }
    /* a few fields, in another order; none at all */
    const uint32_t some[] = {MKDS_META, MKDS_SCORE};
    o.fields = some;
    o.field_count = 2;
    assert_int_equal(check_epoch(ds, a, &o, &skipped), SAMPLES);
    o.fields = NULL;
    o.field_count = 0;
    assert_int_equal(check_epoch(ds, a, &o, &skipped), SAMPLES);
    shard_transforms_free(a);
    shard_dataset_close(ds);
}

static void test_skipped_samples_leave_the_fields_aligned(void **state)
{
    (void)state;
    struct mkds_options mo = mkds_fields_options();
    mo.damaged = 5;
    mo.damage = MKDS_WRONG_TYPE;
    struct mkds *d = build(&mo);
    struct shard_dataset *ds = mkds_open(d);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    o.batch_size = 4;
    o.plan.shuffle = 0; /* sample 5 is the second of batch 1: the two after it move up */
    o.fields = every_field;
    o.field_count = MKDS_FIELDS;
    o.skip_errors = 1;
    uint64_t skipped;
    for (int threads = 0; threads <= 2; threads += 2) {
        o.threads = threads;
        assert_int_equal(check_epoch(ds, NULL, &o, &skipped), SAMPLES - 1);
        assert_int_equal(skipped, 1);
    }
    /* without skip_errors the batch fails, naming the sample */
    o.skip_errors = 0;
    struct shard_loader *l;
    struct shard_err err;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), 0);
    assert_int_equal(shard_loader_start(l, 0, 1, &err), 0);
    struct shard_batch *b;
    assert_int_equal(shard_loader_next(l, -1, &b, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "field 'score' is stored as float, declared int"));
    assert_int_equal(shard_loader_failed_index(l), 5);
    shard_loader_free(l);
    /* and a loader that carries no field does not read them: the sample is fine */
    o.fields = NULL;
    o.field_count = 0;
    assert_int_equal(check_epoch(ds, NULL, &o, &skipped), SAMPLES);
    shard_dataset_close(ds);
    mkds_free(d);

    /* a record is damaged whichever of its fields is: a JSON value that does
     * not parse fails a loader that carries only the caption */
    mo.damaged = 6;
    mo.damage = MKDS_BAD_JSON;
    d = build(&mo);
    ds = mkds_open(d);
    const uint32_t caption[] = {MKDS_CAPTION};
    o.fields = caption;
    o.field_count = 1;
    o.skip_errors = 1;
    assert_int_equal(check_epoch(ds, NULL, &o, &skipped), SAMPLES - 1);
    assert_int_equal(skipped, 1);
    shard_dataset_close(ds);
    mkds_free(d);
}

static void test_a_field_selection_is_checked(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_loader_options o;
    shard_loader_options_init(&o);
    struct shard_loader *l;
    struct shard_err err;
    const uint32_t beyond[] = {MKDS_CAPTION, MKDS_FIELDS};
    o.fields = beyond;
    o.field_count = 2;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_null(l);
    assert_string_equal(err.msg, "field 8 is not declared (the dataset declares 8)");
    const uint32_t twice[] = {MKDS_META, MKDS_CAPTION, MKDS_META};
    o.fields = twice;
    o.field_count = 3;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "field 1 ('meta') is selected twice");
    shard_dataset_close(ds);

    /* a version 1 dataset declares none */
    struct mkds_options mo = mkds_fields_options();
    mo.fields = 0;
    struct mkds *v1 = build(&mo);
    ds = mkds_open(v1);
    o.fields = beyond;
    o.field_count = 1;
    assert_int_equal(shard_loader_new(&l, ds, NULL, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "field 0 is not declared (the dataset declares 0)");
    shard_dataset_close(ds);
    mkds_free(v1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items_carry_every_field_as_stored),
        cmocka_unit_test(test_iterator_items_carry_fields),
        cmocka_unit_test(test_a_version_1_dataset_reads_as_before),
        cmocka_unit_test(test_a_field_that_contradicts_the_manifest_is_damage_named),
        cmocka_unit_test(test_a_shard_of_the_other_version_is_damage_named),
        cmocka_unit_test(test_batches_carry_the_selected_fields),
        cmocka_unit_test(test_skipped_samples_leave_the_fields_aligned),
        cmocka_unit_test(test_a_field_selection_is_checked),
    };
    return cmocka_run_group_tests(tests, setup, mkds_teardown);
}
