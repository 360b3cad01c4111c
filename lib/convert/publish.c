/* publish.c - the end of a run: index.jsonl from the journals, then
 * manifest.json (published last), run.json, and removal of the work dir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <time.h>
#include <xxhash.h>

#include "util/clock.h"
#include "util/fsutil.h"
#include "convert/journal.h"
#include "convert/run.h"
#include "manifest/keys.h"
#include "manifest/manifest_internal.h"
#include "shardkit/format.h"
#include "source/source_internal.h"

#define INDEX_TMP "." SHARD_INDEX_FILE ".tmp"

int sk_run_compare_rejects(const void *pa, const void *pb)
{
    const struct shard_reject *a = pa, *b = pb;
    int c = sk_key_compare(a->key, a->key_len, b->key, b->key_len);
    return c ? c : strcmp(a->reason, b->reason);
}

static int compare_orphans(const void *pa, const void *pb)
{
    const struct shard_orphan *a = pa, *b = pb;
    return sk_key_compare(a->key, a->key_len, b->key, b->key_len);
}

/* index.jsonl from the journals, and its key table index.keys: the
 * manifest's index entry in *x (x->file and x->keys_file borrowed). */
static int write_index(struct run *r, struct shard_manifest_index *x, struct shard_err *err)
{
    const struct dst *d = r->dst;
    XXH3_state_t *h = XXH3_createState();
    struct sk_keys_builder *keys = NULL;
    int rc, fd;
    memset(x, 0, sizeof *x);
    if (!h)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(h);
    if ((rc = sk_keys_builder_new(&keys, d->work_fd, d->work, "keys-run", err)) ||
        (rc = sk_fs_create_at(d->fd, d->path, INDEX_TMP, 0644, &fd, err)))
        goto out;
    uint32_t count;
    sk_assembler_shards(r->as, &count);
    for (uint32_t k = 0; !rc && k < count; k++) {
        char jname[64];
        sk_journal_name(r->shard_base + k, jname, sizeof jname);
        rc = sk_journal_copy_samples(d->work_fd, d->work, jname, fd, h, keys, &x->bytes,
                                     &x->entries, err);
    }
    rc = sk_fs_commit_at(fd, rc, d->fd, d->path, INDEX_TMP, SHARD_INDEX_FILE, err);
    if (!rc)
        rc = sk_dst_publish(r->dst, SHARD_INDEX_FILE, err);
    x->file = SHARD_INDEX_FILE;
    x->xxh3 = XXH3_64bits_digest(h);
    x->shards = count;
    if (!rc)
        rc = sk_keys_builder_write(keys, d->fd, d->path, SHARD_INDEX_KEYS_FILE, &x->keys_bytes,
                                   &x->keys_xxh3, err);
    if (!rc)
        rc = sk_dst_publish(r->dst, SHARD_INDEX_KEYS_FILE, err);
    x->keys_file = SHARD_INDEX_KEYS_FILE;
out:
    sk_keys_builder_free(keys);
    XXH3_freeState(h);
    return rc;
}

/* By archive: the archives' list, written as each was done, into DST as
 * archives.jsonl (the manifest's source.archives in *m). */
static int write_archives(struct run *r, struct shard_manifest *m, struct shard_err *err)
{
    const struct dst *d = r->dst;
    int rc = SHARD_OK;
    if (lseek(r->archives_fd, 0, SEEK_SET) != 0 || fsync(r->archives_fd) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot write '%s/%s'", d->work,
                             SK_ARCHIVES_WORK);
    if (!rc)
        rc = sk_fs_hash_fd(r->archives_fd, SK_ARCHIVES_WORK, &m->archives_bytes, &m->archives_xxh3,
                           err);
    if (!rc)
        rc = sk_fs_rename_at(d->work_fd, d->work, SK_ARCHIVES_WORK, d->fd, d->path,
                             SHARD_ARCHIVES_FILE, err);
    if (!rc)
        rc = sk_dst_publish(r->dst, SHARD_ARCHIVES_FILE, err);
    m->archives_file = SHARD_ARCHIVES_FILE;
    m->archives_entries = r->archives_lines;
    return rc;
}

/* The orphans the manifest lists: the field sources' (SRC's sidecars, then
 * each mask folder's), or by archive those of every archive done; borrowed
 * keys, sorted by key in a malloc'd array. */
static struct shard_orphan *list_orphans(struct run *r, uint64_t *count)
{
    *count = r->by_archive ? r->orphans.count : sk_field_sources_orphan_count(r->fields);
    struct shard_orphan *orphans = calloc(*count ? *count : 1, sizeof *orphans);
    for (uint64_t i = 0; orphans && i < *count; i++)
        orphans[i].key = r->by_archive
                             ? (char *)shard_keylist_get(&r->orphans, i, &orphans[i].key_len)
                             : (char *)sk_field_sources_orphan(r->fields, i, &orphans[i].key_len);
    if (orphans && *count) /* SRC's, then each mask folder's: in key order */
        qsort(orphans, *count, sizeof *orphans, compare_orphans);
    return orphans;
}

/* Informative only: a failure here does not fail the run, it is reported
 * in s->run_record_error. */
