/* summary.h - what a dataset holds, as the JSON and HTML reports show it
 * beside the verdict: its counts and rejects (grouped by reason), the
 * options it was made with, its shards, and the sizes of its stored images.
 *
 * The verdict comes from shard_verify() (or shard_verify_combine()), which
 * also counted, as it read the shard footers and the index, what this
 * describes (record sizes, dimensions, fields, warned samples: the report's
 * tallies, so nothing is read twice and memory does not follow the
 * samples); manifest.json is read again through the public API.  It only
 * describes: whatever could not be read is left out and said so in `note`,
 * since the verdict already names it as a problem. */
#ifndef SHARDCHECK_SUMMARY_H
#define SHARDCHECK_SUMMARY_H

#include <stdint.h>

#include <jansson.h>

#include "histogram.h"
#include "shardkit.h"

/* The most common stored dimensions listed. */
#define SUMMARY_TOP_DIMENSIONS 8
/* Bins of the stored-size histogram, at most. */
#define SUMMARY_SIZE_BINS 30
/* Samples stored despite a decoder warning listed, at most. */
#define SUMMARY_WARNED_LISTED 1000
/* Orphans (sidecar files of no image) a report lists, at most; the total is
 * the manifest's. */
#define SUMMARY_ORPHANS_LISTED 1000
/* Bins of a text field's length histogram, at most. */
#define SUMMARY_LENGTH_BINS 30

struct reject_reason {
    char *reason; /* the reasons' common form: the text before the first ':',
                   * numbers as N ("not an image", "declared NxN exceeds ...") */
    uint64_t count;
};

struct dimension_count {
    uint32_t width;
    uint32_t height;
    uint64_t samples;
};

/* A sample stored despite a decoder warning (its index line's "warning"). */
struct warned_sample {
    char *key; /* key_len bytes + NUL */
    size_t key_len;
    char *warning;
};

/* A declared field (format version 2) as the reports show it: its
 * coverage, and for text its values' lengths. */
struct field_summary {
    const struct shard_field_decl *decl; /* the manifest's declaration */
    char type[32];                       /* as declared: "text", "float32[512]" */
    uint64_t samples;                    /* samples that have it: the index lines naming it
                                          * (or counts.fields when the index cannot be read) */
    struct cli_histogram lengths;        /* text: each value's length in bytes (a text value
                                          * is its source bytes, whose size the line names);
                                          * no bins for other types */
};

struct dataset_summary {
    struct shard_manifest manifest;
    json_t *config;                /* the manifest's "config" object */
    struct reject_reason *reasons; /* most common first (then by text) */
    size_t reason_count;
    struct cli_histogram record_bytes; /* stored bytes of every record (its zstd frame) */
    uint64_t shards_sized;             /* shards whose footer could be read */
    int have_dimensions;               /* index.jsonl could be read to the end */
    uint32_t min_width, max_width, min_height, max_height;
    struct dimension_count top[SUMMARY_TOP_DIMENSIONS]; /* most common first */
    size_t top_count;
    uint64_t distinct_dimensions;
    struct warned_sample *warned; /* the first SUMMARY_WARNED_LISTED, in stored order
                                   * (manifest.warned counts them all) */
    size_t warned_count;
    struct field_summary *fields; /* one per declared field (manifest.config.fields),
                                   * or NULL in version 1 */
    uint32_t field_count;         /* of them */
    char note[512];               /* what could not be read, or "" */
};

/* What DST holds into *s: its manifest, and what the check r counted.  0,
 * or -1 when manifest.json itself cannot be read (nothing to describe; *s
 * is then empty and `note` says why).  Release with summary_release in
 * both cases. */
int summary_load(struct dataset_summary *s, const char *dst, const struct shard_verify_report *r);
void summary_release(struct dataset_summary *s);

/* Samples plus rejects: every candidate file shardify found. */
uint64_t summary_candidates(const struct dataset_summary *s);

/* How a field's values came: "sidecar .txt", "column caption". */
const char *summary_field_source(const struct field_summary *f, char *buf, size_t size);

#endif
