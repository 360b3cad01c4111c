/* test_keys.c - key tables (lib/manifest/keys.h): a table written from
 * lines added in any order, in memory or through many spilled runs, holds
 * every line once, sorted by (hash, line), behind a header that names its
 * count; sk_keys_find finds every key's line, finds the lines of colliding
 * hashes, finds nothing for an absent key, and a table of another count or
 * a damaged header is refused.  The expectation is computed apart: every
 * (hash, line) pair, sorted by qsort here. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "manifest/keys.h"
#include "shardkit/util.h"
#include "util/fsutil.h"

struct table {
    char dir[64];
    int dir_fd;
    uint8_t *bytes;
    size_t len;
};

static int read_table(void *ctx, uint64_t offset, void *buf, size_t len, struct shard_err *err)
{
    struct table *t = ctx;
    if (offset > t->len || len > t->len - offset)
        return shard_err_set(err, SHARD_ECORRUPT, "short table");
    memcpy(buf, t->bytes + offset, len);
    return SHARD_OK;
}

static void key_of(uint64_t i, char *key, size_t size)
{
    snprintf(key, size, "dir%llu/sample-%llu.jpg", (unsigned long long)(i % 7),
             (unsigned long long)i);
}

struct pair {
    uint64_t hash, line;
};

static int compare_pairs(const void *pa, const void *pb)
{
    const struct pair *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Write a table of n keys (line i holding key i, added in a scrambled
 * order) with runs of `run` entries, and read it back. */
static void build(struct table *t, uint64_t n, size_t run)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/test_keys.XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    t->dir_fd = open(t->dir, O_RDONLY | O_DIRECTORY);
    assert_true(t->dir_fd >= 0);
    struct shard_err err;
    struct sk_keys_builder *b;
    assert_int_equal(sk_keys_builder_new(&b, t->dir_fd, t->dir, "run", &err), SHARD_OK);
    sk_keys_builder_set_run(b, run);
    char key[64];
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 7919) % n; /* every line once, out of order (n prime to 7919) */
        key_of(i, key, sizeof key);
        assert_int_equal(sk_keys_builder_add(b, key, strlen(key), i, &err), SHARD_OK);
    }
    uint64_t bytes, h;
    assert_int_equal(sk_keys_builder_write(b, t->dir_fd, t->dir, "index.keys", &bytes, &h, &err),
                     SHARD_OK);
    sk_keys_builder_free(b);
    struct shard_buf buf = {0};
    assert_int_equal(sk_fs_read_file(t->dir_fd, "index.keys", &buf, &err), SHARD_OK);
    t->bytes = buf.data;
    t->len = buf.len;
    assert_int_equal(bytes, t->len);
    assert_true(h == XXH3_64bits(t->bytes, t->len));
}

static void destroy(struct table *t)
{
    unlinkat(t->dir_fd, "index.keys", 0);
    close(t->dir_fd);
    assert_int_equal(rmdir(t->dir), 0); /* no run left behind */
    free(t->bytes);
}

static void check_table(uint64_t n, size_t run)
{
    struct table t;
    build(&t, n, run);
    assert_int_equal(t.len, SK_KEYS_HEADER_BYTES + n * SK_KEYS_ENTRY_BYTES);
    struct shard_err err;
    assert_int_equal(sk_keys_check_header(read_table, &t, "index.keys", n, &err), SHARD_OK);
    assert_int_equal(sk_keys_check_header(read_table, &t, "index.keys", n + 1, &err),
                     SHARD_ECORRUPT);
    struct pair *want = malloc((n ? n : 1) * sizeof *want);
    assert_non_null(want);
    char key[64];
    for (uint64_t i = 0; i < n; i++) {
        key_of(i, key, sizeof key);
        want[i] = (struct pair){XXH3_64bits(key, strlen(key)), i};
    }
    qsort(want, n, sizeof *want, compare_pairs);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = t.bytes + SK_KEYS_HEADER_BYTES + i * SK_KEYS_ENTRY_BYTES;
        assert_true(le64(e) == want[i].hash);
        assert_true(le64(e + 8) == want[i].line);
    }
    free(want);
    destroy(&t);
}

static void test_a_table_in_memory_is_every_line_sorted(void **state)
{
    (void)state;
    check_table(1000, SK_KEYS_RUN);
    check_table(0, SK_KEYS_RUN);
}

static void test_a_table_of_many_spilled_runs_is_the_same(void **state)
{
    (void)state;
    check_table(10007, 100); /* 101 runs, the last one short */
    check_table(500, 1);     /* a run per line */
}

struct search {
    uint64_t lines[8];
    int count;
};

static int note(void *ctx, uint64_t line)
{
    struct search *s = ctx;
    if (s->count < 8)
        s->lines[s->count] = line;
    s->count++;
    return 0;
}

static void test_every_key_is_found_on_its_line_and_an_absent_one_nowhere(void **state)
{
    (void)state;
    struct table t;
    uint64_t n = 3001;
    build(&t, n, 64);
    struct shard_err err;
    char key[64];
    for (uint64_t i = 0; i < n; i++) {
        key_of(i, key, sizeof key);
        struct search s = {{0}, 0};
        assert_int_equal(sk_keys_find(read_table, &t, n, XXH3_64bits(key, strlen(key)), note, &s,
                                      &err),
                         SHARD_OK);
        assert_int_equal(s.count, 1);
        assert_true(s.lines[0] == i);
    }
    struct search s = {{0}, 0};
    assert_int_equal(sk_keys_find(read_table, &t, n, XXH3_64bits("nope", 4), note, &s, &err),
                     SHARD_OK);
    assert_int_equal(s.count, 0);
    /* a damaged header is no key table */
    t.bytes[3] ^= 1;
    assert_int_equal(sk_keys_check_header(read_table, &t, "index.keys", n, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "not a key table"));
    destroy(&t);
}

static void test_colliding_hashes_give_every_line_in_order(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_keys.XXXXXX";
    assert_non_null(mkdtemp(dir));
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    struct shard_err err;
    struct sk_keys_builder *b;
    assert_int_equal(sk_keys_builder_new(&b, fd, dir, "run", &err), SHARD_OK);
    sk_keys_builder_set_run(b, 3);
    uint64_t lines[] = {9, 2, 5, 7, 1};
    for (int i = 0; i < 5; i++) /* three share a hash */
        assert_int_equal(sk_keys_builder_add_hash(b, i < 3 ? 42 : 40 + i, lines[i], &err),
                         SHARD_OK);
    uint64_t bytes, h;
    assert_int_equal(sk_keys_builder_write(b, fd, dir, "t.keys", &bytes, &h, &err), SHARD_OK);
    sk_keys_builder_free(b);
    struct shard_buf buf = {0};
    assert_int_equal(sk_fs_read_file(fd, "t.keys", &buf, &err), SHARD_OK);
    struct table t = {.bytes = buf.data, .len = buf.len};
    struct search s = {{0}, 0};
    assert_int_equal(sk_keys_find(read_table, &t, 5, 42, note, &s, &err), SHARD_OK);
    assert_int_equal(s.count, 3);
    assert_true(s.lines[0] == 2 && s.lines[1] == 5 && s.lines[2] == 9);
    shard_buf_release(&buf);
    unlinkat(fd, "t.keys", 0);
    close(fd);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_table_in_memory_is_every_line_sorted),
        cmocka_unit_test(test_a_table_of_many_spilled_runs_is_the_same),
        cmocka_unit_test(test_every_key_is_found_on_its_line_and_an_absent_one_nowhere),
        cmocka_unit_test(test_colliding_hashes_give_every_line_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
