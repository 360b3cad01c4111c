/* shard_writer.c - writing one shard file: header, frames, footer, trailer. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/endian.h"
#include "util/fsutil.h"
#include "format/layout.h"
#include "format/writer_internal.h"
#include "shardkit/format.h"

/* Writes are gathered so that a shard of small records costs few syscalls. */
#define WRITE_BUFFER_BYTES (1u << 20)

struct shard_writer {
    int fd;
    int dirfd;   /* the directory holding the file (borrowed), or AT_FDCWD */
    char *name;  /* the file's name in dirfd */
    char *path;  /* the file as messages name it */
    int created; /* we made the file, so we may remove it */
    int finished;
    uint64_t offset;          /* bytes handed to the file so far (incl. buffered) */
    struct shard_buf pending; /* not yet written */
    struct shard_buf rows;    /* footer rows, encoded */
    struct shard_buf keys;    /* footer key blob */
    uint64_t records;
    XXH3_state_t *hash; /* running hash of every byte of the file */
};

static int flush_pending(struct shard_writer *w, struct shard_err *err)
{
    int rc = sk_fs_write_all(w->fd, w->pending.data, w->pending.len, w->path, err);
    w->pending.len = 0;
    return rc;
}

/* Append bytes to the file through the buffer, hashing them. */
static int emit(struct shard_writer *w, const void *p, size_t n, struct shard_err *err)
{
    XXH3_64bits_update(w->hash, p, n);
    w->offset += n;
    if (w->pending.len + n > WRITE_BUFFER_BYTES) {
        int rc = flush_pending(w, err);
        if (rc)
            return rc;
        if (n >= WRITE_BUFFER_BYTES)
            return sk_fs_write_all(w->fd, p, n, w->path, err);
    }
    return shard_buf_append(&w->pending, p, n, err);
}

int shard_writer_open(struct shard_writer **out, const char *path, uint32_t shard_index,
                      struct shard_err *err)
{
    return sk_shard_writer_openat(out, AT_FDCWD, NULL, path, shard_index, SHARD_FORMAT_VERSION,
                                  err);
}

int shard_writer_open_version(struct shard_writer **out, const char *path, uint32_t shard_index,
                              uint16_t version, struct shard_err *err)
{
    return sk_shard_writer_openat(out, AT_FDCWD, NULL, path, shard_index, version, err);
}

int sk_shard_writer_openat(struct shard_writer **out, int dirfd, const char *dir, const char *name,
                           uint32_t shard_index, uint16_t version, struct shard_err *err)
{
    *out = NULL;
    if (version != SHARD_FORMAT_VERSION && version != SHARD_FORMAT_VERSION_FIELDS)
        return shard_err_set(err, SHARD_EINVAL, "no shard format version %u", version);
    struct shard_writer *w = calloc(1, sizeof *w);
    if (!w)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    w->fd = -1;
    w->dirfd = dirfd;
    w->name = strdup(name);
    w->path = dir ? sk_fs_join(dir, name) : strdup(name);
    w->hash = XXH3_createState();
    int rc;
    if (!w->name || !w->path || !w->hash ||
        shard_buf_reserve(&w->pending, WRITE_BUFFER_BYTES, err)) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    XXH3_64bits_reset(w->hash);
    /* O_EXCL: never an existing file; O_NOFOLLOW: never through a link */
    w->fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", w->path);
        goto fail;
    }
    w->created = 1;
    uint8_t h[SHARD_HEADER_BYTES] = {0};
    memcpy(h, HEADER_MAGIC, MAGIC_BYTES);
    put_le16(h + HEADER_OFF_VERSION, version);
    put_le16(h + HEADER_OFF_SIZE, SHARD_HEADER_BYTES);
    put_le32(h + HEADER_OFF_INDEX, shard_index);
    put_le64(h + HEADER_OFF_FLAGS, 0);
    put_le64(h + HEADER_OFF_CHECK, XXH3_64bits(h, HEADER_OFF_CHECK));
    rc = emit(w, h, sizeof h, err);
    if (rc)
        goto fail;
    *out = w;
    return SHARD_OK;
fail:
    shard_writer_free(w);
    return rc;
}

