/* fetch_http.h - the HTTP backend of fetch.h, with libcurl (private).
 *
 * A location "http://host/path" (or https) is a base URL; file NAME is
 * fetched from base/NAME, NAME percent-encoded except for '/'.  An S3
 * location "s3://BUCKET/PREFIX" is the same protocol with a URL mapping and
 * signed requests (net/s3.h): everything below holds for it too, and its
 * errors name the object (s3://BUCKET/PREFIX/NAME), with S3's error code
 * when the answer has one ("cannot read 's3://b/manifest.json': HTTP 404
 * Not Found (NoSuchBucket)"); it shares the S3 location's client (net/s3.h),
 * which this backend's settings then govern.
 *
 * Shards are read in large ranges, never one request per record: a file is
 * cut into aligned windows of window_bytes; a read copies from the windows
 * it covers, which are fetched on first use by `connections` background
 * connections and kept in an LRU window cache of window_cache_bytes; each read also queues
 * the next `connections` windows (read-ahead), so a reader walking a shard
 * in order finds its bytes already there.  Opening a file is one suffix
 * range request: it gives the size and the last bytes (the trailer and,
 * usually, the whole footer).  A read at least a window long goes straight
 * to the server as one range.
 *
 * Every request goes through the library's HTTP engine (net/http.h), under
 * its rules: retried on transient failures (connection refused or reset,
 * time-outs, 5xx but 501 and 505, 408, 429) with back-off, `retries` times;
 * an attempt timed out when nothing arrives for timeout_seconds; 404 and
 * 410 are SHARD_ENOTFOUND, 405, 501 and 505 SHARD_EUNSUPPORTED, any other
 * status SHARD_ENET at once.  Messages name the file:
 *   "cannot read 'http://host/data/shard-000003.shard': HTTP 404 Not Found"
 * Closing a file stops the fetches of its windows still under way (a
 * server that is down does not hold the close for the retries), and freeing
 * the backend every request.
 * A server that answers a range request with the whole file, or a file whose
 * size changes between requests, is an error, not silently misread.
 *
 * reading.rtt_ms > 0 sleeps that long before every request: a simulated
 * round trip, since real latency cannot be added on a loopback benchmark.
 * Requests, retries, bytes received and the delay slept are added to
 * `counters`, and spans reported to reading.observer, when set
 * (read/observer.h). */
#ifndef SHARDKIT_FETCH_HTTP_H
#define SHARDKIT_FETCH_HTTP_H

#include <stdint.h>

#include "read/fetch.h"
#include "shardkit/dataset.h"
#include "shardkit/image.h"

struct sk_read_counters;
struct sk_s3;
struct shard_read_observer;

struct fetch_http_options {
    /* connections, window, window cache, retries, time-out, the simulated round
     * trip and the observer (which must outlive the backend) */
    struct shard_dataset_options reading;
    struct sk_read_counters *counters; /* NULL: none; must outlive the backend */
};

/* The defaults (shard_dataset_options_init); no counters. */
void sk_fetch_http_options_init(struct fetch_http_options *o);

/* The defaults with the public options `reading` (NULL: the defaults), checked
 * (sk_dataset_options_check): 0 or SHARD_EINVAL naming the option. */
int sk_fetch_http_options_from(struct fetch_http_options *o,
                               const struct shard_dataset_options *reading, struct shard_err *err);

/* 0, or SHARD_EINVAL naming the first option of o out of its range
 * (shardkit/dataset.h). */
int sk_dataset_options_check(const struct shard_dataset_options *o, struct shard_err *err);

/* 1 when `location` starts with http:// or https://. */
int sk_fetch_http_is_url(const char *location);

/* 1 when `location` is read by this backend: http://, https:// or s3://
 * (public as shard_location_is_remote). */
int sk_fetch_http_is_remote(const char *location);

/* A backend reading files below the base URL `base`, or below the S3
 * location "s3://BUCKET/PREFIX" (net/s3.h: the object PREFIX/NAME, through
 * the endpoint the settings name, every request signed; messages name the
 * object as s3://BUCKET/KEY).  Nothing is requested yet.  0, SHARD_EINVAL
 * (bad options or location) or SHARD_ENOMEM. */
int sk_fetch_http_new(struct fetch **out, const char *base, const struct fetch_http_options *o,
                      struct shard_err *err);

/* fetch_open on `fs` (from sk_fetch_http_new) of a file whose size is
 * known - a shard the manifest describes, opened again: no request is made
 * (no suffix, so no bytes are kept from the end); a file whose size turns
 * out to differ fails its reads, as any file that changed size does. */
int sk_fetch_http_open_sized(struct fetch *fs, const char *name, uint64_t size,
                             struct fetch_file **out, struct shard_err *err);

/* Read exactly len bytes at offset of `file` (opened by this backend) with
 * one range request of its own, bypassing the windows: a few small reads
 * scattered over a large file (a key table's binary search) cost a few
 * small requests, not a window each.  Thread-safe. */
int sk_fetch_http_read_direct(struct fetch_file *file, uint64_t offset, void *buf, size_t len,
                              struct shard_err *err);
/* Fetch all of file `name` with one GET into buf (replacing its contents):
 * for small files (a manifest, a source image).  A body larger than
 * max_bytes (when not 0) is SHARD_ELIMIT.  `fs` must come from
 * sk_fetch_http_new.  Thread-safe. */
int sk_fetch_http_get(struct fetch *fs, const char *name, uint64_t max_bytes, struct shard_buf *buf,
                      struct shard_err *err);

/* Size and XXH3-64 of file `name`, fetched with one GET and hashed as it
 * comes (nothing kept).  `fs` must come from sk_fetch_http_new. */
int sk_fetch_http_hash(struct fetch *fs, const char *name, uint64_t *bytes, uint64_t *xxh3,
                       struct shard_err *err);

/* The S3 location and settings of an s3:// backend, or NULL (http, or not
 * this backend). */
struct sk_s3 *sk_fetch_http_s3(struct fetch *fs);

/* Empty the window cache of every open file (windows being read or fetched
 * stay, and every window of a file kept by sk_fetch_http_keep): the next
 * reads go to the server again.  No-op for a backend that is not HTTP. */
void sk_fetch_http_drop_window_cache(struct fetch *fs);

/* Keep (keep 1) the windows of `file` (opened on this backend) through
 * sk_fetch_http_drop_window_cache, or no longer (0): a reader the dataset's user
 * does not see - the node-local cache's download - has yet to read them,
 * and would fetch them again.  No-op for NULL or another backend's file.
 * Thread-safe. */
void sk_fetch_http_keep(struct fetch_file *file, int keep);

/* The URL of file `name` (malloc'd; NULL when out of memory). */
char *sk_fetch_http_url(const struct fetch *fs, const char *name);

/* How messages name file `name`: its URL, or s3://BUCKET/KEY (malloc'd;
 * NULL when out of memory). */
char *sk_fetch_http_shown(const struct fetch *fs, const char *name);

#endif
