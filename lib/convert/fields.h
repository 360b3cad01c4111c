/* fields.h - a run's fields: declarations, where their values come from
 * (sidecar files, an annotation table), and building a sample's field area
 * (private; see manifests/FORMAT.md "Fields").
 *
 * struct sk_field_sources holds where each field's values come from.  The
 * run asks, in this order:
 *   sk_field_sources_new         parse --field, load --annotations, set up
 *                                the sidecar suffixes (the config gets its
 *                                fields)
 *   sk_field_sources_sidecars    for the scan: the files to collect as
 *                                sidecars
 *   sk_field_sources_resolve     match the sidecar files with the candidates
 *   sk_field_sources_read_names  before labels are numbered: the class names
 *                                of a sidecar or column class, and the names
 *                                of every `labels` field (read once, kept)
 *   sk_field_sources_number      the names' numbers, once the labels are
 *                                sorted
 *   sk_field_sources_build       per sample, on any thread: the field area
 */
#ifndef SHARDKIT_CONVERT_FIELDS_H
#define SHARDKIT_CONVERT_FIELDS_H

#include <stdint.h>

#include "shardkit/format.h"
#include "shardkit/manifest.h"
#include "shardkit/shardify.h"
#include "shardkit/source.h"

struct sk_sidecars;
struct sk_field_sources;

/* Read a sidecar file: `file` is its position among the sidecar files
 * (sk_sidecars_file), `key` its key.  Into buf (replacing its contents), at
 * most max_bytes (else SHARD_ELIMIT "file of N bytes exceeds ...").  On any
 * other error *fatal says whose fault it is: 0 the file's (it vanished,
 * cannot be read: the sample is rejected), 1 not (the store cannot be
 * reached, the run was interrupted, memory ran out: the run stops). */
typedef int (*sk_sidecar_read_fn)(void *ctx, size_t file, const char *key, uint64_t max_bytes,
                                  struct shard_buf *buf, int *fatal, struct shard_err *err);

/* The fields of options o: their declarations go to c (fields, field_count,
 * annotations, max_field_bytes), which must outlive the sources.  `labels` is
 * the label spec: "sidecar:SUFFIX" and "column:NAME" are read here.  *out
 * is NULL (and c untouched) when there are no fields and no such labels.
 * SHARD_EINVAL for a bad declaration or table (naming it), or an error
 * reading the table. */
int sk_field_sources_new(struct sk_field_sources **out, const struct shardify_options *o,
                         const char *labels, struct shard_config *c, struct shard_err *err);
void sk_field_sources_free(struct sk_field_sources *p); /* accepts NULL */

/* The sidecar files to collect while scanning, or NULL (owned by p). */
struct sk_sidecars *sk_field_sources_sidecars(struct sk_field_sources *p);
/* Match the sidecar files with the candidates (see sk_sidecars_resolve),
 * and the files of each mask folder (from=DIR/, relative to src, a
 * directory) with them the same way. */
int sk_field_sources_resolve(struct sk_field_sources *p, const char *src,
                             const struct shard_keylist *keys, struct shard_refusals *refused,
                             struct shard_err *err);
/* The files of no image: SRC's sidecar files, then each mask folder's
 * (named DIR/ + its path), each in key order. */
uint64_t sk_field_sources_orphan_count(const struct sk_field_sources *p); /* accepts NULL */
const char *sk_field_sources_orphan(const struct sk_field_sources *p, uint64_t i, size_t *len);

/* A directory of archives read archive by archive: forget the candidates
 * of the archive done (its sidecar files, names read ahead and their
 * numbers), moving its sidecar orphans to `orphans` (unless NULL). */
int sk_field_sources_next_archive(struct sk_field_sources *p, struct shard_keylist *orphans,
                                  struct shard_err *err);
/* An annotation table (a --annotations file): 1 when there is one. */
int sk_field_sources_has_table(const struct sk_field_sources *p);

/* 1 when names must be read before labels are numbered. */
int sk_field_sources_has_names(const struct sk_field_sources *p);
/* Read the class name and the `labels` names of every candidate (n of
 * them, keys[i]; refused ones are skipped) with read(ctx, ...).  A value
 * that cannot be read or parsed is kept as the reason its sample will be
 * rejected.  0, or SHARD_ENET/SHARD_EINTR/SHARD_ENOMEM (the run stops). */
