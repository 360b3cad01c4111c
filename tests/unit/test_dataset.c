/* test_dataset.c - the reader: opening a dataset, locating and reading
 * samples through the footer index, stored-order reads equal index.jsonl,
 * the prefetching iterator yields exactly the plan's order with any number
 * of threads, damage is reported by shard, record and key, and an observer
 * given in the options sees every read's spans on the thread that did it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mkdataset.h"
#include "shardkit.h"

static const uint64_t counts[] = {5, 1, 0, 12, 7};
#define SHARDS (sizeof counts / sizeof *counts)
#define SAMPLES 25

static int setup(void **state)
{
    return mkds_setup_counts(state, counts, SHARDS);
}

/* An iterator over every sample in stored order, with `threads` workers. */
static struct shard_iter *iter_all(struct shard_dataset *ds, int threads)
{
    uint64_t all[SAMPLES];
    for (uint64_t i = 0; i < SAMPLES; i++)
        all[i] = i;
    struct shard_iter_options o;
    shard_iter_options_init(&o);
    o.threads = threads;
    struct shard_iter *iter;
    struct shard_err err;
    if (shard_iter_new(&iter, ds, all, SAMPLES, &o, &err))
        fail_msg("cannot start an iterator: %s", err.msg);
    return iter;
}

/* The read sample is sample g as mkdataset made it. */
static void assert_sample(const struct mkds *d, const struct shard_item *it, uint64_t g)
{
    char key[64];
    size_t len = mkds_key(d, g, key, sizeof key);
    uint8_t px[MKDS_PIXEL_BYTES];
    mkds_pixels(g, px);
    assert_int_equal(it->index, g);
    assert_int_equal(it->key.len, len);
    assert_memory_equal(it->key.data, key, len);
    assert_int_equal(it->key.data[len], '\0');
    assert_int_equal(it->label, mkds_label(g));
    assert_int_equal(it->width, MKDS_W);
    assert_int_equal(it->height, MKDS_H);
    assert_int_equal(it->channels, 3);
    assert_int_equal(it->pixels.width, MKDS_W);
    assert_int_equal(it->pixels.height, MKDS_H);
    assert_memory_equal(it->pixels.pixels, px, sizeof px);
}

static void test_open_reads_the_manifest_and_locates_every_sample(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_err err;
    assert_int_equal(shard_dataset_size(ds), SAMPLES);
    assert_int_equal(shard_dataset_shard_count(ds), SHARDS);
    assert_int_equal(shard_dataset_manifest(ds)->samples, SAMPLES);
    uint64_t g = 0;
    for (uint32_t s = 0; s < SHARDS; s++)
        for (uint64_t r = 0; r < counts[s]; r++, g++) {
            uint32_t shard;
            uint64_t record, index;
            assert_int_equal(shard_dataset_locate(ds, g, &shard, &record, &err), 0);
            assert_int_equal(shard, s);
            assert_int_equal(record, r);
            assert_int_equal(shard_dataset_index_of(ds, s, r, &index, &err), 0);
            assert_int_equal(index, g);
        }
    uint32_t shard;
    uint64_t record, index;
    assert_int_equal(shard_dataset_locate(ds, SAMPLES, &shard, &record, &err), SHARD_ENOTFOUND);
    assert_int_equal(shard_dataset_index_of(ds, 2, 0, &index, &err), SHARD_ENOTFOUND);
    shard_dataset_close(ds);
    shard_dataset_close(NULL);
}

static void test_read_by_index_gives_pixels_stored_bytes_key_and_label(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    /* backwards, so shards are opened out of order */
    for (uint64_t g = SAMPLES; g-- > 0;) {
        assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS | SHARD_READ_STORED, &it,
                                            &err),
                         0);
        assert_sample(d, &it, g);
        assert_int_equal(it.codec, SHARD_CODEC_RAW);
        assert_int_equal(it.stored.len, MKDS_PIXEL_BYTES);
        assert_memory_equal(it.stored.data, it.pixels.pixels, MKDS_PIXEL_BYTES);
    }
    /* by (shard, record); stored bytes only */
    assert_int_equal(shard_dataset_read_record(ds, 3, 4, SHARD_READ_STORED, &it, &err), 0);
    assert_int_equal(it.index, 5 + 1 + 4);
    assert_int_equal(it.pixels.width, 0);
    assert_int_equal(it.stored.len, MKDS_PIXEL_BYTES);
    assert_int_equal(shard_dataset_read(ds, SAMPLES, SHARD_READ_PIXELS, &it, &err),
                     SHARD_ENOTFOUND);
    assert_int_equal(shard_dataset_read_record(ds, 1, 1, SHARD_READ_PIXELS, &it, &err),
                     SHARD_ENOTFOUND);
    shard_item_release(&it);
    shard_item_release(NULL);
    shard_dataset_close(ds);
}

