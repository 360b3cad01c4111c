/* shardcheck - prove that a shardify output is intact and is the same
 * experiment as its source.  Argument parsing and the report; the work is
 * shard_verify() (shardkit/verify.h). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cli_list.h"
#include "shardkit.h"
#include "shardkit/json.h"

#define PROG "shardcheck"
#define PROBLEMS_SHOWN 100
#define MAX_WORLD_SIZE 1000000
#define MAX_EPOCHS 1000000
#define GB 1e9

static const char usage_text[] =
    "Usage: shardcheck [OPTIONS] DST\n"
    "Prove that the dataset in DST is intact and is the same experiment as its\n"
    "source: the same samples, counts and labels, every sample visited once per\n"
    "epoch, pixels that match what the pipeline makes.\n"
    "\n"
    "Always (the default pass, at disk speed):\n"
    "  manifest.json is well-formed and consistent; every listed shard is present\n"
    "  with the listed size and whole-file xxh3 (a changed byte anywhere in a shard\n"
    "  is caught here); headers, trailers and footers parse; record counts and keys\n"
    "  match index.jsonl line by line; keys are unique; counts and by_label match.\n"
    "\n"
    "Options:\n"
    "  --deep                also decompress and decode every record (frame xxh3,\n"
    "                        zstd checksum, codec, dimensions against index and config)\n"
    "  --source SRC          also scan SRC (directory or archive) as shardify does and\n"
    "                        prove identity: every candidate file is a sample with the\n"
    "                        same key and source xxh3, or a listed reject; nothing extra\n"
    "                        or missing; labels re-derived from keys equal the stored\n"
    "                        ones, so per-label counts are equal\n"
    "  --labels FILE         the CSV the labels came from, when the config says\n"
    "                        file:NAME:HASH (without it labels are not re-derived)\n"
    "  --fidelity N          re-run the pipeline on N source files spread evenly over\n"
    "                        the dataset (needs --source) and compare the stored pixels\n"
    "                        with the re-run's: raw and png must be identical; jpeg\n"
    "                        must reach --min-psnr (identical bytes give infinity;\n"
    "                        pixels a level off, as another libjpeg-turbo build may\n"
    "                        give, measured above 40 dB).  The codec's own loss (stored\n"
    "                        pixels against the pixels before encoding) is reported too\n"
    "  --min-psnr DB         jpeg threshold of --fidelity (default 35)\n"
    "  --visitation W[,W...] prove that the epoch plan visits each sample exactly once\n"
    "                        per epoch for each world size W\n"
    "  --epochs E            epochs checked by --visitation (default 2)\n"
    "  --seed S              plan seed (default 0)\n"
    "  --shuffle-buffer B    plan shuffle window (default 1024)\n"
    "  --remainder keep|drop|pad\n"
    "                        plan remainder rule (default keep: nothing dropped or\n"
    "                        padded; drop: N mod W left out; pad: repeats fill up)\n"
    "  --no-shuffle          check plans in stored order\n"
    "  --json                print the report as one JSON object on stdout (every\n"
    "                        problem, per-pass rates, fidelity per sample)\n"
    "  --threads N           threads (default: CPUs this process may use)\n"
    "  -h, --help            show this help\n"
    "  --version             show the version\n"
    "\n"
    "Every problem is listed on stdout (the first 100; --json lists all), each\n"
    "naming the shard, record and key it is about.\n"
    "\n"
    "Exit status: 0 verified; 1 verification failed (including a malformed\n"
    "manifest.json); 2 usage error or I/O error (DST, manifest.json or SRC\n"
    "missing or unreadable).\n";

enum {
    OPT_DEEP = 256, OPT_SOURCE, OPT_LABELS, OPT_FIDELITY, OPT_MIN_PSNR, OPT_VISITATION,
    OPT_EPOCHS, OPT_SEED, OPT_SHUFFLE_BUFFER, OPT_REMAINDER, OPT_NO_SHUFFLE, OPT_JSON,
    OPT_THREADS, OPT_VERSION,
};

static const struct option long_options[] = {
    {"deep", no_argument, NULL, OPT_DEEP},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"fidelity", required_argument, NULL, OPT_FIDELITY},
    {"min-psnr", required_argument, NULL, OPT_MIN_PSNR},
    {"visitation", required_argument, NULL, OPT_VISITATION},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"shuffle-buffer", required_argument, NULL, OPT_SHUFFLE_BUFFER},
    {"remainder", required_argument, NULL, OPT_REMAINDER},
    {"no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE},
    {"json", no_argument, NULL, OPT_JSON},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

struct cli {
    struct shard_verify_options opts;
    const char *dst;
    int json;
};

static int parse_psnr(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || v > 200)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
    struct shard_verify_options *o = &c->opts;
    int opt, n;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        switch (opt) {
        case OPT_DEEP: o->deep = 1; break;
        case OPT_SOURCE: o->source = optarg; break;
        case OPT_LABELS: o->labels = optarg; break;
        case OPT_FIDELITY:
            if (cli_parse_u64(optarg, 1, UINT64_MAX, &o->fidelity))
                return cli_usage_error(PROG, "--fidelity: '%s' is not a positive number",
                                       optarg);
            break;
        case OPT_MIN_PSNR:
            if (parse_psnr(optarg, &o->min_psnr))
                return cli_usage_error(PROG, "--min-psnr: '%s' is not a number of dB in "
                                       "(0, 200]", optarg);
            break;
        case OPT_VISITATION:
            n = cli_parse_u32_list(optarg, 1, MAX_WORLD_SIZE, o->world_sizes,
                                   SHARD_VERIFY_MAX_WORLD_SIZES);
            if (n < 0)
                return cli_usage_error(PROG, "--visitation: '%s' is not a list of world sizes "
                                       "in 1..%d (e.g. 1,2,8)", optarg, MAX_WORLD_SIZE);
            o->world_size_count = (size_t)n;
            break;
        case OPT_EPOCHS:
            if (cli_parse_u64(optarg, 1, MAX_EPOCHS, &o->epochs))
                return cli_usage_error(PROG, "--epochs: '%s' is not a number in 1..%d", optarg,
                                       MAX_EPOCHS);
            break;
        case OPT_SEED:
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &o->plan.seed))
                return cli_usage_error(PROG, "--seed: '%s' is not a whole number", optarg);
            break;
        case OPT_SHUFFLE_BUFFER:
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &o->plan.shuffle_buffer))
                return cli_usage_error(PROG, "--shuffle-buffer: '%s' is not a whole number",
                                       optarg);
            break;
        case OPT_REMAINDER:
            if (shard_remainder_parse(optarg, &o->plan.remainder))
                return cli_usage_error(PROG, "--remainder: '%s' is not keep, drop or pad",
                                       optarg);
            break;
        case OPT_NO_SHUFFLE: o->plan.shuffle = 0; break;
        case OPT_JSON: c->json = 1; break;
        case OPT_THREADS:
            if (cli_parse_threads(PROG, optarg, &o->threads))
                return CLI_EXIT_USAGE;
            break;
        default:
            return cli_other_option(PROG, opt, OPT_VERSION, usage_text, argv);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error(PROG, "expected one DST, got %d operands", argc - optind);
    c->dst = argv[optind];
    if (o->fidelity && !o->source)
        return cli_usage_error(PROG, "--fidelity needs --source SRC");
    if (o->labels && !o->source)
        return cli_usage_error(PROG, "--labels is only used with --source");
    return CLI_EXIT_OK;
}

/* ---- the human report ------------------------------------------------------- */

