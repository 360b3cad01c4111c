/* test_manifest.c - manifest.json and index lines: round trips, byte-exact
 * keys, and refusal of manifests whose numbers do not add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "shardkit.h"

static char *labels[] = {"cat", "dog"};
static uint64_t label_samples[] = {2, 1};
static char file0[] = "shard-000000.shard";
static char file1[] = "shard-000001.shard";
static char reject_key[] = "bad/x.jpg";
static char reject_reason[] = "truncated JPEG";

static void sample_manifest(struct shard_manifest *m, struct shard_manifest_shard *shards,
                            struct shard_reject *rejects)
{
    memset(m, 0, sizeof *m);
    shard_config_init(&m->config);
    m->config.labels = "dir";
    m->source_kind = "directory";
    m->samples = 4;
    m->unlabeled = 1;
    m->rejected = 1;
    m->ignored = 3;
    m->labels = labels;
    m->label_samples = label_samples;
    m->label_count = 2;
    shards[0] = (struct shard_manifest_shard){file0, 3, 1000, 0x1122334455667788ull};
    shards[1] = (struct shard_manifest_shard){file1, 1, 200, 0xffeeddccbbaa9988ull};
    m->shards = shards;
    m->shard_count = 2;
    /* clang-format off */
    rejects[0] = (struct shard_reject){reject_key, strlen(reject_key), reject_reason, 1, 12,
                                       0xabcdefull};
    /* clang-format on */
    m->rejects = rejects;
    m->reject_count = 1;
    m->index_file = "index.jsonl";
    m->index_entries = 4;
    m->index_bytes = 400;
    m->index_xxh3 = 42;
}

