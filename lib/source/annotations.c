/* annotations.c - an annotation table: per-sample values keyed by the
 * sample's key, in JSON Lines or CSV (see source_internal.h and
 * manifests/FORMAT.md, "Where values come from").
 *
 * The table is read once.  Its keys go into a shard_keylist (sorted, like
 * the label file's), the values of the wanted columns into one arena as the
 * bytes a field is parsed from; lookups are then a binary search with no
 * locking, so the conversion's threads share the table. */
#include <csv.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "shardx/shardx.h"
#include "util/grow.h"
#include "source/source_internal.h"
#include "shardkit/format.h"

#define ABSENT UINT32_MAX
#define KEY_COLUMN "key"

struct cell {
    uint64_t off; /* in values */
    uint32_t len; /* ABSENT: no value */
};

struct sk_annotations {
    const struct sk_annotation_column *cols; /* the caller's, valid while the table is */
    const char *key_column;                  /* KEY_COLUMN or the caller's */
    uint32_t ncols;
    char *path;
    char *description;
    struct shard_keylist keys; /* one per row, sorted once loaded */
    uint64_t *row_line;        /* per row: its line in the file (for messages) */
    struct cell *cells;        /* rows x ncols, in key order once loaded */
    size_t rows, cap;
    struct shard_buf values;
};

uint32_t sk_annotation_column_want(struct sk_annotation_column *cols, uint32_t *ncols,
                                   const char *name, int json)
{
    for (uint32_t i = 0; i < *ncols; i++)
        if (!strcmp(cols[i].name, name) && cols[i].json == json)
            return i;
    cols[*ncols] = (struct sk_annotation_column){name, json};
    return (*ncols)++;
}

void sk_annotations_free(struct sk_annotations *a)
{
    if (!a)
        return;
    free(a->path);
    free(a->description);
    shard_keylist_release(&a->keys);
    free(a->row_line);
    free(a->cells);
    shard_buf_release(&a->values);
    free(a);
}

/* Make room for one more row; its cells start absent. */
static int grow(struct sk_annotations *a, struct shard_err *err)
{
    if (a->rows == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 1024;
        struct cell *cells = realloc(a->cells, cap * (a->ncols ? a->ncols : 1) * sizeof *cells);
        if (cells)
            a->cells = cells;
        uint64_t *lines = cells ? realloc(a->row_line, cap * sizeof *lines) : NULL;
        if (!lines)
            return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %zu annotation rows", cap);
        a->row_line = lines;
        a->cap = cap;
    }
    for (uint32_t c = 0; c < a->ncols; c++)
        a->cells[a->rows * a->ncols + c] = (struct cell){0, ABSENT};
    return SHARD_OK;
}

static int set_cell(struct sk_annotations *a, uint32_t col, const void *p, size_t len,
                    struct shard_err *err)
{
    if (len >= ABSENT)
        return shard_err_set(err, SHARD_ELIMIT, "annotation file '%s': a value of %zu bytes",
                             a->path, len);
    struct cell *c = &a->cells[a->rows * a->ncols + col];
    c->off = a->values.len;
    c->len = (uint32_t)len;
    return shard_buf_append(&a->values, p, len, err);
}

static int add_key(struct sk_annotations *a, const char *key, size_t len, uint64_t line,
                   struct shard_err *err)
{
    if (len == 0)
        return shard_err_set(err, SHARD_EINVAL, "annotation file '%s' line %llu: empty key",
                             a->path, (unsigned long long)line);
    a->row_line[a->rows] = line;
    return shard_keylist_add(&a->keys, key, len, err);
}

/* ---- JSON Lines -------------------------------------------------------------- */

