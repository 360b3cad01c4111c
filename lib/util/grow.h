/* grow.h - arrays that grow by doubling, in the spirit of git's ALLOC_GROW
 * (private).
 *
 *     struct item *items = NULL;
 *     size_t count = 0, cap = 0;
 *     if (SK_GROW(items, cap, count + 1, 64))
 *         return shard_err_set(err, SHARD_ENOMEM, "out of memory");
 *     items[count++] = item;
 */
#ifndef SHARDKIT_GROW_H
#define SHARDKIT_GROW_H

#include <stddef.h>

/* Make the array *array_ptr (a pointer to the array's pointer: T **, its
 * elements elem_size bytes each) hold at least `need` elements, *cap being
 * how many it holds now.  When need > *cap, the array is reallocated to
 * *cap elements (`initial`, at least 1, for an empty one) doubled until
 * `need` fits (just `need` where doubling would overflow), and *cap is set
 * to that.
 * 0, or SHARD_ENOMEM when need * elem_size does not fit in a size_t or the
 * allocation fails: then the array and *cap are as they were.  elem_size
 * is not 0. */
int sk_grow(void *array_ptr, size_t *cap, size_t need, size_t elem_size, size_t initial);

/* sk_grow on an array and its size_t capacity, the element size from the
 * array's type. */
#define SK_GROW(array, cap, need, initial) \
    sk_grow(&(array), &(cap), (need), sizeof *(array), (initial))

#endif
