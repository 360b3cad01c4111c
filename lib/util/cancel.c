/* cancel.c - a thread's cancellation (see util/cancel.h). */
#include "util/cancel.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "util/clock.h"

static _Thread_local const struct sk_cancel *current;
static _Thread_local uint64_t polled_ns; /* when current->poll was last called */
static _Thread_local int poll_stopped;   /* current->poll said stop: it stays said */

const struct sk_cancel *sk_cancel_set(const struct sk_cancel *c)
{
    const struct sk_cancel *was = current;
    current = c;
    polled_ns = 0;
    poll_stopped = 0;
    return was;
}

int sk_cancellable(void)
{
    return current != NULL;
}

static int flag_set(const struct sk_cancel *c)
{
    return sk_flag_get(c->flag);
}

/* c has a poll, and it was not called in the last SK_CANCEL_POLL_MS. */
static int poll_due(const struct sk_cancel *c)
{
    return c->poll &&
           (!polled_ns || sk_now_ns() - polled_ns >= (uint64_t)SK_CANCEL_POLL_MS * 1000000u);
}

int sk_cancelled(void)
{
    const struct sk_cancel *c = current;
    if (!c)
        return 0;
    if (flag_set(c) || poll_stopped)
        return 1;
    if (!poll_due(c))
        return 0;
    polled_ns = sk_now_ns();
    poll_stopped = c->poll(c->user) != 0;
    return poll_stopped;
}

/* The realtime clock SK_CANCEL_POLL_MS from now (what timed waits take). */
static struct timespec poll_deadline(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (long)SK_CANCEL_POLL_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

int sk_cancel_lock(pthread_mutex_t *m)
{
    if (!current) {
        pthread_mutex_lock(m);
        return SHARD_OK;
    }
    for (;;) {
        struct timespec until = poll_deadline();
        int rc = pthread_mutex_timedlock(m, &until);
        if (!rc)
            return SHARD_OK;
        if (rc != ETIMEDOUT) { /* cannot happen to a valid mutex: wait as before */
            pthread_mutex_lock(m);
            return SHARD_OK;
        }
        if (sk_cancelled())
            return SHARD_EINTR;
    }
}

int sk_cancel_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
    if (!current) {
        pthread_cond_wait(cv, m);
        return 0;
    }
    if (sk_cancelled())
        return 1;
    struct timespec until = poll_deadline();
    (void)pthread_cond_timedwait(cv, m, &until);
    return sk_cancelled();
}
