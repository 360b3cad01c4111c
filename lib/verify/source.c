/* source.c - --source: prove the dataset is exactly its source.
 *
 * SRC is scanned the way shardify scans it (shard_scan_dir for a directory,
 * one streaming pass of sk_archive_next for an archive).  Its candidates
 * and the dataset's expectations (the samples of index.jsonl and the
 * manifest's rejects) are both sorted by key and joined.  For each key the
 * files found must pair off with the entries expected: a sample with the
 * same source_bytes and source_xxh3, a reject with the same identity when
 * one was recorded (any file, when the reject could not be read).  Whatever
 * is left over is reported: extra files, changed files, missing files.
 * Keys repeat only inside archives (shardify keeps the first entry of a
 * name and rejects the rest), which the pairing handles.
 *
 * What the scan itself refuses (a symbolic link or device named like an
 * image, a directory that cannot be listed, an unsafe or damaged archive
 * entry, a broken hard link) has no identity but a reason: it pairs only
 * with a reject of that very reason, and such a reject never pairs with a
 * file SRC now has in its place.  Hard links in an archive get the
 * identity of the entry whose bytes they have, as shardify gives them
 * (source/links.c).
 *
 * Then labels: each sample's label is re-derived from its key with the
 * config's rule and must equal its stored label; per-label counts of the
 * samples found in SRC must equal counts.by_label. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "read/dataset_internal.h"
#include "manifest/field_parse.h"
#include "util/jsonkey.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "util/grow.h"
#include "shardkit/source.h"
#include "source/source_internal.h"
#include "verify/verify_internal.h"

#define LABEL_FILE_PREFIX "file:"

/* A candidate file found in SRC. */
struct found {
    size_t key; /* index into the candidates' keylist */
    uint64_t bytes;
    uint64_t xxh3;
    int hashed;    /* bytes/xxh3 are known */
    int need_hash; /* some expected entry has this key */
    int used;
    int refused;      /* the scan refused it: `why` is a reject reason */
    char *why;        /* why it could not be read (malloc'd), or NULL */
    const char *stem; /* an archive's image sharing its stem with another while
                       * sidecars are declared: the reason its reject must give
                       * (a directory's is refused instead), or NULL */
};

/* The identity of an entry a hard link needs that is not a candidate. */
struct hidden {
    uint64_t bytes;
    uint64_t xxh3;
    int hashed;
    char *why;
};

/* An entry the dataset expects in SRC. */
struct expected {
    const char *key;
    size_t len;
    int is_sample;
    uint64_t n; /* sample number in `struct source_run`, or reject number */
    int used;
};

struct source_run {
    struct verify_run *v;
    const char *src;
    int archive;
    struct sk_source_root root; /* a directory or an S3 prefix (not an archive) */
    struct shard_keylist found_keys;
    struct found *found;
    uint64_t found_count;
    size_t found_cap;
    struct shard_refusals refused;
    struct hidden *hidden;
    uint64_t hidden_count;
    struct shard_scan_stats stats;
    /* the samples of index.jsonl */
    struct shard_keylist sample_keys;
    uint64_t *sample_bytes;
    uint64_t *sample_xxh3;
    int32_t *sample_label;
    uint32_t *sample_shard;
    uint64_t *sample_record;
    int *sample_present;
    uint64_t sample_count;
    struct expected *expected;
    uint64_t expected_count;
    struct source_fields *fields; /* sidecar files and the annotation table, or NULL */
};

static int compare_found(const void *pa, const void *pb, void *ctx)
{
    const struct shard_keylist *l = ctx;
    const struct found *a = pa, *b = pb;
    size_t la, lb;
    const char *ka = shard_keylist_get(l, a->key, &la), *kb = shard_keylist_get(l, b->key, &lb);
    int c = sk_key_compare(ka, la, kb, lb);
    return c ? c : (a->key > b->key) - (a->key < b->key); /* archive order among equals */
}

