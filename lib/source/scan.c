/* scan.c - finding candidate files below a directory and reading them
 * (see shardkit/source.h).
 *
 * The walk is depth-first with an explicit stack of open directories, each
 * opened relative to its parent with O_NOFOLLOW, so a symbolic link is never
 * followed, not even one swapped in for a directory during the walk.  One
 * descriptor is open per level; SCAN_MAX_DEPTH bounds that, and a deeper
 * directory is refused (its contents are not read) instead of failing later
 * with "too many open files".
 *
 * What the walk cannot use is refused, with a reason, rather than dropped:
 * a symbolic link or special file named like an image, and a directory that
 * cannot be listed (whose files, unknown, might be images).
 */
#include "shardkit/source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "util/grow.h"
#include "shardx/shardx.h"

/* Deepest directory nesting we walk (one open descriptor per level). */
#define SCAN_MAX_DEPTH 128

/* Extensions shardify reads; compared case-insensitively. */
static const char *const candidate_extensions[] = {
    "jpg", "jpeg", "png", "webp", "tif", "tiff", "gif", "bmp",
};
#define LONGEST_EXTENSION 4

int shard_is_candidate(const char *name, size_t len)
{
    /* The extension is what follows the last '.' of the last component. */
    size_t dot = len;
    for (size_t i = len; i-- > 0;) {
        if (name[i] == '/')
            return 0;
        if (name[i] == '.') {
            dot = i;
            break;
        }
    }
    if (dot == len)
        return 0;
    const char *ext = name + dot + 1;
    size_t ext_len = len - dot - 1;
    if (ext_len == 0 || ext_len > LONGEST_EXTENSION)
        return 0;
    for (size_t i = 0; i < sizeof candidate_extensions / sizeof *candidate_extensions; i++)
        if (strlen(candidate_extensions[i]) == ext_len &&
            strncasecmp(ext, candidate_extensions[i], ext_len) == 0)
            return 1;
    return 0;
}

/* ---- refusals ----------------------------------------------------------- */

int sk_reason_is_refusal(const char *reason)
{
    static const char *const prefixes[] = {
        SK_REASON_NOT_REGULAR, SK_REASON_DIRECTORY, SK_REASON_STAT, SK_REASON_UNSAFE,
        SK_REASON_DAMAGED,     SK_REASON_ENCRYPTED, SK_REASON_LINK, SK_REASON_STEM,
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(reason, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int compare_refusals(const void *pa, const void *pb)
{
    const struct shard_refusal *a = pa, *b = pb;
    return sk_key_compare(a->key, a->key_len, b->key, b->key_len);
}

const char *shard_refusals_find(const struct shard_refusals *r, const char *key, size_t len)
{
    if (!r || r->count == 0)
        return NULL;
    struct shard_refusal probe = {(char *)key, len, NULL};
    const struct shard_refusal *hit = bsearch(&probe, r->items, r->count, sizeof *r->items,
                                              compare_refusals);
    return hit ? hit->reason : NULL;
}

void shard_refusals_release(struct shard_refusals *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].key);
        free(r->items[i].reason);
    }
    free(r->items);
    memset(r, 0, sizeof *r);
}

void sk_refusals_sort(struct shard_refusals *r)
{
    if (r->count > 1)
        qsort(r->items, r->count, sizeof *r->items, compare_refusals);
}

