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
    free(d->folder);
    free(d->coco);
    for (uint32_t i = 0; d->classes && i < d->class_count; i++)
        free(d->classes[i].name);
    free(d->classes);
    free(d->classes_file);
    free(d->replace);
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
        return shard_err_set(err, SHARD_EINVAL,
                             "'%s' is not NAME=TYPE[,from=SOURCE]"
                             "[,required]",
                             spec);
    if (!(d->name = copy(spec, (size_t)(eq - spec))))
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    int rc = SHARD_OK;
    if (!shard_field_name_valid(d->name)) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "'%s': a field name is 1..%u letters, digits, "
                           "'_', '.' or '-', starting with a letter or '_'",
                           spec, SHARD_FIELD_NAME_MAX);
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
        } else if (n > 7 && !strncmp(p, "ignore=", 7) && !d->has_ignore) {
            char digits[16];
            char *end;
            snprintf(digits, sizeof digits, "%.*s", (int)(n - 7), p + 7);
            unsigned long v = strtoul(digits, &end, 10);
            if (n - 7 >= sizeof digits || *end || digits[0] < '0' || digits[0] > '9' ||
                v > SHARD_MASK_CLASS_MAX) {
                rc = shard_err_set(err, SHARD_EINVAL, "'%s': ignore=%.*s is not a value in 0..%u",
                                   spec, (int)(n - 7), p + 7, SHARD_MASK_CLASS_MAX);
                goto out;
            }
            d->has_ignore = 1;
            d->ignore = (uint32_t)v;
        } else if (n > 8 && !strncmp(p, "replace=", 8) && !d->replace) {
            const char *colon = memchr(p + 8, ':', n - 8);
            if (!colon || memchr(colon + 1, ':', (size_t)(p + n - colon - 1)) ||
                memchr(p + 8, '/', n - 8)) {
                rc = shard_err_set(err, SHARD_EINVAL,
                                   "'%s': replace=OLD:NEW names the ending OLD of an image's stem "
                                   "and NEW in its mask's name, without '/' or another ':'",
                                   spec);
                goto out;
            }
            if (!(d->replace = copy(p + 8, n - 8))) {
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
                goto out;
            }
        } else if (n > 8 && !strncmp(p, "classes=", 8) && !d->classes_file) {
            if (!(d->classes_file = copy(p + 8, n - 8))) {
                rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
                goto out;
            }
        } else {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s': unknown part '%.*s' (from=SOURCE, "
                               "classes=FILE, ignore=N, replace=OLD:NEW, required or optional)",
                               spec, (int)n, p);
            goto out;
        }
    }
    if (d->type == SHARD_FIELD_BOXES || d->type == SHARD_FIELD_INSTANCES) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "'%s': %s come from a COCO annotation file "
                           "(--coco FILE%s)",
                           spec, d->type == SHARD_FIELD_BOXES ? "boxes" : "instance masks",
                           d->type == SHARD_FIELD_BOXES ? "" : " --coco-instances");
        goto out;
    }
    if (d->has_ignore && d->type != SHARD_FIELD_MASK) {
        rc = shard_err_set(err, SHARD_EINVAL, "'%s': only a mask field takes ignore=N", spec);
        goto out;
    }
    if ((d->type == SHARD_FIELD_MASK) != (d->classes_file != NULL)) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           d->classes_file
                               ? "'%s': only a mask field takes classes=FILE"
                               : "'%s': a mask field needs classes=FILE (the class of each value)",
                           spec);
        goto out;
    }
    if (d->replace && !(from && from[from_len - 1] == '/')) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "'%s': replace=OLD:NEW is for a mask folder (from=DIR/)", spec);
        goto out;
    }
    if (!from) { /* the table's column of that name, or the sidecar .NAME */
        if (table && d->type != SHARD_FIELD_MASK && d->type != SHARD_FIELD_IMAGE)
            d->column = copy(d->name, strlen(d->name));
        else if ((d->sidecar = malloc(strlen(d->name) + 2)))
            snprintf(d->sidecar, strlen(d->name) + 2, ".%s", d->name);
    } else if (from[from_len - 1] == '/') {
        if (d->type != SHARD_FIELD_MASK) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s': only a mask comes from a folder "
                               "(from=%.*s)",
                               spec, (int)from_len, from);
            goto out;
        }
        d->folder = copy(from, from_len);
    } else if (from[0] == '.' || from[0] == '_') {
        if (from_len < 2 || memchr(from, '/', from_len)) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s': a sidecar suffix is '.' or '_' and a "
                               "name without '/' (from=.txt, from=_mask.png)",
                               spec);
            goto out;
        }
        d->sidecar = copy(from, from_len);
    } else if (d->type == SHARD_FIELD_MASK) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "'%s': a mask comes from a sidecar image "
                           "(from=_mask.png) or a folder mirroring SRC (from=../masks/)",
                           spec);
        goto out;
    } else if (d->type == SHARD_FIELD_IMAGE) {
        rc = shard_err_set(err, SHARD_EINVAL,
                           "'%s': an image field comes from a sidecar image of the sample's "
                           "stem (from=.depth.png, from=_depth.png)",
                           spec);
        goto out;
    } else {
        if (!table) {
            rc = shard_err_set(err, SHARD_EINVAL,
                               "'%s': from=%.*s names a column, and there "
                               "is no --annotations table (a sidecar suffix starts with '.')",
                               spec, (int)from_len, from);
            goto out;
        }
        d->column = copy(from, from_len);
    }
    if (!d->sidecar && !d->column && !d->folder)
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
out:
    if (rc)
        shard_field_decl_release(d);
    return rc;
}
