/*
 * resize_quality.c - speed and quality of the resampling candidates for
 * shard_resize(), measured on real photographs.
 *
 * For every JPEG in a folder and every target size (shorter side), the image
 * is decoded the way shardify decodes it (libjpeg-turbo, RGB, DCT-domain
 * scaling by 1/2, 1/4 or 1/8 while the shorter side stays >= the target;
 * --no-dct decodes at full size, giving the large reductions of PNG input),
 * then resampled to the shardify geometry (shorter side = size, the other
 * side floor(other * size / side), upscaling allowed) by each candidate.
 *
 * Quality: PSNR of each candidate against a lanczos3 reference made from the
 * same decoded pixels.  The reference is Pillow's LANCZOS filter (lanczos3,
 * support stretched by the reduction factor, pixel centres at i + 0.5)
 * computed here in double precision without intermediate rounding;
 * bench/resize_quality_pillow.py shows that Pillow's own LANCZOS output
 * agrees with it.  (vips_resize's lanczos3 is also listed: it agrees when
 * shrinking, but it places pixels differently when enlarging.)
 * Speed: the best of --reps runs of one call per image, on one core, without
 * allocation (outputs are reused, as shardify's workers reuse theirs).
 * Medians and means over all images are printed per method and size, then
 * PSNR by reduction factor.
 *
 * Build from the repository root, after `make build` (only the resize code of
 * the library is linked from the archive):
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Ilib bench/resize_quality.c build/libshardkit.a \
 *      $(pkg-config --cflags --libs vips libjpeg libswscale libavutil) -lyuv -lm \
 *      -o build/resize_quality
 *
 * Run:
 *
 *   build/resize_quality [--sizes 256,512] [--reps 3] [--limit N] [--no-dct] [--dct-rules]
 *                        [--dump DIR] FOLDER
 *
 * --dct-rules measures the DCT scaling rules instead of the resamplers: per
 * image, lanczos3 of the full-size decode is the reference, and each rule
 * (full size; 1/2, 1/4, 1/8; any M/8) decodes at its scale, then shard_resize
 * makes shardify's geometry, from the whole decoded image or from the part
 * the picture covers (shard_geometry_apply_decoded); decode time, resize time and
 * PSNR by reduction.
 *
 * --dump DIR also writes, per size, each decoded input and its reference as
 * binary PPM (DIR/<size>/<n>.in.ppm, <n>.ref.ppm) so that
 * bench/resize_quality_pillow.py can score Pillow on exactly the same pixels.
 */
#include "shardkit/image.h"
#include "image/decode_internal.h" /* lib/: shardify's DCT scaling rule */
#include "image/resize_internal.h" /* lib/: the engine, to compare its filters */

#include <dirent.h>
#include <errno.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <jpeglib.h>
#include <libswscale/swscale.h>
#include <libyuv.h>
#include <libyuv/scale_rgb.h> /* RGBScale: not in libyuv.h of this version */
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <vips/vips.h>

/* PSNR reported for identical images (the MSE is 0). */
#define PSNR_IDENTICAL 99.0
#define MAX_SIZES 8
#define PI 3.14159265358979323846

/* ---- small helpers -------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "resize_quality: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n)
{
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        int d = (int)a[i] - (int)b[i];
        sse += (double)(d * d);
    }
    if (sse == 0)
        return PSNR_IDENTICAL;
    return 10.0 * log10(255.0 * 255.0 * (double)n / sse);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : NAN;
}

static int write_ppm(const char *path, const uint8_t *rgb, int w, int h)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fprintf(f, "P6\n%d %d\n255\n", w, h);
    size_t n = (size_t)w * (size_t)h * 3;
    int ok = fwrite(rgb, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* ---- decoding as shardify does it ----------------------------------------- */

struct jpeg_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
};

static void jpeg_error_exit(j_common_ptr cinfo)
{
    longjmp(((struct jpeg_error *)cinfo->err)->jump, 1);
}

/* DCT scaling rules, as the numerator M of the decode scale M/8 for a w x h
 * image going to `target` (shorter side); 8 is full size. */
typedef unsigned (*scale_rule)(uint32_t w, uint32_t h, uint32_t target);

