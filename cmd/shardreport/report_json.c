/* report_json.c - the nightly index as one JSON object (see report.h). */
#include "report.h"

#include <math.h>

#include "cli_json.h"

/* A whole number as an integer (counts, exit codes), others as reals. */
static json_t *number(const struct run_number *n)
{
    if (!n->known)
        return json_null();
    if (n->value == floor(n->value) && fabs(n->value) < 9007199254740992.0) /* 2^53 */
        return json_integer((json_int_t)n->value);
    return json_real(n->value);
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *row_json(const struct run_row *row)
{
    json_t *o = json_object();
    cli_json_set_path(o, "run", row->run); /* a file name: or run_hex */
    json_object_set_new(o, "status", json_string(row->status));
    json_object_set_new(o, "published", json_boolean(row->published));
    json_object_set_new(o, "exit_code", number(&row->exit_code));
    json_object_set_new(o, "started", string_or_null(row->started));
    json_object_set_new(o, "finished", string_or_null(row->finished));
    json_object_set_new(o, "seconds", number(&row->seconds));
    json_object_set_new(o, "version", string_or_null(row->version));
    json_object_set_new(o, "samples", number(&row->samples));
    json_object_set_new(o, "rejected", number(&row->rejected));
    json_object_set_new(o, "ignored", number(&row->ignored));
    json_object_set_new(o, "shards", number(&row->shards));
    json_object_set_new(o, "bytes_out", number(&row->bytes_out));
    json_object_set_new(o, "verified",
                        row->verified.known ? json_boolean(row->verified.value) : json_null());
    json_object_set_new(o, "problem_count", number(&row->problems));
    json_object_set_new(o, "added", number(&row->added));
    json_object_set_new(o, "changed", number(&row->changed));
    json_object_set_new(o, "removed", number(&row->removed));
    json_object_set_new(o, "reused", number(&row->reused));
    json_object_set_new(o, "report", string_or_null(row->report));
    json_object_set_new(o, "log", string_or_null(row->log));
    json_object_set_new(o, "error", cli_json_text(row->error));
    return o;
}

void report_write_json(const struct report *r, FILE *out)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->runs->count; i++)
        json_array_append_new(rows, row_json(&r->runs->rows[i]));
    json_t *o = json_object();
    cli_json_set_path(o, "root", r->root); /* or root_hex */
    if (r->runs->current)
        cli_json_set_path(o, "current", r->runs->current); /* a link's target: or current_hex */
    else
        json_object_set_new(o, "current", json_null());
    json_object_set_new(o, "runs", rows);
    cli_json_print(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}
