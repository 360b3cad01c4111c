/* chart.c - charts as inline SVG (see chart.h).
 *
 * Geometry is in viewBox units (CHART_WIDTH wide); text widths are
 * estimated (about 7 units a character at the 12-unit font), which is
 * enough to leave room for names and values without measuring them. */
#include "chart.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "html.h"
#include "shardkit.h"
#include "shardx.h"

#define CHAR_W 7.0       /* estimated width of a character of 12-unit text */
#define SMALL_CHAR_W 6.2 /* of 11-unit text (ticks, values) */
#define MAX_TICKS 64
#define NAME_COLUMN_MAX 250.0
#define VALUE_COLUMN_MAX 220.0
#define LEGEND_H 26.0
#define AXIS_H 36.0
#define PLOT_LEFT 58.0 /* room for the y axis' numbers */
#define PLOT_RIGHT 16.0
#define DEFAULT_PLOT_H 200.0
#define VALUES_SHOWN 12 /* a line writes each value when it has at most this many points */
#define GOLDEN 0.6180339887498949

/* ---- text ------------------------------------------------------------------------- */

/* Characters s[0..len) shows as (a byte that is not UTF-8, or of a character
 * that does not show as itself, shows as \xNN). */
static size_t display_chars(const char *s, size_t len)
{
    size_t chars = 0;
    for (size_t i = 0; i < len;) {
        size_t n = shardx_utf8_shown_len((const unsigned char *)s + i, len - i);
        chars += n ? 1 : 4;
        i += n ? n : 1;
    }
    return chars;
}

/* Text s[0..len) escaped, cut after max_chars characters with an ellipsis. */
static void text_fit(FILE *out, const char *s, size_t len, size_t max_chars)
{
    if (display_chars(s, len) <= max_chars) {
        html_text_len(out, s, len);
        return;
    }
    size_t chars = 0, i = 0;
    while (i < len && chars + 1 < max_chars) {
        size_t n = shardx_utf8_shown_len((const unsigned char *)s + i, len - i);
        chars += n ? 1 : 4;
        i += n ? n : 1;
    }
    html_text_len(out, s, i);
    fputs("\xe2\x80\xa6", out); /* U+2026 HORIZONTAL ELLIPSIS */
}

static size_t text_len(const char *s)
{
    return s ? strlen(s) : 0;
}

const char *chart_short_number(double v, char *buf, size_t size)
{
    static const char *const suffix[] = {"", "k", "M", "G", "T", "P"};
    double a = fabs(v);
    if (a < 1e4) {
        /* whole numbers and hundreds as they are, smaller ones to 3 digits */
        snprintf(buf, size, a == floor(a) || a >= 100 ? "%.0f" : "%.3g", v);
        return buf;
    }
    int k = 0;
    while (a >= 1e3 && k < 5) {
        a /= 1e3;
        v /= 1e3;
        k++;
    }
    if (a >= 999.5 && k < 5) { /* 999999 is "1M", not "1e+03k" */
        v /= 1e3;
        k++;
    }
    snprintf(buf, size, "%.3g%s", v, suffix[k]);
    return buf;
}

/* A value as written beside its mark: `decimals` after the point. */
static void value_text(double v, int decimals, char *buf, size_t size)
{
    snprintf(buf, size, "%.*f", decimals < 0 ? 0 : decimals, v);
}

/* ---- the frame ------------------------------------------------------------------------- */

static void figure_begin(FILE *out, const char *id, const char *caption, double width,
                         double height)
{
    fputs("<figure id=\"", out);
    html_text(out, id);
    fputs("\">\n<figcaption>", out);
    html_text(out, caption);
    fprintf(out,
            "</figcaption>\n<svg class=\"chart\" viewBox=\"0 0 %d %.0f\" role=\"img\" "
            "aria-label=\"",
            (int)width, ceil(height));
    html_text(out, caption);
    fputs("\">\n", out);
}

static void figure_end(FILE *out)
{
    fputs("</svg>\n</figure>\n", out);
}

