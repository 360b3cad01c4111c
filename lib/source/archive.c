/* archive.c - candidate entries of an archive, in one streaming pass
 * (see shardkit/source.h).
 *
 * Keys are normalised the way an extraction would name the files: empty and
 * "." components are dropped (so "./a//b.jpg" is "a/b.jpg" and no key starts
 * with "./" or "/").  An entry with a ".." component would land outside the
 * extraction root; we do not guess what it means and count it in
 * ignored_special instead of producing it.  So are entries whose name
 * libarchive cannot give us byte-exact (see entry_name) or that normalise
 * to nothing ("./").
 */
#include "shardkit/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

/* Bytes libarchive reads from the file at a time. */
#define ARCHIVE_BLOCK_BYTES (64 * 1024)
/* A declared entry size is only trusted up to this much up-front
 * allocation; beyond it the buffer grows with the data actually read. */
#define TRUSTED_PREALLOC_BYTES (64u * 1024 * 1024)
/* Read granularity when the size is unknown or the data is being counted. */
#define READ_CHUNK_BYTES (64 * 1024)

struct shard_archive {
    struct archive *ar;
    locale_t utf8_locale;        /* libarchive runs in it: see with_utf8_locale */
    struct archive_entry *pending;  /* first header, read by open */
    int at_end;
    int failed;                  /* a fatal error was reported: keep reporting it */
    const char *problem;         /* why the current entry has no bytes, or NULL */
    struct shard_buf key;        /* normalised key of the current entry, NUL-terminated */
    uint8_t scratch[READ_CHUNK_BYTES];  /* sink for data we only count */
};

/* Archives come from outside, so only the formats datasets are shipped in
 * are read (each format parser is attack surface): tar in all its dialects,
 * zip, 7-Zip and cpio.  "raw" (any file would be one entry) and "mtree" (a
 * text listing without file data, which could name files on *this* machine)
 * are deliberately absent. */
static int enable_formats(struct archive *ar)
{
    int (*const formats[])(struct archive *) = {
        archive_read_support_format_tar,  archive_read_support_format_zip,
        archive_read_support_format_7zip, archive_read_support_format_cpio,
        archive_read_support_format_empty,
    };
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        int r = formats[i](ar);
        /* ARCHIVE_WARN: built without a helper library; the others still work. */
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            return r;
    }
    return ARCHIVE_OK;
}

/* Compression filters decoded in-process.  A filter that libarchive can
 * only run through an external program (ARCHIVE_WARN) is refused: hostile
 * input is not handed to programs we did not choose. */
static int enable_filters(struct archive *ar)
{
    int (*const filters[])(struct archive *) = {
        archive_read_support_filter_gzip, archive_read_support_filter_bzip2,
        archive_read_support_filter_xz,   archive_read_support_filter_lzma,
        archive_read_support_filter_lzip, archive_read_support_filter_zstd,
        archive_read_support_filter_lz4,  archive_read_support_filter_compress,
    };
    for (size_t i = 0; i < sizeof filters / sizeof *filters; i++) {
        struct archive *probe = archive_read_new();
        int external = probe && filters[i](probe) == ARCHIVE_WARN;
        archive_read_free(probe);
        if (external)
            continue;
        if (filters[i](ar) != ARCHIVE_OK)
            return ARCHIVE_FATAL;
    }
    return ARCHIVE_OK;
}

static const char *archive_message(struct archive *ar)
{
    const char *m = archive_error_string(ar);
    return m ? m : "unknown libarchive error";
}

/* Byte-exact names need a UTF-8 locale.  libarchive converts names stored
 * as UTF-8 (zip's UTF-8 flag, pax "path" records) to the calling thread's
 * locale, and in the default C locale any non-ASCII name fails to convert
 * and is lost.  Under UTF-8 the conversion is the identity, and names
 * stored as plain bytes (ustar, unflagged zip) are passed through as they
 * are.  uselocale() is per thread, so the rest of the process is unaffected.
 * Without a C.UTF-8 locale we run in whatever locale the thread has. */
static locale_t with_utf8_locale(struct shard_archive *a)
{
    return a->utf8_locale ? uselocale(a->utf8_locale) : (locale_t)0;
}

static void restore_locale(locale_t saved)
{
    if (saved)
        uselocale(saved);
}

