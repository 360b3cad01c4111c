/* s3_ops.c - S3 object operations: list (ListObjectsV2, parsed with
 * expat), get, hash, head, delete, put (one PUT or a multipart upload),
 * abort; every request retried on transient failures (see net/s3.h).
 *
 * Every request goes through the library's HTTP engine (net/http.h), which
 * retries, maps statuses and signs (through the client's hook); the
 * operations only say what to send and what to keep. */
#include "net/s3.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <expat.h>
#include <xxhash.h>

#include "net/http.h"
#include "shardx/shardx.h"
#include "util/grow.h"

#define LIST_BODY_MAX (64u << 20) /* one page of a listing */
#define SMALL_BODY_MAX (1u << 20) /* answers to upload requests */
#define QUERY_MAX 4096
#define ETAG_MAX 256
#define TEXT_MAX 4096 /* an element's text we keep (keys are <= 1024 bytes) */

/* ---- one request ------------------------------------------------------------------ */

/* Perform rq (net/http.h: retries, statuses, time-out, cancellation) on
 * object `key` (a full key; NULL: the bucket) with `query` (encoded, sorted;
 * NULL: none), messages naming `subject` when given (a listing's prefix),
 * else the key. */
static int call(struct sk_s3 *s3, const char *key, const char *query, const char *subject,
                struct sk_http_request *rq, struct shard_err *err)
{
    char *url = sk_s3_url(s3, key, query);
    char *shown = sk_s3_name(s3, subject ? subject : key ? key : "");
    int rc;
    if (!url || !shown) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else {
        rq->url = url;
        rq->shown = shown;
        rc = sk_http_perform(&s3->http, rq, err);
        rq->url = rq->shown = NULL;
    }
    free(url);
    free(shown);
    return rc;
}

/* ---- XML ---------------------------------------------------------------------------- */

/* What a parse keeps: the text of the current element, and the path of
 * element names down to it ("ListBucketResult/Contents/Key"). */
struct xml {
    char path[256];
    char text[TEXT_MAX + 1];
    size_t text_len;
    int too_long;
    void (*on_element)(struct xml *x, const char *path, const char *text, size_t len);
    void *user;
};

static void XMLCALL xml_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    struct xml *x = user;
    size_t n = strlen(x->path);
    snprintf(x->path + n, sizeof x->path - n, "%s%s", n ? "/" : "", name);
    x->text_len = 0;
    x->too_long = 0;
    (void)attrs;
}

static void XMLCALL xml_end(void *user, const XML_Char *name)
{
    struct xml *x = user;
    x->text[x->text_len] = '\0';
    if (x->on_element && !x->too_long)
        x->on_element(x, x->path, x->text, x->text_len);
    char *slash = strrchr(x->path, '/');
    if (slash)
        *slash = '\0';
    else
        x->path[0] = '\0';
    x->text_len = 0;
    (void)name;
}

