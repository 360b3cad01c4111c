/* shardbench - read throughput of small files against shards, local or over
 * HTTP, and where the consumer waits.  Argument parsing and the report; the
 * work is shard_bench_run() (shardkit/bench.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "shardkit.h"
#include "shardkit/json.h"

#define PROG "shardbench"
#define MAX_EPOCHS 1000000
#define MAX_BATCH 1000000
#define MAX_SIZE 65535
#define MAX_RETRIES 100
#define MAX_CONNECTIONS 64
#define MAX_MS 3600000.0
#define MS 1e3

static const char usage_text[] =
    "Usage: shardbench files SRC|URL [OPTIONS]\n"
    "       shardbench shards DST|URL [OPTIONS]\n"
    "       shardbench compare SRC|URL DST|URL [OPTIONS]\n"
    "       shardbench roofline --bandwidth B --intensity I --peak P [--json]\n"
    "Measure how fast training input can be read: the small-file loader against the\n"
    "shard reader, on local disk or over HTTP, cold or warm, and how long the\n"
    "consumer waits for it.\n"
    "\n"
    "  files    the naive loader a DataLoader over an ImageFolder is: per sample\n"
    "           open, read, close (or one HTTP GET), full decode, resize to --size\n"
    "  shards   the shard reader: the prefetching iterator over the epoch plan,\n"
    "           decoded pixels out; over HTTP, shards are read in large ranges\n"
    "  compare  both, with the same threads in one process, and the ratio\n"
    "           shards/files of samples per second\n"
    "  roofline attainable = min(P, B x I), the ridge point P/B, and whether I is\n"
    "           memory-bound or compute-bound\n"
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
    "files (and the files side of compare):\n"
    "  --size N             training resolution (default 512; compare: the dataset's)\n"
    "  --fit short|long|crop  as shardify's (default short; compare: the dataset's)\n"
    "  --no-upscale         as shardify's\n"
    "  --keys FILE          sample keys, one per line (needed for a URL: it cannot be\n"
    "                       listed; compare takes them from the dataset)\n"
    "epoch order:\n"
    "  --no-shuffle         shards in stored order (not the shuffled epoch plan), files\n"
    "                       in list order (not shuffled each epoch)\n"
    "  --seed S             seed of the plan and of the files' shuffle (default 0)\n"
    "  --shuffle-buffer B   the plan's shuffle window (default 1024)\n"
    "HTTP (http:// and https:// locations):\n"
    "  --rtt MS             simulated round trip: sleep MS before every request (real\n"
    "                       latency cannot be added here; reported as simulated)\n"
    "  --connections N      concurrent connections for shard ranges (default 8)\n"
    "  --window SIZE        bytes per shard range request (default 8M)\n"
    "  --cache SIZE         shard bytes kept in memory (default 256M; should hold a\n"
    "                       shuffle buffer of samples)\n"
    "  --retries N          retries of a transient failure, with backoff (default 8)\n"
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
    "Exit status: 0 done; 1 a run failed (the message says why); 2 usage error.\n";

enum {
    OPT_THREADS = 256, OPT_EPOCHS, OPT_LIMIT, OPT_SECONDS, OPT_COLD, OPT_STEP_MS, OPT_BATCH,
    OPT_QUEUE_DEPTH, OPT_TRACE, OPT_JSON, OPT_SIZE, OPT_FIT, OPT_NO_UPSCALE, OPT_KEYS,
    OPT_NO_SHUFFLE, OPT_SEED, OPT_SHUFFLE_BUFFER, OPT_RTT, OPT_CONNECTIONS, OPT_WINDOW,
    OPT_CACHE, OPT_RETRIES, OPT_DIGESTS, OPT_BANDWIDTH, OPT_INTENSITY, OPT_PEAK, OPT_VERSION,
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
    {"cache", required_argument, NULL, OPT_CACHE},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"digests", required_argument, NULL, OPT_DIGESTS},
    {"bandwidth", required_argument, NULL, OPT_BANDWIDTH},
    {"intensity", required_argument, NULL, OPT_INTENSITY},
    {"peak", required_argument, NULL, OPT_PEAK},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

enum command { CMD_FILES, CMD_SHARDS, CMD_COMPARE, CMD_ROOFLINE };

struct cli {
    enum command command;
    const char *src;              /* files, compare */
    const char *dst;              /* shards, compare */
    struct shard_bench_options opts;
    int size_given;
    int fit_given;
    const char *keys_file;
    const char *trace_file;
    const char *digests_file;
    int json;
    const char *bandwidth, *intensity, *peak;
};

