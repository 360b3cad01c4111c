/* older_names.c - the helpers 0.1.0 exported that moved to the programs'
 * own sources (lib/shardx, not exported): still exported, deprecated, until
 * CHANGELOG.md's removal version (shardkit/error.h, util.h and json.h). */
#include <jansson.h>
#include <stdint.h>

#include "shardx/shardx.h"
#include "shardx/shardx_json.h"
#include "shardkit/error.h"
#include "shardkit/json.h"
#include "shardkit/util.h"

const char *shard_quote(const char *s, size_t len, char *out, size_t out_size)
{
    return shardx_quote(s, len, out, out_size);
}

size_t shard_utf8_len(const unsigned char *p, size_t avail)
{
    return shardx_utf8_len(p, avail);
}

size_t shard_utf8_shown_len(const unsigned char *p, size_t avail)
{
    return shardx_utf8_shown_len(p, avail);
}

char *shard_redact_urls(const char *text)
{
    return shardx_redact_urls(text);
}

int shard_size_parse(const char *s, uint64_t *out)
{
    return shardx_size_parse(s, out) ? SHARD_EINVAL : SHARD_OK;
}

const char *shard_size_format(uint64_t bytes, char *out, size_t out_size)
{
    return shardx_size_format(bytes, out, out_size);
}

double shard_size_unit(uint64_t max, const char **name)
{
    return shardx_size_unit(max, name);
}

int shard_json_set_key(struct json_t *obj, const char *key, size_t len)
{
    return shardx_json_set_key(obj, key, len) ? SHARD_ENOMEM : SHARD_OK;
}

int shard_json_set_bytes(struct json_t *obj, const char *name, const char *bytes, size_t len)
{
    return shardx_json_set_bytes(obj, name, bytes, len) ? SHARD_ENOMEM : SHARD_OK;
}
