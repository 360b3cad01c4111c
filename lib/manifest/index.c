/* index.c - the per-sample index: one JSON object per line (see shardkit/manifest.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "manifest/manifest_internal.h"

#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "shardkit/format.h"
#include "shardkit/manifest.h"

#define LINE_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER)
#define LINE_MAX_BYTES SK_INDEX_LINE_MAX_BYTES

static int append_json(json_t *o, struct shard_buf *out, struct shard_err *err)
{
    char *text = json_dumps(o, LINE_FLAGS);
    if (!text)
        return shard_err_set(err, SHARD_ENOMEM, "cannot serialise an index line");
    int rc = shard_buf_append(out, text, strlen(text), err);
    if (!rc)
        rc = shard_buf_append(out, "\n", 1, err);
    free(text);
    return rc;
}

int shard_sample_line(const struct shard_sample *s, struct shard_buf *out, struct shard_err *err)
{
    return shard_sample_line_fields(s, NULL, out, err);
}

/* "fields": {"NAME": {"source_bytes": N, "source_xxh3": "..."}, ...} */
static int fields_to_json(const struct shard_sample *s, const struct shard_config *c, json_t **out,
                          struct shard_err *err)
{
    json_t *o = json_object();
    int bad = !o;
    for (uint32_t i = 0; i < s->field_count && !bad; i++) {
        const struct shard_field_source *f = &s->fields[i];
        if (f->field >= c->field_count || (i && f->field <= s->fields[i - 1].field)) {
            json_decref(o);
            return shard_err_set(err, SHARD_EINVAL,
                                 "a sample's fields are not in order, or "
                                 "not of its dataset");
        }
        json_t *v = json_object();
        bad |= !v || sk_jsonkey_set_uint(v, "source_bytes", f->source_bytes) ||
               sk_jsonkey_set_hex64(v, "source_xxh3", f->source_xxh3);
        bad |= json_object_set_new(o, c->fields[f->field].name, v);
    }
    if (bad) {
        json_decref(o);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    *out = o;
    return SHARD_OK;
}

/* ---- lines as shardkit writes them, without jansson ------------------------
 *
 * An index line is written and read for every sample; jansson's object
 * building and parsing were most of an incremental run's time.  The lines
 * of the common case (a key and a warning of printable ASCII, fields in
 * order) are written here byte for byte as jansson writes them
 * (JSON_COMPACT | JSON_PRESERVE_ORDER: no spaces, members in the order
 * set, '"' and '\\' escaped), and read back by a scanner that accepts that
 * exact layout only; any other line goes through jansson as before, so that
 * what is accepted, refused and said about a line does not change.  A test
 * (test_manifest) compares the two on many lines. */

/* Whether s[0..n) is printable ASCII: written with '"' and '\\' escaped. */
static int plain_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

static int put(struct shard_buf *b, const char *s, size_t n, int *bad)
{
    if (!*bad && shard_buf_append(b, s, n, NULL))
        *bad = 1;
    return *bad;
}

static void put_str(struct shard_buf *b, const char *s, int *bad)
{
    put(b, s, strlen(s), bad);
}

/* A JSON string of printable ASCII. */
static void put_string(struct shard_buf *b, const char *s, size_t n, int *bad)
{
    put(b, "\"", 1, bad);
    size_t from = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '"' || s[i] == '\\') {
            put(b, s + from, i - from, bad);
            put(b, "\\", 1, bad);
            from = i;
        }
    put(b, s + from, n - from, bad);
    put(b, "\"", 1, bad);
}

static void put_uint(struct shard_buf *b, uint64_t v, int *bad)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    put(b, text, (size_t)n, bad);
}

static void put_hex(struct shard_buf *b, uint64_t v, int *bad)
{
    char hex[17];
    shard_hex64(v, hex);
    put(b, "\"", 1, bad);
    put(b, hex, 16, bad);
    put(b, "\"", 1, bad);
}

/* The line of s as jansson writes it, when it is of the common case: 1
 * (appended to out), 0 (not of it: nothing appended), or SHARD_ENOMEM. */
