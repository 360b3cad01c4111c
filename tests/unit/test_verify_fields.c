/* test_verify_fields.c - shardcheck's checks of a dataset with fields
 * (format version 2), on datasets built by hand (mkdataset.h): a clean one
 * verifies with --deep; each record whose fields contradict the manifest
 * (a wrong type, an undeclared field, a value invalid for its type, a
 * damaged field area, a required field missing), each index line that
 * contradicts its record or the config, wrong counts, a shard of the other
 * version and a bad orphan list are reported naming shard, record, key and
 * field, and nothing crashes. */
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

static const uint64_t counts[] = {4, 3};
#define SHARDS 2
#define SAMPLES 7

static void build(struct mkds *d, int64_t damaged, enum mkds_damage damage, int64_t odd_shard);

/* Verify with one thread; deep when asked. */
static void verify(const struct mkds *d, int deep, struct shard_verify_report *r)
{
    struct shard_verify_options o;
    shard_verify_options_init(&o);
    o.threads = 1;
    o.deep = deep;
    struct shard_err err;
    if (shard_verify(d->dir, &o, r, &err))
        fail_msg("shard_verify failed: %s", err.msg);
}

static void print_problems(const struct shard_verify_report *r)
{
    for (uint64_t i = 0; i < r->problem_count; i++)
        print_message("  problem (%s, shard %lld record %lld): %s\n",
                      shard_check_name(r->problems[i].check), (long long)r->problems[i].shard,
                      (long long)r->problems[i].record, r->problems[i].message);
}

/* The report holds a problem of `check` about (shard, record) (-1: any)
 * whose message contains every one of the texts (NULL-terminated). */
static void assert_problem(const struct shard_verify_report *r, enum shard_check check,
                           int64_t shard, int64_t record, ...)
{
    for (uint64_t i = 0; i < r->problem_count; i++) {
        const struct shard_problem *p = &r->problems[i];
        if (p->check != check || (shard >= 0 && p->shard != shard) ||
            (record >= 0 && p->record != record))
            continue;
        va_list ap;
        va_start(ap, record);
        const char *text;
        int all = 1;
        while ((text = va_arg(ap, const char *)))
            all &= strstr(p->message, text) != NULL;
        va_end(ap);
        if (all)
            return;
    }
    print_problems(r);
    fail_msg("no %s problem about shard %lld record %lld with the texts asked",
             shard_check_name(check), (long long)shard, (long long)record);
}

/* The index lines as mkdataset.h writes them name made-up identities; a
 * text, json or bytes value is its source bytes, and a table's value is
 * identified by the value as stored (manifests/FORMAT.md), so write the
 * identities shardify would, and counts.sidecars. */
static void make_identities_real(struct mkds *d)
{
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    char path[160];
    mkds_path(d, SHARD_INDEX_FILE, path, sizeof path);
    struct shard_index_reader *rd;
    assert_int_equal(shard_index_reader_open(&rd, path, &err), 0);
    shard_index_reader_set_config(rd, &m.config);
    struct shard_buf index = {0};
    struct shard_sample smp;
    uint64_t sidecars = 0;
    for (uint64_t g = 0; shard_index_reader_next(rd, &smp, &err) == 1; g++) {
        for (uint32_t i = 0; i < smp.field_count; i++) {
            uint32_t f = smp.fields[i].field;
            uint8_t v[MKDS_VALUE_MAX];
            size_t len;
            assert_true(mkds_field_value(g, f, v, &len));
            enum shard_field_type t = mkds_field_decls[f].type;
            if (t == SHARD_FIELD_TEXT || t == SHARD_FIELD_JSON || t == SHARD_FIELD_BYTES ||
                mkds_field_decls[f].column) {
                smp.fields[i].source_bytes = len;
                smp.fields[i].source_xxh3 = XXH3_64bits(v, len);
            }
            sidecars += mkds_field_decls[f].sidecar != NULL;
        }
        assert_int_equal(shard_sample_line_fields(&smp, &m.config, &index, &err), 0);
    }
    shard_index_reader_close(rd);
    mkds_spit(d, SHARD_INDEX_FILE, index.data, index.len);
    m.index_bytes = index.len;
    m.index_xxh3 = XXH3_64bits(index.data, index.len);
    m.sidecars = sidecars;
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
    shard_buf_release(&index);
}

static void build(struct mkds *d, int64_t damaged, enum mkds_damage damage, int64_t odd_shard)
{
    struct mkds_options o = {1, -1, damaged, damage, odd_shard};
    mkds_build_opts(d, counts, SHARDS, &o);
    make_identities_real(d);
}

