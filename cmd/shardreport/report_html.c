/* report_html.c - the nightly index as one self-contained HTML page (see
 * report.h): the latest run first, trends of samples, rejects and time, and
 * a row per run linking its shardcheck report and its log. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "cli.h"
#include "html.h"

#define PROG "shardreport"
#define TREND_HEIGHT 110
#define TREND_WIDTH 360 /* small charts, side by side on a wide screen */

static double value(const struct run_number *n)
{
    return n->known ? n->value : NAN;
}

/* <a href=HREF>TEXT</a>: HREF a file inside ROOT, percent-encoded (runs_href). */
static void link(FILE *out, const char *href, const char *text)
{
    fputs("<a href=\"", out);
    html_text(out, href);
    fputs("\">", out);
    html_text(out, text);
    fputs("</a>", out);
}

/* A file a run record names (`what`: "report", "log"): a link when it is a
 * file inside ROOT, else the word and why it is not linked. */
static void file_link(FILE *out, const char *what, const char *path, const char *href)
{
    if (href) {
        link(out, href, what);
        return;
    }
    fputs("<span class=\"muted\">", out);
    html_textf(out, "%s '%s' (not linked: no file inside ROOT)", what, path);
    fputs("</span>", out);
}

static void latest(FILE *out, const struct report *r)
{
    const struct runs *runs = r->runs;
    if (!runs->count) {
        fputs("<div class=\"verdict bad\" id=\"latest\">No run recorded yet<span class=\"detail\">",
              out);
        html_bytes(out, r->root, strlen(r->root));
        html_text(out, "/runs holds no run record.");
        fputs("</span></div>\n", out);
        return;
    }
    const struct run_row *row = &runs->rows[runs->count - 1];
    int failed = report_run_failed(row);
    fprintf(out, "<div class=\"verdict %s\" id=\"latest\">", failed ? "bad" : "ok");
    html_textf(out, "Latest run %s: %s", row->run, row->status);
    fputs("<span class=\"detail\">", out);
    if (row->samples.known)
        html_textf(out, "%.0f samples, %.0f rejected", row->samples.value,
                   row->rejected.known ? row->rejected.value : 0);
    if (row->seconds.known)
        html_textf(out, ", %.0f s", row->seconds.value);
    if (row->error)
        html_textf(out, "the record cannot be read: %s", row->error);
    size_t published = 0;
    for (size_t i = 0; i < runs->count; i++)
        published += !report_run_failed(&runs->rows[i]);
    html_textf(out, ". %zu run%s recorded, %zu published, %zu not. current -> ", runs->count,
               runs->count == 1 ? "" : "s", published, runs->count - published);
    if (runs->current)
        html_bytes(out, runs->current, strlen(runs->current));
    else
        html_text(out, "(none)");
    html_text(out, ".");
    fputs("</span></div>\n", out);
}

static const struct run_number *samples_of(const struct run_row *row)
{
    return &row->samples;
}

static const struct run_number *rejected_of(const struct run_row *row)
{
    return &row->rejected;
}

static const struct run_number *seconds_of(const struct run_row *row)
{
    return &row->seconds;
}

/* A small chart of one number per run, oldest first, coloured by outcome. */
static void trend(FILE *out, const struct report *r, const char *id, const char *caption,
                  const char *y_label, const struct run_number *(*pick)(const struct run_row *),
                  int columns)
{
    const struct runs *runs = r->runs;
    size_t n = runs->count;
    double *y = malloc((n ? n : 1) * sizeof *y);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    const char **classes = malloc((n ? n : 1) * sizeof *classes);
    if (y && names && classes) {
        for (size_t i = 0; i < n; i++) {
            const struct run_row *row = &runs->rows[i];
            y[i] = value(pick(row));
            names[i] = row->run;
            classes[i] = report_run_failed(row) ? "bad" : "ok";
        }
        struct chart_line c = {.id = id,
                               .caption = caption,
                               .x_label = "run",
                               .y_label = y_label,
                               .points = n,
                               .y = y,
                               .x_names = names,
                               .point_class = classes,
                               .columns = columns,
                               .height = TREND_HEIGHT,
                               .width = TREND_WIDTH};
        chart_line(out, &c);
    }
    free(y);
    free(names);
    free(classes);
}

static void number_cell(FILE *out, const struct run_number *n)
{
    if (n->known)
        html_cell_num(out, n->value, "%.0f");
    else
        fputs("<td class=\"num\">-</td>", out);
}

static void table(FILE *out, const struct report *r)
{
    static const char *const head[] = {"run",     "status",   "#samples",  "#rejected", "#seconds",
                                       "#reused", "verified", "#problems", "#exit",     "files"};
    html_table_begin(out, "runs", head, sizeof head / sizeof *head);
    for (size_t i = r->runs->count; i-- > 0;) {
        const struct run_row *row = &r->runs->rows[i];
        int failed = report_run_failed(row);
        html_row_begin(out, failed ? "bad" : NULL);
        fputs("<td class=\"code\">", out);
        if (row->report_href)
            link(out, row->report_href, row->run);
        else
            html_text(out, row->run);
        fputs("</td>", out);
        fprintf(out, "<td class=\"%s\">", failed ? "bad" : "ok");
        html_text(out, row->status);
        fputs("</td>", out);
        number_cell(out, &row->samples);
        number_cell(out, &row->rejected);
        number_cell(out, &row->seconds);
        number_cell(out, &row->reused); /* records an incremental run copied */
        html_cell(out, !row->verified.known ? "-" : row->verified.value ? "yes" : "no");
        number_cell(out, &row->problems);
        number_cell(out, &row->exit_code);
        fputs("<td>", out);
        if (row->report) {
            file_link(out, "report", row->report, row->report_href);
            fputs(" ", out);
        }
        if (row->log)
            file_link(out, "log", row->log, row->log_href);
        if (row->error) {
            fputs(" <span class=\"bad\">", out);
            html_text(out, row->error);
            fputs("</span>", out);
        }
        fputs("</td>", out);
        html_row_end(out);
    }
    html_table_end(out);
}

void report_write_html(const struct report *r, FILE *out)
{
    html_begin(out, "shardkit nightly", PROG);
    fputs("<p>ROOT <code>", out);
    html_bytes(out, r->root, strlen(r->root));
    fputs("</code>: each night shardify builds a new version, shardcheck proves it, and only "
          "then <code>current</code> points at it.</p>\n",
          out);
    latest(out, r);
    if (r->runs->count) {
        html_section_begin(out, "trends", "Trends");
        fputs("<div class=\"trends\">\n", out);
        trend(out, r, "trend-samples", "Samples per run", "samples", samples_of, 0);
        trend(out, r, "trend-rejected", "Rejected files per run", "rejected", rejected_of, 1);
        trend(out, r, "trend-seconds", "Time per run", "seconds", seconds_of, 1);
        fputs("</div>\n", out);
        html_section_end(out);
    }
    html_section_begin(out, "history", "Runs, newest first");
    table(out, r);
    fputs("<p class=\"muted\">A run's report is its shardcheck page; a red row or point was "
          "not published (current stayed where it was).</p>\n",
          out);
    html_section_end(out);
    html_end(out, PROG);
}
