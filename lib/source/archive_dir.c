/* archive_dir.c - a directory of archives read as one source (shardify
 * --archives: WebDataset's tar shards, as img2dataset writes them), see
 * source_internal.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "util/grow.h"

static const char *const archive_suffixes[] = {
    ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".zip",
};

int sk_is_archive_name(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof archive_suffixes / sizeof *archive_suffixes; i++) {
        size_t sl = strlen(archive_suffixes[i]);
        if (n > sl && !strcasecmp(name + n - sl, archive_suffixes[i]))
            return 1;
    }
    return 0;
}

static int compare_names(const void *pa, const void *pb)
{
    const char *a = *(char *const *)pa, *b = *(char *const *)pb;
    return sk_key_compare(a, strlen(a), b, strlen(b));
}

int sk_names_add(char ***list, size_t *n, size_t *cap, const char *name, struct shard_err *err)
{
    char *copy = strdup(name);
    if (!copy || SK_GROW(*list, *cap, *n + 1, 16)) {
        free(copy);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    (*list)[(*n)++] = copy;
    return SHARD_OK;
}

void sk_names_sort(char **list, size_t n)
{
    if (n > 1)
        qsort(list, n, sizeof *list, compare_names);
}

void sk_names_free(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}

int sk_archive_dir_list(const char *dir, char ***names, size_t *count, struct shard_scan_stats *st,
                        struct shard_err *err)
{
    *names = NULL;
    *count = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the SRC named */
    if (fd < 0)
        return shard_err_errno(err, errno == ENOENT ? SHARD_ENOTFOUND : SHARD_EINVAL, errno,
                               "cannot read source '%s' (--archives takes a directory)", dir);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return shard_err_errno(err, SHARD_EIO, errno, "cannot read source '%s'", dir);
    }
    char **list = NULL;
    size_t n = 0, cap = 0;
    int rc = SHARD_OK;
    struct dirent *de;
    errno = 0;
    while (!rc && (de = readdir(d))) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT)
                rc = shard_err_errno(err, SHARD_EIO, errno, "cannot stat '%s/%s'", dir, name);
            continue;
        }
        if (S_ISDIR(sb.st_mode) || !sk_is_archive_name(name)) {
            if (!S_ISDIR(sb.st_mode)) /* .parquet, _stats.json ...: another tool's */
                st->ignored++;
            continue;
        }
        if (!S_ISREG(sb.st_mode)) { /* never followed, never opened */
            if (S_ISLNK(sb.st_mode))
                st->ignored_symlinks++;
            else
                st->ignored_special++;
            continue;
        }
        rc = sk_names_add(&list, &n, &cap, name, err);
        errno = 0;
    }
    if (!rc && errno)
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read source '%s'", dir);
    closedir(d);
    if (!rc && n == 0)
        rc = shard_err_set(err, SHARD_EINVAL,
                           "source '%s' holds no archive (.tar, .tar.gz, "
                           ".tar.zst, .zip ...) for --archives",
                           dir);
    if (rc) {
        sk_names_free(list, n);
        return rc;
    }
    sk_names_sort(list, n);
    *names = list;
    *count = n;
    return SHARD_OK;
}