/* ---- parsing ---------------------------------------------------------------- */

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

static int parse_option(int opt, struct cli *c, char **argv)
{
    struct shard_bench_options *o = &c->opts;
    uint64_t v;
    uint32_t u;
    switch (opt) {
    case OPT_THREADS:
        if (cli_parse_threads(PROG, optarg, &o->threads))
            return CLI_EXIT_USAGE;
        break;
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
            return cli_usage_error(PROG, "--step-ms: '%s' is not a number of milliseconds in "
                                   "0..%.0f", optarg, MAX_MS);
        break;
    case OPT_BATCH:
        if (parse_u32(optarg, 1, MAX_BATCH, &o->batch))
            return cli_usage_error(PROG, "--batch: '%s' is not a number in 1..%d", optarg,
                                   MAX_BATCH);
        break;
    case OPT_QUEUE_DEPTH:
        if (parse_u32(optarg, 1, MAX_BATCH, &o->queue_depth))
            return cli_usage_error(PROG, "--queue-depth: '%s' is not a number in 1..%d",
                                   optarg, MAX_BATCH);
        break;
    case OPT_TRACE: c->trace_file = optarg; break;
    case OPT_JSON: c->json = 1; break;
    case OPT_SIZE:
        if (parse_u32(optarg, 1, MAX_SIZE, &o->size))
            return cli_usage_error(PROG, "--size: '%s' is not a number in 1..%d", optarg,
                                   MAX_SIZE);
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
            return cli_usage_error(PROG, "--shuffle-buffer: '%s' is not a positive number",
                                   optarg);
        break;
    case OPT_RTT:
        if (parse_double(optarg, 0, MAX_MS, &o->http.rtt_ms))
            return cli_usage_error(PROG, "--rtt: '%s' is not a number of milliseconds in "
                                   "0..%.0f", optarg, MAX_MS);
        break;
    case OPT_CONNECTIONS:
        if (parse_u32(optarg, 1, MAX_CONNECTIONS, &u))
            return cli_usage_error(PROG, "--connections: '%s' is not a number in 1..%d", optarg,
                                   MAX_CONNECTIONS);
        o->http.connections = (int)u;
        break;
    case OPT_WINDOW:
        if (cli_parse_size(optarg, &v) || v < 4096 || v > (1ull << 32))
            return cli_usage_error(PROG, "--window: '%s' is not a size in 4K..4G", optarg);
        o->http.window_bytes = v;
        break;
    case OPT_CACHE:
        if (cli_parse_size(optarg, &v) || v < 4096)
            return cli_usage_error(PROG, "--cache: '%s' is not a size of at least 4K", optarg);
        o->http.cache_bytes = v;
        break;
    case OPT_RETRIES:
        if (parse_u32(optarg, 0, MAX_RETRIES, &u))
            return cli_usage_error(PROG, "--retries: '%s' is not a number in 0..%d", optarg,
                                   MAX_RETRIES);
        o->http.retries = (int)u;
        break;
    case OPT_DIGESTS: c->digests_file = optarg; break;
    case OPT_BANDWIDTH: c->bandwidth = optarg; break;
    case OPT_INTENSITY: c->intensity = optarg; break;
    case OPT_PEAK: c->peak = optarg; break;
    default:
        return cli_other_option(PROG, opt, OPT_VERSION, usage_text, argv);
    }
    return 0;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        int rc = parse_option(opt, c, argv);
        if (rc)
            return rc;
    }
    int n = argc - optind;
    char **pos = argv + optind;
    if (n < 1)
        return cli_usage_error(PROG, "missing command: files, shards, compare or roofline");
    static const char *const names[] = {"files", "shards", "compare", "roofline"};
    static const int operands[] = {1, 1, 2, 0};
    int cmd = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(pos[0], names[i]))
            cmd = i;
    if (cmd < 0)
        return cli_usage_error(PROG, "unknown command '%s': files, shards, compare or "
                               "roofline", pos[0]);
    c->command = (enum command)cmd;
    if (n - 1 != operands[cmd])
        return cli_usage_error(PROG, "'%s' takes %d operand%s, got %d", names[cmd],
                               operands[cmd], operands[cmd] == 1 ? "" : "s", n - 1);
    if (c->command == CMD_ROOFLINE) {
        if (!c->bandwidth || !c->intensity || !c->peak)
            return cli_usage_error(PROG, "roofline needs --bandwidth, --intensity and --peak");
        return 0;
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
    if (c->command == CMD_SHARDS && (c->keys_file || c->size_given || c->fit_given ||
                                     !c->opts.upscale))
        return cli_usage_error(PROG, "--keys, --size, --fit and --no-upscale belong to the "
                               "files loader: shards are already at their size");
    if (c->command == CMD_FILES && !c->keys_file && shard_bench_is_remote(c->src))
        return cli_usage_error(PROG, "'%s': a URL cannot be listed: give the sample keys with "
                               "--keys FILE (or use compare with a dataset)", c->src);
    return 0;
}