/* The fixture of the tests that change a clean dataset: built as build()
 * does, in *state; mkds_teardown removes it. */
static int setup_clean(void **state)
{
    struct mkds_options o = mkds_fields_options();
    if (mkds_setup_opts(state, counts, SHARDS, &o))
        return -1;
    make_identities_real(*state);
    return 0;
}

/* Shard s written again, record r's field area replaced by `set` (the
 * rest copied frame for frame), and the manifest's size and xxh3 of it. */
static void replace_fields(struct mkds *d, uint32_t s, uint64_t r,
                           const struct shard_field_set *set)
{
    char name[32], path[160], tmp[200];
    struct shard_err err;
    shard_file_name(s, name, sizeof name);
    mkds_path(d, name, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    struct shard_file *f;
    struct shard_writer *w;
    struct shard_record_encoder *enc;
    assert_int_equal(shard_file_open(&f, path, &err), 0);
    assert_int_equal(shard_writer_open_version(&w, tmp, s, SHARD_FORMAT_VERSION_FIELDS, &err), 0);
    assert_int_equal(shard_record_encoder_new(&enc, 3, &err), 0);
    const struct shard_footer *footer = shard_file_footer(f);
    struct shard_buf frame = {0};
    uint64_t first = 0;
    for (uint32_t k = 0; k < s; k++)
        first += counts[k];
    for (uint64_t i = 0; i < footer->record_count; i++) {
        const struct shard_index_row *row = &footer->rows[i];
        const uint8_t *key = footer->keys + footer->key_offsets[i];
        uint64_t h = row->frame_xxh3;
        if (i == r) {
            uint8_t px[MKDS_PIXEL_BYTES];
            mkds_pixels(first + i, px);
            struct shard_record_meta meta = {row->label, MKDS_W, MKDS_H, 3, SHARD_CODEC_RAW};
            assert_int_equal(shard_record_encode_fields(enc, &meta, key, row->key_len, px,
                                                        sizeof px, set, &frame, &h, &err),
                             0);
        } else {
            assert_int_equal(shard_file_read_frame(f, i, &frame, &err), 0);
        }
        assert_int_equal(shard_writer_add(w, frame.data, frame.len, h, key, row->key_len,
                                          row->label, &err),
                         0);
    }
    uint64_t bytes, xxh3;
    assert_int_equal(shard_writer_finish(w, &bytes, &xxh3, &err), 0);
    shard_writer_free(w);
    shard_file_close(f);
    shard_record_encoder_free(enc);
    shard_buf_release(&frame);
    assert_int_equal(rename(tmp, path), 0);
    struct shard_manifest m;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    m.shards[s].bytes = bytes;
    m.shards[s].xxh3 = xxh3;
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
}

/* Sample g's field area as mkdataset.h makes it, but field `f` holding
 * value[0..len) of type t (f absent when value is NULL). */
static void fields_with(uint64_t g, uint32_t f, enum shard_field_type t, const void *value,
                        size_t len, struct shard_field_set *set)
{
    struct shard_err err;
    shard_field_set_clear(set);
    for (uint32_t k = 0; k < MKDS_FIELDS; k++) {
        uint8_t v[MKDS_VALUE_MAX];
        size_t n;
        if (k == f) {
            if (value)
                assert_int_equal(shard_field_set_add(set, k, t, value, len, &err), 0);
        } else if (mkds_field_value(g, k, v, &n)) {
            assert_int_equal(shard_field_set_add(set, k, mkds_field_decls[k].type, v, n, &err), 0);
        }
    }
}

/* A clean dataset whose record r of shard s (key `key`) is written with the
 * field area `set` instead: --deep names it, with `text`. */
static void assert_record_named(uint32_t s, uint64_t r, const char *key,
                                const struct shard_field_set *set, const char *text)
{
    struct mkds d;
    build(&d, -1, 0, -1);
    replace_fields(&d, s, r, set);
    struct shard_verify_report rep;
    verify(&d, 1, &rep);
    char where[64];
    snprintf(where, sizeof where, "shard-%06u.shard record %llu", s, (unsigned long long)r);
    assert_problem(&rep, SHARD_CHECK_RECORD, s, (int64_t)r, where, key, text, NULL);
    shard_verify_report_release(&rep);
    mkds_remove(&d);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_a_clean_dataset_with_fields_verifies_deep(void **state)
{
    struct mkds *d = *state;
    struct shard_verify_report r;
    verify(d, 1, &r);
    print_problems(&r);
    assert_int_equal(r.problem_count, 0);
    assert_int_equal(r.fields, MKDS_FIELDS);
    assert_int_equal(r.deep.items, SAMPLES);
    shard_verify_report_release(&r);
}

/* What the reader refuses (shardkit/dataset.h): shardcheck names it. */
static void test_records_that_contradict_the_declarations_are_named(void **state)
{
    (void)state;
    static const struct {
        enum mkds_damage damage;
        const char *text;
    } cases[] = {
        {MKDS_WRONG_TYPE, "field 'score'"},
        {MKDS_UNDECLARED, "not declared"},
        {MKDS_SHORT_VECTOR, "field 'emb'"},
        {MKDS_LABEL_OUT_OF_RANGE, "field 'tags'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mkds d;
        /* sample 6: shard 1 record 2, key "g0006.png"; it has a score, an emb and tags */
        build(&d, 6, cases[i].damage, -1);
        struct shard_verify_report r;
        verify(&d, 0, &r);
        print_problems(&r);
        assert_int_equal(r.problem_count, 0); /* only records show it */
        shard_verify_report_release(&r);
        verify(&d, 1, &r);
        assert_problem(&r, SHARD_CHECK_RECORD, 1, 2, "shard-000001.shard record 2", "g0006.png",
                       cases[i].text, NULL);
        shard_verify_report_release(&r);
        mkds_remove(&d);
    }
}

/* Values a record may hold without the reader noticing (shard_field_check
 * is shardcheck's): each is named with the field and what is wrong. */
static void test_values_invalid_for_their_type_are_named(void **state)
{
    (void)state;
    uint8_t nan_bits[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};           /* a double NaN */
    uint8_t inf32[12] = {0, 0, 0x80, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0}; /* +inf, 0, 0 */
    uint8_t twice[8] = {1, 0, 0, 0, 1, 0, 0, 0};                    /* label 1 twice */
    static const char bad_utf8[] = "caption \xff";
    static const char bad_json[] = "{\"g\": ";
    struct {
        uint32_t field;
        enum shard_field_type type;
        const void *value;
        size_t len;
        const char *text;
    } cases[] = {
        {MKDS_META, SHARD_FIELD_JSON, bad_json, sizeof bad_json - 1, "field 'meta': invalid JSON"},
        {MKDS_CAPTION, SHARD_FIELD_TEXT, bad_utf8, sizeof bad_utf8 - 1, "field 'caption'"},
        {MKDS_WEIGHT, SHARD_FIELD_FLOAT, nan_bits, 8, "field 'weight'"},
        {MKDS_EMB, SHARD_FIELD_FLOAT32, inf32, 12, "field 'emb'"},
        {MKDS_TAGS, SHARD_FIELD_LABELS, twice, 8, "field 'tags'"},
    };
    struct shard_field_set set = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fields_with(2, cases[i].field, cases[i].type, cases[i].value, cases[i].len, &set);
        assert_record_named(0, 2, "cat/g0002.png", &set, cases[i].text); /* sample 2 */
    }
    shard_field_set_release(&set);
}

static void test_a_damaged_field_area_is_named_not_followed(void **state)
{
    (void)state;
    /* entry 0 of the area: field:u16 type:u8 reserved:u8 value_bytes:u32 */
    static const struct {
        size_t at;
        uint8_t byte;
        const char *what;
    } cases[] = {
        {2, 99, "field entry 0: unknown type 99"},
        {7, 0x40, "field entry 0: value runs past the record"},
        {0, 7, "field entry 1: field 2 out of order"},
        {3, 1, "field entry 0: its reserved byte is 1, not 0"},
    };
    struct shard_field_set set = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fields_with(1, UINT32_MAX, 0, NULL, 0, &set); /* sample 1's fields, all */
        set.area.data[cases[i].at] = cases[i].byte;
        assert_record_named(0, 1, "bee/g0001.png", &set, cases[i].what);
    }
    shard_field_set_release(&set);
}

static void test_a_record_without_its_required_field_or_with_another_field_set(void **state)
{
    struct mkds *d = *state;
    struct shard_field_set set = {0};
    fields_with(4, MKDS_IDS, 0, NULL, 0, &set); /* ids, required, left out */
    replace_fields(d, 1, 0, &set);              /* sample 4: "bee/g0004.png" */
    uint8_t caption[] = "a caption the line does not name";
    fields_with(2, MKDS_CAPTION, SHARD_FIELD_TEXT, caption, sizeof caption - 1, &set);
    replace_fields(d, 0, 2, &set); /* sample 2 has no caption (2 % 5 == 2) */
    struct shard_verify_report r;
    verify(d, 1, &r);
    assert_problem(&r, SHARD_CHECK_RECORD, 1, 0, "bee/g0004.png",
                   "no field 'ids', which the config requires", NULL);
    assert_problem(&r, SHARD_CHECK_RECORD, 1, 0, "bee/g0004.png",
                   "has no field 'ids', index.jsonl says it has one", NULL);
    assert_problem(&r, SHARD_CHECK_RECORD, 0, 2, "cat/g0002.png",
                   "holds field 'caption', index.jsonl says it has none", NULL);
    /* and the records' counts differ from the manifest's */
    assert_problem(&r, SHARD_CHECK_COUNTS, -1, -1, "counts.fields['ids']", "the records hold 6",
                   "manifest says 7", NULL);
    assert_problem(&r, SHARD_CHECK_COUNTS, -1, -1, "counts.fields['caption']", "the records hold",
                   NULL);
    shard_field_set_release(&set);
    shard_verify_report_release(&r);
}

static void test_a_stored_text_that_is_not_its_source_is_named(void **state)
{
    struct mkds *d = *state;
    /* a caption of the same length but other bytes than the line names */
    uint8_t v[MKDS_VALUE_MAX];
    size_t len;
    assert_true(mkds_field_value(3, MKDS_CAPTION, v, &len));
    v[0] ^= 0x20;
    struct shard_field_set set = {0};
    fields_with(3, MKDS_CAPTION, SHARD_FIELD_TEXT, v, len, &set);
    replace_fields(d, 0, 3, &set); /* sample 3: "g0003.png" */
    struct shard_verify_report r;
    verify(d, 1, &r);
    assert_problem(&r, SHARD_CHECK_RECORD, 0, 3, "g0003.png", "field 'caption' holds",
                   "not the value index.jsonl names", NULL);
    assert_int_equal(r.problem_count, 1);
    shard_verify_report_release(&r);
    shard_field_set_release(&set);
}

static void test_a_shard_of_the_other_version_is_named(void **state)
{
    (void)state;
    struct mkds d;
    build(&d, -1, 0, 1); /* shard 1 written as version 1 */
    struct shard_verify_report r;
    verify(&d, 0, &r);
    assert_problem(&r, SHARD_CHECK_SHARD, 1, -1,
                   "shard-000001.shard: format version 1, the manifest's is 2", NULL);
    shard_verify_report_release(&r);
    mkds_remove(&d);
}

/* Index lines rewritten by `edit` (sample g's line, parsed against the config). */
static void edit_index(struct mkds *d,
                       void (*edit)(uint64_t g, struct shard_sample *s, char **line))
{
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    size_t len;
    char *text = (char *)mkds_slurp(d, SHARD_INDEX_FILE, &len);
    struct shard_buf out = {0};
    uint64_t g = 0;
    for (char *line = text; line < text + len; g++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        struct shard_sample s;
        struct shard_reject rj;
        assert_int_equal(shard_line_parse_fields(line, (size_t)(end - line), &m.config, &s, &rj,
                                                 &err),
                         1);
        char *replaced = NULL;
        edit(g, &s, &replaced);
        struct shard_buf one = {0};
        if (!replaced)
            assert_int_equal(shard_sample_line_fields(&s, &m.config, &one, &err), 0);
        const char *bytes = replaced ? replaced : (const char *)one.data;
        assert_int_equal(shard_buf_append(&out, bytes, replaced ? strlen(replaced) : one.len, &err),
                         0);
        free(replaced);
        shard_buf_release(&one);
        shard_sample_release(&s);
        line = end + 1;
    }
    mkds_spit(d, SHARD_INDEX_FILE, out.data, out.len);
    m.index_bytes = out.len;
    m.index_xxh3 = XXH3_64bits(out.data, out.len);
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
    shard_buf_release(&out);
    free(text);
}

/* Sample 1's line names a field no one declared; sample 3's lacks the
 * required ids. */
static void undeclared_and_unrequired(uint64_t g, struct shard_sample *s, char **line)
{
    if (g == 1) {
        const char *line1 = "{\"key\":\"bee/g0001.png\",\"label\":1,\"shard\":0,\"record\":1,"
                            "\"width\":4,\"height\":3,\"source_bytes\":1001,"
                            "\"source_xxh3\":\"1234000000000001\",\"fields\":{\"bogus\":"
                            "{\"source_bytes\":1,\"source_xxh3\":\"0000000000000001\"}}}\n";
        *line = strdup(line1);
    }
    if (g == 3)
        for (uint32_t i = 0; i < s->field_count; i++)
            if (s->fields[i].field == MKDS_IDS) {
                memmove(&s->fields[i], &s->fields[i + 1],
                        (s->field_count - i - 1) * sizeof *s->fields);
                s->field_count--;
                break;
            }
}

static void test_index_lines_that_contradict_the_config_are_named(void **state)
{
    struct mkds *d = *state;
    edit_index(d, undeclared_and_unrequired);
    struct shard_verify_report r;
    verify(d, 1, &r);
    assert_problem(&r, SHARD_CHECK_INDEX, -1, -1, "line 2", "field 'bogus' is not declared", NULL);
    assert_problem(&r, SHARD_CHECK_INDEX, 0, 3, "index.jsonl line 4 (key 'g0003.png')",
                   "no field 'ids', which the config requires", NULL);
    assert_problem(&r, SHARD_CHECK_RECORD, 0, 3, "g0003.png",
                   "holds field 'ids', index.jsonl says it has none", NULL);
    shard_verify_report_release(&r);
}

static void more_captions(struct shard_manifest *m)
{
    m->field_samples[MKDS_CAPTION]++;
    m->sidecars += 2;
}

static void test_field_counts_that_differ_from_the_lines_and_records(void **state)
{
    struct mkds *d = *state;
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    uint64_t captions = m.field_samples[MKDS_CAPTION], sidecars = m.sidecars;
    more_captions(&m);
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
    struct shard_verify_report r;
    verify(d, 1, &r);
    char names[96], holds[96], side[96];
    snprintf(names, sizeof names, "index.jsonl names %llu samples with it, manifest says %llu",
             (unsigned long long)captions, (unsigned long long)captions + 1);
    snprintf(holds, sizeof holds, "the records hold %llu samples with it",
             (unsigned long long)captions);
    snprintf(side, sizeof side,
             "index.jsonl names %llu values taken from sidecar files, manifest says %llu",
             (unsigned long long)sidecars, (unsigned long long)sidecars + 2);
    assert_problem(&r, SHARD_CHECK_COUNTS, -1, -1, "counts.fields['caption']", names, NULL);
    assert_problem(&r, SHARD_CHECK_COUNTS, -1, -1, "counts.fields['caption']", holds, NULL);
    assert_problem(&r, SHARD_CHECK_COUNTS, -1, -1, "counts.sidecars", side, NULL);
    assert_int_equal(r.problem_count, 4); /* caption and sidecars, by lines and by records */
    shard_verify_report_release(&r);
}

static void test_orphans_listed_out_of_order_or_not_sidecars_are_named(void **state)
{
    struct mkds *d = *state;
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load(d->dir, &m, &err), 0);
    static const char *const keys[] = {"b/x.txt", "a/y.txt", "a/y.txt", "a/z.png"};
    free(m.orphans);
    m.orphan_count = 4;
    m.orphans = calloc(4, sizeof *m.orphans);
    for (int i = 0; i < 4; i++) {
        m.orphans[i].key = strdup(keys[i]);
        m.orphans[i].key_len = strlen(keys[i]);
    }
    assert_int_equal(shard_manifest_write(d->dir, &m, &err), 0);
    shard_manifest_release(&m);
    struct shard_verify_report r;
    verify(d, 0, &r);
    assert_problem(&r, SHARD_CHECK_MANIFEST, -1, -1,
                   "orphan 'a/y.txt' is listed twice or out of key order", NULL);
    assert_problem(&r, SHARD_CHECK_MANIFEST, -1, -1, "orphan 'a/z.png' is not named like a sidecar",
                   NULL);
    assert_int_equal(r.problem_count, 3); /* a/y.txt after b/x.txt, a/y.txt again, a/z.png */
    shard_verify_report_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_clean_dataset_with_fields_verifies_deep, setup_clean,
                                        mkds_teardown),
        cmocka_unit_test(test_records_that_contradict_the_declarations_are_named),
        cmocka_unit_test(test_values_invalid_for_their_type_are_named),
        cmocka_unit_test(test_a_damaged_field_area_is_named_not_followed),
        cmocka_unit_test_setup_teardown(
            test_a_record_without_its_required_field_or_with_another_field_set, setup_clean,
            mkds_teardown),
        cmocka_unit_test_setup_teardown(test_a_stored_text_that_is_not_its_source_is_named,
                                        setup_clean, mkds_teardown),
        cmocka_unit_test(test_a_shard_of_the_other_version_is_named),
        cmocka_unit_test_setup_teardown(test_index_lines_that_contradict_the_config_are_named,
                                        setup_clean, mkds_teardown),
        cmocka_unit_test_setup_teardown(test_field_counts_that_differ_from_the_lines_and_records,
                                        setup_clean, mkds_teardown),
        cmocka_unit_test_setup_teardown(test_orphans_listed_out_of_order_or_not_sidecars_are_named,
                                        setup_clean, mkds_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
