/* http.c - the HTTP engine: libcurl set-up, the pool, and one request with
 * its retries (see net/http.h). */
#include "net/http.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cancel.h"
#include "util/clock.h"
#include "shardkit/api.h"

/* a transfer slower than this for the time-out is abandoned (and retried) */
#define LOW_SPEED_BYTES 1L
#define MAX_REDIRECTS 5L
#define ERROR_BODY_MAX (64u << 10) /* the body of a failed answer kept for its code */
#define CANCEL_POLL_SECONDS 0.02   /* a back-off looks at *cancel this often */
#define TRANSFER_POLL_MS 20        /* a transfer looks at *cancel this often (at most) */

/* ---- libcurl and handles -------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
    curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int sk_http_init(struct sk_http *h, struct shard_err *err)
{
    memset(h, 0, sizeof *h);
    h->retries = SK_HTTP_DEFAULT_RETRIES;
    h->timeout_seconds = SK_HTTP_DEFAULT_TIMEOUT;
    pthread_mutex_init(&h->lock, NULL);
    pthread_once(&curl_once, curl_init);
    if (curl_init_result != CURLE_OK)
        return shard_err_set(err, SHARD_ENET, "cannot initialise libcurl: %s",
                             curl_easy_strerror(curl_init_result));
    return SHARD_OK;
}

void sk_http_release(struct sk_http *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->idle_len; i++) {
        curl_easy_cleanup(h->idle[i].easy);
        curl_multi_cleanup(h->idle[i].multi);
    }
    h->idle_len = 0;
    pthread_mutex_destroy(&h->lock);
}

/* The options every request of ours has: no signals, redirects followed (a
 * few), TCP keep-alive, our user agent, and the time-out. */
static void handle_setup(CURL *c, double timeout_seconds)
{
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS time-outs */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "shardkit/" SHARDKIT_VERSION);
    /* nothing received for the time-out - connecting, waiting for the
     * answer or in the middle of the body - ends the attempt */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_seconds * 1000));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)ceil(timeout_seconds));
}

/* A handle from the pool (its connection kept alive), reset to the common
 * options, or a new one.  0, or -1 when out of memory. */
static int handle_get(struct sk_http *h, struct sk_http_handle *out)
{
    pthread_mutex_lock(&h->lock);
    int pooled = h->idle_len > 0;
    if (pooled)
        *out = h->idle[--h->idle_len];
    pthread_mutex_unlock(&h->lock);
    if (pooled) {
        curl_easy_reset(out->easy);
    } else {
        out->easy = curl_easy_init();
        out->multi = curl_multi_init();
        if (!out->easy || !out->multi) {
            curl_easy_cleanup(out->easy);
            curl_multi_cleanup(out->multi);
            out->easy = NULL;
            out->multi = NULL;
            return -1;
        }
    }
    handle_setup(out->easy, h->timeout_seconds);
    return 0;
}

/* Keep the handle for the next request, unless the pool is full. */
static void handle_put(struct sk_http *h, struct sk_http_handle *c)
{
    pthread_mutex_lock(&h->lock);
    int kept = h->idle_len < SK_HTTP_POOL_MAX;
    if (kept)
        h->idle[h->idle_len++] = *c;
    pthread_mutex_unlock(&h->lock);
    if (!kept) {
        curl_easy_cleanup(c->easy);
        curl_multi_cleanup(c->multi);
    }
}

size_t sk_http_idle_count(struct sk_http *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->idle_len;
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* ---- the policy ------------------------------------------------------------------ */

/* Failures worth another attempt: the server or the path may come back. */
static int transient_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR: return 1;
    default: return 0;
    }
}

/* Statuses worth another attempt: 5xx but 501 Not Implemented and 505 HTTP
 * Version Not Supported (a server that does not implement a request never
 * will), 408, 429. */
static int transient_status(long status)
{
    return (status >= 500 && status != 501 && status != 505) || status == 408 || status == 429;
}

