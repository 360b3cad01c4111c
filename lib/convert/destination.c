/* destination.c - the destination directory: contents check, lock, overwrite, cleanup.
 *
 * DST is opened once (d->fd) and DST/.shardify once relative to it
 * (d->work_fd, O_NOFOLLOW); everything below works on entries of those two
 * descriptors with *at() calls that do not follow links, and lists them
 * through descriptors of their own.  Checks come first and creation second:
 * a run refused before it takes the lock has created nothing, and one
 * refused after leaves nothing it created (see sk_dst_close). */
#include "convert/destination.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/s3.h"
#include "util/fsutil.h"
#include "shardkit/format.h"
#include "shardkit/manifest.h"

#define LOCK_FILE "lock"
/* Tries at a lock whose file a finishing run removes at that very moment. */
#define LOCK_ATTEMPTS 3
/* take_lock: the lock file was unlinked under us; open it again */
#define LOCK_STALE 1

/* "shard-NNNNNN.shard" with at least six digits; *n gets the number. */
int sk_dst_is_shard_name(const char *name, uint32_t *n)
{
    if (strncmp(name, "shard-", 6) != 0)
        return 0;
    const char *p = name + 6;
    uint64_t v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 10) {
        v = v * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (digits < 6 || v > UINT32_MAX || strcmp(p, SHARD_FILE_EXT) != 0)
        return 0;
    if (n)
        *n = (uint32_t)v;
    return 1;
}

int sk_dst_is_index_name(const char *name)
{
    unsigned i, n;
    int end = 0;
    if (!strcmp(name, SHARD_INDEX_FILE) || !strcmp(name, SHARD_INDEX_KEYS_FILE))
        return 1;
    return (sscanf(name, "index-%u-of-%u.jsonl%n", &i, &n, &end) == 2 && !name[end]) ||
           (end = 0, sscanf(name, "index-%u-of-%u.keys%n", &i, &n, &end) == 2 && !name[end]);
}

/* Names shardify itself writes at the top of DST. */
int sk_dst_is_output_name(const char *name)
{
    static const char *const known[] = {
        SHARD_MANIFEST_FILE,
        SHARD_ARCHIVES_FILE,
        "." SHARD_INDEX_KEYS_FILE ".tmp",
        "." SHARD_ARCHIVES_FILE ".tmp",
        SHARDIFY_RUN_FILE,
        SHARDIFY_WORK_DIR,
        "." SHARD_MANIFEST_FILE ".tmp",
        "." SHARD_INDEX_FILE ".tmp",
        "." SHARDIFY_RUN_FILE ".tmp",
        SHARDIFY_PART_FILE,
        "." SHARDIFY_PART_FILE ".tmp",
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i]))
            return 1;
    return sk_dst_is_shard_name(name, NULL) || sk_dst_is_index_name(name);
}

/* ---- where DST is ----------------------------------------------------------- */

/* The absolute path `path` names once the missing directories on the way to
 * it are created: the real path of its longest existing prefix, then the
 * rest taken lexically (directories yet to be created hold no links).
 * malloc'd; NULL when it cannot be told. */
static char *future_realpath(const char *path)
{
    char *prefix = strdup(path), *base = NULL, *out = NULL;
    if (!prefix)
        return NULL;
    for (;;) {
        base = realpath(prefix[0] ? prefix : ".", NULL);
        if (base || errno != ENOENT || !prefix[0])
            break;
        char *slash = strrchr(prefix, '/');
        if (!slash)
            prefix[0] = '\0';
        else
            slash[slash == prefix] = '\0'; /* keep "/" itself */
    }
    const char *rest = path + strlen(prefix);
    if (base && (out = malloc(strlen(base) + strlen(rest) + 2))) {
        strcpy(out, base);
        for (const char *c = rest; *c;) {
            size_t n = strcspn(c, "/");
            if (n == 2 && !strncmp(c, "..", 2)) {
                char *slash = strrchr(out, '/');
                slash[slash == out] = '\0';
            } else if (n && !(n == 1 && c[0] == '.')) {
                size_t len = strlen(out);
                if (out[len - 1] != '/')
                    out[len++] = '/';
                memcpy(out + len, c, n);
                out[len + n] = '\0';
            }
            c += n + (c[n] == '/');
        }
    }
    free(base);
    free(prefix);
    return out;
}

/* Is `inner` the directory `outer` or below it (both absolute, resolved)? */
static int is_within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    return !strcmp(inner, outer) ||
           (!strncmp(outer, inner, n) && (inner[n] == '/' || !strcmp(outer, "/")));
}

/* DST inside SRC would make the output part of its own input; SRC inside DST
 * would put the input among the files shardify removes.  Checked before DST
 * is created, so a refused run creates nothing. */
static int check_nesting(const char *src, const char *dst, struct shard_err *err)
{
    if (sk_s3_is_location(src)) /* a local DST cannot be inside an S3 source */
        return SHARD_OK;
    char *s = realpath(src, NULL), *d = future_realpath(dst);
    int rc = SHARD_OK;
    if (s && d) {
        if (is_within(d, s))
            rc = shard_err_set(err, SHARD_EINVAL, "destination '%s' is inside the source '%s'", dst,
                               src);
        else if (is_within(s, d))
            rc = shard_err_set(err, SHARD_EINVAL, "source '%s' is inside the destination '%s'", src,
                               dst);
    }
    free(s);
    free(d);
    return rc;
}

/* mkdir -p; *created gets the outermost directory it made (malloc'd). */
static int mkdir_p(const char *path, char **created, struct shard_err *err)
{
    char *p = strdup(path);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char saved = *s;
            *s = '\0';
            if (mkdir(p, 0755) == 0) {
                if (!*created && !(*created = strdup(p))) {
                    rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
                    break;
                }
            } else if (errno != EEXIST) {
                rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create directory '%s'", p);
                break;
            }
            *s = saved;
            if (!saved)
                break;
        }
    }
    free(p);
    return rc;
}

/* Remove the directories this run created on the way to DST, deepest
 * first, each only while it is empty (rmdir never removes anything else). */
static void remove_created(struct dst *d)
{
    if (!d->created)
        return;
    size_t stop = strlen(d->created);
    char *p = strdup(d->path);
    while (p && strlen(p) >= stop && rmdir(p) == 0 && strlen(p) > stop) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            break;
        *slash = '\0';
    }
    free(p);
}

/* ---- what DST holds ------------------------------------------------------------ */

/* Call fn(d, name, user, err) for each entry of the open directory `dirfd`
 * (named `dir` in messages) but "." and "..", until one returns non-zero,
 * and return that.  The listing has a descriptor of its own, so dirfd keeps
 * its offset. */
typedef int (*entry_fn)(struct dst *d, const char *name, void *user, struct shard_err *err);

static int for_each_entry(struct dst *d, int dirfd, const char *dir, entry_fn fn, void *user,
                          struct shard_err *err)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: "." */
    DIR *list = fd >= 0 ? fdopendir(fd) : NULL;
    if (!list) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return shard_err_errno(err, SHARD_EIO, e, "cannot list '%s'", dir);
    }
    int rc = SHARD_OK;
    struct dirent *e;
    while (!rc && (e = readdir(list)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = fn(d, e->d_name, user, err);
    closedir(list);
    return rc;
}

/* Open DST/.shardify, creating it first when `create`; never through a link.
 * Without `create` a missing work directory leaves work_fd at -1. */
static int open_work(struct dst *d, int create, struct shard_err *err)
{
    if (create) {
        if (mkdirat(d->fd, SHARDIFY_WORK_DIR, 0755) == 0)
            d->created_work = 1;
        else if (errno != EEXIST)
            return shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", d->work);
    }
    d->work_fd = openat(d->fd, SHARDIFY_WORK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->work_fd >= 0 || (errno == ENOENT && !create))
        return SHARD_OK;
    int e = errno;
    int rc = sk_fs_check_own_at(d->fd, d->path, SHARDIFY_WORK_DIR, 1, err); /* a link, a file */
    return rc ? rc : shard_err_errno(err, SHARD_EIO, e, "cannot open '%s'", d->work);
}

/* Are DST/.shardify and its lock still the directory and file we hold open
 * (a run finishing at this moment removes both)? */
static int still_ours(const struct dst *d, int lock_fd)
{
    struct stat held, named;
    if (fstat(d->work_fd, &held) != 0 ||
        fstatat(d->fd, SHARDIFY_WORK_DIR, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
        held.st_dev != named.st_dev || held.st_ino != named.st_ino)
        return 0;
    if (lock_fd < 0)
        return 1;
    return fstat(lock_fd, &held) == 0 &&
           fstatat(d->work_fd, LOCK_FILE, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
           held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

static int inspect_entry(struct dst *d, const char *name, void *has_work, struct shard_err *err)
{
    if (!sk_dst_is_output_name(name))
        return shard_err_set(err, SHARD_EEXIST,
                             "destination '%s' holds '%s', which shardify did not write; "
                             "choose an empty or new directory",
                             d->path, name);
    int is_work = !strcmp(name, SHARDIFY_WORK_DIR);
    if (!strcmp(name, SHARD_MANIFEST_FILE))
        d->has_manifest = 1;
    if (is_work)
        *(int *)has_work = 1;
    else
        d->has_output = 1;
    return sk_fs_check_own_at(d->fd, d->path, name, is_work, err);
}

static int inspect_work_entry(struct dst *d, const char *name, void *user, struct shard_err *err)
{
    if (!strcmp(name, DST_STATE_FILE))
        d->has_state = 1;
    return sk_fs_check_own_at(d->work_fd, d->work, name, 0, err);
}

/* List DST (and DST/.shardify when it exists): only shardify's names, each
 * of the type shardify writes, no link among them. */
static int inspect(struct dst *d, struct shard_err *err)
{
    d->has_manifest = d->has_output = d->has_state = 0;
    int has_work = 0;
    int rc = for_each_entry(d, d->fd, d->path, inspect_entry, &has_work, err);
    if (!rc && d->remote)
        rc = sk_dst_s3_inspect(d, err);
    if (rc || !has_work)
        return rc;
    if (d->work_fd < 0 && ((rc = open_work(d, 0, err)) || d->work_fd < 0))
        return rc;
    return for_each_entry(d, d->work_fd, d->work, inspect_work_entry, NULL, err);
}

/* Does `mode` allow a run on what inspect() found? */
static int refuse(const struct dst *d, enum shardify_mode mode, struct shard_err *err)
{
    switch (mode) {
    case SHARDIFY_FRESH:
        if (d->has_manifest)
            return shard_err_set(err, SHARD_EEXIST,
                                 "destination '%s' holds a previous shardify output; "
                                 "pass --overwrite to replace it",
                                 d->name);
        if (d->has_state || d->has_output)
            return shard_err_set(err, SHARD_EEXIST,
                                 "destination '%s' holds an interrupted shardify run; "
                                 "pass --resume to continue it or --overwrite to replace it",
                                 d->name);
        break;
    case SHARDIFY_RESUME:
        if (d->has_manifest)
            return shard_err_set(err, SHARD_EEXIST,
                                 "destination '%s' holds a complete dataset: nothing to resume "
                                 "(pass --overwrite to rebuild it)",
                                 d->name);
        break;
    case SHARDIFY_OVERWRITE: break;
    }
    return SHARD_OK;
}

/* ---- removing ---------------------------------------------------------------- */

/* What remove_outputs keeps. */
struct keep {
    int manifest;
    uint32_t first_shard;
};

static int remove_entry(struct dst *d, const char *name, void *user, struct shard_err *err)
{
    const struct keep *k = user;
    uint32_t n;
    int keep = sk_dst_is_shard_name(name, &n)
                   ? n < k->first_shard
                   : !sk_dst_is_output_name(name) || !strcmp(name, SHARDIFY_WORK_DIR) ||
                         (k->manifest && !strcmp(name, SHARD_MANIFEST_FILE));
    if (keep)
        return SHARD_OK;
    if (unlinkat(d->fd, name, 0) != 0 && errno != ENOENT)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", d->path, name);
    return SHARD_OK;
}

static int remove_work_entry(struct dst *d, const char *name, void *user, struct shard_err *err)
{
    const struct keep *k = user;
    if (!strcmp(name, LOCK_FILE))
        return SHARD_OK;
    /* journal-NNNNNN.jsonl and shard temporaries below `first_shard` stay */
    unsigned n;
    if (sscanf(name, "journal-%6u.jsonl", &n) == 1 && n < k->first_shard &&
        strlen(name) == strlen("journal-000000.jsonl"))
        return SHARD_OK;
    if (k->first_shard > 0 && !strcmp(name, DST_STATE_FILE))
        return SHARD_OK;
    if (unlinkat(d->work_fd, name, 0) != 0 && errno != ENOENT)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", d->work, name);
    return SHARD_OK;
}

/* Remove the entries of DST that shardify wrote (shards from `first_shard`
 * on), then the work directory's files but the lock, the journals of shards
 * below `first_shard` and, when some are kept, the state.  unlinkat on
 * entries of the two descriptors: a link is removed, never followed. */
static int remove_outputs(struct dst *d, int keep_manifest, uint32_t first_shard,
                          struct shard_err *err)
{
    struct keep k = {keep_manifest, first_shard};
    int rc = d->remote ? sk_dst_s3_remove(d, keep_manifest, first_shard, err) : SHARD_OK;
    if (!rc)
        rc = for_each_entry(d, d->fd, d->path, remove_entry, &k, err);
    if (!rc)
        rc = for_each_entry(d, d->work_fd, d->work, remove_work_entry, &k, err);
    return rc ? rc : sk_fs_sync_dirfd(d->fd, d->path, err);
}

int sk_dst_remove_from(struct dst *d, uint32_t first, struct shard_err *err)
{
    return remove_outputs(d, 1, first, err);
}

/* 1 at an entry that is not the lock (see work_is_bare). */
static int not_lock(struct dst *d, const char *name, void *user, struct shard_err *err)
{
    return strcmp(name, LOCK_FILE) != 0;
}

/* Does the work directory hold nothing but (at most) the lock? */
static int work_is_bare(struct dst *d)
{
    return for_each_entry(d, d->work_fd, d->work, not_lock, NULL, NULL) == 0;
}

/* Remove an entry of the work directory, whatever happens (cleanup). */
static int unlink_work_entry(struct dst *d, const char *name, void *user, struct shard_err *err)
{
    unlinkat(d->work_fd, name, 0);
    return SHARD_OK;
}

/* ---- the lock ---------------------------------------------------------------------- */

/* The error for a lock (open as fd) another run holds: it names the pid
 * the holder wrote into it. */
static int in_use(const struct dst *d, int fd, struct shard_err *err)
{
    char pid[32] = "";
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    pid[strcspn(pid, "\n")] = '\0';
    return shard_err_set(err, SHARD_ELOCKED,
                         "'%s' is in use by another shardify run (pid %s); "
                         "wait for it to finish",
                         d->name, pid[0] ? pid : "unknown");
}

/* Is another run at work in DST, holding the lock?  Then that is the
 * error, before what its files look like is judged: a running run's work
 * directory looks like an interrupted one's.  A lock that cannot be opened
 * or is free is no error here (take_lock judges it). */
static int busy(const struct dst *d, struct shard_err *err)
{
    if (d->work_fd < 0)
        return SHARD_OK;
    int fd = openat(d->work_fd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return SHARD_OK;
    struct stat st;
    int rc = SHARD_OK;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0 &&
        errno == EWOULDBLOCK)
        rc = in_use(d, fd, err);
    close(fd); /* releases the shared lock, if it was taken */
    return rc;
}

/* Open and flock DST/.shardify/lock (created if missing, never through a
 * link, and only as a regular file with no other name: its pid is written
 * into it).  LOCK_STALE when a finishing run removed it meanwhile. */
static int take_lock(struct dst *d, struct shard_err *err)
{
    int fd = openat(d->work_fd, LOCK_FILE, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);
    if (fd < 0 && errno == EEXIST) /* a previous run's: taken over below */
        fd = openat(d->work_fd, LOCK_FILE, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? sk_fs_err_link(err, d->work, LOCK_FILE)
                              : shard_err_errno(err, SHARD_EIO, errno, "cannot open lock '%s/%s'",
                                                d->work, LOCK_FILE);
    struct stat st;
    int rc = SHARD_OK;
    if (fstat(fd, &st) != 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot inspect lock '%s/%s'", d->work,
                             LOCK_FILE);
    } else if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
        /* a hard link would make the pid below overwrite another file */
        rc = shard_err_set(err, SHARD_EEXIST,
                           "'%s/%s' is not a regular file with a single name, so shardify did "
                           "not write it: remove it",
                           d->work, LOCK_FILE);
    } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            rc = in_use(d, fd, err);
        } else {
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot lock '%s/%s'", d->work, LOCK_FILE);
        }
    } else if (!still_ours(d, fd)) {
        rc = LOCK_STALE;
    }
    if (rc) {
        close(fd);
        return rc;
    }
    d->lock_fd = fd;
    /* The kernel drops a flock when its holder dies, so a lock file left by
     * a killed run is simply taken over here.  The pid is informative. */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot write lock '%s/%s'", d->work,
                               LOCK_FILE);
    return SHARD_OK;
}