/* shardify's rule (lib/image/decode_jpeg.c): the smallest of 1/8, 1/4, 1/2
 * keeping the shorter side >= target, else full size. */
static unsigned rule_shipped(uint32_t w, uint32_t h, uint32_t target)
{
    return sk_jpeg_scale_num(w, h, target, SHARD_FIT_SHORT);
}

/* The smallest of every M/8 (M = 1..8) keeping the shorter side >= target:
 * what libjpeg-turbo allows, measured here and not shipped. */
static unsigned rule_any_eighths(uint32_t w, uint32_t h, uint32_t target)
{
    uint64_t side = w < h ? w : h;
    for (unsigned num = 1; num < SK_JPEG_SCALE_DENOM; num++)
        if ((side * num + SK_JPEG_SCALE_DENOM - 1) / SK_JPEG_SCALE_DENOM >= target)
            return num;
    return SK_JPEG_SCALE_DENOM;
}

static unsigned rule_full(uint32_t w, uint32_t h, uint32_t target)
{
    (void)w, (void)h, (void)target;
    return SK_JPEG_SCALE_DENOM;
}

/* Decode a JPEG file to RGB at the scale `rule` picks for `target` (NULL:
 * full size).  Returns a malloced buffer (*w x *h x 3) or NULL; *full_w x
 * *full_h (if not NULL) is the size before scaling. */
