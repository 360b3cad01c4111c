/* report_json.c - a shardbench report as JSON (see report.h). */
#include "report.h"

#include "cli_json.h"
#include "shardx_json.h"

static json_t *phase_json(const struct bench_phase *ph)
{
    if (!ph->epochs)
        return json_null();
    json_t *stages = json_object();
    for (int s = 0; s < STAGE_COUNT; s++)
        json_object_set_new(stages, bench_stage_name((enum bench_stage)s),
                            json_real(report_stage_ms(ph, (enum bench_stage)s)));
    return json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:f, s:o, s:{s:f, s:f}, s:f, "
                     "s:I, s:I, s:f, s:{s:I, s:I, s:I, s:I, s:I}}",
                     "epochs", (int)ph->epochs, "samples", (json_int_t)ph->samples, "errors",
                     (json_int_t)ph->errors, "batches", (json_int_t)ph->batches, "seconds",
                     ph->seconds, "samples_per_second", ph->samples_per_second, "mb_per_second",
                     ph->mb_per_second, "bytes_read", (json_int_t)ph->bytes_read,
                     "cpu_seconds_per_sample", ph->cpu_seconds_per_sample, "stage_ms_per_sample",
                     stages, "batch_latency_ms", "p50", ph->batch_p50 * REPORT_MS, "p99",
                     ph->batch_p99 * REPORT_MS, "wait_fraction", ph->wait_fraction, "requests",
                     (json_int_t)ph->requests, "retries", (json_int_t)ph->retries,
                     "simulated_rtt_seconds", ph->rtt_seconds, "cache", "hits",
                     (json_int_t)ph->cache_hits, "misses", (json_int_t)ph->cache_misses,
                     "bytes_fetched", (json_int_t)ph->cache_bytes_fetched, "evictions",
                     (json_int_t)ph->cache_evictions, "skipped", (json_int_t)ph->cache_skipped);
}

static json_t *wait_json(const struct run_view *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->wait_count; i++)
        json_array_append_new(a, json_pack("{s:f, s:f, s:i}", "t", v->wait[i].seconds, "wait_ms",
                                           v->wait[i].wait_ms, "batches", (int)v->wait[i].batches));
    return a;
}

static json_t *machine_json(const struct report_machine *m)
{
    return json_pack("{s:i, s:I, s:s, s:s}", "cpus_available", m->cpus_available, "cpus_online",
                     (json_int_t)m->cpus_online, "cpu", m->cpu, "system", m->system);
}

static json_t *run_json(const struct report *rep, const char *location,
                        const struct bench_result *r)
{
    json_t *o = json_pack("{s:s}", "mode", bench_mode_name(r->mode));
    cli_json_set_path(o, "location", location); /* or location_hex */
    json_t *rest = json_pack("{s:b, s:i, s:i, s:f, s:f, s:b, s:i, s:s, s:I, s:f, s:f, "
                             "s:f, s:o, s:o, s:I}",
                             "remote", r->remote, "threads", r->threads, "batch", (int)r->batch,
                             "step_ms", r->step_ms, "rtt_ms", r->rtt_ms, "rtt_simulated",
                             r->remote && r->rtt_ms > 0, "size", (int)r->size, "fit",
                             shard_fit_name(r->fit), "samples_per_epoch",
                             (json_int_t)r->samples_per_epoch, "startup_seconds",
                             r->startup_seconds, "first_batch_seconds", r->first_batch_seconds,
                             "samples_per_second", report_headline(r)->samples_per_second,
                             "first_epoch", phase_json(&r->first), "steady", phase_json(&r->steady),
                             "errors", (json_int_t)report_errors(r));
    if (!o || !rest || json_object_update(o, rest)) {
        json_decref(o);
        json_decref(rest);
        return NULL;
    }
    json_decref(rest);
    json_object_set_new(o, "wait_fraction", json_real(report_headline(r)->wait_fraction));
    json_object_set_new(o, "queue_depth", json_integer(r->queue_depth));
    json_object_set_new(o, "first_error",
                        r->first_error[0] ? cli_json_text(r->first_error) : json_null());
    if (r->cold)
        json_object_set_new(o, "cold",
                            json_pack("{s:b, s:b, s:o, s:o}", "requested", 1, "dropped",
                                      r->cold_dropped, "resident_fraction",
                                      r->cold_resident >= 0 ? json_real(r->cold_resident)
                                                            : json_null(),
                                      "note", cli_json_text(r->cold_note)));
    const struct run_view *v = report_view(rep, r);
    json_object_set_new(o, "batch_latency_histogram", cli_json_histogram(&v->latency_ms));
    if (r->step_ms > 0)
        json_object_set_new(o, "wait_over_time", wait_json(v));
    return o;
}

void report_write_json(const struct report *r, FILE *out)
{
    json_t *o;
    if (r->command == CMD_COMPARE) {
        o = json_pack("{s:s, s:o, s:o, s:f, s:s}", "mode", "compare", "files",
                      run_json(r, r->src, r->files), "shards", run_json(r, r->dst, r->shards),
                      "ratio", report_ratio(r), "ratio_basis", report_ratio_basis(r));
    } else {
        const char *location;
        const struct bench_result *single = report_single(r, &location);
        o = run_json(r, location, single);
    }
    if (o) {
        json_object_set_new(o, "command", json_string(r->command_line ? r->command_line : ""));
        json_object_set_new(o, "machine", machine_json(&r->machine));
    }
    cli_json_print(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

void report_write_digests(const struct bench_result *r, FILE *out)
{
    for (uint64_t i = 0; i < r->digest_count; i++) {
        const struct bench_digest *d = &r->digests[i];
        char hex[17];
        shard_hex64(d->xxh3, hex);
        json_t *o = json_object();
        shardx_json_set_key(o, d->key, d->key_len);
        json_object_set_new(o, "width", json_integer(d->width));
        json_object_set_new(o, "height", json_integer(d->height));
        json_object_set_new(o, "xxh3", json_string(hex));
        cli_json_print(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
}
