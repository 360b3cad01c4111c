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
 *            the manifest's; each index file (index.jsonl, or the files of
 *            a dataset merged from parts) has the listed size, xxh3 and
 *            entries, one line per record, in stored order, with the
 *            footer's key and label; each key table has the listed size and
 *            xxh3 and holds exactly the xxh3 of the key and the line of each
 *            line of its index file, sorted; keys are unique (found through
 *            the key tables; in a dataset written before them, by sorting
 *            every key's hash: 16 bytes a sample); counts.samples,
 *            counts.unlabeled and counts.by_label equal the labels the
 *            footers hold; no unlisted shard, index file, key table or
 *            archives.jsonl lies in DST.  The shards are walked a few at a
 *            time, so memory follows those, not the dataset (but with
 *            --source and --deep together).  Format version 2 (fields):
 *            every shard is of the manifest's version; every index line names only
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
 *
 * Tiers (shardkit/api.h): stable.
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
    const char *keys;        /* with source: the key list that selected the samples
                              * (config "keys", shardify --keys; needed to check them
                              * against SRC), or NULL */
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
    SHARD_CHECK_INDEX,        /* the index files against the footers and the manifest */
    SHARD_CHECK_KEYS,         /* duplicate keys; the key tables */
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

/* Distinct values and how often each was seen, for a report to draw
 * histograms from: `count` values, ascending, values[i] seen counts[i]
 * times.  Exact while at most SHARD_TALLY_MAX distinct values came; past
 * that a tally either rounds (`shift` > 0: each value stands for
 * [values[i], values[i] + 2^shift), min and max staying exact) or, for the
 * dimensions, where rounding would mix widths and heights, counts the
 * values it has no room for in `others`. */
#define SHARD_TALLY_MAX 65536u
struct shard_tally {
    uint64_t *values;
    uint64_t *counts;
    size_t count;
    uint64_t total;    /* values seen (others included) */
    uint64_t min, max; /* of every value seen, exact; 0 when none */
    uint32_t shift;
    uint64_t others;
};

/* A sample stored despite a decoder warning (its index line's "warning"). */
struct shard_warned_sample {
    char *key; /* key_len bytes + NUL */
    size_t key_len;
    char *warning;
};

/* The samples stored despite a warning a report lists, at most. */
#define SHARD_VERIFY_WARNED_LISTED 1000u

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
    int deep_ran; /* the --deep pass ran (shard_verify_combine: in the parts) */
    /* What the default pass read, for a report to describe the dataset
     * (shardcheck's summary), gathered while the shards and the index were
     * read, so nothing is read twice. */
    struct shard_tally record_bytes;    /* each record's stored bytes (its zstd frame), from
                                         * the footers read */
    uint32_t shards_sized;              /* shards whose footer was read */
    int index_read;                     /* every index file was read to its end: the
                                         * dimensions, field_lines and text_lengths
                                         * describe every line */
    struct shard_tally dimensions;      /* each index line's width << 32 | height */
    uint64_t *field_lines;              /* per declared field, the index lines naming it
                                         * (NULL in version 1) */
    struct shard_tally *text_lengths;   /* per declared field: a text field's values' bytes
                                         * (the source_bytes of its lines); empty tallies
                                         * for the other types */
    struct shard_warned_sample *warned; /* the first SHARD_VERIFY_WARNED_LISTED index lines
                                         * with a warning, in index order */
    size_t warned_count;
    uint32_t parts; /* shard_verify_combine: the parts combined; else 0 */
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

/* ---- verification in parts ------------------------------------------------
 *
 * A dataset too big for one machine's time is checked by N processes (a job
 * array), each given its part, and a final step that combines them:
 *
 *   shard_verify_part(dst, o, i, n, result)  for i in 0..n-1, anywhere
 *   shard_verify_combine(dst, results, n)    the report shard_verify gives
 *
 * Part i checks a contiguous share of the shards, the shares balanced by
 * bytes: each shard whole-file hashed, its footer, the index lines of its
 * shards (found by a binary search on each index file's bytes, so a part
 * never reads an index from its start), and with o->deep its records.  Key
 * uniqueness, the key tables' content and order, and the whole-file hashes
 * of the index files and key tables are split among the parts too (by
 * ranges of key hashes, and file by file), so that no part reads
 * everything: a part's time and memory follow its share.  What only all
 * parts together can tell (counts and label totals against the manifest,
 * lines per index file, the order of index lines across shares, records no
 * line names, the key tables' content) is written to the result file and
 * settled by the combine, which also checks the manifest itself and the
 * files in DST.  The combine's report equals shard_verify's for the same
 * options (the rates of its passes are the parts' summed).
 *
 * Parts check what shard_verify's default pass and o->deep check: o->source,
 * o->fidelity and o->world_size_count must be off (SHARD_EINVAL).  They need
 * key tables (a dataset written before them is checked whole:
 * SHARD_EUNSUPPORTED). */

/* What shard_verify_part checked. */
struct shard_verify_share {
    uint32_t part, parts;
    uint32_t first_shard; /* its shards: [first_shard, first_shard + shards) */
    uint32_t shards;
    uint64_t samples;  /* their records */
    uint64_t bytes;    /* their bytes, as the manifest lists them */
    uint64_t problems; /* problems it found (the combine adds what needs every part) */
    double seconds;
};

/* A part's result file in a directory: "shardcheck-part-I-of-N.jsonl". */
#define SHARD_VERIFY_RESULT_PREFIX "shardcheck-part-"
#define SHARD_VERIFY_RESULT_SUFFIX ".jsonl"

/* Check part `part` (0-based) of `parts` of the dataset in `dst` and write
 * what it found to the file `result` (replaced atomically: written whole or
 * not at all), *share saying what it checked.  0 when the result was
 * written, whatever it holds; SHARD_EINVAL (a pass parts do not run, part >=
 * parts), SHARD_EUNSUPPORTED (no key tables), SHARD_ECORRUPT (a manifest
 * that cannot be read), SHARD_ENOTFOUND, SHARD_EIO, SHARD_ENOMEM. */
SHARD_API int shard_verify_part(const char *dst, const struct shard_verify_options *o,
                                uint32_t part, uint32_t parts, const char *result,
                                struct shard_verify_share *share, struct shard_err *err);

/* Combine the result files results[0..count) of every part of one check of
 * `dst` into *report, as shard_verify fills it (report->parts set).  The
 * results must be of this dataset (its manifest.json as it is now), of one
 * check (one part count, one set of passes) and hold every part once: else
 * SHARD_EINVAL naming the file or the missing part ("part 2 of 4: no
 * result").  A malformed manifest is a problem of the report, as in
 * shard_verify.  Release the report with shard_verify_report_release. */
SHARD_API int shard_verify_combine(const char *dst, const char *const *results, size_t count,
                                   struct shard_verify_report *report, struct shard_err *err);

#ifdef __cplusplus
}
#endif
#endif
