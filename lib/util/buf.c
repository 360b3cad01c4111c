/* buf.c - growable byte buffers (see shardkit/util.h). */
#include "shardkit/util.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

int shard_buf_reserve(struct shard_buf *b, size_t cap, struct shard_err *err)
{
    /* Grow geometrically so repeated appends stay linear. */
    if (SK_GROW(b->data, b->cap, cap, 256))
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %zu bytes", cap);
    return SHARD_OK;
}

int shard_buf_append(struct shard_buf *b, const void *p, size_t n, struct shard_err *err)
{
    if (n > SIZE_MAX - b->len)
        return shard_err_set(err, SHARD_ENOMEM, "buffer size overflow");
    int rc = shard_buf_reserve(b, b->len + n, err);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return SHARD_OK;
}

void shard_buf_release(struct shard_buf *b)
{
    if (!b)
        return;
    free(b->data);
    memset(b, 0, sizeof *b);
}
