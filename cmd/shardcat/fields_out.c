/* fields_out.c - a sample's fields as sidecar files (see fields_out.h). */
#include "fields_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "safe_name.h"
#include "targets_out.h"

/* Bytes of key's stem: up to the last '.' of its last component (the whole
 * key when that has none), the rule sidecar files are named by. */
static size_t stem_len(const char *key, size_t len)
{
    for (size_t i = len; i > 0 && key[i - 1] != '/'; i--)
        if (key[i - 1] == '.')
            return i - 1;
    return len;
}

/* A suffix that is a file name's end as it is: printable ASCII without the
 * bytes safe_name.h escapes.  A declared suffix always is, unless the
 * manifest was written by hand. */
static int plain_suffix(const char *s)
{
    for (; *s; s++)
        if (*s <= 0x20 || *s >= 0x7f || *s == '/' || *s == '\\' || *s == '%')
            return 0;
    return 1;
}

static uint64_t get_le(const uint8_t *p, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A finite number in the fewest significant digits that read back as it
 * (at most `digits`: 17 for a double, 9 for a float32), else null. */
static int append_number(struct shard_buf *b, double v, int is_float32, struct shard_err *err)
{
    char num[40];
    if (!isfinite(v)) {
        snprintf(num, sizeof num, "null");
    } else {
        for (int digits = 1; digits <= (is_float32 ? 9 : 17); digits++) {
            snprintf(num, sizeof num, "%.*g", digits, v);
            double back = strtod(num, NULL);
            if (is_float32 ? (float)back == (float)v : back == v)
                break;
        }
    }
    return shard_buf_append(b, num, strlen(num), err);
}

static int append_text(struct shard_buf *b, const char *s, struct shard_err *err)
{
    return shard_buf_append(b, s, strlen(s), err);
}

/* The value of field value fv (declaration d) as JSON text and a newline. */
/* An INSTANCES value as COCO's uncompressed RLE, a list of one
 * {"size": [h, w], "counts": [...]} per mask (the read checked its runs). */
static int instances_json(const struct shard_field_value *fv, struct shard_buf *b,
                          struct shard_err *err)
{
    const uint8_t *p = fv->data;
    uint32_t w = (uint32_t)get_le(p, 4), h = (uint32_t)get_le(p + 4, 4);
    uint32_t count = (uint32_t)get_le(p + 8, 4);
    char num[64];
    int rc = append_text(b, "[", err);
    p += SHARD_INSTANCES_HEADER_BYTES;
    for (uint32_t k = 0; !rc && k < count; k++) {
        uint32_t runs = (uint32_t)get_le(p, 4);
        snprintf(num, sizeof num, "%s{\"size\":[%u,%u],\"counts\":[", k ? "," : "", h, w);
        rc = append_text(b, num, err);
        for (uint32_t r = 0; !rc && r < runs; r++) {
            snprintf(num, sizeof num, "%s%u", r ? "," : "", (uint32_t)get_le(p + 4 + 4 * r, 4));
            rc = append_text(b, num, err);
        }
        if (!rc)
            rc = append_text(b, "]}", err);
        p += 4 + 4 * (size_t)runs;
    }
    return rc ? rc : append_text(b, "]", err);
}

static int to_json(const struct shard_manifest *m, const struct shard_field_decl *d,
                   const struct shard_field_value *fv, struct shard_buf *b, struct shard_err *err)
{
    size_t size = d->type == SHARD_FIELD_FLOAT32 || d->type == SHARD_FIELD_LABELS ? 4 : 8;
    size_t n = (size_t)fv->len / size;
    int array = d->type == SHARD_FIELD_FLOAT32 || d->type == SHARD_FIELD_INT64 ||
                d->type == SHARD_FIELD_LABELS;
    int rc = array ? append_text(b, "[", err) : SHARD_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        const uint8_t *p = fv->data + i * size;
        if (i)
            rc = append_text(b, ",", err);
        if (rc)
            break;
        if (d->type == SHARD_FIELD_INT || d->type == SHARD_FIELD_INT64) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)(int64_t)get_le(p, 8));
            rc = append_text(b, num, err);
        } else if (d->type == SHARD_FIELD_FLOAT) {
            uint64_t bits = get_le(p, 8);
            double v;
            memcpy(&v, &bits, sizeof v);
            rc = append_number(b, v, 0, err);
        } else if (d->type == SHARD_FIELD_FLOAT32) {
            uint32_t bits = (uint32_t)get_le(p, 4);
            float v;
            memcpy(&v, &bits, sizeof v);
            rc = append_number(b, v, 1, err);
        } else { /* LABELS: the reader checked each number is below the label count */
            uint32_t label = (uint32_t)get_le(p, 4);
            json_t *s = json_string(label < m->label_count ? m->labels[label] : "");
            char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
            rc = text ? append_text(b, text, err)
                      : shard_err_set(err, SHARD_ENOMEM, "out of memory");
            free(text);
            json_decref(s);
        }
    }
    if (!rc && array)
        rc = append_text(b, "]", err);
    return rc ? rc : append_text(b, "\n", err);
}

