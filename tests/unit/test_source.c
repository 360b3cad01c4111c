/* test_source.c - scanning, reading, archives, labels and CPU counting
 * (shardkit/source.h), against real files made in a private temporary
 * directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "shardkit/source.h"
#include "source/source_internal.h"
#include "skip.h"

/* ---- helpers ------------------------------------------------------------ */

struct fixture {
    char dir[256]; /* the private temporary directory */
};

static int setup_tmpdir(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/shardkit-test-source-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR) {
        chmod(path, 0700);
        rmdir(path);
        return 0;
    }
    unlink(path);
    return 0;
}

static int teardown_tmpdir(void **state)
{
    struct fixture *f = *state;
    setlocale(LC_CTYPE, "C"); /* in case a locale test failed half-way */
    nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* dir/rel as a malloc'ed path. */
static char *join(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

static void make_dir(const char *dir, const char *rel)
{
    char *p = join(dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

static void write_file(const char *dir, const char *rel, const void *data, size_t len)
{
    char *p = join(dir, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    free(p);
}

static void make_symlink(const char *dir, const char *target, const char *rel)
{
    char *p = join(dir, rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

static void make_fifo(const char *dir, const char *rel)
{
    char *p = join(dir, rel);
    assert_int_equal(mkfifo(p, 0644), 0);
    free(p);
}

static int compare_strings(const void *a, const void *b)
{
    /* strcmp compares as unsigned char: the same order as memcmp. */
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sorted list must hold exactly `expected` (any order given). */
static void assert_keys(struct shard_keylist *l, const char **expected, size_t n)
{
    qsort(expected, n, sizeof *expected, compare_strings);
    shard_keylist_sort(l);
    assert_int_equal(l->count, n);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *k = shard_keylist_get(l, i, &len);
        assert_int_equal(len, strlen(expected[i]));
        assert_memory_equal(k, expected[i], len);
        assert_int_equal(k[len], '\0');
    }
}

/* Deterministic pseudo-random numbers (xorshift64*). */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* ---- candidates --------------------------------------------------------- */

static void test_candidate_extensions_are_case_insensitive(void **state)
{
    (void)state;
    const char *yes[] = {"a.jpg", "a.JPG",  "b.jpeg", "b.JPEG", "c.png",       "c.Png",    "d.webp",
                         "e.tif", "e.TIFF", "f.gif",  "g.bmp",  "dir.x/h.jpg", "x.tar.jpg"};
    const char *no[] = {"a.txt", "noext",     ".DS_Store", "a.jpg/b", "jpg",  "a.jpgx",
                        "a.",    "a.jpg.txt", "a.pn",      "",        "a.jpe"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(shard_is_candidate(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(shard_is_candidate(no[i], strlen(no[i])));
    /* Only `len` bytes count. */
    assert_false(shard_is_candidate("a.jpg", 4));
}

/* ---- key list ----------------------------------------------------------- */

static void test_keylist_sorts_in_byte_order_prefix_first(void **state)
{
    (void)state;
    struct shard_keylist l = {0};
    const char *keys[] = {"b",
                          "a/b",
                          "a",
                          "ab",
                          "a\xff",
                          "a/",
                          "abcdefgh",
                          "abcdefghi",
                          "abcdefg",
                          "abcdefgh/1",
                          "abcdefghabcdefgh",
                          "abcdefghabcdefg",
                          "\x01",
                          "Z",
                          "a",
                          "abcdefghabcdefgh"};
    size_t n = sizeof keys / sizeof *keys;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(shard_keylist_add(&l, keys[i], strlen(keys[i]), NULL), 0);
    const char *expected[sizeof keys / sizeof *keys];
    memcpy(expected, keys, sizeof keys);
    assert_keys(&l, expected, n);
    shard_keylist_release(&l);
    assert_null(l.arena);
    assert_int_equal(l.count, 0);
    shard_keylist_release(NULL);
}

static void test_keylist_refuses_a_key_with_nul(void **state)
{
    (void)state;
    struct shard_keylist l = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_keylist_add(&l, "a\0b.jpg", 7, &err), SHARD_EINVAL);
    assert_int_equal(l.count, 0);
    shard_keylist_release(&l);
}

/* Many keys sharing long prefixes (as image datasets have), duplicates, and
 * keys whose lengths straddle the 8-byte digits of the sort. */
static void test_keylist_sort_matches_a_reference_sort_on_many_keys(void **state)
{
    (void)state;
    enum { N = 200000 };
    struct shard_keylist l = {0};
    char **ref = malloc(N * sizeof *ref);
    assert_non_null(ref);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < N; i++) {
        char key[96];
        uint64_t r = next_random(&seed);
        int n;
        switch (r % 4) {
        case 0: /* ImageNet-like */
            n = snprintf(key, sizeof key, "n%08u/n%08u_%u.JPEG", (unsigned)(r >> 8) % 50,
                         (unsigned)(r >> 8) % 50, (unsigned)(r >> 20) % 5000);
            break;
        case 1: /* short, with high bytes */
            key[0] = (char)(0x80 | (r >> 8) % 3);
            key[1] = (char)('a' + (r >> 16) % 3);
            n = 1 + (int)((r >> 24) % 2);
            break;
        case 2: /* lengths 1..24 from a tiny alphabet: many prefixes of each other */
            n = (int)((r >> 8) % 24) + 1;
            for (int k = 0; k < n; k++)
                key[k] = (char)('a' + (r >> (16 + k % 40)) % 2);
            key[n] = '\0';
            break;
        default: /* long common prefix */
            n = snprintf(key, sizeof key, "same/long/prefix/for/everyone/%llu",
                         (unsigned long long)(r % 1000));
            break;
        }
        key[n] = '\0';
        assert_int_equal(shard_keylist_add(&l, key, (size_t)n, NULL), 0);
        ref[i] = strdup(key);
        assert_non_null(ref[i]);
    }
    qsort(ref, N, sizeof *ref, compare_strings);
    shard_keylist_sort(&l);
    assert_int_equal(l.count, N);
    for (size_t i = 0; i < N; i++) {
        size_t len;
        const char *k = shard_keylist_get(&l, i, &len);
        assert_int_equal(len, strlen(ref[i]));
        assert_memory_equal(k, ref[i], len);
        free(ref[i]);
    }
    free(ref);
    shard_keylist_release(&l);
}

/* Inputs that make naive quicksorts quadratic: sorted, reversed, all equal
 * (long keys, so the equal run descends many 8-byte levels). */
static void test_keylist_sort_handles_sorted_reversed_and_identical_input(void **state)
{
    (void)state;
    enum { N = 60000 };
    for (int pattern = 0; pattern < 3; pattern++) {
        struct shard_keylist l = {0};
        for (int i = 0; i < N; i++) {
            char key[160];
            int v = pattern == 0 ? i : pattern == 1 ? N - i : 7;
            int n = snprintf(key, sizeof key, "%0120d/%08d.jpg", 0, v);
            assert_int_equal(shard_keylist_add(&l, key, (size_t)n, NULL), 0);
        }
        shard_keylist_sort(&l);
        for (size_t i = 1; i < l.count; i++) {
            size_t la, lb;
            const char *a = shard_keylist_get(&l, i - 1, &la);
            const char *b = shard_keylist_get(&l, i, &lb);
            assert_int_equal(la, lb);
            assert_true(memcmp(a, b, la) <= 0);
        }
        shard_keylist_release(&l);
    }
}

/* ---- scanning ----------------------------------------------------------- */

/* The awkward tree: names that need no escaping anywhere but here. */
static const char *const tree_candidates[] = {
    "a/cat's photo.jpg",       "a/with space.JPG", "a/line\nbreak.Png",
    "a/bad\xff\xfe name.jpeg", "a/deep/er/x.JPEG", "a/deep/er/\"quoted\".tiff",
    "b/.hidden.png",           "top.gif",          "\xe6\x97\xa5\xe6\x9c\xac.webp",
};

static void build_tree(const char *root)
{
    make_dir(root, "a");
    make_dir(root, "a/deep");
    make_dir(root, "a/deep/er");
    make_dir(root, "b");
    make_dir(root, "c"); /* empty */
    for (size_t i = 0; i < sizeof tree_candidates / sizeof *tree_candidates; i++)
        write_file(root, tree_candidates[i], tree_candidates[i], strlen(tree_candidates[i]));
    write_file(root, "b/readme.txt", "x", 1);
    write_file(root, "b/noext", "x", 1);
    write_file(root, ".DS_Store", "x", 1);
    make_symlink(root, "top.gif", "link to file.jpg");
    make_symlink(root, "a", "link to dir");
    make_fifo(root, "pipe.jpg");
}

static void test_scan_keeps_names_byte_exact_and_counts_what_it_skips(void **state)
{
    struct fixture *f = *state;
    build_tree(f->dir);
    struct shard_keylist l = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(f->dir, &l, NULL, &st, &err), 0);
    const char *expected[sizeof tree_candidates / sizeof *tree_candidates];
    memcpy(expected, tree_candidates, sizeof expected);
    assert_keys(&l, expected, sizeof expected / sizeof *expected);
    assert_int_equal(st.candidates, sizeof expected / sizeof *expected);
    assert_int_equal(st.ignored, 3);          /* readme.txt, noext, .DS_Store */
    assert_int_equal(st.ignored_symlinks, 2); /* neither link is followed */
    assert_int_equal(st.ignored_special, 1);  /* the fifo, despite its .jpg */

    /* Stats accumulate and keys append across scans. */
    assert_int_equal(shard_scan_dir(f->dir, &l, NULL, &st, &err), 0);
    assert_int_equal(l.count, 2 * (sizeof expected / sizeof *expected));
    assert_int_equal(st.ignored_symlinks, 4);
    shard_keylist_release(&l);
}

/* With refusals, what is named like an image but is no regular file is a
 * candidate with a reason, not a count: the symbolic link "link to
 * file.jpg" and the fifo "pipe.jpg"; "link to dir" stays ignored. */
static void test_scan_refuses_links_and_special_files_named_like_images(void **state)
{
    struct fixture *f = *state;
    build_tree(f->dir);
    struct shard_keylist l = {0};
    struct shard_refusals refused = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(f->dir, &l, &refused, &st, &err), 0);
    size_t n = sizeof tree_candidates / sizeof *tree_candidates;
    const char *expected[sizeof tree_candidates / sizeof *tree_candidates + 2];
    memcpy(expected, tree_candidates, sizeof tree_candidates);
    expected[n] = "link to file.jpg";
    expected[n + 1] = "pipe.jpg";
    assert_keys(&l, expected, n + 2);
    assert_int_equal(st.candidates, n + 2);
    assert_int_equal(st.ignored, 3);
    assert_int_equal(st.ignored_symlinks, 1); /* "link to dir" */
    assert_int_equal(st.ignored_special, 0);
    assert_int_equal(refused.count, 2);
    assert_string_equal(shard_refusals_find(&refused, "link to file.jpg", 16),
                        "not a regular file: symbolic link (never followed)");
    assert_string_equal(shard_refusals_find(&refused, "pipe.jpg", 8), "not a regular file: fifo");
    assert_null(shard_refusals_find(&refused, "top.gif", 7));
    shard_refusals_release(&refused);
    shard_refusals_release(NULL);
    shard_keylist_release(&l);
}

static void test_scan_through_a_symlinked_root_is_allowed(void **state)
{
    struct fixture *f = *state;
    make_dir(f->dir, "real");
    write_file(f->dir, "real/x.jpg", "x", 1);
    make_symlink(f->dir, "real", "alias");
    char *alias = join(f->dir, "alias");
    struct shard_keylist l = {0};
    struct shard_scan_stats st = {0};
    assert_int_equal(shard_scan_dir(alias, &l, NULL, &st, NULL), 0);
    const char *expected[] = {"x.jpg"};
    assert_keys(&l, expected, 1);
    shard_keylist_release(&l);
    free(alias);
}

static void test_scan_of_missing_root_is_not_found(void **state)
{
    struct fixture *f = *state;
    char *missing = join(f->dir, "missing");
    struct shard_keylist l = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(missing, &l, NULL, &st, &err), SHARD_ENOTFOUND);
    assert_int_equal(err.code, SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, "does not exist"));
    free(missing);
}

static void test_scan_of_a_file_root_is_invalid(void **state)
{
    struct fixture *f = *state;
    write_file(f->dir, "file.jpg", "x", 1);
    char *file = join(f->dir, "file.jpg");
    struct shard_keylist l = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(file, &l, NULL, &st, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "not a directory"));
    free(file);
}

/* A directory that cannot be listed fails a scan without refusals, naming
 * it; with refusals it is a reject under its own key ("locked/") and the
 * walk goes on.  Root lists any directory, so as root the scans run with the
 * effective uid of nobody, from inside the fixture directory (whose parents
 * may be closed to nobody); tests/cli/test_sources.sh runs shardify as
 * nobody too. */
static void test_scan_of_unreadable_directory_fails_or_is_refused(void **state)
{
    struct fixture *f = *state;
    make_dir(f->dir, "ok");
    write_file(f->dir, "ok/a.jpg", "x", 1);
    make_dir(f->dir, "locked");
    char *locked = join(f->dir, "locked");
    assert_int_equal(chmod(locked, 0), 0);
    struct shard_keylist l = {0};
    struct shard_refusals refused = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0}, refusing_err = {0};
    const char *root = f->dir;
    int cwd = -1;
    if (geteuid() == 0) {
        cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(cwd >= 0);
        assert_int_equal(chmod(f->dir, 0755), 0);
        assert_int_equal(chdir(f->dir), 0);
        assert_int_equal(seteuid(65534), 0);
        root = ".";
    }
    /* no assertion until root is back */
    int rc = shard_scan_dir(root, &l, NULL, &st, &err);
    size_t count = l.count;
    int refusing_rc = shard_scan_dir(root, &l, &refused, &st, &refusing_err);
    if (cwd >= 0) {
        int back = seteuid(0) == 0 && fchdir(cwd) == 0;
        close(cwd);
        assert_true(back);
    }
    assert_int_equal(rc, SHARD_EIO);
    assert_non_null(strstr(err.msg, "'locked'"));
    assert_int_equal(count, 0);
    assert_int_equal(refusing_rc, 0);
    const char *expected[] = {"locked/", "ok/a.jpg"};
    assert_keys(&l, expected, 2);
    assert_string_equal(shard_refusals_find(&refused, "locked/", 7),
                        "cannot read directory: Permission denied");
    chmod(locked, 0700);
    free(locked);
    shard_refusals_release(&refused);
    shard_keylist_release(&l);
}

/* d/x.jpg, d/d/x.jpg, ... `levels` deep below dir. */
static void make_deep_tree(const char *dir, int levels)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < levels; i++) {
        assert_int_equal(mkdirat(fd, "d", 0755), 0);
        int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
        assert_true(sub >= 0);
        int out = openat(sub, "x.jpg", O_WRONLY | O_CREAT, 0644);
        assert_true(out >= 0);
        close(out);
        close(fd);
        fd = sub;
    }
    close(fd);
}

