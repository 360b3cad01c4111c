/* share.c - the walk of a share of the shards (see verify_internal.h).
 *
 * The share is walked in windows of a few shards, in order.  A window's
 * shards are hashed whole, one per thread at a time (this alone catches a
 * changed byte anywhere in a shard), and their footers read through the
 * dataset reader, the code training uses; then the index lines naming the
 * window's records are read (index_check.c), with --deep the records are
 * decoded (deep.c), the records no line named are noted, and the shards
 * are let go.  So the walk holds a window's footers and per-sample state,
 * never the dataset's: memory follows the window (at least the thread
 * count of shards and WINDOW_MIN_RECORDS records), not the dataset.
 *
 * --source with --deep needs every record's field values after the walk
 * (source_fields.c): then the whole share is one window. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "read/dataset_internal.h"
#include "shardx/shardx.h"
#include "verify/verify_internal.h"
#include "manifest/manifest_internal.h"

/* Records a window holds at least (when its shards are small). */
#define WINDOW_MIN_RECORDS (1u << 16)

/* The end of the window that starts at shard `start`. */
static uint32_t window_end(const struct verify_run *v, uint32_t start)
{
    uint32_t end = v->part->end_shard;
    if (v->o->source && v->o->deep)
        return end;
    uint32_t e = start;
    uint64_t records = 0;
    while (e < end && (e - start < (uint32_t)v->threads || records < WINDOW_MIN_RECORDS))
        records += v->m->shards[e++].samples;
    return e;
}

/* Hash shard s whole and compare with the manifest; then read its footer. */
static void check_shard(struct verify_run *v, uint32_t s, uint64_t *hashed, double *busy)
{
    const struct shard_manifest_shard *ms = &v->m->shards[s];
    uint64_t bytes;
    double t0 = sk_now_seconds();
    int rc = sk_verify_hash_file(v, SHARD_CHECK_SHARD, s, ms->file, ms->bytes, ms->xxh3, &bytes);
    *busy += sk_now_seconds() - t0;
    if (rc)
        return;
    *hashed += bytes;
    struct shard_err e;
    const struct shard_footer *footer;
    shard_err_clear(&e);
    rc = sk_dataset_shard_footer(v->ds, s, &footer, &e);
    if (rc) {
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s", e.msg);
        return;
    }
    v->footers[s] = footer;
    if ((rc = sk_dataset_shard_check_name(v->ds, s, &e)))
        sk_verify_problem(v, SHARD_CHECK_SHARD, rc, s, -1, NULL, 0, "%s", e.msg);
    /* a dataset with fields has version 2 shards (their records carry
     * fields), one without version 1, whatever the manifest's version */
    uint16_t expect = sk_config_format_version(&v->m->config);
    if (footer->version != expect)
        sk_verify_problem(v, SHARD_CHECK_SHARD, SHARD_EMISMATCH, s, -1, NULL, 0,
                          "%s: format version %u, the manifest's is %u (shards of version %u)",
                          ms->file, footer->version, v->m->version, expect);
}

static void check_shards(struct verify_run *v)
{
    struct shard_verify_rate *rate = &v->part->hash_rate;
    uint32_t first = v->window_start, n = v->window_end - first;
    uint64_t hashed = 0;
    double busy = 0, t0 = sk_now_seconds();
    int threads = v->threads < (int)n ? v->threads : (int)(n ? n : 1);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+ : hashed, busy)
    for (uint32_t i = 0; i < n; i++)
        check_shard(v, first + i, &hashed, &busy);
    rate->bytes += hashed;
    rate->items += n;
    rate->seconds += sk_now_seconds() - t0;
    rate->busy_seconds += busy;
    if (threads > rate->threads)
        rate->threads = threads;
}

/* The window's footers: the labels the records hold (against the manifest's
 * label count), and each record's stored bytes. */
