/* merge.c - shardify_merge(): one dataset from the parts in DST/parts.
 *
 * Check first, publish second:
 *   1. find the parts (DST/parts/I-of-N, one N; neither a link), load each
 *      one's manifest and part file, and check them against part 0 (format
 *      version, options, listing, split) and their shards against their
 *      manifest (present, regular, of the listed size);
 *   2. write the merged manifest as a temporary file; check that DST's
 *      names are free for shardify (absent, or regular files, no link) and
 *      hard-link every shard, and every part's index and key table (as
 *      index-I-of-N.jsonl and .keys: a merge never rewrites what is per
 *      sample, it costs in proportion to the parts) into DST: under its own
 *      name when that is free, else as .NAME.tmp (so the links are known to
 *      work: one file system, room in DST);
 *   3. only then: remove a previous merge's manifest (no manifest may name
 *      a file while it is replaced), rename the staged files over their
 *      names, then manifest.json (the commit point), and remove shard and
 *      index files no longer listed.
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
#include "shardx/shardx.h"
#include "image/image_internal.h"

#define MANIFEST_TMP "." SHARD_MANIFEST_FILE ".tmp"
#define ARCHIVES_TMP "." SHARD_ARCHIVES_FILE ".tmp"
#define PART_NAME_BYTES 32
#define FILE_NAME_BYTES 64

struct part {
    char name[PART_NAME_BYTES]; /* "I-of-N" */
    char *path;                 /* DST/parts/I-of-N */
    int fd;
    struct shard_manifest m;
    int loaded;
    json_t *info;          /* its part file */
    uint32_t shard_offset; /* its first shard's position in the merged list */
};

/* Where step 2 put a file of the merged dataset. */
enum placed { NOT_PLACED, IN_PLACE, LINKED, STAGED };

/* A file of a part that the merged dataset keeps: its name there and in DST. */
struct place {
    const struct part *part;
    const char *from;
    char to[FILE_NAME_BYTES];
    unsigned char placed; /* enum placed */
};

struct merge {
    const char *dst;
    int fd;
    int parts_fd;
    uint32_t count;
    struct part *parts;
    struct shard_manifest out; /* borrows the parts' strings */
    struct place *places;      /* every shard, then every part's index and key table */
    size_t place_count;
    int manifest_fd; /* MANIFEST_TMP, written */
    int archives_fd; /* ARCHIVES_TMP, written (parts of a folder of archives by archive) */
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
        (rc = differs(g, i, "allow_empty", "was made with another --allow-empty", err)) ||
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
    /* a range of the sample order, or by archive a range of archives whose
     * candidates the part counted */
    json_t *unit = json_object_get(p->info, "unit");
    uint64_t candidates = unit ? info_uint(p, "candidates") : end - first;
    if (p->m.samples + p->m.rejected != candidates)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "part %u of %u holds %llu samples and "
                             "rejects, its range %llu",
                             i, g->count, (unsigned long long)(p->m.samples + p->m.rejected),
                             (unsigned long long)candidates);
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
        struct place *pl = &g->places[g->place_count++];
        pl->part = p;
        pl->from = s->file;
        snprintf(pl->to, sizeof pl->to, "%s", s->file);
    }
    return SHARD_OK;
}

/* ---- the parts' indexes ------------------------------------------------------ */

/* DST's name of part i's file `name` ("index.jsonl" -> "index-1-of-4.jsonl";
 * one part's: the name itself, the dataset being a single run's). */
static void index_name(const struct merge *g, uint32_t i, const char *name, char *out, size_t size)
{
    const char *dot = strchr(name, '.');
    if (g->count == 1 || !dot)
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%.*s-%u-of-%u%s", (int)(dot - name), name, i, g->count, dot);
}

/* Part i's index file (and its key table) is the one its manifest lists,
 * by name and size (as its shards are; shardcheck reads their bytes), and
 * becomes entry i of the merged manifest's indexes, to be linked into DST. */