/* A tree deeper than the walk's descriptor budget is refused with a message
 * naming where, and the key list is left as it was. */
static void test_scan_of_too_deep_tree_fails_and_adds_no_keys(void **state)
{
    struct fixture *f = *state;
    write_file(f->dir, "first.jpg", "x", 1);
    make_deep_tree(f->dir, 200);
    struct shard_keylist l = {0};
    assert_int_equal(shard_keylist_add(&l, "kept", 4, NULL), 0);
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(f->dir, &l, NULL, &st, &err), SHARD_ELIMIT);
    assert_non_null(strstr(err.msg, "d/d/d/"));
    assert_non_null(strstr(err.msg, "levels deep"));
    assert_int_equal(l.count, 1);
    assert_int_equal(l.arena_len, 5);
    shard_keylist_release(&l);
}

/* With refusals, the directory past the walk's depth is a reject under its
 * key; everything above it is listed. */
static void test_scan_refuses_the_directory_too_deep_and_keeps_the_rest(void **state)
{
    struct fixture *f = *state;
    make_deep_tree(f->dir, 200);
    struct shard_keylist l = {0};
    struct shard_refusals refused = {0};
    struct shard_scan_stats st = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_scan_dir(f->dir, &l, &refused, &st, &err), 0);
    assert_int_equal(refused.count, 1);
    const struct shard_refusal *r = &refused.items[0];
    assert_int_equal(r->key_len, 2 * 128); /* "d/" 128 times: the 128th level */
    assert_string_equal(r->reason,
                        "cannot read directory: directories nested more than 127 levels deep");
    assert_int_equal(l.count, 127 + 1); /* an x.jpg on each level read, and the refusal */
    assert_int_equal(st.candidates, l.count);
    shard_refusals_release(&refused);
    shard_keylist_release(&l);
}

