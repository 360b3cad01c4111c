/*
 * shardkit/dataset.h - reading a dataset: samples by index, epoch plans and
 * a prefetching iterator.  This is how training code reads shards.
 *
 * Three pieces, each an opaque handle with a create/free pair (every free
 * accepts NULL) and plain structs for everything passed in or out; there are
 * no callbacks (but the optional observer of a C tool that traces the reads,
 * struct shard_read_observer), so the API wraps directly into other
 * languages.
 *
 *   struct shard_dataset  an open dataset, in a local directory, at an
 *                         http(s):// URL or under an s3:// prefix (its
 *                         manifest; shard footers are read on first use).
 *                         Any sample is one ranged read away: (shard,
 *                         record) -> footer row -> frame.  It counts what its
 *                         reads cost (shard_dataset_stats).
 *   struct shard_plan     the order one rank visits samples in one epoch: a
 *                         deterministic function of (manifest, seed, epoch,
 *                         rank, world_size, options) and nothing else.
 *   struct shard_iter     N reader threads reading, decompressing and
 *                         decoding the samples of a list of indices ahead of
 *                         the consumer, into a bounded queue, handed out in
 *                         list order.
 *
 * Sample numbering.  A dataset of N samples numbers them 0..N-1 in stored
 * order: shard 0's records in record order, then shard 1's, ... - the order
 * of index.jsonl.  That number is a sample's "index" below.  Reading in
 * stored order is a plan with shuffle off and one rank (or the list 0..N-1)
 * given to an iterator; an epoch of training is a plan with shuffle on.
 *
 * Thread safety.  shard_dataset_read*() may be called from many threads at
 * once on one dataset.  A plan is immutable once made.  An iterator is used
 * by one thread at a time (its threads are internal).  Close a dataset only
 * after every iterator over it has been freed.
 *
 * Errors.  A damaged record is reported, never skipped and never a crash:
 * the call returns SHARD_ECORRUPT and the message names the shard, the
 * record and the key, e.g.
 *   "shard-000000.shard record 12 (key 'a/b.jpg'): zstd: checksum mismatch"
 *
 * Tiers (shardkit/api.h): stable, but for the experimental parts
 * (SHARDKIT_EXPERIMENTAL): the read path's observer hooks (struct
 * shard_read_observer is declared always, shard_read_span_name is
 * experimental: shardbench's spans), the manifest's hash, one record by its
 * shard and number, whole files where datasets are read (shard_remote_*,
 * shard_location_is_remote) and the rest of an epoch on another number of
 * ranks (shard_plan_new_resumed, shard_dataset_plan_resumed).
 */
#ifndef SHARDKIT_DATASET_H
#define SHARDKIT_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"
#include "shardkit/image.h"
#include "shardkit/manifest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the dataset ------------------------------------------------------- */

struct shard_dataset;

/* Open the dataset at `location`: a directory path holding manifest.json
 * and its shards, an "http://..." or "https://..." base URL under which
 * manifest.json and the shards are served, or "s3://BUCKET/PREFIX" on S3 or
 * an S3-compatible store (the objects PREFIX/manifest.json, ...; every
 * request signed with the credentials the AWS CLI v2 would find - AWS_*
 * variables, ~/.aws/credentials and ~/.aws/config, AWS_PROFILE -, unsigned
 * only when SHARDKIT_S3_NO_SIGN_REQUEST is true, SHARD_EINVAL when there
 * are none; AWS_ENDPOINT_URL(_S3) or the profile names another store: see
 * docs/guide/remote.md, the settings table).
 * Remotely, manifest.json is fetched with one GET; shards are read with
 * range requests in large windows, several connections at a time, transient
 * failures retried with backoff - the server must support range requests
 * (struct shard_dataset_options below says how; shard_dataset_open_ex sets
 * it).  Only manifest.json is read here;
 * each shard's header, trailer and footer are read and checked the first
 * time one of its records is needed.  A footer (about 40 bytes and the key
 * per record) stays in memory while reads need it: an iterator or a loader
 * lets each shard's footer go once its plan is past the shard (an epoch
 * holds those of the few shards it is reading), other reads keep the
 * least recently used ones up to 256 MiB, and a footer let go is read again
 * when a read needs it.  What a dataset keeps thus does not grow with its
 * samples (but for shard_dataset_key, below).
 * On success *out is the dataset (free with shard_dataset_close).  Errors:
 * SHARD_ENOTFOUND (no directory or no manifest.json; HTTP 404 or 410: the
 * message names the object, s3://BUCKET/KEY, and S3's code, NoSuchBucket...),
 * SHARD_ECORRUPT (a malformed or self-contradicting manifest, with the
 * reason), SHARD_EUNSUPPORTED (a newer manifest version; a server that
 * does not implement the request: HTTP 405, 501, 505), SHARD_ENET (another
 * HTTP failure, at once for a 4xx, after the retries for a transient one),
 * SHARD_EIO, SHARD_ENOMEM. */
