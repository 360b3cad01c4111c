/* merge.c - shardify_merge(): one dataset from the parts in DST/parts.
 *
 * Check first, publish second:
 *   1. find the parts (DST/parts/I-of-N, one N; neither a link), load each
 *      one's manifest and part file, and check them against part 0 (format
 *      version, options, listing, split) and their shards against their
 *      manifest (present, regular, of the listed size);
 *   2. write the merged index and the merged manifest as temporary files,
 *      checking each part's index against its manifest on the way; check
 *      that DST's names for them are free for shardify (absent, or regular
 *      files, no link) and hard-link every shard into DST: under its own
 *      name when that is free, else as .NAME.tmp (so the links are known to
 *      work: one file system, room in DST);
 *   3. only then: remove a previous merge's manifest (no manifest may name
 *      a shard while it is replaced), rename the staged shards over their
 *      names, then the index, then manifest.json (the commit point), and
 *      remove shard files no longer listed.
 * A failure before step 3 leaves DST as it was (what step 2 made is
 * removed), so a previous merge stays published; during it, no manifest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "convert/run.h"
#include "manifest/manifest_internal.h"
#include "shardkit/merge.h"
#include "util/clock.h"
#include "util/fsutil.h"

#define INDEX_TMP "." SHARD_INDEX_FILE ".tmp"
#define MANIFEST_TMP "." SHARD_MANIFEST_FILE ".tmp"
#define PART_NAME_BYTES 32
#define WRITE_CHUNK (1u << 20)

struct part {
    char name[PART_NAME_BYTES]; /* "I-of-N" */
    char *path;                 /* DST/parts/I-of-N */
    int fd;
    struct shard_manifest m;
    int loaded;
    json_t *info;          /* its part file */
    uint32_t shard_offset; /* its first shard's position in the merged list */
};

/* Where step 2 put a shard of the merged list. */
enum placed { NOT_PLACED, IN_PLACE, LINKED, STAGED };

struct merge {
    const char *dst;
    int fd;
    int parts_fd;
    uint32_t count;
    struct part *parts;
    struct shard_manifest out; /* borrows the parts' strings */
    unsigned char *placed;     /* enum placed, per shard of `out` */
    int index_fd;              /* INDEX_TMP, written */
    int manifest_fd;           /* MANIFEST_TMP, written */
};

/* ---- finding the parts ------------------------------------------------------ */

/* "I-of-N" exactly as printed: *i, *n. */
static int parse_part_name(const char *name, uint32_t *i, uint32_t *n)
{
    unsigned a, b;
    char again[PART_NAME_BYTES];
    if (sscanf(name, "%u-of-%u", &a, &b) != 2)
        return 0;
    snprintf(again, sizeof again, "%u-of-%u", a, b);
    if (strcmp(again, name) != 0 || b == 0 || a >= b)
        return 0;
    *i = a;
    *n = b;
    return 1;
}

/* A listing of the directory open as dir_fd (which stays open), or NULL
 * with errno set. */
static DIR *list_dir(int dir_fd)
{
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return d;
}

/* The N of the parts in DST/parts: all must agree. */
static int find_count(struct merge *g, struct shard_err *err)
{
    DIR *d = list_dir(g->parts_fd);
    if (!d)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s/%s'", g->dst,
                               SHARDIFY_PARTS_DIR);
    char first[PART_NAME_BYTES] = "";
    int rc = SHARD_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        uint32_t i, n;
        if (!parse_part_name(e->d_name, &i, &n))
            continue;
        if (!g->count) {
            g->count = n;
            snprintf(first, sizeof first, "%u-of-%u", i, n);
        } else if (n != g->count) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s/%s' holds parts of two splits: '%s' and "
                               "'%s'; remove the parts of the other one",
                               g->dst, SHARDIFY_PARTS_DIR, first, e->d_name);
        }
    }
    closedir(d);
    if (!rc && !g->count)
        rc = shard_err_set(err, SHARD_ENOTFOUND,
                           "no parts in '%s/%s' (part I of N is written "
                           "to DST/parts/I-of-N)",
                           g->dst, SHARDIFY_PARTS_DIR);
    return rc;
}

