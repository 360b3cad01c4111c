/* spool.c - archives: one streaming pass that converts every entry
 * and keeps the payloads in DST/.shardify/spool until the order is known. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/fsutil.h"
#include "convert/pipeline.h"
#include "convert/run.h"

static int spool_claim(void *ctx, uint64_t pos, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    const char *key;
    size_t key_len;
    s->too_large = 0;
    int rc = shard_archive_next(r->ar, r->config.max_file_bytes, &key, &key_len, &s->input,
                                &s->too_large, &r->stats, err);
    if (rc <= 0) {
        if (rc < 0)
            shard_err_prefix(err, "cannot read archive '%s'", r->src);
        return rc;
    }
    s->cand = r->keys.count;
    s->pos = pos;
    s->problem = shard_archive_problem(r->ar);
    rc = shard_keylist_add(&r->keys, key, key_len, err);
    return rc ? rc : 1;
}

static void spool_work(void *ctx, int thread, void *slot)
{
    struct run *r = ctx;
    struct slot *s = slot;
    s->ok = 0;
    s->has_source = 0;
    if (s->problem) {
        struct shard_err e;
        shard_err_set(&e, SHARD_EUNSUPPORTED, "%s", s->problem);
        sk_run_reject_slot(s, &e);
        return;
    }
    if (s->too_large) {
        struct shard_err e;
        shard_err_set(&e, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                      (unsigned long long)s->too_large,
                      (unsigned long long)r->config.max_file_bytes);
        sk_run_reject_slot(s, &e);
        return;
    }
    sk_run_convert_input(r, thread, s);
}

static int spool_consume(void *ctx, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    if (s->cand >= r->spooled_cap) {
        uint64_t cap = r->spooled_cap ? 2 * r->spooled_cap : 1024;
        struct spooled *p = realloc(r->spooled, cap * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        memset(p + r->spooled_cap, 0, (cap - r->spooled_cap) * sizeof *p);
        r->spooled = p;
        r->spooled_cap = cap;
    }
    struct spooled *sp = &r->spooled[s->cand];
    sp->has_source = s->has_source;
    sp->source_bytes = s->source_bytes;
    sp->source_xxh3 = s->source_xxh3;
    r->bytes_in += s->has_source ? s->source_bytes : 0;
    r->done++;
    sk_run_progress(r, 0);
    if (!s->ok) {
        sp->reason = strdup(s->why.msg);
        return sp->reason ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    sp->offset = r->spool_bytes;
    sp->len = s->payload.len;
    sp->width = s->width;
    sp->height = s->height;
    r->spool_bytes += s->payload.len;
    return sk_fs_write_all(r->spool_fd, s->payload.data, s->payload.len, r->spool_path, err);
}

int sk_run_spool_archive(struct run *r, struct shard_err *err)
{
    int rc = shard_archive_open(&r->ar, r->src, err);
    if (rc)
        return rc;
    r->spool_path = sk_fs_join(r->dst->work, SPOOL_FILE);
    if (!r->spool_path)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    /* never through a link, never an existing file (see sk_fs_create_at) */
    rc = sk_fs_create_at(r->dst->work_fd, r->dst->work, SPOOL_FILE, 0600, &r->spool_fd, err);
    if (rc)
        return rc;
    void **slots = sk_run_slot_pointers(r, err);
    if (!slots)
        return SHARD_ENOMEM;
    struct pipeline_ops ops = {r, spool_claim, spool_work, spool_consume};
    r->phase = "spool";
    rc = sk_pipeline_run(&ops, slots, r->nslots, r->threads, r->o->cancel, err);
    free(slots);
    shard_archive_close(r->ar);
    r->ar = NULL;
    r->n = r->keys.count;
    r->stats.candidates = r->n;
    return rc;
}