/* ---- numbers for people --------------------------------------------------------- */

/* A value with up to 3 decimals, trailing zeros dropped: 200, 0.5, 1234.567. */
static const char *plain(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    return buf;
}

static const char *prefix_name(double factor)
{
    static const struct { double f; const char *name; } names[] = {
        {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}, {1e15, "P"}, {1e18, "E"},
        {1024.0, "Ki"}, {1048576.0, "Mi"}, {1073741824.0, "Gi"}, {1099511627776.0, "Ti"},
        {1125899906842624.0, "Pi"}, {1152921504606846976.0, "Ei"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].f == factor)
            return names[i].name;
    return "";
}

/* ---- roofline ------------------------------------------------------------------- */

static int run_roofline(const struct cli *c)
{
    double b, i, p, bp, pp;
    struct shard_err err;
    if (shard_quantity_parse(c->bandwidth, SHARD_QUANTITY_BANDWIDTH, &b, &bp, &err) ||
        shard_quantity_parse(c->intensity, SHARD_QUANTITY_INTENSITY, &i, NULL, &err) ||
        shard_quantity_parse(c->peak, SHARD_QUANTITY_COMPUTE, &p, &pp, &err))
        return cli_usage_error(PROG, "%s", err.msg);
    struct shard_roofline r;
    if (shard_roofline(b, i, p, &r, &err))
        return cli_usage_error(PROG, "%s", err.msg);
    if (c->json) {
        json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s}",
                              "bandwidth_bytes_per_second", b, "intensity_flop_per_byte", i,
                              "peak_flop_per_second", p, "memory_limit_flop_per_second", b * i,
                              "attainable_flop_per_second", r.attainable,
                              "ridge_flop_per_byte", r.ridge, "bound",
                              r.memory_bound ? "memory" : "compute");
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
        return CLI_EXIT_OK;
    }
    char t1[64], t2[64], t3[64], t4[64], t5[64];
    const char *bu = prefix_name(bp), *pu = prefix_name(pp);
    printf("attainable: %s %sFLOP/s (%s)\n", plain(r.attainable / pp, t1, sizeof t1), pu,
           r.memory_bound ? "memory-bound" : "compute-bound");
    if (r.memory_bound)
        printf("  bandwidth x intensity = %s %sB/s x %s FLOP/B = %s %sFLOP/s, below the peak "
               "of %s %sFLOP/s\n", plain(b / bp, t2, sizeof t2), bu, plain(i, t3, sizeof t3),
               plain(b * i / pp, t4, sizeof t4), pu, plain(p / pp, t5, sizeof t5), pu);
    else
        printf("  capped at the peak of %s %sFLOP/s: bandwidth x intensity = %s %sB/s x %s "
               "FLOP/B = %s %sFLOP/s\n", plain(p / pp, t2, sizeof t2), pu,
               plain(b / bp, t3, sizeof t3), bu, plain(i, t4, sizeof t4),
               plain(b * i / pp, t5, sizeof t5), pu);
    printf("ridge point: %s FLOP/B (below it a kernel is memory-bound, at or above it "
           "compute-bound)\n", plain(r.ridge, t1, sizeof t1));
    return CLI_EXIT_OK;
}

/* ---- the benchmark report ------------------------------------------------------- */

