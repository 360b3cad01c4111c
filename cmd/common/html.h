/* html.h - self-contained HTML pages: what every tool's report_html.c
 * shares (the charts are chart.h).
 *
 * A page is one file that needs nothing else: the style sheet is inline,
 * the charts are inline SVG, images are data: URIs, there is no script,
 * and a Content-Security-Policy of default-src 'none' (img-src data: only)
 * forbids the browser to fetch anything, so a report opened from a mail, an
 * artifact store or a laptop offline shows the same.  It reads on a phone (a viewport, tables that
 * scroll sideways in their own box, charts that shrink) and prints (print rules: no clipping,
 * colours kept, figures not split across pages).
 *
 * Nothing from outside is written raw.  Bytes (keys, paths: any bytes,
 * `<script>` and quotes included) are written with html_bytes(), quoted as
 * the tools quote keys in messages.  Text (messages, which quote the keys and
 * paths they name already, labels, a command line, option values) is written
 * with html_text(), which quotes nothing a second time: the page shows a
 * message exactly as the JSON report has it, and a command copied from the
 * page is the one the JSON names. */
#ifndef SHARDKIT_CLI_HTML_H
#define SHARDKIT_CLI_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write the bytes s[0..len) as HTML text, safe in element content and in
 * quoted attribute values: & < > " ' become character references; valid
 * UTF-8 is kept; control bytes, DEL, bytes that are not valid UTF-8 and
 * those of a character that does not show as itself (shardx_utf8_shown_len:
 * U+202E, a zero-width space, ...) become \xNN and a backslash \\ (as the
 * tools' messages quote keys). */
void html_bytes(FILE *out, const char *s, size_t len);
/* Write text s[0..len): the same, but a backslash stays one backslash (the
 * text quotes what it holds already).  Control bytes, bytes that are not
 * valid UTF-8 and characters that do not show as themselves, which text
 * does not hold (a label may), still become \xNN. */
void html_text_len(FILE *out, const char *s, size_t len);
/* The same for a NUL-terminated string; NULL writes nothing. */
void html_text(FILE *out, const char *s);
/* printf-formatted, then written as html_text. */
void html_textf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A number for a data- attribute or a cell: the shortest "%.*g" that reads
 * back as v (up to 17 digits); "inf", "-inf" or "nan" otherwise. */
void html_number(FILE *out, double v);

/* The page: doctype, head (charset, viewport, CSP, style), body, and an h1
 * holding `title`; `tool` names the program that made it. */
void html_begin(FILE *out, const char *title, const char *tool);
/* The footer ("made by TOOL, shardkit VERSION") and the end of the page. */
void html_end(FILE *out, const char *tool);

/* <section id=ID><h2>HEADING</h2> ... </section> */
void html_section_begin(FILE *out, const char *id, const char *heading);
void html_section_end(FILE *out);

/* A table in a box that scrolls sideways on a narrow screen.  Headers are
 * plain text; a header starting with '#' is a numeric column (right-aligned;
 * the '#' is not shown). */
void html_table_begin(FILE *out, const char *id, const char *const *headers, size_t count);
void html_table_end(FILE *out);
void html_row_begin(FILE *out, const char *css_class); /* css_class may be NULL */
void html_row_end(FILE *out);
/* One cell of text (escaped), of text in monospace (a file name, an option's
 * value), of bytes (a key; in monospace when `code`), of a number. */
void html_cell(FILE *out, const char *text);
void html_cell_code(FILE *out, const char *text);
void html_cell_bytes(FILE *out, const char *s, size_t len, int code);
void html_cell_u64(FILE *out, uint64_t v);
/* printf-formatted numeric cell (right-aligned), carrying the exact value. */
void html_cell_num(FILE *out, double v, const char *fmt);

/* A row of big numbers ("48 samples"): html_cards_begin, one html_card per
 * number, html_cards_end.  `id` names the card for tests (data-card). */
void html_cards_begin(FILE *out);
void html_card(FILE *out, const char *id, const char *value, const char *what,
               const char *css_class);
void html_cards_end(FILE *out);

#endif
