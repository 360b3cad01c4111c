/* prefetch.c - getting a source's files ahead of the workers that convert
 * them: read into memory (an S3 prefix) or opened and advised into the page
 * cache (a directory; see source_internal.h).
 *
 * A ring of `ahead` slots: position p lives in slot p % ahead.  Fetcher
 * threads take positions in increasing order; position p is fetched only
 * once its slot is free, that is once position p - ahead was taken.  Every
 * position is taken exactly once, so the slots free up in order and a taker
 * waiting for a position never waits on itself: whatever it waits for is
 * either being fetched or queued behind positions that other takers hold. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/source_internal.h"

enum slot_state { SLOT_FREE = 0, SLOT_FETCHING, SLOT_READY };

struct pf_slot {
    enum slot_state state;
    uint64_t pos;
    struct shard_buf buf;   /* SK_PREFETCH_READ */
    int fd;                 /* SK_PREFETCH_ADVISE: the open file, or -1 */
    int rc;
    struct shard_err err;
};

struct sk_prefetch {
    const struct sk_source_root *root;
    const struct shard_keylist *keys;
    const uint64_t *order;
    uint64_t end;
    uint64_t max_bytes;
    uint32_t ahead;
    enum sk_prefetch_mode mode;
    sk_prefetch_skip *skip;
    void *skip_user;
    struct pf_slot *slots;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    uint64_t next_fetch;
    int stop;
    pthread_t *threads;
    int started;
};

/* Open a directory's file and ask the kernel to read all of it now, without
 * waiting: by the time a worker reads it, it is in the page cache.  The
 * open (and the metadata reads it needs on a cold disk) happens here too. */
static int advise(struct sk_prefetch *pf, uint64_t cand, int *fd, struct shard_err *err)
{
    const char *key = shard_keylist_get(pf->keys, cand, NULL);
    int rc = sk_source_file_open(pf->root->fd, key, fd, err);
    if (!rc)  /* advice only: a failure changes nothing but the speed */
        (void)posix_fadvise(*fd, 0, 0, POSIX_FADV_WILLNEED);
    return rc;
}

static void *fetcher_main(void *arg)
{
    struct sk_prefetch *pf = arg;
    pthread_mutex_lock(&pf->lock);
    for (;;) {
        struct pf_slot *s = NULL;
        while (!pf->stop && pf->next_fetch < pf->end &&
               (s = &pf->slots[pf->next_fetch % pf->ahead])->state != SLOT_FREE)
            pthread_cond_wait(&pf->changed, &pf->lock);
        if (pf->stop || pf->next_fetch >= pf->end)
            break;
        uint64_t pos = pf->next_fetch++;
        s->state = SLOT_FETCHING;
        s->pos = pos;
        struct shard_buf buf = s->buf;
        memset(&s->buf, 0, sizeof s->buf);
        pthread_mutex_unlock(&pf->lock);
        struct shard_err err;
        shard_err_clear(&err);
        int fd = -1, rc = SHARD_OK;
        uint64_t cand = pf->order[pos];
        buf.len = 0;
        if (pf->skip && pf->skip(pf->skip_user, cand))
            ;  /* never touched: ready, empty */
        else if (pf->mode == SK_PREFETCH_ADVISE)
            rc = advise(pf, cand, &fd, &err);
        else
            rc = sk_source_root_read(pf->root, shard_keylist_get(pf->keys, cand, NULL),
                                     pf->max_bytes, &buf, &err);
        pthread_mutex_lock(&pf->lock);
        s->fd = fd;
        s->buf = buf;
        s->rc = rc;
        s->err = err;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&pf->changed);
    }
    pthread_mutex_unlock(&pf->lock);
    return NULL;
}

int sk_prefetch_new(struct sk_prefetch **out, const struct sk_source_root *root,
                    const struct shard_keylist *keys, const uint64_t *order, uint64_t first,
                    uint64_t end, uint64_t max_bytes, int connections, uint32_t ahead,
                    enum sk_prefetch_mode mode, sk_prefetch_skip *skip, void *skip_user,
                    struct shard_err *err)
{
    *out = NULL;
    if (connections < 1 || ahead < 1 || (mode == SK_PREFETCH_ADVISE && root->fd < 0))
        return shard_err_set(err, SHARD_EINVAL, "bad prefetch options");
    struct sk_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pf->root = root;
    pf->keys = keys;
    pf->order = order;
    pf->next_fetch = first;
    pf->end = end;
    pf->max_bytes = max_bytes;
    pf->ahead = ahead;
    pf->mode = mode;
    pf->skip = skip;
    pf->skip_user = skip_user;
    pthread_mutex_init(&pf->lock, NULL);
    pthread_cond_init(&pf->changed, NULL);
    pf->slots = calloc(ahead, sizeof *pf->slots);
    for (uint32_t i = 0; pf->slots && i < ahead; i++)
        pf->slots[i].fd = -1;
    pf->threads = calloc((size_t)connections, sizeof *pf->threads);
    if (!pf->slots || !pf->threads) {
        sk_prefetch_free(pf);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (int i = 0; i < connections; i++) {
        if (pthread_create(&pf->threads[i], NULL, fetcher_main, pf) != 0)
            break;
        pf->started = i + 1;
    }
    if (!pf->started) {
        sk_prefetch_free(pf);
        return shard_err_set(err, SHARD_EIO, "cannot start the source's fetch threads");
    }
    *out = pf;
    return SHARD_OK;
}

int sk_prefetch_take(struct sk_prefetch *pf, uint64_t pos, struct shard_buf *buf, int *fd,
                     struct shard_err *err)
{
    *fd = -1;
    struct pf_slot *s = &pf->slots[pos % pf->ahead];
    pthread_mutex_lock(&pf->lock);
    while (!(s->state == SLOT_READY && s->pos == pos) && !pf->stop)
        pthread_cond_wait(&pf->changed, &pf->lock);
    int rc;
    if (s->state == SLOT_READY && s->pos == pos) {
        struct shard_buf mine = *buf;  /* exchanged: no copy, and the slot keeps a buffer */
        *buf = s->buf;
        s->buf = mine;
        *fd = s->fd;
        s->fd = -1;
        rc = s->rc;
        if (rc && err)
            *err = s->err;
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&pf->changed);
    } else {
        rc = shard_err_set(err, SHARD_EINTR, "stopped");
    }
    pthread_mutex_unlock(&pf->lock);
    return rc;
}

void sk_prefetch_free(struct sk_prefetch *pf)
{
    if (!pf)
        return;
    pthread_mutex_lock(&pf->lock);
    pf->stop = 1;
    pthread_cond_broadcast(&pf->changed);
    pthread_mutex_unlock(&pf->lock);
    for (int i = 0; i < pf->started; i++)
        pthread_join(pf->threads[i], NULL);
    for (uint32_t i = 0; pf->slots && i < pf->ahead; i++) {
        shard_buf_release(&pf->slots[i].buf);
        if (pf->slots[i].fd >= 0)  /* advised, never taken: the run stopped */
            close(pf->slots[i].fd);
    }
    free(pf->slots);
    free(pf->threads);
    pthread_cond_destroy(&pf->changed);
    pthread_mutex_destroy(&pf->lock);
    free(pf);
}
