/* cli_json.c - what the tools' JSON writers share (see cli_json.h). */
#include "cli_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "shardkit.h"
#include "shardx_json.h"
#include "shardx.h"

void cli_json_print(json_t *o, FILE *out, size_t flags)
{
    if (o)
        json_dumpf(o, out, flags);
    else
        fputs("null", out);
    fputc('\n', out);
    json_decref(o);
}

void cli_json_set_path(json_t *obj, const char *field, const char *path)
{
    if (path)
        shardx_json_set_bytes(obj, field, path, strlen(path));
}

json_t *cli_json_text(const char *s)
{
    if (!s)
        return json_null();
    json_t *text = json_string(s);
    if (text)
        return text;
    char *quoted = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&quoted, &size);
    if (!f)
        return json_null();
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        size_t n = shardx_utf8_len((const unsigned char *)s + i, len - i);
        unsigned char c = (unsigned char)s[i];
        if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7f)))
            fprintf(f, "\\x%02x", c);
        else
            fwrite(s + i, 1, n, f);
        i += n ? n : 1;
    }
    text = fclose(f) == 0 ? json_string(quoted) : NULL;
    free(quoted);
    return text ? text : json_null();
}

json_t *cli_json_number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *cli_json_histogram(const struct cli_histogram *h)
{
    json_t *edges = json_array(), *counts = json_array();
    for (size_t i = 0; h->bins && i <= h->bins; i++)
        json_array_append_new(edges, json_real(h->edges[i]));
    for (size_t i = 0; i < h->bins; i++)
        json_array_append_new(counts, json_integer((json_int_t)h->counts[i]));
    return json_pack("{s:s, s:o, s:o, s:I, s:I, s:f, s:f}", "scale", cli_scale_name(h->scale),
                     "edges", edges, "counts", counts, "count", (json_int_t)h->total, "skipped",
                     (json_int_t)h->skipped, "min", h->min, "max", h->max);
}
