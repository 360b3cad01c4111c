/* fuzz_manifest.c - manifest.json, index lines and resume journals on
 * arbitrary bytes.
 *
 * Each input is written to a private temporary directory as manifest.json
 * and then read four ways:
 *  1. shard_manifest_load (from the directory) and shard_manifest_load_buffer
 *     (from memory) must agree; a manifest they accept must survive a round
 *     trip: serialised with shard_manifest_dump and loaded again, it
 *     serialises to the same text;
 *  2. shard_line_parse on every '\n'-separated line; an accepted sample or
 *     reject must survive shard_sample_line / shard_reject_line and a second
 *     parse unchanged; and shard_line_parse_fields against a config with
 *     fields (a dataset of format version 2), whose samples must survive
 *     shard_sample_line_fields, fields and all;
 *  3. shard_index_reader over the file as an index.jsonl, without fields
 *     and with;
 *  4. sk_journal_read over the file as a resume journal (DST/.shardify is on
 *     disk too, and a damaged one must make resume start over, not crash).
 * Invariant violations abort(), so the fuzzer reports them like crashes. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "convert/journal.h"
#include "shardkit/manifest.h"

#define REQUIRE(cond)                                                                         \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_manifest: invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                                \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

static char dir[256]; /* the private temporary directory */
static char manifest_path[300];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/shardkit-fuzz-manifest.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_manifest: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    snprintf(manifest_path, sizeof manifest_path, "%s/%s", dir, SHARD_MANIFEST_FILE);
    return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
    int fd = open(manifest_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0) {
        perror("fuzz_manifest: cannot write the input");
        abort();
    }
}

/* Mode 1: load from the file and from memory (the two must agree), and if
 * accepted, dump + load + dump again. */
static void load_manifest(const uint8_t *data, size_t size)
{
    struct shard_err err, err2;
    struct shard_manifest m, again;
    int rc = shard_manifest_load(dir, &m, &err);
    int rc2 = shard_manifest_load_buffer((const char *)data, size, &again, &err2);
    REQUIRE((rc == 0) == (rc2 == 0));
    shard_manifest_release(&again);
    if (rc != 0) {
        REQUIRE(rc == rc2 || rc == SHARD_ENOTFOUND || rc == SHARD_EIO);
        return;
    }
    uint64_t sum = 0;
    for (uint32_t i = 0; i < m.shard_count; i++)
        sum += m.shards[i].samples;
    REQUIRE(sum == m.samples);
    REQUIRE(m.reject_count == m.rejected);
    REQUIRE(m.index_entries == m.samples);
    REQUIRE(m.warned <= m.samples);
    char *first = NULL, *second = NULL;
    REQUIRE(shard_manifest_dump(&m, &first, &err) == 0);
    rc = shard_manifest_load_buffer(first, strlen(first), &again, &err);
    if (rc)
        fprintf(stderr, "fuzz_manifest: reloading its own dump: %s\n", err.msg);
    REQUIRE(rc == 0);
    REQUIRE(shard_manifest_dump(&again, &second, &err) == 0);
    REQUIRE(strcmp(first, second) == 0);
    free(first);
    free(second);
    shard_manifest_release(&again);
    shard_manifest_release(&m);
}

static void same_sample(const struct shard_sample *a, const struct shard_sample *b)
{
    REQUIRE(a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0);
    REQUIRE(a->label == b->label && a->shard == b->shard && a->record == b->record);
    REQUIRE(a->width == b->width && a->height == b->height);
    REQUIRE(a->source_bytes == b->source_bytes && a->source_xxh3 == b->source_xxh3);
    REQUIRE(!a->warning == !b->warning && (!a->warning || !strcmp(a->warning, b->warning)));
}

static void same_reject(const struct shard_reject *a, const struct shard_reject *b)
{
    REQUIRE(a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0);
    REQUIRE(strcmp(a->reason, b->reason) == 0 && a->has_source == b->has_source);
    if (a->has_source)
        REQUIRE(a->source_bytes == b->source_bytes && a->source_xxh3 == b->source_xxh3);
}

/* Mode 2: one line, and its round trip. */
static void parse_line(const char *line, size_t len)
{
    struct shard_err err;
    struct shard_sample s, s2;
    struct shard_reject r, r2;
    struct shard_buf out = {0};
    int kind = shard_line_parse(line, len, &s, &r, &err);
    if (kind == 1) {
        REQUIRE(s.key && s.key_len >= 1 && s.key[s.key_len] == '\0');
        REQUIRE(shard_sample_line(&s, &out, &err) == 0);
        REQUIRE(out.len > 0 && out.data[out.len - 1] == '\n');
        REQUIRE(shard_line_parse((const char *)out.data, out.len - 1, &s2, &r2, &err) == 1);
        same_sample(&s, &s2);
    } else if (kind == 2) {
        REQUIRE(r.key && r.reason);
        REQUIRE(shard_reject_line(&r, &out, &err) == 0);
        REQUIRE(out.len > 0 && out.data[out.len - 1] == '\n');
        REQUIRE(shard_line_parse((const char *)out.data, out.len - 1, &s2, &r2, &err) == 2);
        same_reject(&r, &r2);
    } else {
        REQUIRE(kind < 0);
        memset(&s2, 0, sizeof s2);
        memset(&r2, 0, sizeof r2);
    }
    shard_sample_release(&s);
    shard_sample_release(&s2);
    shard_reject_release(&r);
    shard_reject_release(&r2);
    shard_buf_release(&out);
}

