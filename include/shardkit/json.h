/*
 * shardkit/json.h - sample keys (and other byte strings) in JSON, for tools
 * that build reports with jansson.  Not pulled in by shardkit.h: it needs
 * <jansson.h>.
 */
#ifndef SHARDKIT_JSON_H
#define SHARDKIT_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "shardkit/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set obj["key"] to the key when it is valid UTF-8, else obj["key_hex"] to
 * its bytes in hex: the same rule as index.jsonl and manifest.json, so a
 * report names a key exactly as the dataset does.  0 or SHARD_ENOMEM. */
SHARD_API int shard_json_set_key(json_t *obj, const char *key, size_t len);

/* The same rule for any byte string, a path for one: obj[name] when the
 * bytes are valid UTF-8, else obj[name + "_hex"] (e.g. "dataset_hex").
 * 0 or SHARD_ENOMEM. */
SHARD_API int shard_json_set_bytes(json_t *obj, const char *name, const char *bytes, size_t len);

#ifdef __cplusplus
}
#endif
#endif