/* A figure that has nothing to draw says so. */
static void figure_empty(FILE *out, const char *id, const char *caption, const char *why)
{
    figure_begin(out, id, caption, CHART_WIDTH, 30);
    fputs("<text class=\"tick\" x=\"8\" y=\"20\">", out);
    html_text(out, why);
    fputs("</text>\n", out);
    figure_end(out);
}

static void text_at(FILE *out, double x, double y, const char *anchor, const char *css,
                    const char *text)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (anchor)
        fprintf(out, " text-anchor=\"%s\"", anchor);
    if (css)
        fprintf(out, " class=\"%s\"", css);
    fputc('>', out);
    html_text(out, text);
    fputs("</text>\n", out);
}

/* The words at a marked line: right of it, or left of it near the right
 * edge (of a chart CHART_WIDTH wide: histograms and strips are). */
static void mark_label(FILE *out, double x, double y, const char *text)
{
    int left = x + 4 + CHAR_W * (double)display_chars(text, strlen(text)) > CHART_WIDTH;
    text_at(out, left ? x - 4 : x + 4, y, left ? "end" : NULL, "bad", text);
}

/* <g class=CSS data-value=V> <title>TITLE</title>: the caller closes it. */
static void mark_begin(FILE *out, const char *css, double value)
{
    fprintf(out, "<g class=\"%s\" data-value=\"", css);
    html_number(out, value);
    fputs("\">", out);
}

size_t chart_ticks(double lo, double hi, size_t max_ticks, double *out, size_t out_size)
{
    if (max_ticks < 2)
        max_ticks = 2;
    if (max_ticks > out_size)
        max_ticks = out_size;
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi) || max_ticks < 2)
        return 0;
    double step = cli_nice_step((hi - lo) / (double)(max_ticks - 1));
    for (;;) {
        double first = floor(lo / step) * step;
        size_t n = (size_t)ceil((hi - first) / step - 1e-9) + 1;
        if (n <= max_ticks) {
            for (size_t i = 0; i < n; i++) {
                out[i] = first + (double)i * step;
                if (fabs(out[i]) < step * 1e-9)
                    out[i] = 0; /* no "-0" */
            }
            return n;
        }
        step = cli_nice_step(step * 1.5);
    }
}

/* A value axis from 0 up, with its ticks; returns the top of the axis. */
static double zero_based_ticks(double max, size_t max_ticks, double *ticks, size_t *n)
{
    *n = chart_ticks(0, max > 0 ? max : 1, max_ticks, ticks, MAX_TICKS);
    return *n ? ticks[*n - 1] : 1;
}

static void legend(FILE *out, size_t series, const char *const *names, const char *flag_note)
{
    double x = 8;
    for (size_t s = 0; s < series; s++) {
        const char *name = names && names[s] ? names[s] : "";
        fprintf(out, "<rect class=\"s%zu\" x=\"%.1f\" y=\"8\" width=\"11\" height=\"11\"/>", s, x);
        text_at(out, x + 15, 18, NULL, NULL, name);
        x += 15 + CHAR_W * (double)display_chars(name, strlen(name)) + 16;
    }
    if (flag_note) {
        fprintf(out, "<rect class=\"differs\" x=\"%.1f\" y=\"6\" width=\"15\" height=\"15\"/>", x);
        text_at(out, x + 19, 18, NULL, "bad", flag_note);
    }
}

/* ---- bars ------------------------------------------------------------------------------ */

static double bar_value(const struct chart_bars *c, size_t row, size_t s)
{
    double v = c->values[row * c->series + s];
    return isfinite(v) && v > 0 ? v : 0;
}

