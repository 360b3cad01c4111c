/* order.c - the sample order of a run: labels, the deterministic sample
 * order, and the state an interrupted run must match to be resumed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "shardx/shardx.h"
#include "util/random.h"
#include "convert/run.h"
#include "manifest/field_parse.h"
#include "shardkit/format.h"
#include "source/source_internal.h"

static int compare_keys(const struct shard_keylist *l, uint64_t a, uint64_t b)
{
    return sk_key_compare(l->arena + l->offsets[a], l->lengths[a], l->arena + l->offsets[b],
                          l->lengths[b]);
}

static int compare_candidates(const void *pa, const void *pb, void *ctx)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    int c = compare_keys(ctx, a, b);
    return c ? c : (a > b) - (a < b); /* archive order breaks ties: stable */
}

struct label_ref {
    const char *name;
    size_t len;
};

/* A distinct label and the name the manifest gives it. */
struct named_label {
    struct label_ref ref;
    char *name; /* sk_jsonkey_label_name: the bytes, or %XX escapes when not UTF-8 */
};

static int compare_named_labels(const void *pa, const void *pb)
{
    return strcmp(((const struct named_label *)pa)->name, ((const struct named_label *)pb)->name);
}

/* The distinct label names, in an open-addressing hash set: memory grows with
 * the number of labels, not with the number of samples. */
struct label_set {
    struct label_slot {
        struct label_ref ref; /* name == NULL: empty slot */
        uint64_t hash;
        int32_t number; /* position in sorted order, once known */
    } * slots;
    size_t cap; /* a power of two */
    size_t count;
    int owned; /* the names are copies, freed with the set (by archive) */
};

static struct label_slot *label_set_find(const struct label_set *set, const char *name, size_t len,
                                         uint64_t hash)
{
    size_t i = (size_t)hash & (set->cap - 1);
    for (;; i = (i + 1) & (set->cap - 1)) {
        struct label_slot *s = &set->slots[i];
        if (!s->ref.name ||
            (s->hash == hash && s->ref.len == len && memcmp(s->ref.name, name, len) == 0))
            return s;
    }
}

