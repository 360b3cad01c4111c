/* out_dir.c - shardcat's output directory (see out_dir.h). */
#include "out_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "cli.h"
#include "safe_name.h"

/* Temporary names tried before giving up (others may be taken by files an
 * earlier, interrupted run left, or planted). */
#define TEMPORARY_TRIES 100
/* A listing larger than this is not ours to merge. */
#define LISTING_MAX (1u << 30)
#define LISTING_HEADER "file\tkey"
/* The first size of the table of names written (slots), and its largest
 * load: 3 of 4 slots. */
#define NAMES_FIRST 1024

/* A name written in this run: its XXH3-128 (two names with one hash are
 * taken for one name: a chance of 2^-128 per pair) and who wrote it. */
struct out_name {
    XXH128_hash_t hash;
    struct out_owner owner;
    int used;
};

/* ---- the directory ----------------------------------------------------------- */

/* path without trailing '/' (but "/" stays); malloc'd. */
static char *without_trailing_slashes(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    return strndup(path, n);
}

/* The canonical path DIR will have: its own if it exists, else its
 * parent's and its last component.  malloc'd, or NULL with errno set. */
static char *future_realpath(const char *dir, int exists)
{
    if (exists)
        return realpath(dir, NULL);
    const char *slash = strrchr(dir, '/');
    char *parent = slash ? strndup(dir, slash == dir ? 1 : (size_t)(slash - dir)) : strdup(".");
    char *real = parent ? realpath(parent, NULL) : NULL;
    int saved = errno;
    free(parent);
    if (!real) {
        errno = saved;
        return NULL;
    }
    const char *base = slash ? slash + 1 : dir;
    size_t size = strlen(real) + strlen(base) + 2;
    char *joined = malloc(size);
    if (joined)
        snprintf(joined, size, "%s/%s", strcmp(real, "/") ? real : "", base);
    free(real);
    return joined;
}

/* Whether `path` is `dir` or lies below it (both canonical). */
static int is_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (!strcmp(dir, "/"))
        return 1;
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

int out_dir_check(const char *prog, const char *path, const char *dst)
{
    char *dir = without_trailing_slashes(path), *real = NULL, *real_dst = NULL;
    struct stat st;
    int rc = CLI_EXIT_OK, exists = 0;
    if (!dir) {
        rc = cli_usage_error(prog, "--out: out of memory");
        goto out;
    }
    if (lstat(dir, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            rc = cli_usage_error(prog,
                                 "--out: '%s' is a symbolic link: give the directory it points to",
                                 dir);
            goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc = cli_usage_error(prog, "--out: '%s' is not a directory", dir);
            goto out;
        }
        exists = 1;
    } else if (errno != ENOENT) {
        rc = cli_usage_error(prog, "--out: cannot use '%s': %s", dir, strerror(errno));
        goto out;
    }
    if (!(real = future_realpath(dir, exists))) {
        rc = cli_usage_error(prog, "--out: cannot create '%s': %s", dir, strerror(errno));
        goto out;
    }
    /* a DST that cannot be resolved cannot be opened either: that is
     * reported when the dataset is opened */
    real_dst = realpath(dst, NULL);
    if (real_dst && is_inside(real, real_dst))
        rc = cli_usage_error(prog,
                             "--out: '%s' is inside the dataset '%s': write the samples "
                             "somewhere else",
                             dir, dst);
out:
    free(dir);
    free(real);
    free(real_dst);
    return rc;
}

int out_dir_open(struct out_dir *d, const char *prog, const char *path)
{
    memset(d, 0, sizeof *d);
    d->fd = -1;
    if (!(d->path = without_trailing_slashes(path)))
        return cli_usage_error(prog, "--out: out of memory");
    if (mkdir(d->path, 0777) != 0 && errno != EEXIST)
        return cli_usage_error(prog, "--out: cannot create '%s': %s", d->path, strerror(errno));
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->fd < 0)
        return cli_usage_error(prog, "--out: cannot open '%s': %s", d->path,
                               errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    return CLI_EXIT_OK;
}

void out_dir_close(struct out_dir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    for (size_t i = 0; i < d->listed_count; i++)
        free(d->listed[i]);
    free(d->listed);
    free(d->path);
    free(d->names);
    d->fd = -1;
    d->path = NULL;
    d->listed = NULL;
    d->listed_count = d->listed_cap = 0;
    d->names = NULL;
    d->name_count = d->name_slots = 0;
}

/* ---- the names written in this run --------------------------------------------- */

