/* train_steps.h - the training transforms the benchmarks time
 * (augment_speed.c, train_ceiling.c), as bench/train_input.py gives them to
 * the Loader: RandomResizedCrop(crop) + RandomHorizontalFlip + Normalize
 * with ImageNet's mean and std. */
#ifndef SHARDKIT_BENCH_TRAIN_STEPS_H
#define SHARDKIT_BENCH_TRAIN_STEPS_H

#include <string.h>

#include "shardkit/loader.h"

#define TRAIN_STEPS 3

static inline void train_steps_init(struct shard_transform_step steps[TRAIN_STEPS], uint32_t crop)
{
    static const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    shard_transform_step_init(&steps[0], SHARD_TRANSFORM_RANDOM_RESIZED_CROP);
    steps[0].width = steps[0].height = crop;
    shard_transform_step_init(&steps[1], SHARD_TRANSFORM_HORIZONTAL_FLIP);
    shard_transform_step_init(&steps[2], SHARD_TRANSFORM_NORMALIZE);
    memcpy(steps[2].mean, mean, sizeof mean);
    memcpy(steps[2].std, std, sizeof std);
}

#endif
