/* chart.h - charts as inline SVG for the HTML reports (html.h): bars side by
 * side or stacked, histograms, values over time, and a strip of dots.
 *
 * Each chart is a <figure id=ID> with a caption and an <svg class="chart">
 * scaled to the width of the page (a viewBox of CHART_WIDTH units), so it
 * shrinks on a phone and prints.  The numbers are text in the document, not
 * only lengths: every mark is a <g> carrying data-value (the exact number,
 * as html_number writes it) and a <title> naming what it is and its value,
 * and bars and small series write their value beside the mark.  A reader,
 * a screen reader and a test all find "12" at the bar for 12.  Names (labels,
 * keys) are escaped with html_bytes and, when too long for their column,
 * shortened with an ellipsis (the title keeps them whole). */
#ifndef SHARDKIT_CLI_CHART_H
#define SHARDKIT_CLI_CHART_H

#include <stddef.h>
#include <stdio.h>

#include "histogram.h"

#define CHART_WIDTH 720
#define CHART_MAX_SERIES 6

/* Horizontal bars: one row per category, `series` bars side by side in it
 * (or, stacked, one bar of `series` segments); an axis of round numbers
 * below. */
struct chart_bars {
    const char *id;      /* the figure's id */
    const char *caption; /* what it shows */
    const char *unit;    /* of the values: "samples", "samples/s" */
    size_t rows;
    const char *const *row_names;    /* rows names */
    size_t series;                   /* 1..CHART_MAX_SERIES */
    const char *const *series_names; /* the legend (drawn when series > 1) */
    const double *values;            /* rows x series, row-major; NAN: no bar */
    int stacked;                     /* segments of one bar; the total is written */
    const unsigned char *flagged;    /* per row, or NULL: a flagged row is drawn on a
                                      * red band with its name in red */
    const char *flag_note;           /* the legend's words for a flagged row */
    const char *const *row_notes;    /* per row, or NULL: text after the values */
    int decimals;                    /* of the values written at the bars */
};
void chart_bars(FILE *out, const struct chart_bars *c);

/* A histogram: one column per bin of h, its count above it. */
struct chart_histogram {
    const char *id;
    const char *caption;
    const char *x_label; /* what was counted, with its unit */
    const char *y_label; /* what a count is: "records" */
    const struct cli_histogram *h;
    double x_divisor; /* edges are shown divided by it (1e3: KB); 0: 1 */
    double mark;      /* a dashed line at this value (undivided); NAN: none */
    const char *mark_label;
};
void chart_histogram(FILE *out, const struct chart_histogram *c);

/* Values over x: a line through points (or columns), x numeric or one name
 * per point (runs), each point coloured by a class of its own when given. */
struct chart_line {
    const char *id;
    const char *caption;
    const char *x_label;
    const char *y_label;
    size_t points;
    const double *x;                /* increasing; NULL: the points are evenly spaced
                                     * and named by x_names */
    const double *y;                /* NAN: no value (a gap in the line) */
    const char *const *x_names;     /* per point, or NULL */
    const char *const *point_class; /* per point ("ok", "bad"), or NULL */
    int columns;                    /* columns instead of a line */
    int decimals;                   /* of the values written */
    int height;                     /* of the plot in viewBox units; 0: the default */
    int width;                      /* of the chart; 0: CHART_WIDTH (a small chart meant
                                     * to sit beside others, e.g. 360, keeps its text
                                     * readable when the page shrinks it) */
};
void chart_line(FILE *out, const struct chart_line *c);

/* A strip: one dot per item along a numeric axis (y jittered so that equal
 * values stay apart), a threshold line, and a column apart for infinite
 * values (e.g. identical pixels: PSNR infinity). */
struct chart_strip {
    const char *id;
    const char *caption;
    const char *x_label;
    size_t count;
    const double *values;     /* INFINITY: in the column apart; NAN: left out */
    const char *const *names; /* per item, bytes (keys) */
    const size_t *name_lens;
    const unsigned char *passed; /* per item, or NULL: a failed one is red */
    double threshold;            /* NAN: none */
    const char *threshold_label;
    const char *infinite_label; /* the column apart: "identical" */
};
void chart_strip(FILE *out, const struct chart_strip *c);

/* Round tick values covering [lo, hi] (at most max_ticks of them, multiples
 * of a 1-2-5 step) into out; returns how many.  lo < hi. */
size_t chart_ticks(double lo, double hi, size_t max_ticks, double *out, size_t out_size);

/* A number as an axis shows it: below 10000 as it is (fractions to 3
 * digits), above with 3 significant digits and k, M, G, T, P (1250000 ->
 * "1.25M", 9999 -> "9999", 0.125 -> "0.125"). */
const char *chart_short_number(double v, char *buf, size_t size);

#endif
