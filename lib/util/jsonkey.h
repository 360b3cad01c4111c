/* jsonkey.h - putting byte strings into JSON (private).
 * JSON strings must be UTF-8; file names need not be.  A key that is valid
 * UTF-8 is stored as "key"; otherwise its bytes go to "key_hex". */
#ifndef SHARDKIT_JSONKEY_H
#define SHARDKIT_JSONKEY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "shardkit/error.h"

/* Set obj["key"] (or obj["key_hex"]).  0 or SHARD_ENOMEM. */
int sk_jsonkey_set(json_t *obj, const char *key, size_t len, struct shard_err *err);
/* The same under another member name: obj[name] or obj[name + "_hex"]. */
int sk_jsonkey_set_named(json_t *obj, const char *name, const char *bytes, size_t len,
                         struct shard_err *err);
/* Read obj["key"] or obj["key_hex"] into a malloc'd, NUL-terminated copy of
 * 1..max bytes (max 0: any length; a sample's key is at most SHARD_KEY_MAX,
 * a reject's may be longer: that is why it was rejected).
 * 0, SHARD_ECORRUPT (missing, wrong type, bad hex, too long) or SHARD_ENOMEM. */
int sk_jsonkey_get(const json_t *obj, size_t max, char **key, size_t *len, struct shard_err *err);
/* A label name for JSON: itself if valid UTF-8, else with every byte >= 0x80
 * and '%' written as %XX.  malloc'd. */
char *sk_jsonkey_label_name(const char *name, size_t len);
/* Integer field >= 0 (jansson integers are signed 64-bit). */
int sk_jsonkey_uint(const json_t *obj, const char *field, uint64_t *out, struct shard_err *err);
/* "16 hex digits" field. */
int sk_jsonkey_hex64(const json_t *obj, const char *field, uint64_t *out, struct shard_err *err);
/* Set an unsigned field; values above INT64_MAX cannot be stored in jansson. */
int sk_jsonkey_set_uint(json_t *obj, const char *field, uint64_t v);
int sk_jsonkey_set_hex64(json_t *obj, const char *field, uint64_t v);

#endif
