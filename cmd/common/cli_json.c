/* cli_json.c - what the tools' JSON writers share (see cli_json.h). */
#include "cli_json.h"

#include <math.h>

#include "histogram.h"

void cli_json_print(json_t *o, FILE *out, size_t flags)
{
    if (o)
        json_dumpf(o, out, flags);
    else
        fputs("null", out);
    fputc('\n', out);
    json_decref(o);
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
                     "edges", edges, "counts", counts, "count", (json_int_t)h->total,
                     "skipped", (json_int_t)h->skipped, "min", h->min, "max", h->max);
}
