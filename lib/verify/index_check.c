/* index_check.c - the index lines of a share against its shards' footers
 * and the manifest (see verify_internal.h).
 *
 * Where a share's lines are: the lines of an index file are in the order
 * of their records, so a binary search on the file's bytes finds the first
 * line of a shard without reading the file from its start.  Part i of a
 * check reads the bytes [B(i), B(i + 1)) of each index file, B(i) the first
 * line of the part's first shard (0 and the file's size at the two ends),
 * so the parts' ranges tile every file whatever its lines hold (a damaged
 * file included: every part searches the same way).
 *
 * Each line is read once, one line in memory at a time, and checked on its
 * own: it parses, names declared fields and every required one, names a
 * record that exists and comes after the previous line's record (else it is
 * "listed again or out of order").  A line naming a record of the window
 * being walked is held to that record's footer (key, label) and gives the
 * record its size and fields for --deep; a line naming a record of a later
 * window of the share waits for it; any other (out of order, or another
 * part's record) is a stray.  At the end of a window, its records no line
 * named are "uncovered"; the combine settles strays against them: a stray
 * naming an uncovered record covers it (held to its key and label then),
 * and what stays uncovered is "not in the index".  So a line's problems do
 * not depend on the part that read it, nor on the window.
 *
 * Every line also counts for what the reports describe (dimensions, field
 * coverage, text lengths, warned samples) and its key, with its number, for
 * the key table's content (keys_check.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "manifest/keys.h"
#include "manifest/manifest_internal.h"
#include "read/dataset_internal.h"
#include "read/fetch.h"
#include "shardx/shardx.h"
#include "util/grow.h"
#include "verify/verify_internal.h"

/* Bytes one read of a segment takes. */
#define CHUNK_BYTES (1u << 20)
/* Bytes a binary search probe reads at first (more when a line is longer). */
#define PROBE_BYTES 4096u
/* Lines that do not parse a probe skips before it takes the end of the file. */
#define PROBE_MAX_LINES 64

/* One index file as the part reads its segment.  The files are read one
 * after another, each opened when its turn comes (or when a window needs to
 * know whether it can be read) and closed once read: a dataset merged from
 * a thousand parts has a thousand index files. */
enum segment_state {
    SEGMENT_NOT_OPENED = 0,
    SEGMENT_OPEN,      /* f open, the segment's bounds known */
    SEGMENT_DONE,      /* read to its end (or to a read error), closed */
    SEGMENT_UNREADABLE /* the file could not be opened: the part hashing it says why */
};

struct segment_reader {
    enum segment_state state;
    struct fetch_file *f;
    uint64_t pos, end;  /* the next byte to fetch, the segment's end */
    uint8_t *buf;       /* CHUNK_BYTES + a line, while reading */
    size_t off, len;    /* unread lines: buf[off, len) */
    int skipping;       /* inside a line too long to hold: dropping it to its newline */
    XXH3_state_t *hash; /* the whole file, hashed as it is read, or NULL */
    uint64_t bytes;     /* the file's size */
    uint64_t digest;    /* its xxh3, once hashed whole */
    int hashed;
    uint64_t xpow; /* the key mix's X^(lines read) */
    int failed;    /* a read failed */
};

struct sk_index_walk {
    struct segment_reader *files;
    uint8_t *probe; /* a binary search's reads */
    uint32_t file;  /* the one being read */
    uint64_t share_first, share_end;
    int holding; /* smp is a line of a later window's record */
    uint64_t held_g;
    struct sk_line_ref held_at;
    struct shard_sample smp;
    int have_prev;
    uint64_t prev_g;
};

/* ---- where a shard's lines begin -------------------------------------------- */

/* Up to `want` bytes at `off` (fewer at the end of the file) into buf. */
static int read_some(struct fetch_file *f, uint64_t off, uint8_t *buf, size_t want, size_t *got,
                     struct shard_err *err)
{
    *got = off >= f->size ? 0 : (f->size - off < want ? (size_t)(f->size - off) : want);
    return *got ? fetch_read(f, off, buf, *got, err) : SHARD_OK;
}