/* What a final non-2xx status is: the request's target is not there, the
 * server will never do this, or another failure. */
static int status_error(long status)
{
    if (status == 404 || status == 410)
        return SHARD_ENOTFOUND;
    if (status == 405 || status == 501 || status == 505)
        return SHARD_EUNSUPPORTED;
    return SHARD_ENET;
}

/* " Not Found" for 404 and the like (with a leading space), "" otherwise. */
static const char *status_text(long status)
{
    switch (status) {
    case 400: return " Bad Request";
    case 401: return " Unauthorized";
    case 403: return " Forbidden";
    case 404: return " Not Found";
    case 405: return " Method Not Allowed";
    case 408: return " Request Timeout";
    case 409: return " Conflict";
    case 410: return " Gone";
    case 416: return " Range Not Satisfiable";
    case 429: return " Too Many Requests";
    case 500: return " Internal Server Error";
    case 501: return " Not Implemented";
    case 502: return " Bad Gateway";
    case 503: return " Service Unavailable";
    case 504: return " Gateway Timeout";
    case 505: return " HTTP Version Not Supported";
    default: return "";
    }
}

static int cancellable(const struct sk_http *h, const struct sk_http_request *rq)
{
    return !rq->no_cancel && (h->cancel || rq->cancel || sk_cancellable());
}

static int cancelled(const struct sk_http *h, const struct sk_http_request *rq)
{
    return !rq->no_cancel && (sk_flag_get(h->cancel) || sk_flag_get(rq->cancel) || sk_cancelled());
}

/* Sleep *backoff_ms before another attempt, then double it (capped); 1 when
 * the request was cancelled meanwhile (cut short), else 0. */
static int backoff(const struct sk_http *h, const struct sk_http_request *rq, double *backoff_ms)
{
    double end = sk_now_seconds() + *backoff_ms / 1e3;
    *backoff_ms = *backoff_ms * 2 > SK_HTTP_BACKOFF_MAX_MS ? SK_HTTP_BACKOFF_MAX_MS
                                                           : *backoff_ms * 2;
    for (;;) {
        if (cancelled(h, rq))
            return 1;
        double left = end - sk_now_seconds();
        if (left <= 0)
            return 0;
        sk_sleep_seconds(left < CANCEL_POLL_SECONDS || !cancellable(h, rq) ? left
                                                                           : CANCEL_POLL_SECONDS);
    }
}

static void event(const struct sk_http *h, enum sk_http_event e, uint64_t start_ns, uint64_t end_ns,
                  uint64_t n)
{
    if (h->event)
        h->event(h->event_user, e, start_ns, end_ns, n);
}

/* ---- one transfer ------------------------------------------------------------------- */

struct transfer {
    const struct sk_http *h;
    struct sk_http_request *rq;
    CURL *handle;
    struct shard_buf error; /* the body of an answer that is not 2xx */
    uint64_t sent;
    uint64_t received;
    int overflow; /* more bytes came than fit */
    int nomem;
    int io_error;
    int cancelled;
};

static long status_now(CURL *c)
{
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    struct transfer *t = user;
    struct sk_http_request *rq = t->rq;
    size_t bytes = size * n;
    if (status_now(t->handle) / 100 != 2) {
        if (t->error.len + bytes <= ERROR_BODY_MAX)
            (void)shard_buf_append(&t->error, p, bytes, NULL);
        return bytes;
    }
    if (rq->dst) {
        if (bytes > rq->cap - t->received) {
            t->overflow = 1;
            return 0;
        }
        memcpy(rq->dst + t->received, p, bytes);
    } else if (rq->out) {
        if (rq->max && t->received + bytes > rq->max) {
            t->overflow = 1;
            return 0;
        }
        if (shard_buf_append(rq->out, p, bytes, NULL)) {
            t->nomem = 1;
            return 0;
        }
    } else if (rq->hash) {
        XXH3_64bits_update(rq->hash, p, bytes);
    }
    t->received += bytes;
    return bytes;
}

