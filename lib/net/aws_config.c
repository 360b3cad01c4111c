/* aws_config.c - the AWS shared config and credentials files, read as
 * botocore and Python's configparser read them (see net/aws_config.h). */
#include "net/aws_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/grow.h"

#define FILE_MAX (4u << 20)       /* a larger "config file" is some other file */
#define DEFAULT_SECTION "DEFAULT" /* configparser's: every section inherits it */

/* A "name = value" line nested under a key. */
struct pair {
    char *name;
    char *value;
};

struct entry {
    char *key;   /* lower-cased */
    char *value; /* the lines of the value joined with '\n' */
    size_t len;
    unsigned line;       /* where the key is */
    struct pair *nested; /* a value that begins with a new line */
    size_t nested_count;
    int is_nested;
};

struct sk_aws_section {
    const struct sk_aws_file *file;
    char *name;
    unsigned line;
    struct entry *entries;
    size_t count;
    size_t cap;
};

struct sk_aws_file {
    char *path;
    struct sk_aws_section defaults;  /* [DEFAULT] */
    struct sk_aws_section *sections; /* in the order of the file */
    size_t count;
    size_t cap;
};

/* White space as Python's str.strip() and re's \s see it in ASCII. */
static int py_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* s[0..*len) without white space at both ends: returns the new start. */
static const char *strip(const char *s, size_t *len)
{
    size_t n = *len;
    while (n && py_space((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && py_space((unsigned char)s[n - 1]))
        n--;
    *len = n;
    return s;
}

static void section_release(struct sk_aws_section *s)
{
    for (size_t i = 0; i < s->count; i++) {
        struct entry *e = &s->entries[i];
        for (size_t j = 0; j < e->nested_count; j++) {
            free(e->nested[j].name);
            free(e->nested[j].value);
        }
        free(e->nested);
        free(e->key);
        free(e->value);
    }
    free(s->entries);
    free(s->name);
}

void sk_aws_file_free(struct sk_aws_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        section_release(&f->sections[i]);
    section_release(&f->defaults);
    free(f->sections);
    free(f->path);
    free(f);
}

const char *sk_aws_file_path(const struct sk_aws_file *f)
{
    return f->path;
}

/* ---- reading ------------------------------------------------------------------------ */

struct reader {
    struct sk_aws_file *f;
    struct shard_err *err;
    unsigned line;
};

/* "cannot read the AWS settings file 'PATH': line N WHY" (the text of the
 * line is never quoted: in a credentials file it may hold a secret). */
static int refuse(struct reader *r, unsigned line, const char *why, ...)
{
    char text[SHARD_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, why);
    vsnprintf(text, sizeof text, why, ap);
    va_end(ap);
    return shard_err_set(r->err, SHARD_EINVAL, "cannot read the AWS settings file '%s': line %u %s",
                         r->f->path, line, text);
}

static int nomem(struct reader *r)
{
    return shard_err_set(r->err, SHARD_ENOMEM, "out of memory");
}

static struct entry *find_entry(const struct sk_aws_section *s, const char *key)
{
    for (size_t i = 0; i < s->count; i++)
        if (!strcmp(s->entries[i].key, key))
            return &s->entries[i];
    return NULL;
}

static struct sk_aws_section *find_section(const struct sk_aws_file *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (!strcmp(f->sections[i].name, name))
            return &f->sections[i];
    return NULL;
}

/* Start section [name] (len bytes); *cur is where its keys go. */
static int start_section(struct reader *r, const char *name, size_t len,
                         struct sk_aws_section **cur)
{
    struct sk_aws_file *f = r->f;
    char *own = strndup(name, len);
    if (!own)
        return nomem(r);
    if (!strcmp(own, DEFAULT_SECTION)) {
        free(own);
        *cur = &f->defaults;
        return SHARD_OK;
    }
    if (find_section(f, own)) {
        int rc = refuse(r, r->line, "starts a second section [%s]", own);
        free(own);
        return rc;
    }
    if (SK_GROW(f->sections, f->cap, f->count + 1, 8)) {
        free(own);
        return nomem(r);
    }
    *cur = &f->sections[f->count++];
    memset(*cur, 0, sizeof **cur);
    (*cur)->name = own;
    (*cur)->line = r->line;
    return SHARD_OK;
}

/* A "key = value" line in section s; *opt is the entry that continuation
 * lines extend. */
static int add_key(struct reader *r, struct sk_aws_section *s, const char *text, size_t len,
                   struct entry **opt)
{
    size_t at = strcspn(text, "=:");
    if (at >= len)
        return refuse(r, r->line, "is neither a [section], a 'key = value' nor a comment");
    size_t klen = at, vlen = len - at - 1;
    const char *key = strip(text, &klen), *value = strip(text + at + 1, &vlen);
    if (!klen)
        return refuse(r, r->line, "has no key before its '=' or ':'");
    char *own = strndup(key, klen);
    if (!own)
        return nomem(r);
    for (char *p = own; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (find_entry(s, own)) {
        int rc = refuse(r, r->line, "sets '%s' a second time in its section", own);
        free(own);
        return rc;
    }
    if (SK_GROW(s->entries, s->cap, s->count + 1, 8)) {
        free(own);
        return nomem(r);
    }
    struct entry *e = &s->entries[s->count];
    memset(e, 0, sizeof *e);
    if (!(e->value = strndup(value, vlen))) {
        free(own);
        return nomem(r);
    }
    e->key = own;
    e->len = vlen;
    e->line = r->line;
    s->count++;
    *opt = e;
    return SHARD_OK;
}

/* Another line of e's value. */
static int extend(struct reader *r, struct entry *e, const char *text, size_t len)
{
    char *grown = realloc(e->value, e->len + len + 2);
    if (!grown)
        return nomem(r);
    e->value = grown;
    e->value[e->len++] = '\n';
    memcpy(e->value + e->len, text, len);
    e->len += len;
    e->value[e->len] = '\0';
    return SHARD_OK;
}

/* The value read whole: trailing white space goes; one that begins with a
 * new line is nested "name = value" lines. */
static int finish_entry(struct reader *r, struct entry *e)
{
    while (e->len && py_space((unsigned char)e->value[e->len - 1]))
        e->value[--e->len] = '\0';
    if (e->value[0] != '\n')
        return SHARD_OK;
    e->is_nested = 1;
    for (const char *p = e->value; *p;) {
        size_t n = strcspn(p, "\n");
        const char *line = strip(p, &n);
        p += strcspn(p, "\n");
        if (*p)
            p++;
        if (!n)
            continue;
        const char *eq = memchr(line, '=', n);
        if (!eq)
            return refuse(r, e->line,
                          "starts nested values ('%s =' then indented lines), one "
                          "of which has no '='",
                          e->key);
        size_t nl = (size_t)(eq - line), vl = n - nl - 1;
        const char *name = strip(line, &nl), *value = strip(eq + 1, &vl);
        struct pair *grown = realloc(e->nested, (e->nested_count + 1) * sizeof *grown);
        if (!grown)
            return nomem(r);
        e->nested = grown;
        struct pair *pr = &e->nested[e->nested_count];
        pr->name = strndup(name, nl);
        pr->value = strndup(value, vl);
        if (!pr->name || !pr->value) {
            free(pr->name);
            free(pr->value);
            return nomem(r);
        }
        e->nested_count++; /* a name given twice: the last one wins, as in a dict */
    }
    return SHARD_OK;
}

static int finish_section(struct reader *r, struct sk_aws_section *s)
{
    s->file = r->f;
    int rc = SHARD_OK;
    for (size_t i = 0; i < s->count && !rc; i++)
        rc = finish_entry(r, &s->entries[i]);
    return rc;
}

/* One line (len bytes, no line end). */
static int read_line(struct reader *r, const char *line, size_t len, struct sk_aws_section **cur,
                     struct entry **opt, size_t *indent_level)
{
    size_t n = len;
    const char *text = strip(line, &n);
    if (!n || *text == '#' || *text == ';') {
        /* a blank line inside a value is kept; a comment line is dropped */
        if (!n && *opt)
            return extend(r, *opt, "", 0);
        return SHARD_OK;
    }
    size_t indent = (size_t)(text - line);
    if (*opt && indent > *indent_level)
        return extend(r, *opt, text, n);
    *indent_level = indent;
    /* configparser's \[(?P<header>.+)\]: up to the last ']' of the line */
    const char *close = NULL;
    for (size_t i = n; text[0] == '[' && i > 2 && !close; i--)
        if (text[i - 1] == ']')
            close = text + i - 1;
    if (close) {
        *opt = NULL;
        return start_section(r, text + 1, (size_t)(close - text - 1), cur);
    }
    if (!*cur)
        return refuse(r, r->line, "comes before any [section]");
    return add_key(r, *cur, text, n, opt);
}

static int parse(struct reader *r, const char *data, size_t len)
{
    struct sk_aws_section *cur = NULL;
    struct entry *opt = NULL;
    size_t indent_level = 0;
    int rc = SHARD_OK;
    /* lines end at "\n", "\r\n" or "\r", as Python reads text (data is
     * NUL-terminated and holds no NUL) */
    for (size_t at = 0; at < len && !rc;) {
        size_t n = strcspn(data + at, "\r\n");
        r->line++;
        rc = read_line(r, data + at, n, &cur, &opt, &indent_level);
        at += n;
        if (at < len && data[at] == '\r' && at + 1 < len && data[at + 1] == '\n')
            at += 2;
        else if (at < len)
            at++;
    }
    for (size_t i = 0; i < r->f->count && !rc; i++)
        rc = finish_section(r, &r->f->sections[i]);
    if (!rc)
        rc = finish_section(r, &r->f->defaults);
    return rc;
}

int sk_aws_file_read(struct sk_aws_file **out, const char *path, struct shard_err *err)
{
    *out = NULL;
    struct sk_aws_file *f = calloc(1, sizeof *f);
    char *data = NULL;
    FILE *in = NULL;
    int rc = SHARD_OK;
    if (!f)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    const char *home = getenv("HOME");
    if (!strncmp(path, "~/", 2) && home && home[0]) {
        size_t n = strlen(home) + strlen(path);
        if ((f->path = malloc(n)))
            snprintf(f->path, n, "%s%s", home, path + 1);
    } else {
        f->path = strdup(path);
    }
    if (!f->path) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    f->defaults.name = NULL;
    f->defaults.file = f;
    /* never blocks on a FIFO: O_NONBLOCK, which a regular file ignores */
    int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* nofollow: the user's settings */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0 || (errno != ENOENT && errno != ENOTDIR))
            rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read the AWS settings file '%s'",
                                 f->path);
        if (fd >= 0)
            close(fd);
        goto out;
    }
    /* as botocore (os.path.isfile): what is not a regular file is not there */
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        goto out;
    }
    if (!(in = fdopen(fd, "r"))) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read the AWS settings file '%s'",
                             f->path);
        close(fd);
        goto out;
    }
    if (st.st_size > FILE_MAX) {
        rc = shard_err_set(err, SHARD_EINVAL, "the AWS settings file '%s' is larger than %u bytes",
                           f->path, FILE_MAX);
        goto out;
    }
    /* one byte more than its size, to see a file that grows meanwhile */
    size_t want = (size_t)st.st_size + 1;
    if (!(data = malloc(want + 1))) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    size_t len = fread(data, 1, want, in);
    if (ferror(in)) {
        rc = shard_err_errno(err, SHARD_EIO, errno, "cannot read the AWS settings file '%s'",
                             f->path);
        goto out;
    }
    if (len == want) {
        rc = shard_err_set(err, SHARD_EINVAL, "the AWS settings file '%s' grew while it was read",
                           f->path);
        goto out;
    }
    data[len] = '\0';
    if (memchr(data, '\0', len)) {
        rc = shard_err_set(err, SHARD_EINVAL, "the AWS settings file '%s' is not text", f->path);
        goto out;
    }
    struct reader r = {f, err, 0};
    rc = parse(&r, data, len);
