/* json.c - byte strings in JSON (see shardx_json.h). */
#include "shardx_json.h"

#include <stdlib.h>
#include <string.h>

int shardx_json_set_bytes(json_t *obj, const char *name, const char *bytes, size_t len)
{
    json_t *s = json_stringn(bytes, len); /* NULL when not valid UTF-8 */
    if (s)
        return json_object_set_new(obj, name, s) ? -1 : 0;
    static const char digits[] = "0123456789abcdef";
    static const char suffix[] = "_hex";
    size_t name_len = strlen(name);
    char *hex = malloc(2 * len + 1), *field = malloc(name_len + sizeof suffix);
    if (!hex || !field) {
        free(hex);
        free(field);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        hex[2 * i] = digits[(unsigned char)bytes[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)bytes[i] & 15];
    }
    hex[2 * len] = '\0';
    memcpy(field, name, name_len);
    memcpy(field + name_len, suffix, sizeof suffix);
    int bad = json_object_set_new(obj, field, json_string(hex));
    free(hex);
    free(field);
    return bad ? -1 : 0;
}

int shardx_json_set_key(json_t *obj, const char *key, size_t len)
{
    return shardx_json_set_bytes(obj, "key", key, len);
}
