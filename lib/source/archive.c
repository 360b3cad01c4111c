/* archive.c - candidate entries of an archive, in one streaming pass
 * (see shardkit/source.h and source_internal.h).
 *
 * Keys are normalised the way an extraction would name the files: empty and
 * "." components are dropped (so "./a//b.jpg" is "a/b.jpg" and no key starts
 * with "./").  Every entry whose name is a candidate's is produced, so that
 * it becomes a sample or a reject with its reason, never nothing:
 *  - a name that is absolute or has a ".." component would land outside
 *    an extraction root: produced under its name as stored, with a problem;
 *  - symbolic links, devices, fifos: produced with a problem, as the
 *    directory scan rejects them;
 *  - a hard link without data: produced without bytes, with its target
 *    (sk_archive_link); links.c finds the bytes;
 *  - an entry libarchive cannot read (a bad CRC, a wrong size, a truncated
 *    compressed member): produced with the problem, and the archive is read
 *    on.  When libarchive's handle is dead after it (a fatal error inside an
 *    entry), the archive is opened again and read from the entry after it;
 *    if that cannot be done (a truncated tar, a damaged compressed stream,
 *    a damaged tar header that hides where the next entries are), the pass
 *    fails with an error naming the entry.
 * Entries whose name libarchive cannot give byte-exact (see entry_name) are
 * counted in ignored_special: their candidacy is unknown.
 */
#include "shardkit/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "shardx/shardx.h"

/* Bytes libarchive reads from the file at a time. */
#define ARCHIVE_BLOCK_BYTES (64 * 1024)
/* A declared entry size is only trusted up to this much up-front
 * allocation; beyond it the buffer grows with the data actually read. */
#define TRUSTED_PREALLOC_BYTES (64u * 1024 * 1024)
/* Read granularity when the size is unknown or the data is being counted. */
#define READ_CHUNK_BYTES (64 * 1024)
/* Each damaged entry that kills libarchive's handle costs a new open and a
 * walk over the headers before it; past this many the archive is given up
 * on (a hostile archive must not make the pass quadratic). */
#define ARCHIVE_MAX_REOPENS 64

struct sk_archive {
    char *path; /* kept to open the archive again */
    int fd;     /* the open file libarchive reads, or -1 */
    struct archive *ar;
    locale_t utf8_locale;          /* libarchive runs in it: see with_utf8_locale */
    struct archive_entry *pending; /* first header, read by open */
    int at_end;
    int failed;       /* a fatal error was reported: keep reporting it */
    uint64_t ordinal; /* headers read; the current entry is ordinal - 1 */
    unsigned reopens;
    const char *problem;                  /* why the current entry has no bytes, or NULL */
    char problem_text[SHARD_ERRMSG_SIZE]; /* a problem made from libarchive's words */
    struct shard_buf key;                 /* normalised key of the current entry, NUL-terminated */
    struct shard_buf link;                /* its hard-link target, normalised; len 0: none */
    int link_only;                        /* a hard link without data of its own */
    uint64_t max_other_bytes;             /* a wanted non-candidate's limit (0: max_bytes) */
    int (*admit)(void *ctx, uint64_t bytes, struct shard_err *err); /* see sk_archive_set_reading */
    void *admit_ctx;
    uint8_t scratch[READ_CHUNK_BYTES]; /* sink for data we only count */
};

void sk_archive_set_reading(struct sk_archive *a, uint64_t max_other_bytes,
                            int (*admit)(void *ctx, uint64_t bytes, struct shard_err *err),
                            void *ctx)
{
    a->max_other_bytes = max_other_bytes;
    a->admit = admit;
    a->admit_ctx = ctx;
}

/* Archives come from outside, so only the formats datasets are shipped in
 * are read (each format parser is attack surface): tar in all its dialects,
 * zip, 7-Zip and cpio.  "raw" (any file would be one entry) and "mtree" (a
 * text listing without file data, which could name files on *this* machine)
 * are deliberately absent. */
