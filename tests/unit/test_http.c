/* test_http.c - the one HTTP engine (net/http.h) and its two users, the
 * reader's range fetcher and the S3 operations, against a scripted server
 * on loopback: statuses map the same for both (404/410 not found, 405/501/505
 * unsupported, 5xx/408/429 retried then given up), a ranged request must be
 * answered with its range, a body over its limit is refused, cancellation
 * ends a request during a back-off or in the middle of a transfer, within
 * a poll of a server that stalls (and a reader's file closed under a
 * retrying fetch returns at once, a reader whose thread is cancelled
 * stops waiting for a stalled window, a kept file's windows stay through
 * a drop of the window cache), the pool
 * keeps at most SK_HTTP_POOL_MAX handles, reset before each reuse, an
 * iterator over a dataset whose server stalls is interrupted and freed at
 * once, the
 * public shard_dataset_options reach the requests (or are refused, naming
 * the option), and whole remote files (shard_remote_*) are read under them,
 * counted, delayed by the simulated round trip and reported to an observer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "net/http.h"
#include "net/s3.h"
#include "read/fetch.h"
#include "read/fetch_http.h"
#include "shardkit/dataset.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "mkdataset.h"

/* ---- a scripted server -------------------------------------------------------------- */

struct answer {
    int status;
    char headers[256]; /* extra header lines, each ending in \r\n */
    const char *body;
    size_t body_len;
    size_t declared; /* the Content-Length sent, when not 0 (more than body_len:
                      * the body is cut short) */
    int hang;        /* read the request, answer nothing until the server stops */
    int stall;       /* answer, then send nothing more until the server stops (the
                      * connection open: a body cut short by declared stalls) */
    double delay;    /* seconds before answering */
};

struct server;
/* The answer to request number n (0, 1, ...) whose head and body are
 * `request`. */
typedef void (*answer_fn)(struct server *s, unsigned n, const char *request, struct answer *a);

#define MAX_CONNECTIONS 256

struct server {
    int fd;
    int port;
    answer_fn answer;
    void *user;
    pthread_t thread;
    pthread_mutex_t lock;
    unsigned requests;
    char methods[64][8]; /* the first 64 requests' methods */
    pthread_t handlers[MAX_CONNECTIONS];
    int handler_count;
    atomic_int stop; /* set by the test, read by the server thread */
};

struct connection {
    struct server *s;
    int fd;
};

/* Wait up to `seconds` for the server to stop: 1 when it did. */
static int stopped_within(struct server *s, double seconds)
{
    double end = sk_now_seconds() + seconds;
    while (!s->stop && sk_now_seconds() < end)
        usleep(10000);
    return s->stop;
}

static void *handle(void *arg)
{
    struct connection *c = arg;
    struct server *s = c->s;
    char req[8192];
    size_t len = 0;
    while (len < sizeof req - 1) {
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 50) == 0) {
            if (s->stop)
                goto out;
            continue;
        }
        ssize_t got = read(c->fd, req + len, sizeof req - 1 - len);
        if (got <= 0)
            goto out;
        len += (size_t)got;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    /* the body too (as much as fits): a request is answered once it is all in */
    const char *end = strstr(req, "\r\n\r\n");
    const char *length = strcasestr(req, "\r\nContent-Length:");
    if (end && length && length < end) {
        size_t want = (size_t)(end + 4 - req) + strtoul(length + 17, NULL, 10);
        while (len < want && len < sizeof req - 1) {
            ssize_t got = read(c->fd, req + len, sizeof req - 1 - len);
            if (got <= 0)
                goto out;
            len += (size_t)got;
            req[len] = '\0';
        }
    }
    pthread_mutex_lock(&s->lock);
    unsigned n = s->requests++;
    if (n < 64)
        sscanf(req, "%7s", s->methods[n]);
    pthread_mutex_unlock(&s->lock);
    struct answer a = {.status = 200};
    s->answer(s, n, req, &a);
    if (a.hang) {
        stopped_within(s, 600);
        goto out;
    }
    if (a.delay > 0)
        sk_sleep_seconds(a.delay);
    char head[1024];
    int head_len = snprintf(head, sizeof head,
                            "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
                            "Connection: close\r\n%s\r\n",
                            a.status, a.declared ? a.declared : a.body_len, a.headers);
    if (write(c->fd, head, (size_t)head_len) != head_len)
        goto out;
    if (strncmp(req, "HEAD ", 5) && a.body_len && write(c->fd, a.body, a.body_len) < 0)
        goto out;
    if (a.stall)
        stopped_within(s, 600);
out:
    close(c->fd);
    free(c);
    return NULL;
}

static void *serve(void *arg)
{
    struct server *s = arg;
    while (!s->stop) {
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int fd = accept(s->fd, NULL, NULL);
        if (fd < 0)
            continue;
        struct connection *c = malloc(sizeof *c);
        assert_non_null(c);
        *c = (struct connection){s, fd};
        pthread_mutex_lock(&s->lock);
        assert_true(s->handler_count < MAX_CONNECTIONS);
        pthread_create(&s->handlers[s->handler_count++], NULL, handle, c);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static void server_start(struct server *s, answer_fn answer, void *user)
{
    memset(s, 0, sizeof *s);
    s->answer = answer;
    s->user = user;
    pthread_mutex_init(&s->lock, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 128), 0);
    socklen_t alen = sizeof a;
    getsockname(s->fd, (struct sockaddr *)&a, &alen);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->thread, NULL, serve, s);
}

static void server_stop(struct server *s)
{
    s->stop = 1;
    pthread_join(s->thread, NULL);
    for (int i = 0; i < s->handler_count; i++)
        pthread_join(s->handlers[i], NULL);
    close(s->fd);
    pthread_mutex_destroy(&s->lock);
}

static unsigned requests(struct server *s)
{
    pthread_mutex_lock(&s->lock);
    unsigned n = s->requests;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void url_of(const struct server *s, const char *path, char *out, size_t size)
{
    snprintf(out, size, "http://127.0.0.1:%d%s", s->port, path);
}

/* ---- answers ------------------------------------------------------------------------ */

static const char s3_gone[] = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>";

/* Always the status in s->user (an int). */
static void answer_status(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)n, (void)request;
    a->status = *(const int *)s->user;
    if (a->status == 410) { /* S3's words for it */
        a->body = s3_gone;
        a->body_len = sizeof s3_gone - 1;
    }
}