/* Part p's part file, parsed. */
static int load_info(struct merge *g, struct part *p, uint32_t i, struct shard_err *err)
{
    int fd = -1;
    uint64_t size = 0;
    char *text = NULL;
    struct shard_err e;
    int rc = sk_fs_open_read(p->fd, SHARDIFY_PART_FILE, &fd, &size, &e);
    if (rc == SHARD_ENOTFOUND)
        return shard_err_set(err, SHARD_EEXIST, "part %u of %u is not a part: '%s' has no %s", i,
                             g->count, p->path, SHARDIFY_PART_FILE);
    if (!rc && !(text = malloc(size ? size : 1)))
        rc = shard_err_set(&e, SHARD_ENOMEM, "out of memory");
    if (!rc)
        rc = sk_fs_pread_all(fd, size, 0, text, size, &e);
    if (fd >= 0)
        close(fd);
    json_error_t jerr;
    if (rc)
        rc = shard_err_set(err, rc, "part %u of %u: cannot read '%s/%s': %s", i, g->count, p->path,
                           SHARDIFY_PART_FILE, e.msg);
    else if (!(p->info = json_loadb(text, size, 0, &jerr)))
        rc = shard_err_set(err, SHARD_ECORRUPT, "part %u of %u: '%s/%s' is not JSON: %s", i,
                           g->count, p->path, SHARDIFY_PART_FILE, jerr.text);
    free(text);
    return rc;
}

static int open_part(struct merge *g, uint32_t i, struct shard_err *err)
{
    struct part *p = &g->parts[i];
    snprintf(p->name, sizeof p->name, "%u-of-%u", i, g->count);
    size_t cap = strlen(g->dst) + sizeof SHARDIFY_PARTS_DIR + sizeof p->name + 2;
    if (!(p->path = malloc(cap)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(p->path, cap, "%s/%s/%s", g->dst, SHARDIFY_PARTS_DIR, p->name);
    char parts[PATH_MAX];
    snprintf(parts, sizeof parts, "%s/%s", g->dst, SHARDIFY_PARTS_DIR);
    struct shard_err e;
    int rc = sk_fs_open_dir_at(g->parts_fd, parts, p->name, &p->fd, &e);
    if (rc == SHARD_ENOTFOUND)
        return shard_err_set(err, SHARD_ENOTFOUND, "part %u of %u is missing: no '%s'", i, g->count,
                             p->path);
    if (rc)
        return shard_err_set(err, rc, "part %u of %u: %s", i, g->count, e.msg);
    rc = shard_manifest_load(p->path, &p->m, &e);
    if (rc == SHARD_ENOTFOUND)
        return shard_err_set(err, SHARD_EEXIST,
                             "part %u of %u is incomplete: '%s' has no %s "
                             "yet (still running, or stopped: run it again with --resume)",
                             i, g->count, p->path, SHARD_MANIFEST_FILE);
    if (rc)
        return shard_err_set(err, rc, "part %u of %u: %s", i, g->count, e.msg);
    p->loaded = 1;
    return load_info(g, p, i, err);
}

/* ---- checking the parts against part 0 -------------------------------------- */

/* A JSON value as compact text (malloc'd; "?" when it cannot be). */
static char *shown(const json_t *v)
{
    char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("(none)");
    return s ? s : strdup("?");
}

/* The first member of `a` that `b` does not have equal, or NULL. */
static const char *first_difference(const json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)a, key, v) {
        if (!json_equal(v, json_object_get(b, key)))
            return key;
    }
    json_object_foreach((json_t *)b, key, v) {
        if (!json_object_get(a, key))
            return key;
    }
    return NULL;
}

/* "part I of N <what>: KEY is X, part 0's Y" for the first member of `field`
 * that differs (field NULL: the part files themselves). */