static int enable_formats(struct archive *ar)
{
    int (*const formats[])(struct archive *) = {
        archive_read_support_format_tar,   archive_read_support_format_zip,
        archive_read_support_format_7zip,  archive_read_support_format_cpio,
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

/* libarchive's message, as one line: some of its messages end in "\n". */
static const char *archive_message(struct archive *ar, char *out, size_t size)
{
    const char *m = archive_error_string(ar);
    size_t n = m ? strcspn(m, "\r\n") : 0;
    while (n > 0 && (m[n - 1] == ' ' || m[n - 1] == '.'))
        n--;
    if (n == 0)
        m = "unknown libarchive error", n = strlen(m);
    snprintf(out, size, "%.*s", (int)n, m);
    return out;
}

/* Byte-exact names need a UTF-8 locale.  libarchive converts names stored
 * as UTF-8 (zip's UTF-8 flag, pax "path" records) to the calling thread's
 * locale, and in the default C locale any non-ASCII name fails to convert
 * and is lost.  Under UTF-8 the conversion is the identity, and names
 * stored as plain bytes (ustar, unflagged zip) are passed through as they
 * are.  uselocale() is per thread, so the rest of the process is unaffected.
 * Without a C.UTF-8 locale we run in whatever locale the thread has. */
static locale_t with_utf8_locale(struct sk_archive *a)
{
    return a->utf8_locale ? uselocale(a->utf8_locale) : (locale_t)0;
}

static void restore_locale(locale_t saved)
{
    if (saved)
        uselocale(saved);
}

/* A new libarchive handle on a->path, formats and filters enabled. */
static int start_reading(struct sk_archive *a, struct shard_err *err)
{
    char m[SHARD_ERRMSG_SIZE];
    if (a->ar)
        archive_read_free(a->ar);
    a->ar = archive_read_new();
    if (!a->ar)
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate an archive reader");
    if (enable_filters(a->ar) == ARCHIVE_FATAL || enable_formats(a->ar) == ARCHIVE_FATAL)
        return shard_err_set(err, SHARD_ENOMEM, "cannot set up libarchive: %s",
                             archive_message(a->ar, m, sizeof m));
    return SHARD_OK;
}

/* Open a->path afresh (as shardkit opens every file it reads: a FIFO or a
 * device swapped in for the archive is refused, never waited on) and hand
 * it to the new handle a->ar; *r is libarchive's answer. */
static int open_file(struct sk_archive *a, uint64_t *size, int *r, struct shard_err *err)
{
    if (a->fd >= 0)
        close(a->fd);
    int rc = sk_fs_open_read(AT_FDCWD, a->path, &a->fd, size, err);
    if (rc)
        return shard_err_prefix(err, rc, "cannot read archive '%s'", a->path);
    *r = archive_read_open_fd(a->ar, a->fd, ARCHIVE_BLOCK_BYTES);
    return SHARD_OK;
}

static int open_archive(struct sk_archive *a, struct shard_err *err)
{
    const char *path = a->path;
    char m[SHARD_ERRMSG_SIZE];
    uint64_t size;
    int r;
    int rc = start_reading(a, err);
    if (!rc)
        rc = open_file(a, &size, &r, err);
    if (rc)
        return rc;
    /* libarchive reads an empty file as an empty archive, and a file of
     * zero bytes as an empty tar: neither is a dataset anybody shipped. */
    if (size == 0)
        return shard_err_set(err, SHARD_EINVAL, "source '%s' is an empty file, not an archive",
                             path);
    /* libarchive picks the format while opening or, for some formats, at
     * the first header, so read that too: "not an archive" belongs to open. */
    if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
        r = archive_read_next_header(a->ar, &a->pending);
        if (r == ARCHIVE_EOF)
            return shard_err_set(err, SHARD_EINVAL,
                                 "source '%s' holds no archive entries "
                                 "(a file of only zero bytes reads as an empty tar)",
                                 path);
        if (r == ARCHIVE_RETRY)
            r = ARCHIVE_FATAL; /* the very first header is damaged */
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
            rc = SHARD_EIO; /* the file could not be read at all */
        else
            rc = SHARD_ECORRUPT;
        rc = shard_err_set(err, rc, "cannot read archive '%s': %s", path,
                           archive_message(a->ar, m, sizeof m));
    }
    return rc;
}

int sk_archive_open(struct sk_archive **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct sk_archive *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        return shard_err_set(err, SHARD_ENOMEM, "cannot allocate an archive reader");
    }
    a->fd = -1;
    a->utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t saved = with_utf8_locale(a);
    int rc = open_archive(a, err);
    restore_locale(saved);
    if (rc) {
        sk_archive_close(a);
        return rc;
    }
    *out = a;
    return SHARD_OK;
}