static void XMLCALL xml_text(void *user, const XML_Char *s, int len)
{
    struct xml *x = user;
    if (x->text_len + (size_t)len > TEXT_MAX) {
        x->too_long = 1;
        return;
    }
    memcpy(x->text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
}

/* Parse an XML document; 0, or -1 when it is not well-formed. */
static int xml_parse(const void *data, size_t len, struct xml *x)
{
    XML_Parser p = XML_ParserCreate("UTF-8");
    if (!p)
        return -1;
    XML_SetUserData(p, x);
    XML_SetElementHandler(p, xml_start, xml_end);
    XML_SetCharacterDataHandler(p, xml_text);
    int ok = len <= INT32_MAX && XML_Parse(p, data, (int)len, 1) == XML_STATUS_OK;
    XML_ParserFree(p);
    return ok ? 0 : -1;
}

struct code_find {
    char *out;
    size_t size;
};

static void on_error_element(struct xml *x, const char *path, const char *text, size_t len)
{
    struct code_find *f = x->user;
    if (!strcmp(path, "Error/Code"))
        snprintf(f->out, f->size, "%.*s", (int)len, text);
}

void sk_s3_error_code(const void *body, size_t len, char *out, size_t size)
{
    out[0] = '\0';
    if (!body || !len)
        return;
    struct code_find f = {out, size};
    struct xml *x = calloc(1, sizeof *x);
    if (!x)
        return;
    x->on_element = on_error_element;
    x->user = &f;
    if (xml_parse(body, len, x))
        out[0] = '\0';
    /* only printable ASCII goes into a message */
    for (char *p = out; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            *p = '?';
    free(x);
}

/* ---- list ---------------------------------------------------------------------------- */

/* An entry of a listing: an object, a common prefix (size 0) or a multipart
 * upload under way (its id). */
struct entry {
    char *name; /* the key as sent; after page_finish, the name below PREFIX/ */
    size_t len;
    uint64_t size;
    char *upload_id; /* ListMultipartUploads only */
};

/* One page of ListObjectsV2 or ListMultipartUploads.  Keys are kept as sent
 * and decoded only once the whole page is read: S3, MinIO and moto put
 * <EncodingType> after the entries it applies to. */
struct page {
    const char *root; /* "ListBucketResult" or "ListMultipartUploadsResult" */
    int root_seen;
    int url_encoded; /* <EncodingType>url</EncodingType>: keys are percent-encoded */
    /* the entry being read */
    char key[TEXT_MAX + 1];
    size_t key_len;
    int has_key;
    uint64_t size;
    char *upload_id;
    /* the entries of the page, in the order sent */
    struct entry *entries;
    size_t count;
    size_t cap;
    int truncated;
    char *token;       /* NextContinuationToken: opaque, never encoded */
    char *next_key;    /* NextKeyMarker: encoded like the keys */
    char *next_upload; /* NextUploadIdMarker */
    int nomem;
};

/* Decode %XX (and '+' as a space, as S3 encodes it) in place; returns the
 * new length. */
static size_t url_decode(char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len && shardx_hex_value(s[i + 1]) >= 0 &&
            shardx_hex_value(s[i + 2]) >= 0) {
            s[o++] = (char)(shardx_hex_value(s[i + 1]) * 16 + shardx_hex_value(s[i + 2]));
            i += 2;
        } else if (s[i] == '+') {
            s[o++] = ' ';
        } else {
            s[o++] = s[i];
        }
    }
    return o;
}

/* Add the entry just read (its key, size and upload id) to the page. */
static void page_add(struct page *pg)
{
    char *upload_id = pg->upload_id;
    pg->upload_id = NULL;
    if (pg->nomem || (!strcmp(pg->root, "ListMultipartUploadsResult") && !upload_id)) {
        free(upload_id);
        return;
    }
    if (SK_GROW(pg->entries, pg->cap, pg->count + 1, 1024)) {
        pg->nomem = 1;
        free(upload_id);
        return;
    }
    char *name = malloc(pg->key_len + 1);
    if (!name) {
        pg->nomem = 1;
        free(upload_id);
        return;
    }
    memcpy(name, pg->key, pg->key_len);
    name[pg->key_len] = '\0';
    pg->entries[pg->count++] = (struct entry){name, pg->key_len, pg->size, upload_id};
}

/* Is `path` the page's root element followed by "/rest"? */
static int at(const struct page *pg, const char *path, const char *rest)
{
    size_t n = strlen(pg->root);
    return !strncmp(path, pg->root, n) && path[n] == '/' && !strcmp(path + n + 1, rest);
}

/* Replace *kept by a copy of the element's text. */
static void keep_text(struct page *pg, char **kept, const char *text, size_t len)
{
    free(*kept);
    if (!(*kept = strndup(text, len)))
        pg->nomem = 1;
}

