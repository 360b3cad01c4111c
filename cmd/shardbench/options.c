/* options.c - shardbench's command line (see options.h). */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PROG "shardbench"
#define MAX_EPOCHS 1000000
#define MAX_BATCH 1000000
#define MAX_SIZE 65535
#define MAX_MS 3600000.0

static const char usage_text[] =
    "Usage: shardbench files SRC|URL [OPTIONS]\n"
    "  or:  shardbench shards DST|URL [OPTIONS]\n"
    "  or:  shardbench compare SRC|URL DST|URL [OPTIONS]\n"
    "  or:  shardbench roofline --bandwidth B --intensity I --peak P [--json]\n"
    "Measure how fast training input can be read: the small-file loader against the\n"
    "shard reader, on local disk or over HTTP, cold or warm, and how long the\n"
    "consumer waits for it.\n"
    "\n"
    "  files     the naive loader a DataLoader over an ImageFolder is: per sample\n"
    "            open, read, close (or one HTTP GET), full decode, resize to --size\n"
    "  shards    the shard reader: the prefetching iterator over the epoch plan,\n"
    "            decoded pixels out; over HTTP, shards are read in large ranges\n"
    "  compare   both, with the same threads in one process, and the ratio\n"
    "            shards/files of samples per second\n"
    "  roofline  attainable = min(P, B x I), the ridge point P/B, and whether I\n"
    "            is memory-bound or compute-bound\n"
    "\n"
    "Options:\n"
    "  --threads N          loader threads (default: CPUs this process may use)\n"
    "  --epochs E           epochs (default 2); the first is reported apart from the\n"
    "                       steady ones\n"
    "  --limit N            samples per epoch (default: all)\n"
    "  --seconds T          stop a run after T seconds (each side of compare)\n"
    "  --cold               make each epoch cold: drop the page cache of every file\n"
    "                       it reads (posix_fadvise DONTNEED) and report what is still\n"
    "                       cached (mincore); not possible for a URL (said so)\n"
    "  --step-ms M          emulate a consumer spending M ms per batch (a training\n"
    "                       step) and report the share of time it waited for input\n"
    "  --batch B            samples per batch (default 64)\n"
    "  --queue-depth N      samples read ahead (default: two batches, at least 4 per\n"
    "                       thread)\n"
    "  --trace FILE         write a Chrome trace (Perfetto, chrome://tracing): spans for\n"
    "                       read, decompress, decode, resize, queue wait, consumer step,\n"
    "                       HTTP requests; a counter of the queue depth\n"
    "  --json               print the results as one JSON object on stdout\n"
    "  --report FILE        also write the results as one self-contained HTML page\n"
    "                       with charts: samples/s files against shards, time per\n"
    "                       sample by stage, batch latencies, the consumer's wait\n"
    "                       over time, the machine and the command (the numbers of\n"
    "                       --json; nothing fetched, no script)\n"
    "files (and the files side of compare):\n"
    "  --size N             training resolution (default 512; compare: the dataset's)\n"
    "  --fit short|long|crop  as shardify's (default short; compare: the dataset's)\n"
    "  --no-upscale         as shardify's\n"
    "  --keys FILE          sample keys, one per line (needed for an http(s) URL: it\n"
    "                       cannot be listed; compare takes them from the dataset;\n"
    "                       an s3:// prefix is listed); shards, and the shards side\n"
    "                       of compare, then read only the samples with those keys\n"
    "                       (found through the dataset's key tables)\n"
    "epoch order:\n"
    "  --no-shuffle         shards in stored order (not the shuffled epoch plan), files\n"
    "                       in list order (not shuffled each epoch)\n"
    "  --seed S             seed of the plan and of the files' shuffle (default 0)\n"
    "  --shuffle-buffer B   the plan's shuffle window (default 1024)\n"
    "HTTP (http(s):// and s3://; s3:// settings: AWS_* variables, ~/.aws):\n"
    "  --rtt MS             simulated round trip: sleep MS before every request (real\n"
    "                       latency cannot be added here; reported as simulated)\n"
    "  --connections N      concurrent connections for shard ranges (default 8)\n"
    "  --window SIZE        bytes per shard range request (default 8M)\n"
    "  --window-cache SIZE  the window cache: windows kept in memory, at most SIZE\n"
    "                       (default 256M; should hold a shuffle buffer of samples)\n"
    "  --cache-dir DIR      keep whole shards in DIR, a node-local cache shared by\n"
    "                       every process (default: $SHARDKIT_CACHE_DIR; '' none)\n"
    "  --cache-limit SIZE   at most SIZE bytes in it (default: $SHARDKIT_CACHE_LIMIT,\n"
    "                       else what the disk takes)\n"
    "  --retries N          retries of a transient failure, with backoff (default 8)\n"
    "  --timeout S          a request that receives nothing for S seconds (connecting,\n"
    "                       waiting for the answer, or stalled) is abandoned and\n"
    "                       retried (default 10; a slow transfer that keeps moving\n"
    "                       is not cut)\n"
    "files and shards:\n"
    "  --digests FILE       write one JSON line per sample of the first epoch: key,\n"
    "                       width, height, xxh3 of the pixels (to compare loaders)\n"
    "roofline:\n"
    "  --bandwidth B        memory bandwidth, e.g. 100GB/s, 900GiB/s\n"
    "  --intensity I        arithmetic intensity in FLOP/B, e.g. 2\n"
    "  --peak P             peak compute, e.g. 1000GFLOP/s, 19.5TFLOP/s\n"
    "\n"
    "  -h, --help           show this help\n"
    "  --version            show the version\n"
    "\n"
    "Reported per run: samples/s and MB/s (first epoch, steady epochs), time per\n"
    "sample in each stage, p50/p99 batch latency, CPU time per sample, bytes read,\n"
    "requests; compare adds the ratio shards/files.\n"
    "\n"
    "Exit status (the same for every shardkit tool): 0 done; 1 a run failed, some\n"
    "samples failed, or there was nothing to read (an empty --keys FILE): the\n"
    "message says why; 2 usage error, found before any work (a --trace, --digests\n"
    "or --report FILE that cannot be written included).\n";

