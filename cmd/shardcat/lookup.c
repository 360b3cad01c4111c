/* lookup.c - the samples named on the command line (see lookup.h). */
#include "lookup.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safe_name.h"

#define PROG "shardcat"

struct wanted {
    const char *key;
    size_t len;
    int position; /* on the command line */
    uint64_t index;
    int found;
};

static int compare_wanted(const void *pa, const void *pb)
{
    const struct wanted *a = pa, *b = pb;
    return shard_key_compare(a->key, a->len, b->key, b->len);
}

static int by_position(const void *pa, const void *pb)
{
    const struct wanted *a = pa, *b = pb;
    return a->position - b->position;
}

/* Mark every wanted entry equal to the index line s as found at its index. */
static void mark(struct shard_dataset *ds, struct wanted *w, size_t n, const struct shard_sample *s)
{
    struct wanted probe = {s->key, s->key_len, 0, 0, 0};
    struct wanted *hit = bsearch(&probe, w, n, sizeof *w, compare_wanted);
    uint64_t index;
    struct shard_err err;
    if (!hit || shard_dataset_index_of(ds, s->shard, s->record, &index, &err))
        return; /* not wanted, or an index line pointing nowhere: shardcheck reports it */
    while (hit > w && !compare_wanted(hit - 1, &probe))
        hit--;
    for (; hit < w + n && !compare_wanted(hit, &probe); hit++)
        if (!hit->found) {
            hit->found = 1;
            hit->index = index;
        }
}

int lookup_keys(struct shard_dataset *ds, const char *dst, char **keys, int count,
                uint64_t **indices, uint64_t *found, uint64_t *missing)
{
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    size_t n = (size_t)count;
    struct wanted *w = calloc(n ? n : 1, sizeof *w);
    *indices = malloc((n ? n : 1) * sizeof **indices);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dst, m->index_file);
    struct shard_index_reader *rd = NULL;
    struct shard_err err;
    int rc = -1;
    if (!w || !*indices) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        w[i] = (struct wanted){keys[i], strlen(keys[i]), (int)i, 0, 0};
    qsort(w, n, sizeof *w, compare_wanted);
    if (shard_index_reader_open(&rd, path, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        goto out;
    }
    shard_index_reader_set_config(rd, &m->config); /* lines of a dataset with fields */
    struct shard_sample s;
    int got;
    while ((got = shard_index_reader_next(rd, &s, &err)) == 1)
        mark(ds, w, n, &s);
    if (got < 0) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        goto out;
    }
    qsort(w, n, sizeof *w, by_position);
    *found = *missing = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[SHOWN_KEY_SIZE];
        if (w[i].found) {
            (*indices)[(*found)++] = w[i].index;
        } else {
            char *shown = shard_redact_urls(dst); /* never a URL's password */
            fprintf(stderr, "%s: no sample with key '%s' in '%s'\n", PROG,
                    key_for_message(w[i].key, w[i].len, buf), shown ? shown : "the dataset");
            free(shown);
            (*missing)++;
        }
    }
    rc = 0;
out:
    shard_index_reader_close(rd);
    free(w);
    if (rc) {
        free(*indices);
        *indices = NULL;
    }
    return rc;
}
