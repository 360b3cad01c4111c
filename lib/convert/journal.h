/* journal.h - the per-shard journal that makes a run resumable (private).
 *
 * For every finished shard k, DST/.shardify/journal-k.jsonl lists, in stored
 * order, what happened to each position the shard covers: one line per
 * sample ("S" + index line) or reject ("R" + reject line), then an end line
 * ("E" + {"shard","file","samples","bytes","xxh3","plan_start","plan_end"}).
 * It is written as a temporary, fsync'd and renamed before the shard itself
 * is renamed into place, so a shard under its final name always has a
 * complete journal, and resume can trust both after checking the shard's
 * bytes against the journal's xxh3. */
#ifndef SHARDKIT_JOURNAL_H
#define SHARDKIT_JOURNAL_H

#include <stdint.h>

#include "shardkit/manifest.h"

#define JOURNAL_TAG_SAMPLE 'S'
#define JOURNAL_TAG_REJECT 'R'
#define JOURNAL_TAG_END 'E'

struct journal_end {
    uint32_t shard;
    uint64_t samples;
    uint64_t bytes;
    uint64_t xxh3;
    /* the positions in stored order the shard covers, [pos_start, pos_end):
     * on disk "plan_start" and "plan_end", the names older runs wrote (a
     * --resume reads them) */
    uint64_t pos_start;
    uint64_t pos_end;
};

/* "journal-000042.jsonl" into out (at least 32 bytes). */
void sk_journal_name(uint32_t shard, char *out, size_t size);

struct journal_writer;

/* Create the temporary journal `name` in the open directory `dirfd` (named
 * `dir` in messages) with sk_fs_create_at: never through a link.  dirfd
 * must stay open until sk_journal_writer_free. */
int sk_journal_writer_open(struct journal_writer **out, int dirfd, const char *dir,
                           const char *name, struct shard_err *err);
/* A sample's line, its fields named as the dataset of config c declares them. */
int sk_journal_writer_sample(struct journal_writer *j, const struct shard_sample *s,
                             const struct shard_config *c, struct shard_err *err);
int sk_journal_writer_reject(struct journal_writer *j, const struct shard_reject *r,
                             struct shard_err *err);
/* Append the end line, flush and fsync, close.  The caller renames. */
int sk_journal_writer_finish(struct journal_writer *j, const struct journal_end *e,
                             struct shard_err *err);
/* Close; removes the temporary unless finished.  Accepts NULL. */
void sk_journal_writer_free(struct journal_writer *j);

/* Read the finished journal `name` of the open directory `dirfd` (named
 * `dir` in messages; a link there is an error, see sk_fs_open_at):
 * `on_sample`/`on_reject` are called for each line in order (they may take
 * ownership by zeroing the struct), then *end is filled.  A missing journal
 * is SHARD_ENOTFOUND, one without a valid end line SHARD_ECORRUPT.  Sample
 * lines are parsed as lines of a dataset of config c. */
int sk_journal_read(int dirfd, const char *dir, const char *name, const struct shard_config *c,
                    int (*on_sample)(void *user, struct shard_sample *s, struct shard_err *err),
                    int (*on_reject)(void *user, struct shard_reject *r, struct shard_err *err),
                    void *user, struct journal_end *end, struct shard_err *err);

/* Copy the sample lines of a journal (without their tag) to fd, hashing them
 * into the XXH3 state `hash` (an XXH3_state_t *) and adding to *bytes; each
 * line's key goes to `keys` (NULL: none) as line *entries, which counts
 * them. */
struct sk_keys_builder;
int sk_journal_copy_samples(int dirfd, const char *dir, const char *name, int fd, void *hash,
                            struct sk_keys_builder *keys, uint64_t *bytes, uint64_t *entries,
                            struct shard_err *err);

#endif