static uint8_t *decode_jpeg(const uint8_t *data, size_t len, scale_rule rule, unsigned target,
                            int *w, int *h, int *full_w, int *full_h)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error jerr;
    uint8_t *volatile pixels = NULL;

    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = jpeg_error_exit;
    if (setjmp(jerr.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(pixels);
        return NULL;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    cinfo.scale_num = rule ? rule(cinfo.image_width, cinfo.image_height, target)
                           : SK_JPEG_SCALE_DENOM;
    cinfo.scale_denom = SK_JPEG_SCALE_DENOM;
    if (full_w)
        *full_w = (int)cinfo.image_width, *full_h = (int)cinfo.image_height;
    jpeg_start_decompress(&cinfo);
    *w = (int)cinfo.output_width;
    *h = (int)cinfo.output_height;
    size_t stride = (size_t)cinfo.output_width * 3;
    pixels = xmalloc(stride * cinfo.output_height);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return pixels;
}

/* ---- candidates ----------------------------------------------------------- */

/* Resample sw x sh RGB to dw x dh RGB.  Returns 0 or -1. */
typedef int (*resize_fn)(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

static int resize_libyuv_rgb(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh,
                             enum FilterMode mode)
{
    return RGBScale(src, sw * 3, sw, sh, dst, dw * 3, dw, dh, mode) ? -1 : 0;
}

static int libyuv_rgb_bilinear(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_libyuv_rgb(s, sw, sh, d, dw, dh, kFilterBilinear);
}

static int libyuv_rgb_box(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_libyuv_rgb(s, sw, sh, d, dw, dh, kFilterBox);
}

/* Split into planes, I444Scale (libyuv's planar scaler has a real box filter
 * for reductions of 2x or more), merge. */
static int libyuv_planar(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh,
                         enum FilterMode mode)
{
    size_t sn = (size_t)sw * sh, dn = (size_t)dw * dh;
    uint8_t *planes = xmalloc(3 * (sn + dn));
    uint8_t *sp[3] = {planes, planes + sn, planes + 2 * sn};
    uint8_t *dp[3] = {planes + 3 * sn, planes + 3 * sn + dn, planes + 3 * sn + 2 * dn};
    SplitRGBPlane(s, sw * 3, sp[0], sw, sp[1], sw, sp[2], sw, sw, sh);
    int rc = I444Scale(sp[0], sw, sp[1], sw, sp[2], sw, sw, sh, dp[0], dw, dp[1], dw, dp[2], dw, dw,
                       dh, mode);
    if (rc == 0)
        MergeRGBPlane(dp[0], dw, dp[1], dw, dp[2], dw, d, dw * 3, dw, dh);
    free(planes);
    return rc ? -1 : 0;
}

static int libyuv_planar_box(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return libyuv_planar(s, sw, sh, d, dw, dh, kFilterBox);
}

static int libyuv_planar_bilinear(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return libyuv_planar(s, sw, sh, d, dw, dh, kFilterBilinear);
}

/* A context per call, as a library resizing images of any size must do. */
static int resize_swscale(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh, int flags)
{
    struct SwsContext *ctx = sws_getContext(sw, sh, AV_PIX_FMT_RGB24, dw, dh, AV_PIX_FMT_RGB24,
                                            flags | SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP, NULL,
                                            NULL, NULL);
    if (!ctx)
        return -1;
    const uint8_t *src_planes[1] = {s};
    int src_strides[1] = {sw * 3};
    uint8_t *dst_planes[1] = {d};
    int dst_strides[1] = {dw * 3};
    int rows = sws_scale(ctx, src_planes, src_strides, 0, sh, dst_planes, dst_strides);
    sws_freeContext(ctx);
    return rows == dh ? 0 : -1;
}

static int swscale_bilinear(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_swscale(s, sw, sh, d, dw, dh, SWS_BILINEAR);
}

static int swscale_area(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_swscale(s, sw, sh, d, dw, dh, SWS_AREA);
}

static int swscale_lanczos(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_swscale(s, sw, sh, d, dw, dh, SWS_LANCZOS);
}

static int resize_vips(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh,
                       VipsKernel kernel)
{
    int rc = -1;
    VipsImage *in = vips_image_new_from_memory(s, (size_t)sw * sh * 3, sw, sh, 3,
                                               VIPS_FORMAT_UCHAR);
    VipsImage *out = NULL;
    if (!in)
        return -1;
    if (vips_resize(in, &out, (double)dw / sw, "vscale", (double)dh / sh, "kernel", kernel, NULL))
        goto out;
    if (out->Xsize != dw || out->Ysize != dh || out->Bands != 3)
        goto out; /* rounding gave another size: report a failure, never compare */
    size_t n = 0;
    void *mem = vips_image_write_to_memory(out, &n);
    if (!mem || n != (size_t)dw * dh * 3) {
        g_free(mem);
        goto out;
    }
    memcpy(d, mem, n);
    g_free(mem);
    rc = 0;
out:
    if (out)
        g_object_unref(out);
    g_object_unref(in);
    return rc;
}

static int vips_kernel_linear(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_vips(s, sw, sh, d, dw, dh, VIPS_KERNEL_LINEAR);
}

static int vips_kernel_lanczos3(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return resize_vips(s, sw, sh, d, dw, dh, VIPS_KERNEL_LANCZOS3);
}

/* The reference: lanczos3 in double precision, separable, with Pillow's
 * conventions (pixel centres at i + 0.5, support 3 * max(1, reduction), the
 * kernel stretched by the reduction, weights normalised per output).  No
 * rounding between the passes.  resize_quality_pillow.py checks that
 * Pillow's own LANCZOS agrees with it. */
struct ref_taps {
    int *first, *count;
    double *weight; /* `stride` weights per output */
    int stride;
};

static double sinc(double x)
{
    if (x == 0)
        return 1;
    x *= PI;
    return sin(x) / x;
}

static double lanczos3(double x)
{
    return (x > -3 && x < 3) ? sinc(x) * sinc(x / 3) : 0;
}

static void ref_taps_make(int in, int out, struct ref_taps *t)
{
    double scale = (double)in / out, filterscale = scale > 1 ? scale : 1;
    double support = 3 * filterscale;
    t->stride = (int)ceil(support) * 2 + 1;
    t->first = xmalloc((size_t)out * sizeof *t->first);
    t->count = xmalloc((size_t)out * sizeof *t->count);
    t->weight = xmalloc((size_t)out * t->stride * sizeof *t->weight);
    for (int o = 0; o < out; o++) {
        double center = (o + 0.5) * scale, sum = 0;
        int lo = (int)floor(center - support + 0.5), hi = (int)floor(center + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = hi > in ? in : hi;
        double *w = t->weight + (size_t)o * t->stride;
        for (int i = lo; i < hi; i++)
            sum += w[i - lo] = lanczos3((i + 0.5 - center) / filterscale);
        for (int i = lo; i < hi; i++)
            w[i - lo] /= sum;
        t->first[o] = lo;
        t->count[o] = hi - lo;
    }
}

static void ref_taps_free(struct ref_taps *t)
{
    free(t->first), free(t->count), free(t->weight);
}

static int reference_lanczos3(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    struct ref_taps tx, ty;
    ref_taps_make(sw, dw, &tx);
    ref_taps_make(sh, dh, &ty);
    double *mid = xmalloc((size_t)dw * sh * 3 * sizeof *mid); /* horizontal pass */
    for (int y = 0; y < sh; y++)
        for (int x = 0; x < dw; x++)
            for (int c = 0; c < 3; c++) {
                const double *w = tx.weight + (size_t)x * tx.stride;
                double acc = 0;
                for (int k = 0; k < tx.count[x]; k++)
                    acc += w[k] * s[((size_t)y * sw + tx.first[x] + k) * 3 + c];
                mid[((size_t)y * dw + x) * 3 + c] = acc;
            }
    for (int y = 0; y < dh; y++)
        for (int i = 0; i < dw * 3; i++) {
            const double *w = ty.weight + (size_t)y * ty.stride;
            double acc = 0;
            for (int k = 0; k < ty.count[y]; k++)
                acc += w[k] * mid[(size_t)(ty.first[y] + k) * dw * 3 + i];
            long v = lrint(acc);
            d[(size_t)y * dw * 3 + i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    free(mid);
    ref_taps_free(&tx);
    ref_taps_free(&ty);
    return 0;
}

/* What the library ships (shard_resize), and the other filters of its engine. */
static int shardkit_filter(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh, int filter)
{
    /* Write straight into d and keep the scratch memory between calls, as
     * shardify's workers reuse their images: no allocation or copy is timed. */
    static struct shard_image scratch;
    size_t n = (size_t)dw * dh * 3;
    struct shard_image src = {.pixels = (uint8_t *)s,
                              .width = (uint32_t)sw,
                              .height = (uint32_t)sh,
                              .channels = 3,
                              .stride = (size_t)sw * 3,
                              .capacity = (size_t)sh * sw * 3};
    struct shard_image dst = {.pixels = d,
                              .width = (uint32_t)dw,
                              .height = (uint32_t)dh,
                              .channels = 3,
                              .stride = (size_t)dw * 3,
                              .capacity = n};
    int rc = filter < 0
                 ? shard_resize(&src, (uint32_t)dw, (uint32_t)dh, &dst, NULL)
                 : sk_resample(&src, (uint32_t)dw, (uint32_t)dh, 0, 0, (uint32_t)dw, (uint32_t)dh,
                               (enum shard_resize_filter)filter, &scratch, &dst, NULL);
    return rc == 0 && dst.pixels == d ? 0 : -1;
}

static int shardkit_resize(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return shardkit_filter(s, sw, sh, d, dw, dh, -1);
}

/* shard_resize's filter from a box of the source (shard_geometry_apply_decoded). */
static int shardkit_box(const uint8_t *s, int sw, int sh, const struct sk_box *box, uint8_t *d,
                        int dw, int dh)
{
    static struct shard_image scratch;
    struct shard_image src = {.pixels = (uint8_t *)s,
                              .width = (uint32_t)sw,
                              .height = (uint32_t)sh,
                              .channels = 3,
                              .stride = (size_t)sw * 3,
                              .capacity = (size_t)sh * sw * 3};
    struct shard_image dst = {.pixels = d,
                              .width = (uint32_t)dw,
                              .height = (uint32_t)dh,
                              .channels = 3,
                              .stride = (size_t)dw * 3,
                              .capacity = (size_t)dw * dh * 3};
    int rc = sk_resample_box(&src, box, (uint32_t)dw, (uint32_t)dh, 0, 0, (uint32_t)dw,
                             (uint32_t)dh, SHARD_RESIZE_DEFAULT, SHARD_SIMD_AVX2, &scratch, &dst,
                             NULL);
    return rc == 0 && dst.pixels == d ? 0 : -1;
}

static int shardkit_triangle(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return shardkit_filter(s, sw, sh, d, dw, dh, SHARD_RESIZE_TRIANGLE);
}

static int shardkit_area(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return shardkit_filter(s, sw, sh, d, dw, dh, SHARD_RESIZE_AREA);
}

static int shardkit_cubic(const uint8_t *s, int sw, int sh, uint8_t *d, int dw, int dh)
{
    return shardkit_filter(s, sw, sh, d, dw, dh, SHARD_RESIZE_CUBIC);
}

struct method {
    const char *name;
    resize_fn fn;
};

static const struct method methods[] = {
    {"shard_resize (shipped)", shardkit_resize},
    {"shardkit triangle", shardkit_triangle},
    {"shardkit area", shardkit_area},
    {"shardkit cubic", shardkit_cubic},
    {"libyuv RGBScale bilinear", libyuv_rgb_bilinear},
    {"libyuv RGBScale box", libyuv_rgb_box},
    {"libyuv I444Scale bilinear", libyuv_planar_bilinear},
    {"libyuv I444Scale box", libyuv_planar_box},
    {"swscale bilinear", swscale_bilinear},
    {"swscale area", swscale_area},
    {"swscale lanczos", swscale_lanczos},
    {"vips linear", vips_kernel_linear},
    {"vips lanczos3", vips_kernel_lanczos3},
    {"reference lanczos3 (double)", reference_lanczos3},
};
#define N_METHODS (sizeof methods / sizeof methods[0])
#define REFERENCE (N_METHODS - 1)

/* ---- driver --------------------------------------------------------------- */

/* Images are also grouped by the reduction factor left after DCT scaling
 * (source short side / target short side), where the filters differ most. */
static const double bucket_upper[] = {1.0, 1.5, 2.0, 4.0, INFINITY};
static const char *const bucket_name[] = {"up", "1-1.5x", "1.5-2x", "2-4x", ">=4x"};
#define N_BUCKETS (sizeof bucket_upper / sizeof bucket_upper[0])

static size_t bucket_of(double reduction)
{
    size_t b = 0;
    while (reduction >= bucket_upper[b] && b + 1 < N_BUCKETS)
        b++;
    return b;
}

struct samples {
    double *ms, *psnr;
    size_t *bucket;
    size_t n, failed;
};

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0) {
        fclose(f);
        return NULL;
    }
    uint8_t *buf = xmalloc((size_t)st.st_size);
    *len = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_jpegs(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "resize_quality: cannot open '%s': %s\n", dir, strerror(errno));
        exit(2);
    }
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcasecmp(dot, ".jpeg") && strcasecmp(dot, ".jpg")))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                exit(2);
            names = grown;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = xmalloc(len);
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: resize_quality [--sizes 256,512] [--reps N] [--limit N] [--no-dct] "
                    "[--dct-rules] [--dump DIR] FOLDER\n");
    exit(2);
}

