/* report_html.c - a shardcheck report as one self-contained HTML page (see
 * report.h): the verdict first, then what the dataset holds, in charts. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h> /* g_base64_encode */

#include "chart.h"
#include "cli.h"
#include "html.h"
#include "shardx.h"

#define PROG "shardcheck"
/* Rows a table lists at most; --json lists every one. */
#define ROWS_SHOWN 1000
/* Labels drawn one bar each; more are summed up as a histogram. */
#define LABEL_BARS_MAX 60
/* Shards drawn one bar each; more are summed up as a histogram. */
#define SHARD_BARS_MAX 64
#define HISTOGRAM_BINS 30

static const char *u64_text(uint64_t v, char *buf, size_t size)
{
    snprintf(buf, size, "%llu", (unsigned long long)v);
    return buf;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* "(and 12 more: --json lists every one)" under a cut table. */
static void more_rows(FILE *out, uint64_t total, uint64_t shown)
{
    if (total > shown)
        fprintf(out, "<p class=\"muted\">and %llu more (--json lists every one)</p>\n",
                (unsigned long long)(total - shown));
}

/* ---- what training sees ------------------------------------------------------------------- */

/* A sample of the stored images, each with its key and caption: the JPEG
 * thumbnails are in the page as data: URIs (nothing is fetched). */
static void contact_sheet(FILE *out, const struct contact_sheet *cs)
{
    if (!cs || !cs->count)
        return;
    html_section_begin(out, "contact-sheet", "What training sees");
    fprintf(out,
            "<p class=\"muted\">%zu of the %llu stored samples, evenly spread over the "
            "stored order, as the shards hold them (decoded, at most %d pixels a side here)",
            cs->count, (unsigned long long)cs->samples, CONTACT_THUMB_SIZE);
    if (cs->caption_field) {
        fputs(", with their field <code>", out);
        html_text(out, cs->caption_field);
        fputs("</code>", out);
    }
    fputs(".</p>\n<div class=\"sheet\" id=\"contact-sheet-grid\">\n", out);
    for (size_t i = 0; i < cs->count; i++) {
        const struct contact_thumb *t = &cs->thumbs[i];
        fprintf(out, "<figure data-index=\"%llu\">", (unsigned long long)t->index);
        if (t->jpeg.len) {
            gchar *b64 = g_base64_encode(t->jpeg.data, t->jpeg.len);
            fprintf(out,
                    "<img src=\"data:image/jpeg;base64,%s\" width=\"%u\" height=\"%u\" "
                    "alt=\"\" data-width=\"%u\" data-height=\"%u\">",
                    b64 ? b64 : "", t->thumb_width, t->thumb_height, t->width, t->height);
            g_free(b64);
        } else {
            fputs("<div class=\"thumb-missing bad\">not readable</div>", out);
        }
        fputs("<figcaption><code class=\"key\">", out);
        if (t->key)
            html_bytes(out, t->key, t->key_len);
        else
            fprintf(out, "sample %llu", (unsigned long long)t->index);
        fputs("</code>", out);
        if (t->caption) {
            fputs("<span class=\"caption\">", out);
            html_text_len(out, t->caption, t->caption_len);
            if (t->caption_cut)
                fputs("\u2026", out);
            fputs("</span>", out);
        }
        if (t->error) {
            fputs("<span class=\"caption bad\">", out);
            html_text(out, t->error);
            fputs("</span>", out);
        }
        fputs("</figcaption></figure>\n", out);
    }
    fputs("</div>\n", out);
    html_section_end(out);
}

/* ---- the verdict ------------------------------------------------------------------------ */

static void checks_run(FILE *out, const struct report *rep)
{
    const struct shard_verify_options *o = rep->options;
    const struct shard_verify_report *r = rep->verify;
    fputs("Checked: manifest, every shard's size and xxh3, footers, index, keys and counts", out);
    if (o->deep)
        fputs("; every record decompressed and decoded", out);
    if (rep->source) {
        fputs("; identity with SRC <code>", out);
        html_bytes(out, rep->source, strlen(rep->source));
        fputs("</code>", out);
        if (r->labels_checked)
            fputs(" and labels re-derived from it", out);
    }
    if (o->fidelity)
        fprintf(out, "; fidelity of %llu re-converted sample%s",
                (unsigned long long)r->fidelity_count, r->fidelity_count == 1 ? "" : "s");
    if (o->world_size_count) {
        fputs("; visitation for world size", out);
        fputs(o->world_size_count == 1 ? " " : "s ", out);
        for (size_t i = 0; i < o->world_size_count; i++)
            fprintf(out, "%s%u", i ? ", " : "", o->world_sizes[i]);
    }
    fputs(".", out);
}

static void verdict(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    const struct dataset_summary *d = rep->dataset;
    uint64_t total = report_problem_total(rep);
    int verified = report_verified(rep);
    fprintf(out, "<div class=\"verdict %s\" id=\"verdict\" data-verified=\"%s\">",
            verified ? "ok" : "bad", verified ? "true" : "false");
    if (rep->error) {
        /* the checks could not run: say why, and what would have been checked */
        fputs("Not verified: the dataset could not be checked<span class=\"detail\">", out);
        html_text(out, rep->error);
        fputs("</span></div>\n<p>Dataset <code>", out);
        html_bytes(out, rep->dst, strlen(rep->dst));
        fputs("</code></p>\n", out);
        return;
    }
    if (total)
        fprintf(out, "Not verified: %llu %s", (unsigned long long)total,
                plural(total, "problem", "problems"));
    else
        fputs("Verified", out);
    fputs("<span class=\"detail\">", out);
    if (d) {
        const struct shard_manifest *m = &d->manifest;
        fprintf(out, "%llu %s in %u %s kept, %llu %s rejected, %llu ignored; %u %s. ",
                (unsigned long long)m->samples, plural(m->samples, "sample", "samples"),
                m->label_count, plural(m->label_count, "label", "labels"),
                (unsigned long long)m->rejected, plural(m->rejected, "file", "files"),
                (unsigned long long)m->ignored, m->shard_count,
                plural(m->shard_count, "shard", "shards"));
    } else {
        fprintf(out, "%llu samples in %u shards. ", (unsigned long long)r->samples, r->shards);
    }
    checks_run(out, rep);
    fputs("</span></div>\n", out);
    fputs("<p>Dataset <code>", out);
    html_bytes(out, rep->dst, strlen(rep->dst));
    fputs("</code></p>\n", out);
}

static void problems(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    uint64_t total = report_problem_total(rep);
    if (!total)
        return;
    html_section_begin(out, "problems", "Problems");
    static const char *const head[] = {"check", "shard", "#record", "key", "what is wrong"};
    html_table_begin(out, "problem-table", head, 5);
    const struct shard_manifest *m = rep->dataset ? &rep->dataset->manifest : NULL;
    for (uint64_t i = 0; i < r->problem_count && i < ROWS_SHOWN; i++) {
        const struct shard_problem *p = &r->problems[i];
        html_row_begin(out, "bad");
        html_cell(out, shard_check_name(p->check));
        if (p->shard >= 0 && m && (uint64_t)p->shard < m->shard_count) {
            html_cell_code(out, m->shards[p->shard].file);
        } else if (p->shard >= 0) {
            char buf[32];
            html_cell(out, u64_text((uint64_t)p->shard, buf, sizeof buf));
        } else {
            html_cell(out, "");
        }
        if (p->record >= 0)
            html_cell_u64(out, (uint64_t)p->record);
        else
            html_cell(out, "");
        html_cell_bytes(out, p->key ? p->key : "", p->key ? p->key_len : 0, 1);
        html_cell(out, p->message);
        html_row_end(out);
    }
    html_table_end(out);
    more_rows(out, total, r->problem_count < ROWS_SHOWN ? r->problem_count : ROWS_SHOWN);
    html_section_end(out);
}

/* ---- counts and rejects ------------------------------------------------------------------ */

/* The samples stored despite a decoder warning that lost no pixel data. */
static void warned(FILE *out, const struct dataset_summary *d)
{
    if (!d->manifest.warned)
        return;
    html_section_begin(out, "warned", "Stored despite a decoder warning");
    fputs("<p>The decoder warned about these files, but every pixel still came from the file's "
          "own data, so they were kept.</p>\n",
          out);
    static const char *const head[] = {"key", "warning"};
    html_table_begin(out, "warned-table", head, 2);
    for (size_t i = 0; i < d->warned_count; i++) {
        html_row_begin(out, NULL);
        html_cell_bytes(out, d->warned[i].key, d->warned[i].key_len, 1);
        html_cell(out, d->warned[i].warning);
        html_row_end(out);
    }
    html_table_end(out);
    more_rows(out, d->manifest.warned, d->warned_count);
    html_section_end(out);
}

static void counts(FILE *out, const struct report *rep)
{
    const struct dataset_summary *d = rep->dataset;
    const struct shard_verify_report *r = rep->verify;
    const struct shard_manifest *m = &d->manifest;
    char buf[64];
    html_section_begin(out, "counts", "Counts");
    html_cards_begin(out);
    html_card(out, "candidates", u64_text(summary_candidates(d), buf, sizeof buf),
              "candidate files", NULL);
    html_card(out, "samples", u64_text(m->samples, buf, sizeof buf), "samples kept", "ok");
    html_card(out, "labels", u64_text(m->label_count, buf, sizeof buf), "labels", NULL);
    html_card(out, "rejected", u64_text(m->rejected, buf, sizeof buf), "rejected",
              m->rejected ? "bad" : NULL);
    html_card(out, "ignored", u64_text(m->ignored, buf, sizeof buf), "ignored (not images)", NULL);
    html_card(out, "unlabeled", u64_text(m->unlabeled, buf, sizeof buf), "without a label", NULL);
    if (m->warned)
        html_card(out, "warned", u64_text(m->warned, buf, sizeof buf),
                  "stored despite a decoder warning", NULL);
    html_card(out, "shards", u64_text(m->shard_count, buf, sizeof buf), "shards", NULL);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < m->shard_count; i++)
        bytes += m->shards[i].bytes;
    html_card(out, "bytes", cli_format_bytes(bytes, buf, sizeof buf), "in shards", NULL);
    if (rep->options->source) {
        html_card(out, "source-candidates", u64_text(r->source_candidates, buf, sizeof buf),
                  "candidates in SRC now", NULL);
        html_card(out, "source-ignored", u64_text(r->source_ignored, buf, sizeof buf),
                  "ignored in SRC now", NULL);
    }
    html_cards_end(out);
    fputs("<p class=\"muted\">Candidates are the files named like images; each is a sample or "
          "a reject, with its reason. Other files are ignored.</p>\n",
          out);
    html_section_end(out);
    warned(out, d);
    if (!m->reject_count)
        return;
    html_section_begin(out, "rejects", "Rejected files");
    const char **names = malloc(d->reason_count * sizeof *names);
    double *values = malloc(d->reason_count * sizeof *values);
    if (names && values) {
        for (size_t i = 0; i < d->reason_count; i++) {
            names[i] = d->reasons[i].reason;
            values[i] = (double)d->reasons[i].count;
        }
        struct chart_bars c = {.id = "rejects-by-reason",
                               .caption = "Rejected files by reason",
                               .unit = "files",
                               .rows = d->reason_count,
                               .row_names = names,
                               .series = 1,
                               .values = values};
        chart_bars(out, &c);
    }
    free(names);
    free(values);
    static const char *const head[] = {"file", "why it was rejected", "#bytes"};
    html_table_begin(out, "reject-table", head, 3);
    for (uint64_t i = 0; i < m->reject_count && i < ROWS_SHOWN; i++) {
        const struct shard_reject *rj = &m->rejects[i];
        html_row_begin(out, NULL);
        html_cell_bytes(out, rj->key, rj->key_len, 1);
        html_cell(out, rj->reason);
        if (rj->has_source)
            html_cell_u64(out, rj->source_bytes);
        else
            html_cell(out, "");
        html_row_end(out);
    }
    html_table_end(out);
    more_rows(out, m->reject_count, m->reject_count < ROWS_SHOWN ? m->reject_count : ROWS_SHOWN);
    html_section_end(out);
}

