/* test_encode.c - record payloads: shard_encode() and shard_decode_payload()
 * (lib/image/encode.c).
 *
 * Round trips go through the real decoders (shard_decode); the format checks
 * read the bytes themselves (PNG chunk list, JPEG markers and sampling
 * factors via libjpeg) rather than trusting the encoder's settings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "image/encode_internal.h"
#include "shardkit/image.h"

#define PI 3.14159265358979323846
#define PNG_SIGNATURE_BYTES 8

/* ---- helpers ------------------------------------------------------------------ */

static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static uint8_t *pixel(const struct shard_image *img, uint32_t x, uint32_t y)
{
    return img->pixels + (size_t)y * img->stride + (size_t)x * img->channels;
}

static void make_noise(struct shard_image *img, uint32_t w, uint32_t h, uint32_t seed)
{
    assert_int_equal(shard_image_alloc(img, w, h, 3, NULL), 0);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t i = 0; i < w * 3; i++)
            pixel(img, 0, y)[i] = (uint8_t)(next_random(&seed) >> 24);
}

/* Smooth colour fields, like the out-of-focus parts of a photograph. */
static void make_smooth(struct shard_image *img, uint32_t w, uint32_t h)
{
    assert_int_equal(shard_image_alloc(img, w, h, 3, NULL), 0);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = pixel(img, x, y);
            p[0] = (uint8_t)lrint(128 + 100 * sin(2 * PI * x / 180.0));
            p[1] = (uint8_t)lrint(128 + 90 * cos(2 * PI * y / 150.0));
            p[2] = (uint8_t)((x + y) * 255 / (w + h));
        }
}

static int same_pixels(const struct shard_image *a, const struct shard_image *b)
{
    if (a->width != b->width || a->height != b->height || a->channels != b->channels)
        return 0;
    for (uint32_t y = 0; y < a->height; y++)
        if (memcmp(pixel(a, 0, y), pixel(b, 0, y), (size_t)a->width * a->channels))
            return 0;
    return 1;
}

static double psnr(const struct shard_image *a, const struct shard_image *b)
{
    double sse = 0;
    size_t n = (size_t)a->width * a->height * 3;
    for (uint32_t y = 0; y < a->height; y++)
        for (uint32_t i = 0; i < a->width * 3; i++) {
            double d = (double)pixel(a, 0, y)[i] - pixel(b, 0, y)[i];
            sse += d * d;
        }
    return sse == 0 ? INFINITY : 10 * log10(255.0 * 255.0 * (double)n / sse);
}

static void encode_ok(const struct shard_image *img, enum shard_codec codec, int quality,
                      struct shard_buf *out)
{
    struct shard_err err = {0};
    int rc = shard_encode(img, codec, quality, out, &err);
    if (rc)
        fail_msg("encode %s %ux%u: %s", shard_codec_name(codec), img->width, img->height, err.msg);
    assert_true(out->len > 0);
}

static void round_trip(const struct shard_image *img, enum shard_codec codec, int quality,
                       struct shard_image *back)
{
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    encode_ok(img, codec, quality, &buf);
    int rc = shard_decode_payload(codec, buf.data, buf.len, img->width, img->height, back, &err);
    if (rc)
        fail_msg("decode %s payload: %s", shard_codec_name(codec), err.msg);
    assert_int_equal(back->width, img->width);
    assert_int_equal(back->height, img->height);
    assert_int_equal(back->channels, 3);
    shard_buf_release(&buf);
}

static uint32_t read_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- round trips -------------------------------------------------------------- */