static double per_second(double amount, double seconds)
{
    return seconds > 0 ? amount / seconds : 0;
}

/* "hashed: 3 shard files, 28.7 MB in 0.01 s (2900/s; 2.87 GB/s; 2.90 GB/s per core; 1 thread)" */
static void print_rate(const char *what, const struct shard_verify_rate *r, const char *one,
                       const char *many)
{
    char bytes[32];
    printf("  %s: %llu %s, %s in %.2f s (%.0f/s; %.2f GB/s; %.2f GB/s per core; %d thread%s)\n",
           what, (unsigned long long)r->items, r->items == 1 ? one : many,
           cli_format_bytes(r->bytes, bytes, sizeof bytes), r->seconds,
           per_second((double)r->items, r->seconds), per_second((double)r->bytes / GB, r->seconds),
           per_second((double)r->bytes / GB, r->busy_seconds), r->threads,
           r->threads == 1 ? "" : "s");
}

/* "inf" or the value with two decimals. */
static const char *db(double v, char *buf, size_t size)
{
    if (isinf(v))
        snprintf(buf, size, "inf");
    else
        snprintf(buf, size, "%.2f", v);
    return buf;
}

static void print_fidelity(const struct shard_verify_report *r)
{
    double worst = INFINITY, worst_loss = INFINITY;
    uint64_t exact = 0, same = 0, passed = 0;
    for (uint64_t i = 0; i < r->fidelity_count; i++) {
        const struct shard_fidelity_result *f = &r->fidelity[i];
        if (f->psnr < worst)
            worst = f->psnr;
        if (f->loss_psnr < worst_loss)
            worst_loss = f->loss_psnr;
        exact += (uint64_t)f->exact;
        same += (uint64_t)f->same_bytes;
        passed += (uint64_t)f->passed;
    }
    char a[32], b[32];
    printf("  fidelity: %llu/%llu samples pass (%llu identical pixels, %llu identical bytes); "
           "lowest psnr %s dB (jpeg threshold %.2f dB); lowest codec loss psnr %s dB\n",
           (unsigned long long)passed, (unsigned long long)r->fidelity_count,
           (unsigned long long)exact, (unsigned long long)same, db(worst, a, sizeof a),
           r->min_psnr, db(worst_loss, b, sizeof b));
}

