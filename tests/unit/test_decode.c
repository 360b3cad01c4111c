/* test_decode.c - the image decoders (lib/image/decode*.c, lib/image/sniff.c, lib/image/exif.c).
 *
 * Fixtures come from tests/fixtures/make_fixtures.py (env SHARDKIT_FIXTURES);
 * the whole-sample checks use the photo sample of tests/fixtures/make_sample.py
 * (env SHARDKIT_SAMPLE) and, when it is there, the ImageNet sample as well
 * (env SHARDKIT_DATASET).  Pixels are compared with reference decodes written by
 * the fixture generator (see its docstring for where each comes from):
 *   JPEG                 exact: Pillow runs the same libjpeg-turbo with the
 *                        same settings (accurate integer IDCT, fancy
 *                        upsampling); revisit if we change ours.
 *   CMYK JPEG            +-1: the same naive formula, rounded in another
 *                        order (measured: exact on the fixtures).
 *   PNG/GIF/TIFF/WebP    exact: lossless, reference computed from the source.
 *   alpha composited     +-1: libvips flattens in floating point, and libpng
 *                        composites 16-bit RGBA at 16 bits before rounding to
 *                        8 (measured: 8-bit PNG exact, the others off by 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <vips/vips.h>

#include "image/decode_internal.h"
#include "shardkit/image.h"

#define TOL_EXACT 0
#define TOL_CMYK 1
#define TOL_ALPHA 1
#define EXIF_STORED_W 48
#define EXIF_STORED_H 32

/* ---- helpers ----------------------------------------------------------------- */

/* dir/name, malloc'd. */
static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *path_in(const char *dir_env, const char *name)
{
    const char *dir = getenv(dir_env);
    if (!dir)
        fail_msg("%s is not set (run through tests/run.sh)", dir_env);
    return join_path(dir, name);
}

/* Whole file into *b; 0 or -1. */
static int slurp(const char *path, struct shard_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    b->len = 0;
    uint8_t chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (shard_buf_append(b, chunk, n, NULL)) {
            rc = -1;
            break;
        }
    if (ferror(f))
        rc = -1;
    fclose(f);
    return rc;
}

static void load_fixture(const char *name, struct shard_buf *b)
{
    char *p = path_in("SHARDKIT_FIXTURES", name);
    if (slurp(p, b))
        fail_msg("cannot read fixture %s", p);
    free(p);
}

static int decode_fixture_ex(const char *name, const struct shard_decode_options *o,
                             struct shard_image *img, struct shard_decode_info *info,
                             struct shard_err *err)
{
    struct shard_buf b = {0};
    load_fixture(name, &b);
    shard_err_clear(err);
    int rc = shard_decode_ex(b.data, b.len, o, img, info, err);
    shard_buf_release(&b);
    return rc;
}

static int decode_fixture(const char *name, const struct shard_decode_options *o,
                          struct shard_image *img, struct shard_err *err)
{
    return decode_fixture_ex(name, o, img, NULL, err);
}

/* A binary PGM (P5) or PPM (P6) with maxval 255. */
struct pnm {
    uint32_t w, h, channels;
    uint8_t *data;
};

static void load_pnm(const char *name, struct pnm *p)
{
    struct shard_buf b = {0};
    load_fixture(name, &b);
    shard_buf_append(&b, "", 1, NULL); /* NUL for sscanf */
    char kind;
    unsigned w, h, maxval;
    int header = 0;
    if (sscanf((const char *)b.data, "P%c %u %u %u%n", &kind, &w, &h, &maxval, &header) != 4 ||
        (kind != '5' && kind != '6') || maxval != 255)
        fail_msg("%s is not a binary PGM/PPM", name);
    p->w = w;
    p->h = h;
    p->channels = kind == '6' ? 3 : 1;
    size_t bytes = (size_t)w * h * p->channels;
    header += 1; /* the single whitespace after maxval */
    if ((size_t)header + bytes + 1 != b.len)
        fail_msg("%s: size mismatch", name);
    p->data = malloc(bytes);
    assert_non_null(p->data);
    memcpy(p->data, b.data + header, bytes);
    shard_buf_release(&b);
}

static void pnm_release(struct pnm *p)
{
    free(p->data);
    memset(p, 0, sizeof *p);
}

/* Largest per-sample difference; fails the test (with where) above tol. */
static void assert_pixels_near(const struct shard_image *img, const uint8_t *expect, uint32_t w,
                               uint32_t h, int tol, const char *what)
{
    assert_int_equal(img->channels, 3);
    if (img->width != w || img->height != h)
        fail_msg("%s: got %ux%u, expected %ux%u", what, img->width, img->height, w, h);
    int worst = 0;
    uint32_t wx = 0, wy = 0;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *row = img->pixels + y * img->stride;
        for (uint32_t i = 0; i < w * 3; i++) {
            int d = abs((int)row[i] - (int)expect[(size_t)y * w * 3 + i]);
            if (d > worst) {
                worst = d;
                wx = i / 3;
                wy = y;
            }
        }
    }
    if (worst > tol)
        fail_msg("%s: sample differs by %d at (%u,%u), tolerance %d", what, worst, wx, wy, tol);
}

static void assert_matches_ppm(const struct shard_image *img, const char *ref, int tol)
{
    struct pnm p;
    load_pnm(ref, &p);
    assert_int_equal(p.channels, 3);
    assert_pixels_near(img, p.data, p.w, p.h, tol, ref);
    pnm_release(&p);
}

/* Decode a fixture with default options and compare with NAME.ref.ppm. */
static void check_decodes_like_reference(const char *name, int tol)
{
    struct shard_image img = {0};
    struct shard_err err = {0};
    int rc = decode_fixture(name, NULL, &img, &err);
    if (rc)
        fail_msg("%s: %s", name, err.msg);
    char ref[256];
    snprintf(ref, sizeof ref, "%s.ref.ppm", name);
    assert_matches_ppm(&img, ref, tol);
    shard_image_release(&img);
}

/* Decode an image with alpha over `bg` and compare with its straight colour
 * and alpha composited here. */
static void check_alpha_over(const char *name, const uint8_t bg[3], int tol)
{
    char color_name[256], alpha_name[256];
    snprintf(color_name, sizeof color_name, "%s.color.ppm", name);
    snprintf(alpha_name, sizeof alpha_name, "%s.alpha.pgm", name);
    struct pnm color, alpha;
    load_pnm(color_name, &color);
    load_pnm(alpha_name, &alpha);
    size_t n = (size_t)color.w * color.h;
    uint8_t *expect = malloc(n * 3);
    assert_non_null(expect);
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            unsigned a = alpha.data[i];
            expect[i * 3 + c] = (uint8_t)((color.data[i * 3 + c] * a + bg[c] * (255 - a) + 127) /
                                          255);
        }

    struct shard_decode_options o;
    shard_decode_options_init(&o);
    memcpy(o.background, bg, 3);
    struct shard_image img = {0};
    struct shard_err err = {0};
    if (decode_fixture(name, &o, &img, &err))
        fail_msg("%s: %s", name, err.msg);
    assert_pixels_near(&img, expect, color.w, color.h, tol, name);
    shard_image_release(&img);
    free(expect);
    pnm_release(&color);
    pnm_release(&alpha);
}

/* Decoding `name` fails with `code` and a message containing `reason`. */
static void check_rejected(const char *name, const struct shard_decode_options *o, int code,
                           const char *reason)
{
    struct shard_image img = {0};
    struct shard_err err = {0};
    int rc = decode_fixture(name, o, &img, &err);
    if (rc != code || err.code != code || !strstr(err.msg, reason))
        fail_msg("%s: got %d (%s) \"%s\", expected %d with \"%s\"", name, rc, shard_strerror(rc),
                 err.msg, code, reason);
    shard_image_release(&img);
}

static const uint8_t WHITE[3] = {255, 255, 255};
static const uint8_t ORANGE[3] = {250, 128, 10};

