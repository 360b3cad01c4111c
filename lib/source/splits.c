/* splits.c - a Hugging Face imagefolder's splits and metadata table (see
 * shardkit/source.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "shardkit/source.h"
#include "source/source_internal.h"

/* The `datasets` library's names of the train, validation and test splits. */
static const char *const split_names[] = {"train", "training", "validation", "valid", "val",
                                          "dev",   "test",     "testing",    "eval",  "evaluation"};

static int split_name(const char *name)
{
    for (size_t i = 0; i < sizeof split_names / sizeof *split_names; i++)
        if (!strcmp(name, split_names[i]))
            return 1;
    return 0;
}

void shard_splits_free(char **names, size_t count)
{
    sk_names_free(names, count);
}

int shard_source_splits(const char *dir, char ***names, size_t *count, size_t *others,
                        struct shard_err *err)
{
    *names = NULL;
    *count = 0;
    *others = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the SRC named */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return shard_err_errno(err, SHARD_EIO, e, "cannot read directory '%s'", dir);
    }
    char **list = NULL;
    size_t n = 0, cap = 0;
    int rc = SHARD_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!split_name(e->d_name)) {
            ++*others;
            continue;
        }
        rc = sk_names_add(&list, &n, &cap, e->d_name, err);
    }
    closedir(d);
    if (rc) {
        sk_names_free(list, n);
        return rc;
    }
    sk_names_sort(list, n);
    *names = list;
    *count = n;
    return SHARD_OK;
}

int shard_source_metadata(const char *dir, char **path, struct shard_err *err)
{
    static const char *const tables[] = {"metadata.jsonl", "metadata.csv"};
    *path = NULL;
    for (size_t i = 0; i < 2; i++) {
        char *p = sk_fs_join(dir, tables[i]);
        if (!p) {
            free(*path);
            *path = NULL;
            return shard_err_set(err, SHARD_ENOMEM, "out of memory");
        }
        if (!shard_path_is_file(p)) {
            free(p);
            continue;
        }
        if (*path) {
            free(p);
            free(*path);
            *path = NULL;
            return shard_err_set(err, SHARD_EINVAL,
                                 "'%s' holds both metadata.jsonl and metadata.csv: which table "
                                 "is meant cannot be told",
                                 dir);
        }
        *path = p;
    }
    return SHARD_OK;
}