/* The first line starting at or after byte `pos`; f->size when none.  A
 * stretch of SK_INDEX_LINE_MAX_BYTES without a newline ends the search
 * there (a line that long is no line of ours). */
static int line_start(struct fetch_file *f, uint64_t pos, uint8_t *buf, uint64_t *start,
                      struct shard_err *err)
{
    if (pos == 0) {
        *start = 0;
        return SHARD_OK;
    }
    uint64_t off = pos - 1, scanned = 0;
    while (scanned <= SK_INDEX_LINE_MAX_BYTES) {
        size_t got;
        int rc = read_some(f, off, buf, PROBE_BYTES, &got, err);
        if (rc)
            return rc;
        if (!got)
            break;
        const uint8_t *nl = memchr(buf, '\n', got);
        if (nl) {
            *start = off + (uint64_t)(nl - buf) + 1;
            return SHARD_OK;
        }
        off += got;
        scanned += got;
    }
    *start = off < f->size ? off : f->size;
    return SHARD_OK;
}

/* The shard (as the file numbers it) of the first line at or after line
 * start `start` that parses (in a dataset of config c); UINT64_MAX when none
 * does before the end. */
static int shard_from(struct fetch_file *f, uint64_t start, const struct shard_config *c,
                      uint8_t *buf, uint64_t *shard, struct shard_err *err)
{
    *shard = UINT64_MAX;
    for (int tries = 0; tries < PROBE_MAX_LINES && start < f->size; tries++) {
        size_t got, want = PROBE_BYTES;
        const uint8_t *nl = NULL;
        for (;;) {
            int rc = read_some(f, start, buf, want, &got, err);
            if (rc)
                return rc;
            nl = memchr(buf, '\n', got);
            if (nl || got < want || want > SK_INDEX_LINE_MAX_BYTES)
                break;
            want = SK_INDEX_LINE_MAX_BYTES + 1;
        }
        size_t len = nl ? (size_t)(nl - buf) : got;
        struct shard_sample s;
        struct shard_reject rej;
        int rc = shard_line_parse_fields((const char *)buf, len, c, &s, &rej, NULL);
        if (rc == 1) {
            *shard = s.shard;
            shard_sample_release(&s);
            return SHARD_OK;
        }
        if (rc == 2)
            shard_reject_release(&rej);
        if (!nl)
            break;
        start += len + 1;
    }
    return SHARD_OK;
}

/* The first line of the file's shard `rel` (as the file numbers shards)
 * and after: the smallest position whose next parsing line names a shard
 * at or after rel, found by bisection. */
static int shard_offset(struct fetch_file *f, uint64_t rel, const struct shard_config *c,
                        uint8_t *buf, uint64_t *out, struct shard_err *err)
{
    uint64_t lo = 0, hi = f->size;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, start, shard;
        int rc = line_start(f, mid, buf, &start, err);
        if (!rc)
            rc = shard_from(f, start, c, buf, &shard, err);
        if (rc)
            return rc;
        if (shard >= rel)
            hi = mid;
        else
            lo = mid + 1;
    }
    return line_start(f, lo, buf, out, err);
}

/* The byte where part `part`'s segment of index file k begins: 0 for a part
 * starting at or before the file's shards, the file's size for one starting
 * after them, else the first line of the part's first shard. */
static int segment_bound(struct verify_run *v, struct fetch_file *f, uint32_t k, uint32_t part,
                         uint8_t *buf, uint64_t *out, struct shard_err *err)
{
    uint32_t a = v->share_starts[part];
    if (part == 0 || a <= v->file_first[k]) {
        *out = 0;
        return SHARD_OK;
    }
    if (part >= v->parts || a >= v->file_first[k + 1]) {
        *out = f->size;
        return SHARD_OK;
    }
    return shard_offset(f, a - v->file_first[k], &v->m->config, buf, out, err);
}

/* ---- reading a segment ------------------------------------------------------ */

/* The next line of r: 1 with it in *line, *len (newline included), 2 with a
 * line cut short (the end without a newline) or too long, 0 at the end,
 * or an error. */
