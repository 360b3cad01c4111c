/* runs.c - the nightly job's run records (see runs.h). */
#include "runs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#define JSON_EXT ".json"

static char *dup_string(const json_t *v)
{
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static struct run_number number(const json_t *v)
{
    if (json_is_number(v))
        return (struct run_number){1, json_number_value(v)};
    if (json_is_boolean(v))
        return (struct run_number){1, json_is_true(v) ? 1 : 0};
    return (struct run_number){0, 0};
}

/* The fields of record `o` into *row. */
static void take_fields(struct run_row *row, const json_t *o)
{
    row->status = dup_string(json_object_get(o, "status"));
    row->published = json_is_true(json_object_get(o, "published"));
    row->exit_code = number(json_object_get(o, "exit_code"));
    row->started = dup_string(json_object_get(o, "started"));
    row->finished = dup_string(json_object_get(o, "finished"));
    row->seconds = number(json_object_get(o, "seconds"));
    row->version = dup_string(json_object_get(o, "version"));
    const json_t *summary = json_object_get(json_object_get(o, "shardify"), "summary");
    row->samples = number(json_object_get(summary, "samples"));
    row->rejected = number(json_object_get(summary, "rejected"));
    row->ignored = number(json_object_get(summary, "ignored"));
    row->shards = number(json_object_get(summary, "shards"));
    row->bytes_out = number(json_object_get(summary, "bytes_out"));
    const json_t *check = json_object_get(o, "shardcheck");
    row->verified = number(json_object_get(check, "verified"));
    row->problems = number(json_object_get(check, "problem_count"));
    const json_t *lineage = json_object_get(json_object_get(o, "incremental"), "lineage");
    row->added = number(json_object_get(lineage, "added"));
    row->changed = number(json_object_get(lineage, "changed"));
    row->removed = number(json_object_get(lineage, "removed"));
    row->reused = number(json_object_get(lineage, "reused"));
    row->report = dup_string(json_object_get(o, "report"));
    row->log = dup_string(json_object_get(o, "log"));
}

/* Read record `name` of the runs directory into *row; on failure, say why
 * in row->error. */
static void read_record(int dir, const char *name, struct run_row *row)
{
    char why[256] = "";
    char *text = NULL;
    struct stat st;
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(why, sizeof why, "not a regular file");
    } else if (st.st_size > RUNS_MAX_RECORD_BYTES) {
        snprintf(why, sizeof why, "%lld bytes: larger than a run record", (long long)st.st_size);
    } else if (!(text = malloc((size_t)st.st_size + 1))) {
        snprintf(why, sizeof why, "out of memory");
    } else {
        size_t got = 0;
        ssize_t n;
        while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
            got += (size_t)n;
        json_error_t jerr;
        json_t *o = json_loadb(text, got, 0, &jerr);
        if (!o)
            snprintf(why, sizeof why, "not JSON: %s (line %d)", jerr.text, jerr.line);
        else if (!json_is_object(o))
            snprintf(why, sizeof why, "not a JSON object");
        else
            take_fields(row, o);
        json_decref(o);
    }
    free(text);
    if (fd >= 0)
        close(fd);
    if (why[0]) {
        row->error = strdup(why);
        free(row->status);
        row->status = strdup("unreadable");
    }
}

/* The run's shardcheck page, runs/<stamp>.html, when the record names none
 * and it is there (a regular file, not a link). */
static void find_report(int dir, struct run_row *row)
{
    if (row->report)
        return;
    char name[NAME_MAX + 1];
    struct stat st;
    snprintf(name, sizeof name, "%s.html", row->run);
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        asprintf(&row->report, "runs/%s", name) < 0)
        row->report = NULL;
}

/* Whether `path` has a ".." component. */
static int climbs(const char *path)
{
    for (const char *p = path; *p; p += strcspn(p, "/"), p += *p == '/') {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 1;
    }
    return 0;
}

char *runs_href(const char *root, const char *root_real, const char *path)
{
    if (!path || !path[0] || !root_real || climbs(path))
        return NULL;
    char *joined = NULL, *real = NULL, *href = NULL;
    struct stat st;
    size_t root_len = strlen(root_real);
    if (root_len == 1) /* ROOT is "/": every path is inside */
        root_len = 0;
    if (path[0] == '/')
        joined = strdup(path);
    else if (asprintf(&joined, "%s/%s", root, path) < 0)
        joined = NULL;
    /* where it leads, links followed: inside ROOT, and a regular file */
    if (!joined || !(real = realpath(joined, NULL)) || strncmp(real, root_real, root_len) != 0 ||
        real[root_len] != '/' || stat(real, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    static const char digits[] = "0123456789ABCDEF";
    const char *inside = real + root_len + 1;
    size_t n = 0;
    if (!(href = malloc(3 * strlen(inside) + 1)))
        goto out;
    for (const unsigned char *p = (const unsigned char *)inside; *p; p++) {
        if (isalnum(*p) || strchr("-._~/", *p)) {
            href[n++] = (char)*p;
        } else {
            href[n++] = '%';
            href[n++] = digits[*p >> 4];
            href[n++] = digits[*p & 15];
        }
    }
    href[n] = '\0';
out:
    free(joined);
    free(real);
    return href;
}

/* A run record's name: <stamp>.json, not latest.json, not a tool's
 * <stamp>.<tool>.json, not hidden (a temporary). */
static int is_record(const char *name)
{
    size_t len = strlen(name), ext = strlen(JSON_EXT);
    if (name[0] == '.' || len <= ext || strcmp(name + len - ext, JSON_EXT))
        return 0;
    if (memchr(name, '.', len - ext))
        return 0;
    return strcmp(name, "latest" JSON_EXT) != 0;
}

static int compare_rows(const void *pa, const void *pb)
{
    return strcmp(((const struct run_row *)pa)->run, ((const struct run_row *)pb)->run);
}

int runs_load(struct runs *r, const char *root, char *why, size_t why_size)
{
    memset(r, 0, sizeof *r);
    int rc = -1;
    DIR *d = NULL;
    char *root_real = NULL;
    int dir = -1, rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: named */
    if (rootfd < 0) {
        snprintf(why, why_size, "cannot open '%s': %s", root, strerror(errno));
        return -1;
    }
    root_real = realpath(root, NULL); /* links are made to files inside it only */
    char link[PATH_MAX];
    ssize_t n = readlinkat(rootfd, "current", link, sizeof link - 1);
    if (n > 0)
        r->current = strndup(link, (size_t)n);
    dir = openat(rootfd, "runs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0 || !(d = fdopendir(dir))) {
        snprintf(why, why_size, "cannot read '%s/runs': %s", root, strerror(errno));
        goto out;
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_record(de->d_name))
            continue;
        if (r->count == cap) {
            cap = cap ? 2 * cap : 64;
            struct run_row *grown = realloc(r->rows, cap * sizeof *grown);
            if (!grown)
                goto oom;
            r->rows = grown;
        }
        struct run_row *row = &r->rows[r->count];
        memset(row, 0, sizeof *row);
        if (!(row->run = strndup(de->d_name, strlen(de->d_name) - strlen(JSON_EXT))))
            goto oom;
        r->count++;
        read_record(dirfd(d), de->d_name, row);
        if (row->error)
            r->unreadable++;
        if (!row->status)
            row->status = strdup("");
        if (!row->status)
            goto oom;
        find_report(dirfd(d), row);
        row->report_href = runs_href(root, root_real, row->report);
        row->log_href = runs_href(root, root_real, row->log);
    }
    qsort(r->rows, r->count, sizeof *r->rows, compare_rows);
    rc = 0;
    goto out;
oom:
    snprintf(why, why_size, "out of memory");
out:
    if (d)
        closedir(d); /* closes dir */
    else if (dir >= 0)
        close(dir);
    close(rootfd);
    free(root_real);
    return rc;
}

void runs_release(struct runs *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++) {
        struct run_row *row = &r->rows[i];
        free(row->run);
        free(row->status);
        free(row->error);
        free(row->started);
        free(row->finished);
        free(row->version);
        free(row->report);
        free(row->log);
        free(row->report_href);
        free(row->log_href);
    }
    free(r->rows);
    free(r->current);
    memset(r, 0, sizeof *r);
}