/* 503, 429, then 200 "ok". */
static void answer_late(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)s, (void)request;
    a->status = n == 0 ? 503 : n == 1 ? 429 : 200;
    a->body = n >= 2 ? "ok" : "busy";
    a->body_len = n >= 2 ? 2 : 4;
}

static void answer_hang(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)s, (void)n, (void)request;
    a->hang = 1;
}

static void answer_body(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)n, (void)request;
    a->body = s->user ? s->user : "0123456789abcdefghij";
    a->body_len = strlen(a->body);
    a->delay = s->user ? 0.3 : 0;
}

/* The body of answer_body, cut short the first time. */
static void answer_cut_once(struct server *s, unsigned n, const char *request, struct answer *a)
{
    answer_body(s, n, request, a);
    if (n == 0) {
        a->declared = a->body_len;
        a->body_len /= 2;
    }
}

/* The body of answer_body, half of it, then nothing: a server that stalls
 * mid-response. */
static void answer_stall(struct server *s, unsigned n, const char *request, struct answer *a)
{
    answer_body(s, n, request, a);
    a->declared = a->body_len;
    a->body_len /= 2;
    a->stall = 1;
}

/* A file of FILE_SIZE bytes whose windows are never there: its suffix
 * (the open) comes, anything else is 503. */
#define FILE_SIZE 32768u
#define WINDOW 4096u
static char tail[WINDOW];

static void answer_flaky_file(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)s, (void)n;
    if (strstr(request, "Range: bytes=-")) {
        a->status = 206;
        snprintf(a->headers, sizeof a->headers, "Content-Range: bytes %u-%u/%u\r\n",
                 FILE_SIZE - WINDOW, FILE_SIZE - 1, FILE_SIZE);
        a->body = tail;
        a->body_len = WINDOW;
    } else {
        a->status = 503;
    }
}

/* Any range of a file of FILE_SIZE bytes; a suffix request gets its last
 * window. */
static char file_bytes[FILE_SIZE];

static void answer_file(struct server *s, unsigned n, const char *request, struct answer *a)
{
    (void)s, (void)n;
    unsigned from = FILE_SIZE - WINDOW, to = FILE_SIZE - 1;
    const char *range = strstr(request, "Range: bytes=");
    if (!range || (range[13] != '-' && (sscanf(range + 13, "%u-%u", &from, &to) != 2 || from > to ||
                                        to >= FILE_SIZE))) {
        a->status = 400;
        return;
    }
    a->status = 206;
    snprintf(a->headers, sizeof a->headers, "Content-Range: bytes %u-%u/%u\r\n", from, to,
             FILE_SIZE);
    a->body = file_bytes + from;
    a->body_len = to - from + 1;
}

struct later {
    volatile sig_atomic_t *flag;
    double after;
    double at; /* when it was set (sk_now_seconds) */
};

static void *set_later(void *arg)
{
    struct later *l = arg;
    sk_sleep_seconds(l->after);
    l->at = sk_now_seconds();
    sk_flag_put(l->flag, 1);
    return NULL;
}

/* How long a cancellation may go unseen (util/cancel.h polls every
 * SK_CANCEL_POLL_MS; the bound is 100 ms), with room for a loaded
 * machine's scheduling: a poll of once a second fails it. */
#define CANCEL_SEEN_WITHIN 0.3

/* ---- the engine -------------------------------------------------------------------- */

/* A server and a client of it with `retries`, and the URL of `path` there. */
struct rig {
    struct server s;
    struct sk_http h;
    char url[128];
};

static void rig_start(struct rig *r, answer_fn answer, void *user, const char *path, int retries)
{
    server_start(&r->s, answer, user);
    assert_int_equal(sk_http_init(&r->h, NULL), 0);
    r->h.retries = retries;
    url_of(&r->s, path, r->url, sizeof r->url);
}

static void rig_stop(struct rig *r)
{
    sk_http_release(&r->h);
    server_stop(&r->s);
}

static void test_transient_statuses_are_retried_until_an_answer(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, answer_late, NULL, "/late", 2);
    struct shard_buf out = {0};
    struct sk_http_request rq = {.url = r.url, .out = &out};
    struct shard_err err;
    if (sk_http_perform(&r.h, &rq, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(rq.status, 200);
    assert_int_equal(out.len, 2);
    assert_memory_equal(out.data, "ok", 2);
    assert_int_equal(requests(&r.s), 3);
    shard_buf_release(&out);
    rig_stop(&r);
}

static void test_transient_statuses_give_up_after_the_retries(void **state)
{
    (void)state;
    int status = 503;
    struct rig r;
    rig_start(&r, answer_status, &status, "/busy", 2);
    struct sk_http_request rq = {.url = r.url, .verb = "fetch"};
    struct shard_err err;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_ENET);
    char want[256];
    snprintf(want, sizeof want,
             "cannot fetch '%s': HTTP 503 Service Unavailable (gave up "
             "after 3 attempts)",
             r.url);
    assert_string_equal(err.msg, want);
    assert_int_equal(requests(&r.s), 3);
    rig_stop(&r);
}

/* Each status maps to `code` at once (no retry), the message naming it. */
static void status_maps_to(int status, int code, const char *text)
{
    struct rig r;
    rig_start(&r, answer_status, &status, "/x", 3);
    char want[256];
    struct sk_http_request rq = {.url = r.url};
    struct shard_err err;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), code);
    snprintf(want, sizeof want, "cannot read '%s': HTTP %d%s", r.url, status, text);
    assert_string_equal(err.msg, want);
    assert_int_equal(requests(&r.s), 1);
    rig_stop(&r);
}

static void test_statuses_map_to_one_code_each(void **state)
{
    (void)state;
    status_maps_to(404, SHARD_ENOTFOUND, " Not Found");
    status_maps_to(410, SHARD_ENOTFOUND, " Gone");
    status_maps_to(405, SHARD_EUNSUPPORTED, " Method Not Allowed");
    status_maps_to(501, SHARD_EUNSUPPORTED, " Not Implemented");
    status_maps_to(505, SHARD_EUNSUPPORTED, " HTTP Version Not Supported");
    status_maps_to(403, SHARD_ENET, " Forbidden");
    status_maps_to(416, SHARD_ENET, " Range Not Satisfiable"); /* not ranged: no answer */
}