int sk_refusals_add(struct shard_refusals *r, const char *key, size_t len, const char *reason,
                    struct shard_err *err)
{
    if (SK_GROW(r->items, r->cap, r->count + 1, 16))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    struct shard_refusal *it = &r->items[r->count];
    it->key = malloc(len + 1);
    it->key_len = len;
    it->reason = strdup(reason);
    if (!it->key || !it->reason) {
        free(it->key);
        free(it->reason);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    memcpy(it->key, key, len);
    it->key[len] = '\0';
    r->count++;
    return SHARD_OK;
}

/* ---- the walk ----------------------------------------------------------- */

struct scan_frame {
    DIR *dir;
    size_t prefix_len; /* bytes of `path` that name this directory, with its '/' */
};

struct scan {
    struct scan_frame frames[SCAN_MAX_DEPTH];
    size_t depth;          /* frames in use */
    struct shard_buf path; /* relative path of the current entry, NUL-terminated */
    struct shard_keylist *keys;
    struct shard_refusals *refused; /* NULL: the old rules (see source.h) */
    struct shard_scan_stats *st;
    const char *root;
    struct sk_sidecars *side; /* NULL: no sidecar files are looked for */
};

/* path = directory prefix + name, NUL-terminated. */
static int set_path(struct scan *s, size_t prefix_len, const char *name, size_t name_len,
                    struct shard_err *err)
{
    s->path.len = prefix_len;
    int rc = shard_buf_append(&s->path, name, name_len, err);
    if (rc == 0)
        rc = shard_buf_append(&s->path, "", 1, err);
    if (rc == 0)
        s->path.len--; /* the NUL stays in place, outside len */
    return rc;
}

/* The name for messages: the relative path, or the root itself. */
static const char *display_path(const struct scan *s)
{
    return s->path.len ? (const char *)s->path.data : s->root;
}

/* The entry at s->path is a candidate refused for `reason`: list it among
 * the keys (it takes its place as a candidate) and among the refusals.  A
 * directory's key ends in '/'. */
static int refuse(struct scan *s, int directory, const char *reason, struct shard_err *err)
{
    size_t len = s->path.len;
    int rc = directory ? shard_buf_append(&s->path, "/", 1, err) : SHARD_OK;
    if (rc == 0)
        rc = shard_keylist_add(s->keys, (const char *)s->path.data, s->path.len, err);
    if (rc == 0)
        rc = sk_refusals_add(s->refused, (const char *)s->path.data, s->path.len, reason, err);
    if (rc == 0)
        s->st->candidates++;
    s->path.len = len;
    s->path.data[len] = '\0';
    return rc;
}

/* A directory at s->path that cannot be listed (errno e, or a message). */
static int refuse_directory(struct scan *s, int e, const char *why, struct shard_err *err)
{
    char reason[2 * SHARD_ERRMSG_SIZE];
    if (!s->refused) { /* the old rule: the scan fails */
        if (why)
            return shard_err_set(err, SHARD_ELIMIT, "cannot scan '%s': %s", display_path(s), why);
        return shard_err_errno(err, SHARD_EIO, e, "cannot open directory '%s'", display_path(s));
    }
    struct shard_err text;
    shard_err_errno(&text, SHARD_EIO, e, "%s", ""); /* ": Permission denied" */
    snprintf(reason, sizeof reason, "%s%s", SK_REASON_DIRECTORY, why ? why : text.msg + 2);
    return refuse(s, 1, reason, err);
}

/* Open the directory `name` of the top frame and push it. */
static int enter_directory(struct scan *s, int parent_fd, const char *name, struct shard_err *err)
{
    if (s->depth == SCAN_MAX_DEPTH) {
        char why[64];
        snprintf(why, sizeof why, "directories nested more than %d levels deep",
                 SCAN_MAX_DEPTH - 1);
        return refuse_directory(s, 0, why, err);
    }
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) /* removed since we listed it: nothing to miss */
            return SHARD_OK;
        if (errno == ELOOP) { /* replaced by a symbolic link since we listed it */
            s->st->ignored_symlinks++;
            return SHARD_OK;
        }
        return refuse_directory(s, errno, NULL, err);
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        return refuse_directory(s, e, NULL, err);
    }
    int rc = shard_buf_append(&s->path, "/", 1, err);
    if (rc) {
        closedir(dir);
        return rc;
    }
    s->frames[s->depth].dir = dir;
    s->frames[s->depth].prefix_len = s->path.len;
    s->depth++;
    return SHARD_OK;
}

/* d_type, or the file type from fstatat when the file system does not fill
 * it in.  Returns DT_UNKNOWN for an entry that vanished meanwhile; an entry
 * that cannot be stat'ed is refused (or fails the scan without refusals). */