static int label_set_add(struct label_set *set, const char *name, size_t len, struct shard_err *err)
{
    if (2 * (set->count + 1) > set->cap) { /* keep the load under one half */
        struct label_set bigger = {calloc(set->cap ? 2 * set->cap : 64, sizeof *set->slots),
                                   set->cap ? 2 * set->cap : 64, set->count, set->owned};
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
        if (set->owned && !(name = strndup(name, len)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        s->ref.name = name;
        s->ref.len = len;
        s->hash = hash;
        set->count++;
    }
    return SHARD_OK;
}

static void label_set_free(struct label_set *set)
{
    for (size_t i = 0; set && set->owned && i < set->cap; i++)
        free((char *)set->slots[i].ref.name);
    if (set)
        free(set->slots);
    free(set);
}

/* Labels the user asked for (not the default, not "none"): a rule that
 * labels nothing is a mistake to say, not a dataset to write. */
static int labels_asked(const struct run *r)
{
    return r->o->labels && strcmp(r->o->labels, "none") != 0;
}

static int no_label_error(const struct run *r, const char *what, uint64_t count,
                          struct shard_err *err)
{
    if (r->label_rows)
        return shard_err_set(err, SHARD_EINVAL,
                             "--labels '%s' gives none of the %llu %s a class: "
                             "%llu of its %llu rows name no file of the source",
                             r->o->labels, (unsigned long long)count, what,
                             (unsigned long long)r->label_rows_unmatched,
                             (unsigned long long)r->label_rows);
    return shard_err_set(err, SHARD_EINVAL, "--labels '%s' gives none of the %llu %s a class",
                         r->o->labels, (unsigned long long)count, what);
}

int sk_run_check_labels_used(const struct run *r, struct shard_err *err)
{
    uint64_t samples = sk_assembler_samples(r->as);
    if (labels_asked(r) && samples > 0 && sk_assembler_unlabeled(r->as) == samples)
        return no_label_error(r, "samples", samples, err);
    return SHARD_OK;
}

int sk_run_check_published(const struct run *r, struct shard_err *err)
{
    uint64_t samples = sk_assembler_samples(r->as), count;
    if (r->o->parts)
        return SHARD_OK;
    if (samples)
        return sk_field_sources_check_used(r->fields, sk_assembler_field_samples(r->as), samples,
                                           err);
    if (r->o->allow_empty)
        return SHARD_OK;
    if (!r->n)
        return shard_err_set(err, SHARD_EINVAL,
                             "no candidate images in '%s': an empty dataset is not published "
                             "(--allow-empty publishes it)",
                             r->src);
    /* the reject of the smallest key, as the manifest would list it first */
    const struct shard_reject *rejects = sk_assembler_rejects(r->as, &count), *first = rejects;
    for (uint64_t i = 1; i < count; i++)
        if (sk_key_compare(rejects[i].key, rejects[i].key_len, first->key, first->key_len) < 0)
            first = &rejects[i];
    char q[SHARDX_QUOTE_SIZE];
    return shard_err_set(err, SHARD_EINVAL,
                         "none of the %llu candidates is a sample: every one was rejected (%s"
                         "'%s': %s); an empty dataset is not published (--allow-empty publishes "
                         "it, with the rejects)",
                         (unsigned long long)r->n, count > 1 ? "the first, " : "",
                         count ? shardx_quote(first->key, first->key_len, q, sizeof q) : "",
                         count ? first->reason : "");
}

/* An archive entry refused for its name ("../x.jpg"): its path says
 * nothing about a class, so it gives none (not even to the label list). */
static int unsafe_name(const struct run *r, uint64_t cand)
{
    const char *why = r->archive ? r->spooled[cand].reason : NULL;
    return why && strncmp(why, SK_REASON_UNSAFE, strlen(SK_REASON_UNSAFE)) == 0;
}

/* Two labels the manifest would write alike: a name that is not UTF-8 is
 * written with %XX escapes, which a UTF-8 name can spell too. */
static int label_collision(const struct named_label *a, const struct named_label *b,
                           struct shard_err *err)
{
    char qa[SHARDX_QUOTE_SIZE], qb[SHARDX_QUOTE_SIZE];
    return shard_err_set(err, SHARD_EINVAL,
                         "labels '%s' and '%s' would both be written '%s' in the manifest "
                         "(a label that is not UTF-8 is written with %%XX escapes): rename one",
                         shardx_quote(a->ref.name, a->ref.len, qa, sizeof qa),
                         shardx_quote(b->ref.name, b->ref.len, qb, sizeof qb), a->name);
}

/* The class name of candidate i: from a sidecar or column when the labels
 * come from one (read ahead by the field sources), else the labeler's. */
static int class_of(const struct run *r, uint64_t i, const char **name, size_t *len)
{
    if (unsafe_name(r, i))
        return 0;
    int got = sk_field_sources_class(r->fields, i, name, len);
    if (got >= 0)
        return got;
    size_t key_len;
    const char *key = shard_keylist_get(&r->keys, i, &key_len);
    return shard_labeler_label(r->labeler, key, key_len, name, len);
}

static int32_t number_of(void *ctx, const char *name, size_t len)
{
    return label_set_find(ctx, name, len, XXH3_64bits(name, len))->number;
}

/* The first candidate with a class name (its class, or a name in a
 * `labels` field) that is a class number (want 1) or is not one (want 0):
 * its number, *name and *len, or r->n.  *too_large: a number above
 * SK_CLASS_NUMBER_MAX came first (then that candidate is returned). */
static uint64_t find_class_kind(const struct run *r, int want, const char **name, size_t *len,
                                int *too_large)
{
    uint32_t n;
    *too_large = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        /* the class's name, then each labels field's */
        int more = class_of(r, i, name, len);
        for (size_t k = 0; more || sk_field_sources_label_name(r->fields, i, k++, name, len);
             more = 0) {
            int kind = sk_field_class_number(*name, *len, &n);
            if (kind < 0 || kind == want) {
                *too_large = kind < 0;
                return i;
            }
        }
    }
    return r->n;
}

/* Whether the classes are class numbers, as WebDataset's numeric .cls
 * means them (*max: the largest): when the class comes from a sidecar or a
 * column and every class name of the run (the class's and the `labels`
 * fields') is one.  A run mixing numbers and names is refused, naming a
 * candidate of each (a name is no number: that the classes are names
 * cannot be told from a number by mistake in one file). */
static int class_numbers(const struct run *r, int *numbered, uint32_t *max, struct shard_err *err)
{
    *numbered = 0;
    *max = 0;
    if (!sk_field_sources_class_from_values(r->fields))
        return SHARD_OK;
    const char *num, *word;
    size_t num_len, word_len, key_len, key2_len;
    int too_large;
    char qk[SHARDX_QUOTE_SIZE], qn[SHARDX_QUOTE_SIZE], qk2[SHARDX_QUOTE_SIZE];
    /* the first number, then the first name: a number too large met on the
     * way is the one reported (none is missed: the second search goes over
     * every candidate when there is no name) */
    uint64_t a = find_class_kind(r, 1, &num, &num_len, &too_large), b = r->n;
    if (!too_large && a < r->n) {
        b = find_class_kind(r, 0, &word, &word_len, &too_large);
        if (too_large) {
            a = b;
            num = word;
            num_len = word_len;
        }
    }
    const char *key = a < r->n ? shard_keylist_get(&r->keys, a, &key_len) : NULL;
    if (too_large)
        return shard_err_set(err, SHARD_ELIMIT,
                             "--labels '%s' gives '%s' the class number '%s', above the largest, "
                             "%u",
                             r->o->labels, shardx_quote(key, key_len, qk, sizeof qk),
                             shardx_quote(num, num_len, qn, sizeof qn), SK_CLASS_NUMBER_MAX);
    if (a == r->n)
        return SHARD_OK; /* no number: names */
    if (b < r->n) {
        const char *key2 = shard_keylist_get(&r->keys, b, &key2_len);
        char qw[SHARDX_QUOTE_SIZE];
        int negative = word_len > 1 && word[0] == '-' &&
                       sk_field_class_number(word + 1, word_len - 1, &(uint32_t){0}) != 0;
        return shard_err_set(err, SHARD_EINVAL,
                             "--labels '%s' gives class numbers and class names: '%s' to '%s', "
                             "'%s' to '%s'; the classes must be all numbers (WebDataset's) or "
                             "all names%s",
                             r->o->labels, shardx_quote(num, num_len, qn, sizeof qn),
                             shardx_quote(key, key_len, qk, sizeof qk),
                             shardx_quote(word, word_len, qw, sizeof qw),
                             shardx_quote(key2, key2_len, qk2, sizeof qk2),
                             negative ? " (a class number is 0 or more)" : "");
    }
    uint32_t n;
    for (uint64_t i = 0; i < r->n; i++) {
        const char *name;
        size_t len;
        if (class_of(r, i, &name, &len) && sk_field_class_number(name, len, &n) == 1 && n > *max)
            *max = n;
        for (size_t k = 0; sk_field_sources_label_name(r->fields, i, k, &name, &len); k++)
            if (sk_field_class_number(name, len, &n) == 1 && n > *max)
                *max = n;
    }
    *numbered = 1;
    return SHARD_OK;
}

/* The labels of numbered classes: "0".."max", each number its own label
 * (a number no candidate has keeps its place: numbers stay the source's). */
static int number_labels(struct run *r, struct label_set *set, uint32_t max, struct shard_err *err)
{
    r->label_names = calloc((size_t)max + 1, sizeof *r->label_names);
    if (!r->label_names)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->label_count = max + 1;
    for (uint32_t i = 0; i <= max; i++) {
        char text[16];
        snprintf(text, sizeof text, "%u", i);
        if (!(r->label_names[i] = strdup(text)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < set->cap; i++) {
        uint32_t n = 0;
        if (set->slots[i].ref.name)
            sk_field_class_number(set->slots[i].ref.name, set->slots[i].ref.len, &n);
        set->slots[i].number = (int32_t)n;
    }
    return SHARD_OK;
}

/* The labels of named classes: the distinct names as the manifest writes
 * them, sorted, each numbered by its place. */
static int sort_labels(struct run *r, struct label_set *set, struct shard_err *err)
{
    struct named_label *sorted = calloc(set->count ? set->count : 1, sizeof *sorted);
    size_t n = 0;
    int rc = SHARD_OK;
    r->label_names = calloc(set->count ? set->count : 1, sizeof *r->label_names);
    if (!sorted || !r->label_names) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < set->cap; i++) {
        if (!set->slots[i].ref.name)
            continue;
        sorted[n].ref = set->slots[i].ref;
        if (!(sorted[n++].name = sk_jsonkey_label_name(set->slots[i].ref.name,
                                                       set->slots[i].ref.len))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
    }
    qsort(sorted, n, sizeof *sorted, compare_named_labels);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(sorted[i - 1].name, sorted[i].name)) {
            rc = label_collision(&sorted[i - 1], &sorted[i], err);
            goto out;
        }
    r->label_count = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        label_set_find(set, sorted[i].ref.name, sorted[i].ref.len,
                       XXH3_64bits(sorted[i].ref.name, sorted[i].ref.len))
            ->number = (int32_t)i;
        r->label_names[i] = sorted[i].name; /* owned by the run from here */
        sorted[i].name = NULL;
    }
out:
    for (size_t i = 0; sorted && i < n; i++)
        free(sorted[i].name);
    free(sorted);
    return rc;
}

/* ---- a fixed class list (--classes FILE) ------------------------------------- */

static int compare_class_ids(const void *pa, const void *pb)
{
    const struct shard_field_class *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

int sk_run_read_classes(const char *path, struct shard_field_class **list, size_t *count,
                        char **describe, struct shard_err *err)
{
    struct shard_field_class *l;
    size_t n;
    uint64_t xxh3;
    int rc = sk_class_list_read(path, SK_CLASS_NUMBER_MAX, &l, &n, &xxh3, err);
    if (rc)
        return shard_err_prefix(err, rc, "--classes");
    qsort(l, n, sizeof *l, compare_class_ids);
    struct label_set names = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        size_t len = strlen(l[i].name);
        if (l[i].id != i)
            rc = shard_err_set(err, SHARD_EINVAL,
                               "--classes: classes file '%s' %s class number %zu: the classes are "
                               "numbered 0..%zu",
                               path, l[i].id < i ? "numbers twice" : "leaves out", i, n - 1);
        else if (!(rc = label_set_add(&names, l[i].name, len, err)) && names.count != i + 1)
            rc = shard_err_set(err, SHARD_EINVAL, "--classes: classes file '%s' names '%s' twice",
                               path, l[i].name);
    }
    if (!rc && !n)
        rc = shard_err_set(err, SHARD_EINVAL, "--classes: classes file '%s' lists no class", path);
    free(names.slots);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t size = strlen(base) + 32;
    if (!rc && describe && (*describe = malloc(size)))
        snprintf(*describe, size, "file:%s:%016llx", base, (unsigned long long)xxh3);
    else if (!rc && describe)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc && strchr(base, ':'))
        rc = shard_err_set(err, SHARD_EINVAL, "--classes: the file name '%s' holds a ':'", base);
    if (rc || !list) {
        if (rc && describe) {
            free(*describe);
            *describe = NULL;
        }
        sk_class_list_free(l, n);
        return rc;
    }
    *list = l;
    *count = n;
    return SHARD_OK;
}