out:
    if (in)
        fclose(in);
    free(data);
    if (rc) {
        sk_aws_file_free(f);
        return rc;
    }
    *out = f;
    return SHARD_OK;
}

/* ---- profiles and services ------------------------------------------------------------ */

/* Split `s` into words as Python's shlex.split does (POSIX: quotes, and
 * backslashes outside single quotes); the second word into second (a
 * malloc'd string, or NULL).  Returns the number of words, or -1 for an
 * unclosed quote or a trailing backslash. */
static int shell_words(const char *s, char **second)
{
    size_t n = strlen(s);
    char *word = malloc(n + 1);
    int words = 0;
    *second = NULL;
    if (!word)
        return -1;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t w = 0;
        while (*p && !(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
            if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end)
                    goto bad;
                memcpy(word + w, p + 1, (size_t)(end - p - 1));
                w += (size_t)(end - p - 1);
                p = end + 1;
            } else if (*p == '"') {
                for (p++; *p != '"'; p++) {
                    if (!*p)
                        goto bad;
                    if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                        p++;
                    word[w++] = *p;
                }
                p++;
            } else if (*p == '\\') {
                if (!p[1])
                    goto bad;
                word[w++] = p[1];
                p += 2;
            } else {
                word[w++] = *p++;
            }
        }
        word[w] = '\0';
        if (++words == 2 && !(*second = strdup(word)))
            goto bad;
    }
    free(word);
    return words;