void chart_bars(FILE *out, const struct chart_bars *c)
{
    size_t series = c->series < 1 ? 1 : c->series > CHART_MAX_SERIES ? CHART_MAX_SERIES : c->series;
    if (!c->rows) {
        figure_empty(out, c->id, c->caption, "nothing to show");
        return;
    }
    double max = 0;
    size_t name_chars = 4, value_chars = 1;
    char buf[64];
    for (size_t r = 0; r < c->rows; r++) {
        double sum = 0;
        size_t chars = 0;
        for (size_t s = 0; s < series; s++) {
            double v = bar_value(c, r, s);
            sum += v;
            max = !c->stacked && v > max ? v : max;
            value_text(c->values[r * c->series + s], c->decimals, buf, sizeof buf);
            chars = c->stacked ? chars : (strlen(buf) > chars ? strlen(buf) : chars);
        }
        if (c->stacked) {
            max = sum > max ? sum : max;
            value_text(sum, c->decimals, buf, sizeof buf);
            chars = strlen(buf);
        }
        if (c->row_notes)
            chars += text_len(c->row_notes[r]) + 1;
        value_chars = chars > value_chars ? chars : value_chars;
        const char *name = c->row_names[r] ? c->row_names[r] : "";
        size_t n = display_chars(name, strlen(name));
        name_chars = n > name_chars ? n : name_chars;
    }
    double name_w = fmin(14 + CHAR_W * (double)name_chars, NAME_COLUMN_MAX);
    double value_w = fmin(14 + SMALL_CHAR_W * (double)value_chars, VALUE_COLUMN_MAX);
    double x0 = name_w, x1 = CHART_WIDTH - value_w;
    double bar_h = c->stacked || series == 1 ? 18 : 13;
    double row_h = (c->stacked ? bar_h : bar_h * (double)series) + 8;
    int any_flagged = 0;
    for (size_t r = 0; c->flagged && r < c->rows; r++)
        any_flagged |= c->flagged[r];
    const char *flag_note = any_flagged ? c->flag_note : NULL;
    int has_legend = series > 1 || flag_note;
    double top = has_legend ? LEGEND_H + 4 : 6, plot_h = row_h * (double)c->rows;
    double ticks[MAX_TICKS];
    size_t nt;
    double axis_max = zero_based_ticks(max, 6, ticks, &nt);
    double scale = (x1 - x0) / axis_max;

    figure_begin(out, c->id, c->caption, CHART_WIDTH, top + plot_h + AXIS_H);
    if (has_legend)
        legend(out, series, c->series_names, flag_note);
    /* whole values get whole ticks */
    if (c->decimals <= 0) {
        size_t kept = 0;
        for (size_t i = 0; i < nt; i++)
            if (ticks[i] == floor(ticks[i]))
                ticks[kept++] = ticks[i];
        nt = kept;
    }
    for (size_t i = 0; i < nt; i++)
        fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                x0 + ticks[i] * scale, top, x0 + ticks[i] * scale, top + plot_h);
    size_t name_fit = (size_t)((name_w - 14) / CHAR_W);
    for (size_t r = 0; r < c->rows; r++) {
        const char *name = c->row_names[r] ? c->row_names[r] : "";
        int flagged = c->flagged && c->flagged[r];
        double y = top + row_h * (double)r + 4;
        fprintf(out, "<g class=\"row%s\" data-name=\"", flagged ? " flagged" : "");
        html_text(out, name);
        fputs("\"><title>", out);
        html_text(out, name);
        for (size_t s = 0; s < series; s++) {
            value_text(c->values[r * c->series + s], c->decimals, buf, sizeof buf);
            fprintf(out, "%s", s ? ", " : ": ");
            if (series > 1 && c->series_names)
                html_textf(out, "%s ", c->series_names[s]);
            html_textf(out, "%s", buf);
        }
        if (c->unit)
            html_textf(out, " %s", c->unit);
        fputs("</title>\n", out);
        if (flagged)
            fprintf(out,
                    "<rect class=\"differs\" x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%.1f\"/>\n",
                    y - 3, CHART_WIDTH, row_h - 2);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"%s>", x0 - 6,
                y + (row_h - 8) / 2 + 4, flagged ? " class=\"bad\"" : "");
        text_fit(out, name, strlen(name), name_fit);
        fputs("</text>\n", out);
        double x = x0, end = x0;
        for (size_t s = 0; s < series; s++) {
            double v = c->values[r * c->series + s], w = bar_value(c, r, s) * scale;
            double by = c->stacked ? y : y + bar_h * (double)s;
            mark_begin(out, c->stacked ? "bar segment" : "bar", v);
            fputs("<title>", out);
            html_text(out, name);
            if (c->series_names && c->series_names[s])
                html_textf(out, ", %s", c->series_names[s]);
            value_text(v, c->decimals, buf, sizeof buf);
            html_textf(out, ": %s%s%s", buf, c->unit ? " " : "", c->unit ? c->unit : "");
            fprintf(out,
                    "</title><rect class=\"s%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"%.1f\"/>",
                    s, c->stacked ? x : x0, by, w, bar_h - 2);
            if (!c->stacked) {
                fprintf(out, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">", x0 + w + 4,
                        by + bar_h - 5);
                html_text(out, isfinite(v) ? buf : "-");
                if (c->row_notes && c->row_notes[r] && s + 1 == series)
                    html_textf(out, " %s", c->row_notes[r]);
                fputs("</text>", out);
            }
            fputs("</g>\n", out);
            x += w;
            end = x0 + w > end ? x0 + w : end;
        }
        if (c->stacked) {
            double sum = 0;
            for (size_t s = 0; s < series; s++)
                sum += bar_value(c, r, s);
            value_text(sum, c->decimals, buf, sizeof buf);
            fputs("<text class=\"value total\" data-value=\"", out);
            html_number(out, sum);
            fprintf(out, "\" x=\"%.1f\" y=\"%.1f\">", x + 4, y + bar_h - 5);
            html_text(out, buf);
            if (c->row_notes && c->row_notes[r])
                html_textf(out, " %s", c->row_notes[r]);
            fputs("</text>\n", out);
        }
        fputs("</g>\n", out);
    }
    double axis_y = top + plot_h;
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
            axis_y, x1, axis_y);
    for (size_t i = 0; i < nt; i++)
        text_at(out, x0 + ticks[i] * scale, axis_y + 14, "middle", "tick",
                chart_short_number(ticks[i], buf, sizeof buf));
    if (c->unit)
        text_at(out, (x0 + x1) / 2, axis_y + 30, "middle", NULL, c->unit);
    figure_end(out);
}

