/* combine.c - what every part of a check found, settled into one report
 * (see verify_internal.h).  A whole check is combined here too, as its
 * only part, so a check in parts reports what a whole check reports.
 *
 * Only here is known: the manifest itself (shards listed once, orphans) and
 * the files in DST; how many lines come before each part's in each index
 * file (so each message names its line by number); whether the first line
 * a part read comes after the previous part's last; which records no line
 * named (a part's uncovered records, less those some stray line of any part
 * names); every index file's lines, counts and field counts against the
 * manifest; whether the parts' ranges of each key table tile it sorted, and
 * whether it holds what the lines say; the labels the footers hold against
 * counts.by_label; and, with --deep, the fields the records hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/dataset_internal.h"
#include "verify/verify_internal.h"

/* ---- the manifest and DST ------------------------------------------------------- */

static int compare_names(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The names the manifest gives files in DST, sorted (borrowed from it). */
static const char **listed_names(const struct shard_manifest *m, size_t *count)
{
    size_t n = m->shard_count + 2 * (size_t)m->index_count + 1;
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return NULL;
    n = 0;
    for (uint32_t s = 0; s < m->shard_count; s++)
        names[n++] = m->shards[s].file;
    for (uint32_t k = 0; k < m->index_count; k++) {
        names[n++] = m->indexes[k].file;
        if (m->indexes[k].keys_file)
            names[n++] = m->indexes[k].keys_file;
    }
    if (m->archives_file)
        names[n++] = m->archives_file;
    qsort(names, n, sizeof *names, compare_names);
    *count = n;
    return names;
}

/* A file listed twice would be read twice: its samples would count double. */
static void check_listed_once(struct verify_run *v)
{
    const struct shard_manifest *m = v->m;
    const char **names = malloc((m->shard_count ? m->shard_count : 1) * sizeof *names);
    if (!names)
        return;
    for (uint32_t s = 0; s < m->shard_count; s++)
        names[s] = m->shards[s].file;
    qsort(names, m->shard_count, sizeof *names, compare_names);
    for (uint32_t i = 1; i < m->shard_count; i++)
        if (!strcmp(names[i - 1], names[i]) && (i < 2 || strcmp(names[i - 2], names[i])))
            sk_verify_problem(v, SHARD_CHECK_MANIFEST, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "manifest: '%s' is listed in \"shards\" more than once", names[i]);
    free(names);
}

struct stray_walk {
    struct verify_run *v;
    const char **names;
    size_t count;
};

static int has_suffix(const char *name, const char *suffix)
{
    size_t len = strlen(name), n = strlen(suffix);
    return len > n && !strcmp(name + len - n, suffix);
}

/* Which check a file of this name in DST would be: shards, index files
 * ("index.jsonl", "index-2-of-4.jsonl"), key tables ("index.keys",
 * "index-2-of-4.keys") and archives.jsonl; -1 for a name of no such file. */
static int format_file_check(const char *name)
{
    if (!strncmp(name, "shard-", 6) && has_suffix(name, SHARD_FILE_EXT))
        return SHARD_CHECK_SHARD;
    if (!strcmp(name, SHARD_ARCHIVES_FILE))
        return SHARD_CHECK_MANIFEST;
    unsigned i, n;
    int end = 0;
    const char *rest = !strncmp(name, "index", 5) ? name + 5 : NULL;
    if (rest && rest[0] == '-' && sscanf(rest, "-%u-of-%u%n", &i, &n, &end) == 2)
        rest += end;
    if (rest && !strcmp(rest, ".jsonl"))
        return SHARD_CHECK_INDEX;
    if (rest && !strcmp(rest, ".keys"))
        return SHARD_CHECK_KEYS;
    return -1;
}

static int check_stray(void *user, const char *name)
{
    struct stray_walk *w = user;
    int check = format_file_check(name);
    if (check >= 0 && !bsearch(&name, w->names, w->count, sizeof *w->names, compare_names))
        sk_verify_problem(w->v, (enum shard_check)check, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "%s: in the dataset directory but not listed in the manifest", name);
    return 0;
}

/* Files named like the dataset's own (shards, index files, key tables,
 * archives.jsonl) that the manifest does not name: left over, or the
 * manifest lost track of them.  A dataset that cannot be listed (over
 * HTTP) or whose listing fails is let be: its files were checked already. */
static void check_stray_files(struct verify_run *v)
{
    struct stray_walk w = {v, NULL, 0};
    if (!(w.names = listed_names(v->m, &w.count)))
        return;
    struct shard_err e;
    (void)sk_dataset_list(v->ds, check_stray, &w, &e);
    free(w.names);
}

/* One tally per label of the manifest and one for the unlabeled samples,
 * with the manifest's counts. */
static int start_label_tallies(struct verify_run *v, struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    struct shard_verify_report *r = v->report;
    r->labels = calloc((size_t)m->label_count + 1, sizeof *r->labels);
    if (!r->labels)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory for %u labels", m->label_count);
    r->label_tally_count = m->label_count + 1;
    for (uint32_t i = 0; i < m->label_count; i++) {
        if (!(r->labels[i].name = strdup(m->labels[i])))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory for %u labels", m->label_count);
        r->labels[i].manifest = m->label_samples[i];
    }
    r->labels[m->label_count].manifest = m->unlabeled;
    return SHARD_OK;
}

/* ---- index lines across parts ---------------------------------------------------- */

/* Each part's first line against the previous part's last. */
static void check_order(struct verify_run *v, const struct sk_part *parts, uint32_t n)
{
    int have = 0;
    uint64_t last = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct sk_part *p = &parts[i];
        if (p->first.have && have && p->first.g <= last)
            sk_verify_out_of_order(v, &p->first.at, p->first.g, p->first.key, p->first.key_len);
        if (p->have_last) {
            have = 1;
            last = p->last_g;
        }
    }
}

