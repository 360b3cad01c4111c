/*
 * shardx_json.h - byte strings (sample keys, paths) in JSON, for the
 * library's files and the tools' reports alike (private; not installed: see
 * shardx.h).  JSON strings must be UTF-8; keys and file names need not be.
 */
#ifndef SHARDKIT_SHARDX_JSON_H
#define SHARDKIT_SHARDX_JSON_H

#include <jansson.h>
#include <stddef.h>

/* Set obj[name] to the bytes when they are valid UTF-8, else
 * obj[name + "_hex"] to their bytes in hex (e.g. "dataset_hex"): the rule
 * of index.jsonl and manifest.json, so that a report names a key exactly as
 * the dataset does.  0, or -1 (out of memory). */
int shardx_json_set_bytes(json_t *obj, const char *name, const char *bytes, size_t len);

/* shardx_json_set_bytes under the name "key" ("key" or "key_hex"). */
int shardx_json_set_key(json_t *obj, const char *key, size_t len);

#endif