/* The run's fixed classes as a set, each numbered by its place. */
static int fixed_set(const struct run *r, struct label_set *set, struct shard_err *err)
{
    int rc = SHARD_OK;
    for (size_t i = 0; !rc && i < r->class_count; i++)
        rc = label_set_add(set, r->classes[i].name, strlen(r->classes[i].name), err);
    for (size_t i = 0; !rc && i < r->class_count; i++)
        label_set_find(set, r->classes[i].name, strlen(r->classes[i].name),
                       XXH3_64bits(r->classes[i].name, strlen(r->classes[i].name)))
            ->number = (int32_t)i;
    return rc;
}

/* The number of a class name given the fixed classes in `set`: its place
 * in the list, or when the list has no such name and it is a class number
 * below the count, that number (WebDataset's .cls with a list of names);
 * else -1. */
static int32_t fixed_number(const struct run *r, const struct label_set *set, const char *name,
                            size_t len)
{
    const struct label_slot *s = label_set_find(set, name, len, XXH3_64bits(name, len));
    uint32_t n;
    if (s->ref.name)
        return s->number;
    return sk_field_class_number(name, len, &n) == 1 && n < r->class_count ? (int32_t)n : -1;
}

/* A name `key` gives that the fixed classes do not have. */
static int not_a_class(const struct run *r, const char *key, size_t key_len, const char *name,
                       size_t len, struct shard_err *err)
{
    char qk[SHARDX_QUOTE_SIZE], qn[SHARDX_QUOTE_SIZE];
    return shard_err_set(err, SHARD_EINVAL,
                         "'%s' has the class '%s', which --classes '%s' does not list (%zu "
                         "classes)",
                         shardx_quote(key, key_len, qk, sizeof qk),
                         shardx_quote(name, len, qn, sizeof qn), r->o->classes, r->class_count);
}

