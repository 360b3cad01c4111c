/* test_verify.c - the verification engine on datasets built by hand: a clean
 * dataset verifies; a changed byte at every position of a shard is caught
 * by the default pass and by the structure checks; duplicate keys, missing
 * or wrong index lines, wrong counts, missing, truncated and stray shards
 * are each reported with a message naming shard, record and key; plans are
 * proven to visit every sample once; reports do not depend on threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mkdataset.h"
#include "shardkit.h"

static const uint64_t counts[] = {3, 2, 4};
#define SHARDS 3
#define SAMPLES 9

static void verify(const struct mkds *d, const struct shard_verify_options *o,
                   struct shard_verify_report *r)
{
    struct shard_err err;
    if (shard_verify(d->dir, o, r, &err))
        fail_msg("shard_verify failed: %s", err.msg);
}

/* One thread: these datasets are tiny, and the thread-count independence
 * of reports has a test of its own. */
static void verify_default(const struct mkds *d, struct shard_verify_report *r)
{
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    o.threads = 1;
    verify(d, &o, r);
}

/* The report holds a problem of `check` whose message contains `text`. */
static void assert_problem(const struct shard_verify_report *r, enum shard_check check,
                           const char *text)
{
    for (uint64_t i = 0; i < r->problem_count; i++)
        if (r->problems[i].check == check && strstr(r->problems[i].message, text))
            return;
    for (uint64_t i = 0; i < r->problem_count; i++)
        print_message("  problem: %s\n", r->problems[i].message);
    fail_msg("no %s problem mentioning \"%s\"", shard_check_name(check), text);
}

static void edit_manifest(const struct mkds *d, void (*edit)(struct shard_manifest *))
{
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    edit(&m);
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
}

static void test_a_clean_dataset_verifies_with_every_pass(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    o.deep = 1;
    o.world_sizes[0] = 1;
    o.world_sizes[1] = 2;
    o.world_sizes[2] = 4;
    o.world_sizes[3] = 16;
    o.world_size_count = 4;
    o.epochs = 3;
    struct shard_verify_report r;
    verify(&d, &o, &r);
    for (uint64_t i = 0; i < r.problem_count; i++)
        print_message("  problem: %s\n", r.problems[i].message);
    assert_int_equal(r.problem_count, 0);
    assert_int_equal(r.shards, SHARDS);
    assert_int_equal(r.samples, SAMPLES);
    assert_int_equal(r.hash.items, SHARDS);
    assert_true(r.hash.bytes > SAMPLES * MKDS_PIXEL_BYTES / 4);
    assert_int_equal(r.deep.items, SAMPLES);
    assert_int_equal(r.visitation_count, 4);
    for (size_t i = 0; i < r.visitation_count; i++)
        assert_true(r.visitation[i].passed);
    assert_int_equal(r.visitation[3].min_per_rank, 0); /* 16 ranks, 9 samples */
    assert_int_equal(r.visitation[3].max_per_rank, 1);
    shard_verify_report_release(&r);
    shard_verify_report_release(NULL);
    mkds_remove(&d);
}

static void test_a_flipped_byte_anywhere_in_a_shard_is_caught(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    const char *name = "shard-000002.shard";
    size_t len;
    uint8_t *orig = mkds_slurp(&d, name, &len);
    for (size_t pos = 0; pos < len; pos++) {
        mkds_flip(&d, name, pos);
        /* the default pass: the whole-file hash */
        struct shard_verify_report r;
        verify_default(&d, &r);
        assert_problem(&r, SHARD_CHECK_SHARD, "shard-000002.shard: xxh3 is ");
        shard_verify_report_release(&r);
        /* and the structure alone (header, trailer, footer, frames) */
        struct shard_dataset *ds;
        struct shard_err err;
        assert_int_equal(shard_dataset_open(&ds, d.dir, &err), 0);
        struct shard_item it;
        memset(&it, 0, sizeof it);
        int caught = 0;
        for (uint64_t g = 5; g < SAMPLES && !caught; g++)
            caught = shard_dataset_read(ds, g, SHARD_READ_PIXELS, &it, &err) != 0;
        if (!caught)
            fail_msg("a flip at byte %zu of %zu passed the structure checks", pos, len);
        assert_non_null(strstr(err.msg, "shard-000002.shard"));
        shard_item_release(&it);
        shard_dataset_close(ds);
        mkds_spit(&d, name, orig, len);
    }
    free(orig);
    mkds_remove(&d);
}

