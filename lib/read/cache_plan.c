/* cache_plan.c - the epoch plan's next shards opened ahead (see cache_plan.h).
 *
 * Locking: cp->lock guards the plan and the cursors; a thread takes it
 * only to pick the next shard and opens it without it.  Lock order:
 * cp->lock, then a shard's (sk_dataset_shard_file), then the cache's. */
#include "read/cache_plan.h"

#include <pthread.h>
#include <stdlib.h>

#include "read/cache.h"
#include "read/dataset_internal.h"

/* Shards opened at once ahead of the readers, at most: an open waits a
 * round trip or two (the suffix, the first window), and a plan that
 * begins with samples of every shard (a shuffle buffer as large as the
 * dataset) needs them all before its first batch. */
#define PLAN_THREADS 8

struct plan_last {
    uint64_t last; /* the plan's last position of shard s */
    uint32_t s;
};

struct sk_cache_plan {
    struct shard_dataset *ds;
    struct sk_cache *c;
    uint32_t ahead;
    uint32_t shard_count;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t threads[PLAN_THREADS];
    int threads_live, stop;
    /* the plan: shards by first position (order, first), by last (by_last) */
    const uint64_t *list;
    uint64_t plan; /* plans begun; seen[s] == plan: s is in this one */
    uint64_t *seen;
    uint32_t *order;
    uint64_t *first; /* first[i]: order[i]'s first position */
    uint64_t *last;  /* last[s]: shard s's last position */
    struct plan_last *by_last;
    uint32_t n;       /* shards in the plan */
    uint32_t reached; /* order[0..reached) have a position the readers reached */
    uint32_t want;    /* order[0..want) are to be opened */
    uint32_t opened;  /* order[0..opened) were taken by a thread */
    uint32_t done;    /* by_last[0..done) were told to the cache */
};

