/* result.c - a part's result file (see verify_internal.h and
 * shard_verify_part in shardkit/verify.h).
 *
 * JSON Lines: the first line is the part and everything it counted
 * (format "shardcheck-part", version RESULT_VERSION, the dataset's identity:
 * the xxh3 of its manifest.json); then one line per problem, per record no
 * line of the part named in its window ("uncovered") and per line naming a
 * record outside its window ("stray"), as many as the first line says.
 * Numbers that may pass 2^63 (hashes, sums, tally values) are 16 hex
 * digits; keys, and messages that are not UTF-8, are hex ("key_hex").  The
 * file is written whole under a temporary name and renamed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "read/dataset_internal.h"
#include "util/fsutil.h"
#include "util/jsonkey.h"
#include "util/grow.h"
#include "verify/verify_internal.h"

#define RESULT_FORMAT "shardcheck-part"
#define RESULT_VERSION 1
/* The longest line a result file may have (its first, with the tallies). */
#define RESULT_LINE_MAX (256u << 20)

/* ---- writing ---------------------------------------------------------------- */

static json_t *hex(uint64_t v)
{
    char h[17];
    shard_hex64(v, h);
    return json_string(h);
}

static json_t *integer(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static json_t *rate_json(const struct shard_verify_rate *r)
{
    return json_pack("{s:o, s:o, s:f, s:f, s:i}", "bytes", integer(r->bytes), "items",
                     integer(r->items), "seconds", r->seconds, "busy_seconds", r->busy_seconds,
                     "threads", r->threads);
}

static json_t *counts_json(const uint64_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, integer(v[i]));
    return a;
}

static json_t *tally_json(const struct sk_tally *t)
{
    struct shard_tally e = {0};
    if (sk_tally_export(t, &e))
        return NULL;
    json_t *pairs = json_array();
    for (size_t i = 0; pairs && i < e.count; i++)
        json_array_append_new(pairs, json_pack("[o, o]", hex(e.values[i]), integer(e.counts[i])));
    json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:i, s:o}", "values", pairs, "total",
                          integer(e.total), "min", hex(e.min), "max", hex(e.max), "shift",
                          (int)e.shift, "others", integer(e.others));
    sk_shard_tally_release(&e);
    return o;
}

/* Set obj[field] to the bytes s[0..len): a string when UTF-8, else
 * field_hex. */
static int set_text(json_t *obj, const char *field, const char *s, size_t len)
{
    json_t *t = json_stringn(s, len);
    if (t)
        return json_object_set_new(obj, field, t);
    char name[32];
    snprintf(name, sizeof name, "%s_hex", field);
    char *h = malloc(2 * len + 1);
    if (!h)
        return -1;
    for (size_t i = 0; i < len; i++)
        snprintf(h + 2 * i, 3, "%02x", (unsigned char)s[i]);
    int rc = json_object_set_new(obj, name, json_string(h));
    free(h);
    return rc;
}

