/*
 * shardkit/json.h - older names only (deprecated): sample keys and other
 * byte strings in JSON, which 0.1.0 exported for the tools' reports.  They
 * are the tools' own now (lib/shardx, compiled into the programs, not
 * exported); these stay exported until CHANGELOG.md's removal version.
 * Not pulled in by shardkit.h.  This header does not include <jansson.h>:
 * `struct json_t` is jansson's json_t, which a caller has from jansson.
 *
 * Tier: none (deprecated).  See shardkit/api.h for the tiers.
 */
#ifndef SHARDKIT_JSON_H
#define SHARDKIT_JSON_H

#include <stddef.h>

#include "shardkit/api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

/* Set obj["key"] to the key when it is valid UTF-8, else obj["key_hex"] to
 * its bytes in hex: the same rule as index.jsonl and manifest.json.
 * 0 or SHARD_ENOMEM. */
SHARD_API int shard_json_set_key(struct json_t *obj, const char *key, size_t len)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");

/* The same rule for any byte string: obj[name] when the bytes are valid
 * UTF-8, else obj[name + "_hex"].  0 or SHARD_ENOMEM. */
SHARD_API int shard_json_set_bytes(struct json_t *obj, const char *name, const char *bytes,
                                   size_t len)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");

#ifdef __cplusplus
}
#endif
#endif
