/* journal.c - per-shard journals for resume (see journal.h). */
#include "convert/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "manifest/keys.h"
#include "shardkit/format.h"

#define FLUSH_BYTES (256u * 1024)

struct journal_writer {
    int fd;
    int dirfd;  /* borrowed */
    char *name; /* in dirfd */
    char *path; /* for messages */
    int finished;
    struct shard_buf buf;
};

void sk_journal_name(uint32_t shard, char *out, size_t size)
{
    snprintf(out, size, "journal-%06u.jsonl", shard);
}

int sk_journal_writer_open(struct journal_writer **out, int dirfd, const char *dir,
                           const char *name, struct shard_err *err)
{
    *out = NULL;
    struct journal_writer *j = calloc(1, sizeof *j);
    if (!j || !(j->name = strdup(name)) || !(j->path = sk_fs_join(dir, name))) {
        if (j)
            free(j->name);
        free(j);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    j->dirfd = dirfd;
    int rc = sk_fs_create_at(dirfd, dir, name, 0644, &j->fd, err);
    if (rc) {
        free(j->name);
        free(j->path);
        free(j);
        return rc;
    }
    *out = j;
    return SHARD_OK;
}

static int flush(struct journal_writer *j, struct shard_err *err)
{
    int rc = sk_fs_write_all(j->fd, j->buf.data, j->buf.len, j->path, err);
    j->buf.len = 0;
    return rc;
}

static int tagged(struct journal_writer *j, char tag, struct shard_err *err)
{
    if (j->buf.len >= FLUSH_BYTES) {
        int rc = flush(j, err);
        if (rc)
            return rc;
    }
    return shard_buf_append(&j->buf, &tag, 1, err);
}

int sk_journal_writer_sample(struct journal_writer *j, const struct shard_sample *s,
                             const struct shard_config *c, struct shard_err *err)
{
    int rc = tagged(j, JOURNAL_TAG_SAMPLE, err);
    return rc ? rc : shard_sample_line_fields(s, c, &j->buf, err);
}

int sk_journal_writer_reject(struct journal_writer *j, const struct shard_reject *r,
                             struct shard_err *err)
{
    int rc = tagged(j, JOURNAL_TAG_REJECT, err);
    return rc ? rc : shard_reject_line(r, &j->buf, err);
}

int sk_journal_writer_finish(struct journal_writer *j, const struct journal_end *e,
                             struct shard_err *err)
{
    char file[64];
    shard_file_name(e->shard, file, sizeof file);
    json_t *o = json_object();
    int bad = !o;
    bad = bad || sk_jsonkey_set_uint(o, "shard", e->shard);
    bad = bad || json_object_set_new(o, "file", json_string(file));
    bad = bad || sk_jsonkey_set_uint(o, "samples", e->samples);
    bad = bad || sk_jsonkey_set_uint(o, "bytes", e->bytes);
    bad = bad || sk_jsonkey_set_hex64(o, "xxh3", e->xxh3);
    bad = bad || sk_jsonkey_set_uint(o, "plan_start", e->pos_start);
    bad = bad || sk_jsonkey_set_uint(o, "plan_end", e->pos_end);
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = tagged(j, JOURNAL_TAG_END, err);
    if (!rc)
        rc = shard_buf_append(&j->buf, text, strlen(text), err);
    free(text);
    if (!rc)
        rc = shard_buf_append(&j->buf, "\n", 1, err);
    if (!rc)
        rc = flush(j, err);
    if (!rc && fsync(j->fd) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot fsync '%s'", j->path);
    if (close(j->fd) != 0 && !rc)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot close '%s'", j->path);
    j->fd = -1;
    if (!rc)
        j->finished = 1;
    return rc;
}

void sk_journal_writer_free(struct journal_writer *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    if (!j->finished)
        unlinkat(j->dirfd, j->name, 0);
    free(j->name);
    free(j->path);
    shard_buf_release(&j->buf);
    free(j);
}

static int parse_end(const char *text, size_t len, struct journal_end *e, struct shard_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(text, len, 0, &jerr);
    uint64_t shard = 0;
    int rc = SHARD_OK;
    if (!json_is_object(o) || sk_jsonkey_uint(o, "shard", &shard, err) ||
        sk_jsonkey_uint(o, "samples", &e->samples, err) ||
        sk_jsonkey_uint(o, "bytes", &e->bytes, err) || sk_jsonkey_hex64(o, "xxh3", &e->xxh3, err) ||
        sk_jsonkey_uint(o, "plan_start", &e->pos_start, err) ||
        sk_jsonkey_uint(o, "plan_end", &e->pos_end, err) || shard > UINT32_MAX ||
        e->pos_end < e->pos_start)
        rc = shard_err_set(err, SHARD_ECORRUPT, "bad journal end line");
    e->shard = (uint32_t)shard;
    json_decref(o);
    return rc;
}

/* The journal dir/name opened for reading as a stdio stream (see sk_fs_open_at). */
static int open_journal(int dirfd, const char *dir, const char *name, FILE **f,
                        struct shard_err *err)
{
    int fd;
    int rc = sk_fs_open_at(dirfd, dir, name, &fd, err);
    if (rc)
        return rc;
    if (!(*f = fdopen(fd, "rb"))) {
        close(fd);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    return SHARD_OK;
}

int sk_journal_read(int dirfd, const char *dir, const char *name, const struct shard_config *c,
                    int (*on_sample)(void *user, struct shard_sample *s, struct shard_err *err),
                    int (*on_reject)(void *user, struct shard_reject *r, struct shard_err *err),
                    void *user, struct journal_end *end, struct shard_err *err)
{
    FILE *f;
    int rc = open_journal(dirfd, dir, name, &f, err);
    if (rc)
        return rc;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int have_end = 0;
    uint64_t line_no = 0;
    while (!rc && (n = getline(&line, &cap, f)) > 0) {
        line_no++;
        if (have_end || n < 3 || line[n - 1] != '\n') {
            rc = shard_err_set(err, SHARD_ECORRUPT, "bad line");
            break;
        }
        struct shard_sample s;
        struct shard_reject r;
        switch (line[0]) {
        case JOURNAL_TAG_END:
            rc = parse_end(line + 1, (size_t)n - 2, end, err);
            have_end = !rc;
            break;
        case JOURNAL_TAG_SAMPLE:
        case JOURNAL_TAG_REJECT:
            rc = shard_line_parse_fields(line + 1, (size_t)n - 2, c, &s, &r, err);
            if (rc == 1 && line[0] == JOURNAL_TAG_SAMPLE) {
                rc = on_sample(user, &s, err);
            } else if (rc == 2 && line[0] == JOURNAL_TAG_REJECT) {
                rc = on_reject(user, &r, err);
            } else if (rc > 0) {
                rc = shard_err_set(err, SHARD_ECORRUPT, "line tag does not match its content");
            }
            shard_sample_release(&s);
            shard_reject_release(&r);
            break;
        default: rc = shard_err_set(err, SHARD_ECORRUPT, "unknown line tag");
        }
    }
    if (!rc && ferror(f))
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read");
    if (!rc && !have_end)
        rc = shard_err_set(err, SHARD_ECORRUPT, "no end line");
    if (rc)
        shard_err_prefix(err, rc, "journal '%s/%s' line %llu", dir, name,
                         (unsigned long long)line_no);
    free(line);
    fclose(f);
    return rc;
}

int sk_journal_copy_samples(int dirfd, const char *dir, const char *name, int fd, void *hash,
                            struct sk_keys_builder *keys, uint64_t *bytes, uint64_t *entries,
                            struct shard_err *err)
{
    FILE *f;
    int rc = open_journal(dirfd, dir, name, &f, err);
    if (rc)
        return rc;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    struct shard_buf out = {0};
    while (!rc && (n = getline(&line, &cap, f)) > 0) {
        if (line[0] != JOURNAL_TAG_SAMPLE)
            continue;
        XXH3_64bits_update(hash, line + 1, (size_t)n - 1);
        *bytes += (uint64_t)n - 1;
        uint64_t key_hash;
        if (keys && ((rc = sk_keys_line_hash(line + 1, (size_t)n - 1, &key_hash, err)) ||
                     (rc = sk_keys_builder_add_hash(keys, key_hash, *entries, err))))
            break;
        (*entries)++;
        rc = shard_buf_append(&out, line + 1, (size_t)n - 1, err);
        if (!rc && out.len >= FLUSH_BYTES) {
            rc = sk_fs_write_all(fd, out.data, out.len, "index", err);
            out.len = 0;
        }
    }
    if (!rc && ferror(f))
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s/%s'", dir, name);
    if (!rc)
        rc = sk_fs_write_all(fd, out.data, out.len, "index", err);
    shard_buf_release(&out);
    free(line);
    fclose(f);
    return rc;
}
