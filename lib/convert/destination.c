/* destination.c - the destination directory: contents check, lock, overwrite, cleanup. */
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

#include "util/fsutil.h"
#include "shardkit/format.h"
#include "shardkit/manifest.h"

#define LOCK_FILE "lock"

char *sk_dst_work_path(const struct dst *d, const char *name)
{
    return sk_fs_join(d->work, name);
}

char *sk_dst_path(const struct dst *d, const char *name)
{
    return sk_fs_join(d->path, name);
}

/* "shard-NNNNNN.shard" with at least six digits; *n gets the number. */
static int is_shard_name(const char *name, uint32_t *n)
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

/* Names shardify itself writes at the top of DST. */
static int is_output_name(const char *name)
{
    static const char *const known[] = {
        SHARD_MANIFEST_FILE, SHARD_INDEX_FILE, SHARDIFY_RUN_FILE, SHARDIFY_WORK_DIR,
        "." SHARD_MANIFEST_FILE ".tmp", "." SHARD_INDEX_FILE ".tmp",
        "." SHARDIFY_RUN_FILE ".tmp",
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i]))
            return 1;
    return is_shard_name(name, NULL);
}

static int mkdir_p(const char *path, struct shard_err *err)
{
    char *p = strdup(path);
    if (!p)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char saved = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
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

/* Remove the entries of DST that shardify wrote; with `work`, also the work
 * directory's files except the lock. */
static int remove_outputs(struct dst *d, int keep_manifest, uint32_t first_shard,
                          struct shard_err *err)
{
    DIR *dir = opendir(d->path);
    if (!dir)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", d->path);
    int rc = SHARD_OK;
    struct dirent *e;
    while (!rc && (e = readdir(dir))) {
        uint32_t n;
        int remove;
        if (is_shard_name(e->d_name, &n))
            remove = n >= first_shard;
        else
            remove = is_output_name(e->d_name) && strcmp(e->d_name, SHARDIFY_WORK_DIR) &&
                     !(keep_manifest && !strcmp(e->d_name, SHARD_MANIFEST_FILE));
        if (remove && unlinkat(dirfd(dir), e->d_name, 0) != 0 && errno != ENOENT)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", d->path,
                                 e->d_name);
    }
    closedir(dir);
    if (rc)
        return rc;
    dir = opendir(d->work);
    if (!dir)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", d->work);
    while (!rc && (e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, LOCK_FILE))
            continue;
        /* journal-NNNNNN.jsonl and shard temporaries below `first_shard` stay */
        unsigned n;
        if (sscanf(e->d_name, "journal-%6u.jsonl", &n) == 1 && n < first_shard &&
            strlen(e->d_name) == strlen("journal-000000.jsonl"))
            continue;
        if (first_shard > 0 && !strcmp(e->d_name, DST_STATE_FILE))
            continue;
        if (unlinkat(dirfd(dir), e->d_name, 0) != 0 && errno != ENOENT)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s/%s'", d->work,
                                 e->d_name);
    }
    closedir(dir);
    return rc ? rc : sk_fs_sync_dir(d->path, err);
}

int sk_dst_remove_from(struct dst *d, uint32_t first, struct shard_err *err)
{
    return remove_outputs(d, 1, first, err);
}

static int take_lock(struct dst *d, struct shard_err *err)
{
    char *lock = sk_dst_work_path(d, LOCK_FILE);
    if (!lock)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    d->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d->lock_fd < 0) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot open lock '%s'", lock);
    } else if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            char pid[32] = "";
            ssize_t n = pread(d->lock_fd, pid, sizeof pid - 1, 0);
            pid[n > 0 ? n : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
            rc = shard_err_set(err, SHARD_ELOCKED,
                               "'%s' is in use by another shardify run (pid %s); "
                               "wait for it to finish",
                               d->path, pid[0] ? pid : "unknown");
        } else {
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot lock '%s'", lock);
        }
        close(d->lock_fd);
        d->lock_fd = -1;
    } else {
        /* The kernel drops a flock when its holder dies, so a lock file left
         * by a killed run is simply taken over here.  The pid is informative. */
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(d->lock_fd, 0) != 0 || pwrite(d->lock_fd, pid, (size_t)n, 0) != n)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot write lock '%s'", lock);
    }
    free(lock);
    return rc;
}

