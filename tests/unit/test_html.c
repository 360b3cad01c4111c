/* test_html.c - what the tools' HTML reports are made of (cmd/common):
 * text from outside is escaped (markup, quotes, bytes that are not UTF-8),
 * numbers read back exactly, histogram bins have round edges and count
 * every value once, axis ticks are round and cover the range, every chart
 * carries each of its numbers as text and as data at its mark, with
 * balanced markup, for any input (empty, NaN, infinite, hostile names), text
 * that quotes its bytes already is not quoted again, and the command a report
 * shows is quoted as a shell reads it back, invisible characters as bytes and
 * no password. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chart.h"
#include "cli.h"
#include "histogram.h"
#include "html.h"

/* ---- capturing what a writer writes ------------------------------------------------ */

struct capture {
    char *text;
    size_t len;
    FILE *f;
};

static FILE *capture_begin(struct capture *c)
{
    memset(c, 0, sizeof *c);
    c->f = open_memstream(&c->text, &c->len);
    assert_non_null(c->f);
    return c->f;
}

static const char *capture_end(struct capture *c)
{
    assert_int_equal(fclose(c->f), 0);
    return c->text;
}

static size_t occurrences(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Every <TAG ...> has its </TAG> (or is self-closed), in order. */
static void assert_balanced(const char *doc, const char *tag)
{
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    long depth = 0;
    size_t olen = strlen(open);
    for (const char *p = doc; *p; p++) {
        if (!strncmp(p, open, olen) && (p[olen] == ' ' || p[olen] == '>')) {
            const char *end = strchr(p, '>');
            assert_non_null(end);
            if (end[-1] != '/')
                depth++;
        } else if (!strncmp(p, close, strlen(close))) {
            depth--;
            if (depth < 0)
                fail_msg("</%s> without <%s>", tag, tag);
        }
    }
    if (depth)
        fail_msg("%ld <%s> left open", depth, tag);
}

static void assert_chart_markup(const char *doc)
{
    assert_balanced(doc, "figure");
    assert_balanced(doc, "svg");
    assert_balanced(doc, "g");
    assert_balanced(doc, "text");
    assert_balanced(doc, "title");
    /* NaN and infinity are data, never coordinates */
    assert_int_equal(occurrences(doc, "nan\""), occurrences(doc, "data-value=\"nan\""));
    assert_int_equal(occurrences(doc, "inf\""), occurrences(doc, "data-value=\"inf\"") +
                                                    occurrences(doc, "data-value=\"-inf\""));
}

/* ---- escaping and numbers ------------------------------------------------------------ */

static void test_text_escapes_markup_quotes_and_bytes_that_are_not_utf8(void **state)
{
    (void)state;
    static const char key[] = "<script>alert('x')</script> & \"q\" \xff\xfe\\ \xc3\xa9\x01\x7f "
                              "\xe2\x82";
    struct capture c;
    html_bytes(capture_begin(&c), key, sizeof key - 1);
    assert_string_equal(capture_end(&c),
                        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot; "
                        "\\xff\\xfe\\\\ \xc3\xa9\\x01\\x7f \\xe2\\x82");
    free(c.text);
    /* a NUL inside a key is a byte like any other */
    html_bytes(capture_begin(&c), "a\0b", 3);
    assert_string_equal(capture_end(&c), "a\\x00b");
    free(c.text);
    html_text(capture_begin(&c), NULL);
    assert_string_equal(capture_end(&c), "");
    free(c.text);
}

static void test_text_quotes_nothing_twice(void **state)
{
    (void)state;
    /* a message quotes a key once ('a\\b'); the page shows it so, as the JSON has it */
    struct capture c;
    html_text(capture_begin(&c), "no key 'a\\\\b' <x> & \"q\"");
    assert_string_equal(capture_end(&c), "no key &#39;a\\\\b&#39; &lt;x&gt; &amp; &quot;q&quot;");
    free(c.text);
    /* what text cannot hold still shows as bytes */
    html_text(capture_begin(&c), "a\xff\x01");
    assert_string_equal(capture_end(&c), "a\\xff\\x01");
    free(c.text);
    html_textf(capture_begin(&c), "%s\\", "x");
    assert_string_equal(capture_end(&c), "x\\");
    free(c.text);
}

/* A name or a label on a page cannot lie either: U+202E, a zero-width
 * space and a no-break space show as their bytes, in bytes and in text. */
static void test_characters_that_would_lie_show_as_their_bytes(void **state)
{
    (void)state;
    /* clang-format off */
    static const char name[] = "rlo\xe2\x80\xae" "gpj.exe zw\xe2\x80\x8b" "b nb\xc2\xa0" "sp \xc3\xa9";
    /* clang-format on */
    static const char shown[] =
        "rlo\\xe2\\x80\\xaegpj.exe zw\\xe2\\x80\\x8bb nb\\xc2\\xa0sp \xc3\xa9";
    struct capture c;
    html_bytes(capture_begin(&c), name, sizeof name - 1);
    assert_string_equal(capture_end(&c), shown);
    free(c.text);
    html_text(capture_begin(&c), name);
    assert_string_equal(capture_end(&c), shown);
    free(c.text);
}

static void test_numbers_read_back_exactly(void **state)
{
    (void)state;
    static const double values[] = {0, 12, 0.1, 1.0 / 3, 1e300, -2.5e-7, 123456789012345678.0};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        struct capture c;
        html_number(capture_begin(&c), values[i]);
        const char *s = capture_end(&c);
        if (strtod(s, NULL) != values[i])
            fail_msg("%.17g written as %s", values[i], s);
        free(c.text);
    }
    struct capture c;
    html_number(capture_begin(&c), 12);
    assert_string_equal(capture_end(&c), "12"); /* the shortest form */
    free(c.text);
    html_number(capture_begin(&c), INFINITY);
    assert_string_equal(capture_end(&c), "inf");
    free(c.text);
    html_number(capture_begin(&c), NAN);
    assert_string_equal(capture_end(&c), "nan");
    free(c.text);
}