static void test_a_duplicate_key_is_named_with_both_places(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build_with(&d, counts, SHARDS, 4); /* sample 4 (shard 1 record 1) repeats key 0 */
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_KEYS,
                   "duplicate key 'ant/g0000.png': shard-000000.shard record 0 and "
                   "shard-000001.shard record 1");
    assert_int_equal(r.problem_count, 1);
    assert_int_equal(r.problems[0].shard, 1);
    assert_int_equal(r.problems[0].record, 1);
    assert_string_equal(r.problems[0].key, "ant/g0000.png");
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

/* The manifest lists shard 0 a second time, with counts that add up. */
static void list_first_shard_twice(struct shard_manifest *m)
{
    struct shard_manifest_shard *grown = realloc(m->shards, (m->shard_count + 1) * sizeof *grown);
    assert_non_null(grown);
    m->shards = grown;
    m->shards[m->shard_count] = m->shards[0];
    m->shards[m->shard_count].file = strdup(m->shards[0].file);
    m->shard_count++;
    m->samples += m->shards[0].samples;
    m->unlabeled += m->shards[0].samples;
    m->index_entries = m->samples;
}

static void test_a_shard_listed_twice_is_reported_with_its_duplicate_keys(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    edit_manifest(&d, list_first_shard_twice);
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_MANIFEST,
                   "manifest: 'shard-000000.shard' is listed in \"shards\" more than once");
    assert_problem(&r, SHARD_CHECK_KEYS,
                   "duplicate key 'ant/g0000.png': shard-000000.shard record 0 and "
                   "shard-000000.shard record 0");
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

static struct {
    uint64_t bytes, xxh3;
} new_index;

static void set_index_identity(struct shard_manifest *m)
{
    m->index_bytes = new_index.bytes;
    m->index_xxh3 = new_index.xxh3;
}

/* Drop line `skip` (0-based) of index.jsonl; remember the new identity. */
static void drop_index_line(const struct mkds *d, int skip)
{
    size_t len;
    uint8_t *buf = mkds_slurp(d, SHARD_INDEX_FILE, &len);
    uint8_t *out = malloc(len);
    size_t o = 0;
    int line = 0;
    for (size_t i = 0; i < len; i++) {
        if (line != skip)
            out[o++] = buf[i];
        if (buf[i] == '\n')
            line++;
    }
    mkds_spit(d, SHARD_INDEX_FILE, out, o);
    new_index.bytes = o;
    new_index.xxh3 = XXH3_64bits(out, o);
    free(buf);
    free(out);
}

static void test_a_sample_missing_from_the_index_is_named(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    drop_index_line(&d, 3); /* shard 1 record 0 */
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_INDEX,
                   "shard-000001.shard record 0 (key 'g0003.png'): not in index.jsonl");
    assert_problem(&r, SHARD_CHECK_INDEX, "index.jsonl: xxh3 is ");
    assert_problem(&r, SHARD_CHECK_INDEX, "index.jsonl: 8 lines, manifest says 9 entries");
    shard_verify_report_release(&r);

    /* with the index's hash and size fixed, only the semantic check is left */
    edit_manifest(&d, set_index_identity);
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_INDEX,
                   "shard-000001.shard record 0 (key 'g0003.png'): not in index.jsonl");
    assert_problem(&r, SHARD_CHECK_INDEX, "index.jsonl: 8 lines, manifest says 9 entries");
    assert_int_equal(r.problem_count, 2);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

static void shift_by_label(struct shard_manifest *m)
{
    m->label_samples[0]++;
    m->label_samples[1]--;
}

/* consistent with by_label and unlabeled, not with the shards */
static void add_one_sample(struct shard_manifest *m)
{
    m->samples++;
    m->unlabeled++;
}

static void test_wrong_counts_are_reported(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    /* by_label still adds up, but disagrees with the records */
    edit_manifest(&d, shift_by_label);
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_COUNTS,
                   "counts.by_label['ant']: the shards hold 2 samples, manifest says 3");
    assert_problem(&r, SHARD_CHECK_COUNTS,
                   "counts.by_label['bee']: the shards hold 2 samples, manifest says 1");
    shard_verify_report_release(&r);
    /* counts.samples no longer matches the shards: the manifest itself is bad */
    edit_manifest(&d, add_one_sample);
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_MANIFEST, "shards hold 9 samples, counts.samples is 10");
    assert_int_equal(r.problems[0].code, SHARD_ECORRUPT);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

