/* http.h - the library's one HTTP engine (private): libcurl set up once, a
 * client (struct sk_http) holding the settings and a pool of connections,
 * and sk_http_perform(), which performs one request under the rules below.
 *
 * Two users add what is theirs on top: the reader's range fetcher
 * (read/fetch_http.c: windows, a cache, read-ahead) and the S3 object
 * operations (net/s3_ops.c: listings and uploads; S3's signing and XML
 * error codes come in through the client's `sign` and `error_code` hooks,
 * set by net/s3.c).  A retry, status or time-out rule changes here, for
 * both.
 *
 * Rules, for every request:
 *  - attempts: the first, then up to `retries` more after a transient
 *    failure, waiting 50 ms, 100 ms, ... (doubling, capped at 2 s) before
 *    each.  Transient: connection refused or reset, a time-out, a body cut
 *    short, HTTP 5xx but 501 and 505, 408 and 429.
 *  - time-out: an attempt ends when nothing arrives for timeout_seconds -
 *    connecting, waiting for the answer, or stalled in the body (a slow
 *    transfer that keeps moving is not cut).
 *  - statuses: 2xx is success.  404 and 410 are SHARD_ENOTFOUND (or, with
 *    missing_ok, an answer: 0 with the status set); 405, 501 and 505
 *    SHARD_EUNSUPPORTED (a server that does not implement a request never
 *    will); 416 to a ranged request is the caller's answer (0, status 416:
 *    an empty file has no suffix); any other status is SHARD_ENET at once.
 *    A ranged request must come back 206 with a valid Content-Range: a
 *    server that sends the whole file ignored the range (SHARD_ENET).
 *  - cancellation: once the client's *cancel or the request's is non-zero,
 *    or the requesting thread's cancellation says stop (util/cancel.h),
 *    unless the request has no_cancel, it ends with SHARD_EINTR - before an
 *    attempt, during a back-off, or in the middle of a transfer, looked at
 *    at least every SK_CANCEL_POLL_MS (a transfer runs on a multi handle
 *    polled in such slices: libcurl's progress callback alone may wait a
 *    second while a server stalls).
 *  - messages: "cannot VERB 'NAME': REASON" (but a body over rq->max, which
 *    the caller names: "file of N bytes exceeds the limit of M", as a local
 *    file's), NAME the request's `shown`,
 *    else its URL, and REASON "HTTP 404 Not Found" (with the server's error
 *    code when the `error_code` hook finds one: " (NoSuchKey)"), "timed out:
 *    nothing received for 10 s", libcurl's words for a failed connection,
 *    "... (gave up after 9 attempts)" when the retries ran out.  No message
 *    carries the password of a URL (shard_err_set redacts every one).
 *  - connections: handles come from the client's pool - at most
 *    SK_HTTP_POOL_MAX idle ones kept, each reset to the common options
 *    before it is used again (a reset keeps its live connection, not the
 *    previous request's method, range or headers).
 *  - rtt_ms > 0 sleeps that long before every attempt: a simulated round
 *    trip, for benchmarks on loopback.
 */
#ifndef SHARDKIT_NET_HTTP_H
#define SHARDKIT_NET_HTTP_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <xxhash.h>

#include "shardkit/error.h"
#include "shardkit/image.h"

#define SK_HTTP_BACKOFF_FIRST_MS 50.0
#define SK_HTTP_BACKOFF_MAX_MS 2000.0
#define SK_HTTP_DEFAULT_RETRIES 8
#define SK_HTTP_DEFAULT_TIMEOUT 10.0 /* seconds without a byte: the attempt is abandoned */
#define SK_HTTP_MAX_TIMEOUT 86400    /* seconds */
#define SK_HTTP_POOL_MAX 64          /* idle handles a client keeps */
#define SK_HTTP_CODE_SIZE 64         /* a server's error code: "NoSuchBucket", ... */

/* What a client may count or trace (the reader's counters and spans). */
enum sk_http_event {
    SK_HTTP_ATTEMPT,  /* an attempt is sent */
    SK_HTTP_RECEIVED, /* an attempt ended having received n body bytes */
    SK_HTTP_BACKOFF,  /* [start, end): waiting before another attempt */
    SK_HTTP_DELAY,    /* [start, end): the simulated round trip (rtt_ms) */
    SK_HTTP_DONE,     /* [start, end): the whole request, its attempts included */
};

/* A client: settings, hooks and a pool of connections; shared by threads
 * (set the fields before its first request, then leave them). */
struct sk_http {
    int retries;                   /* attempts after a transient failure */
    double timeout_seconds;        /* nothing received for this long ends an attempt */
    double rtt_ms;                 /* simulated round trip before every attempt; 0: none */
    volatile sig_atomic_t *cancel; /* NULL, or non-zero: requests end with SHARD_EINTR */
    /* Called on each request's handle once set up: the signing and the
     * headers every request carries plus `header` (may be NULL).  *list
     * receives the header list (freed after the request).  0 or an error.
     * NULL: no signing, `header` alone is sent. */
    int (*sign)(void *user, CURL *c, const char *header, struct curl_slist **list,
                struct shard_err *err);
    void *sign_user;
    /* The server's error code found in the body of a failed answer, into
     * out (size bytes; "" when none).  NULL: none looked for. */
    void (*error_code)(const void *body, size_t len, char *out, size_t size);
    /* Told of attempts, bytes, waits (NULL: no one): on the requesting
     * thread, so it must be thread-safe and quick. */
    void (*event)(void *user, enum sk_http_event e, uint64_t start_ns, uint64_t end_ns, uint64_t n);
    void *event_user;
    /* the pool: each handle with the multi handle it runs on, which keeps
     * its connection */
    pthread_mutex_t lock;
    struct sk_http_handle {
        CURL *easy;
        CURLM *multi;
    } idle[SK_HTTP_POOL_MAX];
    size_t idle_len;
};

/* One request.  Zero it ({0}), then say what to send and where the answer
 * goes; the results are filled in by sk_http_perform. */
struct sk_http_request {
    const char *method; /* NULL: GET; "HEAD", "PUT", "POST", "DELETE" */
    const char *url;
    const char *shown;             /* how messages name it; NULL: the URL */
    const char *verb;              /* "cannot VERB ...": NULL is "read" */
    const char *range;             /* a ranged GET: "START-END" or "-SUFFIX"; NULL: none */
    const char *header;            /* one more header line, or NULL */
    int missing_ok;                /* 404 and 410 are an answer (status set, 0 returned) */
    volatile sig_atomic_t *cancel; /* NULL, or non-zero: this request ends (SHARD_EINTR),
                                    * as when the client's *cancel is */
    int no_cancel;                 /* neither *cancel stops it: what a cancelled run still does */
    /* The body sent (PUT, POST): body_len bytes at body, or with from_fd,
     * fd_len bytes of the open file fd from fd_offset (read with pread). */
    const void *body;
    size_t body_len;
    int from_fd;
    int fd;
    uint64_t fd_offset;
    uint64_t fd_len;
    /* Where a successful answer's body goes - at most one of: */
    uint8_t *dst; /* a fixed buffer of cap bytes; more is an error, */
    size_t cap;
    int keep_prefix;       /* but for a 206 larger than cap, which keeps what fit */
    struct shard_buf *out; /* a growing buffer (replaced), of at most max bytes (0: any) */
    uint64_t max;
    XXH3_state_t *hash; /* hashed as it comes (reset for each attempt), kept nowhere */
    /* none: discarded */
    char *etag; /* when not NULL: the answer's ETag (etag_size bytes, "" if none) */
    size_t etag_size;
    /* Results */
    long status;          /* the final answer's status (0: none came) */
    uint64_t received;    /* body bytes of the final answer */
    uint64_t length;      /* its Content-Length (0 when not sent): what a HEAD tells */
    uint64_t range_start; /* a 206's Content-Range: bytes START-END/TOTAL */
    uint64_t range_end;
    uint64_t total;
};

/* The defaults: SK_HTTP_DEFAULT_RETRIES, SK_HTTP_DEFAULT_TIMEOUT, no hooks,
 * an empty pool; and libcurl initialised (once per process).  0, or
 * SHARD_ENET when libcurl cannot be. */
int sk_http_init(struct sk_http *h, struct shard_err *err);

/* Close the pooled handles.  Accepts NULL; no request may be under way. */
void sk_http_release(struct sk_http *h);

/* Perform rq under the rules above.  0 with rq->status 2xx (or 416 to a
 * ranged request, or 404/410 with missing_ok), or an error naming the
 * request's target: SHARD_ENOTFOUND, SHARD_EUNSUPPORTED, SHARD_ENET,
 * SHARD_ELIMIT (a body larger than rq->max), SHARD_EINTR (cancelled),
 * SHARD_EIO (the local file of the body could not be read), SHARD_ENOMEM.
 * Thread-safe. */
int sk_http_perform(struct sk_http *h, struct sk_http_request *rq, struct shard_err *err);

/* The pool's idle handles now (for tests). */
size_t sk_http_idle_count(struct sk_http *h);

#endif
