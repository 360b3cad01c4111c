/* source_internal.h - what the source subsystem shares with the run and
 * the verifier (private).
 *
 *   reasons    the reject reasons a scan gives without reading a file, so
 *              that shardify and shardcheck --source word them the same
 *   entries    every entry of an archive, for the second pass of links.c
 *   links      hard links inside an archive: which entry's bytes each
 *              candidate really has
 */
#ifndef SHARDKIT_SOURCE_INTERNAL_H
#define SHARDKIT_SOURCE_INTERNAL_H

#include <signal.h>
#include <stdint.h>

#include "shardkit/manifest.h"
#include "shardkit/source.h"
#include "util/fsutil.h"

/* ---- where the files are: a directory or an S3 prefix (root.c) ------------ */

struct sk_s3;
struct sk_sidecars;

/* A source root: a directory opened once, or an s3://BUCKET/PREFIX location
 * whose objects below PREFIX/ are the files (keys relative to PREFIX/). */
struct sk_source_root {
    const char *src;  /* as given */
    int fd;           /* a directory: -1 otherwise */
    struct sk_s3 *s3; /* an S3 prefix: NULL otherwise */
    /* an S3 prefix scanned into an empty key list: the listed size of each
     * key, in the list's order (which the scan sorted); else NULL */
    uint64_t *sizes;
};

/* 1 when src is an S3 location (s3://). */
int sk_source_is_s3(const char *src);

/* Open src: an s3:// location (nothing requested yet) or a directory. */
int sk_source_root_open(struct sk_source_root *r, const char *src, struct shard_err *err);
void sk_source_root_close(struct sk_source_root *r); /* accepts a zeroed or closed root */

/* shard_scan_dir for a directory; for an S3 prefix, every object below it
 * (ListObjectsV2, paginated) whose name is a candidate goes to keys (in
 * listing order: sort them), the others are counted as ignored ("directory
 * marker" objects whose key ends in '/' are not files and are skipped).
 * An object store has no links, devices or unreadable directories: nothing
 * is refused.  Sidecar files of `side` (may be NULL) are collected as
 * sk_scan_dir does. */
int sk_source_root_scan(struct sk_source_root *r, struct shard_keylist *keys,
                        struct sk_sidecars *side, struct shard_refusals *refused,
                        struct shard_scan_stats *st, struct shard_err *err);

/* shard_read_source_file, for either kind: an object that vanished is
 * SHARD_ENOTFOUND ("file vanished"), one over max_bytes SHARD_ELIMIT in the
 * same words; a store that cannot be reached, or a file that stays busy
 * (EAGAIN), is SHARD_ENET (not the file's fault: the caller must not reject
 * the sample for it).  Thread-safe. */
int sk_source_root_read(const struct sk_source_root *r, const char *key, uint64_t max_bytes,
                        struct shard_buf *buf, struct shard_err *err);

/* shard_read_source_file in two halves (scan.c): open `key` below root_fd
 * as it does (*fd, or -1 and the same errors), then read the open file and
 * close it (fd is always closed). */
int sk_source_file_open(int root_fd, const char *key, int *fd, struct shard_err *err);
int sk_source_file_read(int fd, uint64_t max_bytes, struct shard_buf *buf, struct shard_err *err);
/* The same, with fd's fstat already taken (*known): a file that changed
 * since is one that changed while being read. */
struct stat;
int sk_source_file_read_stat(int fd, const struct stat *known, uint64_t max_bytes,
                             struct shard_buf *buf, struct shard_err *err);

/* Getting a root's files ahead of the threads that convert them
 * (prefetch.c): the files keys[order[pos]] for pos in [first, end),
 * `connections` at a time and at most `ahead` positions ahead of the lowest
 * one not taken yet, so that conversion waits neither for one request's
 * round trip per thread nor for a cold disk.
 *   SK_PREFETCH_READ    each file's bytes are read into memory (an S3
 *                       prefix: one GET per file)
 *   SK_PREFETCH_ADVISE  each file is opened and the kernel asked to read it
 *                       into the page cache (posix_fadvise WILLNEED); the
 *                       open file is handed over, and read by the taker
 *                       (a directory: no memory held beyond the cache)
 * skip(skip_user, candidate), when not NULL, names the candidates never to
 * touch (refused by the scan): their positions are ready at once, empty.
 * Every position in [first, end) must be taken, once. */
enum sk_prefetch_mode { SK_PREFETCH_READ, SK_PREFETCH_ADVISE };
typedef int sk_prefetch_skip(void *skip_user, uint64_t candidate);
/* SK_PREFETCH_READ of a root whose sizes are listed: each file's listed size
 * is taken from `budget` before it is read, waiting while the files read and
 * not yet given back hold too much, unless first(ctx, pos) says pos is the
 * one every other waits for (util/budget.h).  The taker gives the bytes back
 * (sk_prefetch_take's *held) once it is done with them. */