/* Counts that contradict each other and the shards in several ways at once. */
static void contradict_counts(struct shard_manifest *m)
{
    m->samples++;
    m->unlabeled++;  /* by_label + unlabeled still add up to samples */
    m->rejected = 2; /* none is listed */
    m->index_entries = 4;
    m->warned = 1; /* no index line carries a warning */
}

static void test_every_problem_is_listed_after_a_manifest_contradiction(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    edit_manifest(&d, contradict_counts);
    mkds_flip(&d, "shard-000001.shard", 40); /* inside record 0's frame */
    struct shard_verify_report r;
    verify_default(&d, &r);
    /* the manifest's own contradictions, each of them */
    assert_problem(&r, SHARD_CHECK_MANIFEST, "shards hold 9 samples, counts.samples is 10");
    assert_problem(&r, SHARD_CHECK_MANIFEST, "0 rejects listed, counts.rejected is 2");
    assert_problem(&r, SHARD_CHECK_MANIFEST, "index.entries differs from counts.samples");
    /* and everything after them: every shard is hashed, the index and the
     * counts are compared with what the shards hold */
    assert_int_equal(r.hash.items, SHARDS);
    assert_true(r.hash.bytes > SAMPLES * MKDS_PIXEL_BYTES / 4);
    assert_problem(&r, SHARD_CHECK_SHARD, "shard-000001.shard: xxh3 is ");
    assert_problem(&r, SHARD_CHECK_INDEX, "index.jsonl: 9 lines, manifest says 4 entries");
    assert_problem(&r, SHARD_CHECK_COUNTS,
                   "counts.unlabeled: the shards hold 2 unlabeled samples, manifest says 3");
    assert_problem(&r, SHARD_CHECK_COUNTS,
                   "counts.warned: index.jsonl has 0 samples stored despite a decoder "
                   "warning, manifest says 1");
    assert_int_equal(r.samples, SAMPLES); /* what the shards hold */
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

/* The per-label tallies a report draws: the manifest's counts beside what
 * the shards hold, the difference visible in the numbers themselves. */
static void test_label_tallies_set_the_manifest_beside_the_shards(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_int_equal(r.label_tally_count, MKDS_LABELS + 1);
    assert_true(r.labels_counted);
    assert_false(r.labels_checked);                             /* no --source */
    static const uint64_t want[MKDS_LABELS + 1] = {2, 2, 3, 2}; /* ant, bee, cat, none */
    for (uint32_t i = 0; i <= MKDS_LABELS; i++) {
        if (i < MKDS_LABELS)
            assert_string_equal(r.labels[i].name, mkds_label_names[i]);
        else
            assert_null(r.labels[i].name);
        assert_int_equal(r.labels[i].manifest, want[i]);
        assert_int_equal(r.labels[i].shards, want[i]);
        assert_int_equal(r.labels[i].source, 0);
    }
    shard_verify_report_release(&r);
    edit_manifest(&d, shift_by_label);
    verify_default(&d, &r);
    assert_int_equal(r.labels[0].manifest, 3);
    assert_int_equal(r.labels[0].shards, 2);
    assert_int_equal(r.labels[1].manifest, 1);
    assert_int_equal(r.labels[1].shards, 2);
    shard_verify_report_release(&r);
    /* a shard that cannot be read: its labels are not counted, so none are */
    char path[160];
    snprintf(path, sizeof path, "%s/shard-000001.shard", d.dir);
    assert_int_equal(unlink(path), 0);
    verify_default(&d, &r);
    assert_false(r.labels_counted);
    assert_int_equal(r.labels[2].manifest, 3);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

static void test_missing_truncated_and_stray_shards_are_named(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    size_t len;
    uint8_t *orig = mkds_slurp(&d, "shard-000001.shard", &len);
    mkds_spit(&d, "shard-000001.shard", orig, len - 7);
    mkds_spit(&d, "shard-000007.shard", orig, len);
    char path[160];
    mkds_path(&d, "shard-000000.shard", path, sizeof path);
    assert_int_equal(unlink(path), 0);
    struct shard_verify_report r;
    verify_default(&d, &r);
    assert_problem(&r, SHARD_CHECK_SHARD, "shard-000000.shard: missing");
    char want[96];
    snprintf(want, sizeof want, "shard-000001.shard: %zu bytes, manifest says %zu", len - 7, len);
    assert_problem(&r, SHARD_CHECK_SHARD, want);
    assert_problem(&r, SHARD_CHECK_SHARD, "shard-000001.shard: bad trailer magic");
    assert_problem(&r, SHARD_CHECK_SHARD,
                   "shard-000007.shard: in the dataset directory but not listed");
    shard_verify_report_release(&r);
    free(orig);
    mkds_remove(&d);
}

static void test_reports_do_not_depend_on_thread_count(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    mkds_flip(&d, "shard-000000.shard", 40);
    mkds_flip(&d, "shard-000002.shard", 41);
    drop_index_line(&d, 7);
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    o.deep = 1;
    struct shard_verify_report one, four;
    o.threads = 1;
    verify(&d, &o, &one);
    o.threads = 4;
    verify(&d, &o, &four);
    assert_true(one.problem_count >= 5);
    assert_int_equal(one.problem_count, four.problem_count);
    for (uint64_t i = 0; i < one.problem_count; i++)
        assert_string_equal(one.problems[i].message, four.problems[i].message);
    assert_problem(&one, SHARD_CHECK_RECORD, "shard-000000.shard record 0 (key 'ant/g0000.png')");
    shard_verify_report_release(&one);
    shard_verify_report_release(&four);
    mkds_remove(&d);
}

static void test_visitation_reports_padding_and_dropping(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    o.world_sizes[0] = 2;
    o.world_sizes[1] = 4;
    o.world_size_count = 2;
    struct shard_verify_report r;
    o.plan.remainder = SHARD_REMAINDER_PAD;
    verify(&d, &o, &r);
    assert_int_equal(r.problem_count, 0);
    assert_int_equal(r.visitation[0].padded, 1); /* 2 x 5 - 9 */
    assert_int_equal(r.visitation[1].padded, 3); /* 4 x 3 - 9 */
    assert_int_equal(r.visitation[1].min_per_rank, 3);
    shard_verify_report_release(&r);
    o.plan.remainder = SHARD_REMAINDER_DROP;
    verify(&d, &o, &r);
    assert_int_equal(r.problem_count, 0);
    assert_int_equal(r.visitation[0].dropped, 1);
    assert_int_equal(r.visitation[1].dropped, 1);
    assert_int_equal(r.visitation[1].max_per_rank, 2);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

static void test_unusable_inputs_are_errors_not_findings(void **state)
{
    (void)state;
    struct mkds d;
    mkds_build(&d, counts, SHARDS);
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    struct shard_verify_report r;
    struct shard_err err;
    o.fidelity = 3;
    assert_int_equal(shard_verify(d.dir, &o, &r, &err), SHARD_EINVAL);
    shard_verify_report_release(&r);
    o.fidelity = 0;
    o.source = "/nonexistent/shardkit-source";
    assert_int_equal(shard_verify(d.dir, &o, &r, &err), SHARD_ENOTFOUND);
    shard_verify_report_release(&r);
    o.source = NULL;
    assert_int_equal(shard_verify("/nonexistent/shardkit-dataset", &o, &r, &err), SHARD_ENOTFOUND);
    shard_verify_report_release(&r);
    /* a malformed manifest is a finding */
    mkds_spit(&d, SHARD_MANIFEST_FILE, (const uint8_t *)"{\"format\": 1", 12);
    assert_int_equal(shard_verify(d.dir, &o, &r, &err), 0);
    assert_int_equal(r.problem_count, 1);
    assert_int_equal(r.problems[0].check, SHARD_CHECK_MANIFEST);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_clean_dataset_verifies_with_every_pass),
        cmocka_unit_test(test_a_flipped_byte_anywhere_in_a_shard_is_caught),
        cmocka_unit_test(test_a_duplicate_key_is_named_with_both_places),
        cmocka_unit_test(test_a_shard_listed_twice_is_reported_with_its_duplicate_keys),
        cmocka_unit_test(test_a_sample_missing_from_the_index_is_named),
        cmocka_unit_test(test_wrong_counts_are_reported),
        cmocka_unit_test(test_label_tallies_set_the_manifest_beside_the_shards),
        cmocka_unit_test(test_every_problem_is_listed_after_a_manifest_contradiction),
        cmocka_unit_test(test_missing_truncated_and_stray_shards_are_named),
        cmocka_unit_test(test_reports_do_not_depend_on_thread_count),
        cmocka_unit_test(test_visitation_reports_padding_and_dropping),
        cmocka_unit_test(test_unusable_inputs_are_errors_not_findings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
