/* cancel.h - a thread's cancellation (private).
 *
 * The read path waits: for an HTTP transfer or its back-off, for a window
 * another thread fetches, for a shard another thread opens, for a cache lock
 * or another process's download.  A thread that set a cancellation (the
 * batch loader's threads, and the thread of a loader's next() that fills a
 * batch itself) has every such wait look at it at least every
 * SK_CANCEL_POLL_MS and end with SHARD_EINTR once it says stop: stopping a
 * loader never waits for a server that stalls.  A thread without one waits
 * as before (its waits end with the dataset, or with their time-outs).
 *
 * The cancellation is the thread's, like errno: the layers between the
 * loader and a wait (the dataset, the shard reader, the fetch backends) do
 * not pass it along. */
#ifndef SHARDKIT_CANCEL_H
#define SHARDKIT_CANCEL_H

#include <pthread.h>
#include <signal.h>

#include "shardkit/error.h"

/* The longest a wait goes without looking at the cancellation, in ms. */
#define SK_CANCEL_POLL_MS 50

struct sk_cancel {
    volatile sig_atomic_t *flag; /* non-zero: stop (set from any thread or a signal handler) */
    /* or NULL; called on the waiting thread at most once per
     * SK_CANCEL_POLL_MS, perhaps with a lock of the library held (so it
     * must not call the library): non-zero: stop */
    int (*poll)(void *user);
    void *user;
};

/* Make c (NULL: none) the calling thread's cancellation; it must outlive
 * its use.  Returns the one it replaces. */
const struct sk_cancel *sk_cancel_set(const struct sk_cancel *c);

/* 1 when the calling thread's cancellation says stop, else 0.  Once its
 * poll has said stop, it says stop until sk_cancel_set is called again. */
int sk_cancelled(void);

/* 1 when the calling thread has a cancellation: its waits must poll. */
int sk_cancellable(void);

/* pthread_mutex_lock(m), looking at the calling thread's cancellation while
 * another thread holds it: 0 (locked), or SHARD_EINTR (not locked). */
int sk_cancel_lock(pthread_mutex_t *m);

/* pthread_cond_wait(cv, m), for at most SK_CANCEL_POLL_MS when the
 * calling thread has a cancellation; returns (m held) 1 when the
 * cancellation says stop, else 0: the caller looks at what it waits for
 * again, and waits again. */
int sk_cancel_wait(pthread_cond_t *cv, pthread_mutex_t *m);

/* A stop flag (a volatile sig_atomic_t a signal handler or another thread
 * sets) read and set as atomics, relaxed: a flag with no data behind it, but
 * one that threads share, so as the C11 model (and ThreadSanitizer) allow. */
static inline int sk_flag_get(const volatile sig_atomic_t *f)
{
    return f && __atomic_load_n(f, __ATOMIC_RELAXED);
}
static inline void sk_flag_put(volatile sig_atomic_t *f, sig_atomic_t v)
{
    __atomic_store_n(f, v, __ATOMIC_RELAXED);
}

/* The message of a wait ended by the cancellation. */
#define SK_CANCELLED_MESSAGE "interrupted"

#endif
