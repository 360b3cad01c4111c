/* s3.c - S3 locations, settings as the AWS CLI finds them, URLs and
 * request signing through libcurl (see net/s3.h). */
#include "net/s3.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/aws_config.h"
#include "net/http.h"
#include "util/fsutil.h"
#include "shardx/shardx.h"

#define CONTENT_SHA256_HEADER "x-amz-content-sha256: UNSIGNED-PAYLOAD"
#define TOKEN_HEADER "x-amz-security-token: "
#define DEFAULT_REGION "us-east-1"

int sk_s3_is_location(const char *location)
{
    return !strncmp(location, SK_S3_SCHEME, strlen(SK_S3_SCHEME));
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
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
            return shard_err_set(err, SHARD_EINVAL, "'%s': '%.*s' is not a bucket name", location,
                                 (int)n, p);
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

/* ---- settings --------------------------------------------------------------------- */

/* What the settings are found in: the two files and the profile's section
 * in each (NULL when it has none). */
struct settings {
    const char *profile;
    struct sk_aws_file *config;
    struct sk_aws_file *credentials;
    const struct sk_aws_section *in_config;
    const struct sk_aws_section *in_credentials;
};

/* A setting of the profile as botocore merges the files: the credentials
 * file's section first (it overrides whole keys), then the config file's.
 * *from gets the section it came from.  An empty value counts as unset. */
static const char *profile_value(const struct settings *st, const char *key, const char *sub,
                                 const struct sk_aws_section **from)
{
    const struct sk_aws_section *s = NULL;
    if (st->in_credentials && sk_aws_has(st->in_credentials, key))
        s = st->in_credentials;
    else if (st->in_config && sk_aws_has(st->in_config, key))
        s = st->in_config;
    const char *v = s ? sk_aws_get(s, key, sub) : NULL;
    if (from)
        *from = s;
    return v && v[0] ? v : NULL;
}

/* Where a value came from, for messages: the variable, or "the 'key' of
 * [section] in 'PATH'" ("the 'sub' under 'key' of ..." when nested). */
static void describe(char *out, size_t size, const char *variable, const char *key, const char *sub,
                     const struct sk_aws_section *s)
{
    if (variable) {
        snprintf(out, size, "%s", variable);
        return;
    }
    if (sub)
        snprintf(out, size, "the '%s' under '%s' of [%s] in '%s'", sub, key, sk_aws_section_name(s),
                 sk_aws_section_path(s));
    else
        snprintf(out, size, "the '%s' of [%s] in '%s'", key, sk_aws_section_name(s),
                 sk_aws_section_path(s));
}

/* A true/false setting, as "true" or "false" in any case; *value is left
 * as it is when text is NULL. */
static int boolean(const char *text, const char *from, int *value, struct shard_err *err)
{
    if (!text)
        return SHARD_OK;
    if (!strcasecmp(text, "true") || !strcmp(text, "1"))
        *value = 1;
    else if (!strcasecmp(text, "false") || !strcmp(text, "0"))
        *value = 0;
    else
        return shard_err_set(err, SHARD_EINVAL, "'%s' (%s) is not true or false", text, from);
    return SHARD_OK;
}

/* The hint for a value that holds a comment character. */
static const char *comment_hint(const char *value)
{
    return strpbrk(value, "#;") ? "; a comment ('#' or ';') must be on a line of its own" : "";
}

/* As botocore's validate_region_name: a DNS label, not all digits. */
static int region_name(const char *r)
{
    size_t n = strlen(r);
    int digits = 1;
    if (!n || n > 63 || r[0] == '-' || r[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)r[i]) && r[i] != '-')
            return 0;
        digits &= isdigit((unsigned char)r[i]) != 0;
    }
    return !digits;
}

