/* test_record_fields.c - fields in the format (version 2): records that carry
 * them, shards of version 2, the manifest's declarations and counts, index
 * lines with field identities, and the checks of stored values.  Values are
 * checked against what the test generated itself, never against another
 * reading by the code under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "shardkit.h"

/* ---- a small random generator (SplitMix64), so runs are reproducible ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One generated field value, kept apart from the code under test. */
struct gen_value {
    uint32_t field;
    enum shard_field_type type;
    uint8_t bytes[64];
    size_t len;
};

static const enum shard_field_type all_types[] = {
    SHARD_FIELD_TEXT,    SHARD_FIELD_JSON,  SHARD_FIELD_INT,    SHARD_FIELD_FLOAT,
    SHARD_FIELD_FLOAT32, SHARD_FIELD_INT64, SHARD_FIELD_LABELS, SHARD_FIELD_BYTES,
};

static size_t gen_len(enum shard_field_type t)
{
    switch (t) {
    case SHARD_FIELD_INT:
    case SHARD_FIELD_FLOAT: return 8;
    case SHARD_FIELD_FLOAT32:
    case SHARD_FIELD_LABELS: return 4 * (rng() % 16);
    case SHARD_FIELD_INT64: return 8 * (rng() % 8);
    default: return rng() % 65;
    }
}

/* A random subset of fields 0..count-1 of random types and values. */
static size_t gen_values(struct gen_value *v, uint32_t count)
{
    size_t n = 0;
    for (uint32_t f = 0; f < count; f++) {
        if (rng() % 3 == 0)
            continue;
        v[n].field = f;
        v[n].type = all_types[f % 8];
        v[n].len = gen_len(v[n].type);
        for (size_t i = 0; i < v[n].len; i++)
            v[n].bytes[i] = (uint8_t)rng();
        n++;
    }
    return n;
}

static void encode(struct shard_record_encoder *enc, const struct gen_value *v, size_t n,
                   struct shard_field_set *set, struct shard_buf *frame, uint64_t *h)
{
    struct shard_err err;
    shard_field_set_clear(set);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shard_field_set_add(set, v[i].field, v[i].type, v[i].bytes, v[i].len,
                                             &err),
                         0);
    uint8_t px[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    struct shard_record_meta meta = {
        .label = 4, .width = 2, .height = 2, .channels = 3, .codec = SHARD_CODEC_RAW};
    assert_int_equal(shard_record_encode_fields(enc, &meta, (const uint8_t *)"a/b.jpg", 7, px,
                                                sizeof px, set, frame, h, &err),
                     0);
}

static void test_random_field_sets_round_trip(void **state)
{
    (void)state;
    rng_state = 42;
    struct shard_record_encoder *enc;
    struct shard_record_decoder *dec;
    struct shard_err err;
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    struct shard_field_set set = {0};
    struct shard_buf frame = {0};
    for (int round = 0; round < 2000; round++) {
        struct gen_value v[40];
        size_t n = gen_values(v, 40);
        uint64_t h;
        encode(enc, v, n, &set, &frame, &h);
        struct shard_record_view view;
        assert_int_equal(shard_record_decode(dec, frame.data, frame.len, &h, &view, &err), 0);
        assert_int_equal(view.version, 2);
        assert_int_equal(view.meta.label, 4);
        assert_int_equal(view.payload_len, 12);
        assert_int_equal(view.payload[11], 12);
        struct shard_field_value got[40];
        assert_int_equal(shard_record_fields(&view, got, 40), n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(got[i].field, v[i].field);
            assert_int_equal(got[i].type, v[i].type);
            assert_int_equal(got[i].len, v[i].len);
            assert_true(v[i].len == 0 || memcmp(got[i].data, v[i].bytes, v[i].len) == 0);
        }
    }
    shard_field_set_release(&set);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
    shard_record_decoder_free(dec);
}