/* ---- histogram ------------------------------------------------------------------------- */

/* Horizontal grid lines and numbers of a value axis from 0 to axis_max. */
static void y_axis(FILE *out, const double *ticks, size_t nt, double axis_max, double top,
                   double plot_h, double x0, double x1, int integers)
{
    char buf[32];
    for (size_t i = 0; i < nt; i++) {
        if (integers && ticks[i] != floor(ticks[i]))
            continue;
        double y = top + plot_h - ticks[i] / axis_max * plot_h;
        fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
                y, x1, y);
        text_at(out, x0 - 5, y + 4, "end", "tick", chart_short_number(ticks[i], buf, sizeof buf));
    }
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
            top + plot_h, x1, top + plot_h);
}

/* x of value v on the bins' axis: inside its bin in proportion (log bins:
 * in proportion of the logarithm); clamped to the ends. */
static double bin_x(const struct cli_histogram *h, double v, double x0, double col_w)
{
    if (v <= h->edges[0])
        return x0;
    for (size_t i = 0; i < h->bins; i++) {
        double a = h->edges[i], b = h->edges[i + 1];
        if (v < b) {
            double f = h->scale == CLI_SCALE_LOG ? log(v / a) / log(b / a) : (v - a) / (b - a);
            return x0 + ((double)i + f) * col_w;
        }
    }
    return x0 + (double)h->bins * col_w;
}