static int fast_sample_line(const struct shard_sample *s, const struct shard_config *c,
                            struct shard_buf *out, struct shard_err *err)
{
    uint32_t declared = c ? c->field_count : 0;
    if (!plain_ascii(s->key, s->key_len) ||
        (s->warning && !plain_ascii(s->warning, strlen(s->warning))) || s->field_count > declared)
        return 0;
    for (uint32_t i = 0; i < s->field_count; i++)
        if (s->fields[i].field >= declared || (i && s->fields[i].field <= s->fields[i - 1].field) ||
            s->fields[i].source_bytes > INT64_MAX)
            return 0;
    if (s->source_bytes > INT64_MAX || (uint64_t)s->record > INT64_MAX)
        return 0;
    if ((s->channels && s->channels != SHARD_PIXELS_RGB) || (s->depth && s->depth != 8))
        return 0; /* its "pixels" and "depth": jansson's line */
    size_t was = out->len;
    int bad = 0;
    put_str(out, "{\"key\":", &bad);
    put_string(out, s->key, s->key_len, &bad);
    put_str(out, ",\"label\":", &bad);
    if (s->label >= 0)
        put_uint(out, (uint64_t)s->label, &bad);
    else
        put_str(out, "null", &bad);
    put_str(out, ",\"shard\":", &bad);
    put_uint(out, s->shard, &bad);
    put_str(out, ",\"record\":", &bad);
    put_uint(out, s->record, &bad);
    put_str(out, ",\"width\":", &bad);
    put_uint(out, s->width, &bad);
    put_str(out, ",\"height\":", &bad);
    put_uint(out, s->height, &bad);
    put_str(out, ",\"source_bytes\":", &bad);
    put_uint(out, s->source_bytes, &bad);
    put_str(out, ",\"source_xxh3\":", &bad);
    put_hex(out, s->source_xxh3, &bad);
    if (s->warning) {
        put_str(out, ",\"warning\":", &bad);
        put_string(out, s->warning, strlen(s->warning), &bad);
    }
    if (declared) {
        put_str(out, ",\"fields\":{", &bad);
        for (uint32_t i = 0; i < s->field_count; i++) {
            const struct shard_field_source *f = &s->fields[i];
            if (i)
                put_str(out, ",", &bad);
            put_string(out, c->fields[f->field].name, strlen(c->fields[f->field].name), &bad);
            put_str(out, ":{\"source_bytes\":", &bad);
            put_uint(out, f->source_bytes, &bad);
            put_str(out, ",\"source_xxh3\":", &bad);
            put_hex(out, f->source_xxh3, &bad);
            put_str(out, "}", &bad);
        }
        put_str(out, "}", &bad);
    }
    put_str(out, "}\n", &bad);
    if (bad) {
        out->len = was;
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    return 1;
}

int shard_sample_line_fields(const struct shard_sample *s, const struct shard_config *c,
                             struct shard_buf *out, struct shard_err *err)
{
    int fast = fast_sample_line(s, c, out, err);
    if (fast)
        return fast < 0 ? fast : SHARD_OK;
    json_t *o = json_object();
    if (!o)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = sk_jsonkey_set(o, s->key, s->key_len, err);
    if (!rc) {
        int bad = json_object_set_new(o, "label",
                                      s->label >= 0 ? json_integer(s->label) : json_null());
        bad |= sk_jsonkey_set_uint(o, "shard", s->shard);
        bad |= sk_jsonkey_set_uint(o, "record", s->record);
        bad |= sk_jsonkey_set_uint(o, "width", s->width);
        bad |= sk_jsonkey_set_uint(o, "height", s->height);
        /* only when not 8-bit RGB: other lines stay as they always were */
        if (s->channels && s->channels != SHARD_PIXELS_RGB)
            bad |= json_object_set_new(o, "pixels", json_string(shard_pixels_name(s->channels)));
        if (s->depth && s->depth != 8)
            bad |= sk_jsonkey_set_uint(o, "depth", s->depth);
        bad |= sk_jsonkey_set_uint(o, "source_bytes", s->source_bytes);
        bad |= sk_jsonkey_set_hex64(o, "source_xxh3", s->source_xxh3);
        /* only when there is one: lines without stay as they always were */
        if (s->warning)
            bad |= json_object_set_new(o, "warning", json_string(s->warning));
        /* a dataset with fields: every sample's line says which it has */
        json_t *fields = NULL;
        if (!bad && c && c->field_count) {
            if (!(rc = fields_to_json(s, c, &fields, err)))
                bad |= json_object_set_new(o, "fields", fields);
        } else if (!bad && s->field_count) {
            rc = shard_err_set(err, SHARD_EINVAL, "a sample has fields in a dataset without");
        }
        if (!rc)
            rc = bad ? shard_err_set(err, SHARD_ENOMEM, "out of memory") : append_json(o, out, err);
    }
    json_decref(o);
    return rc;
}

int shard_reject_line(const struct shard_reject *r, struct shard_buf *out, struct shard_err *err)
{
    json_t *o = json_object();
    if (!o)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = sk_jsonkey_set(o, r->key, r->key_len, err);
    if (!rc) {
        int bad = json_object_set_new(o, "reason", json_string(r->reason ? r->reason : ""));
        if (r->has_source) {
            bad |= sk_jsonkey_set_uint(o, "source_bytes", r->source_bytes);
            bad |= sk_jsonkey_set_hex64(o, "source_xxh3", r->source_xxh3);
        }
        rc = bad ? shard_err_set(err, SHARD_ENOMEM, "out of memory") : append_json(o, out, err);
    }
    json_decref(o);
    return rc;
}

void shard_sample_release(struct shard_sample *s)
{
    if (!s)
        return;
    free(s->key);
    free(s->warning);
    free(s->fields);
    memset(s, 0, sizeof *s);
}

static int compare_sources(const void *pa, const void *pb)
{
    const struct shard_field_source *a = pa, *b = pb;
    return a->field < b->field ? -1 : a->field > b->field;
}

/* "fields" of a sample's line, in a dataset of config c (NULL: none). */
static int parse_fields(const json_t *o, const struct shard_config *c, struct shard_sample *s,
                        struct shard_err *err)
{
    const json_t *fields = json_object_get(o, "fields");
    int declared = c && c->field_count;
    if (!fields && !declared)
        return SHARD_OK;
    if (!declared)
        return shard_err_set(err, SHARD_ECORRUPT, "\"fields\" in a dataset without fields");
    if (!json_is_object(fields))
        return shard_err_set(err, SHARD_ECORRUPT, "\"fields\" is missing or not an object");
    size_t n = json_object_size(fields);
    if (n > c->field_count)
        return shard_err_set(err, SHARD_ECORRUPT, "\"fields\" names more fields than declared");
    s->fields = calloc(n ? n : 1, sizeof *s->fields);
    if (!s->fields)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)fields, name, v) {
        int32_t f = shard_config_field(c, name);
        if (f < 0)
            return shard_err_set(err, SHARD_ECORRUPT, "field '%s' is not declared", name);
        struct shard_field_source *src = &s->fields[s->field_count++];
        src->field = (uint32_t)f;
        int rc;
        if (!json_is_object(v) ||
            (rc = sk_jsonkey_uint(v, "source_bytes", &src->source_bytes, err)) ||
            (rc = sk_jsonkey_hex64(v, "source_xxh3", &src->source_xxh3, err)))
            return shard_err_set(err, SHARD_ECORRUPT, "field '%s': no source identity", name);
    }
    qsort(s->fields, s->field_count, sizeof *s->fields, compare_sources);
    return SHARD_OK;
}

