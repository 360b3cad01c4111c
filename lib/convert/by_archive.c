/* by_archive.c - a directory of archives stored by archive (config.order
 * "archive"; manifests/FORMAT.md, "Sample order").
 *
 * The archives are taken in the order of their names; each is read once
 * (sk_run_spool_one: its images converted into the spool as they stream
 * past, its sidecar files kept), its candidates sorted and shuffled with a
 * seed of its own, and written to the shards before the next archive is
 * opened.  So what a run holds per sample is one archive's, never the
 * folder's, a part (--part I/N) reads only its own archives (whole ones,
 * balanced by bytes), and a sample's place in the stored order depends on
 * its archive alone, not on how the folder was split.
 *
 * Class labels are numbered before any record is written (a record holds
 * its label's number): when the labels come from names (folders, a CSV, a
 * sidecar or a column: anything but --labels none), a first pass reads the
 * run's archives for their names only, decoding nothing.  A part cannot
 * read the other parts' archives, so it cannot number classes named there:
 * it takes --labels none.
 *
 * Each archive's line (name, size, xxh3, candidates, samples, rejects) is
 * appended to ARCHIVES_WORK in the work directory as the archive is done;
 * publishing moves it to DST/archives.jsonl. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "convert/run.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/jsonkey.h"

/* The archive's seed: the run's, mixed with its name (FORMAT.md). */
static uint64_t archive_seed(const struct run *r, const char *name)
{
    return r->config.shuffle_seed ^ XXH3_64bits(name, strlen(name));
}

/* Whether the class labels come from names (anything but --labels none
 * without `labels` fields): then a labels' pass numbers them first. */
static int labels_from_names(const struct run *r)
{
    int none = r->o->labels && !strcmp(r->o->labels, "none");
    return !none || sk_field_sources_has_names(r->fields);
}

/* The run's archives: all of them, or the part's share, split at archive
 * boundaries by bytes as a directory's parts are split by files
 * (sk_part_bounds): r->archive_first, r->archive_end, and for a part
 * r->part_bounds (in archives) and its shard numbers. */