static int entry_type(int dir_fd, const struct dirent *de, int *type, struct scan *s,
                      struct shard_err *err)
{
    *type = de->d_type;
    if (*type != DT_UNKNOWN)
        return SHARD_OK;
    struct stat sb;
    if (fstatat(dir_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return SHARD_OK;
        if (!s->refused)
            return shard_err_errno(err, SHARD_EIO, errno, "cannot stat '%s'", display_path(s));
        struct shard_err text;
        char reason[2 * SHARD_ERRMSG_SIZE];
        shard_err_errno(&text, SHARD_EIO, errno, "%s", ""); /* ": Permission denied" */
        snprintf(reason, sizeof reason, "%s%s", SK_REASON_STAT, text.msg + 2);
        return refuse(s, 0, reason, err); /* *type stays DT_UNKNOWN: nothing more to do */
    }
    *type = IFTODT(sb.st_mode);
    return SHARD_OK;
}

/* Handle one directory entry of the top frame. */
static int visit(struct scan *s, const struct dirent *de, struct shard_err *err)
{
    struct scan_frame *top = &s->frames[s->depth - 1];
    const char *name = de->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
        return SHARD_OK;
    size_t name_len = strlen(name);
    int rc = set_path(s, top->prefix_len, name, name_len, err);
    if (rc)
        return rc;
    int dir_fd = dirfd(top->dir);
    int type;
    rc = entry_type(dir_fd, de, &type, s, err);
    if (rc)
        return rc;
    int candidate = shard_is_candidate(name, name_len);
    switch (type) {
    case DT_UNKNOWN: /* vanished, or refused */ return SHARD_OK;
    case DT_REG:
        if (s->side && sk_sidecars_suffix_of(s->side, name, name_len) >= 0) {
            rc = sk_sidecars_add_file(s->side, (const char *)s->path.data, s->path.len, err);
            if (rc == 0)
                s->st->sidecars++;
            return rc;
        }
        if (!candidate) {
            s->st->ignored++;
            return SHARD_OK;
        }
        rc = shard_keylist_add(s->keys, (const char *)s->path.data, s->path.len, err);
        if (rc == 0)
            s->st->candidates++;
        return rc;
    case DT_DIR: return enter_directory(s, dir_fd, name, err);
    default:
        /* never opened: a device may act on an open, a fifo may block it */
        if (s->side && sk_sidecars_suffix_of(s->side, name, name_len) >= 0) {
            /* named as a sidecar file: the image has it, and it cannot be read */
            rc = sk_sidecars_add_refused(s->side, (const char *)s->path.data, s->path.len,
                                         sk_fs_not_regular(DTTOIF(type)), err);
            if (rc == 0)
                s->st->sidecars++;
            return rc;
        }
        if (candidate && s->refused)
            return refuse(s, 0, sk_fs_not_regular(DTTOIF(type)), err);
        if (type == DT_LNK)
            s->st->ignored_symlinks++;
        else
            s->st->ignored_special++;
        return SHARD_OK;
    }
}

int shard_scan_dir(const char *root, struct shard_keylist *keys, struct shard_refusals *refused,
                   struct shard_scan_stats *st, struct shard_err *err)
{
    return sk_scan_dir(root, keys, NULL, refused, st, err);
}

int sk_scan_dir(const char *root, struct shard_keylist *keys, struct sk_sidecars *side,
                struct shard_refusals *refused, struct shard_scan_stats *st, struct shard_err *err)
{
    struct scan s = {.keys = keys, .refused = refused, .st = st, .root = root, .side = side};
    size_t side_before = side ? sk_sidecars_file_count(side) : 0;
    size_t keys_before = keys->count, arena_before = keys->arena_len;
    size_t refused_before = refused ? refused->count : 0;
    int rc = SHARD_OK;