static int jsonl_row(struct sk_annotations *a, const char *line, size_t len, uint64_t no,
                     struct shard_err *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return shard_err_set(err, SHARD_EINVAL, "annotation file '%s' line %llu: %s", a->path,
                             (unsigned long long)no, o ? "not a JSON object" : jerr.text);
    }
    int rc = grow(a, err);
    char *key = NULL;
    size_t key_len = 0;
    /* the two spellings of one key: which one is meant cannot be told */
    if (!rc && json_object_get(o, KEY_COLUMN) && json_object_get(o, KEY_COLUMN "_hex"))
        rc = shard_err_set(err, SHARD_EINVAL,
                           "annotation file '%s' line %llu: both \"key\" and \"key_hex\" "
                           "(a row names its sample once)",
                           a->path, (unsigned long long)no);
    const json_t *named = json_object_get(o, a->key_column);
    if (!rc && strcmp(a->key_column, KEY_COLUMN)) { /* another column: its string */
        if (!json_is_string(named) || json_string_length(named) > SHARD_KEY_MAX ||
            !(key = strndup(json_string_value(named), json_string_length(named))))
            rc = json_is_string(named) && json_string_length(named) <= SHARD_KEY_MAX
                     ? shard_err_set(err, SHARD_ENOMEM, "out of memory")
                     : shard_err_set(err, SHARD_EINVAL,
                                     "annotation file '%s' line %llu: no \"%s\" (the key "
                                     "column: a string naming the sample, as its path below SRC)",
                                     a->path, (unsigned long long)no, a->key_column);
        key_len = key ? json_string_length(named) : 0;
    } else if (!rc && sk_jsonkey_get(o, SHARD_KEY_MAX, &key, &key_len, NULL) != 0) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "annotation file '%s' line %llu: no \"key\" (a "
                           "string naming the sample, as its path below SRC%s)",
                           a->path, (unsigned long long)no,
                           json_object_get(o, SHARD_METADATA_KEY)
                               ? "; --key-column file_name reads a Hugging Face metadata table"
                               : "");
    }
    for (uint32_t c = 0; !rc && c < a->ncols; c++) {
        const json_t *v = json_object_get(o, a->cols[c].name);
        if (!v || json_is_null(v))
            continue;
        if (json_is_string(v) && !a->cols[c].json) {
            rc = set_cell(a, c, json_string_value(v), json_string_length(v), err);
            continue;
        }
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        rc = text ? set_cell(a, c, text, strlen(text), err)
                  : shard_err_set(err, SHARD_ENOMEM, "out of memory");
        free(text);
    }
    if (!rc)
        rc = add_key(a, key, key_len, no, err);
    if (!rc)
        a->rows++;
    free(key);
    json_decref(o);
    return rc;
}

static int load_jsonl(struct sk_annotations *a, const char *text, size_t len, struct shard_err *err)
{
    uint64_t no = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        no++;
        size_t blank = 0;
        while (blank < n && strchr(" \t\r", text[pos + blank]))
            blank++;
        if (blank < n) { /* blank lines are allowed between rows */
            int rc = jsonl_row(a, text + pos, n, no, err);
            if (rc)
                return rc;
        }
        pos += n + (nl ? 1 : 0);
    }
    return SHARD_OK;
}

/* ---- CSV ----------------------------------------------------------------------- */

struct csv_state {
    struct sk_annotations *a;
    struct shard_err *err;
    int rc;
    uint64_t line, row_line;
    size_t field;       /* of the current row */
    int header;         /* 1 while reading the header row */
    size_t columns;     /* fields in the header */
    size_t key_field;   /* the header's "key" */
    int64_t *field_col; /* per header field: the wanted column it is, or -1 */
    size_t field_cap;
    struct shard_keylist names; /* the header's fields */
    struct shard_buf key;
    uint32_t *col_seen; /* per wanted column: found in the header */
};