static int compare_expected(const void *pa, const void *pb)
{
    const struct expected *a = pa, *b = pb;
    int c = sk_key_compare(a->key, a->len, b->key, b->len);
    if (c)
        return c;
    if (a->is_sample != b->is_sample)
        return a->is_sample ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

static void source_release(struct source_run *s)
{
    sk_source_root_close(&s->root);
    for (uint64_t i = 0; i < s->found_count; i++)
        free(s->found[i].why);
    free(s->found);
    shard_keylist_release(&s->found_keys);
    shard_refusals_release(&s->refused);
    for (uint64_t i = 0; i < s->hidden_count; i++)
        free(s->hidden[i].why);
    free(s->hidden);
    shard_keylist_release(&s->sample_keys);
    free(s->sample_bytes);
    free(s->sample_xxh3);
    free(s->sample_label);
    free(s->sample_shard);
    free(s->sample_record);
    free(s->sample_present);
    free(s->expected);
    sk_source_fields_free(s->fields);
}

static int add_found(struct source_run *s, const char *key, size_t len, struct shard_err *err)
{
    if (SK_GROW(s->found, s->found_cap, s->found_count + 1, 1024))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct found *f = &s->found[s->found_count];
    memset(f, 0, sizeof *f);
    f->key = s->found_keys.count;
    int rc = shard_keylist_add(&s->found_keys, key, len, err);
    if (!rc)
        s->found_count++;
    return rc;
}

/* ---- scanning SRC ---------------------------------------------------------- */

/* The scan refused found entry f: its reason is its identity. */
static int set_refused(struct found *f, const char *reason, struct shard_err *err)
{
    free(f->why);
    f->refused = 1;
    f->hashed = 0;
    if (!(f->why = strdup(reason)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* The candidates a key list selected (config.keys): the list given must be
 * the config's. */
static int select_keys(struct source_run *s, struct shard_err *err)
{
    const char *want = s->v->m->config.keys;
    if (!s->v->o->keys)
        return shard_err_set(err, SHARD_EINVAL,
                             "source: the samples were selected by a key list ('%s'); pass that "
                             "file (--keys) to check them",
                             want);
    struct sk_key_selection *sel;
    int rc = sk_key_selection_load(&sel, s->v->o->keys, err);
    if (!rc && strcmp(sk_key_selection_describe(sel), want))
        rc = shard_err_set(err, SHARD_EINVAL, "source: the key list is '%s', the config says '%s'",
                           sk_key_selection_describe(sel), want);
    if (!rc)
        rc = sk_key_selection_apply(sel, &s->found_keys, &s->stats, err);
    sk_key_selection_free(sel);
    return rc;
}

static int scan_directory(struct source_run *s, struct shard_err *err)
{
    int rc = sk_source_root_open(&s->root, s->src, err);
    if (!rc)
        rc = sk_source_root_scan(&s->root, &s->found_keys, sk_source_fields_sidecars(s->fields),
                                 &s->refused, &s->stats, err);
    if (!rc && s->v->m->config.keys) /* the samples --keys selected, as shardify selects them */
        rc = select_keys(s, err);
    if (!rc) /* images sharing a stem are refused, as shardify refuses them */
        rc = sk_source_fields_resolve(s->fields, &s->found_keys, &s->refused, err);
    if (rc)
        return rc;
    s->found_cap = s->found_count = s->found_keys.count;
    s->found = calloc(s->found_cap ? s->found_cap : 1, sizeof *s->found);
    if (!s->found)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < s->found_count && !rc; i++) {
        size_t len;
        const char *key = shard_keylist_get(&s->found_keys, i, &len);
        const char *reason = shard_refusals_find(&s->refused, key, len);
        s->found[i].key = i;
        if (reason)
            rc = set_refused(&s->found[i], reason, err);
    }
    return rc;
}

/* A hidden item of the links' second pass: hash it like a candidate. */
static int hash_item(void *ctx, uint64_t item, const struct shard_buf *bytes, uint64_t too_large,
                     const char *problem, struct shard_err *err)
{
    struct source_run *s = ctx;
    if (item >= s->hidden_count) {
        struct hidden *p = realloc(s->hidden, (item + 1) * sizeof *p);
        if (!p)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        memset(p + s->hidden_count, 0, (item + 1 - s->hidden_count) * sizeof *p);
        s->hidden = p;
        s->hidden_count = item + 1;
    }
    struct hidden *h = &s->hidden[item];
    if (problem) {
        if (!(h->why = strdup(problem)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else if (too_large) {
        h->bytes = too_large;
    } else {
        h->bytes = bytes->len;
        h->xxh3 = XXH3_64bits(bytes->data, bytes->len);
        h->hashed = 1;
    }
    return SHARD_OK;
}

/* Give each candidate whose bytes are another entry's that identity. */
static int apply_links(struct source_run *s, const struct sk_links *links, uint64_t base,
                       struct shard_err *err)
{
    uint64_t pos = 0;
    struct sk_link_copy c;
    int rc = SHARD_OK;
    while (!rc && sk_links_next_copy(links, &pos, &c)) {
        /* the links' numbers are the archive's, from its first candidate, base */
        c.cand += base;
        if (c.from == SK_FROM_CANDIDATE)
            c.source += base;
        struct found *to = &s->found[c.cand];
        if (c.from == SK_FROM_NOWHERE) {
            rc = set_refused(to, c.why, err);
            continue;
        }
        const char *why;
        int refused;
        free(to->why);
        to->why = NULL;
        if (c.from == SK_FROM_CANDIDATE) {
            const struct found *from = &s->found[c.source];
            to->bytes = from->bytes;
            to->xxh3 = from->xxh3;
            to->hashed = from->hashed;
            why = from->why;
            refused = from->refused;
        } else {
            const struct hidden *from = &s->hidden[c.source];
            to->bytes = from->bytes;
            to->xxh3 = from->xxh3;
            to->hashed = from->hashed;
            why = from->why;
            refused = why != NULL;
        }
        to->refused = refused;
        if (why && !(to->why = strdup(why)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    return rc;
}

/* Entries that are no candidates are produced too when they are sidecar files. */
static int want_sidecar(void *ctx, const char *key, size_t len)
{
    struct sk_sidecars *side = ctx;
    return side && sk_sidecars_suffix_of(side, key, len) >= 0;
}

/* An archive's images that share a stem: shardify rejects them with that
 * reason, and with their identity (they were read as they streamed past). */
static int mark_stems(struct source_run *s, struct shard_err *err)
{
    int rc = sk_source_fields_resolve(s->fields, &s->found_keys, &s->refused, err);
    for (uint64_t i = 0; !rc && s->refused.count && i < s->found_count; i++) {
        size_t len;
        const char *key = shard_keylist_get(&s->found_keys, s->found[i].key, &len);
        s->found[i].stem = shard_refusals_find(&s->refused, key, len);
    }
    return rc;
}

/* The key of member name[0..*len) of an archive of a directory of archives
 * (--archives): prefix, '/', name, in buf; or name itself without a prefix. */
static int member_key(const char *prefix, const char **name, size_t *len, struct shard_buf *buf,
                      struct shard_err *err)
{
    if (!prefix)
        return SHARD_OK;
    buf->len = 0;
    int rc = shard_buf_append(buf, prefix, strlen(prefix), err);
    if (!rc)
        rc = shard_buf_append(buf, "/", 1, err);
    if (!rc)
        rc = shard_buf_append(buf, *name, *len, err);
    if (!rc) {
        *name = (const char *)buf->data;
        *len = buf->len;
    }
    return rc;
}

/* The hidden items a pass's links needed, gone once they are applied. */
static void drop_hidden(struct source_run *s)
{
    for (uint64_t i = 0; i < s->hidden_count; i++)
        free(s->hidden[i].why);
    s->hidden_count = 0;
}

/* Archives stream once: every candidate is hashed as it goes by (a hard
 * link's target may need a second pass: source/links.c), as the sidecar
 * files are.  An archive of a directory of archives has its keys prefixed
 * with its name (`prefix`), and its links resolved among its own members,
 * as shardify's spool does. */
static int scan_one_archive(struct source_run *s, const char *path, const char *prefix,
                            struct shard_err *err)
{
    struct sk_archive *a;
    struct sk_links *links = NULL;
    int rc = sk_archive_open(&a, path, err);
    if (rc)
        return rc;
    if ((rc = sk_links_new(&links, err))) {
        sk_archive_close(a);
        return rc;
    }
    struct shard_buf buf = {0}, key_buf = {0};
    struct shard_keylist members = {0}; /* with a prefix: its candidates' names as stored */
    struct shard_verify_rate *rate = &s->v->report->source;
    uint64_t max_bytes = s->v->m->config.max_file_bytes, base = s->found_count;
    struct sk_sidecars *side = sk_source_fields_sidecars(s->fields);
    for (;;) {
        const char *key, *problem;
        size_t len;
        uint64_t too_large;
        int link_only = 0;
        struct sk_archive_entry e;
        rc = sk_archive_next_entry(a, max_bytes, want_sidecar, side, &e, &buf, &s->stats, err);
        if (rc <= 0)
            break;
        if (side && sk_sidecars_suffix_of(side, e.key, e.key_len) >= 0) {
            /* a sidecar file, even when named like an image (as shardify's spool) */
            if ((rc = member_key(prefix, &e.key, &e.key_len, &key_buf, err)) ||
                (rc = sk_source_fields_entry(s->fields, &e, &buf, err)))
                break;
            continue;
        }
        key = e.key;
        len = e.key_len;
        too_large = e.too_large;
        if ((prefix && (rc = shard_keylist_add(&members, key, len, err))) ||
            (rc = member_key(prefix, &key, &len, &key_buf, err)) ||
            (rc = add_found(s, key, len, err)) ||
            (rc = sk_links_note(links, a, s->found_count - 1 - base, err)))
            break;
        struct found *f = &s->found[s->found_count - 1];
        sk_archive_link(a, NULL, &link_only);
        if ((problem = sk_archive_problem(a))) {
            if ((rc = set_refused(f, problem, err)))
                break;
            continue;
        }
        if (too_large || link_only) {
            f->bytes = too_large; /* shardify recorded no identity for it either */
            continue;
        }
        double t = sk_now_seconds();
        f->bytes = buf.len;
        f->xxh3 = XXH3_64bits(buf.data, buf.len);
        f->hashed = 1;
        rate->busy_seconds += sk_now_seconds() - t;
        rate->bytes += buf.len;
        rate->items++;
    }
    if (rc < 0)
        shard_err_prefix(err, rc, "cannot read archive '%s'", path);
    shard_buf_release(&buf);
    shard_buf_release(&key_buf);
    sk_archive_close(a);
    if (rc == 0 && sk_links_any(links))
        rc = sk_links_resolve(links, prefix ? &members : &s->found_keys, path, max_bytes, hash_item,
                              s, err);
    if (rc == 0)
        rc = apply_links(s, links, base, err);
    drop_hidden(s);
    sk_links_free(links);
    shard_keylist_release(&members);
    return rc < 0 ? rc : SHARD_OK;
}

static int scan_archive(struct source_run *s, struct shard_err *err)
{
    int rc = scan_one_archive(s, s->src, NULL, err);
    return rc ? rc : mark_stems(s, err);
}

/* A directory of archives (shardify --archives): each archive directly in
 * it, in name order, as part of one source. */
static int scan_archives(struct source_run *s, struct shard_err *err)
{
    char **names = NULL;
    size_t count = 0;
    int rc = sk_archive_dir_list(s->src, &names, &count, &s->stats, err);
    for (size_t k = 0; !rc && k < count; k++) {
        char *path = sk_fs_join(s->src, names[k]);
        rc = path ? scan_one_archive(s, path, names[k], err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        free(path);
    }
    for (size_t k = 0; k < count; k++)
        free(names[k]);
    free(names);
    return rc ? rc : mark_stems(s, err);
}

/* Archives named by URL (shardify https://host/{00000..00099}.tar): the
 * listing expanded and checked as shardify checks it, then each archive
 * fetched into a private temporary directory, read as a folder's archive
 * is, and removed. */
static int scan_urls(struct source_run *s, struct shard_err *err)
{
    struct sk_remote_archives *ra = NULL;
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/shardcheck.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int rc = sk_remote_archives_open(&ra, s->src, NULL, err);
    if (!rc && !mkdtemp(dir))
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create a directory in '%s'",
                             tmp && *tmp ? tmp : "/tmp");
    int fd = rc ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (!rc && fd < 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot open '%s'", dir);
    char *path = rc ? NULL : sk_fs_join(dir, "archive");
    if (!rc && !path)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < sk_remote_archives_count(ra); k++) {
        rc = sk_remote_archives_fetch(ra, k, fd, "archive", path, err);
        if (!rc)
            rc = scan_one_archive(s, path, sk_remote_archives_name(ra, k), err);
        unlinkat(fd, "archive", 0);
    }
    if (fd >= 0) {
        close(fd);
        rmdir(dir);
    }
    free(path);
    sk_remote_archives_free(ra);
    return rc ? rc : mark_stems(s, err);
}

int sk_verify_read_files(struct verify_run *v, const struct sk_source_root *root, uint64_t count,
                         uint64_t max_bytes, sk_verify_file_key *key, sk_verify_file_got *got,
                         void *ctx, struct shard_err *err)
{
    struct shard_verify_rate *rate = &v->report->source;
    uint64_t bytes = 0, items = 0;
    double busy = 0;
    int failed = 0, unreachable = 0;
    struct shard_err store_err;
    shard_err_clear(&store_err);
#pragma omp parallel num_threads(v->threads) reduction(+ : bytes, items, busy)
    {
        struct shard_buf buf = {0};
#pragma omp for schedule(dynamic, 16)
        for (uint64_t i = 0; i < count; i++) {
            int stop, out_of_memory;
#pragma omp atomic read
            stop = unreachable;
#pragma omp atomic read
            out_of_memory = failed;
            const char *name = stop || out_of_memory ? NULL : key(ctx, i);
            if (!name) /* nothing to read, or a store down: no more tries */
                continue;
            double t = sk_now_seconds();
            struct shard_err e;
            shard_err_clear(&e);
            int rc = sk_source_root_read(root, name, max_bytes, &buf, &e);
            if (rc == SHARD_ENET) { /* the store, not the file: stop */
                int first;
#pragma omp atomic capture
                {
                    first = unreachable;
                    unreachable = 1;
                }
                if (!first) /* the first failure's words, kept by its thread alone */
                    store_err = e;
                rc = SHARD_OK;
            } else if (rc == 0) {
                bytes += buf.len;
                items++;
                rc = got(ctx, i, &buf, NULL);
            } else {
                rc = got(ctx, i, NULL, e.msg);
            }
            if (rc) {
#pragma omp atomic write
                failed = 1;
            }
            busy += sk_now_seconds() - t;
        }
        shard_buf_release(&buf);
    }
    rate->bytes += bytes;
    rate->items += items;
    rate->busy_seconds += busy;
    if (unreachable) {
        *err = store_err;
        return store_err.code;
    }
    return failed ? shard_err_set(err, SHARD_ENOMEM, "out of memory") : SHARD_OK;
}

/* A directory's candidate file i to hash: one some expected entry names. */
static const char *file_to_hash(void *ctx, uint64_t i)
{
    const struct source_run *s = ctx;
    const struct found *f = &s->found[i];
    return f->need_hash && !f->refused ? shard_keylist_get(&s->found_keys, f->key, NULL) : NULL;
}

static int file_hashed(void *ctx, uint64_t i, const struct shard_buf *bytes, const char *why)
{
    struct found *f = &((struct source_run *)ctx)->found[i];
    if (why)
        return (f->why = strdup(why)) ? SHARD_OK : SHARD_ENOMEM;
    f->bytes = bytes->len;
    f->xxh3 = XXH3_64bits(bytes->data, bytes->len);
    f->hashed = 1;
    return SHARD_OK;
}

/* Hash the directory's files that some expected entry names, in parallel. */
static int hash_directory(struct source_run *s, struct shard_err *err)
{
    return sk_verify_read_files(s->v, &s->root, s->found_count, s->v->m->config.max_file_bytes,
                                file_to_hash, file_hashed, s, err);
}

/* ---- what the dataset expects ------------------------------------------------ */

static int grow_samples(struct source_run *s, uint64_t need, uint64_t *cap, struct shard_err *err)
{
    if (need <= *cap)
        return SHARD_OK;
    uint64_t c = *cap ? 2 * *cap : 1024;
#define GROW(field)                                                   \
    do {                                                              \
        void *p = realloc(s->field, c * sizeof *s->field);            \
        if (!p)                                                       \
            return shard_err_set(err, SHARD_ENOMEM, "out of memory"); \
        s->field = p;                                                 \
    } while (0)
    GROW(sample_bytes);
    GROW(sample_xxh3);
    GROW(sample_label);
    GROW(sample_shard);
    GROW(sample_record);
    GROW(sample_present);
#undef GROW
    *cap = c;
    return SHARD_OK;
}

/* The samples of index.jsonl (lines that do not parse were reported by the
 * index pass and are left out here). */
static int load_samples(struct source_run *s, struct shard_err *err)
{
    struct shard_index_reader *rd;
    struct shard_err e;
    int rc = sk_dataset_index_open(s->v->ds, &rd, &e);
    if (rc)
        return SHARD_OK; /* reported by the index pass */
    shard_index_reader_set_config(rd, &s->v->m->config);
    uint64_t cap = 0;
    for (;;) {
        struct shard_sample smp;
        rc = shard_index_reader_next(rd, &smp, &e);
        if (rc == SHARD_ENOMEM)
            *err = e;
        if (rc == 0 || rc == SHARD_EIO || rc == SHARD_ENOMEM)
            break;
        if (rc < 0)
            continue;
        if ((rc = grow_samples(s, s->sample_count + 1, &cap, err)) ||
            (rc = shard_keylist_add(&s->sample_keys, smp.key, smp.key_len, err)) ||
            (rc = sk_source_fields_keep(s->fields, s->sample_count, &smp, err)))
            break;
        uint64_t i = s->sample_count++;
        s->sample_bytes[i] = smp.source_bytes;
        s->sample_xxh3[i] = smp.source_xxh3;
        s->sample_label[i] = smp.label;
        s->sample_shard[i] = smp.shard;
        s->sample_record[i] = smp.record;
        s->sample_present[i] = 0;
    }
    shard_index_reader_close(rd);
    return rc < 0 && rc != SHARD_EIO ? rc : SHARD_OK;
}

static int build_expected(struct source_run *s, struct shard_err *err)
{
    const struct shard_manifest *m = s->v->m;
    uint64_t n = s->sample_count + m->reject_count;
    s->expected = calloc(n ? n : 1, sizeof *s->expected);
    if (!s->expected)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < s->sample_count; i++) {
        struct expected *x = &s->expected[s->expected_count++];
        x->key = shard_keylist_get(&s->sample_keys, i, &x->len);
        x->is_sample = 1;
        x->n = i;
    }
    for (uint64_t i = 0; i < m->reject_count; i++) {
        struct expected *x = &s->expected[s->expected_count++];
        x->key = m->rejects[i].key;
        x->len = m->rejects[i].key_len;
        x->n = i;
    }
    qsort(s->expected, s->expected_count, sizeof *s->expected, compare_expected);
    return SHARD_OK;
}

/* ---- pairing ------------------------------------------------------------------ */

/* Does file f carry the identity expected entry x recorded?  `loose`
 * accepts any file for a reject that recorded none, unless the reject says
 * what the entry is (a refusal: see the top of this file).  A later entry
 * of a name in an archive is rejected as a duplicate whatever it is. */
static int same_identity(const struct source_run *s, const struct found *f,
                         const struct expected *x, int loose)
{
    if (x->is_sample)
        return !f->stem && f->hashed && f->bytes == s->sample_bytes[x->n] &&
               f->xxh3 == s->sample_xxh3[x->n];
    const struct shard_reject *r = &s->v->m->rejects[x->n];
    if (f->stem && strcmp(r->reason, f->stem) && strcmp(r->reason, SK_REASON_DUPLICATE))
        return 0;
    if (f->refused)
        return !r->has_source && (strcmp(r->reason, f->why) == 0 ||
                                  (loose && strcmp(r->reason, SK_REASON_DUPLICATE) == 0));
    if (!r->has_source)
        return loose && !sk_reason_is_refusal(r->reason);
    return f->hashed && f->bytes == r->source_bytes && f->xxh3 == r->source_xxh3;
}

static void report_changed(struct source_run *s, const struct found *f, const char *key, size_t len,
                           const struct expected *x)
{
    struct verify_run *v = s->v;
    char q[SHARDX_QUOTE_SIZE], got[17], want[17];
    shardx_quote(key, len, q, sizeof q);
    const struct shard_reject *rj = x->is_sample ? NULL : &v->m->rejects[x->n];
    if (f->refused || (f->stem && (!rj || strcmp(rj->reason, f->stem)))) {
        const char *why = f->refused ? f->why : f->stem;
        if (rj)
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, key, len,
                              "source: '%s' in SRC: %s; the dataset rejected it: %s", q, why,
                              rj->reason);
        else
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, s->sample_shard[x->n],
                              (int64_t)s->sample_record[x->n], key, len,
                              "source: '%s' in SRC: %s; the dataset has it as a sample", q, why);
        return;
    }
    if (!f->hashed) {
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EIO, -1, -1, key, len,
                          "source: '%s' cannot be read: %s", q,
                          f->why ? f->why : "it exceeds the config's max_file_bytes");
        return;
    }
    if (rj && !rj->has_source) {
        shard_hex64(f->xxh3, got);
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, key, len,
                          "source: '%s' is a file in SRC (%llu bytes with xxh3 %s); the "
                          "dataset rejected it: %s",
                          q, (unsigned long long)f->bytes, got, rj->reason);
        return;
    }
    uint64_t bytes, h;
    const char *where;
    int64_t shard = -1, record = -1;
    if (x->is_sample) {
        bytes = s->sample_bytes[x->n];
        h = s->sample_xxh3[x->n];
        where = sk_verify_index_name(v, s->sample_shard[x->n]);
        shard = s->sample_shard[x->n];
        record = (int64_t)s->sample_record[x->n];
    } else {
        bytes = rj->source_bytes;
        h = rj->source_xxh3;
        where = "the manifest's rejects";
    }
    shard_hex64(f->xxh3, got);
    shard_hex64(h, want);
    sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, shard, record, key, len,
                      "source: '%s' changed since sharding: %llu bytes with xxh3 %s, %s says %llu "
                      "bytes with xxh3 %s",
                      q, (unsigned long long)f->bytes, got, where, (unsigned long long)bytes, want);
}

static void report_missing(struct source_run *s, const struct expected *x)
{
    struct verify_run *v = s->v;
    char q[SHARDX_QUOTE_SIZE];
    shardx_quote(x->key, x->len, q, sizeof q);
    if (x->is_sample) {
        uint32_t shard = s->sample_shard[x->n];
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_ENOTFOUND, shard,
                          (int64_t)s->sample_record[x->n], x->key, x->len,
                          "source: '%s' (%s record %llu) is not in SRC", q,
                          shard < v->m->shard_count ? v->m->shards[shard].file : "?",
                          (unsigned long long)s->sample_record[x->n]);
    } else {
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_ENOTFOUND, -1, -1, x->key, x->len,
                          "source: rejected '%s' (%s) is not in SRC", q,
                          v->m->rejects[x->n].reason);
    }
}

/* Pair the files F[0..nf) with the entries X[0..nx) that share one key. */
static void pair_group(struct source_run *s, struct found *F, uint64_t nf, struct expected *X,
                       uint64_t nx)
{
    size_t len;
    const char *key = nf ? shard_keylist_get(&s->found_keys, F[0].key, &len) : X[0].key;
    if (!nf)
        len = X[0].len;
    /* exact identities first, then rejects that recorded none */
    for (int loose = 0; loose <= 1; loose++)
        for (uint64_t i = 0; i < nf; i++)
            for (uint64_t j = 0; j < nx && !F[i].used; j++)
                if (!X[j].used && same_identity(s, &F[i], &X[j], loose))
                    F[i].used = X[j].used = 1;
    for (uint64_t i = 0; i < nf; i++) {
        if (F[i].used)
            continue;
        uint64_t j = 0;
        while (j < nx && X[j].used)
            j++;
        if (j < nx) {
            report_changed(s, &F[i], key, len, &X[j]);
            F[i].used = X[j].used = 1;
        } else if (F[i].refused) {
            char q[SHARDX_QUOTE_SIZE];
            sk_verify_problem(s->v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, key, len,
                              "source: '%s' is in SRC (%s) but is not a listed reject",
                              shardx_quote(key, len, q, sizeof q), F[i].why);
        } else {
            char q[SHARDX_QUOTE_SIZE];
            sk_verify_problem(s->v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, key, len,
                              "source: '%s' is in SRC but is neither a sample nor a listed reject",
                              shardx_quote(key, len, q, sizeof q));
        }
    }
    for (uint64_t j = 0; j < nx; j++) {
        if (X[j].is_sample && X[j].used)
            s->sample_present[X[j].n] = 1;
        if (!X[j].used)
            report_missing(s, &X[j]);
    }
}

/* Walk both sorted lists; `hash_only` marks the files to hash instead. */
static void join(struct source_run *s, int hash_only)
{
    uint64_t i = 0, j = 0;
    while (i < s->found_count || j < s->expected_count) {
        size_t lf = 0;
        const char *kf = i < s->found_count
                             ? shard_keylist_get(&s->found_keys, s->found[i].key, &lf)
                             : NULL;
        int c;
        if (!kf)
            c = 1;
        else if (j >= s->expected_count)
            c = -1;
        else
            c = sk_key_compare(kf, lf, s->expected[j].key, s->expected[j].len);
        uint64_t i2 = i, j2 = j;
        if (c <= 0)
            while (i2 < s->found_count &&
                   !sk_key_compare(shard_keylist_get(&s->found_keys, s->found[i2].key, NULL),
                                   s->found_keys.lengths[s->found[i2].key], kf, lf))
                i2++;
        if (c >= 0) {
            const struct expected *x = &s->expected[j];
            while (j2 < s->expected_count &&
                   !sk_key_compare(s->expected[j2].key, s->expected[j2].len, x->key, x->len))
                j2++;
        }
        if (hash_only) {
            for (uint64_t k = i; k < i2 && j2 > j; k++)
                s->found[k].need_hash = 1;
        } else {
            pair_group(s, s->found + i, i2 - i, s->expected + j, j2 - j);
        }
        i = i2;
        j = j2;
    }
}

/* ---- labels -------------------------------------------------------------------- */

static int make_labeler(struct source_run *s, struct shard_labeler **lb, struct shard_err *err)
{
    struct verify_run *v = s->v;
    struct shard_verify_report *r = v->report;
    const char *spec = v->m->config.labels ? v->m->config.labels : "dir";
    const char *why = NULL;
    struct shard_err e;
    *lb = NULL;
    if (!strncmp(spec, LABEL_FILE_PREFIX, strlen(LABEL_FILE_PREFIX))) {
        if (!v->o->labels) {
            why = "the labels came from a CSV file; pass that file (--labels) to check them";
        } else if (shard_labeler_new(lb, v->o->labels, &e) != 0) {
            sk_verify_problem(v, SHARD_CHECK_SOURCE, e.code, -1, -1, NULL, 0,
                              "source: cannot read the labels file: %s", e.msg);
            return SHARD_OK;
        } else if (strcmp(shard_labeler_describe(*lb), spec)) {
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "source: the labels file is '%s', the config says '%s'",
                              shard_labeler_describe(*lb), spec);
            shard_labeler_free(*lb);
            *lb = NULL;
            return SHARD_OK;
        }
    } else if (shard_labeler_new(lb, spec, &e) != 0) {
        sk_verify_problem(v, SHARD_CHECK_SOURCE, e.code, -1, -1, NULL, 0,
                          "source: the config's label rule '%s' does not work: %s", spec, e.msg);
        return SHARD_OK;
    }
    if (why && !(r->labels_note = strdup(why)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* A name of sorted labels: its place, or -1. */
static int find_sorted_label(const struct shard_manifest *m, const char *name)
{
    uint32_t lo = 0, hi = m->label_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->labels[mid], name);
        if (!c)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int sk_verify_find_label(const struct shard_manifest *m, const char *name)
{
    if (m->config.classes) {
        /* a fixed class list, in its order (shardify --classes): a name is
         * at its place; one the list lacks, a class number below its length
         * (a numeric .cls), is the class of that number */
        uint32_t n;
        for (uint32_t i = 0; i < m->label_count; i++)
            if (!strcmp(m->labels[i], name))
                return (int)i;
        return sk_field_class_number(name, strlen(name), &n) == 1 && n < m->label_count ? (int)n
                                                                                        : -1;
    }
    /* class numbers ("0".."N-1" in their order, not sorted by bytes: a
     * numeric class, FORMAT.md): a number is at its place, and "007" is 7
     * as shardify reads it (after the names: a list of names holds "007") */
    uint32_t n;
    char number[16];
    int is_number = sk_field_class_number(name, strlen(name), &n) == 1;
    if (is_number)
        snprintf(number, sizeof number, "%u", n);
    int numbered = is_number && n < m->label_count && !strcmp(m->labels[n], number);
    if (numbered && !strcmp(name, number))
        return (int)n;
    int found = find_sorted_label(m, name);
    return found < 0 && numbered ? (int)n : found;
}

/* The class SRC gives key[0..len): by the labeler, or from a sidecar or
 * column when lb is NULL. */
static int derive_label(const struct source_run *s, const struct shard_labeler *lb, const char *key,
                        size_t len, const char **name, size_t *name_len)
{
    return lb ? shard_labeler_label(lb, key, len, name, name_len)
              : sk_source_fields_class(s->fields, key, len, name, name_len);
}

static int check_labels(struct source_run *s, struct shard_err *err)
{
    struct verify_run *v = s->v;
    const struct shard_manifest *m = v->m;
    struct shard_labeler *lb = NULL;
    const char *why;
    int rc = SHARD_OK;
    if (sk_source_fields_has_class(s->fields, &why)) {
        if (why)
            return (v->report->labels_note = strdup(why))
                       ? SHARD_OK
                       : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else if ((rc = make_labeler(s, &lb, err)) || !lb) {
        return rc;
    }
    v->report->labels_checked = 1;
    uint64_t *count = calloc((size_t)m->label_count + 1, sizeof *count); /* last: unlabeled */
    if (!count) {
        shard_labeler_free(lb);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < s->sample_count && !rc; i++) {
        if (!s->sample_present[i])
            continue;
        size_t len, name_len;
        const char *key = shard_keylist_get(&s->sample_keys, i, &len), *name;
        char *derived = NULL;
        int have = derive_label(s, lb, key, len, &name, &name_len);
        if (have && !(derived = sk_jsonkey_label_name(name, name_len))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            break;
        }
        int label = have ? sk_verify_find_label(m, derived) : SHARD_NO_LABEL;
        int32_t stored = s->sample_label[i];
        if ((have && label < 0) || label != stored) {
            char q[SHARDX_QUOTE_SIZE];
            const char *stored_name = stored == SHARD_NO_LABEL            ? "(none)"
                                      : (uint32_t)stored < m->label_count ? m->labels[stored]
                                                                          : "(out of range)";
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, s->sample_shard[i],
                              (int64_t)s->sample_record[i], key, len,
                              "source: '%s' has label '%s' in the dataset, %s gives '%s'",
                              shardx_quote(key, len, q, sizeof q), stored_name,
                              lb ? "its key" : "SRC", have ? derived : "(none)");
        }
        if (label == SHARD_NO_LABEL)
            count[m->label_count]++;
        else if (label >= 0)
            count[label]++;
        free(derived);
    }
    for (uint32_t i = 0; i <= m->label_count; i++)
        v->report->labels[i].source = count[i];
    for (uint32_t i = 0; i < m->label_count && !rc; i++)
        if (count[i] != m->label_samples[i])
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "source: label '%s': SRC gives %llu samples, counts.by_label says "
                              "%llu",
                              m->labels[i], (unsigned long long)count[i],
                              (unsigned long long)m->label_samples[i]);
    if (!rc && count[m->label_count] != m->unlabeled)
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: SRC gives %llu unlabeled samples, counts.unlabeled says %llu",
                          (unsigned long long)count[m->label_count],
                          (unsigned long long)m->unlabeled);
    free(count);
    shard_labeler_free(lb);
    return rc;
}

/* ---- the pass ------------------------------------------------------------------ */

static int scan_source(struct source_run *s, struct shard_err *err)
{
    struct verify_run *v = s->v;
    struct stat st;
    if (sk_source_is_url(s->src)) { /* archives named by URL: a folder of them */
        s->archive = 1;
        if (v->m->source_kind && strcmp(v->m->source_kind, "archives"))
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "source: SRC names archives by URL, the dataset was made from %s "
                              "%s",
                              strcmp(v->m->source_kind, "archive") ? "a" : "an", v->m->source_kind);
        return scan_urls(s, err);
    }
    if (sk_source_is_s3(s->src)) {
        s->archive = 0; /* an S3 prefix is a directory of objects */
        if (v->m->source_kind && strcmp(v->m->source_kind, "directory"))
            sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "source: SRC is an S3 prefix (a directory of objects), the "
                              "dataset was made from an %s",
                              v->m->source_kind);
        return scan_directory(s, err);
    }
    if (stat(s->src, &st) != 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                               "cannot read source '%s'", s->src);
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return shard_err_set(err, SHARD_EINVAL,
                             "source '%s' is neither a directory nor an archive file", s->src);
    s->archive = S_ISREG(st.st_mode);
    const char *kind = s->archive ? "archive" : "directory";
    if (!s->archive && v->m->source_kind && !strcmp(v->m->source_kind, "archives")) {
        s->archive = 1; /* streamed, entry by entry, as one archive is */
        return scan_archives(s, err);
    }
    if (v->m->source_kind && strcmp(v->m->source_kind, kind))
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: SRC is %s %s, the dataset was made from %s %s",
                          s->archive ? "an" : "a", kind,
                          strcmp(v->m->source_kind, "archive") ? "a" : "an", v->m->source_kind);
    return s->archive ? scan_archive(s, err) : scan_directory(s, err);
}

