/* histogram.h - values counted into bins with round edges, for the report
 * writers: the JSON writer prints the bins, the HTML writer draws them, so
 * both show the same counts.
 *
 * Edges are "nice" numbers a reader can take in at a glance: linear bins are
 * a step of 1, 2 or 5 times a power of ten wide (at least 1 when every
 * value is a whole number) and start at a multiple of it; log bins run 1, 2, 5, 10, 20, 50, ...
 * (times a power of ten), for values spread over decades (latencies). */
#ifndef SHARDKIT_CLI_HISTOGRAM_H
#define SHARDKIT_CLI_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

/* Most bins a histogram is given, whatever it is asked for. */
#define CLI_HISTOGRAM_MAX_BINS 200

enum cli_scale { CLI_SCALE_LINEAR = 0, CLI_SCALE_LOG = 1 };

struct cli_histogram {
    enum cli_scale scale;
    size_t bins;
    double *edges;    /* bins + 1 edges, increasing; bin i is [edges[i], edges[i+1]),
                       * the last one closed */
    uint64_t *counts; /* bins counts */
    uint64_t total;   /* values counted in the bins */
    uint64_t skipped; /* values left out: not finite (and, log scale, not above 0) */
    double min, max;  /* of the counted values (0 when there are none) */
};

/* The smallest of 1, 2, 5 x 10^k that is at least `raw` (> 0); 1 for a
 * raw that is not a positive finite number. */
double cli_nice_step(double raw);

/* Count v[0..n) into at most max_bins (1..CLI_HISTOGRAM_MAX_BINS) bins of
 * the given scale.  No value counted gives 0 bins.  0, or -1 when out of
 * memory (*h is then empty).  Release with cli_histogram_release. */
int cli_histogram_make(struct cli_histogram *h, const double *v, size_t n, size_t max_bins,
                       enum cli_scale scale);

/* The same with v[i] seen counts[i] times (counts NULL: once each), for
 * values tallied rather than listed. */
int cli_histogram_make_counted(struct cli_histogram *h, const double *v, const uint64_t *counts,
                               size_t n, size_t max_bins, enum cli_scale scale);

void cli_histogram_release(struct cli_histogram *h); /* accepts NULL */

/* "linear" or "log". */
const char *cli_scale_name(enum cli_scale s);

#endif