/* The stages worth showing for a mode. */
static int stage_shown(enum shard_bench_mode m, enum shard_bench_stage s)
{
    if (s == SHARD_STAGE_DECOMPRESS)
        return m == SHARD_BENCH_SHARDS;
    if (s == SHARD_STAGE_RESIZE)
        return m == SHARD_BENCH_FILES;
    return 1;
}

/* The phase a run is summed up by: the steady epochs, or the first alone. */
static const struct shard_bench_phase *headline(const struct shard_bench_result *r)
{
    return r->steady.epochs ? &r->steady : &r->first;
}

static void print_phase_row(const char *label, const struct shard_bench_phase *ph)
{
    printf("  %-22s %10.1f %9.1f %8.3f %9.1f /%8.1f %6.1f%%\n", label, ph->samples_per_second,
           ph->mb_per_second, ph->cpu_seconds_per_sample * MS, ph->batch_p50 * MS,
           ph->batch_p99 * MS, 100 * ph->wait_fraction);
}

static void print_run(const char *location, const struct shard_bench_result *r)
{
    char bytes[32];
    printf("%s %s%s: %llu sample%s per epoch at %u px (%s), %d thread%s, batch %u",
           shard_bench_mode_name(r->mode), location, r->remote ? " (HTTP)" : "",
           (unsigned long long)r->samples_per_epoch, r->samples_per_epoch == 1 ? "" : "s",
           r->size, shard_fit_name(r->fit), r->threads, r->threads == 1 ? "" : "s", r->batch);
    if (r->step_ms > 0)
        printf(", consumer step %.3g ms", r->step_ms);
    if (r->remote)
        printf(", rtt %.3g ms (simulated)", r->rtt_ms);
    printf("\n  startup %.3f s, first batch after %.3f s\n", r->startup_seconds,
           r->first_batch_seconds);
    printf("  %-22s %10s %9s %8s %19s %7s\n", "", "samples/s", "MB/s", "CPU ms",
           "batch p50/p99 ms", "waited");
    print_phase_row("epoch 1 (first)", &r->first);
    if (r->steady.epochs) {
        char label[32];
        if (r->steady.epochs == 1)
            snprintf(label, sizeof label, "epoch 2 (steady)");
        else
            snprintf(label, sizeof label, "epochs 2-%u (steady)", r->steady.epochs + 1);
        print_phase_row(label, &r->steady);
    }
    const struct shard_bench_phase *ph = headline(r);
    printf("  per sample (%s):", r->steady.epochs ? "steady" : "first epoch");
    const char *sep = " ";
    for (int s = 0; s < SHARD_STAGE_COUNT; s++) {
        if (!stage_shown(r->mode, (enum shard_bench_stage)s))
            continue;
        if (s == SHARD_STAGE_QUEUE_WAIT)
            sep = " | consumer: ";
        printf("%s%s %.3f ms", sep, shard_bench_stage_name((enum shard_bench_stage)s),
               ph->samples ? ph->stage_seconds[s] / (double)ph->samples * MS : 0);
        sep = ", ";
    }
    printf("\n  bytes read %s", cli_format_bytes(ph->bytes_read, bytes, sizeof bytes));
    if (r->remote)
        printf(", %llu HTTP requests, %llu retries, %.3f s of simulated rtt slept",
               (unsigned long long)ph->requests, (unsigned long long)ph->retries,
               ph->rtt_seconds);
    printf("\n");
    if (r->step_ms > 0)
        printf("  the consumer waited for input %.1f%% of the time (input-bound share)\n",
               100 * ph->wait_fraction);
    if (r->cold && r->cold_dropped && r->cold_resident >= 0)
        printf("  cold: page cache dropped before each epoch (%.1f%% of the pages still cached "
               "afterwards, worst epoch)\n", 100 * r->cold_resident);
    else if (r->cold)
        printf("  cold: %s\n", r->cold_dropped ? "page cache dropped before each epoch"
                                                : "NOT cold");
    if (r->cold && r->cold_note[0])
        printf("        %s\n", r->cold_note);
    if (r->first.errors + r->steady.errors)
        printf("  %llu samples failed; the first: %s\n",
               (unsigned long long)(r->first.errors + r->steady.errors), r->first_error);
}