static void test_a_page_forbids_fetching_and_names_its_maker(void **state)
{
    (void)state;
    struct capture c;
    FILE *f = capture_begin(&c);
    html_begin(f, "report of '<b>'", "shardtest");
    html_end(f, "shardtest");
    const char *doc = capture_end(&c);
    assert_non_null(strstr(doc, "<meta http-equiv=\"Content-Security-Policy\" "
                                "content=\"default-src 'none';"));
    assert_non_null(strstr(doc, "name=\"viewport\""));
    assert_non_null(strstr(doc, "@media print"));
    assert_non_null(strstr(doc, "<h1>report of &#39;&lt;b&gt;&#39;</h1>"));
    assert_non_null(strstr(doc, "Made by shardtest"));
    assert_null(strstr(doc, "<script"));
    assert_null(strstr(doc, "http://"));
    assert_null(strstr(doc, "https://"));
    free(c.text);
}

/* ---- histograms and ticks ------------------------------------------------------------ */

static void test_nice_steps_are_one_two_or_five_times_a_power_of_ten(void **state)
{
    (void)state;
    static const double raw[] = {0.7, 1, 1.1, 2.5, 7, 0.013, 4999, 5001};
    static const double want[] = {1, 1, 2, 5, 10, 0.02, 5000, 10000};
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++)
        if (fabs(cli_nice_step(raw[i]) - want[i]) > want[i] * 1e-12)
            fail_msg("nice step of %g is %g, want %g", raw[i], cli_nice_step(raw[i]), want[i]);
    assert_true(cli_nice_step(0) == 1 && cli_nice_step(-3) == 1 && cli_nice_step(NAN) == 1);
}

