/* test_bench.c - shardbench's engine (cmd/shardbench/engine, outside the
 * library): roofline arithmetic and units, the Chrome trace writer (spans
 * nest after conversion to microseconds), key lists, and whole runs of both
 * loaders on small datasets made here (every sample delivered once per
 * epoch, pixels as stored, stages accounted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <xxhash.h>

#include "engine/bench.h"
#include "mkdataset.h"

/* ---- roofline ----------------------------------------------------------------- */

static void test_roofline_attains_the_lower_of_peak_and_bandwidth_times_intensity(void **state)
{
    (void)state;
    struct roofline r;
    assert_int_equal(roofline_model(100e9, 2, 1000e9, &r, NULL), 0);
    assert_true(fabs(r.attainable - 200e9) < 1);
    assert_true(fabs(r.ridge - 10) < 1e-12);
    assert_true(r.memory_bound);
    assert_int_equal(roofline_model(100e9, 20, 1000e9, &r, NULL), 0);
    assert_true(fabs(r.attainable - 1000e9) < 1);
    assert_false(r.memory_bound);
    /* the ridge point itself: both limits meet, compute-bound */
    assert_int_equal(roofline_model(100e9, 10, 1000e9, &r, NULL), 0);
    assert_false(r.memory_bound);
    assert_true(fabs(r.attainable - 1000e9) < 1);
    struct shard_err err;
    assert_int_equal(roofline_model(0, 2, 1, &r, &err), SHARD_EINVAL);
    assert_int_equal(roofline_model(1, -2, 1, &r, &err), SHARD_EINVAL);
    assert_int_equal(roofline_model(1, 2, INFINITY, &r, &err), SHARD_EINVAL);
    assert_int_equal(roofline_model(1, NAN, 1, &r, &err), SHARD_EINVAL);
}

static void parses(const char *s, enum quantity q, double want, double want_prefix)
{
    double v = 0, p = 0;
    struct shard_err err;
    if (quantity_parse(s, q, &v, &p, &err))
        fail_msg("'%s' did not parse: %s", s, err.msg);
    if (fabs(v - want) > 1e-9 * want || p != want_prefix)
        fail_msg("'%s' parsed as %g (prefix %g), want %g (prefix %g)", s, v, p, want, want_prefix);
}

static void refuses(const char *s, enum quantity q)
{
    double v;
    struct shard_err err;
    if (quantity_parse(s, q, &v, NULL, &err) != SHARD_EINVAL)
        fail_msg("'%s' was accepted", s);
    assert_non_null(strstr(err.msg, "is not"));
}

static void test_quantities_parse_si_and_binary_prefixes_and_their_units(void **state)
{
    (void)state;
    parses("100GB/s", QUANTITY_BANDWIDTH, 100e9, 1e9);
    parses("100 GB/s", QUANTITY_BANDWIDTH, 100e9, 1e9);
    parses("1.5TB/s", QUANTITY_BANDWIDTH, 1.5e12, 1e12);
    parses("900GiB/s", QUANTITY_BANDWIDTH, 900.0 * 1073741824.0, 1073741824.0);
    parses("5e10", QUANTITY_BANDWIDTH, 5e10, 1);
    parses("20MB/s", QUANTITY_BANDWIDTH, 20e6, 1e6);
    parses("2", QUANTITY_INTENSITY, 2, 1);
    parses("2FLOP/B", QUANTITY_INTENSITY, 2, 1);
    parses("0.5 flop/byte", QUANTITY_INTENSITY, 0.5, 1);
    parses("1000GFLOP/s", QUANTITY_COMPUTE, 1e12, 1e9);
    parses("19.5 TFLOP/s", QUANTITY_COMPUTE, 19.5e12, 1e12);
    parses("312TFLOPS", QUANTITY_COMPUTE, 312e12, 1e12);
    parses("1e12", QUANTITY_COMPUTE, 1e12, 1);
    refuses("100GFLOP/s", QUANTITY_BANDWIDTH); /* the wrong quantity */
    refuses("100GB/s", QUANTITY_COMPUTE);
    refuses("2GFLOP/B", QUANTITY_INTENSITY); /* a ratio takes no prefix */
    refuses("1GiFLOP/s", QUANTITY_COMPUTE);  /* binary prefixes are for bytes */
    refuses("", QUANTITY_BANDWIDTH);
    refuses("GB/s", QUANTITY_BANDWIDTH);
    refuses("-1GB/s", QUANTITY_BANDWIDTH);
    refuses("0", QUANTITY_INTENSITY);
    refuses("1e999", QUANTITY_COMPUTE);
    refuses("10 XB/s", QUANTITY_BANDWIDTH);
}

/* ---- the trace writer ------------------------------------------------------------- */

