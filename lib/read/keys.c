/* keys.c - sample keys: the key of an index, from the shard footers, and
 * the index of a key (see shardkit/dataset.h).  A key is found through the
 * index files' key tables (manifest/keys.h: a binary search, O(log n) small
 * reads), or, for an index file written without one, by reading that file;
 * either way the answer is the sample whose footer holds the key (which
 * every read checks against the record), so that a hash collision or a
 * damaged table never gives another sample.  Works the same for a remote
 * dataset (the table's entries as range requests). */
#include <stdlib.h>
#include <string.h>

#include "manifest/keys.h"
#include "read/dataset_internal.h"
#include "read/fetch.h"
#include "shardx/shardx.h"
#include "shardkit/source.h"

int shard_dataset_key_copy(struct shard_dataset *ds, uint64_t index, struct shard_buf *key,
                           struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    const struct shard_footer *footer;
    int rc = shard_dataset_locate(ds, index, &s, &r, err);
    if (rc || (rc = sk_dataset_footer_pin(ds, s, &footer, err)))
        return rc;
    size_t len = footer->rows[r].key_len;
    key->len = 0;
    if (!(rc = shard_buf_reserve(key, len + 1, err))) {
        memcpy(key->data, footer->keys + footer->key_offsets[r], len);
        key->data[len] = '\0';
        key->len = len;
    }
    sk_dataset_footer_unpin(ds, s);
    return rc;
}

int shard_dataset_key(struct shard_dataset *ds, uint64_t index, const char **key, size_t *len,
                      struct shard_err *err)
{
    uint32_t s;
    uint64_t r;
    const struct shard_footer *footer;
    int rc = shard_dataset_locate(ds, index, &s, &r, err);
    if (!rc)
        rc = sk_dataset_shard_footer(ds, s, &footer, err);
    if (rc)
        return rc;
    *key = (const char *)footer->keys + footer->key_offsets[r];
    *len = footer->rows[r].key_len;
    return SHARD_OK;
}

/* ---- finding a key --------------------------------------------------------- */

/* One lookup: the key, and what is known of the index file searched. */
struct lookup {
    struct shard_dataset *ds;
    const char *key;
    size_t len;
    uint64_t hash;
    const char *file; /* the index file's key table (or the index file) */
    uint64_t first;   /* the sample of the file's line 0 */
    uint64_t lines;   /* the file's lines */
    uint64_t *index;  /* the answer */
    struct fetch_file *table;
    struct shard_err *err;
};

/* Whether the sample of line `line` of the file being searched, whose key
 * hashes to l->hash as its table says, has l's key: 1 (*l->index set), 0
 * (another key: a collision, or a damaged entry, which the check of the
 * whole table finds before a lookup says a key is not there), SHARD_ECORRUPT
 * for a line past the file, or an error reading the footer. */
static int confirm(void *ctx, uint64_t line)
{
    struct lookup *l = ctx;
    if (line >= l->lines)
        return shard_err_set(l->err, SHARD_ECORRUPT,
                             "'%s' is damaged: it names line %llu of an index of %llu", l->file,
                             (unsigned long long)line, (unsigned long long)l->lines);
    uint64_t index = l->first + line, r;
    uint32_t s;
    const struct shard_footer *footer;
    int rc = shard_dataset_locate(l->ds, index, &s, &r, l->err);
    if (rc || (rc = sk_dataset_footer_pin(l->ds, s, &footer, l->err)))
        return rc;
    const char *key = (const char *)footer->keys + footer->key_offsets[r];
    size_t len = footer->rows[r].key_len;
    if (len == l->len && !memcmp(key, l->key, len)) {
        *l->index = index;
        rc = 1;
    }
    sk_dataset_footer_unpin(l->ds, s);
    return rc;
}

static int read_table(void *ctx, uint64_t offset, void *buf, size_t len, struct shard_err *err)
{
    struct lookup *l = ctx;
    return sk_dataset_read_table(l->ds, l->table, offset, buf, len, err);
}