/* Every value counted once, in the bin whose edges hold it. */
static void assert_histogram_holds(const struct cli_histogram *h, const double *v, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < h->bins; i++) {
        assert_true(h->edges[i] < h->edges[i + 1]);
        sum += h->counts[i];
    }
    assert_int_equal(sum, h->total);
    uint64_t *want = calloc(h->bins, sizeof *want);
    for (size_t j = 0; j < n; j++) {
        if (!isfinite(v[j]) || (h->scale == CLI_SCALE_LOG && v[j] <= 0))
            continue;
        size_t i = 0;
        while (i + 1 < h->bins && v[j] >= h->edges[i + 1])
            i++;
        assert_true(v[j] >= h->edges[i] && v[j] <= h->edges[h->bins]);
        want[i]++;
    }
    for (size_t i = 0; i < h->bins; i++)
        assert_int_equal(h->counts[i], want[i]);
    free(want);
}

static void test_linear_bins_have_round_edges_and_count_every_value(void **state)
{
    (void)state;
    double v[95];
    for (size_t i = 0; i < 95; i++)
        v[i] = 3 + (double)i; /* 3..97 */
    struct cli_histogram h;
    assert_int_equal(cli_histogram_make(&h, v, 95, 20, CLI_SCALE_LINEAR), 0);
    assert_true(h.bins <= 20 && h.bins >= 10);
    assert_int_equal(h.total, 95);
    assert_true(h.edges[0] <= 3 && h.edges[h.bins] >= 97);
    double step = h.edges[1] - h.edges[0];
    assert_true(step == cli_nice_step(step));
    assert_true(fmod(h.edges[0], step) == 0);
    assert_true(h.min == 3 && h.max == 97);
    assert_histogram_holds(&h, v, 95);
    cli_histogram_release(&h);
    cli_histogram_release(NULL);

    /* the top value lands in the last bin, not past it */
    double edge[] = {0, 10, 20};
    assert_int_equal(cli_histogram_make(&h, edge, 3, 2, CLI_SCALE_LINEAR), 0);
    assert_histogram_holds(&h, edge, 3);
    assert_int_equal(h.total, 3);
    cli_histogram_release(&h);
}

static void test_equal_empty_and_non_finite_values_are_binned_sensibly(void **state)
{
    (void)state;
    struct cli_histogram h;
    double same[] = {224, 224, 224};
    assert_int_equal(cli_histogram_make(&h, same, 3, 30, CLI_SCALE_LINEAR), 0);
    assert_int_equal(h.bins, 1);
    assert_int_equal(h.counts[0], 3);
    assert_true(h.edges[0] <= 224 && h.edges[1] > 224);
    cli_histogram_release(&h);
    double ones[] = {1, 1, 1}; /* whole numbers: a bin of at least 1, not [1, 1.1) */
    assert_int_equal(cli_histogram_make(&h, ones, 3, 30, CLI_SCALE_LINEAR), 0);
    assert_true(h.bins == 1 && h.edges[0] == 1 && h.edges[1] == 2);
    cli_histogram_release(&h);
    double halves[] = {2.5, 2.5};
    assert_int_equal(cli_histogram_make(&h, halves, 2, 30, CLI_SCALE_LINEAR), 0);
    assert_true(h.edges[0] <= 2.5 && h.edges[1] > 2.5 && h.edges[1] - h.edges[0] < 1);
    cli_histogram_release(&h);
    double few[] = {1, 2, 3}; /* whole numbers never get fractional bins */
    assert_int_equal(cli_histogram_make(&h, few, 3, 30, CLI_SCALE_LINEAR), 0);
    assert_true(h.edges[1] - h.edges[0] == 1);
    assert_histogram_holds(&h, few, 3);
    cli_histogram_release(&h);

    assert_int_equal(cli_histogram_make(&h, NULL, 0, 30, CLI_SCALE_LINEAR), 0);
    assert_int_equal(h.bins, 0);
    assert_int_equal(h.total, 0);
    cli_histogram_release(&h);

    double odd[] = {NAN, INFINITY, 5, -INFINITY, 6};
    assert_int_equal(cli_histogram_make(&h, odd, 5, 30, CLI_SCALE_LINEAR), 0);
    assert_int_equal(h.total, 2);
    assert_int_equal(h.skipped, 3);
    assert_histogram_holds(&h, odd, 5);
    cli_histogram_release(&h);

    double zero[] = {0, 0};
    assert_int_equal(cli_histogram_make(&h, zero, 2, 30, CLI_SCALE_LINEAR), 0);
    assert_int_equal(h.bins, 1);
    assert_int_equal(h.total, 2);
    cli_histogram_release(&h);
}