static void test_version_1_records_are_unchanged(void **state)
{
    (void)state;
    struct shard_record_encoder *enc;
    struct shard_record_decoder *dec;
    struct shard_err err;
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    uint8_t px[3] = {9, 8, 7};
    struct shard_record_meta meta = {
        .label = -1, .width = 1, .height = 1, .channels = 3, .codec = SHARD_CODEC_RAW};
    struct shard_buf frame = {0};
    uint64_t h;
    assert_int_equal(shard_record_encode(enc, &meta, (const uint8_t *)"k", 1, px, 3, &frame, &h,
                                         &err),
                     0);
    /* the content starts "SKR1" and has 0 in the reserved field */
    uint8_t content[64];
    size_t n = ZSTD_decompress(content, sizeof content, frame.data, frame.len);
    assert_false(ZSTD_isError(n));
    assert_int_equal(n, 32 + 1 + 3);
    assert_memory_equal(content, "SKR1", 4);
    assert_int_equal(content[22] | content[23], 0);
    struct shard_record_view view;
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len, NULL, &view, &err), 0);
    assert_int_equal(view.version, 1);
    assert_int_equal(view.field_count, 0);
    assert_null(view.fields);
    /* a version 2 record without fields: SKR2, field_count 0, nothing after the payload */
    assert_int_equal(shard_record_encode_fields(enc, &meta, (const uint8_t *)"k", 1, px, 3, NULL,
                                                &frame, &h, &err),
                     0);
    n = ZSTD_decompress(content, sizeof content, frame.data, frame.len);
    assert_int_equal(n, 32 + 1 + 3);
    assert_memory_equal(content, "SKR2", 4);
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len, NULL, &view, &err), 0);
    assert_int_equal(view.version, 2);
    assert_int_equal(view.field_count, 0);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
    shard_record_decoder_free(dec);
}

/* Compress `content` into a frame as the format wants it (content size and
 * checksum present). */
static size_t compress_content(const uint8_t *content, size_t n, uint8_t *frame, size_t cap)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    size_t r = ZSTD_compress2(c, frame, cap, content, n);
    ZSTD_freeCCtx(c);
    assert_false(ZSTD_isError(r));
    return r;
}

/* Damage in the field area of a record (the frame itself intact: a writer
 * that got it wrong) is refused, or, when the bytes still form a valid
 * area, every entry the walk gives lies inside it and they tile it.  A
 * reserved byte that is not 0, or a type no version defines, is refused
 * naming what it is (a reserved byte is not an unknown type). */
