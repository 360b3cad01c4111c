/*
 * shardkit/shardify.h - the conversion: source images -> shards + manifest.
 *
 * shardify_run() scans SRC (a directory or an archive), decodes, resizes and
 * encodes every candidate on `threads` OpenMP threads, and writes shards and
 * the manifest into DST.  Guarantees:
 *  - Deterministic: the same input and config give byte-identical shards,
 *    index and manifest, whatever the thread count (records are built in
 *    parallel but appended in stored order by one thread at a time).
 *  - Atomic: a shard appears under its final name only when complete (written
 *    as a temporary, fsync'd, renamed, directory fsync'd); manifest.json is
 *    published last, the same way.  A failed run publishes no manifest.
 *  - Resumable: after a crash or kill, resume keeps the finished shards whose
 *    journal and bytes check out, redoes the rest and ends byte-identical to
 *    an uninterrupted run.
 *  - Exclusive: DST/.shardify/lock (flock) refuses a second concurrent run;
 *    a lock left by a killed run is released by the kernel and taken over.
 *  - Confined: DST is opened once, as given (a symbolic link given as DST
 *    is followed, like cd); inside DST no link is ever followed.  Every file
 *    and directory the run creates, writes, renames or removes is reached
 *    relative to DST or DST/.shardify opened once, with O_NOFOLLOW/O_EXCL and
 *    *at() calls: a link where shardify keeps its own file or directory is an
 *    error (SHARD_EEXIST) naming it, and nothing outside DST is touched.
 *  - Check first, create second: a refused run leaves nothing it created
 *    (not even DST), and a failed run leaves the work directory only when it
 *    holds something to resume.
 *
 * Tiers (shardkit/api.h): stable.
 */
#ifndef SHARDKIT_SHARDIFY_H
#define SHARDKIT_SHARDIFY_H

#include <signal.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/manifest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The message of a run stopped by shardify_options.cancel. */
#define SHARDIFY_INTERRUPTED \
    "interrupted: finished shards are kept; run again with --resume to continue"

/* Working directory inside DST for temporary shards, journals and the lock. */
#define SHARDIFY_WORK_DIR ".shardify"
/* Timing and host facts of the last run (not part of the dataset's identity). */
#define SHARDIFY_RUN_FILE "run.json"
/* Conversion in parts (see shardify_options.parts and shardkit/merge.h): part
 * I of N is written to DST/parts/I-of-N, a dataset of that part's samples
 * plus SHARDIFY_PART_FILE, what the merge checks the parts agree on. */
#define SHARDIFY_PARTS_DIR "parts"
#define SHARDIFY_PART_FILE "part.json"
#define SHARDIFY_MAX_PARTS 1000

enum shardify_mode {
    SHARDIFY_FRESH = 0, /* DST must be empty or missing */
    SHARDIFY_OVERWRITE, /* replace a previous output in DST */
    SHARDIFY_RESUME,    /* continue an interrupted run in DST */
};

struct shardify_progress {
    uint64_t done;  /* candidates finished (samples + rejects) */
    uint64_t total; /* candidates to convert (0 while unknown, e.g. archives) */
    uint64_t samples;
    uint64_t rejected;
    uint64_t bytes_out; /* shard bytes written */
    double elapsed;     /* seconds since the start of the run */
    const char *phase;  /* "scan", "convert", "spool", "publish" ... */
};