static size_t count_newlines(const char *p, size_t n)
{
    size_t c = 0;
    for (const char *end = p + n; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        c++;
    return c;
}

static void csv_on_field(void *field, size_t len, void *data)
{
    struct csv_state *s = data;
    if (s->rc)
        return;
    const char *p = field ? field : "";
    size_t i = s->field++;
    if (i == 0) {
        s->row_line = s->line - count_newlines(p, len);
        if (!s->header && (s->rc = grow(s->a, s->err)))
            return;
        s->key.len = 0;
    }
    if (s->header) {
        if (SK_GROW(s->field_col, s->field_cap, i + 1, 16)) {
            s->rc = shard_err_set(s->err, SHARD_ENOMEM, "out of memory");
            return;
        }
        s->field_col[i] = -1;
        /* a column named twice (the key's too): which cell is meant cannot be told */
        for (size_t k = 0; k < s->names.count; k++) {
            size_t n;
            const char *name = shard_keylist_get(&s->names, k, &n);
            if (n == len && !memcmp(name, p, len)) {
                char shown[SHARDX_QUOTE_SIZE];
                s->rc = shard_err_set(s->err, SHARD_EINVAL,
                                      "annotation file '%s': column '%s' is in the header twice",
                                      s->a->path, shardx_quote(p, len, shown, sizeof shown));
                return;
            }
        }
        if ((s->rc = shard_keylist_add(&s->names, p, len, s->err)))
            return;
        if (len == strlen(s->a->key_column) && !memcmp(p, s->a->key_column, len))
            s->key_field = i;
        for (uint32_t c = 0; c < s->a->ncols; c++)
            if (strlen(s->a->cols[c].name) == len && !memcmp(p, s->a->cols[c].name, len)) {
                s->field_col[i] = c;
                s->col_seen[c] = 1;
            }
        return;
    }
    if (i >= s->columns)
        return; /* reported at the end of the row */
    if (i == s->key_field)
        s->rc = shard_buf_append(&s->key, p, len, s->err);
    /* an empty cell is absent: CSV cannot tell it from an empty string */
    for (uint32_t c = 0; !s->rc && len && c < s->a->ncols; c++)
        if (s->field_col[i] == (int64_t)c)
            s->rc = set_cell(s->a, c, p, len, s->err);
}

static void csv_on_row(int terminator, void *data)
{
    struct csv_state *s = data;
    size_t fields = s->field;
    s->field = 0;
    if (s->rc)
        return;
    if (s->header) {
        s->header = 0;
        s->columns = fields;
        if (s->key_field == SIZE_MAX) {
            s->rc = shard_err_set(s->err, SHARD_EINVAL,
                                  "annotation file '%s': the header "
                                  "(line 1) has no column \"%s\"",
                                  s->a->path, s->a->key_column);
            return;
        }
        for (uint32_t c = 0; c < s->a->ncols; c++)
            if (!s->col_seen[c]) {
                s->rc = shard_err_set(s->err, SHARD_EINVAL,
                                      "annotation file '%s': the header "
                                      "(line 1) has no column '%s'",
                                      s->a->path, s->a->cols[c].name);
                return;
            }
        return;
    }
    if (fields != s->columns) {
        s->rc = shard_err_set(s->err, SHARD_EINVAL,
                              "annotation file '%s' line %llu: %zu fields, "
                              "the header has %zu",
                              s->a->path, (unsigned long long)s->row_line, fields, s->columns);
        return;
    }
    if (memchr(s->key.data, '\0', s->key.len) || s->key.len > SHARD_KEY_MAX) {
        s->rc = shard_err_set(s->err, SHARD_EINVAL,
                              "annotation file '%s' line %llu: a key "
                              "holding NUL or longer than %u bytes",
                              s->a->path, (unsigned long long)s->row_line, SHARD_KEY_MAX);
        return;
    }
    s->rc = add_key(s->a, (const char *)s->key.data, s->key.len, s->row_line, s->err);
    if (!s->rc)
        s->a->rows++;
}

static int csv_no_space(unsigned char c)
{
    return 0;
}

static int load_csv(struct sk_annotations *a, const char *text, size_t len, struct shard_err *err)
{
    struct csv_parser parser;
    struct csv_state s = {.a = a, .err = err, .header = 1, .key_field = SIZE_MAX};
    s.col_seen = calloc(a->ncols ? a->ncols : 1, sizeof *s.col_seen);
    if (!s.col_seen || csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        free(s.col_seen);
        return shard_err_set(err, SHARD_ENOMEM, "cannot set up the CSV parser");
    }
    csv_set_space_func(&parser, csv_no_space);
    for (size_t pos = 0; pos < len && s.rc == 0;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        s.line++;
        if (csv_parse(&parser, text + pos, n, csv_on_field, csv_on_row, &s) != n && s.rc == 0)
            s.rc = shard_err_set(err, SHARD_EINVAL, "annotation file '%s' line %llu: %s", a->path,
                                 (unsigned long long)s.line, csv_strerror(csv_error(&parser)));
        pos += n;
    }
    if (s.rc == 0 && csv_fini(&parser, csv_on_field, csv_on_row, &s) != 0 && s.rc == 0)
        s.rc = shard_err_set(err, SHARD_EINVAL, "annotation file '%s' line %llu: %s", a->path,
                             (unsigned long long)s.line, csv_strerror(csv_error(&parser)));
    if (s.rc == 0 && s.header)
        s.rc = shard_err_set(err, SHARD_EINVAL,
                             "annotation file '%s' is empty: a CSV table "
                             "needs a header row naming its columns",
                             a->path);
    csv_free(&parser);
    shard_keylist_release(&s.names);
    free(s.field_col);
    free(s.col_seen);
    shard_buf_release(&s.key);
    return s.rc;
}

/* ---- loading ---------------------------------------------------------------------- */

size_t sk_utf8_bom(const uint8_t *text, size_t len)
{
    return len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
}

/* The whole file: a regular file (sk_fs_read_file: a fifo is refused, not
 * waited on), named in the message. */
static int read_table(const char *path, struct shard_buf *b, struct shard_err *err)
{
    int rc = sk_fs_read_file(AT_FDCWD, path, b, err);
    return rc ? shard_err_prefix(err, rc, "cannot read annotation file '%s'", path) : SHARD_OK;
}

/* JSON Lines by name (.jsonl .ndjson .json), CSV by name (.csv); else by
 * its first character that is not white space: '{' is JSON Lines. */
static int is_jsonl(const char *path, const char *text, size_t len)
{
    const char *dot = strrchr(path, '.');
    if (dot && (!strcmp(dot, ".jsonl") || !strcmp(dot, ".ndjson") || !strcmp(dot, ".json")))
        return 1;
    if (dot && !strcmp(dot, ".csv"))
        return 0;
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", text[i]))
        i++;
    return i < len && text[i] == '{';
}

static int compare_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Sort the rows by key (keys were added in row order, so their arena offsets
 * name the row), and refuse a key listed twice. */
static int sort_rows(struct sk_annotations *a, struct shard_err *err)
{
    size_t n = a->rows;
    uint64_t *offsets = malloc((n ? n : 1) * sizeof *offsets);
    struct cell *cells = malloc((n ? n : 1) * (a->ncols ? a->ncols : 1) * sizeof *cells);
    uint64_t *lines = malloc((n ? n : 1) * sizeof *lines);
    int rc = SHARD_OK;
    if (!offsets || !cells || !lines) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot sort %zu annotation rows", n);
        goto out;
    }
    if (n) /* increasing with the row */
        memcpy(offsets, a->keys.offsets, n * sizeof *offsets);
    shard_keylist_sort(&a->keys);
    for (size_t i = 0; i < n; i++) {
        uint64_t *hit = bsearch(&a->keys.offsets[i], offsets, n, sizeof *offsets, compare_u64);
        size_t row = (size_t)(hit - offsets);
        memcpy(cells + i * a->ncols, a->cells + row * a->ncols, a->ncols * sizeof *cells);
        lines[i] = a->row_line[row];
    }
    for (size_t i = 1; i < n && !rc; i++) {
        size_t al, bl;
        const char *ka = shard_keylist_get(&a->keys, i - 1, &al);
        const char *kb = shard_keylist_get(&a->keys, i, &bl);
        if (sk_key_compare(ka, al, kb, bl) == 0) {
            char shown[SHARDX_QUOTE_SIZE];
            uint64_t l1 = lines[i - 1] < lines[i] ? lines[i - 1] : lines[i];
            uint64_t l2 = lines[i - 1] < lines[i] ? lines[i] : lines[i - 1];
            rc = shard_err_set(err, SHARD_EINVAL,
                               "annotation file '%s': key '%s' is listed "
                               "twice (lines %llu and %llu)",
                               a->path, shardx_quote(kb, bl, shown, sizeof shown),
                               (unsigned long long)l1, (unsigned long long)l2);
        }
    }
    if (!rc) {
        free(a->cells);
        a->cells = cells;
        cells = NULL;
        free(a->row_line);
        a->row_line = lines;
        lines = NULL;
        a->cap = n;
    }
out:
    free(offsets);
    free(cells);
    free(lines);
    return rc;
}