/* A pixels-only read of a raw record leaves the pixels where the record was
 * decompressed, inside the item's buffer (pixels.offset bytes in: the record
 * header and key), and that image stays usable by every other path: further
 * raw reads with other key lengths, a decode of a different size into it, a
 * copying read, and release (the sanitizer build checks the frees). */
static void test_raw_pixels_are_read_in_place_and_the_item_stays_reusable(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < SAMPLES; i++) {
            uint64_t g = pass ? SAMPLES - 1 - i : i;
            assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err), 0);
            assert_sample(d, &it, g);
            char key[64];
            assert_int_equal(it.pixels.offset,
                             SHARD_RECORD_HEADER_BYTES + mkds_key(d, g, key, sizeof key));
            assert_true(it.pixels.capacity >= MKDS_PIXEL_BYTES);
            assert_int_equal(it.pixels.stride, MKDS_W * 3);
        }

    /* decodes into the placed image: one that fits, one that does not */
    uint32_t sides[][2] = {{2, 2}, {40, 30}};
    for (size_t k = 0; k < 2; k++) {
        struct shard_image src = {0};
        struct shard_buf png = {0};
        assert_int_equal(shard_image_alloc(&src, sides[k][0], sides[k][1], 3, &err), 0);
        for (size_t b = 0; b < (size_t)sides[k][0] * sides[k][1] * 3; b++)
            src.pixels[b] = (uint8_t)(b * 7);
        assert_int_equal(shard_encode(&src, SHARD_CODEC_PNG, 90, &png, &err), 0);
        assert_int_equal(shard_dataset_read(ds, 3, SHARD_READ_PIXELS, &it, &err), 0);
        assert_int_not_equal(it.pixels.offset, 0);
        assert_int_equal(shard_decode_payload(SHARD_CODEC_PNG, png.data, png.len, sides[k][0],
                                              sides[k][1], &it.pixels, &err),
                         0);
        assert_int_equal(it.pixels.width, sides[k][0]);
        assert_memory_equal(it.pixels.pixels, src.pixels, (size_t)sides[k][0] * sides[k][1] * 3);
        shard_buf_release(&png);
        shard_image_release(&src);
        /* and raw reads go on in whatever buffer that left */
        assert_int_equal(shard_dataset_read(ds, 7, SHARD_READ_PIXELS, &it, &err), 0);
        assert_sample(d, &it, 7);
    }

    /* a read that also copies the stored bytes decodes by copying */
    assert_int_equal(shard_dataset_read(ds, 9, SHARD_READ_PIXELS | SHARD_READ_STORED, &it, &err),
                     0);
    assert_sample(d, &it, 9);
    assert_memory_equal(it.stored.data, it.pixels.pixels, MKDS_PIXEL_BYTES);
    assert_int_equal(shard_dataset_read(ds, 10, SHARD_READ_PIXELS, &it, &err), 0);
    assert_sample(d, &it, 10);
    shard_item_release(&it);
    assert_null(it.pixels.pixels);
    assert_int_equal(it.pixels.offset, 0);
    shard_dataset_close(ds);
}

static void test_stored_order_reads_equal_index_jsonl(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    char path[160];
    mkds_path(d, SHARD_INDEX_FILE, path, sizeof path);
    struct shard_index_reader *rd;
    struct shard_err err;
    assert_int_equal(shard_index_reader_open(&rd, path, &err), 0);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_sample s;
    uint64_t g = 0;
    while (shard_index_reader_next(rd, &s, &err) == 1) {
        assert_int_equal(shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err), 0);
        assert_int_equal(it.key.len, s.key_len);
        assert_memory_equal(it.key.data, s.key, s.key_len);
        assert_int_equal(it.label, s.label);
        assert_int_equal(it.shard, s.shard);
        assert_int_equal(it.record, s.record);
        assert_int_equal(it.width, s.width);
        assert_int_equal(it.height, s.height);
        g++;
    }
    assert_int_equal(g, SAMPLES);
    shard_index_reader_close(rd);
    shard_item_release(&it);
    shard_dataset_close(ds);
}

