/* spool.c - archives: one streaming pass that converts every entry
 * and keeps the payloads in DST/.shardify/spool until the order is known.
 *
 * A hard link without data has no bytes when it streams past: it is
 * spooled as pending, and once the pass is over it takes the record of the
 * entry whose bytes it has (source/links.c).  When that entry is not a
 * candidate ("b.jpg" a link to "b.dat"), the archive is read a second time
 * for it, and its record is spooled after the candidates' (a "hidden
 * item": r->spooled[n + item]), where no sample order ever looks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/fsutil.h"
#include "util/grow.h"
#include "convert/pipeline.h"
#include "convert/run.h"
#include "source/source_internal.h"

#define SPOOLED_INITIAL 1024

/* One archive's pass.  A directory of archives (--archives) reads them one
 * after the other: keys are the archive's name, '/', the member's name; the
 * hard links of each are resolved among its own members (ar_keys, numbered
 * from `base`, the first candidate of the archive). */
struct spool_pass {
    struct run *r;
    struct slot *claiming; /* the slot the entry being read goes to */
    struct sk_links *links;
    const char *path;             /* the archive */
    const char *prefix;           /* the key prefix ("00000.tar"), or NULL: the keys as they are */
    uint64_t base;                /* candidate number of its first entry */
    struct shard_keylist ar_keys; /* with a prefix: its candidates' names as stored */
    struct shard_buf key;         /* with a prefix: the key being made */
    uint64_t items;               /* hidden items the links' second pass produced */
};

/* The key of member `name` of the pass's archive: name itself, or prefix/name. */
static int member_key(struct spool_pass *p, const char **key, size_t *len, struct shard_err *err)
{
    if (!p->prefix)
        return SHARD_OK;
    size_t n = strlen(p->prefix);
    p->key.len = 0;
    int rc = shard_buf_append(&p->key, p->prefix, n, err);
    if (!rc)
        rc = shard_buf_append(&p->key, "/", 1, err);
    if (!rc)
        rc = shard_buf_append(&p->key, *key, *len, err);
    if (!rc) {
        *key = (const char *)p->key.data;
        *len = p->key.len;
    }
    return rc;
}

/* The slot holds an entry's bytes or why it has none: give it its reason
 * for the claim's problem. */
static void set_problem(struct slot *s, const char *problem)
{
    s->problem = NULL;
    if (problem) {
        shard_err_set(&s->why, SHARD_EUNSUPPORTED, "%s", problem);
        s->problem = s->why.msg;
    }
}

/* Entries that are no candidates are produced too when they are sidecar files. */
static int want_sidecar(void *ctx, const char *key, size_t len)
{
    struct sk_sidecars *side = ctx;
    return side && sk_sidecars_suffix_of(side, key, len) >= 0;
}

/* A sidecar entry: listed now (in archive order), its bytes spooled when
 * consumed, or why it has none kept.  What the consumer needs travels in
 * the slot: the claim runs beside the consumer, so it touches nothing the
 * consumer uses (r->spooled_sidecars grows in store_sidecar). */
static int claim_sidecar(struct run *r, struct sk_sidecars *side, const struct sk_archive_entry *e,
                         struct slot *s, struct shard_err *err)
{
    s->too_large = e->too_large;
    set_problem(s, e->problem     ? e->problem
                   : e->link_only ? "a hard link without data of its own"
                                  : NULL);
    s->is_sidecar = 1;
    s->cand = sk_sidecars_file_count(side);
    r->stats.sidecars++;
    return sk_sidecars_add_file(side, e->key, e->key_len, err);
}

/* Before an entry is read into the slot being claimed: room for it in the
 * run's budget (given back once the slot is consumed). */
static int admit(void *ctx, uint64_t bytes, struct shard_err *err)
{
    struct spool_pass *p = ctx;
    int rc = sk_budget_take(&p->r->budget, bytes, p->r->o->cancel, NULL, NULL);
    if (rc)
        return shard_err_set(err, rc, "interrupted");
    p->claiming->held += bytes;
    return SHARD_OK;
}