struct sk_prefetch_budget {
    struct sk_budget *budget;
    int (*first)(void *ctx, uint64_t pos);
    void *ctx;
};
struct sk_prefetch;
int sk_prefetch_new(struct sk_prefetch **out, const struct sk_source_root *root,
                    const struct shard_keylist *keys, const uint64_t *order, uint64_t first,
                    uint64_t end, uint64_t max_bytes, int connections, uint32_t ahead,
                    enum sk_prefetch_mode mode, sk_prefetch_skip *skip, void *skip_user,
                    const struct sk_prefetch_budget *budget, struct shard_err *err);
/* Wait for position pos.  SK_PREFETCH_READ: hand its bytes to buf (buffers
 * are exchanged, nothing is copied), and add to *held (when not NULL) the
 * budget's bytes they hold.  SK_PREFETCH_ADVISE: *fd is the open
 * file (the caller reads and closes it with sk_source_file_read), or -1 for a
 * skipped position.  Or return the error of reading or opening it
 * (sk_source_root_read's).  SHARD_EINTR once the prefetcher is being freed. */
int sk_prefetch_take(struct sk_prefetch *pf, uint64_t pos, struct shard_buf *buf, int *fd,
                     uint64_t *held, struct shard_err *err);
/* Stop the fetches (those under way finish) and free.  Accepts NULL. */
void sk_prefetch_free(struct sk_prefetch *pf);

/* ---- refusals (scan.c) ----------------------------------------------------- */

/* Add `key` refused for `reason` (both copied).  0 or SHARD_ENOMEM. */
int sk_refusals_add(struct shard_refusals *r, const char *key, size_t len, const char *reason,
                    struct shard_err *err);
/* Sort by key, as shard_refusals_find needs. */
void sk_refusals_sort(struct shard_refusals *r);

/* Rows of a table keyed by sample key (a label file, an annotation table)
 * that name none of `keys`: row(ctx, key, len) gives a key's row, or -1.
 * 0 or SHARD_ENOMEM. */
int sk_rows_unmatched(uint64_t rows, const struct shard_keylist *keys,
                      int64_t (*row)(const void *ctx, const char *key, size_t len), const void *ctx,
                      uint64_t *unmatched, struct shard_err *err);

/* ---- sidecar files (sidecars.c) --------------------------------------------
 *
 * A sidecar of an image is the file whose key is the image's stem (its key
 * without the extension: up to the last '.' of the last component) followed
 * by a declared suffix (".txt", ".meta.json"): the WebDataset convention.
 * Every regular file whose name ends in a declared suffix is a sidecar file,
 * never an image candidate.  After the scan, each is given to the image it
 * belongs to: the longest declared suffix whose stem is an image's; a file
 * of no image is an orphan.  Of images sharing a stem ("x.jpg", "x.png": one
 * WebDataset sample), the first by key is the stem's image, with its
 * sidecars; the others are refused naming it (SK_REASON_STEM). */
struct sk_sidecars;

/* The declared suffixes (each starting with '.', no '/'; repeats are fine).
 * 0, SHARD_EINVAL or SHARD_ENOMEM. */
int sk_sidecars_new(struct sk_sidecars **out, const char *const *suffixes, uint32_t count,
                    struct shard_err *err);
void sk_sidecars_free(struct sk_sidecars *s); /* accepts NULL */
/* Let a file belong to an image by the image's sample stem too, as
 * WebDataset groups a sample's files (its key up to the first '.' of its
 * last component): a/x.right.jpg, of suffix ".right.jpg", belongs to
 * a/x.left.jpg when no image has the stem a/x and a/x.left.jpg is the only
 * image of sample stem a/x; sk_sidecars_find then finds it.  Call before
 * resolving. */
void sk_sidecars_sample_stems(struct sk_sidecars *s);
/* The index of the longest declared suffix `name` (a file name or key)
 * ends in, or -1.  A name that is only the suffix (".txt") is none. */
int sk_sidecars_suffix_of(const struct sk_sidecars *s, const char *name, size_t len);
/* Add a sidecar file found by a scan; drop those added after the first
 * `count` (a failed scan adds nothing). */
int sk_sidecars_add_file(struct sk_sidecars *s, const char *key, size_t len, struct shard_err *err);
size_t sk_sidecars_file_count(const struct sk_sidecars *s);
void sk_sidecars_truncate(struct sk_sidecars *s, size_t count);
/* Add an entry named as a sidecar file that is none: a symbolic link or a
 * special file, which is never opened.  It takes the file's place (an image
 * has it, or it is an orphan), and `reason` (SK_REASON_NOT_REGULAR ..., as
 * a candidate's) is what reading it gives. */
