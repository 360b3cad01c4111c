/* cli_json.h - what the tools' JSON writers share. */
#ifndef SHARDKIT_CLI_JSON_H
#define SHARDKIT_CLI_JSON_H

#include <stdio.h>

#include <jansson.h>

/* Write `o` to `out` as one document (jansson `flags`) and a newline, then
 * drop the reference to it.  A NULL `o` (a failed json_pack) writes null. */
void cli_json_print(json_t *o, FILE *out, size_t flags);

/* obj[field] = path when it is valid UTF-8, else obj[field + "_hex"] = its
 * bytes in hex ("dataset_hex"): a path goes out as index.jsonl writes a key
 * (shardx_json_set_bytes), never dropped.  NULL sets nothing. */
void cli_json_set_path(json_t *obj, const char *field, const char *path);

/* A JSON string of text that may hold bytes JSON cannot (a library message
 * naming a path that is not UTF-8): valid UTF-8 is kept, and control bytes
 * and bytes that are not valid UTF-8 become \xNN, as html_text shows them.
 * NULL (and out of memory) gives null. */
json_t *cli_json_text(const char *s);

/* A number, or null for infinity and NaN (JSON has neither). */
json_t *cli_json_number_or_null(double v);

/* A histogram (histogram.h) as the HTML reports draw it:
 * {"scale", "edges", "counts", "count", "skipped", "min", "max"}. */
struct cli_histogram;
json_t *cli_json_histogram(const struct cli_histogram *h);

#endif