static void test_damaged_field_areas_are_refused_or_walk_inside(void **state)
{
    (void)state;
    rng_state = 7;
    struct shard_record_encoder *enc;
    struct shard_record_decoder *dec;
    struct shard_err err;
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    struct shard_field_set set = {0};
    struct shard_buf frame = {0};
    uint8_t content[4096], damaged[8192];
    size_t refused = 0, accepted = 0;
    for (int round = 0; round < 300; round++) {
        struct gen_value v[12];
        size_t n = gen_values(v, 12);
        if (n == 0)
            continue;
        uint64_t h;
        encode(enc, v, n, &set, &frame, &h);
        size_t len = ZSTD_decompress(content, sizeof content, frame.data, frame.len);
        assert_false(ZSTD_isError(len));
        size_t area = len - set.area.len; /* where the field area starts */
        for (int k = 0; k < 20; k++) {
            uint8_t copy[4096];
            memcpy(copy, content, len);
            size_t at = area + rng() % set.area.len;
            copy[at] ^= (uint8_t)(1u << (rng() % 8));
            if (rng() % 4 == 0) /* the field count too */
                copy[22] = (uint8_t)(rng() % 16);
            size_t fl = compress_content(copy, len, damaged, sizeof damaged);
            struct shard_record_view view;
            int rc = shard_record_decode(dec, damaged, fl, NULL, &view, &err);
            if (rc) {
                assert_int_equal(rc, SHARD_ECORRUPT);
                refused++;
                continue;
            }
            accepted++;
            struct shard_field_value got[64];
            uint32_t count = shard_record_fields(&view, got, 64);
            assert_true(count <= 64);
            const uint8_t *end = view.fields + view.fields_len;
            const uint8_t *p = view.fields;
            for (uint32_t i = 0; i < count; i++) {
                assert_ptr_equal(got[i].data, p + 8);
                assert_true(got[i].data + got[i].len <= end);
                assert_true(i == 0 || got[i].field > got[i - 1].field);
                p = got[i].data + got[i].len;
            }
            assert_ptr_equal(p, end);
        }
    }
    assert_true(refused > 0);
    assert_true(accepted > 0); /* a flipped value byte changes nothing structural */
    struct gen_value one = {.field = 0, .type = SHARD_FIELD_TEXT, .bytes = "hi", .len = 2};
    uint64_t h;
    encode(enc, &one, 1, &set, &frame, &h);
    size_t len = ZSTD_decompress(content, sizeof content, frame.data, frame.len);
    assert_false(ZSTD_isError(len));
    size_t entry = len - set.area.len; /* the field area's one entry */
    static const struct {
        size_t at;
        uint8_t value;
        const char *says;
    } named[] = {
        {3, 1, "field entry 0: its reserved byte is 1, not 0"},
        {3, 0x80, "field entry 0: its reserved byte is 128, not 0"},
        {2, 200, "field entry 0: unknown type 200"},
        {2, 0, "field entry 0: unknown type 0"},
    };
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        uint8_t copy[4096];
        memcpy(copy, content, len);
        copy[entry + named[i].at] = named[i].value;
        size_t fl = compress_content(copy, len, damaged, sizeof damaged);
        struct shard_record_view view;
        assert_int_equal(shard_record_decode(dec, damaged, fl, NULL, &view, &err), SHARD_ECORRUPT);
        assert_non_null(strstr(err.msg, named[i].says));
    }
    shard_field_set_release(&set);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
    shard_record_decoder_free(dec);
}

static void test_field_set_refuses_what_no_record_can_hold(void **state)
{
    (void)state;
    struct shard_field_set set = {0};
    struct shard_err err;
    uint8_t eight[8] = {0};
    assert_int_equal(shard_field_set_add(&set, 3, SHARD_FIELD_INT, eight, 8, &err), 0);
    /* out of order, twice, too far */
    assert_int_equal(shard_field_set_add(&set, 3, SHARD_FIELD_INT, eight, 8, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 1, SHARD_FIELD_INT, eight, 8, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, SHARD_FIELDS_MAX, SHARD_FIELD_TEXT, "", 0, &err),
                     SHARD_EINVAL);
    /* sizes that suit no value of the type */
    assert_int_equal(shard_field_set_add(&set, 4, SHARD_FIELD_INT, eight, 4, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 4, SHARD_FIELD_FLOAT32, eight, 6, &err),
                     SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 4, SHARD_FIELD_INT64, eight, 4, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 4, (enum shard_field_type)9, eight, 4, &err),
                     SHARD_EINVAL);
    /* nothing of the refused ones went in */
    assert_int_equal(set.count, 1);
    assert_int_equal(set.area.len, 16);
    shard_field_set_release(&set);
}

