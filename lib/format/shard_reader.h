/* shard_reader.h - the one path that opens and checks a shard, and the one
 * way a damaged record is named (private).
 *
 * Every reader of shards - shard_file_open (a local path), the dataset's
 * local and HTTP backends (lib/read) - opens a shard with sk_shard_open:
 * header, trailer and footer are read through the caller's read function,
 * parsed and cross-checked here, so that the checks and their messages are
 * the same whatever the bytes came through.  A record that fails to read,
 * decompress, decode or match its footer row is named the same way
 * everywhere, by sk_shard_record_error:
 *   "shard-000000.shard record 12 (key 'a/b.jpg'): zstd: checksum mismatch" */
#ifndef SHARDKIT_SHARD_READER_H
#define SHARDKIT_SHARD_READER_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/format.h"

/* Fill buf with exactly len bytes at offset of the shard being opened: 0, or
 * a negative status whose message gives the reason only. */
typedef int (*sk_shard_read_fn)(void *ctx, uint64_t offset, void *buf, size_t len,
                                struct shard_err *err);

/* What opening a shard learns. */
struct sk_shard_head {
    uint32_t index; /* the shard number its header holds */
    struct shard_trailer trailer;
    struct shard_footer footer; /* owned: shard_footer_free */
    uint64_t bytes_read;        /* header + trailer + footer */
};

/* Read the header, the trailer and the footer of a shard of file_bytes
 * bytes through read(ctx, ...) and check them (shard_header_parse,
 * shard_trailer_parse, shard_footer_parse).  On success *out is filled and
 * owns its footer; on failure it holds nothing to free.  0, SHARD_ECORRUPT,
 * SHARD_EUNSUPPORTED (another format version), SHARD_ENOMEM or the read's
 * error.  The message gives the reason only ("footer checksum mismatch"):
 * the caller prefixes the shard's name. */
int sk_shard_open(uint64_t file_bytes, sk_shard_read_fn read, void *ctx, struct sk_shard_head *out,
                  struct shard_err *err);

/* Whether the decoded record v has the key and label of footer row r.
 * 0 or SHARD_ECORRUPT ("key or label differs from the footer"). */
/* The bytes [offset, offset + len) of the shard file f (frames of
 * consecutive records read at once): 0, or the error of the read. */
struct shard_file;
int sk_shard_file_read_range(const struct shard_file *f, uint64_t offset, void *buf, size_t len,
                             struct shard_err *err);
/* The open descriptor of the shard file f (for a mapping of it), valid
 * until shard_file_close. */
int sk_shard_file_fd(const struct shard_file *f);
int sk_shard_check_record(const struct shard_footer *f, uint64_t r,
                          const struct shard_record_view *v, struct shard_err *err);

/* Prefix err with the record it is about - "SHARD record R (key 'K')", the
 * key taken from footer row r (r < f->record_count) and quoted - and record
 * rc.  Returns rc. */
int sk_shard_record_error(struct shard_err *err, int rc, const char *shard,
                          const struct shard_footer *f, uint64_t r);

#endif
