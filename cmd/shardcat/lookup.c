/* lookup.c - the samples named on the command line (see lookup.h). */
#include "lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safe_name.h"
#include "shardx.h"

#define PROG "shardcat"

int lookup_keys(struct shard_dataset *ds, const char *dst, char **keys, int count,
                uint64_t **indices, uint64_t *found, uint64_t *missing)
{
    size_t n = (size_t)count;
    *found = *missing = 0;
    if (!(*indices = malloc((n ? n : 1) * sizeof **indices))) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(keys[i]);
        struct shard_err err;
        int rc = shard_dataset_find_key(ds, keys[i], len, &(*indices)[*found], &err);
        if (!rc) {
            (*found)++;
        } else if (rc == SHARD_ENOTFOUND) {
            char buf[SHOWN_KEY_SIZE];
            char *shown = shardx_redact_urls(dst); /* never a URL's password */
            fprintf(stderr, "%s: no sample with key '%s' in '%s'\n", PROG,
                    key_for_message(keys[i], len, buf), shown ? shown : "the dataset");
            free(shown);
            (*missing)++;
        } else {
            fprintf(stderr, "%s: %s\n", PROG, err.msg);
            free(*indices);
            *indices = NULL;
            return -1;
        }
    }
    return 0;
}
