/* report.c - what shardbench's report writers share (see report.h). */
#include "report.h"

const struct shard_bench_phase *report_headline(const struct shard_bench_result *r)
{
    return r->steady.epochs ? &r->steady : &r->first;
}

double report_ratio(const struct report *r)
{
    double files = report_headline(r->files)->samples_per_second;
    return files > 0 ? report_headline(r->shards)->samples_per_second / files : 0;
}

const char *report_ratio_basis(const struct report *r)
{
    return r->files->steady.epochs && r->shards->steady.epochs ? "steady epochs"
                                                               : "first epoch";
}

const struct shard_bench_result *report_single(const struct report *r, const char **location)
{
    *location = r->command == CMD_SHARDS ? r->dst : r->src;
    return r->command == CMD_SHARDS ? r->shards : r->files;
}

uint64_t report_errors(const struct shard_bench_result *r)
{
    return r->first.errors + r->steady.errors;
}