static void test_log_bins_run_one_two_five_and_leave_out_what_is_not_positive(void **state)
{
    (void)state;
    double v[] = {0.0013, 0.004, 0.004, 0.02, 0.35, 1.7, 0, -1};
    struct cli_histogram h;
    assert_int_equal(cli_histogram_make(&h, v, 8, 50, CLI_SCALE_LOG), 0);
    assert_int_equal(h.scale, CLI_SCALE_LOG);
    assert_int_equal(h.skipped, 2);
    assert_int_equal(h.total, 6);
    assert_true(fabs(h.edges[0] - 0.001) < 1e-15);
    assert_true(fabs(h.edges[1] - 0.002) < 1e-15);
    assert_true(fabs(h.edges[2] - 0.005) < 1e-15);
    assert_true(fabs(h.edges[3] - 0.01) < 1e-15);
    assert_true(h.edges[h.bins] > 1.7);
    assert_histogram_holds(&h, v, 8);
    cli_histogram_release(&h);
    /* more decades than bins: one edge a decade, then linear */
    double wide[] = {1e-6, 1, 1e6};
    assert_int_equal(cli_histogram_make(&h, wide, 3, 14, CLI_SCALE_LOG), 0);
    assert_int_equal(h.scale, CLI_SCALE_LOG);
    assert_int_equal(h.bins, 13);
    assert_histogram_holds(&h, wide, 3);
    cli_histogram_release(&h);
    assert_int_equal(cli_histogram_make(&h, wide, 3, 5, CLI_SCALE_LOG), 0);
    assert_int_equal(h.scale, CLI_SCALE_LINEAR);
    assert_histogram_holds(&h, wide, 3);
    cli_histogram_release(&h);
}

static void test_ticks_are_round_and_cover_the_range(void **state)
{
    (void)state;
    double t[64];
    size_t n = chart_ticks(0, 48, 6, t, 64);
    assert_true(n >= 2 && n <= 6);
    assert_true(t[0] == 0 && t[n - 1] >= 48);
    for (size_t i = 1; i < n; i++)
        assert_true(fabs((t[i] - t[i - 1]) - (t[1] - t[0])) < 1e-9);
    n = chart_ticks(33.8, 41.2, 8, t, 64);
    assert_true(t[0] <= 33.8 && t[n - 1] >= 41.2 && n <= 8);
    assert_int_equal(chart_ticks(5, 5, 6, t, 64), 0);
    assert_int_equal(chart_ticks(NAN, 5, 6, t, 64), 0);
    char buf[32];
    assert_string_equal(chart_short_number(1250000, buf, sizeof buf), "1.25M");
    assert_string_equal(chart_short_number(0.5, buf, sizeof buf), "0.5");
    assert_string_equal(chart_short_number(9999, buf, sizeof buf), "9999");
    assert_string_equal(chart_short_number(0.125, buf, sizeof buf), "0.125");
    assert_string_equal(chart_short_number(999999, buf, sizeof buf), "1M");
    assert_string_equal(chart_short_number(-2500000, buf, sizeof buf), "-2.5M");
    assert_string_equal(chart_short_number(12000, buf, sizeof buf), "12k");
    assert_string_equal(chart_short_number(0, buf, sizeof buf), "0");
}

/* ---- charts ---------------------------------------------------------------------------- */

