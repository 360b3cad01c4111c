/* quote.c - byte strings inside one-line messages (see shardx.h). */
#include "shardx.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

size_t shardx_utf8_len(const unsigned char *p, size_t avail)
{
    if (avail == 0)
        return 0;
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) {
        n = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Characters that show as nothing, as a space or as something else, or that
 * reorder the text around them (Unicode's C1 controls, white space other
 * than the space, default-ignorable and bidirectional control characters:
 * U+202E RIGHT-TO-LEFT OVERRIDE shows "gpj.exe" as "exe.jpg"). */
static const struct {
    uint32_t first, last;
} unseen[] = {
    /* clang-format off */
    {0x0080, 0x00a0}, {0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c},
    {0x115f, 0x1160}, {0x1680, 0x1680}, {0x17b4, 0x17b5}, {0x180b, 0x180f},
    {0x2000, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x206f}, {0x3000, 0x3000},
    {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0},
    {0xfff0, 0xfffb}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
    /* clang-format on */
};

size_t shardx_utf8_shown_len(const unsigned char *p, size_t avail)
{
    size_t n = shardx_utf8_len(p, avail);
    if (n == 1)
        return p[0] >= 0x20 && p[0] != 0x7f;
    if (n == 0)
        return 0;
    uint32_t cp = p[0] & (0xff >> (n + 1));
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (p[i] & 0x3f);
    for (size_t i = 0; i < sizeof unseen / sizeof *unseen; i++)
        if (cp >= unseen[i].first && cp <= unseen[i].last)
            return 0;
    return n;
}

const char *shardx_quote(const char *s, size_t len, char *out, size_t out_size)
{
    static const char ellipsis[] = "...";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    if (out_size == 0)
        return out;
    /* keep room for the ellipsis and the NUL */
    size_t limit = out_size > sizeof ellipsis ? out_size - sizeof ellipsis : 0;
    for (size_t i = 0; i < len;) {
        char piece[8];
        size_t n = shardx_utf8_shown_len(p + i, len - i), plen;
        if (n == 1 && p[i] == '\\') {
            plen = 2;
            memcpy(piece, "\\\\", 2);
        } else if (n == 0) { /* a byte of a character that would not show as itself */
            plen = (size_t)snprintf(piece, sizeof piece, "\\x%02x", p[i]);
            n = 1;
        } else {
            plen = n;
            memcpy(piece, p + i, n);
        }
        /* the last piece may use the ellipsis' room */
        size_t room = (i + n == len ? out_size - 1 : limit);
        if (o + plen > room) {
            if (o + sizeof ellipsis <= out_size)
                memcpy(out + o, ellipsis, sizeof ellipsis);
            else
                out[o] = '\0';
            return out;
        }
        memcpy(out + o, piece, plen);
        o += plen;
        i += n;
    }
    out[o] = '\0';
    return out;
}

int shardx_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