static char *temp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/shardkit-test-bench-%ld-%s",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), name);
    return path;
}

struct span_job {
    struct trace *t;
    uint64_t base;
};

/* A parent and two children whose nanosecond ends straddle microsecond
 * boundaries: converting each end separately must keep them nested. */
static void *record_nested(void *arg)
{
    struct span_job *j = arg;
    trace_thread_name(j->t, "worker");
    for (int i = 0; i < 100; i++) {
        uint64_t b = j->base + (uint64_t)i * 10000;
        trace_span(j->t, "child", b + 999, b + 2001);
        trace_span(j->t, "child", b + 2001, b + 2999);
        trace_span(j->t, "parent", b + 999, b + 3001);
        trace_counter(j->t, "depth", i, b);
    }
    return NULL;
}

static void test_trace_is_chrome_json_whose_spans_nest_on_every_thread(void **state)
{
    (void)state;
    struct trace *t;
    assert_int_equal(trace_new(&t, 0, NULL), 0);
    assert_int_equal(trace_process(t, "first"), 1);
    struct span_job jobs[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        jobs[i].t = t;
        jobs[i].base = trace_now() + 1000000;
        assert_int_equal(pthread_create(&th[i], NULL, record_nested, &jobs[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(trace_process(t, "second"), 2);
    uint64_t now = trace_now();
    trace_span(t, "late", now, now + 5000);
    assert_int_equal(trace_events(t), 3 * 400 + 1);
    assert_int_equal(trace_dropped(t), 0);

    const char *path = temp_path("trace.json");
    struct shard_err err;
    assert_int_equal(trace_write(t, path, &err), 0);
    trace_free(t);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    assert_non_null(root);
    unlink(path);
    assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ms");
    json_t *events = json_object_get(root, "traceEvents");
    size_t spans = 0, counters = 0, processes = 0, threads = 0;
    /* each worker's spans, in the order it recorded them: child, child, parent */
    json_int_t tids[3] = {0}, lane_ts[3][300], lane_end[3][300];
    size_t lane_len[3] = {0};
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        assert_non_null(ph);
        assert_non_null(name);
        if (!strcmp(ph, "M")) {
            if (!strcmp(name, "process_name"))
                processes++;
            else
                threads++;
            continue;
        }
        assert_true(json_is_integer(json_object_get(e, "ts")));
        if (!strcmp(ph, "C")) {
            counters++;
            assert_true(json_is_number(json_object_get(json_object_get(e, "args"), "samples")));
            continue;
        }
        assert_string_equal(ph, "X");
        spans++;
        json_int_t ts = json_integer_value(json_object_get(e, "ts"));
        json_int_t dur = json_integer_value(json_object_get(e, "dur"));
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        assert_true(dur >= 0);
        if (!strcmp(name, "late")) {
            assert_int_equal(json_integer_value(json_object_get(e, "pid")), 2);
            assert_int_equal(dur, 5);
            continue;
        }
        int lane = 0;
        while (lane < 3 && tids[lane] && tids[lane] != tid)
            lane++;
        assert_true(lane < 3);
        tids[lane] = tid;
        assert_true(lane_len[lane] < 300);
        assert_string_equal(name, lane_len[lane] % 3 == 2 ? "parent" : "child");
        lane_ts[lane][lane_len[lane]] = ts;
        lane_end[lane][lane_len[lane]++] = ts + dur;
    }
    /* whole microseconds, yet every child still lies inside its parent */
    for (int lane = 0; lane < 3; lane++) {
        assert_int_equal(lane_len[lane], 300);
        for (size_t g = 0; g < 300; g += 3)
            for (size_t c = g; c < g + 2; c++) {
                assert_true(lane_ts[lane][c] >= lane_ts[lane][g + 2]);
                assert_true(lane_end[lane][c] <= lane_end[lane][g + 2]);
            }
    }
    assert_int_equal(spans, 3 * 300 + 1);
    assert_int_equal(counters, 3 * 100);
    assert_int_equal(processes, 2);
    assert_int_equal(threads, 3 + 1); /* three named workers, one unnamed lane */
    json_decref(root);
}

static void test_trace_keeps_at_most_its_cap_and_counts_the_rest(void **state)
{
    (void)state;
    struct trace *t;
    assert_int_equal(trace_new(&t, 10, NULL), 0);
    for (int i = 0; i < 25; i++)
        trace_span(t, "s", (uint64_t)i, (uint64_t)i + 1);
    assert_int_equal(trace_events(t), 10);
    assert_int_equal(trace_dropped(t), 15);
    const char *path = temp_path("cap.json");
    assert_int_equal(trace_write(t, path, NULL), 0);
    json_t *root = json_load_file(path, 0, NULL);
    unlink(path);
    assert_non_null(root);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(root, "otherData"), "dropped_events")),
                     15);
    json_decref(root);
    struct shard_err err;
    assert_int_equal(trace_write(t, "/nonexistent/dir/t.json", &err), SHARD_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/t.json"));
    trace_free(t);
    trace_free(NULL);
}

/* ---- keys ---------------------------------------------------------------- */

static void test_key_lists_skip_empty_lines_and_carriage_returns(void **state)
{
    (void)state;
    const char *path = temp_path("keys.txt");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("a/one.jpg\r\n\nb/two words.png\nlast'one.jpg", f);
    fclose(f);
    struct shard_keylist keys = {0};
    assert_int_equal(bench_keys_from_file(path, &keys, NULL), 0);
    unlink(path);
    assert_int_equal(keys.count, 3);
    assert_string_equal(shard_keylist_get(&keys, 0, NULL), "a/one.jpg");
    assert_string_equal(shard_keylist_get(&keys, 1, NULL), "b/two words.png");
    assert_string_equal(shard_keylist_get(&keys, 2, NULL), "last'one.jpg");
    shard_keylist_release(&keys);
    struct shard_err err;
    assert_int_equal(bench_keys_from_file(path, &keys, &err), SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, path));
}