static int parse_sample(const json_t *o, const struct shard_config *c, struct shard_sample *s,
                        struct shard_err *err)
{
    uint64_t shard, width, height;
    const json_t *label = json_object_get(o, "label");
    if (json_is_null(label))
        s->label = SHARD_NO_LABEL;
    else if (json_is_integer(label) && json_integer_value(label) >= 0 &&
             json_integer_value(label) <= INT32_MAX)
        s->label = (int32_t)json_integer_value(label);
    else
        return shard_err_set(err, SHARD_ECORRUPT, "\"label\" is not null or a label number");
    if (sk_jsonkey_uint(o, "shard", &shard, err) || sk_jsonkey_uint(o, "record", &s->record, err) ||
        sk_jsonkey_uint(o, "width", &width, err) || sk_jsonkey_uint(o, "height", &height, err) ||
        sk_jsonkey_uint(o, "source_bytes", &s->source_bytes, err) ||
        sk_jsonkey_hex64(o, "source_xxh3", &s->source_xxh3, err))
        return SHARD_ECORRUPT;
    if (shard > UINT32_MAX || width == 0 || width > UINT32_MAX || height == 0 ||
        height > UINT32_MAX)
        return shard_err_set(err, SHARD_ECORRUPT, "shard, width or height out of range");
    s->shard = (uint32_t)shard;
    s->width = (uint32_t)width;
    s->height = (uint32_t)height;
    const json_t *pixels = json_object_get(o, "pixels"), *depth = json_object_get(o, "depth");
    s->channels = SHARD_PIXELS_RGB;
    s->depth = 8;
    if (pixels &&
        (!json_is_string(pixels) || shard_pixels_parse(json_string_value(pixels), &s->channels) ||
         s->channels == SHARD_PIXELS_AUTO || s->channels == SHARD_PIXELS_RGB))
        return shard_err_set(err, SHARD_ECORRUPT, "\"pixels\" is not gray, gray-alpha or rgba");
    if (depth && (!json_is_integer(depth) || json_integer_value(depth) != 16))
        return shard_err_set(err, SHARD_ECORRUPT, "\"depth\" is not 16");
    if (depth)
        s->depth = 16;
    const json_t *warning = json_object_get(o, "warning");
    if (warning) {
        if (!json_is_string(warning) || json_string_length(warning) == 0)
            return shard_err_set(err, SHARD_ECORRUPT, "\"warning\" is not a message");
        if (!(s->warning = strdup(json_string_value(warning))))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    int rc = parse_fields(o, c, s, err);
    return rc ? rc : sk_jsonkey_get(o, SHARD_KEY_MAX, &s->key, &s->key_len, err);
}

static int parse_reject(const json_t *o, struct shard_reject *r, struct shard_err *err)
{
    const json_t *reason = json_object_get(o, "reason");
    if (!json_is_string(reason))
        return shard_err_set(err, SHARD_ECORRUPT, "\"reason\" is not a string");
    if (json_object_get(o, "source_xxh3")) {
        r->has_source = 1;
        if (sk_jsonkey_uint(o, "source_bytes", &r->source_bytes, err) ||
            sk_jsonkey_hex64(o, "source_xxh3", &r->source_xxh3, err))
            return SHARD_ECORRUPT;
    }
    if (!(r->reason = strdup(json_string_value(reason))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return sk_jsonkey_get(o, 0, &r->key, &r->key_len, err);
}

int shard_line_parse(const char *line, size_t len, struct shard_sample *s, struct shard_reject *r,
                     struct shard_err *err)
{
    return shard_line_parse_fields(line, len, NULL, s, r, err);
}

/* The scanner of lines as fast_sample_line writes them. */
struct scan {
    const char *p, *end;
};

static int lit(struct scan *sc, const char *text)
{
    size_t n = strlen(text);
    if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, text, n))
        return 0;
    sc->p += n;
    return 1;
}

/* A number as jansson writes a non-negative integer: no sign, no leading
 * zero, at most INT64_MAX. */
static int number(struct scan *sc, uint64_t *v)
{
    const char *q = sc->p;
    uint64_t x = 0;
    while (q < sc->end && *q >= '0' && *q <= '9') {
        if (x > (uint64_t)(INT64_MAX - (*q - '0')) / 10)
            return 0;
        x = x * 10 + (uint64_t)(*q - '0');
        q++;
    }
    if (q == sc->p || (*sc->p == '0' && q - sc->p > 1))
        return 0;
    sc->p = q;
    *v = x;
    return 1;
}

/* A string of printable ASCII without escapes: its bytes. */
static int plain_string(struct scan *sc, const char **s, size_t *n)
{
    if (!lit(sc, "\""))
        return 0;
    const char *q = sc->p;
    while (q < sc->end && *q != '"') {
        if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e || *q == '\\')
            return 0;
        q++;
    }
    if (q == sc->end)
        return 0;
    *s = sc->p;
    *n = (size_t)(q - sc->p);
    sc->p = q + 1;
    return 1;
}