/* Decoding `name` succeeds with info.warning equal to `warning`; returns the
 * image (release it). */
static struct shard_image decode_with_warning(const char *name, const char *warning)
{
    struct shard_buf b = {0};
    load_fixture(name, &b);
    struct shard_image img = {0};
    struct shard_decode_info info;
    struct shard_err err = {0};
    if (shard_decode_ex(b.data, b.len, NULL, &img, &info, &err))
        fail_msg("%s: %s", name, err.msg);
    if (strcmp(info.warning, warning))
        fail_msg("%s: warning \"%s\", expected \"%s\"", name, info.warning, warning);
    shard_buf_release(&b);
    return img;
}

/* Two decodes give the same pixels, exactly. */
static void assert_same_pixels(const struct shard_image *a, const struct shard_image *b,
                               const char *what)
{
    if (a->width != b->width || a->height != b->height)
        fail_msg("%s: %ux%u against %ux%u", what, a->width, a->height, b->width, b->height);
    for (uint32_t y = 0; y < a->height; y++)
        if (memcmp(a->pixels + y * a->stride, b->pixels + y * b->stride, (size_t)a->width * 3))
            fail_msg("%s: row %u differs", what, y);
}

/* ---- sniffing and options ------------------------------------------------------- */

static void test_sniff_uses_signatures_not_names(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
        enum shard_image_format format;
    } cases[] = {
        {"\xff\xd8\xff\xe0", 4, SHARD_FORMAT_JPEG},
        {"\x89PNG\r\n\x1a\n", 8, SHARD_FORMAT_PNG},
        {"RIFF\x10\0\0\0WEBPVP8L", 16, SHARD_FORMAT_WEBP},
        {"RIFF\x10\0\0\0AVI LIST", 16, SHARD_FORMAT_UNKNOWN},
        {"II*\0\x08\0\0\0", 8, SHARD_FORMAT_TIFF},
        {"MM\0*\0\0\0\x08", 8, SHARD_FORMAT_TIFF},
        {"II+\0\x08\0\0\0", 8, SHARD_FORMAT_TIFF},
        {"GIF89a\1\0", 8, SHARD_FORMAT_GIF},
        {"GIF87a\1\0", 8, SHARD_FORMAT_GIF},
        {"BM\x36\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0", 18, SHARD_FORMAT_BMP},
        {"BMW is a car, not a bitmap", 26, SHARD_FORMAT_UNKNOWN},
        {"\xff\xd8", 2, SHARD_FORMAT_UNKNOWN}, /* too short to be sure */
        {"\x89PNG", 4, SHARD_FORMAT_UNKNOWN},
        {"hello", 5, SHARD_FORMAT_UNKNOWN},
        {"", 0, SHARD_FORMAT_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum shard_image_format f = shard_sniff((const uint8_t *)cases[i].bytes, cases[i].len);
        if (f != cases[i].format)
            fail_msg("case %zu: sniffed %s, expected %s", i, shard_format_name(f),
                     shard_format_name(cases[i].format));
    }
    assert_int_equal(shard_sniff(NULL, 10), SHARD_FORMAT_UNKNOWN);
    assert_string_equal(shard_format_name(SHARD_FORMAT_JPEG), "jpeg");
    assert_string_equal(shard_format_name(SHARD_FORMAT_WEBP), "webp");
    assert_string_equal(shard_format_name((enum shard_image_format)99), "unknown");
}

static void test_options_init_sets_documented_defaults(void **state)
{
    (void)state;
    struct shard_decode_options o;
    memset(&o, 0xAB, sizeof o);
    shard_decode_options_init(&o);
    assert_int_equal(o.max_pixels, 100000000);
    assert_int_equal(o.max_file_bytes, 1ULL << 30);
    assert_int_equal(o.max_memory, 1ULL << 30);
    assert_int_equal(o.target, 0);
    assert_int_equal(o.fit, SHARD_FIT_SHORT);
    assert_memory_equal(o.background, WHITE, 3);
}

static void test_missing_input_or_output_is_invalid(void **state)
{
    (void)state;
    struct shard_image img = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_decode(NULL, 10, NULL, &img, &err), SHARD_EINVAL);
    assert_int_equal(err.code, SHARD_EINVAL);
    assert_int_equal(shard_decode((const uint8_t *)"\xff\xd8\xff", 3, NULL, NULL, NULL),
                     SHARD_EINVAL);
}

/* ---- JPEG ------------------------------------------------------------------------- */

static void test_rgb_jpeg_matches_reference_decoder(void **state)
{
    (void)state;
    check_decodes_like_reference("rgb.jpg", TOL_EXACT);
}

static void test_grayscale_jpeg_becomes_three_channel_rgb(void **state)
{
    (void)state;
    check_decodes_like_reference("gray.jpg", TOL_EXACT);
}

static void test_adobe_cmyk_jpeg_is_inverted_and_converted_to_rgb(void **state)
{
    (void)state;
    check_decodes_like_reference("cmyk_adobe.jpg", TOL_CMYK);
}

static void test_cmyk_jpeg_without_adobe_marker_is_read_as_plain_ink(void **state)
{
    (void)state;
    check_decodes_like_reference("cmyk_noadobe.jpg", TOL_CMYK);
}

static void test_progressive_jpeg_matches_reference_decoder(void **state)
{
    (void)state;
    check_decodes_like_reference("progressive.jpg", TOL_EXACT);
}

static void test_exif_orientations_1_to_8_give_upright_pixels(void **state)
{
    (void)state;
    for (int n = 1; n <= 8; n++) {
        char name[64];
        snprintf(name, sizeof name, "exif_rot%d.jpg", n);
        struct shard_image img = {0};
        struct shard_err err = {0};
        if (decode_fixture(name, NULL, &img, &err))
            fail_msg("%s: %s", name, err.msg);
        uint32_t w = n >= 5 ? EXIF_STORED_H : EXIF_STORED_W;
        uint32_t h = n >= 5 ? EXIF_STORED_W : EXIF_STORED_H;
        if (img.width != w || img.height != h)
            fail_msg("%s: %ux%u, expected %ux%u", name, img.width, img.height, w, h);
        char ref[sizeof name + 8];
        snprintf(ref, sizeof ref, "%s.ref.ppm", name);
        assert_matches_ppm(&img, ref, TOL_EXACT);
        shard_image_release(&img);
    }
}

/* The APP1 segment (marker, length, payload) of the first EXIF block in a
 * fixture: its offset and size. */
static void find_exif_app1(const struct shard_buf *b, size_t *at, size_t *len)
{
    for (size_t p = 2; p + 10 < b->len; p += 2 + ((size_t)b->data[p + 2] << 8 | b->data[p + 3]))
        if (b->data[p + 1] == 0xe1 && memcmp(b->data + p + 4, "Exif\0\0", 6) == 0) {
            *at = p;
            *len = 2 + ((size_t)b->data[p + 2] << 8 | b->data[p + 3]);
            return;
        }
    fail_msg("no EXIF APP1 segment");
}