/* The labels are the fixed classes, in their order. */
static int fixed_labels(struct run *r, struct shard_err *err)
{
    r->label_names = calloc(r->class_count, sizeof *r->label_names);
    if (!r->label_names)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->label_count = (uint32_t)r->class_count;
    for (size_t i = 0; i < r->class_count; i++)
        if (!(r->label_names[i] = strdup(r->classes[i].name)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* What sk_field_sources_number asks for a `labels` field's name. */
struct numbering {
    const struct run *r;
    const struct label_set *set;
};

static int32_t number_in(void *ctx, const char *name, size_t len)
{
    const struct numbering *n = ctx;
    return n->r->classes ? fixed_number(n->r, n->set, name, len)
                         : number_of((void *)n->set, name, len);
}

/* Every class name of candidates [0, r->n) the fixed classes hold. */
static int check_fixed(const struct run *r, const struct label_set *set, struct shard_err *err)
{
    const char *name;
    size_t len, key_len;
    for (uint64_t i = 0; i < r->n; i++) {
        int more = class_of(r, i, &name, &len);
        for (size_t k = 0; more || sk_field_sources_label_name(r->fields, i, k++, &name, &len);
             more = 0)
            if (fixed_number(r, set, name, len) < 0) {
                const char *key = shard_keylist_get(&r->keys, i, &key_len);
                return not_a_class(r, key, key_len, name, len, err);
            }
    }
    return SHARD_OK;
}

/* Label every candidate: the distinct names (of the class and of every
 * `labels` field), numbered in the order of the names the manifest writes
 * (for UTF-8 names, the order of their bytes), so that its "labels" are
 * sorted and unique as readers check; or, when they are class numbers,
 * each its own number. */
int sk_run_assign_labels(struct run *r, struct shard_err *err)
{
    struct label_set set = {0};
    const char *name;
    size_t len;
    int numbered;
    uint32_t max;
    int rc = SHARD_OK;
    r->label_of = malloc((r->n ? r->n : 1) * sizeof *r->label_of);
    if (!r->label_of) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; !rc && i < r->n; i++) {
        if (class_of(r, i, &name, &len))
            rc = label_set_add(&set, name, len, err);
        for (size_t k = 0; !rc && sk_field_sources_label_name(r->fields, i, k, &name, &len); k++)
            rc = label_set_add(&set, name, len, err);
    }
    for (size_t i = 0; !rc && i < r->split_classes.count; i++) { /* the other splits' */
        name = shard_keylist_get(&r->split_classes, i, &len);
        rc = label_set_add(&set, name, len, err);
    }
    if (rc)
        goto out;
    if (set.count > INT32_MAX) {
        rc = shard_err_set(err, SHARD_ELIMIT, "too many labels");
        goto out;
    }
    if (r->classes) { /* the file's classes, and every name of the source among them */
        free(set.slots);
        set = (struct label_set){0};
        rc = fixed_set(r, &set, err);
        if (!rc)
            rc = check_fixed(r, &set, err);
        if (!rc)
            rc = fixed_labels(r, err);
    } else if (!(rc = class_numbers(r, &numbered, &max, err))) {
        rc = numbered ? number_labels(r, &set, max, err) : sort_labels(r, &set, err);
    }
    if (rc)
        goto out;
    struct numbering numbering = {r, &set};
    uint64_t labeled = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        r->label_of[i] = SHARD_NO_LABEL;
        if (class_of(r, i, &name, &len)) {
            r->label_of[i] = number_in(&numbering, name, len);
            labeled++;
        }
    }
    if ((rc = sk_field_sources_number(r->fields, number_in, &numbering, err)))
        goto out;
    r->label_rows = shard_labeler_rows(r->labeler);
    if ((rc = shard_labeler_unmatched_rows(r->labeler, &r->keys, &r->label_rows_unmatched, err)))
        goto out;
    if (labels_asked(r) && r->n > 0 && labeled == 0)
        rc = no_label_error(r, "candidates", r->n, err);
out:
    free(set.slots);
    return rc;
}

static int make_order(struct run *r, uint64_t seed, struct shard_err *err)
{
    free(r->order);
    r->order = malloc((r->n ? r->n : 1) * sizeof *r->order);
    if (!r->order)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < r->n; i++)
        r->order[i] = i;
    if (r->archive) {
        /* keys are in archive order: sort the order instead of the keys, and
         * reject later entries that repeat a name */
        qsort_r(r->order, r->n, sizeof *r->order, compare_candidates, &r->keys);
        for (uint64_t i = 1; i < r->n; i++) {
            if (compare_keys(&r->keys, r->order[i - 1], r->order[i]) == 0) {
                struct spooled *sp = &r->spooled[r->order[i]];
                free(sp->reason);
                sp->reason = strdup(SK_REASON_DUPLICATE);
                if (!sp->reason)
                    return shard_err_set(err, SHARD_ENOMEM, "out of memory");
            }
        }
    }
    if (r->config.shuffle)
        sk_shuffle(r->order, r->n, seed);
    return SHARD_OK;
}