/* 16 lower-case hex digits in quotes. */
static int hex_string(struct scan *sc, uint64_t *v)
{
    const char *h;
    size_t n;
    char text[17];
    if (!plain_string(sc, &h, &n) || n != 16)
        return 0;
    for (size_t i = 0; i < 16; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return 0;
    memcpy(text, h, 16);
    text[16] = '\0';
    return shard_hex64_parse(text, v) == 0;
}

/* A sample's line of exactly fast_sample_line's layout into *s: 1, 0 when
 * the line is not of it (then nothing is kept: parse it with jansson), or
 * SHARD_ENOMEM. */
static int fast_parse_sample(const char *line, size_t len, const struct shard_config *c,
                             struct shard_sample *s, struct shard_err *err)
{
    struct scan sc = {line, line + len};
    const char *key, *warning = NULL, *name;
    size_t key_len, warning_len = 0, name_len;
    uint64_t label = 0, shard, record, width, height, bytes, xxh3;
    int labeled;
    uint32_t declared = c ? c->field_count : 0;
    struct shard_field_source fields[SHARD_FIELDS_MAX];
    uint32_t count = 0;
    if (!lit(&sc, "{\"key\":") || !plain_string(&sc, &key, &key_len) || key_len == 0 ||
        key_len > SHARD_KEY_MAX || !lit(&sc, ",\"label\":"))
        return 0;
    labeled = !lit(&sc, "null");
    if ((labeled && (!number(&sc, &label) || label > INT32_MAX)) || !lit(&sc, ",\"shard\":") ||
        !number(&sc, &shard) || shard > UINT32_MAX || !lit(&sc, ",\"record\":") ||
        !number(&sc, &record) || !lit(&sc, ",\"width\":") || !number(&sc, &width) || !width ||
        width > UINT32_MAX || !lit(&sc, ",\"height\":") || !number(&sc, &height) || !height ||
        height > UINT32_MAX || !lit(&sc, ",\"source_bytes\":") || !number(&sc, &bytes) ||
        !lit(&sc, ",\"source_xxh3\":") || !hex_string(&sc, &xxh3))
        return 0;
    if (lit(&sc, ",\"warning\":") && (!plain_string(&sc, &warning, &warning_len) || !warning_len))
        return 0;
    if (declared) {
        if (!lit(&sc, ",\"fields\":{"))
            return 0;
        while (!lit(&sc, "}")) {
            if ((count && !lit(&sc, ",")) || count == declared ||
                !plain_string(&sc, &name, &name_len) || !lit(&sc, ":{\"source_bytes\":") ||
                !number(&sc, &fields[count].source_bytes) || !lit(&sc, ",\"source_xxh3\":") ||
                !hex_string(&sc, &fields[count].source_xxh3) || !lit(&sc, "}"))
                return 0;
            uint32_t f = 0;
            while (f < declared && (strlen(c->fields[f].name) != name_len ||
                                    memcmp(c->fields[f].name, name, name_len)))
                f++;
            if (f == declared || (count && f <= fields[count - 1].field))
                return 0;
            fields[count++].field = f;
        }
    }
    if (!lit(&sc, "}") || sc.p != sc.end)
        return 0;
    s->key = malloc(key_len + 1);
    s->warning = warning ? strndup(warning, warning_len) : NULL;
    s->fields = count ? malloc(count * sizeof *s->fields) : NULL;
    if (!s->key || (warning && !s->warning) || (count && !s->fields)) {
        shard_sample_release(s);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    memcpy(s->key, key, key_len);
    s->key[key_len] = '\0';
    s->key_len = key_len;
    s->label = labeled ? (int32_t)label : SHARD_NO_LABEL;
    s->shard = (uint32_t)shard;
    s->record = record;
    s->width = (uint32_t)width;
    s->height = (uint32_t)height;
    s->source_bytes = bytes;
    s->source_xxh3 = xxh3;
    s->channels = SHARD_PIXELS_RGB; /* a line without "pixels" and "depth" */
    s->depth = 8;
    if (count)
        memcpy(s->fields, fields, count * sizeof *s->fields);
    s->field_count = count;
    return 1;
}

int shard_line_parse_fields(const char *line, size_t len, const struct shard_config *c,
                            struct shard_sample *s, struct shard_reject *r, struct shard_err *err)
{
    memset(s, 0, sizeof *s);
    memset(r, 0, sizeof *r);
    int fast = fast_parse_sample(line, len, c, s, err);
    if (fast)
        return fast;
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return shard_err_set(err, SHARD_ECORRUPT, "not a JSON object: %s",
                             o ? "wrong type" : jerr.text);
    }
    int rc;
    if (json_object_get(o, "reason")) {
        rc = parse_reject(o, r, err);
        if (rc)
            shard_reject_release(r);
        else
            rc = 2;
    } else {
        rc = parse_sample(o, c, s, err);
        if (rc)
            shard_sample_release(s);
        else
            rc = 1;
    }
    json_decref(o);
    return rc;
}

struct shard_index_reader {
    /* a chain (sk_index_reader_open_chain): the file being read, in `sub` */
    struct shard_index_reader *sub;
    const struct shard_manifest *m;
    sk_index_open_fn open_file;
    void *open_ctx;
    uint32_t file;         /* sub's number */
    uint32_t shard_offset; /* shards of the files before it */
    uint64_t *digests;     /* per file: bytes, xxh3 (once read to its end) */
    unsigned char *done;   /* per file: read to its end */
    int at_end;            /* a single file read to its end */
    void *owned_ctx;       /* freed with the reader */

    FILE *f;
    char *path;
    struct shard_buf owned; /* the bytes f reads, for a reader over memory */
    char *line;
    size_t line_cap;
    uint64_t line_no;
    uint64_t bytes;
    XXH3_state_t *hash;
    struct shard_sample current;
    const struct shard_config *config; /* fields are parsed against it; may be NULL */
};

void shard_index_reader_set_config(struct shard_index_reader *r, const struct shard_config *c)
{
    r->config = c;
    if (r->sub)
        shard_index_reader_set_config(r->sub, c);
}

int shard_index_reader_open(struct shard_index_reader **out, const char *path,
                            struct shard_err *err)
{
    *out = NULL;
    struct shard_index_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path)) || !(r->hash = XXH3_createState())) {
        shard_index_reader_close(r);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    XXH3_64bits_reset(r->hash);
    int fd, rc = sk_fs_open_read(AT_FDCWD, path, &fd, NULL, err);
    if (!rc && !(r->f = fdopen(fd, "rb"))) {
        rc = shard_err_errno(err, SHARD_ENOMEM, errno, "out of memory");
        close(fd);
    }
    if (rc) {
        shard_index_reader_close(r);
        return shard_err_prefix(err, rc, "cannot open '%s'", path);
    }
    *out = r;
    return SHARD_OK;
}

