/* shard_reader.c - parsing, opening and reading a shard (see
 * format/shard_reader.h).
 *
 * Parsing works on caller-supplied bytes (so the same code serves local
 * files, HTTP ranges and fuzzers); sk_shard_open reads and checks a shard's
 * header, trailer and footer through any read function, and struct
 * shard_file is that over a local path.  Every size read from the file is
 * checked before it is used to allocate or to index: a damaged or hostile
 * shard gives SHARD_ECORRUPT, never a crash. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "util/endian.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "format/layout.h"
#include "format/record_internal.h"
#include "format/shard_reader.h"
#include "shardkit/format.h"

int shard_header_parse(const uint8_t *buf, size_t len, uint32_t *shard_index, struct shard_err *err)
{
    return shard_header_parse_version(buf, len, shard_index, NULL, err);
}

int shard_header_parse_version(const uint8_t *buf, size_t len, uint32_t *shard_index,
                               uint16_t *version_out, struct shard_err *err)
{
    if (len < SHARD_HEADER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "file is shorter than a shard header");
    if (memcmp(buf, HEADER_MAGIC, MAGIC_BYTES) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "not a shard: bad header magic");
    if (get_le64(buf + HEADER_OFF_CHECK) != XXH3_64bits(buf, HEADER_OFF_CHECK))
        return shard_err_set(err, SHARD_ECORRUPT, "header checksum mismatch");
    uint16_t version = get_le16(buf + HEADER_OFF_VERSION);
    if (version != SHARD_FORMAT_VERSION && version != SHARD_FORMAT_VERSION_FIELDS)
        return shard_err_set(err, SHARD_EUNSUPPORTED, "shard format version %u (expected %u or %u)",
                             version, SHARD_FORMAT_VERSION, SHARD_FORMAT_VERSION_FIELDS);
    if (get_le16(buf + HEADER_OFF_SIZE) != SHARD_HEADER_BYTES ||
        get_le64(buf + HEADER_OFF_FLAGS) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "unexpected header size or flags");
    if (shard_index)
        *shard_index = get_le32(buf + HEADER_OFF_INDEX);
    if (version_out)
        *version_out = version;
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
                             (unsigned long long)t->footer_bytes, (unsigned long long)file_bytes);
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
    if (SHARD_FOOTER_FIXED_BYTES + rows_bytes + keys_bytes != body || keys_bytes > body)
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

/* ---- opening a shard, naming a damaged record -------------------------------- */

int sk_shard_open(uint64_t file_bytes, sk_shard_read_fn read, void *ctx, struct sk_shard_head *out,
                  struct shard_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t head[SHARD_HEADER_BYTES], tail[SHARD_TRAILER_BYTES];
    if (file_bytes < SHARD_HEADER_BYTES + SHARD_TRAILER_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "file is too short for a shard (%llu bytes)",
                             (unsigned long long)file_bytes);
    int rc;
    uint16_t version = 0;
    if ((rc = read(ctx, 0, head, sizeof head, err)) ||
        (rc = read(ctx, file_bytes - sizeof tail, tail, sizeof tail, err)) ||
        (rc = shard_header_parse_version(head, sizeof head, &out->index, &version, err)) ||
        (rc = shard_trailer_parse(tail, sizeof tail, file_bytes, &out->trailer, err)))
        return rc;
    /* shard_trailer_parse placed the footer inside the file */
    uint8_t *footer = malloc(out->trailer.footer_bytes ? (size_t)out->trailer.footer_bytes : 1);
    if (!footer)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate a footer of %llu bytes",
                             (unsigned long long)out->trailer.footer_bytes);
    if (!(rc = read(ctx, out->trailer.footer_offset, footer, (size_t)out->trailer.footer_bytes,
                    err)))
        rc = shard_footer_parse(footer, (size_t)out->trailer.footer_bytes, &out->trailer,
                                &out->footer, err);
    free(footer);
    if (rc)
        return rc;
    out->footer.version = version;
    out->bytes_read = sizeof head + sizeof tail + out->trailer.footer_bytes;
    return SHARD_OK;
}

int sk_shard_check_record(const struct shard_footer *f, uint64_t r,
                          const struct shard_record_view *v, struct shard_err *err)
{
    const struct shard_index_row *row = &f->rows[r];
    if (f->version && v->version != f->version)
        return shard_err_set(err, SHARD_ECORRUPT, "a version %u record in a version %u shard",
                             v->version, f->version);
    if (v->key_len != row->key_len || memcmp(v->key, f->keys + f->key_offsets[r], row->key_len) ||
        v->meta.label != row->label)
        return shard_err_set(err, SHARD_ECORRUPT, "key or label differs from the footer");
    return SHARD_OK;
}

