/* parts.h - shardcheck in parts: one part's check (--part), and the results
 * of every part gathered for the combine (--combine). */
#ifndef SHARDCHECK_PARTS_H
#define SHARDCHECK_PARTS_H

#include "options.h"
#include "shardkit.h"

/* --part: check o->part of o->parts of o->dst and write its result to
 * --result; say what was checked (one line, or --json).  `dst` is DST as
 * shown.  CLI_EXIT_OK once the result is written, else CLI_EXIT_FAILED
 * with the message printed. */
int check_part(const struct options *o, const char *dst);

/* --combine: the results the operands name (a directory: every
 * shardcheck-part-*.jsonl in it) combined into *report.  0, or non-zero
 * with *err saying why they cannot be (the report is then empty). */
int combine_results(const struct options *o, struct shard_verify_report *report,
                    struct shard_err *err);

#endif
