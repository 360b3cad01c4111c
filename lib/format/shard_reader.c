/* shard_reader.c - parsing and reading a shard file.
 *
 * Parsing works on caller-supplied bytes (so the same code serves local
 * files, HTTP ranges and fuzzers); struct shard_file adds local file access.
 * Every size read from the file is checked before it is used to allocate or
 * to index: a damaged or hostile shard gives SHARD_ECORRUPT, never a crash. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/endian.h"
#include "format/layout.h"
#include "format/record_internal.h"
#include "shardkit/format.h"

int shard_header_parse(const uint8_t *buf, size_t len, uint32_t *shard_index,
                       struct shard_err *err)
{
    if (len < SHARD_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "file is shorter than a shard header");
    if (memcmp(buf, HEADER_MAGIC, MAGIC_BYTES) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "not a shard: bad header magic");
    if (get_le64(buf + HEADER_OFF_CHECK) != XXH3_64bits(buf, HEADER_OFF_CHECK))
        return shard_err_set(err, SHARD_ECORRUPT, "header checksum mismatch");
    uint16_t version = get_le16(buf + HEADER_OFF_VERSION);
    if (version != SHARD_FORMAT_VERSION)
        return shard_err_set(err, SHARD_EUNSUPPORTED, "shard format version %u (expected %u)",
                             version, SHARD_FORMAT_VERSION);
    if (get_le16(buf + HEADER_OFF_SIZE) != SHARD_HEADER_BYTES ||
        get_le64(buf + HEADER_OFF_FLAGS) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "unexpected header size or flags");
    if (shard_index)
        *shard_index = get_le32(buf + HEADER_OFF_INDEX);
    return SHARD_OK;
}

int shard_trailer_parse(const uint8_t *buf, size_t len, uint64_t file_bytes,
                        struct shard_trailer *t, struct shard_err *err)
{
    if (len < SHARD_TRAILER_BYTES || file_bytes < SHARD_HEADER_BYTES + SHARD_TRAILER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "file is too short for a shard (%llu bytes)",
                             (unsigned long long)file_bytes);
    if (memcmp(buf + TRAILER_OFF_MAGIC, TRAILER_MAGIC, MAGIC_BYTES) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "bad trailer magic (truncated shard?)");
    if (get_le64(buf + TRAILER_OFF_CHECK) != XXH3_64bits(buf, TRAILER_OFF_CHECK))
        return shard_err_set(err, SHARD_ECORRUPT, "trailer checksum mismatch");
    t->footer_offset = get_le64(buf + TRAILER_OFF_FOOTER);
    t->footer_bytes = get_le64(buf + TRAILER_OFF_FOOTER_BYTES);
    t->record_count = get_le64(buf + TRAILER_OFF_COUNT);
    uint64_t body_end = file_bytes - SHARD_TRAILER_BYTES;
    if (t->footer_offset < SHARD_HEADER_BYTES || t->footer_offset > body_end ||
        t->footer_bytes != body_end - t->footer_offset)
        return shard_err_set(err, SHARD_ECORRUPT,
                             "trailer places the footer at %llu+%llu in a file of %llu bytes",
                             (unsigned long long)t->footer_offset,
                             (unsigned long long)t->footer_bytes,
                             (unsigned long long)file_bytes);
    uint64_t min_footer = SHARD_FOOTER_FIXED_BYTES + SHARD_FOOTER_CHECK_BYTES;
    if (t->footer_bytes < min_footer ||
        t->record_count > (t->footer_bytes - min_footer) / SHARD_FOOTER_ENTRY_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "trailer record count %llu does not fit",
                             (unsigned long long)t->record_count);
    return SHARD_OK;
}

void shard_footer_free(struct shard_footer *f)
{
    if (!f)
        return;
    free(f->rows);
    free(f->keys);
    free(f->key_offsets);
    memset(f, 0, sizeof *f);
}

int shard_footer_parse(const uint8_t *buf, size_t len, const struct shard_trailer *t,
                       struct shard_footer *out, struct shard_err *err)
{
    memset(out, 0, sizeof *out);
    if (len != t->footer_bytes)
        return shard_err_set(err, SHARD_ECORRUPT, "footer is %zu bytes, trailer says %llu", len,
                             (unsigned long long)t->footer_bytes);
    if (memcmp(buf, FOOTER_MAGIC, MAGIC_BYTES) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "bad footer magic");
    size_t body = len - SHARD_FOOTER_CHECK_BYTES;
    if (get_le64(buf + body) != XXH3_64bits(buf, body))
        return shard_err_set(err, SHARD_ECORRUPT, "footer checksum mismatch");
    uint64_t count = get_le64(buf + FOOTER_OFF_COUNT);
    uint64_t keys_bytes = get_le64(buf + FOOTER_OFF_KEYS);
    if (count != t->record_count)
        return shard_err_set(err, SHARD_ECORRUPT, "footer lists %llu records, trailer %llu",
                             (unsigned long long)count, (unsigned long long)t->record_count);
    /* trailer_parse bounded count by the footer size, so this cannot overflow */
    uint64_t rows_bytes = count * SHARD_FOOTER_ENTRY_BYTES;
    if (SHARD_FOOTER_FIXED_BYTES + rows_bytes + keys_bytes != body ||
        keys_bytes > body)
        return shard_err_set(err, SHARD_ECORRUPT, "footer sizes are inconsistent");

    out->record_count = count;
    out->rows = calloc(count ? count : 1, sizeof *out->rows);
    out->key_offsets = calloc(count ? count : 1, sizeof *out->key_offsets);
    out->keys = malloc(keys_bytes ? keys_bytes : 1);
    if (!out->rows || !out->key_offsets || !out->keys) {
        shard_footer_free(out);
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate a footer of %llu records",
                             (unsigned long long)count);
    }
    memcpy(out->keys, buf + SHARD_FOOTER_FIXED_BYTES + rows_bytes, keys_bytes);

    const uint8_t *p = buf + SHARD_FOOTER_FIXED_BYTES;
    uint64_t expect_offset = SHARD_HEADER_BYTES;
    uint64_t key_at = 0;
    for (uint64_t i = 0; i < count; i++, p += SHARD_FOOTER_ENTRY_BYTES) {
        struct shard_index_row *r = &out->rows[i];
        r->offset = get_le64(p + ROW_OFF_OFFSET);
        r->frame_bytes = get_le64(p + ROW_OFF_FRAME_BYTES);
        r->frame_xxh3 = get_le64(p + ROW_OFF_XXH3);
        r->key_len = get_le32(p + ROW_OFF_KEYLEN);
        r->label = (int32_t)get_le32(p + ROW_OFF_LABEL);
        /* records are contiguous from the header to the footer */
        if (r->offset != expect_offset || r->frame_bytes == 0 ||
            r->frame_bytes > t->footer_offset - r->offset) {
            shard_footer_free(out);
            return shard_err_set(err, SHARD_ECORRUPT, "record %llu has a bad offset or size",
                                 (unsigned long long)i);
        }
        if (r->key_len == 0 || r->key_len > SHARD_KEY_MAX || r->key_len > keys_bytes - key_at ||
            r->label < SHARD_NO_LABEL) {
            shard_footer_free(out);
            return shard_err_set(err, SHARD_ECORRUPT, "record %llu has a bad key or label",
                                 (unsigned long long)i);
        }
        out->key_offsets[i] = key_at;
        key_at += r->key_len;
        expect_offset = r->offset + r->frame_bytes;
    }
    if (expect_offset != t->footer_offset || key_at != keys_bytes) {
        shard_footer_free(out);
        return shard_err_set(err, SHARD_ECORRUPT,
                             "records do not fill the space before the footer");
    }
    return SHARD_OK;
}