static int spool_claim(void *ctx, uint64_t pos, void *slot, struct shard_err *err)
{
    struct spool_pass *p = ctx;
    struct run *r = p->r;
    struct slot *s = slot;
    struct sk_archive_entry e;
    struct sk_sidecars *side = sk_field_sources_sidecars(r->fields);
    s->too_large = 0;
    s->is_sidecar = 0;
    p->claiming = s;
    int rc = sk_archive_next_entry(r->ar, r->config.max_file_bytes, want_sidecar, side, &e,
                                   &s->input, &r->stats, err);
    if (rc <= 0) {
        if (rc < 0)
            shard_err_prefix(err, rc, "cannot read archive '%s'", r->src);
        return rc;
    }
    s->pos = pos;
    const char *key = e.key;
    size_t key_len = e.key_len;
    if (side && sk_sidecars_suffix_of(side, e.key, e.key_len) >= 0) {
        if (e.candidate) /* named like an image, but a sidecar all the same */
            r->stats.candidates--;
        if ((rc = member_key(p, &e.key, &e.key_len, err)) ||
            (rc = claim_sidecar(r, side, &e, s, err)))
            return rc;
        return 1;
    }
    if (p->prefix && (rc = shard_keylist_add(&p->ar_keys, key, key_len, err)))
        return rc;
    if ((rc = member_key(p, &key, &key_len, err)))
        return rc;
    int link_only = 0;
    s->too_large = e.too_large;
    s->cand = r->keys.count;
    s->pos = pos;
    set_problem(s, sk_archive_problem(r->ar));
    sk_archive_link(r->ar, NULL, &link_only);
    s->link_only = link_only;
    if ((rc = sk_links_note(p->links, r->ar, s->cand - p->base, err)) ||
        (rc = shard_keylist_add(&r->keys, key, key_len, err)))
        return rc;
    return 1;
}

/* Convert a claimed entry (or a hidden item) into the slot. */
static void convert_entry(struct run *r, int thread, struct slot *s)
{
    s->ok = 0;
    s->has_source = 0;
    s->hashed = 0;
    struct shard_err e;
    if (s->problem) {
        shard_err_set(&e, SHARD_EUNSUPPORTED, "%s", s->problem);
        sk_run_reject_slot(s, &e);
        return;
    }
    if (s->link_only) {
        /* replaced once the pass is over (sk_links_resolve) */
        shard_err_set(&e, SHARD_ECORRUPT, "%s", SK_REASON_LINK "an entry not yet read");
        sk_run_reject_slot(s, &e);
        return;
    }
    if (s->too_large) {
        shard_err_set(&e, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                      (unsigned long long)s->too_large,
                      (unsigned long long)r->config.max_file_bytes);
        sk_run_reject_slot(s, &e);
        return;
    }
    sk_run_convert_input(r, thread, s);
}

static void spool_work(void *ctx, int thread, void *slot)
{
    struct spool_pass *p = ctx;
    struct slot *s = slot;
    if (p->r->names_only) { /* the labels' pass: names and sidecars only */
        s->ok = 0;
        s->has_source = 0;
        shard_err_set(&s->why, SHARD_EUNSUPPORTED, "%s", s->problem ? s->problem : "not converted");
        return;
    }
    if (!s->is_sidecar) /* a sidecar's bytes go to the spool as they are */
        convert_entry(p->r, thread, s);
}

/* A sidecar entry's bytes into the spool, or why it has none, as
 * r->spooled_sidecars[its ordinal]. */
static int store_sidecar(struct run *r, const struct slot *s, struct shard_err *err)
{
    size_t had = r->spooled_sidecars_cap;
    if (SK_GROW(r->spooled_sidecars, r->spooled_sidecars_cap, s->cand + 1, SPOOLED_INITIAL))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    memset(r->spooled_sidecars + had, 0,
           (r->spooled_sidecars_cap - had) * sizeof *r->spooled_sidecars);
    struct spooled_sidecar *sp = &r->spooled_sidecars[s->cand];
    sp->too_large = s->too_large;
    if (s->problem)
        return (sp->problem = strdup(s->problem))
                   ? SHARD_OK
                   : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (sp->too_large)
        return SHARD_OK;
    sp->offset = r->spool_bytes;
    sp->len = s->input.len;
    r->spool_bytes += s->input.len;
    r->bytes_in += s->input.len;
    return sk_fs_write_all(r->spool_fd, s->input.data, s->input.len, r->spool_path, err);
}

