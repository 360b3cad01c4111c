/* files_loader.c - the naive small-file loader the shards are compared with
 * (see bench_internal.h).
 *
 * What a DataLoader over a plain ImageFolder does, in C and on threads, so
 * that the comparison measures the data layout and not the language: per
 * sample one open/read/close (or one GET), a full decode (no DCT-domain
 * scaling: a plain loader decodes the whole image) and a resize to the
 * training geometry.  The hand-off to the consumer is shard_iter's
 * (util/ring.h, groups of one sample): a ring of queue_depth items,
 * workers claiming positions in order but never more than depth ahead of
 * the consumer, samples handed out in list order by exchanging buffers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "read/dataset_internal.h"
#include "read/fetch_http.h"
#include "util/ring.h"
#include "util/clock.h"
#include "util/quote.h"
#include "shardkit/format.h"
#include "shardkit/image.h"
#include "shardkit/source.h"

#define SLOTS_PER_THREAD 4
#define MAX_THREADS 1024
#define MAX_FILE_BYTES (1ull << 30)

struct files_loader {
    int root_fd;
    struct fetch *http;
    const struct shard_keylist *keys;
    const uint64_t *order;
    uint64_t count;
    struct files_loader_options o;
    struct bench_probe *probe;
    uint32_t depth;
    struct sk_ring *queue;
    struct shard_item *items;   /* the ring: items[sk_ring_slot(queue, p)] */
    pthread_t *threads;
    int started;
};

/* A worker's reusable buffers. */
struct files_scratch {
    struct shard_buf bytes;
    struct shard_image decoded;
    struct shard_image tmp;
};

static void scratch_release(struct files_scratch *s)
{
    shard_buf_release(&s->bytes);
    shard_image_release(&s->decoded);
    shard_image_release(&s->tmp);
}

/* Read, decode and resize keys[k] into *item.  Errors name the key. */
static int load_one(struct files_loader *l, uint64_t k, struct files_scratch *s,
                    struct shard_item *item, struct shard_err *err)
{
    size_t key_len;
    const char *key = shard_keylist_get(l->keys, (size_t)k, &key_len);
    uint64_t start = sk_now_ns(), t = start;
    const char *what = "read";
    int rc = l->http ? sk_fetch_http_get(l->http, key, MAX_FILE_BYTES, &s->bytes, err)
                     : shard_read_source_file(l->root_fd, key, MAX_FILE_BYTES, &s->bytes, err);
    sk_read_count(&l->probe->read, SK_READ_BYTES_REQUESTED, s->bytes.len);
    t = sk_bench_probe_stage(l->probe, SHARD_STAGE_READ, t);
    if (!rc) {
        what = "decode";
        struct shard_decode_options dopt;
        shard_decode_options_init(&dopt);  /* target 0: full size, as a plain loader */
        rc = shard_decode(s->bytes.data, s->bytes.len, &dopt, &s->decoded, err);
        t = sk_bench_probe_stage(l->probe, SHARD_STAGE_DECODE, t);
    }
    if (!rc) {
        what = "resize";
        struct shard_geometry g;
        rc = shard_geometry_compute(s->decoded.width, s->decoded.height, l->o.size, l->o.fit,
                                    l->o.upscale, &g)
                 ? shard_err_set(err, SHARD_EINVAL, "empty image")
                 : shard_transform(&s->decoded, &g, &s->tmp, &item->pixels, err);
        sk_bench_probe_stage(l->probe, SHARD_STAGE_RESIZE, t);
    }
    if (!rc)
        rc = shard_buf_reserve(&item->key, key_len + 1, err);
    if (rc) {
        char quoted[SHARD_QUOTE_SIZE];
        sk_quote_bytes(key, key_len, quoted, sizeof quoted);
        shard_err_prefix(err, rc, "cannot %s '%s'", what, quoted);
        item->pixels.width = item->pixels.height = 0;
        item->key.len = 0;
        return rc;
    }
    memcpy(item->key.data, key, key_len + 1);
    item->key.len = key_len;
    item->index = k;
    item->shard = 0;
    item->record = 0;
    item->label = SHARD_NO_LABEL;
    item->width = item->pixels.width;
    item->height = item->pixels.height;
    item->channels = 3;
    item->codec = SHARD_CODEC_RAW;
    item->stored.len = 0;
    sk_bench_probe_sample_done(l->probe, start, sk_now_ns());
    return SHARD_OK;
}

static void *worker(void *arg)
{
    struct files_loader *l = arg;
    struct files_scratch s = {0};
    shard_trace_thread_name(l->probe->trace, "files loader thread");
    uint64_t p;
    while (sk_ring_claim(l->queue, -1, &p) == SK_RING_READY) {
        struct shard_item *item = &l->items[sk_ring_slot(l->queue, p)];
        int rc = load_one(l, l->order[p], &s, item, sk_ring_err(l->queue, p));
        sk_ring_done(l->queue, p, rc);
    }
    scratch_release(&s);
    return NULL;
}

void sk_files_loader_free(struct files_loader *l)
{
    if (!l)
        return;
    if (l->queue)
        sk_ring_stop(l->queue);
    for (int i = 0; i < l->started; i++)
        pthread_join(l->threads[i], NULL);
    for (uint32_t i = 0; l->items && i < l->depth; i++)
        shard_item_release(&l->items[i]);
    sk_ring_free(l->queue);
    free(l->items);
    free(l->threads);
    free(l);
}

int sk_files_loader_new(struct files_loader **out, int root_fd, struct fetch *http,
                     const struct shard_keylist *keys, const uint64_t *order, uint64_t count,
                     const struct files_loader_options *o, struct bench_probe *probe,
                     struct shard_err *err)
{
    *out = NULL;
    if (o->threads < 1 || o->threads > MAX_THREADS)
        return shard_err_set(err, SHARD_EINVAL, "thread count %d is outside 1..%d", o->threads,
                             MAX_THREADS);
    for (uint64_t i = 0; i < count; i++)
        if (order[i] >= keys->count)
            return shard_err_set(err, SHARD_EINVAL, "entry %llu names file %llu of %zu",
                                 (unsigned long long)i, (unsigned long long)order[i],
                                 keys->count);
    struct files_loader *l = calloc(1, sizeof *l);
    if (!l)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    l->root_fd = root_fd;
    l->http = http;
    l->keys = keys;
    l->order = order;
    l->count = count;
    l->o = *o;
    l->probe = probe;
    l->depth = o->queue_depth ? o->queue_depth : (uint32_t)o->threads * SLOTS_PER_THREAD;
    l->items = calloc(l->depth, sizeof *l->items);
    l->threads = calloc((size_t)o->threads, sizeof *l->threads);
    int rc = !l->items || !l->threads ? shard_err_set(err, SHARD_ENOMEM, "out of memory")
                                      : sk_ring_new(&l->queue, count, l->depth, 1, err);
    if (rc) {
        sk_files_loader_free(l);
        return rc;
    }
    for (int i = 0; i < o->threads; i++) {
        if (pthread_create(&l->threads[i], NULL, worker, l) != 0) {
            sk_files_loader_free(l);
            return shard_err_set(err, SHARD_EIO, "cannot start %d loader threads", o->threads);
        }
        l->started = i + 1;
    }
    *out = l;
    return SHARD_OK;
}

int sk_files_loader_next(struct files_loader *l, struct shard_item *item, struct shard_err *err)
{
    return sk_item_ring_take(l->queue, l->items, item, err);
}