static char *write_temp_manifest(const char *text)
{
    char *dir = strdup("/tmp/test_manifest.XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return dir;
}

static void remove_temp(char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

static void test_manifest_round_trips_through_json(void **state)
{
    (void)state;
    struct shard_manifest m, back;
    struct shard_manifest_shard shards[2];
    struct shard_reject rejects[1];
    struct shard_err err;
    sample_manifest(&m, shards, rejects);
    m.config.shuffle_seed = UINT64_MAX; /* must survive JSON exactly */
    m.warned = 2;
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    assert_non_null(strstr(text, "\"warned\": 2"));
    char *dir = write_temp_manifest(text);
    assert_int_equal(shard_manifest_load(dir, &back, &err), 0);
    assert_true(back.config.shuffle_seed == UINT64_MAX);
    assert_int_equal(back.config.size, 512);
    assert_int_equal(back.config.zstd_level, 3); /* jpeg's default, written out */
    assert_string_equal(back.config.labels, "dir");
    assert_int_equal(back.samples, 4);
    assert_int_equal(back.warned, 2);
    assert_int_equal(back.shard_count, 2);
    assert_string_equal(back.shards[1].file, "shard-000001.shard");
    assert_true(back.shards[1].xxh3 == 0xffeeddccbbaa9988ull);
    assert_int_equal(back.label_count, 2);
    assert_string_equal(back.labels[1], "dog");
    assert_int_equal(back.label_samples[0], 2);
    assert_int_equal(back.reject_count, 1);
    assert_string_equal(back.rejects[0].reason, "truncated JPEG");
    assert_true(back.rejects[0].source_xxh3 == 0xabcdefull);
    assert_true(back.index_xxh3 == 42);
    /* and writing it again gives the same bytes */
    char *again;
    assert_int_equal(shard_manifest_dump(&back, &again, &err), 0);
    assert_string_equal(text, again);
    free(again);
    free(text);
    shard_manifest_release(&back);
    remove_temp(dir);
}

/* Replace the first occurrence of `from` in the dumped manifest by `to` and
 * expect loading to fail with a message containing `why` - and to fail with
 * the same code when the caller passes no shard_err (a NULL err must not turn
 * a bad manifest into a loaded one). */
static void expect_refused(const char *from, const char *to, const char *why)
{
    struct shard_manifest m, back;
    struct shard_manifest_shard shards[2];
    struct shard_reject rejects[1];
    struct shard_err err;
    sample_manifest(&m, shards, rejects);
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) + strlen(to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    char *dir = write_temp_manifest(edited);
    int rc = shard_manifest_load(dir, &back, &err);
    if (rc == 0)
        fail_msg("manifest with '%s' -> '%s' was accepted", from, to);
    if (!strstr(err.msg, why))
        fail_msg("'%s' -> '%s': message '%s' does not say '%s'", from, to, err.msg, why);
    int quiet = shard_manifest_load(dir, &back, NULL);
    if (quiet != rc)
        fail_msg("'%s' -> '%s': %d with a shard_err, %d without", from, to, rc, quiet);
    free(text);
    free(edited);
    remove_temp(dir);
}

static void test_each_codec_has_its_default_zstd_level(void **state)
{
    (void)state;
    struct shard_config c;
    shard_config_init(&c);
    assert_int_equal(c.zstd_level, 0); /* "the codec's default" until resolved */
    assert_int_equal(shard_config_zstd_level(&c), 3);
    c.codec = SHARD_CODEC_PNG;
    assert_int_equal(shard_config_zstd_level(&c), 3);
    c.codec = SHARD_CODEC_RAW;
    assert_int_equal(shard_config_zstd_level(&c), -100);
    c.zstd_level = 7; /* an explicit level wins */
    assert_int_equal(shard_config_zstd_level(&c), 7);
}

static void test_inconsistent_manifests_are_refused(void **state)
{
    (void)state;
    expect_refused("\"samples\": 4", "\"samples\": 5", "samples");
    expect_refused("\"samples\": 3", "\"samples\": 2", "shards hold");
    expect_refused("\"rejected\": 1", "\"rejected\": 0", "rejects listed");
    expect_refused("\"cat\": 2", "\"cat\": 1", "by_label");
    expect_refused("\"entries\": 4", "\"entries\": 3", "index.entries");
    expect_refused("shard-000001.shard", "../etc/passwd", "shards[1].file");
    expect_refused("\"format\": \"shardkit\"", "\"format\": \"other\"", "format");
    expect_refused("\"codec\": \"jpeg\"", "\"codec\": \"gif\"", "config");
    expect_refused("\"xxh3\": \"1122334455667788\"", "\"xxh3\": \"xyz\"", "xxh3");
    expect_refused("{", "[", "line 2"); /* a JSON syntax error names its place */
    expect_refused("\"labels\": [", "\"labels\": [\"zebra\", ", "by_label");
}

/* The labels of numeric classes (WebDataset's .cls) are "0".."N-1" in
 * numeric order, not sorted by bytes: they load; another order of labels
 * that is not sorted is refused. */
static void test_class_numbers_load_other_unsorted_labels_do_not(void **state)
{
    (void)state;
    enum { N = 12 };
    struct shard_manifest m, back;
    struct shard_manifest_shard shards[2];
    struct shard_reject rejects[1];
    struct shard_err err;
    sample_manifest(&m, shards, rejects);
    char *names[N], text_of[N][4];
    uint64_t counts[N] = {0};
    for (int i = 0; i < N; i++) {
        snprintf(text_of[i], sizeof text_of[i], "%d", i);
        names[i] = text_of[i];
    }
    counts[10] = 3; /* "10" sorts before "2" by bytes */
    m.labels = names;
    m.label_samples = counts;
    m.label_count = N;
    for (int order = 0; order < 2; order++) {
        if (order) { /* "0", "1", "2", ... "11", "10": neither */
            names[10] = text_of[11];
            names[11] = text_of[10];
        }
        char *text;
        assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
        char *dir = write_temp_manifest(text);
        int rc = shard_manifest_load(dir, &back, &err);
        if (!order) {
            if (rc)
                fail_msg("the class numbers were refused: %s", err.msg);
            assert_int_equal(back.label_count, N);
            assert_string_equal(back.labels[10], "10");
            assert_int_equal(back.label_samples[10], 3);
            shard_manifest_release(&back);
        } else {
            assert_int_equal(rc, SHARD_ECORRUPT);
            assert_non_null(
                strstr(err.msg, "neither sorted and unique nor the class numbers 0..11"));
        }
        free(text);
        remove_temp(dir);
    }
}

/* What shardify can write, the loader reads: a reject whose key is far over
 * SHARD_KEY_MAX (that is why it was rejected; as key and as key_hex),
 * thousands of labels, and no sample at all. */
static void test_extreme_manifests_shardify_can_write_load_back(void **state)
{
    (void)state;
    enum { LONG_KEY = 30000, LABELS = 5000 };
    struct shard_manifest m, back;
    struct shard_manifest_shard shards[2];
    struct shard_reject rejects[2];
    struct shard_err err;
    sample_manifest(&m, shards, rejects);
    char *utf8 = malloc(LONG_KEY + 1), *binary = malloc(LONG_KEY + 1);
    assert_non_null(utf8);
    assert_non_null(binary);
    memset(utf8, 'k', LONG_KEY);
    memset(binary, 'b', LONG_KEY);
    binary[0] = (char)0xff; /* not UTF-8: written as key_hex */
    utf8[LONG_KEY] = binary[LONG_KEY] = '\0';
    rejects[0] = (struct shard_reject){binary, LONG_KEY, "key is longer than 4096 bytes", 0, 0, 0};
    rejects[1] = (struct shard_reject){utf8, LONG_KEY, "key is longer than 4096 bytes", 0, 0, 0};
    m.rejects = rejects;
    m.reject_count = m.rejected = 2;
    /* no samples, LABELS labels of 0 samples each */
    char **names = calloc(LABELS, sizeof *names);
    uint64_t *zeros = calloc(LABELS, sizeof *zeros);
    assert_non_null(names);
    assert_non_null(zeros);
    for (int i = 0; i < LABELS; i++) {
        names[i] = malloc(16);
        snprintf(names[i], 16, "c%05d", i);
    }
    m.labels = names;
    m.label_samples = zeros;
    m.label_count = LABELS;
    m.samples = m.unlabeled = m.index_entries = 0;
    m.shard_count = 0;
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    assert_null(strstr(text, "\"warned\"")); /* only written when not 0 */
    char *dir = write_temp_manifest(text);
    if (shard_manifest_load(dir, &back, &err))
        fail_msg("shardify's own manifest refused: %s", err.msg);
    assert_int_equal(back.reject_count, 2);
    assert_int_equal(back.rejects[0].key_len, LONG_KEY);
    assert_memory_equal(back.rejects[0].key, binary, LONG_KEY);
    assert_int_equal(back.rejects[1].key_len, LONG_KEY);
    assert_int_equal(back.label_count, LABELS);
    assert_int_equal(back.samples, 0);
    assert_int_equal(back.shard_count, 0);
    assert_int_equal(back.warned, 0);
    char *again;
    assert_int_equal(shard_manifest_dump(&back, &again, &err), 0);
    assert_string_equal(text, again);
    free(again);
    shard_manifest_release(&back);
    remove_temp(dir);
    /* a reject line with such a key (the resume journal's) parses too */
    struct shard_buf line = {0};
    struct shard_sample smp;
    struct shard_reject r;
    assert_int_equal(shard_reject_line(&rejects[0], &line, &err), 0);
    assert_int_equal(shard_line_parse((char *)line.data, line.len - 1, &smp, &r, &err), 2);
    assert_int_equal(r.key_len, LONG_KEY);
    shard_reject_release(&r);
    shard_buf_release(&line);
    /* a sample's key stays within SHARD_KEY_MAX */
    struct shard_sample big = {utf8, SHARD_KEY_MAX + 1, -1, 0, 0, 1, 1, 1, 1, NULL, NULL, 0};
    assert_int_equal(shard_sample_line(&big, &line, &err), 0);
    assert_true(shard_line_parse((char *)line.data, line.len - 1, &smp, &r, &err) < 0);
    shard_buf_release(&line);
    for (int i = 0; i < LABELS; i++)
        free(names[i]);
    free(names);
    free(zeros);
    free(utf8);
    free(binary);
    free(text);
}

static void test_warned_counts_and_warning_fields_round_trip(void **state)
{
    (void)state;
    struct shard_err err;
    /* counts.warned round trips in test_manifest_round_trips_through_json */
    expect_refused("\"unlabeled\": 1", "\"unlabeled\": 1, \"warned\": 5",
                   "counts.warned is 5, more than counts.samples 4");
    expect_refused("\"unlabeled\": 1", "\"unlabeled\": 1, \"warned\": -1", "warned");

    /* the line of a sample with a warning carries it; one without has none */
    /* clang-format off */
    struct shard_sample s = {"a.jpg", 5, -1, 0, 7, 4, 3, 10, 11,
                             "JPEG warning: 3 extraneous bytes before marker 0xdb", NULL, 0};
    /* clang-format on */
    struct shard_buf line = {0};
    assert_int_equal(shard_sample_line(&s, &line, &err), 0);
    assert_int_equal(shard_buf_append(&line, "", 1, &err), 0);
    line.len--;
    assert_string_equal((char *)line.data,
                        "{\"key\":\"a.jpg\",\"label\":null,\"shard\":0,\"record\":7,"
                        "\"width\":4,\"height\":3,\"source_bytes\":10,"
                        "\"source_xxh3\":\"000000000000000b\",\"warning\":\"JPEG warning: 3 "
                        "extraneous bytes before marker 0xdb\"}\n");
    struct shard_sample back_s;
    struct shard_reject r;
    assert_int_equal(shard_line_parse((char *)line.data, line.len - 1, &back_s, &r, &err), 1);
    assert_string_equal(back_s.warning, s.warning);
    shard_sample_release(&back_s);
    s.warning = NULL;
    line.len = 0;
    assert_int_equal(shard_sample_line(&s, &line, &err), 0);
    assert_null(memmem(line.data, line.len, "warning", 7));
    assert_int_equal(shard_line_parse((char *)line.data, line.len - 1, &back_s, &r, &err), 1);
    assert_null(back_s.warning);
    shard_sample_release(&back_s);
    const char *bad = "{\"key\":\"a\",\"label\":null,\"shard\":0,\"record\":0,\"width\":1,"
                      "\"height\":1,\"source_bytes\":1,\"source_xxh3\":\"0000000000000001\","
                      "\"warning\":7}";
    assert_true(shard_line_parse(bad, strlen(bad), &back_s, &r, &err) < 0);
    shard_buf_release(&line);
}

/* An incremental run's manifest is a full run's with "lineage" added as its
 * last member: the same text up to there, and it loads like any other. */
static void test_lineage_is_added_last_and_changes_nothing_else(void **state)
{
    (void)state;
    struct shard_manifest m, back;
    struct shard_manifest_shard shards[2];
    struct shard_reject rejects[1];
    struct shard_err err;
    sample_manifest(&m, shards, rejects);
    char *plain, *with, *rebuilt;
    assert_int_equal(shard_manifest_dump(&m, &plain, &err), 0);
    assert_null(strstr(plain, "lineage"));
    struct shard_lineage l = {.previous_manifest_xxh3 = 0xdeadbeefull,
                              .added = 3,
                              .changed = 1,
                              .unchanged = 7,
                              .removed = 2,
                              .reused = 5,
                              .relabeled = 1,
                              .rejected_again = 1,
                              .reconverted = 0};
    m.lineage = &l;
    assert_int_equal(shard_manifest_dump(&m, &with, &err), 0);
    size_t keep = strlen(plain) - strlen("\n}\n");
    assert_memory_equal(plain, with, keep);
    assert_string_equal(
        with + keep, ",\n  \"lineage\": {\n    \"previous_manifest_xxh3\": \"00000000deadbeef\",\n"
                     "    \"added\": 3,\n    \"changed\": 1,\n    \"unchanged\": 7,\n"
                     "    \"removed\": 2,\n    \"reused\": 5,\n    \"relabeled\": 1,\n"
                     "    \"rejected_again\": 1,\n    \"reconverted\": 0\n  }\n}\n");
    char *dir = write_temp_manifest(with);
    assert_int_equal(shard_manifest_load(dir, &back, &err), 0);
    assert_int_equal(back.samples, 4);
    assert_null(back.lineage);
    shard_manifest_release(&back);
    remove_temp(dir);
    /* a full rebuild says why, without counts */
    struct shard_lineage full = {.previous_manifest_xxh3 = 1, .full_rebuild = "--size differs"};
    m.lineage = &full;
    assert_int_equal(shard_manifest_dump(&m, &rebuilt, &err), 0);
    assert_non_null(strstr(rebuilt, "\"full_rebuild\": \"--size differs\""));
    assert_null(strstr(rebuilt, "\"added\""));
    free(plain);
    free(with);
    free(rebuilt);
}

static void test_missing_manifest_is_not_found(void **state)
{
    (void)state;
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load("/nonexistent-dir", &m, &err), SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, "manifest.json"));
}

