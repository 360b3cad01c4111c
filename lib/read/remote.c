/* remote.c - whole files at a remote location (see shardkit/dataset.h): the
 * HTTP backend's one-GET read (read/fetch_http.h) under a dataset's options,
 * with counters of its own. */
#include <stdlib.h>

#include "read/fetch_http.h"
#include "read/observer.h"
#include "shardkit/dataset.h"

struct shard_remote {
    struct fetch *http;
    struct shard_read_observer observer; /* the caller's, copied */
    struct sk_read_counters counters;
};

int shard_location_is_remote(const char *location)
{
    return sk_fetch_http_is_remote(location);
}

int shard_remote_open(struct shard_remote **out, const char *location,
                      const struct shard_dataset_options *o, struct shard_err *err)
{
    *out = NULL;
    struct fetch_http_options ho;
    int rc = sk_fetch_http_options_from(&ho, o, err);
    if (rc)
        return rc;
    if (!sk_fetch_http_is_remote(location))
        return shard_err_set(err, SHARD_EINVAL,
                             "'%s' is not a remote location (http://, "
                             "https://, s3://)",
                             location);
    struct shard_remote *r = calloc(1, sizeof *r);
    if (!r)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (ho.reading.observer) {
        r->observer = *ho.reading.observer;
        ho.reading.observer = &r->observer;
    }
    ho.counters = &r->counters;
    if ((rc = sk_fetch_http_new(&r->http, location, &ho, err))) {
        free(r);
        return rc;
    }
    *out = r;
    return SHARD_OK;
}

int shard_remote_get(struct shard_remote *r, const char *name, uint64_t max_bytes,
                     struct shard_buf *buf, struct shard_err *err)
{
    return sk_fetch_http_get(r->http, name, max_bytes, buf, err);
}

void shard_remote_stats(const struct shard_remote *r, struct shard_read_stats *out)
{
    sk_read_counters_get(&r->counters, out);
}

void shard_remote_close(struct shard_remote *r)
{
    if (!r)
        return;
    fetch_free(r->http);
    free(r);
}