static void on_list_element(struct xml *x, const char *path, const char *text, size_t len)
{
    struct page *pg = x->user;
    if (!strcmp(path, pg->root)) {
        pg->root_seen = 1;
    } else if (at(pg, path, "EncodingType")) {
        pg->url_encoded = len == 3 && !memcmp(text, "url", 3);
    } else if (at(pg, path, "IsTruncated")) {
        pg->truncated = len == 4 && !memcmp(text, "true", 4);
    } else if (at(pg, path, "NextContinuationToken")) {
        keep_text(pg, &pg->token, text, len);
    } else if (at(pg, path, "NextKeyMarker")) {
        keep_text(pg, &pg->next_key, text, len);
    } else if (at(pg, path, "NextUploadIdMarker")) {
        keep_text(pg, &pg->next_upload, text, len);
    } else if (at(pg, path, "Contents/Key") || at(pg, path, "CommonPrefixes/Prefix") ||
               at(pg, path, "Upload/Key")) {
        memcpy(pg->key, text, len);
        pg->key_len = len;
        pg->has_key = 1;
    } else if (at(pg, path, "Contents/Size")) {
        pg->size = strtoull(text, NULL, 10);
    } else if (at(pg, path, "Upload/UploadId")) {
        keep_text(pg, &pg->upload_id, text, len);
    } else if (at(pg, path, "Contents") || at(pg, path, "CommonPrefixes") ||
               at(pg, path, "Upload")) {
        if (pg->has_key)
            page_add(pg);
        free(pg->upload_id);
        pg->upload_id = NULL;
        pg->has_key = 0;
        pg->size = 0;
    }
}

/* Forget the page's entries and markers (the next page is read into it). */
static void page_clear(struct page *pg)
{
    for (size_t i = 0; i < pg->count; i++) {
        free(pg->entries[i].name);
        free(pg->entries[i].upload_id);
    }
    free(pg->upload_id);
    free(pg->token);
    free(pg->next_key);
    free(pg->next_upload);
    pg->upload_id = pg->token = pg->next_key = pg->next_upload = NULL;
    pg->count = 0;
    pg->truncated = pg->url_encoded = pg->root_seen = pg->has_key = 0;
    pg->size = 0;
}

/* The page read whole: decode its keys (and the key marker) when it says
 * they are encoded, and keep the entries below `prefix` ("PREFIX/", or ""
 * for the whole bucket) as names relative to it. */
static void page_finish(struct page *pg, const char *prefix)
{
    size_t skip = strlen(prefix), kept = 0;
    if (pg->url_encoded && pg->next_key)
        pg->next_key[url_decode(pg->next_key, strlen(pg->next_key))] = '\0';
    for (size_t i = 0; i < pg->count; i++) {
        struct entry e = pg->entries[i];
        if (pg->url_encoded)
            e.len = url_decode(e.name, e.len);
        if (e.len > skip && !memcmp(e.name, prefix, skip)) {
            memmove(e.name, e.name + skip, e.len - skip);
            e.len -= skip;
            e.name[e.len] = '\0';
            pg->entries[kept++] = e;
        } else {
            free(e.name);
            free(e.upload_id);
        }
    }
    pg->count = kept;
}