static void test_path_is_file_only_for_regular_files(void **state)
{
    struct fixture *f = *state;
    write_file(f->dir, "f.tar", "x", 1);
    char *file = join(f->dir, "f.tar");
    char *missing = join(f->dir, "missing");
    assert_true(shard_path_is_file(file));
    assert_false(shard_path_is_file(f->dir));
    assert_false(shard_path_is_file(missing));
    free(file);
    free(missing);
}

/* ---- reading files ------------------------------------------------------ */

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static void test_read_file_returns_the_exact_bytes(void **state)
{
    struct fixture *f = *state;
    build_tree(f->dir);
    int root = open_dir(f->dir);
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    for (size_t i = 0; i < sizeof tree_candidates / sizeof *tree_candidates; i++) {
        const char *k = tree_candidates[i];
        assert_int_equal(shard_read_source_file(root, k, 1000, &buf, &err), 0);
        assert_int_equal(buf.len, strlen(k));
        assert_memory_equal(buf.data, k, buf.len);
    }
    /* An empty file is read as zero bytes, not an error. */
    write_file(f->dir, "empty.jpg", "", 0);
    assert_int_equal(shard_read_source_file(root, "empty.jpg", 1000, &buf, &err), 0);
    assert_int_equal(buf.len, 0);
    shard_buf_release(&buf);
    close(root);
}

static void test_read_file_over_the_limit_is_refused_before_reading(void **state)
{
    struct fixture *f = *state;
    char data[100] = {0};
    write_file(f->dir, "big.jpg", data, sizeof data);
    int root = open_dir(f->dir);
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_read_source_file(root, "big.jpg", 99, &buf, &err), SHARD_ELIMIT);
    assert_non_null(strstr(err.msg, "file of 100 bytes exceeds the limit of 99"));
    assert_int_equal(buf.len, 0);
    /* The limit is inclusive, and 0 means no limit. */
    assert_int_equal(shard_read_source_file(root, "big.jpg", 100, &buf, &err), 0);
    assert_int_equal(shard_read_source_file(root, "big.jpg", 0, &buf, &err), 0);
    assert_int_equal(buf.len, 100);
    shard_buf_release(&buf);
    close(root);
}

static void test_read_file_that_vanished_is_not_found(void **state)
{
    struct fixture *f = *state;
    int root = open_dir(f->dir);
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_read_source_file(root, "gone.jpg", 0, &buf, &err), SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, "file vanished"));
    shard_buf_release(&buf);
    close(root);
}

static void test_read_file_refuses_symlinks_fifos_and_directories(void **state)
{
    struct fixture *f = *state;
    write_file(f->dir, "real.jpg", "x", 1);
    make_symlink(f->dir, "real.jpg", "link.jpg");
    make_fifo(f->dir, "pipe.jpg"); /* must not block the open */
    make_dir(f->dir, "dir.jpg");
    int root = open_dir(f->dir);
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_read_source_file(root, "link.jpg", 0, &buf, &err), SHARD_EIO);
    assert_string_equal(err.msg, "refusing to follow a symbolic link");
    assert_int_equal(shard_read_source_file(root, "pipe.jpg", 0, &buf, &err), SHARD_EIO);
    assert_string_equal(err.msg, "not a regular file");
    assert_int_equal(shard_read_source_file(root, "dir.jpg", 0, &buf, &err), SHARD_EIO);
    assert_int_equal(buf.len, 0);
    shard_buf_release(&buf);
    close(root);
}

/* Files whose size changes between fstat and read are hard to make on
 * purpose, but the kernel has some that always do: /proc files claim 0
 * bytes and hold more (growth); sysfs attributes claim a page and hold a
 * few bytes (shrinkage). */
static void test_read_file_that_grows_while_read_is_refused(void **state)
{
    (void)state;
    int root = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        skip_because("no /proc/self");
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_read_source_file(root, "status", 0, &buf, &err), SHARD_EIO);
    assert_non_null(strstr(err.msg, "file changed while being read"));
    assert_int_equal(buf.len, 0);
    shard_buf_release(&buf);
    close(root);
}

static void test_read_file_that_shrinks_while_read_is_refused(void **state)
{
    (void)state;
    int root = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        skip_because("no /sys/devices/system/cpu");
    struct stat sb;
    if (fstatat(root, "online", &sb, 0) != 0 || sb.st_size == 0) {
        close(root);
        skip_because("/sys/devices/system/cpu/online is not a sysfs file of size > 0 here");
    }
    struct shard_buf buf = {0};
    struct shard_err err = {0};
    assert_int_equal(shard_read_source_file(root, "online", 0, &buf, &err), SHARD_EIO);
    assert_non_null(strstr(err.msg, "file changed while being read"));
    assert_non_null(strstr(err.msg, "bytes expected"));
    shard_buf_release(&buf);
    close(root);
}

/* ---- archives ----------------------------------------------------------- */

enum archive_kind { KIND_TAR, KIND_TAR_GZ, KIND_TAR_ZST, KIND_ZIP };

#define BIG_ENTRY_BYTES 200000
#define ENTRY_LIMIT 150000
#define BINARY_ENTRY_BYTES 100000

