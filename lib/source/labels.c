/* labels.c - the class label of a key: by directory, by regex or from a CSV
 * file (see shardkit/source.h).
 *
 * A CSV file is parsed once: its keys go into a shard_keylist (sharing its
 * fast sort), its labels into one arena, and after sorting, rows[i] holds
 * the label of key i.  Lookups are then a binary search with no locking.
 */
#include "shardkit/source.h"

#include <csv.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/fsutil.h"
#include "shardx/shardx.h"
#include "util/grow.h"
#include "source/source_internal.h"

#define REGEX_PREFIX "regex:"

/* LABELS_FIELD: "sidecar:SUFFIX" or "column:NAME", which the run reads with
 * its fields; the labeler itself gives no label. */
enum labeler_kind { LABELS_NONE, LABELS_DIR, LABELS_REGEX, LABELS_CSV, LABELS_FIELD };

struct label_row {
    size_t label_off; /* in labels; NUL-terminated */
    uint32_t label_len;
    uint64_t line; /* line of the CSV file the row starts on */
};

struct shard_labeler {
    enum labeler_kind kind;
    char *description;
    regex_t re;
    int have_re;
    struct shard_keylist keys; /* CSV keys, sorted */
    struct shard_buf labels;   /* CSV labels, each NUL-terminated */
    struct label_row *rows;    /* rows[i] belongs to key i */
    size_t count, cap;
};

void shard_labeler_free(struct shard_labeler *lb)
{
    if (!lb)
        return;
    if (lb->have_re)
        regfree(&lb->re);
    free(lb->description);
    shard_keylist_release(&lb->keys);
    shard_buf_release(&lb->labels);
    free(lb->rows);
    free(lb);
}

/* ---- regex -------------------------------------------------------------- */

static int regex_init(struct shard_labeler *lb, const char *pattern, struct shard_err *err)
{
    int r = regcomp(&lb->re, pattern, REG_EXTENDED);
    if (r != 0) {
        char msg[256];
        regerror(r, &lb->re, msg, sizeof msg);
        return shard_err_set(err, SHARD_EINVAL, "bad label regex '%s': %s", pattern, msg);
    }
    lb->have_re = 1;
    if (lb->re.re_nsub < 1)
        return shard_err_set(err, SHARD_EINVAL,
                             "bad label regex '%s': it needs a capture group for the class",
                             pattern);
    return SHARD_OK;
}

static int regex_label(const struct shard_labeler *lb, const char *key, size_t key_len,
                       const char **name, size_t *name_len)
{
    regmatch_t m[2];
    int flags = 0;
#ifdef REG_STARTEND
    /* Match exactly key_len bytes: the key need not be NUL-terminated. */
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)key_len;
    flags = REG_STARTEND;
#else
    /* Without REG_STARTEND the key must end at key_len with a NUL, as the
     * keys from shard_keylist_get do. */
#endif
    if (regexec(&lb->re, key, 2, m, flags) != 0 || m[1].rm_so < 0 || m[1].rm_eo <= m[1].rm_so)
        return 0;
    *name = key + m[1].rm_so;
    *name_len = (size_t)(m[1].rm_eo - m[1].rm_so);
    return 1;
}

/* ---- CSV ---------------------------------------------------------------- */

struct csv_state {
    struct shard_labeler *lb;
    const char *path;
    struct shard_err *err;
    int rc;               /* first error; later callbacks do nothing */
    uint64_t line;        /* physical line being fed to the parser */
    uint64_t row_line;    /* line the current row starts on */
    size_t fields;        /* fields seen in the current row */
    struct shard_buf row; /* the row's first two fields, each NUL-terminated */
    uint64_t rows_seen;
};