void sk_archive_close(struct sk_archive *a)
{
    if (!a)
        return;
    if (a->ar)
        archive_read_free(a->ar);
    if (a->fd >= 0)
        close(a->fd);
    if (a->utf8_locale)
        freelocale(a->utf8_locale);
    shard_buf_release(&a->key);
    shard_buf_release(&a->link);
    free(a->path);
    free(a);
}

/* Normalise `name` into *out (NUL-terminated, the NUL outside len).
 * Returns 1 for a usable key, 0 when the name is absolute, has a ".."
 * component or leaves nothing, or a negative error. */
static int normalise_name(struct shard_buf *out, const char *name, struct shard_err *err)
{
    out->len = 0;
    if (name[0] == '/')
        return 0;
    const char *p = name;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            out->len = 0;
            return 0;
        }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            int rc = out->len ? shard_buf_append(out, "/", 1, err) : SHARD_OK;
            if (rc == 0)
                rc = shard_buf_append(out, p, n, err);
            if (rc)
                return rc;
        }
        p += n;
        if (*p == '/')
            p++;
    }
    if (out->len == 0)
        return 0;
    int rc = shard_buf_append(out, "", 1, err);
    if (rc)
        return rc;
    out->len--;
    return 1;
}

/* The entry's name as stored (see with_utf8_locale), or NULL when it has
 * none libarchive can give: a zip name flagged as UTF-8 that is not. */
static const char *entry_name(struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    return name ? name : archive_entry_pathname_utf8(e);
}

static const char *entry_hardlink(struct archive_entry *e)
{
    const char *name = archive_entry_hardlink(e);
    return name ? name : archive_entry_hardlink_utf8(e);
}

/* Record a fatal error while reading a header.  Messages of
 * sk_archive_next name the entry and the archive's file name (one of a
 * directory of archives, which the caller names: "cannot read archive 'd':
 * '01.tar' after its entry 'a.jpg': ..."); the caller prefixes its own
 * words.  a->key holds the previous entry. */
static int fail(struct sk_archive *a, int code, const char *consequence, struct shard_err *err)
{
    char m[SHARD_ERRMSG_SIZE], q[SHARDX_QUOTE_SIZE], n[SHARDX_QUOTE_SIZE];
    archive_message(a->ar, m, sizeof m);
    a->failed = code;
    const char *slash = strrchr(a->path, '/');
    const char *name = slash && slash[1] ? slash + 1 : a->path;
    shardx_quote(name, strlen(name), n, sizeof n);
    if (a->key.len)
        return shard_err_set(err, code, "'%s' after its entry '%s': %s%s", n,
                             shardx_quote((const char *)a->key.data, a->key.len, q, sizeof q), m,
                             consequence);
    return shard_err_set(err, code, "'%s': %s%s", n, m, consequence);
}

/* The entry's data could not be read: keep libarchive's words as the
 * entry's problem (a reject reason). */
static void set_damaged(struct sk_archive *a)
{
    char m[SHARD_ERRMSG_SIZE];
    snprintf(a->problem_text, sizeof a->problem_text, "%s%s", SK_REASON_DAMAGED,
             archive_message(a->ar, m, sizeof m));
    a->problem = a->problem_text;
}

/* After a fatal error inside the data of the current entry libarchive's
 * handle is dead: open the archive again and read the headers up to the
 * current entry, so that the next header read is the entry after it.  A
 * format whose next entry is only reached by reading through the damaged
 * one (a compressed stream, a truncated tar) fails here or at the next
 * header, which is then the end of the pass. */
static int reopen_after_entry(struct sk_archive *a, struct shard_err *err)
{
    char m[SHARD_ERRMSG_SIZE], q[SHARDX_QUOTE_SIZE];
    const char *key = shardx_quote((const char *)a->key.data, a->key.len, q, sizeof q);
    if (a->reopens == ARCHIVE_MAX_REOPENS) {
        a->failed = SHARD_ECORRUPT;
        return shard_err_set(err, SHARD_ECORRUPT,
                             "entry '%s': %s; more than %d damaged "
                             "entries, the rest of the archive is not read",
                             key, a->problem + strlen(SK_REASON_DAMAGED), ARCHIVE_MAX_REOPENS);
    }
    a->reopens++;
    uint64_t size;
    int r = ARCHIVE_FATAL;
    int rc = start_reading(a, err);
    if (!rc)
        rc = open_file(a, &size, &r, err);
    for (uint64_t i = 0; i < a->ordinal && r >= ARCHIVE_FAILED && r != ARCHIVE_RETRY; i++) {
        struct archive_entry *e;
        r = archive_read_next_header(a->ar, &e);
        if (r == ARCHIVE_EOF)
            r = ARCHIVE_FATAL;
    }
    if (rc)
        return rc;
    if (r < ARCHIVE_FAILED || r == ARCHIVE_RETRY) {
        a->failed = SHARD_ECORRUPT;
        return shard_err_set(err, SHARD_ECORRUPT, "entry '%s': %s; cannot read past it: %s", key,
                             a->problem + strlen(SK_REASON_DAMAGED),
                             archive_message(a->ar, m, sizeof m));
    }
    return SHARD_OK;
}