static void print_report(const struct cli *c, const struct shard_verify_report *r)
{
    uint64_t total = r->problem_count + r->problems_not_kept;
    if (total == 0)
        printf("%s: verified '%s': %u shard%s, %llu samples\n", PROG, c->dst, r->shards,
               r->shards == 1 ? "" : "s", (unsigned long long)r->samples);
    else
        printf("%s: FAILED '%s': %llu problem%s\n", PROG, c->dst, (unsigned long long)total,
               total == 1 ? "" : "s");
    for (uint64_t i = 0; i < r->problem_count && i < PROBLEMS_SHOWN; i++)
        printf("  %s\n", r->problems[i].message);
    if (total > PROBLEMS_SHOWN)
        printf("  ... and %llu more (--json lists every one)\n",
               (unsigned long long)(total - PROBLEMS_SHOWN));
    print_rate("hashed", &r->hash, "shard file", "shard files");
    if (c->opts.deep)
        print_rate("deep", &r->deep, "record decoded", "records decoded");
    if (c->opts.source) {
        print_rate("source", &r->source, "file hashed", "files hashed");
        printf("  source: %llu candidate files; labels %s\n",
               (unsigned long long)r->source_candidates,
               r->labels_checked ? "re-derived and checked"
                                 : r->labels_note ? r->labels_note : "not checked");
    }
    if (c->opts.fidelity)
        print_fidelity(r);
    for (size_t i = 0; i < r->visitation_count; i++) {
        const struct shard_visitation_result *v = &r->visitation[i];
        printf("  visitation: world size %u, %llu epoch%s: %s (%llu..%llu samples per rank",
               v->world_size, (unsigned long long)v->epochs, v->epochs == 1 ? "" : "s",
               v->passed ? "ok" : "FAILED", (unsigned long long)v->min_per_rank,
               (unsigned long long)v->max_per_rank);
        if (c->opts.plan.remainder == SHARD_REMAINDER_PAD)
            printf(", %llu padded per epoch", (unsigned long long)v->padded);
        if (c->opts.plan.remainder == SHARD_REMAINDER_DROP)
            printf(", %llu dropped per epoch", (unsigned long long)v->dropped);
        printf(")\n");
    }
}

/* ---- the JSON report ------------------------------------------------------------ */

static json_t *json_number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *rate_json(const struct shard_verify_rate *r)
{
    return json_pack("{s:I, s:I, s:f, s:f, s:o, s:o, s:i}", "bytes", (json_int_t)r->bytes,
                     "items", (json_int_t)r->items, "seconds", r->seconds, "busy_seconds",
                     r->busy_seconds, "gb_per_s",
                     json_number_or_null(per_second((double)r->bytes / GB, r->seconds)),
                     "gb_per_s_per_core",
                     json_number_or_null(per_second((double)r->bytes / GB, r->busy_seconds)),
                     "threads", r->threads);
}