/* ---- labels ------------------------------------------------------------------------------- */

static const char *label_name(const struct shard_label_tally *t)
{
    return t->name ? t->name : "(no label)";
}

/* The bars: SRC beside the shards (or the manifest, when the shards could
 * not be counted), one row per label in `rows`, a flagged row noting the
 * manifest's count. */
static void label_bars(FILE *out, const struct report *rep, const uint32_t *rows, size_t n,
                       const char *id, const char *caption)
{
    const struct shard_verify_report *r = rep->verify;
    size_t series = r->labels_checked ? 2 : 1;
    const char *names[2] = {r->labels_checked ? "SRC" : NULL, NULL};
    names[series - 1] = r->labels_counted ? "shards" : "manifest";
    const char **row_names = malloc((n ? n : 1) * sizeof *row_names);
    char **notes = calloc(n ? n : 1, sizeof *notes);
    double *values = malloc((n ? n : 1) * series * sizeof *values);
    unsigned char *flagged = calloc(n ? n : 1, 1);
    if (!row_names || !notes || !values || !flagged)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const struct shard_label_tally *t = &r->labels[rows[i]];
        row_names[i] = label_name(t);
        if (series == 2)
            values[i * series] = (double)t->source;
        values[i * series + series - 1] = (double)(r->labels_counted ? t->shards : t->manifest);
        flagged[i] = (unsigned char)report_label_differs(rep, rows[i]);
        if (flagged[i] && r->labels_counted &&
            asprintf(&notes[i], "(manifest: %llu)", (unsigned long long)t->manifest) < 0)
            notes[i] = NULL;
    }
    struct chart_bars c = {.id = id,
                           .caption = caption,
                           .unit = "samples",
                           .rows = n,
                           .row_names = row_names,
                           .series = series,
                           .series_names = names,
                           .values = values,
                           .flagged = flagged,
                           .flag_note = "counts differ",
                           .row_notes = (const char *const *)notes};
    chart_bars(out, &c);