static void add_entry(struct archive *w, const char *name, unsigned type, const void *data,
                      size_t len, const char *link)
{
    struct archive_entry *e = archive_entry_new();
    assert_non_null(e);
    archive_entry_copy_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    if (type == AE_IFLNK)
        archive_entry_copy_symlink(e, link);
    else if (link)
        archive_entry_copy_hardlink(e, link);
    archive_entry_set_size(e, type == AE_IFREG && !link ? (la_int64_t)len : 0);
    assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
    if (len)
        assert_int_equal(archive_write_data(w, data, len), (la_ssize_t)len);
    archive_entry_free(e);
}

static uint8_t *pattern_bytes(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)next_random(&seed);
    return p;
}

/* Write the test archive; returns 0, or -1 when this libarchive cannot
 * write the kind (the test is then skipped). */
static int write_archive(const char *path, enum archive_kind kind)
{
    struct archive *w = archive_write_new();
    assert_non_null(w);
    int r = ARCHIVE_OK;
    if (kind == KIND_ZIP)
        r = archive_write_set_format_zip(w);
    else
        r = archive_write_set_format_pax_restricted(w);
    if (r == ARCHIVE_OK && kind == KIND_TAR_GZ)
        r = archive_write_add_filter_gzip(w);
    if (r == ARCHIVE_OK && kind == KIND_TAR_ZST)
        r = archive_write_add_filter_zstd(w);
    if (r != ARCHIVE_OK) {
        archive_write_free(w);
        return -1;
    }
    assert_int_equal(archive_write_open_filename(w, path), ARCHIVE_OK);
    uint8_t *binary = pattern_bytes(BINARY_ENTRY_BYTES, 1);
    uint8_t *big = pattern_bytes(BIG_ENTRY_BYTES, 2);
    add_entry(w, "./a/one.jpg", AE_IFREG, "ONE", 3, NULL);
    add_entry(w, "a/", AE_IFDIR, NULL, 0, NULL);
    add_entry(w, "a/two.PNG", AE_IFREG, binary, BINARY_ENTRY_BYTES, NULL);
    add_entry(w, "notes.txt", AE_IFREG, "notes", 5, NULL);
    add_entry(w, "link.jpg", AE_IFLNK, NULL, 0, "a/one.jpg");
    add_entry(w, "../evil.jpg", AE_IFREG, "EVIL", 4, NULL);
    add_entry(w, "a/../sneaky.jpg", AE_IFREG, "SNEAKY", 6, NULL);
    add_entry(w, "/abs/three.gif", AE_IFREG, "THREE", 5, NULL);
    add_entry(w, "a//./four.bmp", AE_IFREG, "FOUR", 4, NULL);
    add_entry(w, "it's a \"name\", with, commas.jpg", AE_IFREG, "FIVE", 4, NULL);
    add_entry(w, "big.jpg", AE_IFREG, big, BIG_ENTRY_BYTES, NULL);
    add_entry(w, "empty.jpg", AE_IFREG, NULL, 0, NULL);
    if (kind != KIND_ZIP) /* zip has no hard links */
        add_entry(w, "a/hard.jpg", AE_IFREG, NULL, 0, "a/one.jpg");
    assert_int_equal(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);
    free(binary);
    free(big);
    return 0;
}

/* Every entry named like an image is produced: with its bytes, or with
 * the problem that makes it a reject, or (a hard link) with the name of
 * the entry whose bytes it has.  Only the others are counted. */
static void check_archive(const char *dir, enum archive_kind kind, const char *name)
{
    char *path = join(dir, name);
    if (write_archive(path, kind) != 0) {
        free(path);
        skip_because("libarchive cannot write this kind of archive here");
    }
    struct sk_archive *a = NULL;
    struct shard_err err = {0};
    assert_int_equal(sk_archive_open(&a, path, &err), 0);
    struct {
        const char *key;
        const void *data;
        size_t len;
        uint64_t too_large;
        const char *problem;
        const char *link;
        uint64_t ordinal;
    } expected[] = {
        {"a/one.jpg", "ONE", 3, 0, NULL, NULL, 0},
        {"a/two.PNG", NULL, BINARY_ENTRY_BYTES, 0, NULL, NULL, 2},
        {"link.jpg", NULL, 0, 0, "not a regular file: symbolic link (never followed)", NULL, 4},
        {"../evil.jpg", NULL, 0, 0, "unsafe name in archive: '..' component", NULL, 5},
        {"a/../sneaky.jpg", NULL, 0, 0, "unsafe name in archive: '..' component", NULL, 6},
        {"/abs/three.gif", NULL, 0, 0, "unsafe name in archive: absolute path", NULL, 7},
        {"a/four.bmp", "FOUR", 4, 0, NULL, NULL, 8},
        {"it's a \"name\", with, commas.jpg", "FIVE", 4, 0, NULL, NULL, 9},
        {"big.jpg", NULL, 0, BIG_ENTRY_BYTES, NULL, NULL, 10},
        {"empty.jpg", "", 0, 0, NULL, NULL, 11},
        {"a/hard.jpg", NULL, 0, 0, NULL, "a/one.jpg", 12},
    };
    size_t want = sizeof expected / sizeof *expected - (kind == KIND_ZIP); /* zip: no link */
    uint8_t *binary = pattern_bytes(BINARY_ENTRY_BYTES, 1);
    expected[1].data = binary;
    struct shard_scan_stats st = {0};
    struct shard_buf buf = {0};
    size_t n = 0;
    for (;;) {
        const char *key;
        size_t key_len;
        uint64_t too_large = 12345;
        int r = sk_archive_next(a, ENTRY_LIMIT, &key, &key_len, &buf, &too_large, &st, &err);
        assert_true(r >= 0);
        if (r == 0)
            break;
        assert_true(n < want);
        assert_int_equal(key_len, strlen(expected[n].key));
        assert_memory_equal(key, expected[n].key, key_len);
        assert_int_equal(key[key_len], '\0');
        assert_int_equal(too_large, expected[n].too_large);
        assert_int_equal(buf.len, expected[n].len);
        if (buf.len)
            assert_memory_equal(buf.data, expected[n].data, buf.len);
        if (expected[n].problem)
            assert_string_equal(sk_archive_problem(a), expected[n].problem);
        else
            assert_null(sk_archive_problem(a));
        size_t link_len;
        int link_only = -1;
        const char *link = sk_archive_link(a, &link_len, &link_only);
        if (expected[n].link) {
            assert_string_equal(link, expected[n].link);
            assert_int_equal(link_len, strlen(expected[n].link));
            assert_int_equal(link_only, 1);
        } else {
            assert_null(link);
            assert_int_equal(link_only, 0);
        }
        assert_int_equal(sk_archive_ordinal(a), expected[n].ordinal);
        n++;
    }
    assert_int_equal(n, want);
    assert_int_equal(st.candidates, n);
    assert_int_equal(st.ignored, 1); /* notes.txt */
    assert_int_equal(st.ignored_symlinks, 0);
    assert_int_equal(st.ignored_special, 0);
    const char *key;
    size_t key_len;
    uint64_t too_large;
    assert_int_equal(sk_archive_next(a, ENTRY_LIMIT, &key, &key_len, &buf, &too_large, &st, &err),
                     0); /* the end stays the end */
    sk_archive_close(a);
    shard_buf_release(&buf);
    free(binary);
    free(path);
}

static void test_archive_tar_gives_normalised_candidates_with_bytes(void **state)
{
    check_archive(((struct fixture *)*state)->dir, KIND_TAR, "t.tar");
}

