/* clock.h - the library's clocks (private).
 *
 * Every duration the library measures (conversion and verification rates,
 * the reader's stage times, the spans an observer receives) is taken on one
 * monotonic clock, CLOCK_MONOTONIC: it never jumps with the wall clock, and
 * times taken on different threads compare.  The spans of struct
 * shard_read_observer (shardkit/dataset.h) are in its nanoseconds. */
#ifndef SHARDKIT_CLOCK_H
#define SHARDKIT_CLOCK_H

#include <stdint.h>

#define SK_NS_PER_SECOND 1000000000u

/* Nanoseconds on the monotonic clock (from an arbitrary origin). */
uint64_t sk_now_ns(void);

/* The same clock in seconds. */
double sk_now_seconds(void);

/* Sleep for s seconds (nothing when s is not > 0), resuming after a
 * signal: the whole time is slept. */
void sk_sleep_seconds(double s);

/* CPU time used by the whole process (all threads, user + system), in
 * seconds. */
double sk_cpu_seconds(void);

#endif