static uint64_t index_reader_xxh3(const struct shard_index_reader *r);

/* A chain's file `sub` is at its end: note its digest, open the next one.
 * 1 when there is a next one, 0 when that was the last. */
static int chain_advance(struct shard_index_reader *r, struct shard_err *err)
{
    r->digests[2 * r->file] = shard_index_reader_bytes(r->sub);
    r->digests[2 * r->file + 1] = index_reader_xxh3(r->sub);
    r->done[r->file] = 1;
    if (r->file + 1 >= r->m->index_count)
        return 0;
    shard_index_reader_close(r->sub);
    r->sub = NULL;
    r->shard_offset += r->m->indexes[r->file].shards;
    r->file++;
    int rc = r->open_file(r->open_ctx, r->file, &r->sub, err);
    if (rc)
        return rc;
    shard_index_reader_set_config(r->sub, r->config);
    return 1;
}

int sk_index_reader_open_chain(struct shard_index_reader **out, const struct shard_manifest *m,
                               sk_index_open_fn open_file, void *ctx, struct shard_err *err)
{
    *out = NULL;
    uint32_t n = m->index_count ? m->index_count : 1;
    struct shard_index_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->digests = calloc(2 * (size_t)n, sizeof *r->digests)) ||
        !(r->done = calloc(n, 1))) {
        shard_index_reader_close(r);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    r->m = m;
    r->open_file = open_file;
    r->open_ctx = ctx;
    int rc = open_file(ctx, 0, &r->sub, err);
    if (rc) {
        shard_index_reader_close(r);
        return rc;
    }
    *out = r;
    return SHARD_OK;
}