out:
    for (size_t i = 0; notes && i < n; i++)
        free(notes[i]);
    free(notes);
    free(row_names);
    free(values);
    free(flagged);
}

static void label_table(FILE *out, const struct report *rep, const uint32_t *rows, size_t n)
{
    const struct shard_verify_report *r = rep->verify;
    static const char *const head[] = {"label", "#SRC", "#shards", "#manifest"};
    fputs("<div class=\"tall\">", out);
    html_table_begin(out, "label-table", head, 4);
    for (size_t i = 0; i < n; i++) {
        const struct shard_label_tally *t = &r->labels[rows[i]];
        html_row_begin(out, report_label_differs(rep, rows[i]) ? "bad" : NULL);
        html_cell(out, label_name(t));
        if (r->labels_checked)
            html_cell_u64(out, t->source);
        else
            html_cell(out, "");
        if (r->labels_counted)
            html_cell_u64(out, t->shards);
        else
            html_cell(out, "");
        html_cell_u64(out, t->manifest);
        html_row_end(out);
    }
    html_table_end(out);
    fputs("</div>\n", out);
}

static void labels(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    if (!r->label_tally_count)
        return;
    uint32_t *rows = malloc(r->label_tally_count * sizeof *rows);
    uint32_t *differ = malloc(r->label_tally_count * sizeof *differ);
    double *per_label = malloc(r->label_tally_count * sizeof *per_label);
    if (!rows || !differ || !per_label)
        goto out;
    size_t n = 0, nd = 0;
    for (uint32_t i = 0; i < r->label_tally_count; i++) {
        if (!report_label_shown(rep, i))
            continue;
        per_label[n] = (double)(r->labels_counted ? r->labels[i].shards : r->labels[i].manifest);
        rows[n++] = i;
        if (report_label_differs(rep, i))
            differ[nd++] = i;
    }
    html_section_begin(out, "labels", "Samples per label");
    if (r->labels_checked)
        fputs("<p>Each label's samples in SRC (labels re-derived from the keys) beside the "
              "samples the shards hold; a row in red differs.</p>\n",
              out);
    else
        fprintf(out,
                "<p>Each label's samples as the shards hold them%s; a row in red "
                "differs from the manifest.</p>\n",
                r->labels_note ? "" : " (run with --source to set SRC beside them)");
    if (r->labels_note) {
        fputs("<p class=\"warn\">SRC's labels were not checked: ", out);
        html_text(out, r->labels_note);
        fputs("</p>\n", out);
    }
    if (n <= LABEL_BARS_MAX) {
        label_bars(out, rep, rows, n, "label-counts", "Samples per label");
    } else {
        struct cli_histogram h;
        if (!cli_histogram_make(&h, per_label, n, HISTOGRAM_BINS, CLI_SCALE_LINEAR)) {
            struct chart_histogram c = {.id = "label-histogram",
                                        .caption = "How many samples the labels have",
                                        .x_label = "samples in a label",
                                        .y_label = "labels",
                                        .h = &h,
                                        .mark = NAN};
            chart_histogram(out, &c);
            cli_histogram_release(&h);
        }
        if (nd)
            label_bars(out, rep, differ, nd < LABEL_BARS_MAX ? nd : LABEL_BARS_MAX, "label-counts",
                       "The labels whose counts differ");
    }
    label_table(out, rep, rows, n);
    html_section_end(out);
out:
    free(rows);
    free(differ);
    free(per_label);
}