static size_t on_upload(char *p, size_t size, size_t n, void *user)
{
    struct transfer *t = user;
    const struct sk_http_request *rq = t->rq;
    size_t want = size * n;
    uint64_t left = (rq->from_fd ? rq->fd_len : rq->body_len) - t->sent;
    if (want > left)
        want = (size_t)left;
    if (!want)
        return 0;
    if (rq->from_fd) {
        ssize_t got = pread(rq->fd, p, want, (off_t)(rq->fd_offset + t->sent));
        if (got <= 0) {
            t->io_error = 1;
            return CURL_READFUNC_ABORT;
        }
        want = (size_t)got;
    } else {
        memcpy(p, (const uint8_t *)rq->body + t->sent, want);
    }
    t->sent += want;
    return want;
}

/* Rewind the body for another attempt (or a redirect). */
static int on_seek(void *user, curl_off_t offset, int origin)
{
    struct transfer *t = user;
    if (origin != SEEK_SET || offset < 0)
        return CURL_SEEKFUNC_CANTSEEK;
    t->sent = (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* libcurl's progress callback: where a transfer under way sees *cancel. */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct transfer *t = user;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (cancelled(t->h, t->rq)) {
        t->cancelled = 1;
        return 1;
    }
    return 0;
}

/* "bytes START-END/TOTAL" of a 206.  0, or -1 when it is missing or
 * malformed. */
static int content_range(CURL *c, struct sk_http_request *rq)
{
    struct curl_header *hdr;
    if (curl_easy_header(c, "Content-Range", 0, CURLH_HEADER, -1, &hdr) != CURLHE_OK)
        return -1;
    unsigned long long a, b, total;
    if (sscanf(hdr->value, "bytes %llu-%llu/%llu", &a, &b, &total) != 3 || b < a || b >= total)
        return -1;
    rq->range_start = a;
    rq->range_end = b;
    rq->total = total;
    return 0;
}

/* Set up handle c for rq: method, body, the answer's destination. */
static void request_setup(CURL *c, struct sk_http_request *rq, struct transfer *t, char *errbuf)
{
    const char *method = rq->method ? rq->method : "GET";
    curl_easy_setopt(c, CURLOPT_URL, rq->url);
    curl_easy_setopt(c, CURLOPT_RANGE, rq->range);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (rq->from_fd || rq->body || !strcmp(method, "PUT") || !strcmp(method, "POST")) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
        curl_easy_setopt(c, CURLOPT_READDATA, t);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, t);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(rq->from_fd ? rq->fd_len : rq->body_len));
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    if (cancellable(t->h, rq)) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
    }
}

/* " (Code)" when the failed answer's body has one, else "". */
static void code_note(const struct sk_http *h, const struct transfer *t, char *out, size_t size)
{
    char code[SK_HTTP_CODE_SIZE] = "";
    if (h->error_code)
        h->error_code(t->error.data, t->error.len, code, sizeof code);
    if (code[0])
        snprintf(out, size, " (%s)", code);
    else
        out[0] = '\0';
}

/* The answer to a successful transfer that filled its buffer: a 206 that
 * may keep what fit, or an error. */
static int overflowed(struct sk_http_request *rq, struct transfer *t, const char *shown,
                      struct shard_err *err)
{
    if (rq->out) {
        curl_off_t n = -1;
        curl_easy_getinfo(t->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n);
        /* the words of a local file too large (source.h): the caller names it */
        if (n > 0)
            return shard_err_set(err, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                                 (unsigned long long)n, (unsigned long long)rq->max);
        return shard_err_set(err, SHARD_ELIMIT, "file exceeds the limit of %llu bytes",
                             (unsigned long long)rq->max);
    }
    if (rq->range && rq->status == 206 && rq->keep_prefix && !content_range(t->handle, rq))
        return SHARD_OK;
    if (rq->range && rq->status != 206)
        return shard_err_set(err, SHARD_ENET,
                             "'%s': the server ignored the range request "
                             "(HTTP %ld): range requests are needed",
                             shown, rq->status);
    return shard_err_set(err, SHARD_ENET, "'%s': the server sent more than the %zu bytes asked for",
                         shown, rq->cap);
}