/* ---- JSON ------------------------------------------------------------------------- */

static json_t *phase_json(const struct shard_bench_phase *ph)
{
    if (!ph->epochs)
        return json_null();
    json_t *stages = json_object();
    for (int s = 0; s < SHARD_STAGE_COUNT; s++)
        json_object_set_new(stages, shard_bench_stage_name((enum shard_bench_stage)s),
                            json_real(ph->samples ? ph->stage_seconds[s] / (double)ph->samples *
                                                        MS
                                                  : 0));
    return json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:f, s:o, s:{s:f, s:f}, s:f, "
                     "s:I, s:I, s:f}",
                     "epochs", (int)ph->epochs, "samples", (json_int_t)ph->samples, "errors",
                     (json_int_t)ph->errors, "batches", (json_int_t)ph->batches, "seconds",
                     ph->seconds, "samples_per_second", ph->samples_per_second, "mb_per_second",
                     ph->mb_per_second, "bytes_read", (json_int_t)ph->bytes_read,
                     "cpu_seconds_per_sample", ph->cpu_seconds_per_sample, "stage_ms_per_sample",
                     stages, "batch_latency_ms", "p50", ph->batch_p50 * MS, "p99",
                     ph->batch_p99 * MS, "wait_fraction", ph->wait_fraction, "requests",
                     (json_int_t)ph->requests, "retries", (json_int_t)ph->retries,
                     "simulated_rtt_seconds", ph->rtt_seconds);
}

static json_t *run_json(const char *location, const struct shard_bench_result *r)
{
    json_t *o = json_pack("{s:s, s:s, s:b, s:i, s:i, s:f, s:f, s:b, s:i, s:s, s:I, s:f, s:f, "
                          "s:f, s:o, s:o, s:I}",
                          "mode", shard_bench_mode_name(r->mode), "location", location,
                          "remote", r->remote, "threads", r->threads, "batch", (int)r->batch,
                          "step_ms", r->step_ms, "rtt_ms", r->rtt_ms, "rtt_simulated",
                          r->remote && r->rtt_ms > 0, "size", (int)r->size, "fit",
                          shard_fit_name(r->fit), "samples_per_epoch",
                          (json_int_t)r->samples_per_epoch, "startup_seconds",
                          r->startup_seconds, "first_batch_seconds", r->first_batch_seconds,
                          "samples_per_second", headline(r)->samples_per_second, "first_epoch",
                          phase_json(&r->first), "steady", phase_json(&r->steady), "errors",
                          (json_int_t)(r->first.errors + r->steady.errors));
    if (!o)
        return NULL;
    json_object_set_new(o, "wait_fraction", json_real(headline(r)->wait_fraction));
    json_object_set_new(o, "queue_depth", json_integer(r->queue_depth));
    json_object_set_new(o, "first_error",
                        r->first_error[0] ? json_string(r->first_error) : json_null());
    if (r->cold)
        json_object_set_new(o, "cold",
                            json_pack("{s:b, s:b, s:o, s:s}", "requested", 1, "dropped",
                                      r->cold_dropped, "resident_fraction",
                                      r->cold_resident >= 0 ? json_real(r->cold_resident)
                                                            : json_null(),
                                      "note", r->cold_note));
    return o;
}

static void print_json(json_t *o)
{
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
}