static void test_bars_carry_every_value_and_flag_the_rows_that_differ(void **state)
{
    (void)state;
    static const char *const rows[] = {"apple", "<script>alert(1)</script>", "cloud"};
    static const char *const series[] = {"source", "shards"};
    static const double values[] = {12, 12, 7, 8, 12, NAN};
    static const unsigned char flagged[] = {0, 1, 0};
    struct chart_bars c = {.id = "labels",
                           .caption = "samples per label",
                           .unit = "samples",
                           .rows = 3,
                           .row_names = rows,
                           .series = 2,
                           .series_names = series,
                           .values = values,
                           .flagged = flagged,
                           .flag_note = "source and shards differ"};
    struct capture cap;
    chart_bars(capture_begin(&cap), &c);
    const char *doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_non_null(strstr(doc, "<figure id=\"labels\">"));
    assert_int_equal(occurrences(doc, "<g class=\"bar\""), 6);
    assert_non_null(strstr(doc, "<g class=\"bar\" data-value=\"7\"><title>&lt;script&gt;"
                                "alert(1)&lt;/script&gt;, source: 7 samples</title>"));
    assert_non_null(strstr(doc, ">8</text>"));
    assert_int_equal(occurrences(doc, "class=\"row flagged\""), 1);
    assert_non_null(strstr(doc, "data-name=\"&lt;script&gt;alert(1)&lt;/script&gt;\""));
    assert_null(strstr(doc, "<script"));
    assert_non_null(strstr(doc, "data-value=\"nan\"")); /* no bar, but said so */
    assert_non_null(strstr(doc, "source and shards differ"));
    free(cap.text);

    /* stacked: segments and their total */
    static const double stages[] = {0.5, 1.25, 2, 0.25};
    static const char *const two[] = {"files", "shards"};
    struct chart_bars st = {.id = "stages",
                            .caption = "ms per sample",
                            .unit = "ms",
                            .rows = 2,
                            .row_names = two,
                            .series = 2,
                            .series_names = series,
                            .values = stages,
                            .stacked = 1,
                            .decimals = 2};
    chart_bars(capture_begin(&cap), &st);
    doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_int_equal(occurrences(doc, "<g class=\"bar segment\""), 4);
    assert_non_null(strstr(doc, "data-value=\"1.75\"")); /* 0.5 + 1.25 */
    assert_non_null(strstr(doc, ">2.25</text>"));        /* 2 + 0.25 */
    free(cap.text);

    struct chart_bars none = {.id = "empty", .caption = "nothing", .rows = 0};
    chart_bars(capture_begin(&cap), &none);
    doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_non_null(strstr(doc, "nothing to show"));
    free(cap.text);
}

static void test_a_long_name_is_shortened_and_kept_whole_in_its_title(void **state)
{
    (void)state;
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memcpy(name + 300, "\xc3\xa9\xc3\xa9", 4); /* a character that must not be cut */
    const char *rows[] = {name};
    double v[] = {3};
    struct chart_bars c = {
        .id = "long", .caption = "c", .rows = 1, .row_names = rows, .series = 1, .values = v};
    struct capture cap;
    chart_bars(capture_begin(&cap), &c);
    const char *doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_non_null(strstr(doc, "\xe2\x80\xa6</text>")); /* the ellipsis */
    char title[420];
    snprintf(title, sizeof title, "<title>%s: 3</title>", name);
    assert_non_null(strstr(doc, title));
    free(cap.text);
}

