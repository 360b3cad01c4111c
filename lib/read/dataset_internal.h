/* dataset_internal.h - what the verifier and the loader share with the
 * reader (private). */
#ifndef SHARDKIT_DATASET_INTERNAL_H
#define SHARDKIT_DATASET_INTERNAL_H

#include <stdatomic.h>

#include "manifest/manifest_internal.h"
#include "shardkit/dataset.h"
#include "shardkit/format.h"

#include "image/decode_internal.h"

struct fetch_file;
struct fetch_http_options;
struct sk_ring;

/* The checked footer of shard s, reading the shard's header, trailer and
 * footer on first use (later calls return the same footer), kept loaded
 * until ds is closed: *footer stays valid until then.  For the verifier,
 * which holds every footer; a read uses sk_dataset_footer_pin.  Errors name
 * the shard by its file name: "shard-000001.shard: footer checksum
 * mismatch".  Thread-safe. */
int sk_dataset_shard_footer(struct shard_dataset *ds, uint32_t s,
                            const struct shard_footer **footer, struct shard_err *err);

/* Shard s's checked footer, loaded if it is not (errors as above), held
 * until sk_dataset_footer_unpin(ds, s): a footer no read holds may be
 * released (its memory grows with the shard's records), when the epoch
 * plan has passed its shard (sk_dataset_let_go) or when the loaded footers
 * exceed the dataset's budget (256 MiB; the least recently used first), and
 * is read again by the next read that needs it.  Each successful pin is
 * matched by one unpin.  Thread-safe. */
int sk_dataset_footer_pin(struct shard_dataset *ds, uint32_t s, const struct shard_footer **footer,
                          struct shard_err *err);
void sk_dataset_footer_unpin(struct shard_dataset *ds, uint32_t s);

/* The epoch plan has passed shard s: release its footer now, or when the
 * last read holding it ends (not a footer sk_dataset_shard_footer keeps). */
void sk_dataset_let_go(struct shard_dataset *ds, uint32_t s);

/* The footers in memory: what a dataset holds that grows with its samples. */
struct sk_footer_stats {
    uint32_t loaded, loaded_peak; /* footers loaded now, and at most so far */
    uint64_t bytes, bytes_peak;   /* their memory now, and at most so far */
    uint64_t loads;               /* footers read, first times and again */
};
void sk_dataset_footer_stats(struct shard_dataset *ds, struct sk_footer_stats *out);
/* The budget of loaded footers no read holds (bytes; tests). */
void sk_dataset_set_footer_budget(struct shard_dataset *ds, uint64_t bytes);

/* Forget what sk_dataset_shard_footer (or a read) opened of shard s: its
 * footer is freed and its file closed, so that a pass over many shards
 * holds only the few it is working on (the verifier); a later use opens
 * the shard again.  Only while no read of shard s is under way and no
 * pointer into its footer is still used. */
void sk_dataset_shard_release(struct shard_dataset *ds, uint32_t s);

/* Open the dataset's file `name` for ranged reads through the dataset's
 * store (a local file, or ranges over HTTP): *out until fetch_close. */
int sk_dataset_open_file(struct shard_dataset *ds, const char *name, struct fetch_file **out,
                         struct shard_err *err);

/* Whether shard s (already opened by sk_dataset_shard_footer) holds the shard
 * number its file name says ("shard-000003.shard" must hold 3): a shard
 * under another shard's name is the wrong data.  Reads refuse such a shard;
 * the verifier reports it and still checks the footer's keys. */
int sk_dataset_shard_check_name(struct shard_dataset *ds, uint32_t s, struct shard_err *err);

/* Whether shard s (opened as above) is of the dataset's format version: a
 * version 2 manifest's shards are version 2, a version 1 manifest's version
 * 1 (FORMAT.md).  Reads refuse another: "shard-000003.shard: a version 1
 * shard in a version 2 dataset". */
int sk_dataset_shard_check_version(struct shard_dataset *ds, uint32_t s, struct shard_err *err);

/* Shard s's file once a read (or the prefetch) opened it, else NULL; valid
 * until ds is closed (a released footer leaves its file open). */
struct fetch_file *sk_dataset_shard_file(struct shard_dataset *ds, uint32_t s);

/* Sample `index` will be read soon: let the shard's backend start fetching
 * its record (the kernel's read-ahead for a local file, window fetches over
 * HTTP).  Only for a shard whose footer a read has loaded: 0 when it is not
 * loaded (ask again later), else 1.  Errors are left to the read. */
int sk_dataset_advise(struct shard_dataset *ds, uint64_t index);

/* A reader thread of a list of samples, list[0..count), about to read position p:
 * advise the samples after p, up to p + ahead, that no thread of the list
 * has advised yet (*advised, shared by the list's threads: the positions
 * before it were advised); through the node-local cache, also open the
 * plan's next shards (read/cache_plan.h: p = 0 begins a plan).  Advice stops at a later sample
 * whose shard no read has opened yet and resumes from there at a later call.  Used by shard_iter
 * and the batch loader. */
void sk_dataset_advise_ahead(struct shard_dataset *ds, const uint64_t *list, uint64_t count,
                             uint64_t p, uint64_t ahead, _Atomic uint64_t *advised);