/* Iterate `indices` with the given threads and depth; every item must be
 * the one the list names, in order. */
static void iterate_and_check(const struct mkds *d, struct shard_dataset *ds,
                              const uint64_t *indices, uint64_t n, int threads, uint32_t depth)
{
    struct shard_iter_options o;
    shard_iter_options_init(&o);
    o.threads = threads;
    o.queue_depth = depth;
    struct shard_iter *it;
    struct shard_err err;
    assert_int_equal(shard_iter_new(&it, ds, indices, n, &o, &err), 0);
    struct shard_item item;
    memset(&item, 0, sizeof item);
    for (uint64_t i = 0; i < n; i++) {
        assert_int_equal(shard_iter_position(it), i);
        assert_int_equal(shard_iter_next(it, &item, &err), 1);
        assert_sample(d, &item, indices[i]);
    }
    assert_int_equal(shard_iter_next(it, &item, &err), 0);
    assert_int_equal(shard_iter_next(it, &item, &err), 0);
    shard_item_release(&item);
    shard_iter_free(it);
}

static void test_prefetching_iterator_yields_the_plan_order_with_any_thread_count(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_plan_options po;
    shard_plan_options_init(&po);
    po.seed = 11;
    po.epoch = 3;
    po.rank = 1;
    po.world_size = 2;
    po.shuffle_buffer = 4;
    struct shard_plan *plan;
    struct shard_err err;
    assert_int_equal(shard_dataset_plan(ds, &po, &plan, &err), 0);
    assert_true(shard_plan_count(plan) >= SAMPLES / 2);
    const int threads[] = {0, 1, 4};
    const uint32_t depths[] = {0, 1, 2, 64};
    for (size_t t = 0; t < 3; t++)
        for (size_t q = 0; q < 4; q++)
            iterate_and_check(d, ds, shard_plan_indices(plan), shard_plan_count(plan), threads[t],
                              depths[q]);
    /* a list with repeats, and an empty list */
    uint64_t repeats[] = {7, 7, 0, 24, 7};
    iterate_and_check(d, ds, repeats, 5, 4, 2);
    iterate_and_check(d, ds, repeats, 0, 4, 2);
    shard_plan_free(plan);
    shard_dataset_close(ds);
}

/* Iterators one after another on one dataset reuse the items (and their
 * buffers) of the one before: nothing of an earlier sample, or of an earlier
 * read mode, shows through in the next iterator's items. */
static void test_successive_iterators_reuse_items_without_stale_data(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_err err;
    uint64_t fwd[SAMPLES], back[SAMPLES];
    for (uint64_t i = 0; i < SAMPLES; i++) {
        fwd[i] = i;
        back[i] = SAMPLES - 1 - i;
    }
    const unsigned modes[] = {SHARD_READ_PIXELS | SHARD_READ_STORED, SHARD_READ_STORED,
                              SHARD_READ_PIXELS, SHARD_READ_PIXELS | SHARD_READ_STORED};
    struct shard_item it;
    memset(&it, 0, sizeof it);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        const uint64_t *list = m % 2 ? back : fwd;
        struct shard_iter_options o;
        shard_iter_options_init(&o);
        o.threads = 2;
        o.queue_depth = 5;
        o.flags = modes[m];
        struct shard_iter *iter;
        assert_int_equal(shard_iter_new(&iter, ds, list, SAMPLES, &o, &err), 0);
        for (uint64_t i = 0; i < SAMPLES; i++) {
            assert_int_equal(shard_iter_next(iter, &it, &err), 1);
            char key[64];
            size_t len = mkds_key(d, list[i], key, sizeof key);
            assert_int_equal(it.key.len, len);
            assert_memory_equal(it.key.data, key, len);
            uint8_t px[MKDS_PIXEL_BYTES];
            mkds_pixels(list[i], px);
            if (modes[m] & SHARD_READ_PIXELS) {
                assert_int_equal(it.pixels.width, MKDS_W);
                assert_memory_equal(it.pixels.pixels, px, sizeof px);
            } else {
                assert_int_equal(it.pixels.width, 0);
            }
            if (modes[m] & SHARD_READ_STORED) {
                assert_int_equal(it.stored.len, MKDS_PIXEL_BYTES);
                assert_memory_equal(it.stored.data, px, sizeof px);
            } else {
                assert_int_equal(it.stored.len, 0);
            }
        }
        assert_int_equal(shard_iter_next(iter, &it, &err), 0);
        shard_iter_free(iter);
    }
    shard_item_release(&it);
    shard_dataset_close(ds); /* frees the kept items: the sanitizer build checks */
}

