/* roofline.c - the roofline model and the units it is written in (see
 * bench.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

int roofline_model(double bandwidth, double intensity, double peak, struct roofline *out,
                   struct shard_err *err)
{
    if (!(bandwidth > 0) || !(intensity > 0) || !(peak > 0) || !isfinite(bandwidth) ||
        !isfinite(intensity) || !isfinite(peak))
        return shard_err_set(err, SHARD_EINVAL,
                             "bandwidth, intensity and peak must be positive and finite");
    double memory_limit = bandwidth * intensity;
    out->ridge = peak / bandwidth;
    out->memory_bound = intensity < out->ridge;
    out->attainable = out->memory_bound ? memory_limit : peak;
    return SHARD_OK;
}

struct prefix {
    const char *text;
    double factor;
    int binary; /* a power of 1024: bytes only */
};

/* Longest first, so "Gi" is tried before "G". */
static const struct prefix prefixes[] = {
    {"Ki", 1024.0, 1},
    {"Mi", 1048576.0, 1},
    {"Gi", 1073741824.0, 1},
    {"Ti", 1099511627776.0, 1},
    {"Pi", 1125899906842624.0, 1},
    {"Ei", 1152921504606846976.0, 1},
    {"k", 1e3, 0},
    {"K", 1e3, 0},
    {"M", 1e6, 0},
    {"G", 1e9, 0},
    {"T", 1e12, 0},
    {"P", 1e15, 0},
    {"E", 1e18, 0},
};

/* The unit spellings each quantity accepts after the prefix (compared
 * case-insensitively); the last, "", is the bare number. */
static const char *const bandwidth_units[] = {"B/s", "Bps", "bytes/s", "byte/s", ""};
static const char *const intensity_units[] = {"FLOP/B", "FLOP/byte", "FLOPs/B", "FLOPs/byte", ""};
static const char *const compute_units[] = {"FLOP/s", "FLOPS", "FLOPs/s", ""};

static int unit_matches(const char *s, enum quantity q)
{
    const char *const *units = q == QUANTITY_BANDWIDTH   ? bandwidth_units
                               : q == QUANTITY_INTENSITY ? intensity_units
                                                         : compute_units;
    for (size_t i = 0;; i++) {
        if (!strcasecmp(s, units[i]))
            return 1;
        if (!units[i][0])
            return 0;
    }
}

int quantity_parse(const char *s, enum quantity q, double *value, double *prefix,
                   struct shard_err *err)
{
    static const char *const what[] = {"a bandwidth (e.g. 100GB/s)",
                                       "an arithmetic intensity (e.g. 2 or 2FLOP/B)",
                                       "a compute rate (e.g. 1000GFLOP/s)"};
    const char *kind = what[q];
    if (!s || !*s || isspace((unsigned char)*s))
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not %s", s ? s : "", kind);
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || !(v > 0))
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not %s", s, kind);
    while (*end == ' ')
        end++;
    double factor = 1.0;
    /* An intensity is a ratio: no prefix.  Elsewhere try each prefix, and
     * accept it only when what follows is a unit of the quantity. */
    if (q != QUANTITY_INTENSITY && !unit_matches(end, q)) {
        int found = 0;
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes && !found; i++) {
            size_t n = strlen(prefixes[i].text);
            if (strncmp(end, prefixes[i].text, n) || !unit_matches(end + n, q))
                continue;
            if (prefixes[i].binary && q != QUANTITY_BANDWIDTH)
                continue;
            factor = prefixes[i].factor;
            end += n;
            found = 1;
        }
        if (!found)
            return shard_err_set(err, SHARD_EINVAL, "'%s' is not %s", s, kind);
    } else if (!unit_matches(end, q)) {
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not %s", s, kind);
    }
    double total = v * factor;
    if (!isfinite(total))
        return shard_err_set(err, SHARD_EINVAL, "'%s' is too large", s);
    *value = total;
    if (prefix)
        *prefix = factor;
    return SHARD_OK;
}