int sk_shard_record_error(struct shard_err *err, int rc, const char *shard,
                          const struct shard_footer *f, uint64_t r)
{
    char quoted[SHARDX_QUOTE_SIZE];
    shardx_quote((const char *)f->keys + f->key_offsets[r], f->rows[r].key_len, quoted,
                 sizeof quoted);
    return shard_err_prefix(err, rc, "%s record %llu (key '%s')", shard, (unsigned long long)r,
                            quoted);
}

/* ---- a local shard file ----------------------------------------------------- */

struct shard_file {
    int fd;
    char *path;
    uint64_t bytes;
    struct sk_shard_head head;
};

static int file_read(void *ctx, uint64_t offset, void *buf, size_t len, struct shard_err *err)
{
    const struct shard_file *f = ctx;
    return sk_fs_pread_all(f->fd, f->bytes, offset, buf, len, err);
}

int shard_file_open(struct shard_file **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct shard_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    int rc = sk_fs_open_read(AT_FDCWD, path, &f->fd, &f->bytes, err);
    if (!rc)
        rc = sk_shard_open(f->bytes, file_read, f, &f->head, err);
    if (rc) {
        shard_err_prefix(err, rc, "%s", path);
        shard_file_close(f);
        return rc;
    }
    *out = f;
    return SHARD_OK;
}

void shard_file_close(struct shard_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    shard_footer_free(&f->head.footer);
    free(f->path);
    free(f);
}

uint64_t shard_file_records(const struct shard_file *f)
{
    return f->head.footer.record_count;
}

uint64_t shard_file_bytes(const struct shard_file *f)
{
    return f->bytes;
}

uint32_t shard_file_index(const struct shard_file *f)
{
    return f->head.index;
}

uint16_t shard_file_version(const struct shard_file *f)
{
    return f->head.footer.version;
}

const struct shard_footer *shard_file_footer(const struct shard_file *f)
{
    return &f->head.footer;
}

/* Record i's frame into `frame` (i < record count); the reason only. */
static int read_frame(const struct shard_file *f, uint64_t i, struct shard_buf *frame,
                      struct shard_err *err)
{
    const struct shard_index_row *r = &f->head.footer.rows[i];
    frame->len = 0;
    int rc = shard_buf_reserve(frame, (size_t)r->frame_bytes, err);
    if (!rc)
        rc = file_read((void *)f, r->offset, frame->data, (size_t)r->frame_bytes, err);
    if (!rc)
        frame->len = (size_t)r->frame_bytes;
    return rc;
}

int sk_shard_file_fd(const struct shard_file *f)
{
    return f->fd;
}

int sk_shard_file_read_range(const struct shard_file *f, uint64_t offset, void *buf, size_t len,
                             struct shard_err *err)
{
    return file_read((void *)f, offset, buf, len, err);
}

static int no_record(const struct shard_file *f, uint64_t i, struct shard_err *err)
{
    return shard_err_set(err, SHARD_ENOTFOUND, "%s has no record %llu", f->path,
                         (unsigned long long)i);
}

int shard_file_read_frame(const struct shard_file *f, uint64_t i, struct shard_buf *frame,
                          struct shard_err *err)
{
    if (i >= f->head.footer.record_count)
        return no_record(f, i, err);
    int rc = read_frame(f, i, frame, err);
    return rc ? sk_shard_record_error(err, rc, f->path, &f->head.footer, i) : SHARD_OK;
}

int shard_file_read_record(const struct shard_file *f, uint64_t i, struct shard_record_decoder *dec,
                           struct shard_record_view *view, struct shard_err *err)
{
    if (i >= f->head.footer.record_count)
        return no_record(f, i, err);
    struct shard_buf *frame = sk_record_decoder_frame(dec);
    int rc = read_frame(f, i, frame, err);
    if (!rc)
        rc = shard_record_decode(dec, frame->data, frame->len, &f->head.footer.rows[i].frame_xxh3,
                                 view, err);
    if (!rc)
        rc = sk_shard_check_record(&f->head.footer, i, view, err);
    return rc ? sk_shard_record_error(err, rc, f->path, &f->head.footer, i) : SHARD_OK;
}
