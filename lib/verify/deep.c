/* deep.c - --deep: read every record of the window through the dataset
 * reader (frame xxh3, zstd checksum, key and label against the footer),
 * decode its payload (dimensions), and check codec and size against the
 * config and the index.  Records are spread over threads in small runs, so
 * reads stay mostly sequential within a shard. */
#include <string.h>

#include "read/dataset_internal.h"
#include "shardx/shardx.h"
#include "verify/verify_internal.h"

/* Consecutive records one thread takes at a time. */
#define DEEP_CHUNK 16

/* Can (w, h) be the output of the config's geometry for some source? */
static int fits_config(const struct shard_config *c, uint32_t w, uint32_t h)
{
    uint32_t shorter = w < h ? w : h, longer = w < h ? h : w;
    switch (c->fit) {
    case SHARD_FIT_SHORT: return c->upscale ? shorter == c->size : shorter <= c->size;
    case SHARD_FIT_LONG: return c->upscale ? longer == c->size : longer <= c->size;
    case SHARD_FIT_CROP: return w == h && (c->upscale ? w == c->size : w <= c->size);
    }
    return 0;
}

static void check_item(struct verify_run *v, uint64_t g, const struct shard_item *it)
{
    const struct shard_config *c = &v->m->config;
    const char *file = v->m->shards[it->shard].file;
    char q[SHARDX_QUOTE_SIZE];
    shardx_quote((const char *)it->key.data, it->key.len, q, sizeof q);
#define RECORD_PROBLEM(...)                                                                   \
    sk_verify_problem(v, SHARD_CHECK_RECORD, SHARD_EMISMATCH, it->shard, (int64_t)it->record, \
                      (const char *)it->key.data, it->key.len, __VA_ARGS__)
    if (it->codec != c->codec)
        RECORD_PROBLEM("%s record %llu (key '%s'): codec %s, the config says %s", file,
                       (unsigned long long)it->record, q, shard_codec_name(it->codec),
                       shard_codec_name(c->codec));
    uint64_t slot = sk_verify_slot(v, g);
    if (v->index_hits[slot] &&
        (it->width != v->index_width[slot] || it->height != v->index_height[slot]))
        RECORD_PROBLEM("%s record %llu (key '%s'): %ux%u, %s says %ux%u", file,
                       (unsigned long long)it->record, q, it->width, it->height,
                       sk_verify_index_name(v, it->shard), v->index_width[slot],
                       v->index_height[slot]);
    if (!fits_config(c, it->width, it->height))
        RECORD_PROBLEM("%s record %llu (key '%s'): %ux%u is not an output of --size %u --fit "
                       "%s%s",
                       file, (unsigned long long)it->record, q, it->width, it->height, c->size,
                       shard_fit_name(c->fit), c->upscale ? "" : " --no-upscale");
#undef RECORD_PROBLEM
}

int sk_verify_deep(struct verify_run *v, struct shard_err *err)
{
    uint64_t first = v->window_first, n = v->window_samples, bytes = 0, records = 0;
    double busy = 0, t0 = sk_now_seconds();
    int failed = 0;
    uint64_t unread = 0; /* records that could not be read: counts would only repeat them */
#pragma omp parallel num_threads(v->threads) reduction(+ : bytes, records, busy)
    {
        struct shard_item item;
        memset(&item, 0, sizeof item);
#pragma omp for schedule(dynamic, DEEP_CHUNK)
        for (uint64_t i = 0; i < n; i++) {
            uint64_t g = first + i;
            uint32_t s;
            uint64_t r;
            shard_dataset_locate(v->ds, g, &s, &r, NULL);
            if (!v->footers[s] || sk_dataset_shard_check_name(v->ds, s, NULL)) {
#pragma omp atomic
                unread++;
                continue; /* reported by the shard check */
            }
            double t = sk_now_seconds();
            struct shard_err e;
            shard_err_clear(&e);
            int rc = shard_dataset_read(v->ds, g, SHARD_READ_PIXELS | SHARD_READ_VERIFY, &item, &e);
            busy += sk_now_seconds() - t;
            records++;
            bytes += v->footers[s]->rows[r].frame_bytes;
            if (rc == SHARD_ENOMEM) {
#pragma omp atomic write
                failed = 1;
            }
            if (rc) {
                size_t len;
                const char *key = sk_verify_footer_key(v, s, r, &len);
                sk_verify_problem(v, SHARD_CHECK_RECORD, rc, s, (int64_t)r, key, len, "%s", e.msg);
#pragma omp atomic
                unread++;
                continue;
            }
            check_item(v, g, &item);
            sk_verify_record_fields(v, g, &item);
        }
        shard_item_release(&item);
    }
    struct shard_verify_rate *rate = &v->part->deep_rate;
    rate->bytes += bytes;
    rate->items += records;
    rate->seconds += sk_now_seconds() - t0;
    rate->busy_seconds += busy;
    rate->threads = v->threads;
    if (unread || failed)
        v->part->deep_complete = 0; /* counts would only repeat them */
    return failed ? shard_err_set(err, SHARD_ENOMEM, "out of memory while decoding records")
                  : SHARD_OK;
}
