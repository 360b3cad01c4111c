/* parts.c - one part of a conversion in parts (shardify --part I/N).
 *
 * Every part lists the whole SRC and computes the whole sample order (the
 * same for all parts: the listing, the labels and the shuffle do not depend
 * on the part), then converts the contiguous range [bounds[I], bounds[I+1])
 * of it.  The bounds split the sum of the candidates' weights (source size
 * plus one byte, so that empty files count too) at multiples of 1/N: a file
 * goes to the part where its middle falls (see sk_part_bounds).  Every part computes every bound
 * and records them in its part file, so the merge can tell that the parts tiled the same order.
 *
 * Part I numbers its shards from I * (SK_SHARD_NAMES / N): the number is in the
 * shard's header and in its file name, which must agree, so shards that keep
 * their bytes through the merge need numbers no other part uses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "convert/run.h"
#include "net/s3.h"
#include "util/fsutil.h"
#include "util/jsonkey.h"

#define PART_DIR_BYTES 64

static int is_part(const struct shardify_options *o)
{
    return o->parts > 0;
}

/* DST (its first `len` bytes) of part I of N, before anything is created:
 * DST/parts and DST/parts/I-of-N are shardify's own, never links (a part run
 * writes nothing outside DST), and a dataset published in DST, which the
 * merge of the parts will replace, needs --overwrite as a plain run does
 * (or --resume of a part started so).  An s3:// DST is merged elsewhere:
 * nothing there is replaced. */
