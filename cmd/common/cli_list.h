/* cli_list.h - comma-separated lists of numbers on the command line. */
#ifndef SHARDKIT_CLI_LIST_H
#define SHARDKIT_CLI_LIST_H

#include <stddef.h>
#include <stdint.h>

/* Parse "N[,N...]" (decimal numbers in [min, max], no empty items, no
 * spaces) into out[0..capacity).  Returns the number of items, or -1 for a
 * malformed list, a number out of range or more than `capacity` items. */
int cli_parse_u32_list(const char *s, uint32_t min, uint32_t max, uint32_t *out, size_t capacity);

#endif