static size_t count_newlines(const char *p, size_t n)
{
    size_t c = 0;
    for (const char *end = p + n; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        c++;
    return c;
}

static int has_outer_space(const char *p, size_t n)
{
    return n && (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t');
}

/* libcsv field callback: the first field is the key, the second the label. */
static void csv_on_field(void *field, size_t len, void *data)
{
    struct csv_state *s = data;
    if (s->rc)
        return;
    const char *p = field ? field : "";
    if (s->fields == 0) {
        /* The field ended on s->line; quoted newlines inside it moved us. */
        s->row_line = s->line - count_newlines(p, len);
        s->row.len = 0;
    }
    s->fields++;
    if (s->fields > 2)
        return; /* reported at the end of the row */
    if (len > UINT32_MAX || memchr(p, '\0', len)) {
        s->rc = shard_err_set(s->err, SHARD_EINVAL,
                              "label file '%s' line %llu: field too long "
                              "or containing NUL",
                              s->path, (unsigned long long)s->row_line);
        return;
    }
    if ((s->rc = shard_buf_append(&s->row, p, len, s->err)) == 0)
        s->rc = shard_buf_append(&s->row, "", 1, s->err);
}

static int add_row(struct shard_labeler *lb, const char *key, size_t key_len, const char *label,
                   size_t label_len, uint64_t line, struct shard_err *err)
{
    if (SK_GROW(lb->rows, lb->cap, lb->count + 1, 1024))
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %zu label rows", lb->count + 1);
    size_t label_off = lb->labels.len;
    int rc = shard_keylist_add(&lb->keys, key, key_len, err);
    if (rc == 0)
        rc = shard_buf_append(&lb->labels, label, label_len + 1, err);
    if (rc)
        return rc;
    lb->rows[lb->count++] = (struct label_row){label_off, (uint32_t)label_len, line};
    return SHARD_OK;
}

/* libcsv end-of-row callback: check the row and keep it. */
static void csv_on_row(int terminator, void *data)
{
    struct csv_state *s = data;
    if (s->rc)
        return;
    size_t fields = s->fields;
    s->fields = 0;
    s->rows_seen++;
    if (fields != 2) {
        s->rc = shard_err_set(s->err, SHARD_EINVAL,
                              "label file '%s' line %llu: expected 2 "
                              "fields (key,label), found %zu",
                              s->path, (unsigned long long)s->row_line, fields);
        return;
    }
    const char *key = (const char *)s->row.data;
    size_t key_len = strlen(key);
    const char *label = key + key_len + 1;
    size_t label_len = strlen(label);
    if (s->rows_seen == 1 && strcmp(key, "key") == 0 && strcmp(label, "label") == 0)
        return; /* the optional header row */
    if (key_len == 0 || label_len == 0) {
        s->rc = shard_err_set(s->err, SHARD_EINVAL, "label file '%s' line %llu: empty %s", s->path,
                              (unsigned long long)s->row_line, key_len ? "label" : "key");
        return;
    }
    /* RFC 4180 keeps spaces around a field; " cat" would silently be a class
     * of its own, so say so rather than guess. */
    if (has_outer_space(label, label_len)) {
        char shown[SHARDX_QUOTE_SIZE];
        s->rc = shard_err_set(s->err, SHARD_EINVAL,
                              "label file '%s' line %llu: label '%s' "
                              "starts or ends with white space",
                              s->path, (unsigned long long)s->row_line,
                              shardx_quote(label, label_len, shown, sizeof shown));
        return;
    }
    s->rc = add_row(s->lb, key, key_len, label, label_len, s->row_line, s->err);
}

/* libcsv trims blanks around fields unless told that nothing is a blank. */
static int csv_no_space(unsigned char c)
{
    return 0;
}

/* Sort the keys and put rows[] in the same order.  Keys were added in row
 * order, so their arena offsets increase with the row: after the sort, the
 * row of key i is found by binary search on its offset. */
static int sort_rows(struct shard_labeler *lb, struct shard_err *err)
{
    size_t n = lb->count;
    if (n < 2)
        return SHARD_OK;
    uint64_t *offsets = malloc(n * sizeof *offsets);
    struct label_row *sorted = malloc(n * sizeof *sorted);
    if (!offsets || !sorted) {
        free(offsets);
        free(sorted);
        return shard_err_set(err, SHARD_ENOMEM, "cannot sort %zu label rows", n);
    }
    memcpy(offsets, lb->keys.offsets, n * sizeof *offsets);
    shard_keylist_sort(&lb->keys);
    for (size_t i = 0; i < n; i++) {
        uint64_t want = lb->keys.offsets[i];
        size_t lo = 0, hi = n;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (offsets[mid] <= want)
                lo = mid;
            else
                hi = mid;
        }
        sorted[i] = lb->rows[lo];
    }
    free(offsets);
    free(lb->rows);
    lb->rows = sorted;
    lb->cap = n;
    return SHARD_OK;
}

static int csv_init_labels(struct shard_labeler *lb, const char *path, struct shard_err *err)
{
    struct shard_buf file = {0};
    int rc = sk_fs_read_file(AT_FDCWD, path, &file, err);
    if (rc == SHARD_ENOTFOUND)
        return shard_err_set(err, rc, "label file '%s' does not exist", path);
    if (rc)
        return shard_err_prefix(err, rc, "cannot read label file '%s'", path);
    size_t bom = sk_utf8_bom(file.data, file.len); /* not part of the first key */
    char *text = (char *)file.data + bom;
    size_t len = file.len - bom;

    struct csv_parser parser;
    int parser_ready = 0;
    struct csv_state s = {.lb = lb, .path = path, .err = err};
    if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot set up the CSV parser");
        goto out;
    }
    parser_ready = 1;
    /* RFC 4180: spaces are part of a field (a key may start with one). */
    csv_set_space_func(&parser, csv_no_space);

    /* Feed one physical line at a time so that messages can name the line. */
    for (size_t pos = 0; pos < len && s.rc == 0;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        s.line++;
        if (csv_parse(&parser, text + pos, n, csv_on_field, csv_on_row, &s) != n && s.rc == 0)
            s.rc = shard_err_set(err, SHARD_EINVAL, "label file '%s' line %llu: %s", path,
                                 (unsigned long long)s.line, csv_strerror(csv_error(&parser)));
        pos += n;
    }
    if (s.rc == 0 && csv_fini(&parser, csv_on_field, csv_on_row, &s) != 0 && s.rc == 0)
        s.rc = shard_err_set(err, SHARD_EINVAL, "label file '%s' line %llu: %s", path,
                             (unsigned long long)s.line, csv_strerror(csv_error(&parser)));
    rc = s.rc;
    if (rc == 0)
        rc = sort_rows(lb, err);
    if (rc)
        goto out;

    for (size_t i = 1; i < lb->count; i++) {
        size_t a_len, b_len;
        const char *a = shard_keylist_get(&lb->keys, i - 1, &a_len);
        const char *b = shard_keylist_get(&lb->keys, i, &b_len);
        if (sk_key_compare(a, a_len, b, b_len) == 0) {
            uint64_t l1 = lb->rows[i - 1].line, l2 = lb->rows[i].line;
            rc = shard_err_set(err, SHARD_EINVAL,
                               "label file '%s': key '%s' is listed twice "
                               "(lines %llu and %llu)",
                               path, b, (unsigned long long)(l1 < l2 ? l1 : l2),
                               (unsigned long long)(l1 < l2 ? l2 : l1));
            goto out;
        }
    }

    /* "file:<basename>:<xxh3>": what changes the output, without the path. */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t size = strlen(base) + sizeof "file::0123456789abcdef";
    lb->description = malloc(size);
    if (!lb->description) {
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot allocate the label description");
        goto out;
    }
    snprintf(lb->description, size, "file:%s:%016llx", base,
             (unsigned long long)XXH3_64bits(file.data, file.len));
out:
    if (parser_ready)
        csv_free(&parser);
    shard_buf_release(&s.row);
    shard_buf_release(&file);
    return rc;
}