static int differs(struct merge *g, uint32_t i, const char *field, const char *what,
                   struct shard_err *err)
{
    const json_t *a = g->parts[i].info, *b = g->parts[0].info;
    if (field) {
        a = json_object_get(a, field);
        b = json_object_get(b, field);
    }
    const char *key = a && b && json_is_object(a) && json_is_object(b) ? first_difference(a, b)
                                                                       : NULL;
    if (!key && json_equal((json_t *)a, (json_t *)b))
        return SHARD_OK;
    char *x = shown(key ? json_object_get(a, key) : a);
    char *y = shown(key ? json_object_get(b, key) : b);
    int rc = shard_err_set(err, SHARD_EMISMATCH, "part %u of %u %s: %s is %s, part 0's %s", i,
                           g->count, what, key ? key : field, x ? x : "?", y ? y : "?");
    free(x);
    free(y);
    return rc;
}

static uint64_t info_uint(const struct part *p, const char *field)
{
    json_t *v = json_object_get(p->info, field);
    return json_is_integer(v) ? (uint64_t)json_integer_value(v) : UINT64_MAX;
}

static int check_part(struct merge *g, uint32_t i, struct shard_err *err)
{
    struct part *p = &g->parts[i];
    if (info_uint(p, "part") != i || info_uint(p, "parts") != g->count)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "part %u of %u: its %s says part %lld of "
                             "%lld",
                             i, g->count, SHARDIFY_PART_FILE, (long long)info_uint(p, "part"),
                             (long long)info_uint(p, "parts"));
    json_t *listing = json_object_get(p->info, "listing");
    int rc;
    if ((rc = differs(g, i, "shardkit", "was made by another shardkit", err)) ||
        (rc = differs(g, i, "manifest_version", "has another format version", err)) ||
        (i == 0 && !json_is_object(json_object_get(listing, "config"))))
        return rc ? rc
                  : shard_err_set(err, SHARD_ECORRUPT, "part 0 of %u: %s has no options", g->count,
                                  SHARDIFY_PART_FILE);
    /* the options first: they explain a different order too */
    json_t *mine = json_object_get(listing, "config");
    json_t *theirs = json_object_get(json_object_get(g->parts[0].info, "listing"), "config");
    const char *key = first_difference(mine, theirs);
    if (key) {
        char *x = shown(json_object_get(mine, key)), *y = shown(json_object_get(theirs, key));
        rc = shard_err_set(err, SHARD_EMISMATCH,
                           "part %u of %u was made with other options: "
                           "%s is %s, part 0's %s",
                           i, g->count, key, x, y);
        free(x);
        free(y);
        return rc;
    }
    if ((rc = differs(g, i, "listing",
                      "was made from another listing of SRC (files added, "
                      "removed or renamed between the parts' runs)",
                      err)) ||
        (rc = differs(g, i, "ignored", "was made from another listing of SRC", err)) ||
        (rc = differs(g, i, "bounds",
                      "split the sample order otherwise (file sizes changed "
                      "between the parts' runs)",
                      err)))
        return rc;
    json_t *bounds = json_object_get(p->info, "bounds");
    uint64_t first = (uint64_t)json_integer_value(json_array_get(bounds, i));
    uint64_t end = (uint64_t)json_integer_value(json_array_get(bounds, i + 1));
    if (json_array_size(bounds) != g->count + 1u || info_uint(p, "first") != first ||
        info_uint(p, "end") != end)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "part %u of %u: its range of the sample "
                             "order is not the one its %s gives it",
                             i, g->count, SHARDIFY_PART_FILE);
    if (p->m.samples + p->m.rejected != end - first)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "part %u of %u holds %llu samples and "
                             "rejects, its range %llu",
                             i, g->count, (unsigned long long)(p->m.samples + p->m.rejected),
                             (unsigned long long)(end - first));
    return SHARD_OK;
}

