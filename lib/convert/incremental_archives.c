/* incremental_archives.c - an incremental run over a folder of archives
 * stored by archive (see run.h).
 *
 * The previous dataset's archives.jsonl and index are read in step with the
 * folder: both are in the order of the archives' names, and the samples of
 * one archive are consecutive lines of the index.  An archive whose name,
 * size and xxh3 are the previous one's gives the same records in the same
 * order (the same options: its candidates, their order within it and their
 * labels do not depend on the other archives), so its lines and rejects are
 * taken from the previous dataset and its frames copied as bytes, each
 * checked against the previous footer first; the archive is not read.  One
 * whose record is damaged there, or whose labels would be numbered
 * otherwise, is converted, as a changed or new one is, and its candidates
 * are counted against the previous archive's by key.  What is held: the
 * previous list of archives and the entries of one archive. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "convert/run.h"
#include "format/shard_reader.h"
#include "manifest/manifest_internal.h"
#include "shardkit/format.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/grow.h"
#include "util/jsonkey.h"
#include "source/source_internal.h"

/* A line of the previous archives.jsonl. */
struct prev_archive {
    char *name;
    size_t name_len;
    struct sk_archive_line a;
};

/* A candidate of the previous archive being converted again. */
struct entry {
    uint64_t source_bytes;
    uint64_t source_xxh3;
    uint8_t has_source;
    uint8_t damaged; /* its record there did not check out */
    uint8_t seen;
};

struct sk_prev_archives {
    const char *path;
    struct shard_manifest m;
    uint64_t manifest_xxh3;
    struct prev_archive *archives;
    size_t count;
    size_t next; /* the first not yet met */
    struct shard_index_reader *index;
    int labels_same; /* the previous labels are this run's: label numbers stand */
    /* the previous shard being read, mapped when it can be */
    struct shard_file *file;
    uint32_t file_shard;
    const uint8_t *map;
    size_t map_len;
    struct shard_buf frame;
    /* the samples of the archive met (its index lines, copied) */
    struct shard_sample *lines;
    size_t line_count, line_cap;
    /* the candidates of an archive converted again, by key */
    struct shard_keylist keys;
    struct entry *entries;
    size_t entry_cap;
    uint64_t *table; /* entry + 1, 0 empty; a power of two, twice the entries at least */
    size_t table_cap;
};

/* Whether `key` is in archive `a` ("NAME/..."). */
static int in_archive(const char *key, size_t len, const struct prev_archive *a)
{
    return len > a->name_len && key[a->name_len] == '/' && !memcmp(key, a->name, a->name_len);
}

/* ---- opening -------------------------------------------------------------------- */

static void clear_lines(struct sk_prev_archives *p)
{
    for (size_t i = 0; i < p->line_count; i++)
        shard_sample_release(&p->lines[i]);
    p->line_count = 0;
}

void sk_prev_archives_free(struct sk_prev_archives *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++)
        free(p->archives[i].name);
    free(p->archives);
    shard_index_reader_close(p->index);
    if (p->map)
        munmap((void *)p->map, p->map_len);
    shard_file_close(p->file);
    shard_buf_release(&p->frame);
    clear_lines(p);
    free(p->lines);
    shard_keylist_release(&p->keys);
    free(p->entries);
    free(p->table);
    shard_manifest_release(&p->m);
    free(p);
}