static void print_table(unsigned size, struct samples *res)
{
    printf("%-28s %9s %9s %9s %9s %7s\n", "method", "ms med", "ms mean", "PSNR med", "PSNR mean",
           "failed");
    for (size_t m = 0; m < N_METHODS; m++) {
        double pm = mean(res[m].psnr, res[m].n), tm = mean(res[m].ms, res[m].n);
        double *copy = xmalloc((res[m].n + 1) * sizeof *copy);
        memcpy(copy, res[m].psnr, res[m].n * sizeof *copy);
        double pmed = median(copy, res[m].n);
        memcpy(copy, res[m].ms, res[m].n * sizeof *copy);
        printf("%-28s %9.3f %9.3f %9.2f %9.2f %7zu\n", methods[m].name, median(copy, res[m].n), tm,
               pmed, pm, res[m].failed);
        free(copy);
    }

    printf("\nsize %u: PSNR median (mean) by reduction factor; images per group:", size);
    size_t count[N_BUCKETS] = {0};
    for (size_t i = 0; i < res[REFERENCE].n; i++)
        count[res[REFERENCE].bucket[i]]++;
    for (size_t b = 0; b < N_BUCKETS; b++)
        printf(" %s %zu%s", bucket_name[b], count[b], b + 1 < N_BUCKETS ? "," : "\n");
    printf("%-28s", "method");
    for (size_t b = 0; b < N_BUCKETS; b++)
        if (count[b])
            printf(" %15s", bucket_name[b]);
    printf("\n");
    for (size_t m = 0; m < REFERENCE; m++) {
        printf("%-28s", methods[m].name);
        for (size_t b = 0; b < N_BUCKETS; b++) {
            if (!count[b])
                continue;
            double *v = xmalloc(res[m].n * sizeof *v + 1);
            size_t n = 0;
            for (size_t i = 0; i < res[m].n; i++)
                if (res[m].bucket[i] == b)
                    v[n++] = res[m].psnr[i];
            double mn = mean(v, n);
            printf("   %5.2f (%5.2f)", median(v, n), mn);
            free(v);
        }
        printf("\n");
    }
}

