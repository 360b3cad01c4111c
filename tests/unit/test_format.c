/* test_format.c - the shard file format: records, writer, reader, and that
 * damage anywhere in a shard is detected rather than crashing or passing. */
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

#include "shardkit.h"

#define RECORDS 7

struct fixture {
    char dir[64];
    char path[128];
    uint64_t bytes;
    uint64_t xxh3;
};

static void payload_for(int i, uint8_t *buf, size_t n)
{
    for (size_t j = 0; j < n; j++)
        buf[j] = (uint8_t)(i * 31 + j * 7);
}

/* Write a shard of RECORDS raw 4x3 records with keys "k/<i>.jpg" and labels
 * i % 3 (the last one unlabeled). */
static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/test_format.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/shard-000003.shard", f->dir);
    struct shard_writer *w;
    struct shard_record_encoder *enc;
    struct shard_err err;
    assert_int_equal(shard_writer_open(&w, f->path, 3, &err), 0);
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    struct shard_buf frame = {0};
    for (int i = 0; i < RECORDS; i++) {
        uint8_t px[4 * 3 * 3];
        payload_for(i, px, sizeof px);
        char key[32];
        snprintf(key, sizeof key, "k/%d.jpg", i);
        struct shard_record_meta meta = {.label = i == RECORDS - 1 ? SHARD_NO_LABEL : i % 3,
                                         .width = 4,
                                         .height = 3,
                                         .channels = 3,
                                         .codec = SHARD_CODEC_RAW};
        uint64_t h;
        assert_int_equal(shard_record_encode(enc, &meta, (uint8_t *)key, strlen(key), px, sizeof px,
                                             &frame, &h, &err),
                         0);
        uint64_t before = shard_writer_projected_bytes(w, frame.len, strlen(key));
        assert_int_equal(shard_writer_add(w, frame.data, frame.len, h, (uint8_t *)key, strlen(key),
                                          meta.label, &err),
                         0);
        assert_int_equal(shard_writer_projected_bytes(w, 0, 0), before);
    }
    uint64_t projected = shard_writer_projected_bytes(w, 0, 0);
    assert_int_equal(shard_writer_finish(w, &f->bytes, &f->xxh3, &err), 0);
    assert_int_equal(f->bytes, projected);
    shard_writer_free(w);
    shard_record_encoder_free(enc);
    shard_buf_release(&frame);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *buf = malloc(*len);
    assert_int_equal(fread(buf, 1, *len, fp), *len);
    fclose(fp);
    return buf;
}

static void spit(const char *path, const uint8_t *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(buf, 1, len, fp), len);
    fclose(fp);
}

