/* options.c - shardcheck's command line (see options.h). */
#include "options.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_list.h"
#include "cli_part.h"

#define PROG "shardcheck"
#define MAX_WORLD_SIZE 1000000
#define MAX_EPOCHS 1000000
#define MAX_PSNR 200
/* The most parts a check is split into. */
#define MAX_PARTS 100000

static const char usage_text[] =
    "Usage: shardcheck [OPTIONS] DST\n"
    "  or:  shardcheck --part I/N|auto --result FILE|DIR/ [--deep] [OPTIONS] DST\n"
    "  or:  shardcheck --combine [--json] [--report FILE] RESULT... DST\n"
    "Prove that the dataset in DST is intact and is the same experiment as its\n"
    "source: the same samples, counts and labels, every sample visited once per\n"
    "epoch, pixels that match what the pipeline makes.  DST (and SRC) may be\n"
    "s3://BUCKET/PREFIX (settings: AWS_* variables and ~/.aws, as the AWS CLI).\n"
    "\n"
    "Always (the default pass, at disk speed):\n"
    "  manifest.json is well-formed and consistent; every listed shard is present\n"
    "  with the listed size and whole-file xxh3 (a changed byte anywhere in a shard\n"
    "  is caught here); headers, trailers and footers parse; record counts and keys\n"
    "  match index.jsonl line by line; keys are unique; counts and by_label match.\n"
    "  With fields (format version 2): version 2 shards, index lines naming declared\n"
    "  fields and every required one, counts.fields, counts.sidecars and the orphans.\n"
    "\n"
    "Options:\n"
    "  --deep                also decompress and decode every record (frame xxh3,\n"
    "                        zstd checksum, codec, dimensions against index and config;\n"
    "                        each field declared, of its type, valid, the ones its index\n"
    "                        line names, text/json/bytes equal to their source bytes)\n"
    "  --source SRC          also scan SRC (directory or archive) as shardify does and\n"
    "                        prove identity: every candidate file is a sample with the\n"
    "                        same key and source xxh3, or a listed reject; nothing extra\n"
    "                        or missing; labels re-derived from keys equal the stored\n"
    "                        ones, so per-label counts are equal; every sidecar field\n"
    "                        is its file in SRC (same size and xxh3), no sidecar more,\n"
    "                        a mask from a folder (from=DIR/) its file there,\n"
    "                        the orphans are SRC's, images sharing a stem are rejects\n"
    "  --labels FILE         the CSV the labels came from, when the config says\n"
    "                        file:NAME:HASH (without it labels are not re-derived)\n"
    "  --annotations FILE    the annotation table (JSON Lines or CSV) the fields or the\n"
    "                        labels came from, when the config names one (without it\n"
    "                        their values are not checked against SRC): it must be that\n"
    "                        table (config.annotations), and each sample's value of each\n"
    "                        column field must have the source identity index.jsonl\n"
    "                        names (with --deep also the stored value itself)\n"
    "  --keys FILE           with --source: the key list (shardify --keys) that\n"
    "                        selected the samples (config.keys)\n"
    "  --fidelity N          re-run the pipeline on N source files spread evenly over\n"
    "                        the dataset (needs --source) and compare the stored pixels\n"
    "                        with the re-run's: raw and png must be identical; jpeg\n"
    "                        must reach --min-psnr (identical bytes give infinity;\n"
    "                        pixels a level off, as another libjpeg-turbo build may\n"
    "                        give, measured above 40 dB).  The codec's own loss (stored\n"
    "                        pixels against the pixels before encoding) is reported too\n"
    "  --min-psnr DB         jpeg threshold of --fidelity (default 35)\n"
    "  --visitation W[,W...]\n"
    "                        prove that the epoch plan visits each sample exactly once\n"
    "                        per epoch for each world size W\n"
    "  --epochs E            epochs checked by --visitation (default 2)\n"
    "  --seed S              plan seed (default 0)\n"
    "  --shuffle-buffer B    plan shuffle window (default 1024)\n"
    "  --remainder keep|drop|pad\n"
    "                        plan remainder rule (default keep: nothing dropped or\n"
    "                        padded; drop: N mod W left out; pad: repeats fill up)\n"
    "  --no-shuffle          check plans in stored order\n"
    "  --json                print the report as one JSON object on stdout (every\n"
    "                        problem, per-pass rates, fidelity per sample, and what\n"
    "                        the dataset holds)\n"
    "  --report FILE         also write the report as one self-contained HTML page:\n"
    "                        the verdict first, then counts, a contact sheet of up\n"
    "                        to 48 stored images (decoded, with their captions),\n"
    "                        rejects, labels source against shards, stored sizes,\n"
    "                        shards, visitation, fidelity and the options, with\n"
    "                        charts (the numbers of --json, which then lists the\n"
    "                        sheet's samples; nothing fetched, no script)\n"
    "  --threads N           threads (default: CPUs this process may use)\n"
    "  --cache-dir DIR       a remote dataset's shards are read through the node-local\n"
    "                        cache in DIR (as SHARDKIT_CACHE_DIR; checked shards stay\n"
    "                        there for the readers that follow)\n"
    "  --cache-limit SIZE    at most SIZE bytes in it (as SHARDKIT_CACHE_LIMIT)\n"
    "  --part I/N            check part I (0-based) of N of DST, for a dataset too big\n"
    "                        for one machine's time: a contiguous share of the shards,\n"
    "                        balanced by bytes (each hashed, its footer, its index\n"
    "                        lines, found by a binary search on each index file, with\n"
    "                        --deep its records), and an N-th of the key hashes in\n"
    "                        every key table (unique keys) and of the index files and\n"
    "                        key tables to hash whole; writes what it found to\n"
    "                        --result and exits 0 once it is written, whatever it\n"
    "                        found (the combine gives the verdict).  Parts may run\n"
    "                        at once, on other machines too; they need key tables\n"
    "                        and check what the default pass and --deep check\n"
    "  --part auto           I and N from the job engine: a Slurm job array\n"
    "                        (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP) or a\n"
    "                        Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with N\n"
    "                        from --parts)\n"
    "  --parts N             the number of parts (--part auto on Kubernetes)\n"
    "  --result PATH         where --part writes its result: the file PATH, or, for a\n"
    "                        directory (PATH ending in '/'), shardcheck-part-I-of-N.jsonl\n"
    "                        in it\n"
    "  --combine             combine the results of every part of one check of DST\n"
    "                        (each RESULT a result file or a directory of them) into\n"
    "                        the report, the --json and --report a whole shardcheck\n"
    "                        gives, with its exit status; results of another dataset\n"
    "                        (or of DST before its manifest changed), of another N or\n"
    "                        other passes are refused, and a missing part is named\n"
    "  -h, --help            show this help\n"
    "  --version             show the version\n"
    "\n"
    "Every problem is listed on stdout (the first 100; --json lists all), each\n"
    "naming the shard, record and key it is about.\n"
    "\n"
    "Exit status (the same for every shardkit tool): 0 verified; 1 not verified:\n"
    "a problem was found (a malformed manifest.json included), or DST, its\n"
    "manifest, SRC or the --labels file cannot be read (the message says which),\n"
    "or the --report page could not be written, or (--combine) the results are\n"
    "not every part's of one check of DST; 2 usage error, found before any\n"
    "work (a --report FILE that cannot be written included).  --part: 0 when its\n"
    "result is written, 1 when it could not be.\n";