static int find_profile(struct settings *st, struct sk_s3 *s3, struct shard_err *err)
{
    /* the AWS CLI v2's order (stock botocore reads AWS_DEFAULT_PROFILE first) */
    const char *variable = "AWS_PROFILE";
    st->profile = env(variable);
    if (!st->profile)
        st->profile = env(variable = "AWS_DEFAULT_PROFILE");
    if (!st->profile) {
        st->profile = "default";
        variable = NULL;
    }
    const char *config = env("AWS_CONFIG_FILE"), *credentials = env("AWS_SHARED_CREDENTIALS_FILE");
    int rc = sk_aws_file_read(&st->config, config ? config : "~/.aws/config", err);
    if (!rc)
        rc = sk_aws_file_read(&st->credentials, credentials ? credentials : "~/.aws/credentials",
                              err);
    if (rc)
        return rc;
    st->in_config = sk_aws_profile(st->config, st->profile);
    st->in_credentials = sk_aws_section(st->credentials, st->profile);
    /* a profile asked for must exist (default too); none asked for may not */
    if (variable && !st->in_config && !st->in_credentials)
        return shard_err_set(err, SHARD_EINVAL, "the profile '%s' (%s) is in neither '%s' nor '%s'",
                             st->profile, variable, sk_aws_file_path(st->config),
                             sk_aws_file_path(st->credentials));
    if (!(s3->profile = strdup(st->profile)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

static int find_region(const struct settings *st, struct sk_s3 *s3, struct shard_err *err)
{
    /* the AWS CLI v2's order (stock botocore does not read AWS_REGION) */
    const struct sk_aws_section *in = NULL;
    const char *variable = "AWS_REGION";
    const char *region = env(variable);
    if (!region)
        region = env(variable = "AWS_DEFAULT_REGION");
    if (!region) {
        variable = NULL;
        region = profile_value(st, "region", NULL, &in);
    }
    if (!region)
        region = DEFAULT_REGION;
    if (!region_name(region)) {
        char from[SHARD_ERRMSG_SIZE];
        describe(from, sizeof from, variable, "region", NULL, in);
        return shard_err_set(err, SHARD_EINVAL, "the region '%s' (%s) is not a region name%s",
                             region, from, comment_hint(region));
    }
    if (!(s3->region = strdup(region)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* The endpoint without a trailing '/': an http:// or https:// URL with a
 * host, and no user, query or fragment (libcurl's URL parser, which also
 * refuses white space). */
static int set_endpoint(struct sk_s3 *s3, const char *url, const char *from, struct shard_err *err)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *part = NULL;
    int ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
             (!strcmp(scheme, "http") || !strcmp(scheme, "https")) &&
             curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host[0] &&
             curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_NO_USER &&
             curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_NO_QUERY &&
             curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_NO_FRAGMENT;
    curl_free(scheme);
    curl_free(host);
    curl_free(part);
    curl_url_cleanup(u);
    if (!ok)
        return shard_err_set(err, SHARD_EINVAL,
                             "the S3 endpoint '%s' (%s) is not an http:// or https:// URL%s", url,
                             from, comment_hint(url));
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (!(s3->endpoint = strndup(url, n)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* Where an endpoint was found: an environment variable, or a key (and
 * sub-key) in a section of the config file; messages name it. */
struct endpoint_from {
    const char *variable;
    const char *key;
    const char *sub;
    const struct sk_aws_section *in;
};

/* ignore_configured_endpoint_urls, from the environment or the profile. */
static int ignore_configured(const struct settings *st, int *ignore, struct shard_err *err)
{
    const struct sk_aws_section *in = NULL;
    const char *variable = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS";
    const char *text = env(variable);
    char from[SHARD_ERRMSG_SIZE];
    *ignore = 0;
    if (!text) {
        variable = NULL;
        text = profile_value(st, "ignore_configured_endpoint_urls", NULL, &in);
    }
    if (!text)
        return SHARD_OK;
    describe(from, sizeof from, variable, "ignore_configured_endpoint_urls", NULL, in);
    return boolean(text, from, ignore, err);
}

/* The endpoint the config file gives: "s3 = endpoint_url" in the profile's
 * [services NAME] section, else the profile's endpoint_url; *url NULL when
 * neither is there. */
static int config_endpoint(const struct settings *st, const char **url, struct endpoint_from *f,
                           struct shard_err *err)
{
    const char *services = profile_value(st, "services", NULL, &f->in);
    *url = NULL;
    if (services) {
        const struct sk_aws_section *s = sk_aws_services(st->config, services);
        if (!s) {
            char from[SHARD_ERRMSG_SIZE];
            describe(from, sizeof from, NULL, "services", NULL, f->in);
            return shard_err_set(err, SHARD_EINVAL, "'%s' has no section [services %s] for %s",
                                 sk_aws_file_path(st->config), services, from);
        }
        f->in = s;
        f->key = "s3";
        f->sub = "endpoint_url";
        *url = sk_aws_get(s, f->key, f->sub);
        *url = *url && (*url)[0] ? *url : NULL;
    }
    if (!*url) {
        f->key = "endpoint_url";
        f->sub = NULL;
        *url = profile_value(st, f->key, NULL, &f->in);
    }
    return SHARD_OK;
}

/* The endpoint as botocore's configured-endpoint chain finds it (the
 * environment, then the config file), unless
 * ignore_configured_endpoint_urls; else AWS's own. */
static int find_endpoint(const struct settings *st, struct sk_s3 *s3, struct shard_err *err)
{
    struct endpoint_from f = {.key = "endpoint_url"};
    const char *url = NULL;
    char from[SHARD_ERRMSG_SIZE];
    int ignore, rc;
    if ((rc = ignore_configured(st, &ignore, err)))
        return rc;
    if (!ignore) {
        url = env(f.variable = "AWS_ENDPOINT_URL_S3");
        if (!url)
            url = env(f.variable = "AWS_ENDPOINT_URL");
    }
    if (!ignore && !url) {
        f.variable = NULL;
        if ((rc = config_endpoint(st, &url, &f, err)))
            return rc;
    }
    if (url) {
        s3->custom_endpoint = 1;
        describe(from, sizeof from, f.variable, f.key, f.sub, f.in);
        return set_endpoint(s3, url, from, err);
    }
    /* the old "s3 = endpoint_url" nesting in a profile, which the AWS CLI
     * does not read: going to AWS instead would surprise its author */
    const struct sk_aws_section *in = NULL;
    if (!ignore && profile_value(st, "s3", "endpoint_url", &in)) {
        describe(from, sizeof from, NULL, "s3", "endpoint_url", in);
        return shard_err_set(err, SHARD_EINVAL,
                             "%s is not read by the AWS CLI, which would "
                             "send the requests to AWS: write 'endpoint_url = URL' in the "
                             "profile, or in a [services NAME] section under 's3 ='",
                             from);
    }
    char aws[256];
    snprintf(aws, sizeof aws, "https://s3.%s.amazonaws.com", s3->region);
    return set_endpoint(s3, aws, "AWS", err);
}

static int find_addressing(const struct settings *st, struct sk_s3 *s3, struct shard_err *err)
{
    const struct sk_aws_section *in = NULL;
    const char *style = profile_value(st, "s3", "addressing_style", &in);
    s3->path_style = s3->custom_endpoint || strchr(s3->bucket, '.');
    if (!style || !strcmp(style, "auto"))
        return SHARD_OK;
    if (!strcmp(style, "path") || !strcmp(style, "virtual")) {
        s3->path_style = !strcmp(style, "path");
        return SHARD_OK;
    }
    char from[SHARD_ERRMSG_SIZE];
    describe(from, sizeof from, NULL, "s3", "addressing_style", in);
    return shard_err_set(err, SHARD_EINVAL,
                         "the addressing style '%s' (%s) is not auto, path or virtual%s", style,
                         from, comment_hint(style));
}

/* The keys written in section s: 0 with *key NULL when it has no
 * aws_access_key_id; SHARD_EINVAL when it has no secret beside it. */
static int section_keys(const struct sk_aws_section *s, char **key, char **secret, char **token,
                        struct shard_err *err)
{
    const char *k = s ? sk_aws_get(s, "aws_access_key_id", NULL) : NULL;
    if (!k || !k[0])
        return SHARD_OK;
    const char *sec = sk_aws_get(s, "aws_secret_access_key", NULL);
    const char *tok = sk_aws_get(s, "aws_security_token", NULL);
    if (!tok || !tok[0])
        tok = sk_aws_get(s, "aws_session_token", NULL);
    if (!sec || !sec[0]) {
        return shard_err_set(err, SHARD_EINVAL,
                             "[%s] in '%s' has aws_access_key_id but no aws_secret_access_key",
                             sk_aws_section_name(s), sk_aws_section_path(s));
    }
    *key = strdup(k);
    *secret = strdup(sec);
    *token = tok && tok[0] ? strdup(tok) : NULL;
    if (!*key || !*secret || (tok && tok[0] && !*token))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* Credentials that come from somewhere shardkit does not go (a role to
 * assume, web identity, SSO, a process): an error saying how to pass them,
 * when the profile (or the environment) asks for `source` first. */
static int unsupported(const struct settings *st, const char *what, const char *source,
                       struct shard_err *err)
{
    return shard_err_set(err, SHARD_EUNSUPPORTED,
                         "the profile '%s' gets its credentials from "
                         "%s ('%s'), which shardkit does not do: export them first (eval "
                         "\"$(aws configure export-credentials --profile %s --format env)\")",
                         st->profile, what, source, st->profile);
}

/* The credentials, in the order of botocore's chain (see s3.h). */
static int find_credentials(const struct settings *st, char **key, char **secret, char **token,
                            struct shard_err *err)
{
    if (env("AWS_ACCESS_KEY_ID")) {
        if (!env("AWS_SECRET_ACCESS_KEY"))
            return shard_err_set(err, SHARD_EINVAL,
                                 "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
        const char *tok = env("AWS_SECURITY_TOKEN");
        if (!tok)
            tok = env("AWS_SESSION_TOKEN");
        *key = strdup(env("AWS_ACCESS_KEY_ID"));
        *secret = strdup(env("AWS_SECRET_ACCESS_KEY"));
        *token = tok ? strdup(tok) : NULL;
        if (!*key || !*secret || (tok && !*token))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        return SHARD_OK;
    }
    if (profile_value(st, "web_identity_token_file", NULL, NULL))
        return unsupported(st, "web identity", "web_identity_token_file", err);
    if (profile_value(st, "role_arn", NULL, NULL))
        return unsupported(st, "a role to assume", "role_arn", err);
    if (env("AWS_WEB_IDENTITY_TOKEN_FILE") && env("AWS_ROLE_ARN"))
        return unsupported(st, "web identity", "AWS_WEB_IDENTITY_TOKEN_FILE", err);
    if (profile_value(st, "sso_account_id", NULL, NULL) &&
        profile_value(st, "sso_role_name", NULL, NULL))
        return unsupported(st, "IAM Identity Center", "sso_account_id", err);
    int rc = section_keys(st->in_credentials, key, secret, token, err);
    if (rc || *key)
        return rc;
    if (profile_value(st, "login_session", NULL, NULL))
        return unsupported(st, "a console login", "login_session", err);
    if (profile_value(st, "credential_process", NULL, NULL))
        return unsupported(st, "a process", "credential_process", err);
    if ((rc = section_keys(st->in_config, key, secret, token, err)) || *key)
        return rc;
    return shard_err_set(err, SHARD_EINVAL,
                         "no AWS credentials for the profile '%s': none in "
                         "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, '%s' or '%s' (roles of "
                         "an instance or a container are not asked); for a public bucket, set "
                         "%s=true to send unsigned requests",
                         st->profile, sk_aws_file_path(st->credentials),
                         sk_aws_file_path(st->config), SK_S3_NO_SIGN_VARIABLE);
}

/* Requests signed with the credentials found, or unsigned on request. */
static int set_signing(struct sk_s3 *s3, const struct settings *st, struct shard_err *err)
{
    char *key = NULL, *secret = NULL, *token = NULL;
    int rc = boolean(env(SK_S3_NO_SIGN_VARIABLE), SK_S3_NO_SIGN_VARIABLE, &s3->anonymous, err);
    size_t n = strlen(s3->region) + 16;
    if (!rc && (!(s3->sigv4 = malloc(n)) ||
                !(s3->headers = curl_slist_append(NULL, CONTENT_SHA256_HEADER))))
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (rc || s3->anonymous)
        goto out;
    snprintf(s3->sigv4, n, "aws:amz:%s:s3", s3->region);
    if ((rc = find_credentials(st, &key, &secret, &token, err)))
        goto out;
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
out:
    if (secret)
        memset(secret, 0, strlen(secret));
    if (token)
        memset(token, 0, strlen(token));
    free(key);
    free(secret);
    free(token);
    return rc;
}

static int find_settings(struct sk_s3 *s3, struct shard_err *err)
{
    struct settings st = {0};
    int rc = find_profile(&st, s3, err);
    if (!rc)
        rc = find_region(&st, s3, err);
    if (!rc)
        rc = find_endpoint(&st, s3, err);
    if (!rc)
        rc = find_addressing(&st, s3, err);
    if (!rc)
        rc = set_signing(s3, &st, err);
    sk_aws_file_free(st.config);
    sk_aws_file_free(st.credentials);
    return rc;
}

/* SHARDKIT_S3_PART_SIZE: a size as every size is read (shardx_size_parse). */
static int part_size(struct sk_s3 *s3, struct shard_err *err)
{
    s3->part_bytes = SK_S3_DEFAULT_PART;
    const char *v = env("SHARDKIT_S3_PART_SIZE");
    uint64_t n;
    if (!v)
        return SHARD_OK;
    if (shardx_size_parse(v, &n) || n < SK_S3_MIN_PART)
        return shard_err_set(err, SHARD_EINVAL,
                             "SHARDKIT_S3_PART_SIZE='%s' is not a size of at least 5M", v);
    s3->part_bytes = n;
    return SHARD_OK;
}

static int sign(void *user, CURL *c, const char *extra, struct curl_slist **list,
                struct shard_err *err);

int sk_s3_open(struct sk_s3 **out, const char *location, struct shard_err *err)
{
    *out = NULL;
    if (!sk_s3_is_location(location))
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not an s3:// location", location);
    struct sk_s3 *s3 = calloc(1, sizeof *s3);
    if (!s3)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = sk_http_init(&s3->http, err);
    s3->http.sign = sign;
    s3->http.sign_user = s3;
    s3->http.error_code = sk_s3_error_code;
    if (!rc)
        rc = parse_location(s3, location, err);
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
    sk_http_release(&s3->http);
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
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
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

/* The client's `sign` hook (net/http.h): handle c signed (unless anonymous),
 * with the headers every request carries plus `extra` (a header line such
 * as "Content-Type: application/xml", or NULL). */
static int sign(void *user, CURL *c, const char *extra, struct curl_slist **list,
                struct shard_err *err)
{
    const struct sk_s3 *s3 = user;
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
