/* classes.c - a list of classes from a file: a mask field's classes=FILE
 * and shardify's --classes FILE (see source_internal.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "util/fsutil.h"
#include "source/source_internal.h"
#include "shardx/shardx.h"

void sk_class_list_free(struct shard_field_class *list, size_t count)
{
    for (size_t i = 0; list && i < count; i++)
        free(list[i].name);
    free(list);
}

static int utf8_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = shardx_utf8_len((const unsigned char *)s + i, len - i);
        if (!n)
            return 0;
        i += n;
    }
    return 1;
}

/* The JSON form: an array of names or of {"id", "name"} objects. */
static int from_json(const struct shard_buf *text, const char *path, uint32_t max_id,
                     struct shard_field_class *list, size_t *n, struct shard_err *err)
{
    json_error_t jerr;
    json_t *j = json_loadb((const char *)text->data, text->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        return shard_err_set(err, SHARD_EINVAL, "classes file '%s': line %d column %d: %s", path,
                             jerr.line, jerr.column, jerr.text);
    int rc = SHARD_OK;
    for (size_t k = 0; k < json_array_size(j); k++) {
        const json_t *x = json_array_get(j, k);
        const json_t *name = json_is_string(x) ? x : json_object_get(x, "name");
        const json_t *id = json_is_string(x) ? NULL : json_object_get(x, "id");
        if (!json_is_string(name) || !json_string_length(name) ||
            strlen(json_string_value(name)) != json_string_length(name) ||
            (!json_is_string(x) && (!json_is_integer(id) || json_integer_value(id) < 0 ||
                                    json_integer_value(id) > max_id))) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "classes file '%s': element %zu is neither a name nor "
                               "{\"id\": 0..%u, \"name\"}",
                               path, k, max_id);
            break;
        }
        list[k].id = id ? (uint32_t)json_integer_value(id) : (uint32_t)k;
        if (!(list[k].name = strdup(json_string_value(name)))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            break;
        }
        *n = k + 1;
    }
    json_decref(j);
    return rc;
}

/* The text form: one name a line (text ends in a NUL the caller added). */
static int from_lines(char *text, const char *path, struct shard_field_class *list, size_t *n,
                      struct shard_err *err)
{
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        if (!len || !utf8_valid(line, len))
            return shard_err_set(err, SHARD_EINVAL, "classes file '%s': line %zu is no class name",
                                 path, *n + 1);
        list[*n].id = (uint32_t)*n;
        if (!(list[*n].name = strdup(line)))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        ++*n;
        line = end ? end + 1 : line + len;
    }
    return SHARD_OK;
}

int sk_class_list_read(const char *path, uint32_t max_id, struct shard_field_class **out,
                       size_t *count, uint64_t *xxh3, struct shard_err *err)
{
    *out = NULL;
    *count = 0;
    struct shard_buf text = {0};
    struct shard_field_class *list = NULL;
    size_t n = 0, cap = 1;
    int rc = sk_fs_read_file(AT_FDCWD, path, &text, err);
    if (rc) {
        shard_err_prefix(err, rc, "cannot read classes file '%s'", path);
        goto out;
    }
    if (xxh3)
        *xxh3 = XXH3_64bits(text.data, text.len);
    size_t i = 0;
    while (i < text.len && strchr(" \t\r\n", text.data[i]))
        i++;
    int json = i < text.len && text.data[i] == '[';
    for (size_t k = 0; k < text.len; k++) /* at most a class a byte */
        cap += json || text.data[k] == '\n';
    if (!(list = calloc(cap, sizeof *list)) || shard_buf_append(&text, "", 1, err)) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    text.len--; /* the NUL is after the text, not in it */
    rc = json ? from_json(&text, path, max_id, list, &n, err)
              : from_lines((char *)text.data, path, list, &n, err);
out:
    shard_buf_release(&text);
    if (rc) {
        sk_class_list_free(list, n);
        return rc;
    }
    *out = list;
    *count = n;
    return SHARD_OK;
}