int sk_sidecars_add_refused(struct sk_sidecars *s, const char *key, size_t len, const char *reason,
                            struct shard_err *err);
/* After resolving: why file i cannot be read without opening it, or NULL. */
const char *sk_sidecars_file_refusal(const struct sk_sidecars *s, size_t i);
/* Match the files found with the image candidates `keys` (any order): each
 * file goes to its image or becomes an orphan; of candidates sharing a stem,
 * all but the first by key are added to `refused` (reason SK_REASON_STEM
 * "'FIRST', the stem's image ..."; sorted again).  A candidate already
 * refused keeps its reason and is never the stem's image.  0 or
 * SHARD_ENOMEM. */
int sk_sidecars_resolve(struct sk_sidecars *s, const struct shard_keylist *keys,
                        struct shard_refusals *refused, struct shard_err *err);
/* After resolving: the sidecar file of candidate `key` for suffix `suffix`
 * (an index as given to sk_sidecars_new): its position among the files (for
 * sk_sidecars_file), -1 when the image has none, or SK_SIDECAR_TWICE when
 * the name was found twice (an archive may hold a name twice). */
#define SK_SIDECAR_TWICE (-2)
int64_t sk_sidecars_find(const struct sk_sidecars *s, const char *key, size_t len, uint32_t suffix);
/* The key candidate key[0..len)'s sidecar for `suffix` has (whether SRC
 * holds it or not): its stem and the suffix, into out (replacing its
 * contents, no NUL).  0 or SHARD_ENOMEM. */
int sk_sidecars_name(const struct sk_sidecars *s, const char *key, size_t len, uint32_t suffix,
                     struct shard_buf *out, struct shard_err *err);
/* After resolving: file i was the how-manieth added (0, 1, ...). */
size_t sk_sidecars_file_ordinal(const struct sk_sidecars *s, size_t i);
/* File i (sorted by key after resolving): its key, NUL-terminated. */
const char *sk_sidecars_file(const struct sk_sidecars *s, size_t i, size_t *len);
/* Forget the files and what resolving learned, keeping the suffixes: a
 * directory of archives read archive by archive adds each archive's files
 * afresh.  The orphans are appended to `orphans` first (unless NULL). */
int sk_sidecars_reset(struct sk_sidecars *s, struct shard_keylist *orphans, struct shard_err *err);
/* The orphans, sorted by key: their positions among the files. */
size_t sk_sidecars_orphan_count(const struct sk_sidecars *s);
const char *sk_sidecars_orphan(const struct sk_sidecars *s, size_t i, size_t *len);

/* ---- a list of classes from a file (classes.c) ------------------------------
 *
 * A JSON array of names (the id of each its position) or of {"id", "name"}
 * objects (COCO's categories), or text of one name a line (the id of each
 * its line, from 0): a mask field's classes=FILE, shardify's --classes FILE.
 * Names are non-empty UTF-8; ids at most max_id (neither checked for being
 * unique: the caller's rules differ). */

/* The classes of `path` into *out (malloc'd, each name malloc'd; free with
 * sk_class_list_free), in the file's order, *count of them; *xxh3 (unless
 * NULL) the hash of the file's bytes.  0, SHARD_EINVAL naming the file and
 * the line or element, an error reading it (named), or SHARD_ENOMEM. */
int sk_class_list_read(const char *path, uint32_t max_id, struct shard_field_class **out,
                       size_t *count, uint64_t *xxh3, struct shard_err *err);
void sk_class_list_free(struct shard_field_class *list, size_t count); /* accepts NULL */

/* ---- archives named by URL (remote_archives.c) ------------------------------
 *
 * An http(s):// SRC: archives (WebDataset tar shards) named by URL, with
 * brace lists as WebDataset writes them ("https://host/{00000..00099}.tar":
 * {A..B} numbers, zero-padded when A or B is; {X,Y,...} words; several in
 * one URL) and several URLs separated by "::".  The listing is expanded and
 * checked before any archive is fetched: each URL names an archive (its
 * path's last component, its name, is an archive's), no two have one name,
 * each is there (a HEAD, which also gives its size).  Read as a folder of
 * archives: by name, each archive's keys prefixed with its name. */
#define SK_REMOTE_ARCHIVES_MAX 1000000u
struct sk_remote_archives;

/* 1 when src is an http:// or https:// location. */
int sk_source_is_url(const char *src);
/* Expand and check `spec`.  0, SHARD_EINVAL (a malformed brace list, a URL
 * of no archive, two of one name: named), SHARD_ELIMIT (more than
 * SK_REMOTE_ARCHIVES_MAX), the HTTP engine's errors for an archive that is
 * not there (SHARD_ENOTFOUND, SHARD_ENET naming its URL), SHARD_EINTR once
 * *cancel is set, SHARD_ENOMEM. */
