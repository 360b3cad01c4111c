/* s3.h - an S3 location and the settings to reach it, found as the AWS CLI
 * v2 finds them (private).
 *
 * A location is "s3://BUCKET" or "s3://BUCKET/PREFIX"; the files of a
 * dataset (or the objects of a source) are the objects "PREFIX/NAME".
 *
 * Settings (an empty variable or value counts as unset; the files are read
 * as net/aws_config.h says):
 *   files        AWS_CONFIG_FILE (default ~/.aws/config) and
 *                AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials)
 *   profile      AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default"; one
 *                named by a variable must be a section of either file.  A
 *                setting of the profile is its value in the credentials
 *                file's [NAME], else in the config file's [profile NAME]
 *   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`,
 *                else us-east-1; it must be a region name
 *   endpoint     none when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, else the
 *                profile's `ignore_configured_endpoint_urls`, is true; else
 *                AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, `endpoint_url` under
 *                `s3 =` in the config file's [services NAME] section that the
 *                profile's `services = NAME` names, the profile's
 *                `endpoint_url`; none: AWS itself, https://s3.REGION.amazonaws.com.
 *                An http:// or https:// URL
 *   addressing   a custom endpoint is addressed path-style
 *                (ENDPOINT/BUCKET/KEY), AWS virtual-hosted
 *                (https://BUCKET.s3.REGION.amazonaws.com/KEY) unless the bucket
 *                name has a dot; the profile's nested `s3 = addressing_style
 *                = path|virtual` overrides both (auto: the default)
 *   signing      unsigned when SHARDKIT_S3_NO_SIGN_REQUEST is true (as `aws
 *                --no-sign-request`); else signed with the first credentials
 *                of: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *                (+ AWS_SECURITY_TOKEN or AWS_SESSION_TOKEN); the credentials
 *                file's aws_access_key_id, aws_secret_access_key (+
 *                aws_security_token or aws_session_token); the config file's.
 *                A profile that gets them from a role, web identity, SSO, a
 *                login or a process before that is SHARD_EUNSUPPORTED, and no
 *                credentials at all SHARD_EINVAL: never unsigned by default
 * Booleans are true or false (any case), 1 or 0.  A malformed setting is
 * SHARD_EINVAL naming the setting, where it was found and its value.
 *
 * Requests are signed by libcurl (CURLOPT_AWS_SIGV4, "aws:amz:REGION:s3"),
 * with the payload declared UNSIGNED-PAYLOAD in x-amz-content-sha256 (every
 * request carries that header: S3 needs it) and the session token, when
 * there is one, in x-amz-security-token.  The secret key and the token live
 * only in this struct and in libcurl's options: no message, name or URL made
 * here contains them. */
#ifndef SHARDKIT_NET_S3_H
#define SHARDKIT_NET_S3_H

#include <stdint.h>

#include "net/http.h"
#include "shardkit/error.h"
#include "shardkit/image.h"

#define SK_S3_SCHEME "s3://"
#define SK_S3_CODE_SIZE SK_HTTP_CODE_SIZE /* S3 error codes: "NoSuchBucket", ... */
#define SK_S3_MIN_PART (5ull << 20)       /* S3's smallest part but the last */
#define SK_S3_DEFAULT_PART (16ull << 20)
#define SK_S3_MAX_PARTS 10000
#define SK_S3_NO_SIGN_VARIABLE "SHARDKIT_S3_NO_SIGN_REQUEST"

struct sk_s3 {
    char *bucket;
    char *prefix;   /* "" or "a/b": no leading or trailing '/' */
    char *endpoint; /* scheme://host[:port][/path], no trailing '/' */
    char *region;
    char *profile;
    int custom_endpoint; /* not AWS's own */
    int path_style;
    int anonymous;              /* SHARDKIT_S3_NO_SIGN_REQUEST: requests are not signed */
    char *sigv4;                /* "aws:amz:REGION:s3" */
    char *userpwd;              /* "KEY:SECRET": secret, only ever given to libcurl */
    struct curl_slist *headers; /* x-amz-content-sha256 (and the token): secret */
    uint64_t part_bytes;        /* multipart part size: SHARDKIT_S3_PART_SIZE, else 16 MiB */
    /* The requests' client (net/http.h), its `sign` and `error_code` hooks
     * set to S3's: retries, time-out and cancellation are its settings
     * (http.cancel set non-zero stops an upload with SHARD_EINTR), its
     * connections the pool the operations below share. */
    struct sk_http http;
};

/* 1 when `location` starts with s3://. */
int sk_s3_is_location(const char *location);

/* Parse `location` and find the settings (see above).  SHARD_EINVAL for a
 * location without a bucket, a malformed setting or file, a profile that
 * is not there or no credentials; SHARD_EUNSUPPORTED for credentials
 * shardkit cannot get; SHARD_EIO, SHARD_ENOMEM. */
int sk_s3_open(struct sk_s3 **out, const char *location, struct shard_err *err);

void sk_s3_free(struct sk_s3 *s3); /* accepts NULL */

/* The object key of `name` below the prefix ("PREFIX/NAME"), malloc'd. */
char *sk_s3_key(const struct sk_s3 *s3, const char *name);

/* The request URL of object `key` (a full key, not below the prefix; NULL
 * or "" for the bucket itself) with `query` ("a=1&b=2", already encoded and
 * sorted by name, as SigV4 wants it; NULL: none).  malloc'd; NULL when out
 * of memory. */