static void write_run_info(struct run *r, struct shardify_summary *s)
{
    json_t *o = json_object();
    char *text;
    if (!o) {
        snprintf(s->run_record_error, sizeof s->run_record_error, "out of memory");
        return;
    }
    time_t t = time(NULL);
    struct tm tm;
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    json_object_set_new(o, "finished", json_string(when));
    json_object_set_new(o, "seconds", json_real(s->seconds));
    json_object_set_new(o, "threads", json_integer(s->threads));
    json_object_set_new(o, "samples_per_second",
                        json_real(s->seconds > 0 ? (double)(s->samples + s->rejected) / s->seconds
                                                 : 0));
    json_object_set_new(o, "reused_shards", json_integer(s->reused_shards));
    json_object_set_new(o, "bytes_in", json_integer((json_int_t)s->bytes_in));
    json_object_set_new(o, "bytes_out", json_integer((json_int_t)s->bytes_out));
    json_object_set_new(o, "timing",
                        json_pack("{sfsfsfsfsfsfsfsf}", "scan", s->timing.scan, "convert",
                                  s->timing.convert, "publish", s->timing.publish, "write",
                                  s->timing.write, "read", s->timing.read, "hash", s->timing.hash,
                                  "decode", s->timing.decode, "copy", s->timing.copy));
    text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct shard_err e;
    if (!text)
        snprintf(s->run_record_error, sizeof s->run_record_error, "out of memory");
    else if (sk_fs_write_atomic_at(r->dst->fd, r->dst->path, SHARDIFY_RUN_FILE, text, strlen(text),
                                   &e) ||
             sk_dst_publish(r->dst, SHARDIFY_RUN_FILE, &e))
        snprintf(s->run_record_error, sizeof s->run_record_error, "%s", e.msg);
    free(text);
}

int sk_run_publish(struct run *r, struct shardify_summary *sum, struct shard_err *err)
{
    r->phase = "publish";
    double t0 = sk_now_seconds();
    struct shard_manifest m;
    struct shard_manifest_index index;
    memset(&m, 0, sizeof m);
    int rc = write_index(r, &index, err);
    if (rc)
        return rc;
    m.index_bytes = index.bytes;
    m.index_xxh3 = index.xxh3;
    m.index_entries = index.entries;
    m.indexes = &index; /* borrowed, as the rest: never released here */
    m.index_count = 1;
    sk_run_summarize(r, sum);
    m.config = r->config; /* borrowed: not released below */
    m.source_kind = SK_RUN_SOURCE_KIND(r);
    m.samples = sk_assembler_samples(r->as);
    m.unlabeled = sk_assembler_unlabeled(r->as);
    m.ignored = sum->ignored;
    m.labels = r->label_names;
    m.label_samples = (uint64_t *)sk_assembler_label_samples(r->as);
    m.label_count = r->label_count;
    m.shards = (struct shard_manifest_shard *)sk_assembler_shards(r->as, &m.shard_count);
    m.rejects = sk_assembler_take_rejects(r->as, &m.reject_count);
    m.rejected = m.reject_count;
    m.warned = sum->warned;
    const struct sk_stored_images *st = sk_assembler_stored(r->as);
    m.channels = sum->channels, m.depth = sum->depth, m.mixed = sum->mixed;
    if (m.samples && !st->sizes_differ)
        m.stored_width = st->width, m.stored_height = st->height;
    sum->warnings = sk_assembler_take_warned(r->as, &sum->warning_count);
    m.index_file = SHARD_INDEX_FILE;
    m.lineage = r->has_lineage ? &r->lineage : NULL;
    struct shard_orphan *orphans = NULL;
    if (r->config.field_count) { /* version 2 */
        m.field_samples = (uint64_t *)sk_assembler_field_samples(r->as);
        m.sidecars = sk_assembler_sidecars(r->as);
        m.annotation_rows = sk_field_sources_table_rows(r->fields);
        m.annotation_rows_unmatched = r->annotation_rows_unmatched;
        m.coco_images = sk_field_sources_coco_images(r->fields);
        m.coco_images_unmatched = r->coco_images_unmatched;
        m.coco_annotations = sk_field_sources_coco_annotations(r->fields);
        m.coco_annotations_unmatched = r->coco_annotations_unmatched;
        m.boxes = r->boxes;
        m.boxes_dropped = r->boxes_dropped;
        if (!(orphans = list_orphans(r, &m.orphan_count)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        m.orphans = orphans;
    }
    if (m.reject_count) /* qsort's base must not be NULL, even for 0 items */
        qsort(m.rejects, m.reject_count, sizeof *m.rejects, sk_run_compare_rejects);
    if (!rc && m.index_entries != m.samples)
        rc = shard_err_set(err, SHARD_ECORRUPT, "index lists %llu samples, shards hold %llu",
                           (unsigned long long)m.index_entries, (unsigned long long)m.samples);
    if (!rc && r->by_archive)
        rc = write_archives(r, &m, err);
    if (!rc && r->o->parts > 0)
        rc = sk_run_part_write(r, err);
    if (!rc)
        rc = sk_manifest_write_at(r->dst->fd, r->dst->path, &m, err);
    if (!rc) /* the commit point of an s3:// DST: every other file is there */
        rc = sk_dst_publish(r->dst, SHARD_MANIFEST_FILE, err);

    free(orphans);
    sum->rejects = m.rejects;
    sum->reject_count = m.reject_count;
    sum->seconds = sk_now_seconds() - r->t0;
    if (rc)
        return rc;
    sum->timing.publish = sk_now_seconds() - t0; /* the run record's write aside */
    write_run_info(r, sum);
    sk_run_progress(r, 1);
    return sk_dst_cleanup_work(r->dst, err);
}