int sk_remote_archives_open(struct sk_remote_archives **out, const char *spec,
                            volatile sig_atomic_t *cancel, struct shard_err *err);
void sk_remote_archives_free(struct sk_remote_archives *ra); /* accepts NULL */
/* The archives, sorted by name: their count, names and sizes (0 when the
 * server gave none). */
size_t sk_remote_archives_count(const struct sk_remote_archives *ra);
const char *sk_remote_archives_name(const struct sk_remote_archives *ra, size_t k);
uint64_t sk_remote_archives_size(const struct sk_remote_archives *ra, size_t k);
/* Fetch archive k into the file `file` of directory dir_fd (created or
 * truncated, never through a link; `shown` names it in messages), in ranged
 * reads of a few MiB, each retried as the engine retries.  0 or an error. */
int sk_remote_archives_fetch(struct sk_remote_archives *ra, size_t k, int dir_fd, const char *file,
                             const char *shown, struct shard_err *err);

/* ---- a key list selecting the samples (keysel.c) ----------------------------
 *
 * shardify --keys FILE: one key or stem a line (the first word of the line,
 * as VOC's ImageSets/Segmentation/train.txt lists "2007_000032"); a
 * candidate is selected when its key or its stem (the key without the
 * extension of its last component) is listed.  The others are left out of
 * the source as files of no interest are: counted as ignored. */
struct sk_key_selection;

/* Read `path`.  0, an error reading it (named), SHARD_EINVAL (no key, a key
 * listed twice: file and lines named), SHARD_ENOMEM. */
int sk_key_selection_load(struct sk_key_selection **out, const char *path, struct shard_err *err);
void sk_key_selection_free(struct sk_key_selection *s); /* accepts NULL */
/* "file:<basename>:<xxh3 of its bytes>" (owned by s). */
const char *sk_key_selection_describe(const struct sk_key_selection *s);
/* Keep in `keys` (a scan's candidates, any order; kept in that order) those
 * selected; the others are counted in st->ignored and no longer in
 * st->candidates.  A listed key that selects no candidate is SHARD_EINVAL
 * naming the file and line (keys untouched). */
int sk_key_selection_apply(const struct sk_key_selection *s, struct shard_keylist *keys,
                           struct shard_scan_stats *st, struct shard_err *err);

/* ---- a mask folder mirroring SRC (mask_folder.c) ----------------------------
 *
 * The masks of a MASK field declared from=DIR/: DIR (ending in '/';
 * relative to SRC, a directory, unless absolute; never inside SRC) holds
 * each image's mask at the image's path with ".png" for its extension
 * (a/0001.jpg: DIR/a/0001.png).  Its PNG files are matched with the images
 * as sidecars are; a file of no image is an orphan, named DIR/ + its path. */
struct sk_mask_folder;

/* Open and scan `folder` of src, and match its files with keys (the
 * candidates, sorted).  `replace` ("OLD:NEW", or NULL): a mask's name is its
 * image's path with the stem's ending OLD replaced by NEW (Cityscapes'
 * x_leftImg8bit.png has x_gtFine_labelTrainIds.png); an image whose stem
 * does not end in OLD has none, and the folder's other files are ignored.  0, SHARD_EINVAL (an S3
 * SRC, a folder inside SRC), SHARD_EIO (no such folder) or SHARD_ENOMEM, with the folder named. */
int sk_mask_folder_open(struct sk_mask_folder **out, const char *src, const char *folder,
                        const char *replace, const struct shard_keylist *keys,
                        struct shard_err *err);
void sk_mask_folder_free(struct sk_mask_folder *mf); /* accepts NULL */
/* The mask candidate key[0..len) has, quoted for messages ("'DIR/a/0001.png'"). */
void sk_mask_folder_origin(const struct sk_mask_folder *mf, const char *key, size_t len, char *out,
                           size_t size);
/* 1 when the folder holds key[0..len)'s mask. */
int sk_mask_folder_has(const struct sk_mask_folder *mf, const char *key, size_t len);
/* Its bytes into buf (replacing them): 0, SHARD_ENOTFOUND when there is
 * none, or sk_source_file_read's errors (SHARD_ELIMIT over max_bytes).
 * Thread-safe. */
int sk_mask_folder_read(const struct sk_mask_folder *mf, const char *key, size_t len,
                        uint64_t max_bytes, struct shard_buf *buf, struct shard_err *err);
/* The files of no image, in key order, named DIR/ + path. */
size_t sk_mask_folder_orphan_count(const struct sk_mask_folder *mf); /* accepts NULL */
const char *sk_mask_folder_orphan(const struct sk_mask_folder *mf, size_t i, size_t *len);