int sk_cache_plan_new(struct sk_cache_plan **out, struct shard_dataset *ds, struct sk_cache *c,
                      uint32_t ahead, struct shard_err *err)
{
    *out = NULL;
    uint32_t count = shard_dataset_manifest(ds)->shard_count;
    size_t n = count ? count : 1;
    struct sk_cache_plan *cp = calloc(1, sizeof *cp);
    if (cp) {
        pthread_mutex_init(&cp->lock, NULL);
        pthread_cond_init(&cp->wake, NULL);
        cp->seen = calloc(n, sizeof *cp->seen);
        cp->order = malloc(n * sizeof *cp->order);
        cp->first = malloc(n * sizeof *cp->first);
        cp->last = malloc(n * sizeof *cp->last);
        cp->by_last = malloc(n * sizeof *cp->by_last);
    }
    if (!cp || !cp->seen || !cp->order || !cp->first || !cp->last || !cp->by_last) {
        sk_cache_plan_free(cp);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    cp->ds = ds;
    cp->c = c;
    cp->ahead = ahead ? ahead : 1;
    cp->shard_count = count;
    *out = cp;
    return SHARD_OK;
}

void sk_cache_plan_free(struct sk_cache_plan *cp)
{
    if (!cp)
        return;
    pthread_mutex_lock(&cp->lock);
    cp->stop = 1;
    pthread_cond_broadcast(&cp->wake);
    pthread_mutex_unlock(&cp->lock);
    for (int i = 0; i < cp->threads_live; i++)
        pthread_join(cp->threads[i], NULL);
    pthread_cond_destroy(&cp->wake);
    pthread_mutex_destroy(&cp->lock);
    free(cp->seen);
    free(cp->order);
    free(cp->first);
    free(cp->last);
    free(cp->by_last);
    free(cp);
}

static void *plan_main(void *arg)
{
    struct sk_cache_plan *cp = arg;
    pthread_mutex_lock(&cp->lock);
    for (;;) {
        while (!cp->stop && cp->opened >= cp->want)
            pthread_cond_wait(&cp->wake, &cp->lock);
        if (cp->stop)
            break;
        uint32_t s = cp->order[cp->opened++];
        pthread_mutex_unlock(&cp->lock);
        /* A shard opened in an earlier epoch is left to its first read, which
         * finds its file again in the cache (or fetches it) as it reads the
         * footer the epoch before let go: opened here, ahead of the readers,
         * its download would take room before any shard of this epoch is
         * done with and could make way for it. */
        const struct shard_footer *footer;
        struct shard_err err;
        if (!sk_dataset_shard_file(cp->ds, s) &&
            !sk_dataset_footer_pin(cp->ds, s, &footer, &err)) /* else the reader reports it */
            sk_dataset_footer_unpin(cp->ds, s);
        pthread_mutex_lock(&cp->lock);
    }
    pthread_mutex_unlock(&cp->lock);
    return NULL;
}

static int by_last_cmp(const void *a, const void *b)
{
    const struct plan_last *x = a, *y = b;
    return x->last < y->last ? -1 : x->last > y->last;
}

/* The epoch is done with shard s (under cp->lock): its footer goes, and the
 * cache is told. */
static void done_with(struct sk_cache_plan *cp, uint32_t s)
{
    sk_dataset_let_go(cp->ds, s);
    if (!cp->c)
        return;
    const struct shard_manifest_shard *ms = &shard_dataset_manifest(cp->ds)->shards[s];
    sk_cache_done(cp->c, ms->xxh3, ms->bytes, sk_dataset_shard_file(cp->ds, s));
}

/* A new plan, list[0..count) (under cp->lock). */
static void begin(struct sk_cache_plan *cp, const uint64_t *list, uint64_t count)
{
    /* every shard of the last plan let go (again: one whose read was still
     * under way when it was told could not be), so that each is found again
     * - a hit or a miss - once per epoch */
    for (uint32_t i = 0; i < cp->n; i++)
        done_with(cp, cp->by_last[i].s);
    cp->list = list;
    cp->plan++;
    cp->n = cp->reached = cp->opened = cp->done = 0;
    for (uint64_t q = 0; q < count; q++) {
        uint32_t s;
        uint64_t r;
        struct shard_err err;
        if (shard_dataset_locate(cp->ds, list[q], &s, &r, &err))
            continue; /* the read says why */
        if (cp->seen[s] != cp->plan) {
            cp->seen[s] = cp->plan;
            cp->first[cp->n] = q;
            cp->order[cp->n++] = s;
        }
        cp->last[s] = q;
    }
    for (uint32_t i = 0; i < cp->n; i++)
        cp->by_last[i] = (struct plan_last){cp->last[cp->order[i]], cp->order[i]};
    qsort(cp->by_last, cp->n, sizeof *cp->by_last, by_last_cmp);
    cp->want = cp->n < cp->ahead ? cp->n : cp->ahead;
    if (!cp->c) /* no cache: nothing to open ahead */
        cp->want = 0;
    else
        sk_cache_epoch(cp->c);
    for (uint32_t s = 0; s < cp->shard_count; s++)
        if (cp->seen[s] != cp->plan)
            done_with(cp, s); /* not in this plan at all */
    uint32_t want_threads = !cp->c ? 0 : cp->ahead < PLAN_THREADS ? cp->ahead : PLAN_THREADS;
    while (cp->n && (uint32_t)cp->threads_live < want_threads &&
           !pthread_create(&cp->threads[cp->threads_live], NULL, plan_main, cp))
        cp->threads_live++;
    pthread_cond_broadcast(&cp->wake);
}

void sk_cache_plan_at(struct sk_cache_plan *cp, const uint64_t *list, uint64_t count, uint64_t p,
                      uint64_t margin)
{
    if (!cp)
        return;
    pthread_mutex_lock(&cp->lock);
    if (p == 0)
        begin(cp, list, count);
    if (list != cp->list) { /* another list than the plan's: no plan of it */
        pthread_mutex_unlock(&cp->lock);
        return;
    }
    while (cp->reached < cp->n && cp->first[cp->reached] <= p)
        cp->reached++;
    uint32_t want = cp->n - cp->reached < cp->ahead ? cp->n : cp->reached + cp->ahead;
    if (cp->c && want > cp->want) {
        cp->want = want;
        pthread_cond_broadcast(&cp->wake);
    }
    while (cp->done < cp->n && cp->by_last[cp->done].last + margin < p)
        done_with(cp, cp->by_last[cp->done++].s);
    pthread_mutex_unlock(&cp->lock);
}