static int compare_uncovered(const void *pa, const void *pb)
{
    const struct sk_uncovered *a = *(const struct sk_uncovered *const *)pa,
                              *b = *(const struct sk_uncovered *const *)pb;
    return (a->g > b->g) - (a->g < b->g);
}

static int compare_strays(const void *pa, const void *pb)
{
    const struct sk_stray *a = *(const struct sk_stray *const *)pa,
                          *b = *(const struct sk_stray *const *)pb;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    if (a->at.part != b->at.part)
        return a->at.part < b->at.part ? -1 : 1;
    if (a->at.file != b->at.file)
        return a->at.file < b->at.file ? -1 : 1;
    return (a->at.line > b->at.line) - (a->at.line < b->at.line);
}

/* Records no line named in their window: a stray line naming one covers it
 * (and is held to its key and label); the rest are not in the index. */
static int settle_uncovered(struct verify_run *v, const struct sk_part *parts, uint32_t n)
{
    size_t nu = 0, ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        nu += parts[i].uncovered_count;
        ns += parts[i].stray_count;
        v->problems_not_kept += parts[i].lost;
    }
    const struct sk_uncovered **u = malloc((nu ? nu : 1) * sizeof *u);
    const struct sk_stray **st = malloc((ns ? ns : 1) * sizeof *st);
    if (!u || !st) {
        free(u);
        free(st);
        return SHARD_ENOMEM;
    }
    nu = ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (size_t j = 0; j < parts[i].uncovered_count; j++)
            u[nu++] = &parts[i].uncovered[j];
        for (size_t j = 0; j < parts[i].stray_count; j++)
            st[ns++] = &parts[i].strays[j];
    }
    qsort(u, nu, sizeof *u, compare_uncovered);
    qsort(st, ns, sizeof *st, compare_strays);
    size_t j = 0;
    for (size_t i = 0; i < nu; i++) {
        while (j < ns && st[j]->g < u[i]->g)
            j++;
        if (j < ns && st[j]->g == u[i]->g) {
            if (u[i]->have_key)
                sk_verify_line_against_record(v, u[i]->g, u[i]->key, u[i]->key_len, u[i]->label,
                                              &st[j]->at, st[j]->key, st[j]->key_len, st[j]->label);
        } else {
            sk_verify_not_in_index(v, u[i]->g, u[i]->have_key ? u[i]->key : NULL, u[i]->key_len);
        }
    }
    free(u);
    free(st);
    return SHARD_OK;
}