static json_t *key_json(json_t *o, const char *key, size_t len)
{
    struct shard_err e;
    if (o && key && sk_jsonkey_set(o, key, len, &e)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *header_json(const struct verify_run *v)
{
    const struct sk_part *p = v->part;
    json_t *segments = json_array(), *tables = json_array(), *warned = json_array();
    json_t *lengths = json_array(), *targets = json_array();
    for (uint32_t k = 0; k < v->index_files; k++) {
        const struct sk_segment *s = &p->segments[k];
        const struct sk_table_range *t = &p->tables[k];
        json_array_append_new(segments,
                              json_pack("{s:o, s:o, s:o, s:o, s:o, s:b}", "start",
                                        integer(s->start), "end", integer(s->end), "lines",
                                        integer(s->lines), "bad_lines", integer(s->bad_lines),
                                        "key_sum", hex(s->key_sum), "complete", s->complete));
        json_array_append_new(tables, json_pack("{s:o, s:o, s:o, s:o, s:b, s:b}", "count",
                                                integer(t->count), "start", integer(t->start),
                                                "end", integer(t->end), "sum", hex(t->sum),
                                                "usable", t->usable, "sorted", t->sorted));
    }
    for (uint32_t f = 0; f < p->field_count; f++)
        json_array_append_new(lengths, tally_json(&p->text_lengths[f]));
    for (size_t i = 0; i < p->warned_count; i++)
        json_array_append_new(warned,
                              key_json(json_pack("{s:s}", "warning", p->warned_samples[i].warning),
                                       p->warned_samples[i].key, p->warned_samples[i].key_len));
    for (uint32_t i = 0; i < p->target_count; i++) {
        const struct shard_target_tally *t = &p->targets[i];
        json_array_append_new(targets,
                              json_pack("{s:o, s:o, s:o, s:o, s:o}", "samples", integer(t->samples),
                                        "items", integer(t->items), "max_boxes",
                                        integer(t->max_boxes), "per_class",
                                        counts_json(t->per_class, t->class_count), "samples_with",
                                        counts_json(t->samples_with, t->class_count)));
    }
    json_t *first = json_null();
    if (p->first.have)
        first = key_json(json_pack("{s:o, s:i, s:o}", "g", integer(p->first.g), "file",
                                   (int)p->first.at.file, "line", integer(p->first.at.line)),
                         p->first.key, p->first.key_len);
    return json_pack("{s:s, s:i, s:o, s:i, s:i, s:b, s:[i, i], s:[o, o], s:f, s:o, s:o,"
                     " s:{s:b, s:i, s:o, s:o},"
                     " s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o},"
                     " s:{s:b, s:o, s:o, s:o}, s:o, s:o, s:o}",
                     "format", RESULT_FORMAT, "version", RESULT_VERSION, "manifest_xxh3",
                     hex(p->manifest_xxh3), "part", (int)p->part, "parts", (int)p->parts, "deep",
                     p->deep, "shards", (int)p->first_shard, (int)p->end_shard, "key_hashes",
                     hex(p->hash_lo), hex(p->hash_hi), "seconds", p->seconds, "hash_rate",
                     rate_json(&p->hash_rate), "deep_rate", rate_json(&p->deep_rate),
                     /* footers */
                     "footers", "all_read", p->all_footers, "sized", (int)p->shards_sized, "labels",
                     counts_json(p->label_shards, (size_t)v->m->label_count + 1), "record_bytes",
                     tally_json(&p->record_bytes),
                     /* index lines */
                     "index", "segments", segments, "warned", integer(p->warned), "warned_samples",
                     warned, "field_lines", counts_json(p->field_lines, p->field_count), "sidecars",
                     integer(p->sidecars), "dimensions", tally_json(&p->dimensions), "text_lengths",
                     lengths, "first", first ? first : json_null(), "last",
                     p->have_last ? integer(p->last_g) : json_null(), "lost", integer(p->lost),
                     /* --deep */
                     "records", "complete", p->deep_complete, "field_records",
                     counts_json(p->record_field_samples, p->field_count), "sidecars",
                     integer(p->record_sidecars), "targets", targets,
                     /* the tables and the lines that follow */
                     "tables", tables, "problems_not_kept", integer(v->problems_not_kept), "lines",
                     json_pack("{s:o, s:o, s:o}", "problems", integer(v->problem_count),
                               "uncovered", integer(p->uncovered_count), "strays",
                               integer(p->stray_count)));
}

static json_t *problem_json(const struct sk_problem *q)
{
    json_t *o = json_pack("{s:i, s:i, s:I, s:I}", "check", (int)q->p.check, "code", q->p.code,
                          "shard", (json_int_t)q->p.shard, "record", (json_int_t)q->p.record);
    if (o && set_text(o, "message", q->p.message, strlen(q->p.message))) {
        json_decref(o);
        return NULL;
    }
    if (o && q->has_line)
        json_object_set_new(o, "line",
                            json_pack("{s:i, s:o}", "file", (int)q->at.file, "line",
                                      integer(q->at.line)));
    return key_json(o, q->p.key, q->p.key_len);
}

/* Write one JSON value and a newline to fd. */
static int write_line(int fd, json_t *o, const char *what, struct shard_err *err)
{
    if (!o)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: written by length */
    int rc = sk_fs_write_all(fd, text, len + 1, what, err);
    free(text);
    return rc;
}

int sk_verify_result_write(struct verify_run *v, const char *path, struct shard_err *err)
{
    const struct sk_part *p = v->part;
    /* the file's directory and name: the temporary goes beside it */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
    const char *name = slash ? slash + 1 : path;
    char *tmp = NULL;
    int dfd = -1, fd = -1, rc = SHARD_OK;
    if (!dir || !*name || asprintf(&tmp, ".%s.tmp", name) < 0) {
        tmp = NULL;
        rc = !dir || *name ? shard_err_set(err, SHARD_ENOMEM, "out of memory")
                           : shard_err_set(err, SHARD_EINVAL, "'%s' names no file", path);
        goto out;
    }
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) { /* nofollow: --result's */
        rc = shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EIO, errno,
                             "cannot open the directory of '%s'", path);
        goto out;
    }
    if ((rc = sk_fs_create_at(dfd, dir, tmp, 0644, &fd, err)))
        goto out;
    rc = write_line(fd, header_json(v), path, err);
    for (size_t i = 0; !rc && i < v->problem_count; i++)
        rc = write_line(fd, json_pack("{s:o}", "problem", problem_json(&v->problems[i])), path,
                        err);
    for (size_t i = 0; !rc && i < p->uncovered_count; i++) {
        const struct sk_uncovered *u = &p->uncovered[i];
        json_t *o = json_pack("{s:o, s:i}", "g", integer(u->g), "label", (int)u->label);
        rc = write_line(fd,
                        json_pack("{s:o}", "uncovered",
                                  key_json(o, u->have_key ? u->key : NULL, u->key_len)),
                        path, err);
    }
    for (size_t i = 0; !rc && i < p->stray_count; i++) {
        const struct sk_stray *s = &p->strays[i];
        json_t *o = json_pack("{s:o, s:i, s:o, s:i}", "g", integer(s->g), "file", (int)s->at.file,
                              "line", integer(s->at.line), "label", (int)s->label);
        rc = write_line(fd, json_pack("{s:o}", "stray", key_json(o, s->key, s->key_len)), path,
                        err);
    }
    rc = sk_fs_commit_at(fd, rc, dfd, dir, tmp, name, err);
out:
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(tmp);
    return rc;
}

