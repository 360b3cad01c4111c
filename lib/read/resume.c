/* resume.c - the plan of an epoch resumed on another number of ranks (the
 * rules: shardkit/dataset.h, "The rest of an epoch").
 *
 * What is left of an epoch is kept as runs of positions of the epoch
 * sequence, never as the whole sequence: each rank's untaken entries are
 * those of the window it stopped in (at most a buffer's worth, listed)
 * and then a contiguous piece of the segment's list, so the rest of an
 * epoch of N samples stopped by W ranks is about W runs, and W buffers'
 * worth of single positions.  Only the new rank's own plan is listed, as
 * an ordinary plan is. */
#include <stdlib.h>
#include <string.h>

#include "read/plan_internal.h"
#include "util/random.h"

/* Positions at, at + 1, ..., at + len - 1 of the epoch sequence. */
struct run {
    uint64_t at, len;
};

/* A segment's list S_k: runs of positions, m of them in all, and where each
 * run starts in the list; its fillers F_k; the seed of its windows. */
struct segment {
    struct run *runs;
    uint64_t *starts; /* starts[i]: the list index of runs[i]'s first position */
    size_t n, cap;
    uint64_t m;
    uint64_t *fill;
    size_t fill_n;
    uint64_t seed;
};

static void segment_release(struct segment *s)
{
    free(s->runs);
    free(s->starts);
    free(s->fill);
    memset(s, 0, sizeof *s);
}

/* Append positions at..at+len-1 to s's list (joined to the last run when
 * they continue it).  0 or -1 (out of memory). */
static int push_run(struct segment *s, uint64_t at, uint64_t len)
{
    if (!len)
        return 0;
    if (s->n && s->runs[s->n - 1].at + s->runs[s->n - 1].len == at) {
        s->runs[s->n - 1].len += len;
        s->m += len;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct run *r = realloc(s->runs, cap * sizeof *r);
        if (!r)
            return -1;
        s->runs = r;
        s->cap = cap;
        uint64_t *st = realloc(s->starts, cap * sizeof *st);
        if (!st)
            return -1;
        s->starts = st;
    }
    s->runs[s->n] = (struct run){at, len};
    s->starts[s->n] = s->m;
    s->n++;
    s->m += len;
    return 0;
}

