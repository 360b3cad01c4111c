/* keys_check.c - key tables and unique keys (see verify_internal.h and
 * manifests/FORMAT.md, "Key tables").
 *
 * A key table must hold exactly the (xxh3 of the key, line) of each line of
 * its index file, sorted.  Both sides are summed without order: the index
 * walk adds f(hash) * X^line for each line (index_check.c), the table's
 * reader the same for each entry, in the field of integers modulo the
 * Mersenne prime 2^61 - 1; equal sums with the table sorted and its count
 * right mean it holds those pairs (two different sets of pairs agree by
 * chance with a probability of about lines / 2^61).  A part sums the lines
 * it reads from 0 and the combine shifts each part's sum by the lines
 * before it, so the sums need no line number a part cannot know.
 *
 * Unique keys: the part of a check in N parts takes the N-th of the hash
 * space that is its own ([hash_lo, hash_hi]), finds where it begins in every
 * table by a binary search, and merges those ranges (a k-way merge on a
 * heap, one table per index file): equal hashes are adjacent, and their
 * keys are compared through the footers (a shard not in the window is read
 * for it and let go).  The part checks its ranges sorted; the combine, that
 * they tile each table.
 *
 * A dataset written before key tables has none: its keys' hashes are
 * collected window by window (16 bytes a sample) and sorted at the end, as
 * shardcheck always did. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "manifest/keys.h"
#include "read/dataset_internal.h"
#include "read/fetch.h"
#include "util/endian.h"
#include "util/grow.h"
#include "shardx/shardx.h"
#include "verify/verify_internal.h"

#define MOD61 ((1ULL << 61) - 1)
/* X of the sums: any number of the field but 0 and 1 does. */
#define KEYS_X 0x0c6a4a7935bd1e99ULL
/* Entries a range reads at a time: ENTRIES_READ, fewer when the tables are
 * many (a dataset merged from a thousand parts has a thousand), so that
 * their buffers take about ENTRIES_BUFFERED entries in all. */
#define ENTRIES_READ 4096u
#define ENTRIES_READ_MIN 256u
#define ENTRIES_BUFFERED (1u << 18)
/* Tables kept open through the merge; past that many, each is opened again
 * for each read (file descriptors are a few thousand at most). */
#define TABLES_KEPT_OPEN 64u
/* X^n is looked up in three tables of 2^16 powers (lines below 2^48). */
#define POWER_BITS 16u
#define POWER_TABLES 3u

static uint64_t mod_mul(uint64_t a, uint64_t b)
{
    unsigned __int128 p = (unsigned __int128)a * b;
    uint64_t r = ((uint64_t)p & MOD61) + (uint64_t)(p >> 61);
    r = (r & MOD61) + (r >> 61);
    return r >= MOD61 ? r - MOD61 : r;
}

uint64_t sk_keys_add(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= MOD61 ? r - MOD61 : r;
}

uint64_t sk_keys_next_power(uint64_t x_power)
{
    return mod_mul(x_power, KEYS_X);
}

uint64_t sk_keys_term(uint64_t hash, uint64_t x_power)
{
    /* splitmix64's finalizer: neighbouring hashes give unrelated terms */
    uint64_t z = hash + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return mod_mul(z % MOD61, x_power);
}

static uint64_t power_of_x(uint64_t n)
{
    uint64_t result = 1, base = KEYS_X;
    for (; n; n >>= 1) {
        if (n & 1)
            result = mod_mul(result, base);
        base = mod_mul(base, base);
    }
    return result;
}

uint64_t sk_keys_shift(uint64_t sum, uint64_t n)
{
    return mod_mul(sum, power_of_x(n));
}

void sk_keys_hash_range(uint32_t part, uint32_t parts, uint64_t *lo, uint64_t *hi)
{
    unsigned __int128 space = (unsigned __int128)1 << 64;
    *lo = (uint64_t)(space * part / parts);
    *hi = part + 1 >= parts ? UINT64_MAX : (uint64_t)(space * (part + 1) / parts) - 1;
}

/* X^n by table: powers[t][i] = X^(i << (16 t)). */
struct powers {
    uint64_t *t;
};

static int powers_make(struct powers *p)
{
    size_t n = (size_t)1 << POWER_BITS;
    if (!(p->t = malloc(POWER_TABLES * n * sizeof *p->t)))
        return SHARD_ENOMEM;
    for (unsigned t = 0; t < POWER_TABLES; t++) {
        uint64_t step = power_of_x((uint64_t)1 << (POWER_BITS * t)), x = 1;
        for (size_t i = 0; i < n; i++, x = mod_mul(x, step))
            p->t[t * n + i] = x;
    }
    return SHARD_OK;
}

static uint64_t powers_of(const struct powers *p, uint64_t line)
{
    if (line >> (POWER_BITS * POWER_TABLES))
        return power_of_x(line);
    size_t n = (size_t)1 << POWER_BITS, mask = n - 1;
    uint64_t x = mod_mul(p->t[line & mask], p->t[n + ((line >> POWER_BITS) & mask)]);
    return mod_mul(x, p->t[2 * n + ((line >> (2 * POWER_BITS)) & mask)]);
}

/* ---- whole files -------------------------------------------------------------- */

int sk_verify_plan_shares(struct verify_run *v, uint32_t parts, struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    if (!(v->share_starts = calloc((size_t)parts + 1, sizeof *v->share_starts)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    v->parts = parts;
    uint64_t total = 0, before = 0;
    for (uint32_t s = 0; s < m->shard_count; s++)
        total += m->shards[s].bytes;
    /* part i begins at the first shard whose middle is past i/parts of the bytes */
    uint32_t s = 0;
    for (uint32_t i = 1; i < parts; i++) {
        unsigned __int128 want = (unsigned __int128)total * i / parts;
        while (s < m->shard_count && before + m->shards[s].bytes / 2 < want)
            before += m->shards[s++].bytes;
        v->share_starts[i] = s;
    }
    v->share_starts[parts] = m->shard_count;
    return SHARD_OK;
}

uint32_t sk_verify_share_of(const struct verify_run *v, uint32_t s)
{
    uint32_t lo = 0, hi = v->parts; /* the last part starting at or before s */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v->share_starts[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Index file k is hashed by the part reading its first line (the one
 * holding its first shard), which often reads it whole; its key table by
 * the next part, so that one part does not read both. */
int sk_verify_hashes_index(const struct verify_run *v, uint32_t part, uint32_t k)
{
    return sk_verify_share_of(v, v->file_first[k]) == part;
}

int sk_verify_hashes_table(const struct verify_run *v, uint32_t part, uint32_t k)
{
    return (sk_verify_share_of(v, v->file_first[k]) + 1) % v->parts == part;
}

/* ---- a part's range of a key table ------------------------------------------------ */

struct table_range {
    uint32_t file;
    struct shard_dataset *ds;
    const char *name;
    int keep_open;   /* else f is opened for each read, and closed */
    size_t per_read; /* entries */
    struct fetch_file *f;
    uint64_t count;    /* entries, as its header says */
    uint64_t pos, end; /* next entry to read; end of the table */
    uint8_t *buf;
    size_t have, at; /* entries buffered, the next one */
    uint64_t hash, line;
    int live;
    XXH3_state_t *whole; /* the whole file hashed as it is read, or NULL */
};

static int read_table(void *ctx, uint64_t offset, void *buf, size_t len, struct shard_err *err)
{
    return fetch_read(ctx, offset, buf, len, err);
}

/* The next entry of t into t->hash, t->line (t->live 0 at the end). */
static int advance(struct table_range *t, struct shard_err *err)
{
    if (t->at == t->have) {
        if (t->pos >= t->end) {
            t->live = 0;
            return SHARD_OK;
        }
        size_t n = t->end - t->pos < t->per_read ? (size_t)(t->end - t->pos) : t->per_read;
        int rc = t->f ? SHARD_OK : sk_dataset_open_file(t->ds, t->name, &t->f, err);
        if (!rc)
            rc = fetch_read(t->f, SK_KEYS_HEADER_BYTES + t->pos * SK_KEYS_ENTRY_BYTES, t->buf,
                            n * SK_KEYS_ENTRY_BYTES, err);
        if (!t->keep_open) {
            fetch_close(t->f);
            t->f = NULL;
        }
        if (rc)
            return rc;
        if (t->whole)
            XXH3_64bits_update(t->whole, t->buf, n * SK_KEYS_ENTRY_BYTES);
        t->pos += n;
        t->have = n;
        t->at = 0;
    }
    const uint8_t *e = t->buf + t->at++ * SK_KEYS_ENTRY_BYTES;
    t->hash = get_le64(e);
    t->line = get_le64(e + 8);
    t->live = 1;
    return SHARD_OK;
}

/* The first entry of the table whose hash is at least lo. */
static int first_at_least(struct table_range *t, uint64_t lo, uint64_t *out, struct shard_err *err)
{
    uint64_t a = 0, b = t->count;
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        uint8_t e[SK_KEYS_ENTRY_BYTES];
        int rc = fetch_read(t->f, SK_KEYS_HEADER_BYTES + mid * SK_KEYS_ENTRY_BYTES, e, sizeof e,
                            err);
        if (rc)
            return rc;
        if (get_le64(e) < lo)
            a = mid + 1;
        else
            b = mid;
    }
    *out = a;
    return SHARD_OK;
}

/* Open key table k and its header: 1 when usable (a key table whose size is
 * its count's), 0 when not (the part hashing it says why), or an error. */
static int open_table(struct verify_run *v, uint32_t k, struct table_range *t, uint8_t *header,
                      struct shard_err *err)
{
    const char *name = v->m->indexes[k].keys_file;
    struct shard_err e;
    t->ds = v->ds;
    t->name = name;
    if (sk_dataset_open_file(v->ds, name, &t->f, &e))
        return 0;
    if (t->f->size < SK_KEYS_HEADER_BYTES)
        return 0;
    int rc = fetch_read(t->f, 0, header, SK_KEYS_HEADER_BYTES, err);
    if (rc)
        return rc == SHARD_ENOMEM ? rc : 0;
    t->count = get_le64(header + 8);
    if (memcmp(header, SK_KEYS_MAGIC, 8) || get_le64(header + 24) != XXH3_64bits(header, 24) ||
        get_le64(header + 16) != 0 || t->count > (t->f->size - SK_KEYS_HEADER_BYTES) / 16 ||
        t->f->size != SK_KEYS_HEADER_BYTES + t->count * SK_KEYS_ENTRY_BYTES)
        return 0;
    return 1;
}

/* Key table k's header, size and hash, by the part that hashes it (whole:
 * its `bytes` were hashed as the part read them, else it is read again). */
static void check_table_file(struct verify_run *v, uint32_t k, const XXH3_state_t *whole,
                             uint64_t whole_bytes)
{
    const struct shard_manifest_index *x = &v->m->indexes[k];
    struct shard_err e;
    if (whole)
        sk_verify_identity(v, SHARD_CHECK_KEYS, -1, x->keys_file, whole_bytes,
                           XXH3_64bits_digest(whole), x->keys_bytes, x->keys_xxh3);
    else if (sk_verify_hash_file(v, SHARD_CHECK_KEYS, -1, x->keys_file, x->keys_bytes, x->keys_xxh3,
                                 NULL))
        return;
    struct fetch_file *f = NULL;
    if (sk_dataset_open_file(v->ds, x->keys_file, &f, &e))
        return;
    int rc = sk_keys_check_header(read_table, f, x->keys_file, x->entries, &e);
    if (rc && rc != SHARD_ENOMEM)
        sk_verify_problem(v, SHARD_CHECK_KEYS, rc, -1, -1, NULL, 0, "%s", e.msg);
    else if (!rc && f->size != SK_KEYS_HEADER_BYTES + x->entries * SK_KEYS_ENTRY_BYTES)
        sk_verify_problem(v, SHARD_CHECK_KEYS, SHARD_ECORRUPT, -1, -1, NULL, 0,
                          "%s: %llu bytes, not those of a table of %llu keys", x->keys_file,
                          (unsigned long long)f->size, (unsigned long long)x->entries);
    fetch_close(f);
}

/* ---- duplicate keys ------------------------------------------------------------- */

/* The samples gs[0..n) share a key hash: each whose key equals an earlier
 * one's is a duplicate (named with the first of them). */
static void compare_equal_hashes(struct verify_run *v, const uint64_t *gs, size_t n)
{
    for (size_t b = 1; b < n; b++) {
        size_t lb;
        char *kb = sk_verify_key_of(v, gs[b], &lb);
        for (size_t a = 0; kb && a < b; a++) {
            size_t la;
            char *ka = sk_verify_key_of(v, gs[a], &la);
            int same = ka && la == lb && !memcmp(ka, kb, la);
            free(ka);
            if (!same)
                continue;
            uint32_t sa, sb;
            uint64_t ra, rb;
            shard_dataset_locate(v->ds, gs[a], &sa, &ra, NULL);
            shard_dataset_locate(v->ds, gs[b], &sb, &rb, NULL);
            char q[SHARDX_QUOTE_SIZE];
            sk_verify_problem(v, SHARD_CHECK_KEYS, SHARD_EMISMATCH, sb, (int64_t)rb, kb, lb,
                              "duplicate key '%s': %s record %llu and %s record %llu",
                              shardx_quote(kb, lb, q, sizeof q), v->m->shards[sa].file,
                              (unsigned long long)ra, v->m->shards[sb].file,
                              (unsigned long long)rb);
            break;
        }
        free(kb);
    }
}

/* A run of equal hashes, as samples. */
struct equal_run {
    uint64_t hash;
    uint64_t *gs;
    size_t n, cap;
};

/* The run is over: compare its keys. */
static void end_run(struct verify_run *v, struct equal_run *run)
{
    if (run->n > 1)
        compare_equal_hashes(v, run->gs, run->n);
    run->n = 0;
}

/* Entry (hash, g) comes next in hash order (valid: g is a sample). */
static int next_in_order(struct verify_run *v, struct equal_run *run, uint64_t hash, uint64_t g,
                         int valid)
{
    if (run->n && run->hash != hash)
        end_run(v, run);
    run->hash = hash;
    if (!valid)
        return SHARD_OK;
    if (SK_GROW(run->gs, run->cap, run->n + 1, 8))
        return SHARD_ENOMEM;
    run->gs[run->n++] = g;
    return SHARD_OK;
}

/* ---- the part's key hashes in every table ------------------------------------------ */

static int heap_less(const struct table_range *a, const struct table_range *b)
{
    if (a->hash != b->hash)
        return a->hash < b->hash;
    if (a->file != b->file)
        return a->file < b->file;
    return a->line < b->line;
}

static void sift_down(struct table_range **heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(heap[l], heap[m]))
            m = l;
        if (r < n && heap_less(heap[r], heap[m]))
            m = r;
        if (m == i)
            return;
        struct table_range *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Entry (hash, line) of table t within the part's range: its order and sum. */
static void take_entry(struct verify_run *v, struct table_range *t, const struct powers *pw,
                       uint64_t *prev_hash, uint64_t *prev_line, int *started)
{
    struct sk_table_range *tr = &v->part->tables[t->file];
    if (*started && (t->hash < *prev_hash || (t->hash == *prev_hash && t->line <= *prev_line)))
        tr->sorted = 0;
    *started = 1;
    *prev_hash = t->hash;
    *prev_line = t->line;
    tr->sum = sk_keys_add(tr->sum, sk_keys_term(t->hash, powers_of(pw, t->line)));
}

static int check_tables(struct verify_run *v, struct shard_err *err)
{
    struct sk_part *p = v->part;
    uint32_t n = v->index_files;
    struct table_range *ts = calloc(n, sizeof *ts);
    struct table_range **heap = calloc(n, sizeof *heap);
    uint64_t *prev_hash = calloc(n, sizeof *prev_hash), *prev_line = calloc(n, sizeof *prev_line);
    int *started = calloc(n, sizeof *started);
    struct powers pw = {NULL};
    struct equal_run run = {0, NULL, 0, 0};
    int rc = ts && heap && prev_hash && prev_line && started ? powers_make(&pw) : SHARD_ENOMEM;
    size_t live = 0;
    int whole_range = p->hash_lo == 0 && p->hash_hi == UINT64_MAX;
    for (uint32_t k = 0; !rc && k < n; k++) {
        struct table_range *t = &ts[k];
        struct sk_table_range *tr = &p->tables[k];
        uint8_t header[SK_KEYS_HEADER_BYTES];
        t->file = k;
        int usable = open_table(v, k, t, header, err);
        if (usable < 0) {
            rc = usable;
            break;
        }
        int hashes = sk_verify_hashes_table(v, p->part, k);
        if (!usable) {
            fetch_close(t->f);
            t->f = NULL;
            if (hashes)
                check_table_file(v, k, NULL, 0);
            continue;
        }
        t->keep_open = n <= TABLES_KEPT_OPEN;
        t->per_read = n > ENTRIES_BUFFERED / ENTRIES_READ ? ENTRIES_BUFFERED / n : ENTRIES_READ;
        t->per_read = t->per_read < ENTRIES_READ_MIN ? ENTRIES_READ_MIN : t->per_read;
        if (!(t->buf = malloc(t->per_read * SK_KEYS_ENTRY_BYTES))) {
            rc = SHARD_ENOMEM;
            break;
        }
        tr->usable = 1;
        tr->sorted = 1;
        tr->count = t->count;
        t->end = t->count;
        if (hashes && whole_range) { /* read whole in order: hashed as it is read */
            if (!(t->whole = XXH3_createState())) {
                rc = SHARD_ENOMEM;
                break;
            }
            XXH3_64bits_reset(t->whole);
            XXH3_64bits_update(t->whole, header, sizeof header);
        } else if (hashes) {
            check_table_file(v, k, NULL, 0);
        }
        struct shard_err e;
        if (p->hash_lo && (rc = first_at_least(t, p->hash_lo, &t->pos, &e))) {
            if (rc == SHARD_ENOMEM)
                break;
            sk_verify_problem(v, SHARD_CHECK_KEYS, rc, -1, -1, NULL, 0, "%s: cannot read: %s",
                              v->m->indexes[k].keys_file, e.msg);
            rc = SHARD_OK;
            tr->usable = 0;
            continue;
        }
        tr->start = tr->end = t->pos;
        if (!t->keep_open) { /* opened again for each read */
            fetch_close(t->f);
            t->f = NULL;
        }
        if ((rc = advance(t, &e)) && rc != SHARD_ENOMEM) {
            sk_verify_problem(v, SHARD_CHECK_KEYS, rc, -1, -1, NULL, 0, "%s: cannot read: %s",
                              v->m->indexes[k].keys_file, e.msg);
            rc = SHARD_OK;
            tr->usable = 0;
            continue;
        }
        if (rc)
            break;
        if (t->live && t->hash <= p->hash_hi)
            heap[live++] = t;
        else
            t->live = 0;
    }
    for (size_t i = live; i-- > 0;)
        sift_down(heap, live, i);
    /* merge: every entry of the part's hashes, in (hash, file, line) order */
    while (!rc && live) {
        struct table_range *t = heap[0];
        struct sk_table_range *tr = &p->tables[t->file];
        take_entry(v, t, &pw, &prev_hash[t->file], &prev_line[t->file], &started[t->file]);
        tr->end++;
        uint64_t first = sk_dataset_shard_first(v->ds, v->file_first[t->file]);
        uint64_t stop = sk_dataset_shard_first(v->ds, v->file_first[t->file + 1]);
        int valid = t->line < stop - first;
        rc = next_in_order(v, &run, t->hash, first + t->line, valid);
        struct shard_err e;
        if (!rc && (rc = advance(t, &e)) && rc != SHARD_ENOMEM) {
            sk_verify_problem(v, SHARD_CHECK_KEYS, rc, -1, -1, NULL, 0, "%s: cannot read: %s",
                              v->m->indexes[t->file].keys_file, e.msg);
            tr->usable = 0;
            t->live = 0;
            rc = SHARD_OK;
        }
        if (t->live && t->hash > p->hash_hi)
            t->live = 0;
        if (!t->live)
            heap[0] = heap[--live];
        sift_down(heap, live, 0);
    }
    if (!rc)
        end_run(v, &run);
    /* a range read whole: the rest of its file after the part's last hash */
    for (uint32_t k = 0; !rc && k < n; k++) {
        struct table_range *t = &ts[k];
        if (t->whole && p->tables[k].usable && p->tables[k].end == t->count)
            check_table_file(v, k, t->whole, SK_KEYS_HEADER_BYTES + t->count * SK_KEYS_ENTRY_BYTES);
        else if (t->whole)
            check_table_file(v, k, NULL, 0);
    }
    for (uint32_t k = 0; ts && k < n; k++) {
        fetch_close(ts[k].f);
        free(ts[k].buf);
        XXH3_freeState(ts[k].whole);
    }
    free(ts);
    free(heap);
    free(prev_hash);
    free(prev_line);
    free(started);
    free(pw.t);
    free(run.gs);
    return rc ? shard_err_set(err, rc, "out of memory checking the key tables") : SHARD_OK;
}

/* ---- datasets without key tables ----------------------------------------------- */

struct sk_key_ref {
    uint64_t hash;
    uint64_t g;
};

int sk_verify_keys_collect(struct verify_run *v, struct shard_err *err)
{
    for (uint32_t s = v->window_start; s < v->window_end; s++) {
        const struct shard_footer *f = v->footers[s];
        uint64_t first = sk_dataset_shard_first(v->ds, s);
        if (!f)
            continue;
        if (SK_GROW(v->key_refs, v->key_ref_cap, v->key_ref_count + f->record_count, 1024))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory for the keys of %llu samples",
                                 (unsigned long long)v->samples);
        for (uint64_t r = 0; r < f->record_count; r++)
            v->key_refs[v->key_ref_count++] = (struct sk_key_ref){
                XXH3_64bits(f->keys + f->key_offsets[r], f->rows[r].key_len), first + r};
    }
    return SHARD_OK;
}

static int compare_key_refs(const void *pa, const void *pb)
{
    const struct sk_key_ref *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return (a->g > b->g) - (a->g < b->g);
}

static int check_collected(struct verify_run *v, struct shard_err *err)
{
    qsort(v->key_refs, v->key_ref_count, sizeof *v->key_refs, compare_key_refs);
    struct equal_run run = {0, NULL, 0, 0};
    int rc = SHARD_OK;
    for (size_t i = 0; !rc && i < v->key_ref_count; i++)
        rc = next_in_order(v, &run, v->key_refs[i].hash, v->key_refs[i].g, 1);
    if (!rc)
        end_run(v, &run);
    free(run.gs);
    free(v->key_refs);
    v->key_refs = NULL;
    v->key_ref_count = v->key_ref_cap = 0;
    return rc ? shard_err_set(err, rc, "out of memory") : SHARD_OK;
}

int sk_verify_keys(struct verify_run *v, struct shard_err *err)
{
    return v->key_tables ? check_tables(v, err) : check_collected(v, err);
}
