/* report_json.c - a shardcheck report as one JSON object (see report.h). */
#include "report.h"

#include <math.h>

#include "cli_json.h"
#include "shardx_json.h"

static json_t *rate_json(const struct shard_verify_rate *r)
{
    double gb = (double)r->bytes / REPORT_GB;
    return json_pack("{s:I, s:I, s:f, s:f, s:o, s:o, s:i}", "bytes", (json_int_t)r->bytes, "items",
                     (json_int_t)r->items, "seconds", r->seconds, "busy_seconds", r->busy_seconds,
                     "gb_per_s", cli_json_number_or_null(report_per_second(gb, r->seconds)),
                     "gb_per_s_per_core",
                     cli_json_number_or_null(report_per_second(gb, r->busy_seconds)), "threads",
                     r->threads);
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
            shardx_json_set_key(o, p->key, p->key_len);
        json_object_set_new(o, "message", cli_json_text(p->message));
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
        shardx_json_set_key(o, f->key, f->key_len);
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
        json_array_append_new(a, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:b}", "world_size",
                                           (int)v->world_size, "epochs", (json_int_t)v->epochs,
                                           "min_per_rank", (json_int_t)v->min_per_rank,
                                           "max_per_rank", (json_int_t)v->max_per_rank, "padded",
                                           (json_int_t)v->padded, "dropped", (json_int_t)v->dropped,
                                           "passed", v->passed));
    }
    return json_pack("{s:I, s:s, s:I, s:b, s:o}", "seed", (json_int_t)plan->seed, "remainder",
                     shard_remainder_name(plan->remainder), "shuffle_buffer",
                     (json_int_t)plan->shuffle_buffer, "shuffle", plan->shuffle, "world_sizes", a);
}

/* Per label: the manifest's count, the shards' and SRC's (null when not
 * counted), and whether they differ. */
static json_t *labels_json(const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    json_t *a = json_array();
    for (uint32_t i = 0; i < r->label_tally_count; i++) {
        const struct shard_label_tally *t = &r->labels[i];
        if (!report_label_shown(rep, i))
            continue;
        json_array_append_new(
            a, json_pack("{s:o, s:I, s:o, s:o, s:b}", "label", cli_json_text(t->name), "manifest",
                         (json_int_t)t->manifest, "shards",
                         r->labels_counted ? json_integer((json_int_t)t->shards) : json_null(),
                         "source",
                         r->labels_checked ? json_integer((json_int_t)t->source) : json_null(),
                         "differs", report_label_differs(rep, i)));
    }
    return a;
}

static json_t *dimensions_json(const struct dataset_summary *s)
{
    if (!s->have_dimensions)
        return json_null();
    json_t *top = json_array();
    for (size_t i = 0; i < s->top_count; i++)
        json_array_append_new(top, json_pack("{s:i, s:i, s:I}", "width", (int)s->top[i].width,
                                             "height", (int)s->top[i].height, "samples",
                                             (json_int_t)s->top[i].samples));
    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:o}", "min_width", (int)s->min_width, "max_width",
                     (int)s->max_width, "min_height", (int)s->min_height, "max_height",
                     (int)s->max_height, "distinct", (json_int_t)s->distinct_dimensions,
                     "most_common", top);
}