/* The fields the version 2 seeds declare (make_corpus.py): index lines are
 * parsed against them too, as shardcheck and the reader parse them. */
static const struct shard_field_decl seed_fields[] = {
    {.name = "caption", .type = SHARD_FIELD_TEXT, .length = 0, .sidecar = ".txt"},
    {.name = "meta", .type = SHARD_FIELD_JSON, .length = 0, .sidecar = ".json"},
    {.name = "score", .type = SHARD_FIELD_FLOAT, .length = 0, .sidecar = ".score"},
    {.name = "emb", .type = SHARD_FIELD_FLOAT32, .length = 2, .sidecar = ".emb"},
    {.name = "tags", .type = SHARD_FIELD_LABELS, .length = 0, .sidecar = ".tags"},
    {.name = "blob", .type = SHARD_FIELD_BYTES, .length = 0, .sidecar = ".bin"},
};
static const struct shard_config seed_config = {
    .fields = (struct shard_field_decl *)seed_fields,
    .field_count = sizeof seed_fields / sizeof seed_fields[0],
};

/* Mode 2b: one line of a dataset with fields, and its round trip: the
 * fields named are declared ones, each once, in field number order. */
static void parse_line_with_fields(const char *line, size_t len)
{
    struct shard_err err;
    struct shard_sample s, s2;
    struct shard_reject r, r2;
    struct shard_buf out = {0};
    memset(&s2, 0, sizeof s2);
    memset(&r2, 0, sizeof r2);
    int kind = shard_line_parse_fields(line, len, &seed_config, &s, &r, &err);
    if (kind == 1) {
        for (uint32_t i = 0; i < s.field_count; i++)
            REQUIRE(s.fields[i].field < seed_config.field_count &&
                    (i == 0 || s.fields[i].field > s.fields[i - 1].field));
        REQUIRE(shard_sample_line_fields(&s, &seed_config, &out, &err) == 0);
        REQUIRE(out.len > 0 && out.data[out.len - 1] == '\n');
        REQUIRE(shard_line_parse_fields((const char *)out.data, out.len - 1, &seed_config, &s2, &r2,
                                        &err) == 1);
        same_sample(&s, &s2);
        REQUIRE(s.field_count == s2.field_count);
        for (uint32_t i = 0; i < s.field_count; i++)
            REQUIRE(s.fields[i].field == s2.fields[i].field &&
                    s.fields[i].source_bytes == s2.fields[i].source_bytes &&
                    s.fields[i].source_xxh3 == s2.fields[i].source_xxh3);
    }
    shard_sample_release(&s);
    shard_sample_release(&s2);
    shard_reject_release(&r);
    shard_reject_release(&r2);
    shard_buf_release(&out);
}

/* Mode 3: the streaming index reader, without fields and with. */
static void read_index(size_t size)
{
    for (int with_fields = 0; with_fields <= 1; with_fields++) {
        struct shard_err err;
        struct shard_index_reader *r;
        if (shard_index_reader_open(&r, manifest_path, &err) != 0)
            return;
        if (with_fields)
            shard_index_reader_set_config(r, &seed_config);
        struct shard_sample s;
        int rc;
        while ((rc = shard_index_reader_next(r, &s, &err)) == 1)
            REQUIRE(s.key && s.key_len >= 1);
        if (rc == 0)
            REQUIRE(shard_index_reader_bytes(r) == size);
        shard_index_reader_close(r);
    }
}

static int count_sample(void *user, struct shard_sample *s, struct shard_err *err)
{
    (void)err;
    REQUIRE(s->key && s->key_len >= 1);
    ++*(uint64_t *)user;
    return 0;
}

static int count_reject(void *user, struct shard_reject *r, struct shard_err *err)
{
    (void)err;
    REQUIRE(r->key && r->reason);
    ++*(uint64_t *)user;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);
    read_index(size);
    struct shard_err err;
    struct journal_end end;
    uint64_t lines = 0;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dirfd >= 0);
    if (sk_journal_read(dirfd, dir, SHARD_MANIFEST_FILE, NULL, count_sample, count_reject, &lines,
                        &end, &err) == 0)
        REQUIRE(end.pos_end >= end.pos_start);
    close(dirfd);

    /* each line goes to the parser as an exactly sized copy without a NUL,
     * so a read past its end is caught by AddressSanitizer */
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        char *line = malloc(len ? len : 1);
        REQUIRE(line);
        memcpy(line, data + at, len);
        parse_line(line, len);
        parse_line_with_fields(line, len);
        free(line);
        at += len + 1;
    }
    load_manifest(data, size);
    return 0;
}
