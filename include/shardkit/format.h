/*
 * shardkit/format.h - the shard file format: records, writer and reader.
 *
 * The byte layout is specified in manifests/FORMAT.md.  In short:
 *
 *   header (32 bytes) | record frames ... | footer | trailer (40 bytes)
 *
 * Each record is one zstd frame (with content size and content checksum)
 * whose content is a 32-byte record header, the key, and the payload.  The
 * footer lists every record's offset, frame size, xxh3 of the frame bytes,
 * key and label; the trailer at the very end says where the footer is.  All
 * integers are little-endian.
 *
 * Building a record (shard_record_encode) is separate from appending it to a
 * shard (shard_writer_add) so that records can be built on many threads and
 * appended in a fixed order by one: output never depends on thread count.
 *
 * Tiers (shardkit/api.h): experimental (SHARDKIT_EXPERIMENTAL), but for
 * the types and shard_field_type_name (the stable manifest.h declares fields
 * of these types): the shard file's own API may change in any release; the
 * format on disk is manifests/FORMAT.md's and does not.
 */
#ifndef SHARDKIT_FORMAT_H
#define SHARDKIT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/image.h"
#include "shardkit/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 1: records hold a key, a label and an image.  Version 2: records
 * may also hold fields (text, JSON, numbers, label lists, bytes: see
 * "Fields" below).  A dataset without fields is written as version 1, so
 * that it stays readable by every reader; readers read both. */
#define SHARD_FORMAT_VERSION 1
#define SHARD_FORMAT_VERSION_FIELDS 2
#define SHARD_FILE_EXT ".shard"
#define SHARD_HEADER_BYTES 32u
#define SHARD_TRAILER_BYTES 40u
#define SHARD_RECORD_HEADER_BYTES 32u
#define SHARD_FOOTER_ENTRY_BYTES 32u
#define SHARD_FOOTER_FIXED_BYTES 24u /* magic + record_count + keys_bytes */
#define SHARD_FOOTER_CHECK_BYTES 8u  /* trailing xxh3 of the footer */
#define SHARD_KEY_MAX 4096u          /* longest key (a relative path) in bytes */
#define SHARD_NO_LABEL (-1)
#define SHARD_RECORD_MAX_BYTES (1ull << 30) /* largest decompressed record */
/* zstd levels a writer accepts: zstd's negative "fast" levels (less
 * compression, faster both ways) up to 19; 0 (zstd's "default") is refused so
 * that a manifest always states the level used. */
#define SHARD_ZSTD_LEVEL_MIN (-131072)
#define SHARD_ZSTD_LEVEL_MAX 19