int sk_annotations_load(struct sk_annotations **out, const char *path, const char *key_column,
                        const struct sk_annotation_column *cols, uint32_t ncols,
                        struct shard_err *err)
{
    *out = NULL;
    struct sk_annotations *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    a->cols = cols;
    a->ncols = ncols;
    a->key_column = key_column ? key_column : KEY_COLUMN;
    struct shard_buf text = {0};
    int rc = read_table(path, &text, err);
    /* a UTF-8 byte order mark (spreadsheets write one) is no part of the
     * first column's name or the first row */
    size_t bom = sk_utf8_bom(text.data, text.len);
    const char *body = (const char *)text.data + bom;
    if (!rc)
        rc = is_jsonl(path, body, text.len - bom) ? load_jsonl(a, body, text.len - bom, err)
                                                  : load_csv(a, body, text.len - bom, err);
    if (!rc)
        rc = sort_rows(a, err);
    if (!rc) {
        /* "file:<basename>:<xxh3>", as a label file is described */
        const char *slash = strrchr(path, '/');
        const char *base = slash ? slash + 1 : path;
        size_t size = strlen(base) + sizeof "file::0123456789abcdef";
        if (!(a->description = malloc(size)))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else
            snprintf(a->description, size, "file:%s:%016llx", base,
                     (unsigned long long)XXH3_64bits(text.data, text.len));
    }
    shard_buf_release(&text);
    if (rc) {
        sk_annotations_free(a);
        return rc;
    }
    *out = a;
    return SHARD_OK;
}

