/* report_text.c - the nightly index as a table on stdout (see report.h). */
#include "report.h"

/* A number of a record, or "-". */
static void number(FILE *out, int width, const struct run_number *n)
{
    if (n->known)
        fprintf(out, " %*.0f", width, n->value);
    else
        fprintf(out, " %*s", width, "-");
}

void report_write_text(const struct report *r, FILE *out)
{
    const struct runs *runs = r->runs;
    fprintf(out, "shardreport: %zu run%s in '%s'%s%s\n", runs->count, runs->count == 1 ? "" : "s",
            r->root, runs->current ? "; current -> " : "", runs->current ? runs->current : "");
    if (!runs->count)
        return;
    fprintf(out, "  %-20s %-16s %8s %8s %8s %8s\n", "run", "status", "samples", "rejected",
            "seconds", "reused");
    for (size_t i = runs->count; i-- > 0;) {
        const struct run_row *row = &runs->rows[i];
        fprintf(out, "  %-20s %-16s", row->run, row->status);
        number(out, 8, &row->samples);
        number(out, 8, &row->rejected);
        number(out, 8, &row->seconds);
        number(out, 8, &row->reused);
        if (row->error)
            fprintf(out, "  %s", row->error);
        fputc('\n', out);
    }
}