/* Whether every part read its segment of file k to its end. */
static int file_read(const struct sk_part *parts, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < n; i++)
        if (!parts[i].segments[k].complete)
            return 0;
    return 1;
}

/* Lines per index file, the warned samples and the fields' counts. */
static void check_index_counts(struct verify_run *v, const struct sk_part *parts, uint32_t n,
                               const uint64_t *field_lines, uint64_t sidecars, int *all_read)
{
    const struct shard_manifest *m = v->m;
    uint64_t warned = 0, bad = 0;
    for (uint32_t i = 0; i < n; i++)
        warned += parts[i].warned;
    *all_read = 1;
    for (uint32_t k = 0; k < v->index_files; k++) {
        uint64_t lines = 0;
        for (uint32_t i = 0; i < n; i++) {
            lines += parts[i].segments[k].lines;
            bad += parts[i].segments[k].bad_lines;
        }
        if (!file_read(parts, n, k)) {
            *all_read = 0;
            continue;
        }
        if (lines != m->indexes[k].entries)
            sk_verify_problem(v, SHARD_CHECK_INDEX, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "%s: %llu lines, manifest says %llu entries", m->indexes[k].file,
                              (unsigned long long)lines, (unsigned long long)m->indexes[k].entries);
    }
    if (!*all_read)
        return;
    if (warned != m->warned)
        sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                          "counts.warned: %s %s %llu samples stored despite a decoder warning, "
                          "manifest says %llu",
                          m->index_count > 1 ? "the index files" : m->indexes[0].file,
                          m->index_count > 1 ? "have" : "has", (unsigned long long)warned,
                          (unsigned long long)m->warned);
    if (!bad) /* else the counts would only repeat the lines reported */
        sk_verify_index_field_counts(v, field_lines, sidecars);
}

/* ---- key tables ------------------------------------------------------------------ */

static void check_key_tables(struct verify_run *v, const struct sk_part *parts, uint32_t n)
{
    const struct shard_manifest *m = v->m;
    for (uint32_t k = 0; v->key_tables && k < v->index_files; k++) {
        int usable = 1, sorted = 1;
        uint64_t table_sum = 0, line_sum = 0, lines = 0, next = 0;
        for (uint32_t i = 0; i < n; i++) {
            const struct sk_table_range *t = &parts[i].tables[k];
            const struct sk_segment *seg = &parts[i].segments[k];
            usable &= t->usable;
            /* the parts' ranges must follow each other from 0 to the table's end */
            sorted &= t->sorted && t->start == next && (i + 1 < n || t->end == t->count);
            next = t->end;
            table_sum = sk_keys_add(table_sum, t->sum);
            line_sum = sk_keys_add(line_sum, sk_keys_shift(seg->key_sum, lines));
            lines += seg->lines;
        }
        if (!usable) /* the part hashing it said why */
            continue;
        const char *name = m->indexes[k].keys_file;
        if (!sorted)
            sk_verify_problem(v, SHARD_CHECK_KEYS, SHARD_ECORRUPT, -1, -1, NULL, 0,
                              "%s: its entries are not sorted by key hash and line, so keys it "
                              "holds twice may go unreported",
                              name);
        else if (file_read(parts, n, k) && table_sum != line_sum)
            sk_verify_problem(v, SHARD_CHECK_KEYS, SHARD_ECORRUPT, -1, -1, NULL, 0,
                              "%s does not hold the xxh3 and line of each key of %s, so keys it "
                              "holds twice may go unreported",
                              name, m->indexes[k].file);
    }
}

/* ---- labels ---------------------------------------------------------------------- */

/* counts.by_label and counts.unlabeled against the labels the footers hold
 * (the records themselves, not the index: a damaged index is reported
 * apart and must not hide what the shards contain). */