/* ---- reading ----------------------------------------------------------------- */

struct reader {
    const char *path;
    struct shard_err *err;
    int bad; /* a member missing or of the wrong kind */
};

static uint64_t get_uint(struct reader *r, const json_t *o, const char *field)
{
    const json_t *v = json_object_get(o, field);
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        r->bad = 1;
        return 0;
    }
    return (uint64_t)json_integer_value(v);
}

static uint64_t get_hex(struct reader *r, const json_t *o, const char *field)
{
    uint64_t v = 0;
    struct shard_err e;
    if (sk_jsonkey_hex64(o, field, &v, &e))
        r->bad = 1;
    return v;
}

static int get_bool(struct reader *r, const json_t *o, const char *field)
{
    const json_t *v = json_object_get(o, field);
    if (!json_is_boolean(v))
        r->bad = 1;
    return json_is_true(v);
}

static const json_t *get_array(struct reader *r, const json_t *o, const char *field, size_t n)
{
    const json_t *a = json_object_get(o, field);
    if (!json_is_array(a) || json_array_size(a) != n) {
        r->bad = 1;
        return NULL;
    }
    return a;
}

static void get_counts(struct reader *r, const json_t *o, const char *field, uint64_t *out,
                       size_t n)
{
    const json_t *a = get_array(r, o, field, n);
    for (size_t i = 0; a && i < n; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            r->bad = 1;
        else
            out[i] = (uint64_t)json_integer_value(v);
    }
}

static void get_rate(struct reader *r, const json_t *o, struct shard_verify_rate *rate)
{
    const json_t *v = json_object_get(o, "seconds"), *b = json_object_get(o, "busy_seconds");
    rate->bytes = get_uint(r, o, "bytes");
    rate->items = get_uint(r, o, "items");
    rate->threads = (int)get_uint(r, o, "threads");
    rate->seconds = json_number_value(v);
    rate->busy_seconds = json_number_value(b);
    if (!json_is_number(v) || !json_is_number(b))
        r->bad = 1;
}

