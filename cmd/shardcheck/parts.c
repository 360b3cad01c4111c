/* parts.c - shardcheck in parts (see parts.h). */
#include "parts.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli.h"
#include "cli_json.h"

#define PROG "shardcheck"

/* Where --result PATH puts part `part` of `parts`: PATH, or, for a
 * directory (PATH ending in '/', or one that exists), its
 * shardcheck-part-I-of-N.jsonl.  Malloc'd, or NULL when out of memory. */
static char *result_path(const char *path, uint32_t part, uint32_t parts)
{
    struct stat st;
    size_t len = strlen(path);
    int dir = (len && path[len - 1] == '/') || (!stat(path, &st) && S_ISDIR(st.st_mode));
    char *out = NULL;
    if (!dir)
        return strdup(path);
    if (asprintf(&out, "%s%s" SHARD_VERIFY_RESULT_PREFIX "%u-of-%u" SHARD_VERIFY_RESULT_SUFFIX,
                 path, len && path[len - 1] == '/' ? "" : "/", part, parts) < 0)
        return NULL;
    return out;
}

int check_part(const struct options *o, const char *dst)
{
    char *path = result_path(o->result, o->part, o->parts);
    if (!path) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return CLI_EXIT_FAILED;
    }
    struct shard_verify_share share;
    struct shard_err err;
    shard_err_clear(&err);
    int rc = shard_verify_part(o->dst, &o->verify, o->part, o->parts, path, &share, &err);
    if (rc) {
        fprintf(stderr, "%s: part %u of %u of '%s': %s\n", PROG, o->part, o->parts, dst, err.msg);
        free(path);
        return CLI_EXIT_FAILED;
    }
    char bytes[32];
    cli_format_bytes(share.bytes, bytes, sizeof bytes);
    if (o->json) {
        json_t *j = json_pack("{s:o, s:i, s:i, s:{s:i, s:i}, s:I, s:I, s:I, s:f, s:o}", "dataset",
                              cli_json_text(dst), "part", (int)share.part, "parts",
                              (int)share.parts, "shards", "first", (int)share.first_shard, "count",
                              (int)share.shards, "samples", (json_int_t)share.samples, "bytes",
                              (json_int_t)share.bytes, "problems", (json_int_t)share.problems,
                              "seconds", share.seconds, "result", cli_json_text(path));
        cli_json_print(j, stdout, 0); /* takes j */
    } else {
        printf("%s: part %u of %u of '%s' checked: %u shard%s from shard %u (%llu samples, %s) in "
               "%.2f s, %llu problem%s so far; result in '%s' (--combine gives the verdict)\n",
               PROG, share.part, share.parts, dst, share.shards, share.shards == 1 ? "" : "s",
               share.first_shard, (unsigned long long)share.samples, bytes, share.seconds,
               (unsigned long long)share.problems, share.problems == 1 ? "" : "s", path);
    }
    free(path);
    return CLI_EXIT_OK;
}

/* ---- the combine --------------------------------------------------------------- */

struct paths {
    char **p;
    size_t n, cap;
};

static int add_path(struct paths *ps, char *path)
{
    if (!path)
        return -1;
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 16;
        char **grown = realloc(ps->p, cap * sizeof *grown);
        if (!grown) {
            free(path);
            return -1;
        }
        ps->p = grown;
        ps->cap = cap;
    }
    ps->p[ps->n++] = path;
    return 0;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_result_name(const char *name)
{
    size_t len = strlen(name), pre = strlen(SHARD_VERIFY_RESULT_PREFIX),
           suf = strlen(SHARD_VERIFY_RESULT_SUFFIX);
    return len > pre + suf && !strncmp(name, SHARD_VERIFY_RESULT_PREFIX, pre) &&
           !strcmp(name + len - suf, SHARD_VERIFY_RESULT_SUFFIX);
}

/* Every result file in directory `dir`, in name order. */
static int add_directory(struct paths *ps, const char *dir, struct shard_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return shard_err_errno(err, SHARD_EIO, errno, "cannot read the directory '%s'", dir);
    size_t first = ps->n;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d)))
        if (is_result_name(e->d_name)) {
            char *path = NULL;
            if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
                path = NULL;
            rc = add_path(ps, path);
        }
    closedir(d);
    if (rc)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    if (ps->n == first)
        return shard_err_set(err, SHARD_EINVAL, "'%s' holds no part's result (%s*%s)", dir,
                             SHARD_VERIFY_RESULT_PREFIX, SHARD_VERIFY_RESULT_SUFFIX);
    qsort(ps->p + first, ps->n - first, sizeof *ps->p, compare_paths);
    return 0;
}

int combine_results(const struct options *o, struct shard_verify_report *report,
                    struct shard_err *err)
{
    struct paths ps = {NULL, 0, 0};
    int rc = 0;
    memset(report, 0, sizeof *report);
    for (size_t i = 0; !rc && i < o->result_count; i++) {
        struct stat st;
        if (!stat(o->results[i], &st) && S_ISDIR(st.st_mode))
            rc = add_directory(&ps, o->results[i], err);
        else if (add_path(&ps, strdup(o->results[i])))
            rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = shard_verify_combine(o->dst, (const char *const *)ps.p, ps.n, report, err);
    for (size_t i = 0; i < ps.n; i++)
        free(ps.p[i]);
    free(ps.p);
    return rc;
}