/* ---- --dct-rules: what DCT scaling costs in quality, end to end --------- */

static const struct {
    const char *name;
    scale_rule rule;
    int box; /* resample from the picture's box, not the whole decoded image */
} rules[] = {
    {"full-size decode", rule_full, 0},
    {"1/2, 1/4, 1/8, whole image (before)", rule_shipped, 0},
    {"1/2, 1/4, 1/8, picture box (shipped)", rule_shipped, 1},
    {"any M/8, whole image", rule_any_eighths, 0},
    {"any M/8, picture box", rule_any_eighths, 1},
};
#define N_RULES (sizeof rules / sizeof rules[0])

static double median_of_bucket(const struct samples *r, size_t b)
{
    double *v = xmalloc(r->n * sizeof *v + 1);
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (b == N_BUCKETS || r->bucket[i] == b)
            v[n++] = r->psnr[i];
    double m = median(v, n);
    free(v);
    return m;
}

/* Per image and size: the reference is lanczos3 of the full-size decode to
 * shardify's geometry (computed from the full size, as shardify does);
 * each rule decodes at its scale (timed, best of reps) and shard_resize
 * brings that to the same geometry.  PSNR against the reference, by the
 * reduction factor of the full-size image (full short side / size). */
static void compare_dct_rules(char **files, size_t n_files, const unsigned *sizes, size_t n_sizes,
                              int reps)
{
    for (size_t si = 0; si < n_sizes; si++) {
        unsigned size = sizes[si];
        struct samples res[N_RULES];
        double *decode_ms[N_RULES];
        size_t rescaled = 0;
        for (size_t r = 0; r < N_RULES; r++) {
            res[r].ms = xmalloc(n_files * sizeof(double));
            res[r].psnr = xmalloc(n_files * sizeof(double));
            res[r].bucket = xmalloc(n_files * sizeof(size_t));
            res[r].n = res[r].failed = 0;
            decode_ms[r] = xmalloc(n_files * sizeof(double));
        }
        for (size_t fi = 0; fi < n_files; fi++) {
            size_t len = 0;
            int w, h;
            uint8_t *data = read_file(files[fi], &len);
            uint8_t *full = data ? decode_jpeg(data, len, NULL, size, &w, &h, NULL, NULL) : NULL;
            if (!full) {
                free(data);
                continue;
            }
            struct shard_geometry g;
            shard_geometry_compute((uint32_t)w, (uint32_t)h, size, SHARD_FIT_SHORT, 1, &g);
            int dw = (int)g.scaled_w, dh = (int)g.scaled_h;
            size_t n = (size_t)dw * dh * 3, bucket = bucket_of((double)(w < h ? w : h) / size);
            uint8_t *ref = xmalloc(n), *out = xmalloc(n);
            reference_lanczos3(full, w, h, ref, dw, dh);
            free(full);
            rescaled += rule_any_eighths((uint32_t)w, (uint32_t)h, size) !=
                        rule_shipped((uint32_t)w, (uint32_t)h, size);
            for (size_t r = 0; r < N_RULES; r++) {
                double best_decode = INFINITY, best_resize = INFINITY;
                int ok = 1;
                for (int rep = 0; rep < reps && ok; rep++) {
                    int sw, sh;
                    double t0 = now_ms();
                    uint8_t *src = decode_jpeg(data, len, rules[r].rule, size, &sw, &sh, NULL,
                                               NULL);
                    double t1 = now_ms();
                    /* the picture spans w * M / 8 of the ceil(w * M / 8) decoded columns */
                    unsigned num = rules[r].rule((uint32_t)w, (uint32_t)h, size);
                    struct sk_box box = {0, 0, (double)w * num / SK_JPEG_SCALE_DENOM,
                                         (double)h * num / SK_JPEG_SCALE_DENOM};
                    ok = src && (rules[r].box ? shardkit_box(src, sw, sh, &box, out, dw, dh)
                                              : shardkit_resize(src, sw, sh, out, dw, dh)) == 0;
                    double t2 = now_ms();
                    free(src);
                    best_decode = t1 - t0 < best_decode ? t1 - t0 : best_decode;
                    best_resize = t2 - t1 < best_resize ? t2 - t1 : best_resize;
                }
                if (!ok) {
                    res[r].failed++;
                    continue;
                }
                decode_ms[r][res[r].n] = best_decode;
                res[r].ms[res[r].n] = best_resize;
                res[r].bucket[res[r].n] = bucket;
                res[r].psnr[res[r].n++] = psnr(out, ref, n);
            }
            free(data), free(ref), free(out);
        }
        size_t count[N_BUCKETS] = {0};
        for (size_t i = 0; i < res[0].n; i++)
            count[res[0].bucket[i]]++;
        printf(
            "\nsize %u: %zu images, %zu decoded at another scale by any M/8 than by 1/2, 1/4, 1/8; "
            "decode + shard_resize against lanczos3 of the full-size decode; best of %d "
            "runs, one core\nimages by reduction factor (full short side / size):",
            size, res[0].n, rescaled, reps);
        for (size_t b = 0; b < N_BUCKETS; b++)
            printf(" %s %zu%s", bucket_name[b], count[b], b + 1 < N_BUCKETS ? "," : "\n");
        printf("| DCT scaling | decode ms med | resize ms med | PSNR median | PSNR mean |");
        for (size_t b = 0; b < N_BUCKETS; b++)
            if (count[b])
                printf(" %s |", bucket_name[b]);
        printf("\n|---|---:|---:|---:|---:|");
        for (size_t b = 0; b < N_BUCKETS; b++)
            if (count[b])
                printf("---:|");
        printf("\n");
        for (size_t r = 0; r < N_RULES; r++) {
            double dm = median(decode_ms[r], res[r].n);
            double pm = mean(res[r].psnr, res[r].n), all = median_of_bucket(&res[r], N_BUCKETS);
            printf("| %s | %.3f | %.3f | %.2f | %.2f |", rules[r].name, dm,
                   median(res[r].ms, res[r].n), all, pm);
            for (size_t b = 0; b < N_BUCKETS; b++)
                if (count[b])
                    printf(" %.2f |", median_of_bucket(&res[r], b));
            printf("\n");
            free(res[r].ms), free(res[r].psnr), free(res[r].bucket), free(decode_ms[r]);
        }
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    unsigned sizes[MAX_SIZES] = {256, 512};
    size_t n_sizes = 2, limit = 0;
    int reps = 3, use_dct = 1, dct_rules = 0;
    const char *dump = NULL, *folder = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            n_sizes = 0;
            for (char *p = argv[++i]; *p && n_sizes < MAX_SIZES;) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p || v == 0 || v > 65535)
                    usage();
                sizes[n_sizes++] = (unsigned)v;
                p = *end == ',' ? end + 1 : end;
            }
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = (int)strtol(argv[++i], NULL, 10);
            if (reps < 1)
                usage();
        } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            limit = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--no-dct")) {
            use_dct = 0; /* full-size decode: large reductions, as for PNG input */
        } else if (!strcmp(argv[i], "--dct-rules")) {
            dct_rules = 1;
        } else if (!strcmp(argv[i], "--dump") && i + 1 < argc) {
            dump = argv[++i];
        } else if (argv[i][0] == '-' || folder) {
            usage();
        } else {
            folder = argv[i];
        }
    }
    if (!folder)
        usage();
    if (VIPS_INIT(argv[0]))
        vips_error_exit("cannot start libvips");
    vips_concurrency_set(1); /* one core, like one OpenMP worker */
    vips_cache_set_max(0);

    char **files;
    size_t n_files = list_jpegs(folder, &files);
    if (limit && limit < n_files)
        n_files = limit;
    if (dct_rules) {
        compare_dct_rules(files, n_files, sizes, n_sizes, reps);
        n_sizes = 0; /* only that table */
    }

    for (size_t si = 0; si < n_sizes; si++) {
        unsigned size = sizes[si];
        struct samples res[N_METHODS];
        for (size_t m = 0; m < N_METHODS; m++) {
            res[m].ms = xmalloc(n_files * sizeof(double));
            res[m].psnr = xmalloc(n_files * sizeof(double));
            res[m].bucket = xmalloc(n_files * sizeof(size_t));
            res[m].n = res[m].failed = 0;
        }
        size_t skipped = 0, undecodable = 0, resized = 0, down = 0;
        char dump_dir[4096];
        if (dump) {
            snprintf(dump_dir, sizeof dump_dir, "%s/%u", dump, size);
            mkdir(dump, 0777);
            mkdir(dump_dir, 0777);
        }
        for (size_t fi = 0; fi < n_files; fi++) {
            size_t len = 0;
            uint8_t *data = read_file(files[fi], &len);
            int w, h;
            uint8_t *src = data ? decode_jpeg(data, len, use_dct ? rule_shipped : NULL, size, &w,
                                              &h, NULL, NULL)
                                : NULL;
            free(data);
            if (!src) {
                undecodable++;
                continue;
            }
            struct shard_geometry g;
            shard_geometry_compute((uint32_t)w, (uint32_t)h, size, SHARD_FIT_SHORT, 1, &g);
            int dw = (int)g.scaled_w, dh = (int)g.scaled_h;
            if (dw == w && dh == h) {
                skipped++; /* nothing to resample */
                free(src);
                continue;
            }
            resized++;
            down += dw < w;
            size_t bucket = bucket_of((double)(w < h ? w : h) / size);
            size_t n = (size_t)dw * dh * 3;
            uint8_t *ref = xmalloc(n), *out = xmalloc(n);
            for (size_t mi = N_METHODS; mi-- > 0;) { /* the reference first */
                double best = INFINITY;
                int ok = 1;
                uint8_t *dst = mi == REFERENCE ? ref : out;
                for (int r = 0; r < reps && ok; r++) {
                    double t0 = now_ms();
                    ok = methods[mi].fn(src, w, h, dst, dw, dh) == 0;
                    double t = now_ms() - t0;
                    best = t < best ? t : best;
                }
                if (!ok) {
                    res[mi].failed++;
                    continue;
                }
                res[mi].ms[res[mi].n] = best;
                res[mi].bucket[res[mi].n] = bucket;
                res[mi].psnr[res[mi].n++] = psnr(dst, ref, n);
            }
            if (dump) {
                char path[4200];
                snprintf(path, sizeof path, "%s/%05zu.in.ppm", dump_dir, fi);
                int wrc = write_ppm(path, src, w, h);
                snprintf(path, sizeof path, "%s/%05zu.ref.ppm", dump_dir, fi);
                if (wrc || write_ppm(path, ref, dw, dh)) {
                    fprintf(stderr, "resize_quality: cannot write '%s'\n", path);
                    return 1;
                }
            }
            free(src), free(ref), free(out);
        }

        printf("\nsize %u: %zu images resampled (%zu down, %zu up), %zu already at size, "
               "%zu undecodable; %s decode; best of %d runs, one core; "
               "PSNR against the lanczos3 reference\n",
               size, resized, down, resized - down, skipped, undecodable,
               use_dct ? "DCT-scaled" : "full-size", reps);
        print_table(size, res);
        for (size_t m = 0; m < N_METHODS; m++)
            free(res[m].ms), free(res[m].psnr), free(res[m].bucket);
        fflush(stdout);
    }
    for (size_t i = 0; i < n_files; i++)
        free(files[i]);
    free(files);
    vips_shutdown();
    return 0;
}