static int next_line(struct segment_reader *r, const char **line, size_t *len,
                     struct shard_err *err)
{
    for (;;) {
        uint8_t *from = r->buf + r->off;
        uint8_t *nl = memchr(from, '\n', r->len - r->off);
        if (nl) {
            size_t n = (size_t)(nl - from) + 1;
            r->off += n;
            *line = (const char *)from;
            *len = n;
            if (r->skipping) {
                r->skipping = 0;
                return 2;
            }
            return n > SK_INDEX_LINE_MAX_BYTES ? 2 : 1;
        }
        if (r->len - r->off > SK_INDEX_LINE_MAX_BYTES) { /* no line of ours: drop it */
            r->skipping = 1;
            r->off = r->len;
        }
        if (r->pos >= r->end) {
            if (r->off == r->len && !r->skipping)
                return 0;
            *line = (const char *)from;
            *len = r->len - r->off;
            r->off = r->len;
            r->skipping = 0;
            return 2;
        }
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
        size_t want = r->end - r->pos < CHUNK_BYTES ? (size_t)(r->end - r->pos) : CHUNK_BYTES;
        int rc = fetch_read(r->f, r->pos, r->buf + r->len, want, err);
        if (rc)
            return rc;
        if (r->hash)
            XXH3_64bits_update(r->hash, r->buf + r->len, want);
        r->pos += want;
        r->len += want;
    }
}

/* Open index file k for the part: its segment's bounds (binary searches),
 * and whether the part hashes it as it reads it.  0, or SHARD_ENOMEM; a file
 * that cannot be read is SEGMENT_UNREADABLE (or a problem, when it fails
 * past its opening). */
static int open_segment(struct verify_run *v, struct sk_index_walk *w, uint32_t k)
{
    struct sk_part *p = v->part;
    struct segment_reader *r = &w->files[k];
    struct sk_segment *seg = &p->segments[k];
    int mine = v->file_first[k] < p->end_shard && v->file_first[k + 1] > p->first_shard;
    struct shard_err e;
    uint64_t start, end;
    r->state = SEGMENT_UNREADABLE;
    if (sk_dataset_open_file(v->ds, v->m->indexes[k].file, &r->f, &e))
        return SHARD_OK; /* the part hashing it says why */
    int rc = segment_bound(v, r->f, k, p->part, w->probe, &start, &e);
    if (!rc)
        rc = segment_bound(v, r->f, k, p->part + 1, w->probe, &end, &e);
    if (rc) {
        fetch_close(r->f);
        r->f = NULL;
        if (rc != SHARD_ENOMEM)
            sk_verify_problem(v, SHARD_CHECK_INDEX, rc, -1, -1, NULL, 0, "%s: cannot read: %s",
                              v->m->indexes[k].file, e.msg);
        return rc == SHARD_ENOMEM ? rc : SHARD_OK;
    }
    seg->start = start;
    seg->end = end > start ? end : start;
    r->pos = seg->start;
    r->end = seg->end;
    r->bytes = r->f->size;
    r->state = SEGMENT_OPEN;
    if (!mine && seg->end == seg->start) /* nothing of it is the part's */
        return SHARD_OK;
    /* a part reading the file whole and hashing it hashes it as it reads */
    if (seg->start == 0 && seg->end == r->f->size && sk_verify_hashes_index(v, p->part, k)) {
        if (!(r->hash = XXH3_createState()))
            return SHARD_ENOMEM;
        XXH3_64bits_reset(r->hash);
    }
    return SHARD_OK;
}

/* Segment k is read (or failed): let its file go. */
static void close_segment(struct verify_run *v, struct segment_reader *r, uint32_t k)
{
    v->part->segments[k].complete = !r->failed;
    if (r->hash && !r->failed) {
        r->digest = XXH3_64bits_digest(r->hash);
        r->hashed = 1;
    }
    XXH3_freeState(r->hash);
    r->hash = NULL;
    fetch_close(r->f);
    r->f = NULL;
    free(r->buf);
    r->buf = NULL;
    r->state = SEGMENT_DONE;
}

