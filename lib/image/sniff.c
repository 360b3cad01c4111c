/* sniff.c - identify an image format by its leading bytes (see shardkit/image.h).
 *
 * Only the signature counts, never the file name: ImageNet ships a PNG named
 * .JPEG and CMYK JPEGs that look like any other .JPEG.
 */
#include "image/decode_internal.h"

#include <string.h>

/* Sizes of the fixed parts of a BMP file we look at. */
#define BMP_FILE_HEADER_SIZE 14
#define BMP_SNIFF_SIZE (BMP_FILE_HEADER_SIZE + 4)

static int starts_with(const uint8_t *data, size_t len, const void *magic, size_t n)
{
    return len >= n && memcmp(data, magic, n) == 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* "BM" alone is too weak (it starts many text files), so also require one of
 * the DIB header sizes that BMP versions actually use. */
static int is_bmp(const uint8_t *data, size_t len)
{
    if (!starts_with(data, len, "BM", 2) || len < BMP_SNIFF_SIZE)
        return 0;
    switch (le32(data + BMP_FILE_HEADER_SIZE)) {
    case 12:  /* BITMAPCOREHEADER */
    case 40:  /* BITMAPINFOHEADER */
    case 52:  /* BITMAPV2INFOHEADER */
    case 56:  /* BITMAPV3INFOHEADER */
    case 64:  /* OS22XBITMAPHEADER */
    case 108: /* BITMAPV4HEADER */
    case 124: /* BITMAPV5HEADER */ return 1;
    }
    return 0;
}

enum shard_image_format shard_sniff(const uint8_t *data, size_t len)
{
    if (!data)
        return SHARD_FORMAT_UNKNOWN;
    if (starts_with(data, len, "\xff\xd8\xff", 3))
        return SHARD_FORMAT_JPEG;
    if (starts_with(data, len, "\x89PNG\r\n\x1a\n", 8))
        return SHARD_FORMAT_PNG;
    if (starts_with(data, len, "RIFF", 4) && len >= 12 && memcmp(data + 8, "WEBP", 4) == 0)
        return SHARD_FORMAT_WEBP;
    /* classic TIFF (42) and BigTIFF (43), both byte orders */
    if (starts_with(data, len, "II*\0", 4) || starts_with(data, len, "MM\0*", 4) ||
        starts_with(data, len, "II+\0", 4) || starts_with(data, len, "MM\0+", 4))
        return SHARD_FORMAT_TIFF;
    if (starts_with(data, len, "GIF87a", 6) || starts_with(data, len, "GIF89a", 6))
        return SHARD_FORMAT_GIF;
    if (is_bmp(data, len))
        return SHARD_FORMAT_BMP;
    return SHARD_FORMAT_UNKNOWN;
}

const char *shard_format_name(enum shard_image_format f)
{
    switch (f) {
    case SHARD_FORMAT_UNKNOWN: break;
    case SHARD_FORMAT_JPEG: return "jpeg";
    case SHARD_FORMAT_PNG: return "png";
    case SHARD_FORMAT_WEBP: return "webp";
    case SHARD_FORMAT_TIFF: return "tiff";
    case SHARD_FORMAT_GIF: return "gif";
    case SHARD_FORMAT_BMP: return "bmp";
    }
    return "unknown";
}

const char *sk_format_label(enum shard_image_format f)
{
    switch (f) {
    case SHARD_FORMAT_UNKNOWN: break;
    case SHARD_FORMAT_JPEG: return "JPEG";
    case SHARD_FORMAT_PNG: return "PNG";
    case SHARD_FORMAT_WEBP: return "WEBP";
    case SHARD_FORMAT_TIFF: return "TIFF";
    case SHARD_FORMAT_GIF: return "GIF";
    case SHARD_FORMAT_BMP: return "BMP";
    }
    return "unknown";
}