enum {
    OPT_THREADS = CLI_FIRST_LONG_OPTION,
    OPT_EPOCHS,
    OPT_LIMIT,
    OPT_SECONDS,
    OPT_COLD,
    OPT_STEP_MS,
    OPT_BATCH,
    OPT_QUEUE_DEPTH,
    OPT_TRACE,
    OPT_JSON,
    OPT_REPORT,
    OPT_SIZE,
    OPT_FIT,
    OPT_NO_UPSCALE,
    OPT_KEYS,
    OPT_NO_SHUFFLE,
    OPT_SEED,
    OPT_SHUFFLE_BUFFER,
    OPT_RTT,
    OPT_CONNECTIONS,
    OPT_WINDOW,
    OPT_WINDOW_CACHE,
    OPT_CACHE_OLDER_NAME,
    OPT_CACHE_DIR,
    OPT_CACHE_LIMIT,
    OPT_RETRIES,
    OPT_TIMEOUT,
    OPT_DIGESTS,
    OPT_BANDWIDTH,
    OPT_INTENSITY,
    OPT_PEAK,
    OPT_VERSION,
};

static const struct option long_options[] = {
    {"threads", required_argument, NULL, OPT_THREADS},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"cold", no_argument, NULL, OPT_COLD},
    {"step-ms", required_argument, NULL, OPT_STEP_MS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"json", no_argument, NULL, OPT_JSON},
    {"report", required_argument, NULL, OPT_REPORT},
    {"size", required_argument, NULL, OPT_SIZE},
    {"fit", required_argument, NULL, OPT_FIT},
    {"no-upscale", no_argument, NULL, OPT_NO_UPSCALE},
    {"keys", required_argument, NULL, OPT_KEYS},
    {"no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"shuffle-buffer", required_argument, NULL, OPT_SHUFFLE_BUFFER},
    {"rtt", required_argument, NULL, OPT_RTT},
    {"connections", required_argument, NULL, OPT_CONNECTIONS},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"window-cache", required_argument, NULL, OPT_WINDOW_CACHE},
    {"cache", required_argument, NULL, OPT_CACHE_OLDER_NAME}, /* deprecated: --window-cache */
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"cache-limit", required_argument, NULL, OPT_CACHE_LIMIT},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"digests", required_argument, NULL, OPT_DIGESTS},
    {"bandwidth", required_argument, NULL, OPT_BANDWIDTH},
    {"intensity", required_argument, NULL, OPT_INTENSITY},
    {"peak", required_argument, NULL, OPT_PEAK},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* A decimal number in [min, max] (fractions allowed).  0 or -1. */