/* Whether index file k can be read (opened now when not yet). */
static int segment_readable(struct verify_run *v, struct sk_index_walk *w, uint32_t k, int *rc)
{
    if (w->files[k].state == SEGMENT_NOT_OPENED)
        *rc = open_segment(v, w, k);
    return w->files[k].state != SEGMENT_UNREADABLE;
}

/* ---- one line --------------------------------------------------------------- */

/* The counts a line adds to what the reports describe. */
static int count_line(struct verify_run *v, const struct shard_sample *smp)
{
    struct sk_part *p = v->part;
    const struct shard_config *c = &v->m->config;
    int rc = sk_tally_add(&p->dimensions, (uint64_t)smp->width << 32 | smp->height, 1);
    for (uint32_t i = 0; !rc && i < smp->field_count; i++) {
        uint32_t f = smp->fields[i].field; /* declared: the line parsed */
        p->field_lines[f]++;
        p->sidecars += c->fields[f].sidecar != NULL;
        if (c->fields[f].type == SHARD_FIELD_TEXT)
            rc = sk_tally_add(&p->text_lengths[f], smp->fields[i].source_bytes, 1);
    }
    if (rc || !smp->warning)
        return rc;
    p->warned++;
    return sk_verify_keep_warned(&p->warned_samples, &p->warned_count, smp->key, smp->key_len,
                                 smp->warning);
}

/* A line in file k that does not parse (or cannot be a line). */
static void bad_line(struct verify_run *v, uint32_t k, const struct sk_line_ref *at,
                     const char *why)
{
    v->part->segments[k].bad_lines++;
    sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_ECORRUPT, -1, -1, NULL, 0, at,
                           "%s line " SK_LINE_MARK "%s", v->m->indexes[k].file, why);
}

/* Line `at` names record g, not after the previous line's. */
void sk_verify_out_of_order(struct verify_run *v, const struct sk_line_ref *at, uint64_t g,
                            const char *key, size_t len)
{
    uint32_t s;
    uint64_t r;
    shard_dataset_locate(v->ds, g, &s, &r, NULL);
    char q[SHARDX_QUOTE_SIZE];
    sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len, at,
                           "%s line " SK_LINE_MARK " (key '%s'): %s record %llu is listed again or "
                           "out of order",
                           v->m->indexes[at->file].file, shardx_quote(key, len, q, sizeof q),
                           v->m->shards[s].file, (unsigned long long)r);
}

/* Read line `line` of file k (kind: 1 a line, 2 cut short or too long):
 * its counts, and what it says on its own.  1 with the record it names in
 * *g, 0 when it names none, or SHARD_ENOMEM. */