int shard_writer_add(struct shard_writer *w, const uint8_t *frame, size_t frame_len,
                     uint64_t frame_xxh3, const uint8_t *key, size_t key_len, int32_t label,
                     struct shard_err *err)
{
    if (w->finished)
        return shard_err_set(err, SHARD_EINVAL, "shard '%s' is already finished", w->path);
    if (key_len == 0 || key_len > SHARD_KEY_MAX)
        return shard_err_set(err, SHARD_EINVAL, "key length %zu is outside 1..%u", key_len,
                             SHARD_KEY_MAX);
    uint8_t row[SHARD_FOOTER_ENTRY_BYTES];
    put_le64(row + ROW_OFF_OFFSET, w->offset);
    put_le64(row + ROW_OFF_FRAME_BYTES, frame_len);
    put_le64(row + ROW_OFF_XXH3, frame_xxh3);
    put_le32(row + ROW_OFF_KEYLEN, (uint32_t)key_len);
    put_le32(row + ROW_OFF_LABEL, (uint32_t)label);
    int rc = emit(w, frame, frame_len, err);
    if (!rc)
        rc = shard_buf_append(&w->rows, row, sizeof row, err);
    if (!rc)
        rc = shard_buf_append(&w->keys, key, key_len, err);
    if (!rc)
        w->records++;
    return rc;
}

uint64_t sk_writer_records(const struct shard_writer *w)
{
    return w->records;
}

uint64_t shard_writer_projected_bytes(const struct shard_writer *w, size_t frame_len,
                                      size_t key_len)
{
    uint64_t extra_rows = frame_len || key_len ? 1 : 0;
    return w->offset + frame_len + SHARD_FOOTER_FIXED_BYTES + w->rows.len +
           extra_rows * SHARD_FOOTER_ENTRY_BYTES + w->keys.len + key_len +
           SHARD_FOOTER_CHECK_BYTES + SHARD_TRAILER_BYTES;
}

int shard_writer_finish(struct shard_writer *w, uint64_t *file_bytes, uint64_t *file_xxh3,
                        struct shard_err *err)
{
    if (w->finished)
        return shard_err_set(err, SHARD_EINVAL, "shard '%s' is already finished", w->path);
    uint64_t footer_offset = w->offset;
    uint8_t fixed[SHARD_FOOTER_FIXED_BYTES];
    memcpy(fixed, FOOTER_MAGIC, MAGIC_BYTES);
    put_le64(fixed + FOOTER_OFF_COUNT, w->records);
    put_le64(fixed + FOOTER_OFF_KEYS, w->keys.len);

    /* The footer's own checksum covers fixed part, rows and keys. */
    XXH3_state_t *fh = XXH3_createState();
    if (!fh)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    XXH3_64bits_reset(fh);
    XXH3_64bits_update(fh, fixed, sizeof fixed);
    XXH3_64bits_update(fh, w->rows.data, w->rows.len);
    XXH3_64bits_update(fh, w->keys.data, w->keys.len);
    uint8_t check[SHARD_FOOTER_CHECK_BYTES];
    put_le64(check, XXH3_64bits_digest(fh));
    XXH3_freeState(fh);

    int rc = emit(w, fixed, sizeof fixed, err);
    if (!rc)
        rc = emit(w, w->rows.data, w->rows.len, err);
    if (!rc)
        rc = emit(w, w->keys.data, w->keys.len, err);
    if (!rc)
        rc = emit(w, check, sizeof check, err);
    if (rc)
        return rc;

    uint8_t t[SHARD_TRAILER_BYTES];
    put_le64(t + TRAILER_OFF_FOOTER, footer_offset);
    put_le64(t + TRAILER_OFF_FOOTER_BYTES, w->offset - footer_offset);
    put_le64(t + TRAILER_OFF_COUNT, w->records);
    put_le64(t + TRAILER_OFF_CHECK, XXH3_64bits(t, TRAILER_OFF_CHECK));
    memcpy(t + TRAILER_OFF_MAGIC, TRAILER_MAGIC, MAGIC_BYTES);
    rc = emit(w, t, sizeof t, err);
    if (!rc)
        rc = flush_pending(w, err);
    if (rc)
        return rc;
    if (fsync(w->fd) != 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot fsync '%s'", w->path);
    if (close(w->fd) != 0) {
        w->fd = -1;
        return shard_err_errno(err, SHARD_EIO, errno, "cannot close '%s'", w->path);
    }
    w->fd = -1;
    w->finished = 1;
    *file_bytes = w->offset;
    *file_xxh3 = XXH3_64bits_digest(w->hash);
    return SHARD_OK;
}

void shard_writer_free(struct shard_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (w->created && !w->finished)
        unlinkat(w->dirfd, w->name, 0); /* never leave a partial shard behind */
    free(w->name);
    free(w->path);
    shard_buf_release(&w->pending);
    shard_buf_release(&w->rows);
    shard_buf_release(&w->keys);
    XXH3_freeState(w->hash);
    free(w);
}