static json_t *problems_json(const struct shard_verify_report *r)
{
    json_t *a = json_array();
    for (uint64_t i = 0; i < r->problem_count; i++) {
        const struct shard_problem *p = &r->problems[i];
        json_t *o = json_object();
        json_object_set_new(o, "check", json_string(shard_check_name(p->check)));
        json_object_set_new(o, "code", json_integer(p->code));
        json_object_set_new(o, "error", json_string(shard_strerror(p->code)));
        json_object_set_new(o, "shard", p->shard >= 0 ? json_integer(p->shard) : json_null());
        json_object_set_new(o, "record", p->record >= 0 ? json_integer(p->record) : json_null());
        if (p->key)
            shard_json_set_key(o, p->key, p->key_len);
        json_t *msg = json_string(p->message);
        json_object_set_new(o, "message", msg ? msg : json_string("(message is not UTF-8)"));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *fidelity_json(const struct shard_verify_report *r)
{
    json_t *samples = json_array();
    for (uint64_t i = 0; i < r->fidelity_count; i++) {
        const struct shard_fidelity_result *f = &r->fidelity[i];
        json_t *o = json_object();
        shard_json_set_key(o, f->key, f->key_len);
        json_object_set_new(o, "shard", json_integer(f->shard));
        json_object_set_new(o, "record", json_integer((json_int_t)f->record));
        json_object_set_new(o, "width", json_integer(f->width));
        json_object_set_new(o, "height", json_integer(f->height));
        json_object_set_new(o, "same_bytes", json_boolean(f->same_bytes));
        json_object_set_new(o, "exact", json_boolean(f->exact));
        /* JSON has no infinity: identical pixels give null and exact: true */
        json_object_set_new(o, "psnr", json_number_or_null(f->psnr));
        json_object_set_new(o, "loss_psnr", json_number_or_null(f->loss_psnr));
        json_object_set_new(o, "passed", json_boolean(f->passed));
        json_array_append_new(samples, o);
    }
    return json_pack("{s:f, s:o}", "min_psnr", r->min_psnr, "samples", samples);
}

static json_t *visitation_json(const struct cli *c, const struct shard_verify_report *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->visitation_count; i++) {
        const struct shard_visitation_result *v = &r->visitation[i];
        json_array_append_new(
            a, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:b}", "world_size", (int)v->world_size,
                         "epochs", (json_int_t)v->epochs, "min_per_rank",
                         (json_int_t)v->min_per_rank, "max_per_rank",
                         (json_int_t)v->max_per_rank, "padded", (json_int_t)v->padded,
                         "dropped", (json_int_t)v->dropped, "passed", v->passed));
    }
    return json_pack("{s:I, s:s, s:I, s:b, s:o}", "seed", (json_int_t)c->opts.plan.seed,
                     "remainder", shard_remainder_name(c->opts.plan.remainder),
                     "shuffle_buffer", (json_int_t)c->opts.plan.shuffle_buffer, "shuffle",
                     c->opts.plan.shuffle, "world_sizes", a);
}

static void print_json(const struct cli *c, const struct shard_verify_report *r)
{
    json_t *o = json_object();
    uint64_t total = r->problem_count + r->problems_not_kept;
    json_object_set_new(o, "dataset", json_string(c->dst));
    json_object_set_new(o, "verified", json_boolean(total == 0));
    json_object_set_new(o, "shards", json_integer(r->shards));
    json_object_set_new(o, "samples", json_integer((json_int_t)r->samples));
    json_object_set_new(o, "threads", json_integer(r->threads));
    json_object_set_new(o, "problem_count", json_integer((json_int_t)total));
    json_object_set_new(o, "problems", problems_json(r));
    json_t *rates = json_object();
    json_object_set_new(rates, "hash", rate_json(&r->hash));
    if (c->opts.deep)
        json_object_set_new(rates, "deep", rate_json(&r->deep));
    if (c->opts.source)
        json_object_set_new(rates, "source", rate_json(&r->source));
    json_object_set_new(o, "rates", rates);
    if (c->opts.source)
        json_object_set_new(o, "source",
                            json_pack("{s:s, s:I, s:b, s:s?}", "path", c->opts.source,
                                      "candidates", (json_int_t)r->source_candidates,
                                      "labels_checked", r->labels_checked, "labels_note",
                                      r->labels_note));
    if (c->opts.fidelity)
        json_object_set_new(o, "fidelity", fidelity_json(r));
    if (c->opts.world_size_count)
        json_object_set_new(o, "visitation", visitation_json(c, r));
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(o);
}

int main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    shard_verify_options_init(&c.opts);
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc;
    struct shard_verify_report report;
    struct shard_err err;
    shard_err_clear(&err);
    rc = shard_verify(c.dst, &c.opts, &report, &err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        shard_verify_report_release(&report);
        return CLI_EXIT_USAGE;
    }
    if (c.json)
        print_json(&c, &report);
    else
        print_report(&c, &report);
    int failed = report.problem_count + report.problems_not_kept > 0;
    shard_verify_report_release(&report);
    return failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