static void test_sample_lines_keep_keys_byte_exact(void **state)
{
    (void)state;
    const char *keys[] = {"n03590841_jack-o'-lantern.JPEG", "a b/\"quoted\"\n.jpg",
                          "caf\xc3\xa9.png", "bad\xff\xfe.jpg"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        /* clang-format off */
        struct shard_sample s = {(char *)keys[i], strlen(keys[i]), (int32_t)i - 1, 3, 99, 64,
                                 48, 1234, 0xdeadbeefcafef00dull, NULL, NULL, 0};
        /* clang-format on */
        struct shard_buf line = {0};
        struct shard_err err;
        assert_int_equal(shard_sample_line(&s, &line, &err), 0);
        assert_int_equal(shard_buf_append(&line, "", 1, &err), 0); /* for strstr */
        line.len--;
        assert_int_equal(line.data[line.len - 1], '\n');
        assert_null(memchr(line.data, '\n', line.len - 1)); /* one line, whatever the key */
        struct shard_sample back;
        struct shard_reject r;
        assert_int_equal(shard_line_parse((char *)line.data, line.len - 1, &back, &r, &err), 1);
        assert_int_equal(back.key_len, strlen(keys[i]));
        assert_memory_equal(back.key, keys[i], back.key_len);
        assert_int_equal(back.label, (int32_t)i - 1);
        assert_int_equal(back.shard, 3);
        assert_int_equal(back.record, 99);
        assert_true(back.source_xxh3 == 0xdeadbeefcafef00dull);
        if (i == 3)
            assert_non_null(strstr((char *)line.data, "\"key_hex\":\"626164fffe2e6a7067\""));
        shard_sample_release(&back);
        shard_buf_release(&line);
    }
}

