/* shardbench - read throughput of small files against shards, local or over
 * HTTP, and where the consumer waits.  The flow: options (options.c), the
 * runs (bench_run, the engine in engine/), the report (report_text.c,
 * report_json.c, report_html.c); the roofline subcommand is roofline.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "report.h"
#include "roofline.h"
#include "engine/bench.h"
#include "shardx.h"

#define PROG "shardbench"

static int fail(const struct shard_err *err)
{
    fprintf(stderr, "%s: %s\n", PROG, err->msg);
    return CLI_EXIT_FAILED;
}

/* compare: the files side resizes to the dataset's geometry unless told
 * otherwise, and a URL source reads the dataset's keys. */
static int prepare_compare(struct options *o, struct shard_keylist *keys, struct shard_err *err)
{
    struct shard_dataset *ds;
    int rc = shard_dataset_open(&ds, o->dst, err);
    if (rc)
        return rc;
    const struct shard_config *cfg = &shard_dataset_manifest(ds)->config;
    if (!o->size_given)
        o->bench.size = cfg->size;
    else if (o->bench.size != cfg->size)
        fprintf(stderr, "%s: note: --size %u differs from the dataset's %u\n", PROG, o->bench.size,
                cfg->size);
    if (!o->fit_given)
        o->bench.fit = cfg->fit;
    if (o->bench.upscale)
        o->bench.upscale = cfg->upscale;
    shard_dataset_close(ds);
    if (shard_location_is_remote(o->src) && !o->keys_file && strncmp(o->src, "s3://", 5)) {
        rc = bench_keys_from_dataset(o->dst, &o->bench.reading, keys, err);
        if (!rc)
            o->bench.keys = keys;
    }
    return rc;
}

/* The sample keys of --keys FILE, for the files loader and the shard
 * reader both; a file that lists none is an error: a run over nothing
 * measures nothing. */
static int read_keys(struct options *o, struct shard_keylist *keys, struct shard_err *err)
{
    int rc = bench_keys_from_file(o->keys_file, keys, err);
    if (!rc && keys->count == 0)
        rc = shard_err_set(err, SHARD_EINVAL, "--keys: '%s' lists no keys", o->keys_file);
    if (!rc)
        o->bench.keys = o->bench.shard_keys = keys;
    return rc;
}

/* A run that read nothing, or in which samples failed, did not measure what
 * was asked: say so, and the exit status is 1. */
static int check_run(const char *location, const struct bench_result *r)
{
    if (r->cache_warning[0])
        fprintf(stderr, "%s: warning: %s\n", PROG, r->cache_warning);
    if (r->samples_per_epoch == 0) {
        fprintf(stderr, "%s: no samples to read in '%s'\n", PROG, location);
        return CLI_EXIT_FAILED;
    }
    uint64_t failed = report_errors(r);
    if (failed) {
        fprintf(stderr, "%s: %llu sample%s of '%s' failed; the first: %s\n", PROG,
                (unsigned long long)failed, failed == 1 ? "" : "s", location, r->first_error);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

static void write_page(FILE *out, const void *report)
{
    report_write_html(report, out);
}

static void write_digests(FILE *out, const void *result)
{
    report_write_digests(result, out);
}

/* The runs of files, shards or compare, and their report.  `src` and `dst`
 * are SRC and DST as reports and messages show them. */
static int run(const struct options *opts, const char *command_line, const char *src,
               const char *dst)
{
    struct options o = *opts; /* compare adopts the dataset's geometry into it */
    struct shard_err err;
    shard_err_clear(&err);
    struct shard_keylist keys = {0};
    struct trace *trace = NULL;
    struct bench_result files = {0}, shards = {0};
    int status = CLI_EXIT_OK;
    if ((o.keys_file && read_keys(&o, &keys, &err)) ||
        (o.command == CMD_COMPARE && prepare_compare(&o, &keys, &err)) ||
        (o.trace_file && trace_new(&trace, 0, &err))) {
        status = fail(&err);
        goto out;
    }
    o.bench.trace = trace;
    o.bench.digests = o.digests_file != NULL;
    if ((o.command != CMD_SHARDS && bench_run(BENCH_FILES, o.src, &o.bench, &files, &err)) ||
        (o.command != CMD_FILES && bench_run(BENCH_SHARDS, o.dst, &o.bench, &shards, &err))) {
        status = fail(&err);
        goto out;
    }
    struct report r = {.command = o.command,
                       .src = src,
                       .dst = dst,
                       .files = &files,
                       .shards = &shards,
                       .command_line = command_line};
    if (report_prepare(&r)) {
        report_release(&r);
        shard_err_set(&err, SHARD_ENOMEM, "out of memory for the report");
        status = fail(&err);
        goto out;
    }
    if (o.json)
        report_write_json(&r, stdout);
    else
        report_write_text(&r, stdout);
    if (o.command != CMD_SHARDS && check_run(src, &files))
        status = CLI_EXIT_FAILED;
    if (o.command != CMD_FILES && check_run(dst, &shards))
        status = CLI_EXIT_FAILED;
    const char *location;
    if (o.digests_file &&
        cli_write_file(PROG, o.digests_file, write_digests, report_single(&r, &location)))
        status = CLI_EXIT_FAILED;
    if (o.report_file && cli_write_file(PROG, o.report_file, write_page, &r))
        status = CLI_EXIT_FAILED;
    report_release(&r);
    if (trace && trace_write(trace, o.trace_file, &err))
        status = fail(&err);
    if (trace && trace_dropped(trace))
        fprintf(stderr, "%s: note: the trace kept the first %llu events and dropped %llu\n", PROG,
                (unsigned long long)trace_events(trace), (unsigned long long)trace_dropped(trace));
out:
    bench_result_release(&files);
    bench_result_release(&shards);
    trace_free(trace);
    shard_keylist_release(&keys);
    return status;
}

int main(int argc, char **argv)
{
    cli_check_stdout_at_exit(PROG);
    /* the command as given, for the report: getopt permutes argv */
    char *command_line = cli_command_line(argc, argv), *src = NULL, *dst = NULL;
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (!rc && o.command == CMD_ROOFLINE) {
        rc = roofline_run(&o);
    } else if (!rc) {
        /* what reports and messages name: never a password given in a URL */
        src = o.src ? shardx_redact_urls(o.src) : NULL;
        dst = o.dst ? shardx_redact_urls(o.dst) : NULL;
        if (!command_line || (o.src && !src) || (o.dst && !dst))
            rc = fail(&(struct shard_err){SHARD_ENOMEM, "out of memory"});
        else
            rc = run(&o, command_line, src, dst);
    }
    free(src);
    free(dst);
    free(command_line);
    return rc;
}