/* ---- stored images and shards --------------------------------------------------------- */

static void stored_images(FILE *out, const struct dataset_summary *d)
{
    html_section_begin(out, "stored", "Stored images");
    char caption[160];
    snprintf(caption, sizeof caption, "Stored size of each record (its zstd frame), %llu records",
             (unsigned long long)d->record_bytes.total);
    struct chart_histogram c = {.id = "record-bytes",
                                .caption = caption,
                                .x_label = "KiB per record",
                                .y_label = "records",
                                .h = &d->record_bytes,
                                .x_divisor = 1024,
                                .mark = NAN};
    chart_histogram(out, &c);
    if (d->have_dimensions && d->top_count) {
        fprintf(out,
                "<p>Stored dimensions: width %u to %u, height %u to %u pixels; %llu "
                "distinct.</p>\n",
                d->min_width, d->max_width, d->min_height, d->max_height,
                (unsigned long long)d->distinct_dimensions);
        static const char *const head[] = {"width x height", "#samples"};
        html_table_begin(out, "dimension-table", head, 2);
        for (size_t i = 0; i < d->top_count; i++) {
            html_row_begin(out, NULL);
            char buf[48];
            snprintf(buf, sizeof buf, "%u x %u", d->top[i].width, d->top[i].height);
            html_cell(out, buf);
            html_cell_u64(out, d->top[i].samples);
            html_row_end(out);
        }
        html_table_end(out);
    }
    if (d->note[0]) {
        fputs("<p class=\"warn\">Not all could be read: ", out);
        html_text(out, d->note);
        fputs("</p>\n", out);
    }
    html_section_end(out);
}