/* ---- fields (format version 2) -------------------------------------------
 *
 * A field is a named, typed value a sample carries besides its image: a
 * caption, JSON metadata, a list of labels, a number, a vector.  The
 * manifest declares a dataset's fields (shardkit/manifest.h: struct
 * shard_field_decl); a record stores the values of the fields its sample
 * has, each as an entry of its field area, in increasing field number (the
 * position of the declaration in the manifest).  An absent field has no
 * entry: absence is never an empty string or a 0.
 *
 * How each type's value is stored (little-endian):
 *   TEXT     UTF-8 bytes, no terminator
 *   JSON     the text of one JSON value (UTF-8)
 *   INT      8 bytes, a two's-complement int64
 *   FLOAT    8 bytes, an IEEE 754 binary64 (finite)
 *   FLOAT32  length x 4 bytes, IEEE 754 binary32 (finite); `length` is fixed per
 *            dataset (the declaration's)
 *   INT64    length x 8 bytes, int64
 *   LABELS   4 bytes per label, each an index into the manifest's labels
 *            (as a record's single label is), no label twice
 *   BYTES    any bytes
 *   BOXES    SHARD_BOX_BYTES per box: x0, y0, x1, y1 (float32, in the stored
 *            image's pixels, xyxy: 0 <= x0 < x1 <= width, 0 <= y0 < y1 <=
 *            height), the class (int32, an id of the declaration's classes)
 *            and flags (uint32: SHARD_BOX_CROWD, the other bits 0)
 *   MASK     a single-channel image of exactly the record's width x height
 *            whose values are class ids of the declaration's classes:
 *            width:u32 height:u32 value_bytes:u8 (1, or 2 when a class id is
 *            above 255) and 3 reserved zero bytes (SHARD_MASK_HEADER_BYTES),
 *            then height x width values, row-major
 *   INSTANCES one mask per object, of the record's width x height, each a
 *            box's of the dataset's BOXES field in the same order (Mask
 *            R-CNN's `masks`): width:u32 height:u32 count:u32 and a reserved
 *            zero u32 (SHARD_INSTANCES_HEADER_BYTES), then `count` masks,
 *            each runs:u32 and `runs` run lengths (u32) of 0 and 1 in turn,
 *            starting with 0, over the pixels in column-major order (COCO's
 *            uncompressed RLE), summing to width x height
 *   IMAGE    a second image of the sample (a depth map, a stereo pair's
 *            other view), resampled and cropped as its image was, of
 *            exactly the record's width x height: width:u32 height:u32
 *            channels:u8 (3: RGB) codec:u8 (SHARD_CODEC_RAW) and 2 reserved
 *            zero bytes (SHARD_IMAGE_HEADER_BYTES), then height x width x
 *            channels bytes, row-major (as a raw payload)
 * Type numbers are part of the format: they are stored in every entry. */
enum shard_field_type {
    SHARD_FIELD_TEXT = 1,
    SHARD_FIELD_JSON = 2,
    SHARD_FIELD_INT = 3,
    SHARD_FIELD_FLOAT = 4,
    SHARD_FIELD_FLOAT32 = 5,
    SHARD_FIELD_INT64 = 6,
    SHARD_FIELD_LABELS = 7,
    SHARD_FIELD_BYTES = 8,
    SHARD_FIELD_BOXES = 9,
    SHARD_FIELD_MASK = 10,
    SHARD_FIELD_INSTANCES = 11,
    SHARD_FIELD_IMAGE = 12,
};
#define SHARD_FIELDS_MAX 256u           /* fields a dataset may declare */
#define SHARD_FIELD_NAME_MAX 64u        /* bytes of a field's name */
#define SHARD_FIELD_VECTOR_MAX 1048576u /* elements of a FLOAT32 or INT64 vector */
#define SHARD_FIELD_ENTRY_BYTES 8u      /* field:u16 type:u8 reserved:u8 value_bytes:u32 */
/* A box of a BOXES value: x0:f32 y0:f32 x1:f32 y1:f32 class:i32 flags:u32. */
#define SHARD_BOX_BYTES 24u
#define SHARD_BOX_CROWD 1u /* flags: a crowd region (COCO's iscrowd) */
/* A MASK value's header: width:u32 height:u32 value_bytes:u8 reserved:u8[3]. */
#define SHARD_MASK_HEADER_BYTES 12u
/* An INSTANCES value's header: width:u32 height:u32 count:u32 reserved:u32. */
#define SHARD_INSTANCES_HEADER_BYTES 16u
/* An IMAGE value's header: width:u32 height:u32 channels:u8 codec:u8 reserved:u8[2]. */
#define SHARD_IMAGE_HEADER_BYTES 12u

/* "text", "json", "int", "float", "float32", "int64", "labels", "bytes",
 * "boxes", "mask", "instances", "image"; NULL for a number that is no type. */
SHARD_API const char *shard_field_type_name(enum shard_field_type t);
#ifdef SHARDKIT_EXPERIMENTAL
/* Parse a type as the command line and the manifest write it: one of the
 * names above, the vector types with their length in brackets
 * ("float32[512]", "int64[3]"; 1..SHARD_FIELD_VECTOR_MAX).  *length is the
 * vector length, 0 for the other types.  0 or SHARD_EINVAL with a message. */
SHARD_API int shard_field_type_parse(const char *s, enum shard_field_type *type, uint32_t *length,
                                     struct shard_err *err);