static int check_part_dst(const struct run *r, const char *dst, size_t len, const char *part,
                          struct shard_err *err)
{
    if (sk_s3_is_location(dst))
        return SHARD_OK;
    char *top = strndup(dst, len), *parts = top ? sk_fs_join(top, SHARDIFY_PARTS_DIR) : NULL;
    int fd = -1, parts_fd = -1, rc = SHARD_OK;
    struct stat st;
    if (!parts) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if ((fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) /* nofollow: the DST named */
        goto out; /* no DST yet (or no directory: opening it says so) */
    rc = sk_fs_open_dir_at(fd, top, SHARDIFY_PARTS_DIR, &parts_fd, err);
    if (rc == SHARD_ENOTFOUND)
        rc = SHARD_OK;
    else if (!rc)
        rc = sk_fs_check_own_at(parts_fd, parts, part, 1, err);
    if (rc || fstatat(fd, SHARD_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) != 0)
        goto out;
    char work[PART_DIR_BYTES + sizeof SHARDIFY_WORK_DIR];
    snprintf(work, sizeof work, "%s/%s", part, SHARDIFY_WORK_DIR);
    int interrupted = parts_fd >= 0 && fstatat(parts_fd, work, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                      S_ISDIR(st.st_mode);
    if (r->o->mode == SHARDIFY_FRESH || (r->o->mode == SHARDIFY_RESUME && !interrupted))
        rc = shard_err_set(err, SHARD_EEXIST,
                           "destination '%s' holds a published dataset, "
                           "which the merge of the parts will replace; pass --overwrite to "
                           "convert part %u of %u into it (the dataset stays published until "
                           "'shardify merge')",
                           top, r->o->part, r->o->parts);
out:
    if (parts_fd >= 0)
        close(parts_fd);
    if (fd >= 0)
        close(fd);
    free(parts);
    free(top);
    return rc;
}

int sk_run_part_dst(struct run *r, const char *dst, struct shard_err *err)
{
    const struct shardify_options *o = r->o;
    if (!is_part(o)) {
        r->dst_path = strdup(dst);
        return r->dst_path ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (o->parts > SHARDIFY_MAX_PARTS || o->part >= o->parts)
        return shard_err_set(err, SHARD_EINVAL,
                             "part %u of %u: parts are numbered 0..N-1, "
                             "N at most %u",
                             o->part, o->parts, SHARDIFY_MAX_PARTS);
    if (r->archive && r->config.order != SHARD_ORDER_ARCHIVE)
        return shard_err_set(err, SHARD_EINVAL,
                             "%s cannot be converted in parts: it is read in one pass; "
                             "%s",
                             r->archive_count ? "a folder of archives in one stored order"
                                              : "an archive SRC",
                             r->archive_count ? "leave out --order global (parts split the "
                                                "folder by archive)"
                                              : "extract it, or convert it whole");
    size_t len = strlen(dst);
    while (len > 1 && dst[len - 1] == '/')
        len--;
    char part[PART_DIR_BYTES];
    snprintf(part, sizeof part, "%u-of-%u", o->part, o->parts);
    int rc = check_part_dst(r, dst, len, part, err);
    if (rc)
        return rc;
    size_t cap = len + PART_DIR_BYTES;
    if (!(r->dst_path = malloc(cap)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(r->dst_path, cap, "%.*s/%s/%s", (int)len, dst, SHARDIFY_PARTS_DIR, part);
    return SHARD_OK;
}

/* Candidate `cand`'s share of the work: its size and one byte.  An S3
 * prefix is listed without sizes: there every file weighs the same. */
static uint64_t weight(const struct run *r, uint64_t cand)
{
    struct stat st;
    const char *key = shard_keylist_get(&r->keys, cand, NULL);
    if (r->root.fd >= 0 && fstatat(r->root.fd, key, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        return (uint64_t)st.st_size + 1;
    return 1;
}

void sk_part_bounds(const uint64_t *weights, uint64_t n, uint32_t parts, uint64_t *bounds)
{
    unsigned __int128 total = 0, before = 0; /* parts times a sum of sizes fits */
    for (uint64_t pos = 0; pos < n; pos++)
        total += weights[pos];
    uint32_t next = 1;
    bounds[0] = 0;
    for (uint64_t pos = 0; pos < n; pos++) {
        /* the parts before `next` end at this file unless its midpoint,
         * before + w/2, is below next/parts of the total */
        while (next < parts && (2 * before + weights[pos]) * parts >= 2 * total * next)
            bounds[next++] = pos;
        before += weights[pos];
    }
    while (next <= parts)
        bounds[next++] = n;
}

int sk_run_part_setup(struct run *r, struct shard_err *err)
{
    const struct shardify_options *o = r->o;
    r->end_pos = r->n;
    if (!is_part(o))
        return SHARD_OK;
    uint32_t parts = o->parts;
    uint64_t *weights = malloc((r->n ? r->n : 1) * sizeof *weights);
    r->part_bounds = calloc(parts + 1, sizeof *r->part_bounds);
    if (!weights || !r->part_bounds) {
        free(weights);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (uint64_t pos = 0; pos < r->n; pos++)
        weights[pos] = weight(r, r->order[pos]);
    sk_part_bounds(weights, r->n, parts, r->part_bounds);
    free(weights);
    r->start_pos = r->part_bounds[o->part];
    r->end_pos = r->part_bounds[o->part + 1];
    r->done = r->start_pos; /* positions done, as after adopting (resume.c) */
    r->shard_base = o->part * (SK_SHARD_NAMES / parts);
    sk_assembler_start_at(r->as, r->shard_base, SK_SHARD_NAMES / parts, r->start_pos);
    return SHARD_OK;
}

void sk_run_part_state(const struct run *r, char *out, size_t size)
{
    if (is_part(r->o))
        snprintf(out, size, ",\"part\":\"%u/%u\"", r->o->part, r->o->parts);
    else if (size)
        out[0] = '\0';
}

/* What the merge checks the parts agree on, and where this one fits. */
static json_t *part_json(const struct run *r, const char *state)
{
    json_t *o = json_object(), *bounds = json_array();
    json_error_t jerr;
    json_t *st = json_loads(state, 0, &jerr);
    int bad = !o || !bounds || !st;
    bad = bad || json_object_set_new(o, "format", json_string("shardkit-part"));
    bad = bad || json_object_set_new(o, "shardkit", json_string(shard_version()));
    bad = bad || sk_jsonkey_set_uint(o, "manifest_version", SHARD_MANIFEST_VERSION);
    bad = bad || sk_jsonkey_set_uint(o, "part", r->o->part);
    bad = bad || sk_jsonkey_set_uint(o, "parts", r->o->parts);
    /* by archive, the split is in archives, and the candidates are the part's own */
    if (r->by_archive)
        bad = bad || json_object_set_new(o, "unit", json_string("archives")) ||
              sk_jsonkey_set_uint(o, "candidates", r->candidates_total);
    /* the merge publishes no sample only if every part was asked to */
    bad = bad || json_object_set_new(o, "allow_empty", json_boolean(r->o->allow_empty));
    bad = bad || sk_jsonkey_set_uint(o, "first", r->part_bounds[r->o->part]);
    bad = bad || sk_jsonkey_set_uint(o, "end", r->part_bounds[r->o->part + 1]);
    bad = bad || sk_jsonkey_set_uint(o, "shard_base", r->shard_base);
    for (uint32_t i = 0; !bad && i <= r->o->parts; i++)
        bad = json_array_append_new(bounds, json_integer((json_int_t)r->part_bounds[i]));
    bad = bad || json_object_set(o, "bounds", bounds);
    /* the resume state: options, source kind, candidates, the order's hash */
    bad = bad || json_object_del(st, "part") || json_object_set(o, "listing", st);
    /* what the listing ignored (by archive: the folder's files, not the part's
     * own archives' entries, which its manifest counts) */
    bad = bad || sk_jsonkey_set_uint(o, "ignored",
                                     r->by_archive ? r->folder_ignored
                                                   : r->stats.ignored + r->stats.ignored_symlinks +
                                                         r->stats.ignored_special);
    json_decref(bounds);
    json_decref(st);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sk_run_part_write(struct run *r, struct shard_err *err)
{
    const struct dst *d = r->dst;
    char *state = NULL, *text = NULL;
    json_t *o = NULL;
    int fd = -1;
    uint64_t size = 0;
    int rc = sk_fs_open_read(d->work_fd, DST_STATE_FILE, &fd, &size, err);
    if (!rc && !(state = malloc(size + 1)))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!rc)
        rc = sk_fs_pread_all(fd, size, 0, state, size, err);
    if (fd >= 0)
        close(fd);
    if (rc)
        goto out;
    state[size] = '\0';
    if (!(o = part_json(r, state)) ||
        !(text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    size_t len = strlen(text);
    text[len++] = '\n'; /* json_dumps leaves room for its NUL: overwrite it */
    if (!(rc = sk_fs_write_atomic_at(d->fd, d->path, SHARDIFY_PART_FILE, text, len, err)))
        rc = sk_dst_publish(r->dst, SHARDIFY_PART_FILE, err);
out:
    free(state);
    free(text);
    json_decref(o);
    return rc;
}