static int same_owner(struct out_owner a, struct out_owner b)
{
    return a.index == b.index && a.what == b.what;
}

/* The slot of `hash` in names[0..slots): its own, or the empty one to take. */
static struct out_name *slot_of(struct out_name *names, size_t slots, XXH128_hash_t hash)
{
    for (size_t i = (size_t)hash.low64 & (slots - 1);; i = (i + 1) & (slots - 1))
        if (!names[i].used || XXH128_isEqual(names[i].hash, hash))
            return &names[i];
}

/* Room for one more name: 0, or -1 when out of memory. */
static int names_room(struct out_dir *d)
{
    if (4 * (d->name_count + 1) <= 3 * d->name_slots)
        return 0;
    size_t slots = d->name_slots ? 2 * d->name_slots : NAMES_FIRST;
    struct out_name *names = calloc(slots, sizeof *names);
    if (!names)
        return -1;
    for (size_t i = 0; i < d->name_slots; i++)
        if (d->names[i].used)
            *slot_of(names, slots, d->names[i].hash) = d->names[i];
    free(d->names);
    d->names = names;
    d->name_slots = slots;
    return 0;
}

/* Take `name` for `who`: 0 when it is free (or who's already), 1 when
 * another owner has it (*was), -1 when out of memory.  The listing's name
 * is the listing's alone. */
static int claim(struct out_dir *d, const char *name, struct out_owner who, struct out_owner *was)
{
    static const struct out_owner listing = {OUT_DIR_NO_SAMPLE, OUT_DIR_IMAGE};
    if (!strcmp(name, OUT_DIR_LISTING) && !same_owner(who, listing)) {
        *was = listing;
        return 1;
    }
    if (names_room(d))
        return -1;
    XXH128_hash_t hash = XXH3_128bits(name, strlen(name));
    struct out_name *n = slot_of(d->names, d->name_slots, hash);
    if (!n->used) {
        *n = (struct out_name){hash, who, 1};
        d->name_count++;
        return 0;
    }
    *was = n->owner;
    return !same_owner(n->owner, who);
}

/* `who` in words, into buf. */
static void owner_name(const struct out_dir *d, struct out_owner who, char *buf, size_t size)
{
    if (who.index == OUT_DIR_NO_SAMPLE)
        snprintf(buf, size, "the listing of shortened names");
    else if (d->owner_name)
        d->owner_name(d->owner_ctx, who, buf, size);
    else
        snprintf(buf, size, "sample %llu", (unsigned long long)who.index);
}

/* ---- writing a file ------------------------------------------------------------ */

static int write_all(int fd, const unsigned char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* A new temporary in DIR: its name in tmp, its descriptor returned (-1 with
 * errno set when none could be created). */
static int create_temporary(struct out_dir *d, char tmp[NAME_MAX + 1])
{
    for (int i = 0; i < TEMPORARY_TRIES; i++) {
        snprintf(tmp, NAME_MAX + 1, ".shardcat-%ld-%u.tmp", (long)getpid(), d->temporaries++);
        int fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* What stands at DIR/name, when it is something a file must not replace:
 * a reason, or NULL. */
static const char *in_the_way(const struct out_dir *d, const char *name)
{
    struct stat st;
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return NULL;
    if (S_ISLNK(st.st_mode))
        return "a symbolic link is in the way (left as it is, and what it points to)";
    if (S_ISDIR(st.st_mode))
        return "a directory is in the way";
    if (!S_ISREG(st.st_mode))
        return "something other than a file is in the way";
    return NULL;
}

int out_dir_write(struct out_dir *d, const char *prog, const char *name, struct out_owner who,
                  const void *data, size_t len)
{
    struct out_owner was;
    int taken = claim(d, name, who, &was);
    if (taken < 0) {
        fprintf(stderr, "%s: out of memory writing '%s/%s'\n", prog, d->path, name);
        return -1;
    }
    if (taken) {
        char mine[2 * SHOWN_KEY_SIZE], theirs[2 * SHOWN_KEY_SIZE];
        owner_name(d, who, mine, sizeof mine);
        owner_name(d, was, theirs, sizeof theirs);
        fprintf(stderr,
                "%s: cannot write '%s/%s' for %s: that name holds %s (two names collide; it "
                "is not overwritten)\n",
                prog, d->path, name, mine, theirs);
        return -1;
    }
    const char *why = in_the_way(d, name);
    if (why) {
        fprintf(stderr, "%s: cannot write '%s/%s': %s\n", prog, d->path, name, why);
        return -1;
    }
    char tmp[NAME_MAX + 1];
    int fd = create_temporary(d, tmp);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot create a temporary file in '%s': %s\n", prog, d->path,
                strerror(errno));
        return -1;
    }
    int failed = write_all(fd, data, len);
    int saved = errno;
    if (close(fd) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    /* renameat replaces whatever entry is at `name` by now - a link planted
     * since the check above included - and never writes through it */
    if (!failed && renameat(d->fd, tmp, d->fd, name) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        unlinkat(d->fd, tmp, 0);
        fprintf(stderr, "%s: cannot write '%s/%s': %s\n", prog, d->path, name, strerror(saved));
        return -1;
    }
    return 0;
}

/* ---- the listing of shortened names -------------------------------------------- */

static int add_line(struct out_dir *d, char *line)
{
    if (d->listed_count == d->listed_cap) {
        size_t cap = d->listed_cap ? 2 * d->listed_cap : 16;
        char **p = realloc(d->listed, cap * sizeof *p);
        if (!p)
            return -1;
        d->listed = p;
        d->listed_cap = cap;
    }
    d->listed[d->listed_count++] = line;
    return 0;
}

int out_dir_list(struct out_dir *d, const char *prog, const char *name, const char *key,
                 size_t key_len)
{
    size_t room = strlen(name) + 3 * key_len + 2;
    char *line = malloc(room);
    size_t n = line ? strlen(name) : 0;
    if (line) {
        memcpy(line, name, n);
        line[n++] = '\t';
    }
    if (!line || !shown_key(key, key_len, line + n, room - n) || add_line(d, line)) {
        free(line);
        fprintf(stderr, "%s: out of memory listing '%s/%s'\n", prog, d->path, name);
        return -1;
    }
    return 0;
}

/* Add the lines of an existing DIR/keys.tsv.  0, or -1 with errno set (or
 * EINVAL for a listing that is not a file of ours). */
static int read_listing(struct out_dir *d)
{
    int fd = openat(d->fd, OUT_DIR_LISTING, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct stat st;
    char *text = NULL;
    int rc = -1;
    if (fstat(fd, &st) != 0)
        goto out;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > LISTING_MAX) {
        errno = EINVAL;
        goto out;
    }
    size_t len = (size_t)st.st_size, got = 0;
    if (!(text = malloc(len + 1)))
        goto out;
    while (got < len) {
        ssize_t n = read(fd, text + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    text[got] = '\0';
    rc = 0;
    for (char *line = text, *end; !rc && *line; line = end + (*end != '\0')) {
        end = line + strcspn(line, "\n");
        if (end == line || ((size_t)(end - line) == strlen(LISTING_HEADER) &&
                            !strncmp(line, LISTING_HEADER, (size_t)(end - line))))
            continue;
        char *copy = strndup(line, (size_t)(end - line));
        if (!copy || add_line(d, copy)) {
            free(copy);
            rc = -1;
        }
    }
out:
    free(text);
    close(fd);
    return rc;
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int out_dir_write_listing(struct out_dir *d, const char *prog)
{
    if (d->listed_count == 0)
        return 0;
    if (read_listing(d)) {
        fprintf(stderr, "%s: cannot read '%s/%s': %s\n", prog, d->path, OUT_DIR_LISTING,
                errno == ELOOP    ? "it is a symbolic link (left as it is)"
                : errno == EINVAL ? "it is not a listing shardcat wrote"
                                  : strerror(errno));
        return -1;
    }
    qsort(d->listed, d->listed_count, sizeof *d->listed, compare_lines);
    size_t len = strlen(LISTING_HEADER) + 1;
    for (size_t i = 0; i < d->listed_count; i++)
        if (i == 0 || strcmp(d->listed[i], d->listed[i - 1]))
            len += strlen(d->listed[i]) + 1;
    char *text = malloc(len + 1);
    if (!text) {
        fprintf(stderr, "%s: out of memory writing '%s/%s'\n", prog, d->path, OUT_DIR_LISTING);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i <= d->listed_count; i++) {
        const char *line = i == 0 ? LISTING_HEADER : d->listed[i - 1];
        if (i > 1 && !strcmp(line, d->listed[i - 2]))
            continue; /* listed by an earlier run too */
        size_t n = strlen(line);
        memcpy(text + at, line, n);
        text[at + n] = '\n';
        at += n + 1;
    }
    int rc = out_dir_write(d, prog, OUT_DIR_LISTING,
                           (struct out_owner){OUT_DIR_NO_SAMPLE, OUT_DIR_IMAGE}, text, at);
    free(text);
    return rc;
}