static int count_footers(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    const struct shard_manifest *m = v->m;
    for (uint32_t s = v->window_start; s < v->window_end; s++) {
        const struct shard_footer *f = v->footers[s];
        if (!f) {
            p->all_footers = 0;
            continue;
        }
        p->shards_sized++;
        for (uint64_t r = 0; r < f->record_count; r++) {
            if (sk_tally_add(&p->record_bytes, f->rows[r].frame_bytes, 1))
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            int32_t label = f->rows[r].label;
            if (label == SHARD_NO_LABEL) {
                p->label_shards[m->label_count]++;
            } else if ((uint32_t)label < m->label_count) {
                p->label_shards[label]++;
            } else {
                size_t len;
                const char *key = sk_verify_footer_key(v, s, r, &len);
                char q[SHARDX_QUOTE_SIZE];
                sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                                  "%s record %llu (key '%s'): label %d, but the manifest has %u "
                                  "labels",
                                  m->shards[s].file, (unsigned long long)r,
                                  shardx_quote(key, len, q, sizeof q), label, m->label_count);
            }
        }
    }
    return SHARD_OK;
}

/* Walk the window [v->window_start, v->window_end). */
static int walk_window(struct verify_run *v, struct shard_err *err)
{
    uint64_t first = sk_dataset_shard_first(v->ds, v->window_start);
    v->window_first = first;
    v->window_samples = sk_dataset_shard_first(v->ds, v->window_end) - first;
    memset(v->index_hits, 0, v->window_samples * sizeof *v->index_hits);
    memset(v->index_width, 0, v->window_samples * sizeof *v->index_width);
    memset(v->index_height, 0, v->window_samples * sizeof *v->index_height);
    check_shards(v);
    int rc = count_footers(v, err);
    if (!rc)
        rc = sk_verify_index_window(v, err);
    if (!rc && !v->key_tables)
        rc = sk_verify_keys_collect(v, err);
    if (!rc && v->o->deep)
        rc = sk_verify_deep(v, err);
    if (!rc)
        rc = sk_verify_index_window_end(v, err);
    if (v->o->source && v->o->deep)
        return rc; /* one window, kept for --source */
    for (uint32_t s = v->window_start; s < v->window_end; s++) {
        v->footers[s] = NULL;
        sk_dataset_shard_release(v->ds, s);
    }
    return rc;
}

/* The largest window's samples. */
static uint64_t largest_window(const struct verify_run *v)
{
    uint64_t most = 0;
    for (uint32_t s = v->part->first_shard, e; s < v->part->end_shard; s = e) {
        e = window_end(v, s);
        uint64_t n = sk_dataset_shard_first(v->ds, e) - sk_dataset_shard_first(v->ds, s);
        most = n > most ? n : most;
    }
    return most;
}

int sk_verify_share(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    double t0 = sk_now_seconds();
    v->window_cap = largest_window(v);
    uint64_t n = v->window_cap ? v->window_cap : 1;
    v->footers = calloc(v->m->shard_count ? v->m->shard_count : 1, sizeof *v->footers);
    v->index_hits = calloc(n, sizeof *v->index_hits);
    v->index_width = calloc(n, sizeof *v->index_width);
    v->index_height = calloc(n, sizeof *v->index_height);
    if (!v->footers || !v->index_hits || !v->index_width || !v->index_height)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %llu samples",
                             (unsigned long long)n);
    p->all_footers = 1;
    p->deep_complete = 1;
    int rc = sk_verify_fields_begin(v, err);
    if (!rc)
        rc = sk_verify_index_begin(v, err);
    for (uint32_t s = p->first_shard; !rc && s < p->end_shard; s = v->window_end) {
        v->window_start = s;
        v->window_end = window_end(v, s);
        rc = walk_window(v, err);
    }
    if (!(v->o->source && v->o->deep))
        v->window_samples = 0; /* no window: the shards were let go */
    if (!rc)
        rc = sk_verify_index_end(v, err);
    sk_verify_index_close(v);
    if (!rc)
        rc = sk_verify_keys(v, err);
    sk_verify_demand_release(v);
    p->seconds = sk_now_seconds() - t0;
    return rc;
}
