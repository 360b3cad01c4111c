/* keys.c - key tables (see keys.h and manifests/FORMAT.md, "Key tables"). */
#include "manifest/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "util/endian.h"
#include "util/fsutil.h"
#include "util/grow.h"
#include "util/jsonkey.h"

struct entry {
    uint64_t hash;
    uint64_t line;
};

/* One spilled run, while merging: its file and the entry at its head. */
struct run_file {
    FILE *f;
    struct entry head;
    int live;
};

struct sk_keys_builder {
    int work_fd;
    char *work;
    char *prefix;
    struct entry *buf; /* up to `run` entries, unsorted */
    size_t len;
    size_t run;
    uint32_t runs; /* spilled: prefix.0 .. prefix.(runs-1) */
    uint64_t count;
};

uint64_t sk_keys_hash(const void *key, size_t len)
{
    return XXH3_64bits(key, len);
}

int sk_keys_line_hash(const char *line, size_t len, uint64_t *hash, struct shard_err *err)
{
    static const char head[] = "{\"key\":\"";
    size_t h = sizeof head - 1;
    if (len > h && !memcmp(line, head, h)) {
        const char *k = line + h, *end = memchr(k, '"', len - h);
        if (end && !memchr(k, '\\', (size_t)(end - k))) {
            *hash = sk_keys_hash(k, (size_t)(end - k));
            return SHARD_OK;
        }
    }
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_DISABLE_EOF_CHECK, &jerr);
    char *key = NULL;
    size_t key_len;
    int rc = o ? sk_jsonkey_get(o, 0, &key, &key_len, err)
               : shard_err_set(err, SHARD_ECORRUPT, "not JSON: %s", jerr.text);
    if (!rc)
        *hash = sk_keys_hash(key, key_len);
    free(key);
    json_decref(o);
    return rc;
}

char *sk_keys_name_for(const char *index_file)
{
    size_t n = strlen(index_file);
    const char *ext = ".jsonl";
    size_t e = strlen(ext);
    if (n > e && !strcmp(index_file + n - e, ext))
        n -= e;
    char *name = malloc(n + sizeof ".keys");
    if (name) {
        memcpy(name, index_file, n);
        memcpy(name + n, ".keys", sizeof ".keys");
    }
    return name;
}

static int compare_entries(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

int sk_keys_builder_new(struct sk_keys_builder **out, int work_fd, const char *work,
                        const char *prefix, struct shard_err *err)
{
    struct sk_keys_builder *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b || !(b->work = strdup(work)) || !(b->prefix = strdup(prefix))) {
        sk_keys_builder_free(b);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    b->work_fd = work_fd;
    b->run = SK_KEYS_RUN;
    *out = b;
    return SHARD_OK;
}

static void run_name(const struct sk_keys_builder *b, uint32_t i, char *name, size_t size)
{
    snprintf(name, size, "%s.%u", b->prefix, i);
}

static void put_entry(uint8_t *p, const struct entry *e)
{
    put_le64(p, e->hash);
    put_le64(p + 8, e->line);
}

/* Write entries[0..n) to fd through a buffer. */
static int write_entries(int fd, const struct entry *entries, size_t n, const char *what,
                         struct shard_err *err)
{
    uint8_t out[4096 * SK_KEYS_ENTRY_BYTES];
    size_t used = 0;
    int rc = SHARD_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        put_entry(out + used, &entries[i]);
        used += SK_KEYS_ENTRY_BYTES;
        if (used == sizeof out || i + 1 == n) {
            rc = sk_fs_write_all(fd, out, used, what, err);
            used = 0;
        }
    }
    return rc;
}

/* Sort what is in memory and write it as the next run. */
static int spill(struct sk_keys_builder *b, struct shard_err *err)
{
    char name[256];
    run_name(b, b->runs, name, sizeof name);
    qsort(b->buf, b->len, sizeof *b->buf, compare_entries);
    int fd, rc = sk_fs_create_at(b->work_fd, b->work, name, 0600, &fd, err);
    if (rc)
        return rc;
    b->runs++; /* created: removed by free whatever happens now */
    rc = write_entries(fd, b->buf, b->len, name, err);
    if (close(fd) && !rc)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot write '%s/%s'", b->work, name);
    b->len = 0;
    return rc;
}

void sk_keys_builder_set_run(struct sk_keys_builder *b, size_t entries)
{
    if (!b->buf && entries > 0)
        b->run = entries;
}