/* Items (with their buffers) of a freed iterator are kept by the dataset,
 * up to DATASET_SPARE_ITEMS, for the next iterator: an epoch's iterator then
 * reuses the previous one's memory instead of faulting fresh pages in.
 * put() takes the item over (zeroing it); take() fills *item with a kept
 * one and returns 1, or returns 0 when none is kept.  Released by
 * shard_dataset_close. */
#define DATASET_SPARE_ITEMS 4096
void sk_dataset_item_put(struct shard_dataset *ds, struct shard_item *item);
int sk_dataset_item_take(struct shard_dataset *ds, struct shard_item *item);

/* The plan's array of sample indices (shard_plan_count of them, malloc'd;
 * never NULL), which the caller then owns and frees: the plan keeps none
 * (shard_plan_indices gives NULL after this).  For a loader, whose list of
 * the epoch is then the plan's own array, not a copy. */
uint64_t *sk_plan_take_indices(struct shard_plan *p);

/* First sample index of shard s; s == shard count gives the sample count. */
uint64_t sk_dataset_shard_first(const struct shard_dataset *ds, uint32_t s);

/* Size and XXH3-64 of the dataset's file `name`, read whole: a local
 * file, or one GET streamed into the hash.  A missing file is
 * SHARD_ENOTFOUND. */
int sk_dataset_hash_file(struct shard_dataset *ds, const char *name, uint64_t *bytes,
                         uint64_t *xxh3, struct shard_err *err);

/* A reader of the dataset's whole index: its one file (manifest "index"),
 * or its files one after another with each line's shard made absolute
 * (manifest "indexes": see sk_index_reader_open_chain, and
 * sk_index_reader_file_digest for each file's bytes and xxh3).  Local
 * files, or remote ones fetched whole first. */
int sk_dataset_index_open(struct shard_dataset *ds, struct shard_index_reader **out,
                          struct shard_err *err);
/* A reader of index file i (of manifest.index_count) alone: its lines'
 * shards as the file has them, relative to its first shard. */
int sk_dataset_index_open_file(struct shard_dataset *ds, uint32_t i,
                               struct shard_index_reader **out, struct shard_err *err);

/* The dataset's file `name` of `bytes` bytes (the manifest's size of a key
 * table), opened for small scattered reads: a local file, or a remote one
 * opened without a request.  A local file of another size is
 * SHARD_ECORRUPT naming it (a remote one fails its first read).  Close with
 * fetch_close. */
int sk_dataset_open_table(struct shard_dataset *ds, const char *name, uint64_t bytes,
                          struct fetch_file **out, struct shard_err *err);
/* len bytes at offset of a file sk_dataset_open_table opened: a pread, or
 * one range request of exactly those bytes. */
int sk_dataset_read_table(struct shard_dataset *ds, struct fetch_file *f, uint64_t offset,
                          void *buf, size_t len, struct shard_err *err);
/* Whether index file i's key table was hashed whole and found to be the
 * manifest's (set once it was: a lookup that finds no key checks that the
 * table it searched is not damaged, once per dataset). */
int sk_dataset_keys_checked(struct shard_dataset *ds, uint32_t i);
void sk_dataset_keys_set_checked(struct shard_dataset *ds, uint32_t i);

/* Call fn(user, name) for each name in the dataset's directory (a local
 * directory's entries, or one level of an S3 prefix, "." and ".." and
 * sub-prefixes with a trailing '/' included) until it returns non-zero.
 * An http(s):// dataset cannot be listed: SHARD_EUNSUPPORTED. */
int sk_dataset_list(struct shard_dataset *ds, int (*fn)(void *user, const char *name), void *user,
                    struct shard_err *err);

/* Open the dataset at `location` (a directory, or remote as
 * shard_dataset_open) whose manifest may contradict itself (see
 * manifest_internal.h): each contradiction goes to `problem`, and the
 * dataset is what its shard list says (shard_dataset_size is the sum of
 * the shards' samples, whatever counts.samples says).  For the verifier. */
int sk_dataset_open_lenient(struct shard_dataset **out, const char *location,
                            sk_manifest_problem_fn problem, void *user, struct shard_err *err);

/* A read that decodes only part of a JPEG record (sk_dataset_read_box).
 * choose(ctx, width, height, &box) is called with the record's size before
 * its payload is decoded; returning 1 with a box inside width x height asks
 * for only the region around that box (sk_decode_payload_box), 0 for the
 * whole image.  After the read, `cropped` is 1 when item->pixels holds a
 * region, whose first pixel is (box.region_left, box.region_top) of the
 * record's image; 0 when it holds the whole image. */
struct sk_read_box {
    int (*choose)(void *ctx, uint32_t width, uint32_t height, struct sk_jpeg_box *box);
    void *ctx;
    struct sk_jpeg_box box;
    int cropped;
};

/* shard_dataset_read(ds, index, flags | SHARD_READ_PIXELS, item, err),
 * decoding JPEG records only where rb asks.  Other records, and a dataset
 * whose records are decompressed in place (raw manifests), are read whole. */
int sk_dataset_read_box(struct shard_dataset *ds, uint64_t index, unsigned flags,
                        struct sk_read_box *rb, struct shard_item *item, struct shard_err *err);

#endif