static void test_written_shard_reads_back_every_record(void **state)
{
    struct fixture *f = *state;
    struct shard_file *sf;
    struct shard_record_decoder *dec;
    struct shard_err err;
    assert_int_equal(shard_file_open(&sf, f->path, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    assert_int_equal(shard_file_records(sf), RECORDS);
    assert_int_equal(shard_file_index(sf), 3);
    assert_int_equal(shard_file_bytes(sf), f->bytes);
    for (int i = 0; i < RECORDS; i++) {
        struct shard_record_view v;
        assert_int_equal(shard_file_read_record(sf, (uint64_t)i, dec, &v, &err), 0);
        char key[32];
        snprintf(key, sizeof key, "k/%d.jpg", i);
        assert_int_equal(v.key_len, strlen(key));
        assert_memory_equal(v.key, key, v.key_len);
        assert_int_equal(v.meta.label, i == RECORDS - 1 ? -1 : i % 3);
        assert_int_equal(v.meta.width, 4);
        assert_int_equal(v.meta.height, 3);
        assert_int_equal(v.meta.channels, 3);
        assert_int_equal(v.meta.codec, SHARD_CODEC_RAW);
        uint8_t px[36];
        payload_for(i, px, sizeof px);
        assert_int_equal(v.payload_len, sizeof px);
        assert_memory_equal(v.payload, px, sizeof px);
    }
    struct shard_record_view v;
    assert_int_equal(shard_file_read_record(sf, RECORDS, dec, &v, &err), SHARD_ENOTFOUND);
    shard_record_decoder_free(dec);
    shard_file_close(sf);
}

static void test_file_hash_matches_the_bytes_on_disk(void **state)
{
    struct fixture *f = *state;
    size_t len;
    uint8_t *buf = slurp(f->path, &len);
    assert_int_equal(len, f->bytes);
    assert_true(XXH3_64bits(buf, len) == f->xxh3);
    free(buf);
}

/* Flip one byte at `pos`; the shard must then fail to open, or some record
 * must fail to read (a byte inside a record frame is caught by the frame's
 * xxh3 and by zstd's checksum). */
static int flip_is_detected(struct fixture *f, const uint8_t *orig, size_t len, size_t pos)
{
    uint8_t *copy = malloc(len);
    memcpy(copy, orig, len);
    copy[pos] ^= 0x40;
    char path[160];
    snprintf(path, sizeof path, "%s/flipped.shard", f->dir);
    spit(path, copy, len);
    free(copy);
    struct shard_file *sf;
    struct shard_err err;
    int detected = 0;
    if (shard_file_open(&sf, path, &err) != 0) {
        assert_int_not_equal(err.msg[0], '\0');
        detected = 1;
    } else {
        struct shard_record_decoder *dec;
        assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
        for (uint64_t i = 0; i < shard_file_records(sf); i++) {
            struct shard_record_view v;
            if (shard_file_read_record(sf, i, dec, &v, &err) != 0) {
                assert_non_null(strstr(err.msg, "record"));
                detected = 1;
            }
        }
        shard_record_decoder_free(dec);
        shard_file_close(sf);
    }
    return detected;
}

static void test_a_flipped_byte_anywhere_is_detected(void **state)
{
    struct fixture *f = *state;
    size_t len;
    uint8_t *orig = slurp(f->path, &len);
    for (size_t pos = 0; pos < len; pos++)
        if (!flip_is_detected(f, orig, len, pos))
            fail_msg("flip at byte %zu of %zu went unnoticed", pos, len);
    free(orig);
}

static void test_truncated_shard_is_refused(void **state)
{
    struct fixture *f = *state;
    size_t len;
    uint8_t *orig = slurp(f->path, &len);
    char path[160];
    snprintf(path, sizeof path, "%s/short.shard", f->dir);
    size_t cuts[] = {0, 1, 31, 32, 100, len / 2, len - 41, len - 40, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spit(path, orig, cuts[i]);
        struct shard_file *sf;
        struct shard_err err;
        assert_int_equal(shard_file_open(&sf, path, &err), SHARD_ECORRUPT);
        assert_non_null(strstr(err.msg, "short.shard"));
        assert_null(sf);
    }
    free(orig);
}

/* A copy of the fixture's shard with byte `pos` flipped, at `path`. */
static void write_flipped(struct fixture *f, size_t pos, char *path, size_t path_size)
{
    size_t len;
    uint8_t *buf = slurp(f->path, &len);
    assert_true(pos < len);
    buf[pos] ^= 0x40;
    snprintf(path, path_size, "%s/shard-000000.shard", f->dir);
    spit(path, buf, len);
    free(buf);
}

/* The same shapes as a dataset's messages (test_dataset.c), with the path
 * standing for the shard: "PATH: reason" for the shard, "PATH record R (key
 * 'K'): reason" for a record. */
static void test_damage_is_named_as_a_dataset_names_it(void **state)
{
    struct fixture *f = *state;
    struct shard_file *sf;
    struct shard_err err;
    assert_int_equal(shard_file_open(&sf, f->path, &err), 0);
    const struct shard_index_row *row = &shard_file_footer(sf)->rows[2];
    size_t in_record = (size_t)(row->offset + row->frame_bytes / 2);
    size_t trailer_at = (size_t)(shard_file_bytes(sf) - SHARD_TRAILER_BYTES);
    shard_file_close(sf);

    char path[160], want[256];
    write_flipped(f, in_record, path, sizeof path);
    assert_int_equal(shard_file_open(&sf, path, &err), 0);
    struct shard_record_decoder *dec;
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    struct shard_record_view v;
    assert_int_equal(shard_file_read_record(sf, 2, dec, &v, &err), SHARD_ECORRUPT);
    snprintf(want, sizeof want, "%s record 2 (key 'k/2.jpg'): ", path);
    if (strncmp(err.msg, want, strlen(want)))
        fail_msg("'%s' does not start with '%s'", err.msg, want);
    assert_int_equal(err.code, SHARD_ECORRUPT);
    assert_int_equal(shard_file_read_record(sf, 1, dec, &v, &err), 0);
    shard_record_decoder_free(dec);
    shard_file_close(sf);

    write_flipped(f, trailer_at - 3, path, sizeof path); /* inside the footer's xxh3 */
    assert_int_equal(shard_file_open(&sf, path, &err), SHARD_ECORRUPT);
    snprintf(want, sizeof want, "%s: footer checksum mismatch", path);
    assert_string_equal(err.msg, want);
    assert_null(sf);
}

static void test_record_decode_refuses_a_wrong_hash_and_garbage(void **state)
{
    (void)state;
    struct shard_record_encoder *enc;
    struct shard_record_decoder *dec;
    struct shard_err err;
    struct shard_buf frame = {0};
    uint64_t h;
    assert_int_equal(shard_record_encoder_new(&enc, 1, &err), 0);
    assert_int_equal(shard_record_decoder_new(&dec, &err), 0);
    struct shard_record_meta meta = {
        .label = 5, .width = 2, .height = 1, .channels = 3, .codec = SHARD_CODEC_JPEG};
    const uint8_t payload[] = "not really a jpeg";
    assert_int_equal(shard_record_encode(enc, &meta, (const uint8_t *)"a", 1, payload,
                                         sizeof payload, &frame, &h, &err),
                     0);
    struct shard_record_view v;
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len, &h, &v, &err), 0);
    assert_int_equal(v.meta.label, 5);
    assert_int_equal(v.meta.codec, SHARD_CODEC_JPEG);
    uint64_t wrong = h ^ 1;
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len, &wrong, &v, &err),
                     SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "xxh3"));
    /* a frame cut short, and a frame with trailing bytes */
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len - 1, NULL, &v, &err),
                     SHARD_ECORRUPT);
    assert_int_equal(shard_buf_append(&frame, "x", 1, &err), 0);
    assert_int_equal(shard_record_decode(dec, frame.data, frame.len, NULL, &v, &err),
                     SHARD_ECORRUPT);
    const uint8_t junk[64] = {1, 2, 3};
    assert_int_equal(shard_record_decode(dec, junk, sizeof junk, NULL, &v, &err), SHARD_ECORRUPT);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
    shard_record_decoder_free(dec);
}