SHARD_API int shard_dataset_open(struct shard_dataset **out, const char *location,
                                 struct shard_err *err);

/* Watching the reads: for a C tool that draws where reading spends its time
 * (`shardbench --trace`).  With an observer (struct shard_dataset_options),
 * the read path calls span() as each piece of its work ends, on the thread
 * that did it, and thread() when a thread it started begins work ("http
 * connection"); the hooks must be thread-safe and quick.  Times are
 * CLOCK_MONOTONIC in nanoseconds.  Without an observer (NULL, the default)
 * the read path makes no call. */
enum shard_read_span {
    SHARD_SPAN_READ = 0,   /* getting a record's frame bytes */
    SHARD_SPAN_DECOMPRESS, /* zstd (and the frame hash with SHARD_READ_VERIFY) */
    SHARD_SPAN_DECODE,     /* the payload to pixels, the item filled */
    SHARD_SPAN_SAMPLE,     /* one whole read, the three above inside it (also a failed one) */
    SHARD_SPAN_OPEN_SHARD, /* header, trailer and footer of a shard */
    SHARD_SPAN_HTTP,       /* one HTTP request, its retries included */
    SHARD_SPAN_RTT,        /* the simulated round trip inside a request (rtt_ms) */
    SHARD_SPAN_BACKOFF,    /* waiting before a retry */
    SHARD_SPAN_COUNT
};

#ifdef SHARDKIT_EXPERIMENTAL
/* "read", "decompress", "decode", "sample", "open shard", "http request",
 * "rtt (simulated)", "retry backoff" (static strings); "unknown" for a value
 * out of range. */
SHARD_API const char *shard_read_span_name(enum shard_read_span k);
#endif /* SHARDKIT_EXPERIMENTAL */

struct shard_read_observer {
    /* A span [start_ns, end_ns) of kind k ended on the calling thread. */
    void (*span)(void *user, enum shard_read_span k, uint64_t start_ns, uint64_t end_ns);
    /* The calling thread, started by the read path, begins its work; `name`
     * is a static string.  May be NULL. */
    void (*thread)(void *user, const char *name);
    void *user;
};

/* How a remote dataset (http://, https://, s3://) is read; a local one
 * ignores them.  Shards are read in windows of window_bytes (aligned
 * ranges), fetched by `connections` background connections, the next ones
 * read ahead, and kept in the dataset's window cache (in memory; not the
 * node-local cache below, which keeps whole shards on disk) of at most
 * window_cache_bytes (least recently used windows go first).  Every
 * request is retried `retries` times on a transient failure - connection
 * refused or reset, a time-out, HTTP 5xx but 501 and 505, 408, 429 - after
 * 50 ms, 100 ms, ... doubling, capped at 2 s; an attempt times out when
 * nothing arrives for timeout_seconds (connecting, waiting for the answer
 * or stalled in the body; counted in whole seconds once connected; a slow
 * transfer that keeps moving is not cut).  404 and 410 are
 * SHARD_ENOTFOUND, 405, 501 and 505 SHARD_EUNSUPPORTED, any other status
 * SHARD_ENET, at once. */
struct shard_dataset_options {
    int connections;       /* 1..SHARD_DATASET_MAX_CONNECTIONS (default 8) */
    uint64_t window_bytes; /* SHARD_DATASET_MIN_WINDOW..SHARD_DATASET_MAX_WINDOW
                            * (default 8 MiB) */
    /* at least window_bytes (default 256 MiB); the deprecated `cache_bytes`
     * is 0.1.0's name of the same member (same offset) */
    union {
        uint64_t window_cache_bytes;
        uint64_t cache_bytes SHARD_DEPRECATED("use window_cache_bytes");
    };
    int retries;            /* 0..SHARD_DATASET_MAX_RETRIES (default 8: a server that
                             * stays down costs about 7 s of waiting) */
    double timeout_seconds; /* more than 0, at most SHARD_DATASET_MAX_TIMEOUT
                             * (default 10) */
    /* The node-local shard cache: a directory on local disk shared by every
     * process of the machine (created if missing).  Whole shards are kept
     * there as they are read, checked against the manifest's size and
     * xxh3 before use, and later reads of them are local; at most
     * cache_limit bytes (0: as much as the disk takes): shards of other
     * datasets are removed to make room, the least recently read first,
     * never the dataset's own for each other (a shard that does not fit is
     * read remotely).  NULL: $SHARDKIT_CACHE_DIR when set
     * and not empty, else no cache; "": no cache.  cache_limit 0 takes
     * $SHARDKIT_CACHE_LIMIT ("20G", "512M", bytes; powers of 1024) when
     * set.  A shard that cannot be cached (a full disk) is read remotely:
     * shard_dataset_cache_warning says why.  The directory's layout and
     * rules: docs/guide/remote.md, "Node-local cache". */
    const char *cache_dir;
    uint64_t cache_limit;
    /* For measuring remote reading against a server on loopback, where no
     * real latency can be added: sleep this long before every request (a
     * simulated round trip), counted in shard_read_stats.rtt_ns.  0..
     * SHARD_DATASET_MAX_RTT, an hour (default 0: none). */
    double rtt_ms;
    /* Every read of the dataset (local or remote), and every request, is
     * reported to it (see above); NULL (default): none.  The struct is
     * copied at open; what its `user` points to must outlive the dataset. */
    const struct shard_read_observer *observer;
};