static int compare_entries(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* A listing below the prefix: what every page request needs. */
struct listing {
    struct sk_s3 *s3;
    const char *verb;     /* "list", "list the uploads under" */
    char *prefix;         /* "PREFIX/" ("" for the bucket) */
    char *encoded_prefix; /* the same, percent-encoded for the query */
    char *query;
    struct shard_buf body;
    struct xml *x;
    struct page pg;
};

static int listing_init(struct listing *l, struct sk_s3 *s3, const char *verb, const char *root,
                        struct shard_err *err)
{
    memset(l, 0, sizeof *l);
    l->s3 = s3;
    l->verb = verb;
    l->pg.root = root;
    size_t plen = strlen(s3->prefix);
    if (!(l->query = malloc(QUERY_MAX)) || !(l->x = calloc(1, sizeof *l->x)) ||
        !(l->prefix = malloc(plen + 2)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(l->prefix, plen + 2, "%s%s", s3->prefix, plen ? "/" : "");
    if (!(l->encoded_prefix = sk_s3_encode(l->prefix, 0)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

static void listing_release(struct listing *l)
{
    page_clear(&l->pg);
    free(l->pg.entries);
    free(l->prefix);
    free(l->encoded_prefix);
    free(l->query);
    free(l->x);
    shard_buf_release(&l->body);
}

/* Request the page of l->query (written in n bytes, snprintf's answer) and
 * read it whole into l->pg. */
static int listing_page(struct listing *l, int n, struct shard_err *err)
{
    struct sk_s3 *s3 = l->s3;
    if (n < 0 || n >= QUERY_MAX)
        return shard_err_set(err, SHARD_EINVAL, "the listing's prefix is too long");
    struct sk_http_request rq = {.verb = l->verb, .out = &l->body, .max = LIST_BODY_MAX};
    int rc = call(s3, NULL, l->query, s3->prefix, &rq, err);
    if (rc)
        return rc;
    page_clear(&l->pg);
    l->x->on_element = on_list_element;
    l->x->user = &l->pg;
    l->x->path[0] = '\0';
    if (xml_parse(l->body.data, l->body.len, l->x) || !l->pg.root_seen) {
        char *shown = sk_s3_name(s3, s3->prefix);
        rc = shard_err_set(err, SHARD_ENET,
                           "cannot %s '%s': the answer is not the XML of a listing", l->verb,
                           shown ? shown : s3->bucket);
        free(shown);
        return rc;
    }
    if (l->pg.nomem)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    page_finish(&l->pg, l->prefix);
    return SHARD_OK;
}

/* The listing was truncated without a marker to go on from. */
static int no_marker(const struct listing *l, const char *marker, struct shard_err *err)
{
    return shard_err_set(err, SHARD_ENET, "cannot %s 's3://%s/%s': a truncated page without %s",
                         l->verb, l->s3->bucket, l->s3->prefix, marker);
}

int sk_s3_list(struct sk_s3 *s3, int recursive, sk_s3_list_fn fn, void *user, struct shard_err *err)
{
    struct listing l;
    char *token = NULL;
    int rc = listing_init(&l, s3, "list", "ListBucketResult", err);
    while (!rc) {
        /* parameters sorted by name, as SigV4's canonical query wants them */
        int n = snprintf(l.query, QUERY_MAX, "%s%s%s%sencoding-type=url&list-type=2&prefix=%s",
                         token ? "continuation-token=" : "", token ? token : "", token ? "&" : "",
                         recursive ? "" : "delimiter=%2F&", l.encoded_prefix);
        if ((rc = listing_page(&l, n, err)))
            break;
        struct page *pg = &l.pg;
        /* objects and common prefixes come in two runs: one order for both */
        if (pg->count)
            qsort(pg->entries, pg->count, sizeof *pg->entries, compare_entries);
        for (size_t i = 0; i < pg->count && !rc; i++)
            rc = fn(user, pg->entries[i].name, pg->entries[i].len, pg->entries[i].size, err);
        if (rc || !pg->truncated)
            break;
        if (!pg->token || !pg->token[0]) {
            rc = no_marker(&l, "a continuation token", err);
            break;
        }
        free(token);
        if (!(token = sk_s3_encode(pg->token, 0)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    free(token);
    listing_release(&l);
    return rc;
}

int sk_s3_list_uploads(struct sk_s3 *s3, sk_s3_upload_fn fn, void *user, struct shard_err *err)
{
    struct listing l;
    char *key = NULL, *upload = NULL;
    int rc = listing_init(&l, s3, "list the multipart uploads under", "ListMultipartUploadsResult",
                          err);
    while (!rc) {
        /* parameters sorted by name, as SigV4's canonical query wants them */
        int n = snprintf(l.query, QUERY_MAX,
                         "encoding-type=url%s%s&prefix=%s%s%s&uploads=", key ? "&key-marker=" : "",
                         key ? key : "", l.encoded_prefix, upload ? "&upload-id-marker=" : "",
                         upload ? upload : "");
        if ((rc = listing_page(&l, n, err)))
            break;
        struct page *pg = &l.pg;
        for (size_t i = 0; i < pg->count && !rc; i++)
            rc = fn(user, pg->entries[i].name, pg->entries[i].len, pg->entries[i].upload_id, err);
        if (rc || !pg->truncated)
            break;
        if (!pg->next_key || !pg->next_key[0]) {
            rc = no_marker(&l, "a next key marker", err);
            break;
        }
        free(key);
        free(upload);
        upload = NULL;
        if (!(key = sk_s3_encode(pg->next_key, 0)) ||
            (pg->next_upload && !(upload = sk_s3_encode(pg->next_upload, 0))))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    free(key);
    free(upload);
    listing_release(&l);
    return rc;
}

/* ---- objects --------------------------------------------------------------------------- */

int sk_s3_get(struct sk_s3 *s3, const char *name, uint64_t max_bytes, struct shard_buf *buf,
              struct shard_err *err)
{
    char *key = sk_s3_key(s3, name);
    if (!key)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct sk_http_request rq = {.out = buf, .max = max_bytes};
    buf->len = 0;
    int rc = call(s3, key, NULL, NULL, &rq, err);
    free(key);
    if (rc)
        buf->len = 0;
    return rc;
}

int sk_s3_hash(struct sk_s3 *s3, const char *name, uint64_t *bytes, uint64_t *xxh3,
               struct shard_err *err)
{
    struct sk_http_request rq = {.hash = XXH3_createState()};
    char *key = sk_s3_key(s3, name);
    int rc;
    if (!rq.hash || !key) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else if (!(rc = call(s3, key, NULL, NULL, &rq, err))) {
        *bytes = rq.received;
        *xxh3 = XXH3_64bits_digest(rq.hash);
    }
    XXH3_freeState(rq.hash);
    free(key);
    return rc;
}

int sk_s3_head(struct sk_s3 *s3, const char *name, uint64_t *bytes, struct shard_err *err)
{
    char *key = sk_s3_key(s3, name);
    if (!key)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct sk_http_request rq = {.verb = "inspect", .method = "HEAD", .missing_ok = 1};
    int rc = call(s3, key, NULL, NULL, &rq, err);
    if (!rc && rq.status / 100 != 2) {
        char *shown = sk_s3_name(s3, key);
        rc = shard_err_set(err, SHARD_ENOTFOUND, "'%s' is missing", shown ? shown : name);
        free(shown);
    }
    if (!rc)
        *bytes = rq.length;
    free(key);
    return rc;
}

int sk_s3_delete(struct sk_s3 *s3, const char *name, struct shard_err *err)
{
    char *key = sk_s3_key(s3, name);
    if (!key)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct sk_http_request rq = {.verb = "delete", .method = "DELETE", .missing_ok = 1};
    int rc = call(s3, key, NULL, NULL, &rq, err);
    free(key);
    return rc;
}

int sk_s3_put_buffer(struct sk_s3 *s3, const char *name, const void *data, size_t len,
                     struct shard_err *err)
{
    char *key = sk_s3_key(s3, name);
    if (!key)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct sk_http_request rq = {.verb = "upload",
                                 .method = "PUT",
                                 .body = data ? data : "",
                                 .body_len = len};
    int rc = call(s3, key, NULL, NULL, &rq, err);
    free(key);
    return rc;
}

int sk_s3_abort(struct sk_s3 *s3, const char *name, const char *upload_id, struct shard_err *err)
{
    char *key = sk_s3_key(s3, name), *id = sk_s3_encode(upload_id, 0);
    size_t size = id ? strlen(id) + 16 : 0;
    char *query = id ? malloc(size) : NULL;
    int rc;
    if (!key || !query) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    } else {
        snprintf(query, size, "uploadId=%s", id);
        /* an abort is what a cancelled run still does */
        struct sk_http_request rq = {.verb = "abort the upload of",
                                     .method = "DELETE",
                                     .missing_ok = 1,
                                     .no_cancel = 1};
        rc = call(s3, key, query, NULL, &rq, err);
    }
    free(key);
    free(id);
    free(query);
    return rc;
}

struct upload_id_find {
    char id[TEXT_MAX + 1];
};

static void on_create_element(struct xml *x, const char *path, const char *text, size_t len)
{
    struct upload_id_find *f = x->user;
    if (!strcmp(path, "InitiateMultipartUploadResult/UploadId"))
        snprintf(f->id, sizeof f->id, "%.*s", (int)len, text);
}

struct complete_check {
    int error;
    char code[SK_S3_CODE_SIZE];
};

static void on_complete_element(struct xml *x, const char *path, const char *text, size_t len)
{
    struct complete_check *f = x->user;
    if (!strcmp(path, "Error/Code")) {
        f->error = 1;
        snprintf(f->code, sizeof f->code, "%.*s", (int)len, text);
    }
}

/* A multipart upload under way: its object, its id and its parts. */
struct upload {
    struct sk_s3 *s3;
    const char *name;       /* the object as the caller named it */
    const char *key;        /* its full key */
    char *id;               /* the upload id, encoded for a query */
    uint64_t part;          /* bytes per part (the last one may be shorter) */
    uint64_t count;         /* parts */
    char (*etag)[ETAG_MAX]; /* per part, as its PUT answered */
};

/* "cannot VERB 'OBJECT': WHY", an answer S3 should not have given. */
static int upload_error(const struct upload *up, const char *verb, struct shard_err *err,
                        const char *why, ...) __attribute__((format(printf, 4, 5)));

static int upload_error(const struct upload *up, const char *verb, struct shard_err *err,
                        const char *why, ...)
{
    char text[SHARD_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, why);
    vsnprintf(text, sizeof text, why, ap);
    va_end(ap);
    char *shown = sk_s3_name(up->s3, up->key);
    int rc = shard_err_set(err, SHARD_ENET, "cannot %s '%s': %s", verb, shown ? shown : up->name,
                           text);
    free(shown);
    return rc;
}

/* CreateMultipartUpload: the upload's id into found. */
static int start_upload(const struct upload *up, struct xml *x, struct upload_id_find *found,
                        struct shard_err *err)
{
    struct shard_buf answer = {0};
    struct sk_http_request create = {.verb = "start the upload of",
                                     .method = "POST",
                                     .body = "",
                                     .body_len = 0,
                                     .out = &answer,
                                     .max = SMALL_BODY_MAX};
    int rc = call(up->s3, up->key, "uploads=", NULL, &create, err);
    if (!rc) {
        x->on_element = on_create_element;
        x->user = found;
        x->path[0] = '\0';
        if (xml_parse(answer.data, answer.len, x) || !found->id[0])
            rc = upload_error(up, "upload", err,
                              "no upload id in the answer to CreateMultipartUpload");
    }
    shard_buf_release(&answer);
    return rc;
}

/* UploadPart for each part in order, from fd (size bytes), keeping its ETag. */
static int put_parts(struct upload *up, int fd, uint64_t size, struct shard_err *err)
{
    char query[QUERY_MAX];
    int rc = SHARD_OK;
    for (uint64_t i = 0; i < up->count && !rc; i++) {
        snprintf(query, sizeof query, "partNumber=%" PRIu64 "&uploadId=%s", i + 1, up->id);
        struct sk_http_request put = {.verb = "upload",
                                      .method = "PUT",
                                      .from_fd = 1,
                                      .fd = fd,
                                      .fd_offset = i * up->part,
                                      .fd_len = i + 1 < up->count ? up->part : size - i * up->part,
                                      .etag = up->etag[i],
                                      .etag_size = ETAG_MAX};
        rc = call(up->s3, up->key, query, NULL, &put, err);
        if (!rc && !up->etag[i][0])
            rc = upload_error(up, "upload", err, "part %" PRIu64 " came back without an ETag",
                              i + 1);
    }
    return rc;
}

/* CompleteMultipartUpload: the parts in order with their ETags. */
static int complete_upload(const struct upload *up, struct xml *x, struct shard_err *err)
{
    struct shard_buf body = {0}, answer = {0};
    char query[QUERY_MAX];
    int rc = shard_buf_append(&body, "<CompleteMultipartUpload>", 25, err);
    for (uint64_t i = 0; i < up->count && !rc; i++) {
        char item[ETAG_MAX + 128];
        int n = snprintf(item, sizeof item,
                         "<Part><PartNumber>%" PRIu64 "</PartNumber><ETag>%s</ETag></Part>", i + 1,
                         up->etag[i]);
        rc = shard_buf_append(&body, item, (size_t)n, err);
    }
    if (!rc)
        rc = shard_buf_append(&body, "</CompleteMultipartUpload>", 26, err);
    if (!rc) {
        snprintf(query, sizeof query, "uploadId=%s", up->id);
        struct sk_http_request complete = {.verb = "complete the upload of",
                                           .method = "POST",
                                           .header = "Content-Type: application/xml",
                                           .body = body.data,
                                           .body_len = body.len,
                                           .out = &answer,
                                           .max = SMALL_BODY_MAX};
        rc = call(up->s3, up->key, query, NULL, &complete, err);
    }
    if (!rc) {
        /* S3 may answer 200 and still fail: an <Error> document */
        struct complete_check check = {0};
        x->on_element = on_complete_element;
        x->user = &check;
        x->path[0] = '\0';
        if (!xml_parse(answer.data, answer.len, x) && check.error)
            rc = upload_error(up, "complete the upload of", err, "%s", check.code);
    }
    shard_buf_release(&answer);
    shard_buf_release(&body);
    return rc;
}

/* A file of size bytes in parts of s3->part_bytes (more when that would
 * make more than S3 takes); an upload that fails after it started is
 * aborted, and the hooks hear of its start and of its end. */
static int multipart(struct sk_s3 *s3, const char *name, const char *key, int fd, uint64_t size,
                     const struct sk_s3_upload_hooks *hooks, struct shard_err *err)
{
    struct upload up = {.s3 = s3, .name = name, .key = key, .part = s3->part_bytes};
    if ((size + up.part - 1) / up.part > SK_S3_MAX_PARTS)
        up.part = (size + SK_S3_MAX_PARTS - 1) / SK_S3_MAX_PARTS;
    up.count = (size + up.part - 1) / up.part;
    struct xml *x = calloc(1, sizeof *x);
    struct upload_id_find *found = calloc(1, sizeof *found);
    int rc = SHARD_OK, recorded = 0;
    if (!x || !found || !(up.etag = calloc((size_t)up.count, sizeof *up.etag))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = start_upload(&up, x, found, err)))
        goto out;
    if (hooks && hooks->started && (rc = hooks->started(hooks->user, name, found->id, err))) {
        struct shard_err ignored;
        sk_s3_abort(s3, name, found->id, &ignored);
        goto out;
    }
    recorded = 1;
    if (!(up.id = sk_s3_encode(found->id, 0)) || strlen(up.id) > QUERY_MAX - 64) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    if (!(rc = put_parts(&up, fd, size, err)))
        rc = complete_upload(&up, x, err);
out:
    if (recorded) {
        struct shard_err ignored;
        if (!rc || sk_s3_abort(s3, name, found->id, &ignored) == 0) {
            if (hooks && hooks->ended)
                hooks->ended(hooks->user, name, found->id);
        }
    }
    free(up.etag);
    free(up.id);
    free(found);
    free(x);
    return rc;
}

int sk_s3_put_file(struct sk_s3 *s3, const char *name, int fd, uint64_t size,
                   const struct sk_s3_upload_hooks *hooks, struct shard_err *err)
{
    char *key = sk_s3_key(s3, name);
    if (!key)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc;
    if (size <= s3->part_bytes) {
        struct sk_http_request rq = {.verb = "upload",
                                     .method = "PUT",
                                     .from_fd = 1,
                                     .fd = fd,
                                     .fd_offset = 0,
                                     .fd_len = size};
        rc = call(s3, key, NULL, NULL, &rq, err);
    } else {
        rc = multipart(s3, name, key, fd, size, hooks, err);
    }
    free(key);
    return rc;
}
