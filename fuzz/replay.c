/* replay.c - run a fuzz target over files, without libFuzzer.
 *
 *     fuzz_replay_<target> DIR|FILE...
 *
 * Feeds every regular file of each DIR (names starting with '.' and README*
 * are skipped; directories are not descended), and each FILE, to the
 * target's LLVMFuzzerTestOneInput, in name order.  Each input is copied into
 * a buffer of exactly its size, as libFuzzer does, so that a read past its
 * end is caught when built with AddressSanitizer.  A missing DIR is an error
 * (a typo must not pass as "nothing to replay").  Exit status: 0 when every
 * input ran (a crash or sanitizer report ends the process before that), 1 on
 * a usage or I/O error.  `make test` builds this with the ordinary compiler,
 * `make sanitize` with ASan+UBSan, so the committed corpora and regression
 * inputs are replayed on every test run. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

static int read_whole(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    int rc = buf ? 0 : -1;
    while (!rc) {
        if (n == cap) {
            uint8_t *p = realloc(buf, cap * 2);
            if (!p) {
                rc = -1;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = -1;
            break;
        }
    }
    fclose(f);
    if (rc) {
        free(buf);
        return -1;
    }
    /* exactly sized: no slack after the last byte for an over-read to hide in */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    *out = exact;
    *len = n;
    return 0;
}

static int run_file(const char *path)
{
    uint8_t *data;
    size_t len;
    if (read_whole(path, &data, &len) != 0) {
        fprintf(stderr, "replay: cannot read '%s': %s\n", path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

static int skipped(const char *name)
{
    return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Returns the number of inputs run, or -1. */
static long run_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    long ran = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (!failed && !skipped(name)) {
            size_t len = strlen(dir) + strlen(name) + 2;
            char *path = malloc(len);
            struct stat st;
            if (!path) {
                failed = 1;
            } else {
                snprintf(path, len, "%s/%s", dir, name);
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                    if (run_file(path) != 0)
                        failed = 1;
                    else
                        ran++;
                }
                free(path);
            }
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : ran;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 1;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot read '%s': %s\n", argv[i], strerror(errno));
            return 1;
        }
        long ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (ran < 0)
            return 1;
        printf("replay: %s: %ld input%s\n", argv[i], ran, ran == 1 ? "" : "s");
        total += ran;
    }
    printf("replay: %ld inputs, no findings\n", total);
    return 0;
}
