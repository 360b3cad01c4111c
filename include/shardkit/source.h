/*
 * shardkit/source.h - finding the input samples, reading them, labelling them.
 *
 * A sample's key is its path relative to the source root (or its path inside
 * an archive), byte-exact: any legal file name, including quotes, spaces,
 * newlines and bytes that are not UTF-8.  Keys use '/' as separator and never
 * start with "./" or "/".
 *
 * Tiers (shardkit/api.h): experimental (SHARDKIT_EXPERIMENTAL), but for
 * the types: shardify_run (shardify.h) is the stable way to convert a
 * source.
 */
#ifndef SHARDKIT_SOURCE_H
#define SHARDKIT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/image.h"
#include "shardkit/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- candidates --------------------------------------------------------- */

#ifdef SHARDKIT_EXPERIMENTAL
/* 1 if the name's extension, compared case-insensitively, is one shardify
 * reads: .jpg .jpeg .png (own decoders) and .webp .tif .tiff .gif .bmp
 * (libvips); else 0.  Everything else is "ignored", not "rejected". */
SHARD_API int shard_is_candidate(const char *name, size_t len);
#endif /* SHARDKIT_EXPERIMENTAL */

/* A list of byte-string keys stored in one arena (compact: a few bytes of
 * overhead per key, so ten million keys fit comfortably). */