void chart_histogram(FILE *out, const struct chart_histogram *c)
{
    const struct cli_histogram *h = c->h;
    if (!h || !h->bins) {
        figure_empty(out, c->id, c->caption, "no values");
        return;
    }
    double div = c->x_divisor > 0 ? c->x_divisor : 1;
    double top = 24, plot_h = DEFAULT_PLOT_H * 0.85, x0 = PLOT_LEFT, x1 = CHART_WIDTH - PLOT_RIGHT;
    double col_w = (x1 - x0) / (double)h->bins;
    uint64_t max = 0;
    for (size_t i = 0; i < h->bins; i++)
        max = h->counts[i] > max ? h->counts[i] : max;
    double ticks[MAX_TICKS];
    size_t nt;
    double axis_max = zero_based_ticks((double)max, 5, ticks, &nt);
    char lo[32], hi[32], buf[32];

    figure_begin(out, c->id, c->caption, CHART_WIDTH, top + plot_h + AXIS_H + 12);
    if (c->y_label)
        text_at(out, 4, 12, NULL, "tick", c->y_label);
    y_axis(out, ticks, nt, axis_max, top, plot_h, x0, x1, 1);
    for (size_t i = 0; i < h->bins; i++) {
        double bh = (double)h->counts[i] / axis_max * plot_h, x = x0 + col_w * (double)i;
        chart_short_number(h->edges[i] / div, lo, sizeof lo);
        chart_short_number(h->edges[i + 1] / div, hi, sizeof hi);
        fputs("<g class=\"bin\" data-lo=\"", out);
        html_number(out, h->edges[i]);
        fputs("\" data-hi=\"", out);
        html_number(out, h->edges[i + 1]);
        fprintf(out, "\" data-value=\"%llu\"><title>", (unsigned long long)h->counts[i]);
        html_textf(out, "%s to %s: %llu %s", lo, hi, (unsigned long long)h->counts[i],
                   c->y_label ? c->y_label : "");
        fprintf(out,
                "</title><rect class=\"s0\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>",
                x + (col_w > 6 ? 1 : 0), top + plot_h - bh, col_w > 6 ? col_w - 2 : col_w, bh);
        if (h->counts[i] && col_w >= 8 * SMALL_CHAR_W / 2) {
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)h->counts[i]);
            if (SMALL_CHAR_W * (double)strlen(buf) <= col_w + 2)
                text_at(out, x + col_w / 2, top + plot_h - bh - 3, "middle", "value", buf);
        }
        fputs("</g>\n", out);
    }
    /* every k-th edge, so that the numbers do not run into each other */
    size_t widest = 1;
    for (size_t i = 0; i <= h->bins; i++) {
        size_t n = strlen(chart_short_number(h->edges[i] / div, buf, sizeof buf));
        widest = n > widest ? n : widest;
    }
    size_t every = (size_t)ceil((SMALL_CHAR_W * (double)widest + 8) / col_w);
    every = every < 1 ? 1 : every;
    for (size_t i = 0; i <= h->bins; i += every)
        text_at(out, x0 + col_w * (double)i, top + plot_h + 14, "middle", "tick",
                chart_short_number(h->edges[i] / div, buf, sizeof buf));
    if (isfinite(c->mark)) {
        double x = bin_x(h, c->mark, x0, col_w);
        fprintf(out,
                "<line class=\"mark-line\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                top - 6, x, top + plot_h);
        if (c->mark_label)
            mark_label(out, x, top + 2, c->mark_label);
    }
    if (c->x_label)
        text_at(out, (x0 + x1) / 2, top + plot_h + 32, "middle", NULL, c->x_label);
    figure_end(out);
}

/* ---- values over x ------------------------------------------------------------------------ */

void chart_line(FILE *out, const struct chart_line *c)
{
    size_t n = c->points;
    double ymax = 0, ymin = 0;
    size_t with_value = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(c->y[i]))
            continue;
        with_value++;
        ymax = c->y[i] > ymax ? c->y[i] : ymax;
        ymin = c->y[i] < ymin ? c->y[i] : ymin;
    }
    if (!with_value) {
        figure_empty(out, c->id, c->caption, "no values");
        return;
    }
    double top = 24, plot_h = c->height > 0 ? c->height : DEFAULT_PLOT_H;
    double width = c->width > 0 ? c->width : CHART_WIDTH;
    double x0 = PLOT_LEFT, x1 = width - PLOT_RIGHT;
    double ticks[MAX_TICKS], xticks[MAX_TICKS];
    size_t nt = chart_ticks(ymin, ymax > ymin ? ymax : ymin + 1, plot_h < 120 ? 3 : 5, ticks,
                            MAX_TICKS);
    double axis_lo = nt ? ticks[0] : 0, axis_hi = nt ? ticks[nt - 1] : 1;
    double xlo = 0, xhi = 1;
    size_t nxt = 0;
    if (c->x) {
        xlo = c->x[0];
        xhi = c->x[n - 1] > xlo ? c->x[n - 1] : xlo + 1;
        nxt = chart_ticks(xlo, xhi, 8, xticks, MAX_TICKS);
        xlo = nxt ? xticks[0] : xlo;
        xhi = nxt ? xticks[nxt - 1] : xhi;
    }
    double slot = (x1 - x0) / (double)(n ? n : 1);
    /* clang-format off */
