/* shardify - convert a folder or archive of images into zstd shards.
 * Argument parsing, progress and the summary; the work is shardify_run(). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "shardkit.h"

#define PROG "shardify"
#define REJECTS_SHOWN 20
#define MAX_SIZE 65535

static const char usage_text[] =
    "Usage: shardify [OPTIONS] SRC DST\n"
    "Decode and resize every image of SRC once, at training resolution, and write\n"
    "large zstd-compressed shards plus a manifest that keeps every sample's identity.\n"
    "\n"
    "  SRC   a directory (walked recursively, symlinks not followed) or an archive\n"
    "        file (.tar, .tar.gz, .tar.zst, .zip ...), read in one streaming pass\n"
    "  DST   output directory; created if missing; must be empty unless it holds a\n"
    "        previous shardify output (see --overwrite and --resume)\n"
    "\n"
    "Options:\n"
    "  --size N              training resolution (default 512)\n"
    "  --fit short|long|crop short: shorter side becomes N (default); long: longer\n"
    "                        side becomes N; crop: shorter side N, then centre crop NxN\n"
    "  --no-upscale          keep images already smaller than the target at their size\n"
    "  --codec jpeg|png|raw  how pixels are stored (default jpeg); raw = uint8 RGB HWC\n"
    "  --quality Q           JPEG quality 1..100 (default 90)\n"
    "  --zstd-level L        zstd level -131072..19, not 0 (default 3); negative\n"
    "                        levels trade size for speed (e.g. -100 for raw shards\n"
    "                        that must read as fast as possible)\n"
    "  --shard-size SIZE     target bytes per shard, K/M/G suffixes (default 256M)\n"
    "  --labels SPEC         dir (default: first path component is the class), none,\n"
    "                        a CSV file of key,label rows, or regex:PATTERN (first\n"
    "                        capture group of PATTERN on the key)\n"
    "  --shuffle-seed S      seed of the deterministic shuffle (default 0)\n"
    "  --no-shuffle          keep sorted key order\n"
    "  --threads N           worker threads (default: CPUs this process may use)\n"
    "  --max-pixels N        refuse images whose header declares more pixels\n"
    "                        (default 100000000)\n"
    "  --max-file-size SIZE  refuse larger input files (default 1G)\n"
    "  --on-error skip|fail  skip (default): record a bad input as rejected and go on;\n"
    "                        fail: stop at the first bad input, publish nothing\n"
    "  --resume              continue an interrupted run in DST\n"
    "  --overwrite           replace a previous output in DST\n"
    "  --json                print the run summary as one JSON object on stdout\n"
    "  --quiet               no progress or summary on stderr\n"
    "  -h, --help            show this help\n"
    "  --version             show the version\n"
    "\n"
    "Exit status: 0 done (rejects allowed, and reported), 1 failed (nothing new\n"
    "published), 2 usage error.\n";

enum {
    OPT_SIZE = 256, OPT_FIT, OPT_NO_UPSCALE, OPT_CODEC, OPT_QUALITY, OPT_ZSTD_LEVEL,
    OPT_SHARD_SIZE, OPT_LABELS, OPT_SEED, OPT_NO_SHUFFLE, OPT_THREADS, OPT_MAX_PIXELS,
    OPT_MAX_FILE_SIZE, OPT_ON_ERROR, OPT_RESUME, OPT_OVERWRITE, OPT_JSON, OPT_QUIET,
    OPT_VERSION,
};

static const struct option long_options[] = {
    {"size", required_argument, NULL, OPT_SIZE},
    {"fit", required_argument, NULL, OPT_FIT},
    {"no-upscale", no_argument, NULL, OPT_NO_UPSCALE},
    {"codec", required_argument, NULL, OPT_CODEC},
    {"quality", required_argument, NULL, OPT_QUALITY},
    {"zstd-level", required_argument, NULL, OPT_ZSTD_LEVEL},
    {"shard-size", required_argument, NULL, OPT_SHARD_SIZE},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"shuffle-seed", required_argument, NULL, OPT_SEED},
    {"no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-pixels", required_argument, NULL, OPT_MAX_PIXELS},
    {"max-file-size", required_argument, NULL, OPT_MAX_FILE_SIZE},
    {"on-error", required_argument, NULL, OPT_ON_ERROR},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

struct cli {
    struct shardify_options opts;
    const char *src;
    const char *dst;
    int json;
    int quiet;
    struct cli_progress progress;
};

static volatile sig_atomic_t cancel_requested;

static void on_signal(int sig)
{
    cancel_requested = 1;
    /* a second signal stops at once */
    signal(sig, SIG_DFL);
}

static void show_progress(const struct shardify_progress *p, void *user)
{
    struct cli *c = user;
    char out[32], extra[96];
    snprintf(extra, sizeof extra, "%llu rejected, %s written",
             (unsigned long long)p->rejected, cli_format_bytes(p->bytes_out, out, sizeof out));
    cli_progress_show(&c->progress, p->phase, p->done, p->total, p->elapsed, extra);
}