/* Keep what the slot learned as r->spooled[index], its payload in the spool. */
static int store(struct run *r, uint64_t index, const struct slot *s, struct shard_err *err)
{
    size_t had = r->spooled_cap;
    if (SK_GROW(r->spooled, r->spooled_cap, index + 1, SPOOLED_INITIAL))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    memset(r->spooled + had, 0, (r->spooled_cap - had) * sizeof *r->spooled);
    struct spooled *sp = &r->spooled[index];
    sp->has_source = s->has_source;
    sp->source_bytes = s->source_bytes;
    sp->source_xxh3 = s->source_xxh3;
    r->bytes_in += s->has_source ? s->source_bytes : 0;
    if (!s->ok) {
        sp->reason = strdup(s->why.msg);
        return sp->reason ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (s->warning[0] && !(sp->warning = strdup(s->warning)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (r->names_only)
        return SHARD_OK;
    sp->offset = r->spool_bytes;
    sp->len = s->payload.len;
    sp->width = s->width;
    sp->channels = s->channels;
    sp->depth = s->depth;
    sp->height = s->height;
    sp->place = s->place;
    r->spool_bytes += s->payload.len;
    return sk_fs_write_all(r->spool_fd, s->payload.data, s->payload.len, r->spool_path, err);
}

static int spool_consume(void *ctx, void *slot, struct shard_err *err)
{
    struct spool_pass *p = ctx;
    struct slot *s = slot;
    p->r->done++;
    sk_run_progress(p->r, 0);
    int rc = s->is_sidecar ? store_sidecar(p->r, s, err) : store(p->r, s->cand, s, err);
    sk_run_release_slot(p->r, s);
    return rc;
}

/* A hidden item of the links' second pass: converted like an entry, on
 * this thread, into the first slot. */
static int spool_item(void *ctx, uint64_t item, const struct shard_buf *bytes, uint64_t too_large,
                      const char *problem, struct shard_err *err)
{
    struct spool_pass *p = ctx;
    struct run *r = p->r;
    struct slot *s = &r->slots[0];
    if (item + 1 > p->items)
        p->items = item + 1;
    s->input.len = 0;
    s->too_large = too_large;
    s->link_only = 0;
    set_problem(s, problem);
    int rc = bytes->len ? shard_buf_append(&s->input, bytes->data, bytes->len, err) : SHARD_OK;
    if (rc)
        return rc;
    convert_entry(r, 0, s);
    return store(r, r->keys.count + item, s, err);
}

/* Give every candidate whose bytes are another entry's that entry's record
 * (numbers from the links are the pass's, from p->base on). */
static int apply_links(struct spool_pass *p, struct shard_err *err)
{
    struct run *r = p->r;
    uint64_t pos = 0, n = r->keys.count;
    struct sk_link_copy c;
    while (sk_links_next_copy(p->links, &pos, &c)) {
        c.cand += p->base;
        if (c.from == SK_FROM_CANDIDATE)
            c.source += p->base;
        struct spooled *to = &r->spooled[c.cand];
        free(to->reason);
        free(to->warning);
        if (c.from == SK_FROM_NOWHERE) {
            memset(to, 0, sizeof *to);
            to->reason = strdup(c.why);
        } else {
            const struct spooled *from =
                &r->spooled[c.from == SK_FROM_CANDIDATE ? c.source : n + c.source];
            *to = *from; /* the same payload in the spool, the same identity */
            to->reason = from->reason ? strdup(from->reason) : NULL;
            to->warning = from->warning ? strdup(from->warning) : NULL;
            if (from->warning && !to->warning)
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            if (!from->reason)
                continue;
        }
        if (!to->reason)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    return SHARD_OK;
}

/* Once a pass's links are applied, its hidden items (spooled after the
 * candidates) are no longer needed: the next archive's candidates take
 * their places. */
static void drop_items(struct spool_pass *p)
{
    struct run *r = p->r;
    for (uint64_t i = r->keys.count; i < r->keys.count + p->items && i < r->spooled_cap; i++) {
        free(r->spooled[i].reason);
        free(r->spooled[i].warning);
        memset(&r->spooled[i], 0, sizeof r->spooled[i]);
    }
    p->items = 0;
}

int sk_run_spool_one(struct run *r, const char *path, const char *prefix, struct shard_err *err)
{
    struct spool_pass pass = {.r = r, .path = path, .prefix = prefix, .base = r->keys.count};
    int rc = sk_archive_open(&r->ar, path, err);
    if (rc)
        return rc;
    /* made once the first archive is open: never through a link, never an
     * existing file (see sk_fs_create_at) */
    if (!r->spool_path && !(r->spool_path = sk_fs_join(r->dst->work, SPOOL_FILE)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && r->spool_fd < 0)
        rc = sk_fs_create_at(r->dst->work_fd, r->dst->work, SPOOL_FILE, 0600, &r->spool_fd, err);
    if (rc)
        return rc;
    sk_archive_set_reading(r->ar, r->config.max_field_bytes, admit, &pass);
    void **slots = sk_run_slot_pointers(r, err);
    if (!slots || (rc = sk_links_new(&pass.links, err))) {
        free(slots);
        return slots ? rc : SHARD_ENOMEM;
    }
    struct pipeline_ops ops = {&pass, spool_claim, spool_work, spool_consume};
    rc = sk_pipeline_run(&ops, slots, r->nslots, r->threads, r->o->cancel, err);
    free(slots);
    sk_archive_close(r->ar);
    r->ar = NULL;
    if (!rc && sk_links_any(pass.links))
        rc = sk_links_resolve(pass.links, prefix ? &pass.ar_keys : &r->keys, path,
                              r->config.max_file_bytes, spool_item, &pass, err);
    if (!rc)
        rc = apply_links(&pass, err);
    drop_items(&pass);
    sk_links_free(pass.links);
    shard_keylist_release(&pass.ar_keys);
    shard_buf_release(&pass.key);
    return rc;
}

void sk_run_spool_reset(struct run *r)
{
    for (uint64_t i = 0; r->spooled && i < r->spooled_cap; i++) {
        free(r->spooled[i].reason);
        free(r->spooled[i].warning);
    }
    if (r->spooled)
        memset(r->spooled, 0, r->spooled_cap * sizeof *r->spooled);
    for (uint64_t i = 0; r->spooled_sidecars && i < r->spooled_sidecars_cap; i++)
        free(r->spooled_sidecars[i].problem);
    if (r->spooled_sidecars)
        memset(r->spooled_sidecars, 0, r->spooled_sidecars_cap * sizeof *r->spooled_sidecars);
    if (r->spool_fd >= 0 && ftruncate(r->spool_fd, 0) == 0)
        lseek(r->spool_fd, 0, SEEK_SET);
    r->spool_bytes = 0;
    shard_keylist_release(&r->keys);
    shard_refusals_release(&r->refused);
    r->n = 0;
}

int sk_run_spool_archive(struct run *r, struct shard_err *err)
{
    if (!r->spool_path && !(r->spool_path = sk_fs_join(r->dst->work, SPOOL_FILE)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    r->phase = "spool";
    if (!r->archive_count) {
        rc = sk_run_spool_one(r, r->src, NULL, err);
    } else {
        for (size_t k = 0; !rc && k < r->archive_count; k++) {
            char *path;
            if (!(rc = sk_run_archive_path(r, k, &path, err)))
                rc = sk_run_spool_one(r, path, r->archive_names[k], err);
            sk_run_archive_done(r, path);
        }
    }
    r->n = r->keys.count;
    r->stats.candidates = r->n;
    return rc;
}