/* ---- whole runs ---------------------------------------------------------------------- */

static const uint64_t counts[] = {6, 0, 9, 5};
#define SHARDS (sizeof counts / sizeof *counts)
#define SAMPLES 20

static void test_shards_run_delivers_every_sample_each_epoch_with_its_pixels(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    struct bench_options o;
    bench_options_init(&o);
    o.threads = 3;
    o.epochs = 3;
    o.batch = 6;
    o.shuffle = 0;
    o.digests = 1;
    struct bench_result r;
    struct shard_err err;
    if (bench_run(BENCH_SHARDS, d.dir, &o, &r, &err))
        fail_msg("run failed: %s", err.msg);
    assert_int_equal(r.samples_per_epoch, SAMPLES);
    assert_int_equal(r.first.epochs, 1);
    assert_int_equal(r.first.samples, SAMPLES);
    assert_int_equal(r.first.batches, 4); /* 6 + 6 + 6 + 2 */
    assert_int_equal(r.steady.epochs, 2);
    assert_int_equal(r.steady.samples, 2 * SAMPLES);
    assert_int_equal(r.first.errors + r.steady.errors, 0);
    assert_true(r.first.bytes_read > 0);
    assert_true(r.steady.stage_seconds[STAGE_DECOMPRESS] > 0);
    assert_true(r.steady.stage_seconds[STAGE_READ] > 0);
    assert_true(r.steady.stage_seconds[STAGE_RESIZE] == 0);
    assert_true(r.steady.samples_per_second > 0);
    assert_true(r.steady.batch_p50 > 0 && r.steady.batch_p50 <= r.steady.batch_p99);
    /* every batch is kept, in order, with the latencies the percentiles come from */
    assert_int_equal(r.batch_count, 3 * 4);
    uint64_t in_batches = 0;
    double p99 = 0, last_start = -1;
    for (uint64_t i = 0; i < r.batch_count; i++) {
        const struct bench_batch *b = &r.batches[i];
        assert_int_equal(b->epoch, i / 4);
        assert_int_equal(b->samples, i % 4 == 3 ? 2 : 6);
        assert_true(b->start_seconds >= last_start && b->latency_seconds >= 0);
        last_start = b->start_seconds;
        in_batches += b->samples;
        if (b->epoch > 0 && b->latency_seconds > p99)
            p99 = b->latency_seconds;
    }
    assert_int_equal(in_batches, 3 * SAMPLES);
    assert_true(r.steady.batch_p99 == p99); /* 8 steady batches: the 99th is the largest */
    assert_int_equal(r.threads, 3);
    assert_false(r.remote);
    /* stored order, pixels exactly as written */
    assert_int_equal(r.digest_count, SAMPLES);
    for (uint64_t g = 0; g < SAMPLES; g++) {
        char key[64];
        size_t len = mkds_key(&d, g, key, sizeof key);
        uint8_t px[MKDS_PIXEL_BYTES];
        mkds_pixels(g, px);
        assert_int_equal(r.digests[g].key_len, len);
        assert_memory_equal(r.digests[g].key, key, len);
        assert_int_equal(r.digests[g].width, MKDS_W);
        assert_int_equal(r.digests[g].height, MKDS_H);
        assert_true(r.digests[g].xxh3 == XXH3_64bits(px, sizeof px));
    }
    bench_result_release(&r);
    bench_result_release(NULL);

    /* the same keys, from the footers */
    struct shard_keylist keys = {0};
    assert_int_equal(bench_keys_from_dataset(d.dir, NULL, &keys, NULL), 0);
    assert_int_equal(keys.count, SAMPLES);
    char key[64];
    mkds_key(&d, 7, key, sizeof key);
    assert_string_equal(shard_keylist_get(&keys, 7, NULL), key);
    shard_keylist_release(&keys);

    /* a limit, and a damaged record stops a shards run with its name */
    o.limit = 5;
    o.digests = 0;
    assert_int_equal(bench_run(BENCH_SHARDS, d.dir, &o, &r, &err), 0);
    assert_int_equal(r.first.samples + r.steady.samples, 15);
    bench_result_release(&r);
    mkds_flip(&d, "shard-000000.shard", 40);
    assert_int_equal(bench_run(BENCH_SHARDS, d.dir, &o, &r, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "shard-000000.shard record 0"));
    bench_result_release(&r);
    mkds_remove(&d);
}