static void test_encoder_refuses_bad_records(void **state)
{
    (void)state;
    struct shard_record_encoder *enc;
    struct shard_err err;
    struct shard_buf frame = {0};
    uint64_t h;
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    struct shard_record_meta meta = {
        .label = -1, .width = 2, .height = 2, .channels = 3, .codec = SHARD_CODEC_RAW};
    uint8_t px[12] = {0};
    assert_int_equal(shard_record_encode(enc, &meta, (const uint8_t *)"k", 1, px, 11, &frame, &h,
                                         &err),
                     SHARD_EINVAL);
    assert_int_equal(shard_record_encode(enc, &meta, (const uint8_t *)"", 0, px, 12, &frame, &h,
                                         &err),
                     SHARD_EINVAL);
    struct shard_record_encoder *bad;
    assert_int_equal(shard_record_encoder_new(&bad, 0, &err), SHARD_EINVAL);
    assert_null(bad);
    shard_buf_release(&frame);
    shard_record_encoder_free(enc);
}

static void test_encoding_is_deterministic(void **state)
{
    (void)state;
    struct shard_record_encoder *a, *b;
    struct shard_err err;
    struct shard_buf fa = {0}, fb = {0};
    uint64_t ha, hb;
    assert_int_equal(shard_record_encoder_new(&a, 3, &err), 0);
    assert_int_equal(shard_record_encoder_new(&b, 3, &err), 0);
    uint8_t px[300];
    payload_for(9, px, sizeof px);
    struct shard_record_meta meta = {
        .label = 0, .width = 10, .height = 10, .channels = 3, .codec = SHARD_CODEC_RAW};
    assert_int_equal(shard_record_encode(a, &meta, (const uint8_t *)"x", 1, px, 300, &fa, &ha,
                                         &err),
                     0);
    assert_int_equal(shard_record_encode(b, &meta, (const uint8_t *)"x", 1, px, 300, &fb, &hb,
                                         &err),
                     0);
    assert_int_equal(fa.len, fb.len);
    assert_memory_equal(fa.data, fb.data, fa.len);
    assert_true(ha == hb);
    shard_buf_release(&fa);
    shard_buf_release(&fb);
    shard_record_encoder_free(a);
    shard_record_encoder_free(b);
}

static void test_writer_refuses_an_existing_file_and_leaves_it(void **state)
{
    struct fixture *f = *state;
    struct shard_writer *w;
    struct shard_err err;
    assert_int_equal(shard_writer_open(&w, f->path, 0, &err), SHARD_EIO);
    assert_null(w);
    assert_int_equal(access(f->path, F_OK), 0);
}

static void test_unfinished_writer_removes_its_file(void **state)
{
    struct fixture *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/partial.shard", f->dir);
    struct shard_writer *w;
    struct shard_err err;
    assert_int_equal(shard_writer_open(&w, path, 0, &err), 0);
    assert_int_equal(shard_writer_add(w, (const uint8_t *)"abc", 3, 1, (const uint8_t *)"k", 1, -1,
                                      &err),
                     0);
    shard_writer_free(w);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_hex64_round_trip_and_refusals(void **state)
{
    (void)state;
    char hex[17];
    uint64_t v;
    shard_hex64(0x0123456789abcdefull, hex);
    assert_string_equal(hex, "0123456789abcdef");
    assert_int_equal(shard_hex64_parse(hex, &v), 0);
    assert_true(v == 0x0123456789abcdefull);
    assert_int_equal(shard_hex64_parse("0123456789ABCDEF", &v), SHARD_EINVAL);
    assert_int_equal(shard_hex64_parse("0123", &v), SHARD_EINVAL);
    assert_int_equal(shard_hex64_parse("0123456789abcdef0", &v), SHARD_EINVAL);
    char name[32];
    shard_file_name(42, name, sizeof name);
    assert_string_equal(name, "shard-000042.shard");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written_shard_reads_back_every_record, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_hash_matches_the_bytes_on_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_flipped_byte_anywhere_is_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_shard_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_is_named_as_a_dataset_names_it, setup,
                                        teardown),
        cmocka_unit_test(test_record_decode_refuses_a_wrong_hash_and_garbage),
        cmocka_unit_test(test_encoder_refuses_bad_records),
        cmocka_unit_test(test_encoding_is_deterministic),
        cmocka_unit_test_setup_teardown(test_writer_refuses_an_existing_file_and_leaves_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unfinished_writer_removes_its_file, setup, teardown),
        cmocka_unit_test(test_hex64_round_trip_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