static int get_tally(struct reader *r, const json_t *o, struct sk_tally *t)
{
    if (!json_is_object(o)) {
        r->bad = 1;
        return SHARD_OK;
    }
    const json_t *pairs = json_object_get(o, "values");
    size_t n = json_is_array(pairs) ? json_array_size(pairs) : 0;
    struct shard_tally e = {0};
    e.values = malloc((n ? n : 1) * sizeof *e.values);
    e.counts = malloc((n ? n : 1) * sizeof *e.counts);
    if (!e.values || !e.counts) {
        sk_shard_tally_release(&e);
        return SHARD_ENOMEM;
    }
    if (!json_is_array(pairs))
        r->bad = 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *pair = json_array_get(pairs, i);
        const json_t *c = json_array_get(pair, 1);
        const char *h = json_string_value(json_array_get(pair, 0));
        if (!h || shard_hex64_parse(h, &e.values[i]) || !json_is_integer(c) ||
            json_integer_value(c) < 0) {
            r->bad = 1;
            break;
        }
        e.counts[i] = (uint64_t)json_integer_value(c);
        e.count = i + 1;
    }
    e.total = get_uint(r, o, "total");
    e.min = get_hex(r, o, "min");
    e.max = get_hex(r, o, "max");
    e.shift = (uint32_t)get_uint(r, o, "shift");
    e.others = get_uint(r, o, "others");
    int rc = e.shift < 64 ? sk_tally_restore(t, &e) : SHARD_OK;
    if (e.shift >= 64)
        r->bad = 1;
    sk_shard_tally_release(&e);
    return rc;
}

/* A key (key or key_hex) of o into *key, *len; 0 when absent and allowed. */
static int get_key(struct reader *r, const json_t *o, int needed, char **key, size_t *len)
{
    if (!needed && !json_object_get(o, "key") && !json_object_get(o, "key_hex"))
        return SHARD_OK;
    struct shard_err e;
    int rc = sk_jsonkey_get(o, 0, key, len, &e);
    if (rc == SHARD_ENOMEM)
        return rc;
    if (rc)
        r->bad = 1;
    return SHARD_OK;
}