static json_t *dataset_json(const struct dataset_summary *s)
{
    const struct shard_manifest *m = &s->manifest;
    json_t *shards = json_array(), *rejects = json_array(), *reasons = json_array();
    for (uint32_t i = 0; i < m->shard_count; i++)
        json_array_append_new(shards, json_pack("{s:s, s:I, s:I}", "file", m->shards[i].file,
                                                "samples", (json_int_t)m->shards[i].samples,
                                                "bytes", (json_int_t)m->shards[i].bytes));
    for (uint64_t i = 0; i < m->reject_count; i++) {
        const struct shard_reject *rj = &m->rejects[i];
        json_t *o = json_object();
        shardx_json_set_key(o, rj->key, rj->key_len);
        json_object_set_new(o, "reason", cli_json_text(rj->reason ? rj->reason : ""));
        json_object_set_new(o, "source_bytes",
                            rj->has_source ? json_integer((json_int_t)rj->source_bytes)
                                           : json_null());
        json_array_append_new(rejects, o);
    }
    for (size_t i = 0; i < s->reason_count; i++)
        json_array_append_new(reasons,
                              json_pack("{s:o, s:I}", "reason", cli_json_text(s->reasons[i].reason),
                                        "count", (json_int_t)s->reasons[i].count));
    json_t *warned = json_array();
    for (size_t i = 0; i < s->warned_count; i++) {
        json_t *o = json_object();
        shardx_json_set_key(o, s->warned[i].key, s->warned[i].key_len);
        json_object_set_new(o, "warning", cli_json_text(s->warned[i].warning));
        json_array_append_new(warned, o);
    }
    json_t *sizes = cli_json_histogram(&s->record_bytes);
    json_object_set_new(sizes, "shards_read", json_integer((json_int_t)s->shards_sized));
    return json_pack("{s:s?, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:i}, s:O, s:o, s:o, s:o, s:o, "
                     "s:o, s:o, s:o?}",
                     "source_kind", m->source_kind, "counts", "candidates",
                     (json_int_t)summary_candidates(s), "samples", (json_int_t)m->samples,
                     "rejected", (json_int_t)m->rejected, "ignored", (json_int_t)m->ignored,
                     "unlabeled", (json_int_t)m->unlabeled, "warned", (json_int_t)m->warned,
                     "labels", (int)m->label_count, "config", s->config, "shards", shards,
                     "rejects", rejects, "rejects_by_reason", reasons, "warned_samples", warned,
                     "record_bytes", sizes, "dimensions", dimensions_json(s), "note",
                     s->note[0] ? cli_json_text(s->note) : NULL);
}

/* --deep: each boxes or mask field's tally, every class with its count. */
static json_t *targets_json(const struct shard_verify_report *r)
{
    json_t *list = json_array();
    for (uint32_t i = 0; i < r->target_count; i++) {
        const struct shard_target_tally *t = &r->targets[i];
        json_t *classes = json_array();
        for (uint32_t k = 0; k < t->class_count; k++)
            json_array_append_new(classes, json_pack("{s:I, s:s, s:I, s:I}", "id",
                                                     (json_int_t)t->classes[k].id, "name",
                                                     t->classes[k].name, "count",
                                                     (json_int_t)t->per_class[k], "samples",
                                                     (json_int_t)t->samples_with[k]));
        json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:o}", "field", t->name, "type",
                              t->mask ? "mask" : "boxes", "samples", (json_int_t)t->samples,
                              t->mask ? "pixels" : "boxes", (json_int_t)t->items, "classes",
                              classes);
        if (o && !t->mask)
            json_object_set_new(o, "max_boxes", json_integer((json_int_t)t->max_boxes));
        json_array_append_new(list, o);
    }
    return list;
}

/* The declared fields (format version 2): each one's coverage, and for
 * text its values' lengths; and the orphans, the first
 * SUMMARY_ORPHANS_LISTED of them with the total. */
static void add_fields_json(json_t *contents, const struct dataset_summary *s)
{
    const struct shard_manifest *m = &s->manifest;
    if (!s->fields)
        return;
    json_t *fields = json_array();
    for (uint32_t f = 0; f < m->config.field_count; f++) {
        const struct field_summary *fs = &s->fields[f];
        /* a name is ASCII (the manifest checks it); a suffix or column may be any bytes */
        json_t *source = json_object();
        json_object_set_new(source,
                            fs->decl->sidecar  ? "sidecar"
                            : fs->decl->coco   ? "coco"
                            : fs->decl->folder ? "folder"
                                               : "column",
                            cli_json_text(fs->decl->sidecar  ? fs->decl->sidecar
                                          : fs->decl->coco   ? fs->decl->coco
                                          : fs->decl->folder ? fs->decl->folder
                                                             : fs->decl->column));
        json_t *o = json_pack("{s:s, s:s, s:o, s:b, s:I, s:I, s:o}", "name", fs->decl->name, "type",
                              fs->type, "source", source, "required", fs->decl->required, "samples",
                              (json_int_t)fs->samples, "of", (json_int_t)m->samples, "coverage",
                              cli_json_number_or_null(
                                  m->samples ? (double)fs->samples / (double)m->samples : NAN));
        if (o && fs->decl->type == SHARD_FIELD_TEXT)
            json_object_set_new(o, "lengths", cli_json_histogram(&fs->lengths));
        json_array_append_new(fields, o);
    }
    json_t *listed = json_array();
    for (uint64_t i = 0; i < m->orphan_count && i < SUMMARY_ORPHANS_LISTED; i++) {
        json_t *o = json_object();
        shardx_json_set_key(o, m->orphans[i].key, m->orphans[i].key_len);
        json_array_append_new(listed, o);
    }
    json_object_set_new(contents, "fields", fields);
    json_object_set_new(contents, "orphans",
                        json_pack("{s:I, s:o, s:I}", "count", (json_int_t)m->orphan_count, "listed",
                                  listed, "not_listed",
                                  (json_int_t)(m->orphan_count > SUMMARY_ORPHANS_LISTED
                                                   ? m->orphan_count - SUMMARY_ORPHANS_LISTED
                                                   : 0)));
}