#define SHARD_DATASET_DEFAULT_CONNECTIONS 8
#define SHARD_DATASET_MAX_CONNECTIONS 64
#define SHARD_DATASET_DEFAULT_WINDOW (8ull << 20)
#define SHARD_DATASET_MIN_WINDOW (4ull << 10)
#define SHARD_DATASET_MAX_WINDOW (4ull << 30)
#define SHARD_DATASET_DEFAULT_WINDOW_CACHE (256ull << 20)
#define SHARD_DATASET_DEFAULT_RETRIES 8
#define SHARD_DATASET_MAX_RETRIES 100
#define SHARD_DATASET_DEFAULT_TIMEOUT 10.0
#define SHARD_DATASET_MAX_TIMEOUT 86400
#define SHARD_DATASET_MAX_RTT 3600000.0

/* The first warning of the dataset's node-local cache ("" when none: a
 * shard it could not cache, e.g. "cache directory '/scratch/c':
 * shard-000004.shard read remotely, not cached: No space left on device";
 * reads go on remotely) into buf, NUL-terminated; its length.
 * Thread-safe. */
SHARD_API size_t shard_dataset_cache_warning(const struct shard_dataset *ds, char *buf,
                                             size_t size);

/* The defaults above: what shard_dataset_open uses. */
SHARD_API void shard_dataset_options_init(struct shard_dataset_options *o);

/* shard_dataset_open with the remote-reading options `o` (NULL: the
 * defaults).  Options out of their ranges are SHARD_EINVAL naming the
 * option and its range, before anything is read. */
SHARD_API int shard_dataset_open_ex(struct shard_dataset **out, const char *location,
                                    const struct shard_dataset_options *o, struct shard_err *err);

/* Forget the shard bytes a remote dataset keeps in memory (its window
 * cache; footers stay), so that the next reads go to the server again: what
 * a dataset larger than memory costs every epoch, and memory given back
 * between epochs.  The windows of a shard the node-local cache is still
 * downloading stay (the download has yet to read them).  No-op for a local
 * dataset.  Call with no read in progress (no iterator over ds). */
SHARD_API void shard_dataset_drop_window_cache(struct shard_dataset *ds);

/* Close and free (also the sample buffers kept from freed iterators).
 * Accepts NULL. */
SHARD_API void shard_dataset_close(struct shard_dataset *ds);

/* The loaded manifest (owned by ds; valid until it is closed). */
SHARD_API const struct shard_manifest *shard_dataset_manifest(const struct shard_dataset *ds);

#ifdef SHARDKIT_EXPERIMENTAL
/* XXH3-64 of the manifest.json bytes the dataset was opened with: its
 * identity.  Publishing other contents (another run, a nightly re-publish
 * with the same sample count) gives another one; it is what a lineage's
 * previous_manifest_xxh3 names (manifests/FORMAT.md).  A training loader
 * keeps it in its saved position, so that a position is never restored on
 * another dataset. */
SHARD_API uint64_t shard_dataset_manifest_xxh3(const struct shard_dataset *ds);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Number of samples (counts.samples) and of shards. */
SHARD_API uint64_t shard_dataset_size(const struct shard_dataset *ds);
SHARD_API uint32_t shard_dataset_shard_count(const struct shard_dataset *ds);

/* Where sample `index` is stored.  0 or SHARD_ENOTFOUND (index >= size). */
SHARD_API int shard_dataset_locate(const struct shard_dataset *ds, uint64_t index, uint32_t *shard,
                                   uint64_t *record, struct shard_err *err);

/* The index of (shard, record).  0 or SHARD_ENOTFOUND. */
SHARD_API int shard_dataset_index_of(const struct shard_dataset *ds, uint32_t shard,
                                     uint64_t record, uint64_t *index, struct shard_err *err);

/* The key of sample `index`, from its shard's footer (the shard's header,
 * trailer and footer are read on first use; no record is read), copied into
 * *key (replacing its contents; key->len bytes, then a NUL not counted).
 * 0, SHARD_ENOTFOUND, SHARD_ENOMEM, or an error opening the shard.
 * Thread-safe. */
SHARD_API int shard_dataset_key_copy(struct shard_dataset *ds, uint64_t index,
                                     struct shard_buf *key, struct shard_err *err);

