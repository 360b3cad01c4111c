/* shardify.c - the conversion run: plan, convert, assemble, publish.
 *
 * Phases:
 *   1. scan     list candidates (directory walk; for an archive, the spool
 *               phase reads it once, converting entries into a spool file)
 *   2. plan     sort keys, label them, shuffle with the seed; record the
 *               plan's hash in DST/.shardify/state.json
 *   3. resume   adopt finished shards of an interrupted run of the same plan
 *   4. convert  the ordered pipeline: read, decode, resize, encode, frame on
 *               all threads; append to shards in plan order
 *   5. publish  index.jsonl, then manifest.json, then remove .shardify
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "assemble.h"
#include "dst.h"
#include "fsutil.h"
#include "journal.h"
#include "jsonkey.h"
#include "pipeline.h"
#include "plan.h"
#include "sample.h"
#include "shardkit/format.h"
#include "shardkit/shardify.h"
#include "shardkit/source.h"

#define STATE_FILE "state.json"
#define SPOOL_FILE "spool"
#define SLOTS_PER_THREAD 16
#define PROGRESS_INTERVAL 0.1

/* What the spool phase learned about one archive entry. */
struct spooled {
    uint64_t offset;        /* payload position in the spool file */
    uint64_t len;
    uint32_t width;
    uint32_t height;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    char *reason;           /* non-NULL: rejected */
};

struct slot {
    uint64_t pos;           /* plan position (convert) */
    uint64_t cand;          /* candidate index */
    int ok;                 /* converted; else `why` says why it is rejected */
    int fatal;              /* an error that must stop the run (not the input's fault) */
    struct shard_buf input;
    struct shard_buf payload;
    struct shard_buf frame;
    uint64_t frame_xxh3;
    uint32_t width;
    uint32_t height;
    int has_source;
    uint64_t source_bytes;
    uint64_t source_xxh3;
    uint64_t too_large;
    const char *problem;    /* archive entry without bytes: why (static string) */
    struct shard_err why;
};