static int write_digests(const char *path, const struct shard_bench_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", PROG, path, strerror(errno));
        return -1;
    }
    for (uint64_t i = 0; i < r->digest_count; i++) {
        const struct shard_bench_digest *d = &r->digests[i];
        char hex[17];
        shard_hex64(d->xxh3, hex);
        json_t *o = json_object();
        shard_json_set_key(o, d->key, d->key_len);
        json_object_set_new(o, "width", json_integer(d->width));
        json_object_set_new(o, "height", json_integer(d->height));
        json_object_set_new(o, "xxh3", json_string(hex));
        json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', f);
        json_decref(o);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write '%s': %s\n", PROG, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

/* compare: the files side resizes to the dataset's geometry unless told
 * otherwise, and a URL source reads the dataset's keys. */
static int prepare_compare(struct cli *c, struct shard_keylist *keys, struct shard_err *err)
{
    struct shard_dataset *ds;
    int rc = shard_dataset_open(&ds, c->dst, err);
    if (rc)
        return rc;
    const struct shard_config *cfg = &shard_dataset_manifest(ds)->config;
    if (!c->size_given)
        c->opts.size = cfg->size;
    else if (c->opts.size != cfg->size)
        fprintf(stderr, "%s: note: --size %u differs from the dataset's %u\n", PROG,
                c->opts.size, cfg->size);
    if (!c->fit_given)
        c->opts.fit = cfg->fit;
    if (c->opts.upscale)
        c->opts.upscale = cfg->upscale;
    shard_dataset_close(ds);
    if (shard_bench_is_remote(c->src) && !c->keys_file) {
        rc = shard_bench_keys_from_dataset(c->dst, &c->opts.http, keys, err);
        if (!rc)
            c->opts.keys = keys;
    }
    return rc;
}

static int fail(struct shard_err *err)
{
    fprintf(stderr, "%s: %s\n", PROG, err->msg);
    return CLI_EXIT_FAILED;
}

int main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    shard_bench_options_init(&c.opts);
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc < 0 ? CLI_EXIT_USAGE : rc;
    if (c.command == CMD_ROOFLINE)
        return run_roofline(&c);

    struct shard_err err;
    shard_err_clear(&err);
    struct shard_keylist keys = {0};
    struct shard_trace *trace = NULL;
    struct shard_bench_result files = {0}, shards = {0};
    int status = CLI_EXIT_OK;
    if (c.keys_file) {
        if (shard_bench_keys_from_file(c.keys_file, &keys, &err)) {
            status = fail(&err);
            goto out;
        }
        c.opts.keys = &keys;
    }
    if (c.command == CMD_COMPARE && prepare_compare(&c, &keys, &err)) {
        status = fail(&err);
        goto out;
    }
    if (c.trace_file && shard_trace_new(&trace, 0, &err)) {
        status = fail(&err);
        goto out;
    }
    c.opts.trace = trace;
    c.opts.digests = c.digests_file != NULL;
    if (c.command != CMD_SHARDS && shard_bench_run(SHARD_BENCH_FILES, c.src, &c.opts, &files,
                                                   &err)) {
        status = fail(&err);
        goto out;
    }
    if (c.command != CMD_FILES && shard_bench_run(SHARD_BENCH_SHARDS, c.dst, &c.opts, &shards,
                                                  &err)) {
        status = fail(&err);
        goto out;
    }
    const struct shard_bench_result *single = c.command == CMD_SHARDS ? &shards : &files;
    double ratio = headline(&files)->samples_per_second > 0
                       ? headline(&shards)->samples_per_second /
                             headline(&files)->samples_per_second
                       : 0;
    if (c.json) {
        json_t *o;
        if (c.command == CMD_COMPARE)
            o = json_pack("{s:s, s:o, s:o, s:f, s:s}", "mode", "compare", "files",
                          run_json(c.src, &files), "shards", run_json(c.dst, &shards), "ratio",
                          ratio, "ratio_basis",
                          files.steady.epochs && shards.steady.epochs ? "steady epochs"
                                                                      : "first epoch");
        else
            o = run_json(c.command == CMD_FILES ? c.src : c.dst, single);
        print_json(o);
        json_decref(o);
    } else if (c.command == CMD_COMPARE) {
        print_run(c.src, &files);
        print_run(c.dst, &shards);
        printf("shards/files: %.2fx samples per second (%s, same %d threads)\n", ratio,
               files.steady.epochs && shards.steady.epochs ? "steady epochs" : "first epoch",
               files.threads);
    } else {
        print_run(c.command == CMD_FILES ? c.src : c.dst, single);
    }
    if (c.digests_file && write_digests(c.digests_file, single))
        status = CLI_EXIT_FAILED;
    if (trace && shard_trace_write(trace, c.trace_file, &err))
        status = fail(&err);
    if (trace && shard_trace_dropped(trace))
        fprintf(stderr, "%s: note: the trace kept the first %llu events and dropped %llu\n",
                PROG, (unsigned long long)shard_trace_events(trace),
                (unsigned long long)shard_trace_dropped(trace));
out:
    shard_bench_result_release(&files);
    shard_bench_result_release(&shards);
    shard_trace_free(trace);
    shard_keylist_release(&keys);
    return status;
}