static void test_the_first_exif_app1_of_many_gives_the_orientation(void **state)
{
    (void)state;
    struct shard_buf rot6 = {0}, rot3 = {0}, many = {0};
    load_fixture("exif_rot6.jpg", &rot6);
    load_fixture("exif_rot3.jpg", &rot3);
    size_t at6, len6, at3, len3;
    find_exif_app1(&rot6, &at6, &len6);
    find_exif_app1(&rot3, &at3, &len3);
    static const uint8_t xmp[] = "\xff\xe1\x00\x0bhttp://ns"; /* an APP1 that is not EXIF */
    static const uint8_t empty[] = "\xff\xe1\x00\x02";
    /* thousands of APP1 segments, then rot6's EXIF, then rot3's, then the rest */
    assert_int_equal(shard_buf_append(&many, rot6.data, at6, NULL), 0);
    assert_int_equal(shard_buf_append(&many, xmp, sizeof xmp - 1, NULL), 0);
    for (int i = 0; i < 20000; i++)
        assert_int_equal(shard_buf_append(&many, empty, sizeof empty - 1, NULL), 0);
    assert_int_equal(shard_buf_append(&many, rot6.data + at6, len6, NULL), 0);
    assert_int_equal(shard_buf_append(&many, rot3.data + at3, len3, NULL), 0);
    assert_int_equal(shard_buf_append(&many, rot6.data + at6 + len6, rot6.len - at6 - len6, NULL),
                     0);
    struct shard_image img = {0};
    struct shard_decode_info info;
    struct shard_err err = {0};
    if (shard_decode_ex(many.data, many.len, NULL, &img, &info, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(info.orientation, 6);
    assert_string_equal(info.warning, "");
    assert_matches_ppm(&img, "exif_rot6.jpg.ref.ppm", TOL_EXACT);
    shard_image_release(&img);
    shard_buf_release(&many);
    shard_buf_release(&rot3);
    shard_buf_release(&rot6);
}

static void test_exif_orientation_parser_reads_ifd0_and_ignores_garbage(void **state)
{
    (void)state;
    /* "Exif\0\0", little-endian TIFF header, IFD0 with one SHORT entry */
    /* clang-format off */
    uint8_t exif[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0,
                      1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0};
    /* clang-format on */
    assert_int_equal(sk_exif_orientation(exif, sizeof exif), 6);
    exif[24] = 9; /* out of range */
    assert_int_equal(sk_exif_orientation(exif, sizeof exif), 1);
    exif[24] = 3;
    assert_int_equal(sk_exif_orientation(exif, sizeof exif), 3);
    assert_int_equal(sk_exif_orientation(exif, 10), 1); /* cut short */
    exif[0] = 'X';                                      /* not EXIF */
    assert_int_equal(sk_exif_orientation(exif, sizeof exif), 1);
    assert_int_equal(sk_exif_orientation(NULL, 0), 1);
}

static void test_truncated_jpeg_is_rejected_with_reason(void **state)
{
    (void)state;
    check_rejected("truncated.jpg", NULL, SHARD_ECORRUPT, "truncated JPEG");
}

static void test_bitflipped_jpeg_is_rejected_as_corrupt_data(void **state)
{
    (void)state;
    check_rejected("bitflip.jpg", NULL, SHARD_ECORRUPT, "corrupt JPEG data: ");
}

/* The accepted class: every pixel still comes from the file's own data, so
 * the damaged copies decode exactly like the intact file, and say why. */
static void test_jpeg_warnings_that_lose_no_pixels_are_accepted_and_reported(void **state)
{
    (void)state;
    static const struct {
        const char *name, *warning;
    } cases[] = {
        {"junk_before_dqt.jpg", "JPEG warning: 3 extraneous bytes before marker 0xdb"},
        {"jfif_v2.jpg", "JPEG warning: unknown JFIF revision number 2.01"},
        {"adobe_transform.jpg", "JPEG warning: unknown Adobe color transform code 7"},
        {"zeroed_sos.jpg", "JPEG warning: invalid SOS parameters for sequential JPEG"},
    };
    struct shard_image intact = decode_with_warning("rgb.jpg", "");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct shard_image img = decode_with_warning(cases[i].name, cases[i].warning);
        assert_same_pixels(&img, &intact, cases[i].name);
        assert_matches_ppm(&img, "rgb.jpg.ref.ppm", TOL_EXACT);
        shard_image_release(&img);
    }
    shard_image_release(&intact);
}

/* The rejected class: pixels would be invented or wrong. */
static void test_jpeg_warnings_that_lose_pixels_are_rejected(void **state)
{
    (void)state;
    /* bytes left over after the scan: how a flipped bit in the entropy-coded
     * data usually shows; the extra bytes were meant to be image data */
    check_rejected("junk_after_scan.jpg", NULL, SHARD_ECORRUPT,
                   "corrupt JPEG data: 100 extraneous bytes before marker 0xd9");
    check_rejected("bad_progression.jpg", NULL, SHARD_ECORRUPT,
                   "corrupt JPEG data: inconsistent progression sequence");
    check_rejected("truncated.jpg", NULL, SHARD_ECORRUPT, "truncated JPEG");
    check_rejected("bitflip.jpg", NULL, SHARD_ECORRUPT, "corrupt JPEG data: ");
}

static void test_png_warnings_that_lose_no_pixels_are_accepted_and_reported(void **state)
{
    (void)state;
    struct shard_image img = decode_with_warning("iend_data.png", "PNG warning: IEND: invalid");
    assert_matches_ppm(&img, "iend_data.png.ref.ppm", TOL_EXACT);
    shard_image_release(&img);
    img = decode_with_warning("extra_zlib.png", "PNG warning: IDAT: Extra compressed data");
    assert_matches_ppm(&img, "extra_zlib.png.ref.ppm", TOL_EXACT);
    shard_image_release(&img);
    img = decode_with_warning("gray_with_plte.png", "PNG warning: PLTE: ignored in grayscale PNG");
    assert_matches_ppm(&img, "gray_with_plte.png.ref.ppm", TOL_EXACT);
    shard_image_release(&img);
    img = decode_with_warning("rgba_with_trns.png",
                              "PNG warning: tRNS: invalid with alpha channel");
    shard_image_release(&img);
    check_alpha_over("rgba_with_trns.png", WHITE, TOL_ALPHA);
    /* a 1-bit image's white made transparent by the key 255, as Pillow
     * writes it: libpng's low bit of the key is the same white */
    img = decode_with_warning("1_trns.png",
                              "PNG warning: tRNS chunk has out-of-range samples for bit_depth");
    shard_image_release(&img);
    check_alpha_over("1_trns.png", WHITE, TOL_EXACT);
    check_alpha_over("1_trns.png", ORANGE, TOL_EXACT);
}

static void test_png_warnings_that_lose_pixels_are_rejected(void **state)
{
    (void)state;
    /* libpng drops the whole tRNS: the 4 valid entries are lost too */
    check_rejected("trns_too_long.png", NULL, SHARD_ECORRUPT, "corrupt PNG: tRNS: invalid");
    /* libpng masks the key to 8 bits: gray 44 would turn transparent */
    check_rejected("trns_out_of_range.png", NULL, SHARD_ECORRUPT,
                   "corrupt PNG: tRNS chunk has out-of-range samples for bit_depth");
    check_rejected("adler_mismatch.png", NULL, SHARD_ECORRUPT,
                   "corrupt PNG: IDAT: incorrect data check");
}

static void test_several_warnings_report_the_first_and_a_count(void **state)
{
    (void)state;
    /* junk before both quantisation tables and a JFIF 2.01 header */
    struct shard_buf b = {0};
    load_fixture("jfif_v2.jpg", &b);
    struct shard_buf two = {0};
    size_t at = 0;
    int junked = 0;
    for (size_t i = 0; i + 1 < b.len && junked < 2; i++)
        if (b.data[i] == 0xff && b.data[i + 1] == 0xdb) {
            assert_int_equal(shard_buf_append(&two, b.data + at, i - at, NULL), 0);
            assert_int_equal(shard_buf_append(&two, "\x01\x02", 2, NULL), 0);
            at = i;
            junked++;
        }
    assert_int_equal(junked, 2);
    assert_int_equal(shard_buf_append(&two, b.data + at, b.len - at, NULL), 0);
    struct shard_image img = {0};
    struct shard_decode_info info;
    struct shard_err err = {0};
    assert_int_equal(shard_decode_ex(two.data, two.len, NULL, &img, &info, &err), 0);
    assert_string_equal(info.warning,
                        "JPEG warning: unknown JFIF revision number 2.01 (and 2 more)");
    shard_image_release(&img);
    shard_buf_release(&two);
    shard_buf_release(&b);
}

static void test_empty_file_is_not_an_image(void **state)
{
    (void)state;
    check_rejected("zero.jpg", NULL, SHARD_ENOTIMAGE, "not an image: empty file");
}

static void test_text_file_named_jpg_is_not_an_image(void **state)
{
    (void)state;
    check_rejected("text.jpg", NULL, SHARD_ENOTIMAGE, "not an image: unknown signature");
}

/* The output image stays unallocated: the size was refused from the header. */
static void check_bomb_refused_before_allocating(const char *name, const char *reason)
{
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_memory = 1 << 20; /* the decoder would need far more for the pixels */
    struct shard_image img = {0};
    struct shard_err err = {0};
    int rc = decode_fixture(name, &o, &img, &err);
    assert_int_equal(rc, SHARD_ELIMIT);
    assert_string_equal(err.msg, reason);
    assert_null(img.pixels);
    assert_int_equal(img.capacity, 0);
}

static void test_jpeg_bomb_is_refused_before_allocating(void **state)
{
    (void)state;
    check_bomb_refused_before_allocating("bomb.jpg",
                                         "declared 40000x40000 exceeds --max-pixels 100000000");
}

static void test_twelve_bit_jpeg_is_unsupported(void **state)
{
    (void)state;
    check_rejected("twelve_bit.jpg", NULL, SHARD_EUNSUPPORTED, "unsupported: 12-bit JPEG");
}

static void test_lossless_jpeg_is_unsupported(void **state)
{
    (void)state;
    check_rejected("lossless.jpg", NULL, SHARD_EUNSUPPORTED,
                   "unsupported: unsupported JPEG process");
}

static void test_progressive_jpeg_over_memory_cap_is_refused(void **state)
{
    (void)state;
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_memory = 64 * 1024; /* its coefficient buffers need ~250 KB */
    check_rejected("progressive.jpg", &o, SHARD_ELIMIT,
                   "JPEG needs more than --max-memory 65536 bytes");
    /* a baseline JPEG streams and fits */
    struct shard_image img = {0};
    struct shard_err err = {0};
    assert_int_equal(decode_fixture("rgb.jpg", &o, &img, &err), 0);
    shard_image_release(&img);
}

/* A valid progressive JPEG with 3 + 3*63*3 = 570 scans: every AC coefficient
 * of every component in its own band, each sent in three successive-
 * approximation steps (DC likewise, all components together). */
#define MANY_SCANS (3 + 3 * 63 * 3)

/* A JPEG compressor of RGB w x h input, defaults set, writing to memory;
 * finish_jpeg() ends it and puts the bytes in out. */
struct jpeg_writer {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *mem;
    unsigned long size;
};

static void start_jpeg(struct jpeg_writer *j, uint32_t w, uint32_t h)
{
    j->c.err = jpeg_std_error(&j->e);
    jpeg_create_compress(&j->c);
    j->mem = NULL;
    j->size = 0;
    jpeg_mem_dest(&j->c, &j->mem, &j->size);
    j->c.image_width = w;
    j->c.image_height = h;
    j->c.input_components = 3;
    j->c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&j->c);
}