struct run {
    const struct shardify_options *o;
    struct shard_config config;       /* o->config with labels described */
    int threads;
    double t0;
    const char *src;
    int archive;
    int src_fd;
    struct shard_archive *ar;
    struct dst *dst;
    struct shard_labeler *labeler;
    struct shard_keylist keys;        /* candidates: sorted (directory) or archive order */
    struct shard_scan_stats stats;
    uint64_t n;
    uint64_t *plan;                   /* plan[pos] = candidate */
    int32_t *label_of;                /* per candidate */
    char **label_names;               /* sorted display names */
    uint32_t label_count;
    struct spooled *spooled;          /* archive only, per candidate */
    uint64_t spooled_cap;
    int spool_fd;
    uint64_t spool_bytes;
    char *spool_path;
    struct sample_worker **workers;
    struct slot *slots;
    size_t nslots;
    struct assembler *as;
    uint64_t start_pos;               /* first plan position converted in this run */
    uint32_t reused_shards;
    uint64_t bytes_in;
    uint64_t done;
    double last_progress;
    const char *phase;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void shardify_options_init(struct shardify_options *o)
{
    memset(o, 0, sizeof *o);
    shard_config_init(&o->config);
}

void shardify_summary_release(struct shardify_summary *s)
{
    if (!s)
        return;
    for (uint64_t i = 0; i < s->reject_count; i++)
        shard_reject_release(&s->rejects[i]);
    free(s->rejects);
    s->rejects = NULL;
    s->reject_count = 0;
}

static void progress(struct run *r, int force)
{
    if (!r->o->progress)
        return;
    double t = now();
    if (!force && t - r->last_progress < PROGRESS_INTERVAL)
        return;
    r->last_progress = t;
    struct shardify_progress p = {
        .done = r->done,
        .total = r->n,
        .samples = r->as ? assembler_samples(r->as) : 0,
        .rejected = r->as ? assembler_reject_count(r->as) : 0,
        .bytes_out = r->as ? assembler_bytes(r->as) : 0,
        .elapsed = t - r->t0,
        .phase = r->phase,
    };
    r->o->progress(&p, r->o->progress_user);
}

static int validate(const struct shardify_options *o, struct shard_err *err)
{
    const struct shard_config *c = &o->config;
    if (c->size == 0)
        return shard_err_set(err, SHARD_EINVAL, "--size must be a positive number");
    if (c->quality < 1 || c->quality > 100)
        return shard_err_set(err, SHARD_EINVAL, "--quality must be within 1..100");
    if (c->zstd_level < SHARD_ZSTD_LEVEL_MIN || c->zstd_level > SHARD_ZSTD_LEVEL_MAX ||
        c->zstd_level == 0)
        return shard_err_set(err, SHARD_EINVAL, "--zstd-level must be within %d..%d, not 0",
                             SHARD_ZSTD_LEVEL_MIN, SHARD_ZSTD_LEVEL_MAX);
    if (c->shard_size < SHARD_HEADER_BYTES + SHARD_TRAILER_BYTES + 1024)
        return shard_err_set(err, SHARD_EINVAL, "--shard-size is too small");
    if (c->max_pixels == 0)
        return shard_err_set(err, SHARD_EINVAL, "--max-pixels must be positive");
    return SHARD_OK;
}

/* ---- slots and workers ------------------------------------------------------ */

static void reject_slot(struct slot *s, const struct shard_err *e)
{
    s->ok = 0;
    s->why = *e;
}

static int make_workers(struct run *r, struct shard_err *err)
{
    r->workers = calloc((size_t)r->threads, sizeof *r->workers);
    r->nslots = (size_t)r->threads * SLOTS_PER_THREAD;
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (!r->workers || !r->slots)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (int i = 0; i < r->threads; i++) {
        int rc = sample_worker_new(&r->workers[i], &r->config, err);
        if (rc)
            return rc;
    }
    return SHARD_OK;
}

static void free_workers(struct run *r)
{
    for (int i = 0; r->workers && i < r->threads; i++)
        sample_worker_free(r->workers[i]);
    free(r->workers);
    for (size_t i = 0; r->slots && i < r->nslots; i++) {
        shard_buf_release(&r->slots[i].input);
        shard_buf_release(&r->slots[i].payload);
        shard_buf_release(&r->slots[i].frame);
    }
    free(r->slots);
}

static void convert_input(struct run *r, int thread, struct slot *s)
{
    s->has_source = 1;
    s->source_bytes = s->input.len;
    s->source_xxh3 = XXH3_64bits(s->input.data, s->input.len);
    struct shard_err e;
    shard_err_clear(&e);
    if (sample_convert(r->workers[thread], s->input.data, s->input.len, &s->payload, &s->width,
                       &s->height, &e) != 0)
        reject_slot(s, &e);
    else
        s->ok = 1;
}

/* ---- archives: the spool phase ---------------------------------------------- */

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
        reject_slot(s, &e);
        return;
    }
    if (s->too_large) {
        struct shard_err e;
        shard_err_set(&e, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                      (unsigned long long)s->too_large,
                      (unsigned long long)r->config.max_file_bytes);
        reject_slot(s, &e);
        return;
    }
    convert_input(r, thread, s);
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
    progress(r, 0);
    if (!s->ok) {
        sp->reason = strdup(s->why.msg);
        return sp->reason ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    sp->offset = r->spool_bytes;
    sp->len = s->payload.len;
    sp->width = s->width;
    sp->height = s->height;
    r->spool_bytes += s->payload.len;
    return fs_write_all(r->spool_fd, s->payload.data, s->payload.len, r->spool_path, err);
}

static int spool_archive(struct run *r, struct shard_err *err)
{
    int rc = shard_archive_open(&r->ar, r->src, err);
    if (rc)
        return rc;
    r->spool_path = dst_work_path(r->dst, SPOOL_FILE);
    if (!r->spool_path)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->spool_fd = open(r->spool_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (r->spool_fd < 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", r->spool_path);
    void **slots = calloc(r->nslots, sizeof *slots);
    if (!slots)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nslots; i++)
        slots[i] = &r->slots[i];
    struct pipeline_ops ops = {r, spool_claim, spool_work, spool_consume};
    r->phase = "spool";
    rc = pipeline_run(&ops, slots, r->nslots, r->threads, r->o->cancel, err);
    free(slots);
    shard_archive_close(r->ar);
    r->ar = NULL;
    r->n = r->keys.count;
    r->stats.candidates = r->n;
    return rc;
}

/* ---- plan ------------------------------------------------------------------- */

static int compare_keys(const struct shard_keylist *l, uint64_t a, uint64_t b)
{
    uint32_t la = l->lengths[a], lb = l->lengths[b];
    int c = memcmp(l->arena + l->offsets[a], l->arena + l->offsets[b], la < lb ? la : lb);
    if (c)
        return c;
    return la < lb ? -1 : la > lb;
}

static int compare_candidates(const void *pa, const void *pb, void *ctx)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    int c = compare_keys(ctx, a, b);
    return c ? c : (a > b) - (a < b);  /* archive order breaks ties: stable */
}

