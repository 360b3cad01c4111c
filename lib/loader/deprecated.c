/* deprecated.c - loader.h's older names (its last section), each the new
 * function under the name shardkit 0.1.0 exported. */
#include "shardkit/loader.h"

void shard_augment_step_init(struct shard_transform_step *s, enum shard_transform_op op)
{
    shard_transform_step_init(s, op);
}

int shard_augment_new(struct shard_transforms **out, const struct shard_transform_step *steps,
                      size_t count, enum shard_layout layout, enum shard_dtype dtype,
                      struct shard_err *err)
{
    return shard_transforms_new(out, steps, count, layout, dtype, err);
}

void shard_augment_free(struct shard_transforms *a)
{
    shard_transforms_free(a);
}

enum shard_layout shard_augment_layout(const struct shard_transforms *a)
{
    return shard_transforms_layout(a);
}

enum shard_dtype shard_augment_dtype(const struct shard_transforms *a)
{
    return shard_transforms_dtype(a);
}

int shard_augment_fixed_size(const struct shard_transforms *a, uint32_t *width, uint32_t *height)
{
    return shard_transforms_fixed_size(a, width, height);
}

int shard_augment_draw(const struct shard_transforms *a, uint32_t width, uint32_t height,
                       uint64_t seed, uint64_t epoch, uint64_t index,
                       struct shard_transforms_draws *out, struct shard_err *err)
{
    return shard_transforms_draw(a, width, height, seed, epoch, index, out, err);
}

int shard_augment_workspace_new(struct shard_transforms_workspace **out, struct shard_err *err)
{
    return shard_transforms_workspace_new(out, err);
}

void shard_augment_workspace_free(struct shard_transforms_workspace *w)
{
    shard_transforms_workspace_free(w);
}

int shard_augment_apply(const struct shard_transforms *a, const struct shard_image *src,
                        const struct shard_transforms_draws *draws,
                        struct shard_transforms_workspace *w, void *dst, struct shard_err *err)
{
    return shard_transforms_apply(a, src, draws, w, dst, err);
}

size_t shard_augment_boxes(const struct shard_transforms *a, const struct shard_transforms_draws *d,
                           double dx, double dy, double min_size, const uint8_t *in, size_t n,
                           uint8_t *out)
{
    return shard_transforms_boxes(a, d, dx, dy, min_size, in, n, out);
}

int shard_augment_mask(const struct shard_transforms *a, const struct shard_image *mask,
                       const struct shard_transforms_draws *d, struct shard_transforms_workspace *w,
                       void *dst, struct shard_err *err)
{
    return shard_transforms_mask(a, mask, d, w, dst, err);
}