static void test_archive_tar_gz_gives_normalised_candidates_with_bytes(void **state)
{
    check_archive(((struct fixture *)*state)->dir, KIND_TAR_GZ, "t.tar.gz");
}

static void test_archive_tar_zst_gives_normalised_candidates_with_bytes(void **state)
{
    check_archive(((struct fixture *)*state)->dir, KIND_TAR_ZST, "t.tar.zst");
}

static void test_archive_zip_gives_normalised_candidates_with_bytes(void **state)
{
    check_archive(((struct fixture *)*state)->dir, KIND_ZIP, "t.zip");
}

static void test_archive_keeps_non_utf8_names_byte_exact(void **state)
{
    struct fixture *f = *state;
    char *path = join(f->dir, "raw.tar");
    struct archive *w = archive_write_new();
    assert_int_equal(archive_write_set_format_ustar(w), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(w, path), ARCHIVE_OK);
    const char *name = "bad\xff\xfe name\n.jpg";
    add_entry(w, name, AE_IFREG, "X", 1, NULL);
    assert_int_equal(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);

    struct sk_archive *a = NULL;
    assert_int_equal(sk_archive_open(&a, path, NULL), 0);
    struct shard_scan_stats st = {0};
    struct shard_buf buf = {0};
    const char *key;
    size_t key_len;
    uint64_t too_large;
    assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, NULL), 1);
    assert_int_equal(key_len, strlen(name));
    assert_memory_equal(key, name, key_len);
    sk_archive_close(a);
    shard_buf_release(&buf);
    free(path);
}

/* Zip names flagged as UTF-8 are converted by libarchive to the thread's
 * locale; in the default C locale a non-ASCII name would be lost.  A name
 * flagged as UTF-8 that is not valid UTF-8 cannot be given byte-exact and
 * is counted, not produced. */
static void test_archive_zip_utf8_names_are_byte_exact_in_any_locale(void **state)
{
    struct fixture *f = *state;
    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        skip_because("no C.UTF-8 locale");
    char *path = join(f->dir, "utf8.zip");
    struct archive *w = archive_write_new(); /* flags names UTF-8 in this locale */
    assert_int_equal(archive_write_set_format_zip(w), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(w, path), ARCHIVE_OK);
    const char *good = "caf\xc3\xa9/\xe6\x97\xa5.jpg";
    add_entry(w, good, AE_IFREG, "X", 1, NULL);
    add_entry(w, "bad\xff.jpg", AE_IFREG, "Y", 1, NULL);
    assert_int_equal(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);

    const char *locales[] = {"C", "C.UTF-8"};
    for (size_t i = 0; i < 2; i++) {
        assert_non_null(setlocale(LC_CTYPE, locales[i]));
        struct sk_archive *a = NULL;
        assert_int_equal(sk_archive_open(&a, path, NULL), 0);
        struct shard_scan_stats st = {0};
        struct shard_buf buf = {0};
        const char *key;
        size_t key_len;
        uint64_t too_large;
        assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, NULL), 1);
        assert_int_equal(key_len, strlen(good));
        assert_memory_equal(key, good, key_len);
        assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, NULL), 0);
        assert_int_equal(st.ignored_special, 1);
        sk_archive_close(a);
        shard_buf_release(&buf);
    }
    setlocale(LC_CTYPE, "C");
    free(path);
}

/* An encrypted entry is produced without bytes, with a reason, and the
 * entries after it are still read: one locked file must not stop a run.
 * (libarchive cannot mix encrypted and plain members in one written zip, so
 * every member here is encrypted.) */
static void test_archive_encrypted_entry_is_produced_with_a_problem(void **state)
{
    struct fixture *f = *state;
    char *plain = join(f->dir, "mixed.zip");
    struct archive *w = archive_write_new();
    assert_int_equal(archive_write_set_format_zip(w), ARCHIVE_OK);
    if (archive_write_set_options(w, "zip:encryption=zipcrypt") != ARCHIVE_OK ||
        archive_write_set_passphrase(w, "secret") != ARCHIVE_OK) {
        archive_write_free(w);
        free(plain);
        skip_because("libarchive built without zip encryption");
    }
    assert_int_equal(archive_write_open_filename(w, plain), ARCHIVE_OK);
    add_entry(w, "a/secret.jpg", AE_IFREG, "hidden", 6, NULL);
    add_entry(w, "b/notes.txt", AE_IFREG, "text", 4, NULL);
    add_entry(w, "b/also.jpg", AE_IFREG, "visible", 7, NULL);
    assert_int_equal(archive_write_close(w), ARCHIVE_OK);
    archive_write_free(w);

    struct sk_archive *a = NULL;
    struct shard_err err = {0};
    assert_int_equal(sk_archive_open(&a, plain, &err), 0);
    struct shard_scan_stats st = {0};
    struct shard_buf buf = {0};
    const char *key;
    size_t key_len;
    uint64_t too_large;
    assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, &err), 1);
    assert_string_equal(key, "a/secret.jpg");
    assert_int_equal(buf.len, 0);
    assert_non_null(sk_archive_problem(a));
    assert_non_null(strstr(sk_archive_problem(a), "encrypted"));
    assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, &err), 1);
    assert_string_equal(key, "b/also.jpg");
    assert_non_null(sk_archive_problem(a));
    assert_int_equal(buf.len, 0);
    assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, &err), 0);
    assert_int_equal(st.candidates, 2);
    assert_int_equal(st.ignored, 1);
    sk_archive_close(a);
    shard_buf_release(&buf);
    free(plain);
}

static void test_archive_truncated_tar_gz_is_corrupt(void **state)
{
    struct fixture *f = *state;
    char *path = join(f->dir, "cut.tar.gz");
    assert_int_equal(write_archive(path, KIND_TAR_GZ), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    /* Cut inside a.two.PNG's incompressible data. */
    assert_int_equal(truncate(path, sb.st_size / 4), 0);

    struct sk_archive *a = NULL;
    struct shard_err err = {0};
    assert_int_equal(sk_archive_open(&a, path, &err), 0);
    struct shard_scan_stats st = {0};
    struct shard_buf buf = {0};
    const char *key;
    size_t key_len;
    uint64_t too_large;
    int r;
    while ((r = sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, &err)) == 1)
        ;
    assert_int_equal(r, SHARD_ECORRUPT);
    assert_int_equal(err.code, SHARD_ECORRUPT);
    /* The caller names the archive; the message names where it broke. */
    assert_non_null(strstr(err.msg, "entry 'a/two.PNG'"));
    assert_int_equal(buf.len, 0);
    /* After a fatal error the reader keeps saying so. */
    assert_int_equal(sk_archive_next(a, 0, &key, &key_len, &buf, &too_large, &st, &err),
                     SHARD_ECORRUPT);
    sk_archive_close(a);
    shard_buf_release(&buf);
    free(path);
}

static void test_archive_open_refuses_what_is_not_an_archive(void **state)
{
    struct fixture *f = *state;
    char text[2048];
    memset(text, 'x', sizeof text);
    write_file(f->dir, "plain.txt", text, sizeof text);
    char *path = join(f->dir, "plain.txt");
    struct sk_archive *a = (struct sk_archive *)&a; /* must be reset to NULL */
    struct shard_err err = {0};
    assert_int_equal(sk_archive_open(&a, path, &err), SHARD_EINVAL);
    assert_null(a);
    assert_non_null(strstr(err.msg, "plain.txt"));
    free(path);

    char *missing = join(f->dir, "missing.tar");
    assert_int_equal(sk_archive_open(&a, missing, &err), SHARD_ENOTFOUND);
    free(missing);
    sk_archive_close(NULL);
}