static int open_archive(struct shard_archive *a, const char *path, struct shard_err *err)
{
    int rc = SHARD_OK;
    if (enable_filters(a->ar) == ARCHIVE_FATAL || enable_formats(a->ar) == ARCHIVE_FATAL) {
        return shard_err_set(err, SHARD_ENOMEM, "cannot set up libarchive: %s",
                             archive_message(a->ar));
    }
    /* libarchive picks the format while opening or, for some formats, at
     * the first header, so read that too: "not an archive" belongs to open. */
    int r = archive_read_open_filename(a->ar, path, ARCHIVE_BLOCK_BYTES);
    if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
        r = archive_read_next_header(a->ar, &a->pending);
        if (r == ARCHIVE_EOF) {
            a->at_end = 1;
            r = ARCHIVE_OK;
        }
    }
    if (r < ARCHIVE_WARN) {
        a->pending = NULL;
        int e = archive_errno(a->ar);
        if (e == ENOENT)
            rc = SHARD_ENOTFOUND;
        /* EILSEQ is libarchive's (private) ARCHIVE_ERRNO_FILE_FORMAT on
         * systems without EFTYPE: no format recognised the data. */
        else if (archive_format(a->ar) == 0 && e == EILSEQ)
            rc = SHARD_EINVAL;
        else if (archive_format(a->ar) == 0)
            rc = SHARD_EIO;     /* the file could not be read at all */
        else
            rc = SHARD_ECORRUPT;
        rc = shard_err_set(err, rc, "cannot read archive '%s': %s", path,
                           archive_message(a->ar));
    }
    return rc;
}

int shard_archive_open(struct shard_archive **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct shard_archive *a = calloc(1, sizeof *a);
    if (!a)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate an archive reader");
    a->utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    a->ar = archive_read_new();
    if (!a->ar) {
        shard_archive_close(a);
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate an archive reader");
    }
    locale_t saved = with_utf8_locale(a);
    int rc = open_archive(a, path, err);
    restore_locale(saved);
    if (rc) {
        shard_archive_close(a);
        return rc;
    }
    *out = a;
    return SHARD_OK;
}

void shard_archive_close(struct shard_archive *a)
{
    if (!a)
        return;
    if (a->ar)
        archive_read_free(a->ar);
    if (a->utf8_locale)
        freelocale(a->utf8_locale);
    shard_buf_release(&a->key);
    free(a);
}

/* Normalise `name` into a->key.  Returns 1 for a usable key, 0 when the
 * name has a ".." component or nothing is left, or a negative error. */
static int normalise_key(struct shard_archive *a, const char *name, struct shard_err *err)
{
    a->key.len = 0;
    const char *p = name;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            a->key.len = 0;
            return 0;
        }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            int rc = a->key.len ? shard_buf_append(&a->key, "/", 1, err) : SHARD_OK;
            if (rc == 0)
                rc = shard_buf_append(&a->key, p, n, err);
            if (rc)
                return rc;
        }
        p += n;
        if (*p == '/')
            p++;
    }
    if (a->key.len == 0)
        return 0;
    int rc = shard_buf_append(&a->key, "", 1, err);
    if (rc)
        return rc;
    a->key.len--;
    return 1;
}

/* The entry's name as stored (see with_utf8_locale), or NULL when it has
 * none libarchive can give: a zip name flagged as UTF-8 that is not. */
static const char *entry_name(struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    return name ? name : archive_entry_pathname_utf8(e);
}

/* Record a fatal error.  Messages of shard_archive_next name the entry, not
 * the archive: the caller prefixes that ("cannot read archive 'x.tgz': ...").
 * a->key holds the current entry or, while reading a header, the previous. */
static int fail(struct shard_archive *a, int code, int in_entry, struct shard_err *err)
{
    a->failed = code;
    if (a->key.len)
        return shard_err_set(err, code, "%s '%s': %s", in_entry ? "entry" : "after entry",
                             (const char *)a->key.data, archive_message(a->ar));
    return shard_err_set(err, code, "%s", archive_message(a->ar));
}

/* Read the current entry's data into buf; on more than max_bytes (when not
 * 0) keep counting into scratch and report the true size in *too_large. */
