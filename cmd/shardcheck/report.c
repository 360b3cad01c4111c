/* report.c - what shardcheck's report writers share (see report.h). */
#include "report.h"

uint64_t report_problem_total(const struct report *r)
{
    return r->verify->problem_count + r->verify->problems_not_kept;
}

double report_per_second(double amount, double seconds)
{
    return seconds > 0 ? amount / seconds : 0;
}