/* The row of `key`, or lb->count when no row names it. */
static size_t csv_row(const struct shard_labeler *lb, const char *key, size_t key_len)
{
    size_t lo = 0, hi = lb->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t len;
        const char *k = shard_keylist_get(&lb->keys, mid, &len);
        int c = sk_key_compare(key, key_len, k, len);
        if (c == 0)
            return mid;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lb->count;
}

static int csv_label(const struct shard_labeler *lb, const char *key, size_t key_len,
                     const char **name, size_t *name_len)
{
    size_t row = csv_row(lb, key, key_len);
    if (row == lb->count)
        return 0;
    *name = (const char *)lb->labels.data + lb->rows[row].label_off;
    *name_len = lb->rows[row].label_len;
    return 1;
}

/* ---- the labeler -------------------------------------------------------- */

int shard_labeler_new(struct shard_labeler **out, const char *spec, struct shard_err *err)
{
    *out = NULL;
    struct shard_labeler *lb = calloc(1, sizeof *lb);
    if (!lb)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate a labeler");
    int rc = SHARD_OK;
    if (strcmp(spec, "none") == 0) {
        lb->kind = LABELS_NONE;
    } else if (strcmp(spec, "dir") == 0) {
        lb->kind = LABELS_DIR;
    } else if (strncmp(spec, REGEX_PREFIX, strlen(REGEX_PREFIX)) == 0) {
        lb->kind = LABELS_REGEX;
        rc = regex_init(lb, spec + strlen(REGEX_PREFIX), err);
    } else if (!strncmp(spec, "sidecar:", 8) || !strncmp(spec, "column:", 7)) {
        lb->kind = LABELS_FIELD;
        const char *what = spec + (spec[0] == 's' ? 8 : 7);
        if (spec[0] == 's' && (what[0] != '.' || !what[1] || strchr(what, '/')))
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s': a sidecar suffix is '.' and a name "
                               "without '/' (sidecar:.cls)",
                               spec);
        else if (!what[0])
            rc = shard_err_set(err, SHARD_EINVAL, "'%s': name the column (column:NAME)", spec);
    } else {
        lb->kind = LABELS_CSV;
        rc = csv_init_labels(lb, spec, err);
    }
    if (rc == 0 && !lb->description && !(lb->description = strdup(spec)))
        rc = shard_err_set(err, SHARD_ENOMEM, "cannot allocate the label description");
    if (rc) {
        shard_labeler_free(lb);
        return rc;
    }
    *out = lb;
    return SHARD_OK;
}

