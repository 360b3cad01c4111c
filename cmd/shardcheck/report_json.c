/* report_json.c - a shardcheck report as one JSON object (see report.h). */
#include "report.h"

#include "cli_json.h"
#include "shardkit/json.h"

static json_t *rate_json(const struct shard_verify_rate *r)
{
    double gb = (double)r->bytes / REPORT_GB;
    return json_pack("{s:I, s:I, s:f, s:f, s:o, s:o, s:i}", "bytes", (json_int_t)r->bytes,
                     "items", (json_int_t)r->items, "seconds", r->seconds, "busy_seconds",
                     r->busy_seconds, "gb_per_s",
                     cli_json_number_or_null(report_per_second(gb, r->seconds)),
                     "gb_per_s_per_core",
                     cli_json_number_or_null(report_per_second(gb, r->busy_seconds)),
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
        json_object_set_new(o, "psnr", cli_json_number_or_null(f->psnr));
        json_object_set_new(o, "loss_psnr", cli_json_number_or_null(f->loss_psnr));
        json_object_set_new(o, "passed", json_boolean(f->passed));
        json_array_append_new(samples, o);
    }
    return json_pack("{s:f, s:o}", "min_psnr", r->min_psnr, "samples", samples);
}

static json_t *visitation_json(const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    const struct shard_plan_options *plan = &rep->options->plan;
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
    return json_pack("{s:I, s:s, s:I, s:b, s:o}", "seed", (json_int_t)plan->seed, "remainder",
                     shard_remainder_name(plan->remainder), "shuffle_buffer",
                     (json_int_t)plan->shuffle_buffer, "shuffle", plan->shuffle, "world_sizes",
                     a);
}

void report_write_json(const struct report *rep, FILE *out)
{
    const struct shard_verify_report *r = rep->verify;
    const struct shard_verify_options *opts = rep->options;
    json_t *o = json_object();
    uint64_t total = report_problem_total(rep);
    json_object_set_new(o, "dataset", json_string(rep->dst));
    json_object_set_new(o, "verified", json_boolean(total == 0));
    json_object_set_new(o, "shards", json_integer(r->shards));
    json_object_set_new(o, "samples", json_integer((json_int_t)r->samples));
    json_object_set_new(o, "threads", json_integer(r->threads));
    json_object_set_new(o, "problem_count", json_integer((json_int_t)total));
    json_object_set_new(o, "problems", problems_json(r));
    json_t *rates = json_object();
    json_object_set_new(rates, "hash", rate_json(&r->hash));
    if (opts->deep)
        json_object_set_new(rates, "deep", rate_json(&r->deep));
    if (opts->source)
        json_object_set_new(rates, "source", rate_json(&r->source));
    json_object_set_new(o, "rates", rates);
    if (opts->source)
        json_object_set_new(o, "source",
                            json_pack("{s:s, s:I, s:b, s:s?}", "path", opts->source,
                                      "candidates", (json_int_t)r->source_candidates,
                                      "labels_checked", r->labels_checked, "labels_note",
                                      r->labels_note));
    if (opts->fidelity)
        json_object_set_new(o, "fidelity", fidelity_json(r));
    if (opts->world_size_count)
        json_object_set_new(o, "visitation", visitation_json(rep));
    cli_json_print(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}