static void test_a_histogram_draws_each_bin_with_its_count(void **state)
{
    (void)state;
    double v[] = {1200, 1300, 5100, 9800, 9900, 9950};
    struct cli_histogram h;
    assert_int_equal(cli_histogram_make(&h, v, 6, 10, CLI_SCALE_LINEAR), 0);
    struct chart_histogram c = {.id = "sizes",
                                .caption = "stored bytes",
                                .x_label = "KB per record",
                                .y_label = "records",
                                .h = &h,
                                .x_divisor = 1e3,
                                .mark = 5000,
                                .mark_label = "threshold"};
    struct capture cap;
    chart_histogram(capture_begin(&cap), &c);
    const char *doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_int_equal(occurrences(doc, "<g class=\"bin\""), h.bins);
    uint64_t sum = 0;
    for (size_t i = 0; i < h.bins; i++) {
        char want[64];
        snprintf(want, sizeof want, "data-value=\"%llu\"", (unsigned long long)h.counts[i]);
        assert_non_null(strstr(doc, want));
        sum += h.counts[i];
    }
    assert_int_equal(sum, 6);
    assert_non_null(strstr(doc, "class=\"mark-line\""));
    assert_non_null(strstr(doc, "KB per record"));
    assert_non_null(strstr(doc, ">3</text>")); /* the bin of 9800, 9900, 9950 */
    free(cap.text);
    cli_histogram_release(&h);

    struct cli_histogram empty;
    assert_int_equal(cli_histogram_make(&empty, NULL, 0, 10, CLI_SCALE_LINEAR), 0);
    c.h = &empty;
    chart_histogram(capture_begin(&cap), &c);
    doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_non_null(strstr(doc, "no values"));
    free(cap.text);
}

static void test_a_line_breaks_at_missing_values_and_names_its_points(void **state)
{
    (void)state;
    static const double y[] = {48, 48, NAN, 47, 48};
    static const char *const names[] = {"run 1", "run 2", "run 3", "run 4", "run <5>"};
    static const char *const cls[] = {"ok", "ok", "bad", "ok", "ok"};
    struct chart_line c = {.id = "trend",
                           .caption = "samples per run",
                           .x_label = "run",
                           .y_label = "samples",
                           .points = 5,
                           .y = y,
                           .x_names = names,
                           .point_class = cls};
    struct capture cap;
    chart_line(capture_begin(&cap), &c);
    const char *doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_int_equal(occurrences(doc, "<g class=\"point\""), 5);
    const char *path = strstr(doc, "<path class=\"line\" d=\"");
    assert_non_null(path);
    char d[512];
    snprintf(d, sizeof d, "%.*s", (int)(strchr(path + 22, '"') - path - 22), path + 22);
    assert_int_equal(occurrences(d, "M"), 2); /* a gap at run 3 */
    assert_int_equal(occurrences(d, "L"), 2);
    assert_non_null(strstr(doc, "<title>run 3: no value samples</title>"));
    assert_non_null(strstr(doc, "<title>run &lt;5&gt;: 48 samples</title>"));
    assert_non_null(strstr(doc, ">47</text>"));
    free(cap.text);

    /* numeric x, columns */
    static const double x[] = {0, 0.5, 1.5};
    static const double w[] = {0.002, 0, 0.010};
    struct chart_line col = {.id = "wait",
                             .caption = "wait",
                             .x_label = "s",
                             .y_label = "ms",
                             .points = 3,
                             .x = x,
                             .y = w,
                             .columns = 1,
                             .decimals = 3};
    chart_line(capture_begin(&cap), &col);
    doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_int_equal(occurrences(doc, "<rect class=\"s0"), 3);
    assert_null(strstr(doc, "<path"));
    assert_non_null(strstr(doc, "data-value=\"0.01\""));
    free(cap.text);

    static const double nothing[] = {NAN};
    struct chart_line empty = {.id = "e", .caption = "e", .points = 1, .y = nothing};
    chart_line(capture_begin(&cap), &empty);
    doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_non_null(strstr(doc, "no values"));
    free(cap.text);
}

static void test_a_strip_puts_infinite_values_apart_and_failed_ones_in_red(void **state)
{
    (void)state;
    static const double v[] = {INFINITY, 38.5, INFINITY, 21.0, NAN, INFINITY};
    static const char *const keys[] = {"a", "b\xff", "c", "d", "e", "f"};
    static const size_t lens[] = {1, 2, 1, 1, 1, 1};
    static const unsigned char passed[] = {1, 1, 1, 0, 1, 1};
    struct chart_strip c = {.id = "psnr",
                            .caption = "psnr",
                            .x_label = "dB",
                            .count = 6,
                            .values = v,
                            .names = keys,
                            .name_lens = lens,
                            .passed = passed,
                            .threshold = 35,
                            .threshold_label = "35 dB",
                            .infinite_label = "identical"};
    struct capture cap;
    chart_strip(capture_begin(&cap), &c);
    const char *doc = capture_end(&cap);
    assert_chart_markup(doc);
    assert_int_equal(occurrences(doc, "<g class=\"point\""), 5); /* NaN left out */
    assert_non_null(strstr(doc, ">3 identical</text>"));
    assert_non_null(strstr(doc, "<title>b\\xff: 38.50 dB</title>"));
    assert_non_null(strstr(doc, "<title>d: 21.00 dB (failed)</title><circle class=\"dot bad\""));
    assert_int_equal(occurrences(doc, "data-value=\"inf\""), 3);
    assert_non_null(strstr(doc, "class=\"mark-line\""));
    free(cap.text);
}

