/*
 * shardkit/manifest.h - DST/manifest.json and the per-sample index.
 *
 * manifest.json describes a dataset: the options that produced it, counts,
 * labels, every shard (file, samples, bytes, xxh3), every rejected input and
 * the sidecar index file (name, bytes, xxh3).  The index, index.jsonl, has one
 * JSON object per line per sample, in stored order (shard, then record), so
 * that ten million samples can be written and read as a stream.  The JSON
 * Schema is manifests/manifest.schema.json; the prose is manifests/FORMAT.md.
 *
 * Keys are JSON strings when they are valid UTF-8; a key that is not is
 * written as "key_hex" (its bytes in hex) instead of "key".
 *
 * Tiers (shardkit/api.h): loading, writing out and releasing manifests and
 * configs, and the field declarations, are stable; checking one field value
 * (shard_field_check*), writing a manifest (shard_manifest_write), index
 * lines and the index reader are experimental (SHARDKIT_EXPERIMENTAL).
 */
#ifndef SHARDKIT_MANIFEST_H
#define SHARDKIT_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/format.h"
#include "shardkit/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHARD_MANIFEST_FILE "manifest.json"
#define SHARD_INDEX_FILE "index.jsonl"
#define SHARD_INDEX_KEYS_FILE "index.keys"   /* the key table of index.jsonl */
#define SHARD_ARCHIVES_FILE "archives.jsonl" /* a folder of archives, stored by archive */
#define SHARD_MANIFEST_FORMAT "shardkit"
/* Version 1: samples are an image and a class.  Version 2: the config
 * declares fields (shardkit/format.h, "Fields") that samples carry; written
 * only for a dataset that has them, so that others stay readable by every
 * reader.  Readers read both. */
#define SHARD_MANIFEST_VERSION 1
#define SHARD_MANIFEST_VERSION_FIELDS 2
/* Version 3: records may hold images other than 8-bit RGB (grey, alpha, 16
 * bits: shardkit/image.h's pixel forms).  Written only for a dataset that
 * has such a record, with or without fields, so that older readers, which
 * would take every record for 8-bit RGB, refuse it instead of misreading;
 * its shards and records keep the version 1 or 2 layout. */
#define SHARD_MANIFEST_VERSION_PIXELS 3

/* A class of a BOXES or MASK field: the number stored (a box's class, a
 * mask's value) and its name. */
struct shard_field_class {
    uint32_t id; /* BOXES: 0..INT32_MAX; MASK: 0..SHARD_MASK_CLASS_MAX */
    char *name;  /* non-empty UTF-8 */
};
#define SHARD_MASK_CLASS_MAX 65535u
#define SHARD_FIELD_CLASSES_MAX 65536u /* classes a field may declare */

/* Where a field of a COCO annotation file (config.coco) comes from. */
#define SHARD_COCO_BBOX "bbox"                 /* BOXES: the annotations' bbox */
#define SHARD_COCO_SEGMENTATION "segmentation" /* MASK: their segmentation, rasterised */
#define SHARD_COCO_INSTANCES "instances"       /* INSTANCES: each one's segmentation alone */

/* A field a dataset declares (config.fields): where its values come from
 * and what they are.  Exactly one of `sidecar`, `column` and `coco` is set. */
