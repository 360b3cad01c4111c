/* budget.h - a number of bytes that threads take and give back, waiting
 * while the others hold too much (private).
 *
 * What a pipeline's threads buffer at once (the entries an archive's
 * conversion holds in its slots, each up to --max-file-size) is held to a
 * budget instead of slots x the largest entry: a thread takes an entry's
 * bytes before reading it and gives them back once the entry is consumed.
 * An amount larger than the whole budget is taken when nothing else is
 * held, so that one large entry is always read, alone. */
#ifndef SHARDKIT_BUDGET_H
#define SHARDKIT_BUDGET_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

struct sk_budget {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    uint64_t limit;
    uint64_t used;
    uint64_t peak; /* the most ever held at once */
};

void sk_budget_init(struct sk_budget *b, uint64_t limit);
void sk_budget_destroy(struct sk_budget *b);
/* Take n bytes: at once when they fit beside what is held (or nothing is
 * held), else once enough is given back.  A wait looks at *cancel (NULL:
 * none) every 100 ms: 0, or SHARD_EINTR when it became non-zero. */
int sk_budget_take(struct sk_budget *b, uint64_t n, volatile sig_atomic_t *cancel);
void sk_budget_give(struct sk_budget *b, uint64_t n);

#endif