/* shard_scan_dir, also collecting the sidecar files of `side` (may be NULL). */
int sk_scan_dir(const char *root, struct shard_keylist *keys, struct sk_sidecars *side,
                struct shard_refusals *refused, struct shard_scan_stats *st, struct shard_err *err);

/* ---- a directory of archives (archive_dir.c) -------------------------------- */

/* 1 when `name` ends, case-insensitively, in .tar .tar.gz .tgz .tar.bz2 .tbz2
 * .tar.xz .txz .tar.zst .tzst or .zip. */
int sk_is_archive_name(const char *name);
/* A list of names (a directory's, as the two listings below give them):
 * append a copy of `name` (*n names, room for *cap, grown by doubling),
 * 0 or SHARD_ENOMEM; sort them bytewise; free them (accepts NULL). */
int sk_names_add(char ***list, size_t *n, size_t *cap, const char *name, struct shard_err *err);
void sk_names_sort(char **list, size_t n);
void sk_names_free(char **list, size_t n);

/* The archives directly in `dir` (regular files so named: no subdirectory is
 * entered, no link followed), sorted by name, in *names (malloc'd, each
 * malloc'd).  Other entries are counted in *st as ignored.  SHARD_ENOTFOUND,
 * SHARD_EINVAL (not a directory, or no archive in it), SHARD_EIO, SHARD_ENOMEM. */
int sk_archive_dir_list(const char *dir, char ***names, size_t *count, struct shard_scan_stats *st,
                        struct shard_err *err);

/* ---- an annotation table (annotations.c) ------------------------------------
 *
 * Per-sample values keyed by the sample's key: JSON Lines (one object per
 * line, "key" or "key_hex" naming the sample) or CSV with a header row (a
 * "key" column).  Only the wanted columns are kept, as the bytes a field is
 * parsed from (manifests/FORMAT.md "Where values come from"): a CSV cell's
 * text (an empty cell is absent); a JSON string's content, or the compact
 * serialisation of any other value (always, for a column with `json` set);
 * a JSON null or a missing member is absent.  A key listed twice, a row
 * without a key, a malformed line or a wanted column the CSV header lacks is
 * an error naming the file and line.  Lookups are thread-safe. */
struct sk_annotation_column {
    const char *name;
    int json; /* 1: the value as JSON text, strings included (a json field) */
};
struct sk_annotations;

/* The position of column `name` read as `json` in cols[0..*ncols), added
 * at the end when it is not there yet (cols has room for it). */
uint32_t sk_annotation_column_want(struct sk_annotation_column *cols, uint32_t *ncols,
                                   const char *name, int json);

/* Read `path` (a regular file; JSON Lines when named .jsonl, .ndjson or
 * .json or starting with '{', else CSV), its rows keyed by `key_column`
 * (NULL: "key", or "key_hex" in JSON Lines), keeping columns cols[0..ncols),
 * which must outlive the table.  0, SHARD_ENOTFOUND, SHARD_EIO, SHARD_EINVAL
 * (malformed, with file and line), SHARD_ENOMEM. */
int sk_annotations_load(struct sk_annotations **out, const char *path, const char *key_column,
                        const struct sk_annotation_column *cols, uint32_t ncols,
                        struct shard_err *err);
void sk_annotations_free(struct sk_annotations *a); /* accepts NULL */
/* "file:<basename>:<xxh3 of its bytes>" (owned by the table). */
const char *sk_annotations_describe(const struct sk_annotations *a);
uint64_t sk_annotations_rows(const struct sk_annotations *a);
/* The row of `key`, or -1. */
int64_t sk_annotations_row(const struct sk_annotations *a, const char *key, size_t len);
/* Row `row`'s value of column `col`: 1 with *data and *len (owned by the table),
 * 0 when absent (or row < 0). */
int sk_annotations_value(const struct sk_annotations *a, int64_t row, uint32_t col,
                         const uint8_t **data, size_t *len);
/* The line of the file row `row` starts on (0 for row < 0). */
uint64_t sk_annotations_line(const struct sk_annotations *a, int64_t row);
/* 3 when text[0..len) starts with a UTF-8 byte order mark (EF BB BF, which
 * spreadsheets put in front of a CSV file), else 0: the bytes a table's
 * reader skips. */
size_t sk_utf8_bom(const uint8_t *text, size_t len);
/* Rows whose key names none of `keys`.  0 or SHARD_ENOMEM. */
int sk_annotations_unmatched(const struct sk_annotations *a, const struct shard_keylist *keys,
                             uint64_t *unmatched, struct shard_err *err);

/* ---- reasons ------------------------------------------------------------- */

/* A candidate that is not a regular file: "not a regular file: fifo", in
 * the words of every other message about such a file (util/fsutil.h). */
