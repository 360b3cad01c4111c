/* redact.c - credentials out of the URLs in a text (see shardx.h). */
#include "shardx.h"

#include <stdlib.h>
#include <string.h>

/* What a URL's user information is replaced with. */
#define REDACTED "***"

static int is_scheme_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '-' || c == '.';
}

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Where the authority that starts at s ends: at the path, query or fragment,
 * or at white space or a control byte (the end of the URL in a message). */
static const char *authority_end(const char *s)
{
    while (*s && !strchr("/?#", *s) && (unsigned char)*s > ' ' && *s != 0x7f)
        s++;
    return s;
}

/* The user information of the URL whose "://" is at p (text starts at
 * `text`): *from set to its first byte, and the '@' after it returned; NULL
 * when p is no URL's or the URL names no user. */
static const char *userinfo(const char *text, const char *p, const char **from)
{
    const char *scheme = p;
    while (scheme > text && is_scheme_char(scheme[-1]))
        scheme--;
    while (scheme < p && !is_letter(*scheme)) /* a scheme starts with a letter */
        scheme++;
    if (scheme == p)
        return NULL;
    const char *start = p + 3, *end = authority_end(start), *at = NULL;
    for (const char *q = start; q < end; q++)
        if (*q == '@')
            at = q; /* the last one: user information cannot hold one unencoded */
    if (!at || at == start)
        return NULL;
    *from = start;
    return at;
}

/* The result so far: its length, and as much of it as fits in out. */
struct result {
    char *out;
    size_t size, len;
};

static void put(struct result *r, const char *s, size_t len)
{
    if (r->size && r->len < r->size - 1) {
        size_t room = r->size - 1 - r->len;
        memcpy(r->out + r->len, s, len < room ? len : room);
    }
    r->len += len;
}

size_t shardx_redact_urls_into(const char *text, char *out, size_t out_size)
{
    struct result r = {out, out_size, 0};
    const char *done = text; /* copied up to here */
    for (const char *p = strstr(text, "://"); p; p = strstr(p + 3, "://")) {
        const char *from, *at = userinfo(text, p, &from);
        if (!at || from < done)
            continue;
        put(&r, done, (size_t)(from - done));
        put(&r, REDACTED, strlen(REDACTED));
        done = at;
    }
    put(&r, done, strlen(done));
    if (out_size)
        out[r.len < out_size ? r.len : out_size - 1] = '\0';
    return r.len;
}

char *shardx_redact_urls(const char *text)
{
    if (!text)
        return NULL;
    size_t n = shardx_redact_urls_into(text, NULL, 0);
    char *out = malloc(n + 1);
    if (out)
        shardx_redact_urls_into(text, out, n + 1);
    return out;
}
