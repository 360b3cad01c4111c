/* cli_json.h - what the tools' JSON writers share. */
#ifndef SHARDKIT_CLI_JSON_H
#define SHARDKIT_CLI_JSON_H

#include <stdio.h>

#include <jansson.h>

/* Write `o` to `out` as one document (jansson `flags`) and a newline, then
 * drop the reference to it.  A NULL `o` (a failed json_pack) writes null. */
void cli_json_print(json_t *o, FILE *out, size_t flags);

/* A number, or null for infinity and NaN (JSON has neither). */
json_t *cli_json_number_or_null(double v);

/* A histogram (histogram.h) as the HTML reports draw it:
 * {"scale", "edges", "counts", "count", "skipped", "min", "max"}. */
struct cli_histogram;
json_t *cli_json_histogram(const struct cli_histogram *h);

#endif