/* The same without a copy: *key points at *len bytes owned by ds, valid
 * until it is closed (not NUL-terminated).  For that, the shard's footer
 * stays in memory until ds is closed (about 40 bytes and the key per
 * record): a program that reads the keys of many shards, or of every
 * sample, uses shard_dataset_key_copy, whose footers are let go as reads'
 * are.  Thread-safe. */
SHARD_API int shard_dataset_key(struct shard_dataset *ds, uint64_t index, const char **key,
                                size_t *len, struct shard_err *err);

/* The index of the sample whose key is key[0..len) (any bytes), in
 * O(log n) small reads: a binary search of the key tables beside the index
 * files (index.keys, manifests/FORMAT.md "Key tables": 16 bytes a read,
 * local preads or range requests), the candidate's key then compared with
 * its shard's footer, so that keys whose hashes collide are told apart.  An
 * index file written before key tables (none in the manifest) is read line
 * by line instead.  Before it says a key is not there, a lookup checks the
 * table it searched against the manifest's size and xxh3, once per table
 * and dataset (a damaged entry could have sent the search astray).
 * Memory does not grow with the dataset; thread-safe.  0, SHARD_ENOTFOUND
 * ("no sample with key 'a/b.jpg'"), SHARD_ECORRUPT (a damaged key table,
 * named: "'index.keys' is damaged: ..."; a damaged index file or shard),
 * SHARD_EIO, SHARD_ENET, SHARD_ENOMEM. */
SHARD_API int shard_dataset_find_key(struct shard_dataset *ds, const char *key, size_t len,
                                     uint64_t *index, struct shard_err *err);

/* ---- reading one sample ------------------------------------------------ */

/* What a read fills in (bitwise or).  The key, label and size always are. */
enum shard_read_flags {
    SHARD_READ_PIXELS = 1, /* decode the payload: item->pixels, uint8 RGB HWC */
    SHARD_READ_STORED = 2, /* copy the payload as stored: item->stored */
    /* Also check the frame's bytes against the footer's xxh3 before
     * decompressing.  Without it a read still verifies zstd's content checksum
     * and the record's structure, key and label, which catches damage too;
     * the extra hash costs ~10% of a raw read, so it is for verification
     * (shardcheck --deep uses it), not for training loops. */
    SHARD_READ_VERIFY = 4,
    /* Leave the record's fields (format version 2) out of the item: they are
     * neither copied nor checked, and item->field_count is 0.  For readers
     * that use only the image (a loader with no field selected). */
    SHARD_READ_NO_FIELDS = 8,
};

/* One sample.  Zero it before first use ({0} or memset); after that it may
 * be reused for any number of reads, keeping its buffers' capacity, and is
 * released with shard_item_release().  Every buffer belongs to the item. */
struct shard_item {
    uint64_t index;  /* position in stored order */
    uint32_t shard;  /* position in the manifest's shards */
    uint64_t record; /* record number inside the shard */
    int32_t label;   /* index into the manifest's labels, or SHARD_NO_LABEL */
    uint32_t width;  /* stored size in pixels */
    uint32_t height;
    /* The form of `pixels`: the dataset's (the manifest's "stored"; 3 and 8
     * before version 3), which a narrower record of a mixed dataset is
     * widened to (shard_image_convert: grey copied to RGB, an opaque alpha
     * added, 8 bits times 257). */
    uint32_t channels;
    enum shard_codec codec;    /* how the payload is stored */
    uint32_t depth;            /* bits per sample of `pixels`: 8 or 16 */
    struct shard_buf key;      /* key.len bytes, then a NUL (not counted) */
    struct shard_buf stored;   /* payload bytes with SHARD_READ_STORED, else len 0 */
    struct shard_image pixels; /* with SHARD_READ_PIXELS: width x height x channels of
                                * depth bits, rows width*channels*depth/8 bytes apart;
                                * otherwise pixels.width is 0.  A raw record's pixels
                                * stay where it was decompressed, pixels.offset bytes
                                * into the buffer */
    /* The fields the sample has (format version 2; none in a version 1
     * dataset or with SHARD_READ_NO_FIELDS), in field number order: each
     * value's `field` indexes the manifest's config.fields, its type is the
     * declared one and `data` points into field_data, which holds a copy of
     * the record's field area (made once per read).  A field the sample does
     * not have has no value here. */
    uint32_t field_count;
    struct shard_field_value *fields;
    uint32_t field_capacity; /* values `fields` has room for */
    struct shard_buf field_data;
    /* The record's own form (its payload's): channels and depth unless the
     * dataset is mixed and this record narrower. */
    uint32_t stored_channels;
    uint32_t stored_depth;
};

/* Free the item's buffers and zero it.  Accepts NULL. */
SHARD_API void shard_item_release(struct shard_item *item);

