/* archive_paths.c - where the archives of a run's folder are read from: the
 * folder's files, or archives named by URL, each fetched into the work
 * directory when its turn comes (see run.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "convert/run.h"

/* The work directory's file an archive named by URL is fetched into. */
#define REMOTE_ARCHIVE_FILE "remote-archive"

int sk_run_open_remote(struct run *r, struct shard_err *err)
{
    int rc = sk_remote_archives_open(&r->remote, r->src, r->o->cancel, err);
    if (rc)
        return rc;
    size_t n = sk_remote_archives_count(r->remote);
    if (!(r->archive_names = calloc(n, sizeof *r->archive_names)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (size_t k = 0; k < n; k++, r->archive_count++)
        if (!(r->archive_names[k] = strdup(sk_remote_archives_name(r->remote, k))))
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

int sk_run_archive_path(struct run *r, size_t k, char **path, struct shard_err *err)
{
    if (!r->remote) {
        *path = sk_fs_join(r->src, r->archive_names[k]);
        return *path ? SHARD_OK : shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (!(*path = sk_fs_join(r->dst->work, REMOTE_ARCHIVE_FILE)))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = sk_remote_archives_fetch(r->remote, k, r->dst->work_fd, REMOTE_ARCHIVE_FILE, *path,
                                      err);
    if (rc) {
        unlinkat(r->dst->work_fd, REMOTE_ARCHIVE_FILE, 0);
        free(*path);
        *path = NULL;
    }
    return rc;
}

void sk_run_archive_done(struct run *r, char *path)
{
    if (r->remote && path) /* a fetched archive takes no room once read */
        unlinkat(r->dst->work_fd, REMOTE_ARCHIVE_FILE, 0);
    free(path);
}

uint64_t sk_run_archive_size(const struct run *r, size_t k, int dir_fd)
{
    struct stat st;
    if (r->remote)
        return sk_remote_archives_size(r->remote, k);
    return dir_fd >= 0 && fstatat(dir_fd, r->archive_names[k], &st, AT_SYMLINK_NOFOLLOW) == 0
               ? (uint64_t)st.st_size
               : UINT64_MAX;
}