static int parse_args(int argc, char **argv, struct cli *c)
{
    struct shard_config *cfg = &c->opts.config;
    uint64_t v;
    int64_t level;
    int overwrite = 0, resume = 0, opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        switch (opt) {
        case OPT_SIZE:
            if (cli_parse_u64(optarg, 1, MAX_SIZE, &v))
                return cli_usage_error(PROG, "--size: '%s' is not a number in 1..%d", optarg,
                                       MAX_SIZE);
            cfg->size = (uint32_t)v;
            break;
        case OPT_FIT:
            if (shard_fit_parse(optarg, &cfg->fit))
                return cli_usage_error(PROG, "--fit: '%s' is not short, long or crop", optarg);
            break;
        case OPT_NO_UPSCALE: cfg->upscale = 0; break;
        case OPT_CODEC:
            if (shard_codec_parse(optarg, &cfg->codec))
                return cli_usage_error(PROG, "--codec: '%s' is not jpeg, png or raw", optarg);
            break;
        case OPT_QUALITY:
            if (cli_parse_u64(optarg, 1, 100, &v))
                return cli_usage_error(PROG, "--quality: '%s' is not a number in 1..100",
                                       optarg);
            cfg->quality = (int)v;
            break;
        case OPT_ZSTD_LEVEL:
            if (cli_parse_i64(optarg, SHARD_ZSTD_LEVEL_MIN, SHARD_ZSTD_LEVEL_MAX, &level) ||
                level == 0)
                return cli_usage_error(PROG, "--zstd-level: '%s' is not a number in %d..%d "
                                       "other than 0", optarg, SHARD_ZSTD_LEVEL_MIN,
                                       SHARD_ZSTD_LEVEL_MAX);
            cfg->zstd_level = (int)level;
            break;
        case OPT_SHARD_SIZE:
            if (cli_parse_size(optarg, &cfg->shard_size) || cfg->shard_size < 4096)
                return cli_usage_error(PROG, "--shard-size: '%s' is not a size of at least 4K "
                                       "(e.g. 256M, 1G)", optarg);
            break;
        case OPT_LABELS: c->opts.labels = optarg; break;
        case OPT_SEED:
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &cfg->shuffle_seed))
                return cli_usage_error(PROG, "--shuffle-seed: '%s' is not a whole number",
                                       optarg);
            break;
        case OPT_NO_SHUFFLE: cfg->shuffle = 0; break;
        case OPT_THREADS:
            if (cli_parse_threads(PROG, optarg, &c->opts.threads))
                return CLI_EXIT_USAGE;
            break;
        case OPT_MAX_PIXELS:
            if (cli_parse_u64(optarg, 1, UINT64_MAX / 8, &cfg->max_pixels))
                return cli_usage_error(PROG, "--max-pixels: '%s' is not a positive number",
                                       optarg);
            break;
        case OPT_MAX_FILE_SIZE:
            if (cli_parse_size(optarg, &cfg->max_file_bytes) || cfg->max_file_bytes == 0)
                return cli_usage_error(PROG, "--max-file-size: '%s' is not a size", optarg);
            break;
        case OPT_ON_ERROR:
            if (!strcmp(optarg, "skip"))
                c->opts.fail_on_reject = 0;
            else if (!strcmp(optarg, "fail"))
                c->opts.fail_on_reject = 1;
            else
                return cli_usage_error(PROG, "--on-error: '%s' is not skip or fail", optarg);
            break;
        case OPT_RESUME: resume = 1; break;
        case OPT_OVERWRITE: overwrite = 1; break;
        case OPT_JSON: c->json = 1; break;
        case OPT_QUIET: c->quiet = 1; break;
        default:
            return cli_other_option(PROG, opt, OPT_VERSION, usage_text, argv);
        }
    }
    if (resume && overwrite)
        return cli_usage_error(PROG, "--resume and --overwrite cannot be used together");
    c->opts.mode = resume ? SHARDIFY_RESUME : overwrite ? SHARDIFY_OVERWRITE : SHARDIFY_FRESH;
    if (argc - optind != 2)
        return cli_usage_error(PROG, "expected SRC and DST, got %d operand%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    c->src = argv[optind];
    c->dst = argv[optind + 1];
    if (c->opts.labels) {
        struct shard_labeler *lb;
        struct shard_err err;
        if (shard_labeler_new(&lb, c->opts.labels, &err))
            return cli_usage_error(PROG, "--labels: %s", err.msg);
        shard_labeler_free(lb);
    }
    return CLI_EXIT_OK;
}