static void finish_jpeg(struct jpeg_writer *j, struct shard_buf *out)
{
    jpeg_finish_compress(&j->c);
    jpeg_destroy_compress(&j->c);
    out->len = 0;
    assert_int_equal(shard_buf_append(out, j->mem, j->size, NULL), 0);
    free(j->mem);
}

static void encode_many_scan_jpeg(struct shard_buf *out)
{
    enum { SIDE = 16 };
    struct jpeg_writer j;
    start_jpeg(&j, SIDE, SIDE);
    struct jpeg_compress_struct *c = &j.c;
    static jpeg_scan_info scans[MANY_SCANS];
    int n = 0;
    for (int step = 0; step < 3; step++) { /* Al 2, then refine to 1, then 0 */
        jpeg_scan_info *dc = &scans[n++];
        memset(dc, 0, sizeof *dc);
        dc->comps_in_scan = 3;
        for (int ci = 0; ci < 3; ci++)
            dc->component_index[ci] = ci;
        dc->Ah = step ? 3 - step : 0;
        dc->Al = 2 - step;
    }
    for (int ci = 0; ci < 3; ci++)
        for (int k = 1; k < 64; k++)
            for (int step = 0; step < 3; step++) {
                jpeg_scan_info *ac = &scans[n++];
                memset(ac, 0, sizeof *ac);
                ac->comps_in_scan = 1;
                ac->component_index[0] = ci;
                ac->Ss = ac->Se = k;
                ac->Ah = step ? 3 - step : 0;
                ac->Al = 2 - step;
            }
    assert_int_equal(n, MANY_SCANS);
    c->scan_info = scans;
    c->num_scans = n;
    jpeg_start_compress(c, TRUE);
    unsigned char row[SIDE * 3];
    for (int x = 0; x < SIDE * 3; x++)
        row[x] = (unsigned char)(x * 5);
    while (c->next_scanline < c->image_height) {
        JSAMPROW r = row;
        jpeg_write_scanlines(c, &r, 1);
    }
    finish_jpeg(&j, out);
}

static void test_jpeg_with_too_many_scans_is_refused(void **state)
{
    (void)state;
    struct shard_buf b = {0};
    encode_many_scan_jpeg(&b);
    struct shard_image img = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_decode(b.data, b.len, NULL, &img, &err), SHARD_ELIMIT);
    assert_string_equal(err.msg, "progressive JPEG has more than 500 scans");
    shard_image_release(&img);
    shard_buf_release(&b);
}

static void test_file_over_max_file_bytes_is_refused(void **state)
{
    (void)state;
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_file_bytes = 100;
    check_rejected("rgb.jpg", &o, SHARD_ELIMIT, "exceeds --max-file-bytes 100");
}

static void test_dct_scale_numerator_is_smallest_keeping_fit_side_at_least_target(void **state)
{
    (void)state;
    static const struct {
        uint32_t w, h, target;
        enum shard_fit fit;
        unsigned num; /* of 8 */
    } cases[] = {
        {333, 250, 0, SHARD_FIT_SHORT, 8},  /* no target: full size */
        {333, 250, 32, SHARD_FIT_SHORT, 1}, /* ceil(250 * 1/8) = 32 */
        {333, 250, 33, SHARD_FIT_SHORT, 2}, /* ceil(250 * 2/8) = 63 */
        {333, 250, 63, SHARD_FIT_SHORT, 2},
        {333, 250, 64, SHARD_FIT_SHORT, 4}, /* 125; never 3/8 */
        {333, 250, 125, SHARD_FIT_SHORT, 4},
        {333, 250, 126, SHARD_FIT_SHORT, 8}, /* never 5/8, 6/8 or 7/8 */
        {333, 250, 250, SHARD_FIT_SHORT, 8},
        {250, 333, 32, SHARD_FIT_SHORT, 1}, /* portrait: same short side */
        {333, 250, 32, SHARD_FIT_CROP, 1},  /* crop scales the short side */
        {333, 250, 42, SHARD_FIT_LONG, 1},  /* ceil(333 / 8) = 42 */
        {333, 250, 43, SHARD_FIT_LONG, 2},
        {250, 333, 43, SHARD_FIT_LONG, 2},
        {500, 375, 256, SHARD_FIT_SHORT, 8}, /* the typical ImageNet image */
        {500, 375, 224, SHARD_FIT_LONG, 4},
        {4000, 3000, 256, SHARD_FIT_SHORT, 1},
        {4000, 3000, 512, SHARD_FIT_SHORT, 2},
        {4000, 3000, 376, SHARD_FIT_SHORT, 2}, /* ceil(750) >= 376 */
        {1, 1, 1, SHARD_FIT_SHORT, 1},
        {65500, 65500, 65500, SHARD_FIT_LONG, 8},
        {100, 100, 512, SHARD_FIT_SHORT, 8}, /* upscaling: never shrink first */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned m = sk_jpeg_scale_num(cases[i].w, cases[i].h, cases[i].target, cases[i].fit);
        if (m != cases[i].num)
            fail_msg("%ux%u target %u fit %s: scale %u/8, expected %u/8", cases[i].w, cases[i].h,
                     cases[i].target, shard_fit_name(cases[i].fit), m, cases[i].num);
    }
}