struct shard_file {
    int fd;
    char *path;
    uint64_t bytes;
    uint32_t index;
    struct shard_trailer trailer;
    struct shard_footer footer;
};

static int pread_all(int fd, uint8_t *p, size_t n, uint64_t off, const char *path,
                     struct shard_err *err)
{
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s'", path);
        if (r == 0)
            return shard_err_set(err, SHARD_ECORRUPT, "'%s' ends early", path);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return SHARD_OK;
}

int shard_file_open(struct shard_file **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct shard_file *f = calloc(1, sizeof *f);
    uint8_t *footer = NULL;
    int rc;
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        rc = shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                             "cannot open '%s'", path);
        goto fail;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot stat '%s'", path);
        goto fail;
    }
    f->bytes = (uint64_t)st.st_size;
    uint8_t head[SHARD_HEADER_BYTES], tail[SHARD_TRAILER_BYTES];
    if (f->bytes < SHARD_HEADER_BYTES + SHARD_TRAILER_BYTES) {
        rc = shard_err_set(err, SHARD_ECORRUPT, "'%s' is too short for a shard (%llu bytes)",
                           path, (unsigned long long)f->bytes);
        goto fail;
    }
    if ((rc = pread_all(f->fd, head, sizeof head, 0, path, err)) ||
        (rc = pread_all(f->fd, tail, sizeof tail, f->bytes - sizeof tail, path, err)))
        goto fail;
    if ((rc = shard_header_parse(head, sizeof head, &f->index, err)) ||
        (rc = shard_trailer_parse(tail, sizeof tail, f->bytes, &f->trailer, err)))
        goto prefixed;
    footer = malloc(f->trailer.footer_bytes);
    if (!footer) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot allocate the footer of '%s'", path);
        goto fail;
    }
    if ((rc = pread_all(f->fd, footer, f->trailer.footer_bytes, f->trailer.footer_offset,
                        path, err)))
        goto fail;
    if ((rc = shard_footer_parse(footer, f->trailer.footer_bytes, &f->trailer, &f->footer,
                                 err)))
        goto prefixed;
    free(footer);
    *out = f;
    return SHARD_OK;
