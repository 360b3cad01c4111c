/* deprecated.c - image.h's older names (its last section), each the new
 * function under the name shardkit 0.1.0 exported. */
#include "shardkit/image.h"

int shard_transform(const struct shard_image *src, const struct shard_geometry *g,
                    struct shard_image *tmp, struct shard_image *dst, struct shard_err *err)
{
    return shard_geometry_apply(src, g, tmp, dst, err);
}

int shard_transform_from(const struct shard_image *src, const struct shard_decode_info *info,
                         const struct shard_geometry *g, struct shard_image *tmp,
                         struct shard_image *dst, struct shard_err *err)
{
    return shard_geometry_apply_decoded(src, info, g, tmp, dst, err);
}