static void test_iterator_can_be_freed_early_and_refuses_bad_indices(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    uint64_t all[SAMPLES];
    for (uint64_t i = 0; i < SAMPLES; i++)
        all[i] = i;
    struct shard_iter_options o;
    shard_iter_options_init(&o);
    o.threads = 4;
    o.queue_depth = 3;
    struct shard_iter *it;
    struct shard_err err;
    assert_int_equal(shard_iter_new(&it, ds, all, SAMPLES, &o, &err), 0);
    struct shard_item item;
    memset(&item, 0, sizeof item);
    assert_int_equal(shard_iter_next(it, &item, &err), 1);
    shard_iter_free(it); /* workers are waiting for room: must not hang */
    shard_iter_free(NULL);
    all[3] = SAMPLES;
    assert_int_equal(shard_iter_new(&it, ds, all, SAMPLES, &o, &err), SHARD_EINVAL);
    assert_null(it);
    shard_item_release(&item);
    shard_dataset_close(ds);
}

/* Byte offset of record r's frame in a shard file, from its footer. */
static uint64_t frame_offset(const struct mkds *d, const char *name, uint64_t r)
{
    char path[160];
    mkds_path(d, name, path, sizeof path);
    struct shard_file *f;
    struct shard_err err;
    assert_int_equal(shard_file_open(&f, path, &err), 0);
    uint64_t off = shard_file_footer(f)->rows[r].offset;
    shard_file_close(f);
    return off;
}

static void test_a_damaged_record_is_an_error_naming_shard_record_and_key(void **state)
{
    struct mkds *d = *state;
    mkds_flip(d, "shard-000003.shard", frame_offset(d, "shard-000003.shard", 2) + 9);
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    uint64_t bad = 5 + 1 + 2;
    char key[64], want[160];
    mkds_key(d, bad, key, sizeof key);
    snprintf(want, sizeof want, "shard-000003.shard record 2 (key '%s'): ", key);
    assert_int_equal(shard_dataset_read(ds, bad, SHARD_READ_PIXELS, &it, &err), SHARD_ECORRUPT);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' does not start with '%s'", err.msg, want);

    /* the iterator reports it in its place and goes on with the rest */
    struct shard_iter *iter = iter_all(ds, 3);
    int rc;
    uint64_t good = 0, errors = 0;
    while ((rc = shard_iter_next(iter, &it, &err)) != 0) {
        if (rc < 0) {
            assert_int_equal(rc, SHARD_ECORRUPT);
            assert_int_equal(shard_iter_position(iter), bad + 1);
            assert_non_null(strstr(err.msg, want));
            errors++;
        } else {
            assert_sample(d, &it, good + errors);
            good++;
        }
    }
    assert_int_equal(errors, 1);
    assert_int_equal(good, SAMPLES - 1);
    shard_iter_free(iter);
    shard_item_release(&it);
    shard_dataset_close(ds);
    /* restore for the other tests */
    mkds_flip(d, "shard-000003.shard", frame_offset(d, "shard-000003.shard", 2) + 9);
}

