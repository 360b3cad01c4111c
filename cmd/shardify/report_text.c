/* report_text.c - a shardify run for people, on stderr (see report.h). */
#include "report.h"

#include <string.h>

#include "cli.h"
#include "shardx.h"

#define PROG "shardify"
/* Rejects listed by name; the manifest lists every one. */
#define REJECTS_SHOWN 20

void report_show_progress(const struct shardify_progress *p, void *user)
{
    char out[32], extra[96];
    snprintf(extra, sizeof extra, "%llu rejected, %s written", (unsigned long long)p->rejected,
             cli_format_bytes(p->bytes_out, out, sizeof out));
    cli_progress_show(user, p->phase, p->done, p->total, p->elapsed, extra);
}

void report_write_warnings(const struct report *r, FILE *out)
{
    if (r->summary->run_record_error[0])
        fprintf(out, "%s: warning: the run record was not written: %s\n", PROG,
                r->summary->run_record_error);
    if (r->summary->uploads_warning[0])
        fprintf(out, "%s: warning: %s\n", PROG, r->summary->uploads_warning);
}

/* "  rejected 'a/b.jpg': truncated JPEG" */
static void write_listed(FILE *out, const char *what, const char *key, size_t key_len,
                         const char *text)
{
    char shown[SHARDX_QUOTE_SIZE];
    fprintf(out, "  %s '%s': %s\n", what, shardx_quote(key, key_len, shown, sizeof shown), text);
}

/* An incremental run: what it reused and converted, and where the time went. */
static void write_lineage(const struct report *r, FILE *out)
{
    const struct shardify_summary *s = r->summary;
    const struct shard_lineage *l = &s->lineage;
    const struct shardify_timing *t = &s->timing;
    if (l->full_rebuild)
        fprintf(out, "%s: full rebuild, nothing reused from '%s': %s\n", PROG,
                r->options->incremental, l->full_rebuild);
    else
        fprintf(out,
                "%s: incremental from '%s': %llu added, %llu changed, %llu removed, "
                "%llu unchanged; %llu records reused, %llu relabeled, %llu rejects repeated, "
                "%llu reconverted (damaged in '%s')\n",
                PROG, r->options->incremental, (unsigned long long)l->added,
                (unsigned long long)l->changed, (unsigned long long)l->removed,
                (unsigned long long)l->unchanged, (unsigned long long)l->reused,
                (unsigned long long)l->relabeled, (unsigned long long)l->rejected_again,
                (unsigned long long)l->reconverted, r->options->incremental);
    if (!l->full_rebuild && s->field_count)
        fprintf(out,
                "%s: %llu unchanged image%s with changed fields: stored pixels kept, "
                "fields of now\n",
                PROG, (unsigned long long)l->refielded, l->refielded == 1 ? "" : "s");
    fprintf(out,
            "%s: time: scan %.2f s, convert %.2f s (writing shards %.2f s), publish "
            "%.2f s; per-file work (thread-seconds): read %.2f, hash %.2f, decode %.2f, copy "
            "%.2f\n",
            PROG, t->scan, t->convert, t->write, t->publish, t->read, t->hash, t->decode, t->copy);
}

/* A mixed dataset: "shardify: pixels of several forms (1 gray 8-bit, 1 rgb
 * 8-bit): it reads as rgb 8-bit, each narrower image widened when read". */
static void write_pixel_forms(const struct shardify_summary *s, FILE *out)
{
    fprintf(out, "%s: pixels of several forms (", PROG);
    const char *sep = "";
    for (uint32_t c = 1; c <= SHARD_PIXELS_RGBA; c++)
        for (uint32_t d = 0; d < 2; d++)
            if (s->pixel_forms[c][d]) {
                fprintf(out, "%s%llu %s %d-bit", sep, (unsigned long long)s->pixel_forms[c][d],
                        shard_pixels_name(c), d ? 16 : 8);
                sep = ", ";
            }
    fprintf(out, "): it reads as %s %u-bit, each narrower image widened when read\n",
            shard_pixels_name(s->channels), s->depth);
}