/* What a 2xx answer to a ranged request must be: a 206 with its range. */
static int check_range(struct sk_http_request *rq, CURL *c, const char *shown,
                       struct shard_err *err)
{
    if (rq->status != 206)
        return shard_err_set(err, SHARD_ENET,
                             "'%s': the server ignored the range request "
                             "(HTTP %ld): range requests are needed",
                             shown, rq->status);
    if (content_range(c, rq))
        return shard_err_set(err, SHARD_ENET, "'%s': HTTP 206 without a valid Content-Range",
                             shown);
    return SHARD_OK;
}

/* curl_easy_perform on handle c, run on its multi handle in slices of
 * TRANSFER_POLL_MS when the request can be cancelled: between them the
 * cancellation is looked at (libcurl's progress callback alone may not be
 * called for a second while a server stalls).  A cancelled transfer sets
 * t->cancelled; its connection is closed. */
static CURLcode perform(struct sk_http_handle *c, struct transfer *t, char *errbuf)
{
    if (!cancellable(t->h, t->rq))
        return curl_easy_perform(c->easy);
    CURLMcode mc = curl_multi_add_handle(c->multi, c->easy);
    CURLcode rc = CURLE_OK;
    int running = 1;
    while (mc == CURLM_OK && running) {
        mc = curl_multi_perform(c->multi, &running);
        if (mc != CURLM_OK || !running)
            break;
        if (t->cancelled || cancelled(t->h, t->rq)) {
            t->cancelled = 1;
            rc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        mc = curl_multi_poll(c->multi, NULL, 0, TRANSFER_POLL_MS, NULL);
    }
    if (mc != CURLM_OK) {
        snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_multi_strerror(mc));
        rc = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_FAILED_INIT;
    } else if (!running) {
        int left;
        for (CURLMsg *m; (m = curl_multi_info_read(c->multi, &left));)
            if (m->msg == CURLMSG_DONE && m->easy_handle == c->easy)
                rc = m->data.result;
    }
    curl_multi_remove_handle(c->multi, c->easy);
    return rc;
}

/* ---- one request -------------------------------------------------------------------- */

