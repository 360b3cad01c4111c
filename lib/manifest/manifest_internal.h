/* manifest_internal.h - what the manifest code shares with the writer and
 * the verifier (private).
 *
 * Writing: sk_manifest_write_at writes inside an open directory.
 *
 * Loading a manifest that contradicts itself: shard_manifest_load refuses a
 * manifest whose parts disagree (counts that do not add up, rejects that do
 * not parse ...), naming the first contradiction.  The verifier must list
 * every problem and go on checking what it still can, so it loads
 * leniently: each contradiction is handed to a callback and loading goes
 * on, as long as the structure is there (the config, the shard list, the
 * index's identity).  What a lenient load gives may then disagree with
 * itself: m->samples need not be the sum of the shards' samples,
 * m->reject_count (the rejects that loaded) need not be m->rejected. */
#ifndef SHARDKIT_MANIFEST_INTERNAL_H
#define SHARDKIT_MANIFEST_INTERNAL_H

#include "shardkit/image.h"
#include "shardkit/manifest.h"

/* shard_manifest_write into the open directory `dirfd`: the temporary and
 * manifest.json are reached with *at() calls on dirfd and never through a
 * symbolic link (see util/fsutil.h).  `dir` names the directory in messages.
 * shard_manifest_write(dir) opens dir and calls this. */
int sk_manifest_write_at(int dirfd, const char *dir, const struct shard_manifest *m,
                         struct shard_err *err);

/* The longest index line a reader takes, newline included: a longer one
 * cannot come from us (keys are at most SHARD_KEY_MAX bytes). */
#define SK_INDEX_LINE_MAX_BYTES (64u * 1024)

/* The next line of the index as it is stored, newline included, in *line
 * (valid until the next call) and *len: 1, 0 at the end, or a negative
 * error (a line cut short, too long, or holding a NUL).  It counts in the
 * reader's bytes and xxh3 like shard_index_reader_next, which parses it. */
int sk_index_reader_next_line(struct shard_index_reader *r, const char **line, size_t *len,
                              struct shard_err *err);

/* shard_index_reader_open on index.jsonl held in memory (a remote
 * dataset's, fetched whole): the reader takes the buffer over (it frees
 * buf->data when closed, and zeroes *buf).  `name` names it in messages. */
int sk_index_reader_open_buffer(struct shard_index_reader **out, const char *name,
                                struct shard_buf *buf, struct shard_err *err);

/* The index of a dataset whose index is in several files (or one), read as
 * one: the files one after another, each line's shard made absolute (the
 * `shards` of the files before it added, as manifest's indexes say).
 * open_file(ctx, i, &reader, err) opens file i of m->index_count (the
 * chain takes the reader over and closes it at its end).  The reader's
 * bytes and xxh3 are of the file being read; once a file has been read to
 * its end, sk_index_reader_file_digest gives its own. */
typedef int (*sk_index_open_fn)(void *ctx, uint32_t i, struct shard_index_reader **out,
                                struct shard_err *err);
int sk_index_reader_open_chain(struct shard_index_reader **out, const struct shard_manifest *m,
                               sk_index_open_fn open_file, void *ctx, struct shard_err *err);
/* The whole index of the dataset in the local directory `dir` whose
 * manifest is m (which must outlive the reader), as a chain. */
int sk_manifest_index_open(const char *dir, const struct shard_manifest *m,
                           struct shard_index_reader **out, struct shard_err *err);
/* Once a chain over m's index files has been read to its end: 0 when every
 * file has the bytes and xxh3 m lists, else SHARD_ECORRUPT naming the first
 * that differs ("'index-1-of-4.jsonl' is not the index file its manifest
 * lists"). */
int sk_manifest_index_check(const struct shard_manifest *m, const struct shard_index_reader *r,
                            struct shard_err *err);

/* Of a chain: 1 with file i's bytes and xxh3 once it has been read to its
 * end, else 0.  Of a single file: i = 0 once at its end. */
int sk_index_reader_file_digest(const struct shard_index_reader *r, uint32_t i, uint64_t *bytes,
                                uint64_t *xxh3);
/* Of a chain: the file being read (or the last one, at the end); 0 for a
 * single file. */
uint32_t sk_index_reader_file(const struct shard_index_reader *r);

/* A contradiction: e->code SHARD_ECORRUPT, e->msg as shard_manifest_load
 * would say it ("manifest: shards hold 9 samples, counts.samples is 10").
 * Return 0 to go on loading, anything else to fail the load with it. */
typedef int (*sk_manifest_problem_fn)(void *user, const struct shard_err *e);

/* shard_manifest_load, reporting contradictions to `problem` instead of
 * failing.  Errors as shard_manifest_load's, for what is missing or
 * malformed (then *m is released). */
int sk_manifest_load_lenient(const char *dir, struct shard_manifest *m,
                             sk_manifest_problem_fn problem, void *user, struct shard_err *err);

/* The same for manifest.json held in memory (a remote dataset's), as
 * shard_manifest_load_buffer. */
int sk_manifest_load_buffer_lenient(const char *text, size_t len, struct shard_manifest *m,
                                    sk_manifest_problem_fn problem, void *user,
                                    struct shard_err *err);

/* The format version a dataset of this config is written in:
 * SHARD_FORMAT_VERSION_FIELDS when it declares fields, else
 * SHARD_FORMAT_VERSION (the same numbers serve the manifest and shards). */
uint16_t sk_config_format_version(const struct shard_config *c);

/* The version a manifest is written as: 3 when its stored form (m->channels,
 * m->depth; 0 is read as 3 and 8) is other than 8-bit RGB or its records
 * have several forms (m->mixed), else sk_config_format_version. */
uint16_t sk_manifest_version(const struct shard_manifest *m);

#endif
