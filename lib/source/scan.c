/* scan.c - finding candidate files below a directory and reading them
 * (see shardkit/source.h).
 *
 * The walk is depth-first with an explicit stack of open directories, each
 * opened relative to its parent with O_NOFOLLOW, so a symbolic link is never
 * followed, not even one swapped in for a directory during the walk.  One
 * descriptor is open per level; SCAN_MAX_DEPTH bounds that, and a deeper
 * tree is refused with an error naming the directory instead of failing
 * later with "too many open files".
 */
#include "shardkit/source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- the walk ----------------------------------------------------------- */

struct scan_frame {
    DIR *dir;
    size_t prefix_len;  /* bytes of `path` that name this directory, with its '/' */
};

struct scan {
    struct scan_frame frames[SCAN_MAX_DEPTH];
    size_t depth;             /* frames in use */
    struct shard_buf path;    /* relative path of the current entry, NUL-terminated */
    struct shard_keylist *keys;
    struct shard_scan_stats *st;
    const char *root;
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
        s->path.len--;  /* the NUL stays in place, outside len */
    return rc;
}

/* The name for messages: the relative path, or the root itself. */
static const char *display_path(const struct scan *s)
{
    return s->path.len ? (const char *)s->path.data : s->root;
}

/* Open the directory `name` of the top frame and push it. */
static int enter_directory(struct scan *s, int parent_fd, const char *name,
                           struct shard_err *err)
{
    if (s->depth == SCAN_MAX_DEPTH)
        return shard_err_set(err, SHARD_ELIMIT,
                             "cannot scan '%s': directories nested more than %d levels deep",
                             display_path(s), SCAN_MAX_DEPTH - 1);
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)  /* removed since we listed it: nothing to miss */
            return SHARD_OK;
        if (errno == ELOOP) {  /* replaced by a symbolic link since we listed it */
            s->st->ignored_symlinks++;
            return SHARD_OK;
        }
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open directory '%s'",
                               display_path(s));
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        return shard_err_errno(err, SHARD_EIO, e, "cannot open directory '%s'", display_path(s));
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
 * it in.  Returns DT_UNKNOWN for an entry that vanished meanwhile. */
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
        return shard_err_errno(err, SHARD_EIO, errno, "cannot stat '%s'", display_path(s));
    }
    *type = S_ISREG(sb.st_mode) ? DT_REG : S_ISDIR(sb.st_mode) ? DT_DIR
          : S_ISLNK(sb.st_mode) ? DT_LNK : DT_FIFO;  /* any other kind is "special" */
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
    switch (type) {
    case DT_UNKNOWN:  /* vanished */
        return SHARD_OK;
    case DT_REG:
        if (!shard_is_candidate(name, name_len)) {
            s->st->ignored++;
            return SHARD_OK;
        }
        rc = shard_keylist_add(s->keys, (const char *)s->path.data, s->path.len, err);
        if (rc == 0)
            s->st->candidates++;
        return rc;
    case DT_DIR:
        return enter_directory(s, dir_fd, name, err);
    case DT_LNK:
        s->st->ignored_symlinks++;
        return SHARD_OK;
    default:
        s->st->ignored_special++;
        return SHARD_OK;
    }
}

int shard_scan_dir(const char *root, struct shard_keylist *keys, struct shard_scan_stats *st,
                   struct shard_err *err)
{
    struct scan s = {.keys = keys, .st = st, .root = root};
    size_t keys_before = keys->count, arena_before = keys->arena_len;
    int rc = SHARD_OK;

    /* The root itself may be a symbolic link: the user named it. */
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
                s.path.len = top->prefix_len ? top->prefix_len - 1 : 0;
                if (s.path.len)
                    s.path.data[s.path.len] = '\0';
                rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read directory '%s'",
                                     display_path(&s));
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
        /* Leave the list as it was: a failed scan adds no keys. */
        keys->count = keys_before;
        keys->arena_len = arena_before;
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
    int fd = openat(dir, p, SOURCE_OPEN_FLAGS);
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

/* Messages give the reason only ("file vanished"), like the decoder's: the
 * caller names the key, e.g. "rejected 'a/b.jpg': file vanished". */
int shard_read_source_file(int root_fd, const char *key, uint64_t max_bytes, struct shard_buf *buf,
                    struct shard_err *err)
{
    buf->len = 0;
    int fd = openat(root_fd, key, SOURCE_OPEN_FLAGS);
    if (fd < 0 && errno == ENAMETOOLONG)
        fd = open_long_key(root_fd, key);
    if (fd < 0) {
        if (errno == ENOENT)
            return shard_err_set(err, SHARD_ENOTFOUND, "file vanished");
        if (errno == ELOOP)
            return shard_err_set(err, SHARD_EIO, "refusing to follow a symbolic link");
        return shard_err_errno(err, SHARD_EIO, errno, "cannot open");
    }
    int rc = SHARD_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
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
        rc = shard_err_set(err, SHARD_EIO, "file changed while being read (grew beyond its "
                           "%llu bytes)", (unsigned long long)size);
        goto out;
    }
    if (got < size) {
        rc = shard_err_set(err, SHARD_EIO, "file changed while being read (%llu bytes "
                           "expected, %zu read)", (unsigned long long)size, got);
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