static int add_index(struct merge *g, uint32_t i, struct shard_err *err)
{
    struct part *p = &g->parts[i];
    const struct shard_manifest_index *x = &p->m.indexes[0];
    struct shard_manifest_index *o = &g->out.indexes[i];
    struct stat st;
    if (p->m.index_count != 1 || p->m.index_entries != p->m.samples)
        return shard_err_set(err, SHARD_EMISMATCH,
                             "part %u of %u: its manifest lists %u index files of %llu lines for "
                             "%llu samples",
                             i, g->count, p->m.index_count, (unsigned long long)p->m.index_entries,
                             (unsigned long long)p->m.samples);
    const char *files[2] = {x->file, x->keys_file};
    uint64_t sizes[2] = {x->bytes, x->keys_bytes};
    for (int k = 0; k < 2 && files[k]; k++) {
        if (fstatat(p->fd, files[k], &st, AT_SYMLINK_NOFOLLOW) != 0)
            return errno == ENOENT
                       ? shard_err_set(
                             err, SHARD_EMISMATCH,
                             "part %u of %u: '%s/%s', which its manifest lists, is missing", i,
                             g->count, p->path, files[k])
                       : shard_err_set(err, SHARD_EIO, "part %u of %u: '%s/%s': %s", i, g->count,
                                       p->path, files[k], strerror(errno));
        if (!S_ISREG(st.st_mode))
            return shard_err_set(err, SHARD_EMISMATCH, "part %u of %u: '%s/%s': %s", i, g->count,
                                 p->path, files[k], sk_fs_not_regular(st.st_mode));
        if ((uint64_t)st.st_size != sizes[k])
            return shard_err_set(err, SHARD_EMISMATCH,
                                 "part %u of %u: '%s/%s' is not the file its manifest lists", i,
                                 g->count, p->path, files[k]);
        struct place *pl = &g->places[g->place_count++];
        pl->part = p;
        pl->from = files[k];
        index_name(g, i, files[k], pl->to, sizeof pl->to);
        if (k == 0)
            o->file = pl->to;
        else
            o->keys_file = pl->to;
    }
    o->entries = x->entries;
    o->bytes = x->bytes;
    o->xxh3 = x->xxh3;
    o->shards = p->m.shard_count;
    o->keys_bytes = x->keys_bytes;
    o->keys_xxh3 = x->keys_xxh3;
    g->out.index_entries += x->entries;
    g->out.index_bytes += x->bytes;
    return SHARD_OK;
}

