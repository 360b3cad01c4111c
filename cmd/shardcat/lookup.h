/* lookup.h - the samples named on the command line, found by their keys
 * (shard_dataset_find_key: the key tables, or the index files of a dataset
 * written before them; local or remote). */
#ifndef SHARDCAT_LOOKUP_H
#define SHARDCAT_LOOKUP_H

#include <stdint.h>

#include "shardkit.h"

/* Find keys[0..count) in the dataset at `dst` (opened as ds): *indices
 * (malloc'd) gets the dataset indices of the keys found, in command-line
 * order, *found their number; each key that is not there is named on stderr
 * and counted in *missing.  0, or -1 for a dataset whose keys cannot be
 * searched (a damaged key table, an unreadable index: message printed). */
int lookup_keys(struct shard_dataset *ds, const char *dst, char **keys, int count,
                uint64_t **indices, uint64_t *found, uint64_t *missing);

#endif