/* Read the current entry's data into buf; on more than max_bytes (when not
 * 0) keep counting into scratch and report the true size in *too_large.
 * Data libarchive cannot read makes a->problem (and an empty buf); only
 * an error that ends the pass is returned. */
static int read_data(struct sk_archive *a, struct archive_entry *e, uint64_t max_bytes,
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
        if (n < 0) {
            /* ARCHIVE_WARN (a bad CRC, a wrong size) or ARCHIVE_FAILED (an
             * unsupported method): this entry is lost, the handle is fine.
             * ARCHIVE_FATAL: the handle is dead; try to read on after it. */
            buf->len = 0;
            *too_large = 0;
            set_damaged(a);
            return n == ARCHIVE_FATAL ? reopen_after_entry(a, err) : SHARD_OK;
        }
        if (n == 0)
            break;
        if (total <= limit)
            buf->len += (size_t)n;
        total += (uint64_t)n;
        if (total > limit && buf->len)
            buf->len = 0; /* over the limit: stop keeping the bytes */
    }
    if (total > limit) {
        buf->len = 0;
        *too_large = total;
    }
    return SHARD_OK;
}

/* Count an entry that is not produced. */
static void count_skipped(struct shard_scan_stats *st, unsigned type, int link)
{
    if (type == AE_IFREG || (link && type == 0))
        st->ignored++;
    else if (type == AE_IFLNK)
        st->ignored_symlinks++;
    else
        st->ignored_special++;
}

/* The next header, or 0 at the end.  Fails on a damaged header: in a tar,
 * what follows one cannot be located (libarchive would skip ahead to
 * anything that looks like a header, losing the entries between). */
static int next_header(struct sk_archive *a, struct archive_entry **e, struct shard_err *err)
{
    if (a->pending) {
        *e = a->pending;
        a->pending = NULL;
    } else {
        if (a->at_end)
            return 0;
        int r = archive_read_next_header(a->ar, e);
        if (r == ARCHIVE_EOF) {
            a->at_end = 1;
            return 0;
        }
        if (r == ARCHIVE_RETRY)
            return fail(a, SHARD_ECORRUPT,
                        "; the entries after it cannot be located (is "
                        "that entry cut short?)",
                        err);
        /* ARCHIVE_WARN: e.g. a name not in the locale's charset; ARCHIVE_FAILED:
         * this header cannot be used, the next may */
        if (r < ARCHIVE_FAILED)
            return fail(a, SHARD_ECORRUPT,
                        "; the archive cannot be read past it: its later entries are lost", err);
        if (r == ARCHIVE_FAILED) {
            a->ordinal++;
            set_damaged(a);
            return 2;
        }
    }
    a->ordinal++;
    return 1;
}

/* Fill `out` for a hard link entry to `target`: link-only unless it has
 * data; a target that is not a safe name is the entry's problem. */
static int note_link(struct sk_archive *a, const char *target, int has_data,
                     struct sk_archive_entry *out, struct shard_err *err)
{
    int rc = normalise_name(&a->link, target, err);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        a->link.len = 0;
        if (!has_data) {
            char q[SHARDX_QUOTE_SIZE];
            snprintf(a->problem_text, sizeof a->problem_text, "%s'%s', an unsafe name",
                     SK_REASON_LINK, shardx_quote(target, strlen(target), q, sizeof q));
            a->problem = a->problem_text;
        }
        return SHARD_OK;
    }
    out->link = (const char *)a->link.data;
    out->link_len = a->link.len;
    out->link_only = a->link_only = !has_data;
    return SHARD_OK;
}