static int lock(struct dst *d, struct shard_err *err)
{
    for (int attempt = 1;; attempt++) {
        int rc = take_lock(d, err);
        if (rc != LOCK_STALE)
            return rc;
        if (attempt == LOCK_ATTEMPTS)
            return shard_err_set(err, SHARD_ELOCKED,
                                 "'%s' keeps changing while shardify takes its lock; is "
                                 "another run finishing?",
                                 d->work);
        close(d->work_fd);
        d->work_fd = -1;
        if ((rc = open_work(d, 1, err)))
            return rc;
    }
}

/* ---- the destination ---------------------------------------------------------------- */

/* Open DST as given: a symbolic link given as DST is followed (like cd). */
static int open_dst(struct dst *d, struct shard_err *err)
{
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the DST named */
    if (d->fd < 0)
        return shard_err_errno(err, errno == ENOTDIR ? SHARD_EEXIST : SHARD_EIO, errno,
                               "cannot open destination '%s'", d->path);
    return SHARD_OK;
}

static int apply(struct dst *d, enum shardify_mode mode, struct shard_err *err)
{
    int rc = SHARD_OK;
    switch (mode) {
    case SHARDIFY_FRESH: return remove_outputs(d, 0, 0, err); /* a killed run's stray temporaries */
    case SHARDIFY_OVERWRITE:
        /* Unpublish first: from here on no manifest names an old shard. */
        /* (an s3:// DST: remove_outputs deletes the manifest object first) */
        if (unlinkat(d->fd, SHARD_MANIFEST_FILE, 0) != 0 && errno != ENOENT)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", d->path,
                                 SHARD_MANIFEST_FILE);
        if (!rc)
            rc = sk_fs_sync_dirfd(d->fd, d->path, err);
        if (!rc)
            rc = remove_outputs(d, 0, 0, err);
        d->has_manifest = d->has_state = 0;
        return rc;
    case SHARDIFY_RESUME:
        /* nothing recorded to resume (e.g. an --overwrite killed while it
         * removed the old dataset): start clean, leaving no old shard */
        return d->has_state ? SHARD_OK : remove_outputs(d, 0, 0, err);
    }
    return rc;
}