/* Read sample `index` into *item: fetch the record's frame (one ranged read
 * using the footer index), check its zstd checksum (and, with
 * SHARD_READ_VERIFY, its xxh3) and that its key and label equal the footer's, then decode or copy
 * the payload as `flags` asks (decoding checks the payload's dimensions).  Thread-safe. Unless
 * SHARD_READ_NO_FIELDS, the record's fields are copied into the item and checked against the
 * manifest's declarations: each field number declared, each type the declared one, each value one
 * of its type (shard_field_check_image: UTF-8 text, one JSON value, finite floats, a vector of the
 * declared length, boxes inside the image and of declared classes, a mask of the image's size and
 * declared values), label numbers below the manifest's label count. A shard must be of its
 * dataset's format version (a version 2 manifest has version 2 shards, a version 1 manifest version
 * 1 shards). 0, SHARD_ENOTFOUND (no such index), SHARD_ECORRUPT (damaged shard or record, a field
 * that contradicts the manifest, a shard of another version: the message names shard, record and
 * key), SHARD_EIO, SHARD_ENOMEM. On failure *item holds no sample (its buffers are kept for reuse).
 */
SHARD_API int shard_dataset_read(struct shard_dataset *ds, uint64_t index, unsigned flags,
                                 struct shard_item *item, struct shard_err *err);

#ifdef SHARDKIT_EXPERIMENTAL
/* The same, by (shard, record). */
SHARD_API int shard_dataset_read_record(struct shard_dataset *ds, uint32_t shard, uint64_t record,
                                        unsigned flags, struct shard_item *item,
                                        struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- what reading costs --------------------------------------------------
 *
 * A dataset counts the cost of every read made through it - by
 * shard_dataset_read*() or by an iterator's threads - from its opening on.
 * The counts only grow: to measure an interval (an epoch, a training step),
 * take a snapshot before and after and subtract.  Stage times are summed
 * over the threads that read, so with N readers they may add up to N times
 * the wall time; divide by `samples` for the cost of one sample.  Keeping
 * them costs a few atomic adds and clock reads per sample. */
struct shard_read_stats {
    uint64_t samples;           /* reads that delivered a sample */
    uint64_t errors;            /* reads that failed (damage, I/O, a missing shard) */
    uint64_t read_ns;           /* getting record frames: pread, or the HTTP window cache
                                 * and the waits for its fetches */
    uint64_t decompress_ns;     /* zstd and checksums */
    uint64_t decode_ns;         /* payload to pixels (raw: none), filling the item */
    uint64_t bytes_requested;   /* shard bytes the reader asked for: record frames, and
                                 * each shard's header, trailer and footer once */
    uint64_t bytes_transferred; /* bytes received over HTTP (read-ahead included, so it may
                                 * exceed bytes_requested); 0 for a local dataset */
    uint64_t requests;          /* HTTP requests made (0 for a local dataset) */
    uint64_t retries;           /* HTTP attempts repeated after a transient failure */
    uint64_t rtt_ns;            /* simulated round-trip delay slept (options.rtt_ms) */
    /* The node-local cache (shard_dataset_options.cache_dir; all 0 without
     * one).  Hits and misses count shard opens, not reads: a shard counts
     * once each time it is opened from the cache or downloaded - when a
     * dataset opens it, and when a read finds it again after it was let go
     * (an epoch read by an iterator or a loader lets each shard go once it
     * is past the plan's last sample of it, so hits + misses is the shards
     * each epoch reads; a dataset also keeps only its 256 most recently
     * read cached shards open). */
    uint64_t cache_hits;          /* shards read from the cache: no request */
    uint64_t cache_misses;        /* shards not in the cache (downloaded, or skipped) */
    uint64_t cache_bytes_fetched; /* bytes downloaded into the cache */
    uint64_t cache_evictions;     /* shards removed to stay under the limit or fit the disk */
    uint64_t cache_skipped;       /* shards read remotely, uncached: no room (every cached
                                   * shard in use), a full disk, a failed write */
    uint64_t cache_corrupt;       /* cached shards that failed their check: removed and
                                   * fetched again */
};

/* A snapshot of ds's counters into *out.  Thread-safe: reads may go on
 * meanwhile (each counter is read atomically, the set is not one instant). */
SHARD_API void shard_dataset_stats(const struct shard_dataset *ds, struct shard_read_stats *out);

/* ---- whole files where datasets are read ---------------------------------
 *
 * A remote location holds more than datasets: a tool that compares shards
 * with the small files they came from (shardbench's files loader) reads
 * each file with one GET, under the same rules as a dataset's reads: the
 * struct shard_dataset_options (connections, retries, time-out, rtt_ms,
 * observer; windows, the window cache and the node-local cache are not
 * used), the same status mapping and messages, the same S3 signing. */

#ifdef SHARDKIT_EXPERIMENTAL
/* 1 when `location` is read over the network: it starts with http://,
 * https:// or s3://. */
SHARD_API int shard_location_is_remote(const char *location);

struct shard_remote;

/* The files below `location` (http(s)://BASE: file NAME is BASE/NAME,
 * percent-encoded but for '/'; s3://BUCKET/PREFIX: the object PREFIX/NAME).
 * Nothing is requested yet.  o NULL: the defaults.  0, SHARD_EINVAL (a
 * local location, options out of range: named as shard_dataset_open_ex
 * names them) or SHARD_ENOMEM. */
SHARD_API int shard_remote_open(struct shard_remote **out, const char *location,
                                const struct shard_dataset_options *o, struct shard_err *err);

/* All of file `name` into buf (replacing its contents), with one GET.
 * Thread-safe.  0, SHARD_ENOTFOUND (HTTP 404, 410), SHARD_ELIMIT (a body
 * over max_bytes, when not 0), SHARD_EUNSUPPORTED, SHARD_ENET, SHARD_ENOMEM;
 * the message names the URL or s3://BUCKET/KEY:
 *   "cannot read 'http://host/src/a.jpg': HTTP 404 Not Found" */
SHARD_API int shard_remote_get(struct shard_remote *r, const char *name, uint64_t max_bytes,
                               struct shard_buf *buf, struct shard_err *err);

/* What the GETs have cost so far (requests, retries, bytes_transferred,
 * rtt_ns; the other counts stay 0).  Thread-safe. */
SHARD_API void shard_remote_stats(const struct shard_remote *r, struct shard_read_stats *out);

/* Free, ending any request under way.  Accepts NULL. */
SHARD_API void shard_remote_close(struct shard_remote *r);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- epoch plans --------------------------------------------------------
 *
 * The plan of (seed, epoch, rank, world_size) over shards holding
 * n_0, n_1, ... samples (N in all) is built in three steps:
 *
 *  1. Shard order.  With shuffle on, the shard numbers 0..S-1 are permuted by
 *     the Fisher-Yates shuffle driven by SplitMix64 of manifests/FORMAT.md
 *     ("Sample order") seeded with derive(seed, 1, epoch, 0, 0); with
 *     shuffle off they stay in order.  Flattening the shards in that order,
 *     each shard's records in record order, gives the epoch sequence
 *     E[0..N).
 *  2. Rank split, at the sample level: rank r takes the contiguous slice
 *     E[floor(r*N/W), floor((r+1)*N/W)).  Every sample goes to exactly one
 *     rank; slices differ in length by at most one; each rank reads whole
 *     runs of records, so reads stay sequential inside shards; shards of
 *     uneven sizes and W larger than the number of shards (even than N:
 *     then some ranks get nothing) need no special case.  The remainder
 *     option changes this step only:
 *       SHARD_REMAINDER_KEEP (default): as above; nothing is padded or dropped.
 *       SHARD_REMAINDER_DROP: every rank gets q = floor(N/W) samples, rank r
 *         the slice E[r*q, (r+1)*q); the last N - W*q samples of E (which
 *         ones changes with the epoch's shard order) are not visited.
 *       SHARD_REMAINDER_PAD: every rank gets c = ceil(N/W) samples, rank r
 *         positions r*c .. (r+1)*c-1 of E repeated end to end (position p is
 *         E[p mod N]): the W*c - N extra entries repeat samples from the
 *         start of E.  An empty dataset gives empty plans.
 *  3. Shuffle within a bounded buffer.  With shuffle on and a buffer of B
 *     (> 1), the rank's slice is cut into consecutive windows of B entries
 *     (the last may be shorter) and window k is permuted by the same
 *     Fisher-Yates/SplitMix64 shuffle seeded with derive(seed, 2, epoch,
 *     rank, k).  A sample thus moves at most B-1 places, which bounds how
 *     far ahead a reader must look.
 *
 * derive(seed, tag, epoch, rank, k) is XXH3-64 (xxHash 0.8) with seed `seed`
 * of the 32 bytes le64(tag) le64(epoch) le64(rank) le64(k).  Everything is
 * specified, so another implementation (a Python loader) can reproduce a
 * plan exactly.  Different epochs give different orders; the same inputs
 * always give the same plan, on any machine and thread count.
 */

enum shard_remainder {
    SHARD_REMAINDER_KEEP = 0, /* ranks differ by at most one sample */
    SHARD_REMAINDER_DROP = 1, /* every rank floor(N/W); the rest is not visited */
    SHARD_REMAINDER_PAD = 2,  /* every rank ceil(N/W); repeats from the start of E */
};

struct shard_plan_options {
    int shuffle; /* 0: stored shard order, no window shuffle */
    uint64_t seed;
    uint64_t epoch;
    uint32_t rank;           /* 0 .. world_size-1 */
    uint32_t world_size;     /* >= 1 */
    uint64_t shuffle_buffer; /* B; 0 or 1: no shuffle inside the slice */
    enum shard_remainder remainder;
};

/* Defaults: shuffle on, seed 0, epoch 0, rank 0 of 1, buffer 1024, keep. */
#define SHARD_PLAN_DEFAULT_BUFFER 1024u
SHARD_API void shard_plan_options_init(struct shard_plan_options *o);

/* "keep" / "drop" / "pad".  0 or SHARD_EINVAL. */
SHARD_API int shard_remainder_parse(const char *s, enum shard_remainder *out);
SHARD_API const char *shard_remainder_name(enum shard_remainder r);

struct shard_plan;

/* The plan for shards holding shard_samples[0..shard_count) samples.
 * On success *out is the plan (free with shard_plan_free).  SHARD_EINVAL
 * (world_size 0, rank >= world_size) or SHARD_ENOMEM. */
SHARD_API int shard_plan_new(struct shard_plan **out, const uint64_t *shard_samples,
                             uint32_t shard_count, const struct shard_plan_options *o,
                             struct shard_err *err);

/* The plan for an open dataset (its manifest's shard sample counts). */
SHARD_API int shard_dataset_plan(const struct shard_dataset *ds, const struct shard_plan_options *o,
                                 struct shard_plan **out, struct shard_err *err);

SHARD_API void shard_plan_free(struct shard_plan *p); /* accepts NULL */

/* Entries of this rank's plan, and the sample indices in visiting order
 * (owned by the plan; valid until it is freed). */
SHARD_API uint64_t shard_plan_count(const struct shard_plan *p);
SHARD_API const uint64_t *shard_plan_indices(const struct shard_plan *p);
/* With SHARD_REMAINDER_PAD: entries of this rank that repeat a sample. */
SHARD_API uint64_t shard_plan_padded(const struct shard_plan *p);
/* With SHARD_REMAINDER_DROP: samples of the epoch that no rank visits. */
SHARD_API uint64_t shard_plan_dropped(const struct shard_plan *p);

/* ---- the rest of an epoch, on another number of ranks ---------------------
 *
 * Ranks that stop in the middle of an epoch in lockstep (each has taken
 * the same number of entries of its plan, as DDP keeps them) may go on
 * with another world size: the entries the epoch had yet to visit are
 * split among the new ranks, each taken by exactly one of them, and the
 * epochs after it are the ordinary plans of the new world size.  The part
 * read so far is a list of segments: segment 0 read by done[0].world_size
 * ranks with remainder done[0].remainder, each of which took the first
 * done[0].taken entries of its ordinary plan; segment k > 0 likewise by the
 * ranks of done[k], of their plans of segment k; the new ranks read
 * segment `count` with o->remainder (count 0: the ordinary plan).
 *
 * Every segment works on the positions of the epoch sequence E[0..L) of
 * step 1 (a mixture's M, shardkit/mixture.h).  Segment k gives its ranks a
 * list S_k of m_k positions (S_0 = 0, 1, ..., L-1) and fillers F_k (F_0
 * none):
 *
 *  1. Rank r of W takes the slice [b, e) of S_k that step 2 gives with
 *     N = m_k and the segment's remainder; an index i >= m_k (pad) is a
 *     filler: F_k[(i - m_k) mod |F_k|], or S_k[i mod m_k] when F_k is
 *     empty.
 *  2. With shuffle on and a buffer B > 1 (a mixture: never), the slice is
 *     cut into windows of B from b, window j permuted by the
 *     Fisher-Yates/SplitMix64 shuffle seeded with derive(s_k, 2, epoch, r,
 *     j), where s_0 = seed and s_k = derive(seed, 4, epoch, k, 0) (so
 *     segment 0's plans are the ordinary plans).
 *  3. S_{k+1}: for r = 0..W-1 in turn, the entries rank r did not take:
 *     those of the window holding its first untaken entry that follow it,
 *     in plan order, then its slice from that window's end on, in S_k's
 *     order, fillers left out.  F_{k+1}: the first min(taken, W_{k+1})
 *     entries of rank 0's plan of segment k, fillers left out: positions
 *     visited before the stop (F_k when there are none).
 *
 * The plan is rank o->rank's list of segment `count`, each position p
 * standing for the sample E[p].  Every position the epoch had yet to visit
 * is in exactly one new rank's plan, once, with keep and pad; pad's
 * fillers repeat positions visited before the stop (shard_plan_padded
 * counts them) and drop leaves out the last m mod W of the rest
 * (shard_plan_dropped).  What is left is kept as runs of positions, about
 * a window's worth per rank that stopped: the memory is that of the new
 * rank's plan, as for an ordinary plan. */
struct shard_plan_segment {
    uint32_t world_size;            /* the ranks that read this segment, >= 1 */
    uint64_t taken;                 /* entries of its plan each of them took (at most all) */
    enum shard_remainder remainder; /* how they split it (one rank: any, the same plan) */
};

#ifdef SHARDKIT_EXPERIMENTAL
/* Rank o->rank of o->world_size's plan of what is left of epoch o->epoch
 * after the segments done[0..count), over shards holding
 * shard_samples[0..shard_count) samples; the other options (seed, shuffle,
 * shuffle_buffer) are the ones every segment was read with.  0,
 * SHARD_EINVAL (a rank outside its world, a segment of no ranks or of an
 * unknown remainder) or SHARD_ENOMEM. */
SHARD_API int shard_plan_new_resumed(struct shard_plan **out, const uint64_t *shard_samples,
                                     uint32_t shard_count, const struct shard_plan_options *o,
                                     const struct shard_plan_segment *done, size_t count,
                                     struct shard_err *err);

/* The same for an open dataset (its manifest's shard sample counts). */
SHARD_API int shard_dataset_plan_resumed(const struct shard_dataset *ds,
                                         const struct shard_plan_options *o,
                                         const struct shard_plan_segment *done, size_t count,
                                         struct shard_plan **out, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- the prefetching iterator ------------------------------------------ */

struct shard_iter_options {
    int threads;          /* reader threads (0..1024); 0: read on the caller's thread
                           * in next() */
    uint32_t queue_depth; /* samples read ahead (the bound on memory); 0: 4 per thread */
    unsigned flags;       /* SHARD_READ_* (default SHARD_READ_PIXELS) */
};

/* Defaults: 2 threads, queue depth 0 (= 4 per thread), SHARD_READ_PIXELS. */
SHARD_API void shard_iter_options_init(struct shard_iter_options *o);

struct shard_iter;

/* Start reading the samples indices[0..count) of ds, in that order (a
 * plan's indices, or any list; repeats are allowed).  The list is copied;
 * ds must stay open until the iterator is freed.  The threads start at once and
 * stay at most queue_depth samples ahead of the consumer; before each read
 * they ask the dataset for the records up to queue_depth further on (the
 * kernel's read-ahead for local shards, window fetches over HTTP).
 * 0, SHARD_EINVAL, SHARD_ENOMEM or SHARD_EIO (threads could not start). */
SHARD_API int shard_iter_new(struct shard_iter **out, struct shard_dataset *ds,
                             const uint64_t *indices, uint64_t count,
                             const struct shard_iter_options *o, struct shard_err *err);

/* The next sample, in list order.  Returns 1 and fills *item, 0 at the end
 * of the list, or a negative error for this entry (the message names shard,
 * record and key); after an error the next call continues with the next
 * entry, so a caller may log and go on or stop - nothing is skipped
 * silently.  *item must be zeroed before its first use; its old buffers are
 * recycled by the iterator and the new ones belong to the item (no copy is
 * made: buffers are exchanged with the queue). */
SHARD_API int shard_iter_next(struct shard_iter *it, struct shard_item *item,
                              struct shard_err *err);

/* Have shard_iter_next call interrupted(user) on its thread at most every
 * 50 ms while it waits for the next sample (for a reader thread's read, or, with
 * threads 0, its own read and what that read waits for: an HTTP transfer,
 * a window, a node-local cache lock), and stop once it returns non-zero:
 * next() then returns SHARD_EINTR, the entry not handed out and the position unchanged
 * (the next call gives it).  interrupted must be quick and must not call
 * the library (the reader's locks may be held).  NULL: none, next() waits
 * for its sample.  Whatever the interrupt, shard_iter_free ends the
 * reader threads' reads within 50 ms, never waiting for a server that stalls. */
SHARD_API void shard_iter_set_interrupt(struct shard_iter *it, int (*interrupted)(void *user),
                                        void *user);

/* Entries handed out so far (the position of the next one). */
SHARD_API uint64_t shard_iter_position(const struct shard_iter *it);

/* Stop the reader threads and free the iterator.  Its queue's sample buffers go to
 * the dataset, which gives them to the next iterator (the next epoch's)
 * instead of allocating new ones, and frees them when it is closed.
 * Accepts NULL. */
SHARD_API void shard_iter_free(struct shard_iter *it);

/* ---- older names (deprecated) --------------------------------------------
 *
 * shardkit 0.1.0's names of the window cache, which were "cache" alone, the
 * word of the node-local cache (CONTRIBUTING.md's "Words"): kept so that a
 * program written against them still compiles (the compiler warns and names
 * the new one) and one built against them still links and runs.
 * shard_dataset_options' `cache_bytes` shares its union with
 * `window_cache_bytes`; shard_dataset_drop_cache is exported and does what
 * shard_dataset_drop_window_cache does. */

#define SHARD_DATASET_DEFAULT_CACHE SHARD_DATASET_DEFAULT_WINDOW_CACHE

SHARD_API void shard_dataset_drop_cache(struct shard_dataset *ds)
    SHARD_DEPRECATED("use shard_dataset_drop_window_cache");

#ifdef __cplusplus
}
#endif
#endif