static void test_field_types_parse_as_written(void **state)
{
    (void)state;
    struct {
        const char *s;
        enum shard_field_type t;
        uint32_t length;
    } good[] = {
        {"text", SHARD_FIELD_TEXT, 0},
        {"json", SHARD_FIELD_JSON, 0},
        {"int", SHARD_FIELD_INT, 0},
        {"float", SHARD_FIELD_FLOAT, 0},
        {"float32[512]", SHARD_FIELD_FLOAT32, 512},
        {"int64[1]", SHARD_FIELD_INT64, 1},
        {"labels", SHARD_FIELD_LABELS, 0},
        {"bytes", SHARD_FIELD_BYTES, 0},
        {"float32[1048576]", SHARD_FIELD_FLOAT32, 1048576},
    };
    struct shard_err err;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        enum shard_field_type t;
        uint32_t length = 99;
        assert_int_equal(shard_field_type_parse(good[i].s, &t, &length, &err), 0);
        assert_int_equal(t, good[i].t);
        assert_int_equal(length, good[i].length);
    }
    const char *bad[] = {"",
                         "Text",
                         "float32",
                         "float32[]",
                         "float32[0]",
                         "float32[07]",
                         "float32[1048577]",
                         "float32[99999999999999999999]",
                         "int64[3]x",
                         "text[3]",
                         "float64",
                         "labels[2]",
                         "float32[-1]",
                         "int [3]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum shard_field_type t;
        uint32_t length;
        assert_int_equal(shard_field_type_parse(bad[i], &t, &length, &err), SHARD_EINVAL);
        assert_true(strlen(err.msg) > 0);
    }
    assert_string_equal(shard_field_type_name(SHARD_FIELD_LABELS), "labels");
    assert_null(shard_field_type_name((enum shard_field_type)0));
    assert_null(shard_field_type_name((enum shard_field_type)200));
}