static void test_reject_lines_parse_as_rejects(void **state)
{
    (void)state;
    struct shard_reject r = {"x.jpg", 5, "not an image: unknown signature", 0, 0, 0};
    struct shard_buf line = {0};
    struct shard_err err;
    assert_int_equal(shard_reject_line(&r, &line, &err), 0);
    assert_int_equal(shard_buf_append(&line, "", 1, &err), 0); /* for strstr */
    line.len--;
    assert_null(strstr((char *)line.data, "source_xxh3"));
    struct shard_sample s;
    struct shard_reject back;
    assert_int_equal(shard_line_parse((char *)line.data, line.len - 1, &s, &back, &err), 2);
    assert_string_equal(back.reason, "not an image: unknown signature");
    assert_int_equal(back.has_source, 0);
    shard_reject_release(&back);
    shard_buf_release(&line);
    assert_true(shard_line_parse("{\"key\":1}", 9, &s, &back, &err) < 0);
    assert_true(shard_line_parse("not json", 8, &s, &back, &err) < 0);
}

static void test_index_reader_streams_lines_and_hashes_them(void **state)
{
    (void)state;
    char path[] = "/tmp/test_index.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct shard_buf all = {0};
    struct shard_err err;
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%04d.jpg", i);
        /* clang-format off */
        struct shard_sample s = {key, strlen(key), -1, 0, (uint64_t)i, 8, 8, 10, (uint64_t)i, NULL, NULL, 0};
        /* clang-format on */
        assert_int_equal(shard_sample_line(&s, &all, &err), 0);
    }
    assert_int_equal(write(fd, all.data, all.len), (ssize_t)all.len);
    close(fd);
    struct shard_index_reader *r;
    assert_int_equal(shard_index_reader_open(&r, path, &err), 0);
    struct shard_sample s;
    int n = 0, rc;
    while ((rc = shard_index_reader_next(r, &s, &err)) == 1) {
        assert_int_equal(s.record, n);
        n++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 1000);
    assert_int_equal(shard_index_reader_bytes(r), all.len);
    shard_index_reader_close(r);
    /* a line cut short is an error naming the line */
    truncate(path, (off_t)all.len - 3);
    assert_int_equal(shard_index_reader_open(&r, path, &err), 0);
    while ((rc = shard_index_reader_next(r, &s, &err)) == 1)
        ;
    assert_int_equal(rc, SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "line 1000"));
    shard_index_reader_close(r);
    unlink(path);
    shard_buf_release(&all);
}