static int choose_archives(struct run *r, struct shard_err *err)
{
    r->archive_first = 0;
    r->archive_end = r->archive_count;
    if (r->o->parts == 0)
        return SHARD_OK;
    uint32_t parts = r->o->parts;
    uint64_t *weights = malloc((r->archive_count ? r->archive_count : 1) * sizeof *weights);
    r->part_bounds = calloc(parts + 1, sizeof *r->part_bounds);
    if (!weights || !r->part_bounds) {
        free(weights);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    int fd = open(r->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: SRC as named */
    for (size_t k = 0; k < r->archive_count; k++) {
        weights[k] = 1;
        uint64_t size = sk_run_archive_size(r, k, fd);
        if (size != UINT64_MAX)
            weights[k] += size;
    }
    if (fd >= 0)
        close(fd);
    sk_part_bounds(weights, r->archive_count, parts, r->part_bounds);
    free(weights);
    r->archive_first = r->part_bounds[r->o->part];
    r->archive_end = r->part_bounds[r->o->part + 1];
    r->shard_base = r->o->part * (SK_SHARD_NAMES / parts);
    return SHARD_OK;
}

/* Whether the state recorded in the work directory is `text`. */
static int same_state(const struct run *r, const char *text)
{
    struct shard_buf old = {0};
    struct shard_err e;
    int same = sk_fs_read_file(r->dst->work_fd, DST_STATE_FILE, &old, &e) == SHARD_OK &&
               old.len == strlen(text) && !memcmp(old.data, text, old.len);
    shard_buf_release(&old);
    return same;
}

/* The state a resumed run must match: the options, and the listing of the
 * folder (every archive's name and size).  A resumed run by archive
 * converts again what the interrupted one did (its shards are rewritten
 * with the same bytes); one with other options or another listing is
 * refused as a directory's is. */
static int check_state(struct run *r, struct shard_err *err)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(h);
    int fd = open(r->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: SRC as named */
    for (size_t k = 0; k < r->archive_count; k++) {
        uint64_t size = sk_run_archive_size(r, k, fd);
        XXH3_64bits_update(h, r->archive_names[k], strlen(r->archive_names[k]) + 1);
        XXH3_64bits_update(h, &size, sizeof size);
    }
    if (fd >= 0)
        close(fd);
    uint64_t listing = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    char *text;
    int rc = sk_run_state_text(r, "archives", r->archive_count, "listing_xxh3", listing, &text,
                               err);
    if (rc)
        return rc;
    if (r->o->mode == SHARDIFY_RESUME && r->dst->has_state && !same_state(r, text))
        rc = shard_err_set(err, SHARD_EEXIST,
                           "cannot resume '%s': the options or the source listing differ "
                           "from the interrupted run; pass --overwrite to start again",
                           r->dst->path);
    else
        rc = sk_fs_write_atomic_at(r->dst->work_fd, r->dst->work, DST_STATE_FILE, text,
                                   strlen(text), err);
    free(text);
    return rc;
}

/* Archive k (at path) spooled, its sidecars matched and its names read ahead. */
static int read_archive_at(struct run *r, size_t k, const char *path, struct shard_err *err)
{
    int rc = sk_run_spool_one(r, path, r->archive_names[k], err);
    r->n = r->keys.count;
    if (!rc)
        rc = sk_field_sources_resolve(r->fields, r->src, &r->keys, &r->refused, err);
    if (!rc && sk_field_sources_has_names(r->fields))
        rc = sk_field_sources_read_names(r->fields, &r->keys, &r->refused, sk_run_read_sidecar, r,
                                         err);
    return rc;
}

static int read_archive(struct run *r, size_t k, struct shard_err *err)
{
    char *path;
    int rc = sk_run_archive_path(r, k, &path, err);
    if (!rc)
        rc = read_archive_at(r, k, path, err);
    sk_run_archive_done(r, path);
    return rc;
}

/* What one archive leaves behind, once done: the next one starts afresh. */
static int next_archive(struct run *r, struct shard_keylist *orphans, struct shard_err *err)
{
    int rc = sk_field_sources_next_archive(r->fields, orphans, err);
    sk_run_spool_reset(r);
    return rc;
}

/* The labels' pass: the names of every class and label in the run's
 * archives, then numbered.  Nothing is converted; the counts the real pass
 * makes are left as they were. */
static int collect_labels(struct run *r, struct shard_err *err)
{
    if (r->classes) /* --classes: numbered by the list, no pass needed (a part too) */
        return sk_run_labels_number(r, err);
    if (!labels_from_names(r))
        return SHARD_OK;
    if (r->o->parts > 0)
        return shard_err_set(err, SHARD_EINVAL,
                             "part %u of %u reads only its own archives, so it cannot number the "
                             "classes named in the others: convert a folder of archives in parts "
                             "with --labels none, or in one run",
                             r->o->part, r->o->parts);
    struct shard_scan_stats stats = r->stats;
    uint64_t bytes_in = r->bytes_in;
    int rc = SHARD_OK;
    r->names_only = 1;
    r->phase = "labels";
    for (size_t k = r->archive_first; !rc && k < r->archive_end; k++) {
        if (!(rc = read_archive(r, k, err)))
            rc = sk_run_labels_collect(r, err);
        int rc2 = next_archive(r, NULL, err);
        rc = rc ? rc : rc2;
    }
    r->names_only = 0;
    r->stats = stats;
    r->bytes_in = bytes_in;
    return rc ? rc : sk_run_labels_number(r, err);
}

int sk_run_note_archive(struct run *r, size_t k, const struct sk_archive_line *a,
                        struct shard_err *err)
{
    json_t *o = json_object();
    const char *name = r->archive_names[k];
    int bad = !o || sk_jsonkey_set_named(o, "name", name, strlen(name), err);
    bad = bad || sk_jsonkey_set_uint(o, "bytes", a->bytes);
    bad = bad || sk_jsonkey_set_hex64(o, "xxh3", a->xxh3);
    bad = bad || sk_jsonkey_set_uint(o, "candidates", a->candidates);
    bad = bad || sk_jsonkey_set_uint(o, "samples", a->samples);
    bad = bad || sk_jsonkey_set_uint(o, "rejected", a->rejected);
    bad = bad || sk_jsonkey_set_uint(o, "ignored", a->ignored);
    char *line = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!line)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t len = strlen(line);
    line[len] = '\n'; /* over its NUL: json_dumps's buffer has it */
    int rc = sk_fs_write_all(r->archives_fd, line, len + 1, SK_ARCHIVES_WORK, err);
    free(line);
    r->archives_lines++;
    return rc;
}

static uint64_t ignored_of(const struct shard_scan_stats *st)
{
    return st->ignored + st->ignored_symlinks + st->ignored_special;
}

/* One archive: read (its identity hashed first), labeled, ordered,
 * converted, listed; or, in an incremental run, taken whole from the
 * previous dataset when it has the archive unchanged. */
static int convert_archive(struct run *r, size_t k, struct shard_err *err)
{
    char *path;
    struct sk_archive_line a = {0};
    int rc = sk_run_archive_path(r, k, &path, err);
    if (!rc && (rc = sk_fs_hash_file(path, &a.bytes, &a.xxh3, err)))
        shard_err_prefix(err, rc, "cannot read archive '%s/%s'", r->src, r->archive_names[k]);
    if (!rc && r->prev_archives && (rc = sk_prev_archives_take(r, k, &a, err))) {
        sk_run_archive_done(r, path);
        return rc < 0 ? rc : SHARD_OK; /* 1: reused whole */
    }
    uint64_t samples = sk_assembler_samples(r->as), rejected = sk_assembler_reject_count(r->as);
    uint64_t ignored = ignored_of(&r->stats);
    r->phase = "convert";
    if (!rc)
        rc = read_archive_at(r, k, path, err);
    sk_run_archive_done(r, path);
    if (rc || (rc = sk_run_labels_apply(r, err)) ||
        (rc = sk_run_order_archive(r, archive_seed(r, r->archive_names[k]), err)))
        return rc;
    r->start_pos = 0;
    r->end_pos = r->n;
    if ((rc = sk_run_convert_range(r, err)))
        return rc;
    a.candidates = r->n;
    a.samples = sk_assembler_samples(r->as) - samples;
    a.rejected = sk_assembler_reject_count(r->as) - rejected;
    a.ignored = ignored_of(&r->stats) - ignored;
    rc = sk_run_note_archive(r, k, &a, err);
    r->pos_base += r->n;
    r->candidates_total += r->n;
    r->stats.candidates = r->candidates_total;
    int rc2 = next_archive(r, &r->orphans, err);
    return rc ? rc : rc2;
}

int sk_run_by_archive(struct run *r, struct shard_err *err)
{
    int rc;
    r->by_archive = 1;
    if ((rc = choose_archives(r, err)) || (rc = check_state(r, err)) ||
        (rc = collect_labels(r, err)) ||
        (rc = sk_assembler_new(&r->as, r->dst, &r->config, r->label_count, err)))
        return rc;
    if (r->o->parts > 0)
        sk_assembler_start_at(r->as, r->shard_base, SK_SHARD_NAMES / r->o->parts, 0);
    if ((rc = sk_fs_create_at(r->dst->work_fd, r->dst->work, SK_ARCHIVES_WORK, 0600,
                              &r->archives_fd, err)))
        return rc;
    double t = sk_now_seconds();
    r->timing.scan = t - r->t0;
    r->folder_ignored = ignored_of(&r->stats);
    for (size_t k = r->archive_first; !rc && k < r->archive_end; k++)
        rc = convert_archive(r, k, err);
    if (!rc && r->prev_archives)
        rc = sk_prev_archives_finish(r, err);
    r->n = r->candidates_total;
    r->end_pos = r->pos_base;
    if (!rc) {
        double t0 = sk_now_seconds();
        rc = sk_assembler_finish(r->as, err);
        r->timing.write += sk_now_seconds() - t0;
    }
    r->timing.convert = sk_now_seconds() - t;
    sk_run_progress(r, 1);
    return rc;
}
