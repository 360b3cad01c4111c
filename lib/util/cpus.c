/* cpus.c - how many CPUs this process may really use (see shardkit/util.h).
 *
 * sysconf(_SC_NPROCESSORS_ONLN) counts the machine, not what a container or
 * `taskset` grants us; running 64 threads on a 4-CPU quota makes a batch
 * job slower, not faster.  So we take the smallest of:
 *   - the affinity mask (taskset, cpusets),
 *   - the CFS bandwidth quota of our cgroup and its ancestors (v2 cpu.max,
 *     v1 cpu.cfs_quota_us / cpu.cfs_period_us), rounded up,
 *   - OMP_NUM_THREADS, when it is a positive integer.
 */
#include "shardkit/util.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* The largest CPU set we ask the kernel about (CPUs, not bytes). */
#define MAX_AFFINITY_CPUS (1 << 17)
/* Enough for any cpu.max or cfs_*_us file. */
#define SMALL_FILE_BYTES 128

/* CPUs in our affinity mask, or 0 when it cannot be read. */
static long affinity_cpus(void)
{
    /* The kernel refuses (EINVAL) a set smaller than its own, so grow. */
    for (int n = CPU_SETSIZE; n <= MAX_AFFINITY_CPUS; n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            return 0;
        size_t size = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            long count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        int e = errno;
        CPU_FREE(set);
        if (e != EINVAL)
            return 0;
    }
    return 0;
}

/* Read a small text file into buf (NUL-terminated).  0 or SHARD_EIO. */
static int read_small_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re"); /* nofollow: a kernel file (/sys) */
    if (!f)
        return SHARD_EIO;
    size_t n = fread(buf, 1, size - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return SHARD_EIO;
    buf[n] = '\0';
    return SHARD_OK;
}

/* Parse an unsigned decimal number ending at white space or NUL.  0 or
 * SHARD_EINVAL. */
static int parse_u64(const char *s, const char **end, unsigned long long *out)
{
    if (*s < '0' || *s > '9')
        return SHARD_EINVAL;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || (*e != '\0' && *e != ' ' && *e != '\n'))
        return SHARD_EINVAL;
    *out = v;
    *end = e;
    return SHARD_OK;
}

/* quota/period rounded up, or 0 for "no limit" and anything unparsable. */
static long quota_cpus(unsigned long long quota, unsigned long long period)
{
    if (period == 0 || quota == 0)
        return 0;
    unsigned long long cpus = quota / period + (quota % period != 0);
    return cpus > LONG_MAX ? LONG_MAX : (long)cpus;
}

/* cgroup v2: cpu.max is "max PERIOD" or "QUOTA PERIOD". */
static long v2_limit(const char *dir)
{
    char path[PATH_MAX], text[SMALL_FILE_BYTES];
    if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path ||
        read_small_file(path, text, sizeof text))
        return 0;
    if (strncmp(text, "max", 3) == 0)
        return 0;
    const char *p = text;
    unsigned long long quota, period;
    if (parse_u64(p, &p, &quota) || *p != ' ' || parse_u64(p + 1, &p, &period))
        return 0;
    return quota_cpus(quota, period);
}

/* cgroup v1: cpu.cfs_quota_us is -1 for "no limit". */
static long v1_limit(const char *dir)
{
    char path[PATH_MAX], text[SMALL_FILE_BYTES];
    const char *p;
    unsigned long long quota, period;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir) >= (int)sizeof path ||
        read_small_file(path, text, sizeof text) || parse_u64(text, &p, &quota))
        return 0;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir) >= (int)sizeof path ||
        read_small_file(path, text, sizeof text) || parse_u64(text, &p, &period))
        return 0;
    return quota_cpus(quota, period);
}

static long min_limit(long a, long b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

/* The tightest limit of `mount`/`cgroup` and every ancestor up to `mount`.
 * Walking up also covers containers, where /proc/self/cgroup may name a
 * host path while the container's own cgroup is mounted at the root. */
static long walk_limits(const char *mount, const char *cgroup, long (*limit)(const char *))
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s%s", mount, cgroup) >= (int)sizeof dir)
        return limit(mount);
    size_t mount_len = strlen(mount);
    long best = 0;
    for (;;) {
        size_t len = strlen(dir);
        while (len > mount_len && dir[len - 1] == '/')
            dir[--len] = '\0';
        best = min_limit(best, limit(dir));
        if (len <= mount_len)
            return best;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < mount_len)
            dir[mount_len] = '\0';
        else
            *slash = '\0';
    }
}

/* 1 if the comma-separated list holds `name`. */
static int list_has(const char *list, size_t len, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < len;) {
        const char *comma = memchr(list + i, ',', len - i);
        size_t item = comma ? (size_t)(comma - (list + i)) : len - i;
        if (item == n && memcmp(list + i, name, n) == 0)
            return 1;
        i += item + 1;
    }
    return 0;
}

/* The CFS quota in CPUs from the cgroups listed in /proc/self/cgroup, or 0. */
static long cgroup_cpus(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re"); /* nofollow: a kernel file */
    if (!f)
        return min_limit(v2_limit(CGROUP_ROOT), v1_limit(CGROUP_ROOT "/cpu"));
    long best = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        const char *controllers = c1 + 1;
        size_t controllers_len = (size_t)(c2 - controllers);
        const char *cgroup = c2 + 1;
        if (controllers_len == 0 && strncmp(line, "0:", 2) == 0) {
            best = min_limit(best, walk_limits(CGROUP_ROOT, cgroup, v2_limit));
        } else if (list_has(controllers, controllers_len, "cpu")) {
            best = min_limit(best, walk_limits(CGROUP_ROOT "/cpu", cgroup, v1_limit));
            best = min_limit(best, walk_limits(CGROUP_ROOT "/cpu,cpuacct", cgroup, v1_limit));
        }
    }
    free(line);
    fclose(f);
    return best;
}

/* OMP_NUM_THREADS as a positive integer, or 0 when unset or not one.  Its
 * first element counts when it is a list ("8,2": 8 at the outer level). */
static long omp_threads(void)
{
    const char *s = getenv("OMP_NUM_THREADS");
    if (!s)
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || v <= 0)
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end != '\0' && *end != ',')
        return 0;
    return v;
}

int shard_available_cpus(void)
{
    long n = affinity_cpus();
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    n = min_limit(n, cgroup_cpus());
    n = min_limit(n, omp_threads());
    if (n < 1)
        return 1;
    return n > INT_MAX ? INT_MAX : (int)n;
}