static void test_raw_round_trip_is_exact_and_rows_are_packed(void **state)
{
    (void)state;
    struct shard_image img = {0}, back = {0};
    struct shard_buf buf = {0};
    make_noise(&img, 97, 31, 1);
    /* rows stored `stride` apart in memory are written back to back */
    struct shard_image padded = img;
    padded.stride = 97 * 3 + 5;
    padded.pixels = calloc(padded.stride, 31);
    assert_non_null(padded.pixels);
    for (uint32_t y = 0; y < 31; y++)
        memcpy(padded.pixels + y * padded.stride, pixel(&img, 0, y), 97 * 3);
    encode_ok(&padded, SHARD_CODEC_RAW, 0, &buf);
    assert_int_equal(buf.len, 97 * 31 * 3);
    assert_memory_equal(buf.data, img.pixels, buf.len);
    assert_int_equal(shard_decode_payload(SHARD_CODEC_RAW, buf.data, buf.len, 97, 31, &back, NULL),
                     0);
    assert_true(same_pixels(&img, &back));
    free(padded.pixels);
    shard_image_release(&img);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

static void test_png_round_trip_is_exact(void **state)
{
    (void)state;
    static const uint32_t sizes[][2] = {{1, 1}, {256, 341}, {513, 7}, {1000, 700}};
    struct shard_image img = {0}, back = {0};
    for (size_t i = 0; i < 4; i++) {
        make_noise(&img, sizes[i][0], sizes[i][1], 10 + (uint32_t)i);
        round_trip(&img, SHARD_CODEC_PNG, 0, &back);
        assert_true(same_pixels(&img, &back));
        make_smooth(&img, sizes[i][0], sizes[i][1]);
        round_trip(&img, SHARD_CODEC_PNG, 0, &back);
        assert_true(same_pixels(&img, &back));
    }
    shard_image_release(&img);
    shard_image_release(&back);
}

static void test_jpeg_round_trip_of_smooth_image_is_close_at_q90(void **state)
{
    (void)state;
    struct shard_image img = {0}, back = {0};
    make_smooth(&img, 341, 256);
    round_trip(&img, SHARD_CODEC_JPEG, 90, &back);
    double db = psnr(&img, &back);
    if (db <= 35)
        fail_msg("q90 JPEG of a smooth image: PSNR %.1f dB", db);
    shard_image_release(&img);
    shard_image_release(&back);
}

static void test_jpeg_size_and_fidelity_grow_with_quality(void **state)
{
    (void)state;
    static const int qualities[] = {1, 25, 50, 75, 90, 100};
    struct shard_image img = {0}, back = {0};
    struct shard_buf buf = {0};
    make_smooth(&img, 300, 200);
    /* some texture too, so that quality has detail to keep */
    uint32_t seed = 3;
    for (uint32_t y = 0; y < 200; y++)
        for (uint32_t i = 0; i < 900; i++)
            pixel(&img, 0, y)[i] = (uint8_t)(pixel(&img, 0, y)[i] / 2 + (next_random(&seed) >> 26));
    size_t last_size = 0;
    double last_db = 0;
    for (size_t i = 0; i < sizeof qualities / sizeof *qualities; i++) {
        encode_ok(&img, SHARD_CODEC_JPEG, qualities[i], &buf);
        assert_int_equal(shard_decode_payload(SHARD_CODEC_JPEG, buf.data, buf.len, 300, 200, &back,
                                              NULL),
                         0);
        double db = psnr(&img, &back);
        if (buf.len <= last_size || db <= last_db)
            fail_msg("quality %d: %zu bytes, %.1f dB after %zu bytes, %.1f dB", qualities[i],
                     buf.len, db, last_size, last_db);
        last_size = buf.len;
        last_db = db;
    }
    shard_image_release(&img);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

/* ---- the bytes themselves ----------------------------------------------------- */

static void test_encoding_is_deterministic(void **state)
{
    (void)state;
    static const enum shard_codec codecs[] = {SHARD_CODEC_RAW, SHARD_CODEC_JPEG, SHARD_CODEC_PNG};
    struct shard_image img = {0};
    make_noise(&img, 320, 240, 77);
    for (size_t c = 0; c < 3; c++) {
        struct shard_buf first = {0}, reused = {0}, fresh = {0};
        encode_ok(&img, codecs[c], 90, &first);
        /* a buffer that held something else, and a new one */
        encode_ok(&img, codecs[c], 90, &reused);
        encode_ok(&img, codecs[c], 90, &reused);
        encode_ok(&img, codecs[c], 90, &fresh);
        assert_int_equal(first.len, reused.len);
        assert_int_equal(first.len, fresh.len);
        assert_memory_equal(first.data, reused.data, first.len);
        assert_memory_equal(first.data, fresh.data, first.len);
        shard_buf_release(&first);
        shard_buf_release(&reused);
        shard_buf_release(&fresh);
    }
    shard_image_release(&img);
}

#define THREAD_JOBS 32

static void test_openmp_workers_encode_the_serial_bytes(void **state)
{
    (void)state;
    struct shard_image img[THREAD_JOBS] = {{0}};
    struct shard_buf serial[THREAD_JOBS] = {{0}}, parallel[THREAD_JOBS] = {{0}};
    for (int i = 0; i < THREAD_JOBS; i++) {
        make_noise(&img[i], 64 + 9 * (uint32_t)i, 48 + 5 * (uint32_t)i, 500 + (uint32_t)i);
        encode_ok(&img[i], (enum shard_codec)(i % 3), 50 + i, &serial[i]);
    }
    int failures = 0;
#pragma omp parallel for num_threads(4) schedule(dynamic, 1) reduction(+ : failures)
    for (int i = 0; i < THREAD_JOBS; i++)
        failures += shard_encode(&img[i], (enum shard_codec)(i % 3), 50 + i, &parallel[i], NULL) !=
                    0;
    assert_int_equal(failures, 0);
    for (int i = 0; i < THREAD_JOBS; i++) {
        assert_int_equal(serial[i].len, parallel[i].len);
        assert_memory_equal(serial[i].data, parallel[i].data, serial[i].len);
        shard_image_release(&img[i]);
        shard_buf_release(&serial[i]);
        shard_buf_release(&parallel[i]);
    }
}

static void test_png_is_8bit_rgb_with_only_ihdr_idat_iend(void **state)
{
    (void)state;
    static const uint8_t signature[PNG_SIGNATURE_BYTES] = {0x89, 'P',  'N',  'G',
                                                           '\r', '\n', 0x1a, '\n'};
    struct shard_image img = {0};
    struct shard_buf buf = {0};
    make_noise(&img, 300, 500, 8);
    encode_ok(&img, SHARD_CODEC_PNG, 0, &buf);
    assert_memory_equal(buf.data, signature, PNG_SIGNATURE_BYTES);
    size_t at = PNG_SIGNATURE_BYTES, chunks = 0;
    int seen_end = 0;
    while (at + 12 <= buf.len) {
        uint32_t len = read_be32(buf.data + at);
        char type[5] = {0};
        memcpy(type, buf.data + at + 4, 4);
        if (chunks == 0) {
            assert_string_equal(type, "IHDR");
            const uint8_t *ihdr = buf.data + at + 8;
            assert_int_equal(read_be32(ihdr), 300);
            assert_int_equal(read_be32(ihdr + 4), 500);
            assert_int_equal(ihdr[8], 8);  /* bit depth */
            assert_int_equal(ihdr[9], 2);  /* colour type: RGB */
            assert_int_equal(ihdr[12], 0); /* not interlaced */
        } else if (strcmp(type, "IDAT") && strcmp(type, "IEND")) {
            fail_msg("unexpected chunk %s (no text, time or colour metadata wanted)", type);
        }
        seen_end = !strcmp(type, "IEND");
        at += 12 + (size_t)len;
        chunks++;
    }
    assert_true(seen_end);
    assert_int_equal(at, buf.len); /* nothing after IEND */
    shard_image_release(&img);
    shard_buf_release(&buf);
}

struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
};

static void jpeg_fail_exit(j_common_ptr cinfo)
{
    longjmp(((struct jpeg_fail *)cinfo->err)->jump, 1);
}

static void test_jpeg_is_baseline_ycbcr_420(void **state)
{
    (void)state;
    struct shard_image img = {0};
    struct shard_buf buf = {0};
    make_smooth(&img, 200, 100);
    encode_ok(&img, SHARD_CODEC_JPEG, 90, &buf);
    /* SOF0 (baseline) present, SOF2 (progressive) absent */
    int sof0 = 0, sof2 = 0;
    for (size_t i = 0; i + 1 < buf.len; i++) {
        sof0 |= buf.data[i] == 0xFF && buf.data[i + 1] == 0xC0;
        sof2 |= buf.data[i] == 0xFF && buf.data[i + 1] == 0xC2;
    }
    assert_true(sof0);
    assert_false(sof2);

    struct jpeg_decompress_struct cinfo;
    struct jpeg_fail jerr;
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = jpeg_fail_exit;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_decompress(&cinfo);
        fail_msg("libjpeg cannot read the header");
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, buf.data, (unsigned long)buf.len);
    assert_int_equal(jpeg_read_header(&cinfo, TRUE), JPEG_HEADER_OK);
    assert_int_equal(cinfo.jpeg_color_space, JCS_YCbCr);
    assert_int_equal(cinfo.num_components, 3);
    assert_false(cinfo.progressive_mode);
    assert_int_equal(cinfo.comp_info[0].h_samp_factor, 2);
    assert_int_equal(cinfo.comp_info[0].v_samp_factor, 2);
    for (int c = 1; c < 3; c++) {
        assert_int_equal(cinfo.comp_info[c].h_samp_factor, 1);
        assert_int_equal(cinfo.comp_info[c].v_samp_factor, 1);
    }
    jpeg_destroy_decompress(&cinfo);
    shard_image_release(&img);
    shard_buf_release(&buf);
}

