/* size.c - sizes in bytes as people write and read them: one parser and one
 * printer, both in powers of 1024 (see shardx.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardx.h"

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

int shardx_size_parse(const char *s, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K':
        shift = 10;
        end++;
        break;
    case 'M':
        shift = 20;
        end++;
        break;
    case 'G':
        shift = 30;
        end++;
        break;
    case 'T':
        shift = 40;
        end++;
        break;
    default: return -1;
    }
    /* "16M", "16MB", "16MiB" and "16mib" are all 16 x 1024 x 1024 */
    if (shift &&
        (!strcmp(end, "B") || !strcmp(end, "iB") || !strcmp(end, "b") || !strcmp(end, "ib")))
        end += strlen(end);
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

const char *shardx_size_format(uint64_t bytes, char *out, size_t size)
{
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return out;
}

double shardx_size_unit(uint64_t max, const char **name)
{
    double unit = 1;
    int u = 0;
    while (u < 4 && (double)max >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    *name = units[u];
    return unit;
}
