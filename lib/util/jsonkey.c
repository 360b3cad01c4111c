/* jsonkey.c - byte strings, unsigned integers and hashes in JSON (see jsonkey.h). */
#include "util/jsonkey.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shardx/shardx.h"
#include "shardkit/util.h"
#include "shardx/shardx_json.h"

/* obj[name] = bytes when they are valid UTF-8, else obj[name + "_hex"] = their hex. */
static int set_bytes(json_t *obj, const char *name, const char *bytes, size_t len,
                     struct shard_err *err)
{
    return shardx_json_set_bytes(obj, name, bytes, len) ? shard_err_set(err, SHARD_ENOMEM, "json")
                                                        : SHARD_OK;
}

int sk_jsonkey_set(json_t *obj, const char *key, size_t len, struct shard_err *err)
{
    return set_bytes(obj, "key", key, len, err);
}

int sk_jsonkey_set_named(json_t *obj, const char *name, const char *bytes, size_t len,
                         struct shard_err *err)
{
    return set_bytes(obj, name, bytes, len, err);
}

int sk_jsonkey_get(const json_t *obj, size_t max, char **key, size_t *len, struct shard_err *err)
{
    if (!max)
        max = SIZE_MAX;
    *key = NULL;
    *len = 0;
    const json_t *s = json_object_get(obj, "key");
    if (s) {
        if (!json_is_string(s))
            return shard_err_set(err, SHARD_ECORRUPT, "\"key\" is not a string");
        size_t n = json_string_length(s);
        if (n == 0 || n > max || memchr(json_string_value(s), '\0', n))
            return shard_err_set(err, SHARD_ECORRUPT, "\"key\" is empty, too long or has NUL");
        *key = malloc(n + 1);
        if (!*key)
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        memcpy(*key, json_string_value(s), n + 1);
        *len = n;
        return SHARD_OK;
    }
    s = json_object_get(obj, "key_hex");
    if (!json_is_string(s))
        return shard_err_set(err, SHARD_ECORRUPT, "entry has no \"key\" or \"key_hex\"");
    const char *hex = json_string_value(s);
    size_t n = json_string_length(s);
    if (n == 0 || n % 2 || n / 2 > max)
        return shard_err_set(err, SHARD_ECORRUPT, "\"key_hex\" has a bad length");
    char *k = malloc(n / 2 + 1);
    if (!k)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t i = 0; i < n / 2; i++) {
        int hi = shardx_hex_value(hex[2 * i]), lo = shardx_hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(k);
            return shard_err_set(err, SHARD_ECORRUPT, "\"key_hex\" is not hex bytes");
        }
        k[i] = (char)(hi << 4 | lo);
    }
    k[n / 2] = '\0';
    *key = k;
    *len = n / 2;
    return SHARD_OK;
}

char *sk_jsonkey_label_name(const char *name, size_t len)
{
    json_t *probe = json_stringn(name, len);
    int utf8 = probe != NULL;
    json_decref(probe);
    char *out = malloc(utf8 ? len + 1 : 3 * len + 1);
    if (!out)
        return NULL;
    if (utf8) {
        memcpy(out, name, len);
        out[len] = '\0';
        return out;
    }
    static const char digits[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x80 || c == '%') {
            out[n++] = '%';
            out[n++] = digits[c >> 4];
            out[n++] = digits[c & 15];
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
    return out;
}

int sk_jsonkey_uint(const json_t *obj, const char *field, uint64_t *out, struct shard_err *err)
{
    const json_t *v = json_object_get(obj, field);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return shard_err_set(err, SHARD_ECORRUPT, "\"%s\" is missing or not a count", field);
    *out = (uint64_t)json_integer_value(v);
    return SHARD_OK;
}

int sk_jsonkey_hex64(const json_t *obj, const char *field, uint64_t *out, struct shard_err *err)
{
    const json_t *v = json_object_get(obj, field);
    if (!json_is_string(v) || shard_hex64_parse(json_string_value(v), out) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "\"%s\" is missing or not 16 hex digits", field);
    return SHARD_OK;
}

int sk_jsonkey_set_uint(json_t *obj, const char *field, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        return SHARD_EINVAL;
    return json_object_set_new(obj, field, json_integer((json_int_t)v)) ? SHARD_ENOMEM : SHARD_OK;
}

int sk_jsonkey_set_hex64(json_t *obj, const char *field, uint64_t v)
{
    char hex[17];
    shard_hex64(v, hex);
    return json_object_set_new(obj, field, json_string(hex)) ? SHARD_ENOMEM : SHARD_OK;
}