static void test_a_range_must_be_answered_with_it(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, answer_body, NULL, "/whole", 0);
    uint8_t buf[64];
    struct sk_http_request rq = {.url = r.url, .range = "0-3", .dst = buf, .cap = 4};
    struct shard_err err;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_ENET);
    assert_non_null(strstr(err.msg, "the server ignored the range request (HTTP 200)"));
    rq = (struct sk_http_request){.url = r.url, .range = "0-3", .dst = buf, .cap = sizeof buf};
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_ENET);
    assert_non_null(strstr(err.msg, "the server ignored the range request (HTTP 200)"));
    rig_stop(&r);
}

static void test_a_body_over_its_limit_is_refused(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, answer_body, NULL, "/big", 0);
    struct shard_buf out = {0};
    struct sk_http_request rq = {.url = r.url, .out = &out, .max = 10};
    struct shard_err err;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_ELIMIT);
    assert_non_null(strstr(err.msg, "file of 20 bytes exceeds the limit of 10"));
    rq.max = 20;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), 0);
    assert_int_equal(out.len, 20);
    shard_buf_release(&out);
    rig_stop(&r);
}

static void test_a_pooled_handle_is_reset_before_reuse(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, answer_body, NULL, "/obj", 0);
    struct sk_http_request head = {.url = r.url, .method = "HEAD"};
    assert_int_equal(sk_http_perform(&r.h, &head, NULL), 0);
    assert_int_equal(head.length, 20);
    assert_int_equal(sk_http_idle_count(&r.h), 1);
    /* the same handle again: a GET, not another HEAD */
    struct shard_buf out = {0};
    struct sk_http_request get = {.url = r.url, .out = &out};
    assert_int_equal(sk_http_perform(&r.h, &get, NULL), 0);
    assert_int_equal(out.len, 20);
    assert_string_equal(r.s.methods[0], "HEAD");
    assert_string_equal(r.s.methods[1], "GET");
    assert_int_equal(sk_http_idle_count(&r.h), 1);
    shard_buf_release(&out);
    rig_stop(&r);
}

struct concurrent {
    struct sk_http *h;
    const char *url;
    int rc;
};

static void *one_request(void *arg)
{
    struct concurrent *c = arg;
    struct sk_http_request rq = {.url = c->url};
    c->rc = sk_http_perform(c->h, &rq, NULL);
    return NULL;
}

static void test_the_pool_keeps_at_most_its_cap(void **state)
{
    (void)state;
    enum { N = SK_HTTP_POOL_MAX + 6 };
    struct rig r;
    rig_start(&r, answer_body, "slow", "/slow",
              0); /* answers after 0.3 s: all are under way at once */
    pthread_t t[N];
    struct concurrent c[N];
    for (int i = 0; i < N; i++) {
        c[i] = (struct concurrent){&r.h, r.url, -1};
        pthread_create(&t[i], NULL, one_request, &c[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(c[i].rc, 0);
    }
    assert_int_equal(sk_http_idle_count(&r.h), SK_HTTP_POOL_MAX);
    rig_stop(&r);
}

static void test_cancel_ends_a_back_off(void **state)
{
    (void)state;
    int status = 503;
    struct rig r;
    rig_start(&r, answer_status, &status, "/busy", 20); /* ~30 s of back-off in all */
    volatile sig_atomic_t cancel = 0;
    r.h.cancel = &cancel;
    pthread_t t;
    /* inside the back-off from ~3.15 s to ~5.15 s: a cancel seen only
     * before an attempt would end it after 5 s */
    struct later l = {&cancel, 3.5, 0};
    pthread_create(&t, NULL, set_later, &l);
    double start = sk_now_seconds();
    struct sk_http_request rq = {.url = r.url};
    struct shard_err err;
    assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_EINTR);
    double took = sk_now_seconds() - start;
    pthread_join(t, NULL);
    if (took > 4.5)
        fail_msg("the cancel took %.2f s to end the request", took);
    assert_non_null(strstr(err.msg, "interrupted"));
    /* what a cancelled run still does goes through */
    status = 200;
    struct sk_http_request abort = {.url = r.url, .no_cancel = 1};
    assert_int_equal(sk_http_perform(&r.h, &abort, NULL), 0);
    rig_stop(&r);
}

/* A transfer whose server stalls mid-body ends soon after its cancel is set,
 * whether the request's, or the requesting thread's cancellation
 * (util/cancel.h): libcurl's progress callback alone is called about once
 * a second while nothing arrives. */
static void test_cancel_ends_a_stalled_transfer_within_a_poll(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, answer_stall, NULL, "/stalled", 0); /* a time-out of 10 s */
    for (int thread = 0; thread < 2; thread++) {
        volatile sig_atomic_t cancel = 0;
        struct sk_cancel mine = {&cancel, NULL, NULL};
        struct sk_http_request rq = {.url = r.url, .cancel = thread ? NULL : &cancel};
        if (thread)
            sk_cancel_set(&mine);
        pthread_t t;
        struct later l = {&cancel, 0.5, 0};
        pthread_create(&t, NULL, set_later, &l);
        struct shard_err err;
        assert_int_equal(sk_http_perform(&r.h, &rq, &err), SHARD_EINTR);
        double late = sk_now_seconds() - l.at;
        pthread_join(t, NULL);
        sk_cancel_set(NULL);
        if (late > CANCEL_SEEN_WITHIN)
            fail_msg("the %s cancel ended the transfer %.3f s after it was set",
                     thread ? "thread's" : "request's", late);
        assert_non_null(strstr(err.msg, "interrupted"));
    }
    rig_stop(&r);
}

/* ---- S3: the same rules ------------------------------------------------------------ */

static char home[256];

static int s3_setup(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "%s/shardkit-http-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(home))
        return -1;
    setenv("HOME", home, 1);
    static const char *const unset[] = {"AWS_ACCESS_KEY_ID",   "AWS_SECRET_ACCESS_KEY",
                                        "AWS_PROFILE",         "AWS_DEFAULT_PROFILE",
                                        "AWS_CONFIG_FILE",     "AWS_SHARED_CREDENTIALS_FILE",
                                        "AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN"};
    for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
        unsetenv(unset[i]);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("SHARDKIT_S3_NO_SIGN_REQUEST", "true", 1);
    return 0;
}

