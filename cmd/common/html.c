/* html.c - self-contained HTML pages (see html.h). */
#include "html.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"
#include "shardx.h"

/* Nothing is fetched, whatever the page holds: no scripts, no fonts, no
 * images, no frames, no connections; the inline style sheet only. */
#define CSP                                                                           \
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; " \
    "form-action 'none'"

static const char style[] =
    ":root{--fg:#1d2330;--muted:#5b6473;--line:#d5d9e0;--ok:#1a7f37;--bad:#c62828;"
    "--warn:#9a6700;--s0:#3b6fb6;--s1:#e08a1e;--s2:#8a8f98;--s3:#2e9e8f;--s4:#b5548f;"
    "--s5:#6b5fb5}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;color:var(--fg);background:#fff;"
    "font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\n"
    "main{max-width:980px;margin:0 auto;padding:16px 20px}\n"
    "h1{font-size:1.45rem;margin:.2em 0 .5em;overflow-wrap:anywhere}\n"
    "h2{font-size:1.12rem;margin:1.6em 0 .5em;padding-bottom:.2em;"
    "border-bottom:1px solid var(--line)}\n"
    "h3{font-size:1rem;margin:1.2em 0 .4em}\n"
    "p{margin:.4em 0}\n"
    ".muted,figcaption,footer{color:var(--muted)}\n"
    ".verdict{padding:12px 16px;border-radius:6px;font-size:1.15rem;font-weight:600;"
    "margin:.5em 0 1em}\n"
    ".verdict.ok{background:#e6f4ea;color:var(--ok);border-left:6px solid var(--ok)}\n"
    ".verdict.bad{background:#fdecea;color:var(--bad);border-left:6px solid var(--bad)}\n"
    ".verdict .detail{display:block;font-weight:400;font-size:.95rem;color:var(--fg)}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(125px,1fr));gap:8px;"
    "margin:.6em 0}\n"
    ".card{border:1px solid var(--line);border-radius:6px;padding:6px 10px}\n"
    ".card .n{display:block;font-size:1.35rem;font-weight:600;"
    "font-variant-numeric:tabular-nums;overflow-wrap:anywhere}\n"
    ".card.bad{border-color:var(--bad)}.card.bad .n{color:var(--bad)}\n"
    ".card.ok .n{color:var(--ok)}\n"
    ".scroll{overflow-x:auto;max-width:100%}\n"
    ".tall{max-height:32em;overflow-y:auto}\n"
    "table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.4em 0}\n"
    "th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);"
    "vertical-align:top}\n"
    "th{background:#f4f5f7;font-weight:600}\n"
    ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "tr.bad td{background:#fdecea}\n"
    "tr.bad td:first-child{border-left:4px solid var(--bad)}\n"
    "code,.code{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,monospace;font-size:.88em;"
    "overflow-wrap:anywhere}\n"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f5f7;padding:8px;"
    "border-radius:4px}\n"
    ".ok{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}\n"
    "figure{margin:14px 0 18px;break-inside:avoid}\n"
    ".trends{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:0 18px}\n"
    "figcaption{font-size:.9rem;margin-bottom:4px}\n"
    ".sheet{display:grid;grid-template-columns:repeat(auto-fill,minmax(136px,1fr));gap:12px 10px;"
    "margin:.6em 0}\n"
    ".sheet figure{margin:0}\n"
    ".sheet img,.sheet .thumb-missing{display:block;margin:0 auto;max-width:100%;height:auto;"
    "background:#f4f5f7}\n"
    ".sheet .thumb-missing{width:128px;height:96px;padding-top:36px;text-align:center;"
    "font-size:.8rem}\n"
    ".sheet figcaption{font-size:.78rem;margin:4px 0 0;overflow-wrap:anywhere}\n"
    ".sheet .caption{display:block;color:var(--fg)}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    "svg.chart text{font-size:12px;fill:var(--fg);font-family:system-ui,'DejaVu Sans',sans-serif}\n"
    "svg.chart .tick{fill:var(--muted);font-size:11px}\n"
    "svg.chart .value{font-size:11px}\n"
    "svg.chart .axis{stroke:#8a8f98;stroke-width:1}\n"
    "svg.chart .grid{stroke:#e6e8ec;stroke-width:1}\n"
    "svg.chart .s0{fill:var(--s0)}svg.chart .s1{fill:var(--s1)}svg.chart .s2{fill:var(--s2)}"
    "svg.chart .s3{fill:var(--s3)}svg.chart .s4{fill:var(--s4)}svg.chart .s5{fill:var(--s5)}\n"
    "svg.chart .line{fill:none;stroke:var(--s0);stroke-width:1.5}\n"
    "svg.chart .dot{fill:var(--s0)}\n"
    "svg.chart .dot.ok,svg.chart .ok rect{fill:var(--ok)}\n"
    "svg.chart .dot.bad,svg.chart .bad rect,svg.chart rect.bad{fill:var(--bad)}\n"
    "svg.chart .differs{fill:#fdecea}\n"
    "svg.chart text.bad{fill:var(--bad);font-weight:600}\n"
    "svg.chart .mark-line{stroke:var(--bad);stroke-width:1.5;stroke-dasharray:4 3}\n"
    "footer{margin:2.5em 0 1em;font-size:.85rem;border-top:1px solid var(--line);"
    "padding-top:.5em}\n"
    "@media (max-width:600px){body{font-size:14px}main{padding:10px}th,td{padding:3px 5px}}\n"
    "@media print{body{font-size:10.5pt}main{max-width:none;padding:0}"
    ".scroll,.tall{overflow:visible;max-height:none}"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
    "h2,h3{break-after:avoid}tr{break-inside:avoid}a{color:inherit;text-decoration:none}}\n";

