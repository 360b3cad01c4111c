/*
 * shardkit/verify.h - proving that a dataset is what its manifest says, and
 * the same experiment as its source: the engine behind `shardcheck`.
 *
 * A faster input pipeline is only worth having if the experiment is
 * unchanged.  shard_verify() checks, and lists every difference it finds:
 *
 *  default   manifest.json is well-formed and self-consistent; every listed
 *            shard exists with the listed size and whole-file xxh3 (this
 *            alone catches a changed byte anywhere in a shard); headers,
 *            trailers and footers parse; each footer's record count equals
 *            the manifest's; index.jsonl has the listed size and xxh3 and
 *            one line per record, in stored order, with the footer's key and
 *            label; keys are unique; counts.samples, counts.unlabeled and
 *            counts.by_label equal the labels the footers hold; no unlisted
 *            shard file lies in DST.  Format version 2 (fields): every shard is
 *            of the manifest's version; every index line names only
 *            declared fields and every required one; counts.fields and
 *            counts.sidecars equal what the lines name; the orphans are
 *            listed once each, sorted, named like sidecars.
 *  deep      also decompress and decode every record: frame xxh3, zstd
 *            checksum, key and label against the footer, codec equal to the
 *            config's, payload decodes to the declared size, size equal to the
 *            index's and consistent with the config's size/fit.  Fields:
 *            each record's field area holds declared fields of their
 *            declared types, with values valid for them (shard_field_check:
 *            UTF-8 text, one JSON value, finite floats, vector lengths,
 *            label numbers below the label count and none twice), every
 *            required field, and the very fields its index line names; a
 *            value identified by itself (text, json and bytes are their
 *            source bytes; a table's value is identified as stored) hashes
 *            like the identity the line names; counts.fields and
 *            counts.sidecars equal what the records hold.
 *  source    scan SRC as shardify does and prove identity: every candidate
 *            file is a sample with the same key, source_bytes and
 *            source_xxh3, or a listed reject (with the same identity when
 *            one was recorded); nothing extra, nothing missing; counts.ignored
 *            matches; each sample's label re-derived from its key with the
 *            config's label rule equals its stored label, so per-label counts
 *            are equal.  Fields: SRC's sidecar files are found and matched
 *            with the images as shardify does; each sample (whose image is in SRC)
 *            has a sidecar field exactly when SRC holds its file, with the
 *            size and xxh3 its index line names; with `annotations`, the
 *            table is the config's and each column field's value, parsed as
 *            shardify parses it, has the identity its line names; with deep
 *            too, each number, vector and label list parsed from a sidecar
 *            again equals the record's; images sharing a stem are
 *            rejects naming each other; the manifest's orphans are SRC's
 *            sidecar files of no image; a class from a sidecar or a column
 *            is re-derived from it.
 *  fidelity  re-run the conversion (decode, resize, encode: exactly
 *            shardify's pipeline and config) on N samples spread evenly over
 *            stored order and compare the stored pixels with the re-run's
 *            (both payloads decoded): raw and png must be identical; jpeg
 *            must reach min_psnr (identical bytes give infinity; another
 *            build of libjpeg-turbo or of the resizer may change pixels by a
 *            level, which measured above 40 dB after re-encoding at q90;
 *            another image, a wrong orientation or colour conversion falls
 *            far below).  The loss of
 *            the JPEG encoding itself (stored pixels against the re-run's
 *            pixels before encoding) is reported as loss_psnr.
 *  visitation  for each world size W and epochs 0..E-1, build every rank's
 *            epoch plan (shardkit/dataset.h) and prove that each sample is
 *            visited exactly once per epoch (with the remainder option:
 *            at most once with drop, the dropped count equal to N mod W; at
 *            least once with pad, the repeats equal to W*ceil(N/W) - N), and
 *            that plans are deterministic.
 *
 * Every problem names what it is about, lower-case, e.g.
 *   "shard-000001.shard: xxh3 is 0123456789abcdef, manifest says 456789abcdef0123"
 *   "shard-000000.shard record 12 (key 'a/b.jpg'): zstd: checksum mismatch"
 *   "source: 'a/c.jpg' changed since sharding: 1200 bytes with xxh3 ..., index.jsonl
 *    says 1187 bytes with xxh3 ..."
 * Problems are sorted (by check, shard, record, message), so a report does
 * not depend on the thread count.
 */