struct shard_field_decl {
    char *name; /* 1..SHARD_FIELD_NAME_MAX bytes of [A-Za-z0-9_.-], starting
                 * with a letter or '_' (shard_field_name_valid) */
    enum shard_field_type type;
    uint32_t length; /* a vector type's length; 0 for the others */
    char *sidecar;   /* from the file beside each image: the image's path
                      * without its extension, then this suffix (".txt",
                      * "_mask.png"); or NULL */
    char *column;    /* from the annotation table: this column; or NULL */
    char *folder;    /* MASK only: from a folder mirroring SRC's images, this
                      * directory (ending in '/', relative to SRC unless
                      * absolute): the image's path with ".png" for its
                      * extension below it ("../masks/": a/0001.jpg's
                      * ../masks/a/0001.png); or NULL */
    char *replace;   /* a folder's only: "OLD:NEW", the ending OLD of the image's
                      * stem NEW in its mask's name (Cityscapes'
                      * "_leftImg8bit:_gtFine_labelTrainIds": x_leftImg8bit.png's
                      * mask is x_gtFine_labelTrainIds.png); or NULL */
    int required;    /* 1: a sample without it is rejected; 0: it may be absent */
    char *coco;      /* from the COCO annotation file: SHARD_COCO_BBOX,
                      * SHARD_COCO_SEGMENTATION or SHARD_COCO_INSTANCES; or NULL */
    /* BOXES and MASK: the classes their numbers name, by increasing id,
     * ids and names unique (class_count >= 1); NULL and 0 for the others. */
    struct shard_field_class *classes;
    uint32_t class_count;
    /* MASK only: the value that marks pixels of no class (void, borders,
     * padding: VOC's and Cityscapes' 255), kept as it is and never counted
     * as a class; has_ignore 0: none. */
    int has_ignore;
    uint32_t ignore; /* 0..SHARD_MASK_CLASS_MAX, no class's id */
    /* Only while a run is set up (never in a manifest): the file the
     * command line names with classes=FILE, or NULL. */
    char *classes_file;
};

/* The class of `id` among d's classes: its position, or -1. */
SHARD_API int32_t shard_field_class_find(const struct shard_field_decl *d, uint32_t id);
/* Bytes per value of a MASK field of declaration d: 1 when every class id
 * (and the ignore value) is at most 255, else 2. */
SHARD_API uint32_t shard_field_mask_value_bytes(const struct shard_field_decl *d);
/* 1 when v may be a value of MASK field d: a class's id or its ignore value. */
SHARD_API int shard_field_mask_value_valid(const struct shard_field_decl *d, uint32_t v);

/* Parse a declaration as the command line gives it:
 *     NAME=TYPE[,from=SOURCE][,classes=FILE][,ignore=N][,replace=OLD:NEW][,required|,optional]
 * TYPE as shard_field_type_parse reads it; SOURCE a sidecar suffix (".txt",
 * starting with '.', or "_mask.png", starting with '_'), a folder ending in
 * '/' (a MASK's: "../masks/") or a column of the annotation table (any other
 * text; only when `table` is 1).  Without
 * from=, the column NAME when there is a table, else the sidecar ".NAME".
 * A MASK field needs classes=FILE (kept in d->classes_file: the run reads
 * it) and a sidecar or a folder, and may take ignore=N (0..65535: the value
 * of pixels of no class); the other types take neither.  An IMAGE field
 * comes from a sidecar image (from=.depth.png; without from=, the sidecar
 * ".NAME").  Optional unless `required`.  Fills *d (release with shard_field_decl_release).  0,
 * SHARD_EINVAL with a message quoting the spec, or SHARD_ENOMEM. */
SHARD_API int shard_field_decl_parse(const char *spec, int table, struct shard_field_decl *d,
                                     struct shard_err *err);
/* Free the declaration's strings and zero it.  Accepts NULL. */
SHARD_API void shard_field_decl_release(struct shard_field_decl *d);

/* The stored order (manifests/FORMAT.md, "Sample order"). */
enum shard_order {
    SHARD_ORDER_SOURCE = 0,  /* every candidate of the source sorted, then shuffled */
    SHARD_ORDER_ARCHIVE = 1, /* a folder of archives, archive by archive (config "order") */
};