struct label_ref {
    const char *name;
    size_t len;
};

static int compare_label_refs(const void *pa, const void *pb)
{
    const struct label_ref *a = pa, *b = pb;
    int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The distinct label names, in an open-addressing hash set: memory grows with
 * the number of labels, not with the number of samples. */
struct label_set {
    struct label_slot {
        struct label_ref ref;   /* name == NULL: empty slot */
        uint64_t hash;
        int32_t number;         /* position in sorted order, once known */
    } *slots;
    size_t cap;                 /* a power of two */
    size_t count;
};

static struct label_slot *label_set_find(const struct label_set *set, const char *name,
                                         size_t len, uint64_t hash)
{
    size_t i = (size_t)hash & (set->cap - 1);
    for (;; i = (i + 1) & (set->cap - 1)) {
        struct label_slot *s = &set->slots[i];
        if (!s->ref.name || (s->hash == hash && s->ref.len == len &&
                             memcmp(s->ref.name, name, len) == 0))
            return s;
    }
}

static int label_set_add(struct label_set *set, const char *name, size_t len,
                         struct shard_err *err)
{
    if (2 * (set->count + 1) > set->cap) {  /* keep the load under one half */
        struct label_set bigger = {calloc(set->cap ? 2 * set->cap : 64, sizeof *set->slots),
                                   set->cap ? 2 * set->cap : 64, set->count};
        if (!bigger.slots)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i].ref.name)
                *label_set_find(&bigger, set->slots[i].ref.name, set->slots[i].ref.len,
                                set->slots[i].hash) = set->slots[i];
        free(set->slots);
        *set = bigger;
    }
    uint64_t hash = XXH3_64bits(name, len);
    struct label_slot *s = label_set_find(set, name, len, hash);
    if (!s->ref.name) {
        s->ref.name = name;
        s->ref.len = len;
        s->hash = hash;
        set->count++;
    }
    return SHARD_OK;
}

/* Label every candidate: the distinct names, sorted by bytes, numbered. */
static int assign_labels(struct run *r, struct shard_err *err)
{
    struct label_set set = {0};
    struct label_ref *sorted = NULL;
    const char *name;
    size_t len, key_len;
    int rc = SHARD_OK;
    r->label_of = malloc((r->n ? r->n : 1) * sizeof *r->label_of);
    if (!r->label_of) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; !rc && i < r->n; i++) {
        const char *key = shard_keylist_get(&r->keys, i, &key_len);
        if (shard_labeler_label(r->labeler, key, key_len, &name, &len))
            rc = label_set_add(&set, name, len, err);
    }
    if (rc)
        goto out;
    if (set.count > INT32_MAX) {
        rc = shard_err_set(err, SHARD_ELIMIT, "too many labels");
        goto out;
    }
    sorted = malloc((set.count ? set.count : 1) * sizeof *sorted);
    r->label_names = calloc(set.count ? set.count : 1, sizeof *r->label_names);
    if (!sorted || !r->label_names) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < set.cap; i++)
        if (set.slots[i].ref.name)
            sorted[n++] = set.slots[i].ref;
    qsort(sorted, n, sizeof *sorted, compare_label_refs);
    r->label_count = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        label_set_find(&set, sorted[i].name, sorted[i].len,
                       XXH3_64bits(sorted[i].name, sorted[i].len))->number = (int32_t)i;
        if (!(r->label_names[i] = jsonkey_label_name(sorted[i].name, sorted[i].len))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
        if (i > 0 && strcmp(r->label_names[i - 1], r->label_names[i]) >= 0) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "labels '%s' and '%s' cannot be told apart once escaped",
                               r->label_names[i - 1], r->label_names[i]);
            goto out;
        }
    }
    for (uint64_t i = 0; i < r->n; i++) {
        const char *key = shard_keylist_get(&r->keys, i, &key_len);
        r->label_of[i] = SHARD_NO_LABEL;
        if (shard_labeler_label(r->labeler, key, key_len, &name, &len))
            r->label_of[i] = label_set_find(&set, name, len, XXH3_64bits(name, len))->number;
    }
