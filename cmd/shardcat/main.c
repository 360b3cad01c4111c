/* shardcat - write stored samples as PNG files, so a person can look at
 * exactly what training will see and a test can compare pixels with a
 * reference.  Argument parsing, key lookup and file output; reading is the
 * dataset reader's prefetching iterator (shardkit/dataset.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "safe_name.h"
#include "shardkit.h"

#define PROG "shardcat"
#define PNG_SUFFIX ".png"
/* A shown key is cut to this many bytes of its encoded name. */
#define SHOWN_KEY_MAX 512

static const char usage_text[] =
    "Usage: shardcat [OPTIONS] DST [KEY...] --out DIR\n"
    "Write stored samples of the dataset DST as PNG files in DIR: the pixels\n"
    "training will see (orientation applied, colours converted, resized).\n"
    "\n"
    "  DST        a shardify output directory\n"
    "  KEY...     keys of the samples to write; without any, every sample in\n"
    "             stored order\n"
    "\n"
    "Options:\n"
    "  --out DIR      where to write (created if missing; required)\n"
    "  --limit N      write at most N samples\n"
    "  --threads N    decoding threads (default: CPUs this process may use)\n"
    "  -h, --help     show this help\n"
    "  --version      show the version\n"
    "\n"
    "Each sample becomes DIR/NAME.png, NAME being its key with '/', '\\', '%',\n"
    "control bytes, bytes that are not UTF-8 and a leading '.' written as %XX\n"
    "(hex): 'n01/a b.JPEG' becomes 'n01%2Fa b.JPEG.png'.  Decoding the %XX gives\n"
    "the key back; names never leave DIR.\n"
    "\n"
    "Exit status: 0 all written; 1 a KEY is not in the dataset, a record is\n"
    "damaged or a file could not be written (each is named, the others are\n"
    "still written); 2 usage error, or DST or DIR unusable.\n";

enum { OPT_OUT = 256, OPT_LIMIT, OPT_THREADS, OPT_VERSION };

static const struct option long_options[] = {
    {"out", required_argument, NULL, OPT_OUT},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

struct cli {
    const char *dst;
    const char *out;
    char **keys;
    int key_count;
    uint64_t limit;           /* UINT64_MAX: no limit */
    int threads;
    struct shard_dataset *ds;
    int out_fd;
    int failed;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        switch (opt) {
        case OPT_OUT: c->out = optarg; break;
        case OPT_LIMIT:
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &c->limit))
                return cli_usage_error(PROG, "--limit: '%s' is not a whole number", optarg);
            break;
        case OPT_THREADS:
            if (cli_parse_threads(PROG, optarg, &c->threads))
                return CLI_EXIT_USAGE;
            break;
        default:
            return cli_other_option(PROG, opt, OPT_VERSION, usage_text, argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error(PROG, "expected DST");
    if (!c->out)
        return cli_usage_error(PROG, "--out DIR is required");
    c->dst = argv[optind];
    c->keys = argv + optind + 1;
    c->key_count = argc - optind - 1;
    return CLI_EXIT_OK;
}

/* A key for messages: printable, one line. */
static const char *shown(const char *key, size_t len, char *buf, size_t size)
{
    if (!shown_key(key, len, buf, size))
        snprintf(buf, size, "(a key of %zu bytes)", len);
    return buf;
}

/* ---- choosing samples ---------------------------------------------------------- */

struct wanted {
    const char *key;
    size_t len;
    int position;             /* on the command line */
    uint64_t index;
    int found;
};

static int compare_wanted(const void *pa, const void *pb)
{
    const struct wanted *a = pa, *b = pb;
    return shard_key_compare(a->key, a->len, b->key, b->len);
}

static int by_position(const void *pa, const void *pb)
{
    const struct wanted *a = pa, *b = pb;
    return a->position - b->position;
}

/* Find the keys in index.jsonl; *indices gets the found ones in command-line
 * order.  Returns 0, or -1 for an unreadable index (reported). */
static int look_up_keys(struct cli *c, uint64_t **indices, uint64_t *count)
{
    const struct shard_manifest *m = shard_dataset_manifest(c->ds);
    size_t n = (size_t)c->key_count;
    struct wanted *w = calloc(n ? n : 1, sizeof *w);
    *indices = malloc((n ? n : 1) * sizeof **indices);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", c->dst, m->index_file);
    struct shard_index_reader *rd = NULL;
    struct shard_err err;
    int rc = -1;
    if (!w || !*indices) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        w[i] = (struct wanted){c->keys[i], strlen(c->keys[i]), (int)i, 0, 0};
    qsort(w, n, sizeof *w, compare_wanted);
    if (shard_index_reader_open(&rd, path, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        goto out;
    }
    struct shard_sample s;
    int got;
    while ((got = shard_index_reader_next(rd, &s, &err)) == 1) {
        struct wanted probe = {s.key, s.key_len, 0, 0, 0};
        struct wanted *hit = bsearch(&probe, w, n, sizeof *w, compare_wanted);
        if (!hit)
            continue;
        while (hit > w && !compare_wanted(hit - 1, &probe))
            hit--;
        uint64_t index;
        if (shard_dataset_index_of(c->ds, s.shard, s.record, &index, &err))
            continue;  /* an index line pointing nowhere: shardcheck reports it */
        for (; hit < w + n && !compare_wanted(hit, &probe); hit++)
            if (!hit->found) {
                hit->found = 1;
                hit->index = index;
            }
    }
    if (got < 0) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        goto out;
    }
    qsort(w, n, sizeof *w, by_position);
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[SHOWN_KEY_MAX];
        if (w[i].found)
            (*indices)[(*count)++] = w[i].index;
        else {
            fprintf(stderr, "%s: no sample with key '%s' in '%s'\n", PROG,
                    shown(w[i].key, w[i].len, buf, sizeof buf), c->dst);
            c->failed = 1;
        }
    }
    rc = 0;
out:
    shard_index_reader_close(rd);
    free(w);
    if (rc) {
        free(*indices);
        *indices = NULL;
    }
    return rc;
}