#define SK_REASON_NOT_REGULAR SK_FS_NOT_REGULAR
#define SK_REASON_SYMLINK SK_FS_NOT_REGULAR_LINK
/* A directory the walk could not list: its key ends in '/'. */
#define SK_REASON_DIRECTORY "cannot read directory: "
/* A directory entry whose type could not be learned. */
#define SK_REASON_STAT "cannot stat: "
/* An archive entry whose name would land outside an extraction root. */
#define SK_REASON_UNSAFE "unsafe name in archive: "
/* An archive entry libarchive could not read; the archive went on. */
#define SK_REASON_DAMAGED "damaged archive entry: "
#define SK_REASON_ENCRYPTED "unsupported: encrypted archive entry"
/* A hard link whose target cannot be found or used. */
#define SK_REASON_LINK "hard link to "
/* An image that shares its stem with an earlier one while sidecar fields are
 * declared. */
#define SK_REASON_STEM "another image has the same stem: "
/* A later archive entry of a name an earlier entry already has. */
#define SK_REASON_DUPLICATE "duplicate entry in archive: an earlier entry has this name"

/* 1 when `reason` is one a scan gives without reading the file (the kinds
 * above but the duplicate): such a reject stands for what the entry *is*,
 * so shardcheck --source pairs it only with an entry refused for the very
 * same reason, never with a readable file. */
int sk_reason_is_refusal(const char *reason);

/* ---- archives (libarchive: tar, tar.gz, tar.zst, zip, ...; archive.c) ---- */

struct sk_archive;

/* Open an archive for one streaming pass.  SHARD_EINVAL when libarchive does
 * not recognise the format, and for a file that holds no entries at all (an
 * empty file, or one of only zero bytes, which reads as an empty tar). */
int sk_archive_open(struct sk_archive **out, const char *path, struct shard_err *err);

/* Advance to the next candidate entry: one whose name has a candidate
 * extension (shard_is_candidate), whatever its type; the other entries
 * are counted in *st.  On 1 (an entry): *key points to its key (valid
 * until the next call) and buf holds its bytes, unless
 *  - the entry is larger than max_bytes (when max_bytes != 0): then
 *    *too_large is set to its size, buf is left empty and the data skipped;
 *  - sk_archive_problem() says why it has none (a reject reason);
 *  - it is a hard link without data: sk_archive_link() names the entry
 *    whose bytes it has.
 * The key is the entry's name normalised ("./a//b.jpg" is "a/b.jpg"), or,
 * for a name that is absolute or has a ".." component, the name as stored
 * (such an entry has a problem).  A damaged entry (a bad CRC, a truncated
 * compressed member, a size that lies) is produced with its problem and the
 * archive is read on, opening it again when libarchive cannot go on by
 * itself.  Returns 1, 0 at the end of the archive, or a negative error
 * when it cannot be read any further (SHARD_ECORRUPT with libarchive's
 * message, naming the entry it broke at). */
int sk_archive_next(struct sk_archive *a, uint64_t max_bytes, const char **key, size_t *key_len,
                    struct shard_buf *buf, uint64_t *too_large, struct shard_scan_stats *st,
                    struct shard_err *err);

/* Why the entry sk_archive_next just produced has no bytes, or NULL when
 * it has them (or is a hard link).  The reasons: "not a regular file:
 * symbolic link (never followed)" (and fifo, socket, character device,
 * block device), "unsafe name in archive: absolute path" (or "'..'
 * component"), "unsupported: encrypted archive entry", "damaged archive
 * entry: <libarchive's words>", "hard link to '<name>', an unsafe name".
 * Valid until the next call.  Such an entry is a candidate to reject with
 * that reason; the archive goes on. */
const char *sk_archive_problem(const struct sk_archive *a);

/* When the entry sk_archive_next just produced is a hard link: its
 * target's normalised name (valid until the next call), else NULL.
 * *link_only is 1 when the entry has no data of its own: its bytes are
 * those of the file the target names at that point of the archive (tar
 * stores a file's later names that way); 0 when it brings data that
 * becomes that file's (cpio, pax).  Either may be NULL. */
const char *sk_archive_link(const struct sk_archive *a, size_t *len, int *link_only);

/* The position of the entry sk_archive_next just produced among all the
 * archive's entries (directories and other entries included), from 0. */
uint64_t sk_archive_ordinal(const struct sk_archive *a);

void sk_archive_close(struct sk_archive *a); /* accepts NULL */

/* ---- every entry of an archive --------------------------------------------- */

struct sk_archive_entry {
    const char *key; /* normalised name (raw name when unsafe); valid until the next call */
    size_t key_len;
    int candidate;       /* 1: sk_archive_next would produce it */
    const char *problem; /* why it has no bytes, or NULL (as sk_archive_problem) */
    const char *link;    /* hard-link target (normalised), or NULL */
    size_t link_len;
    int link_only; /* a hard link without data of its own */
    uint64_t too_large;
};

