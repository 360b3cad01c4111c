/* prefetch.c - getting a source's files ahead of the threads that convert
 * them: read into memory (an S3 prefix) or opened and advised into the page
 * cache (a directory; see source_internal.h).
 *
 * The positions [first, end) go through the library's ordered ring
 * (util/ring.h, groups of one position, taken by position): fetcher threads
 * claim them in increasing order, position p into cell (p - first) % ahead,
 * and p is fetched only once its cell is free, that is once p - ahead was
 * taken.  Every position is taken exactly once, so the cells free up and a
 * taker waiting for a position never waits on itself: whatever it waits for
 * is either being fetched or queued behind positions that other takers
 * hold. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "util/budget.h"
#include "util/cancel.h"
#include "util/ring.h"

/* What a fetcher leaves for the taker (its status and error: the ring's). */
struct pf_cell {
    struct shard_buf buf; /* SK_PREFETCH_READ */
    uint64_t held;        /* SK_PREFETCH_READ: the budget's bytes buf holds */
    int fd;               /* SK_PREFETCH_ADVISE: the open file, or -1 */
};

struct sk_prefetch {
    const struct sk_source_root *root;
    const struct shard_keylist *keys;
    const uint64_t *order;
    uint64_t first;
    uint64_t max_bytes;
    enum sk_prefetch_mode mode;
    sk_prefetch_skip *skip;
    void *skip_user;
    uint32_t ahead;
    struct sk_prefetch_budget budget; /* .budget NULL: none */
    volatile sig_atomic_t stopping;   /* set when freed: a wait for the budget ends */
    struct sk_ring *ring;             /* position first + i is the ring's i */
    struct pf_cell *cells;            /* ahead of them: position first + i in cells[slot of i] */
    pthread_t *threads;
    int started;
};

/* A fetcher's position, for the budget's question. */
struct first_ctx {
    const struct sk_prefetch_budget *b;
    uint64_t pos;
};

/* Whether the position a fetcher holds is the one every other waits for. */
static int first_of(void *arg)
{
    const struct first_ctx *ctx = arg;
    return ctx->b->first && ctx->b->first(ctx->b->ctx, ctx->pos);
}

/* Open a directory's file and ask the kernel to read all of it now, without
 * waiting: by the time a conversion thread reads it, it is in the page cache.  The
 * open (and the metadata reads it needs on a cold disk) happens here too. */
static int advise(struct sk_prefetch *pf, uint64_t cand, int *fd, struct shard_err *err)
{
    const char *key = shard_keylist_get(pf->keys, cand, NULL);
    int rc = sk_source_file_open(pf->root->fd, key, fd, err);
    if (!rc) /* advice only: a failure changes nothing but the speed */
        (void)posix_fadvise(*fd, 0, 0, POSIX_FADV_WILLNEED);
    return rc;
}

/* Room in the budget for candidate cand's listed size (position pos), or
 * SHARD_EINTR once the prefetcher is being freed. */
static int hold(struct sk_prefetch *pf, uint64_t cand, uint64_t pos, uint64_t *held)
{
    const struct sk_prefetch_budget *b = &pf->budget;
    if (!b->budget || !pf->root->sizes)
        return SHARD_OK;
    uint64_t size = pf->root->sizes[cand];
    if (size > pf->max_bytes) /* refused: the read stops at the limit */
        size = pf->max_bytes;
    struct first_ctx ctx = {b, pos};
    int rc = sk_budget_take(b->budget, size, &pf->stopping, first_of, &ctx);
    if (!rc)
        *held = size;
    return rc;
}

static void *fetcher_main(void *arg)
{
    struct sk_prefetch *pf = arg;
    uint64_t i;
    while (sk_ring_claim(pf->ring, -1, &i) == SK_RING_READY) {
        struct pf_cell *c = &pf->cells[sk_ring_slot(pf->ring, i)];
        struct shard_err *err = sk_ring_err(pf->ring, i);
        uint64_t cand = pf->order[pf->first + i];
        int rc = SHARD_OK;
        c->buf.len = 0;
        c->held = 0;
        if (pf->skip && pf->skip(pf->skip_user, cand))
            ; /* never touched: ready, empty */
        else if (pf->mode == SK_PREFETCH_ADVISE)
            rc = advise(pf, cand, &c->fd, err);
        else if ((rc = hold(pf, cand, pf->first + i, &c->held)))
            shard_err_set(err, rc, SK_CANCELLED_MESSAGE);
        else
            rc = sk_source_root_read(pf->root, shard_keylist_get(pf->keys, cand, NULL),
                                     pf->max_bytes, &c->buf, err);
        sk_ring_done(pf->ring, i, rc);
    }
    return NULL;
}

