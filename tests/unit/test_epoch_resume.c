/* test_epoch_resume.c - an epoch stopped by W ranks in lockstep and resumed
 * on W' ranks (and stopped again and resumed on W''): with no segment the
 * plan is the ordinary one; over W, W' in {1, 2, 3, 8}, stop points,
 * remainders, buffers and seeds, the rest of the epoch is visited exactly
 * once across the new ranks (keep: nothing else; pad: every rank the same
 * count, the fillers visited before the stop; drop: every rank the same
 * count, nothing twice); and the plan is exactly what shardkit/dataset.h
 * specifies, re-implemented here from its text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit.h"
#include "spec.h"

struct layout {
    const char *name;
    uint32_t shards;
    uint64_t counts[17];
};

static const struct layout layouts[] = {
    {"empty dataset", 0, {0}},
    {"one sample", 1, {1}},
    {"uneven", 4, {1, 2, 3, 100}},
    {"many small", 17, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2}},
    {"two big", 2, {500, 499}},
};

static const uint32_t worlds[] = {1, 2, 3, 8};
static const uint64_t buffers[] = {0, 3, 1024};
static const enum shard_remainder remainders[] = {SHARD_REMAINDER_KEEP, SHARD_REMAINDER_DROP,
                                                  SHARD_REMAINDER_PAD};

static uint64_t total(const struct layout *l)
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < l->shards; s++)
        n += l->counts[s];
    return n;
}

struct config {
    const struct layout *l;
    uint64_t seed, epoch, buffer;
    enum shard_remainder rem;
};

static struct shard_plan_options options_of(const struct config *c, uint32_t rank, uint32_t world)
{
    return spec_plan_options(c->seed, c->epoch, rank, world, c->buffer, c->rem);
}

static struct shard_plan *resumed(const struct config *c, uint32_t rank, uint32_t world,
                                  const struct shard_plan_segment *done, size_t count)
{
    struct shard_plan_options o = options_of(c, rank, world);
    struct shard_plan *p;
    struct shard_err err;
    if (shard_plan_new_resumed(&p, c->l->counts, c->l->shards, &o, done, count, &err))
        fail_msg("%s: %s", c->l->name, err.msg);
    return p;
}

static void test_with_no_segment_the_plan_is_the_ordinary_one(void **state)
{
    (void)state;
    for (size_t li = 0; li < sizeof layouts / sizeof *layouts; li++)
        for (size_t bi = 0; bi < sizeof buffers / sizeof *buffers; bi++)
            for (size_t ri = 0; ri < 3; ri++)
                for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++)
                    for (uint32_t r = 0; r < worlds[wi]; r++) {
                        struct config c = {&layouts[li], 99, 3, buffers[bi], remainders[ri]};
                        struct shard_plan_options o = options_of(&c, r, worlds[wi]);
                        struct shard_plan *want, *got = resumed(&c, r, worlds[wi], NULL, 0);
                        struct shard_err err;
                        assert_int_equal(shard_plan_new(&want, c.l->counts, c.l->shards, &o, &err),
                                         0);
                        assert_int_equal(shard_plan_count(got), shard_plan_count(want));
                        if (shard_plan_count(want))
                            assert_memory_equal(shard_plan_indices(got), shard_plan_indices(want),
                                                shard_plan_count(want) * sizeof(uint64_t));
                        assert_int_equal(shard_plan_padded(got), shard_plan_padded(want));
                        assert_int_equal(shard_plan_dropped(got), shard_plan_dropped(want));
                        shard_plan_free(got);
                        shard_plan_free(want);
                    }
}

/* Count into v the entries each rank of segment `count` (world w, plans
 * after done[0..count)) takes: the first `taken` of each; the longest
 * plan's length into *longest. */
static void take(const struct config *c, const struct shard_plan_segment *done, size_t count,
                 uint32_t w, uint64_t taken, uint32_t *v, uint64_t *longest)
{
    *longest = 0;
    for (uint32_t r = 0; r < w; r++) {
        struct shard_plan *p = resumed(c, r, w, done, count);
        uint64_t n = shard_plan_count(p);
        for (uint64_t i = 0; i < n && i < taken; i++)
            v[shard_plan_indices(p)[i]]++;
        *longest = n > *longest ? n : *longest;
        shard_plan_free(p);
    }
}

