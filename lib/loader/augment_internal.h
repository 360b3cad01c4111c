/* augment_internal.h - what the loader asks of a transform list (private). */
#ifndef SHARDKIT_AUGMENT_INTERNAL_H
#define SHARDKIT_AUGMENT_INTERNAL_H

#include "shardkit/loader.h"

/* 1 when `a` writes its input unchanged: no steps, uint8, NHWC (NULL too). */
int sk_augment_is_identity(const struct shard_augment *a);

#endif