static int take_line(struct verify_run *v, struct sk_index_walk *w, uint32_t k, const char *line,
                     size_t len, int kind, struct sk_line_ref *at, uint64_t *g)
{
    struct sk_part *p = v->part;
    const struct shard_manifest *m = v->m;
    struct sk_segment *seg = &p->segments[k];
    struct segment_reader *r = &w->files[k];
    *at = (struct sk_line_ref){p->part, k, seg->lines};
    seg->lines++;
    size_t body = len && line[len - 1] == '\n' ? len - 1 : len;
    uint64_t h, xpow = r->xpow; /* X^(its number in the segment) */
    r->xpow = sk_keys_next_power(xpow);
    if (!sk_keys_line_hash(line, body, &h, NULL)) /* else the table can hold none of it */
        seg->key_sum = sk_keys_add(seg->key_sum, sk_keys_term(h, xpow));
    if (kind == 2) {
        bad_line(v, k, at, " is cut short or too long");
        return 0;
    }
    struct shard_err e;
    struct shard_reject rej;
    shard_sample_release(&w->smp);
    int rc = shard_line_parse_fields(line, body, &m->config, &w->smp, &rej, &e);
    if (rc == 2) {
        shard_reject_release(&rej);
        bad_line(v, k, at, " is not a sample");
        return 0;
    }
    if (rc < 0) {
        if (rc == SHARD_ENOMEM)
            return rc;
        char why[SHARD_ERRMSG_SIZE + 2];
        snprintf(why, sizeof why, ": %s", e.msg);
        bad_line(v, k, at, why);
        return 0;
    }
    const struct shard_sample *smp = &w->smp;
    if ((rc = count_line(v, smp)))
        return rc;
    char q[SHARDX_QUOTE_SIZE];
    uint32_t first = v->file_first[k], count = v->file_first[k + 1] - first;
    uint32_t s = first + smp->shard;
    if (smp->shard >= count || smp->record >= m->shards[s].samples) {
        sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, smp->key,
                               smp->key_len, at,
                               "%s line " SK_LINE_MARK
                               " (key '%s'): shard %u record %llu does not exist",
                               m->indexes[k].file,
                               shardx_quote(smp->key, smp->key_len, q, sizeof q), smp->shard,
                               (unsigned long long)smp->record);
        return 0;
    }
    *g = sk_dataset_shard_first(v->ds, s) + smp->record;
    if (smp->label != SHARD_NO_LABEL && (uint32_t)smp->label >= m->label_count)
        sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)smp->record,
                               smp->key, smp->key_len, at,
                               "%s line " SK_LINE_MARK " (key '%s'): label %d does not exist",
                               m->indexes[k].file,
                               shardx_quote(smp->key, smp->key_len, q, sizeof q), smp->label);
    if (w->have_prev && *g <= w->prev_g)
        sk_verify_out_of_order(v, at, *g, smp->key, smp->key_len);
    if (!p->first.have) {
        if (!(p->first.key = malloc(smp->key_len + 1)))
            return SHARD_ENOMEM;
        memcpy(p->first.key, smp->key, smp->key_len + 1);
        p->first.key_len = smp->key_len;
        p->first.g = *g;
        p->first.at = *at;
        p->first.have = 1;
    }
    w->have_prev = 1;
    w->prev_g = *g;
    p->have_last = 1;
    p->last_g = *g;
    return 1;
}

void sk_verify_line_against_record(struct verify_run *v, uint64_t g, const char *key, size_t len,
                                   int32_t label, const struct sk_line_ref *at,
                                   const char *line_key, size_t line_len, int32_t line_label)
{
    uint32_t s;
    uint64_t r;
    shard_dataset_locate(v->ds, g, &s, &r, NULL);
    const char *file = v->m->shards[s].file, *index = v->m->indexes[at->file].file;
    char q[SHARDX_QUOTE_SIZE], q2[SHARDX_QUOTE_SIZE];
    if (len != line_len || memcmp(key, line_key, len))
        sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len, at,
                               "%s record %llu (key '%s'): %s line " SK_LINE_MARK " names key '%s'",
                               file, (unsigned long long)r, shardx_quote(key, len, q, sizeof q),
                               index, shardx_quote(line_key, line_len, q2, sizeof q2));
    else if (label != line_label)
        sk_verify_line_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len, at,
                               "%s record %llu (key '%s'): label %d, %s line " SK_LINE_MARK
                               " says %d",
                               file, (unsigned long long)r, shardx_quote(key, len, q, sizeof q),
                               label, index, line_label);
}

void sk_verify_not_in_index(struct verify_run *v, uint64_t g, const char *key, size_t len)
{
    uint32_t s;
    uint64_t r;
    shard_dataset_locate(v->ds, g, &s, &r, NULL);
    const char *file = v->m->shards[s].file, *index = sk_verify_index_name(v, s);
    char q[SHARDX_QUOTE_SIZE];
    if (key)
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, key, len,
                          "%s record %llu (key '%s'): not in %s", file, (unsigned long long)r,
                          shardx_quote(key, len, q, sizeof q), index);
    else
        sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, s, (int64_t)r, NULL, 0,
                          "%s record %llu: not in %s", file, (unsigned long long)r, index);
}

/* A copy of key[0..len) with a NUL after it, or NULL. */
static char *copy_key(const char *key, size_t len)
{
    char *out = malloc(len + 1);
    if (out) {
        memcpy(out, key, len);
        out[len] = '\0';
    }
    return out;
}