static void shards(FILE *out, const struct dataset_summary *d)
{
    const struct shard_manifest *m = &d->manifest;
    html_section_begin(out, "shards", "Shards");
    uint32_t n = m->shard_count;
    uint64_t max = 0;
    for (uint32_t i = 0; i < n; i++)
        max = m->shards[i].bytes > max ? m->shards[i].bytes : max;
    const char *unit;
    double scale = shardx_size_unit(max, &unit);
    double *values = malloc((n ? n : 1) * sizeof *values);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    char **notes = calloc(n ? n : 1, sizeof *notes);
    if (values && names && notes) {
        for (uint32_t i = 0; i < n; i++) {
            values[i] = (double)m->shards[i].bytes / (n <= SHARD_BARS_MAX ? scale : 1);
            names[i] = m->shards[i].file;
            if (asprintf(&notes[i], "(%llu samples)", (unsigned long long)m->shards[i].samples) < 0)
                notes[i] = NULL;
        }
        if (n <= SHARD_BARS_MAX) {
            char caption[96];
            snprintf(caption, sizeof caption, "Size of each shard (target %llu bytes)",
                     (unsigned long long)m->config.shard_size);
            struct chart_bars c = {.id = "shard-bytes",
                                   .caption = caption,
                                   .unit = unit,
                                   .rows = n,
                                   .row_names = names,
                                   .series = 1,
                                   .values = values,
                                   .row_notes = (const char *const *)notes,
                                   .decimals = scale > 1 ? 1 : 0};
            chart_bars(out, &c);
        } else {
            struct cli_histogram h;
            if (!cli_histogram_make(&h, values, n, HISTOGRAM_BINS, CLI_SCALE_LINEAR)) {
                struct chart_histogram c = {.id = "shard-bytes",
                                            .caption = "Shard sizes",
                                            .x_label = "MiB per shard",
                                            .y_label = "shards",
                                            .h = &h,
                                            .x_divisor = 1024.0 * 1024,
                                            .mark = NAN};
                chart_histogram(out, &c);
                cli_histogram_release(&h);
            }
        }
    }
    for (uint32_t i = 0; notes && i < n; i++)
        free(notes[i]);
    free(notes);
    free(values);
    free(names);
    static const char *const head[] = {"shard", "#samples", "#bytes"};
    fputs("<div class=\"tall\">", out);
    html_table_begin(out, "shard-table", head, 3);
    for (uint32_t i = 0; i < n; i++) {
        html_row_begin(out, NULL);
        html_cell_code(out, m->shards[i].file);
        html_cell_u64(out, m->shards[i].samples);
        html_cell_u64(out, m->shards[i].bytes);
        html_row_end(out);
    }
    html_table_end(out);
    fputs("</div>\n", out);
    html_section_end(out);
}

/* ---- fields ------------------------------------------------------------------------------ */

