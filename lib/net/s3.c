/* s3.c - S3 locations, settings as the AWS CLI finds them, URLs and
 * request signing through libcurl (see net/s3.h). */
#include "net/s3.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/http.h"
#include "util/fsutil.h"

#define CONTENT_SHA256_HEADER "x-amz-content-sha256: UNSIGNED-PAYLOAD"
#define TOKEN_HEADER "x-amz-security-token: "
#define DEFAULT_REGION "us-east-1"
#define INI_LINE_MAX 4096

int sk_s3_is_location(const char *location)
{
    return !strncmp(location, SK_S3_SCHEME, strlen(SK_S3_SCHEME));
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* ---- the shared config and credentials files ------------------------------------ */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The value of `key` in section [section] of the INI file `path`, as the AWS
 * CLI reads it: "key = value" lines, '#' and ';' comment lines, and nested
 * settings - a line "s3 =" followed by indented "name = value" lines - under
 * the key "s3.name".  malloc'd; NULL when absent (or the file is). */
static char *ini_get(const char *path, const char *section, const char *key)
{
    /* opened as every file shardkit reads: a FIFO there is absent, not waited on */
    int fd;
    FILE *f = NULL;
    if (path && sk_fs_open_read(AT_FDCWD, path, &fd, NULL, NULL) == SHARD_OK &&
        !(f = fdopen(fd, "r")))
        close(fd);
    if (!f)
        return NULL;
    char line[INI_LINE_MAX], nest[64] = "";
    char *found = NULL;
    int in = 0;
    while (!found && fgets(line, sizeof line, f)) {
        int indented = line[0] == ' ' || line[0] == '\t';
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (end)
                *end = '\0';
            in = !strcmp(trim(s + 1), section);
            nest[0] = '\0';
            continue;
        }
        char *eq = strchr(s, '=');
        if (!in || !eq)
            continue;
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        if (!indented)
            nest[0] = '\0';
        if (!indented && !*value) {  /* "s3 =": nested settings follow */
            snprintf(nest, sizeof nest, "%s", name);
            continue;
        }
        char full[INI_LINE_MAX + 64];
        snprintf(full, sizeof full, "%s%s%s", indented && nest[0] ? nest : "",
                 indented && nest[0] ? "." : "", name);
        if (!strcmp(full, key))
            found = strdup(value);
    }
    fclose(f);
    return found;
}

/* A file under ~/.aws unless the variable names one (malloc'd or NULL). */
static char *aws_file(const char *variable, const char *name)
{
    const char *set = env(variable);
    if (set)
        return strdup(set);
    const char *home = env("HOME");
    if (!home)
        return NULL;
    size_t n = strlen(home) + strlen(name) + 8;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.aws/%s", home, name);
    return p;
}

struct files {
    char *credentials;
    char *config;
    char *config_section;  /* "profile NAME", or "default" */
    const char *profile;
};

/* A setting of the profile: the credentials file first when `credentials`,
 * then the config file. */
static char *profile_get(const struct files *f, const char *key, int credentials)
{
    char *v = credentials ? ini_get(f->credentials, f->profile, key) : NULL;
    if (!v)
        v = ini_get(f->config, f->config_section, key);
    if (!v && !strcmp(f->profile, "default"))
        v = ini_get(f->config, "profile default", key);
    return v;
}

/* ---- locations -------------------------------------------------------------------- */

static int parse_location(struct sk_s3 *s3, const char *location, struct shard_err *err)
{
    const char *p = location + strlen(SK_S3_SCHEME);
    size_t n = strcspn(p, "/");
    if (!n)
        return shard_err_set(err, SHARD_EINVAL, "'%s' names no bucket (s3://BUCKET/PREFIX)",
                             location);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!(isalnum(c) || c == '-' || c == '.' || c == '_'))
            return shard_err_set(err, SHARD_EINVAL, "'%s': '%.*s' is not a bucket name",
                                 location, (int)n, p);
    }
    s3->bucket = strndup(p, n);
    p += n;
    while (*p == '/')
        p++;
    size_t len = strlen(p);
    while (len && p[len - 1] == '/')
        len--;
    s3->prefix = strndup(p, len);
    if (!s3->bucket || !s3->prefix)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* The endpoint without a trailing '/'; it must be http:// or https://. */