/* Every option that changes the output bytes. */
struct shard_config {
    uint32_t size; /* training resolution */
    enum shard_fit fit;
    int upscale; /* 0 with --no-upscale */
    enum shard_codec codec;
    int quality;         /* JPEG quality 1..100 */
    int zstd_level;      /* 0: the codec's default (shard_config_zstd_level) */
    uint64_t shard_size; /* target bytes per shard */
    char *labels;        /* shard_labeler_describe(); owned (malloc) */
    int shuffle;         /* 0 with --no-shuffle */
    uint64_t shuffle_seed;
    uint64_t max_pixels;
    uint64_t max_file_bytes;
    uint8_t background[3]; /* alpha composited on this colour */
    /* Fields (format version 2; all zero/NULL in a dataset without them). */
    struct shard_field_decl *fields; /* field_count declarations, owned; a field's number is
                                      * its position here */
    uint32_t field_count;
    char *annotations;        /* the annotation table the fields or labels come from:
                               * "file:<name>:<xxh3 of its bytes>", or NULL; owned */
    char *coco;               /* the COCO annotation file the `coco` fields come from:
                               * "file:<name>:<xxh3 of its bytes>", or NULL; owned */
    uint64_t max_field_bytes; /* largest sidecar file or table value taken as a field */
    enum shard_order order;   /* SHARD_ORDER_SOURCE but for a folder of archives by archive */
    char *classes;            /* a fixed class list (shardify --classes FILE): "file:<name>:<xxh3
                               * of its bytes>", the labels being its classes in its order;
                               * or NULL (the labels sorted); owned */
    char *split;              /* the split folder of SRC converted (shardify --split), or
                               * NULL; owned */
    char *annotations_key;    /* the annotation table's key column when not "key" (a
                               * Hugging Face metadata table's "file_name"), or NULL; owned */
    int boxes_strict;         /* a box partly outside the image rejects its image (shardify
                               * --boxes strict; config "boxes": "strict"); else (0, "clamp")
                               * it is clipped and one wholly outside dropped */
    char *keys;               /* the key list that selected the samples (shardify --keys):
                               * "file:<name>:<xxh3 of its bytes>", or NULL; owned */
    /* The pixel form asked for (config.pixels and config.depth, version 3):
     * channels 1..4 or SHARD_PIXELS_AUTO (each image keeps its own), depth
     * 8, 16 or SHARD_DEPTH_AUTO.  shard_config_init: 3 and 8, the form of
     * every dataset before version 3. */
    uint32_t channels;
    uint32_t depth;
};

/* The default max_field_bytes: 16 MiB.  A caption is ~100 bytes and JSON
 * metadata a few KB; anything near this is a mistake (a misnamed image, a
 * log) that would bloat the records it lands in. */
#define SHARD_MAX_FIELD_BYTES_DEFAULT (16ull << 20)

/* 1 when `name` (NUL-terminated) may name a field: 1..SHARD_FIELD_NAME_MAX
 * bytes of letters, digits, '_', '.', '-', the first a letter or '_'. */
SHARD_API int shard_field_name_valid(const char *name);

/* The field of that name: its number, or -1. */
SHARD_API int32_t shard_config_field(const struct shard_config *c, const char *name);

#ifdef SHARDKIT_EXPERIMENTAL
/* Check a stored value of field `decl` (len bytes, as a record holds it):
 * TEXT valid UTF-8; JSON one well-formed JSON value in UTF-8; INT 8 bytes;
 * FLOAT 8 bytes and finite; FLOAT32 decl->length finite floats; INT64
 * decl->length integers; LABELS a list of label numbers below label_count,
 * none twice; BYTES anything.  0 or SHARD_ECORRUPT with the reason (for
 * JSON: jansson's words, line and column). */
SHARD_API int shard_field_check(const struct shard_field_decl *decl, const uint8_t *value,
                                uint64_t len, uint32_t label_count, struct shard_err *err);
/* The same for a value of a record of width x height: a BOXES value's boxes
 * finite, inside the image (0 <= x0 < x1 <= width, 0 <= y0 < y1 <= height),
 * of declared classes, with no unknown flag; a MASK value of exactly width x
 * height, of the declared value size, every value a declared class id; an
 * IMAGE value of exactly width x height, RGB, raw.  shard_field_check
 * checks those types as far as it can without the size (every box's order
 * and class; a mask's values; an image's header and size). */