/* Each declared field's coverage and, for text, its values' lengths. */
static void fields(FILE *out, const struct dataset_summary *d)
{
    const struct shard_manifest *m = &d->manifest;
    uint32_t n = m->config.field_count;
    if (!d->fields)
        return;
    html_section_begin(out, "fields", "Fields");
    fprintf(out,
            "<p>The fields the samples carry besides their image: how many of the %llu "
            "samples have each.</p>\n",
            (unsigned long long)m->samples);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    double *values = malloc((n ? n : 1) * sizeof *values);
    char **notes = calloc(n ? n : 1, sizeof *notes);
    if (names && values && notes) {
        for (uint32_t f = 0; f < n; f++) {
            names[f] = d->fields[f].decl->name;
            values[f] = (double)d->fields[f].samples;
            if (asprintf(&notes[f], "(%.1f%%)",
                         m->samples ? 100.0 * values[f] / (double)m->samples : 0.0) < 0)
                notes[f] = NULL;
        }
        struct chart_bars c = {.id = "field-coverage",
                               .caption = "Samples that have each field",
                               .unit = "samples",
                               .rows = n,
                               .row_names = names,
                               .series = 1,
                               .values = values,
                               .row_notes = (const char *const *)notes};
        chart_bars(out, &c);
    }
    for (uint32_t f = 0; notes && f < n; f++)
        free(notes[f]);
    free(notes);
    free(names);
    free(values);
    static const char *const head[] = {"field",    "type",     "from",
                                       "required", "#samples", "#coverage %"};
    html_table_begin(out, "field-table", head, 6);
    for (uint32_t f = 0; f < n; f++) {
        const struct field_summary *fs = &d->fields[f];
        char source[96];
        html_row_begin(out, NULL);
        html_cell(out, fs->decl->name);
        html_cell(out, fs->type);
        html_cell(out, summary_field_source(fs, source, sizeof source));
        html_cell(out, fs->decl->required ? "yes" : "no");
        html_cell_u64(out, fs->samples);
        html_cell_num(out, m->samples ? 100.0 * (double)fs->samples / (double)m->samples : 0,
                      "%.1f");
        html_row_end(out);
    }
    html_table_end(out);
    for (uint32_t f = 0; f < n; f++) {
        const struct field_summary *fs = &d->fields[f];
        if (!fs->lengths.bins)
            continue;
        char id[96], caption[160];
        snprintf(id, sizeof id, "text-lengths-%s", fs->decl->name);
        snprintf(caption, sizeof caption, "Lengths of the text of '%s', %llu values",
                 fs->decl->name, (unsigned long long)fs->lengths.total);
        struct chart_histogram c = {.id = id,
                                    .caption = caption,
                                    .x_label = "bytes",
                                    .y_label = "samples",
                                    .h = &fs->lengths,
                                    .mark = NAN};
        chart_histogram(out, &c);
    }
    html_section_end(out);
    html_section_begin(out, "orphans", "Sidecar files of no image");
    fprintf(out,
            "<p>%llu %s named like a sidecar (a declared suffix) but whose stem is no "
            "image's: counted and listed, never stored.</p>\n",
            (unsigned long long)m->orphan_count, plural(m->orphan_count, "file", "files"));
    if (m->orphan_count) {
        static const char *const orphan_head[] = {"file"};
        html_table_begin(out, "orphan-table", orphan_head, 1);
        for (uint64_t i = 0; i < m->orphan_count && i < ROWS_SHOWN; i++) {
            html_row_begin(out, NULL);
            html_cell_bytes(out, m->orphans[i].key, m->orphans[i].key_len, 1);
            html_row_end(out);
        }
        html_table_end(out);
        if (m->orphan_count > ROWS_SHOWN)
            fprintf(out, "<p class=\"muted\">and %llu more (manifest.json lists every one)</p>\n",
                    (unsigned long long)(m->orphan_count - ROWS_SHOWN));
    }
    html_section_end(out);
}

/* ---- visitation and fidelity ------------------------------------------------------------ */

static void visitation(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    size_t n = r->visitation_count;
    if (!rep->options->world_size_count)
        return;
    enum shard_remainder remainder = rep->options->plan.remainder;
    html_section_begin(out, "visitation", "Visitation");
    fprintf(out,
            "<p>Each rank's epoch plan, built for every world size and epochs 0..%llu "
            "(seed %llu, remainder %s): every sample is visited exactly once per epoch "
            "when a row passes.</p>\n",
            (unsigned long long)(rep->options->epochs ? rep->options->epochs - 1 : 0),
            (unsigned long long)rep->options->plan.seed, shard_remainder_name(remainder));
    char **names = calloc(n ? n : 1, sizeof *names);
    double *values = malloc((n ? n : 1) * 2 * sizeof *values);
    unsigned char *flagged = calloc(n ? n : 1, 1);
    if (names && values && flagged) {
        for (size_t i = 0; i < n; i++) {
            const struct shard_visitation_result *v = &r->visitation[i];
            if (asprintf(&names[i], "%u rank%s: %s", v->world_size, v->world_size == 1 ? "" : "s",
                         v->passed ? "ok" : "FAILED") < 0)
                names[i] = NULL;
            values[2 * i] = (double)v->min_per_rank;
            values[2 * i + 1] = (double)v->max_per_rank;
            flagged[i] = (unsigned char)!v->passed;
        }
        static const char *const series[] = {"fewest per rank", "most per rank"};
        struct chart_bars c = {.id = "visitation-chart",
                               .caption = "Samples per rank and epoch, by world size",
                               .unit = "samples",
                               .rows = n,
                               .row_names = (const char *const *)names,
                               .series = 2,
                               .series_names = series,
                               .values = values,
                               .flagged = flagged,
                               .flag_note = "failed"};
        chart_bars(out, &c);
    }
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    free(values);
    free(flagged);
    static const char *const head[] = {"#world size",    "#epochs", "#fewest per rank",
                                       "#most per rank", "#padded", "#dropped",
                                       "#wrong visits",  "result"};
    html_table_begin(out, "visitation-table", head, 8);
    for (size_t i = 0; i < n; i++) {
        const struct shard_visitation_result *v = &r->visitation[i];
        html_row_begin(out, v->passed ? NULL : "bad");
        html_cell_u64(out, v->world_size);
        html_cell_u64(out, v->epochs);
        html_cell_u64(out, v->min_per_rank);
        html_cell_u64(out, v->max_per_rank);
        html_cell_u64(out, v->padded);
        html_cell_u64(out, v->dropped);
        html_cell_u64(out, v->bad_samples);
        html_cell(out, v->passed ? "ok" : "FAILED");
        html_row_end(out);
    }
    html_table_end(out);
    html_section_end(out);
}