/* The rest after done[0..count) (v: the samples those took; dropped0: the
 * samples their drops left out) on w ranks: the properties of its remainder
 * (above); "what" names the case. */
static void check_rest(const struct config *c, const struct shard_plan_segment *done, size_t count,
                       uint32_t w, const uint32_t *v, uint64_t dropped0, const char *what)
{
    const uint64_t n = total(c->l);
    uint32_t *f = calloc(n ? n : 1, sizeof *f);
    uint64_t visited = 0, unvisited = 0, min = UINT64_MAX, max = 0, padded = 0, entries = 0;
    uint64_t dropped = 0;
    for (uint64_t x = 0; x < n; x++) {
        visited += v[x];
        unvisited += !v[x];
    }
    for (uint32_t r = 0; r < w; r++) {
        struct shard_plan *p = resumed(c, r, w, done, count);
        uint64_t k = shard_plan_count(p);
        for (uint64_t i = 0; i < k; i++)
            f[shard_plan_indices(p)[i]]++;
        min = k < min ? k : min;
        max = k > max ? k : max;
        padded += shard_plan_padded(p);
        entries += k;
        dropped = shard_plan_dropped(p);
        shard_plan_free(p);
    }
    for (uint64_t x = 0; x < n; x++) {
        int bad = 0;
        switch (c->rem) {
        case SHARD_REMAINDER_KEEP: bad = v[x] + f[x] != 1; break;
        case SHARD_REMAINDER_DROP: bad = v[x] + f[x] > 1; break;
        case SHARD_REMAINDER_PAD: bad = visited && !v[x] && f[x] != 1; break;
        }
        if (bad)
            fail_msg("%s: sample %llu taken %u times before the stop, %u after", what,
                     (unsigned long long)x, v[x], f[x]);
    }
    if (c->rem == SHARD_REMAINDER_KEEP) {
        if (max - min > 1 || padded || dropped)
            fail_msg("%s: keep: plans of %llu to %llu, %llu padded, %llu dropped", what,
                     (unsigned long long)min, (unsigned long long)max, (unsigned long long)padded,
                     (unsigned long long)dropped);
        return free(f);
    }
    if (min != max)
        fail_msg("%s: plans of %llu and %llu entries", what, (unsigned long long)min,
                 (unsigned long long)max);
    if (c->rem == SHARD_REMAINDER_DROP) {
        /* what the segments had yet to visit: all, less the first drop, less what was taken */
        uint64_t m = n - dropped0 - visited;
        if (entries != m / w * w || dropped != m % w || padded)
            fail_msg("%s: drop: %llu entries, %llu dropped of a rest of %llu", what,
                     (unsigned long long)entries, (unsigned long long)dropped,
                     (unsigned long long)m);
    } else if (entries - padded < unvisited || entries - padded > n || padded >= w) {
        fail_msg("%s: pad: %llu entries, %llu of them padded, %llu samples unvisited", what,
                 (unsigned long long)entries, (unsigned long long)padded,
                 (unsigned long long)unvisited);
    }
    free(f);
}

/* The stop points of a segment whose plans have up to `longest` entries. */
static size_t stops(uint64_t longest, uint64_t *t)
{
    const uint64_t at[] = {0,       1,          2, 7, longest / 2, longest ? longest - 1 : 0,
                           longest, longest + 3};
    memcpy(t, at, sizeof at);
    return sizeof at / sizeof *at;
}

