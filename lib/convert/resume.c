/* resume.c - adopting the finished shards of an interrupted run:
 * each must have its journal, its bytes, and unchanged sources. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/fsutil.h"
#include "convert/journal.h"
#include "convert/run.h"
#include "shardkit/format.h"

struct adopt {
    struct run *r;
    uint64_t pos;
    int apply; /* 0: only check; 1: hand to the assembler */
    struct shard_buf buf;
    /* a dataset with fields: the sample's fields as they are now */
    struct shard_field_set fields;
    struct sk_field_result *field_result;
};

/* The fields of the sample at a->pos as the source gives them now, into
 * a->fields and *a->field_result: sk_field_sources_build's status. */
static int fields_now(struct adopt *a, const char *key, size_t key_len, struct shard_err *why)
{
    if (!a->field_result && !(a->field_result = malloc(sizeof *a->field_result)))
        return shard_err_set(why, SHARD_ENOMEM, "out of memory");
    return sk_field_sources_build(a->r->fields, a->r->order[a->pos], key, key_len, NULL,
                                  sk_run_read_sidecar, a->r, &a->buf, &a->fields, a->field_result,
                                  why);
}

/* Are the fields a journal line records those the source gives now?  (A
 * changed sidecar makes the record stale, as a changed image does.) */
static int fields_check(struct adopt *a, const struct shard_sample *s, struct shard_err *err)
{
    struct run *r = a->r;
    if (!r->fields || a->apply)
        return SHARD_OK;
    struct shard_err why;
    int rc = fields_now(a, s->key, s->key_len, &why);
    if (rc == SHARD_ECORRUPT || (!rc && a->field_result->count != s->field_count))
        return shard_err_set(err, SHARD_EMISMATCH, "the fields of '%s' changed", s->key);
    if (rc) {
        *err = why;
        return rc;
    }
    for (uint32_t i = 0; i < s->field_count; i++) {
        const struct shard_field_source *x = &a->field_result->sources[i], *y = &s->fields[i];
        if (x->field != y->field || x->source_bytes != y->source_bytes ||
            x->source_xxh3 != y->source_xxh3)
            return shard_err_set(err, SHARD_EMISMATCH, "the fields of '%s' changed", s->key);
    }
    return SHARD_OK;
}

/* Does order position a->pos name this key, and is its source unchanged? */
static int adopt_check(struct adopt *a, const char *key, size_t key_len, int has_source,
                       uint64_t bytes, uint64_t xxh3, struct shard_err *err)
{
    struct run *r = a->r;
    if (a->pos >= r->end_pos)
        return shard_err_set(err, SHARD_EMISMATCH, "journal runs past the sample order");
    /* boxes and masks follow their image's geometry, which only converting
     * the image again tells: such a run's shards are converted again */
    if (sk_field_sources_geometric(r->fields))
        return shard_err_set(err, SHARD_EMISMATCH, "boxes and masks are converted again");
    uint64_t cand = r->order[a->pos];
    size_t len;
    const char *k = shard_keylist_get(&r->keys, cand, &len);
    if (len != key_len || memcmp(k, key, len) != 0)
        return shard_err_set(err, SHARD_EMISMATCH, "journal and sample order differ at %llu",
                             (unsigned long long)a->pos);
    if (!has_source || a->apply)
        return SHARD_OK;
    uint64_t now_bytes, now_xxh3;
    if (r->archive) {
        struct spooled *sp = &r->spooled[cand];
        if (!sp->has_source)
            return shard_err_set(err, SHARD_EMISMATCH, "source changed");
        now_bytes = sp->source_bytes;
        now_xxh3 = sp->source_xxh3;
    } else {
        if (sk_source_root_read(&r->root, k, r->config.max_file_bytes, &a->buf, err) != 0)
            return shard_err_set(err, SHARD_EMISMATCH, "source changed");
        now_bytes = a->buf.len;
        now_xxh3 = XXH3_64bits(a->buf.data, a->buf.len);
    }
    if (now_bytes != bytes || now_xxh3 != xxh3)
        return shard_err_set(err, SHARD_EMISMATCH, "source '%s' changed", k);
    return SHARD_OK;
}