static void fidelity(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    uint64_t n = r->fidelity_count;
    if (!rep->options->fidelity)
        return;
    html_section_begin(out, "fidelity", "Fidelity");
    uint64_t passed = 0, exact = 0;
    for (uint64_t i = 0; i < n; i++) {
        passed += (uint64_t)r->fidelity[i].passed;
        exact += (uint64_t)r->fidelity[i].exact;
    }
    fprintf(out,
            "<p>%llu of %llu samples re-converted from SRC match their stored pixels "
            "(%llu identical); a JPEG sample must reach %.2f dB.</p>\n",
            (unsigned long long)passed, (unsigned long long)n, (unsigned long long)exact,
            r->min_psnr);
    double *psnr = malloc((n ? n : 1) * sizeof *psnr);
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    unsigned char *ok = malloc(n ? n : 1);
    if (psnr && keys && lens && ok) {
        for (uint64_t i = 0; i < n; i++) {
            psnr[i] = r->fidelity[i].psnr;
            keys[i] = r->fidelity[i].key;
            lens[i] = r->fidelity[i].key_len;
            ok[i] = (unsigned char)r->fidelity[i].passed;
        }
        char threshold[48];
        snprintf(threshold, sizeof threshold, "threshold %.2f dB", r->min_psnr);
        struct chart_strip c = {.id = "fidelity-psnr",
                                .caption = "PSNR of each re-converted sample against its "
                                           "stored pixels (identical pixels apart, at the right)",
                                .x_label = "dB",
                                .count = n,
                                .values = psnr,
                                .names = keys,
                                .name_lens = lens,
                                .passed = ok,
                                .threshold = r->min_psnr,
                                .threshold_label = threshold,
                                .infinite_label = "identical"};
        chart_strip(out, &c);
        for (uint64_t i = 0; i < n; i++)
            psnr[i] = r->fidelity[i].loss_psnr;
        struct chart_strip loss = {.id = "fidelity-loss",
                                   .caption = "What the stored encoding itself loses: PSNR of "
                                              "the stored pixels against the resized pixels "
                                              "before encoding",
                                   .x_label = "dB",
                                   .count = n,
                                   .values = psnr,
                                   .names = keys,
                                   .name_lens = lens,
                                   .threshold = NAN,
                                   .infinite_label = "lossless"};
        chart_strip(out, &loss);
    }
    free(psnr);
    free(keys);
    free(lens);
    free(ok);
    static const char *const head[] = {"key",      "shard",          "#record", "size",
                                       "#psnr dB", "#codec loss dB", "pixels",  "result"};
    fputs("<div class=\"tall\">", out);
    html_table_begin(out, "fidelity-table", head, 8);
    for (uint64_t i = 0; i < n && i < ROWS_SHOWN; i++) {
        const struct shard_fidelity_result *f = &r->fidelity[i];
        char buf[48];
        html_row_begin(out, f->passed ? NULL : "bad");
        html_cell_bytes(out, f->key, f->key_len, 1);
        html_cell(out, u64_text(f->shard, buf, sizeof buf));
        html_cell_u64(out, f->record);
        snprintf(buf, sizeof buf, "%u x %u", f->width, f->height);
        html_cell(out, buf);
        html_cell_num(out, f->psnr, "%.2f");
        html_cell_num(out, f->loss_psnr, "%.2f");
        html_cell(out, f->same_bytes ? "identical bytes" : f->exact ? "identical" : "differ");
        html_cell(out, f->passed ? "ok" : "FAILED");
        html_row_end(out);
    }
    html_table_end(out);
    fputs("</div>\n", out);
    more_rows(out, n, n < ROWS_SHOWN ? n : ROWS_SHOWN);
    html_section_end(out);
}

/* ---- rates and options ----------------------------------------------------------------- */