static void test_field_names(void **state)
{
    (void)state;
    assert_true(shard_field_name_valid("caption"));
    assert_true(shard_field_name_valid("_x.y-z9"));
    assert_true(shard_field_name_valid("A"));
    char longest[SHARD_FIELD_NAME_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[SHARD_FIELD_NAME_MAX] = '\0';
    assert_true(shard_field_name_valid(longest));
    longest[SHARD_FIELD_NAME_MAX] = 'a';
    longest[SHARD_FIELD_NAME_MAX + 1] = '\0';
    assert_false(shard_field_name_valid(longest));
    const char *bad[] = {"", "9a", ".a", "-a", "a b", "a/b", "caf\xc3\xa9", "a\"", "a=b", "a,b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(shard_field_name_valid(bad[i]));
}

/* ---- shards of version 2 --------------------------------------------------- */

static void test_version_2_shards_hold_version_2_records_only(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_fields.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/shard-000000.shard", dir);
    struct shard_err err;
    struct shard_writer *w;
    struct shard_record_encoder *enc;
    struct shard_record_decoder *dec;
    assert_int_equal(shard_writer_open_version(&w, path, 0, 3, &err), SHARD_EINVAL);
    assert_int_equal(shard_writer_open_version(&w, path, 0, SHARD_FORMAT_VERSION_FIELDS, &err), 0);
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    uint8_t px[3] = {1, 2, 3};
    struct shard_record_meta meta = {
        .label = -1, .width = 1, .height = 1, .channels = 3, .codec = SHARD_CODEC_RAW};
    struct shard_field_set set = {0};
    assert_int_equal(shard_field_set_add(&set, 0, SHARD_FIELD_TEXT, "hello", 5, &err), 0);
    struct shard_buf frame = {0};
    uint64_t h, bytes, xxh3;
    assert_int_equal(shard_record_encode_fields(enc, &meta, (const uint8_t *)"a", 1, px, 3, &set,
                                                &frame, &h, &err),
                     0);
    assert_int_equal(shard_writer_add(w, frame.data, frame.len, h, (const uint8_t *)"a", 1, -1,
                                      &err),
                     0);
    /* a version 1 record does not belong in a version 2 shard */
    assert_int_equal(shard_record_encode(enc, &meta, (const uint8_t *)"b", 1, px, 3, &frame, &h,
                                         &err),
                     0);
    assert_int_equal(shard_writer_add(w, frame.data, frame.len, h, (const uint8_t *)"b", 1, -1,
                                      &err),
                     0);
    assert_int_equal(shard_writer_finish(w, &bytes, &xxh3, &err), 0);
    shard_writer_free(w);

    struct shard_file *f;
    assert_int_equal(shard_file_open(&f, path, &err), 0);
    assert_int_equal(shard_file_version(f), 2);
    struct shard_record_view view;
    assert_int_equal(shard_file_read_record(f, 0, dec, &view, &err), 0);
    struct shard_field_value v;
    assert_int_equal(shard_record_fields(&view, &v, 1), 1);
    assert_int_equal(v.len, 5);
    assert_memory_equal(v.data, "hello", 5);
    assert_int_equal(shard_file_read_record(f, 1, dec, &view, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "a version 1 record in a version 2 shard"));
    assert_non_null(strstr(err.msg, "record 1 (key 'b')"));
    shard_file_close(f);

    /* a shard header of version 3 is not ours to read */
    uint8_t head[32];
    FILE *fp = fopen(path, "rb");
    assert_int_equal(fread(head, 1, 32, fp), 32);
    fclose(fp);
    uint32_t index;
    uint16_t version;
    assert_int_equal(shard_header_parse_version(head, 32, &index, &version, &err), 0);
    assert_int_equal(version, 2);
    head[8] = 3;
    uint64_t check = XXH3_64bits(head, 24);
    memcpy(head + 24, &check, 8); /* little-endian host */
    assert_int_equal(shard_header_parse(head, 32, &index, &err), SHARD_EUNSUPPORTED);

    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    shard_field_set_release(&set);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
    shard_record_decoder_free(dec);
}

/* ---- stored values ----------------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void test_stored_values_are_checked_by_type(void **state)
{
    (void)state;
    struct shard_err err;
    struct shard_field_decl text = {.name = "t", .type = SHARD_FIELD_TEXT};
    struct shard_field_decl json = {.name = "j", .type = SHARD_FIELD_JSON};
    struct shard_field_decl flt = {.name = "f", .type = SHARD_FIELD_FLOAT};
    struct shard_field_decl vec = {.name = "v", .type = SHARD_FIELD_FLOAT32, .length = 2};
    struct shard_field_decl ivec = {.name = "i", .type = SHARD_FIELD_INT64, .length = 1};
    struct shard_field_decl labels = {.name = "l", .type = SHARD_FIELD_LABELS};

    assert_int_equal(shard_field_check(&text, (const uint8_t *)"caf\xc3\xa9", 5, 0, &err), 0);
    assert_int_equal(shard_field_check(&text, (const uint8_t *)"ab\xc3", 3, 0, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "text is not valid UTF-8 at byte 2");
    assert_int_equal(shard_field_check(&json, (const uint8_t *)" {\"a\": [1, 2]}\n", 15, 0, &err),
                     0);
    assert_int_equal(shard_field_check(&json, (const uint8_t *)"\"x\"", 3, 0, &err), 0);
    assert_int_equal(shard_field_check(&json, (const uint8_t *)"{\"a\": 1,}", 9, 0, &err),
                     SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "invalid JSON: line 1 column"));
    assert_int_equal(shard_field_check(&json, (const uint8_t *)"1 2", 3, 0, &err), SHARD_ECORRUPT);
    /* what RFC 8259 allows and a strict int64 reader would not */
    const char *big = "{\"hash\": 18446744073709551615, \"s\": \"a\\u0000b\"}";
    assert_int_equal(shard_field_check(&json, (const uint8_t *)big, strlen(big), 0, &err), 0);

    uint8_t b[16];
    double d = 1.5;
    memcpy(b, &d, 8);
    assert_int_equal(shard_field_check(&flt, b, 8, 0, &err), 0);
    d = NAN;
    memcpy(b, &d, 8);
    assert_int_equal(shard_field_check(&flt, b, 8, 0, &err), SHARD_ECORRUPT);
    d = INFINITY;
    memcpy(b, &d, 8);
    assert_int_equal(shard_field_check(&flt, b, 8, 0, &err), SHARD_ECORRUPT);

    float v2[2] = {1.0f, -2.0f};
    assert_int_equal(shard_field_check(&vec, (const uint8_t *)v2, 8, 0, &err), 0);
    assert_int_equal(shard_field_check(&vec, (const uint8_t *)v2, 4, 0, &err), SHARD_ECORRUPT);
    v2[1] = NAN;
    assert_int_equal(shard_field_check(&vec, (const uint8_t *)v2, 8, 0, &err), SHARD_ECORRUPT);
    put64(b, (uint64_t)-5);
    assert_int_equal(shard_field_check(&ivec, b, 8, 0, &err), 0);
    assert_int_equal(shard_field_check(&ivec, b, 16, 0, &err), SHARD_ECORRUPT);

    uint32_t ok[3] = {2, 0, 1}, twice[3] = {2, 0, 2}, beyond[2] = {0, 3};
    assert_int_equal(shard_field_check(&labels, (const uint8_t *)ok, 12, 3, &err), 0);
    assert_int_equal(shard_field_check(&labels, (const uint8_t *)ok, 0, 0, &err), 0);
    assert_int_equal(shard_field_check(&labels, (const uint8_t *)twice, 12, 3, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "label number 2 is listed twice");
    assert_int_equal(shard_field_check(&labels, (const uint8_t *)beyond, 8, 3, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "label number 3 is not below 3");
}

/* ---- the manifest and index lines of version 2 ------------------------------ */

static void make_config(struct shard_config *c)
{
    shard_config_init(c);
    c->labels = strdup("none");
    c->field_count = 3;
    c->fields = calloc(3, sizeof *c->fields);
    c->fields[0] = (struct shard_field_decl){.name = strdup("caption"),
                                             .type = SHARD_FIELD_TEXT,
                                             .sidecar = strdup(".txt"),
                                             .required = 1};
    c->fields[1] = (struct shard_field_decl){.name = strdup("emb"),
                                             .type = SHARD_FIELD_FLOAT32,
                                             .length = 4,
                                             .column = strdup("embedding")};
    c->fields[2] = (struct shard_field_decl){.name = strdup("meta"),
                                             .type = SHARD_FIELD_JSON,
                                             .sidecar = strdup(".meta.json")};
    c->annotations = strdup("file:ann.jsonl:0123456789abcdef");
    c->max_field_bytes = 1000;
}

static void test_a_manifest_with_fields_round_trips(void **state)
{
    (void)state;
    struct shard_manifest m = {0};
    make_config(&m.config);
    m.samples = 2;
    m.unlabeled = 2;
    m.source_kind = strdup("directory");
    uint64_t counts[3] = {2, 1, 0};
    m.field_samples = counts;
    m.sidecars = 2;
    struct shard_orphan orphans[2] = {{"a/zz.txt", 8}, {"b/\xff.txt", 7}};
    m.orphans = orphans;
    m.orphan_count = 2;
    m.annotation_rows = 5;
    m.annotation_rows_unmatched = 4;
    struct shard_manifest_shard shard = {"shard-000000.shard", 2, 100, 7};
    m.shards = &shard;
    m.shard_count = 1;
    m.index_file = "index.jsonl";
    m.index_entries = 2;
    struct shard_err err;
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    assert_non_null(strstr(text, "\"version\": 2"));
    assert_non_null(strstr(text, "\"type\": \"float32[4]\""));
    assert_non_null(strstr(text, "\"key_hex\": \"622fff2e747874\""));

    struct shard_manifest back;
    assert_int_equal(shard_manifest_load_buffer(text, strlen(text), &back, &err), 0);
    assert_int_equal(back.version, 2);
    assert_int_equal(back.config.field_count, 3);
    assert_string_equal(back.config.fields[0].name, "caption");
    assert_string_equal(back.config.fields[0].sidecar, ".txt");
    assert_null(back.config.fields[0].column);
    assert_true(back.config.fields[0].required);
    assert_int_equal(back.config.fields[1].type, SHARD_FIELD_FLOAT32);
    assert_int_equal(back.config.fields[1].length, 4);
    assert_string_equal(back.config.fields[1].column, "embedding");
    assert_false(back.config.fields[1].required);
    assert_string_equal(back.config.fields[2].sidecar, ".meta.json");
    assert_string_equal(back.config.annotations, "file:ann.jsonl:0123456789abcdef");
    assert_int_equal(back.config.max_field_bytes, 1000);
    assert_int_equal(back.field_samples[0], 2);
    assert_int_equal(back.field_samples[1], 1);
    assert_int_equal(back.field_samples[2], 0);
    assert_int_equal(back.sidecars, 2);
    assert_int_equal(back.orphan_count, 2);
    assert_int_equal(back.orphans[1].key_len, 7);
    assert_memory_equal(back.orphans[1].key, "b/\xff.txt", 7);
    assert_int_equal(back.annotation_rows, 5);
    assert_int_equal(back.annotation_rows_unmatched, 4);
    assert_int_equal(shard_config_field(&back.config, "meta"), 2);
    assert_int_equal(shard_config_field(&back.config, "nope"), -1);
    /* the same bytes again */
    char *again;
    assert_int_equal(shard_manifest_dump(&back, &again, &err), 0);
    assert_string_equal(text, again);
    free(again);
    shard_manifest_release(&back);

    /* a version 1 manifest may not declare fields, nor may a field be declared twice */
    char *v1 = strdup(text);
    char *at = strstr(v1, "\"version\": 2");
    at[11] = '1';
    assert_int_equal(shard_manifest_load_buffer(v1, strlen(v1), &back, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "a version 1 config has fields"));
    /* version 3 says what its pixels are; a later version is refused */
    at[11] = '3';
    assert_int_equal(shard_manifest_load_buffer(v1, strlen(v1), &back, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "config.pixels is not"));
    at[11] = '4';
    assert_int_equal(shard_manifest_load_buffer(v1, strlen(v1), &back, &err), SHARD_EUNSUPPORTED);
    free(v1);
    char *twice = strdup(text);
    at = strstr(twice, "\"name\": \"meta\"");
    memcpy(at, "\"name\": \"emb\" ", 14);
    assert_int_equal(shard_manifest_load_buffer(twice, strlen(twice), &back, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "field 'emb' is declared twice"));
    free(twice);
    char *noorigin = strdup(text);
    at = strstr(noorigin, "\"sidecar\": \".txt\"");
    memcpy(at, "\"sidecar\": \"txt\" ", 17);
    assert_int_equal(shard_manifest_load_buffer(noorigin, strlen(noorigin), &back, &err),
                     SHARD_ECORRUPT);
    free(noorigin);
    free(text);

    m.field_samples = NULL;
    m.orphans = NULL;
    m.orphan_count = 0;
    m.shards = NULL;
    m.shard_count = 0;
    m.index_file = NULL;
    shard_manifest_release(&m);
}

static void test_a_manifest_without_fields_stays_version_1(void **state)
{
    (void)state;
    struct shard_manifest m = {0};
    shard_config_init(&m.config);
    m.source_kind = strdup("directory");
    struct shard_err err;
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    assert_non_null(strstr(text, "\"version\": 1"));
    assert_null(strstr(text, "fields"));
    assert_null(strstr(text, "orphans"));
    assert_null(strstr(text, "max_field_bytes"));
    struct shard_manifest back;
    assert_int_equal(shard_manifest_load_buffer(text, strlen(text), &back, &err), 0);
    assert_int_equal(back.version, 1);
    assert_int_equal(back.config.field_count, 0);
    shard_manifest_release(&back);
    free(text);
    shard_manifest_release(&m);
}

static void test_index_lines_name_their_fields(void **state)
{
    (void)state;
    struct shard_config c;
    make_config(&c);
    struct shard_field_source src[2] = {{0, 12, 0xabcdef0123456789ull},
                                        {2, 0, 0x2d06800538d394c2ull}};
    struct shard_sample s = {.key = "a/x.jpg",
                             .key_len = 7,
                             .label = -1,
                             .width = 2,
                             .height = 3,
                             .source_bytes = 9,
                             .source_xxh3 = 1,
                             .fields = src,
                             .field_count = 2};
    struct shard_buf line = {0};
    struct shard_err err;
    assert_int_equal(shard_sample_line_fields(&s, &c, &line, &err), 0);
    const char *want = "\"fields\":{\"caption\":{\"source_bytes\":12,\"source_xxh3\":"
                       "\"abcdef0123456789\"},\"meta\":{\"source_bytes\":0,";
    assert_non_null(memmem(line.data, line.len, want, strlen(want)));
    struct shard_sample back;
    struct shard_reject r;
    assert_int_equal(shard_line_parse_fields((char *)line.data, line.len - 1, &c, &back, &r, &err),
                     1);
    assert_int_equal(back.field_count, 2);
    assert_int_equal(back.fields[0].field, 0);
    assert_int_equal(back.fields[0].source_bytes, 12);
    assert_int_equal(back.fields[0].source_xxh3, 0xabcdef0123456789ull);
    assert_int_equal(back.fields[1].field, 2);
    shard_sample_release(&back);
    /* read without the config: fields in a dataset that has none */
    assert_true(shard_line_parse((char *)line.data, line.len - 1, &back, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "\"fields\" in a dataset without fields"));
    /* a sample without fields in a dataset with them says so: "fields":{} */
    line.len = 0;
    s.field_count = 0;
    assert_int_equal(shard_sample_line_fields(&s, &c, &line, &err), 0);
    assert_non_null(memmem(line.data, line.len, "\"fields\":{}", 11));
    assert_int_equal(shard_line_parse_fields((char *)line.data, line.len - 1, &c, &back, &r, &err),
                     1);
    assert_int_equal(back.field_count, 0);
    shard_sample_release(&back);
    /* a field the dataset does not declare */
    const char *unknown = "{\"key\":\"k\",\"label\":null,\"shard\":0,\"record\":0,\"width\":1,"
                          "\"height\":1,\"source_bytes\":1,\"source_xxh3\":\"0000000000000001\","
                          "\"fields\":{\"nope\":{\"source_bytes\":1,\"source_xxh3\":"
                          "\"0000000000000001\"}}}";
    assert_true(shard_line_parse_fields(unknown, strlen(unknown), &c, &back, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "field 'nope' is not declared"));
    /* a line of a dataset with fields must say which it has */
    const char *silent = "{\"key\":\"k\",\"label\":null,\"shard\":0,\"record\":0,\"width\":1,"
                         "\"height\":1,\"source_bytes\":1,\"source_xxh3\":\"0000000000000001\"}";
    assert_true(shard_line_parse_fields(silent, strlen(silent), &c, &back, &r, &err) < 0);
    /* fields out of order or not declared cannot be written */
    struct shard_field_source bad[2] = {{2, 0, 0}, {0, 0, 0}};
    s.fields = bad;
    s.field_count = 2;
    line.len = 0;
    assert_int_equal(shard_sample_line_fields(&s, &c, &line, &err), SHARD_EINVAL);
    assert_int_equal(shard_sample_line(&s, &line, &err), SHARD_EINVAL);
    shard_buf_release(&line);
    shard_config_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_field_sets_round_trip),
        cmocka_unit_test(test_version_1_records_are_unchanged),
        cmocka_unit_test(test_damaged_field_areas_are_refused_or_walk_inside),
        cmocka_unit_test(test_field_set_refuses_what_no_record_can_hold),
        cmocka_unit_test(test_field_types_parse_as_written),
        cmocka_unit_test(test_field_names),
        cmocka_unit_test(test_version_2_shards_hold_version_2_records_only),
        cmocka_unit_test(test_stored_values_are_checked_by_type),
        cmocka_unit_test(test_a_manifest_with_fields_round_trips),
        cmocka_unit_test(test_a_manifest_without_fields_stays_version_1),
        cmocka_unit_test(test_index_lines_name_their_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