static int s3_teardown(void **state)
{
    (void)state;
    return rmdir(home);
}

static struct sk_s3 *s3_at(const struct server *s)
{
    char endpoint[128];
    url_of(s, "", endpoint, sizeof endpoint);
    setenv("AWS_ENDPOINT_URL", endpoint, 1);
    struct sk_s3 *s3 = NULL;
    struct shard_err err;
    if (sk_s3_open(&s3, "s3://bucket/data", &err))
        fail_msg("%s", err.msg);
    return s3;
}

static void test_s3_gone_is_not_found_with_its_code(void **state)
{
    (void)state;
    int status = 410;
    struct server s;
    server_start(&s, answer_status, &status);
    struct sk_s3 *s3 = s3_at(&s);
    struct shard_buf out = {0};
    struct shard_err err;
    assert_int_equal(sk_s3_get(s3, "manifest.json", 0, &out, &err), SHARD_ENOTFOUND);
    assert_string_equal(err.msg, "cannot read 's3://bucket/data/manifest.json': HTTP 410 Gone "
                                 "(NoSuchKey)");
    uint64_t size;
    assert_int_equal(sk_s3_head(s3, "manifest.json", &size, &err), SHARD_ENOTFOUND);
    assert_int_equal(sk_s3_delete(s3, "manifest.json", &err), 0); /* gone is deleted */
    status = 505;
    assert_int_equal(sk_s3_get(s3, "manifest.json", 0, &out, &err), SHARD_EUNSUPPORTED);
    assert_int_equal(requests(&s), 4); /* none retried */
    shard_buf_release(&out);
    sk_s3_free(s3);
    server_stop(&s);
}

static void test_s3_cancel_ends_a_transfer_under_way(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_hang, NULL);
    struct sk_s3 *s3 = s3_at(&s);
    volatile sig_atomic_t cancel = 0;
    s3->http.cancel = &cancel; /* the time-out is 10 s: only the cancel ends it early */
    pthread_t t;
    struct later l = {&cancel, 0.3, 0};
    pthread_create(&t, NULL, set_later, &l);
    double start = sk_now_seconds();
    struct shard_buf out = {0};
    struct shard_err err;
    assert_int_equal(sk_s3_get(s3, "shard-000000.shard", 0, &out, &err), SHARD_EINTR);
    double took = sk_now_seconds() - start;
    pthread_join(t, NULL);
    if (took > 3)
        fail_msg("the cancel took %.2f s to end the transfer", took);
    assert_int_equal(requests(&s), 1);
    shard_buf_release(&out);
    sk_s3_free(s3);
    server_stop(&s);
}