int sk_index_reader_file_digest(const struct shard_index_reader *r, uint32_t i, uint64_t *bytes,
                                uint64_t *xxh3)
{
    if (!r->sub && !r->digests) { /* a single file */
        if (i != 0 || !r->at_end)
            return 0;
        *bytes = r->bytes;
        *xxh3 = XXH3_64bits_digest(r->hash);
        return 1;
    }
    if (i >= (r->m->index_count ? r->m->index_count : 1) || !r->done[i])
        return 0;
    *bytes = r->digests[2 * i];
    *xxh3 = r->digests[2 * i + 1];
    return 1;
}

uint32_t sk_index_reader_file(const struct shard_index_reader *r)
{
    return r->file;
}

int sk_index_reader_next_line(struct shard_index_reader *r, const char **line, size_t *len,
                              struct shard_err *err)
{
    if (r->sub) {
        for (;;) {
            int got = sk_index_reader_next_line(r->sub, line, len, err);
            if (got != 0)
                return got;
            if ((got = chain_advance(r, err)) <= 0)
                return got;
        }
    }
    /* read at most one line's worth: a hostile index cannot make us
     * allocate more than LINE_MAX_BYTES for one line */
    if (!r->line) {
        r->line_cap = LINE_MAX_BYTES + 2;
        if (!(r->line = malloc(r->line_cap)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    errno = 0;
    if (!fgets(r->line, (int)r->line_cap, r->f)) {
        if (ferror(r->f))
            return shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s'", r->path);
        r->at_end = 1;
        return 0;
    }
    size_t n = strlen(r->line); /* a NUL inside the line shortens it: then it is corrupt */
    r->line_no++;
    XXH3_64bits_update(r->hash, r->line, n);
    r->bytes += (uint64_t)n;
    if (n == 0 || r->line[n - 1] != '\n' || n > LINE_MAX_BYTES)
        return shard_err_set(err, SHARD_ECORRUPT, "'%s' line %llu is cut short or too long",
                             r->path, (unsigned long long)r->line_no);
    *line = r->line;
    *len = n;
    return 1;
}

int shard_index_reader_next(struct shard_index_reader *r, struct shard_sample *s,
                            struct shard_err *err)
{
    if (r->sub) {
        for (;;) {
            int got = shard_index_reader_next(r->sub, s, err);
            if (got > 0) {
                s->shard += r->shard_offset;
                return got;
            }
            if (got < 0 || (got = chain_advance(r, err)) <= 0)
                return got;
        }
    }
    shard_sample_release(&r->current);
    memset(s, 0, sizeof *s);
    const char *line;
    size_t n;
    int got = sk_index_reader_next_line(r, &line, &n, err);
    if (got <= 0)
        return got;
    struct shard_reject rej;
    int rc = shard_line_parse_fields(line, n - 1, r->config, &r->current, &rej, err);
    if (rc == 2) {
        shard_reject_release(&rej);
        return shard_err_set(err, SHARD_ECORRUPT, "'%s' line %llu is not a sample", r->path,
                             (unsigned long long)r->line_no);
    }
    if (rc < 0)
        return shard_err_prefix(err, rc, "'%s' line %llu", r->path, (unsigned long long)r->line_no);
    *s = r->current;
    return 1;
}

uint64_t shard_index_reader_bytes(const struct shard_index_reader *r)
{
    return r->sub ? shard_index_reader_bytes(r->sub) : r->bytes;
}

/* XXH3-64 of the bytes read so far (complete after next() returned 0). */
static uint64_t index_reader_xxh3(const struct shard_index_reader *r)
{
    return r->sub ? index_reader_xxh3(r->sub) : XXH3_64bits_digest(r->hash);
}

void shard_index_reader_close(struct shard_index_reader *r)
{
    if (!r)
        return;
    shard_index_reader_close(r->sub);
    free(r->digests);
    free(r->done);
    free(r->owned_ctx);
    if (r->f)
        fclose(r->f);
    shard_sample_release(&r->current);
    XXH3_freeState(r->hash);
    shard_buf_release(&r->owned);
    free(r->line);
    free(r->path);
    free(r);
}

int sk_index_reader_open_buffer(struct shard_index_reader **out, const char *name,
                                struct shard_buf *buf, struct shard_err *err)
{
    *out = NULL;
    struct shard_index_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name)) || !(r->hash = XXH3_createState())) {
        shard_index_reader_close(r);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    XXH3_64bits_reset(r->hash);
    r->owned = *buf;
    memset(buf, 0, sizeof *buf);
    /* fmemopen of 0 bytes fails: an empty index reads as an empty file */
    static char empty[1];
    r->f = r->owned.len ? fmemopen(r->owned.data, r->owned.len, "r") : fmemopen(empty, 1, "r");
    if (r->f && !r->owned.len)
        fgetc(r->f); /* at the end */
    if (!r->f) {
        int e = errno;
        shard_index_reader_close(r);
        return shard_err_errno(err, SHARD_ENOMEM, e, "cannot read '%s'", name);
    }
    *out = r;
    return SHARD_OK;
}

/* ---- a local dataset's index --------------------------------------------------- */

struct local_index {
    const char *dir;
    const struct shard_manifest *m;
};

static int open_local_file(void *ctx, uint32_t i, struct shard_index_reader **out,
                           struct shard_err *err)
{
    const struct local_index *l = ctx;
    const char *name = l->m->index_count ? l->m->indexes[i].file : l->m->index_file;
    char *path = sk_fs_join(l->dir, name);
    int rc = path ? shard_index_reader_open(out, path, err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    free(path);
    return rc;
}

int sk_manifest_index_open(const char *dir, const struct shard_manifest *m,
                           struct shard_index_reader **out, struct shard_err *err)
{
    struct local_index l = {dir, m};
    if (m->index_count <= 1)
        return open_local_file(&l, 0, out, err);
    /* the chain keeps the context: give it one that lives as long */
    struct local_index *kept = malloc(sizeof *kept);
    if (!kept)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    *kept = l;
    int rc = sk_index_reader_open_chain(out, m, open_local_file, kept, err);
    if (rc)
        free(kept);
    else
        (*out)->owned_ctx = kept;
    return rc;
}

int sk_manifest_index_check(const struct shard_manifest *m, const struct shard_index_reader *r,
                            struct shard_err *err)
{
    uint32_t n = m->index_count ? m->index_count : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t bytes, h;
        const char *name = m->index_count ? m->indexes[i].file : m->index_file;
        uint64_t want_bytes = m->index_count ? m->indexes[i].bytes : m->index_bytes;
        uint64_t want_xxh3 = m->index_count ? m->indexes[i].xxh3 : m->index_xxh3;
        if (!sk_index_reader_file_digest(r, i, &bytes, &h) || bytes != want_bytes || h != want_xxh3)
            return shard_err_set(err, SHARD_ECORRUPT,
                                 "'%s' is not the index file its manifest lists (bytes or xxh3 "
                                 "differ)",
                                 name);
    }
    return SHARD_OK;
}