/* s[0..len) as HTML text; `quote_backslash`: a backslash is doubled, as a
 * key's bytes are quoted (html_bytes), or kept, in text (html_text). */
static void escape(FILE *out, const char *s, size_t len, int quote_backslash)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = shardx_utf8_shown_len(p + i, len - i);
        unsigned c = p[i];
        if (n == 1) {
            switch (c) {
            case '&': fputs("&amp;", out); break;
            case '<': fputs("&lt;", out); break;
            case '>': fputs("&gt;", out); break;
            case '"': fputs("&quot;", out); break;
            case '\'': fputs("&#39;", out); break;
            default:
                if (c == '\\' && quote_backslash)
                    fputs("\\\\", out);
                else
                    fputc((int)c, out);
            }
        } else if (n == 0) { /* a control byte, not UTF-8, or a character that lies */
            fprintf(out, "\\x%02x", c);
            n = 1;
        } else {
            fwrite(p + i, 1, n, out);
        }
        i += n;
    }
}

void html_bytes(FILE *out, const char *s, size_t len)
{
    escape(out, s, len, 1);
}

void html_text_len(FILE *out, const char *s, size_t len)
{
    escape(out, s, len, 0);
}

void html_text(FILE *out, const char *s)
{
    if (s)
        escape(out, s, strlen(s), 0);
}

void html_textf(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n >= 0)
        html_text_len(out, s, (size_t)n);
    free(s);
}

void html_number(FILE *out, double v)
{
    if (isnan(v)) {
        fputs("nan", out);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "inf" : "-inf", out);
        return;
    }
    char buf[40];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

void html_begin(FILE *out, const char *title, const char *tool)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"" CSP "\">\n"
          "<meta name=\"generator\" content=\"",
          out);
    html_text(out, tool);
    fputs("\">\n<title>", out);
    html_text(out, title);
    fputs("</title>\n<style>\n", out);
    fputs(style, out);
    fputs("</style>\n</head>\n<body>\n<main>\n<h1>", out);
    html_text(out, title);
    fputs("</h1>\n", out);
}

void html_end(FILE *out, const char *tool)
{
    fputs("<footer>Made by ", out);
    html_text(out, tool);
    fputs(", shardkit ", out);
    html_text(out, shard_version());
    fputs(". One self-contained file: no script, nothing fetched.</footer>\n"
          "</main>\n</body>\n</html>\n",
          out);
}

void html_section_begin(FILE *out, const char *id, const char *heading)
{
    fputs("<section id=\"", out);
    html_text(out, id);
    fputs("\">\n<h2>", out);
    html_text(out, heading);
    fputs("</h2>\n", out);
}

void html_section_end(FILE *out)
{
    fputs("</section>\n", out);
}

void html_table_begin(FILE *out, const char *id, const char *const *headers, size_t count)
{
    fputs("<div class=\"scroll\"><table", out);
    if (id) {
        fputs(" id=\"", out);
        html_text(out, id);
        fputc('"', out);
    }
    fputs(">\n<thead><tr>", out);
    for (size_t i = 0; i < count; i++) {
        int numeric = headers[i][0] == '#';
        fputs(numeric ? "<th class=\"num\">" : "<th>", out);
        html_text(out, headers[i] + numeric);
        fputs("</th>", out);
    }
    fputs("</tr></thead>\n<tbody>\n", out);
}

void html_table_end(FILE *out)
{
    fputs("</tbody></table></div>\n", out);
}

void html_row_begin(FILE *out, const char *css_class)
{
    if (css_class) {
        fputs("<tr class=\"", out);
        html_text(out, css_class);
        fputs("\">", out);
    } else {
        fputs("<tr>", out);
    }
}

void html_row_end(FILE *out)
{
    fputs("</tr>\n", out);
}

void html_cell(FILE *out, const char *text)
{
    fputs("<td>", out);
    html_text(out, text);
    fputs("</td>", out);
}

void html_cell_code(FILE *out, const char *text)
{
    fputs("<td class=\"code\">", out);
    html_text(out, text);
    fputs("</td>", out);
}

void html_cell_bytes(FILE *out, const char *s, size_t len, int code)
{
    fputs(code ? "<td class=\"code\">" : "<td>", out);
    html_bytes(out, s, len);
    fputs("</td>", out);
}

void html_cell_u64(FILE *out, uint64_t v)
{
    fprintf(out, "<td class=\"num\" data-value=\"%llu\">%llu</td>", (unsigned long long)v,
            (unsigned long long)v);
}

void html_cell_num(FILE *out, double v, const char *fmt)
{
    fputs("<td class=\"num\" data-value=\"", out);
    html_number(out, v);
    fputs("\">", out);
    if (isfinite(v))
        html_textf(out, fmt, v);
    else
        html_text(out, isnan(v) ? "-" : v > 0 ? "inf" : "-inf");
    fputs("</td>", out);
}

void html_cards_begin(FILE *out)
{
    fputs("<div class=\"cards\">\n", out);
}

void html_card(FILE *out, const char *id, const char *value, const char *what,
               const char *css_class)
{
    fputs("<div class=\"card", out);
    if (css_class) {
        fputc(' ', out);
        html_text(out, css_class);
    }
    fputs("\" data-card=\"", out);
    html_text(out, id);
    fputs("\"><span class=\"n\">", out);
    html_text(out, value);
    fputs("</span>", out);
    html_text(out, what);
    fputs("</div>\n", out);
}

void html_cards_end(FILE *out)
{
    fputs("</div>\n", out);
}