/* Like sk_archive_next, but also produces the entries that are not
 * candidates (not directories) for which want(ctx, key, len) returns 1;
 * other non-candidates are counted in *st and skipped, as there.  Bytes are
 * read for every entry produced, candidate or not. */
/* How sk_archive_next_entry reads: a wanted non-candidate (a sidecar file)
 * up to max_other_bytes (0: the call's max_bytes), and before an entry's
 * bytes are read, admit(ctx, bytes, err) is told how many it will hold (its
 * declared size; 0 when that is over the limit and nothing is read): a
 * non-zero return ends the call with it.  admit NULL: no such call. */
void sk_archive_set_reading(struct sk_archive *a, uint64_t max_other_bytes,
                            int (*admit)(void *ctx, uint64_t bytes, struct shard_err *err),
                            void *ctx);
int sk_archive_next_entry(struct sk_archive *a, uint64_t max_bytes,
                          int (*want)(void *ctx, const char *key, size_t len), void *ctx,
                          struct sk_archive_entry *out, struct shard_buf *buf,
                          struct shard_scan_stats *st, struct shard_err *err);

/* ---- hard links -------------------------------------------------------------- */

/*
 * A tar stores a file with several names once: later names are hard-link
 * entries without data ("b.jpg is a link to a.jpg").  Extraction gives
 * every name the bytes of the file, so every name must be a sample with
 * those bytes.  Formats differ in where the data sits: tar puts it on the
 * first name, cpio (newc) on the last, pax may give a link data that then
 * replaces the file's; so this follows what extraction does, one file
 * ("inode") per entry that is not a link, each link joining its target's
 * file, each entry with data writing that file's content, the last write
 * winning.
 *
 * Pass 1 is the caller's pass over the candidates (sk_archive_next):
 * sk_links_note() each candidate that sk_archive_link names a target
 * for.  sk_links_resolve() then finds each target among the earlier
 * candidates; a target that is not a candidate (say "a.dat") is found by a
 * second pass over the archive, which hands each such entry's bytes to the
 * caller as a "hidden item" (converted or hashed, like a candidate, but
 * not one).  Memory: a few words per link, and per candidate only while
 * resolving (two arrays of uint64_t); never any file's bytes.
 */
struct sk_links;

int sk_links_new(struct sk_links **out, struct shard_err *err);
void sk_links_free(struct sk_links *l); /* accepts NULL */

/* Candidate number `cand` (0 for the first candidate sk_archive_next
 * produced) is the entry `a` just produced: note it when it is a hard link.
 * 0 or SHARD_ENOMEM. */
int sk_links_note(struct sk_links *l, const struct sk_archive *a, uint64_t cand,
                  struct shard_err *err);

/* 1 when a link was noted (then resolve). */
int sk_links_any(const struct sk_links *l);

/* The bytes of hidden item `item` (0, 1, ...), or why there are none:
 * `problem` (a reason) or `too_large` (its size, over max_bytes). */
typedef int (*sk_links_item_fn)(void *ctx, uint64_t item, const struct shard_buf *bytes,
                                uint64_t too_large, const char *problem, struct shard_err *err);

/* Resolve every link noted; keys are pass 1's candidates in archive order.
 * May read the archive at `path` once more (then calling item_fn).  Errors
 * are the archive's (a second pass that cannot read it) or SHARD_ENOMEM. */
int sk_links_resolve(struct sk_links *l, const struct shard_keylist *keys, const char *path,
                     uint64_t max_bytes, sk_links_item_fn item_fn, void *ctx,
                     struct shard_err *err);

/* Where a candidate's content comes from when it is not its own. */
struct sk_link_copy {
    uint64_t cand; /* the candidate */
    enum { SK_FROM_CANDIDATE, SK_FROM_ITEM, SK_FROM_NOWHERE } from;
    uint64_t source; /* the candidate or hidden item it has the content of */
    const char *why; /* SK_FROM_NOWHERE: the reject reason (owned by l) */
};

/* After resolve: 1 and *out when candidate `cand`'s content is not its own,
 * else 0. */
int sk_links_source(const struct sk_links *l, uint64_t cand, struct sk_link_copy *out);

/* The position in the archive (sk_archive_ordinal) of hidden item
 * `item`'s entry, for a caller that reads it again. */
uint64_t sk_links_item_ordinal(const struct sk_links *l, uint64_t item);

/* After resolve: the candidates whose content is not their own, one per
 * call, in candidate order (*pos starts at 0).  Returns 1, or 0 at the end.
 * A source is never itself a candidate listed here, so copies may be
 * applied in any order. */
