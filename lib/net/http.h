/* http.h - what every HTTP client of the library shares (private): libcurl
 * set up once, handles with the common options, which failures are worth
 * another attempt, and the back-off between attempts.
 *
 * Two clients use it: the reader's range fetcher (read/fetch_http.c) and the
 * S3 object operations (net/s3_ops.c). */
#ifndef SHARDKIT_NET_HTTP_H
#define SHARDKIT_NET_HTTP_H

#include <curl/curl.h>

#include "shardkit/error.h"

/* Back-off before attempt n+1: 50 ms, 100 ms, ... doubling, capped at 2 s. */
#define SK_HTTP_BACKOFF_FIRST_MS 50.0
#define SK_HTTP_BACKOFF_MAX_MS 2000.0
#define SK_HTTP_DEFAULT_RETRIES 8
#define SK_HTTP_DEFAULT_TIMEOUT 10.0  /* seconds without a byte: the attempt is abandoned */

/* curl_global_init, once per process.  0 or SHARD_ENET. */
int sk_http_init(struct shard_err *err);

/* A new easy handle with the options every request of ours has: no
 * signals, redirects followed (a few), TCP keep-alive, our user agent, and
 * `timeout_seconds` without a byte received ending an attempt (connecting,
 * waiting, or stalled in the body).  NULL when out of memory. */
CURL *sk_http_handle_new(double timeout_seconds);

/* Give handle c those options (after curl_easy_reset, for one). */
void sk_http_handle_setup(CURL *c, double timeout_seconds);

/* Failures worth another attempt: the server or the path may come back
 * (connection refused or reset, time-outs, a truncated body). */
int sk_http_transient_curl(CURLcode rc);

/* Statuses worth another attempt: 5xx but 501 and 505, 408, 429. */
int sk_http_transient_status(long status);

/* " Not Found" for 404 and the like (with a leading space), "" otherwise. */
const char *sk_http_status_text(long status);

/* Sleep before another attempt: *backoff_ms, then double it (capped). */
void sk_http_backoff(double *backoff_ms);

#endif