out:
    free(set.slots);
    free(sorted);
    return rc;
}

static int make_plan(struct run *r, struct shard_err *err)
{
    r->plan = malloc((r->n ? r->n : 1) * sizeof *r->plan);
    if (!r->plan)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < r->n; i++)
        r->plan[i] = i;
    if (r->archive) {
        /* keys are in archive order: sort the plan instead of the keys, and
         * reject later entries that repeat a name */
        qsort_r(r->plan, r->n, sizeof *r->plan, compare_candidates, &r->keys);
        for (uint64_t i = 1; i < r->n; i++) {
            if (compare_keys(&r->keys, r->plan[i - 1], r->plan[i]) == 0) {
                struct spooled *sp = &r->spooled[r->plan[i]];
                free(sp->reason);
                sp->reason = strdup("duplicate entry in archive: an earlier entry has this name");
                if (!sp->reason)
                    return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            }
        }
    }
    if (r->config.shuffle)
        plan_shuffle(r->plan, r->n, r->config.shuffle_seed);
    return SHARD_OK;
}

/* The state an interrupted run must match to be resumed. */
static int state_text(struct run *r, char **out, struct shard_err *err)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(h);
    for (uint64_t pos = 0; pos < r->n; pos++) {
        size_t len;
        const char *key = shard_keylist_get(&r->keys, r->plan[pos], &len);
        int32_t label = r->label_of[r->plan[pos]];
        XXH3_64bits_update(h, key, len + 1);  /* with its NUL: keys cannot run together */
        XXH3_64bits_update(h, &label, sizeof label);
    }
    uint64_t plan_hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    char *config;
    int rc = shard_config_dump(&r->config, &config, err);
    if (rc)
        return rc;
    char hex[17];
    shard_hex64(plan_hash, hex);
    size_t cap = strlen(config) + 256;
    *out = malloc(cap);
    if (*out)
        snprintf(*out, cap,
                 "{\"config\":%s,\"source\":\"%s\",\"candidates\":%llu,\"plan_xxh3\":\"%s\"}\n",
                 config, r->archive ? "archive" : "directory", (unsigned long long)r->n, hex);
    free(config);
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