prefixed:
    shard_err_prefix(err, rc, "'%s'", path);
fail:
    free(footer);
    shard_file_close(f);
    return rc;
}

void shard_file_close(struct shard_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    shard_footer_free(&f->footer);
    free(f->path);
    free(f);
}

uint64_t shard_file_records(const struct shard_file *f)
{
    return f->footer.record_count;
}

uint64_t shard_file_bytes(const struct shard_file *f)
{
    return f->bytes;
}

uint32_t shard_file_index(const struct shard_file *f)
{
    return f->index;
}

const struct shard_footer *shard_file_footer(const struct shard_file *f)
{
    return &f->footer;
}

int shard_file_read_frame(const struct shard_file *f, uint64_t i, struct shard_buf *frame,
                          struct shard_err *err)
{
    if (i >= f->footer.record_count)
        return shard_err_set(err, SHARD_ENOTFOUND, "'%s' has no record %llu", f->path,
                             (unsigned long long)i);
    const struct shard_index_row *r = &f->footer.rows[i];
    frame->len = 0;
    int rc = shard_buf_reserve(frame, r->frame_bytes, err);
    if (rc)
        return rc;
    rc = pread_all(f->fd, frame->data, r->frame_bytes, r->offset, f->path, err);
    if (rc)
        return rc;
    frame->len = r->frame_bytes;
    return SHARD_OK;
}

int shard_file_read_record(const struct shard_file *f, uint64_t i,
                           struct shard_record_decoder *dec, struct shard_record_view *view,
                           struct shard_err *err)
{
    struct shard_buf *frame = sk_record_decoder_frame(dec);
    int rc = shard_file_read_frame(f, i, frame, err);
    if (rc)
        return rc;
    const struct shard_index_row *r = &f->footer.rows[i];
    rc = shard_record_decode(dec, frame->data, frame->len, &r->frame_xxh3, view, err);
    if (!rc && (view->key_len != r->key_len ||
                memcmp(view->key, f->footer.keys + f->footer.key_offsets[i], r->key_len) != 0 ||
                view->meta.label != r->label))
        rc = shard_err_set(err, SHARD_ECORRUPT, "key or label differs from the footer");
    if (rc)
        shard_err_prefix(err, rc, "'%s' record %llu", f->path, (unsigned long long)i);
    return rc;
}