/* ---- writing ------------------------------------------------------------------- */

static void write_sample(struct cli *c, const struct shard_item *it, struct shard_buf *png)
{
    char name[NAME_MAX + 1], buf[SHOWN_KEY_MAX];
    const char *key = (const char *)it->key.data;
    struct shard_err err;
    if (!safe_name(key, it->key.len, PNG_SUFFIX, name, sizeof name)) {
        fprintf(stderr, "%s: key '%s' is too long for a file name\n", PROG,
                shown(key, it->key.len, buf, sizeof buf));
        c->failed = 1;
        return;
    }
    if (shard_encode(&it->pixels, SHARD_CODEC_PNG, 0, png, &err)) {
        fprintf(stderr, "%s: cannot encode '%s': %s\n", PROG, name, err.msg);
        c->failed = 1;
        return;
    }
    int fd = openat(c->out_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    size_t done = 0;
    while (fd >= 0 && done < png->len) {
        ssize_t n = write(fd, png->data + done, png->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        done += (size_t)n;
    }
    if (fd < 0 || done < png->len || close(fd) != 0) {
        fprintf(stderr, "%s: cannot write '%s/%s': %s\n", PROG, c->out, name, strerror(errno));
        if (fd >= 0 && done < png->len)
            close(fd);
        c->failed = 1;
    }
}

static int write_all(struct cli *c, const uint64_t *indices, uint64_t count, uint64_t *written)
{
    struct shard_iter_options o;
    shard_iter_options_init(&o);
    o.threads = c->threads ? c->threads : shard_available_cpus();
    o.flags = SHARD_READ_PIXELS;
    struct shard_iter *it;
    struct shard_err err;
    if (shard_iter_new(&it, c->ds, indices, count, &o, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        return -1;
    }
    struct shard_item item;
    struct shard_buf png = {0};
    memset(&item, 0, sizeof item);
    int rc;
    while ((rc = shard_iter_next(it, &item, &err)) != 0) {
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", PROG, err.msg);
            c->failed = 1;
            continue;
        }
        write_sample(c, &item, &png);
        (*written)++;
    }
    shard_buf_release(&png);
    shard_item_release(&item);
    shard_iter_free(it);
    return 0;
}

static int open_out(struct cli *c)
{
    if (mkdir(c->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: cannot create '%s': %s\n", PROG, c->out, strerror(errno));
        return -1;
    }
    c->out_fd = open(c->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->out_fd < 0) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", PROG, c->out, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof c);
    c.limit = UINT64_MAX;
    c.out_fd = -1;
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc;
    struct shard_err err;
    if (shard_dataset_open(&c.ds, c.dst, &err)) {
        fprintf(stderr, "%s: %s\n", PROG, err.msg);
        return CLI_EXIT_USAGE;
    }
    uint64_t *indices = NULL, count = 0, written = 0;
    rc = CLI_EXIT_USAGE;
    if (open_out(&c))
        goto out;
    if (c.key_count) {
        if (look_up_keys(&c, &indices, &count))
            goto out;
    } else {
        count = shard_dataset_size(c.ds);
        if (!(indices = malloc((count ? count : 1) * sizeof *indices))) {
            fprintf(stderr, "%s: out of memory\n", PROG);
            goto out;
        }
        for (uint64_t i = 0; i < count; i++)
            indices[i] = i;
    }
    if (count > c.limit)
        count = c.limit;
    if (write_all(&c, indices, count, &written))
        goto out;
    fprintf(stderr, "%s: wrote %llu sample%s to '%s'\n", PROG, (unsigned long long)written,
            written == 1 ? "" : "s", c.out);
    rc = c.failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
out:
    free(indices);
    if (c.out_fd >= 0)
        close(c.out_fd);
    shard_dataset_close(c.ds);
    return rc;
}