static void test_s3_hash_of_a_retried_body_is_of_the_whole_body_once(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_cut_once, NULL);
    struct sk_s3 *s3 = s3_at(&s);
    uint64_t bytes, xxh3;
    struct shard_err err;
    if (sk_s3_hash(s3, "shard-000000.shard", &bytes, &xxh3, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(requests(&s), 2);
    assert_int_equal(bytes, 20);
    assert_int_equal(xxh3, XXH3_64bits("0123456789abcdefghij", 20));
    sk_s3_free(s3);
    server_stop(&s);
}

/* S3's multipart upload (CreateMultipartUpload, UploadPart, Complete and
 * Abort), with the fault the test asks for. */
enum upload_fault { UPLOAD_OK, UPLOAD_NO_ID, UPLOAD_NO_ETAG, UPLOAD_ERROR_DOCUMENT };

struct upload_script {
    enum upload_fault fault;
    char parts[64];        /* the bodies of the parts, in the order they came */
    char completion[1024]; /* the body of CompleteMultipartUpload */
    int aborts;
};

static void answer_upload(struct server *s, unsigned n, const char *request, struct answer *a)
{
    static const char created[] = "<InitiateMultipartUploadResult><UploadId>up/1</UploadId>"
                                  "</InitiateMultipartUploadResult>";
    static const char no_id[] = "<InitiateMultipartUploadResult></InitiateMultipartUploadResult>";
    static const char failed[] = "<Error><Code>InternalError</Code></Error>";
    static const char done[] = "<CompleteMultipartUploadResult></CompleteMultipartUploadResult>";
    struct upload_script *u = s->user;
    const char *body = strstr(request, "\r\n\r\n") + 4;
    (void)n;
    if (!strncmp(request, "POST /bucket/data/big?uploads= ", 31)) {
        a->body = u->fault == UPLOAD_NO_ID ? no_id : created;
    } else if (!strncmp(request, "PUT /bucket/data/big?partNumber=", 32)) {
        assert_non_null(strstr(request, "&uploadId=up%2F1 "));
        strncat(u->parts, body, sizeof u->parts - strlen(u->parts) - 1);
        if (u->fault != UPLOAD_NO_ETAG)
            snprintf(a->headers, sizeof a->headers, "ETag: \"e%c\"\r\n", request[32]);
    } else if (!strncmp(request, "POST /bucket/data/big?uploadId=up%2F1 ", 38)) {
        snprintf(u->completion, sizeof u->completion, "%s", body);
        a->body = u->fault == UPLOAD_ERROR_DOCUMENT ? failed : done;
    } else if (!strncmp(request, "DELETE /bucket/data/big?uploadId=up%2F1 ", 40)) {
        u->aborts++;
        a->status = 204;
    } else {
        a->status = 400;
    }
    a->body_len = a->body ? strlen(a->body) : 0;
}

struct upload_hooks_seen {
    char started[16];
    char ended[16];
};

static int upload_started(void *user, const char *name, const char *upload_id,
                          struct shard_err *err)
{
    struct upload_hooks_seen *seen = user;
    (void)err;
    assert_string_equal(name, "big");
    snprintf(seen->started, sizeof seen->started, "%s", upload_id);
    return 0;
}

static void upload_ended(void *user, const char *name, const char *upload_id)
{
    struct upload_hooks_seen *seen = user;
    assert_string_equal(name, "big");
    snprintf(seen->ended, sizeof seen->ended, "%s", upload_id);
}

/* Upload the 20 bytes of fd as "big" in parts of 8 with u's fault: the
 * status, the message in err, what the hooks saw. */
static int upload_with(struct sk_s3 *s3, int fd, struct upload_script *u, enum upload_fault fault,
                       struct upload_hooks_seen *seen, struct shard_err *err)
{
    memset(u, 0, sizeof *u);
    memset(seen, 0, sizeof *seen);
    u->fault = fault;
    struct sk_s3_upload_hooks hooks = {upload_started, upload_ended, seen};
    return sk_s3_put_file(s3, "big", fd, 20, &hooks, err);
}

/* A multipart upload sends its parts, and names each wrong answer (aborting
 * what it started). */
static void test_s3_multipart_upload_sends_its_parts_and_names_each_fault(void **state)
{
    (void)state;
    struct upload_script u;
    struct server s;
    server_start(&s, answer_upload, &u);
    struct sk_s3 *s3 = s3_at(&s);
    s3->part_bytes = 8; /* parts of 8, 8 and 4 bytes */
    char path[300];
    snprintf(path, sizeof path, "%s/big", home);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    assert_int_equal(fputs("0123456789abcdefghij", f), 1);
    fflush(f);
    int fd = fileno(f);
    struct upload_hooks_seen seen;
    struct shard_err err;

    /* the parts in order, then their ETags in order in the completion */
    if (upload_with(s3, fd, &u, UPLOAD_OK, &seen, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(u.parts, "0123456789abcdefghij");
    assert_string_equal(u.completion, "<CompleteMultipartUpload>"
                                      "<Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag></Part>"
                                      "<Part><PartNumber>2</PartNumber><ETag>\"e2\"</ETag></Part>"
                                      "<Part><PartNumber>3</PartNumber><ETag>\"e3\"</ETag></Part>"
                                      "</CompleteMultipartUpload>");
    assert_int_equal(u.aborts, 0);
    assert_string_equal(seen.started, "up/1");
    assert_string_equal(seen.ended, "up/1");
    assert_int_equal(requests(&s), 5);

    /* a part without an ETag: named, the upload aborted */
    assert_int_equal(upload_with(s3, fd, &u, UPLOAD_NO_ETAG, &seen, &err), SHARD_ENET);
    assert_string_equal(err.msg, "cannot upload 's3://bucket/data/big': part 1 came back without "
                                 "an ETag");
    assert_string_equal(u.parts, "01234567");
    assert_string_equal(u.completion, "");
    assert_int_equal(u.aborts, 1);
    assert_string_equal(seen.ended, "up/1");

    /* S3's 200 with an <Error> document for the completion */
    assert_int_equal(upload_with(s3, fd, &u, UPLOAD_ERROR_DOCUMENT, &seen, &err), SHARD_ENET);
    assert_string_equal(err.msg, "cannot complete the upload of 's3://bucket/data/big': "
                                 "InternalError");
    assert_int_equal(u.aborts, 1);
    assert_string_equal(seen.ended, "up/1");

    /* no upload id: nothing started, nothing to abort */
    assert_int_equal(upload_with(s3, fd, &u, UPLOAD_NO_ID, &seen, &err), SHARD_ENET);
    assert_string_equal(err.msg, "cannot upload 's3://bucket/data/big': no upload id in the "
                                 "answer to CreateMultipartUpload");
    assert_string_equal(u.parts, "");
    assert_int_equal(u.aborts, 0);
    assert_string_equal(seen.started, "");
    assert_string_equal(seen.ended, "");

    fclose(f);
    unlink(path);
    sk_s3_free(s3);
    server_stop(&s);
}

/* ---- the reader: the same rules ---------------------------------------------------- */

static struct fetch *reader_at(const struct server *s, int retries)
{
    char base[128];
    url_of(s, "/d", base, sizeof base);
    struct fetch_http_options o;
    sk_fetch_http_options_init(&o);
    o.reading.window_bytes = WINDOW;
    o.reading.window_cache_bytes = 4 * WINDOW;
    o.reading.connections = 1;
    o.reading.retries = retries;
    struct fetch *fs = NULL;
    struct shard_err err;
    if (sk_fetch_http_new(&fs, base, &o, &err))
        fail_msg("%s", err.msg);
    return fs;
}

static void test_reader_maps_unsupported_statuses(void **state)
{
    (void)state;
    static const int statuses[] = {405, 501, 505};
    for (size_t i = 0; i < 3; i++) {
        int status = statuses[i];
        struct server s;
        server_start(&s, answer_status, &status);
        struct fetch *fs = reader_at(&s, 3);
        struct fetch_file *f = NULL;
        struct shard_err err;
        assert_int_equal(fetch_open(fs, "shard-000000.shard", &f, &err), SHARD_EUNSUPPORTED);
        assert_null(f);
        char want[128];
        snprintf(want, sizeof want, "/d/shard-000000.shard': HTTP %d", status);
        assert_non_null(strstr(err.msg, want));
        assert_int_equal(requests(&s), 1);
        fetch_free(fs);
        server_stop(&s);
    }
}

static void test_reader_closing_a_file_cancels_its_retrying_fetch(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_flaky_file, NULL);
    struct fetch *fs = reader_at(&s, 20); /* ~30 s of back-off before it would give up */
    struct fetch_file *f = NULL;
    struct shard_err err;
    if (fetch_open(fs, "shard-000000.shard", &f, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(f->size, FILE_SIZE);
    fetch_advise(f, 0, 100); /* window 0, read ahead: 503 after 503 */
    while (requests(&s) < 3)
        usleep(10000);
    double start = sk_now_seconds();
    fetch_close(f);
    fetch_free(fs);
    double took = sk_now_seconds() - start;
    if (took > 3)
        fail_msg("closing took %.2f s", took);
    server_stop(&s);
}

/* The serving half of answer_flaky_file, but a window's request stalls
 * mid-body. */
static void answer_stalled_file(struct server *s, unsigned n, const char *request, struct answer *a)
{
    answer_flaky_file(s, n, request, a);
    if (a->status == 503) {
        a->status = 206;
        snprintf(a->headers, sizeof a->headers, "Content-Range: bytes 0-%u/%u\r\n", WINDOW - 1,
                 FILE_SIZE);
        a->body = tail;
        a->declared = WINDOW;
        a->body_len = WINDOW / 2;
        a->stall = 1;
    }
}

struct stalled_read {
    struct fetch_file *f;
    volatile sig_atomic_t cancel;
    int rc;
    char msg[SHARD_ERRMSG_SIZE];
};

static void *read_window(void *arg)
{
    struct stalled_read *r = arg;
    struct sk_cancel mine = {&r->cancel, NULL, NULL};
    sk_cancel_set(&mine);
    char buf[100];
    struct shard_err err;
    r->rc = fetch_read(r->f, 0, buf, sizeof buf, &err);
    snprintf(r->msg, sizeof r->msg, "%s", r->rc ? err.msg : "");
    return NULL;
}

/* A reader waiting for a window that a connection thread fetches from a
 * server that stalls stops waiting soon after its thread's cancellation
 * is set (the fetch goes on, and ends when the file closes). */
static void test_reader_a_cancelled_thread_stops_waiting_for_a_stalled_window(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_stalled_file, NULL);
    struct fetch *fs = reader_at(&s, 0);
    struct stalled_read r = {0};
    struct shard_err err;
    if (fetch_open(fs, "shard-000000.shard", &r.f, &err))
        fail_msg("%s", err.msg);
    pthread_t t;
    pthread_create(&t, NULL, read_window, &r);
    struct later l = {&r.cancel, 0.5, 0};
    set_later(&l);
    pthread_join(t, NULL);
    double late = sk_now_seconds() - l.at;
    assert_int_equal(r.rc, SHARD_EINTR);
    if (late > CANCEL_SEEN_WITHIN)
        fail_msg("the reader stopped waiting %.3f s after its cancel", late);
    double start = sk_now_seconds();
    fetch_close(r.f);
    fetch_free(fs);
    if (sk_now_seconds() - start > CANCEL_SEEN_WITHIN)
        fail_msg("closing the file under its stalled fetch took %.3f s", sk_now_seconds() - start);
    server_stop(&s);
}

/* ---- the iterator over a server that stalls ---------------------------------------- */

/* Serves a dataset made by mkdataset under /d/: a file asked whole, or by
 * its suffix (a shard's opening), whole; any other range of a shard gets
 * its headers and half its bytes, then nothing (the connection open). */
struct stalling_dataset {
    struct mkds d;
    pthread_mutex_t lock;
    uint8_t *bodies[64]; /* what the answers point to, freed at the end */
    unsigned body_count;
};

static void answer_stalling_dataset(struct server *s, unsigned n, const char *request,
                                    struct answer *a)
{
    (void)n;
    struct stalling_dataset *sd = s->user;
    char name[128];
    if (sscanf(request, "%*s /d/%127s", name) != 1 || strchr(name, '/')) {
        a->status = 404;
        return;
    }
    char path[256];
    mkds_path(&sd->d, name, path, sizeof path);
    if (access(path, R_OK) != 0) {
        a->status = 404;
        return;
    }
    size_t len;
    uint8_t *body = mkds_slurp(&sd->d, name, &len);
    pthread_mutex_lock(&sd->lock);
    assert_true(sd->body_count < 64);
    sd->bodies[sd->body_count++] = body;
    pthread_mutex_unlock(&sd->lock);
    const char *range = strstr(request, "Range: bytes=");
    size_t from = 0, to = len - 1;
    a->body = (const char *)body;
    a->body_len = len;
    if (!range)
        return;
    if (range[13] == '-')
        from = len - (size_t)strtoull(range + 14, NULL, 10) < len
                   ? len - (size_t)strtoull(range + 14, NULL, 10)
                   : 0;
    else if (sscanf(range + 13, "%zu-%zu", &from, &to) != 2 || from > to || to >= len)
        fail_msg("a range the reader should not ask for: %.40s", range);
    a->status = 206;
    snprintf(a->headers, sizeof a->headers, "Content-Range: bytes %zu-%zu/%zu\r\n", from, to, len);
    a->body = (const char *)body + from;
    a->body_len = to - from + 1;
    if (range[13] != '-') { /* a window: half of it, then a stall */
        a->declared = a->body_len;
        a->body_len /= 2;
        a->stall = 1;
    }
}

static int after_flag(void *user)
{
    return sk_flag_get(user);
}

/* An iterator whose next() waits for a window from a server that stalls
 * returns SHARD_EINTR soon after its interrupt says stop, the position
 * unchanged, with reader threads or with none; and freeing it, with reads
 * still waiting for the server, takes no longer than a poll. */
static void test_an_iterator_over_a_stalled_server_is_interrupted_and_freed_at_once(void **state)
{
    (void)state;
    static const uint64_t counts[] = {600, 600};
    struct stalling_dataset sd = {.body_count = 0};
    mkds_build(&sd.d, counts, 2);
    pthread_mutex_init(&sd.lock, NULL);
    struct server s;
    server_start(&s, answer_stalling_dataset, &sd);
    char url[128];
    url_of(&s, "/d", url, sizeof url);
    for (int threads = 0; threads <= 2; threads += 2) {
        struct shard_dataset_options o;
        shard_dataset_options_init(&o);
        o.window_bytes = SHARD_DATASET_MIN_WINDOW;
        o.timeout_seconds = 60;
        struct shard_dataset *ds = NULL;
        struct shard_err err;
        if (shard_dataset_open_ex(&ds, url, &o, &err))
            fail_msg("cannot open the served dataset: %s", err.msg);
        uint64_t all[1200];
        for (uint64_t i = 0; i < 1200; i++)
            all[i] = i;
        struct shard_iter_options io;
        shard_iter_options_init(&io);
        io.threads = threads;
        struct shard_iter *it = NULL;
        if (shard_iter_new(&it, ds, all, 1200, &io, &err))
            fail_msg("%s", err.msg);
        volatile sig_atomic_t stop = 0;
        shard_iter_set_interrupt(it, after_flag, (void *)&stop);
        struct later l = {&stop, 0.5, 0};
        pthread_t t;
        pthread_create(&t, NULL, set_later, &l);
        struct shard_item item = {0};
        int rc;
        while ((rc = shard_iter_next(it, &item, &err)) == 1)
            ; /* the samples of the opening suffixes, then the stalled window */
        double late = sk_now_seconds() - l.at;
        pthread_join(t, NULL);
        if (rc != SHARD_EINTR)
            fail_msg("threads %d: next() gave %d (%s), not SHARD_EINTR", threads, rc,
                     rc ? err.msg : "");
        assert_string_equal(err.msg, "interrupted");
        if (late > CANCEL_SEEN_WITHIN)
            fail_msg("threads %d: next() returned %.3f s after its interrupt", threads, late);
        uint64_t at = shard_iter_position(it);
        assert_true(at < 1200);
        /* still stalled: the same entry, interrupted again, is not skipped */
        if ((rc = shard_iter_next(it, &item, &err)) != SHARD_EINTR)
            fail_msg("threads %d: the next call gave %d (%s), not SHARD_EINTR", threads, rc,
                     rc < 0 ? err.msg : "");
        assert_int_equal(shard_iter_position(it), at);
        double start = sk_now_seconds();
        shard_iter_free(it);
        shard_item_release(&item);
        shard_dataset_close(ds);
        if (sk_now_seconds() - start > CANCEL_SEEN_WITHIN)
            fail_msg("threads %d: freeing the iterator and closing took %.3f s", threads,
                     sk_now_seconds() - start);
    }
    server_stop(&s);
    for (unsigned i = 0; i < sd.body_count; i++)
        free(sd.bodies[i]);
    pthread_mutex_destroy(&sd.lock);
    mkds_remove(&sd.d);
}

/* The server's request count once it has stayed the same for 0.2 s. */
static unsigned settled_requests(struct server *s)
{
    unsigned n = requests(s);
    for (;;) {
        sk_sleep_seconds(0.2);
        unsigned now = requests(s);
        if (now == n)
            return n;
        n = now;
    }
}

/* Dropping the window cache leaves the windows of a file kept by
 * sk_fetch_http_keep (the node-local cache's download, which has yet to
 * read them): a read of one asks nothing; once the file is no longer kept,
 * they go, and the same read asks again. */
static void test_reader_a_kept_file_keeps_its_windows_through_a_drop(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_file, NULL);
    struct fetch *fs = reader_at(&s, 0);
    struct fetch_file *f = NULL;
    struct shard_err err;
    if (fetch_open(fs, "shard-000000.shard", &f, &err))
        fail_msg("%s", err.msg);
    char buf[100];
    assert_int_equal(fetch_read(f, 0, buf, sizeof buf, &err), 0); /* window 0, 1 read ahead */
    unsigned before = settled_requests(&s);
    assert_int_equal(before, 3); /* the suffix, windows 0 and 1 */
    sk_fetch_http_keep(f, 1);
    sk_fetch_http_drop_window_cache(fs);
    assert_int_equal(fetch_read(f, 0, buf, sizeof buf, &err), 0);
    assert_int_equal(settled_requests(&s), before);
    sk_fetch_http_keep(f, 0);
    sk_fetch_http_drop_window_cache(fs);
    assert_int_equal(fetch_read(f, 0, buf, sizeof buf, &err), 0);
    assert_int_equal(settled_requests(&s), before + 2); /* windows 0 and 1 again */
    sk_fetch_http_keep(NULL, 1);                        /* no file: nothing to keep */
    fetch_close(f);
    fetch_free(fs);
    server_stop(&s);
}

static void test_reader_names_a_file_over_its_limit(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_body, NULL);
    struct fetch *fs = reader_at(&s, 0);
    struct shard_buf buf = {0};
    struct shard_err err;
    assert_int_equal(sk_fetch_http_get(fs, "manifest.json", 10, &buf, &err), SHARD_ELIMIT);
    char want[256];
    snprintf(want, sizeof want,
             "'http://127.0.0.1:%d/d/manifest.json': file of 20 bytes "
             "exceeds the limit of 10",
             s.port);
    assert_string_equal(err.msg, want);
    assert_int_equal(buf.len, 0);
    shard_buf_release(&buf);
    fetch_free(fs);
    server_stop(&s);
}

/* ---- whole remote files ---------------------------------------------------------- */

struct remote_seen {
    pthread_mutex_t lock;
    unsigned count[SHARD_SPAN_COUNT];
    uint64_t rtt_ns;
};

static void remote_span(void *user, enum shard_read_span k, uint64_t start, uint64_t end)
{
    struct remote_seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->count[k]++;
    if (k == SHARD_SPAN_RTT)
        s->rtt_ns += end - start;
    pthread_mutex_unlock(&s->lock);
}

static void test_remote_files_are_read_whole_under_the_options(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, answer_body, NULL);
    char url[128];
    url_of(&s, "/src", url, sizeof url);
    static struct remote_seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct shard_read_observer obs = {.span = remote_span, .user = &seen};
    struct shard_dataset_options o;
    shard_dataset_options_init(&o);
    o.rtt_ms = 20;
    o.observer = &obs;
    struct shard_remote *r = NULL;
    struct shard_err err;
    assert_int_equal(shard_remote_open(&r, url, &o, &err), 0);
    assert_int_equal(requests(&s), 0); /* nothing is asked for at open */
    struct shard_buf buf = {0};
    assert_int_equal(shard_remote_get(r, "n01/a b.jpg", 0, &buf, &err), 0);
    assert_int_equal(buf.len, 20);
    assert_memory_equal(buf.data, "0123456789abcdefghij", 20);
    struct shard_read_stats st;
    shard_remote_stats(r, &st);
    assert_int_equal(st.requests, 1);
    assert_int_equal(st.bytes_transferred, 20);
    assert_int_equal(st.retries + st.samples + st.bytes_requested, 0);
    assert_true(st.rtt_ns >= 20000000u);
    assert_int_equal(seen.count[SHARD_SPAN_HTTP], 1);
    assert_int_equal(seen.count[SHARD_SPAN_RTT], 1);
    assert_int_equal(seen.rtt_ns, st.rtt_ns);
    /* a body over the caller's limit */
    assert_int_equal(shard_remote_get(r, "big.jpg", 10, &buf, &err), SHARD_ELIMIT);
    assert_int_equal(requests(&s), 2);
    shard_remote_close(r);
    shard_remote_close(NULL);
    server_stop(&s);

    int status = 404;
    server_start(&s, answer_status, &status);
    url_of(&s, "/src", url, sizeof url);
    shard_dataset_options_init(&o);
    assert_int_equal(shard_remote_open(&r, url, &o, &err), 0);
    assert_int_equal(shard_remote_get(r, "gone.jpg", 0, &buf, &err), SHARD_ENOTFOUND);
    char want[200];
    snprintf(want, sizeof want, "cannot read '%s/gone.jpg': HTTP 404 Not Found", url);
    assert_string_equal(err.msg, want);
    shard_remote_close(r);
    /* a local location, and options out of range, are refused before any request */
    assert_int_equal(shard_remote_open(&r, "/tmp", NULL, &err), SHARD_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.msg, "not a remote location"));
    o.connections = 0;
    assert_int_equal(shard_remote_open(&r, url, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "connections 0 is not in 1..64");
    assert_int_equal(requests(&s), 1);
    shard_buf_release(&buf);
    server_stop(&s);
    assert_true(shard_location_is_remote("s3://bucket/prefix"));
    assert_true(shard_location_is_remote("https://host/x"));
    assert_false(shard_location_is_remote("/data/http://x"));
}