static void check_label_counts(struct verify_run *v, const struct sk_part *parts, uint32_t n)
{
    const struct shard_manifest *m = v->m;
    struct shard_verify_report *report = v->report;
    for (uint32_t i = 0; i < n; i++)
        if (!parts[i].all_footers)
            return; /* unreadable shards were reported; counts would only repeat that */
    for (uint32_t l = 0; l <= m->label_count; l++) {
        uint64_t held = 0;
        for (uint32_t i = 0; i < n; i++)
            held += parts[i].label_shards[l];
        report->labels[l].shards = held;
        if (l < m->label_count && held != m->label_samples[l])
            sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "counts.by_label['%s']: the shards hold %llu samples, manifest says "
                              "%llu",
                              m->labels[l], (unsigned long long)held,
                              (unsigned long long)m->label_samples[l]);
        else if (l == m->label_count && held != m->unlabeled)
            sk_verify_problem(v, SHARD_CHECK_COUNTS, SHARD_EMISMATCH, -1, -1, NULL, 0,
                              "counts.unlabeled: the shards hold %llu unlabeled samples, manifest "
                              "says %llu",
                              (unsigned long long)held, (unsigned long long)m->unlabeled);
    }
    report->labels_counted = 1;
}

/* ---- the report ------------------------------------------------------------------ */

static void add_rate(struct shard_verify_rate *to, const struct shard_verify_rate *r)
{
    to->bytes += r->bytes;
    to->items += r->items;
    to->seconds += r->seconds;
    to->busy_seconds += r->busy_seconds;
    if (r->threads > to->threads)
        to->threads = r->threads;
}

/* What the parts read, summed and merged for the report's description. */
static int describe(struct verify_run *v, const struct sk_part *parts, uint32_t n,
                    struct sk_tally *tallies, uint64_t *field_lines, uint64_t *sidecars)
{
    struct shard_verify_report *r = v->report;
    uint32_t nf = v->m->config.field_count;
    int rc = SHARD_OK;
    for (uint32_t i = 0; !rc && i < n; i++) {
        const struct sk_part *p = &parts[i];
        add_rate(&r->hash, &p->hash_rate);
        add_rate(&r->deep, &p->deep_rate);
        r->shards_sized += p->shards_sized;
        rc = sk_tally_merge(&tallies[0], &p->record_bytes);
        if (!rc)
            rc = sk_tally_merge(&tallies[1], &p->dimensions);
        for (uint32_t f = 0; !rc && f < nf; f++) {
            field_lines[f] += p->field_lines[f];
            rc = sk_tally_merge(&tallies[2 + f], &p->text_lengths[f]);
        }
        *sidecars += p->sidecars;
        for (size_t j = 0; !rc && j < p->warned_count; j++)
            rc = sk_verify_keep_warned(&r->warned, &r->warned_count, p->warned_samples[j].key,
                                       p->warned_samples[j].key_len, p->warned_samples[j].warning);
    }
    if (!rc)
        rc = sk_tally_export(&tallies[0], &r->record_bytes);
    if (!rc)
        rc = sk_tally_export(&tallies[1], &r->dimensions);
    if (!rc && nf) {
        r->field_lines = calloc(nf, sizeof *r->field_lines);
        r->text_lengths = calloc(nf, sizeof *r->text_lengths);
        rc = r->field_lines && r->text_lengths ? SHARD_OK : SHARD_ENOMEM;
        for (uint32_t f = 0; !rc && f < nf; f++) {
            r->field_lines[f] = field_lines[f];
            rc = sk_tally_export(&tallies[2 + f], &r->text_lengths[f]);
        }
    }
    r->deep_ran = n && parts[0].deep;
    return rc;
}

/* ---- --deep's counts of the fields ----------------------------------------------- */

