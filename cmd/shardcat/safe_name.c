/* safe_name.c - a sample key as one file name (see safe_name.h). */
#include "safe_name.h"

#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "shardkit.h"
#include "shardx.h"

/* "%~" and 16 hex digits: the mark of a shortened name. */
#define SHORT_MARK "%~"
#define HASH_DIGITS 16
/* A full encoding: every byte of the longest key as %XX. */
#define ENCODED_MAX (3 * SHARD_KEY_MAX)

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
        /* a character that shows as itself is kept as it is; control
         * bytes, bytes that are not UTF-8 and those of a character that
         * does not show as itself (U+202E, ...) are escaped */
        size_t n = shardx_utf8_shown_len(p + i, len - i);
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

/* The longest prefix of an encoded name, at most `max` bytes, that ends
 * between two characters (never inside a %XX or a UTF-8 sequence). */
static size_t whole_characters(const char *name, size_t max)
{
    size_t at = 0;
    for (;;) {
        size_t n = name[at] == '%' ? 3 : shardx_utf8_len((const unsigned char *)name + at, 4);
        if (n == 0)
            n = 1;
        if (at + n > max)
            return at;
        at += n;
    }
}

size_t safe_name(const char *key, size_t len, const char *suffix, char out[SAFE_NAME_SIZE],
                 int *shortened)
{
    char full[ENCODED_MAX + SAFE_NAME_SIZE];
    *shortened = 0;
    if (len > SHARD_KEY_MAX)
        return 0;
    size_t n = encode(key, len, suffix, 1, full, sizeof full);
    if (n == 0)
        return 0;
    if (n < SAFE_NAME_SIZE) {
        memcpy(out, full, n + 1);
        return n;
    }
    size_t tail = strlen(SHORT_MARK) + HASH_DIGITS + strlen(suffix);
    size_t keep = whole_characters(full, SAFE_NAME_SIZE - 1 - tail);
    char hex[HASH_DIGITS + 1];
    shard_hex64(XXH3_64bits(key, len), hex);
    memcpy(out, full, keep);
    snprintf(out + keep, SAFE_NAME_SIZE - keep, "%s%s%s", SHORT_MARK, hex, suffix);
    *shortened = 1;
    return strlen(out);
}

size_t shown_key(const char *key, size_t len, char *out, size_t out_size)
{
    return encode(key, len, "", 0, out, out_size);
}

const char *key_for_message(const char *key, size_t len, char buf[SHOWN_KEY_SIZE])
{
    if (!shown_key(key, len, buf, SHOWN_KEY_SIZE))
        snprintf(buf, SHOWN_KEY_SIZE, "(a key of %zu bytes)", len);
    return buf;
}