/* A folder of small PNGs (made with the library's own encoder), one broken. */
static void make_pngs(const char *dir, int n)
{
    assert_int_equal(mkdir(dir, 0700), 0);
    struct shard_image img = {0};
    struct shard_buf png = {0};
    char path[512];
    for (int i = 0; i < n; i++) {
        assert_int_equal(shard_image_alloc(&img, 8 + i, 6, 3, NULL), 0);
        for (size_t b = 0; b < (size_t)(8 + i) * 6 * 3; b++)
            img.pixels[b] = (uint8_t)(b * 7 + i);
        assert_int_equal(shard_encode(&img, SHARD_CODEC_PNG, 90, &png, NULL), 0);
        snprintf(path, sizeof path, "%s/img%02d.png", dir, i);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(png.data, 1, png.len, f), png.len);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/broken.png", dir);
    FILE *f = fopen(path, "wb");
    fputs("not a png", f);
    fclose(f);
    shard_image_release(&img);
    shard_buf_release(&png);
}

static void test_files_run_decodes_resizes_and_counts_a_broken_file(void **state)
{
    (void)state;
    char dir[256];
    snprintf(dir, sizeof dir, "%s", temp_path("files"));
    make_pngs(dir, 9);
    struct bench_options o;
    bench_options_init(&o);
    o.threads = 2;
    o.epochs = 2;
    o.batch = 4;
    o.size = 4;
    o.fit = SHARD_FIT_CROP;
    o.digests = 1;
    struct bench_result r;
    struct shard_err err;
    if (bench_run(BENCH_FILES, dir, &o, &r, &err))
        fail_msg("run failed: %s", err.msg);
    assert_int_equal(r.samples_per_epoch, 10);
    assert_int_equal(r.first.samples, 9);
    assert_int_equal(r.first.errors, 1);
    assert_int_equal(r.steady.samples, 9);
    assert_non_null(strstr(r.first_error, "cannot decode 'broken.png'"));
    assert_true(r.steady.stage_seconds[STAGE_DECODE] > 0);
    assert_true(r.steady.stage_seconds[STAGE_RESIZE] > 0);
    assert_true(r.steady.stage_seconds[STAGE_DECOMPRESS] == 0);
    assert_int_equal(r.digest_count, 9);
    for (uint64_t i = 0; i < r.digest_count; i++) {
        assert_int_equal(r.digests[i].width, 4); /* crop: 4 x 4 */
        assert_int_equal(r.digests[i].height, 4);
    }
    bench_result_release(&r);

    /* a folder of nothing but broken files fails, saying why */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -f %s/img*.png", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(bench_run(BENCH_FILES, dir, &o, &r, &err), SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no sample could be read"));
    bench_result_release(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);

    /* a URL cannot be listed: keys are required, and nothing is requested */
    assert_int_equal(bench_run(BENCH_FILES, "http://127.0.0.1:9/x", &o, &r, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "cannot be listed"));
    bench_result_release(&r);
    o.epochs = 0;
    assert_int_equal(bench_run(BENCH_FILES, dir, &o, &r, &err), SHARD_EINVAL);
    bench_result_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline_attains_the_lower_of_peak_and_bandwidth_times_intensity),
        cmocka_unit_test(test_quantities_parse_si_and_binary_prefixes_and_their_units),
        cmocka_unit_test(test_trace_is_chrome_json_whose_spans_nest_on_every_thread),
        cmocka_unit_test(test_trace_keeps_at_most_its_cap_and_counts_the_rest),
        cmocka_unit_test(test_key_lists_skip_empty_lines_and_carriage_returns),
        cmocka_unit_test(test_shards_run_delivers_every_sample_each_epoch_with_its_pixels),
        cmocka_unit_test(test_files_run_decodes_resizes_and_counts_a_broken_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