/* The key in index file i's key table x: 1 found, 0 not there, or an error
 * naming the table.  Before it answers "not there", the whole table is
 * checked against the manifest's size and xxh3, once per dataset: a
 * damaged entry could send the binary search astray. */
static int find_in_table(struct lookup *l, uint32_t i, const struct shard_manifest_index *x)
{
    int rc = sk_dataset_open_table(l->ds, x->keys_file, x->keys_bytes, &l->table, l->err);
    if (rc && l->err && !strstr(l->err->msg, x->keys_file))
        rc = shard_err_prefix(l->err, rc, "cannot read key table '%s'", x->keys_file);
    if (!rc)
        rc = sk_keys_check_header(read_table, l, x->keys_file, x->entries, l->err);
    if (!rc)
        rc = sk_keys_find(read_table, l, x->entries, l->hash, confirm, l, l->err);
    fetch_close(l->table);
    l->table = NULL;
    if (rc || sk_dataset_keys_checked(l->ds, i))
        return rc;
    uint64_t bytes, xxh3;
    if ((rc = sk_dataset_hash_file(l->ds, x->keys_file, &bytes, &xxh3, l->err)))
        return rc;
    if (bytes != x->keys_bytes || xxh3 != x->keys_xxh3) {
        char got[17], want[17];
        shard_hex64(xxh3, got);
        shard_hex64(x->keys_xxh3, want);
        return shard_err_set(l->err, SHARD_ECORRUPT,
                             "'%s' is damaged: %llu bytes of xxh3 %s, the manifest says %llu of %s",
                             x->keys_file, (unsigned long long)bytes, got,
                             (unsigned long long)x->keys_bytes, want);
    }
    sk_dataset_keys_set_checked(l->ds, i);
    return SHARD_OK;
}

/* The key in index file i read line by line (a file without a key table):
 * each line whose key hashes to the key's hash is confirmed against its
 * footer.  1 found, 0 not there, or an error. */
static int find_in_index(struct lookup *l, uint32_t i)
{
    struct shard_index_reader *rd = NULL;
    int rc = sk_dataset_index_open_file(l->ds, i, &rd, l->err);
    const char *text;
    size_t len;
    uint64_t line = 0, hash;
    while (!rc && (rc = sk_index_reader_next_line(rd, &text, &len, l->err)) == 1) {
        if ((rc = sk_keys_line_hash(text, len, &hash, l->err))) {
            rc = shard_err_prefix(l->err, rc, "%s line %llu", l->file,
                                  (unsigned long long)line + 1);
            break;
        }
        rc = hash == l->hash ? confirm(l, line) : 0;
        line++;
    }
    shard_index_reader_close(rd);
    return rc;
}

int shard_dataset_find_key(struct shard_dataset *ds, const char *key, size_t len, uint64_t *index,
                           struct shard_err *err)
{
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    struct lookup l = {ds, key, len, sk_keys_hash(key, len), NULL, 0, 0, index, NULL, err};
    uint32_t files = m->index_count;
    uint64_t shard = 0;
    int rc = SHARD_OK;
    for (uint32_t i = 0; !rc && i < files; i++) {
        const struct shard_manifest_index *x = &m->indexes[i];
        if (shard > m->shard_count) /* a manifest read leniently: files past its shards */
            break;
        l.first = sk_dataset_shard_first(ds, (uint32_t)shard);
        l.lines = x->entries;
        shard += x->shards;
        if (x->keys_file) {
            l.file = x->keys_file;
            rc = find_in_table(&l, i, x);
        } else {
            l.file = x->file;
            rc = find_in_index(&l, i);
        }
    }
    if (rc == 1)
        return SHARD_OK;
    if (rc)
        return rc;
    char q[SHARDX_QUOTE_SIZE];
    return shard_err_set(err, SHARD_ENOTFOUND, "no sample with key '%s'",
                         shardx_quote(key, len, q, sizeof q));
}