/* The first line: the part, and what it counted. */
static int read_header(struct verify_run *v, struct reader *r, const json_t *o, struct sk_part *p,
                       uint64_t *lines)
{
    const struct shard_manifest *m = v->m;
    const json_t *format = json_object_get(o, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), RESULT_FORMAT))
        return shard_err_set(r->err, SHARD_EINVAL, "'%s' is not a shardcheck part's result",
                             r->path);
    if (get_uint(r, o, "version") != RESULT_VERSION || r->bad)
        return shard_err_set(r->err, SHARD_EINVAL,
                             "'%s' is a result of another version of shardcheck", r->path);
    uint64_t part = get_uint(r, o, "part"), parts = get_uint(r, o, "parts");
    if (r->bad || parts == 0 || part >= parts || parts > UINT32_MAX)
        return shard_err_set(r->err, SHARD_EINVAL, "'%s' names no part", r->path);
    if (get_hex(r, o, "manifest_xxh3") != shard_dataset_manifest_xxh3(v->ds) || r->bad)
        return shard_err_set(r->err, SHARD_EINVAL,
                             "'%s' is a result of another dataset (or of this one before its "
                             "manifest.json changed)",
                             r->path);
    /* a part of this dataset has its arrays (the combine checks its identity) */
    int rc = sk_part_alloc(v, p);
    if (rc)
        return shard_err_set(r->err, SHARD_ENOMEM, "out of memory");
    p->part = (uint32_t)part;
    p->parts = (uint32_t)parts;
    p->manifest_xxh3 = get_hex(r, o, "manifest_xxh3");
    p->deep = get_bool(r, o, "deep");
    const json_t *shards = get_array(r, o, "shards", 2);
    p->first_shard = (uint32_t)json_integer_value(json_array_get(shards, 0));
    p->end_shard = (uint32_t)json_integer_value(json_array_get(shards, 1));
    const json_t *range = get_array(r, o, "key_hashes", 2);
    const char *lo = json_string_value(json_array_get(range, 0)),
               *hi = json_string_value(json_array_get(range, 1));
    if (!lo || !hi || shard_hex64_parse(lo, &p->hash_lo) || shard_hex64_parse(hi, &p->hash_hi))
        r->bad = 1;
    p->seconds = json_number_value(json_object_get(o, "seconds"));
    get_rate(r, json_object_get(o, "hash_rate"), &p->hash_rate);
    get_rate(r, json_object_get(o, "deep_rate"), &p->deep_rate);
    const json_t *footers = json_object_get(o, "footers");
    p->all_footers = get_bool(r, footers, "all_read");
    p->shards_sized = (uint32_t)get_uint(r, footers, "sized");
    get_counts(r, footers, "labels", p->label_shards, (size_t)m->label_count + 1);
    if ((rc = get_tally(r, json_object_get(footers, "record_bytes"), &p->record_bytes)))
        return rc;
    const json_t *index = json_object_get(o, "index");
    const json_t *segments = get_array(r, index, "segments", v->index_files);
    for (uint32_t k = 0; segments && k < v->index_files; k++) {
        const json_t *s = json_array_get(segments, k);
        struct sk_segment *seg = &p->segments[k];
        seg->start = get_uint(r, s, "start");
        seg->end = get_uint(r, s, "end");
        seg->lines = get_uint(r, s, "lines");
        seg->bad_lines = get_uint(r, s, "bad_lines");
        seg->key_sum = get_hex(r, s, "key_sum");
        seg->complete = get_bool(r, s, "complete");
    }
    p->warned = get_uint(r, index, "warned");
    const json_t *warned = json_object_get(index, "warned_samples");
    size_t nw = json_is_array(warned) ? json_array_size(warned) : 0;
    if (!json_is_array(warned) || nw > SHARD_VERIFY_WARNED_LISTED)
        r->bad = 1;
    else if (nw && !(p->warned_samples = calloc(nw, sizeof *p->warned_samples)))
        return SHARD_ENOMEM;
    for (size_t i = 0; !r->bad && i < nw; i++) {
        const json_t *w = json_array_get(warned, i);
        struct shard_warned_sample *ws = &p->warned_samples[i];
        const char *text = json_string_value(json_object_get(w, "warning"));
        if ((rc = get_key(r, w, 1, &ws->key, &ws->key_len)))
            return rc;
        p->warned_count = i + 1;
        if (!text)
            r->bad = 1;
        else if (!(ws->warning = strdup(text)))
            return SHARD_ENOMEM;
    }
    get_counts(r, index, "field_lines", p->field_lines, p->field_count);
    p->sidecars = get_uint(r, index, "sidecars");
    if ((rc = get_tally(r, json_object_get(index, "dimensions"), &p->dimensions)))
        return rc;
    const json_t *lengths = get_array(r, index, "text_lengths", p->field_count);
    for (uint32_t f = 0; lengths && f < p->field_count; f++)
        if ((rc = get_tally(r, json_array_get(lengths, f), &p->text_lengths[f])))
            return rc;
    const json_t *first = json_object_get(index, "first");
    if (json_is_object(first)) {
        p->first.have = 1;
        p->first.g = get_uint(r, first, "g");
        p->first.at = (struct sk_line_ref){p->part, (uint32_t)get_uint(r, first, "file"),
                                           get_uint(r, first, "line")};
        if ((rc = get_key(r, first, 1, &p->first.key, &p->first.key_len)))
            return rc;
        if (p->first.at.file >= v->index_files || p->first.g >= v->samples)
            r->bad = 1;
    }
    const json_t *last = json_object_get(index, "last");
    if (json_is_integer(last)) {
        p->have_last = 1;
        p->last_g = get_uint(r, index, "last");
    }
    p->lost = get_uint(r, index, "lost");
    const json_t *records = json_object_get(o, "records");
    p->deep_complete = get_bool(r, records, "complete");
    get_counts(r, records, "field_records", p->record_field_samples, p->field_count);
    p->record_sidecars = get_uint(r, records, "sidecars");
    /* --deep's tally of each BOXES and MASK field, in field order */
    const json_t *targets = json_object_get(records, "targets");
    size_t nt = json_is_array(targets) ? json_array_size(targets) : 0, want = 0;
    for (uint32_t f = 0; p->deep && f < m->config.field_count; f++)
        want += m->config.fields[f].type == SHARD_FIELD_BOXES ||
                m->config.fields[f].type == SHARD_FIELD_MASK;
    if (nt != want || !json_is_array(targets))
        r->bad = 1;
    if (!r->bad && nt && !(p->targets = calloc(nt, sizeof *p->targets)))
        return SHARD_ENOMEM;
    for (size_t i = 0; !r->bad && i < nt; i++) {
        const json_t *t = json_array_get(targets, i);
        struct shard_target_tally *to = &p->targets[i];
        uint32_t classes = (uint32_t)json_array_size(json_object_get(t, "per_class"));
        if (!(to->per_class = calloc(classes + 1, sizeof *to->per_class)) ||
            !(to->samples_with = calloc(classes + 1, sizeof *to->samples_with)))
            return SHARD_ENOMEM;
        p->target_count = (uint32_t)i + 1;
        to->class_count = classes;
        to->samples = get_uint(r, t, "samples");
        to->items = get_uint(r, t, "items");
        to->max_boxes = get_uint(r, t, "max_boxes");
        get_counts(r, t, "per_class", to->per_class, classes);
        get_counts(r, t, "samples_with", to->samples_with, classes);
    }
    const json_t *tables = get_array(r, o, "tables", v->index_files);
    for (uint32_t k = 0; tables && k < v->index_files; k++) {
        const json_t *t = json_array_get(tables, k);
        struct sk_table_range *tr = &p->tables[k];
        tr->count = get_uint(r, t, "count");
        tr->start = get_uint(r, t, "start");
        tr->end = get_uint(r, t, "end");
        tr->sum = get_hex(r, t, "sum");
        tr->usable = get_bool(r, t, "usable");
        tr->sorted = get_bool(r, t, "sorted");
    }
    v->problems_not_kept += get_uint(r, o, "problems_not_kept");
    const json_t *counts = json_object_get(o, "lines");
    lines[0] = get_uint(r, counts, "problems");
    lines[1] = get_uint(r, counts, "uncovered");
    lines[2] = get_uint(r, counts, "strays");
    if (lines[0] > SHARD_VERIFY_MAX_PROBLEMS || lines[1] > SHARD_VERIFY_MAX_PROBLEMS ||
        lines[2] > SHARD_VERIFY_MAX_PROBLEMS)
        r->bad = 1;
    if (r->bad || p->end_shard > m->shard_count || p->first_shard > p->end_shard)
        return shard_err_set(r->err, SHARD_EINVAL,
                             "'%s' is not a result of this dataset, or is damaged", r->path);
    return SHARD_OK;
}