int sk_verify_part_take_deep(struct verify_run *v)
{
    struct sk_part *p = v->part;
    struct shard_verify_report *r = v->report;
    for (uint32_t f = 0; v->record_field_samples && f < v->field_count; f++) {
        p->record_field_samples[f] = v->record_field_samples[f];
        v->record_field_samples[f] = 0;
    }
    p->record_sidecars = v->record_sidecars;
    v->record_sidecars = 0;
    if (!r->target_count)
        return SHARD_OK;
    if (!(p->targets = calloc(r->target_count, sizeof *p->targets)))
        return SHARD_ENOMEM;
    p->target_count = r->target_count;
    for (uint32_t i = 0; i < r->target_count; i++) {
        struct shard_target_tally *from = &r->targets[i], *to = &p->targets[i];
        size_t n = from->class_count ? from->class_count : 1;
        to->class_count = from->class_count;
        if (!(to->per_class = calloc(n, sizeof *to->per_class)) ||
            !(to->samples_with = calloc(n, sizeof *to->samples_with)))
            return SHARD_ENOMEM;
        to->samples = from->samples;
        to->items = from->items;
        to->max_boxes = from->max_boxes;
        from->samples = from->items = from->max_boxes = 0;
        for (uint32_t k = 0; k < from->class_count; k++) {
            to->per_class[k] = from->per_class[k];
            to->samples_with[k] = from->samples_with[k];
            from->per_class[k] = from->samples_with[k] = 0;
        }
    }
    return SHARD_OK;
}

/* Every part's --deep counts summed into v's and the report's. */
static void give_deep(struct verify_run *v, const struct sk_part *parts, uint32_t n)
{
    struct shard_verify_report *r = v->report;
    for (uint32_t i = 0; i < n; i++) {
        const struct sk_part *p = &parts[i];
        for (uint32_t f = 0; v->record_field_samples && f < v->field_count; f++)
            v->record_field_samples[f] += p->record_field_samples[f];
        v->record_sidecars += p->record_sidecars;
        for (uint32_t t = 0; t < r->target_count && t < p->target_count; t++) {
            struct shard_target_tally *to = &r->targets[t];
            const struct shard_target_tally *from = &p->targets[t];
            to->samples += from->samples;
            to->items += from->items;
            to->max_boxes = from->max_boxes > to->max_boxes ? from->max_boxes : to->max_boxes;
            for (uint32_t k = 0; k < to->class_count && k < from->class_count; k++) {
                to->per_class[k] += from->per_class[k];
                to->samples_with[k] += from->samples_with[k];
            }
        }
    }
}

/* ---- the combine ------------------------------------------------------------------- */

int sk_verify_combine_parts(struct verify_run *v, struct sk_part *parts, uint32_t n,
                            struct shard_err *err)
{
    const struct shard_manifest *m = v->m;
    uint32_t nf = m->config.field_count;
    struct sk_tally *tallies = calloc(2 + (size_t)nf, sizeof *tallies);
    uint64_t *field_lines = calloc(nf + 1, sizeof *field_lines), sidecars = 0;
    v->line_bases = calloc((size_t)n * v->index_files, sizeof *v->line_bases);
    int rc = tallies && field_lines && v->line_bases
                 ? start_label_tallies(v, err)
                 : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t t = 0; tallies && t < 2 + nf; t++)
        sk_tally_init(&tallies[t], t == 1); /* the dimensions are not rounded */
    if (rc)
        goto out;
    for (uint32_t k = 0; k < v->index_files; k++)
        for (uint32_t i = 1; i < n; i++)
            v->line_bases[(size_t)i * v->index_files + k] =
                v->line_bases[(size_t)(i - 1) * v->index_files + k] +
                parts[i - 1].segments[k].lines;
    give_deep(v, parts, n);
    check_listed_once(v);
    sk_verify_orphans_listed(v);
    check_stray_files(v);
    check_order(v, parts, n);
    if ((rc = settle_uncovered(v, parts, n)) ||
        (rc = describe(v, parts, n, tallies, field_lines, &sidecars))) {
        rc = shard_err_set(err, rc, "out of memory");
        goto out;
    }
    check_index_counts(v, parts, n, field_lines, sidecars, &v->report->index_read);
    check_key_tables(v, parts, n);
    check_label_counts(v, parts, n);
    int deep_read = n > 0;
    for (uint32_t i = 0; i < n; i++)
        deep_read &= parts[i].deep && parts[i].deep_complete;
    if (deep_read)
        sk_verify_record_field_counts(v);
out:
    for (uint32_t t = 0; tallies && t < 2 + nf; t++)
        sk_tally_release(&tallies[t]);
    free(tallies);
    free(field_lines);
    return rc;
}