int sk_links_next_copy(const struct sk_links *l, uint64_t *pos, struct sk_link_copy *out);

/* ---- COCO annotation files (coco.c) ----------------------------------------
 *
 * An instances_*.json file: "images" ({id, file_name, width?, height?}),
 * "annotations" ({image_id, bbox [x, y, width, height], category_id,
 * iscrowd?, segmentation: polygons or RLE}) and "categories" ({id, name}).
 * An image is a sample's when its file_name is the sample's key.  Boxes,
 * polygons and RLE are in the pixels of the file as stored (before EXIF
 * orientation), the frame COCO's width and height describe. */

struct sk_coco;

/* Read and index the file.  SHARD_EINVAL naming the file for one that is
 * not such a file as a whole (not JSON, no categories, two images of one
 * file_name or id, ...), an error reading it, or SHARD_ENOMEM. */
int sk_coco_load(struct sk_coco **out, const char *path, struct shard_err *err);
void sk_coco_free(struct sk_coco *c); /* accepts NULL */
/* "file:<basename>:<xxh3 of its bytes>" (owned by c). */
const char *sk_coco_describe(const struct sk_coco *c);
/* The categories, by increasing id (owned by c). */
const struct shard_field_class *sk_coco_categories(const struct sk_coco *c, uint32_t *count);
uint64_t sk_coco_image_count(const struct sk_coco *c);
uint64_t sk_coco_annotation_count(const struct sk_coco *c);
/* The image whose file_name is key[0..len): its number, or -1. */
int64_t sk_coco_image(const struct sk_coco *c, const char *key, size_t len);
/* The images whose file_name is none of `keys`, and the annotations of no
 * image of `keys` (those too whose image_id is no image's).  0 or
 * SHARD_ENOMEM. */
int sk_coco_unmatched(const struct sk_coco *c, const struct shard_keylist *keys, uint64_t *images,
                      uint64_t *annotations, struct shard_err *err);

/* A box of an annotation, in the stored pixels: x0, y0, x1, y1. */
struct sk_coco_box {
    double b[4];
    uint32_t cls;   /* its category id */
    uint32_t flags; /* SHARD_BOX_CROWD */
    uint32_t ann;   /* its annotation: the image's how-manieth (sk_coco_instance) */
};

/* The boxes of image `image`, whose file is stored w x h, as struct
 * sk_coco_box into out (replacing it), in the file's order, each of a
 * category of the file.  `clamp` (shardify --boxes clamp, as torchvision's
 * reference): a box partly outside the image is clipped to it, one wholly
 * outside it or empty is left out, counted in *outside.  Else (strict) each
 * bbox must be of positive size and inside the image (up to a pixel over an
 * edge is taken as rounding and clipped).  0, or SHARD_ECORRUPT with the
 * reason (the sample is rejected: "annotation 12: bbox [...] is outside the
 * 640x480 image", or the file's width and height are not the image's), or
 * SHARD_ENOMEM.  Thread-safe. */
int sk_coco_boxes(const struct sk_coco *c, int64_t image, uint32_t w, uint32_t h, int clamp,
                  struct shard_buf *out, uint64_t *outside, struct shard_err *why);

/* The mask of image `image` (stored w x h) into mask (w x h, `bytes` per
 * value): 0 (background) where no annotation is, else the category id of
 * the last annotation (in file order) whose segmentation covers the pixel;
 * polygons and RLE rasterised as pycocotools does (coco_rle.h).  0, or
 * SHARD_ECORRUPT naming the malformed annotation (a polygon of fewer than
 * three points or a point outside the image, RLE of another size or whose
 * counts do not cover it), or SHARD_ENOMEM.  Thread-safe. */
int sk_coco_mask(const struct sk_coco *c, int64_t image, uint32_t w, uint32_t h, uint32_t bytes,
                 struct shard_image *mask, struct shard_err *why);

/* The mask of annotation `ann` of image `image` alone (its place among the
 * image's annotations, sk_coco_box.ann) into mask (w x h, 1 byte a value):
 * 1 where its segmentation covers the pixel, 0 elsewhere, rasterised as
 * sk_coco_mask does (an annotation without segmentation covers nothing).
 * 0, SHARD_ECORRUPT naming a malformed segmentation, or SHARD_ENOMEM.
 * Thread-safe. */
int sk_coco_instance(const struct sk_coco *c, int64_t image, uint32_t ann, uint32_t w, uint32_t h,
                     struct shard_image *mask, struct shard_err *why);

/* The order of keys everywhere in shardkit (manifests/FORMAT.md, "Sample
 * order"): bytes compared with memcmp, a prefix before its extensions.
 * Negative, zero or positive like strcmp (keylist.c). */
int sk_key_compare(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
