/* report.c - what shardreport's writers share (see report.h). */
#include "report.h"

#include <string.h>

int report_run_failed(const struct run_row *row)
{
    return !row->published || row->error || strcmp(row->status, "published") != 0;
}