int sk_dst_open(struct dst **out, const char *path, const char *src, const char *work_dir,
                enum shardify_mode mode, struct shard_err *err)
{
    *out = NULL;
    if (!path[0])
        return shard_err_set(err, SHARD_EINVAL, "the destination is an empty path");
    if (work_dir && !sk_s3_is_location(path))
        return shard_err_set(err, SHARD_EINVAL,
                             "--work-dir is for an s3:// destination; "
                             "a local one keeps its work in DST/%s",
                             SHARDIFY_WORK_DIR);
    struct dst *d = calloc(1, sizeof *d);
    if (!d)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    d->fd = d->work_fd = d->lock_fd = -1;
    int rc;
    if (!(d->name = strdup(path))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    if (sk_s3_is_location(path)) {
        if ((rc = sk_s3_open(&d->remote, path, err)) ||
            (rc = sk_dst_s3_check_nesting(src, d->remote, err)) ||
            (rc = sk_dst_s3_staging(d->remote, work_dir, &d->path, err)))
            goto fail;
        if (sk_s3_is_location(src))
            src = NULL; /* nesting checked; the staging directory is not near it */
    } else if (!(d->path = strdup(path))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t n = strlen(d->path); n > 1 && d->path[n - 1] == '/'; n--)
        d->path[n - 1] = '\0';
    if (!d->remote) { /* messages name DST as trimmed */
        free(d->name);
        if (!(d->name = strdup(d->path))) {
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
            goto fail;
        }
    }
    if (!(d->work = sk_fs_join(d->path, SHARDIFY_WORK_DIR))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    if (src && (rc = check_nesting(src, d->path, err)))
        goto fail;
    /* check first: an existing DST is refused before anything is created */
    struct stat st;
    if (stat(d->path, &st) != 0) {
        if ((rc = mkdir_p(d->path, &d->created, err)) || (rc = open_dst(d, err)))
            goto fail;
    } else if (!S_ISDIR(st.st_mode)) {
        rc = shard_err_set(err, SHARD_EEXIST, "destination '%s' is not a directory", d->path);
        goto fail;
    } else if ((rc = open_dst(d, err)) || (rc = inspect(d, err)) || (rc = busy(d, err)) ||
               (rc = refuse(d, mode, err))) {
        goto fail;
    }
    /* create second: the work directory and the lock; then check again
     * under the lock, since another run may have changed DST meanwhile */
    if ((d->work_fd < 0 && (rc = open_work(d, 1, err))) || (rc = lock(d, err)) ||
        (rc = inspect(d, err)) || (rc = refuse(d, mode, err)) ||
        (d->remote && (rc = sk_dst_s3_abort_recorded(d, err))) ||
        (d->remote && (rc = sk_dst_s3_abort_orphans(d, err))) || (rc = apply(d, mode, err)))
        goto fail;
    *out = d;
    return SHARD_OK;
fail:
    sk_dst_close(d);
    return rc;
}

int sk_dst_cleanup_work(struct dst *d, struct shard_err *err)
{
    if (!still_ours(d, -1))
        return shard_err_set(err, SHARD_EEXIST,
                             "'%s' was replaced during the run; it is left as it is", d->work);
    int rc = for_each_entry(d, d->work_fd, d->work, unlink_work_entry, NULL, err);
    if (rc)
        return rc;
    unlinkat(d->fd, SHARDIFY_WORK_DIR, AT_REMOVEDIR);
    rc = sk_fs_sync_dirfd(d->fd, d->path, err);
    close(d->lock_fd); /* released only once the work directory is gone */
    d->lock_fd = -1;
    return rc;
}

void sk_dst_close(struct dst *d)
{
    if (!d)
        return;
    /* nothing to resume: leave nothing this run made (nor a previous run's
     * bare lock, which would mean nothing either) */
    if (d->work_fd >= 0 && (d->lock_fd >= 0 || d->created_work) && work_is_bare(d) &&
        still_ours(d, d->lock_fd)) {
        if (d->lock_fd >= 0)
            unlinkat(d->work_fd, LOCK_FILE, 0);
        if (unlinkat(d->fd, SHARDIFY_WORK_DIR, AT_REMOVEDIR) == 0)
            sk_fs_sync_dirfd(d->fd, d->path, NULL);
    }
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    if (d->work_fd >= 0)
        close(d->work_fd);
    if (d->fd >= 0)
        close(d->fd);
    remove_created(d);
    if (d->remote && d->path) /* a staging directory holding nothing is not kept */
        rmdir(d->path);
    sk_s3_free(d->remote);
    free(d->created);
    free(d->name);
    free(d->path);
    free(d->work);
    free(d);
}

int sk_dst_publish(struct dst *d, const char *name, struct shard_err *err)
{
    return d->remote ? sk_dst_s3_publish(d, name, err) : SHARD_OK;
}

int sk_dst_hash(struct dst *d, const char *name, uint64_t *bytes, uint64_t *xxh3,
                struct shard_err *err)
{
    int fd;
    int rc = sk_fs_open_at(d->fd, d->path, name, &fd, err);
    if (rc == SHARD_ENOTFOUND && d->remote)
        return sk_s3_hash(d->remote, name, bytes, xxh3, err);
    if (rc)
        return rc;
    rc = sk_fs_hash_fd(fd, name, bytes, xxh3, err);
    close(fd);
    return rc;
}