/* Every failure is a failure with or without a shard_err: a line that is not
 * JSON is SHARD_ECORRUPT naming the line, and with err NULL still an error,
 * never the end of the file. */
static void test_a_corrupt_index_line_is_an_error_even_without_err(void **state)
{
    (void)state;
    char path[] = "/tmp/test_index.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct shard_buf all = {0};
    struct shard_sample good = {"k.jpg", 5, -1, 0, 0, 8, 8, 10, 7, NULL, NULL, 0};
    assert_int_equal(shard_sample_line(&good, &all, NULL), 0);
    static const char bad[] = "{\"key\": not json}\n";
    assert_int_equal(shard_buf_append(&all, bad, sizeof bad - 1, NULL), 0);
    assert_int_equal(write(fd, all.data, all.len), (ssize_t)all.len);
    close(fd);
    for (int with_err = 1; with_err >= 0; with_err--) {
        struct shard_err err;
        struct shard_index_reader *r;
        struct shard_sample s;
        assert_int_equal(shard_index_reader_open(&r, path, NULL), 0);
        assert_int_equal(shard_index_reader_next(r, &s, with_err ? &err : NULL), 1);
        assert_int_equal(shard_index_reader_next(r, &s, with_err ? &err : NULL), SHARD_ECORRUPT);
        if (with_err)
            assert_non_null(strstr(err.msg, "line 2"));
        shard_index_reader_close(r);
    }
    unlink(path);
    shard_buf_release(&all);
}