struct shardify_options {
    /* Output options.  config.labels is ignored: the run fills it in from
     * `labels` (see shard_labeler_describe). */
    struct shard_config config;
    const char *labels; /* label spec for shard_labeler_new; NULL: "dir" */
    int threads;        /* 0: shard_available_cpus() */
    int fail_on_reject; /* --on-error fail */
    enum shardify_mode mode;
    /* When non-NULL and set non-zero (e.g. from a signal handler), the run
     * stops at the next sample boundary, leaves a resumable state and
     * returns SHARD_EINTR with the message SHARDIFY_INTERRUPTED.  Any
     * failure once it is set (an open that the signal interrupted: install
     * the handler without SA_RESTART) is reported so too. */
    volatile sig_atomic_t *cancel;
    /* Called from the thread that appends records, at most ~10 times per
     * second, and once at the end of each phase.  May be NULL. */
    void (*progress)(const struct shardify_progress *p, void *user);
    void *progress_user;
    /* An s3:// DST is written through a local work directory (the lock, the
     * resume state, each file until it is uploaded): this one, or NULL for
     * $XDG_CACHE_HOME/shardkit/shardify/s3-BUCKET-HASH (~/.cache when
     * XDG_CACHE_HOME is unset).  Must be NULL for a local DST. */
    const char *work_dir;
    /* Convert part `part` (0-based) of `parts` (0: the whole dataset)
     * into DST/parts/<part>-of-<parts>.  Every part lists SRC (a directory
     * or an S3 prefix, not an archive) and computes the whole sample order,
     * then converts one contiguous range of it: the ranges split the source
     * bytes (file sizes; an S3 prefix: the file count) as evenly as whole
     * files allow.  Part I's shards are numbered from
     * I * (1000000 / parts), so the parts' shard names never collide and a
     * merge keeps every shard file as it is. */
    uint32_t part;
    uint32_t parts;
    /* Incremental run: a published dataset (a local directory) built with
     * the same config from an earlier state of SRC, or NULL.  A sample whose
     * key and source bytes are unchanged keeps PREV's record, its frame
     * copied as bytes after checking its xxh3 against PREV's footer (nothing
     * is decoded); only new and changed files are converted; the dataset is
     * byte-identical to a run without it, but for the manifest's "lineage".
     * A config that differs from PREV's is SHARD_EMISMATCH naming the option,
     * unless `incremental_or_full`: then it is a full rebuild, saying why. */
    const char *incremental;
    int incremental_or_full;
    /* Fields (format version 2, manifests/FORMAT.md "Fields"): field_count
     * declarations as shard_field_decl_parse reads them
     * ("caption=text,from=.txt,required"), and the annotation table
     * (JSON Lines or CSV keyed by the sample's key) that `from=COLUMN`
     * fields read, or NULL.  config.fields and config.annotations are
     * ignored: the run fills them in from these; config.max_field_bytes is
     * the largest value taken (0: SHARD_MAX_FIELD_BYTES_DEFAULT).  `labels`
     * may then also be "sidecar:SUFFIX" (the class is the sidecar's text)
     * or "column:NAME" (the table's). */
    const char *const *fields;
    uint32_t field_count;
    const char *annotations;
    /* A COCO annotation file (instances_*.json), or NULL: its images are
     * matched with the samples by file_name (= the key), and it declares
     * the field "boxes" (type boxes: each annotation's bbox and category
     * id, classes the file's categories), and with coco_mask also "mask"
     * (type mask: the annotations' segmentation rasterised, 0 where none;
     * classes "background" 0 and the categories), after the --field ones.
     * Boxes and masks, like mask fields from sidecars, go through the
     * image's orientation, resize and crop (manifests/FORMAT.md "Boxes and
     * masks"); they need a full run (no incremental run). */
    const char *coco;
    int coco_mask;
    /* With coco: also the field "masks" (type instances, Mask R-CNN's
     * masks): one mask per box of "boxes", in its order, each annotation's
     * segmentation rasterised alone, placed as the boxes are. */
    int coco_instances;
    /* config.boxes_strict (--boxes strict): a box partly outside its image
     * rejects the image, as before; by default (--boxes clamp, as the COCO and
     * torchvision references) it is clipped to the image, and one wholly
     * outside it (or empty) is dropped and counted in counts.boxes_dropped. */
    /* A fixed class list (--classes FILE), or NULL: a JSON array of names or
     * of {"id", "name"} objects (ids 0..N-1), or one name a line.  The
     * labels are its classes in its order, whatever the source holds (a
     * class no sample has keeps its place), recorded as config.classes.  A
     * class the source gives is looked up by name; one no class of the list
     * has is, when it is a class number below N (WebDataset's numeric .cls),
     * the list's class of that number, else an error naming the sample.  It
     * needs no first pass over a folder of archives, so that parts of one
     * take named classes. */
    const char *classes;
    /* The annotation table's key column (--key-column), or NULL: "key" (or
     * "key_hex" in JSON Lines).  Recorded as config.annotations_key when it
     * is another; a Hugging Face metadata table's is SHARD_METADATA_KEY. */
    const char *annotations_key;
    /* Convert the split folder SRC/split (--split NAME: "train"), or NULL.
     * SRC is then the dataset's root, and the class list is every split's:
     * the classes of SRC's other split folders (shard_source_splits) are
     * labels too, with no sample, so that label numbers mean the same in
     * every split converted so.  They are read from the keys (--labels dir,
     * regex:, a CSV file); labels from a sidecar or column need `classes`.
     * Recorded as config.split. */
    const char *split;
    /* A key list selecting the samples (--keys FILE: VOC's
     * ImageSets/Segmentation/train.txt), or NULL: one key or stem a line; a
     * candidate whose key or stem is listed is converted, the others are
     * counted as ignored, and a listed key of no candidate is an error.  A
     * directory or S3 source.  Recorded as config.keys. */
    const char *keys;
    /* SRC is a directory of archives (WebDataset's tar shards, as
     * img2dataset writes them): every archive directly in it (.tar, .tar.gz,
     * .tgz, .tar.bz2, .tar.xz, .tar.zst, .zip), in name order, is read as
     * part of one source whose keys are the archive's name, '/', and the
     * member's ("00000.tar/000123.jpg"); other files are ignored.  With
     * config.order SHARD_ORDER_ARCHIVE it is stored archive by archive
     * (manifests/FORMAT.md "Sample order"): each archive read, converted and
     * written before the next, so that memory follows one archive, `part`
     * takes whole archives and `incremental` reuses unchanged ones whole. */
    int archives;
    /* The most bytes of archive entries the threads hold at once while they
     * convert them (0: SHARDIFY_MEMORY_DEFAULT): an entry waits for room
     * before it is read; one larger than this is read alone. */
    uint64_t memory;
    /* Publish a dataset of no sample (an empty SRC, or every candidate
     * rejected).  Without it such a run publishes nothing and fails: a run
     * whose output is of no use is never a success.  A part (`parts`) may
     * be empty either way. */
    int allow_empty;
};