/* The output buffer is replaced, not appended to, and its memory is kept. */
static void test_output_buffer_is_replaced_and_reused(void **state)
{
    (void)state;
    struct shard_image big = {0}, small = {0};
    struct shard_buf buf = {0};
    make_noise(&big, 800, 600, 1);
    make_noise(&small, 16, 16, 2);
    assert_int_equal(shard_buf_append(&buf, "junk", 4, NULL), 0);
    encode_ok(&big, SHARD_CODEC_JPEG, 95, &buf); /* larger than the first reservation */
    uint8_t *memory = buf.data;
    size_t cap = buf.cap;
    encode_ok(&small, SHARD_CODEC_JPEG, 95, &buf);
    assert_ptr_equal(buf.data, memory);
    assert_int_equal(buf.cap, cap);
    struct shard_image back = {0};
    assert_int_equal(shard_decode_payload(SHARD_CODEC_JPEG, buf.data, buf.len, 16, 16, &back, NULL),
                     0);
    encode_ok(&small, SHARD_CODEC_PNG, 0, &buf);
    assert_int_equal(shard_decode_payload(SHARD_CODEC_PNG, buf.data, buf.len, 16, 16, &back, NULL),
                     0);
    assert_true(same_pixels(&small, &back));
    shard_image_release(&big);
    shard_image_release(&small);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

/* ---- damaged and inconsistent payloads ------------------------------------------ */

static void test_payload_with_other_dimensions_than_the_record_is_corrupt(void **state)
{
    (void)state;
    static const enum shard_codec codecs[] = {SHARD_CODEC_RAW, SHARD_CODEC_JPEG, SHARD_CODEC_PNG};
    struct shard_image img = {0}, back = {0};
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    make_smooth(&img, 100, 80);
    for (size_t c = 0; c < 3; c++) {
        encode_ok(&img, codecs[c], 90, &buf);
        assert_int_equal(shard_decode_payload(codecs[c], buf.data, buf.len, 100, 81, &back, &err),
                         SHARD_ECORRUPT);
        assert_int_equal(err.code, SHARD_ECORRUPT);
        if (codecs[c] == SHARD_CODEC_RAW)
            assert_non_null(strstr(err.msg, "record says 100x81"));
        else
            assert_string_equal(err.msg, "payload is 100x80, record says 100x81");
        /* transposed: the same byte count, so only a coded payload can tell */
        if (codecs[c] != SHARD_CODEC_RAW)
            assert_int_equal(shard_decode_payload(codecs[c], buf.data, buf.len, 80, 100, &back,
                                                  &err),
                             SHARD_ECORRUPT);
    }
    shard_image_release(&img);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

static void test_truncated_payloads_are_corrupt(void **state)
{
    (void)state;
    static const enum shard_codec codecs[] = {SHARD_CODEC_RAW, SHARD_CODEC_JPEG, SHARD_CODEC_PNG};
    struct shard_image img = {0}, back = {0};
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    make_noise(&img, 120, 90, 4);
    for (size_t c = 0; c < 3; c++) {
        encode_ok(&img, codecs[c], 90, &buf);
        size_t cut = buf.len * 2 / 3;
        int rc = shard_decode_payload(codecs[c], buf.data, cut, 120, 90, &back, &err);
        if (rc != SHARD_ECORRUPT)
            fail_msg("%s cut to %zu of %zu bytes: got %d (%s)", shard_codec_name(codecs[c]), cut,
                     buf.len, rc, err.msg);
        assert_int_equal(shard_decode_payload(codecs[c], buf.data, 0, 120, 90, &back, &err),
                         SHARD_ECORRUPT);
    }
    shard_image_release(&img);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

static void test_payload_in_the_other_format_is_corrupt(void **state)
{
    (void)state;
    struct shard_image img = {0}, back = {0};
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    make_smooth(&img, 40, 30);
    encode_ok(&img, SHARD_CODEC_PNG, 0, &buf);
    assert_int_equal(shard_decode_payload(SHARD_CODEC_JPEG, buf.data, buf.len, 40, 30, &back, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "payload is png, record says jpeg");
    static const uint8_t garbage[] = "definitely not an image, just words";
    assert_int_equal(shard_decode_payload(SHARD_CODEC_PNG, garbage, sizeof garbage, 40, 30, &back,
                                          &err),
                     SHARD_ECORRUPT);
    assert_int_equal(shard_decode_payload(SHARD_CODEC_RAW, garbage, sizeof garbage, 40, 30, &back,
                                          &err),
                     SHARD_ECORRUPT);
    assert_int_equal(shard_decode_payload(SHARD_CODEC_RAW, garbage, sizeof garbage, 0, 30, &back,
                                          &err),
                     SHARD_ECORRUPT);
    shard_image_release(&img);
    shard_image_release(&back);
    shard_buf_release(&buf);
}

static void test_invalid_encode_requests_are_refused_with_a_reason(void **state)
{
    (void)state;
    struct shard_image img = {0}, grey = {0}, empty = {0};
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    make_noise(&img, 8, 8, 1);
    assert_int_equal(shard_encode(&img, SHARD_CODEC_JPEG, 0, &buf, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "quality 0"));
    assert_int_equal(shard_encode(&img, SHARD_CODEC_JPEG, 101, &buf, &err), SHARD_EINVAL);
    assert_int_equal(shard_encode(&img, (enum shard_codec)9, 90, &buf, &err), SHARD_EINVAL);
    assert_int_equal(shard_encode(&empty, SHARD_CODEC_PNG, 90, &buf, &err), SHARD_EINVAL);
    /* five channels is no pixel form; JPEG stores neither alpha nor 16 bits */
    assert_int_equal(shard_image_alloc(&grey, 8, 8, 5, NULL), 0);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(shard_encode(&grey, (enum shard_codec)c, 90, &buf, &err), SHARD_EINVAL);
        assert_non_null(strstr(err.msg, "5 channels of 8 bits"));
    }
    assert_int_equal(shard_image_alloc_form(&grey, 8, 8, 2, 8, NULL), 0);
    assert_int_equal(shard_encode(&grey, SHARD_CODEC_JPEG, 90, &buf, &err), SHARD_EINVAL);
    assert_string_equal(
        err.msg, "cannot encode JPEG: gray-alpha of 8 bits (JPEG stores gray or rgb of 8 bits)");
    assert_int_equal(shard_image_alloc_form(&grey, 8, 8, 1, 16, NULL), 0);
    assert_int_equal(shard_encode(&grey, SHARD_CODEC_JPEG, 90, &buf, &err), SHARD_EINVAL);
    assert_string_equal(err.msg,
                        "cannot encode JPEG: gray of 16 bits (JPEG stores gray or rgb of 8 bits)");
    /* JPEG cannot hold a side over 65500 */
    struct shard_image wide = {0};
    assert_int_equal(shard_image_alloc(&wide, 70000, 1, 3, NULL), 0);
    memset(wide.pixels, 0, wide.capacity);
    assert_int_equal(shard_encode(&wide, SHARD_CODEC_JPEG, 90, &buf, &err), SHARD_ELIMIT);
    assert_int_equal(shard_decode_payload((enum shard_codec)9, buf.data, 1, 1, 1, &img, &err),
                     SHARD_EINVAL);
    shard_image_release(&img);
    shard_image_release(&grey);
    shard_image_release(&wide);
    shard_buf_release(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_round_trip_is_exact_and_rows_are_packed),
        cmocka_unit_test(test_png_round_trip_is_exact),
        cmocka_unit_test(test_jpeg_round_trip_of_smooth_image_is_close_at_q90),
        cmocka_unit_test(test_jpeg_size_and_fidelity_grow_with_quality),
        cmocka_unit_test(test_encoding_is_deterministic),
        cmocka_unit_test(test_openmp_workers_encode_the_serial_bytes),
        cmocka_unit_test(test_png_is_8bit_rgb_with_only_ihdr_idat_iend),
        cmocka_unit_test(test_jpeg_is_baseline_ycbcr_420),
        cmocka_unit_test(test_output_buffer_is_replaced_and_reused),
        cmocka_unit_test(test_payload_with_other_dimensions_than_the_record_is_corrupt),
        cmocka_unit_test(test_truncated_payloads_are_corrupt),
        cmocka_unit_test(test_payload_in_the_other_format_is_corrupt),
        cmocka_unit_test(test_invalid_encode_requests_are_refused_with_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
