/* options.c - shardcat's command line (see options.h). */
#include "options.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "out_dir.h"

#define PROG "shardcat"

static const char usage_text[] =
    "Usage: shardcat [OPTIONS] DST [KEY...] --out DIR\n"
    "Write stored samples of the dataset DST as PNG files in DIR, in the form\n"
    "they are stored (grey, alpha and 16 bits kept): the pixels\n"
    "training will see (orientation applied, colours converted, resized).\n"
    "\n"
    "  DST        a shardify output directory, or an http(s):// or s3:// location\n"
    "  KEY...     keys of the samples to write; without any, every sample in\n"
    "             stored order\n"
    "\n"
    "Options:\n"
    "  --out DIR      where to write (created if missing; required; not inside\n"
    "                 DST, and not a symbolic link)\n"
    "  --limit N      write at most N samples\n"
    "  --threads N    decoding threads (default: CPUs this process may use)\n"
    "  --draw         draw each sample's boxes and mask outlines on its PNG, each\n"
    "                 class in its own colour: what a detection or segmentation\n"
    "                 model is trained on\n"
    "  -h, --help     show this help\n"
    "  --version      show the version\n"
    "\n"
    "Each sample becomes DIR/NAME.png, NAME being its key with '/', '\\', '%',\n"
    "control bytes, bytes that are not UTF-8 and a leading '.' written as %XX\n"
    "(hex): 'n01/a b.JPEG' becomes 'n01%2Fa b.JPEG.png'.  Decoding the %XX gives\n"
    "the key back; names never leave DIR.  A name longer than 255 bytes is cut\n"
    "and ends in '%~' and 16 hex digits of the key's hash; such names are listed\n"
    "with their keys in DIR/" OUT_DIR_LISTING " (a line 'NAME<TAB>KEY' each, the key\n"
    "with %XX for '%', control bytes and bytes that are not UTF-8).\n"
    "\n"
    "A dataset with fields (format version 2): each field a sample has is written\n"
    "beside its PNG as a sidecar file again, named after the key's stem (the key\n"
    "without its extension), encoded the same way: a field from a sidecar under\n"
    "its suffix ('n01/a.txt' for key 'n01/a.jpg' becomes 'n01%2Fa.txt'), a field\n"
    "from an annotation column as STEM.NAME.txt (text), .bin (bytes) or .json.\n"
    "Text, json and bytes are the stored bytes (a sidecar's are the source file's,\n"
    "byte for byte); numbers and vectors are JSON text, labels a JSON array of\n"
    "class names; boxes JSON ({\"box\": [x0, y0, x1, y1], \"class\", \"name\",\n"
    "\"crowd\"} each, in the stored image's pixels), a mask a grey PNG of its\n"
    "class ids.\n"
    "\n"
    "Files are written as temporaries and renamed into place: a link in DIR is\n"
    "never followed, and a symbolic link or directory where a file would go is\n"
    "an error naming it (the others are still written).\n"
    "\n"
    "Exit status (the same for every shardkit tool): 0 all written; 1 a KEY is\n"
    "not in the dataset, a record is damaged, a file could not be written, or\n"
    "DST cannot be read (each is named; the other samples are still written);\n"
    "2 usage error, found before any work (--out DIR unusable included).\n";

enum { OPT_OUT = CLI_FIRST_LONG_OPTION, OPT_LIMIT, OPT_THREADS, OPT_DRAW, OPT_VERSION };

static const struct option long_options[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"draw", no_argument, NULL, OPT_DRAW},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* One option and its value.  CLI_EXIT_OK or the usage-error status. */
static int parse_option(int opt, void *ctx, char **argv)
{
    struct options *o = ctx;
    switch (opt) {
    case OPT_OUT: o->out = optarg; break;
    case OPT_LIMIT:
        if (cli_parse_u64(optarg, 0, UINT64_MAX, &o->limit))
            return cli_usage_error(PROG, "--limit: '%s' is not a whole number", optarg);
        break;
    case OPT_THREADS: return cli_parse_threads(PROG, optarg, &o->threads);
    case OPT_DRAW: o->draw = 1; break;
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

int options_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->limit = UINT64_MAX;
    int rc = cli_parse_options(argc, argv, long_options, parse_option, o);
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_usage_error(PROG, "expected DST");
    if (!o->out)
        return cli_usage_error(PROG, "--out DIR is required");
    o->dst = argv[optind];
    o->keys = argv + optind + 1;
    o->key_count = argc - optind - 1;
    return out_dir_check(PROG, o->out, o->dst);
}