char *sk_s3_url(const struct sk_s3 *s3, const char *key, const char *query);

/* "s3://BUCKET/KEY" for messages, malloc'd. */
char *sk_s3_name(const struct sk_s3 *s3, const char *key);

/* Percent-encode `text` as SigV4 wants it: unreserved characters stay, and
 * '/' too when keep_slash; every other byte is %XX.  malloc'd. */
char *sk_s3_encode(const char *text, int keep_slash);

/* ---- object operations (s3_ops.c) --------------------------------------------------
 *
 * Every request goes through the client s3->http under net/http.h's rules
 * (retries, time-out, statuses, cancellation, the pool).  Errors name the
 * object as s3://BUCKET/KEY, with S3's error code when the answer has one:
 * "cannot upload 's3://b/d/shard-000001.shard': HTTP 403 Forbidden
 * (AccessDenied)".  A missing object (or bucket), 404 or 410, is
 * SHARD_ENOTFOUND; a request the store does not implement (405, 501, 505)
 * SHARD_EUNSUPPORTED; anything else SHARD_ENET.  Names are below the
 * prefix ("shard-000001.shard" is the object PREFIX/shard-000001.shard).
 * Thread-safe. */

/* Called for each object (recursive) or each entry of one level (a
 * sub-"directory" comes as its name with a trailing '/' and size 0) below
 * the prefix, in key order.  `name` is the key relative to PREFIX/ (not
 * NUL-safe: len bytes).  Non-zero stops the listing with that value. */
typedef int (*sk_s3_list_fn)(void *user, const char *name, size_t len, uint64_t size,
                             struct shard_err *err);

/* List the objects below the prefix with ListObjectsV2, page after page
 * (1000 keys a page), the XML parsed with expat.  recursive: every object;
 * else one level (delimiter '/').  An empty listing is fine; a missing
 * bucket is SHARD_ENOTFOUND. */
int sk_s3_list(struct sk_s3 *s3, int recursive, sk_s3_list_fn fn, void *user,
               struct shard_err *err);

/* Called for each multipart upload under way below the prefix: the name
 * of its object relative to PREFIX/ (len bytes, not NUL-safe) and its
 * upload id.  Non-zero stops the listing with that value. */
typedef int (*sk_s3_upload_fn)(void *user, const char *name, size_t len, const char *upload_id,
                               struct shard_err *err);

/* List the multipart uploads under way below the prefix with
 * ListMultipartUploads, page after page.  A store that does not implement
 * it (s3rver) is SHARD_EUNSUPPORTED. */
int sk_s3_list_uploads(struct sk_s3 *s3, sk_s3_upload_fn fn, void *user, struct shard_err *err);

/* GET object `name` whole into buf (replacing its contents); larger than
 * max_bytes (when not 0) is SHARD_ELIMIT. */
int sk_s3_get(struct sk_s3 *s3, const char *name, uint64_t max_bytes, struct shard_buf *buf,
              struct shard_err *err);

/* Size and XXH3-64 of object `name`, streamed (nothing kept). */
int sk_s3_hash(struct sk_s3 *s3, const char *name, uint64_t *bytes, uint64_t *xxh3,
               struct shard_err *err);

/* Size of object `name` (HEAD). */
int sk_s3_head(struct sk_s3 *s3, const char *name, uint64_t *bytes, struct shard_err *err);

/* Delete object `name`; one that is not there is no error. */
int sk_s3_delete(struct sk_s3 *s3, const char *name, struct shard_err *err);

/* A multipart upload that is under way: a caller that must be able to abort
 * it after a crash records it when it starts (`started`) and forgets it
 * when it is over (`ended`, completed or aborted).  Both may be NULL. */
struct sk_s3_upload_hooks {
    int (*started)(void *user, const char *name, const char *upload_id, struct shard_err *err);
    void (*ended)(void *user, const char *name, const char *upload_id);
    void *user;
};

/* Upload `size` bytes of the open file fd (from offset 0) as object `name`:
 * one PUT when it fits in one part, else a multipart upload
 * (CreateMultipartUpload, UploadPart for each part of part_bytes - more
 * when 10000 parts would not hold the file -, CompleteMultipartUpload),
 * each part retried on its own.  A failed multipart upload is aborted
 * (AbortMultipartUpload; when even that fails, `ended` is not called, so
 * the caller keeps its record to abort it later).  *http.cancel set stops
 * it with SHARD_EINTR (in the middle of a part too), aborted the same way:
 * the abort is sent even then. */
int sk_s3_put_file(struct sk_s3 *s3, const char *name, int fd, uint64_t size,
                   const struct sk_s3_upload_hooks *hooks, struct shard_err *err);

/* Upload a small buffer as object `name` in one PUT. */
int sk_s3_put_buffer(struct sk_s3 *s3, const char *name, const void *data, size_t len,
                     struct shard_err *err);

/* Abort the multipart upload `upload_id` of object `name`; one that is
 * already gone is no error. */
int sk_s3_abort(struct sk_s3 *s3, const char *name, const char *upload_id, struct shard_err *err);

/* S3's error code ("NoSuchKey") from an error document of len bytes into
 * out; "" when there is none. */
void sk_s3_error_code(const void *body, size_t len, char *out, size_t size);

#endif
