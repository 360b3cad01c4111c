/* budget.c - bytes taken and given back by threads (see budget.h). */
#include "util/budget.h"

#include <errno.h>
#include <time.h>

#include "shardkit/error.h"
#include "util/cancel.h"

#define WAIT_SLICE_NS 100000000L /* a wait looks at the cancel flag this often */

void sk_budget_init(struct sk_budget *b, uint64_t limit)
{
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->freed, NULL);
    b->limit = limit;
    b->used = 0;
    b->peak = 0;
}

void sk_budget_destroy(struct sk_budget *b)
{
    pthread_cond_destroy(&b->freed);
    pthread_mutex_destroy(&b->lock);
}

int sk_budget_take(struct sk_budget *b, uint64_t n, volatile sig_atomic_t *cancel)
{
    int rc = SHARD_OK;
    pthread_mutex_lock(&b->lock);
    while (b->used && n > b->limit - (b->used < b->limit ? b->used : b->limit)) {
        if (sk_flag_get(cancel)) {
            rc = SHARD_EINTR;
            break;
        }
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += WAIT_SLICE_NS;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->freed, &b->lock, &t);
    }
    if (!rc) {
        b->used += n;
        if (b->used > b->peak)
            b->peak = b->used;
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

void sk_budget_give(struct sk_budget *b, uint64_t n)
{
    pthread_mutex_lock(&b->lock);
    b->used -= n < b->used ? n : b->used;
    pthread_cond_broadcast(&b->freed);
    pthread_mutex_unlock(&b->lock);
}