static void rate_row(FILE *out, const char *what, const struct shard_verify_rate *r)
{
    double gb = (double)r->bytes / REPORT_GB;
    html_row_begin(out, NULL);
    html_cell(out, what);
    html_cell_u64(out, r->items);
    html_cell_u64(out, r->bytes);
    html_cell_num(out, r->seconds, "%.2f");
    html_cell_num(out, report_per_second(gb, r->seconds), "%.2f");
    html_cell_num(out, report_per_second(gb, r->busy_seconds), "%.2f");
    html_cell_u64(out, (uint64_t)r->threads);
    html_row_end(out);
}

static void rates(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    html_section_begin(out, "rates", "How fast the checks ran");
    static const char *const head[] = {"pass",  "#items",         "#bytes",  "#seconds",
                                       "#GB/s", "#GB/s per core", "#threads"};
    html_table_begin(out, "rate-table", head, 7);
    rate_row(out, "hash (shard files)", &r->hash);
    if (rep->options->deep)
        rate_row(out, "deep (records decoded)", &r->deep);
    if (rep->options->source)
        rate_row(out, "source (files hashed)", &r->source);
    html_table_end(out);
    html_section_end(out);
}

static void option_row(FILE *out, const char *name, const char *value)
{
    html_row_begin(out, NULL);
    html_cell(out, name);
    html_cell_code(out, value);
    html_row_end(out);
}

static void options(FILE *out, const struct report *rep)
{
    const struct shard_verify_options *o = rep->options;
    html_section_begin(out, "options", "Options");
    static const char *const head[] = {"option", "value"};
    if (rep->dataset && rep->dataset->config) {
        fputs("<h3>The dataset was made with (shardify)</h3>\n", out);
        html_table_begin(out, "config-table", head, 2);
        const char *key;
        json_t *value;
        json_object_foreach(rep->dataset->config, key, value) {
            char *text = json_is_string(value) ? strdup(json_string_value(value))
                                               : json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
            option_row(out, key, text ? text : "");
            free(text);
        }
        option_row(out, "source kind",
                   rep->dataset->manifest.source_kind ? rep->dataset->manifest.source_kind : "");
        html_table_end(out);
    }
    fputs("<h3>This check (shardcheck)</h3>\n", out);
    html_table_begin(out, "check-options-table", head, 2);
    char buf[64];
    option_row(out, "--deep", o->deep ? "yes" : "no");
    if (rep->source) {
        html_row_begin(out, NULL);
        html_cell(out, "--source");
        html_cell_bytes(out, rep->source, strlen(rep->source), 1);
        html_row_end(out);
    } else {
        option_row(out, "--source", "(none)");
    }
    if (o->labels)
        option_row(out, "--labels", o->labels);
    if (o->fidelity) {
        option_row(out, "--fidelity", u64_text(o->fidelity, buf, sizeof buf));
        snprintf(buf, sizeof buf, "%.2f", rep->verify->min_psnr);
        option_row(out, "--min-psnr", buf);
    }
    if (o->world_size_count) {
        char sizes[SHARD_VERIFY_MAX_WORLD_SIZES * 12] = "";
        for (size_t i = 0; i < o->world_size_count; i++)
            snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%u", i ? "," : "",
                     o->world_sizes[i]);
        option_row(out, "--visitation", sizes);
        option_row(out, "--epochs", u64_text(o->epochs, buf, sizeof buf));
        option_row(out, "--seed", u64_text(o->plan.seed, buf, sizeof buf));
        option_row(out, "--remainder", shard_remainder_name(o->plan.remainder));
        option_row(out, "--shuffle-buffer", u64_text(o->plan.shuffle_buffer, buf, sizeof buf));
        option_row(out, "shuffle", o->plan.shuffle ? "yes" : "no (--no-shuffle)");
    }
    option_row(out, "threads", u64_text((uint64_t)rep->verify->threads, buf, sizeof buf));
    html_table_end(out);
    html_section_end(out);
}

void report_write_html(const struct report *rep, FILE *out)
{
    char title[160];
    snprintf(title, sizeof title, "shardcheck: %s",
             report_verified(rep) ? "verified" : "not verified");
    html_begin(out, title, PROG);
    verdict(out, rep);
    if (rep->error) { /* nothing was checked: nothing else to show but what was asked */
        options(out, rep);
        html_end(out, PROG);
        return;
    }
    problems(out, rep);
    if (rep->dataset)
        counts(out, rep);
    contact_sheet(out, rep->sheet);
    labels(out, rep);
    if (rep->dataset) {
        fields(out, rep->dataset);
        stored_images(out, rep->dataset);
        shards(out, rep->dataset);
    }
    visitation(out, rep);
    fidelity(out, rep);
    rates(out, rep);
    options(out, rep);
    html_end(out, PROG);
}
