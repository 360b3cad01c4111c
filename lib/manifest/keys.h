/* keys.h - key tables: the xxh3 of every key of an index file, sorted, with
 * the key's line, so that a key is found in O(log n) small reads
 * (manifests/FORMAT.md, "Key tables") (private).
 *
 * Writing: the lines are added in any order; the builder keeps at most
 * SK_KEYS_RUN entries in memory (16 bytes each), spilling sorted runs to a
 * work directory and merging them at the end, so that a table of a billion
 * keys is written in bounded memory.
 * Reading: sk_keys_find binary-searches the entries through a read
 * callback (a local file or ranged requests), reading 16 bytes a step. */
#ifndef SHARDKIT_MANIFEST_KEYS_H
#define SHARDKIT_MANIFEST_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/error.h"

#define SK_KEYS_MAGIC "SKKEYS1\x1a"
#define SK_KEYS_HEADER_BYTES 32
#define SK_KEYS_ENTRY_BYTES 16
/* Entries a builder sorts in memory before it spills a run (16 MiB). */
#define SK_KEYS_RUN (1u << 20)

/* The hash a key table sorts by: XXH3-64 of the key's bytes. */
uint64_t sk_keys_hash(const void *key, size_t len);

struct sk_keys_builder;

/* The xxh3 of the key of index line `line` (len bytes, newline or not), as
 * the key table sorts it: 0, or SHARD_ECORRUPT when the line names no key.
 * Lines as shardkit writes them ({"key":"..." first, no escapes) are read
 * without parsing; any other is parsed. */
int sk_keys_line_hash(const char *line, size_t len, uint64_t *hash, struct shard_err *err);

/* A builder whose spilled runs go to files named `prefix`.N in the open
 * directory work_fd (`work` names it in messages). */
int sk_keys_builder_new(struct sk_keys_builder **out, int work_fd, const char *work,
                        const char *prefix, struct shard_err *err);
/* Spill runs of `entries` instead of SK_KEYS_RUN (at least 1; tests). */
void sk_keys_builder_set_run(struct sk_keys_builder *b, size_t entries);
/* Key `key` is on line `line` of the index file. */
int sk_keys_builder_add(struct sk_keys_builder *b, const void *key, size_t len, uint64_t line,
                        struct shard_err *err);
/* The same with the key's hash already computed. */
int sk_keys_builder_add_hash(struct sk_keys_builder *b, uint64_t hash, uint64_t line,
                             struct shard_err *err);
/* Write the table as `name` in the open directory dir_fd (`dir` names it in
 * messages), durably (a temporary file renamed), and give its size and
 * xxh3.  The builder's runs are removed. */
int sk_keys_builder_write(struct sk_keys_builder *b, int dir_fd, const char *dir, const char *name,
                          uint64_t *bytes, uint64_t *xxh3, struct shard_err *err);
void sk_keys_builder_free(struct sk_keys_builder *b); /* accepts NULL; removes its runs */

/* The name of the key table of the index file named index_file:
 * "index.jsonl" -> "index.keys", "index-1-of-4.jsonl" -> "index-1-of-4.keys"
 * (malloc'd, or NULL when out of memory). */
char *sk_keys_name_for(const char *index_file);

/* Read `len` bytes at `offset` of the table into buf (all of them, or an
 * error: a short table is SHARD_ECORRUPT). */
typedef int (*sk_keys_read_fn)(void *ctx, uint64_t offset, void *buf, size_t len,
                               struct shard_err *err);
/* Check the table's header against `count` entries (the index file's
 * lines): SHARD_ECORRUPT naming `name` when it is not a key table of that
 * many. */
int sk_keys_check_header(sk_keys_read_fn read, void *ctx, const char *name, uint64_t count,
                         struct shard_err *err);
/* The lines of the keys hashing to `hash`, in the table of `count` entries:
 * found(fctx, line) for each, in line order, until it returns non-zero
 * (which is then returned); 0 when none matched or every call returned 0. */
int sk_keys_find(sk_keys_read_fn read, void *ctx, uint64_t count, uint64_t hash,
                 int (*found)(void *fctx, uint64_t line), void *fctx, struct shard_err *err);

#endif