int sk_http_perform(struct sk_http *h, struct sk_http_request *rq, struct shard_err *err)
{
    uint64_t start = sk_now_ns();
    const char *verb = rq->verb ? rq->verb : "read";
    const char *shown = rq->shown ? rq->shown : rq->url;
    struct curl_slist *headers = NULL;
    struct transfer t = {.h = h, .rq = rq};
    char errbuf[CURL_ERROR_SIZE], last[SHARD_ERRMSG_SIZE] = "";
    int rc = SHARD_OK, attempt = 0;
    rq->status = 0;
    rq->received = rq->length = 0;
    if (rq->etag && rq->etag_size)
        rq->etag[0] = '\0';
    struct sk_http_handle pooled = {NULL, NULL};
    if (handle_get(h, &pooled)) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot create an HTTP handle for '%s'", shown);
        goto out;
    }
    CURL *c = t.handle = pooled.easy;
    if (h->sign) {
        if ((rc = h->sign(h->sign_user, c, rq->header, &headers, err)))
            goto out;
    } else if (rq->header) {
        if (!(headers = curl_slist_append(NULL, rq->header))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    }
    request_setup(c, rq, &t, errbuf);
    double backoff_ms = SK_HTTP_BACKOFF_FIRST_MS;
    for (attempt = 0; attempt <= h->retries; attempt++) {
        if (attempt > 0) {
            uint64_t t0 = sk_now_ns();
            int stop = backoff(h, rq, &backoff_ms);
            event(h, SK_HTTP_BACKOFF, t0, sk_now_ns(), 0);
            if (stop)
                break;
        }
        if (cancelled(h, rq))
            break;
        t.sent = t.received = 0;
        t.overflow = t.nomem = t.io_error = t.cancelled = 0;
        t.error.len = 0;
        if (rq->out)
            rq->out->len = 0;
        if (rq->hash)
            XXH3_64bits_reset(rq->hash);
        if (h->rtt_ms > 0) {
            uint64_t t0 = sk_now_ns();
            sk_sleep_seconds(h->rtt_ms / 1e3);
            event(h, SK_HTTP_DELAY, t0, sk_now_ns(), 0);
        }
        errbuf[0] = '\0';
        event(h, SK_HTTP_ATTEMPT, 0, 0, 1);
        CURLcode cc = perform(&pooled, &t, errbuf);
        event(h, SK_HTTP_RECEIVED, 0, 0, t.received);
        rq->status = status_now(c);
        rq->received = t.received;
        if (t.cancelled)
            break;
        if (t.nomem) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory reading '%s'", shown);
            goto out;
        }
        if (t.io_error) {
            rc = shard_err_set(err, SHARD_EIO, "cannot %s '%s': the local file could not be read",
                               verb, shown);
            goto out;
        }
        if (t.overflow) { /* only a 2xx answer's body is kept */
            rc = overflowed(rq, &t, shown, err);
            goto out;
        }
        if (cc != CURLE_OK) {
            if (cc == CURLE_OPERATION_TIMEDOUT)
                snprintf(last, sizeof last, "timed out: nothing received for %g s",
                         h->timeout_seconds);
            else
                snprintf(last, sizeof last, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
            if (transient_curl(cc))
                continue;
            rc = shard_err_set(err, SHARD_ENET, "cannot %s '%s': %s", verb, shown, last);
            goto out;
        }
        long status = rq->status;
        char note[SK_HTTP_CODE_SIZE + 4];
        if (transient_status(status)) {
            code_note(h, &t, note, sizeof note);
            snprintf(last, sizeof last, "HTTP %ld%s%s", status, status_text(status), note);
            continue;
        }
        if ((status == 404 || status == 410) && rq->missing_ok)
            goto out;
        if (status == 416 && rq->range)
            goto out; /* the caller decides (an empty file) */
        if (status / 100 != 2) {
            code_note(h, &t, note, sizeof note);
            rc = shard_err_set(err, status_error(status), "cannot %s '%s': HTTP %ld%s%s", verb,
                               shown, status, status_text(status), note);
            goto out;
        }
        if (rq->range && (rc = check_range(rq, c, shown, err)))
            goto out;
        curl_off_t n = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n);
        rq->length = n > 0 ? (uint64_t)n : 0;
        if (rq->etag && rq->etag_size) {
            struct curl_header *hdr;
            if (curl_easy_header(c, "ETag", 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
                snprintf(rq->etag, rq->etag_size, "%s", hdr->value);
        }
        goto out;
    }
    if (cancelled(h, rq))
        rc = shard_err_set(err, SHARD_EINTR, "cannot %s '%s': interrupted", verb, shown);
    else
        rc = shard_err_set(err, SHARD_ENET, "cannot %s '%s': %s (gave up after %d attempt%s)", verb,
                           shown, last, attempt, attempt == 1 ? "" : "s");
out:
    if (pooled.easy) {
        curl_easy_setopt(pooled.easy, CURLOPT_HTTPHEADER, NULL);
        handle_put(h, &pooled);
    }
    curl_slist_free_all(headers);
    shard_buf_release(&t.error);
    event(h, SK_HTTP_DONE, start, sk_now_ns(), 0);
    return rc;
}
