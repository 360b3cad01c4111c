/* cli_json.c - what the tools' JSON writers share (see cli_json.h). */
#include "cli_json.h"

#include <math.h>

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