/* Every shard the part's manifest lists is there, a regular file of its size. */
static int check_shards(struct merge *g, uint32_t i, struct shard_err *err)
{
    const struct part *p = &g->parts[i];
    for (uint32_t k = 0; k < p->m.shard_count; k++) {
        const struct shard_manifest_shard *s = &p->m.shards[k];
        struct stat st;
        if (fstatat(p->fd, s->file, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return shard_err_errno(err, SHARD_EEXIST, errno,
                                   "part %u of %u is incomplete: "
                                   "cannot find '%s/%s'",
                                   i, g->count, p->path, s->file);
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != s->bytes)
            return shard_err_set(err, SHARD_EEXIST,
                                 "part %u of %u is incomplete: '%s/%s' has "
                                 "%llu bytes, its manifest says %llu",
                                 i, g->count, p->path, s->file, (unsigned long long)st.st_size,
                                 (unsigned long long)s->bytes);
        const char *prev = g->out.shard_count ? g->out.shards[g->out.shard_count - 1].file : "";
        if (strcmp(prev, s->file) >= 0) /* the parts' numbers never overlap */
            return shard_err_set(err, SHARD_EMISMATCH,
                                 "part %u of %u: shard '%s' comes after "
                                 "'%s' of an earlier part",
                                 i, g->count, s->file, prev);
        g->out.shards[g->out.shard_count++] = *s;
    }
    return SHARD_OK;
}

/* ---- the merged manifest ---------------------------------------------------- */

static int gather(struct merge *g, struct shard_err *err)
{
    struct shard_manifest *m = &g->out;
    const struct shard_manifest *m0 = &g->parts[0].m;
    uint64_t shards = 0, rejects = 0;
    for (uint32_t i = 0; i < g->count; i++) {
        shards += g->parts[i].m.shard_count;
        rejects += g->parts[i].m.reject_count;
    }
    if (shards > UINT32_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "too many shards");
    m->shards = calloc(shards ? shards : 1, sizeof *m->shards);
    m->rejects = calloc(rejects ? rejects : 1, sizeof *m->rejects);
    m->label_samples = calloc(m0->label_count ? m0->label_count : 1, sizeof *m->label_samples);
    if (!m->shards || !m->rejects || !m->label_samples)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    m->config = m0->config;
    m->source_kind = m0->source_kind;
    m->ignored = m0->ignored;
    m->labels = m0->labels;
    m->label_count = m0->label_count;
    m->index_file = SHARD_INDEX_FILE;
    /* fields: every part scanned the whole source, so orphans and the table's
     * counts are the same in each; samples and sidecars add up */
    m->version = m0->version;
    m->orphans = m0->orphans;
    m->orphan_count = m0->orphan_count;
    m->annotation_rows = m0->annotation_rows;
    m->annotation_rows_unmatched = m0->annotation_rows_unmatched;
    m->coco_images = m0->coco_images;
    m->coco_images_unmatched = m0->coco_images_unmatched;
    m->coco_annotations = m0->coco_annotations;
    m->coco_annotations_unmatched = m0->coco_annotations_unmatched;
    if (m0->config.field_count &&
        !(m->field_samples = calloc(m0->config.field_count, sizeof *m->field_samples)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < g->count; i++) {
        struct part *p = &g->parts[i];
        int rc;
        if (p->m.label_count != m0->label_count)
            return shard_err_set(err, SHARD_EMISMATCH, "part %u of %u has %u labels, part 0 %u", i,
                                 g->count, p->m.label_count, m0->label_count);
        for (uint32_t l = 0; l < m0->label_count; l++) {
            if (strcmp(p->m.labels[l], m0->labels[l]) != 0)
                return shard_err_set(err, SHARD_EMISMATCH,
                                     "part %u of %u: label %u is '%s', "
                                     "part 0's '%s'",
                                     i, g->count, l, p->m.labels[l], m0->labels[l]);
            m->label_samples[l] += p->m.label_samples[l];
        }
        p->shard_offset = m->shard_count;
        if ((rc = check_shards(g, i, err)))
            return rc;
        memcpy(m->rejects + m->reject_count, p->m.rejects, p->m.reject_count * sizeof *m->rejects);
        m->reject_count += p->m.reject_count;
        m->samples += p->m.samples;
        m->unlabeled += p->m.unlabeled;
        m->warned += p->m.warned;
        m->sidecars += p->m.sidecars;
        m->boxes += p->m.boxes;
        m->boxes_dropped += p->m.boxes_dropped;
        if (p->m.config.field_count != m0->config.field_count ||
            p->m.orphan_count != m0->orphan_count)
            return shard_err_set(err, SHARD_EMISMATCH,
                                 "part %u of %u has other fields or "
                                 "orphans than part 0",
                                 i, g->count);
        for (uint32_t f = 0; f < m0->config.field_count; f++)
            m->field_samples[f] += p->m.field_samples[f];
    }
    m->rejected = m->reject_count;
    if (m->reject_count)
        qsort(m->rejects, m->reject_count, sizeof *m->rejects, sk_run_compare_rejects);
    return SHARD_OK;
}

/* ---- the merged index ------------------------------------------------------- */

struct index_out {
    int fd;
    struct shard_buf buf;
    XXH3_state_t *hash;
    uint64_t bytes;
};

static int flush_index(struct merge *g, struct index_out *o, struct shard_err *err)
{
    XXH3_64bits_update(o->hash, o->buf.data, o->buf.len);
    o->bytes += o->buf.len;
    int rc = sk_fs_write_all(o->fd, o->buf.data, o->buf.len, INDEX_TMP, err);
    o->buf.len = 0;
    return rc;
}

/* Where the shard number of index line `line` (n bytes) starts and ends.
 * A sample line is {"key":...,"label":...,"shard":N,...}: `,"shard":` cannot
 * occur inside a JSON string (a quote there is escaped), so its first
 * occurrence is the field.  0, or -1 when the line has no shard number. */
static int find_shard_field(const char *line, size_t n, size_t *start, size_t *end)
{
    static const char field[] = ",\"shard\":";
    const char *f = memmem(line, n, field, sizeof field - 1);
    if (!f)
        return -1;
    size_t i = (size_t)(f - line) + sizeof field - 1, j = i;
    while (j < n && j - i < 10 && line[j] >= '0' && line[j] <= '9')
        j++;
    if (j == i || j >= n || line[j] != ',' || (line[i] == '0' && j - i > 1))
        return -1;
    *start = i;
    *end = j;
    return 0;
}

/* Part p's index lines, their shard numbers moved to the merged list.  The
 * lines are copied as stored but for that number (the part's index is the one
 * its manifest lists, by size and xxh3, checked below before anything is
 * published), so the merge costs a copy, not a JSON parse, per sample. */
static int copy_index(struct merge *g, uint32_t i, struct index_out *o, struct shard_err *err)
{
    struct part *p = &g->parts[i];
    char *path = sk_fs_join(p->path, SHARD_INDEX_FILE);
    struct shard_index_reader *rd = NULL;
    uint64_t entries = 0;
    int rc = path ? shard_index_reader_open(&rd, path, err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct shard_err e;
    const char *line;
    size_t n, start, end;
    int got = 0;
    while (!rc && (got = sk_index_reader_next_line(rd, &line, &n, &e)) == 1) {
        entries++;
        unsigned long shard = ULONG_MAX;
        if (find_shard_field(line, n, &start, &end) == 0)
            shard = strtoul(line + start, NULL, 10);
        if (shard >= p->m.shard_count) {
            rc = shard_err_set(err, SHARD_ECORRUPT,
                               "part %u of %u: '%s' line %llu does not "
                               "name one of its %u shards",
                               i, g->count, path, (unsigned long long)entries, p->m.shard_count);
            break;
        }
        char number[24];
        int len = snprintf(number, sizeof number, "%lu", shard + p->shard_offset);
        if ((rc = shard_buf_append(&o->buf, line, start, err)) ||
            (rc = shard_buf_append(&o->buf, number, (size_t)len, err)) ||
            (rc = shard_buf_append(&o->buf, line + end, n - end, err)))
            break;
        if (o->buf.len >= WRITE_CHUNK)
            rc = flush_index(g, o, err);
    }
    if (!rc && got < 0)
        rc = shard_err_set(err, got, "part %u of %u: %s", i, g->count, e.msg);
    if (!rc && (entries != p->m.index_entries || entries != p->m.samples ||
                shard_index_reader_bytes(rd) != p->m.index_bytes ||
                shard_index_reader_xxh3(rd) != p->m.index_xxh3))
        rc = shard_err_set(err, SHARD_EMISMATCH,
                           "part %u of %u: '%s' is not the index its "
                           "manifest lists",
                           i, g->count, path);
    shard_index_reader_close(rd);
    free(path);
    return rc;
}

/* The merged index as DST/.index.jsonl.tmp (left open in *fd). */
static int write_index(struct merge *g, int *fd, struct shard_err *err)
{
    struct index_out o = {.fd = -1};
    if (!(o.hash = XXH3_createState()))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(o.hash);
    int rc = sk_fs_create_at(g->fd, g->dst, INDEX_TMP, 0644, &o.fd, err);
    for (uint32_t i = 0; !rc && i < g->count; i++)
        rc = copy_index(g, i, &o, err);
    if (!rc)
        rc = flush_index(g, &o, err);
    g->out.index_bytes = o.bytes;
    g->out.index_xxh3 = XXH3_64bits_digest(o.hash);
    g->out.index_entries = g->out.samples;
    XXH3_freeState(o.hash);
    shard_buf_release(&o.buf);
    *fd = o.fd;
    if (rc && o.fd >= 0) {
        close(o.fd);
        unlinkat(g->fd, INDEX_TMP, 0);
        *fd = -1;
    }
    return rc;
}

/* ---- publishing ------------------------------------------------------------- */

/* The staged name of shard NAME: ".NAME.tmp" (shard names are short). */
static void staged_name(const char *name, char *tmp, size_t size)
{
    snprintf(tmp, size, ".%s.tmp", name);
}

/* Part p's shard NAME into DST before anything is unpublished (*placed
 * says how): the file already there (a merge of the same parts again), a
 * new link under its own name when that is free, or a link as .NAME.tmp
 * when another file holds the name (renamed over it by publish()).  What
 * holds the name must be a regular file, never a link or a directory. */
static int place_shard(struct merge *g, const struct part *p, const char *name,
                       unsigned char *placed, struct shard_err *err)
{
    struct stat a, b;
    char tmp[64];
    const char *as = name;
    int rc = sk_fs_check_own_at(g->fd, g->dst, name, 0, err);
    if (rc)
        return rc;
    if (fstatat(g->fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0) {
        if (fstatat(p->fd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            *placed = IN_PLACE;
            return SHARD_OK;
        }
        staged_name(name, tmp, sizeof tmp);
        if (unlinkat(g->fd, tmp, 0) != 0 && errno != ENOENT)
            return shard_err_errno(err, SHARD_EIO, errno, "cannot remove the stale '%s/%s'", g->dst,
                                   tmp);
        as = tmp;
    } else if (errno != ENOENT) {
        return shard_err_errno(err, SHARD_EIO, errno, "cannot inspect '%s/%s'", g->dst, name);
    }
    if (linkat(p->fd, name, g->fd, as, 0) != 0)
        return errno == EXDEV ? shard_err_errno(err, SHARD_EIO, errno,
                                                "cannot link '%s/%s' into '%s': the "
                                                "parts must be on DST's file system",
                                                p->path, name, g->dst)
                              : shard_err_errno(err, SHARD_EIO, errno,
                                                "cannot link '%s/%s' into '%s' as "
                                                "'%s'",
                                                p->path, name, g->dst, as);
    *placed = as == name ? LINKED : STAGED;
    return SHARD_OK;
}

/* Undo place_shard: for every shard (a failure before publishing, which
 * leaves DST as it was), or only the staged ones (`staged_only`: a failure
 * while publishing, which leaves no .NAME.tmp behind). */
static void unplace_shards(struct merge *g, int staged_only)
{
    for (uint32_t k = 0; g->placed && k < g->out.shard_count; k++) {
        char tmp[64];
        const char *name = g->out.shards[k].file;
        if (g->placed[k] == LINKED && !staged_only) {
            unlinkat(g->fd, name, 0);
        } else if (g->placed[k] == STAGED) {
            staged_name(name, tmp, sizeof tmp);
            unlinkat(g->fd, tmp, 0);
        }
        g->placed[k] = NOT_PLACED;
    }
}

/* The merged manifest as DST/.manifest.json.tmp, written (left open in
 * g->manifest_fd for publish() to commit). */
static int write_manifest(struct merge *g, struct shard_err *err)
{
    char *text = NULL;
    int rc = shard_manifest_dump(&g->out, &text, err);
    if (!rc)
        rc = sk_fs_create_at(g->fd, g->dst, MANIFEST_TMP, 0644, &g->manifest_fd, err);
    if (!rc)
        rc = sk_fs_write_all(g->manifest_fd, text, strlen(text), MANIFEST_TMP, err);
    free(text);
    return rc;
}

/* Step 2: everything publishing needs that leaves the previous merge
 * published.  On failure, what it made is removed again. */
static int prepare(struct merge *g, struct shard_err *err)
{
    int rc;
    if (!(g->placed = calloc(g->out.shard_count ? g->out.shard_count : 1, 1)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if ((rc = sk_fs_check_own_at(g->fd, g->dst, SHARD_MANIFEST_FILE, 0, err)) ||
        (rc = sk_fs_check_own_at(g->fd, g->dst, SHARD_INDEX_FILE, 0, err)) ||
        (rc = write_manifest(g, err)))
        return rc;
    for (uint32_t i = 0; !rc && i < g->count; i++) {
        const struct part *p = &g->parts[i];
        for (uint32_t k = 0; !rc && k < p->m.shard_count; k++)
            rc = place_shard(g, p, p->m.shards[k].file, &g->placed[p->shard_offset + k], err);
    }
    if (rc)
        unplace_shards(g, 0);
    return rc;
}

static int compare_files(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, ((const struct shard_manifest_shard *)pb)->file);
}

/* Shard files of DST the merged manifest does not list: a previous merge's. */
static int remove_unlisted(struct merge *g, struct shard_err *err)
{
    DIR *d = list_dir(g->fd);
    if (!d)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", g->dst);
    struct dirent *e;
    int removed = 0;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (sk_dst_is_shard_name(name, NULL) && !bsearch(&name, g->out.shards, g->out.shard_count,
                                                         sizeof *g->out.shards, compare_files))
            removed += unlinkat(g->fd, name, 0) == 0;
    }
    closedir(d);
    return removed ? sk_fs_sync_dirfd(g->fd, g->dst, err) : SHARD_OK;
}

/* Informative, like a run's run.json: not part of the dataset's identity. */
static void write_run_info(struct merge *g, double seconds)
{
    char when[64], text[256];
    time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    int len = snprintf(text, sizeof text,
                       "{\n  \"finished\": \"%s\",\n  \"seconds\": %.6f,\n"
                       "  \"merged_parts\": %u\n}",
                       when, seconds, g->count);
    struct shard_err e;
    (void)sk_fs_write_atomic_at(g->fd, g->dst, SHARDIFY_RUN_FILE, text, (size_t)len, &e);
}

/* Step 3.  A failure here leaves no manifest: the message says so. */
static int publish(struct merge *g, struct shard_err *err)
{
    int rc = SHARD_OK;
    struct shard_err e;
    if (unlinkat(g->fd, SHARD_MANIFEST_FILE, 0) != 0 && errno != ENOENT) {
        unplace_shards(g, 0); /* the previous merge is still published */
        return shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", g->dst,
                               SHARD_MANIFEST_FILE);
    }
    for (uint32_t k = 0; !rc && k < g->out.shard_count; k++) {
        char tmp[64];
        if (g->placed[k] != STAGED)
            continue;
        staged_name(g->out.shards[k].file, tmp, sizeof tmp);
        if (renameat(g->fd, tmp, g->fd, g->out.shards[k].file) != 0)
            rc = shard_err_errno(&e, SHARD_EIO, errno, "cannot rename '%s/%s' to '%s'", g->dst, tmp,
                                 g->out.shards[k].file);
        else
            g->placed[k] = LINKED;
    }
    /* the index's rename fsyncs DST, and so the links made before it */
    rc = sk_fs_commit_at(g->index_fd, rc, g->fd, g->dst, INDEX_TMP, SHARD_INDEX_FILE, &e);
    g->index_fd = -1;
    rc = sk_fs_commit_at(g->manifest_fd, rc, g->fd, g->dst, MANIFEST_TMP, SHARD_MANIFEST_FILE, &e);
    g->manifest_fd = -1;
    if (rc) {
        unplace_shards(g, 1);
        return shard_err_set(err, rc, "%s (the previous dataset in '%s' is no longer published)",
                             e.msg, g->dst);
    }
    return remove_unlisted(g, err);
}

static void merge_release(struct merge *g)
{
    for (uint32_t i = 0; g->parts && i < g->count; i++) {
        struct part *p = &g->parts[i];
        if (p->fd >= 0)
            close(p->fd);
        if (p->loaded)
            shard_manifest_release(&p->m);
        json_decref(p->info);
        free(p->path);
    }
    free(g->parts);
    free(g->placed);
    if (g->index_fd >= 0) { /* not committed: a failure before publishing */
        close(g->index_fd);
        unlinkat(g->fd, INDEX_TMP, 0);
    }
    if (g->manifest_fd >= 0) {
        close(g->manifest_fd);
        unlinkat(g->fd, MANIFEST_TMP, 0);
    }
    free(g->out.shards);
    free(g->out.rejects);
    free(g->out.label_samples);
    free(g->out.field_samples);
    if (g->parts_fd >= 0)
        close(g->parts_fd);
    if (g->fd >= 0)
        close(g->fd);
}

int shardify_merge(const char *dst, struct shardify_merge_summary *summary, struct shard_err *err)
{
    double t0 = sk_now_seconds();
    struct merge g = {.dst = dst, .fd = -1, .parts_fd = -1, .index_fd = -1, .manifest_fd = -1};
    int rc = SHARD_OK;
    memset(summary, 0, sizeof *summary);
    if (strstr(dst, "://")) { /* links need one file system */
        rc = shard_err_set(err, SHARD_EINVAL,
                           "cannot merge '%s': the merge needs a local DST; "
                           "merge on a file system, then copy the dataset",
                           dst);
        goto out;
    }
    g.fd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the DST named */
    if (g.fd < 0) {
        rc = shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                             "cannot open '%s'", dst);
        goto out;
    }
    struct shard_err e;
    if ((rc = sk_fs_open_dir_at(g.fd, dst, SHARDIFY_PARTS_DIR, &g.parts_fd, &e))) {
        rc = rc == SHARD_ENOTFOUND ? shard_err_set(err, rc, "no parts in '%s': %s", dst, e.msg)
                                   : shard_err_set(err, rc, "%s", e.msg);
        goto out;
    }
    if (flock(g.parts_fd, LOCK_EX | LOCK_NB) != 0) { /* released when closed */
        rc = shard_err_set(err, SHARD_ELOCKED, "another merge of '%s' is running", dst);
        goto out;
    }
    if ((rc = find_count(&g, err)))
        goto out;
    if (!(g.parts = calloc(g.count, sizeof *g.parts))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < g.count; i++)
        g.parts[i].fd = -1;
    for (uint32_t i = 0; !rc && i < g.count; i++)
        if (!(rc = open_part(&g, i, err)))
            rc = check_part(&g, i, err);
    if (rc || (rc = gather(&g, err)) || (rc = write_index(&g, &g.index_fd, err)) ||
        (rc = prepare(&g, err)) || (rc = publish(&g, err)))
        goto out;
    summary->parts = g.count;
    summary->samples = g.out.samples;
    summary->rejected = g.out.rejected;
    summary->shards = g.out.shard_count;
    for (uint32_t k = 0; k < g.out.shard_count; k++)
        summary->bytes += g.out.shards[k].bytes;
    summary->seconds = sk_now_seconds() - t0;
    write_run_info(&g, summary->seconds);
out:
    merge_release(&g);
    return rc;
}