int sk_run_make_order(struct run *r, struct shard_err *err)
{
    return make_order(r, r->config.shuffle_seed, err);
}

int sk_run_order_archive(struct run *r, uint64_t seed, struct shard_err *err)
{
    return make_order(r, seed, err);
}

/* ---- labels by archive ------------------------------------------------------- */

int sk_run_labels_collect(struct run *r, struct shard_err *err)
{
    if (!r->label_set && !(r->label_set = calloc(1, sizeof *r->label_set)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->label_set->owned = 1;
    const char *name;
    size_t len;
    int rc = SHARD_OK;
    for (uint64_t i = 0; !rc && i < r->n; i++) {
        if (class_of(r, i, &name, &len))
            rc = label_set_add(r->label_set, name, len, err);
        for (size_t k = 0; !rc && sk_field_sources_label_name(r->fields, i, k, &name, &len); k++)
            rc = label_set_add(r->label_set, name, len, err);
    }
    return rc;
}

/* By archive: whether the names collected are class numbers (all of them,
 * when the class comes from a sidecar or column; *max the largest): names
 * and numbers mixed are refused, naming one of each. */
static int set_numbers(const struct run *r, const struct label_set *set, int *numbered,
                       uint32_t *max, struct shard_err *err)
{
    const struct label_ref *num = NULL, *word = NULL;
    *numbered = 0;
    *max = 0;
    if (!sk_field_sources_class_from_values(r->fields))
        return SHARD_OK;
    for (size_t i = 0; i < set->cap; i++) {
        const struct label_ref *x = &set->slots[i].ref;
        uint32_t n;
        if (!x->name)
            continue;
        int kind = sk_field_class_number(x->name, x->len, &n);
        if (kind < 0)
            return shard_err_set(err, SHARD_ELIMIT,
                                 "--labels '%s' gives a class number above the largest, %u",
                                 r->o->labels, SK_CLASS_NUMBER_MAX);
        if (kind == 1 && n > *max)
            *max = n;
        *(kind == 1 ? &num : &word) = x;
    }
    if (num && word) {
        char qn[SHARDX_QUOTE_SIZE], qw[SHARDX_QUOTE_SIZE];
        return shard_err_set(err, SHARD_EINVAL,
                             "--labels '%s' gives class numbers and class names ('%s', '%s'); "
                             "the classes must be all numbers (WebDataset's) or all names",
                             r->o->labels, shardx_quote(num->name, num->len, qn, sizeof qn),
                             shardx_quote(word->name, word->len, qw, sizeof qw));
    }
    *numbered = num != NULL;
    return SHARD_OK;
}

int sk_run_labels_number(struct run *r, struct shard_err *err)
{
    if (!r->label_set && !(r->label_set = calloc(1, sizeof *r->label_set)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    r->label_set->owned = 1;
    if (r->classes) /* the file's classes: no names from the archives needed */
    {
        int rc = fixed_set(r, r->label_set, err);
        return rc ? rc : fixed_labels(r, err);
    }
    if (r->label_set->count > INT32_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "too many labels");
    int numbered;
    uint32_t max;
    int rc = set_numbers(r, r->label_set, &numbered, &max, err);
    if (!rc)
        rc = numbered ? number_labels(r, r->label_set, max, err)
                      : sort_labels(r, r->label_set, err);
    return rc;
}

int sk_run_labels_apply(struct run *r, struct shard_err *err)
{
    free(r->label_of);
    r->label_of = malloc((r->n ? r->n : 1) * sizeof *r->label_of);
    if (!r->label_of)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    const char *name;
    size_t len;
    if (r->classes) { /* every name must be the list's, as without archives */
        int rc = check_fixed(r, r->label_set, err);
        for (uint64_t i = 0; !rc && i < r->n; i++)
            r->label_of[i] = class_of(r, i, &name, &len) ? fixed_number(r, r->label_set, name, len)
                                                         : SHARD_NO_LABEL;
        struct numbering numbering = {r, r->label_set};
        return rc ? rc : sk_field_sources_number(r->fields, number_in, &numbering, err);
    }
    for (uint64_t i = 0; i < r->n; i++) {
        r->label_of[i] = SHARD_NO_LABEL;
        if (!r->label_set || !r->label_set->count || !class_of(r, i, &name, &len))
            continue;
        const struct label_slot *slot = label_set_find(r->label_set, name, len,
                                                       XXH3_64bits(name, len));
        if (!slot->ref.name) /* the labels' pass did not see it: the archive changed since */
            return shard_err_set(err, SHARD_EMISMATCH,
                                 "an archive of '%s' changed during the run: a class appeared "
                                 "that its first reading did not have",
                                 r->src);
        r->label_of[i] = slot->number;
    }
    return r->label_set && r->label_set->count
               ? sk_field_sources_number(r->fields, number_of, r->label_set, err)
               : SHARD_OK;
}

void sk_run_labels_release(struct run *r)
{
    label_set_free(r->label_set);
    r->label_set = NULL;
}

/* The state an interrupted run must match to be resumed (the hash of the
 * stored order is "plan_xxh3", the name older runs wrote). */
static int state_text(struct run *r, char **out, struct shard_err *err)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(h);
    for (uint64_t pos = 0; pos < r->n; pos++) {
        size_t len;
        const char *key = shard_keylist_get(&r->keys, r->order[pos], &len);
        int32_t label = r->label_of[r->order[pos]];
        XXH3_64bits_update(h, key, len + 1); /* with its NUL: keys cannot run together */
        XXH3_64bits_update(h, &label, sizeof label);
    }
    uint64_t order_hash = XXH3_64bits_digest(h); /* "plan_xxh3" on disk */
    XXH3_freeState(h);
    return sk_run_state_text(r, "candidates", r->n, "plan_xxh3", order_hash, out, err);
}

int sk_run_state_text(const struct run *r, const char *count_name, uint64_t count,
                      const char *hash_name, uint64_t hash, char **out, struct shard_err *err)
{
    *out = NULL;
    char *config;
    int rc = shard_config_dump(&r->config, &config, err);
    if (rc)
        return rc;
    char hex[17], part[64];
    shard_hex64(hash, hex);
    sk_run_part_state(r, part, sizeof part);
    size_t cap = strlen(config) + strlen(count_name) + strlen(hash_name) + 256;
    *out = malloc(cap);
    if (*out)
        snprintf(*out, cap, "{\"config\":%s,\"source\":\"%s\",\"%s\":%llu,\"%s\":\"%s\"%s}\n",
                 config, SK_RUN_SOURCE_KIND(r), count_name, (unsigned long long)count, hash_name,
                 hex, part);
    free(config);
    return *out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
}

/* Fresh run: record the state.  Resume: it must be the same as recorded. */
int sk_run_check_state(struct run *r, int *resuming, struct shard_err *err)
{
    *resuming = 0;
    char *text;
    int rc = state_text(r, &text, err);
    if (rc)
        return rc;
    const struct dst *d = r->dst;
    if (r->o->mode == SHARDIFY_RESUME && d->has_state) {
        /* the recorded state must be exactly what this run would record */
        size_t want = strlen(text);
        char *old = malloc(want + 2);
        int fd = -1;
        ssize_t n = 0;
        if (!old)
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else if (!(rc = sk_fs_open_at(d->work_fd, d->work, DST_STATE_FILE, &fd, err)))
            n = pread(fd, old, want + 1, 0);
        if (fd >= 0)
            close(fd);
        if (!rc && (n != (ssize_t)want || memcmp(old, text, want) != 0))
            rc = shard_err_set(err, SHARD_EEXIST,
                               "cannot resume '%s': the options or the source listing differ "
                               "from the interrupted run; pass --overwrite to start again",
                               d->path);
        *resuming = !rc;
        free(old);
    } else {
        rc = sk_fs_write_atomic_at(d->work_fd, d->work, DST_STATE_FILE, text, strlen(text), err);
    }
    free(text);
    return rc;
}