/* The default of shardify_options.memory: 1 GiB. */
#define SHARDIFY_MEMORY_DEFAULT (1ull << 30)

SHARD_API void shardify_options_init(struct shardify_options *o);

/* Where a run's time went.  Wall seconds of the phases, and thread-seconds
 * (summed over the threads) of the per-file work inside convert. */
struct shardify_timing {
    double scan;    /* listing SRC, labels, order (wall) */
    double convert; /* the convert phase (wall) */
    double publish; /* index, manifest, cleanup (wall) */
    double write;   /* appending records to shards, fsync included: one writer at a
                     * time, so wall seconds inside convert */
    double read;    /* reading source files (thread-seconds) */
    double hash;    /* hashing them (thread-seconds) */
    double decode;  /* decode, resize, encode, frame (thread-seconds) */
    double copy;    /* reading and checking reused records (thread-seconds) */
};

struct shardify_summary {
    uint64_t candidates;
    uint64_t samples;
    uint64_t rejected;
    uint64_t ignored;
    uint64_t unlabeled; /* samples without a label */
    uint32_t shards;
    uint32_t reused_shards; /* kept from an interrupted run (resume) */
    uint64_t bytes_in;      /* source bytes read */
    uint64_t bytes_out;     /* shard bytes */
    double seconds;
    int threads;
    /* The rejects, sorted by key (owned; freed by shardify_summary_release). */
    struct shard_reject *rejects;
    uint64_t reject_count;
    uint32_t labels;               /* distinct labels */
    uint64_t label_rows;           /* rows of the --labels CSV file (0 for other rules) */
    uint64_t label_rows_unmatched; /* ... whose key names no candidate of SRC */
    /* Why the run record (SHARDIFY_RUN_FILE) could not be written, or "".
     * The dataset is published all the same: the record is not part of it. */
    char run_record_error[SHARD_ERRMSG_SIZE];
    /* An s3:// DST: why the multipart uploads other runs left below its
     * prefix could not all be looked for or aborted (a store without
     * ListMultipartUploads, such as s3rver), or "".  They cost storage, not
     * correctness: the run goes on. */
    char uploads_warning[SHARD_ERRMSG_SIZE];
    /* Samples stored despite a decoder warning that lost no pixel data
     * (counts.warned), and those samples in stored order: key, shard,
     * record, warning ... as in their index lines (owned, like rejects). */
    uint64_t warned;
    struct shard_sample *warnings;
    uint64_t warning_count;
    struct shardify_timing timing;
    /* An incremental run (options.incremental): what it did, as recorded in
     * the manifest's "lineage"; has_lineage is 0 for other runs. */
    int has_lineage;
    struct shard_lineage lineage; /* lineage.full_rebuild points into full_rebuild */
    char full_rebuild[SHARD_ERRMSG_SIZE];
    /* Fields (field_count 0 when none is declared): the declared names and
     * the samples that have each, in field number order (owned, freed by
     * shardify_summary_release); sidecar files stored as fields; sidecar
     * files of no image (the manifest lists them); the annotation table's
     * rows and those naming no file of SRC. */
    uint32_t field_count;
    char **field_names;
    uint64_t *field_samples;
    uint64_t sidecars;
    uint64_t orphans;
    uint64_t annotation_rows;
    uint64_t annotation_rows_unmatched;
    /* With a COCO file: its images and annotations, and those of no file of
     * SRC; with a boxes field: boxes stored, and those the --fit crop
     * window left empty (not stored). */
    uint64_t coco_images;
    uint64_t coco_images_unmatched;
    uint64_t coco_annotations;
    uint64_t coco_annotations_unmatched;
    uint64_t boxes;
    uint64_t boxes_dropped;
    /* The stored pixels (format version 3): samples by channels (1..4) and
     * depth (pixel_forms[c][0] 8 bits, [c][1] 16 bits), and the form the
     * dataset reads as, the widest of them (3 and 8 of none); mixed when
     * the samples are of more than one form, each narrower record widened
     * when read. */
    uint64_t pixel_forms[5][2];
    uint32_t channels;
    uint32_t depth;
    int mixed;
};