static void test_dct_scaled_decode_has_expected_size_and_pixels(void **state)
{
    (void)state;
    static const struct {
        uint32_t target;
        enum shard_fit fit;
        const char *ref; /* NULL: full size */
    } cases[] = {
        {32, SHARD_FIT_SHORT, "rgb.jpg.s8.ppm"},  {33, SHARD_FIT_SHORT, "rgb.jpg.s4.ppm"},
        {125, SHARD_FIT_SHORT, "rgb.jpg.s2.ppm"}, {126, SHARD_FIT_SHORT, "rgb.jpg.ref.ppm"},
        {32, SHARD_FIT_CROP, "rgb.jpg.s8.ppm"},   {42, SHARD_FIT_LONG, "rgb.jpg.s8.ppm"},
        {43, SHARD_FIT_LONG, "rgb.jpg.s4.ppm"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct shard_decode_options o;
        shard_decode_options_init(&o);
        o.target = cases[i].target;
        o.fit = cases[i].fit;
        struct shard_image img = {0};
        struct shard_err err = {0};
        if (decode_fixture("rgb.jpg", &o, &img, &err))
            fail_msg("target %u: %s", o.target, err.msg);
        assert_matches_ppm(&img, cases[i].ref, TOL_EXACT);
        shard_image_release(&img);
    }
}

static void test_dct_scaling_picks_the_side_before_rotation(void **state)
{
    (void)state;
    /* stored 48x32, orientation 6: short side 32 -> 1/2 keeps 16 >= 16 */
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 16;
    struct shard_image img = {0};
    struct shard_err err = {0};
    assert_int_equal(decode_fixture("exif_rot6.jpg", &o, &img, &err), 0);
    assert_int_equal(img.width, 16);
    assert_int_equal(img.height, 24);
    shard_image_release(&img);
}

/* Mean absolute difference per sample of two images of one size. */
static double mean_abs_diff(const struct shard_image *a, const struct shard_image *b)
{
    assert_int_equal(a->width, b->width);
    assert_int_equal(a->height, b->height);
    double sum = 0;
    for (uint32_t y = 0; y < a->height; y++)
        for (size_t i = 0; i < (size_t)a->width * 3; i++)
            sum += fabs((double)a->pixels[y * a->stride + i] - b->pixels[y * b->stride + i]);
    return sum / ((double)a->width * a->height * 3);
}

static void test_dct_scaled_picture_box_keeps_the_picture_in_place(void **state)
{
    (void)state;
    /* rgb.jpg is 333x250; target 100 decodes it at 1/2: 167x125 pixels for
     * 166.5x125 of picture.  Resampled from that box it lands where a
     * full-size decode lands; stretched over all 167 columns it drifts by
     * up to half a column. */
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    struct shard_image full = {0}, scaled = {0}, tmp = {0}, ref = {0}, boxed = {0}, whole = {0};
    struct shard_decode_info full_info, info;
    struct shard_err err = {0};
    assert_int_equal(decode_fixture_ex("rgb.jpg", &o, &full, &full_info, &err), 0);
    assert_true(full_info.box_x0 == 0 && full_info.box_y0 == 0 && full_info.box_x1 == 333 &&
                full_info.box_y1 == 250);
    o.target = 100;
    assert_int_equal(decode_fixture_ex("rgb.jpg", &o, &scaled, &info, &err), 0);
    assert_int_equal(scaled.width, 167);
    assert_int_equal(scaled.height, 125);
    assert_true(info.box_x0 == 0 && info.box_y0 == 0 && info.box_x1 == 166.5 && info.box_y1 == 125);
    struct shard_geometry g;
    assert_int_equal(shard_geometry_compute(333, 250, 100, SHARD_FIT_SHORT, 1, &g), 0);
    assert_int_equal(shard_geometry_apply(&full, &g, &tmp, &ref, &err), 0);
    assert_int_equal(shard_geometry_apply_decoded(&scaled, &info, &g, &tmp, &boxed, &err), 0);
    assert_int_equal(shard_geometry_apply(&scaled, &g, &tmp, &whole, &err), 0);
    double in_place = mean_abs_diff(&boxed, &ref), stretched = mean_abs_diff(&whole, &ref);
    if (!(in_place < 1.5 && in_place < 0.75 * stretched))
        fail_msg("mean difference from the full-size decode: %.3f from the box, %.3f stretched",
                 in_place, stretched);
    shard_image_release(&full);
    shard_image_release(&scaled);
    shard_image_release(&tmp);
    shard_image_release(&ref);
    shard_image_release(&boxed);
    shard_image_release(&whole);
}

/* ---- PNG ------------------------------------------------------------------------- */

static void test_png_colour_types_decode_to_exact_rgb(void **state)
{
    (void)state;
    static const char *const names[] = {"rgb.png",       "gray.png",    "gray16.png",
                                        "rgb16.png",     "palette.png", "interlaced.png",
                                        "png_named.JPEG"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_decodes_like_reference(names[i], TOL_EXACT);
}

static void test_png_alpha_is_composited_over_the_background(void **state)
{
    (void)state;
    static const char *const names[] = {"rgba.png", "gray_alpha.png", "palette_trns.png",
                                        "gray_trns.png"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        check_decodes_like_reference(names[i], TOL_ALPHA); /* default: white */
        check_alpha_over(names[i], WHITE, TOL_ALPHA);
        check_alpha_over(names[i], ORANGE, TOL_ALPHA);
    }
    check_alpha_over("rgba16.png", WHITE, TOL_ALPHA);
    check_alpha_over("rgba16.png", ORANGE, TOL_ALPHA);
}

static void test_png_exif_orientation_is_applied(void **state)
{
    (void)state;
    check_decodes_like_reference("exif_rot6.png", TOL_EXACT);
}

static void test_truncated_png_is_rejected_with_reason(void **state)
{
    (void)state;
    check_rejected("truncated.png", NULL, SHARD_ECORRUPT, "truncated PNG");
}

static void test_png_crc_mismatch_is_an_error_not_a_warning(void **state)
{
    (void)state;
    check_rejected("badcrc.png", NULL, SHARD_ECORRUPT, "corrupt PNG: IDAT: CRC error");
    /* libpng only warns about ancillary chunks by default */
    check_rejected("badcrc_ancillary.png", NULL, SHARD_ECORRUPT, "CRC error");
}

static void test_bitflipped_png_is_rejected_as_corrupt(void **state)
{
    (void)state;
    check_rejected("bitflip.png", NULL, SHARD_ECORRUPT, "corrupt PNG: ");
}

static void test_png_bomb_is_refused_before_allocating(void **state)
{
    (void)state;
    check_bomb_refused_before_allocating("bomb.png",
                                         "declared 100000x100000 exceeds --max-pixels 100000000");
}

static void test_png_over_memory_cap_is_refused(void **state)
{
    (void)state;
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_memory = 4096; /* zlib alone needs more */
    check_rejected("rgb.png", &o, SHARD_ELIMIT, "PNG needs more than --max-memory 4096 bytes");
}

/* ---- libvips formats ------------------------------------------------------------ */

static void test_webp_gif_tiff_decode_to_exact_rgb(void **state)
{
    (void)state;
    static const char *const names[] = {"rgb.webp", "rgb.gif", "rgb.tiff"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_decodes_like_reference(names[i], TOL_EXACT);
}

static void test_animated_gif_gives_its_first_frame(void **state)
{
    (void)state;
    check_decodes_like_reference("anim.gif", TOL_EXACT);
}

static void test_webp_alpha_is_composited_over_the_background(void **state)
{
    (void)state;
    check_alpha_over("rgba.webp", WHITE, TOL_ALPHA);
    check_alpha_over("rgba.webp", ORANGE, TOL_ALPHA);
}

static void test_webp_and_tiff_exif_orientation_is_applied(void **state)
{
    (void)state;
    check_decodes_like_reference("exif_rot6.webp", TOL_EXACT);
    check_decodes_like_reference("exif_rot6.tiff", TOL_EXACT);
}

static void test_truncated_webp_and_gif_are_rejected_with_reason(void **state)
{
    (void)state;
    check_rejected("truncated.webp", NULL, SHARD_ECORRUPT, "corrupt WEBP: ");
    check_rejected("truncated.gif", NULL, SHARD_ECORRUPT, "corrupt GIF: ");
}

static void test_vips_formats_check_declared_size_first(void **state)
{
    (void)state;
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_pixels = 96 * 64 - 1;
    static const char *const names[] = {"rgb.webp", "rgb.gif", "rgb.tiff"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        check_rejected(names[i], &o, SHARD_ELIMIT, "declared 96x64 exceeds --max-pixels 6143");
}

/* The decode path the reader links (sk_decode_image without the libvips
 * decoder): JPEG and PNG as shard_decode_ex gives them, orientation and info
 * included; the libvips formats refused with a reason, not decoded. */
static void test_decoder_without_libvips_refuses_its_formats_and_decodes_the_rest(void **state)
{
    (void)state;
    static const char *const decoded[] = {"rgb.jpg", "exif_rot6.jpg", "rgb.png"};
    for (size_t i = 0; i < sizeof decoded / sizeof decoded[0]; i++) {
        struct shard_buf b = {0};
        load_fixture(decoded[i], &b);
        struct shard_image full = {0}, alone = {0};
        struct shard_decode_info full_info, info;
        struct shard_err err = {0};
        if (shard_decode_ex(b.data, b.len, NULL, &full, &full_info, &err) ||
            sk_decode_image(b.data, b.len, NULL, &alone, &info, NULL, &err))
            fail_msg("%s: %s", decoded[i], err.msg);
        assert_int_equal(alone.width, full.width);
        assert_int_equal(alone.height, full.height);
        for (uint32_t y = 0; y < full.height; y++)
            assert_memory_equal(alone.pixels + y * alone.stride, full.pixels + y * full.stride,
                                (size_t)full.width * 3);
        assert_int_equal(info.format, full_info.format);
        assert_int_equal(info.orientation, full_info.orientation);
        shard_image_release(&full);
        shard_image_release(&alone);
        shard_buf_release(&b);
    }
    static const char *const refused[] = {"rgb.webp", "rgb.gif", "rgb.tiff"};
    static const char *const labels[] = {"WEBP", "GIF", "TIFF"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct shard_buf b = {0};
        load_fixture(refused[i], &b);
        struct shard_image img = {0};
        struct shard_err err = {0};
        char expect[64];
        snprintf(expect, sizeof expect, "unsupported: %s (decoded by libvips", labels[i]);
        int rc = sk_decode_image(b.data, b.len, NULL, &img, NULL, NULL, &err);
        if (rc != SHARD_EUNSUPPORTED || !strstr(err.msg, expect))
            fail_msg("%s: got %d \"%s\", expected SHARD_EUNSUPPORTED with \"%s\"", refused[i], rc,
                     err.msg, expect);
        assert_null(img.pixels);
        shard_buf_release(&b);
    }
}

static void test_bmp_is_unsupported_with_reason(void **state)
{
    (void)state;
    check_rejected("rgb.bmp", NULL, SHARD_EUNSUPPORTED, "unsupported: BMP");
}

static void *count_object(void *object, void *a, void *b)
{
    (void)object;
    (void)b;
    (*(int *)a)++;
    return NULL;
}

static int live_vips_objects(void)
{
    int n = 0;
    vips_object_map(count_object, &n, NULL);
    return n;
}

static void test_vips_decodes_release_every_object(void **state)
{
    (void)state;
    static const char *const names[] = {"rgb.webp", "rgba.webp", "exif_rot6.tiff", "anim.gif",
                                        "truncated.webp"};
    struct shard_image img = {0};
    struct shard_err err = {0};
    decode_fixture("rgb.webp", NULL, &img, &err); /* libvips starts up */
    int before = live_vips_objects();
    for (int round = 0; round < 5; round++)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            decode_fixture(names[i], NULL, &img, &err);
    assert_int_equal(live_vips_objects(), before);
    shard_image_release(&img);
}

/* ---- memory reuse, threads, real images ------------------------------------------ */

static void test_output_image_memory_is_reused(void **state)
{
    (void)state;
    struct shard_image img = {0};
    struct shard_err err = {0};
    assert_int_equal(decode_fixture("rgb.jpg", NULL, &img, &err), 0);
    uint8_t *first = img.pixels;
    assert_int_equal(decode_fixture("rgb.png", NULL, &img, &err), 0); /* smaller */
    assert_ptr_equal(img.pixels, first);
    assert_int_equal(decode_fixture("rgb.jpg", NULL, &img, &err), 0);
    assert_ptr_equal(img.pixels, first);
    /* a failure leaves an image that can still be released */
    assert_int_equal(decode_fixture("truncated.jpg", NULL, &img, &err), SHARD_ECORRUPT);
    shard_image_release(&img);
}

static uint64_t checksum(const struct shard_image *img)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (uint32_t y = 0; y < img->height; y++)
        for (size_t i = 0; i < (size_t)img->width * 3; i++)
            h = (h ^ img->pixels[y * img->stride + i]) * 1099511628211ULL;
    return h ^ ((uint64_t)img->width << 32 | img->height);
}

struct outcome {
    int rc;
    uint64_t sum;
    char msg[SHARD_ERRMSG_SIZE];
};

static void decode_outcome(const struct shard_buf *in, struct shard_image *img, struct outcome *r)
{
    struct shard_err err = {0};
    r->rc = shard_decode(in->data, in->len, NULL, img, &err);
    r->sum = r->rc ? 0 : checksum(img);
    snprintf(r->msg, sizeof r->msg, "%s", err.msg);
}

static void test_concurrent_decodes_from_openmp_threads_match_serial(void **state)
{
    (void)state;
    static const char *const names[] = {
        "rgb.jpg",  "gray.jpg",       "cmyk_adobe.jpg", "progressive.jpg", "exif_rot6.jpg",
        "rgb.png",  "rgba16.png",     "interlaced.png", "rgb.webp",        "rgba.webp",
        "anim.gif", "exif_rot6.tiff", "truncated.jpg",  "bitflip.jpg",     "badcrc.png",
        "bomb.jpg", "truncated.webp", "text.jpg",
    };
    enum { N = sizeof names / sizeof names[0], ROUNDS = 8 };
    struct shard_buf in[N];
    struct outcome serial[N];
    static struct outcome parallel[N * ROUNDS];
    memset(in, 0, sizeof in);
    struct shard_image img = {0};
    for (int i = 0; i < N; i++) {
        load_fixture(names[i], &in[i]);
        decode_outcome(&in[i], &img, &serial[i]);
    }
    shard_image_release(&img);

#pragma omp parallel num_threads(4)
    {
        struct shard_image mine = {0}; /* one reused image per thread */
#pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < N * ROUNDS; k++)
            decode_outcome(&in[k % N], &mine, &parallel[k]);
        shard_image_release(&mine);
    }
    for (int k = 0; k < N * ROUNDS; k++) {
        const struct outcome *s = &serial[k % N], *p = &parallel[k];
        if (p->rc != s->rc || p->sum != s->sum || strcmp(p->msg, s->msg) != 0)
            fail_msg("%s: parallel %d \"%s\" differs from serial %d \"%s\"", names[k % N], p->rc,
                     p->msg, s->rc, s->msg);
    }
    for (int i = 0; i < N; i++)
        shard_buf_release(&in[i]);
}

/* Every image in dir decodes, whole and DCT-scaled for a 256-px target (never
 * below it); returns how many images there were, printing each failure. */
static int decode_every_image(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open the sample '%s'", dir);
    struct shard_buf b = {0};
    struct shard_image img = {0}, scaled = {0};
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 256;
    int images = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *p = join_path(dir, e->d_name);
        int loaded = e->d_name[0] != '.' && slurp(p, &b) == 0;
        free(p);
        if (!loaded || shard_sniff(b.data, b.len) == SHARD_FORMAT_UNKNOWN)
            continue; /* SOURCE.txt and the like */
        images++;
        struct shard_err err = {0};
        int rc = shard_decode(b.data, b.len, NULL, &img, &err);
        if (!rc)
            rc = shard_decode(b.data, b.len, &o, &scaled, &err);
        if (!rc) {
            uint32_t full_short = img.width < img.height ? img.width : img.height;
            uint32_t short_side = scaled.width < scaled.height ? scaled.width : scaled.height;
            if (short_side < (full_short < 256 ? full_short : 256)) {
                rc = -1;
                snprintf(err.msg, sizeof err.msg, "scaled short side %u < 256", short_side);
            }
        }
        if (rc) {
            print_message("%s/%s: %s\n", dir, e->d_name, err.msg);
            failed++;
        }
    }
    closedir(d);
    shard_buf_release(&b);
    shard_image_release(&img);
    shard_image_release(&scaled);
    print_message("%s: decoded %d images, %d failed\n", dir, images, failed);
    assert_int_equal(failed, 0);
    return images;
}

/* The photo sample (SHARDKIT_SAMPLE), always there. */
static const char *photo_sample(void)
{
    const char *dir = getenv("SHARDKIT_SAMPLE");
    if (!dir)
        fail_msg("SHARDKIT_SAMPLE is not set (run through tests/run.sh)");
    return dir;
}

/* The ImageNet sample (SHARDKIT_DATASET) when it is there, else NULL. */
static const char *real_sample(void)
{
    const char *dir = getenv("SHARDKIT_DATASET");
    struct stat st;
    return dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? dir : NULL;
}

static void test_sample_photos_decode_without_error(void **state)
{
    (void)state;
    assert_true(decode_every_image(photo_sample()) >= 1000);
    if (real_sample())
        assert_true(decode_every_image(real_sample()) >= 1000);
}

/* ---- decoding only a box ------------------------------------------------------ */

/* img re-encoded at w x h (its top-left part) as a JPEG with `components`
 * (1: grayscale, 3: YCbCr) and luma sampling h_samp x v_samp, optionally
 * progressive. */
static void encode_jpeg_variant(const struct shard_image *img, uint32_t w, uint32_t h,
                                int components, int h_samp, int v_samp, int progressive,
                                struct shard_buf *out)
{
    assert_true(w <= img->width && h <= img->height);
    struct jpeg_writer j;
    start_jpeg(&j, w, h);
    struct jpeg_compress_struct *c = &j.c;
    jpeg_set_quality(c, 90, TRUE);
    if (components == 1)
        jpeg_set_colorspace(c, JCS_GRAYSCALE);
    c->comp_info[0].h_samp_factor = h_samp;
    c->comp_info[0].v_samp_factor = v_samp;
    if (progressive)
        jpeg_simple_progression(c);
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        JSAMPROW r = img->pixels + (size_t)c->next_scanline * img->stride;
        jpeg_write_scanlines(c, &r, 1);
    }
    finish_jpeg(&j, out);
}

/* The box's pixels from sk_decode_jpeg_box equal those of a full decode. */
static void check_box(const struct shard_buf *jpeg, const struct shard_image *full, uint32_t left,
                      uint32_t top, uint32_t bw, uint32_t bh, const char *what)
{
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 0;
    struct sk_jpeg_box box = {left, top, bw, bh, 0, 0};
    struct shard_image region = {0};
    struct shard_err err = {0};
    char warning[SHARD_ERRMSG_SIZE];
    uint32_t sw = 0, sh = 0;
    int rc = sk_decode_jpeg_box(jpeg->data, jpeg->len, &o, &box, &region, &sw, &sh, warning, &err);
    if (rc)
        fail_msg("%s box %ux%u at (%u, %u): %d %s", what, bw, bh, left, top, rc, err.msg);
    assert_int_equal(sw, full->width);
    assert_int_equal(sh, full->height);
    assert_true(box.region_left <= left && box.region_top <= top);
    assert_true((uint64_t)box.region_left + region.width >= (uint64_t)left + bw);
    assert_true((uint64_t)box.region_top + region.height >= (uint64_t)top + bh);
    for (uint32_t y = 0; y < bh; y++) {
        const uint8_t *a = full->pixels + (size_t)(top + y) * full->stride + (size_t)left * 3;
        const uint8_t *b = region.pixels + (size_t)(top + y - box.region_top) * region.stride +
                           (size_t)(left - box.region_left) * 3;
        if (memcmp(a, b, (size_t)bw * 3) != 0)
            fail_msg("%s box %ux%u at (%u, %u): row %u differs from a full decode", what, bw, bh,
                     left, top, top + y);
    }
    shard_image_release(&region);
}

/* Boxes at every edge and corner, tiny and whole, and pseudo-random ones. */
static void check_boxes(const struct shard_buf *jpeg, const char *what)
{
    struct shard_image full = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_decode(jpeg->data, jpeg->len, NULL, &full, &err), 0);
    const uint32_t w = full.width, h = full.height;
    const uint32_t half_w = (w + 1) / 2, half_h = (h + 1) / 2;
    const uint32_t fixed[][4] = {
        {0, 0, w, h},
        {0, 0, 1, 1},
        {w - 1, h - 1, 1, 1},
        {0, h - half_h, half_w, half_h},
        {w - half_w, 0, half_w, half_h},
        {w - half_w, h - half_h, half_w, half_h},
        {w / 3, h / 3, w / 3 + 1, h / 3 + 1},
        {0, h / 2, w, 1},
        {w / 2, 0, 1, h},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_box(jpeg, &full, fixed[i][0], fixed[i][1], fixed[i][2], fixed[i][3], what);
    uint64_t state = 0x9e3779b97f4a7c15ULL ^ w ^ ((uint64_t)h << 20);
    for (int i = 0; i < 24; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t bw = 1 + (uint32_t)(state >> 33) % w;
        uint32_t bh = 1 + (uint32_t)(state >> 13) % h;
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t left = (uint32_t)(state >> 33) % (w - bw + 1);
        uint32_t top = (uint32_t)(state >> 13) % (h - bh + 1);
        check_box(jpeg, &full, left, top, bw, bh, what);
    }
    shard_image_release(&full);
}

/* check_boxes on the first 40 JPEGs of dir (in directory order). */
static void check_boxes_of_photos(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open the sample '%s'", dir);
    struct shard_buf b = {0};
    int photos = 0;
    struct dirent *e;
    while (photos < 40 && (e = readdir(d))) {
        char *p = join_path(dir, e->d_name);
        int loaded = e->d_name[0] != '.' && slurp(p, &b) == 0;
        free(p);
        if (!loaded || shard_sniff(b.data, b.len) != SHARD_FORMAT_JPEG)
            continue;
        check_boxes(&b, e->d_name);
        photos++;
    }
    closedir(d);
    shard_buf_release(&b);
    assert_int_equal(photos, 40);
}

static void test_jpeg_box_decode_gives_the_pixels_of_a_full_decode(void **state)
{
    (void)state;
    const char *fixtures[] = {"rgb.jpg", "gray.jpg", "cmyk_adobe.jpg", "progressive.jpg"};
    struct shard_buf b = {0};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        load_fixture(fixtures[i], &b);
        check_boxes(&b, fixtures[i]);
    }
    /* the picture of rgb.jpg re-encoded in other layouts and odd sizes */
    struct shard_image picture = {0};
    struct shard_err err = {0};
    load_fixture("rgb.jpg", &b);
    assert_int_equal(shard_decode(b.data, b.len, NULL, &picture, &err), 0);
    const struct {
        uint32_t w, h;
        int components, h_samp, v_samp, progressive;
        const char *what;
    } variants[] = {
        {333, 250, 3, 2, 2, 0, "4:2:0 333x250"},
        {331, 249, 3, 1, 1, 0, "4:4:4 331x249"},
        {333, 250, 3, 2, 1, 0, "4:2:2 333x250"},
        {317, 243, 1, 1, 1, 0, "grayscale 317x243"},
        {299, 201, 3, 2, 2, 1, "progressive 4:2:0 299x201"},
        {301, 203, 3, 1, 1, 1, "progressive 4:4:4 301x203"},
        {17, 9, 3, 2, 2, 0, "4:2:0 17x9"},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        encode_jpeg_variant(&picture, variants[i].w, variants[i].h, variants[i].components,
                            variants[i].h_samp, variants[i].v_samp, variants[i].progressive, &b);
        check_boxes(&b, variants[i].what);
    }
    shard_image_release(&picture);
    shard_buf_release(&b);
    check_boxes_of_photos(photo_sample());
    if (real_sample())
        check_boxes_of_photos(real_sample());
}

