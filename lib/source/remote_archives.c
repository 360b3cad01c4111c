/* remote_archives.c - archives named by URL (shardify https://host/{00000..00099}.tar):
 * the listing expanded and checked, then each archive fetched through the
 * library's HTTP engine (net/http.h); see source_internal.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/http.h"
#include "util/fsutil.h"
#include "util/grow.h"
#include "source/source_internal.h"

/* Ranged GETs of this many bytes: an archive never has to fit in memory. */
#define FETCH_WINDOW (8u << 20)

struct remote_archive {
    char *url;
    char *name; /* the last component of its path: its keys' prefix */
    uint64_t size;
};

struct sk_remote_archives {
    struct sk_http http;
    int http_ready;
    struct remote_archive *list;
    size_t count, cap;
};

int sk_source_is_url(const char *src)
{
    return !strncmp(src, "http://", 7) || !strncmp(src, "https://", 8);
}

void sk_remote_archives_free(struct sk_remote_archives *ra)
{
    if (!ra)
        return;
    for (size_t i = 0; i < ra->count; i++) {
        free(ra->list[i].url);
        free(ra->list[i].name);
    }
    free(ra->list);
    if (ra->http_ready)
        sk_http_release(&ra->http);
    free(ra);
}

size_t sk_remote_archives_count(const struct sk_remote_archives *ra)
{
    return ra->count;
}

const char *sk_remote_archives_name(const struct sk_remote_archives *ra, size_t k)
{
    return ra->list[k].name;
}

uint64_t sk_remote_archives_size(const struct sk_remote_archives *ra, size_t k)
{
    return ra->list[k].size;
}

/* ---- the listing ----------------------------------------------------------------- */

static int add_url(struct sk_remote_archives *ra, const char *url, size_t len,
                   struct shard_err *err)
{
    if (ra->count >= SK_REMOTE_ARCHIVES_MAX)
        return shard_err_set(err, SHARD_ELIMIT, "the URLs name more than %u archives",
                             SK_REMOTE_ARCHIVES_MAX);
    if (SK_GROW(ra->list, ra->cap, ra->count + 1, 16))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct remote_archive *a = &ra->list[ra->count];
    memset(a, 0, sizeof *a);
    if (!(a->url = strndup(url, len)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    ra->count++;
    /* the name: the path's last component, without a query or a fragment */
    size_t end = strcspn(a->url, "?#");
    const char *host = strstr(a->url, "://") + 3;
    const char *slash = memrchr(host, '/', (size_t)(a->url + end - host));
    if (!sk_source_is_url(a->url) || !slash || slash + 1 == a->url + end)
        return shard_err_set(err, SHARD_EINVAL, "'%s' names no archive (http(s)://HOST/PATH.tar)",
                             a->url);
    if (!(a->name = strndup(slash + 1, (size_t)(a->url + end - slash - 1))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (!sk_is_archive_name(a->name) || strchr(a->name, '%'))
        return shard_err_set(err, SHARD_EINVAL,
                             "'%s' names no archive: its name '%s' is not .tar, .tar.gz, .tgz, "
                             ".tar.zst, .zip ... (nor may it hold %%-escapes)",
                             a->url, a->name);
    return SHARD_OK;
}

/* The words of one brace group body[0..len): "a..b" (numbers, padded to the
 * width of a or b when either has a leading zero) or "x,y,z". */
static int expand(struct sk_remote_archives *ra, const char *spec, size_t len,
                  struct shard_buf *prefix, struct shard_err *err);

static int expand_word(struct sk_remote_archives *ra, const char *word, size_t wlen,
                       const char *rest, size_t rest_len, struct shard_buf *prefix,
                       struct shard_err *err)
{
    size_t had = prefix->len;
    int rc = shard_buf_append(prefix, word, wlen, err);
    if (!rc)
        rc = expand(ra, rest, rest_len, prefix, err);
    prefix->len = had;
    return rc;
}

static int expand(struct sk_remote_archives *ra, const char *spec, size_t len,
                  struct shard_buf *prefix, struct shard_err *err)
{
    const char *open = memchr(spec, '{', len), *close = memchr(spec, '}', len);
    if (!open && close)
        return shard_err_set(err, SHARD_EINVAL, "'%.*s': a '}' without its '{'", (int)len, spec);
    if (!open) {
        size_t had = prefix->len;
        int rc = shard_buf_append(prefix, spec, len, err);
        if (!rc)
            rc = add_url(ra, (const char *)prefix->data, prefix->len, err);
        prefix->len = had;
        return rc;
    }
    close = memchr(open, '}', len - (size_t)(open - spec));
    const char *nested = memchr(open + 1, '{', close ? (size_t)(close - open - 1) : 0);
    if (!close || nested || close == open + 1)
        return shard_err_set(err, SHARD_EINVAL,
                             "'%.*s': a brace list is {A..B} or {X,Y,...}, not nested and not "
                             "empty",
                             (int)len, spec);
    size_t had = prefix->len;
    int rc = shard_buf_append(prefix, spec, (size_t)(open - spec), err);
    const char *body = open + 1, *rest = close + 1;
    size_t blen = (size_t)(close - body), rest_len = len - (size_t)(rest - spec);
    const char *dots = blen > 2 ? strstr(body, "..") : NULL;
    if (!rc && dots && dots < close) {
        size_t alen = (size_t)(dots - body), zlen = (size_t)(close - dots - 2);
        char a[24], z[24], *ea, *ez;
        if (!alen || !zlen || alen >= sizeof a || zlen >= sizeof z ||
            strspn(body, "0123456789") != alen || strspn(dots + 2, "0123456789") != zlen)
            rc = shard_err_set(err, SHARD_EINVAL, "'{%.*s}' is no range of numbers {A..B}",
                               (int)blen, body);
        unsigned long long from = 0, to = 0;
        if (!rc) {
            snprintf(a, sizeof a, "%.*s", (int)alen, body);
            snprintf(z, sizeof z, "%.*s", (int)zlen, dots + 2);
            from = strtoull(a, &ea, 10);
            to = strtoull(z, &ez, 10);
            if (from > to || to - from >= SK_REMOTE_ARCHIVES_MAX)
                rc = shard_err_set(err, SHARD_EINVAL,
                                   "'{%s..%s}' is no range of at most %u numbers from the lower", a,
                                   z, SK_REMOTE_ARCHIVES_MAX);
        }
        int width = (a[0] == '0' && alen > 1) || (z[0] == '0' && zlen > 1)
                        ? (int)(alen > zlen ? alen : zlen)
                        : 0;
        for (unsigned long long v = from; !rc && v <= to; v++) {
            char word[32];
            int n = snprintf(word, sizeof word, "%0*llu", width, v);
            rc = expand_word(ra, word, (size_t)n, rest, rest_len, prefix, err);
        }
    } else {
        for (const char *w = body; !rc && w <= close;) {
            const char *comma = memchr(w, ',', (size_t)(close - w));
            const char *end = comma ? comma : close;
            rc = expand_word(ra, w, (size_t)(end - w), rest, rest_len, prefix, err);
            w = end + 1;
        }
    }
    prefix->len = had;
    return rc;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const struct remote_archive *)a)->name,
                  ((const struct remote_archive *)b)->name);
}

/* Each archive there, its size known (a HEAD each, before anything is
 * fetched). */
static int check_each(struct sk_remote_archives *ra, volatile sig_atomic_t *cancel,
                      struct shard_err *err)
{
    int rc = sk_http_init(&ra->http, err);
    if (rc)
        return rc;
    ra->http_ready = 1;
    ra->http.cancel = cancel;
    for (size_t k = 0; !rc && k < ra->count; k++) {
        struct sk_http_request rq = {0};
        rq.method = "HEAD";
        rq.url = ra->list[k].url;
        rq.verb = "find";
        rc = sk_http_perform(&ra->http, &rq, err);
        ra->list[k].size = rq.length;
    }
    return rc;
}

int sk_remote_archives_open(struct sk_remote_archives **out, const char *spec,
                            volatile sig_atomic_t *cancel, struct shard_err *err)
{
    *out = NULL;
    struct sk_remote_archives *ra = calloc(1, sizeof *ra);
    struct shard_buf prefix = {0};
    int rc = ra ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    /* "A::B::C": each a URL with its braces */
    for (const char *p = spec; !rc && *p;) {
        const char *sep = strstr(p, "::");
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        rc = len ? expand(ra, p, len, &prefix, err)
                 : shard_err_set(err, SHARD_EINVAL, "'%s': an empty URL between '::'", spec);
        p += len + (sep ? 2 : 0);
    }
    if (!rc && !ra->count)
        rc = shard_err_set(err, SHARD_EINVAL, "'%s' names no archive", spec);
    if (!rc) /* the archive order of a folder: by name */
        qsort(ra->list, ra->count, sizeof *ra->list, compare_names);
    for (size_t k = 1; !rc && k < ra->count; k++)
        if (!strcmp(ra->list[k - 1].name, ra->list[k].name))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s' and '%s' have one name, '%s': the keys of their samples "
                               "would be the same",
                               ra->list[k - 1].url, ra->list[k].url, ra->list[k].name);
    if (!rc)
        rc = check_each(ra, cancel, err);
    shard_buf_release(&prefix);
    if (rc) {
        sk_remote_archives_free(ra);
        return rc;
    }
    *out = ra;
    return SHARD_OK;
}

/* ---- fetching ------------------------------------------------------------------------ */

int sk_remote_archives_fetch(struct sk_remote_archives *ra, size_t k, int dir_fd, const char *file,
                             const char *shown, struct shard_err *err)
{
    const struct remote_archive *a = &ra->list[k];
    int fd = openat(dir_fd, file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", shown);
    struct shard_buf buf = {0};
    int rc = SHARD_OK;
    uint64_t at = 0;
    do { /* ranged reads of FETCH_WINDOW (a server that sent no length: one whole GET) */
        struct sk_http_request rq = {0};
        char range[64];
        rq.url = a->url;
        rq.out = &buf;
        if (a->size) {
            uint64_t end = at + FETCH_WINDOW < a->size ? at + FETCH_WINDOW : a->size;
            snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)at,
                     (unsigned long long)end - 1);
            rq.range = range;
        }
        if ((rc = sk_http_perform(&ra->http, &rq, err)))
            break;
        if (a->size && (rq.range_start != at || rq.total != a->size))
            rc = shard_err_set(err, SHARD_ENET,
                               "cannot read '%s': it changed while it was read (%llu bytes, "
                               "%llu before)",
                               a->url, (unsigned long long)rq.total, (unsigned long long)a->size);
        else
            rc = sk_fs_write_all(fd, buf.data, buf.len, shown, err);
        at += buf.len;
    } while (!rc && a->size && at < a->size && buf.len);
    shard_buf_release(&buf);
    if (close(fd) != 0 && !rc)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot write '%s'", shown);
    return rc;
}