/* The previous archives.jsonl, checked against its manifest entry. */
static int load_archives(struct sk_prev_archives *p, struct shard_err *err)
{
    if (!p->m.archives_file)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "the previous dataset '%s' lists no archives (archives.jsonl): it "
                             "was not stored by archive",
                             p->path);
    char *path = sk_fs_join(p->path, p->m.archives_file);
    struct shard_buf text = {0};
    int rc = path ? sk_fs_read_file(AT_FDCWD, path, &text, err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc &&
        (text.len != p->m.archives_bytes || XXH3_64bits(text.data, text.len) != p->m.archives_xxh3))
        rc = shard_err_set(err, SHARD_ECORRUPT, "'%s' is not the file its manifest lists", path);
    size_t cap = 0;
    char *line = (char *)text.data, *end = line + text.len;
    while (!rc && line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        json_error_t jerr;
        json_t *o = nl ? json_loadb(line, (size_t)(nl - line), 0, &jerr) : NULL;
        struct prev_archive *a = NULL;
        if (o && !SK_GROW(p->archives, cap, p->count + 1, 64)) {
            a = &p->archives[p->count];
            memset(a, 0, sizeof *a);
        }
        json_t *name = json_object_get(o, "name");
        if (!o || !a || !json_is_string(name) || sk_jsonkey_uint(o, "bytes", &a->a.bytes, err) ||
            sk_jsonkey_hex64(o, "xxh3", &a->a.xxh3, err) ||
            sk_jsonkey_uint(o, "candidates", &a->a.candidates, err) ||
            sk_jsonkey_uint(o, "samples", &a->a.samples, err) ||
            sk_jsonkey_uint(o, "rejected", &a->a.rejected, err) ||
            sk_jsonkey_uint(o, "ignored", &a->a.ignored, err) ||
            !(a->name = strdup(json_string_value(name))))
            rc = a ? shard_err_set(err, SHARD_ECORRUPT, "'%s': line %zu is not an archive's", path,
                                   p->count + 1)
                   : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else {
            a->name_len = json_string_length(name);
            p->count++;
        }
        json_decref(o);
        line = nl ? nl + 1 : end;
    }
    shard_buf_release(&text);
    free(path);
    return rc;
}

static int prev_open(struct sk_prev_archives **out, struct run *r, const char *dst,
                     struct shard_err *err)
{
    struct sk_prev_archives *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->path = r->o->incremental;
    int rc = sk_prev_check_places(p->path, r->src, sk_source_is_s3(dst) ? NULL : dst, err);
    if (!rc)
        rc = sk_prev_load_manifest(p->path, &r->config, "archives", &p->m, &p->manifest_xxh3, err);
    if (!rc)
        rc = load_archives(p, err);
    if (!rc && !(rc = sk_manifest_index_open(p->path, &p->m, &p->index, err)))
        shard_index_reader_set_config(p->index, &p->m.config);
    if (rc) {
        sk_prev_archives_free(p);
        return rc;
    }
    *out = p;
    return SHARD_OK;
}

int sk_prev_archives_open(struct run *r, const char *dst, struct shard_err *err)
{
    r->has_lineage = 1;
    r->lineage.full_rebuild = NULL;
    struct shard_err why;
    int rc = prev_open(&r->prev_archives, r, dst, &why);
    if (!rc) {
        r->lineage.previous_manifest_xxh3 = r->prev_archives->manifest_xxh3;
        return SHARD_OK;
    }
    return sk_prev_unusable(r, rc, &why, err);
}

/* ---- reading the previous index in step -------------------------------------------- */

/* The next `count` lines of the previous index (archive `a`'s samples),
 * copied into p->lines.  Each must be of that archive. */
static int read_lines(struct sk_prev_archives *p, const struct prev_archive *a, uint64_t count,
                      struct shard_err *err)
{
    clear_lines(p);
    for (uint64_t i = 0; i < count; i++) {
        struct shard_sample s;
        int got = shard_index_reader_next(p->index, &s, err);
        if (got < 0)
            return shard_err_prefix(err, got, "previous dataset '%s'", p->path);
        if (got == 0 || !in_archive(s.key, s.key_len, a))
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "previous dataset '%s': its index does not hold the samples of "
                                 "'%s' where its archives.jsonl says",
                                 p->path, a->name);
        if (SK_GROW(p->lines, p->line_cap, p->line_count + 1, 64))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        struct shard_sample *c = &p->lines[p->line_count];
        *c = s;
        c->key = malloc(s.key_len + 1);
        c->warning = s.warning ? strdup(s.warning) : NULL;
        c->fields = s.field_count ? malloc(s.field_count * sizeof *s.fields) : NULL;
        if (!c->key || (s.warning && !c->warning) || (s.field_count && !c->fields)) {
            free(c->key);
            free(c->warning);
            free(c->fields);
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
        memcpy(c->key, s.key, s.key_len + 1);
        if (s.field_count)
            memcpy(c->fields, s.fields, s.field_count * sizeof *s.fields);
        p->line_count++;
    }
    return SHARD_OK;
}