/* ---- URLs ---------------------------------------------------------------------- */

static void test_urls_percent_encode_every_byte_but_unreserved_and_slash(void **state)
{
    (void)state;
    struct fetch *fs;
    struct fetch_http_options o;
    sk_fetch_http_options_init(&o);
    assert_int_equal(sk_fetch_http_new(&fs, "http://127.0.0.1:9/data//", &o, NULL), 0);
    char *url = sk_fetch_http_url(fs, "n01/a b'\xc3\xbc%~_-.jpg");
    assert_string_equal(url, "http://127.0.0.1:9/data/n01/a%20b%27%C3%BC%25~_-.jpg");
    free(url);
    fetch_free(fs);
    struct shard_err err;
    assert_int_equal(sk_fetch_http_new(&fs, "ftp://host/x", &o, &err), SHARD_EINVAL);
    o.reading.connections = 0;
    assert_int_equal(sk_fetch_http_new(&fs, "http://host/x", &o, &err), SHARD_EINVAL);
    assert_true(sk_fetch_http_is_url("https://host/x"));
    assert_false(sk_fetch_http_is_url("/data/http://x"));
}

/* ---- the public options ---------------------------------------------------------- */

static void test_dataset_options_reach_the_requests(void **state)
{
    (void)state;
    int status = 503;
    struct server s;
    server_start(&s, answer_status, &status);
    char url[128];
    url_of(&s, "/d", url, sizeof url);
    struct shard_dataset_options o;
    shard_dataset_options_init(&o);
    assert_int_equal(o.connections, SHARD_DATASET_DEFAULT_CONNECTIONS);
    assert_int_equal(o.retries, SHARD_DATASET_DEFAULT_RETRIES);
    o.retries = 1;
    struct shard_dataset *ds = NULL;
    struct shard_err err;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_ENET);
    assert_null(ds);
    assert_non_null(strstr(err.msg, "/d/manifest.json': HTTP 503 Service Unavailable (gave up "
                                    "after 2 attempts)"));
    assert_int_equal(requests(&s), 2);
    /* out of range: refused naming the option, before any request */
    o.retries = SHARD_DATASET_MAX_RETRIES + 1;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "retries 101 is not in 0..100");
    shard_dataset_options_init(&o);
    o.connections = 0;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_EINVAL);
    assert_string_equal(err.msg, "connections 0 is not in 1..64");
    shard_dataset_options_init(&o);
    o.window_bytes = SHARD_DATASET_MIN_WINDOW - 1;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "window of 4095 bytes"));
    shard_dataset_options_init(&o);
    o.window_cache_bytes = o.window_bytes - 1;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "smaller than the window"));
    shard_dataset_options_init(&o);
    o.timeout_seconds = 0;
    assert_int_equal(shard_dataset_open_ex(&ds, url, &o, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "timeout of 0 s"));
    /* a local location is held to the same ranges */
    assert_int_equal(shard_dataset_open_ex(&ds, "/nonexistent", &o, &err), SHARD_EINVAL);
    assert_int_equal(requests(&s), 2);
    server_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transient_statuses_are_retried_until_an_answer),
        cmocka_unit_test(test_transient_statuses_give_up_after_the_retries),
        cmocka_unit_test(test_statuses_map_to_one_code_each),
        cmocka_unit_test(test_a_range_must_be_answered_with_it),
        cmocka_unit_test(test_a_body_over_its_limit_is_refused),
        cmocka_unit_test(test_a_pooled_handle_is_reset_before_reuse),
        cmocka_unit_test(test_the_pool_keeps_at_most_its_cap),
        cmocka_unit_test(test_cancel_ends_a_back_off),
        cmocka_unit_test(test_cancel_ends_a_stalled_transfer_within_a_poll),
        cmocka_unit_test_setup_teardown(test_s3_gone_is_not_found_with_its_code, s3_setup,
                                        s3_teardown),
        cmocka_unit_test_setup_teardown(test_s3_cancel_ends_a_transfer_under_way, s3_setup,
                                        s3_teardown),
        cmocka_unit_test_setup_teardown(test_s3_hash_of_a_retried_body_is_of_the_whole_body_once,
                                        s3_setup, s3_teardown),
        cmocka_unit_test_setup_teardown(
            test_s3_multipart_upload_sends_its_parts_and_names_each_fault, s3_setup, s3_teardown),
        cmocka_unit_test(test_reader_maps_unsupported_statuses),
        cmocka_unit_test(test_reader_closing_a_file_cancels_its_retrying_fetch),
        cmocka_unit_test(test_reader_a_cancelled_thread_stops_waiting_for_a_stalled_window),
        cmocka_unit_test(test_reader_a_kept_file_keeps_its_windows_through_a_drop),
        cmocka_unit_test(test_reader_names_a_file_over_its_limit),
        cmocka_unit_test(test_an_iterator_over_a_stalled_server_is_interrupted_and_freed_at_once),
        cmocka_unit_test(test_dataset_options_reach_the_requests),
        cmocka_unit_test(test_urls_percent_encode_every_byte_but_unreserved_and_slash),
        cmocka_unit_test(test_remote_files_are_read_whole_under_the_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