#ifndef SHARDKIT_VERIFY_H
#define SHARDKIT_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/dataset.h"
#include "shardkit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on the world sizes one run checks. */
#define SHARD_VERIFY_MAX_WORLD_SIZES 64

struct shard_verify_options {
    int deep;                /* decompress and decode every record */
    const char *source;      /* SRC (directory or archive) or NULL */
    const char *labels;      /* the CSV a "file:NAME:HASH" label rule was made
                              * from (needed to re-derive such labels), or NULL */
    const char *annotations; /* with source: the annotation table the config's
                              * "annotations" names (JSON Lines or CSV; needed to
                              * check fields and a class taken from it), or NULL */
    uint64_t fidelity;       /* samples to re-convert (needs source); 0: off */
    double min_psnr;         /* jpeg threshold in dB; 0: SHARD_FIDELITY_DEFAULT_PSNR */
    uint32_t world_sizes[SHARD_VERIFY_MAX_WORLD_SIZES];
    size_t world_size_count;        /* 0: no visitation check */
    uint64_t epochs;                /* epochs 0..epochs-1 are checked (default 2) */
    struct shard_plan_options plan; /* seed, shuffle, buffer and remainder of the plans
                                     * checked (rank and world_size are ignored) */
    int threads;                    /* 0: shard_available_cpus() */
};

/* Defaults: only the default pass, epochs 2, plan defaults, threads 0. */
SHARD_API void shard_verify_options_init(struct shard_verify_options *o);

/* The default jpeg threshold of the fidelity check, in dB (see above). */
#define SHARD_FIDELITY_DEFAULT_PSNR 35.0

/* Which check found a problem. */
enum shard_check {
    SHARD_CHECK_MANIFEST = 0, /* manifest.json itself */
    SHARD_CHECK_SHARD,        /* a shard file: presence, size, hash, header, footer */
    SHARD_CHECK_INDEX,        /* index.jsonl against the footers and the manifest */
    SHARD_CHECK_KEYS,         /* duplicate keys */
    SHARD_CHECK_COUNTS,       /* counts and by_label */
    SHARD_CHECK_RECORD,       /* --deep: one record */
    SHARD_CHECK_SOURCE,       /* --source: identity with SRC */
    SHARD_CHECK_FIDELITY,     /* --fidelity */
    SHARD_CHECK_VISITATION,   /* --visitation */
};

/* "manifest", "shard", "index", "keys", "counts", "record", "source",
 * "fidelity", "visitation". */
SHARD_API const char *shard_check_name(enum shard_check c);

struct shard_problem {
    enum shard_check check;
    int code;       /* SHARD_EMISMATCH, SHARD_ECORRUPT, SHARD_ENOTFOUND, SHARD_EIO ... */
    int64_t shard;  /* the shard's position in the manifest, or -1 */
    int64_t record; /* the record in that shard, or -1 */
    char *key;      /* the sample's key (key_len bytes + NUL), or NULL */
    size_t key_len;
    char *message; /* one line, naming the shard/record/key */
};

/* Throughput of one pass. */
struct shard_verify_rate {
    uint64_t bytes;      /* bytes processed */
    uint64_t items;      /* files or records */
    double seconds;      /* wall-clock time of the pass */
    double busy_seconds; /* summed time threads spent working: bytes/busy_seconds is the
                          * per-core rate */
    int threads;
};

struct shard_fidelity_result {
    char *key; /* key_len bytes + NUL */
    size_t key_len;
    uint32_t shard;
    uint64_t record;
    uint32_t width;
    uint32_t height;
    int same_bytes;   /* the stored payload equals the re-run payload byte for byte */
    int exact;        /* the stored pixels equal the re-run's (both decoded) */
    double psnr;      /* dB, stored pixels vs the re-run's; INFINITY when equal,
                       * NAN when not computed */
    double loss_psnr; /* dB, stored pixels vs the re-run's before encoding: what
                       * the codec lost (INFINITY for raw and png) */
    int passed;
};

struct shard_visitation_result {
    uint32_t world_size;
    uint64_t epochs;
    uint64_t min_per_rank; /* shortest rank plan (over epochs) */
    uint64_t max_per_rank;
    uint64_t padded;      /* repeated entries per epoch (pad) */
    uint64_t dropped;     /* samples not visited per epoch (drop) */
    uint64_t bad_samples; /* (sample, epoch) pairs visited a wrong number of times */
    int passed;
};