enum {
    OPT_DEEP = CLI_FIRST_LONG_OPTION,
    OPT_SOURCE,
    OPT_LABELS,
    OPT_ANNOTATIONS,
    OPT_KEYS,
    OPT_FIDELITY,
    OPT_MIN_PSNR,
    OPT_VISITATION,
    OPT_EPOCHS,
    OPT_SEED,
    OPT_SHUFFLE_BUFFER,
    OPT_REMAINDER,
    OPT_NO_SHUFFLE,
    OPT_JSON,
    OPT_REPORT,
    OPT_THREADS,
    OPT_CACHE_DIR,
    OPT_CACHE_LIMIT,
    OPT_PART,
    OPT_PARTS,
    OPT_RESULT,
    OPT_COMBINE,
    OPT_VERSION,
};

static const struct option long_options[] = {
    {"deep", no_argument, NULL, OPT_DEEP},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"annotations", required_argument, NULL, OPT_ANNOTATIONS},
    {"keys", required_argument, NULL, OPT_KEYS},
    {"fidelity", required_argument, NULL, OPT_FIDELITY},
    {"min-psnr", required_argument, NULL, OPT_MIN_PSNR},
    {"visitation", required_argument, NULL, OPT_VISITATION},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"shuffle-buffer", required_argument, NULL, OPT_SHUFFLE_BUFFER},
    {"remainder", required_argument, NULL, OPT_REMAINDER},
    {"no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE},
    {"json", no_argument, NULL, OPT_JSON},
    {"report", required_argument, NULL, OPT_REPORT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"cache-limit", required_argument, NULL, OPT_CACHE_LIMIT},
    {"part", required_argument, NULL, OPT_PART},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"result", required_argument, NULL, OPT_RESULT},
    {"combine", no_argument, NULL, OPT_COMBINE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int parse_psnr(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || v > MAX_PSNR)
        return -1;
    *out = v;
    return 0;
}