/* 1 when a file name ends in ".jpg" or ".jpeg" (any case). */
static int names_jpeg(const char *name)
{
    size_t n = strlen(name);
    return (n >= 4 && !strcasecmp(name + n - 4, ".jpg")) ||
           (n >= 5 && !strcasecmp(name + n - 5, ".jpeg"));
}

/* An IMAGE value's pixels as the file its sidecar suffix names: JPEG (at
 * the dataset's quality) for ".jpg" and ".jpeg", else PNG.  The reader
 * checked the header against the value's length. */
static int image_file(const struct shard_manifest *m, const char *suffix,
                      const struct shard_field_value *fv, struct shard_buf *out,
                      struct shard_err *err)
{
    const uint8_t *h = fv->data;
    struct shard_image view = {
        .pixels = (uint8_t *)h + SHARD_IMAGE_HEADER_BYTES,
        .width = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24,
        .height = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 |
                  (uint32_t)h[7] << 24,
        .channels = h[8],
    };
    view.stride = (size_t)view.width * view.channels;
    view.capacity = view.stride * view.height;
    return shard_encode(&view, names_jpeg(suffix) ? SHARD_CODEC_JPEG : SHARD_CODEC_PNG,
                        m->config.quality, out, err);
}

/* Write one field's file.  0 or -1 (named). */
static int write_field(struct out_dir *d, const char *prog, const struct shard_manifest *m,
                       const struct shard_item *it, const struct shard_field_value *fv,
                       struct shard_buf *name_key, struct shard_buf *json)
{
    const struct shard_field_decl *decl = &m->config.fields[fv->field];
    const char *key = (const char *)it->key.data;
    size_t stem = stem_len(key, it->key.len);
    char suffix[SAFE_NAME_SIZE], shown[SHOWN_KEY_SIZE];
    const char *ext = decl->type == SHARD_FIELD_TEXT                                      ? ".txt"
                      : decl->type == SHARD_FIELD_BYTES                                   ? ".bin"
                      : decl->type == SHARD_FIELD_MASK || decl->type == SHARD_FIELD_IMAGE ? ".png"
                                                                                          : ".json";
    if (decl->sidecar)
        snprintf(suffix, sizeof suffix, "%s", decl->sidecar);
    else
        snprintf(suffix, sizeof suffix, ".%s%s", decl->name, ext);
    /* the name's key: the sidecar's (stem and suffix), for keys.tsv */
    struct shard_err err;
    name_key->len = 0;
    if (shard_buf_append(name_key, key, stem, &err) ||
        shard_buf_append(name_key, suffix, strlen(suffix), &err)) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    char name[SAFE_NAME_SIZE];
    int shortened;
    size_t n = plain_suffix(suffix) && strlen(suffix) < SAFE_NAME_SIZE / 2
                   ? safe_name(key, stem, suffix, name, &shortened)
                   : safe_name((const char *)name_key->data, name_key->len, "", name, &shortened);
    if (!n) {
        fprintf(stderr, "%s: field '%s' of '%s': its file's name is longer than %u bytes\n", prog,
                decl->name, key_for_message(key, it->key.len, shown), SHARD_KEY_MAX);
        return -1;
    }
    const void *data = fv->data;
    size_t len = (size_t)fv->len;
    if (decl->type != SHARD_FIELD_TEXT && decl->type != SHARD_FIELD_JSON &&
        decl->type != SHARD_FIELD_BYTES) {
        json->len = 0;
        int rc = decl->type == SHARD_FIELD_BOXES
                     ? targets_boxes_json(decl, fv->data, (size_t)fv->len, json, &err)
                 : decl->type == SHARD_FIELD_MASK
                     ? targets_mask_png(fv->data, (size_t)fv->len, json, &err)
                 : decl->type == SHARD_FIELD_IMAGE     ? image_file(m, suffix, fv, json, &err)
                 : decl->type == SHARD_FIELD_INSTANCES ? instances_json(fv, json, &err)
                                                       : to_json(m, decl, fv, json, &err);
        if (rc) {
            fprintf(stderr, "%s: field '%s' of '%s': %s\n", prog, decl->name,
                    key_for_message(key, it->key.len, shown), err.msg);
            return -1;
        }
        data = json->data;
        len = json->len;
    }
    if (out_dir_write(d, prog, name, (struct out_owner){it->index, fv->field}, data, len))
        return -1;
    return shortened ? out_dir_list(d, prog, name, (const char *)name_key->data, name_key->len) : 0;
}

int fields_write(struct out_dir *d, const char *prog, const struct shard_manifest *m,
                 const struct shard_item *it)
{
    struct shard_buf name_key = {0}, json = {0};
    int rc = 0;
    for (uint32_t i = 0; i < it->field_count; i++)
        if (it->fields[i].field < m->config.field_count &&
            write_field(d, prog, m, it, &it->fields[i], &name_key, &json))
            rc = -1;
    shard_buf_release(&name_key);
    shard_buf_release(&json);
    return rc;
}