/* Convert SRC into DST.  SRC is a directory, an archive file or an
 * "s3://BUCKET/PREFIX" (its objects, listed and fetched like the files of a
 * directory); DST a directory or an "s3://BUCKET/PREFIX" (written through
 * work_dir: each shard uploaded when finished, index.jsonl next,
 * manifest.json last).  S3 settings as the AWS CLI finds them (see
 * shard_dataset_open).  Returns 0 when the dataset was published (rejects
 * allowed: see summary), or an error: SHARD_EINVAL (bad option or SRC, DST
 * inside SRC or SRC inside DST, an archive SRC without entries, o->labels
 * other than "none" that labels no sample), SHARD_EEXIST (DST not empty /
 * not ours / nothing to resume / a symbolic link inside it), SHARD_ELOCKED,
 * SHARD_EREJECTED (fail_on_reject and an input was bad), SHARD_EINTR, SHARD_EIO
 * (disk full ...).  On error no new manifest is published, and *summary holds
 * the counts known when the run stopped (candidates found, samples and
 * rejects converted, shards finished, bytes ...; the rejects themselves are
 * listed only by a published run).  Release *summary in both cases. */
SHARD_API int shardify_run(const char *src, const char *dst, const struct shardify_options *o,
                           struct shardify_summary *summary, struct shard_err *err);

SHARD_API void shardify_summary_release(struct shardify_summary *s); /* accepts NULL */

/* Can the dataset `prev` be the previous dataset of an incremental run
 * from `src` into `dst` with options `o` (o->incremental is ignored)?
 * Reads only its manifest.  0; SHARD_EINVAL when it cannot be by where it
 * is (not a local directory, DST itself, an archive src) or o->labels is
 * bad; SHARD_EMISMATCH when an option differs, naming it ("--size differs
 * from the previous dataset 'P' (256 there, 512 here)"), or when o declares
 * boxes or mask fields (made as their images are converted: a full run
 * only, whatever PREV is); SHARD_EUNSUPPORTED for another format version; SHARD_ENOTFOUND,
 * SHARD_ECORRUPT, SHARD_EIO as shard_manifest_load says. */
SHARD_API int shardify_check_previous(const char *prev, const char *src, const char *dst,
                                      const struct shardify_options *o, struct shard_err *err);

#ifdef __cplusplus
}
#endif
#endif