/* The run of s holding list index i (< s->m). */
static size_t run_of(const struct segment *s, uint64_t i)
{
    size_t lo = 0, hi = s->n; /* starts[lo] <= i < starts[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->starts[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The position of list index i of s: an entry (i < m), or a filler. */
static uint64_t position_of(const struct segment *s, uint64_t i)
{
    if (i >= s->m) {
        if (s->fill_n)
            return s->fill[(i - s->m) % s->fill_n];
        i %= s->m;
    }
    size_t r = run_of(s, i);
    return s->runs[r].at + (i - s->starts[r]);
}

/* Append s's list entries [from, to) (to <= s->m) to d's list. */
static int copy_range(struct segment *d, const struct segment *s, uint64_t from, uint64_t to)
{
    if (from >= to)
        return 0;
    for (size_t r = run_of(s, from); r < s->n && s->starts[r] < to; r++) {
        uint64_t a = s->starts[r] > from ? s->starts[r] : from;
        uint64_t b = s->starts[r] + s->runs[r].len < to ? s->starts[r] + s->runs[r].len : to;
        if (push_run(d, s->runs[r].at + (a - s->starts[r]), b - a))
            return -1;
    }
    return 0;
}

/* What every segment's rank lists are made with. */
struct resume {
    const struct sk_epoch_seq *q;
    const struct shard_plan_options *o;
    int windowed; /* the lists are shuffled in windows of q->window */
};

/* Rank r of w's slice [*b, *e) of a list of m entries by remainder rem. */
static void slice_of(const struct resume *c, uint64_t m, uint32_t w, uint32_t r,
                     enum shard_remainder rem, uint64_t *b, uint64_t *e)
{
    struct shard_plan_options o = *c->o;
    o.world_size = w;
    o.rank = r;
    o.remainder = rem;
    uint64_t dropped;
    sk_plan_rank_slice(m, &o, b, e, &dropped);
}

/* Window j of the rank r whose slice of s is [b, e): its list indices, in
 * its plan order, into buf (room for the window); how many. */
static uint64_t window_of(const struct resume *c, const struct segment *s, uint32_t r, uint64_t b,
                          uint64_t e, uint64_t j, uint64_t *buf)
{
    const uint64_t B = c->q->window, from = b + j * B;
    const uint64_t len = e - from < B ? e - from : B;
    for (uint64_t i = 0; i < len; i++)
        buf[i] = from + i;
    sk_shuffle(buf, (size_t)len, sk_derive(s->seed, SK_TAG_WINDOW, c->o->epoch, r, j));
    return len;
}

/* The window buffer: room for one window of a slice of `longest` entries. */
static uint64_t *window_buffer(const struct resume *c, uint64_t longest)
{
    uint64_t len = c->q->window < longest ? c->q->window : longest;
    return malloc((len ? len : 1) * sizeof(uint64_t));
}

/* F_{k+1}: the first `want` entries of rank 0's plan of segment s (slice
 * [b, e)), fillers left out, as positions; F_k when there are none. */
static int first_entries(const struct resume *c, const struct segment *s, uint64_t b, uint64_t e,
                         uint64_t want, struct segment *next)
{
    uint64_t *pos = malloc((want ? want : 1) * sizeof *pos), *buf = NULL;
    if (!pos)
        return -1;
    size_t n = 0;
    if (c->windowed && want) {
        if (!(buf = window_buffer(c, e - b))) {
            free(pos);
            return -1;
        }
        for (uint64_t j = 0, got = 0; got < want; j++) {
            uint64_t len = window_of(c, s, 0, b, e, j, buf);
            for (uint64_t q = 0; q < len && got < want; q++, got++)
                if (buf[q] < s->m)
                    pos[n++] = position_of(s, buf[q]);
        }
    } else {
        for (uint64_t i = b; i < b + want; i++)
            if (i < s->m)
                pos[n++] = position_of(s, i);
    }
    free(buf);
    if (!n && s->fill_n) { /* rank 0 took nothing: the fillers stay */
        uint64_t *kept = realloc(pos, s->fill_n * sizeof *pos);
        if (!kept) {
            free(pos);
            return -1;
        }
        pos = kept;
        memcpy(pos, s->fill, s->fill_n * sizeof *pos);
        n = s->fill_n;
    }
    next->fill = pos;
    next->fill_n = n;
    return 0;
}

/* From segment s, read by the ranks of d that each took d->taken entries
 * of their plans, the next segment's list and fillers (w_next: its ranks). */
static int next_segment(const struct resume *c, const struct segment *s,
                        const struct shard_plan_segment *d, uint32_t w_next, struct segment *next)
{
    const uint32_t w = d->world_size;
    const uint64_t taken = d->taken;
    uint64_t longest = 0, b, e;
    for (uint32_t r = 0; r < w; r++) {
        slice_of(c, s->m, w, r, d->remainder, &b, &e);
        longest = e - b > longest ? e - b : longest;
    }
    uint64_t *buf = c->windowed ? window_buffer(c, longest) : NULL;
    if (c->windowed && !buf)
        return -1;
    int rc = 0;
    for (uint32_t r = 0; r < w && !rc; r++) {
        slice_of(c, s->m, w, r, d->remainder, &b, &e);
        const uint64_t n = e - b, t = taken < n ? taken : n;
        uint64_t rest = t; /* list index (from b) where the untaken slice goes on */
        if (c->windowed && t % c->q->window) {
            const uint64_t j = t / c->q->window;
            const uint64_t len = window_of(c, s, r, b, e, j, buf);
            for (uint64_t q = t % c->q->window; q < len && !rc; q++)
                if (buf[q] < s->m)
                    rc = push_run(next, position_of(s, buf[q]), 1);
            rest = j * c->q->window + len;
        }
        const uint64_t end = e < s->m ? e : s->m;
        if (!rc)
            rc = copy_range(next, s, b + rest, end);
        if (!rc && r == 0)
            rc = first_entries(c, s, b, e, t < w_next ? t : w_next, next);
    }
    free(buf);
    return rc;
}

struct placed {
    uint64_t pos;
    uint64_t at; /* index in the plan */
};

static int by_position(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : (x->at > y->at) - (x->at < y->at);
}

/* Rank o->rank's plan of segment s: its slice, shuffled in windows, each
 * position looked up. */
static int final_plan(const struct resume *c, const struct segment *s, struct shard_plan **out,
                      struct shard_err *err)
{
    const struct shard_plan_options *o = c->o;
    uint64_t b, e;
    slice_of(c, s->m, o->world_size, o->rank, o->remainder, &b, &e);
    const uint64_t n = e - b;
    if (n > SIZE_MAX / sizeof(struct placed))
        return shard_err_set(err, SHARD_ENOMEM, "plan of %llu entries is too large",
                             (unsigned long long)n);
    uint64_t *list = malloc((n ? n : 1) * sizeof *list);
    struct placed *p = malloc((n ? n : 1) * sizeof *p);
    uint64_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    uint64_t *got = malloc((n ? n : 1) * sizeof *got);
    int rc = SHARD_OK;
    if (!list || !p || !sorted || !got) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot allocate a plan of %llu entries",
                           (unsigned long long)n);
        goto out;
    }
    uint64_t padded = 0;
    for (uint64_t i = 0; i < n; i++)
        list[i] = b + i;
    if (c->windowed)
        for (uint64_t j = 0; j * c->q->window < n; j++) {
            uint64_t len = n - j * c->q->window;
            len = len < c->q->window ? len : c->q->window;
            sk_shuffle(list + j * c->q->window, (size_t)len,
                       sk_derive(s->seed, SK_TAG_WINDOW, o->epoch, o->rank, j));
        }
    for (uint64_t i = 0; i < n; i++) {
        padded += list[i] >= s->m;
        p[i] = (struct placed){position_of(s, list[i]), i};
    }
    qsort(p, (size_t)n, sizeof *p, by_position);
    for (uint64_t i = 0; i < n; i++)
        sorted[i] = p[i].pos;
    if (n && (rc = c->q->lookup(c->q->ctx, sorted, (size_t)n, got, err)))
        goto out;
    for (uint64_t i = 0; i < n; i++)
        list[p[i].at] = got[i];
    uint64_t dropped = 0;
    if (o->remainder == SHARD_REMAINDER_DROP)
        dropped = s->m - (s->m / o->world_size) * o->world_size;
    if (!(*out = sk_plan_adopt(list, n, padded, dropped, s->m)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    list = NULL;
out:
    free(list);
    free(p);
    free(sorted);
    free(got);
    return rc;
}

int sk_plan_resumed(const struct sk_epoch_seq *q, const struct shard_plan_options *o,
                    const struct shard_plan_segment *done, size_t count, struct shard_plan **out,
                    struct shard_err *err)
{
    *out = NULL;
    if (o->world_size == 0 || o->rank >= o->world_size)
        return shard_err_set(err, SHARD_EINVAL, "rank %u is outside a world of %u", o->rank,
                             o->world_size);
    if ((unsigned)o->remainder > SHARD_REMAINDER_PAD)
        return shard_err_set(err, SHARD_EINVAL, "unknown remainder option %d", o->remainder);
    for (size_t k = 0; k < count; k++) {
        if (done[k].world_size == 0)
            return shard_err_set(err, SHARD_EINVAL, "segment %zu of the epoch has no ranks", k);
        if ((unsigned)done[k].remainder > SHARD_REMAINDER_PAD)
            return shard_err_set(err, SHARD_EINVAL, "segment %zu: unknown remainder option %d", k,
                                 done[k].remainder);
    }
    const struct resume c = {q, o, o->shuffle && q->window > 1};
    struct segment s = {0}, next = {0};
    s.seed = o->seed;
    int rc = SHARD_OK;
    if (push_run(&s, 0, q->length))
        goto oom;
    for (size_t k = 0; k < count; k++) {
        const uint32_t w_next = k + 1 < count ? done[k + 1].world_size : o->world_size;
        next.seed = sk_derive(o->seed, SK_TAG_RESUMED, o->epoch, k + 1, 0);
        if (next_segment(&c, &s, &done[k], w_next, &next))
            goto oom;
        segment_release(&s);
        s = next;
        memset(&next, 0, sizeof next);
    }
    rc = final_plan(&c, &s, out, err);
    goto out;
oom:
    rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
out:
    segment_release(&s);
    segment_release(&next);
    return rc;
}