/* The line just taken (w->smp, at `at`) names record g of the window. */
static void line_in_window(struct verify_run *v, struct sk_index_walk *w, uint64_t g,
                           const struct sk_line_ref *at)
{
    const struct shard_sample *smp = &w->smp;
    uint64_t slot = sk_verify_slot(v, g);
    if (v->index_hits[slot] < UINT8_MAX)
        v->index_hits[slot]++;
    if (v->index_hits[slot] == 1) { /* the first line naming it gives its size */
        v->index_width[slot] = smp->width;
        v->index_height[slot] = smp->height;
    }
    sk_verify_index_line_fields(v, g, smp, at);
    uint32_t s;
    uint64_t r;
    shard_dataset_locate(v->ds, g, &s, &r, NULL);
    size_t len;
    const char *key = sk_verify_footer_key(v, s, r, &len);
    if (key) /* else the shard was reported */
        sk_verify_line_against_record(v, g, key, len, v->footers[s]->rows[r].label, at, smp->key,
                                      smp->key_len, smp->label);
}

/* The line just taken names record g outside the window: the combine
 * settles it against the records no line named. */
static int line_astray(struct verify_run *v, struct sk_index_walk *w, uint64_t g,
                       const struct sk_line_ref *at)
{
    struct sk_part *p = v->part;
    const struct shard_sample *smp = &w->smp;
    sk_verify_index_line_fields(v, g, smp, at);
    if (p->stray_count >= SHARD_VERIFY_MAX_PROBLEMS) {
        p->lost++;
        return SHARD_OK;
    }
    if (SK_GROW(p->strays, p->stray_cap, p->stray_count + 1, 16))
        return SHARD_ENOMEM;
    struct sk_stray *st = &p->strays[p->stray_count];
    if (!(st->key = copy_key(smp->key, smp->key_len)))
        return SHARD_ENOMEM;
    st->key_len = smp->key_len;
    st->g = g;
    st->at = *at;
    st->label = smp->label;
    p->stray_count++;
    return SHARD_OK;
}

/* Where the window's samples end (the share's end when there is none). */
static uint64_t window_stop(const struct verify_run *v)
{
    return v->window_first + v->window_samples;
}

/* Read lines of the share's segments in order until one names a record of a
 * later window (held for it) or the segments end.  0 or SHARD_ENOMEM. */
static int read_lines(struct verify_run *v, struct sk_index_walk *w, int last)
{
    if (w->holding) {
        if (!last && w->held_g >= window_stop(v))
            return SHARD_OK;
        w->holding = 0;
        if (sk_verify_in_window(v, w->held_g))
            line_in_window(v, w, w->held_g, &w->held_at);
        else if (line_astray(v, w, w->held_g, &w->held_at))
            return SHARD_ENOMEM;
    }
    while (w->file < v->index_files) {
        uint32_t k = w->file;
        struct segment_reader *r = &w->files[k];
        struct shard_err e;
        const char *line = NULL;
        size_t len = 0;
        int rc = SHARD_OK;
        if (!segment_readable(v, w, k, &rc) || r->state == SEGMENT_DONE) {
            if (rc)
                return rc;
            w->file++; /* nothing (more) of it to read */
            continue;
        }
        if (!r->buf && !(r->buf = malloc(CHUNK_BYTES + SK_INDEX_LINE_MAX_BYTES + 1)))
            return SHARD_ENOMEM;
        rc = next_line(r, &line, &len, &e);
        if (rc <= 0) {
            if (rc == SHARD_ENOMEM)
                return rc;
            if (rc < 0) {
                sk_verify_problem(v, SHARD_CHECK_INDEX, rc, -1, -1, NULL, 0, "%s: cannot read: %s",
                                  v->m->indexes[k].file, e.msg);
                r->failed = 1;
            }
            close_segment(v, r, k);
            w->file++;
            continue;
        }
        struct sk_line_ref at;
        uint64_t g = 0;
        if ((rc = take_line(v, w, k, line, len, rc, &at, &g)) <= 0) {
            if (rc < 0)
                return rc;
            continue;
        }
        if (sk_verify_in_window(v, g)) {
            line_in_window(v, w, g, &at);
        } else if (!last && g >= window_stop(v) && g < w->share_end) {
            w->holding = 1;
            w->held_g = g;
            w->held_at = at;
            return SHARD_OK;
        } else if ((rc = line_astray(v, w, g, &at))) {
            return rc;
        }
    }
    return SHARD_OK;
}