struct shard_keylist {
    char *arena; /* keys, each followed by a NUL */
    size_t arena_len;
    size_t arena_cap;
    uint64_t *offsets; /* start of key i in arena */
    uint32_t *lengths; /* length of key i, without the NUL */
    size_t count;
    size_t cap;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Append a copy of key (len bytes, no NUL inside).  0 or SHARD_ENOMEM. */
SHARD_API int shard_keylist_add(struct shard_keylist *l, const char *key, size_t len,
                                struct shard_err *err);
/* Sort in the order of keys everywhere in shardkit (manifests/FORMAT.md,
 * "Sample order"): bytes compared with memcmp, a prefix before its
 * extensions. */
SHARD_API void shard_keylist_sort(struct shard_keylist *l);
/* Key i (NUL-terminated); *len receives its length when len is not NULL. */
SHARD_API const char *shard_keylist_get(const struct shard_keylist *l, size_t i, size_t *len);
/* Free everything and zero the struct.  Accepts NULL. */
SHARD_API void shard_keylist_release(struct shard_keylist *l);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_scan_stats {
    uint64_t candidates;       /* entries selected by name (extension), refused ones too */
    uint64_t ignored;          /* regular files with other names */
    uint64_t ignored_symlinks; /* symbolic links with other names: never followed */
    uint64_t ignored_special;  /* fifos, sockets, devices with other names */
    uint64_t sidecars;         /* regular files named as sidecars of a declared field
                                * (never candidates, never ignored) */
};

/* Candidates a directory scan refuses without opening them, each with its
 * reject reason:
 *   - a symbolic link or special file named like an image: "not a regular
 *     file: symbolic link (never followed)", "not a regular file: fifo",
 *     "... socket", "... character device", "... block device";
 *   - a directory that cannot be listed, under its path with a '/' at the
 *     end ("a/private/"): "cannot read directory: Permission denied" (or
 *     "... directories nested more than 127 levels deep");
 *   - an entry whose type cannot be learned: "cannot stat: ...".
 * Sorted by key after each successful scan. */
struct shard_refusal {
    char *key; /* malloc'd, NUL-terminated */
    size_t key_len;
    char *reason; /* malloc'd */
};

struct shard_refusals {
    struct shard_refusal *items;
    size_t count;
    size_t cap;
};

#ifdef SHARDKIT_EXPERIMENTAL
/* The reason `key` was refused, or NULL.  Thread-safe (read only). */
SHARD_API const char *shard_refusals_find(const struct shard_refusals *r, const char *key,
                                          size_t len);
/* Free everything and zero the struct.  Accepts NULL. */
SHARD_API void shard_refusals_release(struct shard_refusals *r);

/* Walk `root` recursively without following symbolic links.  Every candidate
 * regular file's relative path is appended to `keys` (unsorted); everything
 * else is counted in *st (accumulated: zero it first).
 *
 * With `refused`, nothing named like an image is lost: a candidate that is
 * not a regular file, and a subdirectory that cannot be read, is appended
 * to `keys` too (it takes its place among the candidates) and listed in
 * `refused` with its reason (see struct shard_refusal); the walk goes on.
 * With `refused` NULL they are counted as ignored and a subdirectory that
 * cannot be read fails the scan (SHARD_EIO naming it), which suits a
 * caller that only wants files to read.
 *
 * A missing root is SHARD_ENOTFOUND; a root that is not a directory is
 * SHARD_EINVAL; a root that cannot be read is SHARD_EIO.  A failed scan
 * adds nothing to keys or refused. */
SHARD_API int shard_scan_dir(const char *root, struct shard_keylist *keys,
                             struct shard_refusals *refused, struct shard_scan_stats *st,
                             struct shard_err *err);

/* shard_scan_dir, or for "s3://BUCKET/PREFIX" the objects below PREFIX/ as
 * shardify lists a source there (ListObjectsV2, with the credentials and
 * settings shard_dataset_open uses): every object whose name is a candidate
 * goes to `keys` (relative to PREFIX/, unsorted), the others are counted as
 * ignored; "directory" markers (a name ending in '/') are skipped.  An
 * object store has no links, devices or unreadable directories: nothing is
 * refused.  A prefix that cannot be listed is SHARD_ENOTFOUND or SHARD_ENET
 * naming it ("cannot read source 's3://b/src': ..."). */
SHARD_API int shard_scan_location(const char *location, struct shard_keylist *keys,
                                  struct shard_refusals *refused, struct shard_scan_stats *st,
                                  struct shard_err *err);

/* Read the regular file `key` below the directory open as `root_fd` into buf
 * (replacing its contents).  Symbolic links are refused (O_NOFOLLOW on the
 * last component).  Errors: SHARD_ENOTFOUND ("file vanished"), SHARD_ELIMIT
 * ("file of N bytes exceeds the limit of M"), SHARD_EIO ("file changed while
 * being read" when it shrinks or grows under us, or a read error).  A file
 * whose open keeps failing with EAGAIN (a lease another client holds: Samba's
 * oplocks, NFS delegations) is opened again for about 5 s, then is
 * SHARD_ENET: not the file's fault, as a store that cannot be reached;
 * SHARD_EINTR when a signal ends the wait. */
SHARD_API int shard_read_source_file(int root_fd, const char *key, uint64_t max_bytes,
                                     struct shard_buf *buf, struct shard_err *err);

/* 1 when `path` is a regular file (not a directory). */
SHARD_API int shard_path_is_file(const char *path);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- Hugging Face imagefolder: splits and metadata ------------------------ */

/* The key column of an imagefolder's metadata table (metadata.jsonl or
 * metadata.csv), as the `datasets` library reads it. */
#define SHARD_METADATA_KEY "file_name"

#ifdef SHARDKIT_EXPERIMENTAL
/* The split folders of directory `dir`: the directories in it named as a
 * split as the `datasets` library tells them (train, training, validation,
 * valid, val, dev, test, testing, eval, evaluation), sorted, in *names
 * (malloc'd, each malloc'd; free with shard_splits_free), *count of them; *others counts its other
 * directories (a dataset laid out in splits has none).  Links are not
 * followed.  0, SHARD_EIO naming the directory, or SHARD_ENOMEM. */
SHARD_API int shard_source_splits(const char *dir, char ***names, size_t *count, size_t *others,
                                  struct shard_err *err);
SHARD_API void shard_splits_free(char **names, size_t count); /* accepts NULL */

/* The metadata table directly in `dir`: "DIR/metadata.jsonl" or
 * "DIR/metadata.csv" (a regular file; malloc'd in *path), or NULL when it
 * has neither.  SHARD_EINVAL when it has both (which one is meant cannot be
 * told), SHARD_ENOMEM. */
SHARD_API int shard_source_metadata(const char *dir, char **path, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- labels ------------------------------------------------------------- */

struct shard_labeler;

#ifdef SHARDKIT_EXPERIMENTAL
/* spec is one of:
 *   "dir"            the first path component of the key is the class; keys
 *                    without a '/' get no label
 *   "none"           no labels
 *   "regex:PATTERN"  POSIX extended regex; the first capture group is the
 *                    class, no match (or an empty group) gives no label
 *   anything else    a CSV file (RFC 4180, parsed with libcsv) of key,label
 *                    rows; an optional first row "key,label" is a header; a
 *                    key listed twice is an error; keys not listed get no label
 * SHARD_EINVAL with a message for a bad regex or CSV; for the CSV file,
 * SHARD_ENOTFOUND when it does not exist and SHARD_EIO when it cannot be read
 * or is not a regular file (a FIFO is refused, never waited on). */
SHARD_API int shard_labeler_new(struct shard_labeler **out, const char *spec,
                                struct shard_err *err);
SHARD_API void shard_labeler_free(struct shard_labeler *lb); /* accepts NULL */

/* The label of a key: returns 1 and points *name and *name_len at the class name
 * (inside `key` or inside the labeler; valid while both live), or 0 when the
 * key has no label.  Thread-safe (regexec with a private match array). */
SHARD_API int shard_labeler_label(const struct shard_labeler *lb, const char *key, size_t key_len,
                                  const char **name, size_t *name_len);

/* A canonical description for the manifest: "dir", "none", "regex:PATTERN",
 * or "file:<basename>:<xxh3 of the file's bytes>" (so that the options that
 * change the output are recorded without a machine path).  Owned by lb. */
SHARD_API const char *shard_labeler_describe(const struct shard_labeler *lb);

/* A CSV labeler's rows (a header row not counted); 0 for the other kinds. */
SHARD_API uint64_t shard_labeler_rows(const struct shard_labeler *lb);

/* How many rows of a CSV labeler name none of `keys` (a header row such as
 * "file,class" is one of them: only "key,label" is known as a header);
 * 0 for the other kinds.  0 or SHARD_ENOMEM. */
SHARD_API int shard_labeler_unmatched_rows(const struct shard_labeler *lb,
                                           const struct shard_keylist *keys, uint64_t *unmatched,
                                           struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif
