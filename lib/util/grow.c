/* grow.c - arrays that grow by doubling (see grow.h). */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit/error.h"

int sk_grow(void *array_ptr, size_t *cap, size_t need, size_t elem_size, size_t initial)
{
    if (need <= *cap)
        return SHARD_OK;
    const size_t max = SIZE_MAX / elem_size;
    if (need > max)
        return SHARD_ENOMEM;
    size_t c = *cap ? *cap : initial ? initial : 1;
    while (c < need)
        c = c > max / 2 ? need : 2 * c;
    if (c > max)
        c = need;
    /* the caller's T * is read and written as the void * it converts to
     * (memcpy: no aliasing of T * as void *) */
    void *old;
    memcpy(&old, array_ptr, sizeof old);
    void *grown = realloc(old, c * elem_size);
    if (!grown)
        return SHARD_ENOMEM;
    memcpy(array_ptr, &grown, sizeof grown);
    *cap = c;
    return SHARD_OK;
}