/* The previous rejects of archive `a`: [*first, *end) of the manifest's
 * (sorted by key, so an archive's "NAME/..." are consecutive). */
static int rejects_of(const struct sk_prev_archives *p, const struct prev_archive *a,
                      uint64_t *first, uint64_t *end, struct shard_err *err)
{
    char *prefix = malloc(a->name_len + 1);
    if (!prefix)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    memcpy(prefix, a->name, a->name_len);
    prefix[a->name_len] = '/';
    uint64_t lo = 0, hi = p->m.reject_count;
    while (lo < hi) { /* the first key not below the prefix */
        uint64_t mid = lo + (hi - lo) / 2;
        const struct shard_reject *rj = &p->m.rejects[mid];
        if (sk_key_compare(rj->key, rj->key_len, prefix, a->name_len + 1) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    free(prefix);
    *first = lo;
    while (lo < p->m.reject_count && in_archive(p->m.rejects[lo].key, p->m.rejects[lo].key_len, a))
        lo++;
    *end = lo;
    return SHARD_OK;
}

/* Frames read at once: the frames of consecutive records of one shard. */
#define FRAMES_AT_ONCE (8u << 20)

/* Shard `shard` of the previous dataset open in p->file. */
static int open_prev_shard(struct sk_prev_archives *p, uint32_t shard, struct shard_err *err)
{
    if (p->file && p->file_shard == shard)
        return SHARD_OK;
    if (p->map)
        munmap((void *)p->map, p->map_len);
    p->map = NULL;
    shard_file_close(p->file);
    p->file = NULL;
    if (shard >= p->m.shard_count)
        return shard_err_set(err, SHARD_ECORRUPT, "no such shard");
    char *path = sk_fs_join(p->path, p->m.shards[shard].file);
    int rc = path ? shard_file_open(&p->file, path, err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    free(path);
    if (!rc) {
        p->file_shard = shard;
        /* frames copied straight from the page cache; a file that cannot be
         * mapped is read instead */
        p->map_len = (size_t)shard_file_bytes(p->file);
        void *m = p->map_len
                      ? mmap(NULL, p->map_len, PROT_READ, MAP_SHARED, sk_shard_file_fd(p->file), 0)
                      : MAP_FAILED;
        p->map = m == MAP_FAILED ? NULL : m;
        if (p->map)
            (void)madvise((void *)p->map, p->map_len, MADV_SEQUENTIAL);
    }
    return rc == SHARD_ENOMEM ? rc : rc ? SHARD_ECORRUPT : SHARD_OK;
}

/* Each sample line of the archive met (p->lines) with its previous frame,
 * checked against its footer row (key, label, xxh3): fn(ctx, i, frame,
 * len, xxh3) in line order.  The frames of consecutive records of a shard
 * are read with one read.  A line whose frame cannot be had as it was is
 * fn(ctx, i, NULL, 0, 0) (when `damaged_too`), else the pass ends with
 * SHARD_ECORRUPT.  Other errors (memory, fn's) end it. */
static int each_frame(struct sk_prev_archives *p, int damaged_too,
                      int (*fn)(void *ctx, size_t i, const uint8_t *frame, size_t len,
                                uint64_t xxh3, struct shard_err *err),
                      void *ctx, struct shard_err *err)
{
    for (size_t i = 0; i < p->line_count;) {
        const struct shard_sample *s = &p->lines[i];
        struct shard_err why;
        const struct shard_footer *ft = NULL;
        int rc = open_prev_shard(p, s->shard, &why);
        if (!rc) {
            ft = shard_file_footer(p->file);
            if (s->record >= ft->record_count)
                rc = SHARD_ECORRUPT;
        }
        size_t j = i + 1;
        uint64_t first = rc ? 0 : ft->rows[s->record].offset, end = first;
        if (!rc) { /* the run of consecutive records, up to FRAMES_AT_ONCE */
            end = first + ft->rows[s->record].frame_bytes;
            while (j < p->line_count && p->lines[j].shard == s->shard &&
                   p->lines[j].record == p->lines[j - 1].record + 1 &&
                   p->lines[j].record < ft->record_count &&
                   ft->rows[p->lines[j].record].offset == end &&
                   end + ft->rows[p->lines[j].record].frame_bytes - first <= FRAMES_AT_ONCE) {
                end += ft->rows[p->lines[j].record].frame_bytes;
                j++;
            }
            if (!p->map) {
                p->frame.len = 0;
                if ((rc = shard_buf_reserve(&p->frame, (size_t)(end - first), err)))
                    return rc;
                rc = sk_shard_file_read_range(p->file, first, p->frame.data, (size_t)(end - first),
                                              &why);
            }
        }
        const uint8_t *base = p->map ? p->map : p->frame.data; /* holds [first, end) */
        uint64_t base_at = p->map ? 0 : first;
        if (rc == SHARD_ENOMEM) {
            *err = why;
            return rc;
        }
        for (size_t k = i; k < j; k++) {
            const struct shard_sample *t = &p->lines[k];
            const uint8_t *frame = NULL;
            size_t len = 0;
            uint64_t xxh3 = 0;
            if (!rc) {
                const struct shard_index_row *row = &ft->rows[t->record];
                frame = base + (row->offset - base_at);
                len = (size_t)row->frame_bytes;
                xxh3 = XXH3_64bits(frame, len);
                if (row->key_len != t->key_len ||
                    memcmp(ft->keys + ft->key_offsets[t->record], t->key, t->key_len) ||
                    row->label != t->label || xxh3 != row->frame_xxh3)
                    frame = NULL;
            }
            if (!frame && !damaged_too)
                return shard_err_set(err, SHARD_ECORRUPT, "a previous record changed");
            int frc = fn(ctx, k, frame, frame ? len : 0, frame ? xxh3 : 0, err);
            if (frc)
                return frc;
        }
        if (p->map && !rc) { /* the run's pages out of this process's memory (not the cache) */
            uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from = (uintptr_t)p->map + first;
            uintptr_t to = (uintptr_t)p->map + end;
            from &= ~(page - 1);
            (void)madvise((void *)from, to - from, MADV_DONTNEED);
        }
        i = j;
    }
    return SHARD_OK;
}

/* ---- the previous entries of an archive converted again ---------------------------- */

static uint64_t *slot_of(const struct sk_prev_archives *p, const char *key, size_t len)
{
    return sk_key_slot(&p->keys, p->table, p->table_cap, key, len);
}

/* Entries of the archive converted last that no candidate named: removed. */
static void count_unseen(struct run *r)
{
    struct sk_prev_archives *p = r->prev_archives;
    for (size_t i = 0; i < p->keys.count; i++)
        r->lineage.removed += !p->entries[i].seen;
    shard_keylist_release(&p->keys);
    free(p->table);
    p->table = NULL;
    p->table_cap = 0;
}

static int add_entry(struct sk_prev_archives *p, const char *key, size_t len, int has_source,
                     uint64_t bytes, uint64_t xxh3, int damaged, struct shard_err *err)
{
    if (SK_GROW(p->entries, p->entry_cap, p->keys.count + 1, 64))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    p->entries[p->keys.count] = (struct entry){bytes, xxh3, (uint8_t)has_source, (uint8_t)damaged,
                                               0};
    return shard_keylist_add(&p->keys, key, len, err);
}

/* Archive `a`'s previous candidates (its samples in p->lines, damaged ones
 * marked, and its rejects) by key, for the lineage of its conversion. */
static int hold_entries(struct sk_prev_archives *p, const struct prev_archive *a,
                        const unsigned char *damaged, struct shard_err *err)
{
    uint64_t first, end;
    int rc = rejects_of(p, a, &first, &end, err);
    for (size_t i = 0; !rc && i < p->line_count; i++)
        rc = add_entry(p, p->lines[i].key, p->lines[i].key_len, 1, p->lines[i].source_bytes,
                       p->lines[i].source_xxh3, damaged && damaged[i], err);
    for (uint64_t i = first; !rc && i < end; i++) {
        const struct shard_reject *rj = &p->m.rejects[i];
        rc = add_entry(p, rj->key, rj->key_len, rj->has_source, rj->source_bytes, rj->source_xxh3,
                       0, err);
    }
    if (rc)
        return rc;
    p->table_cap = 64;
    while (p->table_cap < 2 * p->keys.count)
        p->table_cap *= 2;
    if (!(p->table = calloc(p->table_cap, sizeof *p->table)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->keys.count; i++) {
        size_t len;
        const char *key = shard_keylist_get(&p->keys, i, &len);
        uint64_t *slot = slot_of(p, key, len);
        if (*slot)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "previous dataset '%s': a key is listed twice", p->path);
        *slot = i + 1;
    }
    return SHARD_OK;
}

void sk_prev_archives_note(struct run *r, const char *key, size_t key_len, int has_source,
                           uint64_t source_bytes, uint64_t source_xxh3)
{
    struct sk_prev_archives *p = r->prev_archives;
    struct shard_lineage *l = &r->lineage;
    uint64_t n = p->table ? *slot_of(p, key, key_len) : 0;
    if (!n) {
        l->added++;
        return;
    }
    struct entry *e = &p->entries[n - 1];
    e->seen = 1;
    if (e->has_source != (has_source != 0) ||
        (has_source && (e->source_bytes != source_bytes || e->source_xxh3 != source_xxh3))) {
        l->changed++;
        return;
    }
    l->unchanged++;
    l->reconverted += e->damaged;
}

/* ---- taking an archive whole ------------------------------------------------------- */

struct copying {
    struct run *r;
    uint64_t pos;
};

static int copy_one(void *ctx, size_t i, const uint8_t *frame, size_t len, uint64_t xxh3,
                    struct shard_err *err)
{
    struct copying *cp = ctx;
    struct sk_prev_archives *p = cp->r->prev_archives;
    struct shard_sample smp = p->lines[i];
    return sk_assembler_sample(cp->r->as, cp->pos++, &smp, frame, len, xxh3, err);
}

struct checking {
    unsigned char *damaged; /* per line, or NULL while none is */
    size_t count;
};

static int check_one(void *ctx, size_t i, const uint8_t *frame, size_t len, uint64_t xxh3,
                     struct shard_err *err)
{
    struct checking *ck = ctx;
    if (frame)
        return SHARD_OK;
    if (!ck->damaged && !(ck->damaged = calloc(ck->count, 1)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    ck->damaged[i] = 1;
    return SHARD_OK;
}

/* Archive `a`'s samples (p->lines, their frames checked already) and rejects
 * into the shards, as positions pos_base on, the archive listed; its
 * orphans kept. */
static int reuse(struct run *r, size_t k, const struct prev_archive *a, struct shard_err *err)
{
    struct sk_prev_archives *p = r->prev_archives;
    uint64_t first, end, pos = r->pos_base;
    int rc = rejects_of(p, a, &first, &end, err);
    if (rc)
        return rc;
    if (p->line_count + (end - first) != a->a.candidates)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "previous dataset '%s': '%s' has %llu candidates in archives.jsonl, "
                             "%llu samples and rejects",
                             p->path, a->name, (unsigned long long)a->a.candidates,
                             (unsigned long long)(p->line_count + end - first));
    double t0 = sk_now_seconds();
    struct copying cp = {r, pos};
    rc = each_frame(p, 0, copy_one, &cp, err);
    pos = cp.pos;
    for (uint64_t i = first; !rc && i < end; i++) {
        const struct shard_reject *rj = &p->m.rejects[i];
        struct shard_reject copy = {
            .key = malloc(rj->key_len + 1),
            .key_len = rj->key_len,
            .reason = strdup(rj->reason),
            .has_source = rj->has_source,
            .source_bytes = rj->source_bytes,
            .source_xxh3 = rj->source_xxh3,
        };
        if (!copy.key || !copy.reason)
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else {
            memcpy(copy.key, rj->key, rj->key_len + 1);
            rc = sk_assembler_reject(r->as, pos++, &copy, err);
        }
        shard_reject_release(&copy);
    }
    for (uint64_t i = 0; !rc && i < p->m.orphan_count; i++) {
        const struct shard_orphan *o = &p->m.orphans[i];
        if (in_archive(o->key, o->key_len, a))
            rc = shard_keylist_add(&r->orphans, o->key, o->key_len, err);
    }
    r->timing.copy += sk_now_seconds() - t0;
    if (rc)
        return rc;
    struct shard_lineage *l = &r->lineage;
    l->unchanged += a->a.candidates;
    l->reused += p->line_count;
    l->rejected_again += end - first;
    r->stats.ignored += a->a.ignored;
    r->done += a->a.candidates;
    r->pos_base = pos;
    r->candidates_total += a->a.candidates;
    r->stats.candidates = r->candidates_total;
    sk_run_progress(r, 0);
    return sk_run_note_archive(r, k, &a->a, err);
}

/* Whether every sample's frame of the archive met can be taken: the lines'
 * records that cannot are marked in *damaged (malloc'd, or NULL when all
 * can). */
static int check_frames(struct sk_prev_archives *p, unsigned char **damaged, struct shard_err *err)
{
    struct checking ck = {NULL, p->line_count};
    int rc = each_frame(p, 1, check_one, &ck, err);
    *damaged = ck.damaged;
    return rc;
}

/* Previous archives before `name` (in the order of names) that the folder no
 * longer has: their lines read past, their candidates removed. */
static int skip_removed(struct run *r, const char *name, size_t len, struct shard_err *err)
{
    struct sk_prev_archives *p = r->prev_archives;
    while (p->next < p->count) {
        const struct prev_archive *a = &p->archives[p->next];
        if (name && sk_key_compare(a->name, a->name_len, name, len) >= 0)
            break;
        int rc = read_lines(p, a, a->a.samples, err);
        if (rc)
            return rc;
        r->lineage.removed += a->a.candidates;
        p->next++;
    }
    return SHARD_OK;
}

static int same_labels(const struct run *r, const struct shard_manifest *m)
{
    if (m->label_count != r->label_count)
        return 0;
    for (uint32_t i = 0; i < m->label_count; i++)
        if (strcmp(m->labels[i], r->label_names[i]))
            return 0;
    return 1;
}

int sk_prev_archives_take(struct run *r, size_t k, const struct sk_archive_line *now,
                          struct shard_err *err)
{
    struct sk_prev_archives *p = r->prev_archives;
    const char *name = r->archive_names[k];
    size_t len = strlen(name);
    if (p->keys.count || p->table) /* the archive converted before this one */
        count_unseen(r);
    if (k == r->archive_first)
        p->labels_same = same_labels(r, &p->m);
    int rc = skip_removed(r, name, len, err);
    if (rc || p->next >= p->count)
        return rc;
    const struct prev_archive *a = &p->archives[p->next];
    if (sk_key_compare(a->name, a->name_len, name, len) != 0)
        return SHARD_OK; /* a new archive: every candidate added */
    p->next++;
    if ((rc = read_lines(p, a, a->a.samples, err)))
        return rc;
    unsigned char *damaged = NULL;
    int unchanged = a->a.bytes == now->bytes && a->a.xxh3 == now->xxh3;
    if (unchanged && p->labels_same && !(rc = check_frames(p, &damaged, err)) && !damaged)
        return (rc = reuse(r, k, a, err)) ? rc : 1;
    if (!rc) /* converted again: counted against its previous candidates */
        rc = hold_entries(p, a, damaged, err);
    free(damaged);
    return rc;
}

int sk_prev_archives_finish(struct run *r, struct shard_err *err)
{
    struct sk_prev_archives *p = r->prev_archives;
    if (p->keys.count || p->table)
        count_unseen(r);
    int rc = skip_removed(r, NULL, 0, err);
    struct shard_sample s;
    int got = rc ? 0 : shard_index_reader_next(p->index, &s, err);
    if (!rc && got != 0)
        rc = got < 0 ? got
                     : shard_err_set(err, SHARD_ECORRUPT,
                                     "previous dataset '%s': its index holds more samples than "
                                     "its archives.jsonl",
                                     p->path);
    if (!rc && (rc = sk_manifest_index_check(&p->m, p->index, err)))
        shard_err_prefix(err, rc, "previous dataset '%s'", p->path);
    return rc;
}