/* The samples of the page's contact sheet (not their pictures). */
static json_t *contact_sheet_json(const struct contact_sheet *cs)
{
    json_t *samples = json_array();
    for (size_t i = 0; i < cs->count; i++) {
        const struct contact_thumb *t = &cs->thumbs[i];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)t->index));
        if (t->key)
            shardx_json_set_key(o, t->key, t->key_len);
        if (t->error) {
            json_object_set_new(o, "error", cli_json_text(t->error));
        } else {
            json_object_set_new(o, "width", json_integer(t->width));
            json_object_set_new(o, "height", json_integer(t->height));
            json_object_set_new(o, "thumb_width", json_integer(t->thumb_width));
            json_object_set_new(o, "thumb_height", json_integer(t->thumb_height));
            json_object_set_new(o, "caption",
                                t->caption ? json_stringn(t->caption, t->caption_len)
                                           : json_null());
            json_object_set_new(o, "caption_cut", json_boolean(t->caption_cut));
        }
        json_array_append_new(samples, o);
    }
    return json_pack("{s:o, s:o}", "caption_field",
                     cs->caption_field ? json_string(cs->caption_field) : json_null(), "samples",
                     samples);
}

void report_write_json(const struct report *rep, FILE *out)
{
    const struct shard_verify_report *r = rep->verify;
    const struct shard_verify_options *opts = rep->options;
    json_t *o = json_object();
    uint64_t total = report_problem_total(rep);
    cli_json_set_path(o, "dataset", rep->dst); /* or dataset_hex */
    json_object_set_new(o, "verified", json_boolean(report_verified(rep)));
    if (rep->error) {
        /* the checks could not run: what it was, and why */
        json_object_set_new(o, "error", cli_json_text(rep->error));
        json_object_set_new(o, "problem_count", json_integer(0));
        json_object_set_new(o, "problems", json_array());
        if (rep->source) {
            json_t *source = json_object();
            cli_json_set_path(source, "path", rep->source);
            json_object_set_new(o, "source", source);
        }
        cli_json_print(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        return;
    }
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
    if (opts->source) {
        json_t *source = json_object();
        cli_json_set_path(source, "path", rep->source); /* or path_hex */
        json_object_set_new(source, "candidates", json_integer((json_int_t)r->source_candidates));
        json_object_set_new(source, "ignored", json_integer((json_int_t)r->source_ignored));
        json_object_set_new(source, "labels_checked", json_boolean(r->labels_checked));
        if (r->labels_note)
            json_object_set_new(source, "labels_note", cli_json_text(r->labels_note));
        if (r->fields) { /* format version 2: SRC's sidecar files */
            json_object_set_new(source, "sidecars", json_integer((json_int_t)r->source_sidecars));
            json_object_set_new(source, "orphans", json_integer((json_int_t)r->source_orphans));
            json_object_set_new(source, "fields_note",
                                r->fields_note ? cli_json_text(r->fields_note) : json_null());
        }
        json_object_set_new(o, "source", source);
    }
    if (r->target_count)
        json_object_set_new(o, "targets", targets_json(r));
    if (opts->fidelity)
        json_object_set_new(o, "fidelity", fidelity_json(r));
    if (opts->world_size_count)
        json_object_set_new(o, "visitation", visitation_json(rep));
    if (r->label_tally_count)
        json_object_set_new(o, "labels", labels_json(rep));
    if (rep->dataset) {
        json_t *contents = dataset_json(rep->dataset);
        add_fields_json(contents, rep->dataset);
        json_object_set_new(o, "contents", contents);
    }
    if (rep->sheet)
        json_object_set_new(o, "contact_sheet", contact_sheet_json(rep->sheet));
    cli_json_print(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}