/* The merged manifest's indexes: every part's, in part order. */
static int add_indexes(struct merge *g, struct shard_err *err)
{
    struct shard_manifest *m = &g->out;
    if (!(m->indexes = calloc(g->count, sizeof *m->indexes)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    m->index_count = g->count;
    int rc = SHARD_OK;
    for (uint32_t i = 0; !rc && i < g->count; i++)
        rc = add_index(g, i, err);
    if (!rc && g->count == 1) { /* one part: the index of a single run */
        m->index_file = m->indexes[0].file;
        m->index_xxh3 = m->indexes[0].xxh3;
    }
    return rc;
}

/* ---- the archives' list -------------------------------------------------------- */

/* Parts of a folder of archives stored by archive: their archives.jsonl
 * one after the other (in part order, which is the archives' order), each
 * checked against its part's manifest, as ARCHIVES_TMP (left open in
 * g->archives_fd); its identity in the merged manifest.  A line an archive. */
static int write_archives(struct merge *g, struct shard_err *err)
{
    struct shard_manifest *m = &g->out;
    if (!g->parts[0].m.archives_file)
        return SHARD_OK;
    XXH3_state_t *h = XXH3_createState();
    int rc = h ? sk_fs_create_at(g->fd, g->dst, ARCHIVES_TMP, 0644, &g->archives_fd, err)
               : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (h)
        XXH3_64bits_reset(h);
    for (uint32_t i = 0; !rc && i < g->count; i++) {
        const struct part *p = &g->parts[i];
        struct shard_buf text = {0};
        if (!p->m.archives_file) {
            rc = shard_err_set(err, SHARD_EMISMATCH, "part %u of %u lists no archives", i,
                               g->count);
            break;
        }
        rc = sk_fs_read_file(p->fd, p->m.archives_file, &text, err);
        if (!rc && (text.len != p->m.archives_bytes ||
                    XXH3_64bits(text.data, text.len) != p->m.archives_xxh3))
            rc = shard_err_set(err, SHARD_EMISMATCH,
                               "part %u of %u: '%s/%s' is not the file its manifest lists", i,
                               g->count, p->path, p->m.archives_file);
        if (!rc)
            rc = sk_fs_write_all(g->archives_fd, text.data, text.len, ARCHIVES_TMP, err);
        if (!rc) {
            XXH3_64bits_update(h, text.data, text.len);
            m->archives_bytes += text.len;
            m->archives_entries += p->m.archives_entries;
        }
        shard_buf_release(&text);
    }
    m->archives_file = SHARD_ARCHIVES_FILE;
    if (h)
        m->archives_xxh3 = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return rc;
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
    g->places = calloc(shards + 2 * (size_t)g->count, sizeof *g->places);
    if (!m->shards || !m->rejects || !m->label_samples || !g->places)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    m->config = m0->config;
    m->source_kind = m0->source_kind;
    m->ignored = m0->ignored;
    m->labels = m0->labels;
    m->label_count = m0->label_count;
    /* fields: every part scanned the whole source, so orphans and the table's
     * counts are the same in each; samples and sidecars add up */
    m->version = m0->version; /* written as sk_manifest_version says */
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
        /* by archive, each part counts the folder's ignored files and its own
         * archives' ignored entries: the folder's once */
        if (i > 0 && json_object_get(p->info, "unit"))
            m->ignored += p->m.ignored - info_uint(p, "ignored");
        /* the parts' stored forms widen to the dataset's; one size only when
         * every part has it */
        if (i == 0) {
            m->channels = p->m.channels, m->depth = p->m.depth, m->mixed = p->m.mixed;
            m->stored_width = p->m.stored_width, m->stored_height = p->m.stored_height;
        } else {
            m->mixed |= p->m.mixed || p->m.channels != m->channels || p->m.depth != m->depth;
            sk_pixels_widest(m->channels, m->depth, p->m.channels, p->m.depth, &m->channels,
                             &m->depth);
            if (p->m.stored_width != m->stored_width || p->m.stored_height != m->stored_height)
                m->stored_width = m->stored_height = 0;
        }
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
    return add_indexes(g, err);
}

/* What a run of the whole would refuse to publish, the merge refuses too:
 * no sample at all (unless the parts were run with --allow-empty), or a
 * declared field that no sample of any part has. */
static int check_usable(const struct merge *g, struct shard_err *err)
{
    const struct shard_manifest *m = &g->out;
    if (m->samples) {
        for (uint32_t f = 0; f < m->config.field_count; f++)
            if (!m->field_samples[f])
                return shard_err_set(err, SHARD_EINVAL,
                                     "field '%s' is declared, and none of the %llu samples of the "
                                     "%u parts has it",
                                     m->config.fields[f].name, (unsigned long long)m->samples,
                                     g->count);
        return SHARD_OK;
    }
    if (json_is_true(json_object_get(g->parts[0].info, "allow_empty")))
        return SHARD_OK;
    if (!m->reject_count)
        return shard_err_set(err, SHARD_EINVAL,
                             "none of the %u parts holds a candidate image: an empty dataset is "
                             "not published (parts run with --allow-empty publish it)",
                             g->count);
    char q[SHARDX_QUOTE_SIZE];
    const struct shard_reject *first = &m->rejects[0]; /* sorted by key */
    return shard_err_set(err, SHARD_EINVAL,
                         "none of the %llu candidates of the %u parts is a sample: every one was "
                         "rejected (%s'%s': %s); an empty dataset is not published (parts run "
                         "with --allow-empty publish it, with the rejects)",
                         (unsigned long long)m->reject_count, g->count,
                         m->reject_count > 1 ? "the first, " : "",
                         shardx_quote(first->key, first->key_len, q, sizeof q), first->reason);
}

/* ---- publishing ------------------------------------------------------------- */

/* The staged name of file NAME: ".NAME.tmp" (names are short). */
static void staged_name(const char *name, char *tmp, size_t size)
{
    snprintf(tmp, size, ".%s.tmp", name);
}

/* A part's file into DST before anything is unpublished (pl->placed says
 * how): the file already there (a merge of the same parts again), a new
 * link under its name when that is free, or a link as .NAME.tmp when
 * another file holds the name (renamed over it by publish()).  What holds
 * the name must be a regular file, never a link or a directory. */
static int place_file(struct merge *g, struct place *pl, struct shard_err *err)
{
    const struct part *p = pl->part;
    struct stat a, b;
    char tmp[FILE_NAME_BYTES + 8];
    const char *as = pl->to;
    int rc = sk_fs_check_own_at(g->fd, g->dst, pl->to, 0, err);
    if (rc)
        return rc;
    if (fstatat(g->fd, pl->to, &b, AT_SYMLINK_NOFOLLOW) == 0) {
        if (fstatat(p->fd, pl->from, &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            pl->placed = IN_PLACE;
            return SHARD_OK;
        }
        staged_name(pl->to, tmp, sizeof tmp);
        if (unlinkat(g->fd, tmp, 0) != 0 && errno != ENOENT)
            return shard_err_errno(err, SHARD_EIO, errno, "cannot remove the stale '%s/%s'", g->dst,
                                   tmp);
        as = tmp;
    } else if (errno != ENOENT) {
        return shard_err_errno(err, SHARD_EIO, errno, "cannot inspect '%s/%s'", g->dst, pl->to);
    }
    if (linkat(p->fd, pl->from, g->fd, as, 0) != 0)
        return errno == EXDEV ? shard_err_errno(err, SHARD_EIO, errno,
                                                "cannot link '%s/%s' into '%s': the "
                                                "parts must be on DST's file system",
                                                p->path, pl->from, g->dst)
                              : shard_err_errno(err, SHARD_EIO, errno,
                                                "cannot link '%s/%s' into '%s' as "
                                                "'%s'",
                                                p->path, pl->from, g->dst, as);
    pl->placed = as == pl->to ? LINKED : STAGED;
    return SHARD_OK;
}

/* Undo place_file: for every file (a failure before publishing, which
 * leaves DST as it was), or only the staged ones (`staged_only`: a failure
 * while publishing, which leaves no .NAME.tmp behind). */
static void unplace_files(struct merge *g, int staged_only)
{
    for (size_t k = 0; g->places && k < g->place_count; k++) {
        struct place *pl = &g->places[k];
        char tmp[FILE_NAME_BYTES + 8];
        if (pl->placed == LINKED && !staged_only) {
            unlinkat(g->fd, pl->to, 0);
        } else if (pl->placed == STAGED) {
            staged_name(pl->to, tmp, sizeof tmp);
            unlinkat(g->fd, tmp, 0);
        }
        pl->placed = NOT_PLACED;
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
    if ((rc = sk_fs_check_own_at(g->fd, g->dst, SHARD_MANIFEST_FILE, 0, err)) ||
        (rc = sk_fs_check_own_at(g->fd, g->dst, SHARD_ARCHIVES_FILE, 0, err)) ||
        (rc = write_archives(g, err)) || (rc = write_manifest(g, err)))
        return rc;
    for (size_t k = 0; !rc && k < g->place_count; k++)
        rc = place_file(g, &g->places[k], err);
    if (rc)
        unplace_files(g, 0);
    return rc;
}

static int compare_files(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, ((const struct shard_manifest_shard *)pb)->file);
}

/* Whether the merged manifest lists the index file or key table `name`. */
static int index_listed(const struct merge *g, const char *name)
{
    for (uint32_t i = 0; i < g->out.index_count; i++) {
        const struct shard_manifest_index *x = &g->out.indexes[i];
        if (!strcmp(name, x->file) || (x->keys_file && !strcmp(name, x->keys_file)))
            return 1;
    }
    return 0;
}

/* Shard and index files of DST the merged manifest does not list: a
 * previous merge's. */
static int remove_unlisted(struct merge *g, struct shard_err *err)
{
    DIR *d = list_dir(g->fd);
    if (!d)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", g->dst);
    struct dirent *e;
    int removed = 0;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if ((sk_dst_is_shard_name(name, NULL) && !bsearch(&name, g->out.shards, g->out.shard_count,
                                                          sizeof *g->out.shards, compare_files)) ||
            (sk_dst_is_index_name(name) && !index_listed(g, name)) ||
            (!g->out.archives_file && !strcmp(name, SHARD_ARCHIVES_FILE)))
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
        unplace_files(g, 0); /* the previous merge is still published */
        return shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", g->dst,
                               SHARD_MANIFEST_FILE);
    }
    for (size_t k = 0; !rc && k < g->place_count; k++) {
        struct place *pl = &g->places[k];
        char tmp[FILE_NAME_BYTES + 8];
        if (pl->placed != STAGED)
            continue;
        staged_name(pl->to, tmp, sizeof tmp);
        if (renameat(g->fd, tmp, g->fd, pl->to) != 0)
            rc = shard_err_errno(&e, SHARD_EIO, errno, "cannot rename '%s/%s' to '%s'", g->dst, tmp,
                                 pl->to);
        else
            pl->placed = LINKED;
    }
    if (g->archives_fd >= 0) {
        rc = sk_fs_commit_at(g->archives_fd, rc, g->fd, g->dst, ARCHIVES_TMP, SHARD_ARCHIVES_FILE,
                             &e);
        g->archives_fd = -1;
    }
    /* the manifest's rename fsyncs DST, and so the links made before it */
    rc = sk_fs_commit_at(g->manifest_fd, rc, g->fd, g->dst, MANIFEST_TMP, SHARD_MANIFEST_FILE, &e);
    g->manifest_fd = -1;
    if (rc) {
        unplace_files(g, 1);
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
    free(g->places);
    free(g->out.indexes);
    if (g->archives_fd >= 0) { /* not committed: a failure before publishing */
        close(g->archives_fd);
        unlinkat(g->fd, ARCHIVES_TMP, 0);
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
    struct merge g = {.dst = dst, .fd = -1, .parts_fd = -1, .manifest_fd = -1, .archives_fd = -1};
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
    if (rc || (rc = gather(&g, err)) || (rc = check_usable(&g, err)) || (rc = prepare(&g, err)) ||
        (rc = publish(&g, err)))
        goto out;
    summary->parts = g.count;
    summary->samples = g.out.samples;
    summary->rejected = g.out.rejected;
    summary->shards = g.out.shard_count;
    summary->channels = g.out.channels, summary->depth = g.out.depth, summary->mixed = g.out.mixed;
    for (uint32_t k = 0; k < g.out.shard_count; k++)
        summary->bytes += g.out.shards[k].bytes;
    summary->seconds = sk_now_seconds() - t0;
    write_run_info(&g, summary->seconds);
out:
    merge_release(&g);
    return rc;
}