static void test_the_rest_of_the_epoch_is_visited_once_across_the_new_ranks(void **state)
{
    (void)state;
    char what[256];
    for (size_t li = 0; li < sizeof layouts / sizeof *layouts; li++)
        for (uint64_t seed = 0; seed < 3; seed++)
            for (size_t bi = 0; bi < sizeof buffers / sizeof *buffers; bi++)
                for (size_t ri = 0; ri < 3; ri++)
                    for (size_t a = 0; a < sizeof worlds / sizeof *worlds; a++) {
                        const struct config c = {&layouts[li], seed, seed + 1, buffers[bi],
                                                 remainders[ri]};
                        const uint64_t n = total(c.l);
                        struct shard_plan_options o = options_of(&c, 0, worlds[a]);
                        struct shard_plan *p;
                        struct shard_err err;
                        assert_int_equal(shard_plan_new(&p, c.l->counts, c.l->shards, &o, &err), 0);
                        const uint64_t dropped0 = shard_plan_dropped(p);
                        shard_plan_free(p);
                        uint64_t t[8], longest;
                        uint32_t *probe = calloc(n ? n : 1, sizeof *probe);
                        take(&c, NULL, 0, worlds[a], 0, probe, &longest);
                        free(probe);
                        size_t nt = stops(longest, t);
                        for (size_t ti = 0; ti < nt; ti++)
                            for (size_t b = 0; b < sizeof worlds / sizeof *worlds; b++) {
                                struct shard_plan_segment done[1] = {{worlds[a], t[ti], c.rem}};
                                uint32_t *v = calloc(n ? n : 1, sizeof *v);
                                uint64_t ignored;
                                take(&c, NULL, 0, worlds[a], t[ti], v, &ignored);
                                snprintf(what, sizeof what,
                                         "%s, seed %llu, buffer %llu, %s, %u ranks took %llu, "
                                         "then %u",
                                         c.l->name, (unsigned long long)seed,
                                         (unsigned long long)c.buffer, shard_remainder_name(c.rem),
                                         worlds[a], (unsigned long long)t[ti], worlds[b]);
                                check_rest(&c, done, 1, worlds[b], v, dropped0, what);
                                free(v);
                            }
                    }
}

/* Stopped twice: W ranks, then W' ranks of the rest, then W'' ranks. */
static void test_an_epoch_stopped_twice_goes_on_with_what_neither_part_took(void **state)
{
    (void)state;
    char what[256];
    for (size_t li = 2; li < sizeof layouts / sizeof *layouts; li++)
        for (size_t ri = 0; ri < 3; ri++)
            for (size_t a = 0; a < 4; a++)
                for (size_t b = 0; b < 4; b++)
                    for (size_t d = 0; d < 4; d++) {
                        const struct config c = {&layouts[li], 7, 2, 3, remainders[ri]};
                        const uint64_t n = total(c.l);
                        struct shard_plan_options o = options_of(&c, 0, worlds[a]);
                        struct shard_plan *p;
                        struct shard_err err;
                        assert_int_equal(shard_plan_new(&p, c.l->counts, c.l->shards, &o, &err), 0);
                        uint64_t dropped = shard_plan_dropped(p);
                        shard_plan_free(p);
                        uint32_t *v = calloc(n, sizeof *v);
                        uint64_t longest;
                        struct shard_plan_segment done[2] = {{worlds[a], 5, c.rem},
                                                             {worlds[b], 0, c.rem}};
                        p = resumed(&c, 0, worlds[b], done, 1); /* what the middle part drops */
                        dropped += shard_plan_dropped(p);
                        shard_plan_free(p);
                        take(&c, NULL, 0, worlds[a], done[0].taken, v, &longest);
                        uint32_t *probe = calloc(n, sizeof *probe);
                        take(&c, done, 1, worlds[b], 0, probe, &longest);
                        free(probe);
                        done[1].taken = longest / 3 + 1;
                        take(&c, done, 1, worlds[b], done[1].taken, v, &longest);
                        snprintf(what, sizeof what,
                                 "%s, %s, %u ranks took 5, %u took %llu, then %u", c.l->name,
                                 shard_remainder_name(c.rem), worlds[a], worlds[b],
                                 (unsigned long long)done[1].taken, worlds[d]);
                        check_rest(&c, done, 2, worlds[d], v, dropped, what);
                        free(v);
                    }
}

/* ---- the specification, re-implemented from dataset.h's text (spec.h) -- */

struct spec_segment {
    uint64_t *s, m;  /* S_k */
    uint64_t *f, nf; /* F_k */
    uint64_t seed;   /* s_k */
};