int sk_verify_index_window(struct verify_run *v, struct shard_err *err)
{
    int rc = read_lines(v, v->walk, 0);
    return rc ? shard_err_set(err, rc, "out of memory reading the index") : SHARD_OK;
}

int sk_verify_index_window_end(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    for (uint64_t slot = 0; slot < v->window_samples; slot++) {
        if (v->index_hits[slot])
            continue;
        uint64_t g = v->window_first + slot;
        uint32_t s;
        uint64_t r;
        shard_dataset_locate(v->ds, g, &s, &r, NULL);
        int rc = SHARD_OK;
        if (!segment_readable(v, v->walk, sk_verify_file_of(v, s), &rc)) {
            if (rc)
                return shard_err_set(err, rc, "out of memory");
            continue; /* its index file could not be read: reported as such */
        }
        if (p->uncovered_count >= SHARD_VERIFY_MAX_PROBLEMS) {
            p->lost++;
            continue;
        }
        if (SK_GROW(p->uncovered, p->uncovered_cap, p->uncovered_count + 1, 16))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        struct sk_uncovered *u = &p->uncovered[p->uncovered_count];
        memset(u, 0, sizeof *u);
        u->g = g;
        size_t len;
        const char *key = sk_verify_footer_key(v, s, r, &len);
        if (key) {
            if (!(u->key = copy_key(key, len)))
                return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            u->key_len = len;
            u->have_key = 1;
            u->label = v->footers[s]->rows[r].label;
        }
        p->uncovered_count++;
    }
    return SHARD_OK;
}

/* ---- the share's segments ------------------------------------------------------ */

int sk_verify_index_begin(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    struct sk_index_walk *w = calloc(1, sizeof *w);
    if (!w || !(w->probe = malloc(SK_INDEX_LINE_MAX_BYTES + PROBE_BYTES)) ||
        !(w->files = calloc(v->index_files, sizeof *w->files))) {
        if (w)
            free(w->probe);
        free(w);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    v->walk = w;
    w->share_first = sk_dataset_shard_first(v->ds, p->first_shard);
    w->share_end = sk_dataset_shard_first(v->ds, p->end_shard);
    for (uint32_t k = 0; k < v->index_files; k++)
        w->files[k].xpow = 1; /* X^0 */
    return SHARD_OK;
}

int sk_verify_index_end(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    struct sk_index_walk *w = v->walk;
    v->window_samples = 0; /* every line left names a record outside the walk */
    int rc = read_lines(v, w, 1);
    if (rc)
        return shard_err_set(err, rc, "out of memory reading the index");
    for (uint32_t k = 0; k < v->index_files; k++) {
        if (!sk_verify_hashes_index(v, p->part, k))
            continue;
        const struct segment_reader *r = &w->files[k];
        const struct shard_manifest_index *x = &v->m->indexes[k];
        if (r->hashed) /* read whole */
            sk_verify_identity(v, SHARD_CHECK_INDEX, -1, x->file, r->bytes, r->digest, x->bytes,
                               x->xxh3);
        else
            sk_verify_hash_file(v, SHARD_CHECK_INDEX, -1, x->file, x->bytes, x->xxh3, NULL);
    }
    return SHARD_OK;
}

void sk_verify_index_close(struct verify_run *v)
{
    struct sk_index_walk *w = v->walk;
    if (!w)
        return;
    for (uint32_t k = 0; w->files && k < v->index_files; k++) {
        fetch_close(w->files[k].f);
        free(w->files[k].buf);
        XXH3_freeState(w->files[k].hash);
    }
    free(w->files);
    free(w->probe);
    shard_sample_release(&w->smp);
    free(w);
    v->walk = NULL;
}
