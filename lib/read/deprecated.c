/* deprecated.c - dataset.h's older names (its last section), each the new
 * function under the name shardkit 0.1.0 exported. */
#include "shardkit/dataset.h"

void shard_dataset_drop_cache(struct shard_dataset *ds)
{
    shard_dataset_drop_window_cache(ds);
}