/* An mtree listing holds no file data (libarchive would read it from this
 * machine's files with its "checkfs" option); it is not an archive to us. */
static void test_archive_mtree_listing_is_not_an_archive(void **state)
{
    struct fixture *f = *state;
    write_file(f->dir, "secret.jpg", "SECRET", 6);
    const char *listing = "#mtree\n./secret.jpg type=file size=6\n";
    write_file(f->dir, "list.mtree", listing, strlen(listing));
    char *path = join(f->dir, "list.mtree");
    struct sk_archive *a = NULL;
    struct shard_err err = {0};
    assert_int_equal(sk_archive_open(&a, path, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "Unrecognized archive format"));
    free(path);
}

/* An empty file, and a file of only zero bytes (which libarchive reads as an
 * empty tar), are no archive: an error, not an empty dataset. */
static void test_archive_empty_or_zero_filled_file_is_refused(void **state)
{
    struct fixture *f = *state;
    static const char zeros[10240];
    write_file(f->dir, "empty.tar", "", 0);
    write_file(f->dir, "zeros.tar", zeros, sizeof zeros);
    const char *names[] = {"empty.tar", "zeros.tar"};
    const char *says[] = {"is an empty file", "holds no archive entries"};
    for (size_t i = 0; i < 2; i++) {
        char *path = join(f->dir, names[i]);
        struct sk_archive *a = (struct sk_archive *)&a;
        struct shard_err err = {0};
        assert_int_equal(sk_archive_open(&a, path, &err), SHARD_EINVAL);
        assert_null(a);
        assert_non_null(strstr(err.msg, names[i]));
        assert_non_null(strstr(err.msg, says[i]));
        free(path);
    }
}

/* ---- labels ------------------------------------------------------------- */

static void assert_label(const struct shard_labeler *lb, const char *key, const char *want)
{
    const char *name = NULL;
    size_t len = 0;
    int r = shard_labeler_label(lb, key, strlen(key), &name, &len);
    if (!want) {
        assert_int_equal(r, 0);
        return;
    }
    assert_int_equal(r, 1);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(name, want, len);
}

static void test_labels_dir_uses_the_first_component(void **state)
{
    (void)state;
    struct shard_labeler *lb = NULL;
    assert_int_equal(shard_labeler_new(&lb, "dir", NULL), 0);
    assert_label(lb, "cat/1.jpg", "cat");
    assert_label(lb, "n01440764/sub/x.JPEG", "n01440764");
    assert_label(lb, "loose.jpg", NULL);
    assert_string_equal(shard_labeler_describe(lb), "dir");
    shard_labeler_free(lb);
}

static void test_labels_none_labels_nothing(void **state)
{
    (void)state;
    struct shard_labeler *lb = NULL;
    assert_int_equal(shard_labeler_new(&lb, "none", NULL), 0);
    assert_label(lb, "cat/1.jpg", NULL);
    assert_string_equal(shard_labeler_describe(lb), "none");
    shard_labeler_free(lb);
    shard_labeler_free(NULL);
}

static void test_labels_regex_takes_the_first_group(void **state)
{
    (void)state;
    struct shard_labeler *lb = NULL;
    assert_int_equal(shard_labeler_new(&lb, "regex:([a-z]+)_[0-9]+\\.jpg$", NULL), 0);
    assert_label(lb, "pets/dog_12.jpg", "dog");
    assert_label(lb, "pets/Dog.jpg", NULL);
    assert_string_equal(shard_labeler_describe(lb), "regex:([a-z]+)_[0-9]+\\.jpg$");
    /* Only key_len bytes are the key: "dog_12.jpgXYZ" cut before XYZ matches. */
    const char *name;
    size_t len;
    assert_int_equal(shard_labeler_label(lb, "dog_12.jpgXYZ", 10, &name, &len), 1);
    assert_int_equal(len, 3);
    assert_int_equal(shard_labeler_label(lb, "dog_12.jpg", 6, &name, &len), 0);
    shard_labeler_free(lb);

    /* An empty group is no label. */
    assert_int_equal(shard_labeler_new(&lb, "regex:^(x*)a", NULL), 0);
    assert_label(lb, "a.jpg", NULL);
    assert_label(lb, "xxa.jpg", "xx");
    shard_labeler_free(lb);
}

static void test_labels_bad_regex_is_invalid(void **state)
{
    (void)state;
    struct shard_labeler *lb = (struct shard_labeler *)&lb;
    struct shard_err err = {0};
    assert_int_equal(shard_labeler_new(&lb, "regex:([a-z", &err), SHARD_EINVAL);
    assert_null(lb);
    assert_non_null(strstr(err.msg, "bad label regex"));
    assert_int_equal(shard_labeler_new(&lb, "regex:[a-z]+", &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "capture group"));
}

static char *write_labels(const char *dir, const char *name, const char *text)
{
    write_file(dir, name, text, strlen(text));
    return join(dir, name);
}

/* The rows that name no key are counted (a header other than "key,label"
 * is such a row); other kinds of labeler have no rows. */
