/* report_text.c - a shardcheck report for people, on stdout (see report.h). */
#include "report.h"

#include <math.h>

#include "chart.h"
#include "cli.h"
#include "shardx.h"

#define PROG "shardcheck"
/* Problems listed by the text report; --json lists every one. */
#define PROBLEMS_SHOWN 100
/* Orphans listed by the text report. */
#define ORPHANS_SHOWN 10

/* "hashed: 3 shard files, 28.7 MB in 0.01 s (2900/s; 2.87 GB/s; 2.90 GB/s per core; 1 thread)" */
static void print_rate(FILE *out, const char *what, const struct shard_verify_rate *r,
                       const char *one, const char *many)
{
    char bytes[32];
    fprintf(out,
            "  %s: %llu %s, %s in %.2f s (%.0f/s; %.2f GB/s; %.2f GB/s per core; %d thread%s)\n",
            what, (unsigned long long)r->items, r->items == 1 ? one : many,
            cli_format_bytes(r->bytes, bytes, sizeof bytes), r->seconds,
            report_per_second((double)r->items, r->seconds),
            report_per_second((double)r->bytes / REPORT_GB, r->seconds),
            report_per_second((double)r->bytes / REPORT_GB, r->busy_seconds), r->threads,
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

static void print_fidelity(FILE *out, const struct shard_verify_report *r)
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
    fprintf(out,
            "  fidelity: %llu/%llu samples pass (%llu identical pixels, %llu identical bytes); "
            "lowest psnr %s dB (jpeg threshold %.2f dB); lowest codec loss psnr %s dB\n",
            (unsigned long long)passed, (unsigned long long)r->fidelity_count,
            (unsigned long long)exact, (unsigned long long)same, db(worst, a, sizeof a),
            r->min_psnr, db(worst_loss, b, sizeof b));
}

static void print_visitation(FILE *out, const struct report *rep)
{
    const struct shard_verify_report *r = rep->verify;
    enum shard_remainder remainder = rep->options->plan.remainder;
    for (size_t i = 0; i < r->visitation_count; i++) {
        const struct shard_visitation_result *v = &r->visitation[i];
        fprintf(out, "  visitation: world size %u, %llu epoch%s: %s (%llu..%llu samples per rank",
                v->world_size, (unsigned long long)v->epochs, v->epochs == 1 ? "" : "s",
                v->passed ? "ok" : "FAILED", (unsigned long long)v->min_per_rank,
                (unsigned long long)v->max_per_rank);
        if (remainder == SHARD_REMAINDER_PAD)
            fprintf(out, ", %llu padded per epoch", (unsigned long long)v->padded);
        if (remainder == SHARD_REMAINDER_DROP)
            fprintf(out, ", %llu dropped per epoch", (unsigned long long)v->dropped);
        fprintf(out, ")\n");
    }
}

/* "[10, 20) 3, [20, 30) 1" */
static void print_bins(FILE *out, const struct cli_histogram *h)
{
    char lo[32], hi[32];
    for (size_t b = 0; b < h->bins; b++)
        fprintf(out, "%s[%s, %s%s %llu", b ? ", " : "",
                chart_short_number(h->edges[b], lo, sizeof lo),
                chart_short_number(h->edges[b + 1], hi, sizeof hi), b + 1 == h->bins ? "]" : ")",
                (unsigned long long)h->counts[b]);
}

/* Each declared field's coverage (and a text field's lengths), the orphans. */
static void print_fields(FILE *out, const struct report *rep)
{
    const struct dataset_summary *d = rep->dataset;
    if (!d || !d->fields)
        return;
    const struct shard_manifest *m = &d->manifest;
    for (uint32_t f = 0; f < m->config.field_count; f++) {
        const struct field_summary *fs = &d->fields[f];
        char source[96];
        fprintf(out, "  field '%s' (%s, %s%s): %llu of %llu samples (%.1f%%)\n", fs->decl->name,
                fs->type, summary_field_source(fs, source, sizeof source),
                fs->decl->required ? ", required" : "", (unsigned long long)fs->samples,
                (unsigned long long)m->samples,
                m->samples ? 100.0 * (double)fs->samples / (double)m->samples : 0.0);
        if (fs->lengths.bins) {
            fprintf(out, "    text lengths in bytes, %g to %g: ", fs->lengths.min, fs->lengths.max);
            print_bins(out, &fs->lengths);
            fputc('\n', out);
        }
    }
    fprintf(out, "  orphans (sidecar files of no image): %llu\n",
            (unsigned long long)m->orphan_count);
    for (uint64_t i = 0; i < m->orphan_count && i < ORPHANS_SHOWN; i++) {
        char q[SHARDX_QUOTE_SIZE];
        fprintf(out, "    '%s'\n",
                shardx_quote(m->orphans[i].key, m->orphans[i].key_len, q, sizeof q));
    }
    if (m->orphan_count > ORPHANS_SHOWN)
        fprintf(out, "    ... and %llu more (--json lists %u, manifest.json every one)\n",
                (unsigned long long)(m->orphan_count - ORPHANS_SHOWN), SUMMARY_ORPHANS_LISTED);
}

/* Classes shown per boxes or mask field; --json lists every one. */
#define CLASSES_SHOWN 10

static int more_of(const struct shard_target_tally *t, uint32_t a, uint32_t b)
{
    return t->per_class[a] > t->per_class[b] || (t->per_class[a] == t->per_class[b] && a < b);
}

/* --deep: each boxes or mask field's boxes per image and its classes' frequencies, the
 * most frequent first. */
static void print_targets(FILE *out, const struct shard_verify_report *r)
{
    for (uint32_t i = 0; i < r->target_count; i++) {
        const struct shard_target_tally *t = &r->targets[i];
        if (t->mask)
            fprintf(out, "  mask '%s': %llu images, %llu pixels\n", t->name,
                    (unsigned long long)t->samples, (unsigned long long)t->items);
        else
            fprintf(out, "  boxes '%s': %llu in %llu images, %.2f per image (at most %llu)\n",
                    t->name, (unsigned long long)t->items, (unsigned long long)t->samples,
                    t->samples ? (double)t->items / (double)t->samples : 0.0,
                    (unsigned long long)t->max_boxes);
        /* the CLASSES_SHOWN most frequent, by selection (class lists are short) */
        uint32_t shown[CLASSES_SHOWN], n = 0;
        for (uint32_t k = 0; k < t->class_count; k++) {
            uint32_t at = n < CLASSES_SHOWN ? n++ : CLASSES_SHOWN;
            if (at == CLASSES_SHOWN && !more_of(t, k, shown[CLASSES_SHOWN - 1]))
                continue;
            if (at == CLASSES_SHOWN)
                at = CLASSES_SHOWN - 1;
            while (at > 0 && more_of(t, k, shown[at - 1])) {
                shown[at] = shown[at - 1];
                at--;
            }
            shown[at] = k;
        }
        for (uint32_t j = 0; j < n; j++) {
            uint32_t k = shown[j];
            fprintf(out, "    class %u '%s': %llu %s (%.1f%%), in %llu images\n", t->classes[k].id,
                    t->classes[k].name, (unsigned long long)t->per_class[k],
                    t->mask ? "pixels" : "boxes",
                    t->items ? 100.0 * (double)t->per_class[k] / (double)t->items : 0.0,
                    (unsigned long long)t->samples_with[k]);
        }
        if (t->class_count > n)
            fprintf(out, "    ... and %u more classes (--json lists every one)\n",
                    t->class_count - n);
    }
}

void report_write_text(const struct report *rep, FILE *out)
{
    const struct shard_verify_report *r = rep->verify;
    const struct shard_verify_options *o = rep->options;
    uint64_t total = report_problem_total(rep);
    if (total == 0)
        fprintf(out, "%s: verified '%s': %u shard%s, %llu samples\n", PROG, rep->dst, r->shards,
                r->shards == 1 ? "" : "s", (unsigned long long)r->samples);
    else
        fprintf(out, "%s: FAILED '%s': %llu problem%s\n", PROG, rep->dst, (unsigned long long)total,
                total == 1 ? "" : "s");
    for (uint64_t i = 0; i < r->problem_count && i < PROBLEMS_SHOWN; i++)
        fprintf(out, "  %s\n", r->problems[i].message);
    if (total > PROBLEMS_SHOWN)
        fprintf(out, "  ... and %llu more (--json lists every one)\n",
                (unsigned long long)(total - PROBLEMS_SHOWN));
    print_rate(out, "hashed", &r->hash, "shard file", "shard files");
    if (o->deep) {
        print_rate(out, "deep", &r->deep, "record decoded", "records decoded");
        print_targets(out, r);
    }
    if (o->source) {
        print_rate(out, "source", &r->source, "file hashed", "files hashed");
        fprintf(out, "  source: %llu candidate files; labels %s\n",
                (unsigned long long)r->source_candidates,
                r->labels_checked ? "re-derived and checked"
                : r->labels_note  ? r->labels_note
                                  : "not checked");
    }
    if (o->fidelity)
        print_fidelity(out, r);
    print_visitation(out, rep);
    if (o->source && r->fields)
        fprintf(out, "  source: %llu sidecar files, %llu of no image%s%s\n",
                (unsigned long long)r->source_sidecars, (unsigned long long)r->source_orphans,
                r->fields_note ? "; " : "", r->fields_note ? r->fields_note : "");
    print_fields(out, rep);
}