#define PX(i) (c->x ? x0 + (c->x[i] - xlo) / (xhi - xlo) * (x1 - x0) : x0 + slot * ((double)(i) + 0.5))
#define PY(v) (top + plot_h - ((v) - axis_lo) / (axis_hi - axis_lo) * plot_h)
    /* clang-format on */
    char buf[64];

    figure_begin(out, c->id, c->caption, width, top + plot_h + AXIS_H + 12);
    if (c->y_label)
        text_at(out, 4, 12, NULL, "tick", c->y_label);
    for (size_t i = 0; i < nt; i++) {
        double y = PY(ticks[i]);
        fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
                y, x1, y);
        text_at(out, x0 - 5, y + 4, "end", "tick", chart_short_number(ticks[i], buf, sizeof buf));
    }
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
            top + plot_h, x1, top + plot_h);
    if (!c->columns) {
        fputs("<path class=\"line\" d=\"", out);
        int pen = 0;
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(c->y[i])) {
                pen = 0;
                continue;
            }
            fprintf(out, "%c%.1f %.1f ", pen ? 'L' : 'M', PX(i), PY(c->y[i]));
            pen = 1;
        }
        fputs("\"/>\n", out);
    }
    for (size_t i = 0; i < n; i++) {
        double v = c->y[i];
        const char *name = c->x_names ? c->x_names[i] : NULL;
        const char *cls = c->point_class && c->point_class[i] ? c->point_class[i] : "";
        mark_begin(out, "point", v);
        fputs("<title>", out);
        if (name)
            html_textf(out, "%s: ", name);
        else if (c->x)
            html_textf(out, "%s %s: ", c->x_label ? c->x_label : "x",
                       chart_short_number(c->x[i], buf, sizeof buf));
        value_text(v, c->decimals, buf, sizeof buf);
        html_textf(out, "%s %s", isfinite(v) ? buf : "no value", c->y_label ? c->y_label : "");
        fputs("</title>", out);
        if (isfinite(v)) {
            double x = PX(i), y = PY(v);
            if (c->columns) {
                double w = fmax(slot * 0.7, 1), base = PY(axis_lo > 0 ? axis_lo : 0);
                fprintf(out,
                        "<rect class=\"s0 %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\"/>",
                        cls, x - w / 2, fmin(y, base), w, fabs(base - y));
            } else {
                fprintf(out, "<circle class=\"dot %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", cls,
                        x, y, n > 200 ? 1.5 : 3.5);
            }
            if (n <= VALUES_SHOWN)
                text_at(out, x, y - 6, "middle", "value", buf);
        }
        fputs("</g>\n", out);
    }
    if (c->x) {
        for (size_t i = 0; i < nxt; i++)
            text_at(out, x0 + (xticks[i] - xlo) / (xhi - xlo) * (x1 - x0), top + plot_h + 14,
                    "middle", "tick", chart_short_number(xticks[i], buf, sizeof buf));
    } else if (c->x_names) {
        /* the names of as many points as fit, the last one always */
        size_t fit = (size_t)fmax(1, (x1 - x0) / (SMALL_CHAR_W * 16 + 10));
        size_t every = n > fit ? (n + fit - 1) / fit : 1;
        for (size_t i = 0; i < n; i++) {
            int last_apart = i + 1 == n && (n - 1) % every > every / 2;
            if (i % every && !last_apart)
                continue;
            const char *name = c->x_names[i] ? c->x_names[i] : "";
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"tick\">",
                    PX(i), top + plot_h + 14);
            text_fit(out, name, strlen(name), 16);
            fputs("</text>\n", out);
        }
    }
    if (c->x_label)
        text_at(out, (x0 + x1) / 2, top + plot_h + 32, "middle", NULL, c->x_label);
    figure_end(out);