/* Damage after the box is found as by a full decode: the rows after it are
 * still entropy-decoded and the stream read to its end. */
static void test_jpeg_box_decode_reports_damage_outside_the_box(void **state)
{
    (void)state;
    const char *damaged[] = {"truncated.jpg", "bitflip.jpg"};
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.target = 0;
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        struct shard_buf b = {0};
        load_fixture(damaged[i], &b);
        struct shard_image img = {0};
        struct shard_err full_err = {0}, box_err = {0};
        int full_rc = shard_decode(b.data, b.len, &o, &img, &full_err);
        struct sk_jpeg_box box = {0, 0, 8, 8, 0, 0};
        char warning[SHARD_ERRMSG_SIZE];
        uint32_t sw, sh;
        int box_rc = sk_decode_jpeg_box(b.data, b.len, &o, &box, &img, &sw, &sh, warning, &box_err);
        assert_int_equal(full_rc, SHARD_ECORRUPT);
        assert_int_equal(box_rc, full_rc);
        assert_string_equal(box_err.msg, full_err.msg);
        shard_image_release(&img);
        shard_buf_release(&b);
    }
}

static void test_jpeg_box_decode_refuses_exif_orientation_and_boxes_outside(void **state)
{
    (void)state;
    struct shard_buf b = {0};
    load_fixture("exif_rot6.jpg", &b);
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    struct sk_jpeg_box box = {0, 0, 4, 4, 0, 0};
    struct shard_image img = {0};
    struct shard_err err = {0};
    char warning[SHARD_ERRMSG_SIZE];
    uint32_t sw, sh;
    assert_int_equal(sk_decode_jpeg_box(b.data, b.len, &o, &box, &img, &sw, &sh, warning, &err),
                     SK_JPEG_NEEDS_FULL);
    load_fixture("rgb.jpg", &b);
    struct sk_jpeg_box beyond = {333, 0, 1, 1, 0, 0};
    assert_int_equal(sk_decode_jpeg_box(b.data, b.len, &o, &beyond, &img, &sw, &sh, warning, &err),
                     SHARD_EINVAL);
    assert_string_equal(err.msg, "box 1x1 at (333, 0) is outside the 333x250 JPEG");
    shard_image_release(&img);
    shard_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sniff_uses_signatures_not_names),
        cmocka_unit_test(test_jpeg_box_decode_gives_the_pixels_of_a_full_decode),
        cmocka_unit_test(test_jpeg_box_decode_reports_damage_outside_the_box),
        cmocka_unit_test(test_jpeg_box_decode_refuses_exif_orientation_and_boxes_outside),
        cmocka_unit_test(test_options_init_sets_documented_defaults),
        cmocka_unit_test(test_missing_input_or_output_is_invalid),
        cmocka_unit_test(test_rgb_jpeg_matches_reference_decoder),
        cmocka_unit_test(test_grayscale_jpeg_becomes_three_channel_rgb),
        cmocka_unit_test(test_adobe_cmyk_jpeg_is_inverted_and_converted_to_rgb),
        cmocka_unit_test(test_cmyk_jpeg_without_adobe_marker_is_read_as_plain_ink),
        cmocka_unit_test(test_progressive_jpeg_matches_reference_decoder),
        cmocka_unit_test(test_exif_orientations_1_to_8_give_upright_pixels),
        cmocka_unit_test(test_the_first_exif_app1_of_many_gives_the_orientation),
        cmocka_unit_test(test_exif_orientation_parser_reads_ifd0_and_ignores_garbage),
        cmocka_unit_test(test_truncated_jpeg_is_rejected_with_reason),
        cmocka_unit_test(test_bitflipped_jpeg_is_rejected_as_corrupt_data),
        cmocka_unit_test(test_jpeg_warnings_that_lose_no_pixels_are_accepted_and_reported),
        cmocka_unit_test(test_jpeg_warnings_that_lose_pixels_are_rejected),
        cmocka_unit_test(test_png_warnings_that_lose_no_pixels_are_accepted_and_reported),
        cmocka_unit_test(test_png_warnings_that_lose_pixels_are_rejected),
        cmocka_unit_test(test_several_warnings_report_the_first_and_a_count),
        cmocka_unit_test(test_empty_file_is_not_an_image),
        cmocka_unit_test(test_text_file_named_jpg_is_not_an_image),
        cmocka_unit_test(test_jpeg_bomb_is_refused_before_allocating),
        cmocka_unit_test(test_twelve_bit_jpeg_is_unsupported),
        cmocka_unit_test(test_lossless_jpeg_is_unsupported),
        cmocka_unit_test(test_progressive_jpeg_over_memory_cap_is_refused),
        cmocka_unit_test(test_jpeg_with_too_many_scans_is_refused),
        cmocka_unit_test(test_file_over_max_file_bytes_is_refused),
        cmocka_unit_test(test_dct_scale_numerator_is_smallest_keeping_fit_side_at_least_target),
        cmocka_unit_test(test_dct_scaled_picture_box_keeps_the_picture_in_place),
        cmocka_unit_test(test_dct_scaled_decode_has_expected_size_and_pixels),
        cmocka_unit_test(test_dct_scaling_picks_the_side_before_rotation),
        cmocka_unit_test(test_png_colour_types_decode_to_exact_rgb),
        cmocka_unit_test(test_png_alpha_is_composited_over_the_background),
        cmocka_unit_test(test_png_exif_orientation_is_applied),
        cmocka_unit_test(test_truncated_png_is_rejected_with_reason),
        cmocka_unit_test(test_png_crc_mismatch_is_an_error_not_a_warning),
        cmocka_unit_test(test_bitflipped_png_is_rejected_as_corrupt),
        cmocka_unit_test(test_png_bomb_is_refused_before_allocating),
        cmocka_unit_test(test_png_over_memory_cap_is_refused),
        cmocka_unit_test(test_webp_gif_tiff_decode_to_exact_rgb),
        cmocka_unit_test(test_animated_gif_gives_its_first_frame),
        cmocka_unit_test(test_webp_alpha_is_composited_over_the_background),
        cmocka_unit_test(test_webp_and_tiff_exif_orientation_is_applied),
        cmocka_unit_test(test_truncated_webp_and_gif_are_rejected_with_reason),
        cmocka_unit_test(test_vips_formats_check_declared_size_first),
        cmocka_unit_test(test_decoder_without_libvips_refuses_its_formats_and_decodes_the_rest),
        cmocka_unit_test(test_bmp_is_unsupported_with_reason),
        cmocka_unit_test(test_vips_decodes_release_every_object),
        cmocka_unit_test(test_output_image_memory_is_reused),
        cmocka_unit_test(test_concurrent_decodes_from_openmp_threads_match_serial),
        cmocka_unit_test(test_sample_photos_decode_without_error),
    };
    return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