/* ---- the command a report shows ------------------------------------------------------ */

static void test_a_command_line_is_quoted_as_a_shell_reads_it_back(void **state)
{
    (void)state;
    /* clang-format off */
    char *argv[] = {"shardbench", "compare", "/data/raw", "my dir/it's", "--step-ms", "2.5",
                    "", "a\xff" "b\tc\\d'e", "\xc3\xa9t\xc3\xa9"};
    /* clang-format on */
    char *line = cli_command_line(9, argv);
    assert_non_null(line);
    assert_string_equal(line, "shardbench compare /data/raw 'my dir/it'\\''s' --step-ms 2.5 '' "
                              "$'a\\xffb\\x09c\\\\d\\'e' '\xc3\xa9t\xc3\xa9'");
    free(line);
    line = cli_command_line(0, argv);
    assert_string_equal(line, "");
    free(line);
}

static void test_a_command_line_shows_invisible_characters_and_no_password(void **state)
{
    (void)state;
    /* a no-break space, a right-to-left override, a zero-width space: shown
     * as their bytes, so that what a reader sees is what runs */
    /* clang-format off */
    char *argv[] = {"shardbench", "a\xc2\xa0" "b", "c\xe2\x80\xae" "d", "e\xe2\x80\x8b",
                    "https://alice:pw@h/d", "--x=http://u@h:1/p?q=a@b"};
    /* clang-format on */
    char *line = cli_command_line(6, argv);
    assert_non_null(line);
    assert_string_equal(line, "shardbench $'a\\xc2\\xa0b' $'c\\xe2\\x80\\xaed' $'e\\xe2\\x80\\x8b' "
                              "'https://***@h/d' '--x=http://***@h:1/p?q=a@b'");
    free(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_escapes_markup_quotes_and_bytes_that_are_not_utf8),
        cmocka_unit_test(test_characters_that_would_lie_show_as_their_bytes),
        cmocka_unit_test(test_text_quotes_nothing_twice),
        cmocka_unit_test(test_numbers_read_back_exactly),
        cmocka_unit_test(test_a_page_forbids_fetching_and_names_its_maker),
        cmocka_unit_test(test_nice_steps_are_one_two_or_five_times_a_power_of_ten),
        cmocka_unit_test(test_linear_bins_have_round_edges_and_count_every_value),
        cmocka_unit_test(test_equal_empty_and_non_finite_values_are_binned_sensibly),
        cmocka_unit_test(test_log_bins_run_one_two_five_and_leave_out_what_is_not_positive),
        cmocka_unit_test(test_ticks_are_round_and_cover_the_range),
        cmocka_unit_test(test_bars_carry_every_value_and_flag_the_rows_that_differ),
        cmocka_unit_test(test_a_long_name_is_shortened_and_kept_whole_in_its_title),
        cmocka_unit_test(test_a_histogram_draws_each_bin_with_its_count),
        cmocka_unit_test(test_a_line_breaks_at_missing_values_and_names_its_points),
        cmocka_unit_test(test_a_strip_puts_infinite_values_apart_and_failed_ones_in_red),
        cmocka_unit_test(test_a_command_line_is_quoted_as_a_shell_reads_it_back),
        cmocka_unit_test(test_a_command_line_shows_invisible_characters_and_no_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