#undef PX
#undef PY
}

/* ---- strip ----------------------------------------------------------------------------- */

void chart_strip(FILE *out, const struct chart_strip *c)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t infinite = 0, shown = 0;
    for (size_t i = 0; i < c->count; i++) {
        double v = c->values[i];
        if (isnan(v))
            continue;
        shown++;
        if (isinf(v)) {
            infinite++;
            continue;
        }
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (!shown) {
        figure_empty(out, c->id, c->caption, "no values");
        return;
    }
    if (isfinite(c->threshold)) {
        lo = c->threshold < lo ? c->threshold : lo;
        hi = c->threshold > hi ? c->threshold : hi;
    }
    if (!isfinite(lo)) { /* only infinite values, no threshold */
        lo = 0;
        hi = 1;
    } else if (!isfinite(hi - lo) || hi <= lo) { /* the threshold alone: room around it */
        hi = lo + 10;
        lo -= 10;
    }
    if (hi <= lo)
        hi = lo + 1;
    double pad = (hi - lo) * 0.05;
    double ticks[MAX_TICKS];
    size_t nt = chart_ticks(lo - pad, hi + pad, 8, ticks, MAX_TICKS);
    double alo = nt ? ticks[0] : lo, ahi = nt ? ticks[nt - 1] : hi;
    double inf_w = infinite ? 110 : 0, x0 = 16, x1 = CHART_WIDTH - PLOT_RIGHT - inf_w;
    double top = 22, plot_h = 90;
    char buf[64];
    /* clang-format off */
#define SX(v) (x0 + ((v) - alo) / (ahi - alo) * (x1 - x0))
    /* clang-format on */

    figure_begin(out, c->id, c->caption, CHART_WIDTH, top + plot_h + AXIS_H + 8);
    fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x0,
            top + plot_h, x1, top + plot_h);
    for (size_t i = 0; i < nt; i++) {
        fprintf(out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                SX(ticks[i]), top, SX(ticks[i]), top + plot_h);
        text_at(out, SX(ticks[i]), top + plot_h + 14, "middle", "tick",
                chart_short_number(ticks[i], buf, sizeof buf));
    }
    if (isfinite(c->threshold)) {
        double x = SX(c->threshold);
        fprintf(out,
                "<line class=\"mark-line\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                top - 8, x, top + plot_h);
        if (c->threshold_label)
            mark_label(out, x, top - 8, c->threshold_label);
    }
    if (infinite) {
        double cx = x1 + inf_w / 2;
        fprintf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                x1 + 10, top, x1 + 10, top + plot_h);
        snprintf(buf, sizeof buf, "%zu %s", infinite,
                 c->infinite_label ? c->infinite_label : "inf");
        text_at(out, cx + 5, top + plot_h + 14, "middle", "tick", buf);
    }
    for (size_t i = 0, k = 0; i < c->count; i++) {
        double v = c->values[i];
        if (isnan(v))
            continue;
        double jitter = fmod((double)k++ * GOLDEN, 1.0);
        double x = isinf(v) ? x1 + inf_w / 2 + 5 + (jitter - 0.5) * (inf_w - 40) : SX(v);
        double y = top + 8 + fmod(jitter * 7.0, 1.0) * (plot_h - 16);
        int ok = !c->passed || c->passed[i];
        mark_begin(out, "point", v);
        fputs("<title>", out);
        if (c->names)
            html_bytes(out, c->names[i], c->name_lens ? c->name_lens[i] : strlen(c->names[i]));
        if (isinf(v))
            html_textf(out, ": %s", c->infinite_label ? c->infinite_label : "inf");
        else
            html_textf(out, ": %.2f %s", v, c->x_label ? c->x_label : "");
        if (!ok)
            html_text(out, " (failed)");
        fprintf(out, "</title><circle class=\"dot %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"/></g>\n",
                ok ? "" : "bad", x, y);
    }
    if (c->x_label)
        text_at(out, (x0 + x1) / 2, top + plot_h + 30, "middle", NULL, c->x_label);
    figure_end(out);
#undef SX
}
