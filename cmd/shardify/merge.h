/* merge.h - the `shardify merge` subcommand. */
#ifndef SHARDIFY_MERGE_H
#define SHARDIFY_MERGE_H

/* argv[0] is "merge".  Returns the exit status. */
int merge_main(int argc, char **argv);

#endif