int sk_prefetch_new(struct sk_prefetch **out, const struct sk_source_root *root,
                    const struct shard_keylist *keys, const uint64_t *order, uint64_t first,
                    uint64_t end, uint64_t max_bytes, int connections, uint32_t ahead,
                    enum sk_prefetch_mode mode, sk_prefetch_skip *skip, void *skip_user,
                    const struct sk_prefetch_budget *budget, struct shard_err *err)
{
    *out = NULL;
    if (connections < 1 || ahead < 1 || end < first || (mode == SK_PREFETCH_ADVISE && root->fd < 0))
        return shard_err_set(err, SHARD_EINVAL, "bad prefetch options");
    struct sk_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pf->root = root;
    pf->keys = keys;
    pf->order = order;
    pf->first = first;
    pf->max_bytes = max_bytes;
    pf->mode = mode;
    pf->skip = skip;
    pf->skip_user = skip_user;
    pf->ahead = ahead;
    if (budget)
        pf->budget = *budget;
    pf->cells = calloc(ahead, sizeof *pf->cells);
    for (uint32_t i = 0; pf->cells && i < ahead; i++)
        pf->cells[i].fd = -1;
    pf->threads = calloc((size_t)connections, sizeof *pf->threads);
    int rc = !pf->cells || !pf->threads ? shard_err_set(err, SHARD_ENOMEM, "out of memory")
                                        : sk_ring_new(&pf->ring, end - first, ahead, 1, err);
    for (int i = 0; !rc && i < connections; i++) {
        if (pthread_create(&pf->threads[i], NULL, fetcher_main, pf) != 0)
            break;
        pf->started = i + 1;
    }
    if (!rc && !pf->started)
        rc = shard_err_set(err, SHARD_EIO, "cannot start the source's fetch threads");
    if (rc) {
        sk_prefetch_free(pf);
        return rc;
    }
    *out = pf;
    return SHARD_OK;
}

int sk_prefetch_take(struct sk_prefetch *pf, uint64_t pos, struct shard_buf *buf, int *fd,
                     uint64_t *held, struct shard_err *err)
{
    *fd = -1;
    uint64_t i = pos - pf->first;
    struct sk_ring_group g;
    int w = sk_ring_take(pf->ring, i, -1, &g);
    if (w == SK_RING_STOPPED)
        return shard_err_set(err, SHARD_EINTR, "stopped");
    if (w != SK_RING_READY) /* a caller's mistake: outside [first, end), or taken twice */
        return shard_err_set(err, SHARD_EINVAL, "position %llu cannot be taken from the read-ahead",
                             (unsigned long long)pos);
    struct pf_cell *c = &pf->cells[g.slot];
    struct shard_buf mine = *buf; /* exchanged: no copy, and the cell keeps a buffer */
    *buf = c->buf;
    c->buf = mine;
    *fd = c->fd;
    c->fd = -1;
    if (held)
        *held += c->held;
    else if (pf->budget.budget)
        sk_budget_give(pf->budget.budget, c->held);
    c->held = 0;
    int rc = sk_ring_rc(pf->ring, i);
    if (rc && err)
        *err = *sk_ring_err(pf->ring, i);
    sk_ring_release_group(pf->ring, i);
    return rc;
}

void sk_prefetch_free(struct sk_prefetch *pf)
{
    if (!pf)
        return;
    sk_flag_put(&pf->stopping, 1);
    if (pf->ring)
        sk_ring_stop(pf->ring);
    for (int i = 0; i < pf->started; i++)
        pthread_join(pf->threads[i], NULL);
    for (uint32_t i = 0; pf->cells && i < pf->ahead; i++) {
        shard_buf_release(&pf->cells[i].buf);
        if (pf->budget.budget) /* read, never taken: the run stopped */
            sk_budget_give(pf->budget.budget, pf->cells[i].held);
        if (pf->cells[i].fd >= 0) /* advised, never taken: the run stopped */
            close(pf->cells[i].fd);
    }
    sk_ring_free(pf->ring);
    free(pf->cells);
    free(pf->threads);
    free(pf);
}