int sk_verify_source(struct verify_run *v, struct shard_err *err)
{
    struct source_run s;
    memset(&s, 0, sizeof s);
    s.root.fd = -1;
    s.v = v;
    s.src = v->o->source;
    double t0 = sk_now_seconds();
    int rc = sk_source_fields_new(&s.fields, v, err);
    if (!rc)
        rc = scan_source(&s, err);
    if (!rc)
        rc = load_samples(&s, err);
    if (!rc)
        rc = build_expected(&s, err);
    if (rc)
        goto out;
    qsort_r(s.found, s.found_count, sizeof *s.found, compare_found, &s.found_keys);
    v->report->source_candidates = s.found_count;
    if (!s.archive) {
        join(&s, 1);
        if ((rc = hash_directory(&s, err)) ||
            (rc = sk_source_fields_read(s.fields, &s.root, &s.found_keys, err)))
            goto out;
    }
    join(&s, 0);
    for (uint64_t i = 0; s.fields && i < s.sample_count; i++)
        if (s.sample_present[i])
            sk_source_fields_check(s.fields, i, shard_keylist_get(&s.sample_keys, i, NULL),
                                   s.sample_keys.lengths[i], s.sample_shard[i], s.sample_record[i]);
    if ((rc = sk_source_fields_finish(s.fields, &s.found_keys, err)))
        goto out;
    uint64_t ignored = s.stats.ignored + s.stats.ignored_symlinks + s.stats.ignored_special;
    v->report->source_ignored = ignored;
    if (ignored != v->m->ignored)
        sk_verify_problem(v, SHARD_CHECK_SOURCE, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "source: SRC has %llu ignored files (not candidate images, symlinks, "
                          "special files), counts.ignored says %llu",
                          (unsigned long long)ignored, (unsigned long long)v->m->ignored);
    rc = check_labels(&s, err);
out:
    v->report->source.seconds = sk_now_seconds() - t0;
    v->report->source.threads = s.archive ? 1 : v->threads;
    source_release(&s);
    return rc;
}