bad:
    free(word);
    free(*second);
    *second = NULL;
    return -1;
}

/* The last section "KIND NAME" (the section name starts with `kind` and
 * splits into two words, the second one `name`), or for a profile named
 * "default" the last of those and [default]. */
static const struct sk_aws_section *mapped(const struct sk_aws_file *f, const char *kind,
                                           const char *name)
{
    const struct sk_aws_section *found = NULL;
    for (size_t i = 0; i < f->count; i++) {
        const char *section = f->sections[i].name;
        if (!strcmp(kind, "profile") && !strcmp(section, "default")) {
            if (!strcmp(name, "default"))
                found = &f->sections[i];
            continue;
        }
        if (strncmp(section, kind, strlen(kind)))
            continue;
        char *second;
        if (shell_words(section, &second) == 2 && !strcmp(second, name))
            found = &f->sections[i];
        free(second);
    }
    return found;
}

const struct sk_aws_section *sk_aws_section(const struct sk_aws_file *f, const char *name)
{
    return find_section(f, name);
}

const struct sk_aws_section *sk_aws_profile(const struct sk_aws_file *f, const char *profile)
{
    return mapped(f, "profile", profile);
}

const struct sk_aws_section *sk_aws_services(const struct sk_aws_file *f, const char *name)
{
    return mapped(f, "services", name);
}

const char *sk_aws_section_name(const struct sk_aws_section *s)
{
    return s->name;
}

const char *sk_aws_section_path(const struct sk_aws_section *s)
{
    return s->file->path;
}

/* The entry of `key` in s, else in its file's [DEFAULT]. */
static const struct entry *lookup(const struct sk_aws_section *s, const char *key)
{
    const struct entry *e = find_entry(s, key);
    return e ? e : find_entry(&s->file->defaults, key);
}

int sk_aws_has(const struct sk_aws_section *s, const char *key)
{
    return lookup(s, key) != NULL;
}

const char *sk_aws_get(const struct sk_aws_section *s, const char *key, const char *sub)
{
    const struct entry *e = lookup(s, key);
    if (!e)
        return NULL;
    if (!sub)
        return e->is_nested ? NULL : e->value;
    const char *found = NULL;
    for (size_t i = 0; i < e->nested_count; i++)
        if (!strcmp(e->nested[i].name, sub))
            found = e->nested[i].value;
    return found;
}