int sk_keys_builder_add_hash(struct sk_keys_builder *b, uint64_t hash, uint64_t line,
                             struct shard_err *err)
{
    if (!b->buf && !(b->buf = malloc(b->run * sizeof *b->buf)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (b->len == b->run) {
        int rc = spill(b, err);
        if (rc)
            return rc;
    }
    b->buf[b->len++] = (struct entry){hash, line};
    b->count++;
    return SHARD_OK;
}

int sk_keys_builder_add(struct sk_keys_builder *b, const void *key, size_t len, uint64_t line,
                        struct shard_err *err)
{
    return sk_keys_builder_add_hash(b, sk_keys_hash(key, len), line, err);
}

static int read_head(struct run_file *r)
{
    uint8_t p[SK_KEYS_ENTRY_BYTES];
    r->live = fread(p, 1, sizeof p, r->f) == sizeof p;
    if (r->live) {
        r->head.hash = get_le64(p);
        r->head.line = get_le64(p + 8);
    }
    return r->live;
}

/* Merge the runs, each sorted, into fd (a k-way merge by linear scan: a
 * table of n entries has n / SK_KEYS_RUN runs, a few thousand at most). */
static int merge_runs(struct sk_keys_builder *b, int fd, const char *what, struct shard_err *err)
{
    struct run_file *runs = calloc(b->runs, sizeof *runs);
    struct entry *out = malloc(4096 * sizeof *out);
    int rc = runs && out ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint32_t i = 0; !rc && i < b->runs; i++) {
        char name[256];
        run_name(b, i, name, sizeof name);
        int rfd = openat(b->work_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0 || !(runs[i].f = fdopen(rfd, "rb"))) {
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read '%s/%s'", b->work, name);
            if (rfd >= 0)
                close(rfd);
            break;
        }
        read_head(&runs[i]);
    }
    size_t used = 0;
    while (!rc) {
        uint32_t best = b->runs;
        for (uint32_t i = 0; i < b->runs; i++)
            if (runs[i].live &&
                (best == b->runs || compare_entries(&runs[i].head, &runs[best].head) < 0))
                best = i;
        if (best == b->runs)
            break;
        out[used++] = runs[best].head;
        read_head(&runs[best]);
        if (used == 4096) {
            rc = write_entries(fd, out, used, what, err);
            used = 0;
        }
    }
    if (!rc && used)
        rc = write_entries(fd, out, used, what, err);
    for (uint32_t i = 0; runs && i < b->runs; i++) {
        if (!rc && runs[i].f && ferror(runs[i].f))
            rc = shard_err_set(err, SHARD_EIO, "cannot read a run of '%s'", what);
        if (runs[i].f)
            fclose(runs[i].f);
    }
    free(runs);
    free(out);
    return rc;
}

int sk_keys_builder_write(struct sk_keys_builder *b, int dir_fd, const char *dir, const char *name,
                          uint64_t *bytes, uint64_t *xxh3, struct shard_err *err)
{
    size_t tlen = strlen(name) + 8;
    char *tmp = malloc(tlen);
    if (!tmp)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    snprintf(tmp, tlen, ".%s.tmp", name);
    int fd, rc = SHARD_OK;
    if (b->runs && b->len)
        rc = spill(b, err);
    if (!rc)
        rc = sk_fs_create_at(dir_fd, dir, tmp, 0644, &fd, err);
    if (rc) {
        free(tmp);
        return rc;
    }
    uint8_t header[SK_KEYS_HEADER_BYTES] = {0};
    memcpy(header, SK_KEYS_MAGIC, 8);
    put_le64(header + 8, b->count);
    put_le64(header + 24, XXH3_64bits(header, 24));
    rc = sk_fs_write_all(fd, header, sizeof header, name, err);
    if (!rc && b->runs) {
        rc = merge_runs(b, fd, name, err);
    } else if (!rc) {
        if (b->len)
            qsort(b->buf, b->len, sizeof *b->buf, compare_entries);
        rc = write_entries(fd, b->buf, b->len, name, err);
    }
    if (!rc && lseek(fd, 0, SEEK_SET) != 0)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read back '%s'", name);
    if (!rc)
        rc = sk_fs_hash_fd(fd, name, bytes, xxh3, err);
    rc = sk_fs_commit_at(fd, rc, dir_fd, dir, tmp, name, err);
    free(tmp);
    return rc;
}

void sk_keys_builder_free(struct sk_keys_builder *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->runs; i++) {
        char name[256];
        run_name(b, i, name, sizeof name);
        unlinkat(b->work_fd, name, 0);
    }
    free(b->buf);
    free(b->work);
    free(b->prefix);
    free(b);
}

/* ---- reading -------------------------------------------------------------- */

int sk_keys_check_header(sk_keys_read_fn read, void *ctx, const char *name, uint64_t count,
                         struct shard_err *err)
{
    uint8_t h[SK_KEYS_HEADER_BYTES];
    int rc = read(ctx, 0, h, sizeof h, err);
    if (rc)
        return rc;
    if (memcmp(h, SK_KEYS_MAGIC, 8) != 0 || get_le64(h + 24) != XXH3_64bits(h, 24))
        return shard_err_set(err, SHARD_ECORRUPT, "'%s' is not a key table", name);
    if (get_le64(h + 16) != 0)
        return shard_err_set(err, SHARD_ECORRUPT, "'%s': its reserved bytes are not 0", name);
    if (get_le64(h + 8) != count)
        return shard_err_set(err, SHARD_ECORRUPT, "'%s' holds %llu keys, its index %llu lines",
                             name, (unsigned long long)get_le64(h + 8), (unsigned long long)count);
    return SHARD_OK;
}

static int read_entry(sk_keys_read_fn read, void *ctx, uint64_t i, struct entry *e,
                      struct shard_err *err)
{
    uint8_t p[SK_KEYS_ENTRY_BYTES];
    int rc = read(ctx, SK_KEYS_HEADER_BYTES + i * SK_KEYS_ENTRY_BYTES, p, sizeof p, err);
    if (!rc) {
        e->hash = get_le64(p);
        e->line = get_le64(p + 8);
    }
    return rc;
}

int sk_keys_find(sk_keys_read_fn read, void *ctx, uint64_t count, uint64_t hash,
                 int (*found)(void *fctx, uint64_t line), void *fctx, struct shard_err *err)
{
    uint64_t lo = 0, hi = count; /* the first entry of `hash` is in [lo, hi] */
    struct entry e;
    int rc;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((rc = read_entry(read, ctx, mid, &e, err)))
            return rc;
        if (e.hash < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint64_t i = lo; i < count; i++) {
        if ((rc = read_entry(read, ctx, i, &e, err)))
            return rc;
        if (e.hash != hash)
            break;
        if ((rc = found(fctx, e.line)))
            return rc;
    }
    return SHARD_OK;
}