static int parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (cli_parse_u64(s, min, max, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* One option and its value into *c.  CLI_EXIT_OK or the usage-error status. */
static int parse_option(int opt, void *ctx, char **argv)
{
    struct options *c = ctx;
    struct bench_options *o = &c->bench;
    uint64_t v;
    uint32_t u;
    switch (opt) {
    case OPT_THREADS: return cli_parse_threads(PROG, optarg, &o->threads);
    case OPT_EPOCHS:
        if (parse_u32(optarg, 1, MAX_EPOCHS, &o->epochs))
            return cli_usage_error(PROG, "--epochs: '%s' is not a number in 1..%d", optarg,
                                   MAX_EPOCHS);
        break;
    case OPT_LIMIT:
        if (cli_parse_u64(optarg, 1, UINT64_MAX, &o->limit))
            return cli_usage_error(PROG, "--limit: '%s' is not a positive number", optarg);
        break;
    case OPT_SECONDS:
        if (parse_double(optarg, 0, 1e9, &o->seconds) || !(o->seconds > 0))
            return cli_usage_error(PROG, "--seconds: '%s' is not a positive number of seconds",
                                   optarg);
        break;
    case OPT_COLD: o->cold = 1; break;
    case OPT_STEP_MS:
        if (parse_double(optarg, 0, MAX_MS, &o->step_ms))
            return cli_usage_error(PROG,
                                   "--step-ms: '%s' is not a number of milliseconds in "
                                   "0..%.0f",
                                   optarg, MAX_MS);
        break;
    case OPT_BATCH:
        if (parse_u32(optarg, 1, MAX_BATCH, &o->batch))
            return cli_usage_error(PROG, "--batch: '%s' is not a number in 1..%d", optarg,
                                   MAX_BATCH);
        break;
    case OPT_QUEUE_DEPTH:
        if (parse_u32(optarg, 1, MAX_BATCH, &o->queue_depth))
            return cli_usage_error(PROG, "--queue-depth: '%s' is not a number in 1..%d", optarg,
                                   MAX_BATCH);
        break;
    case OPT_TRACE: c->trace_file = optarg; break;
    case OPT_JSON: c->json = 1; break;
    case OPT_REPORT: c->report_file = optarg; break;
    case OPT_SIZE:
        if (parse_u32(optarg, 1, MAX_SIZE, &o->size))
            return cli_usage_error(PROG, "--size: '%s' is not a number in 1..%d", optarg, MAX_SIZE);
        c->size_given = 1;
        break;
    case OPT_FIT:
        if (shard_fit_parse(optarg, &o->fit))
            return cli_usage_error(PROG, "--fit: '%s' is not short, long or crop", optarg);
        c->fit_given = 1;
        break;
    case OPT_NO_UPSCALE: o->upscale = 0; break;
    case OPT_KEYS: c->keys_file = optarg; break;
    case OPT_NO_SHUFFLE: o->shuffle = 0; break;
    case OPT_SEED:
        if (cli_parse_u64(optarg, 0, UINT64_MAX, &o->seed))
            return cli_usage_error(PROG, "--seed: '%s' is not a number", optarg);
        break;
    case OPT_SHUFFLE_BUFFER:
        if (cli_parse_u64(optarg, 1, UINT64_MAX, &o->shuffle_buffer))
            return cli_usage_error(PROG, "--shuffle-buffer: '%s' is not a positive number", optarg);
        break;
    case OPT_RTT:
        if (parse_double(optarg, 0, MAX_MS, &o->reading.rtt_ms))
            return cli_usage_error(PROG,
                                   "--rtt: '%s' is not a number of milliseconds in "
                                   "0..%.0f",
                                   optarg, MAX_MS);
        break;
    case OPT_CONNECTIONS:
        if (parse_u32(optarg, 1, SHARD_DATASET_MAX_CONNECTIONS, &u))
            return cli_usage_error(PROG, "--connections: '%s' is not a number in 1..%d", optarg,
                                   SHARD_DATASET_MAX_CONNECTIONS);
        o->reading.connections = (int)u;
        break;
    case OPT_WINDOW:
        if (cli_parse_size(optarg, &v) || v < SHARD_DATASET_MIN_WINDOW ||
            v > SHARD_DATASET_MAX_WINDOW)
            return cli_usage_error(PROG, "--window: '%s' is not a size in 4K..4G", optarg);
        o->reading.window_bytes = v;
        break;
    case OPT_CACHE_OLDER_NAME:
        fprintf(stderr, "%s: warning: --cache is deprecated: use --window-cache\n", PROG);
        /* fall through */
    case OPT_WINDOW_CACHE:
        if (cli_parse_size(optarg, &v) || v < SHARD_DATASET_MIN_WINDOW)
            return cli_usage_error(PROG, "%s: '%s' is not a size of at least 4K",
                                   opt == OPT_WINDOW_CACHE ? "--window-cache" : "--cache", optarg);
        o->reading.window_cache_bytes = v;
        break;
    case OPT_CACHE_DIR: o->reading.cache_dir = optarg; break;
    case OPT_CACHE_LIMIT:
        if (cli_parse_size(optarg, &v) || !v)
            return cli_usage_error(PROG, "--cache-limit: '%s' is not a size of at least 1", optarg);
        o->reading.cache_limit = v;
        break;
    case OPT_RETRIES:
        if (parse_u32(optarg, 0, SHARD_DATASET_MAX_RETRIES, &u))
            return cli_usage_error(PROG, "--retries: '%s' is not a number in 0..%d", optarg,
                                   SHARD_DATASET_MAX_RETRIES);
        o->reading.retries = (int)u;
        break;
    case OPT_TIMEOUT:
        if (parse_u32(optarg, 1, SHARD_DATASET_MAX_TIMEOUT, &u))
            return cli_usage_error(PROG, "--timeout: '%s' is not a number of seconds in 1..%d",
                                   optarg, SHARD_DATASET_MAX_TIMEOUT);
        o->reading.timeout_seconds = u;
        break;
    case OPT_DIGESTS: c->digests_file = optarg; break;
    case OPT_BANDWIDTH: c->bandwidth = optarg; break;
    case OPT_INTENSITY: c->intensity = optarg; break;
    case OPT_PEAK: c->peak = optarg; break;
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

int options_parse(int argc, char **argv, struct options *c)
{
    memset(c, 0, sizeof *c);
    bench_options_init(&c->bench);
    int rc = cli_parse_options(argc, argv, long_options, parse_option, c);
    if (rc)
        return rc;
    int n = argc - optind;
    char **pos = argv + optind;
    if (n < 1)
        return cli_usage_error(PROG, "missing command: files, shards, compare or roofline");
    static const char *const names[] = {"files", "shards", "compare", "roofline"};
    static const int operands[] = {1, 1, 2, 0};
    int cmd = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(pos[0], names[i]))
            cmd = i;
    if (cmd < 0)
        return cli_usage_error(PROG,
                               "unknown command '%s': files, shards, compare or "
                               "roofline",
                               pos[0]);
    c->command = (enum command)cmd;
    if (n - 1 != operands[cmd])
        return cli_usage_error(PROG, "'%s' takes %d operand%s, got %d", names[cmd], operands[cmd],
                               operands[cmd] == 1 ? "" : "s", n - 1);
    if (c->command == CMD_ROOFLINE) {
        if (!c->bandwidth || !c->intensity || !c->peak)
            return cli_usage_error(PROG, "roofline needs --bandwidth, --intensity and --peak");
        if (c->report_file)
            return cli_usage_error(PROG, "--report belongs to files, shards and compare: "
                                         "roofline measures nothing");
        return CLI_EXIT_OK;
    }
    if (c->bandwidth || c->intensity || c->peak)
        return cli_usage_error(PROG, "--bandwidth, --intensity and --peak belong to roofline");
    if (c->command == CMD_FILES)
        c->src = pos[1];
    else if (c->command == CMD_SHARDS)
        c->dst = pos[1];
    else {
        c->src = pos[1];
        c->dst = pos[2];
    }
    if (c->digests_file && c->command == CMD_COMPARE)
        return cli_usage_error(PROG, "--digests: run files and shards separately");
    if (c->command == CMD_SHARDS && (c->size_given || c->fit_given || !c->bench.upscale))
        return cli_usage_error(PROG, "--size, --fit and --no-upscale belong to the "
                                     "files loader: shards are already at their size");
    if (c->command == CMD_FILES && !c->keys_file && shard_location_is_remote(c->src) &&
        strncmp(c->src, "s3://", 5))
        return cli_usage_error(PROG,
                               "'%s': a URL cannot be listed: give the sample keys with "
                               "--keys FILE (or use compare with a dataset)",
                               c->src);
    /* the run's outputs must be writable before an hour goes into the run */
    if ((c->trace_file && (rc = cli_check_output(PROG, "--trace", c->trace_file))) ||
        (c->digests_file && (rc = cli_check_output(PROG, "--digests", c->digests_file))) ||
        (c->report_file && (rc = cli_check_output(PROG, "--report", c->report_file))))
        return rc;
    return CLI_EXIT_OK;
}