/* A key of random bytes: printable ASCII with quotes and backslashes most
 * of the time, sometimes UTF-8 or a control byte or an invalid byte. */
static size_t random_key(unsigned *seed, char *key, size_t cap)
{
    static const char *const pieces[] = {"a",    "/",    "\"",   "\\", "b.jpg", "\xc3\xa9",
                                         "\x01", "\x7f", "\xff", " ",  "%",     "\t"};
    size_t n = 0, k = 1 + (size_t)(rand_r(seed) % 6);
    int ascii = rand_r(seed) % 4 != 0;
    for (size_t i = 0; i < k; i++) {
        const char *p = pieces[rand_r(seed) % (ascii ? 6 : 12)];
        size_t l = strlen(p);
        if (n + l >= cap)
            break;
        memcpy(key + n, p, l);
        n += l;
    }
    key[n] = '\0';
    return n;
}

/* Index lines are jansson's bytes (JSON_COMPACT, members in order) whether
 * written by the library's own writer (ASCII keys) or by jansson, and read
 * back as written, by the scanner or by jansson: the expectation is built
 * here with jansson itself. */
static void test_sample_lines_are_janssons_bytes_and_read_back(void **state)
{
    (void)state;
    struct shard_field_decl decls[3] = {
        {.name = "caption", .type = SHARD_FIELD_TEXT, .sidecar = ".txt"},
        {.name = "meta", .type = SHARD_FIELD_JSON, .sidecar = ".json"},
        {.name = "z.z-z", .type = SHARD_FIELD_INT, .sidecar = ".z"},
    };
    struct shard_config c = {.fields = decls, .field_count = 3};
    unsigned seed = 7;
    for (int round = 0; round < 3000; round++) {
        char key[64];
        struct shard_field_source fields[3];
        struct shard_sample smp = {.key = key};
        smp.key_len = random_key(&seed, key, sizeof key);
        if (!smp.key_len)
            continue;
        smp.label = rand_r(&seed) % 3 ? (int32_t)(rand_r(&seed) % 1000) : SHARD_NO_LABEL;
        smp.shard = (uint32_t)rand_r(&seed);
        smp.record = (uint64_t)rand_r(&seed) * 977;
        smp.width = 1 + (uint32_t)rand_r(&seed) % 5000;
        smp.height = 1 + (uint32_t)rand_r(&seed) % 5000;
        smp.source_bytes = (uint64_t)rand_r(&seed) << 20;
        smp.source_xxh3 = ((uint64_t)rand_r(&seed) << 33) ^ (uint64_t)rand_r(&seed);
        char warning[64];
        if (rand_r(&seed) % 5 == 0) {
            random_key(&seed, warning, sizeof warning);
            smp.warning = warning[0] ? warning : NULL;
        }
        const struct shard_config *cfg = rand_r(&seed) % 4 ? &c : NULL;
        for (uint32_t f = 0; cfg && f < 3; f++)
            if (rand_r(&seed) % 2)
                fields[smp.field_count++] = (struct shard_field_source){f, (uint64_t)rand_r(&seed),
                                                                        (uint64_t)rand_r(&seed) *
                                                                            31};
        smp.fields = smp.field_count ? fields : NULL;

        struct shard_buf line = {0};
        struct shard_err err;
        int rc = shard_sample_line_fields(&smp, cfg, &line, &err);
        /* jansson: the same object, or its refusal */
        json_t *o = json_object(), *k = json_stringn(key, smp.key_len);
        json_t *w = smp.warning ? json_string(smp.warning) : NULL;
        int valid = k && (!smp.warning || w);
        json_decref(w);
        if (!valid) {
            json_decref(k);
            json_decref(o);
            shard_buf_release(&line);
            continue; /* a key that is not UTF-8 (key_hex) or a warning that cannot be
                         written: jansson's path alone, tested elsewhere */
        }
        assert_int_equal(rc, SHARD_OK);
        json_object_set_new(o, "key", k);
        json_object_set_new(o, "label", smp.label >= 0 ? json_integer(smp.label) : json_null());
        json_object_set_new(o, "shard", json_integer(smp.shard));
        json_object_set_new(o, "record", json_integer((json_int_t)smp.record));
        json_object_set_new(o, "width", json_integer(smp.width));
        json_object_set_new(o, "height", json_integer(smp.height));
        json_object_set_new(o, "source_bytes", json_integer((json_int_t)smp.source_bytes));
        char hex[17];
        shard_hex64(smp.source_xxh3, hex);
        json_object_set_new(o, "source_xxh3", json_string(hex));
        if (smp.warning)
            json_object_set_new(o, "warning", json_string(smp.warning));
        if (cfg) {
            json_t *fo = json_object();
            for (uint32_t i = 0; i < smp.field_count; i++) {
                json_t *v = json_object();
                json_object_set_new(v, "source_bytes",
                                    json_integer((json_int_t)fields[i].source_bytes));
                shard_hex64(fields[i].source_xxh3, hex);
                json_object_set_new(v, "source_xxh3", json_string(hex));
                json_object_set_new(fo, decls[fields[i].field].name, v);
            }
            json_object_set_new(o, "fields", fo);
        }
        char *want = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        assert_int_equal(line.len, strlen(want) + 1);
        assert_memory_equal(line.data, want, strlen(want));
        free(want);
        /* read back: every member as written */
        struct shard_sample back;
        struct shard_reject rej;
        assert_int_equal(shard_line_parse_fields((const char *)line.data, line.len - 1, cfg, &back,
                                                 &rej, &err),
                         1);
        assert_int_equal(back.key_len, smp.key_len);
        assert_memory_equal(back.key, key, smp.key_len);
        assert_int_equal(back.label, smp.label);
        assert_int_equal(back.shard, smp.shard);
        assert_true(back.record == smp.record && back.width == smp.width &&
                    back.height == smp.height && back.source_bytes == smp.source_bytes &&
                    back.source_xxh3 == smp.source_xxh3);
        assert_int_equal(back.warning != NULL, smp.warning != NULL);
        if (smp.warning)
            assert_string_equal(back.warning, smp.warning);
        assert_int_equal(back.field_count, smp.field_count);
        for (uint32_t i = 0; i < smp.field_count; i++)
            assert_true(back.fields[i].field == fields[i].field &&
                        back.fields[i].source_bytes == fields[i].source_bytes &&
                        back.fields[i].source_xxh3 == fields[i].source_xxh3);
        shard_sample_release(&back);
        shard_buf_release(&line);
    }
    /* lines of another layout (spaces, another order, upper-case hex) read as
     * jansson reads them; refusals stay refusals */
    static const char *const same[] = {
        "{\"key\": \"a.jpg\", \"label\": 3, \"shard\": 1, \"record\": 2, \"width\": 4, "
        "\"height\": 5, \"source_bytes\": 6, \"source_xxh3\": \"00000000000000ff\"}",
        "{\"label\":3,\"key\":\"a.jpg\",\"shard\":1,\"record\":2,\"width\":4,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000ff\"}",
        "{\"key\":\"a.jpg\",\"label\":3,\"shard\":1,\"record\":2,\"width\":4,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000FF\"}",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        struct shard_sample back;
        struct shard_reject rej;
        struct shard_err err;
        int got = shard_line_parse_fields(same[i], strlen(same[i]), NULL, &back, &rej, &err);
        if (got == 1) {
            assert_string_equal(back.key, "a.jpg");
            assert_true(back.label == 3 && back.shard == 1 && back.record == 2 &&
                        back.source_xxh3 == 0xff);
            shard_sample_release(&back);
        } else { /* what jansson's path says of upper-case hex */
            assert_true(got < 0);
        }
    }
    static const char *const refused[] = {
        "{\"key\":\"a.jpg\",\"label\":3,\"shard\":1,\"record\":2,\"width\":0,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000ff\"}",
        "{\"key\":\"a.jpg\",\"label\":3,\"shard\":1,\"record\":2,\"width\":4,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000ff\"}x",
        "{\"key\":\"a.jpg\",\"label\":-3,\"shard\":1,\"record\":2,\"width\":4,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000ff\"}",
        "{\"key\":\"a.jpg\",\"label\":03,\"shard\":1,\"record\":2,\"width\":4,\"height\":5,"
        "\"source_bytes\":6,\"source_xxh3\":\"00000000000000ff\"}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        struct shard_sample back;
        struct shard_reject rej;
        struct shard_err err;
        assert_true(
            shard_line_parse_fields(refused[i], strlen(refused[i]), NULL, &back, &rej, &err) < 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_round_trips_through_json),
        cmocka_unit_test(test_each_codec_has_its_default_zstd_level),
        cmocka_unit_test(test_inconsistent_manifests_are_refused),
        cmocka_unit_test(test_extreme_manifests_shardify_can_write_load_back),
        cmocka_unit_test(test_class_numbers_load_other_unsorted_labels_do_not),
        cmocka_unit_test(test_warned_counts_and_warning_fields_round_trip),
        cmocka_unit_test(test_lineage_is_added_last_and_changes_nothing_else),
        cmocka_unit_test(test_missing_manifest_is_not_found),
        cmocka_unit_test(test_sample_lines_keep_keys_byte_exact),
        cmocka_unit_test(test_sample_lines_are_janssons_bytes_and_read_back),
        cmocka_unit_test(test_reject_lines_parse_as_rejects),
        cmocka_unit_test(test_index_reader_streams_lines_and_hashes_them),
        cmocka_unit_test(test_a_corrupt_index_line_is_an_error_even_without_err),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