static void spec_slice(uint64_t m, uint32_t w, uint32_t r, enum shard_remainder rem, uint64_t *b,
                       uint64_t *e)
{
    if (rem == SHARD_REMAINDER_DROP) {
        *b = r * (m / w);
        *e = *b + m / w;
    } else if (rem == SHARD_REMAINDER_PAD) {
        uint64_t c = m / w + (m % w != 0);
        *b = m ? r * c : 0;
        *e = m ? *b + c : 0;
    } else {
        *b = (uint64_t)((unsigned __int128)r * m / w);
        *e = (uint64_t)((unsigned __int128)(r + 1) * m / w);
    }
}

/* Rank r of w's list of segment g: list indices (idx) in plan order, and
 * their positions; its length. */
static uint64_t spec_list(const struct config *c, const struct spec_segment *g, uint32_t w,
                          uint32_t r, enum shard_remainder rem, uint64_t **idx, uint64_t **pos)
{
    uint64_t b, e;
    spec_slice(g->m, w, r, rem, &b, &e);
    uint64_t n = e - b;
    *idx = malloc((n + 1) * sizeof **idx);
    *pos = malloc((n + 1) * sizeof **pos);
    for (uint64_t i = 0; i < n; i++)
        (*idx)[i] = b + i;
    if (c->buffer > 1)
        for (uint64_t j = 0; j * c->buffer < n; j++) {
            uint64_t len = n - j * c->buffer < c->buffer ? n - j * c->buffer : c->buffer;
            spec_shuffle(*idx + j * c->buffer, len, spec_derive(g->seed, 2, c->epoch, r, j));
        }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = (*idx)[i];
        (*pos)[i] = x < g->m ? g->s[x] : g->nf ? g->f[(x - g->m) % g->nf] : g->s[x % g->m];
    }
    return n;
}

static void spec_next(const struct config *c, const struct spec_segment *g,
                      const struct shard_plan_segment *d, uint32_t w_next, uint64_t k,
                      struct spec_segment *next)
{
    const uint32_t w = d->world_size;
    const uint64_t taken = d->taken;
    next->s = malloc((g->m + 1) * sizeof *next->s);
    next->m = 0;
    next->f = malloc((w_next + g->nf + 1) * sizeof *next->f);
    next->nf = 0;
    next->seed = spec_derive(c->seed, 4, c->epoch, k, 0);
    for (uint32_t r = 0; r < w; r++) {
        uint64_t *idx, *pos, b, e;
        uint64_t n = spec_list(c, g, w, r, d->remainder, &idx, &pos), t = taken < n ? taken : n;
        spec_slice(g->m, w, r, d->remainder, &b, &e);
        uint64_t from = t; /* where the slice goes on, in S_k's order */
        if (c->buffer > 1 && t % c->buffer) {
            uint64_t end = (t / c->buffer + 1) * c->buffer;
            end = end < n ? end : n;
            for (uint64_t i = t; i < end; i++)
                if (idx[i] < g->m)
                    next->s[next->m++] = pos[i];
            from = end;
        }
        for (uint64_t x = b + from; x < e && x < g->m; x++)
            next->s[next->m++] = g->s[x];
        if (r == 0) {
            for (uint64_t i = 0; i < t && i < w_next; i++)
                if (idx[i] < g->m)
                    next->f[next->nf++] = pos[i];
            if (!next->nf) {
                memcpy(next->f, g->f, g->nf * sizeof *g->f);
                next->nf = g->nf;
            }
        }
        free(idx);
        free(pos);
    }
}

static void test_the_resumed_plan_is_exactly_the_documented_algorithm(void **state)
{
    (void)state;
    /* the segments' remainders: the new ranks', or another (a change between restarts) */
    const struct shard_plan_segment chains[][2] = {
        {{2, 4, 0}, {0, 0, 0}}, {{3, 1, 1}, {0, 0, 0}},   {{8, 10, 2}, {0, 0, 0}},
        {{2, 7, 2}, {3, 5, 0}}, {{1, 100, 1}, {8, 2, 2}},
    };
    const size_t lengths[] = {1, 1, 1, 2, 2};
    for (size_t li = 2; li < sizeof layouts / sizeof *layouts; li++)
        for (size_t bi = 0; bi < sizeof buffers / sizeof *buffers; bi++)
            for (size_t ri = 0; ri < 3; ri++)
                for (size_t ci = 0; ci < sizeof lengths / sizeof *lengths; ci++)
                    for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
                        const struct config c = {&layouts[li], 31337, 4, buffers[bi],
                                                 remainders[ri]};
                        const uint64_t n = total(c.l);
                        /* E, step 1 */
                        uint64_t order[17], first[17], at = 0, *e = malloc(n * sizeof *e);
                        for (uint32_t s = 0; s < c.l->shards; s++) {
                            order[s] = s;
                            first[s] = at;
                            at += c.l->counts[s];
                        }
                        spec_shuffle(order, c.l->shards, spec_derive(c.seed, 1, c.epoch, 0, 0));
                        at = 0;
                        for (uint32_t k = 0; k < c.l->shards; k++)
                            for (uint64_t r = 0; r < c.l->counts[order[k]]; r++)
                                e[at++] = first[order[k]] + r;
                        struct spec_segment g = {malloc(n * sizeof(uint64_t)), n, NULL, 0, c.seed};
                        for (uint64_t i = 0; i < n; i++)
                            g.s[i] = i;
                        struct shard_plan_segment done[2];
                        memcpy(done, chains[ci], sizeof done);
                        if (ci < 3) /* the new ranks' own remainder */
                            done[0].remainder = c.rem;
                        for (size_t k = 0; k < lengths[ci]; k++) {
                            struct spec_segment next;
                            uint32_t w_next = k + 1 < lengths[ci] ? done[k + 1].world_size
                                                                  : worlds[wi];
                            spec_next(&c, &g, &done[k], w_next, k + 1, &next);
                            free(g.s);
                            free(g.f);
                            g = next;
                        }
                        for (uint32_t r = 0; r < worlds[wi]; r++) {
                            uint64_t *idx, *pos, padded = 0;
                            uint64_t len = spec_list(&c, &g, worlds[wi], r, c.rem, &idx, &pos);
                            struct shard_plan *p = resumed(&c, r, worlds[wi], done, lengths[ci]);
                            assert_int_equal(shard_plan_count(p), len);
                            for (uint64_t i = 0; i < len; i++) {
                                padded += idx[i] >= g.m;
                                if (shard_plan_indices(p)[i] != e[pos[i]])
                                    fail_msg("%s, %s, buffer %llu, chain %zu, rank %u of %u: "
                                             "entry %llu is %llu, not %llu",
                                             c.l->name, shard_remainder_name(c.rem),
                                             (unsigned long long)c.buffer, ci, r, worlds[wi],
                                             (unsigned long long)i,
                                             (unsigned long long)shard_plan_indices(p)[i],
                                             (unsigned long long)e[pos[i]]);
                            }
                            assert_int_equal(shard_plan_padded(p), padded);
                            shard_plan_free(p);
                            free(idx);
                            free(pos);
                        }
                        free(g.s);
                        free(g.f);
                        free(e);
                    }
}

static void test_segments_without_ranks_are_refused(void **state)
{
    (void)state;
    const struct config c = {&layouts[2], 0, 0, 3, SHARD_REMAINDER_PAD};
    struct shard_plan_options o = options_of(&c, 0, 2);
    const struct shard_plan_segment done[] = {{2, 3, SHARD_REMAINDER_PAD},
                                              {0, 1, SHARD_REMAINDER_PAD}};
    struct shard_plan *p;
    struct shard_err err;
    assert_int_equal(shard_plan_new_resumed(&p, c.l->counts, c.l->shards, &o, done, 2, &err),
                     SHARD_EINVAL);
    assert_null(p);
    assert_string_equal(err.msg, "segment 1 of the epoch has no ranks");
    o.rank = 2;
    assert_int_equal(shard_plan_new_resumed(&p, c.l->counts, c.l->shards, &o, done, 1, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "rank 2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_with_no_segment_the_plan_is_the_ordinary_one),
        cmocka_unit_test(test_the_rest_of_the_epoch_is_visited_once_across_the_new_ranks),
        cmocka_unit_test(test_an_epoch_stopped_twice_goes_on_with_what_neither_part_took),
        cmocka_unit_test(test_the_resumed_plan_is_exactly_the_documented_algorithm),
        cmocka_unit_test(test_segments_without_ranks_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