/* 1 when the type is FLOAT32 or INT64 (has a length). */
SHARD_API int shard_field_type_is_vector(enum shard_field_type t);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- the structured values, decoded ------------------------------------
 *
 * What a reader needs to use a BOXES, MASK, INSTANCES or IMAGE value
 * without its byte layout (above).  Each decoder checks the value's
 * structure (its size against its header, the header's reserved bytes),
 * not its classes (shard_field_check does, against the declaration): 0 or
 * SHARD_ECORRUPT with the reason. */

/* A box of a BOXES value, in host order. */
struct shard_box {
    float x0, y0, x1, y1; /* in the stored image's pixels, xyxy */
    int32_t cls;          /* an id of the declaration's classes */
    uint32_t flags;       /* SHARD_BOX_CROWD */
};
/* The boxes of len bytes of BOXES values (one value, or several back to
 * back, as a batch holds them): *count is len / SHARD_BOX_BYTES, and with
 * `out` not NULL the boxes are decoded into out[0 .. *count).  SHARD_ECORRUPT
 * when len is not a multiple of SHARD_BOX_BYTES. */
SHARD_API int shard_field_boxes_decode(const uint8_t *value, uint64_t len, struct shard_box *out,
                                       uint64_t *count, struct shard_err *err);

/* A MASK or IMAGE value's grid: `height` rows of `width` pixels of
 * `channels` values of `value_bytes` bytes each, little-endian, row-major. */
struct shard_field_grid {
    uint32_t width, height;
    uint32_t channels;     /* MASK: 1; IMAGE: 3 (RGB) */
    uint32_t value_bytes;  /* MASK: 1, or 2 when a class id is above 255; IMAGE: 1 */
    const uint8_t *values; /* into the value: width x height x channels x value_bytes bytes */
};
/* A MASK value's grid. */
SHARD_API int shard_field_mask_decode(const uint8_t *value, uint64_t len,
                                      struct shard_field_grid *out, struct shard_err *err);
/* An IMAGE value's grid (3 channels, a raw payload: the only form stored). */
SHARD_API int shard_field_image_decode(const uint8_t *value, uint64_t len,
                                       struct shard_field_grid *out, struct shard_err *err);
/* The grid's values in host byte order into `out` (width x height x
 * channels of uint8_t, or uint16_t when value_bytes is 2). */
SHARD_API void shard_field_grid_copy(const struct shard_field_grid *g, void *out);

/* An INSTANCES value: its masks' size and count into *width, *height and
 * *count, and with `masks` not NULL the masks themselves decoded into it:
 * count x height x width bytes, mask after mask, row-major, 1 inside the
 * object and 0 elsewhere (Mask R-CNN's `masks`).  Checks that each mask's
 * runs cover width x height exactly and that the value ends with the last. */
SHARD_API int shard_field_instances_decode(const uint8_t *value, uint64_t len, uint32_t *width,
                                           uint32_t *height, uint32_t *count, uint8_t *masks,
                                           struct shard_err *err);

/* One field's value in a record: points into the decoded record. */
struct shard_field_value {
    uint32_t field; /* field number: index into the manifest's fields */
    enum shard_field_type type;
    const uint8_t *data; /* the stored value (see the types above) */
    uint64_t len;        /* bytes */
};

/* The field area of a record being built: entries appended in increasing
 * field number.  Zero it before first use; reusable after
 * shard_field_set_clear; free with shard_field_set_release. */
struct shard_field_set {
    struct shard_buf area; /* the entries as stored */
    uint32_t count;        /* entries */
    int32_t last;          /* field number of the last entry (-1: none; valid
                            * only when count > 0) */
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Empty the set, keeping its memory. */
SHARD_API void shard_field_set_clear(struct shard_field_set *s);
/* Free the memory and zero the set.  Accepts NULL. */
SHARD_API void shard_field_set_release(struct shard_field_set *s);
/* Append field `field`'s value (len bytes).  SHARD_EINVAL when the field
 * number is not above the last one's or >= SHARD_FIELDS_MAX, the type is
 * unknown, or the size does not suit the type (INT and FLOAT: 8 bytes;
 * FLOAT32, LABELS: a multiple of 4; INT64: of 8; BOXES: of SHARD_BOX_BYTES;
 * MASK, IMAGE: at least its header); SHARD_ELIMIT for a value
 * of 4 GiB or more; SHARD_ENOMEM.  The value itself is not checked here
 * (see shard_field_check in shardkit/manifest.h). */
SHARD_API int shard_field_set_add(struct shard_field_set *s, uint32_t field,
                                  enum shard_field_type type, const void *value, size_t len,
                                  struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* What a record says about its sample. */
struct shard_record_meta {
    int32_t label; /* index into the manifest's labels, or SHARD_NO_LABEL */
    uint32_t width;
    uint32_t height;
    uint32_t channels; /* 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (3 in a dataset before
                        * manifest version 3) */
    enum shard_codec codec;
    uint32_t depth; /* bits per sample: 8 or 16 (0 is written as 8) */
};
/* The record header's pixels byte: the channels in its low bits, this bit
 * when the samples are 16-bit (manifests/FORMAT.md, "Record frames"). */
#define SHARD_RECORD_PIXELS_16BIT 0x10u

/* A decoded record.  `key` and `payload` point into the decoder that
 * produced it and stay valid until that decoder is used again. */
struct shard_record_view {
    struct shard_record_meta meta;
    const uint8_t *key;
    uint32_t key_len;
    const uint8_t *payload;
    uint64_t payload_len;
    uint16_t version;      /* 1 (SKR1) or 2 (SKR2: may carry fields) */
    uint32_t field_count;  /* entries in the field area (version 2), else 0 */
    const uint8_t *fields; /* the field area (checked by the decoder), or NULL */
    uint64_t fields_len;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* The field values of a decoded record, in field number order: fills
 * out[0 .. min(count, cap)) and returns view->field_count.  The decoder
 * checked the area's structure, so this cannot fail. */
SHARD_API uint32_t shard_record_fields(const struct shard_record_view *view,
                                       struct shard_field_value *out, uint32_t cap);
#endif /* SHARDKIT_EXPERIMENTAL */

/* One row of a shard's footer index. */
struct shard_index_row {
    uint64_t offset;      /* byte offset of the record's zstd frame in the shard */
    uint64_t frame_bytes; /* size of the frame */
    uint64_t frame_xxh3;  /* XXH3-64 of the frame bytes */
    uint32_t key_len;
    int32_t label;
};

/* ---- record encoding (one encoder per thread) --------------------------- */

struct shard_record_encoder;

#ifdef SHARDKIT_EXPERIMENTAL
/* Create an encoder using zstd `level` (SHARD_ZSTD_LEVEL_MIN..
 * SHARD_ZSTD_LEVEL_MAX, not 0).  *out is NULL on failure. */
SHARD_API int shard_record_encoder_new(struct shard_record_encoder **out, int level,
                                       struct shard_err *err);
/* Free; accepts NULL. */
SHARD_API void shard_record_encoder_free(struct shard_record_encoder *enc);

/* Build the frame for one record into `frame` (replacing its contents) and
 * return the XXH3-64 of the frame bytes in *frame_xxh3.  Deterministic.
 * 0, SHARD_EINVAL (key empty or longer than SHARD_KEY_MAX, payload size not
 * matching a RAW image) or an error. */
SHARD_API int shard_record_encode(struct shard_record_encoder *enc,
                                  const struct shard_record_meta *meta, const uint8_t *key,
                                  size_t key_len, const uint8_t *payload, size_t payload_len,
                                  struct shard_buf *frame, uint64_t *frame_xxh3,
                                  struct shard_err *err);

/* The same for a record of format version 2 (magic SKR2) carrying the
 * field area `fields` (NULL: none present).  A version 2 shard holds only
 * such records, whether or not their sample has a field.  Errors as
 * shard_record_encode's. */
SHARD_API int shard_record_encode_fields(struct shard_record_encoder *enc,
                                         const struct shard_record_meta *meta, const uint8_t *key,
                                         size_t key_len, const uint8_t *payload, size_t payload_len,
                                         const struct shard_field_set *fields,
                                         struct shard_buf *frame, uint64_t *frame_xxh3,
                                         struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Reusable decoding state (a zstd context and buffers).  One per thread. */
struct shard_record_decoder;

#ifdef SHARDKIT_EXPERIMENTAL
SHARD_API int shard_record_decoder_new(struct shard_record_decoder **out, struct shard_err *err);
SHARD_API void shard_record_decoder_free(struct shard_record_decoder *dec); /* accepts NULL */

/* Decompress one frame (verifying zstd's content checksum and that the
 * frame is exactly frame_len bytes), parse the record header (version 1 or
 * 2; a version 2 record's field area is checked: entries that tile it
 * exactly, field numbers increasing and below SHARD_FIELDS_MAX, known types,
 * sizes that suit them) and fill *view,
 * whose pointers refer into the decoder and stay valid until its next use.
 * When expect_xxh3 is non-NULL the frame bytes must hash to *expect_xxh3.
 * Records larger than SHARD_RECORD_MAX_BYTES are refused before allocating.
 * 0 or SHARD_ECORRUPT with the reason. */
SHARD_API int shard_record_decode(struct shard_record_decoder *dec, const uint8_t *frame,
                                  size_t frame_len, const uint64_t *expect_xxh3,
                                  struct shard_record_view *view, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- writer ------------------------------------------------------------- */

struct shard_writer;

#ifdef SHARDKIT_EXPERIMENTAL
/* Create `path` (which must not exist: O_EXCL; a symbolic link there is not
 * followed: O_NOFOLLOW) and write the header for shard number `shard_index`.
 * *out is NULL on failure. */
SHARD_API int shard_writer_open(struct shard_writer **out, const char *path, uint32_t shard_index,
                                struct shard_err *err);
/* The same, writing format `version` (SHARD_FORMAT_VERSION or
 * SHARD_FORMAT_VERSION_FIELDS) into the header.  SHARD_EINVAL for another. */
SHARD_API int shard_writer_open_version(struct shard_writer **out, const char *path,
                                        uint32_t shard_index, uint16_t version,
                                        struct shard_err *err);

/* Append a frame made by shard_record_encode; key/label go to the footer. */
SHARD_API int shard_writer_add(struct shard_writer *w, const uint8_t *frame, size_t frame_len,
                               uint64_t frame_xxh3, const uint8_t *key, size_t key_len,
                               int32_t label, struct shard_err *err);

/* The size the file would have if closed now after also adding one more
 * record of `frame_len` bytes with a key of `key_len` bytes (pass 0, 0 for
 * the size as it stands). */
SHARD_API uint64_t shard_writer_projected_bytes(const struct shard_writer *w, size_t frame_len,
                                                size_t key_len);

/* Write footer and trailer, fsync, close.  On success *file_bytes and
 * *file_xxh3 (XXH3-64 of the whole file) are set.  The writer must still be
 * freed.  0 or SHARD_EIO. */
SHARD_API int shard_writer_finish(struct shard_writer *w, uint64_t *file_bytes, uint64_t *file_xxh3,
                                  struct shard_err *err);

/* Close and free.  If shard_writer_finish did not succeed the partial file is
 * removed.  Accepts NULL. */
SHARD_API void shard_writer_free(struct shard_writer *w);

/* ---- reader ------------------------------------------------------------- */

/* Parse the fixed 32-byte header.  0, SHARD_ECORRUPT or SHARD_EUNSUPPORTED
 * (a version other than 1 and 2). */
SHARD_API int shard_header_parse(const uint8_t *buf, size_t len, uint32_t *shard_index,
                                 struct shard_err *err);
/* The same, also giving the format version (1 or 2) in *version. */
SHARD_API int shard_header_parse_version(const uint8_t *buf, size_t len, uint32_t *shard_index,
                                         uint16_t *version, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_trailer {
    uint64_t footer_offset;
    uint64_t footer_bytes;
    uint64_t record_count;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Parse the 40-byte trailer (the last bytes of a file of `file_bytes`) and
 * check that the footer it points to lies inside the file after the header.
 * 0 or SHARD_ECORRUPT. */
SHARD_API int shard_trailer_parse(const uint8_t *buf, size_t len, uint64_t file_bytes,
                                  struct shard_trailer *t, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* A parsed footer: rows plus the keys they name.  Owned; free with
 * shard_footer_free. */
struct shard_footer {
    uint16_t version; /* the shard's format version (from its header; 0
                       * when only the footer was parsed): its records
                       * must be of that version */
    uint64_t record_count;
    struct shard_index_row *rows; /* record_count rows */
    uint8_t *keys;                /* concatenated keys */
    uint64_t *key_offsets;        /* record_count offsets into keys */
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Parse a footer of `len` bytes for a file whose records must end at
 * `records_end` (== footer offset) and start after the header; rows must be
 * contiguous, in order, non-overlapping.  On success *out is filled (free
 * with shard_footer_free).  0, SHARD_ECORRUPT or SHARD_ENOMEM. */
SHARD_API int shard_footer_parse(const uint8_t *buf, size_t len, const struct shard_trailer *t,
                                 struct shard_footer *out, struct shard_err *err);
SHARD_API void shard_footer_free(struct shard_footer *f);
#endif /* SHARDKIT_EXPERIMENTAL */

/* An open shard file: header, trailer and footer are read and checked - by
 * the same code, with the same messages, as a dataset's shards (local or
 * over HTTP).  Messages name the shard by `path` as given:
 *   "data/shard-000000.shard: footer checksum mismatch"
 *   "data/shard-000000.shard record 12 (key 'a/b.jpg'): zstd: checksum mismatch" */
struct shard_file;

#ifdef SHARDKIT_EXPERIMENTAL
/* Open and check the shard at `path`.  On success *out is the file (close
 * with shard_file_close).  0, SHARD_ENOTFOUND, SHARD_EIO, SHARD_ECORRUPT,
 * SHARD_EUNSUPPORTED (another format version) or SHARD_ENOMEM. */
SHARD_API int shard_file_open(struct shard_file **out, const char *path, struct shard_err *err);
SHARD_API void shard_file_close(struct shard_file *f); /* accepts NULL */

SHARD_API uint64_t shard_file_records(const struct shard_file *f);
SHARD_API uint64_t shard_file_bytes(const struct shard_file *f);
SHARD_API uint32_t shard_file_index(const struct shard_file *f);   /* shard number in the header */
SHARD_API uint16_t shard_file_version(const struct shard_file *f); /* format version, 1 or 2 */
SHARD_API const struct shard_footer *shard_file_footer(const struct shard_file *f);

/* Read record i's frame bytes into `frame` (replacing its contents).
 * 0, SHARD_ENOTFOUND (i out of range), SHARD_ECORRUPT (the file shrank),
 * SHARD_EIO or SHARD_ENOMEM; the message names the record as above. */
SHARD_API int shard_file_read_frame(const struct shard_file *f, uint64_t i, struct shard_buf *frame,
                                    struct shard_err *err);

/* Read, verify (frame xxh3 + zstd checksum + key/label agree with the
 * footer) and parse record i; view points into `dec`.  Thread-safe as long
 * as each thread uses its own decoder (reads use pread).  Errors as
 * shard_file_read_frame, and SHARD_ECORRUPT for a damaged record. */
SHARD_API int shard_file_read_record(const struct shard_file *f, uint64_t i,
                                     struct shard_record_decoder *dec,
                                     struct shard_record_view *view, struct shard_err *err);

/* Shard file name for shard number n: "shard-000042.shard".  `out` must hold
 * at least 32 bytes. */
SHARD_API void shard_file_name(uint32_t n, char *out, size_t out_size);
#endif /* SHARDKIT_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif
