/* buf.c - growable byte buffers (see shardkit/util.h). */
#include "shardkit/util.h"

#include <stdlib.h>
#include <string.h>

int shard_buf_reserve(struct shard_buf *b, size_t cap, struct shard_err *err)
{
    if (cap <= b->cap)
        return SHARD_OK;
    /* Grow geometrically so repeated appends stay linear. */
    size_t want = b->cap ? b->cap : 256;
    while (want < cap) {
        if (want > SIZE_MAX / 2) {
            want = cap;
            break;
        }
        want *= 2;
    }
    uint8_t *p = realloc(b->data, want);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate %zu bytes", want);
    b->data = p;
    b->cap = want;
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
