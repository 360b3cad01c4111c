/* error.c - status names and per-call error messages (see shardkit/error.h). */
#include "shardkit/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shardx/shardx.h"

const char *shard_strerror(int code)
{
    switch (code) {
    case SHARD_OK: return "success";
    case SHARD_ENOMEM: return "out of memory";
    case SHARD_EIO: return "input/output error";
    case SHARD_EINVAL: return "invalid argument";
    case SHARD_ECORRUPT: return "corrupt data";
    case SHARD_EUNSUPPORTED: return "unsupported";
    case SHARD_ELIMIT: return "limit exceeded";
    case SHARD_ENOTIMAGE: return "not an image";
    case SHARD_ELOCKED: return "locked by another run";
    case SHARD_EEXIST: return "destination not usable";
    case SHARD_EMISMATCH: return "verification mismatch";
    case SHARD_ENOTFOUND: return "not found";
    case SHARD_ENET: return "network error";
    case SHARD_EINTR: return "interrupted";
    case SHARD_EREJECTED: return "input rejected";
    }
    return "unknown error";
}

/* Messages are one line whatever text they carry (libarchive's end in a
 * newline): line breaks become spaces, trailing white space goes.  And a
 * password in a URL they name is no one's business: it is redacted. */
static void one_line(char *msg)
{
    char redacted[SHARD_ERRMSG_SIZE];
    if (strstr(msg, "://")) {
        shardx_redact_urls_into(msg, redacted, sizeof redacted);
        memcpy(msg, redacted, strlen(redacted) + 1);
    }
    size_t n = 0;
    for (char *p = msg; *p; p++, n++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    while (n > 0 &&
           (msg[n - 1] == ' ' || msg[n - 1] == '\t' || msg[n - 1] == '\v' || msg[n - 1] == '\f'))
        msg[--n] = '\0';
}

int shard_err_set(struct shard_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    one_line(err->msg);
    return code;
}

int shard_err_errno(struct shard_err *err, int code, int errnum, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    one_line(err->msg);
    if (n >= 0 && (size_t)n < sizeof err->msg) {
        n = (int)strlen(err->msg);
        char buf[128];
        /* strerror_r (GNU or XSI) is thread-safe; strerror is not. */
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
        const char *s = strerror_r(errnum, buf, sizeof buf);
#else
        const char *s = strerror_r(errnum, buf, sizeof buf) == 0 ? buf : "unknown error";
#endif
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", s);
    }
    one_line(err->msg);
    return code;
}

int shard_err_prefix(struct shard_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    char prefix[SHARD_ERRMSG_SIZE];
    char old[SHARD_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* "prefix: old", cut at the buffer size (a long message loses its tail) */
    size_t cap = sizeof err->msg - 1, n = 0;
    for (const char *parts[3] = {prefix, old[0] ? ": " : "", old}, **p = parts; p < parts + 3;
         p++) {
        size_t len = strlen(*p);
        if (len > cap - n)
            len = cap - n;
        memcpy(err->msg + n, *p, len);
        n += len;
    }
    err->msg[n] = '\0';
    one_line(err->msg);
    return code;
}

void shard_err_clear(struct shard_err *err)
{
    if (!err)
        return;
    err->code = SHARD_OK;
    err->msg[0] = '\0';
}
