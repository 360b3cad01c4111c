/* histogram.c - values counted into bins with round edges (see histogram.h). */
#include "histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The mantissas of the 1-2-5 sequence. */
static const double steps125[] = {1, 2, 5};
#define STEPS125 3

double cli_nice_step(double raw)
{
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double base = pow(10, floor(log10(raw)));
    for (int i = 0; i < STEPS125; i++)
        if (steps125[i] * base >= raw * (1 - 1e-12))
            return steps125[i] * base;
    return 10 * base;
}

const char *cli_scale_name(enum cli_scale s)
{
    return s == CLI_SCALE_LOG ? "log" : "linear";
}

void cli_histogram_release(struct cli_histogram *h)
{
    if (!h)
        return;
    free(h->edges);
    free(h->counts);
    memset(h, 0, sizeof *h);
}

static int counted(double v, enum cli_scale scale)
{
    return isfinite(v) && (scale == CLI_SCALE_LINEAR || v > 0);
}

/* Linear edges: `bins` steps from a multiple of the step at or below lo,
 * the last edge at or above hi; whole values get steps of at least 1.
 * Returns the bin count. */
static size_t linear_edges(double lo, double hi, size_t max_bins, int whole, double *first,
                           double *step)
{
    double s = hi > lo ? cli_nice_step((hi - lo) / (double)max_bins)
                       : cli_nice_step(lo != 0 ? fabs(lo) / 10 : 1);
    if (whole && s < 1)
        s = 1;
    for (;;) {
        double f = floor(lo / s) * s;
        size_t bins = (size_t)ceil((hi - f) / s);
        if (bins == 0 || f + (double)bins * s < hi)
            bins++;
        if (bins <= max_bins) {
            *first = f;
            *step = s;
            return bins;
        }
        s = cli_nice_step(s * 1.5); /* the next nice step */
    }
}

/* Edge k of a log scale with `per_decade` edges per decade (3: 1, 2, 5). */
static double log_edge(long k, int per_decade)
{
    long decade = k >= 0 ? k / per_decade : -((-k + per_decade - 1) / per_decade);
    long i = k - decade * per_decade;
    double mantissa = per_decade == STEPS125 ? steps125[i] : 1;
    return mantissa * pow(10, (double)decade);
}

/* The log edges around [lo, hi] (lo > 0): the first at or below lo, the last
 * above hi.  Returns the bin count, or 0 when it would take more than
 * max_bins. */
static size_t log_edges(double lo, double hi, size_t max_bins, int per_decade, long *first)
{
    long k = (long)floor(log10(lo)) * per_decade;
    while (log_edge(k + 1, per_decade) <= lo)
        k++;
    while (log_edge(k, per_decade) > lo)
        k--;
    long end = k + 1;
    while (log_edge(end, per_decade) <= hi) {
        end++;
        if ((size_t)(end - k) > max_bins)
            return 0;
    }
    *first = k;
    return (size_t)(end - k);
}

int cli_histogram_make(struct cli_histogram *h, const double *v, size_t n, size_t max_bins,
                       enum cli_scale scale)
{
    return cli_histogram_make_counted(h, v, NULL, n, max_bins, scale);
}

int cli_histogram_make_counted(struct cli_histogram *h, const double *v, const uint64_t *counts,
                               size_t n, size_t max_bins, enum cli_scale scale)
{
    memset(h, 0, sizeof *h);
    h->scale = scale;
    if (max_bins < 1)
        max_bins = 1;
    if (max_bins > CLI_HISTOGRAM_MAX_BINS)
        max_bins = CLI_HISTOGRAM_MAX_BINS;
    double lo = INFINITY, hi = -INFINITY;
    int whole = 1; /* every value a whole number (counts, bytes) */
    uint64_t skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (!counted(v[i], scale)) {
            h->skipped += counts ? counts[i] : 1;
            skipped++;
            continue;
        }
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        whole &= v[i] == floor(v[i]);
    }
    if (skipped == n)
        return 0;
    h->min = lo;
    h->max = hi;
    double first = 0, step = 0;
    long first_k = 0;
    int per_decade = STEPS125;
    size_t bins = 0;
    if (scale == CLI_SCALE_LOG) {
        bins = log_edges(lo, hi, max_bins, per_decade, &first_k);
        if (!bins) {
            per_decade = 1;
            bins = log_edges(lo, hi, max_bins, per_decade, &first_k);
        }
        if (!bins) /* more decades than bins: linear it is */
            h->scale = CLI_SCALE_LINEAR;
    }
    if (h->scale == CLI_SCALE_LINEAR)
        bins = linear_edges(lo, hi, max_bins, whole, &first, &step);
    h->edges = malloc((bins + 1) * sizeof *h->edges);
    h->counts = calloc(bins, sizeof *h->counts);
    if (!h->edges || !h->counts) {
        cli_histogram_release(h);
        return -1;
    }
    h->bins = bins;
    for (size_t i = 0; i <= bins; i++)
        h->edges[i] = h->scale == CLI_SCALE_LOG ? log_edge(first_k + (long)i, per_decade)
                                                : first + (double)i * step;
    for (size_t i = 0; i < n; i++) {
        if (!counted(v[i], scale))
            continue;
        /* the last edge at or below the value; the top value goes in the last bin */
        size_t a = 0, b = bins;
        while (b - a > 1) {
            size_t mid = (a + b) / 2;
            if (h->edges[mid] <= v[i])
                a = mid;
            else
                b = mid;
        }
        h->counts[a] += counts ? counts[i] : 1;
        h->total += counts ? counts[i] : 1;
    }
    return 0;
}