SHARD_API int shard_field_check_image(const struct shard_field_decl *decl, const uint8_t *value,
                                      uint64_t len, uint32_t label_count, uint32_t width,
                                      uint32_t height, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Defaults: 512, short, upscale, jpeg, 90, zstd level 0 (the codec's
 * default), 256 MiB, labels NULL ("dir"), shuffle with seed 0, max_pixels
 * 100000000, max_file_bytes 1 GiB, white. */
SHARD_API void shard_config_init(struct shard_config *c);

/* The zstd level records are written with: c->zstd_level, or when that is 0
 * the codec's default, chosen by measuring read speed against size
 * (BENCHMARKS.md §5): -100 for raw pixels, which are stored to be read fast and
 * compress poorly anyway, 3 for jpeg and png, whose payloads are
 * entropy-coded already.  A published manifest always records the level used. */
SHARD_API int shard_config_zstd_level(const struct shard_config *c);

/* Where a sample's field value came from: the identity (size and XXH3-64)
 * of the bytes it was taken from - the sidecar file, or the table's value
 * (see manifests/FORMAT.md, "Fields"). */
struct shard_field_source {
    uint32_t field; /* field number */
    uint64_t source_bytes;
    uint64_t source_xxh3;
};

/* One line of the index. */
struct shard_sample {
    char *key; /* key bytes, NUL-terminated for convenience */
    size_t key_len;
    int32_t label;   /* index into labels, or -1 */
    uint32_t shard;  /* position in the manifest's shards array */
    uint64_t record; /* record number inside that shard */
    uint32_t width;
    uint32_t height;
    uint64_t source_bytes;             /* size of the source file */
    uint64_t source_xxh3;              /* XXH3-64 of the source file's bytes */
    char *warning;                     /* NULL, or the decoder warning the sample was stored
                                        * despite (shard_decode_info.warning); the line's
                                        * "warning" field, absent when NULL */
    struct shard_field_source *fields; /* the fields the sample has, in field number
                                        * order (malloc'd; NULL when none) */
    uint32_t field_count;
    uint32_t channels; /* the stored form (the line's "pixels" and "depth", only when */
    uint32_t depth;    /* other than rgb and 8; 0 is read as 3 and 8) */
};

/* A rejected input. */
struct shard_reject {
    char *key;
    size_t key_len;
    char *reason;
    int has_source; /* 1 when the bytes could be read and hashed */
    uint64_t source_bytes;
    uint64_t source_xxh3;
};

struct shard_manifest_shard {
    char *file; /* "shard-000000.shard" */
    uint64_t samples;
    uint64_t bytes;
    uint64_t xxh3; /* XXH3-64 of the whole file */
};

/* One file of the index (manifests/FORMAT.md, "The index in several
 * files"): the whole index of a dataset written in one run, or one part's of
 * a dataset merged from parts.  Its lines' shard numbers count from the first
 * of the `shards` shards it covers, which follow those of the files before
 * it. */
struct shard_manifest_index {
    char *file; /* "index.jsonl", "index-0-of-4.jsonl" */
    uint64_t entries;
    uint64_t bytes;
    uint64_t xxh3;
    uint32_t shards;
    char *keys_file; /* its key table ("index.keys"), or NULL: written before key tables */
    uint64_t keys_bytes;
    uint64_t keys_xxh3;
};

/* Where an incremental run's dataset came from (the manifest's "lineage",
 * written only by such a run).  Counts are over candidates (samples and
 * rejects) compared by key and source bytes with the previous dataset. */
struct shard_lineage {
    uint64_t previous_manifest_xxh3; /* XXH3-64 of the previous manifest.json's bytes */
    const char *full_rebuild;        /* NULL, or why nothing could be reused (owned elsewhere) */
    uint64_t added;                  /* keys the previous dataset did not have */
    uint64_t changed;                /* keys whose source bytes differ (or were unreadable) */
    uint64_t unchanged;              /* keys with the same source bytes */
    uint64_t removed;                /* keys of the previous dataset no longer in SRC */
    uint64_t reused;                 /* unchanged samples whose record was copied as bytes */
    uint64_t relabeled;              /* unchanged samples whose label number moved: the stored
                                      * payload re-framed, not decoded */
    uint64_t rejected_again;         /* unchanged rejects, rejected again without decoding */
    uint64_t reconverted;            /* unchanged samples converted again: their previous
                                      * record was damaged or unreadable */
    uint64_t refielded;              /* a dataset with fields: unchanged images whose fields
                                      * changed (a corrected caption): the stored payload in a
                                      * new frame with the new fields, not decoded; written only
                                      * in a dataset with fields */
};

/* A sidecar file with no image to go with (its stem is no image's). */
struct shard_orphan {
    char *key;
    size_t key_len;
};

struct shard_manifest {
    uint16_t version; /* SHARD_MANIFEST_VERSION or ..._FIELDS (as loaded; written
                       * as the format version of its config says) */
    struct shard_config config;
    char *source_kind; /* "directory" or "archive" */
    uint64_t samples;
    uint64_t rejected;
    uint64_t ignored;
    uint64_t unlabeled;      /* samples without a label */
    uint64_t warned;         /* samples stored despite a decoder warning (counts.warned,
                              * written only when not 0) */
    char **labels;           /* label_count class names, sorted by bytes */
    uint64_t *label_samples; /* samples per label (counts.by_label) */
    uint32_t label_count;
    struct shard_manifest_shard *shards;
    uint32_t shard_count;
    struct shard_reject *rejects;
    uint64_t reject_count;
    char *index_file; /* "index.jsonl" */
    uint64_t index_bytes;
    uint64_t index_xxh3;
    uint64_t index_entries;
    /* An incremental run's lineage, or NULL (written only when set; not
     * read back by shard_manifest_load). */
    const struct shard_lineage *lineage;
    /* Version 2 only. */
    uint64_t *field_samples;      /* per declared field: samples that have it (counts.fields) */
    uint64_t sidecars;            /* sidecar files stored as fields (counts.sidecars) */
    struct shard_orphan *orphans; /* sidecar files without an image, sorted by key */
    uint64_t orphan_count;        /* counts.orphans */
    uint64_t annotation_rows;     /* rows of the annotation table (counts.annotation_rows) */
    uint64_t annotation_rows_unmatched; /* ... naming no candidate of the source */
    /* With config.coco: its images and annotations, and those of no
     * candidate of the source (counts.coco_*). */
    uint64_t coco_images, coco_images_unmatched;
    uint64_t coco_annotations, coco_annotations_unmatched;
    /* With a boxes field: boxes stored, and boxes the --fit crop window
     * left empty or less than a pixel across, not stored (counts.boxes,
     * counts.boxes_dropped). */
    uint64_t boxes, boxes_dropped;
    /* The index files in shard order (index_count of them, at least one once
     * loaded).  A dataset written in one run has one, which index_file,
     * index_bytes, index_xxh3 and index_entries also describe; one merged
     * from parts has one per part, and then index_file is NULL and
     * index_bytes and index_entries are the files' totals.  With one file
     * (or index_count 0) a writer writes the index those four describe, with
     * the key table indexes[0] names. */
    struct shard_manifest_index *indexes;
    uint32_t index_count;
    /* A folder of archives stored by archive (source.archives): its
     * archives.jsonl, or NULL. */
    char *archives_file;
    uint64_t archives_entries;
    uint64_t archives_bytes;
    uint64_t archives_xxh3;
    /* The stored images ("stored"): their form, the widest of the records'
     * (colour if one has colour, alpha if one has alpha, 16 bits if one has
     * them; a reader widens a narrower record to it), 3 and
     * 8 before version 3; and their size when every sample has the same,
     * else 0 x 0 (then "stored" has no "size"). */
    uint32_t channels;
    uint32_t depth;
    uint32_t stored_width, stored_height;
    int mixed; /* records of more than one form ("stored": "mixed": true) */
};

/* Read and validate DST/manifest.json into *m (fields owned by m; release
 * with shard_manifest_release).  Checks types, required fields, that counts
 * agree with each other (samples == sum of shard samples, by_label sums,
 * rejected == number of rejects, warned <= samples) and that file names are
 * plain names with no '/'.  The key of a reject may be of any length: a
 * key longer than SHARD_KEY_MAX is itself a reason to reject.
 * SHARD_ENOTFOUND, SHARD_ECORRUPT (naming the field) or SHARD_EIO. */
SHARD_API int shard_manifest_load(const char *dir, struct shard_manifest *m, struct shard_err *err);

/* The same checks on manifest.json text already in memory (len bytes; no
 * NUL needed), e.g. fetched over HTTP.  SHARD_ECORRUPT or SHARD_ENOMEM. */
SHARD_API int shard_manifest_load_buffer(const char *text, size_t len, struct shard_manifest *m,
                                         struct shard_err *err);

#ifdef SHARDKIT_EXPERIMENTAL
/* Write *m as DST/manifest.json atomically (temporary file, fsync, rename,
 * fsync of the directory).  DST itself is opened as given (a symbolic link
 * to a directory is followed, like cd); inside it no link is followed.  The
 * bytes depend on *m only. */
SHARD_API int shard_manifest_write(const char *dir, const struct shard_manifest *m,
                                   struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Serialise m to JSON text (malloc'd, NUL-terminated) in *out. */
SHARD_API int shard_manifest_dump(const struct shard_manifest *m, char **out,
                                  struct shard_err *err);

SHARD_API void shard_manifest_release(struct shard_manifest *m); /* accepts NULL */
SHARD_API void shard_config_release(struct shard_config *c);     /* accepts NULL */

/* Serialise the config alone (the manifest's "config" object), compact and
 * with a fixed key order; malloc'd in *out. */
SHARD_API int shard_config_dump(const struct shard_config *c, char **out, struct shard_err *err);

/* ---- index lines -------------------------------------------------------- */

#ifdef SHARDKIT_EXPERIMENTAL
/* Append one index line (compact JSON and '\n') for s to out.  A sample
 * with fields needs their names: use shard_sample_line_fields. */
SHARD_API int shard_sample_line(const struct shard_sample *s, struct shard_buf *out,
                                struct shard_err *err);
/* The same in a dataset of config c: the sample's fields are written by name
 * ("fields":{"caption":{"source_bytes":12,"source_xxh3":"..."}}). */
SHARD_API int shard_sample_line_fields(const struct shard_sample *s, const struct shard_config *c,
                                       struct shard_buf *out, struct shard_err *err);
/* Append one line for a rejected input ({"key","reason",...}). */
SHARD_API int shard_reject_line(const struct shard_reject *r, struct shard_buf *out,
                                struct shard_err *err);

/* Parse a line made by shard_sample_line or shard_reject_line.  Returns 1 for
 * a sample (filling *s), 2 for a reject (filling *r), negative on error.
 * The strings are malloc'd: free with shard_sample_release /
 * shard_reject_release. */
SHARD_API int shard_line_parse(const char *line, size_t len, struct shard_sample *s,
                               struct shard_reject *r, struct shard_err *err);
/* The same for a line of a dataset of config c (NULL: no fields): a field
 * named in the line must be one c declares.  SHARD_ECORRUPT naming it. */
SHARD_API int shard_line_parse_fields(const char *line, size_t len, const struct shard_config *c,
                                      struct shard_sample *s, struct shard_reject *r,
                                      struct shard_err *err);

SHARD_API void shard_sample_release(struct shard_sample *s); /* accepts NULL */
SHARD_API void shard_reject_release(struct shard_reject *r); /* accepts NULL */

#endif /* SHARDKIT_EXPERIMENTAL */

/* Streaming reader of an index file. */
struct shard_index_reader;

#ifdef SHARDKIT_EXPERIMENTAL
SHARD_API int shard_index_reader_open(struct shard_index_reader **out, const char *path,
                                      struct shard_err *err);
/* Lines of a dataset with fields are parsed against its config, which must
 * outlive the reader (NULL: none, the default). */
SHARD_API void shard_index_reader_set_config(struct shard_index_reader *r,
                                             const struct shard_config *c);
/* Next sample: 1 (filled; s->key valid until the next call), 0 at the end,
 * negative on error (naming the line number).  Also hashes the bytes read. */
SHARD_API int shard_index_reader_next(struct shard_index_reader *r, struct shard_sample *s,
                                      struct shard_err *err);
/* Bytes read so far. */
SHARD_API uint64_t shard_index_reader_bytes(const struct shard_index_reader *r);
SHARD_API void shard_index_reader_close(struct shard_index_reader *r); /* accepts NULL */

#endif /* SHARDKIT_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif
