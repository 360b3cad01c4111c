/* links.c - hard links inside an archive: which bytes each candidate has
 * (see source_internal.h for the model).
 *
 * Ids: a file is named by the entry that created it.  0..n-1 are the
 * candidates (in archive order, as pass 1 produced them); n+h is hidden
 * item h, an entry outside the candidates met in the second pass; NONE is
 * no file at all.
 *
 *   parent[c]   the file candidate c is a name of: c itself for an entry
 *               that is not a link, the target's file for a link; after
 *               resolving, the file itself (following chains)
 *   content[f]  the entry whose data file f ends up with: its creator, or
 *               the last link with data written to it
 * A link's target is always an earlier entry, so parent[c] < c for a
 * candidate target and one pass in candidate order resolves chains.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/source_internal.h"
#include "util/grow.h"
#include "shardx/shardx.h"

#define NONE UINT64_MAX

struct link {
    uint64_t cand;
    size_t target_off; /* in l->targets, NUL-terminated */
    size_t target_len;
    int link_only;
    int resolved; /* looked up: among the candidates, or in the second pass */
    int missing;  /* no earlier entry has the target's name */
    char *why;    /* no file: the reject reason */
};

/* A target name the second pass looks for, and the file it names so far. */
struct wanted {
    const char *name;
    size_t len;
    uint64_t current;
};

struct sk_links {
    struct link *links; /* in candidate order */
    size_t count, cap;
    struct shard_buf targets;
    uint64_t n;             /* candidates */
    uint64_t *parent;       /* per candidate */
    uint64_t *content;      /* per candidate file */
    uint64_t *item_content; /* per hidden item file */
    uint64_t *item_ordinal; /* per hidden item: its entry's position in the archive */
    uint64_t items, items_cap;
    uint64_t *sorted; /* candidates by (key, number), while resolving */
    const struct shard_keylist *keys;
    struct wanted *wanted; /* sorted by name, distinct */
    size_t wanted_count;
};

int sk_links_new(struct sk_links **out, struct shard_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

void sk_links_free(struct sk_links *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->links[i].why);
    free(l->links);
    shard_buf_release(&l->targets);
    free(l->parent);
    free(l->content);
    free(l->item_content);
    free(l->item_ordinal);
    free(l->sorted);
    free(l->wanted);
    free(l);
}

int sk_links_any(const struct sk_links *l)
{
    return l->count > 0;
}

int sk_links_note(struct sk_links *l, const struct sk_archive *a, uint64_t cand,
                  struct shard_err *err)
{
    size_t len;
    int link_only;
    const char *target = sk_archive_link(a, &len, &link_only);
    if (!target)
        return SHARD_OK;
    if (SK_GROW(l->links, l->cap, l->count + 1, 64))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t off = l->targets.len;
    int rc = shard_buf_append(&l->targets, target, len + 1, err);
    if (rc)
        return rc;
    l->links[l->count++] = (struct link){cand, off, len, link_only, 0, 0, NULL};
    return SHARD_OK;
}

static const char *target_of(const struct sk_links *l, const struct link *k)
{
    return (const char *)l->targets.data + k->target_off;
}

/* ---- finding a name among the candidates ------------------------------------ */

static int compare_sorted(const void *pa, const void *pb, void *ctx)
{
    const struct shard_keylist *keys = ctx;
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    int c = sk_key_compare(keys->arena + keys->offsets[a], keys->lengths[a],
                           keys->arena + keys->offsets[b], keys->lengths[b]);
    return c ? c : (a > b) - (a < b);
}

/* The last candidate named `name` that comes before candidate `before`,
 * or NONE. */
static uint64_t latest_candidate(const struct sk_links *l, const char *name, size_t len,
                                 uint64_t before)
{
    const struct shard_keylist *keys = l->keys;
    size_t lo = 0, hi = l->n; /* first position not below (name, before) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t c = l->sorted[mid];
        int cmp = sk_key_compare(keys->arena + keys->offsets[c], keys->lengths[c], name, len);
        if (cmp < 0 || (cmp == 0 && c < before))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NONE;
    uint64_t c = l->sorted[lo - 1];
    return sk_key_compare(keys->arena + keys->offsets[c], keys->lengths[c], name, len) == 0 ? c
                                                                                            : NONE;
}

/* Link k's target names `file` (NONE: nothing).  A link with data of its
 * own keeps it when its target is missing. */
static void set_parent(struct sk_links *l, struct link *k, uint64_t file)
{
    k->resolved = 1;
    k->missing = file == NONE;
    l->parent[k->cand] = file != NONE ? file : k->link_only ? NONE : k->cand;
}

/* ---- the second pass: targets that are not candidates ------------------------- */

static int compare_wanted(const void *pa, const void *pb)
{
    const struct wanted *a = pa, *b = pb;
    return sk_key_compare(a->name, a->len, b->name, b->len);
}

static struct wanted *find_wanted(const struct sk_links *l, const char *name, size_t len)
{
    struct wanted probe = {name, len, NONE};
    return l->wanted_count
               ? bsearch(&probe, l->wanted, l->wanted_count, sizeof probe, compare_wanted)
               : NULL;
}

static int want_name(void *ctx, const char *name, size_t len)
{
    return find_wanted(ctx, name, len) != NULL;
}

static int collect_wanted(struct sk_links *l, struct shard_err *err)
{
    l->wanted = calloc(l->count, sizeof *l->wanted);
    if (!l->wanted)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        if (!l->links[i].resolved)
            l->wanted[n++] = (struct wanted){target_of(l, &l->links[i]), l->links[i].target_len,
                                             NONE};
    qsort(l->wanted, n, sizeof *l->wanted, compare_wanted);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        if (d == 0 || compare_wanted(&l->wanted[d - 1], &l->wanted[i]))
            l->wanted[d++] = l->wanted[i];
    l->wanted_count = d;
    return SHARD_OK;
}

static int new_item(struct sk_links *l, uint64_t ordinal, uint64_t *id, struct shard_err *err)
{
    if (l->items == l->items_cap) {
        uint64_t cap = l->items_cap ? 2 * l->items_cap : 16;
        uint64_t *content = realloc(l->item_content, cap * sizeof *content);
        if (content)
            l->item_content = content;
        uint64_t *ordinals = content ? realloc(l->item_ordinal, cap * sizeof *ordinals) : NULL;
        if (!ordinals)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        l->item_ordinal = ordinals;
        l->items_cap = cap;
    }
    *id = l->n + l->items;
    l->item_ordinal[l->items] = ordinal;
    l->item_content[l->items++] = *id;
    return SHARD_OK;
}

/* Read the archive again: follow the names the unresolved links need, in
 * order, and give each link the file its target names when it is met. */
static int second_pass(struct sk_links *l, const char *path, uint64_t max_bytes,
                       sk_links_item_fn item_fn, void *ctx, struct shard_err *err)
{
    int rc = collect_wanted(l, err);
    if (rc)
        return rc;
    struct sk_archive *a;
    if ((rc = sk_archive_open(&a, path, err)))
        return rc;
    struct shard_buf buf = {0};
    struct shard_scan_stats st = {0};
    struct sk_archive_entry ent;
    uint64_t cand = 0;
    size_t next = 0; /* the next unresolved link */
    while (next < l->count && l->links[next].resolved)
        next++;
    while (next < l->count) {
        rc = sk_archive_next_entry(a, max_bytes, want_name, l, &ent, &buf, &st, err);
        if (rc == 0) {
            char q[SHARDX_QUOTE_SIZE];
            size_t len;
            const char *key = shard_keylist_get(l->keys, l->links[next].cand, &len);
            rc = shard_err_set(err, SHARD_ECORRUPT,
                               "the archive ended before its entry '%s' "
                               "on a second reading: did it change?",
                               shardx_quote(key, len, q, sizeof q));
        }
        if (rc < 0)
            break;
        if (ent.candidate) {
            size_t len;
            const char *key = cand < l->n ? shard_keylist_get(l->keys, cand, &len) : NULL;
            if (!key || len != ent.key_len || memcmp(key, ent.key, len)) {
                rc = shard_err_set(err, SHARD_ECORRUPT,
                                   "the archive changed between two "
                                   "readings");
                break;
            }
            struct link *k = &l->links[next];
            if (k->cand == cand) {
                struct wanted *w = find_wanted(l, target_of(l, k), k->target_len);
                set_parent(l, k, w ? w->current : NONE);
                while (++next < l->count && l->links[next].resolved)
                    ;
            }
            cand++;
            continue;
        }
        struct wanted *w = find_wanted(l, ent.key, ent.key_len);
        if (!w)
            continue;
        if (ent.link_only) {
            /* a name for a file met before: follow it */
            struct wanted *t = find_wanted(l, ent.link, ent.link_len);
            w->current = t ? t->current : latest_candidate(l, ent.link, ent.link_len, cand);
            continue;
        }
        uint64_t id = NONE;
        if ((rc = new_item(l, sk_archive_ordinal(a), &id, err)) ||
            (item_fn && (rc = item_fn(ctx, id - l->n, &buf, ent.too_large, ent.problem, err))))
            break;
        w->current = id;
    }
    shard_buf_release(&buf);
    sk_archive_close(a);
    if (rc < 0)
        shard_err_prefix(err, rc, "cannot read archive '%s' for its hard links", path);
    return rc < 0 ? rc : SHARD_OK;
}

/* ---- resolving ------------------------------------------------------------------ */

static uint64_t *content_slot(struct sk_links *l, uint64_t file)
{
    return file < l->n ? &l->content[file] : &l->item_content[file - l->n];
}

static int set_why(struct sk_links *l, struct link *k, const char *what, struct shard_err *err)
{
    char q[SHARDX_QUOTE_SIZE], text[SHARD_ERRMSG_SIZE];
    snprintf(text, sizeof text, "%s'%s', %s", SK_REASON_LINK,
             shardx_quote(target_of(l, k), k->target_len, q, sizeof q), what);
    if (!(k->why = strdup(text)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

int sk_links_resolve(struct sk_links *l, const struct shard_keylist *keys, const char *path,
                     uint64_t max_bytes, sk_links_item_fn item_fn, void *ctx, struct shard_err *err)
{
    if (l->count == 0)
        return SHARD_OK;
    uint64_t n = l->n = keys->count;
    l->keys = keys;
    l->parent = malloc(n * sizeof *l->parent);
    l->content = malloc(n * sizeof *l->content);
    l->sorted = malloc(n * sizeof *l->sorted);
    if (!l->parent || !l->content || !l->sorted)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t c = 0; c < n; c++)
        l->parent[c] = l->content[c] = l->sorted[c] = c;
    qsort_r(l->sorted, n, sizeof *l->sorted, compare_sorted, (void *)keys);

    /* pass 1's candidates name most targets */
    size_t unresolved = 0;
    for (size_t i = 0; i < l->count; i++) {
        struct link *k = &l->links[i];
        uint64_t t = latest_candidate(l, target_of(l, k), k->target_len, k->cand);
        if (t != NONE)
            set_parent(l, k, t);
        else
            unresolved++;
    }
    int rc = unresolved ? second_pass(l, path, max_bytes, item_fn, ctx, err) : SHARD_OK;
    free(l->sorted);
    l->sorted = NULL;
    if (rc)
        return rc;

    /* the file of each name: chains end at an earlier candidate's file */
    for (uint64_t c = 0; c < n; c++) {
        uint64_t p = l->parent[c];
        if (p != c && p < n)
            l->parent[c] = l->parent[p];
    }
    /* links with data write their file, the last one winning */
    for (size_t i = 0; i < l->count; i++) {
        struct link *k = &l->links[i];
        uint64_t file = l->parent[k->cand];
        if (!k->link_only && file != NONE)
            *content_slot(l, file) = k->cand;
        if (file == NONE && (rc = set_why(l, k,
                                          k->missing ? "which no earlier entry of the archive has"
                                                     : "itself a hard link to nothing",
                                          err)))
            return rc;
    }
    return SHARD_OK;
}

int sk_links_source(const struct sk_links *l, uint64_t cand, struct sk_link_copy *out)
{
    if (l->count == 0 || cand >= l->n)
        return 0;
    uint64_t file = l->parent[cand];
    if (file == NONE) {
        size_t lo = 0, hi = l->count; /* its link record, by candidate */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (l->links[mid].cand <= cand)
                lo = mid;
            else
                hi = mid;
        }
        *out = (struct sk_link_copy){cand, SK_FROM_NOWHERE, 0, l->links[lo].why};
        return 1;
    }
    uint64_t w = file < l->n ? l->content[file] : l->item_content[file - l->n];
    if (w == cand)
        return 0;
    if (w < l->n)
        *out = (struct sk_link_copy){cand, SK_FROM_CANDIDATE, w, NULL};
    else
        *out = (struct sk_link_copy){cand, SK_FROM_ITEM, w - l->n, NULL};
    return 1;
}

int sk_links_next_copy(const struct sk_links *l, uint64_t *pos, struct sk_link_copy *out)
{
    for (; *pos < l->n && l->count; (*pos)++)
        if (sk_links_source(l, *pos, out)) {
            (*pos)++;
            return 1;
        }
    return 0;
}

uint64_t sk_links_item_ordinal(const struct sk_links *l, uint64_t item)
{
    return item < l->items ? l->item_ordinal[item] : UINT64_MAX;
}