int sk_field_sources_read_names(struct sk_field_sources *p, const struct shard_keylist *keys,
                                const struct shard_refusals *refused, sk_sidecar_read_fn read,
                                void *ctx, struct shard_err *err);
/* After converting `samples` (more than 0) of which field_samples[f] have
 * field f: a declared field no sample has is an error saying where it was
 * looked for ("a declared thing that matched nothing").  0 or SHARD_EINVAL;
 * accepts NULL (no field). */
int sk_field_sources_check_used(const struct sk_field_sources *p, const uint64_t *field_samples,
                                uint64_t samples, struct shard_err *err);

/* 1 when the class comes from a sidecar or a column (--labels sidecar:,
 * column:), whose values may be class numbers (order.c). */
int sk_field_sources_class_from_values(const struct sk_field_sources *p); /* accepts NULL */
/* The class name of candidate `cand` from a sidecar or column: 1 with
 * *name and *len (owned by p), 0 when it has none.  -1 when the class does not
 * come from a sidecar or column (ask the labeler). */
int sk_field_sources_class(const struct sk_field_sources *p, uint64_t cand, const char **name,
                           size_t *len);
/* Every name of candidate `cand`'s `labels` fields, i = 0, 1, ...: 1 with
 * *name and *len, 0 after the last. */
int sk_field_sources_label_name(const struct sk_field_sources *p, uint64_t cand, size_t i,
                                const char **name, size_t *len);
/* The number of each name read (its position in the sorted label list):
 * number(ctx, name, len) returns it (>= 0).  0 or SHARD_ENOMEM. */
int sk_field_sources_number(struct sk_field_sources *p,
                            int32_t (*number)(void *ctx, const char *name, size_t len), void *ctx,
                            struct shard_err *err);

/* Rows of the annotation table, and those naming no candidate (0 without a
 * table).  0 or SHARD_ENOMEM. */
uint64_t sk_field_sources_table_rows(const struct sk_field_sources *p);
int sk_field_sources_table_unmatched(const struct sk_field_sources *p,
                                     const struct shard_keylist *keys, uint64_t *unmatched,
                                     struct shard_err *err);

/* What building one sample gives besides the field area. */
struct sk_field_result {
    struct shard_field_source sources[SHARD_FIELDS_MAX]; /* per field present, in order */
    uint32_t count;
    uint32_t sidecars;      /* sidecar files stored */
    double read_seconds;    /* spent reading sidecar files */
    uint64_t bytes_read;    /* their bytes */
    uint64_t boxes;         /* boxes stored */
    uint64_t boxes_dropped; /* boxes the crop window left empty */
};

struct sk_placement;

/* 1 when a field is a boxes or mask field: its value follows the image's
 * geometry, so sk_field_sources_build needs the image converted first. */
int sk_field_sources_geometric(const struct sk_field_sources *p);

/* The field area of candidate `cand` (key[0..len)) into `out` (cleared
 * first): each declared field's value from its sidecar (read with read(ctx,
 * ...), into `scratch`), its table row or the COCO file, parsed and
 * checked; boxes and masks placed where `place` (NULL without such fields)
 * says the image went.  0; a reason to reject the sample in *why with
 * SHARD_ECORRUPT (a value that cannot be taken, a required field missing,
 * ...), naming the field and the file; or SHARD_ENET/SHARD_EINTR/
 * SHARD_ENOMEM (the run stops).  Thread-safe. */
int sk_field_sources_build(const struct sk_field_sources *p, uint64_t cand, const char *key,
                           size_t len, const struct sk_placement *place, sk_sidecar_read_fn read,
                           void *ctx, struct shard_buf *scratch, struct shard_field_set *out,
                           struct sk_field_result *res, struct shard_err *why);

/* The COCO file's images and annotations (0 without one), and those of no
 * candidate of `keys`.  0 or SHARD_ENOMEM. */
uint64_t sk_field_sources_coco_images(const struct sk_field_sources *p);
uint64_t sk_field_sources_coco_annotations(const struct sk_field_sources *p);
int sk_field_sources_coco_unmatched(const struct sk_field_sources *p,
                                    const struct shard_keylist *keys, uint64_t *images,
                                    uint64_t *annotations, struct shard_err *err);

#endif
