/* field_decl.c - a field declaration as the command line writes it
 * (shard_field_decl_parse, see shardkit/manifest.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit/manifest.h"

void shard_field_decl_release(struct shard_field_decl *d)
{
    if (!d)
        return;
    free(d->name);
    free(d->sidecar);
    free(d->column);
    memset(d, 0, sizeof *d);
}

/* A copy of s[0..n), NUL-terminated. */
static char *copy(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

int shard_field_decl_parse(const char *spec, int table, struct shard_field_decl *d,
                           struct shard_err *err)
{
    memset(d, 0, sizeof *d);
    const char *eq = strchr(spec, '=');
    if (!eq)
        return shard_err_set(err, SHARD_EINVAL, "'%s' is not NAME=TYPE[,from=SOURCE]"
                             "[,required]", spec);
    if (!(d->name = copy(spec, (size_t)(eq - spec))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    if (!shard_field_name_valid(d->name)) {
        rc = shard_err_set(err, SHARD_EINVAL, "'%s': a field name is 1..%u letters, digits, "
                           "'_', '.' or '-', starting with a letter or '_'", spec,
                           SHARD_FIELD_NAME_MAX);
        goto out;
    }
    const char *p = eq + 1;
    size_t n = strcspn(p, ",");
    char *type = copy(p, n);
    if (!type) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    struct shard_err e;
    rc = shard_field_type_parse(type, &d->type, &d->length, &e);
    free(type);
    if (rc) {
        rc = shard_err_set(err, SHARD_EINVAL, "'%s': %s", spec, e.msg);
        goto out;
    }
    const char *from = NULL;
    size_t from_len = 0;
    for (p += n; *p == ','; p += n) {
        p++;
        n = strcspn(p, ",");
        if (n == strlen("required") && !strncmp(p, "required", n))
            d->required = 1;
        else if (n == strlen("optional") && !strncmp(p, "optional", n))
            d->required = 0;
        else if (n > 5 && !strncmp(p, "from=", 5) && !from) {
            from = p + 5;
            from_len = n - 5;
        } else {
            rc = shard_err_set(err, SHARD_EINVAL, "'%s': unknown part '%.*s' (from=SOURCE, "
                               "required or optional)", spec, (int)n, p);
            goto out;
        }
    }
    if (!from) {  /* the table's column of that name, or the sidecar .NAME */
        if (table)
            d->column = copy(d->name, strlen(d->name));
        else if ((d->sidecar = malloc(strlen(d->name) + 2)))
            snprintf(d->sidecar, strlen(d->name) + 2, ".%s", d->name);
    } else if (from[0] == '.') {
        if (from_len < 2 || memchr(from, '/', from_len)) {
            rc = shard_err_set(err, SHARD_EINVAL, "'%s': a sidecar suffix is '.' and a name "
                               "without '/' (from=.txt)", spec);
            goto out;
        }
        d->sidecar = copy(from, from_len);
    } else {
        if (!table) {
            rc = shard_err_set(err, SHARD_EINVAL, "'%s': from=%.*s names a column, and there "
                               "is no --annotations table (a sidecar suffix starts with '.')",
                               spec, (int)from_len, from);
            goto out;
        }
        d->column = copy(from, from_len);
    }
    if (!d->sidecar && !d->column)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
out:
    if (rc)
        shard_field_decl_release(d);
    return rc;
}