/* A problem line. */
static int read_problem(struct verify_run *v, struct reader *r, const struct sk_part *p,
                        const json_t *o)
{
    struct sk_problem q;
    memset(&q, 0, sizeof q);
    q.p.check = (enum shard_check)get_uint(r, o, "check");
    const json_t *code = json_object_get(o, "code"), *shard = json_object_get(o, "shard"),
                 *record = json_object_get(o, "record");
    q.p.code = (int)json_integer_value(code);
    q.p.shard = json_integer_value(shard);
    q.p.record = json_integer_value(record);
    if (!json_is_integer(code) || !json_is_integer(shard) || !json_is_integer(record) ||
        q.p.check > SHARD_CHECK_VISITATION)
        r->bad = 1;
    const json_t *line = json_object_get(o, "line");
    if (json_is_object(line)) {
        q.has_line = 1;
        q.at = (struct sk_line_ref){p->part, (uint32_t)get_uint(r, line, "file"),
                                    get_uint(r, line, "line")};
        if (q.at.file >= v->index_files)
            r->bad = 1;
    }
    const char *text = json_string_value(json_object_get(o, "message"));
    const char *text_hex = json_string_value(json_object_get(o, "message_hex"));
    int rc = SHARD_OK;
    if (text) {
        q.p.message = strdup(text);
    } else if (text_hex && strlen(text_hex) % 2 == 0 &&
               (q.p.message = malloc(strlen(text_hex) / 2 + 1))) {
        size_t n = strlen(text_hex) / 2;
        for (size_t i = 0; i < n; i++) {
            unsigned b;
            if (sscanf(text_hex + 2 * i, "%2x", &b) != 1)
                r->bad = 1;
            q.p.message[i] = (char)b;
        }
        q.p.message[n] = '\0';
    } else if (!text_hex) {
        r->bad = 1;
    }
    if (!r->bad && !q.p.message)
        rc = SHARD_ENOMEM;
    if (!rc && !r->bad)
        rc = get_key(r, o, 0, &q.p.key, &q.p.key_len);
    if (!rc && !r->bad) {
        pthread_mutex_lock(&v->lock);
        if (v->problem_count >= SHARD_VERIFY_MAX_PROBLEMS) {
            v->problems_not_kept++;
        } else if (SK_GROW(v->problems, v->problems_cap, v->problem_count + 1, 64)) {
            rc = SHARD_ENOMEM;
        } else {
            v->problems[v->problem_count++] = q;
            memset(&q, 0, sizeof q);
        }
        pthread_mutex_unlock(&v->lock);
    }
    free(q.p.key);
    free(q.p.message);
    return rc;
}

static int read_uncovered(struct verify_run *v, struct reader *r, struct sk_part *p,
                          const json_t *o)
{
    if (SK_GROW(p->uncovered, p->uncovered_cap, p->uncovered_count + 1, 16))
        return SHARD_ENOMEM;
    struct sk_uncovered *u = &p->uncovered[p->uncovered_count];
    memset(u, 0, sizeof *u);
    u->g = get_uint(r, o, "g");
    u->label = (int32_t)json_integer_value(json_object_get(o, "label"));
    int rc = get_key(r, o, 0, &u->key, &u->key_len);
    u->have_key = u->key != NULL;
    if (u->g >= v->samples)
        r->bad = 1;
    p->uncovered_count++;
    return rc;
}

static int read_stray(struct verify_run *v, struct reader *r, struct sk_part *p, const json_t *o)
{
    if (SK_GROW(p->strays, p->stray_cap, p->stray_count + 1, 16))
        return SHARD_ENOMEM;
    struct sk_stray *s = &p->strays[p->stray_count];
    memset(s, 0, sizeof *s);
    s->g = get_uint(r, o, "g");
    s->at = (struct sk_line_ref){p->part, (uint32_t)get_uint(r, o, "file"), get_uint(r, o, "line")};
    s->label = (int32_t)json_integer_value(json_object_get(o, "label"));
    int rc = get_key(r, o, 1, &s->key, &s->key_len);
    if (s->g >= v->samples || s->at.file >= v->index_files)
        r->bad = 1;
    p->stray_count++;
    return rc;
}

int sk_verify_result_read(struct verify_run *v, const char *path, struct sk_part *p,
                          struct shard_err *err)
{
    struct reader r = {path, err, 0};
    int fd, rc = sk_fs_open_read(AT_FDCWD, path, &fd, NULL, err);
    if (rc)
        return shard_err_prefix(err, rc, "cannot read '%s'", path);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    char *line = NULL;
    size_t cap = 0;
    uint64_t lines[3] = {0, 0, 0}, seen[3] = {0, 0, 0};
    static const char *const kinds[3] = {"problem", "uncovered", "stray"};
    for (uint64_t n = 0; !rc; n++) {
        errno = 0;
        ssize_t len = getline(&line, &cap, f);
        if (len < 0) {
            if (ferror(f))
                rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s'", path);
            else if (n == 0 || seen[0] != lines[0] || seen[1] != lines[1] || seen[2] != lines[2])
                rc = shard_err_set(err, SHARD_EINVAL, "'%s' is cut short", path);
            break;
        }
        json_error_t jerr;
        json_t *o = (size_t)len <= RESULT_LINE_MAX ? json_loadb(line, (size_t)len, 0, &jerr) : NULL;
        if (!o) {
            rc = shard_err_set(err, SHARD_EINVAL, "'%s' line %llu is not JSON", path,
                               (unsigned long long)n + 1);
            break;
        }
        if (n == 0) {
            rc = read_header(v, &r, o, p, lines);
        } else {
            int kind = -1;
            for (int k = 0; k < 3; k++)
                if (json_object_get(o, kinds[k]))
                    kind = k;
            const json_t *body = kind >= 0 ? json_object_get(o, kinds[kind]) : NULL;
            if (kind < 0 || !json_is_object(body) || seen[kind] >= lines[kind])
                r.bad = 1;
            else if (kind == 0)
                rc = read_problem(v, &r, p, body);
            else if (kind == 1)
                rc = read_uncovered(v, &r, p, body);
            else
                rc = read_stray(v, &r, p, body);
            if (kind >= 0)
                seen[kind]++;
            if (rc == SHARD_ENOMEM)
                rc = shard_err_set(err, rc, "out of memory");
            else if (!rc && r.bad)
                rc = shard_err_set(err, SHARD_EINVAL, "'%s' line %llu is damaged", path,
                                   (unsigned long long)n + 1);
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return rc;
}
