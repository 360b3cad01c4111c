/* options.h - shardify's command line: the usage text and its parsing. */
#ifndef SHARDIFY_OPTIONS_H
#define SHARDIFY_OPTIONS_H

#include "shardkit.h"

struct options {
    struct shardify_options run; /* what shardify_run takes */
    const char *src;
    const char *dst;
    int json;                                 /* --json: the summary as JSON on stdout */
    int quiet;                                /* --quiet: no progress or summary on stderr */
    const char *fields[SHARD_FIELDS_MAX + 1]; /* --field, in order (run.fields points here) */
    const char *annotations;                  /* --annotations as given, or NULL */
    const char *key_column;                   /* --key-column as given, or NULL */
    char *metadata; /* the metadata table found in the split (run.annotations), or NULL */
    char **splits;  /* SRC's split folders, each converted on its own (no --split) */
    size_t split_count;
};

/* Fill *o from the command line (defaults first).  -h and --version print
 * and exit.  CLI_EXIT_OK; CLI_EXIT_USAGE, or CLI_EXIT_FAILED for a --labels
 * CSV file that cannot be used, with the message printed. */
int options_parse(int argc, char **argv, struct options *o);

/* Convert the split folder `split` of SRC (NULL: SRC itself): run.split,
 * and run.annotations the --annotations table or else a Hugging Face
 * metadata table of that folder (metadata.jsonl or metadata.csv, keyed by
 * file_name) when a field or a --labels column reads one.  CLI_EXIT_OK, or
 * CLI_EXIT_FAILED with the message printed. */
int options_for_split(struct options *o, const char *split);
void options_release(struct options *o);

#endif