static int set_endpoint(struct sk_s3 *s3, const char *url, struct shard_err *err)
{
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return shard_err_set(err, SHARD_EINVAL, "the S3 endpoint '%s' is not an http:// or "
                             "https:// URL", url);
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (!(s3->endpoint = strndup(url, n)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

static int find_settings(struct sk_s3 *s3, struct shard_err *err)
{
    struct files f = {0};
    char *endpoint = NULL, *style = NULL, *key = NULL, *secret = NULL, *token = NULL;
    int rc = SHARD_OK;
    f.profile = env("AWS_PROFILE");
    if (!f.profile)
        f.profile = env("AWS_DEFAULT_PROFILE");
    if (!f.profile)
        f.profile = "default";
    f.credentials = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    f.config = aws_file("AWS_CONFIG_FILE", "config");
    size_t sn = strlen(f.profile) + 16;
    if (!(f.config_section = malloc(sn)) || !(s3->profile = strdup(f.profile))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if (!strcmp(f.profile, "default"))
        snprintf(f.config_section, sn, "default");
    else
        snprintf(f.config_section, sn, "profile %s", f.profile);

    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        key = strdup(env("AWS_ACCESS_KEY_ID"));
        secret = strdup(env("AWS_SECRET_ACCESS_KEY"));
        token = env("AWS_SESSION_TOKEN") ? strdup(env("AWS_SESSION_TOKEN")) : NULL;
    } else if ((key = profile_get(&f, "aws_access_key_id", 1))) {
        secret = profile_get(&f, "aws_secret_access_key", 1);
        token = profile_get(&f, "aws_session_token", 1);
    }
    s3->anonymous = !key || !secret;

    const char *region = env("AWS_REGION");
    if (!region)
        region = env("AWS_DEFAULT_REGION");
    s3->region = region ? strdup(region) : profile_get(&f, "region", 0);
    if (!s3->region)
        s3->region = strdup(DEFAULT_REGION);

    const char *url = env("AWS_ENDPOINT_URL_S3");
    if (!url)
        url = env("AWS_ENDPOINT_URL");
    if (!url && ((endpoint = profile_get(&f, "s3.endpoint_url", 0)) ||
                 (endpoint = profile_get(&f, "endpoint_url", 0))))
        url = endpoint;
    style = profile_get(&f, "s3.addressing_style", 0);
    if (!s3->region) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if (url) {
        s3->custom_endpoint = 1;
        rc = set_endpoint(s3, url, err);
    } else {
        char aws[256];
        snprintf(aws, sizeof aws, "https://s3.%s.amazonaws.com", s3->region);
        rc = set_endpoint(s3, aws, err);
    }
    if (rc)
        goto out;
    s3->path_style = s3->custom_endpoint || strchr(s3->bucket, '.');
    if (style && !strcmp(style, "path"))
        s3->path_style = 1;
    else if (style && !strcmp(style, "virtual"))
        s3->path_style = 0;

    size_t n = strlen(s3->region) + 16;
    if (!(s3->sigv4 = malloc(n)) ||
        !(s3->headers = curl_slist_append(NULL, CONTENT_SHA256_HEADER))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(s3->sigv4, n, "aws:amz:%s:s3", s3->region);
    if (!s3->anonymous) {
        size_t u = strlen(key) + strlen(secret) + 2;
        if (!(s3->userpwd = malloc(u))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto out;
        }
        snprintf(s3->userpwd, u, "%s:%s", key, secret);
        if (token) {
            size_t t = strlen(TOKEN_HEADER) + strlen(token) + 1;
            char *line = malloc(t);
            struct curl_slist *l = NULL;
            if (line) {
                snprintf(line, t, "%s%s", TOKEN_HEADER, token);
                l = curl_slist_append(s3->headers, line);
                memset(line, 0, t);
                free(line);
            }
            if (!l) {
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
                goto out;
            }
            s3->headers = l;
        }
    }
out:
    if (secret)
        memset(secret, 0, strlen(secret));
    if (token)
        memset(token, 0, strlen(token));
    free(key);
    free(secret);
    free(token);
    free(endpoint);
    free(style);
    free(f.credentials);
    free(f.config);
    free(f.config_section);
    return rc;
}

/* SHARDKIT_S3_PART_SIZE: bytes, or with a K, M or G suffix (powers of 1024). */
static int part_size(struct sk_s3 *s3, struct shard_err *err)
{
    s3->part_bytes = SK_S3_DEFAULT_PART;
    const char *v = env("SHARDKIT_S3_PART_SIZE");
    if (!v)
        return SHARD_OK;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (end == v || *end || n > (UINT64_MAX >> 30) || (n << shift) < SK_S3_MIN_PART)
        return shard_err_set(err, SHARD_EINVAL, "SHARDKIT_S3_PART_SIZE='%s' is not a size of "
                             "at least 5M", v);
    s3->part_bytes = (uint64_t)n << shift;
    return SHARD_OK;
}

int sk_s3_open(struct sk_s3 **out, const char *location, struct shard_err *err)
{
    *out = NULL;
    if (!sk_s3_is_location(location))
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not an s3:// location", location);
    struct sk_s3 *s3 = calloc(1, sizeof *s3);
    if (!s3)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&s3->lock, NULL);
    s3->retries = SK_HTTP_DEFAULT_RETRIES;
    s3->timeout_seconds = SK_HTTP_DEFAULT_TIMEOUT;
    int rc = parse_location(s3, location, err);
    if (!rc)
        rc = find_settings(s3, err);
    if (!rc)
        rc = part_size(s3, err);
    if (rc) {
        sk_s3_free(s3);
        return rc;
    }
    *out = s3;
    return SHARD_OK;
}

void sk_s3_free(struct sk_s3 *s3)
{
    if (!s3)
        return;
    for (size_t i = 0; i < s3->idle_len; i++)
        curl_easy_cleanup(s3->idle[i]);
    free(s3->idle);
    pthread_mutex_destroy(&s3->lock);
    if (s3->userpwd)
        memset(s3->userpwd, 0, strlen(s3->userpwd));
    free(s3->userpwd);
    curl_slist_free_all(s3->headers);
    free(s3->bucket);
    free(s3->prefix);
    free(s3->endpoint);
    free(s3->region);
    free(s3->profile);
    free(s3->sigv4);
    free(s3);
}

/* ---- names and URLs --------------------------------------------------------------- */

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

char *sk_s3_encode(const char *text, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(text);
    char *out = malloc(3 * n + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return out;
}

char *sk_s3_key(const struct sk_s3 *s3, const char *name)
{
    size_t n = strlen(s3->prefix) + strlen(name) + 2;
    char *key = malloc(n);
    if (key)
        snprintf(key, n, "%s%s%s", s3->prefix, s3->prefix[0] ? "/" : "", name);
    return key;
}

char *sk_s3_url(const struct sk_s3 *s3, const char *key, const char *query)
{
    char *path = sk_s3_encode(key ? key : "", 1);
    if (!path)
        return NULL;
    const char *ep = s3->endpoint;
    size_t n = strlen(ep) + strlen(s3->bucket) + strlen(path) + (query ? strlen(query) : 0) + 8;
    char *url = malloc(n);
    if (url) {
        if (s3->path_style) {
            snprintf(url, n, "%s/%s/%s%s%s", ep, s3->bucket, path, query ? "?" : "",
                     query ? query : "");
        } else {
            size_t scheme = strstr(ep, "://") - ep + 3;
            snprintf(url, n, "%.*s%s.%s/%s%s%s", (int)scheme, ep, s3->bucket, ep + scheme, path,
                     query ? "?" : "", query ? query : "");
        }
    }
    free(path);
    return url;
}

char *sk_s3_name(const struct sk_s3 *s3, const char *key)
{
    size_t n = strlen(s3->bucket) + strlen(key) + 8;
    char *name = malloc(n);
    if (name)
        snprintf(name, n, SK_S3_SCHEME "%s/%s", s3->bucket, key);
    return name;
}

int sk_s3_prepare(const struct sk_s3 *s3, CURL *c, const char *extra, struct curl_slist **list,
                  struct shard_err *err)
{
    struct curl_slist *l = NULL;
    for (const struct curl_slist *h = s3->headers; h; h = h->next) {
        struct curl_slist *grown = curl_slist_append(l, h->data);
        if (!grown)
            goto nomem;
        l = grown;
    }
    if (extra) {
        struct curl_slist *grown = curl_slist_append(l, extra);
        if (!grown)
            goto nomem;
        l = grown;
    }
    if (s3->anonymous) {
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, NULL);
        curl_easy_setopt(c, CURLOPT_USERPWD, NULL);
    } else {
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s3->sigv4);
        curl_easy_setopt(c, CURLOPT_USERPWD, s3->userpwd);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, l);
    *list = l;
    return SHARD_OK;
nomem:
    curl_slist_free_all(l);
    return shard_err_set(err, SHARD_ENOMEM, "out of memory");
}