static void print_summary(const struct cli *c, const struct shardify_summary *s)
{
    char in[32], out[32];
    double rate = s->seconds > 0 ? (s->samples + s->rejected) / s->seconds : 0;
    fprintf(stderr,
            "%s: %llu samples in %u shard%s (%s from %s), %llu rejected, %llu ignored, "
            "%.1f s (%.0f images/s, %d thread%s)\n",
            PROG, (unsigned long long)s->samples, s->shards, s->shards == 1 ? "" : "s",
            cli_format_bytes(s->bytes_out, out, sizeof out),
            cli_format_bytes(s->bytes_in, in, sizeof in), (unsigned long long)s->rejected,
            (unsigned long long)s->ignored, s->seconds, rate, s->threads,
            s->threads == 1 ? "" : "s");
    if (s->unlabeled && !(c->opts.labels && !strcmp(c->opts.labels, "none")))
        fprintf(stderr, "%s: %llu sample%s without a label\n", PROG,
                (unsigned long long)s->unlabeled, s->unlabeled == 1 ? "" : "s");
    if (s->label_rows_unmatched)
        fprintf(stderr, "%s: %llu of the %llu rows of the label file name no file of '%s'\n",
                PROG, (unsigned long long)s->label_rows_unmatched,
                (unsigned long long)s->label_rows, c->src);
    if (s->reused_shards)
        fprintf(stderr, "%s: resumed: kept %u finished shard%s\n", PROG, s->reused_shards,
                s->reused_shards == 1 ? "" : "s");
    for (uint64_t i = 0; i < s->reject_count && i < REJECTS_SHOWN; i++) {
        char shown[SHARD_QUOTE_SIZE];
        fprintf(stderr, "  rejected '%s': %s\n",
                shard_quote(s->rejects[i].key, s->rejects[i].key_len, shown, sizeof shown),
                s->rejects[i].reason);
    }
    if (s->reject_count > REJECTS_SHOWN)
        fprintf(stderr, "  ... and %llu more (all are listed in %s/manifest.json)\n",
                (unsigned long long)(s->reject_count - REJECTS_SHOWN), c->dst);
    if (s->candidates == 0)
        fprintf(stderr, "%s: warning: no candidate images in '%s'\n", PROG, c->src);
}

/* The summary as one JSON object (rejects reuse the index line format). */
static void print_json(const struct shardify_summary *s, int rc, const struct shard_err *err)
{
    json_t *o = json_object();
    json_t *rejects = json_array();
    json_object_set_new(o, "status", json_string(rc ? "failed" : "ok"));
    if (rc) {
        json_object_set_new(o, "error", json_string(err->msg));
        json_object_set_new(o, "error_code", json_integer(rc));
    }
    json_object_set_new(o, "candidates", json_integer((json_int_t)s->candidates));
    json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
    json_object_set_new(o, "rejected", json_integer((json_int_t)s->rejected));
    json_object_set_new(o, "ignored", json_integer((json_int_t)s->ignored));
    json_object_set_new(o, "unlabeled", json_integer((json_int_t)s->unlabeled));
    json_object_set_new(o, "labels", json_integer(s->labels));
    json_object_set_new(o, "label_rows", json_integer((json_int_t)s->label_rows));
    json_object_set_new(o, "label_rows_unmatched",
                        json_integer((json_int_t)s->label_rows_unmatched));
    json_object_set_new(o, "shards", json_integer(s->shards));
    json_object_set_new(o, "reused_shards", json_integer(s->reused_shards));
    json_object_set_new(o, "bytes_in", json_integer((json_int_t)s->bytes_in));
    json_object_set_new(o, "bytes_out", json_integer((json_int_t)s->bytes_out));
    json_object_set_new(o, "seconds", json_real(s->seconds));
    json_object_set_new(o, "images_per_second",
                        json_real(s->seconds > 0 ? (s->samples + s->rejected) / s->seconds : 0));
    json_object_set_new(o, "threads", json_integer(s->threads));
    for (uint64_t i = 0; i < s->reject_count; i++) {
        struct shard_buf line = {0};
        if (shard_reject_line(&s->rejects[i], &line, NULL) == 0)
            json_array_append_new(rejects, json_loadb((const char *)line.data, line.len, 0, NULL));
        shard_buf_release(&line);
    }
    json_object_set_new(o, "rejects", rejects);
    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(o);
}

int main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    shardify_options_init(&c.opts);
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc;
    cli_progress_init(&c.progress);
    c.opts.cancel = &cancel_requested;
    if (!c.quiet) {
        c.opts.progress = show_progress;
        c.opts.progress_user = &c;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    struct shardify_summary summary;
    struct shard_err err;
    shard_err_clear(&err);
    rc = shardify_run(c.src, c.dst, &c.opts, &summary, &err);
    cli_progress_end(&c.progress);
    if (rc)
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
    else if (!c.quiet)
        print_summary(&c, &summary);
    if (c.json)
        print_json(&summary, rc, &err);
    shardify_summary_release(&summary);
    return rc ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