/* Check DST's entries: only shardify output is allowed. */
static int inspect(struct dst *d, struct shard_err *err)
{
    DIR *dir = opendir(d->path);
    if (!dir)
        return shard_err_errno(err, errno == ENOTDIR ? SHARD_EEXIST : SHARD_EIO, errno,
                               "cannot open destination '%s'", d->path);
    int rc = SHARD_OK;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (!is_output_name(e->d_name)) {
            rc = shard_err_set(err, SHARD_EEXIST,
                               "destination '%s' holds '%s', which shardify did not write; "
                               "choose an empty or new directory",
                               d->path, e->d_name);
            break;
        }
        if (!strcmp(e->d_name, SHARD_MANIFEST_FILE))
            d->has_manifest = 1;
        if (strcmp(e->d_name, SHARDIFY_WORK_DIR))
            d->has_output = 1;
    }
    closedir(dir);
    return rc;
}

int sk_dst_open(struct dst **out, const char *path, enum shardify_mode mode, struct shard_err *err)
{
    *out = NULL;
    struct dst *d = calloc(1, sizeof *d);
    if (!d)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    d->lock_fd = -1;
    int rc;
    if (!(d->path = strdup(path)) || !(d->work = sk_fs_join(path, SHARDIFY_WORK_DIR))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto fail;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        if ((rc = mkdir_p(path, err)))
            goto fail;
    } else if (!S_ISDIR(st.st_mode)) {
        rc = shard_err_set(err, SHARD_EEXIST, "destination '%s' is not a directory", path);
        goto fail;
    }
    if ((rc = inspect(d, err)))
        goto fail;
    if (mkdir(d->work, 0755) != 0 && errno != EEXIST) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot create '%s'", d->work);
        goto fail;
    }
    if ((rc = take_lock(d, err)))
        goto fail;
    char *state = sk_dst_work_path(d, DST_STATE_FILE);
    d->has_state = state && access(state, F_OK) == 0;
    free(state);

    switch (mode) {
    case SHARDIFY_FRESH:
        if (d->has_manifest)
            rc = shard_err_set(err, SHARD_EEXIST,
                               "destination '%s' holds a previous shardify output; "
                               "pass --overwrite to replace it",
                               path);
        else if (d->has_state || d->has_output)
            rc = shard_err_set(err, SHARD_EEXIST,
                               "destination '%s' holds an interrupted shardify run; "
                               "pass --resume to continue it or --overwrite to replace it",
                               path);
        else
            rc = remove_outputs(d, 0, 0, err);  /* a killed run's stray temporaries */
        break;
    case SHARDIFY_OVERWRITE: {
        /* Unpublish first: from here on no manifest names an old shard. */
        char *m = sk_dst_path(d, SHARD_MANIFEST_FILE);
        if (!m)
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        else if (unlink(m) != 0 && errno != ENOENT)
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot remove '%s'", m);
        free(m);
        if (!rc)
            rc = sk_fs_sync_dir(path, err);
        if (!rc)
            rc = remove_outputs(d, 0, 0, err);
        d->has_manifest = d->has_state = 0;
        break;
    }
    case SHARDIFY_RESUME:
        if (d->has_manifest)
            rc = shard_err_set(err, SHARD_EEXIST,
                               "destination '%s' holds a complete dataset: nothing to resume "
                               "(pass --overwrite to rebuild it)",
                               path);
        else if (!d->has_state)
            /* nothing recorded to resume (e.g. an --overwrite killed while it
             * removed the old dataset): start clean, leaving no old shard */
            rc = remove_outputs(d, 0, 0, err);
        break;
    }
    if (rc)
        goto fail;
    *out = d;
    return SHARD_OK;
fail:
    sk_dst_close(d);
    return rc;
}

int sk_dst_cleanup_work(struct dst *d, struct shard_err *err)
{
    DIR *dir = opendir(d->work);
    if (!dir)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot list '%s'", d->work);
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(dir), e->d_name, 0);
    }
    closedir(dir);
    rmdir(d->work);
    return sk_fs_sync_dir(d->path, err);
}

void sk_dst_close(struct dst *d)
{
    if (!d)
        return;
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    free(d->path);
    free(d->work);
    free(d);
}
