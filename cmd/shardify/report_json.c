/* report_json.c - a shardify run as one JSON object (see report.h). */
#include "report.h"

#include "cli_json.h"

/* Append the object a shard_*_line call made in `line` (made: its result)
 * to array, and empty `line` for the next. */
static void append_line(json_t *array, int made, struct shard_buf *line)
{
    if (made == 0)
        json_array_append_new(array, json_loadb((const char *)line->data, line->len, 0, NULL));
    line->len = 0;
}

/* Rejects reuse the manifest's reject entry format. */
static json_t *rejects_json(const struct shardify_summary *s)
{
    json_t *a = json_array();
    struct shard_buf line = {0};
    for (uint64_t i = 0; i < s->reject_count; i++)
        append_line(a, shard_reject_line(&s->rejects[i], &line, NULL), &line);
    shard_buf_release(&line);
    return a;
}

/* Samples stored despite a decoder warning: their index lines. */
static json_t *warnings_json(const struct shardify_summary *s)
{
    json_t *a = json_array();
    struct shard_buf line = {0};
    for (uint64_t i = 0; i < s->warning_count; i++)
        append_line(a, shard_sample_line(&s->warnings[i], &line, NULL), &line);
    shard_buf_release(&line);
    return a;
}

static json_t *timing_json(const struct shardify_timing *t)
{
    return json_pack("{sfsfsfsfsfsfsfsf}", "scan", t->scan, "convert", t->convert, "publish",
                     t->publish, "write", t->write, "read", t->read, "hash", t->hash, "decode",
                     t->decode, "copy", t->copy);
}

/* The samples of each stored pixel form: [{"pixels", "depth", "samples"}]. */
static json_t *pixel_forms_json(const struct shardify_summary *s)
{
    json_t *a = json_array();
    for (uint32_t c = 1; c <= SHARD_PIXELS_RGBA; c++)
        for (uint32_t d = 0; d < 2; d++)
            if (s->pixel_forms[c][d])
                json_array_append_new(a, json_pack("{sssisI}", "pixels", shard_pixels_name(c),
                                                   "depth", d ? 16 : 8, "samples",
                                                   (json_int_t)s->pixel_forms[c][d]));
    return a;
}

/* The manifest's "lineage", as the manifest writes it. */
static json_t *lineage_json(const struct shard_lineage *l, int fields)
{
    char hex[17];
    shard_hex64(l->previous_manifest_xxh3, hex);
    if (l->full_rebuild)
        return json_pack("{ssss}", "previous_manifest_xxh3", hex, "full_rebuild", l->full_rebuild);
    json_t *o = json_pack("{sssIsIsIsIsIsIsIsI}", "previous_manifest_xxh3", hex, "added",
                          (json_int_t)l->added, "changed", (json_int_t)l->changed, "unchanged",
                          (json_int_t)l->unchanged, "removed", (json_int_t)l->removed, "reused",
                          (json_int_t)l->reused, "relabeled", (json_int_t)l->relabeled,
                          "rejected_again", (json_int_t)l->rejected_again, "reconverted",
                          (json_int_t)l->reconverted);
    if (o && fields) /* a dataset with fields: as its manifest's lineage */
        json_object_set_new(o, "refielded", json_integer((json_int_t)l->refielded));
    return o;
}

void report_write_json(const struct report *r, FILE *out)
{
    const struct shardify_summary *s = r->summary;
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(r->status ? "failed" : "ok"));
    if (r->status) {
        json_object_set_new(o, "error", cli_json_text(r->err->msg));
        json_object_set_new(o, "error_code", json_integer(r->status));
    }
    json_object_set_new(o, "candidates", json_integer((json_int_t)s->candidates));
    json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
    json_object_set_new(o, "rejected", json_integer((json_int_t)s->rejected));
    json_object_set_new(o, "warned", json_integer((json_int_t)s->warned));
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
    json_object_set_new(o, "timing", timing_json(&s->timing));
    json_object_set_new(o, "pixels", json_string(shard_pixels_name(s->channels)));
    json_object_set_new(o, "depth", json_integer(s->depth));
    json_object_set_new(o, "mixed", json_boolean(s->mixed));
    json_object_set_new(o, "pixel_forms", pixel_forms_json(s));
    if (s->has_lineage)
        json_object_set_new(o, "lineage", lineage_json(&s->lineage, s->field_count > 0));
    if (s->field_count) { /* a dataset with fields */
        json_t *fields = json_object();
        for (uint32_t i = 0; i < s->field_count; i++)
            json_object_set_new(fields, s->field_names[i],
                                json_integer((json_int_t)s->field_samples[i]));
        json_object_set_new(o, "fields", fields);
        json_object_set_new(o, "sidecars", json_integer((json_int_t)s->sidecars));
        json_object_set_new(o, "orphans", json_integer((json_int_t)s->orphans));
        json_object_set_new(o, "annotation_rows", json_integer((json_int_t)s->annotation_rows));
        json_object_set_new(o, "annotation_rows_unmatched",
                            json_integer((json_int_t)s->annotation_rows_unmatched));
        json_object_set_new(o, "coco_images", json_integer((json_int_t)s->coco_images));
        json_object_set_new(o, "coco_images_unmatched",
                            json_integer((json_int_t)s->coco_images_unmatched));
        json_object_set_new(o, "coco_annotations", json_integer((json_int_t)s->coco_annotations));
        json_object_set_new(o, "coco_annotations_unmatched",
                            json_integer((json_int_t)s->coco_annotations_unmatched));
        json_object_set_new(o, "boxes", json_integer((json_int_t)s->boxes));
        json_object_set_new(o, "boxes_dropped", json_integer((json_int_t)s->boxes_dropped));
    }
    json_object_set_new(o, "rejects", rejects_json(s));
    json_object_set_new(o, "warnings", warnings_json(s));
    cli_json_print(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
}
