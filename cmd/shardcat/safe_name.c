/* safe_name.c - a sample key as one file name (see safe_name.h). */
#include "safe_name.h"

#include <string.h>

#include "shardkit/error.h"

/* Length of the valid UTF-8 character at p (1..4), or 0 for bytes that are
 * not UTF-8 and for C1 controls (U+0080..U+009F, encoded C2 80..C2 9F),
 * which are escaped like other control bytes. */
static size_t utf8_length(const unsigned char *p, size_t avail)
{
    size_t n = shard_utf8_len(p, avail);
    return n == 2 && p[0] == 0xc2 && p[1] <= 0x9f ? 0 : n;
}

/* For a file name every separator is escaped; for a message, '/' stays. */
static int must_escape(unsigned char c, size_t at, int for_file)
{
    if (!for_file)
        return c < 0x20 || c == 0x7f || c == '%';
    return c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == '%' || (at == 0 && c == '.');
}

static size_t encode(const char *key, size_t len, const char *suffix, int for_file, char *out,
                     size_t out_size)
{
    static const char digits[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)key;
    size_t o = 0, suffix_len = strlen(suffix);
    for (size_t i = 0; i < len;) {
        size_t n = utf8_length(p + i, len - i);
        /* a valid multi-byte character is kept as it is */
        if (n > 1 || (n == 1 && !must_escape(p[i], i, for_file))) {
            if (o + n >= out_size)
                return 0;
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
            continue;
        }
        if (o + 3 >= out_size)
            return 0;
        out[o++] = '%';
        out[o++] = digits[p[i] >> 4];
        out[o++] = digits[p[i] & 15];
        i++;
    }
    if (o + suffix_len >= out_size)
        return 0;
    memcpy(out + o, suffix, suffix_len + 1);
    return o + suffix_len;
}

size_t safe_name(const char *key, size_t len, const char *suffix, char *out, size_t out_size)
{
    return encode(key, len, suffix, 1, out, out_size);
}

size_t shown_key(const char *key, size_t len, char *out, size_t out_size)
{
    return encode(key, len, "", 0, out, out_size);
}