static void test_damaged_footer_and_missing_shard_are_named(void **state)
{
    struct mkds *d = *state;
    size_t len;
    uint8_t *orig = mkds_slurp(d, "shard-000000.shard", &len);
    /* a byte in the footer's key area: the footer checksum catches it */
    mkds_flip(d, "shard-000000.shard", len - SHARD_TRAILER_BYTES - 12);
    struct shard_dataset *ds = mkds_open(d);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    struct shard_err err;
    assert_int_equal(shard_dataset_read(ds, 0, SHARD_READ_PIXELS, &it, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "shard-000000.shard: footer checksum mismatch");
    /* other shards still read */
    assert_int_equal(shard_dataset_read(ds, 5, SHARD_READ_PIXELS, &it, &err), 0);
    shard_dataset_close(ds);
    mkds_spit(d, "shard-000000.shard", orig, len);

    char path[160];
    mkds_path(d, "shard-000004.shard", path, sizeof path);
    assert_int_equal(rename(path, "/tmp/shardkit-test-dataset-moved.shard"), 0);
    ds = mkds_open(d);
    assert_int_equal(shard_dataset_read(ds, SAMPLES - 1, SHARD_READ_PIXELS, &it, &err),
                     SHARD_ENOTFOUND);
    assert_string_equal(err.msg, "shard-000004.shard: file is missing");
    shard_dataset_close(ds);
    assert_int_equal(rename("/tmp/shardkit-test-dataset-moved.shard", path), 0);

    /* truncated: the trailer is gone */
    mkds_spit(d, "shard-000000.shard", orig, len - 5);
    ds = mkds_open(d);
    assert_int_equal(shard_dataset_read(ds, 0, SHARD_READ_PIXELS, &it, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "shard-000000.shard: "));
    shard_dataset_close(ds);
    mkds_spit(d, "shard-000000.shard", orig, len);
    free(orig);
    shard_item_release(&it);
}

/* shard_dataset_stats: every sample an iterator delivers is counted, and
 * the bytes asked for are exactly the shards read (records are contiguous
 * from the header to the footer, and each shard's header, trailer and
 * footer are read once); a failed read is an error, not a sample; counts
 * only grow. */
static void test_read_stats_count_samples_bytes_and_failures(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds = mkds_open(d);
    struct shard_read_stats st;
    shard_dataset_stats(ds, &st);
    assert_int_equal(st.samples + st.errors + st.bytes_requested + st.read_ns, 0);

    struct shard_iter *iter = iter_all(ds, 3);
    struct shard_err err;
    struct shard_item it;
    memset(&it, 0, sizeof it);
    while (shard_iter_next(iter, &it, &err) == 1)
        ;
    shard_iter_free(iter);
    uint64_t shard_bytes = 0;
    for (uint32_t s = 0; s < SHARDS; s++) {
        size_t len;
        if (!counts[s])
            continue; /* an empty shard is never opened */
        char name[32];
        shard_file_name(s, name, sizeof name);
        free(mkds_slurp(d, name, &len));
        shard_bytes += len;
    }
    shard_dataset_stats(ds, &st);
    assert_int_equal(st.samples, SAMPLES);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.bytes_requested, shard_bytes);
    assert_true(st.decompress_ns > 0); /* counted, whatever its size */
    assert_int_equal(st.bytes_transferred + st.requests + st.retries + st.rtt_ns, 0);

    /* a damaged record: one error, no sample */
    size_t pos = (size_t)frame_offset(d, "shard-000003.shard", 2) + 9;
    mkds_flip(d, "shard-000003.shard", pos);
    assert_int_equal(shard_dataset_read(ds, 5 + 1 + 2, SHARD_READ_PIXELS, &it, NULL),
                     SHARD_ECORRUPT);
    assert_int_equal(shard_dataset_read(ds, 0, SHARD_READ_PIXELS, &it, NULL), 0);
    mkds_flip(d, "shard-000003.shard", pos);
    struct shard_read_stats later;
    shard_dataset_stats(ds, &later);
    assert_int_equal(later.errors, 1);
    assert_int_equal(later.samples, SAMPLES + 1);
    assert_true(later.bytes_requested > st.bytes_requested);
    assert_true(later.read_ns >= st.read_ns && later.decode_ns >= st.decode_ns);
    shard_item_release(&it);
    shard_dataset_close(ds);
}

/* What an observer saw: spans per kind, and per sample span the stage spans
 * of its thread that lay inside it. */
#define MAX_SPANS 4096
struct span_seen {
    enum shard_read_span k;
    uint64_t start, end;
    pthread_t thread;
};
struct seen {
    pthread_mutex_t lock;
    unsigned count[SHARD_SPAN_COUNT];
    unsigned n;
    struct span_seen span[MAX_SPANS];
};

static void on_span(void *user, enum shard_read_span k, uint64_t start, uint64_t end)
{
    struct seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->count[k]++;
    if (s->n < MAX_SPANS)
        s->span[s->n++] = (struct span_seen){k, start, end, pthread_self()};
    pthread_mutex_unlock(&s->lock);
}