    /* The root itself may be a symbolic link: the user named it. */
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the SRC named */
    if (fd < 0) {
        if (errno == ENOENT)
            return shard_err_set(err, SHARD_ENOTFOUND, "source '%s' does not exist", root);
        if (errno == ENOTDIR)
            return shard_err_set(err, SHARD_EINVAL, "source '%s' is not a directory", root);
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open source '%s'", root);
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        return shard_err_errno(err, SHARD_EIO, e, "cannot open source '%s'", root);
    }
    s.frames[0] = (struct scan_frame){dir, 0};
    s.depth = 1;

    while (s.depth) {
        struct scan_frame *top = &s.frames[s.depth - 1];
        errno = 0;
        struct dirent *de = readdir(top->dir);
        if (!de) {
            if (errno) {
                int e = errno;
                s.path.len = top->prefix_len ? top->prefix_len - 1 : 0;
                if (s.path.len)
                    s.path.data[s.path.len] = '\0';
                /* a subdirectory that fails half-way is refused: what was
                 * listed of it stays, the reason says the list is short */
                if (s.depth > 1 && refused)
                    rc = refuse_directory(&s, e, NULL, err);
                else
                    rc = shard_err_errno(err, SHARD_EIO, e, "cannot read directory '%s'",
                                         display_path(&s));
                if (rc)
                    goto out;
            }
            closedir(top->dir);
            s.depth--;
            continue;
        }
        rc = visit(&s, de, err);
        if (rc)
            goto out;
    }
out:
    while (s.depth)
        closedir(s.frames[--s.depth].dir);
    shard_buf_release(&s.path);
    if (rc) {
        /* Leave the lists as they were: a failed scan adds no keys. */
        keys->count = keys_before;
        keys->arena_len = arena_before;
        if (side)
            sk_sidecars_truncate(side, side_before);
        while (refused && refused->count > refused_before) {
            refused->count--;
            free(refused->items[refused->count].key);
            free(refused->items[refused->count].reason);
        }
    } else if (refused) {
        sk_refusals_sort(refused);
    }
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

/* O_NONBLOCK: a fifo swapped in for the file must not hang the open; it has
 * no effect on the regular files we go on to read. */
#define SOURCE_OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* openat() of a key too long for one path (PATH_MAX, 4096 bytes with its
 * NUL, while a key may be 4096 bytes and the walk nests deeper still): one
 * directory at a time, as the walk went, never following a link.  -1 with
 * errno set on failure. */
static int open_long_key(int root_fd, const char *key)
{
    int dir = root_fd;
    const char *p = key, *slash;
    while ((slash = strchr(p, '/'))) {
        char name[NAME_MAX + 1];
        size_t n = (size_t)(slash - p);
        if (n > NAME_MAX) {
            errno = ENAMETOOLONG;
            goto fail;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            goto fail;
        if (dir != root_fd)
            close(dir);
        dir = next;
        p = slash + 1;
    }
    int fd = openat(dir, p, SOURCE_OPEN_FLAGS); /* nofollow: SOURCE_OPEN_FLAGS has it */
    if (fd < 0)
        goto fail;
    if (dir != root_fd)
        close(dir);
    return fd;
fail:
    if (dir != root_fd) {
        int e = errno;
        close(dir);
        errno = e;
    }
    return -1;
}

/* A file another client holds (a lease: Samba's oplocks, NFS delegations)
 * fails an O_NONBLOCK open with EAGAIN while the holder is asked to let go:
 * the open is tried SOURCE_OPEN_TRIES times, the wait doubling from
 * SOURCE_OPEN_FIRST_WAIT up to SOURCE_OPEN_LONGEST_WAIT (about 5 s in all). */
#define SOURCE_OPEN_TRIES 13
#define SOURCE_OPEN_FIRST_WAIT 0.005
#define SOURCE_OPEN_LONGEST_WAIT 1.0

/* openat() of a source file, tried again while it is busy (EAGAIN).  -1
 * with errno set on failure; EINTR when a signal ended a wait. */
static int open_source(int root_fd, const char *key, int *tries, double *waited)
{
    double wait = SOURCE_OPEN_FIRST_WAIT;
    *waited = 0;
    for (*tries = 1;; ++*tries) {
        int fd = openat(root_fd, key, SOURCE_OPEN_FLAGS); /* nofollow: SOURCE_OPEN_FLAGS has it */
        if (fd < 0 && errno == ENAMETOOLONG)
            fd = open_long_key(root_fd, key);
        if (fd >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || *tries == SOURCE_OPEN_TRIES)
            return fd;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        if (nanosleep(&ts, NULL) != 0)
            return -1; /* EINTR: asked to stop */
        *waited += wait;
        wait = wait * 2 < SOURCE_OPEN_LONGEST_WAIT ? wait * 2 : SOURCE_OPEN_LONGEST_WAIT;
    }
}

/* Messages give the reason only ("file vanished"), like the decoder's: the
 * caller names the key, e.g. "rejected 'a/b.jpg': file vanished". */
int sk_source_file_open(int root_fd, const char *key, int *fd_out, struct shard_err *err)
{
    int tries;
    double waited;
    int fd = open_source(root_fd, key, &tries, &waited);
    *fd_out = fd;
    if (fd < 0) {
        if (errno == EINTR)
            return shard_err_set(err, SHARD_EINTR, "interrupted");
        /* still busy: the file's holder, not the file (like a store that
         * cannot be reached, SHARD_ENET: never taken for a reject, so the
         * message names the file) */
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            char shown[SHARDX_QUOTE_SIZE];
            return shard_err_errno(err, SHARD_ENET, errno,
                                   "cannot open '%s' (still busy after %d tries in %.1f s: a "
                                   "lease another client holds?)",
                                   shardx_quote(key, strlen(key), shown, sizeof shown), tries,
                                   waited);
        }
        if (errno == ENOENT)
            return shard_err_set(err, SHARD_ENOTFOUND, "file vanished");
        if (errno == ELOOP)
            return shard_err_set(err, SHARD_EIO, "refusing to follow a symbolic link");
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open");
    }
    return SHARD_OK;
}

int shard_read_source_file(int root_fd, const char *key, uint64_t max_bytes, struct shard_buf *buf,
                           struct shard_err *err)
{
    buf->len = 0;
    int fd;
    int rc = sk_source_file_open(root_fd, key, &fd, err);
    return rc ? rc : sk_source_file_read(fd, max_bytes, buf, err);
}

int sk_source_file_read(int fd, uint64_t max_bytes, struct shard_buf *buf, struct shard_err *err)
{
    return sk_source_file_read_stat(fd, NULL, max_bytes, buf, err);
}

int sk_source_file_read_stat(int fd, const struct stat *known, uint64_t max_bytes,
                             struct shard_buf *buf, struct shard_err *err)
{
    buf->len = 0;
    int rc = SHARD_OK;
    struct stat sb;
    if (known)
        sb = *known;
    else if (fstat(fd, &sb) != 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot stat");
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = shard_err_set(err, SHARD_EIO, "not a regular file");
        goto out;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if ((max_bytes && size > max_bytes) || size >= SIZE_MAX) {
        rc = shard_err_set(err, SHARD_ELIMIT, "file of %llu bytes exceeds the limit of %llu",
                           (unsigned long long)size,
                           (unsigned long long)(max_bytes ? max_bytes : SIZE_MAX - 1));
        goto out;
    }
    /* One spare byte lets us see growth without reading an unbounded file. */
    size_t want = (size_t)size + 1;
    rc = shard_buf_reserve(buf, want, err);
    if (rc)
        goto out;
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf->data + got, want - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = shard_err_errno(err, SHARD_EIO, errno, "read error");
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got == want)
            break;
    }
    if (got > size) {
        rc = shard_err_set(err, SHARD_EIO,
                           "file changed while being read (grew beyond its "
                           "%llu bytes)",
                           (unsigned long long)size);
        goto out;
    }
    if (got < size) {
        rc = shard_err_set(err, SHARD_EIO,
                           "file changed while being read (%llu bytes "
                           "expected, %zu read)",
                           (unsigned long long)size, got);
        goto out;
    }
    buf->len = got;
out:
    close(fd);
    return rc;
}

int shard_path_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}
