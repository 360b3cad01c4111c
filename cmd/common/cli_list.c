/* cli_list.c - comma-separated lists of numbers (see cli_list.h). */
#include "cli_list.h"

#include <string.h>

#include "cli.h"

/* Longest item we accept: a 32-bit number has at most 10 digits. */
#define ITEM_MAX 16

int cli_parse_u32_list(const char *s, uint32_t min, uint32_t max, uint32_t *out, size_t capacity)
{
    size_t n = 0;
    if (!s)
        return -1;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char item[ITEM_MAX];
        uint64_t v;
        if (len == 0 || len >= sizeof item || n == capacity)
            return -1;
        memcpy(item, s, len);
        item[len] = '\0';
        if (cli_parse_u64(item, min, max, &v) != 0)
            return -1;
        out[n++] = (uint32_t)v;
        if (!comma)
            return (int)n;
        s = comma + 1;
    }
}