static void test_labels_csv_counts_rows_that_name_no_key(void **state)
{
    struct fixture *f = *state;
    char *path = write_labels(f->dir, "labels.csv",
                              "file,class\n"
                              "a/1.jpg,cat\n"
                              "a/2.jpg,cat\n"
                              "gone.jpg,dog\n");
    struct shard_labeler *lb = NULL;
    assert_int_equal(shard_labeler_new(&lb, path, NULL), 0);
    assert_int_equal(shard_labeler_rows(lb), 4);
    struct shard_keylist keys = {0};
    const char *present[] = {"a/2.jpg", "a/1.jpg", "a/1.jpg", "b/unlisted.jpg"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(shard_keylist_add(&keys, present[i], strlen(present[i]), NULL), 0);
    uint64_t unmatched = 99;
    assert_int_equal(shard_labeler_unmatched_rows(lb, &keys, &unmatched, NULL), 0);
    assert_int_equal(unmatched, 2); /* "file,class" and gone.jpg */
    shard_labeler_free(lb);

    assert_int_equal(shard_labeler_new(&lb, "regex:^(x)", NULL), 0);
    assert_int_equal(shard_labeler_rows(lb), 0);
    assert_int_equal(shard_labeler_unmatched_rows(lb, &keys, &unmatched, NULL), 0);
    assert_int_equal(unmatched, 0);
    shard_labeler_free(lb);
    shard_keylist_release(&keys);
    free(path);
}

static void test_labels_csv_with_header_quotes_and_crlf(void **state)
{
    struct fixture *f = *state;
    const char *text = "key,label\r\n"
                       "a/1.jpg,cat\r\n"
                       "\"b,with,commas.jpg\",dog\r\n"
                       "\"quote \"\"q\"\".jpg\",\"golden retriever\"\n"
                       " leading space.jpg,bird\n"
                       "\"new\nline.jpg\",fish\n"
                       "\n"
                       "last.jpg,cow"; /* no final newline */
    char *path = write_labels(f->dir, "labels.csv", text);
    struct shard_labeler *lb = NULL;
    struct shard_err err = {0};
    assert_int_equal(shard_labeler_new(&lb, path, &err), 0);
    assert_label(lb, "a/1.jpg", "cat");
    assert_label(lb, "b,with,commas.jpg", "dog");
    assert_label(lb, "quote \"q\".jpg", "golden retriever");
    assert_label(lb, " leading space.jpg", "bird");
    assert_label(lb, "leading space.jpg", NULL);
    assert_label(lb, "new\nline.jpg", "fish");
    assert_label(lb, "last.jpg", "cow");
    assert_label(lb, "key", NULL); /* the header is not a row */
    assert_label(lb, "a/1.jp", NULL);
    assert_label(lb, "a/1.jpgx", NULL);

    char want[128];
    snprintf(want, sizeof want, "file:labels.csv:%016llx",
             (unsigned long long)XXH3_64bits(text, strlen(text)));
    assert_string_equal(shard_labeler_describe(lb), want);
    assert_null(strchr(shard_labeler_describe(lb), '/'));
    shard_labeler_free(lb);
    free(path);
}

static void test_labels_csv_without_header_finds_many_keys(void **state)
{
    struct fixture *f = *state;
    enum { ROWS = 5000 };
    struct shard_buf text = {0};
    for (int i = ROWS; i-- > 0;) {
        char row[64];
        int n = snprintf(row, sizeof row, "c%d/img%d.jpg,class%d\n", i % 7, i, i % 7);
        assert_int_equal(shard_buf_append(&text, row, (size_t)n, NULL), 0);
    }
    assert_int_equal(shard_buf_append(&text, "", 1, NULL), 0);
    char *path = write_labels(f->dir, "many.csv", (const char *)text.data);
    struct shard_labeler *lb = NULL;
    assert_int_equal(shard_labeler_new(&lb, path, NULL), 0);
    for (int i = 0; i < ROWS; i++) {
        char key[64], want[32];
        snprintf(key, sizeof key, "c%d/img%d.jpg", i % 7, i);
        snprintf(want, sizeof want, "class%d", i % 7);
        assert_label(lb, key, want);
    }
    assert_label(lb, "c0/img5000.jpg", NULL);
    shard_labeler_free(lb);
    shard_buf_release(&text);
    free(path);
}

static void test_labels_csv_duplicate_key_names_it_and_its_lines(void **state)
{
    struct fixture *f = *state;
    char *path = write_labels(f->dir, "dup.csv", "a.jpg,x\nb.jpg,y\n\"a.jpg\",z\n");
    struct shard_labeler *lb = NULL;
    struct shard_err err = {0};
    assert_int_equal(shard_labeler_new(&lb, path, &err), SHARD_EINVAL);
    assert_null(lb);
    assert_non_null(strstr(err.msg, "'a.jpg' is listed twice"));
    assert_non_null(strstr(err.msg, "lines 1 and 3"));
    free(path);
}

static void test_labels_csv_bad_rows_are_invalid_with_their_line(void **state)
{
    struct fixture *f = *state;
    struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"a.jpg,x\nb.jpg,y,z\n", "line 2: expected 2 fields"},
        {"a.jpg,x\nlonely.jpg\n", "line 2: expected 2 fields (key,label), found 1"},
        {"a.jpg,x\n,y\n", "line 2: empty key"},
        {"a.jpg,\n", "line 1: empty label"},
        {"a.jpg, cat\n", "line 1: label ' cat' starts or ends with white space"},
        {"a.jpg,x\n\"unterminated.jpg,y\n", "line 2"},
        {"a.jpg,x\nb\"c.jpg,y\n", "line 2"},
        {"\"two\nlines.jpg\",x\n\"two\nlines.jpg\",y\n", "lines 1 and 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *path = write_labels(f->dir, "bad.csv", cases[i].text);
        struct shard_labeler *lb = NULL;
        struct shard_err err = {0};
        assert_int_equal(shard_labeler_new(&lb, path, &err), SHARD_EINVAL);
        assert_null(lb);
        if (!strstr(err.msg, cases[i].message))
            fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].message);
        free(path);
    }
}

static void test_labels_csv_missing_file_is_not_found(void **state)
{
    struct fixture *f = *state;
    char *path = join(f->dir, "nope.csv");
    struct shard_labeler *lb = NULL;
    struct shard_err err = {0};
    assert_int_equal(shard_labeler_new(&lb, path, &err), SHARD_ENOTFOUND);
    assert_non_null(strstr(err.msg, "nope.csv"));
    /* what is not a regular file is refused as every file shardkit reads is */
    assert_int_equal(shard_labeler_new(&lb, f->dir, &err), SHARD_EIO);
    assert_non_null(strstr(err.msg, "not a regular file: directory"));
    assert_null(lb);
    free(path);
}

/* ---- CPUs --------------------------------------------------------------- */

static void test_available_cpus_within_machine_and_obeys_omp_num_threads(void **state)
{
    (void)state;
    char *saved = getenv("OMP_NUM_THREADS") ? strdup(getenv("OMP_NUM_THREADS")) : NULL;
    unsetenv("OMP_NUM_THREADS");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = shard_available_cpus();
    assert_true(n >= 1);
    assert_true(n <= online);

    setenv("OMP_NUM_THREADS", "1", 1);
    assert_int_equal(shard_available_cpus(), 1);
    setenv("OMP_NUM_THREADS", "1,4", 1); /* a nesting list: the outer level counts */
    assert_int_equal(shard_available_cpus(), 1);
    setenv("OMP_NUM_THREADS", "100000", 1); /* more than we have changes nothing */
    assert_int_equal(shard_available_cpus(), n);
    const char *garbage[] = {"", "abc", "0", "-2", "3x", "99999999999999999999999", " "};
    for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++) {
        setenv("OMP_NUM_THREADS", garbage[i], 1);
        assert_int_equal(shard_available_cpus(), n);
    }
    if (saved) {
        setenv("OMP_NUM_THREADS", saved, 1);
        free(saved);
    } else {
        unsetenv("OMP_NUM_THREADS");
    }
}

/* ---- read-ahead (source/prefetch.c) ------------------------------------- */

#define AHEAD_FILES 40
#define AHEAD_KEYS (AHEAD_FILES + 1) /* and one key whose file is gone */
#define AHEAD_TAKERS 3

/* Candidates the scan refused: never opened, handed over empty. */
static int refused(void *user, uint64_t cand)
{
    (void)user;
    return cand % 7 == 3;
}

struct ahead_taker {
    struct sk_prefetch *pf;
    const struct shard_keylist *keys;
    const uint64_t *order;
    uint64_t first, end;
    int index;
    enum sk_prefetch_mode mode;
    uint64_t checked;
    char wrong[SHARD_ERRMSG_SIZE + 64]; /* what went wrong (threads cannot assert) */
};

/* Take positions index, index + AHEAD_TAKERS, ... of [first, end) as the
 * conversion's workers do, and check each is its own file's bytes (every
 * file holds its key). */