/* Fresh run: record the state.  Resume: it must be the same as recorded. */
static int check_state(struct run *r, int *resuming, struct shard_err *err)
{
    *resuming = 0;
    char *text;
    int rc = state_text(r, &text, err);
    if (rc)
        return rc;
    char *path = dst_work_path(r->dst, STATE_FILE);
    if (!path) {
        free(text);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (r->o->mode == SHARDIFY_RESUME && r->dst->has_state) {
        /* the recorded state must be exactly what this run would record */
        size_t want = strlen(text);
        char *old = malloc(want + 2);
        FILE *f = old ? fopen(path, "rbe") : NULL;
        size_t n = f ? fread(old, 1, want + 1, f) : 0;
        if (f)
            fclose(f);
        if (!old)
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else if (n != want || memcmp(old, text, want) != 0)
            rc = shard_err_set(err, SHARD_EEXIST,
                               "cannot resume '%s': the options or the source listing differ "
                               "from the interrupted run; pass --overwrite to start again",
                               r->dst->path);
        else
            *resuming = 1;
        free(old);
    } else {
        rc = fs_write_atomic(r->dst->work, STATE_FILE, text, strlen(text), err);
    }
    free(path);
    free(text);
    return rc;
}

/* ---- resume ----------------------------------------------------------------- */

struct adopt {
    struct run *r;
    uint64_t pos;
    int apply;          /* 0: only check; 1: hand to the assembler */
    struct shard_buf buf;
};

/* Does plan position a->pos name this key, and is its source unchanged? */
static int adopt_check(struct adopt *a, const char *key, size_t key_len, int has_source,
                       uint64_t bytes, uint64_t xxh3, struct shard_err *err)
{
    struct run *r = a->r;
    if (a->pos >= r->n)
        return shard_err_set(err, SHARD_EMISMATCH, "journal runs past the plan");
    uint64_t cand = r->plan[a->pos];
    size_t len;
    const char *k = shard_keylist_get(&r->keys, cand, &len);
    if (len != key_len || memcmp(k, key, len) != 0)
        return shard_err_set(err, SHARD_EMISMATCH, "journal and plan differ at %llu",
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
        if (shard_read_file(r->src_fd, k, r->config.max_file_bytes, &a->buf, err) != 0)
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
    if (!rc && s->label != a->r->label_of[a->r->plan[a->pos]])
        rc = shard_err_set(err, SHARD_EMISMATCH, "label differs");
    if (!rc && a->apply)
        rc = assembler_adopt_sample(a->r->as, s, err);
    a->pos++;
    return rc;
}

static int adopt_reject(void *user, struct shard_reject *rj, struct shard_err *err)
{
    struct adopt *a = user;
    int rc = adopt_check(a, rj->key, rj->key_len, rj->has_source, rj->source_bytes,
                         rj->source_xxh3, err);
    if (!rc && a->apply)
        rc = assembler_adopt_reject(a->r->as, rj, err);
    a->pos++;
    return rc;
}

/* Keep every finished shard of the interrupted run that checks out, in
 * order; drop the first one that does not and everything after it. */
static int adopt_finished(struct run *r, struct shard_err *err)
{
    struct adopt a = {.r = r};
    uint32_t k = 0;
    int rc = SHARD_OK;
    for (;; k++) {
        char jname[64], sname[64];
        journal_name(k, jname, sizeof jname);
        shard_file_name(k, sname, sizeof sname);
        char *jpath = dst_work_path(r->dst, jname), *spath = dst_path(r->dst, sname);
        struct journal_end end;
        struct shard_err why;
        uint64_t bytes, xxh3;
        a.pos = r->start_pos;
        a.apply = 0;
        int ok = jpath && spath && access(jpath, F_OK) == 0 &&
                 journal_read(jpath, adopt_sample, adopt_reject, &a, &end, &why) == 0 &&
                 end.shard == k && end.plan_start == r->start_pos && a.pos == end.plan_end &&
                 fs_hash_file(spath, &bytes, &xxh3, &why) == 0 && bytes == end.bytes &&
                 xxh3 == end.xxh3;
        if (ok) {
            a.pos = r->start_pos;
            a.apply = 1;
            rc = journal_read(jpath, adopt_sample, adopt_reject, &a, &end, err);
            if (!rc)
                rc = assembler_adopt_end(r->as, &end, err);
            r->start_pos = end.plan_end;
        }
        free(jpath);
        free(spath);
        if (!ok || rc)
            break;
    }
    shard_buf_release(&a.buf);
    r->reused_shards = k;
    r->done = r->start_pos;
    return rc ? rc : dst_remove_from(r->dst, k, err);
}

/* ---- convert ---------------------------------------------------------------- */

static int convert_claim(void *ctx, uint64_t pos, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    pos += r->start_pos;
    if (pos >= r->n)
        return 0;
    s->pos = pos;
    s->cand = r->plan[pos];
    return 1;
}

static void convert_work(void *ctx, int thread, void *slot)
{
    struct run *r = ctx;
    struct slot *s = slot;
    struct sample_worker *w = r->workers[thread];
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, s->cand, &key_len);
    struct shard_err e;
    shard_err_clear(&e);
    s->ok = 0;
    s->fatal = 0;
    s->has_source = 0;
    if (r->archive) {
        const struct spooled *sp = &r->spooled[s->cand];
        s->has_source = sp->has_source;
        s->source_bytes = sp->source_bytes;
        s->source_xxh3 = sp->source_xxh3;
        if (sp->reason) {
            shard_err_set(&e, SHARD_ECORRUPT, "%s", sp->reason);
            reject_slot(s, &e);
            return;
        }
        s->width = sp->width;
        s->height = sp->height;
        s->payload.len = 0;
        int rc = shard_buf_reserve(&s->payload, sp->len ? sp->len : 1, &e);
        ssize_t got = rc ? -1 : pread(r->spool_fd, s->payload.data, sp->len, (off_t)sp->offset);
        if (got != (ssize_t)sp->len) {
            shard_err_set(&s->why, SHARD_EIO, "cannot read the spool '%s'", r->spool_path);
            s->fatal = SHARD_EIO;
            return;
        }
        s->payload.len = sp->len;
    } else {
        if (key_len > SHARD_KEY_MAX) {
            shard_err_set(&e, SHARD_ELIMIT, "key is longer than %u bytes", SHARD_KEY_MAX);
            reject_slot(s, &e);
            return;
        }
        if (shard_read_file(r->src_fd, key, r->config.max_file_bytes, &s->input, &e) != 0) {
            reject_slot(s, &e);
            return;
        }
        convert_input(r, thread, s);
        if (!s->ok)
            return;
    }
    s->ok = 0;
    int rc = sample_frame(w, key, key_len, r->label_of[s->cand], s->width, s->height,
                          s->payload.data, s->payload.len, &s->frame, &s->frame_xxh3, &e);
    if (rc) {
        s->why = e;
        s->fatal = rc;
        return;
    }
    s->ok = 1;
}

static int convert_consume(void *ctx, void *slot, struct shard_err *err)
{
    struct run *r = ctx;
    struct slot *s = slot;
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, s->cand, &key_len);
    int rc;
    if (s->fatal) {
        *err = s->why;
        return s->fatal;
    }
    if (!r->archive && s->has_source)
        r->bytes_in += s->source_bytes;
    r->done++;
    if (s->ok) {
        struct shard_sample smp = {
            .key = (char *)key,
            .key_len = key_len,
            .label = r->label_of[s->cand],
            .width = s->width,
            .height = s->height,
            .source_bytes = s->source_bytes,
            .source_xxh3 = s->source_xxh3,
        };
        rc = assembler_sample(r->as, s->pos, &smp, s->frame.data, s->frame.len, s->frame_xxh3,
                              err);
    } else {
        if (r->o->fail_on_reject)
            return shard_err_set(err, SHARD_EREJECTED, "rejected '%s': %s", key, s->why.msg);
        struct shard_reject rj = {
            .key = malloc(key_len + 1),
            .key_len = key_len,
            .reason = strdup(s->why.msg),
            .has_source = s->has_source,
            .source_bytes = s->source_bytes,
            .source_xxh3 = s->source_xxh3,
        };
        if (!rj.key || !rj.reason) {
            shard_reject_release(&rj);
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
        memcpy(rj.key, key, key_len + 1);
        rc = assembler_reject(r->as, s->pos, &rj, err);
        shard_reject_release(&rj);
    }
    progress(r, 0);
    return rc;
}

static int convert(struct run *r, struct shard_err *err)
{
    void **slots = calloc(r->nslots, sizeof *slots);
    if (!slots)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nslots; i++)
        slots[i] = &r->slots[i];
    struct pipeline_ops ops = {r, convert_claim, convert_work, convert_consume};
    r->phase = "convert";
    int rc = pipeline_run(&ops, slots, r->nslots, r->threads, r->o->cancel, err);
    free(slots);
    if (!rc)
        rc = assembler_finish(r->as, err);
    progress(r, 1);
    return rc;
}

/* ---- publish ---------------------------------------------------------------- */

static int compare_rejects(const void *pa, const void *pb)
{
    const struct shard_reject *a = pa, *b = pb;
    int c = memcmp(a->key, b->key, a->key_len < b->key_len ? a->key_len : b->key_len);
    if (c)
        return c;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return strcmp(a->reason, b->reason);
}

static int write_index(struct run *r, uint64_t *bytes, uint64_t *xxh3, uint64_t *entries,
                       struct shard_err *err)
{
    char *tmp = dst_path(r->dst, "." SHARD_INDEX_FILE ".tmp");
    char *final = dst_path(r->dst, SHARD_INDEX_FILE);
    XXH3_state_t *h = XXH3_createState();
    int rc = SHARD_OK, fd;
    *bytes = *entries = 0;
    if (!tmp || !final || !h) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    XXH3_64bits_reset(h);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", tmp);
        goto out;
    }
    uint32_t count;
    assembler_shards(r->as, &count);
    for (uint32_t k = 0; !rc && k < count; k++) {
        char jname[64];
        journal_name(k, jname, sizeof jname);
        char *jpath = dst_work_path(r->dst, jname);
        rc = jpath ? journal_copy_samples(jpath, fd, h, bytes, entries, err)
                   : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        free(jpath);
    }
    rc = fs_commit(fd, rc, r->dst->path, tmp, final, err);
    *xxh3 = XXH3_64bits_digest(h);
out:
    XXH3_freeState(h);
    free(tmp);
    free(final);
    return rc;
}

static void write_run_info(struct run *r, const struct shardify_summary *s)
{
    json_t *o = json_object();
    char *text;
    if (!o)
        return;
    time_t t = time(NULL);
    struct tm tm;
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    json_object_set_new(o, "finished", json_string(when));
    json_object_set_new(o, "seconds", json_real(s->seconds));
    json_object_set_new(o, "threads", json_integer(s->threads));
    json_object_set_new(o, "samples_per_second",
                        json_real(s->seconds > 0 ? (double)(s->samples + s->rejected) /
                                                       s->seconds
                                                 : 0));
    json_object_set_new(o, "reused_shards", json_integer(s->reused_shards));
    json_object_set_new(o, "bytes_in", json_integer((json_int_t)s->bytes_in));
    json_object_set_new(o, "bytes_out", json_integer((json_int_t)s->bytes_out));
    text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (text) {
        struct shard_err ignored;
        /* informative only: a failure here does not fail the run */
        fs_write_atomic(r->dst->path, SHARDIFY_RUN_FILE, text, strlen(text), &ignored);
        free(text);
    }
}

static int publish(struct run *r, struct shardify_summary *sum, struct shard_err *err)
{
    r->phase = "publish";
    struct shard_manifest m;
    memset(&m, 0, sizeof m);
    int rc = write_index(r, &m.index_bytes, &m.index_xxh3, &m.index_entries, err);
    if (rc)
        return rc;
    m.config = r->config;  /* borrowed: not released below */
    m.source_kind = r->archive ? "archive" : "directory";
    m.samples = assembler_samples(r->as);
    m.unlabeled = assembler_unlabeled(r->as);
    m.ignored = r->stats.ignored + r->stats.ignored_symlinks + r->stats.ignored_special;
    m.labels = r->label_names;
    m.label_samples = (uint64_t *)assembler_label_samples(r->as);
    m.label_count = r->label_count;
    m.shards = (struct shard_manifest_shard *)assembler_shards(r->as, &m.shard_count);
    m.rejects = assembler_take_rejects(r->as, &m.reject_count);
    m.rejected = m.reject_count;
    m.index_file = SHARD_INDEX_FILE;
    if (m.reject_count)  /* qsort's base must not be NULL, even for 0 items */
        qsort(m.rejects, m.reject_count, sizeof *m.rejects, compare_rejects);
    if (m.index_entries != m.samples)
        rc = shard_err_set(err, SHARD_ECORRUPT, "index lists %llu samples, shards hold %llu",
                           (unsigned long long)m.index_entries, (unsigned long long)m.samples);
    if (!rc)
        rc = shard_manifest_write(r->dst->path, &m, err);

    sum->candidates = r->n;
    sum->samples = m.samples;
    sum->rejected = m.rejected;
    sum->ignored = m.ignored;
    sum->unlabeled = m.unlabeled;
    sum->shards = m.shard_count;
    sum->reused_shards = r->reused_shards;
    sum->bytes_in = r->bytes_in;
    sum->bytes_out = assembler_bytes(r->as);
    sum->threads = r->threads;
    sum->labels = r->label_count;
    sum->rejects = m.rejects;
    sum->reject_count = m.reject_count;
    sum->seconds = now() - r->t0;
    if (rc)
        return rc;
    write_run_info(r, sum);
    progress(r, 1);
    return dst_cleanup_work(r->dst, err);
}