const char *sk_annotations_describe(const struct sk_annotations *a)
{
    return a->description;
}

uint64_t sk_annotations_rows(const struct sk_annotations *a)
{
    return a->rows;
}

int64_t sk_annotations_row(const struct sk_annotations *a, const char *key, size_t len)
{
    size_t lo = 0, hi = a->rows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t mlen;
        const char *k = shard_keylist_get(&a->keys, mid, &mlen);
        int c = sk_key_compare(key, len, k, mlen);
        if (c == 0)
            return (int64_t)mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

int sk_annotations_value(const struct sk_annotations *a, int64_t row, uint32_t col,
                         const uint8_t **data, size_t *len)
{
    if (row < 0)
        return 0;
    const struct cell *c = &a->cells[(size_t)row * a->ncols + col];
    if (c->len == ABSENT)
        return 0;
    *data = a->values.data + c->off;
    *len = c->len;
    return 1;
}

uint64_t sk_annotations_line(const struct sk_annotations *a, int64_t row)
{
    return row < 0 ? 0 : a->row_line[row];
}

static int64_t row_of(const void *ctx, const char *key, size_t len)
{
    return sk_annotations_row(ctx, key, len);
}

int sk_annotations_unmatched(const struct sk_annotations *a, const struct shard_keylist *keys,
                             uint64_t *unmatched, struct shard_err *err)
{
    return sk_rows_unmatched(a->rows, keys, row_of, a, unmatched, err);
}