void report_write_text(const struct report *r, FILE *out)
{
    const struct shardify_summary *s = r->summary;
    if (r->status) {
        fprintf(out, "%s: %s\n", PROG, r->err->msg);
        return;
    }
    char in[32], written[32];
    double rate = s->seconds > 0 ? (s->samples + s->rejected) / s->seconds : 0;
    fprintf(out,
            "%s: %llu samples in %u shard%s (%s from %s), %llu rejected, %llu ignored, "
            "%.1f s (%.0f images/s, %d thread%s)\n",
            PROG, (unsigned long long)s->samples, s->shards, s->shards == 1 ? "" : "s",
            cli_format_bytes(s->bytes_out, written, sizeof written),
            cli_format_bytes(s->bytes_in, in, sizeof in), (unsigned long long)s->rejected,
            (unsigned long long)s->ignored, s->seconds, rate, s->threads,
            s->threads == 1 ? "" : "s");
    const char *labels = r->options->labels;
    if (s->unlabeled && !(labels && !strcmp(labels, "none")))
        fprintf(out, "%s: %llu sample%s without a label\n", PROG, (unsigned long long)s->unlabeled,
                s->unlabeled == 1 ? "" : "s");
    if (s->label_rows_unmatched)
        fprintf(out, "%s: %llu of the %llu rows of the label file name no file of '%s'\n", PROG,
                (unsigned long long)s->label_rows_unmatched, (unsigned long long)s->label_rows,
                r->src);
    if (s->field_count) {
        fprintf(out, "%s: fields:", PROG);
        for (uint32_t i = 0; i < s->field_count; i++)
            fprintf(out, "%s %s %llu", i ? "," : "", s->field_names[i],
                    (unsigned long long)s->field_samples[i]);
        fprintf(out, " of %llu samples (%llu sidecar file%s)\n", (unsigned long long)s->samples,
                (unsigned long long)s->sidecars, s->sidecars == 1 ? "" : "s");
    }
    if (s->orphans)
        fprintf(out,
                "%s: %llu sidecar file%s of no image (listed in %s/manifest.json as "
                "\"orphans\")\n",
                PROG, (unsigned long long)s->orphans, s->orphans == 1 ? "" : "s", r->dst);
    if (s->annotation_rows_unmatched)
        fprintf(out, "%s: %llu of the %llu rows of the annotation table name no file of '%s'\n",
                PROG, (unsigned long long)s->annotation_rows_unmatched,
                (unsigned long long)s->annotation_rows, r->src);
    if (s->coco_images)
        fprintf(out,
                "%s: COCO file: %llu of %llu images and %llu of %llu annotations name "
                "no file of '%s'\n",
                PROG, (unsigned long long)s->coco_images_unmatched,
                (unsigned long long)s->coco_images,
                (unsigned long long)s->coco_annotations_unmatched,
                (unsigned long long)s->coco_annotations, r->src);
    if (s->boxes || s->boxes_dropped)
        fprintf(out, "%s: %llu boxes stored, %llu cut away by the crop (not stored)\n", PROG,
                (unsigned long long)s->boxes, (unsigned long long)s->boxes_dropped);
    if (s->mixed)
        write_pixel_forms(s, out);
    if (r->options->parts) /* a conversion in parts: this is one of them */
        fprintf(out,
                "%s: part %u of %u is in '%s/%s/%u-of-%u'; once all %u are: shardify "
                "merge '%s'\n",
                PROG, r->options->part, r->options->parts, r->dst, SHARDIFY_PARTS_DIR,
                r->options->part, r->options->parts, r->options->parts, r->dst);
    if (s->has_lineage)
        write_lineage(r, out);
    if (s->reused_shards)
        fprintf(out, "%s: resumed: kept %u finished shard%s\n", PROG, s->reused_shards,
                s->reused_shards == 1 ? "" : "s");
    for (uint64_t i = 0; i < s->reject_count && i < REJECTS_SHOWN; i++)
        write_listed(out, "rejected", s->rejects[i].key, s->rejects[i].key_len,
                     s->rejects[i].reason);
    if (s->reject_count > REJECTS_SHOWN)
        fprintf(out, "  ... and %llu more (all are listed in %s/manifest.json)\n",
                (unsigned long long)(s->reject_count - REJECTS_SHOWN), r->dst);
    if (s->warned)
        fprintf(out,
                "%s: %llu sample%s stored despite a decoder warning (no pixel data "
                "lost):\n",
                PROG, (unsigned long long)s->warned, s->warned == 1 ? "" : "s");
    for (uint64_t i = 0; i < s->warning_count && i < REJECTS_SHOWN; i++)
        write_listed(out, "warning", s->warnings[i].key, s->warnings[i].key_len,
                     s->warnings[i].warning);
    if (s->warning_count > REJECTS_SHOWN)
        fprintf(out, "  ... and %llu more (their lines in %s/index.jsonl carry \"warning\")\n",
                (unsigned long long)(s->warning_count - REJECTS_SHOWN), r->dst);
    if (s->candidates == 0)
        fprintf(out, "%s: warning: no candidate images in '%s'\n", PROG, r->src);
    report_write_warnings(r, out);
}