static void *ahead_take(void *arg)
{
    struct ahead_taker *t = arg;
    struct shard_buf buf = {0};
    for (uint64_t pos = t->first + (uint64_t)t->index; pos < t->end && !t->wrong[0];
         pos += AHEAD_TAKERS) {
        struct shard_err err = {0};
        int fd = -2;
        int rc = sk_prefetch_take(t->pf, pos, &buf, &fd, NULL, &err);
        uint64_t cand = t->order[pos];
        size_t len;
        const char *key = shard_keylist_get(t->keys, cand, &len);
        if (cand == AHEAD_FILES) { /* the file that is gone */
            if (rc != SHARD_ENOTFOUND || err.code != rc || !err.msg[0] || fd != -1)
                snprintf(t->wrong, sizeof t->wrong, "%s: %d '%s'", key, rc, err.msg);
            continue;
        }
        if (!rc && fd >= 0)
            rc = sk_source_file_read(fd, 1000, &buf, &err);
        if (rc)
            snprintf(t->wrong, sizeof t->wrong, "%s: %d '%s'", key, rc, err.msg);
        else if (refused(NULL, cand) ? fd != -1 || buf.len != 0
                                     : (fd >= 0) != (t->mode == SK_PREFETCH_ADVISE) ||
                                           buf.len != len || memcmp(buf.data, key, len))
            snprintf(t->wrong, sizeof t->wrong, "%s: fd %d, %zu bytes", key, fd, buf.len);
        t->checked++;
    }
    shard_buf_release(&buf);
    return NULL;
}

/* The read-ahead hands every position of its range its own file - read
 * into memory or opened and advised - to workers taking them concurrently
 * and out of order, a refused candidate empty and never opened, a missing
 * file its error; a position outside the range or taken twice is refused;
 * and freed with positions never taken, it stops its fetchers. */
static void test_read_ahead_hands_each_position_its_own_file(void **state)
{
    struct fixture *f = *state;
    alarm(60); /* a taker waiting forever must fail the test, not hang the suite */
    struct shard_keylist keys = {0};
    struct shard_err err = {0};
    char key[32];
    for (int i = 0; i < AHEAD_KEYS; i++) {
        int n = i < AHEAD_FILES ? snprintf(key, sizeof key, "f%02d.jpg", i)
                                : snprintf(key, sizeof key, "gone.jpg");
        if (i < AHEAD_FILES)
            write_file(f->dir, key, key, (size_t)n);
        assert_int_equal(shard_keylist_add(&keys, key, (size_t)n, &err), 0);
    }
    uint64_t order[AHEAD_KEYS];
    for (uint64_t i = 0; i < AHEAD_KEYS; i++)
        order[i] = i * 17 % AHEAD_KEYS; /* a permutation: AHEAD_KEYS is prime */
    struct sk_source_root root;
    assert_int_equal(sk_source_root_open(&root, f->dir, &err), 0);
    const enum sk_prefetch_mode modes[] = {SK_PREFETCH_READ, SK_PREFETCH_ADVISE};
    for (int m = 0; m < 2; m++) {
        struct sk_prefetch *pf;
        const uint64_t first = 3, end = AHEAD_KEYS;
        assert_int_equal(sk_prefetch_new(&pf, &root, &keys, order, first, end, 1000, 3, 4, modes[m],
                                         refused, NULL, NULL, &err),
                         0);
        pthread_t t[AHEAD_TAKERS];
        struct ahead_taker tk[AHEAD_TAKERS];
        for (int i = 0; i < AHEAD_TAKERS; i++) {
            tk[i] = (struct ahead_taker){pf, &keys, order, first, end, i, modes[m], 0, ""};
            assert_int_equal(pthread_create(&t[i], NULL, ahead_take, &tk[i]), 0);
        }
        uint64_t checked = 0;
        for (int i = 0; i < AHEAD_TAKERS; i++) {
            pthread_join(t[i], NULL);
            assert_string_equal(tk[i].wrong, "");
            checked += tk[i].checked;
        }
        assert_int_equal(checked, end - first - 1); /* all but the missing file */
        struct shard_buf buf = {0};
        int fd;
        assert_int_equal(sk_prefetch_take(pf, end, &buf, &fd, NULL, &err), SHARD_EINVAL);
        assert_int_equal(sk_prefetch_take(pf, first, &buf, &fd, NULL, &err), SHARD_EINVAL);
        sk_prefetch_free(pf);
        /* freed early: the fetchers blocked on a full window are stopped */
        assert_int_equal(sk_prefetch_new(&pf, &root, &keys, order, 0, end, 1000, 2, 2, modes[m],
                                         NULL, NULL, NULL, &err),
                         0);
        assert_int_equal(sk_prefetch_take(pf, 0, &buf, &fd, NULL, &err), 0);
        if (fd >= 0)
            close(fd);
        sk_prefetch_free(pf);
        shard_buf_release(&buf);
    }
    sk_source_root_close(&root);
    shard_keylist_release(&keys);
    alarm(0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_tmpdir, teardown_tmpdir)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_candidate_extensions_are_case_insensitive),
        cmocka_unit_test(test_keylist_sorts_in_byte_order_prefix_first),
        cmocka_unit_test(test_keylist_refuses_a_key_with_nul),
        cmocka_unit_test(test_keylist_sort_matches_a_reference_sort_on_many_keys),
        cmocka_unit_test(test_keylist_sort_handles_sorted_reversed_and_identical_input),
        T(test_scan_keeps_names_byte_exact_and_counts_what_it_skips),
        T(test_scan_refuses_links_and_special_files_named_like_images),
        T(test_scan_refuses_the_directory_too_deep_and_keeps_the_rest),
        T(test_scan_through_a_symlinked_root_is_allowed),
        T(test_scan_of_missing_root_is_not_found),
        T(test_scan_of_a_file_root_is_invalid),
        T(test_scan_of_unreadable_directory_fails_or_is_refused),
        T(test_scan_of_too_deep_tree_fails_and_adds_no_keys),
        T(test_path_is_file_only_for_regular_files),
        T(test_read_file_returns_the_exact_bytes),
        T(test_read_file_over_the_limit_is_refused_before_reading),
        T(test_read_file_that_vanished_is_not_found),
        T(test_read_file_refuses_symlinks_fifos_and_directories),
        cmocka_unit_test(test_read_file_that_grows_while_read_is_refused),
        cmocka_unit_test(test_read_file_that_shrinks_while_read_is_refused),
        T(test_archive_tar_gives_normalised_candidates_with_bytes),
        T(test_archive_tar_gz_gives_normalised_candidates_with_bytes),
        T(test_archive_tar_zst_gives_normalised_candidates_with_bytes),
        T(test_archive_zip_gives_normalised_candidates_with_bytes),
        T(test_archive_keeps_non_utf8_names_byte_exact),
        T(test_archive_zip_utf8_names_are_byte_exact_in_any_locale),
        T(test_archive_encrypted_entry_is_produced_with_a_problem),
        T(test_archive_truncated_tar_gz_is_corrupt),
        T(test_archive_open_refuses_what_is_not_an_archive),
        T(test_archive_mtree_listing_is_not_an_archive),
        T(test_archive_empty_or_zero_filled_file_is_refused),
        cmocka_unit_test(test_labels_dir_uses_the_first_component),
        cmocka_unit_test(test_labels_none_labels_nothing),
        cmocka_unit_test(test_labels_regex_takes_the_first_group),
        cmocka_unit_test(test_labels_bad_regex_is_invalid),
        T(test_labels_csv_with_header_quotes_and_crlf),
        T(test_labels_csv_counts_rows_that_name_no_key),
        T(test_labels_csv_without_header_finds_many_keys),
        T(test_labels_csv_duplicate_key_names_it_and_its_lines),
        T(test_labels_csv_bad_rows_are_invalid_with_their_line),
        T(test_labels_csv_missing_file_is_not_found),
        cmocka_unit_test(test_available_cpus_within_machine_and_obeys_omp_num_threads),
        T(test_read_ahead_hands_each_position_its_own_file),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