/* One option and its value into *o.  CLI_EXIT_OK or the usage-error status. */
static int parse_option(int opt, void *ctx, char **argv)
{
    struct options *o = ctx;
    struct shard_verify_options *v = &o->verify;
    int n;
    switch (opt) {
    case OPT_DEEP: v->deep = 1; break;
    case OPT_SOURCE: v->source = optarg; break;
    case OPT_LABELS: v->labels = optarg; break;
    case OPT_ANNOTATIONS: v->annotations = optarg; break;
    case OPT_KEYS: v->keys = optarg; break;
    case OPT_FIDELITY:
        if (cli_parse_u64(optarg, 1, UINT64_MAX, &v->fidelity))
            return cli_usage_error(PROG, "--fidelity: '%s' is not a positive number", optarg);
        break;
    case OPT_MIN_PSNR:
        if (parse_psnr(optarg, &v->min_psnr))
            return cli_usage_error(PROG,
                                   "--min-psnr: '%s' is not a number of dB in "
                                   "(0, %d]",
                                   optarg, MAX_PSNR);
        break;
    case OPT_VISITATION:
        n = cli_parse_u32_list(optarg, 1, MAX_WORLD_SIZE, v->world_sizes,
                               SHARD_VERIFY_MAX_WORLD_SIZES);
        if (n < 0)
            return cli_usage_error(PROG,
                                   "--visitation: '%s' is not a list of world sizes "
                                   "in 1..%d (e.g. 1,2,8)",
                                   optarg, MAX_WORLD_SIZE);
        v->world_size_count = (size_t)n;
        break;
    case OPT_EPOCHS:
        if (cli_parse_u64(optarg, 1, MAX_EPOCHS, &v->epochs))
            return cli_usage_error(PROG, "--epochs: '%s' is not a number in 1..%d", optarg,
                                   MAX_EPOCHS);
        break;
    case OPT_SEED:
        if (cli_parse_u64(optarg, 0, UINT64_MAX, &v->plan.seed))
            return cli_usage_error(PROG, "--seed: '%s' is not a whole number", optarg);
        break;
    case OPT_SHUFFLE_BUFFER:
        if (cli_parse_u64(optarg, 0, UINT64_MAX, &v->plan.shuffle_buffer))
            return cli_usage_error(PROG, "--shuffle-buffer: '%s' is not a whole number", optarg);
        break;
    case OPT_REMAINDER:
        if (shard_remainder_parse(optarg, &v->plan.remainder))
            return cli_usage_error(PROG, "--remainder: '%s' is not keep, drop or pad", optarg);
        break;
    case OPT_NO_SHUFFLE: v->plan.shuffle = 0; break;
    case OPT_PART: o->part_value = optarg; break;
    case OPT_PARTS:
        if (cli_parse_u64(optarg, 1, MAX_PARTS, &o->parts_option))
            return cli_usage_error(PROG, "--parts: '%s' is not a number in 1..%d", optarg,
                                   MAX_PARTS);
        break;
    case OPT_RESULT: o->result = optarg; break;
    case OPT_COMBINE: o->combine = 1; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_REPORT: o->report_file = optarg; break;
    case OPT_THREADS: return cli_parse_threads(PROG, optarg, &v->threads);
    case OPT_CACHE_DIR:
    case OPT_CACHE_LIMIT: {
        /* the reader takes them from the environment (shard_dataset_options) */
        uint64_t size;
        if (opt == OPT_CACHE_LIMIT && (cli_parse_size(optarg, &size) || !size))
            return cli_usage_error(PROG, "--cache-limit: '%s' is not a size of at least 1", optarg);
        if (setenv(opt == OPT_CACHE_DIR ? "SHARDKIT_CACHE_DIR" : "SHARDKIT_CACHE_LIMIT", optarg, 1))
            return cli_usage_error(PROG, "out of memory");
        break;
    }
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

int options_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    shard_verify_options_init(&o->verify);
    int rc = cli_parse_options(argc, argv, long_options, parse_option, o);
    if (rc)
        return rc;
    const struct shard_verify_options *v = &o->verify;
    if (o->combine) {
        if (argc - optind < 2)
            return cli_usage_error(PROG, "--combine: expected the parts' results and DST");
        o->dst = argv[argc - 1];
        o->results = (const char *const *)argv + optind;
        o->result_count = (size_t)(argc - optind - 1);
        if (o->part_value || o->parts_option || o->result)
            return cli_usage_error(PROG, "--combine combines the parts' results: --part, "
                                         "--parts and --result are for the parts");
        if (v->deep || v->source || v->world_size_count)
            return cli_usage_error(PROG, "--combine reports what the parts checked: give "
                                         "--deep to the parts, and --source, --fidelity and "
                                         "--visitation to a whole check");
        return o->report_file ? cli_check_output(PROG, "--report", o->report_file) : CLI_EXIT_OK;
    }
    if (argc - optind != 1)
        return cli_usage_error(PROG, "expected one DST, got %d operands", argc - optind);
    o->dst = argv[optind];
    if (o->parts_option && !o->part_value)
        return cli_usage_error(PROG, "--parts is for --part auto (or --part I/N)");
    if (o->result && !o->part_value)
        return cli_usage_error(PROG, "--result is where --part writes its result");
    if (o->part_value) {
        if ((rc = part_resolve(PROG, o->part_value, o->parts_option, MAX_PARTS, &o->part,
                               &o->parts)))
            return rc;
        if (!o->result)
            return cli_usage_error(PROG, "--part needs --result FILE (or DIR/): where its "
                                         "result goes");
        if (v->source || v->world_size_count || o->report_file)
            return cli_usage_error(PROG, "--part checks what the default pass and --deep "
                                         "check: --source, --fidelity and --visitation check "
                                         "a whole dataset, and --report is the combine's");
    }
    if (v->fidelity && !v->source)
        return cli_usage_error(PROG, "--fidelity needs --source SRC");
    if (v->labels && !v->source)
        return cli_usage_error(PROG, "--labels is only used with --source");
    if (v->annotations && !v->source)
        return cli_usage_error(PROG, "--annotations is only used with --source");
    if (v->keys && !v->source)
        return cli_usage_error(PROG, "--keys is only used with --source");
    /* the page must be writable before the checks start */
    if (o->report_file)
        return cli_check_output(PROG, "--report", o->report_file);
    return CLI_EXIT_OK;
}