static int read_data(struct shard_archive *a, struct archive_entry *e, uint64_t max_bytes,
                     struct shard_buf *buf, uint64_t *too_large, struct shard_err *err)
{
    uint64_t limit = max_bytes ? max_bytes : UINT64_MAX;
    if (archive_entry_size_is_set(e) && archive_entry_size(e) >= 0) {
        uint64_t declared = (uint64_t)archive_entry_size(e);
        if (declared > limit) {
            /* The next header read skips the data. */
            *too_large = declared;
            return SHARD_OK;
        }
        /* +1 so that reading the declared size exactly needs no regrowth. */
        size_t pre = declared < TRUSTED_PREALLOC_BYTES ? (size_t)declared + 1
                                                       : TRUSTED_PREALLOC_BYTES;
        int rc = shard_buf_reserve(buf, pre, err);
        if (rc)
            return rc;
    }
    uint64_t total = 0;
    for (;;) {
        la_ssize_t n;
        if (total > limit) {
            n = archive_read_data(a->ar, a->scratch, sizeof a->scratch);
        } else {
            if (buf->cap == buf->len) {
                if (buf->len > SIZE_MAX - READ_CHUNK_BYTES)
                    return shard_err_set(err, SHARD_ENOMEM, "entry '%s' is too large",
                                         (const char *)a->key.data);
                /* Grows geometrically (shard_buf_reserve). */
                int rc = shard_buf_reserve(buf, buf->len + READ_CHUNK_BYTES, err);
                if (rc)
                    return rc;
            }
            n = archive_read_data(a->ar, buf->data + buf->len, buf->cap - buf->len);
        }
        if (n < 0)
            return fail(a, SHARD_ECORRUPT, 1, err);
        if (n == 0)
            break;
        if (total <= limit)
            buf->len += (size_t)n;
        total += (uint64_t)n;
        if (total > limit && buf->len)
            buf->len = 0;  /* over the limit: stop keeping the bytes */
    }
    if (total > limit) {
        buf->len = 0;
        *too_large = total;
    }
    return SHARD_OK;
}

static int next_entry(struct shard_archive *a, uint64_t max_bytes, const char **key,
                      size_t *key_len, struct shard_buf *buf, uint64_t *too_large,
                      struct shard_scan_stats *st, struct shard_err *err)
{
    buf->len = 0;
    *too_large = 0;
    *key = NULL;
    *key_len = 0;
    if (a->failed)
        return shard_err_set(err, a->failed, "unreadable after an earlier error");
    for (;;) {
        struct archive_entry *e;
        if (a->pending) {
            e = a->pending;
            a->pending = NULL;
        } else {
            if (a->at_end)
                return 0;
            int r = archive_read_next_header(a->ar, &e);
            if (r == ARCHIVE_EOF) {
                a->at_end = 1;
                return 0;
            }
            if (r < ARCHIVE_WARN)  /* ARCHIVE_WARN: e.g. a name not in the locale's charset */
                return fail(a, SHARD_ECORRUPT, 0, err);
        }
        const char *name = entry_name(e);
        a->key.len = 0;
        int rc = name ? normalise_key(a, name, err) : 0;
        if (rc < 0)
            return rc;
        unsigned type = archive_entry_filetype(e);
        if (type == AE_IFDIR)
            continue;
        if (type == AE_IFLNK) {
            st->ignored_symlinks++;
            continue;
        }
        /* A hard link without data of its own refers to an earlier entry
         * whose bytes have already streamed past; we cannot produce it. */
        int bare_hardlink = archive_entry_hardlink(e) && archive_entry_size(e) == 0;
        if (type != AE_IFREG || rc == 0 || bare_hardlink) {
            st->ignored_special++;
            continue;
        }
        if (!shard_is_candidate((const char *)a->key.data, a->key.len)) {
            st->ignored++;
            continue;
        }
        a->problem = NULL;
        if (archive_entry_is_data_encrypted(e)) {
            /* one unreadable entry must not stop the others: it is produced
             * without bytes, for the caller to reject */
            a->problem = "unsupported: encrypted archive entry";
            buf->len = 0;
            *too_large = 0;
            st->candidates++;
            *key = (const char *)a->key.data;
            *key_len = a->key.len;
            return 1;
        }
        rc = read_data(a, e, max_bytes, buf, too_large, err);
        if (rc) {
            buf->len = 0;
            return rc;
        }
        st->candidates++;
        *key = (const char *)a->key.data;
        *key_len = a->key.len;
        return 1;
    }
}

int shard_archive_next(struct shard_archive *a, uint64_t max_bytes, const char **key,
                       size_t *key_len, struct shard_buf *buf, uint64_t *too_large,
                       struct shard_scan_stats *st, struct shard_err *err)
{
    locale_t saved = with_utf8_locale(a);
    int rc = next_entry(a, max_bytes, key, key_len, buf, too_large, st, err);
    restore_locale(saved);
    return rc;
}

const char *shard_archive_problem(const struct shard_archive *a)
{
    return a->problem;
}
