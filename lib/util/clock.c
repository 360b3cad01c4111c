/* clock.c - the library's clocks (see clock.h). */
#include "util/clock.h"

#include <errno.h>
#include <time.h>

static uint64_t ns_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * SK_NS_PER_SECOND + (uint64_t)ts.tv_nsec;
}

uint64_t sk_now_ns(void)
{
    return ns_of(CLOCK_MONOTONIC);
}

double sk_now_seconds(void)
{
    return (double)sk_now_ns() / SK_NS_PER_SECOND;
}

double sk_cpu_seconds(void)
{
    return (double)ns_of(CLOCK_PROCESS_CPUTIME_ID) / SK_NS_PER_SECOND;
}

void sk_sleep_seconds(double s)
{
    if (!(s > 0))
        return;
    time_t whole = (time_t)s;
    struct timespec ts = {whole, (long)((s - (double)whole) * SK_NS_PER_SECOND)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
