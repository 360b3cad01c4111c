/* http.c - libcurl set-up and retry policy shared by the HTTP clients (see
 * net/http.h). */
#include "net/http.h"

#include <math.h>
#include <pthread.h>

#include "util/clock.h"
#include "shardkit/api.h"

#define LOW_SPEED_BYTES 1L           /* a transfer slower than this for the time-out is
                                      * abandoned (and retried) */
#define MAX_REDIRECTS 5L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
    curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int sk_http_init(struct shard_err *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_result != CURLE_OK)
        return shard_err_set(err, SHARD_ENET, "cannot initialise libcurl: %s",
                             curl_easy_strerror(curl_init_result));
    return SHARD_OK;
}

CURL *sk_http_handle_new(double timeout_seconds)
{
    CURL *c = curl_easy_init();
    if (c)
        sk_http_handle_setup(c, timeout_seconds);
    return c;
}

void sk_http_handle_setup(CURL *c, double timeout_seconds)
{
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  /* threads: no SIGALRM for DNS time-outs */
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

int sk_http_transient_curl(CURLcode rc)
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
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default:
        return 0;
    }
}

int sk_http_transient_status(long status)
{
    /* but 501 Not Implemented and 505 HTTP Version Not Supported: a server
     * that does not implement a request never will */
    return (status >= 500 && status != 501 && status != 505) || status == 408 || status == 429;
}

const char *sk_http_status_text(long status)
{
    switch (status) {
    case 400: return " Bad Request";
    case 401: return " Unauthorized";
    case 403: return " Forbidden";
    case 404: return " Not Found";
    case 405: return " Method Not Allowed";
    case 409: return " Conflict";
    case 410: return " Gone";
    case 416: return " Range Not Satisfiable";
    case 501: return " Not Implemented";
    default: return "";
    }
}

void sk_http_backoff(double *backoff_ms)
{
    sk_sleep_seconds(*backoff_ms / 1e3);
    *backoff_ms = *backoff_ms * 2 > SK_HTTP_BACKOFF_MAX_MS ? SK_HTTP_BACKOFF_MAX_MS
                                                          : *backoff_ms * 2;
}
