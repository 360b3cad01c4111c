/* version.c - the version of the library that is linked (see shardkit/api.h). */
#include "shardkit/api.h"

const char *shard_version(void)
{
    return SHARDKIT_VERSION;
}
