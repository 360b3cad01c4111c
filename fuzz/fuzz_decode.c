/* fuzz_decode.c - the image decode path on arbitrary bytes.
 *
 * Each input is treated as a source file and as a stored payload:
 *  1. shard_decode_ex with the default options (only max_pixels is lowered,
 *     see FUZZ_MAX_PIXELS), the call every reader of untrusted images makes;
 *  2. sk_record_build, shardify's own per-file path (decode with a small DCT
 *     scaling target, EXIF orientation, geometry, resize, crop, encode), with
 *     one of three configurations chosen by the input's length so that every
 *     fit and codec is reached; whatever it produces must decode back with
 *     shard_decode_payload at the size it reported (a payload shardify
 *     writes is always readable);
 *  3. shard_decode_payload for each codec, at the size step 1 found (or a
 *     guess), as a reader of a damaged shard would call it.
 * Invariant violations abort(), so the fuzzer reports them like crashes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "record/record_build.h"
#include "shardkit/image.h"
#include "shardkit/manifest.h"

/* libjpeg-turbo's and libpng's own fuzzers cap the image size (1 and 4
 * megapixels) for the same reason: a few hundred bytes of progressive JPEG
 * may legally describe 100 megapixels and take seconds to decode, which says
 * nothing about the code but starves the fuzzer.  The limit check itself is
 * the same code whatever the number. */
#define FUZZ_MAX_PIXELS (4u << 20)

#define REQUIRE(cond)                                                                       \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "fuzz_decode: invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                              \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

#define CONFIGS 3
static struct shard_config configs[CONFIGS];
static struct record_builder *workers[CONFIGS];
static struct shard_image image, payload_image;
static struct shard_buf payload;
static volatile uint8_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* libvips logs a warning per damaged tile on stderr; the fuzzer would
     * spend its time printing them */
    setenv("VIPS_WARNING", "1", 0);
    /* small targets keep the resampler and encoders quick and reach the
     * 1/2, 1/4 and 1/8 DCT scales on ordinary inputs */
    static const struct {
        uint32_t size;
        enum shard_fit fit;
        int upscale;
        enum shard_codec codec;
    } setups[CONFIGS] = {
        {24, SHARD_FIT_SHORT, 1, SHARD_CODEC_JPEG},
        {17, SHARD_FIT_CROP, 0, SHARD_CODEC_PNG},
        {40, SHARD_FIT_LONG, 1, SHARD_CODEC_RAW},
    };
    for (int i = 0; i < CONFIGS; i++) {
        struct shard_err err;
        shard_config_init(&configs[i]);
        configs[i].size = setups[i].size;
        configs[i].fit = setups[i].fit;
        configs[i].upscale = setups[i].upscale;
        configs[i].codec = setups[i].codec;
        configs[i].zstd_level = 1;
        configs[i].max_pixels = FUZZ_MAX_PIXELS;
        if (sk_record_builder_new(&workers[i], &configs[i], &err) != 0) {
            fprintf(stderr, "fuzz_decode: %s\n", err.msg);
            abort();
        }
    }
    return 0;
}

static void touch_image(const struct shard_image *img)
{
    REQUIRE(img->width > 0 && img->height > 0 && img->channels == 3);
    REQUIRE(img->stride >= (size_t)img->width * 3);
    REQUIRE((size_t)img->height * img->stride <= img->capacity);
    uint8_t acc = 0;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        for (size_t x = 0; x < (size_t)img->width * 3; x++)
            acc ^= row[x];
    }
    sink = acc;
}

/* Step 2: shardify's conversion, and reading its result back. */
static void convert(const uint8_t *data, size_t size)
{
    int which = (int)(size % CONFIGS);
    const struct shard_config *c = &configs[which];
    struct shard_err err;
    struct shard_record_meta stored;
    char warning[SHARD_ERRMSG_SIZE];
    if (sk_record_build(workers[which], data, size, &payload, &stored, warning, NULL, &err) != 0) {
        /* the decoder's picture box always lies inside its image */
        REQUIRE(strstr(err.msg, "resize: box") == NULL);
        return;
    }
    REQUIRE(memchr(warning, '\0', sizeof warning) != NULL);
    uint32_t w = stored.width, h = stored.height;
    REQUIRE(w > 0 && h > 0);
    if (c->fit == SHARD_FIT_CROP)
        REQUIRE(w == h && w <= c->size);
    else if (c->upscale)
        REQUIRE((c->fit == SHARD_FIT_SHORT ? (w < h ? w : h) : (w > h ? w : h)) == c->size);
    int rc = shard_decode_payload(c->codec, payload.data, payload.len, w, h, &payload_image, &err);
    if (rc)
        fprintf(stderr, "fuzz_decode: own %s payload %ux%u unreadable: %s\n",
                shard_codec_name(c->codec), w, h, err.msg);
    REQUIRE(rc == 0);
    touch_image(&payload_image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct shard_decode_options o;
    shard_decode_options_init(&o);
    o.max_pixels = FUZZ_MAX_PIXELS;
    struct shard_decode_info info;
    struct shard_err err;
    uint32_t w = 1, h = 1;
    if (shard_decode_ex(data, size, &o, &image, &info, &err) == 0) {
        touch_image(&image);
        REQUIRE((uint64_t)info.source_width * info.source_height <= FUZZ_MAX_PIXELS);
        REQUIRE(image.width == info.source_width && image.height == info.source_height);
        /* no DCT scaling asked for: the picture is the whole image */
        REQUIRE(info.box_x0 == 0 && info.box_y0 == 0 && info.box_x1 == (double)image.width &&
                info.box_y1 == (double)image.height);
        /* "" or one line naming what the decoder recovered from */
        REQUIRE(memchr(info.warning, '\0', sizeof info.warning) != NULL &&
                (!info.warning[0] || strstr(info.warning, " warning: ")) &&
                !strchr(info.warning, '\n'));
        w = image.width;
        h = image.height;
    } else {
        REQUIRE(err.code < 0 && err.msg[0] != '\0');
    }

    convert(data, size);

    static const enum shard_codec codecs[] = {SHARD_CODEC_RAW, SHARD_CODEC_JPEG, SHARD_CODEC_PNG};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        uint32_t pw = w, ph = h;
        if (codecs[i] == SHARD_CODEC_RAW && size % 3 == 0 && size > 0) {
            pw = (uint32_t)(size / 3 > UINT32_MAX ? 1 : size / 3); /* one row */
            ph = 1;
        }
        if (shard_decode_payload(codecs[i], data, size, pw, ph, &payload_image, &err) == 0) {
            REQUIRE(payload_image.width == pw && payload_image.height == ph);
            touch_image(&payload_image);
        }
    }
    return 0;
}
