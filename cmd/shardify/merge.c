/* merge.c - `shardify merge DST`: one dataset from the parts in DST/parts
 * (shardify_merge, shardkit/merge.h). */
#include "merge.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_json.h"
#include "shardkit.h"

#define PROG "shardify merge"

static const char usage_text[] =
    "Usage: shardify merge [OPTIONS] DST\n"
    "Publish one dataset in DST from the parts 'shardify --part I/N SRC DST' wrote\n"
    "into DST/parts/I-of-N (parts written to other DSTs are gathered there first).\n"
    "\n"
    "Checks that every part 0..N-1 is there and complete, made from the same\n"
    "listing of SRC with the same options by the same format version, then\n"
    "writes DST/manifest.json (last) over all the parts' shards and indexes, which\n"
    "are hard-linked into DST (DST/parts must be on DST's file system): part I's\n"
    "index and key table become DST/index-I-of-N.jsonl and .keys.  No byte of a\n"
    "shard or an index is rewritten or read: a merge costs in proportion to the\n"
    "parts, not the samples (shardcheck reads them).  A part that is missing, incomplete or\n"
    "different is an error naming it and what differs, and so is anything in the\n"
    "way of publishing (checked, and the shards linked, before a previous merge\n"
    "is unpublished): nothing is published and a previous merge stays published.\n"
    "As a single run would, the merge refuses parts that hold no sample (every\n"
    "candidate rejected, or none; parts run with --allow-empty publish them) and\n"
    "a declared field that no sample of any part has.\n"
    "The merged dataset has the samples, labels, source hashes, pixels, rejects\n"
    "and sample order of a single run with the same options; its shard files and\n"
    "index files, and the lines' shard/record fields, follow the split.  Merging the same parts\n"
    "again gives the same manifest.\n"
    "\n"
    "Options:\n"
    "  --json       print the summary as one JSON object on stdout\n"
    "  --quiet      no summary on stderr (errors are still shown)\n"
    "  -h, --help   show this help\n"
    "  --version    show the version\n"
    "\n"
    "Exit status: 0 published; 1 not published (the message says which part and\n"
    "why); 2 usage error.\n";

enum { OPT_JSON = CLI_FIRST_LONG_OPTION, OPT_QUIET, OPT_VERSION };

static const struct option long_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

struct merge_options {
    int json;
    int quiet;
};

static int parse_option(int opt, void *ctx, char **argv)
{
    struct merge_options *o = ctx;
    switch (opt) {
    case OPT_JSON: o->json = 1; break;
    case OPT_QUIET: o->quiet = 1; break;
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

int merge_main(int argc, char **argv)
{
    struct merge_options o = {0, 0};
    int rc = cli_parse_options(argc, argv, long_options, parse_option, &o);
    if (rc)
        return rc;
    if (argc - optind != 1)
        return cli_usage_error(PROG, "expected DST, got %d operands", argc - optind);
    const char *dst = argv[optind];
    struct shardify_merge_summary s;
    struct shard_err err;
    shard_err_clear(&err);
    rc = shardify_merge(dst, &s, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
    else if (!o.quiet)
        fprintf(stderr,
                "%s: published '%s' from %u parts: %llu samples, %llu rejected, %u "
                "shards, %llu bytes in %.3f s\n",
                PROG, dst, s.parts, (unsigned long long)s.samples, (unsigned long long)s.rejected,
                s.shards, (unsigned long long)s.bytes, s.seconds);
    if (!rc && !o.quiet && s.mixed)
        fprintf(stderr,
                "%s: pixels of several forms: it reads as %s %u-bit, each narrower image "
                "widened when read\n",
                PROG, shard_pixels_name(s.channels), s.depth);
    if (o.json) {
        json_t *j = json_object();
        json_object_set_new(j, "status", json_string(rc ? "failed" : "ok"));
        if (rc) {
            json_object_set_new(j, "error", cli_json_text(err.msg));
            json_object_set_new(j, "error_code", json_integer(rc));
        }
        json_object_set_new(j, "parts", json_integer(s.parts));
        json_object_set_new(j, "samples", json_integer((json_int_t)s.samples));
        json_object_set_new(j, "rejected", json_integer((json_int_t)s.rejected));
        json_object_set_new(j, "shards", json_integer(s.shards));
        json_object_set_new(j, "bytes_out", json_integer((json_int_t)s.bytes));
        json_object_set_new(j, "seconds", json_real(s.seconds));
        if (!rc) {
            json_object_set_new(j, "pixels", json_string(shard_pixels_name(s.channels)));
            json_object_set_new(j, "depth", json_integer(s.depth));
            json_object_set_new(j, "mixed", json_boolean(s.mixed));
        }
        cli_json_print(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    return rc ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