static void test_an_observer_sees_every_read_on_its_thread(void **state)
{
    struct mkds *d = *state;
    static struct seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct shard_read_observer obs = {.span = on_span, .user = &seen};
    struct shard_dataset_options o;
    shard_dataset_options_init(&o);
    assert_null(o.observer);
    assert_true(o.rtt_ms == 0);
    o.observer = &obs;
    struct shard_dataset *ds = NULL;
    struct shard_err err;
    assert_int_equal(shard_dataset_open_ex(&ds, d->dir, &o, &err), 0);
    obs.span = NULL; /* the dataset keeps its own copy */
    struct shard_iter *iter = iter_all(ds, 3);
    struct shard_item it;
    memset(&it, 0, sizeof it);
    while (shard_iter_next(iter, &it, &err) == 1)
        ;
    shard_iter_free(iter);
    shard_item_release(&it);
    shard_dataset_close(ds);
    unsigned opened = 0;
    for (uint32_t s = 0; s < SHARDS; s++)
        opened += counts[s] > 0;
    assert_int_equal(seen.count[SHARD_SPAN_SAMPLE], SAMPLES);
    assert_int_equal(seen.count[SHARD_SPAN_READ], SAMPLES);
    assert_int_equal(seen.count[SHARD_SPAN_DECOMPRESS], SAMPLES);
    assert_int_equal(seen.count[SHARD_SPAN_DECODE], SAMPLES);
    assert_int_equal(seen.count[SHARD_SPAN_OPEN_SHARD], opened);
    assert_int_equal(seen.count[SHARD_SPAN_HTTP] + seen.count[SHARD_SPAN_RTT], 0);
    /* each stage lies inside a sample span of the same thread */
    for (unsigned i = 0; i < seen.n; i++) {
        if (seen.span[i].k > SHARD_SPAN_DECODE)
            continue;
        assert_true(seen.span[i].start <= seen.span[i].end);
        int inside = 0;
        for (unsigned j = 0; j < seen.n && !inside; j++)
            inside = seen.span[j].k == SHARD_SPAN_SAMPLE &&
                     pthread_equal(seen.span[j].thread, seen.span[i].thread) &&
                     seen.span[j].start <= seen.span[i].start &&
                     seen.span[i].end <= seen.span[j].end;
        assert_true(inside);
    }
    assert_string_equal(shard_read_span_name(SHARD_SPAN_DECOMPRESS), "decompress");
    assert_string_equal(shard_read_span_name(SHARD_SPAN_RTT), "rtt (simulated)");
    assert_string_equal(shard_read_span_name(SHARD_SPAN_COUNT), "unknown");
    /* a simulated round trip out of its range is refused, naming it */
    o.rtt_ms = -1;
    assert_int_equal(shard_dataset_open_ex(&ds, d->dir, &o, &err), SHARD_EINVAL);
    assert_null(ds);
    assert_string_equal(err.msg, "a simulated round trip of -1 ms is not in 0..3600000");
}

static void test_open_refuses_missing_locations(void **state)
{
    struct mkds *d = *state;
    struct shard_dataset *ds;
    struct shard_err err;
    assert_int_equal(shard_dataset_open(&ds, "/nonexistent/shardkit", &err), SHARD_ENOTFOUND);
    assert_null(ds);
    /* http(s):// locations are read over HTTP: tests/cli/test_shardbench.sh runs
     * them against a real server */
    char path[160];
    mkds_path(d, "manifest.json", path, sizeof path);
    assert_int_equal(rename(path, "/tmp/shardkit-test-dataset-manifest.json"), 0);
    assert_int_equal(shard_dataset_open(&ds, d->dir, &err), SHARD_ENOTFOUND);
    assert_int_equal(rename("/tmp/shardkit-test-dataset-manifest.json", path), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_reads_the_manifest_and_locates_every_sample),
        cmocka_unit_test(test_read_by_index_gives_pixels_stored_bytes_key_and_label),
        cmocka_unit_test(test_raw_pixels_are_read_in_place_and_the_item_stays_reusable),
        cmocka_unit_test(test_stored_order_reads_equal_index_jsonl),
        cmocka_unit_test(test_prefetching_iterator_yields_the_plan_order_with_any_thread_count),
        cmocka_unit_test(test_successive_iterators_reuse_items_without_stale_data),
        cmocka_unit_test(test_iterator_can_be_freed_early_and_refuses_bad_indices),
        cmocka_unit_test(test_a_damaged_record_is_an_error_naming_shard_record_and_key),
        cmocka_unit_test(test_damaged_footer_and_missing_shard_are_named),
        cmocka_unit_test(test_read_stats_count_samples_bytes_and_failures),
        cmocka_unit_test(test_an_observer_sees_every_read_on_its_thread),
        cmocka_unit_test(test_open_refuses_missing_locations),
    };
    return cmocka_run_group_tests(tests, setup, mkds_teardown);
}