static int adopt_sample(void *user, struct shard_sample *s, struct shard_err *err)
{
    struct adopt *a = user;
    int rc = adopt_check(a, s->key, s->key_len, 1, s->source_bytes, s->source_xxh3, err);
    if (!rc && s->label != a->r->label_of[a->r->order[a->pos]])
        rc = shard_err_set(err, SHARD_EMISMATCH, "label differs");
    if (!rc)
        rc = fields_check(a, s, err);
    if (!rc && a->apply) {
        sk_run_note_candidate(a->r, s->key, s->key_len, s->label, 1, s->source_bytes,
                              s->source_xxh3, s->fields, s->field_count, SK_REUSE_ADOPTED);
        rc = sk_assembler_adopt_sample(a->r->as, s, err);
    }
    a->pos++;
    return rc;
}

static int adopt_reject(void *user, struct shard_reject *rj, struct shard_err *err)
{
    struct adopt *a = user;
    int rc = adopt_check(a, rj->key, rj->key_len, rj->has_source, rj->source_bytes, rj->source_xxh3,
                         err);
    /* rejected for a field: stale once its fields can be taken */
    if (!rc && a->r->fields && !a->apply && !strncmp(rj->reason, "field '", 7)) {
        struct shard_err why;
        int now = fields_now(a, rj->key, rj->key_len, &why);
        if (now != SHARD_ECORRUPT)
            rc = now ? (*err = why, now)
                     : shard_err_set(err, SHARD_EMISMATCH, "the fields of '%s' changed", rj->key);
    }
    if (!rc && a->apply) {
        sk_run_note_candidate(a->r, rj->key, rj->key_len, SHARD_NO_LABEL, rj->has_source,
                              rj->source_bytes, rj->source_xxh3, NULL, 0, SK_REUSE_ADOPTED);
        rc = sk_assembler_adopt_reject(a->r->as, rj, err);
    }
    a->pos++;
    return rc;
}

/* Keep every finished shard of the interrupted run that checks out, in
 * order; drop the first one that does not and everything after it. */
int sk_run_adopt_finished(struct run *r, struct shard_err *err)
{
    struct adopt a = {.r = r};
    uint32_t k = 0;
    int rc = SHARD_OK;
    for (;; k++) {
        char jname[64], sname[64];
        uint32_t number = r->shard_base + k; /* a part's shards: see sk_run_part_setup */
        sk_journal_name(number, jname, sizeof jname);
        shard_file_name(number, sname, sizeof sname);
        const struct dst *d = r->dst;
        struct journal_end end;
        struct shard_err why;
        uint64_t bytes, xxh3;
        a.pos = r->start_pos;
        a.apply = 0;
        int ok = sk_journal_read(d->work_fd, d->work, jname, &r->config, adopt_sample, adopt_reject,
                                 &a, &end, &why) == 0 &&
                 end.shard == number && end.pos_start == r->start_pos && a.pos == end.pos_end &&
                 sk_dst_hash(r->dst, sname, &bytes, &xxh3, &why) == 0 && bytes == end.bytes &&
                 xxh3 == end.xxh3;
        if (ok) {
            a.pos = r->start_pos;
            a.apply = 1;
            rc = sk_journal_read(d->work_fd, d->work, jname, &r->config, adopt_sample, adopt_reject,
                                 &a, &end, err);
            if (!rc)
                rc = sk_assembler_adopt_end(r->as, &end, err);
            if (!rc) /* finished but not uploaded when the run stopped */
                rc = sk_dst_publish(r->dst, sname, err);
            r->start_pos = end.pos_end;
        }
        if (!ok || rc)
            break;
    }
    shard_buf_release(&a.buf);
    shard_field_set_release(&a.fields);
    free(a.field_result);
    r->reused_shards = k;
    r->done = r->start_pos;
    return rc ? rc : sk_dst_remove_from(r->dst, r->shard_base + k, err);
}
