/* hex.c - 64-bit hashes in hex (see shardkit/util.h). */
#include "shardkit/util.h"

void shard_hex64(uint64_t v, char out[17])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--) {
        out[i] = digits[v & 15];
        v >>= 4;
    }
    out[16] = '\0';
}

int shard_hex64_parse(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char ch = s[i];
        int d;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else
            return SHARD_EINVAL;
        v = (v << 4) | (uint64_t)d;
    }
    if (s[16] != '\0')
        return SHARD_EINVAL;
    *out = v;
    return SHARD_OK;
}