int shard_labeler_label(const struct shard_labeler *lb, const char *key, size_t key_len,
                        const char **name, size_t *name_len)
{
    switch (lb->kind) {
    case LABELS_DIR: {
        const char *slash = memchr(key, '/', key_len);
        if (!slash || slash == key)
            return 0;
        *name = key;
        *name_len = (size_t)(slash - key);
        return 1;
    }
    case LABELS_REGEX: return regex_label(lb, key, key_len, name, name_len);
    case LABELS_CSV: return csv_label(lb, key, key_len, name, name_len);
    case LABELS_FIELD:
    case LABELS_NONE: break;
    }
    return 0;
}

const char *shard_labeler_describe(const struct shard_labeler *lb)
{
    return lb->description;
}

uint64_t shard_labeler_rows(const struct shard_labeler *lb)
{
    return lb->kind == LABELS_CSV ? lb->count : 0;
}

/* sk_rows_unmatched's lookup: a CSV row, or -1 */
static int64_t row_of(const void *ctx, const char *key, size_t len)
{
    const struct shard_labeler *lb = ctx;
    size_t row = csv_row(lb, key, len);
    return row < lb->count ? (int64_t)row : -1;
}

int shard_labeler_unmatched_rows(const struct shard_labeler *lb, const struct shard_keylist *keys,
                                 uint64_t *unmatched, struct shard_err *err)
{
    *unmatched = 0;
    if (lb->kind != LABELS_CSV)
        return SHARD_OK;
    return sk_rows_unmatched(lb->count, keys, row_of, lb, unmatched, err);
}