/* ---- the run ---------------------------------------------------------------- */

/* DST inside SRC would make the output part of its own input. */
static int check_nesting(const char *src, const char *dst, struct shard_err *err)
{
    char *s = realpath(src, NULL), *d = realpath(dst, NULL);
    int rc = SHARD_OK;
    if (s && d) {
        size_t n = strlen(s);
        if (!strcmp(s, d) || (!strncmp(s, d, n) && (d[n] == '/' || !strcmp(s, "/"))))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "destination '%s' is inside the source '%s'", dst, src);
    }
    free(s);
    free(d);
    return rc;
}

static int open_source(struct run *r, struct shard_err *err)
{
    struct stat st;
    if (stat(r->src, &st) != 0)
        return shard_err_errno(err, SHARD_EINVAL, errno, "cannot read source '%s'", r->src);
    if (S_ISDIR(st.st_mode)) {
        r->src_fd = open(r->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->src_fd < 0)
            return shard_err_errno(err, SHARD_EINVAL, errno, "cannot open source '%s'", r->src);
        return SHARD_OK;
    }
    if (!S_ISREG(st.st_mode))
        return shard_err_set(err, SHARD_EINVAL,
                             "source '%s' is neither a directory nor an archive file", r->src);
    r->archive = 1;
    return SHARD_OK;
}

static void run_release(struct run *r)
{
    free_workers(r);
    assembler_free(r->as);
    shard_archive_close(r->ar);
    if (r->src_fd >= 0)
        close(r->src_fd);
    if (r->spool_fd >= 0)
        close(r->spool_fd);
    if (r->spool_path)
        unlink(r->spool_path);  /* never leave an archive's spool on a full disk */
    free(r->spool_path);
    for (uint64_t i = 0; r->spooled && i < r->spooled_cap; i++)
        free(r->spooled[i].reason);
    free(r->spooled);
    shard_keylist_release(&r->keys);
    free(r->plan);
    free(r->label_of);
    for (uint32_t i = 0; r->label_names && i < r->label_count; i++)
        free(r->label_names[i]);
    free(r->label_names);
    shard_labeler_free(r->labeler);
    free(r->config.labels);
    dst_close(r->dst);
}

int shardify_run(const char *src, const char *dst, const struct shardify_options *o,
                 struct shardify_summary *summary, struct shard_err *err)
{
    memset(summary, 0, sizeof *summary);
    int rc = validate(o, err);
    if (rc)
        return rc;
    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.t0 = now();
    r.src = src;
    r.src_fd = -1;
    r.spool_fd = -1;
    r.config = o->config;
    r.config.labels = NULL;
    r.threads = o->threads > 0 ? o->threads : shard_available_cpus();
    r.phase = "scan";

    if ((rc = open_source(&r, err)) ||
        (rc = shard_labeler_new(&r.labeler, o->labels ? o->labels : "dir", err)))
        goto out;
    if (!(r.config.labels = strdup(shard_labeler_describe(r.labeler)))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = dst_open(&r.dst, dst, o->mode, err)) || (rc = check_nesting(src, dst, err)) ||
        (rc = make_workers(&r, err)))
        goto out;

    if (r.archive) {
        rc = spool_archive(&r, err);
    } else {
        rc = shard_scan_dir(src, &r.keys, &r.stats, err);
        shard_keylist_sort(&r.keys);
        r.n = r.keys.count;
    }
    progress(&r, 1);
    if (rc || (rc = assign_labels(&r, err)) || (rc = make_plan(&r, err)) ||
        (rc = assembler_new(&r.as, r.dst, &r.config, r.label_count, err)))
        goto out;

    int resuming;
    if ((rc = check_state(&r, &resuming, err)))
        goto out;
    if (resuming && (rc = adopt_finished(&r, err)))
        goto out;
    if ((rc = convert(&r, err)) || (rc = publish(&r, summary, err)))
        goto out;
out:
    if (rc == SHARD_EINTR)
        shard_err_set(err, SHARD_EINTR,
                      "interrupted: finished shards are kept; run again with --resume to "
                      "continue");
    if (rc)
        summary->seconds = now() - r.t0;
    run_release(&r);
    return rc;
}