static int next_entry(struct sk_archive *a, uint64_t max_bytes,
                      int (*want)(void *ctx, const char *key, size_t len), void *ctx,
                      struct sk_archive_entry *out, struct shard_buf *buf,
                      struct shard_scan_stats *st, struct shard_err *err)
{
    memset(out, 0, sizeof *out);
    buf->len = 0;
    a->problem = NULL;
    a->link.len = 0;
    a->link_only = 0;
    if (a->failed)
        return shard_err_set(err, a->failed, "unreadable after an earlier error");
    for (;;) {
        struct archive_entry *e;
        a->problem = NULL;
        int rc = next_header(a, &e, err);
        if (rc <= 0)
            return rc;
        int header_failed = rc == 2;
        const char *name = entry_name(e);
        unsigned type = archive_entry_filetype(e);
        const char *target = entry_hardlink(e);
        if (type == AE_IFDIR)
            continue;
        if (!name) {
            st->ignored_special++;
            continue;
        }
        int safe = normalise_name(&a->key, name, err);
        if (safe < 0)
            return safe;
        if (!safe) { /* produced under its name as stored */
            a->key.len = 0;
            if ((rc = shard_buf_append(&a->key, name, strlen(name) + 1, err)))
                return rc;
            a->key.len--;
        }
        const char *key = (const char *)a->key.data;
        out->candidate = a->key.len && shard_is_candidate(key, a->key.len);
        if (!out->candidate && !(want && a->key.len && want(ctx, key, a->key.len))) {
            count_skipped(st, type, target != NULL);
            continue;
        }
        out->key = key;
        out->key_len = a->key.len;
        if (out->candidate)
            st->candidates++;
        int has_data = archive_entry_size(e) > 0;
        if (!safe) {
            snprintf(a->problem_text, sizeof a->problem_text, "%s%s", SK_REASON_UNSAFE,
                     name[0] == '/' ? "absolute path" : "'..' component");
            a->problem = a->problem_text;
        } else if (header_failed) {
            /* a->problem was set from the header's error */
        } else if (target && (type == AE_IFREG || type == 0)) {
            if ((rc = note_link(a, target, has_data, out, err)))
                return rc;
        } else if (type != AE_IFREG) {
            a->problem = sk_fs_not_regular(type);
        }
        int readable = !a->problem && !a->link_only;
        uint64_t limit = !out->candidate && a->max_other_bytes ? a->max_other_bytes : max_bytes;
        if (readable && archive_entry_is_data_encrypted(e)) {
            /* one unreadable entry must not stop the others */
            a->problem = SK_REASON_ENCRYPTED;
        } else if (readable) {
            /* what reading will hold: the declared size, up to the limit */
            uint64_t declared = archive_entry_size_is_set(e) && archive_entry_size(e) >= 0
                                    ? (uint64_t)archive_entry_size(e)
                                    : limit;
            if ((a->admit &&
                 (rc = a->admit(a->admit_ctx, declared > limit && limit ? 0 : declared, err))) ||
                (rc = read_data(a, e, limit, buf, &out->too_large, err)))
                return rc;
        }
        out->problem = a->problem;
        if (a->problem)
            buf->len = 0;
        return 1;
    }
}

int sk_archive_next_entry(struct sk_archive *a, uint64_t max_bytes,
                          int (*want)(void *ctx, const char *key, size_t len), void *ctx,
                          struct sk_archive_entry *out, struct shard_buf *buf,
                          struct shard_scan_stats *st, struct shard_err *err)
{
    locale_t saved = with_utf8_locale(a);
    int rc = next_entry(a, max_bytes, want, ctx, out, buf, st, err);
    restore_locale(saved);
    return rc;
}

int sk_archive_next(struct sk_archive *a, uint64_t max_bytes, const char **key, size_t *key_len,
                    struct shard_buf *buf, uint64_t *too_large, struct shard_scan_stats *st,
                    struct shard_err *err)
{
    struct sk_archive_entry ent;
    int rc = sk_archive_next_entry(a, max_bytes, NULL, NULL, &ent, buf, st, err);
    *key = rc == 1 ? ent.key : NULL;
    *key_len = rc == 1 ? ent.key_len : 0;
    *too_large = rc == 1 ? ent.too_large : 0;
    return rc;
}

const char *sk_archive_problem(const struct sk_archive *a)
{
    return a->problem;
}

const char *sk_archive_link(const struct sk_archive *a, size_t *len, int *link_only)
{
    if (len)
        *len = a->link.len;
    if (link_only)
        *link_only = a->link_only;
    return a->link.len ? (const char *)a->link.data : NULL;
}

uint64_t sk_archive_ordinal(const struct sk_archive *a)
{
    return a->ordinal ? a->ordinal - 1 : 0;
}