/* Samples per label as each count saw them, for a report to set side by
 * side (any difference is also a problem of its own). */
struct shard_label_tally {
    char *name;        /* the manifest's label, or NULL: the samples without one */
    uint64_t manifest; /* counts.by_label (counts.unlabeled) */
    uint64_t shards;   /* the labels the shard footers hold (labels_counted) */
    uint64_t source;   /* --source: SRC's samples whose key gives this label
                        * (labels_checked) */
};

/* Problems kept in a report; any beyond are counted in problems_not_kept. */
#define SHARD_VERIFY_MAX_PROBLEMS 1000000u

/* --deep, a BOXES or MASK field (format version 2): what its values hold,
 * counted over the records whose value is valid. */
struct shard_target_tally {
    uint32_t field;                    /* field number */
    char *name;                        /* its name */
    int mask;                          /* 1: a MASK field, 0: BOXES */
    struct shard_field_class *classes; /* its declared classes (copied) */
    uint64_t samples;                  /* records holding a valid value */
    uint64_t items;                    /* BOXES: boxes in all; MASK: pixels in all */
    uint64_t max_boxes;                /* BOXES: the most boxes one image has */
    uint32_t class_count;              /* the field's declared classes */
    uint64_t *per_class;               /* per declared class, in the declaration's order: BOXES
                                        * its boxes, MASK its pixels */
    uint64_t *samples_with;            /* per declared class: values holding it at least once */
};

struct shard_verify_report {
    struct shard_problem *problems; /* the problems found, sorted */
    uint64_t problem_count;         /* problems in the array */
    uint64_t problems_not_kept;     /* further problems found past SHARD_VERIFY_MAX_PROBLEMS */
    uint32_t shards;
    uint64_t samples;                 /* counts.samples */
    uint32_t fields;                  /* fields the dataset declares (format version 2) */
    struct shard_verify_rate hash;    /* the default pass: whole-file xxh3 of every shard */
    struct shard_verify_rate deep;    /* --deep: records decompressed and decoded */
    struct shard_verify_rate source;  /* --source: files read and hashed */
    uint64_t source_candidates;       /* candidate files in SRC */
    uint64_t source_ignored;          /* --source: files of SRC that are not candidates */
    int labels_checked;               /* --source: labels could be re-derived */
    char *labels_note;                /* why labels could not be checked, or NULL */
    uint64_t source_sidecars;         /* --source: sidecar files in SRC (format version 2) */
    uint64_t source_orphans;          /* of them, files of no image */
    char *fields_note;                /* --source: why some field values were not checked
                                       * against SRC, or NULL */
    struct shard_label_tally *labels; /* the manifest's labels in its order, then one
                                       * entry (name NULL) for the unlabeled samples;
                                       * NULL when the manifest could not be read */
    uint32_t label_tally_count;       /* the manifest's label count + 1, or 0 */
    int labels_counted;               /* every shard footer was read: `shards` counts hold */
    struct shard_fidelity_result *fidelity;
    uint64_t fidelity_count;
    double min_psnr; /* the jpeg threshold that was applied */
    struct shard_visitation_result *visitation;
    size_t visitation_count;
    int threads;
    /* --deep: each BOXES and MASK field's tally, in field order */
    struct shard_target_tally *targets;
    uint32_t target_count;
};

/* Verify the dataset in directory `dst`.  Returns 0 when the checks ran:
 * the dataset is verified when report->problem_count and problems_not_kept
 * are 0.  Returns a negative error when they could not run: SHARD_EINVAL (bad
 * options, e.g. fidelity without a source), SHARD_ENOTFOUND (no DST, no
 * manifest.json, no SRC), SHARD_EIO (DST or SRC unreadable), SHARD_ENOMEM.
 * A manifest that exists but is malformed is a problem, not an error; one
 * that contradicts itself (counts that do not add up, a reject that does not
 * parse ...) has each contradiction listed, and checking goes on with its
 * shard list: every shard is still hashed and every later pass runs on what
 * the shards hold (report->samples is then the shards' sum).
 * Release the report with shard_verify_report_release() in both cases. */
SHARD_API int shard_verify(const char *dst, const struct shard_verify_options *o,
                           struct shard_verify_report *report, struct shard_err *err);

SHARD_API void shard_verify_report_release(struct shard_verify_report *r); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif
