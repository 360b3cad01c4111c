/* visitation.c - --visitation: build every rank's epoch plan for each
 * world size and epoch, count how often each sample is visited, and prove
 * the count is what the remainder option promises (shardkit/dataset.h):
 * exactly once with keep; at most once with drop, with N mod W samples left
 * out; at least once with pad, with W*ceil(N/W) - N repeats.  Each plan is
 * also built twice and compared, so nondeterminism would show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardx/shardx.h"
#include "verify/verify_internal.h"

/* Visit counts saturate here (pad with many more ranks than samples
 * repeats a sample up to ceil(W/N) times per epoch). */
#define COUNT_MAX UINT32_MAX

struct visit_tally {
    uint64_t zero;    /* samples not visited */
    uint64_t twice;   /* samples visited more than once */
    uint64_t repeats; /* visits beyond the first */
    int64_t example;  /* a sample visited a wrong number of times, or -1 */
};

static int same_plan(const struct shard_plan *a, const struct shard_plan *b)
{
    return shard_plan_count(a) == shard_plan_count(b) &&
           !memcmp(shard_plan_indices(a), shard_plan_indices(b),
                   shard_plan_count(a) * sizeof(uint64_t));
}

/* Build the plans of every rank of one epoch, counting visits into `count`. */
static int run_epoch(struct verify_run *v, const uint64_t *shard_samples, uint32_t world,
                     uint64_t epoch, uint32_t *count, struct shard_visitation_result *res,
                     int *nondeterministic, struct shard_err *err)
{
    struct shard_plan_options o = v->o->plan;
    o.epoch = epoch;
    o.world_size = world;
    for (uint32_t rank = 0; rank < world; rank++) {
        struct shard_plan *p = NULL, *again = NULL;
        o.rank = rank;
        int rc = shard_plan_new(&p, shard_samples, v->m->shard_count, &o, err);
        if (!rc)
            rc = shard_plan_new(&again, shard_samples, v->m->shard_count, &o, err);
        if (rc) {
            shard_plan_free(p);
            return rc;
        }
        if (!same_plan(p, again))
            *nondeterministic = 1;
        uint64_t n = shard_plan_count(p);
        const uint64_t *idx = shard_plan_indices(p);
        for (uint64_t i = 0; i < n; i++) {
            if (idx[i] >= v->samples) {
                res->bad_samples++;
                continue;
            }
            if (count[idx[i]] < COUNT_MAX)
                count[idx[i]]++;
        }
        if ((epoch == 0 && rank == 0) || n < res->min_per_rank)
            res->min_per_rank = n;
        if (n > res->max_per_rank)
            res->max_per_rank = n;
        if (epoch == 0)
            res->padded += shard_plan_padded(p);
        if (epoch == 0 && rank == 0)
            res->dropped = shard_plan_dropped(p);
        shard_plan_free(p);
        shard_plan_free(again);
    }
    return SHARD_OK;
}

static void tally(const uint32_t *count, uint64_t n, struct visit_tally *t)
{
    memset(t, 0, sizeof *t);
    t->example = -1;
    for (uint64_t g = 0; g < n; g++) {
        if (count[g] == 0) {
            t->zero++;
        } else if (count[g] > 1) {
            t->twice++;
            t->repeats += count[g] - 1u;
        } else {
            continue;
        }
        if (t->example < 0)
            t->example = (int64_t)g;
    }
}

/* Does the tally keep the promise of the remainder option? */
static int keeps_promise(enum shard_remainder rem, const struct visit_tally *t, uint64_t n,
                         uint32_t world)
{
    uint64_t expected_extra = n ? (n / world + (n % world != 0)) * world - n : 0;
    switch (rem) {
    case SHARD_REMAINDER_KEEP: return t->zero == 0 && t->twice == 0;
    case SHARD_REMAINDER_DROP: return t->twice == 0 && t->zero == n % world;
    case SHARD_REMAINDER_PAD: return t->zero == 0 && t->repeats == expected_extra;
    }
    return 0;
}

static void report_epoch(struct verify_run *v, uint32_t world, uint64_t epoch,
                         const struct visit_tally *t)
{
    char where[SHARDX_QUOTE_SIZE + 64] = "";
    if (t->example >= 0) {
        uint32_t s;
        uint64_t r;
        size_t len;
        shard_dataset_locate(v->ds, (uint64_t)t->example, &s, &r, NULL);
        char *key = sk_verify_key_of(v, (uint64_t)t->example, &len);
        char q[SHARDX_QUOTE_SIZE];
        snprintf(where, sizeof where, " (e.g. %s record %llu%s%s%s)", v->m->shards[s].file,
                 (unsigned long long)r, key ? ", key '" : "",
                 key ? shardx_quote(key, len, q, sizeof q) : "", key ? "'" : "");
        free(key);
    }
    sk_verify_problem(v, SHARD_CHECK_VISITATION, SHARD_EMISMATCH, -1, -1, NULL, 0,
                      "visitation: world size %u, epoch %llu, remainder %s: %llu samples not "
                      "visited, %llu visited more than once%s",
                      world, (unsigned long long)epoch, shard_remainder_name(v->o->plan.remainder),
                      (unsigned long long)t->zero, (unsigned long long)t->twice, where);
}

int sk_verify_visitation(struct verify_run *v, struct shard_err *err)
{
    const struct shard_verify_options *o = v->o;
    struct shard_verify_report *r = v->report;
    uint32_t shards = v->m->shard_count;
    uint64_t *shard_samples = malloc((shards ? shards : 1) * sizeof *shard_samples);
    uint32_t *count = malloc((v->samples ? v->samples : 1) * sizeof *count);
    r->visitation = calloc(o->world_size_count, sizeof *r->visitation);
    int rc = SHARD_OK;
    if (!shard_samples || !count || !r->visitation) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t s = 0; s < shards; s++)
        shard_samples[s] = v->m->shards[s].samples;
    for (size_t i = 0; i < o->world_size_count && !rc; i++) {
        struct shard_visitation_result *res = &r->visitation[r->visitation_count++];
        uint32_t world = o->world_sizes[i];
        res->world_size = world;
        res->epochs = o->epochs;
        int nondeterministic = 0;
        for (uint64_t epoch = 0; epoch < o->epochs && !rc; epoch++) {
            memset(count, 0, v->samples * sizeof *count);
            rc = run_epoch(v, shard_samples, world, epoch, count, res, &nondeterministic, err);
            if (rc)
                break;
            struct visit_tally t;
            tally(count, v->samples, &t);
            if (!keeps_promise(o->plan.remainder, &t, v->samples, world)) {
                res->bad_samples += t.zero + t.twice;
                report_epoch(v, world, epoch, &t);
            }
        }
        if (nondeterministic) {
            res->bad_samples++;
            sk_verify_problem(v, SHARD_CHECK_VISITATION, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "visitation: world size %u: the same plan options gave different "
                              "plans",
                              world);
        }
        res->passed = res->bad_samples == 0;
    }
out:
    free(shard_samples);
    free(count);
    return rc;
}
