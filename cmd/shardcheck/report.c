/* report.c - what shardcheck's report writers share (see report.h). */
#include "report.h"

uint64_t report_problem_total(const struct report *r)
{
    return r->verify->problem_count + r->verify->problems_not_kept;
}

int report_verified(const struct report *r)
{
    return !r->error && report_problem_total(r) == 0;
}

double report_per_second(double amount, double seconds)
{
    return seconds > 0 ? amount / seconds : 0;
}

int report_label_shown(const struct report *r, uint32_t i)
{
    const struct shard_label_tally *t = &r->verify->labels[i];
    return t->name || t->manifest || t->shards || t->source;
}

int report_label_differs(const struct report *r, uint32_t i)
{
    const struct shard_verify_report *v = r->verify;
    const struct shard_label_tally *t = &v->labels[i];
    return (v->labels_counted && t->shards != t->manifest) ||
           (v->labels_checked && t->source != t->manifest) ||
           (v->labels_counted && v->labels_checked && t->source != t->shards);
}
