/* cache.c - the node-local shard cache (see cache.h).
 *
 * Locking, in one process: a file's rwlock guards its state (readers read
 * under it; a change of state - released, local, downloading, remote -
 * takes it exclusively); its `acquire` mutex lets one thread at a time
 * find the file again once released; the cache's mutex guards the list of
 * files held open and the warning.  Never is a file's rwlock taken while
 * the cache's mutex is held.  Between processes: flock() as cache.h says. */
#include "read/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "read/fetch_http.h"
#include "read/observer.h"
#include "util/cancel.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/grow.h"

#define KEY_SIZE 48
#define NAME_SIZE 96
#define DIR_LOCK ".lock"
/* The most a download reads at once: a piece small enough to stay in the
 * CPU's caches from the copy out of the window to the hash and the write
 * (pieces of 4 MiB took 0.72 ms of CPU per 263 KB sample in epoch 1 against
 * 0.5 ms with 256 KiB: BENCHMARKS.md section 14). */
#define CACHE_PIECE ((size_t)256 << 10)

enum cf_state { CF_RELEASED = 0, CF_LOCAL, CF_DOWNLOADING, CF_REMOTE };

struct cache_file;

struct sk_cache {
    char *dir;
    int dir_fd;
    uint64_t limit;
    size_t piece;      /* bytes a download reads at once: CACHE_PIECE, or half a window */
    uint64_t stall_ns; /* a download making no progress this long is not waited for */
    int replace;       /* also evict the dataset's own shards (SHARDKIT_CACHE_EVICT=lru) */
    struct cache_id {  /* the dataset's shards, sorted: never evicted for each other */
        uint64_t xxh3, bytes;
        _Atomic int done; /* ...unless read this epoch (sk_cache_done) */
    } * ids;
    size_t id_count;
    struct sk_read_counters *counters;
    _Atomic uint64_t tick;
    _Atomic uint64_t epoch; /* sk_cache_epoch calls: a shard is downloaded once per epoch */
    _Atomic unsigned seq;   /* temporary names */
    pthread_mutex_t lock;   /* held[] and warning */
    struct cache_file *held[CACHE_HELD + 1];
    size_t held_len;
    char warning[SHARD_ERRMSG_SIZE];
};

struct cache_file {
    struct fetch_file base;
    struct sk_cache *c;
    struct fetch *remote;
    char *name;
    char key[KEY_SIZE];
    uint64_t bytes, xxh3;
    pthread_rwlock_t rw;
    pthread_mutex_t acquire;
    enum cf_state state;
    int fd;                  /* LOCAL: KEY.shard (flock shared); DOWNLOADING: the temporary */
    struct fetch_file *http; /* DOWNLOADING and REMOTE; NULL before the first miss */
    _Atomic uint64_t have;   /* DOWNLOADING: bytes of fd written */
    int lock_fd;             /* KEY.lock while downloading */
    char tmp[NAME_SIZE];
    pthread_t thread;
    int thread_live;
    _Atomic uint64_t last_use;
    struct stat verified; /* the KEY.shard whose bytes were checked */
    int has_verified;
    int acquired;                    /* found or fetched once in epoch acquired_epoch: */
    _Atomic uint64_t acquired_epoch; /* no second download in that epoch */
    _Atomic uint64_t counted_epoch;  /* the epoch whose hit or miss it counted */
    _Atomic int let_go;              /* read this epoch: released once its download is done */
};

static void key_name(char *out, size_t size, const char *key, const char *suffix)
{
    snprintf(out, size, "%s%s", key, suffix);
}

static void warn(struct sk_cache *c, const char *fmt, const char *name, const char *why)
{
    pthread_mutex_lock(&c->lock);
    if (!c->warning[0])
        snprintf(c->warning, sizeof c->warning, fmt, c->dir, name, why);
    pthread_mutex_unlock(&c->lock);
}

size_t sk_cache_warning(struct sk_cache *c, char *buf, size_t size)
{
    pthread_mutex_lock(&c->lock);
    snprintf(buf, size, "%s", c->warning);
    pthread_mutex_unlock(&c->lock);
    return strlen(buf);
}

/* ---- the cache directory ------------------------------------------------------ */

static int id_cmp(const void *a, const void *b)
{
    const struct cache_id *x = a, *y = b;
    if (x->xxh3 != y->xxh3)
        return x->xxh3 < y->xxh3 ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

int sk_cache_new(struct sk_cache **out, const char *dir, uint64_t limit,
                 const struct shard_dataset_options *o, const struct shard_manifest *m,
                 struct sk_read_counters *counters, struct shard_err *err)
{
    *out = NULL;
    struct sk_cache *c = calloc(1, sizeof *c);
    if (!c || !(c->dir = strdup(dir))) {
        free(c);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->lock, NULL);
    c->dir_fd = -1;
    c->limit = limit;
    c->piece = o->window_bytes / 2 < CACHE_PIECE ? (size_t)(o->window_bytes / 2) : CACHE_PIECE;
    if (!c->piece)
        c->piece = 1;
    /* the longest one window fetch may go without a byte before it fails */
    c->stall_ns = (uint64_t)((o->timeout_seconds + 2.0) * (o->retries + 1) * 1e9);
    c->counters = counters;
    const char *evict = getenv("SHARDKIT_CACHE_EVICT");
    c->replace = evict && !strcmp(evict, "lru");
    if (m->shard_count && !(c->ids = malloc(m->shard_count * sizeof *c->ids))) {
        sk_cache_free(c);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < m->shard_count; i++)
        c->ids[c->id_count++] = (struct cache_id){m->shards[i].xxh3, m->shards[i].bytes, 0};
    if (c->id_count)
        qsort(c->ids, c->id_count, sizeof *c->ids, id_cmp);
    if (mkdir(dir, 0777) && errno != EEXIST) {
        int e = errno;
        sk_cache_free(c);
        return shard_err_errno(err, SHARD_EIO, e, "cannot create the cache directory '%s'", dir);
    }
    c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* nofollow: the one named */
    if (c->dir_fd < 0) {
        int e = errno;
        sk_cache_free(c);
        return shard_err_errno(err, SHARD_EIO, e, "cannot open the cache directory '%s'", dir);
    }
    *out = c;
    return SHARD_OK;
}

void sk_cache_free(struct sk_cache *c)
{
    if (!c)
        return;
    if (c->dir_fd >= 0)
        close(c->dir_fd);
    pthread_mutex_destroy(&c->lock);
    free(c->ids);
    free(c->dir);
    free(c);
}

/* Whether fd is still the file dir/name (not removed or replaced since it
 * was opened). */
static int still_named(int dir_fd, int fd, const char *name)
{
    struct stat a, b;
    return !fstat(fd, &a) && !fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* What lock_key and wait_key return when they do not take the lock. */
#define LOCK_BUSY (-1)    /* another holds it */
#define LOCK_DENIED (-2)  /* the lock file cannot be opened (errno says why) */
#define LOCK_STALLED (-3) /* its holder made no progress for too long */

/* Open (creating it if missing) the lock file `name` of the cache: its
 * fd, or -1 (errno set).  Read-only - flock needs no more, so a lock file
 * another user made can be taken - and never through a link or of another
 * kind than a regular file (one planted in the directory must not have the
 * reader create or lock a file elsewhere, or hang on a FIFO).  A lock file
 * this process makes is 0666 whatever the umask: a cache shared between
 * users is theirs to lock, and who may use it is the directory's mode. */
static int open_lock(struct sk_cache *c, const char *name)
{
    int fd = openat(c->dir_fd, name,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_CREAT | O_EXCL, 0666);
    if (fd >= 0)
        (void)fchmod(fd, 0666);
    else if (errno == EEXIST)
        fd = openat(c->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* KEY.lock, taken exclusively without waiting: its fd, LOCK_BUSY, or
 * LOCK_DENIED (errno set). */
static int lock_key(struct sk_cache *c, const char *key)
{
    char name[NAME_SIZE];
    key_name(name, sizeof name, key, ".lock");
    for (int i = 0; i < 100; i++) {
        int fd = open_lock(c, name);
        if (fd < 0)
            return errno == ENOENT ? LOCK_BUSY : LOCK_DENIED; /* removed meanwhile: again */
        int rc;
        while ((rc = flock(fd, LOCK_EX | LOCK_NB)) && errno == EINTR)
            ;
        if (rc) {
            int e = errno;
            close(fd);
            errno = e;
            return e == EWOULDBLOCK ? LOCK_BUSY : LOCK_DENIED;
        }
        if (still_named(c->dir_fd, fd, name))
            return fd;
        close(fd); /* removed by an eviction meanwhile: take the new one */
    }
    return LOCK_BUSY;
}

/* The time KEY.lock was last touched (a download touches it after each
 * piece), or 0. */
static uint64_t key_stamp(struct sk_cache *c, const char *key)
{
    char name[NAME_SIZE];
    struct stat st;
    key_name(name, sizeof name, key, ".lock");
    if (fstatat(c->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
        return 0;
    return (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
}

/* The warning for a lock of the cache that could not be had (errno e):
 * the shard is read remotely. */
static void warn_lock(struct sk_cache *c, const char *shard, const char *lock, int e)
{
    char why[NAME_SIZE + 128];
    snprintf(why, sizeof why, "cannot lock '%s': %s", lock, strerror(e));
    warn(c, "cache directory '%s': %s read remotely, not cached: %s", shard, why);
}

/* KEY.lock, taken once whoever holds it is done - a download by another
 * process, usually; or LOCK_STALLED when its holder makes no progress for
 * c->stall_ns (a process stopped, a server that stalls), LOCK_DENIED (errno
 * set) when it cannot be taken at all (a read-only directory, a lock file
 * that is no file): the shard is then read remotely rather than waited
 * for.  SHARD_EINTR when the thread's cancellation says stop. */
static int wait_key(struct sk_cache *c, const char *key)
{
    uint64_t seen = key_stamp(c, key), since = sk_now_ns();
    for (;;) {
        int fd = lock_key(c, key);
        if (fd != LOCK_BUSY)
            return fd;
        uint64_t now = sk_now_ns(), stamp = key_stamp(c, key);
        if (stamp != seen) {
            seen = stamp;
            since = now;
        } else if (now - since > c->stall_ns) {
            return LOCK_STALLED;
        }
        if (sk_cancelled())
            return SHARD_EINTR;
        const struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* The directory's lock (.lock), taken exclusively: its fd; -1 with errno
 * set when it cannot be opened, or (a thread with a cancellation, which
 * polls it) EINTR when the cancellation said stop while another process
 * held it, ETIMEDOUT when that process held it for as long as a stalled
 * download is waited for (it is held only while space is counted and
 * made, or a download renamed: briefly, unless that process is stopped). */
static int lock_dir(struct sk_cache *c)
{
    int fd = open_lock(c, DIR_LOCK);
    if (fd < 0)
        return -1;
    /* a thread that cannot be cancelled (a download, the plan's opens)
     * waits its turn as it always did: blocked, in the kernel's order */
    const int wait = sk_cancellable() ? LOCK_NB : 0;
    for (uint64_t since = sk_now_ns();;) {
        if (!flock(fd, LOCK_EX | wait))
            return fd;
        int e = errno;
        if (e == EWOULDBLOCK || e == EINTR) {
            if (sk_cancelled())
                e = EINTR;
            else if (sk_now_ns() - since > c->stall_ns)
                e = ETIMEDOUT;
            else {
                const struct timespec pause = {0, 5 * 1000 * 1000};
                nanosleep(&pause, NULL);
                continue;
            }
        }
        close(fd);
        errno = e;
        return -1;
    }
}

/* Remove KEY.shard and KEY.lock; the caller holds KEY.lock (lock_fd). */
static void remove_key(struct sk_cache *c, const char *key, int lock_fd)
{
    char name[NAME_SIZE];
    key_name(name, sizeof name, key, ".shard");
    (void)unlinkat(c->dir_fd, name, 0);
    key_name(name, sizeof name, key, ".lock");
    (void)unlinkat(c->dir_fd, name, 0);
    close(lock_fd);
}

/* The length of the key "XXH3-BYTES" (16 lower-case hex digits, a decimal
 * number) name starts with, or 0 when it starts with none. */
static size_t key_length(const char *name)
{
    size_t i = 0;
    for (; i < 16; i++)
        if (!strchr("0123456789abcdef", name[i]) || !name[i])
            return 0;
    if (name[i++] != '-' || name[i] < '0' || name[i] > '9')
        return 0;
    while (name[i] >= '0' && name[i] <= '9')
        i++;
    return i < KEY_SIZE ? i : 0;
}

struct victim {
    char key[KEY_SIZE];
    struct timespec used;
    uint64_t bytes;
    int own; /* a shard of the dataset: 1, 2 when read this epoch */
};

static struct cache_id *find_id(struct sk_cache *c, uint64_t xxh3, uint64_t bytes)
{
    struct cache_id id = {xxh3, bytes, 0};
    return c->id_count ? bsearch(&id, c->ids, c->id_count, sizeof *c->ids, id_cmp) : NULL;
}

/* The shard of the cache's dataset KEY names, or NULL. */
static struct cache_id *own_key(struct sk_cache *c, const char *key)
{
    char *end;
    uint64_t xxh3 = strtoull(key, &end, 16);
    if (*end != '-')
        return NULL;
    return find_id(c, xxh3, strtoull(end + 1, NULL, 10));
}

/* Bytes the cache holds (shards and downloads under way), and its shards
 * as eviction candidates (*v, *n; malloc'd).  Downloads whose process died
 * (their KEY.lock is free, or is ours: `own`) are removed. */
static int scan(struct sk_cache *c, const char *own, uint64_t *used, struct victim **v, size_t *n)
{
    *used = 0;
    *v = NULL;
    *n = 0;
    size_t cap = 0;
    int fd = dup(c->dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t k = key_length(de->d_name);
        if (!k)
            continue;
        const char *rest = de->d_name + k;
        struct stat st;
        if (fstatat(c->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
            continue;
        char key[KEY_SIZE];
        snprintf(key, sizeof key, "%.*s", (int)k, de->d_name);
        if (!strncmp(rest, ".tmp.", 5)) {
            int mine = !strcmp(key, own), lk = mine ? LOCK_BUSY : lock_key(c, key);
            if (mine || lk >= 0) { /* nobody downloads it: left by a dead process */
                (void)unlinkat(c->dir_fd, de->d_name, 0);
                if (lk >= 0)
                    close(lk);
            } else {
                *used += (uint64_t)st.st_size;
            }
            continue;
        }
        if (strcmp(rest, ".shard"))
            continue;
        *used += (uint64_t)st.st_size;
        if (SK_GROW(*v, cap, *n + 1, 64))
            break;
        struct victim *x = &(*v)[(*n)++];
        memcpy(x->key, key, sizeof key);
        x->used = st.st_atim;
        x->bytes = (uint64_t)st.st_size;
        struct cache_id *id = own_key(c, key);
        x->own = !id ? 0 : atomic_load(&id->done) ? 2 : 1;
    }
    closedir(d);
    return 0;
}

static int older(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec != b->tv_sec ? a->tv_sec < b->tv_sec : a->tv_nsec < b->tv_nsec;
}

/* Which victims go first: other datasets' shards (0), then the dataset's
 * shards read this epoch (1); those it has yet to read (2) never (unless
 * c->replace: then all alike, the least recently read first). */
static int rank(const struct sk_cache *c, const struct victim *v)
{
    return c->replace ? 0 : v->own == 2 ? 1 : v->own ? 2 : 0;
}

/* Evict the next candidate of v[0..n) that nobody uses, by rank, then the
 * least recently read first (tried ones get bytes 0): its size, or 0 when
 * none could go.  A shard of the dataset that this epoch has yet to read is
 * no candidate: an epoch reads every shard once, in any order, so such a
 * cached shard is read again before the one it would make room for, and
 * replacing it costs a download and saves none; one already read this
 * epoch is not read again before the next. */
static uint64_t evict_one(struct sk_cache *c, struct victim *v, size_t n)
{
    for (;;) {
        struct victim *best = NULL;
        for (size_t i = 0; i < n; i++)
            if (v[i].bytes && rank(c, &v[i]) < 2 &&
                (!best || rank(c, &v[i]) < rank(c, best) ||
                 (rank(c, &v[i]) == rank(c, best) && older(&v[i].used, &best->used))))
                best = &v[i];
        if (!best)
            return 0;
        uint64_t bytes = best->bytes;
        best->bytes = 0;
        int lk = lock_key(c, best->key);
        if (lk < 0)
            continue;
        char name[NAME_SIZE];
        key_name(name, sizeof name, best->key, ".shard");
        int fd = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB)) {
            remove_key(c, best->key, lk);
            close(fd);
            sk_read_count(c->counters, SK_READ_CACHE_EVICTIONS, 1);
            return bytes;
        }
        if (fd >= 0)
            close(fd);
        close(lk);
    }
}

/* Room for cf's download, and its temporary file (cf->fd, cf->tmp), under
 * the directory's lock.  0; 1 when it cannot be cached (cf->fd -1; a full
 * disk says so in the warning). */
static int reserve(struct cache_file *cf)
{
    struct sk_cache *c = cf->c;
    cf->fd = -1;
    if (c->limit && cf->bytes > c->limit)
        return 1;
    int dl = lock_dir(c);
    if (dl < 0) {
        if (errno != EINTR) /* EINTR: the reader was cancelled, no fault of the cache */
            warn_lock(c, cf->name, DIR_LOCK, errno);
        return 1;
    }
    uint64_t used;
    struct victim *v;
    size_t n;
    int rc = 1;
    if (scan(c, cf->key, &used, &v, &n))
        goto out;
    while (c->limit && used + cf->bytes > c->limit) {
        uint64_t freed = evict_one(c, v, n);
        if (!freed)
            goto out; /* every shard in use: read this one remotely */
        used -= freed < used ? freed : used;
    }
    snprintf(cf->tmp, sizeof cf->tmp, "%s.tmp.%ld.%u", cf->key, (long)getpid(),
             atomic_fetch_add(&c->seq, 1));
    cf->fd = openat(c->dir_fd, cf->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (cf->fd < 0) {
        warn(c, "cache directory '%s': %s not cached: %s", cf->name, strerror(errno));
        goto out;
    }
    int e;
    while ((e = posix_fallocate(cf->fd, 0, (off_t)cf->bytes)) == ENOSPC || e == EDQUOT) {
        if (!evict_one(c, v, n))
            break; /* a full disk: make room from the cache itself first */
    }
    if (e && e != EOPNOTSUPP && e != EINVAL) {
        warn(c, "cache directory '%s': %s read remotely, not cached: %s", cf->name, strerror(e));
        close(cf->fd);
        cf->fd = -1;
        (void)unlinkat(c->dir_fd, cf->tmp, 0);
        goto out;
    }
    rc = 0;
out:
    free(v);
    close(dl); /* drops the lock */
    return rc;
}

/* ---- a shard ---------------------------------------------------------------------- */

static void touch(struct cache_file *cf)
{
    atomic_store_explicit(&cf->last_use, atomic_fetch_add(&cf->c->tick, 1) + 1,
                          memory_order_relaxed);
}

/* Release a held file (under the cache's lock, with drop's rwlock taken):
 * its local copy or its remote file closed, to be found again by the next
 * read. */
static void release(struct cache_file *drop)
{
    if (drop->state == CF_LOCAL) {
        close(drop->fd); /* the shared lock goes with it: the shard may be evicted */
        drop->fd = -1;
        drop->state = CF_RELEASED;
    } else if (drop->state == CF_REMOTE) {
        fetch_close(drop->http);
        drop->http = NULL;
        drop->state = CF_RELEASED;
    }
}

/* Keep cf among the files held open; release the least recently read
 * other ones while there are too many (one being read remotely is left
 * for later).  A file is released under the cache's lock, so that closing
 * it (unhold) waits for that. */
static void hold(struct cache_file *cf)
{
    struct sk_cache *c = cf->c;
    touch(cf);
    pthread_mutex_lock(&c->lock);
    size_t i = 0;
    while (i < c->held_len && c->held[i] != cf)
        i++;
    if (i == c->held_len && c->held_len < CACHE_HELD + 1)
        c->held[c->held_len++] = cf;
    uint64_t floor = 0; /* tried and busy: the ones read before */
    while (c->held_len > CACHE_HELD) {
        size_t lru = c->held_len;
        for (size_t j = 0; j < c->held_len; j++) {
            uint64_t u = atomic_load(&c->held[j]->last_use);
            if (c->held[j] != cf && u > floor &&
                (lru == c->held_len || u < atomic_load(&c->held[lru]->last_use)))
                lru = j;
        }
        if (lru == c->held_len)
            break;
        struct cache_file *drop = c->held[lru];
        if (pthread_rwlock_trywrlock(&drop->rw)) {
            floor = atomic_load(&drop->last_use);
            continue;
        }
        release(drop);
        pthread_rwlock_unlock(&drop->rw);
        c->held[lru] = c->held[--c->held_len];
    }
    pthread_mutex_unlock(&c->lock);
}

static void unhold(struct cache_file *cf)
{
    struct sk_cache *c = cf->c;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->held_len; i++)
        if (c->held[i] == cf) {
            c->held[i] = c->held[--c->held_len];
            break;
        }
    pthread_mutex_unlock(&c->lock);
}

/* KEY.shard, opened with a shared lock and checked: its fd, or -1 (absent;
 * a damaged one is removed). */
static int open_cached(struct cache_file *cf)
{
    struct sk_cache *c = cf->c;
    char name[NAME_SIZE];
    key_name(name, sizeof name, cf->key, ".shard");
    for (int tries = 0; tries < 100; tries++) {
        int fd = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return -1;
        struct stat st;
        if (flock(fd, LOCK_SH) || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
            close(fd);
            return -1;
        }
        if (!still_named(c->dir_fd, fd, name)) { /* evicted meanwhile */
            close(fd);
            continue;
        }
        int known = cf->has_verified && st.st_dev == cf->verified.st_dev &&
                    st.st_ino == cf->verified.st_ino && st.st_size == cf->verified.st_size &&
                    st.st_mtim.tv_sec == cf->verified.st_mtim.tv_sec &&
                    st.st_mtim.tv_nsec == cf->verified.st_mtim.tv_nsec;
        uint64_t bytes = 0, hash = 0;
        struct shard_err e;
        if (!known &&
            ((uint64_t)st.st_size != cf->bytes || sk_fs_hash_fd(fd, name, &bytes, &hash, &e) ||
             bytes != cf->bytes || hash != cf->xxh3)) {
            /* damaged: removed (under its lock, if it is still this file),
             * then fetched again */
            close(fd);
            int lk = wait_key(c, cf->key);
            if (lk >= 0) {
                int again = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                struct stat now;
                if (again >= 0 && !fstat(again, &now) && now.st_ino == st.st_ino &&
                    now.st_dev == st.st_dev)
                    (void)unlinkat(c->dir_fd, name, 0);
                if (again >= 0)
                    close(again);
                close(lk);
            }
            sk_read_count(c->counters, SK_READ_CACHE_CORRUPT, 1);
            return -1;
        }
        cf->verified = st;
        cf->has_verified = 1;
        const struct timespec stamp[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
        (void)futimens(fd, stamp); /* the last use, for eviction */
        return fd;
    }
    return -1;
}

static void *download_main(void *arg);

/* Whether a find of cf in `epoch` is counted, as a hit or a miss: the
 * first of the epoch is (every find without epochs). */
static int first_find(struct cache_file *cf, uint64_t epoch)
{
    uint64_t was = atomic_load(&cf->counted_epoch);
    return !epoch ||
           (was != epoch && atomic_compare_exchange_strong(&cf->counted_epoch, &was, epoch));
}

/* Find cf again (it is released): in the cache, else downloaded, else
 * remotely.  Under cf->acquire. */
static int acquire(struct cache_file *cf, struct shard_err *err)
{
    struct sk_cache *c = cf->c;
    if (cf->thread_live) { /* the last download's thread, done */
        pthread_join(cf->thread, NULL);
        cf->thread_live = 0;
    }
    uint64_t epoch = atomic_load(&c->epoch);
    int again = cf->acquired && cf->acquired_epoch == epoch;
    atomic_store(&cf->let_go, 0);
    int fd = open_cached(cf);
    int lk = -1;
    if (fd < 0 && (lk = wait_key(c, cf->key)) >= 0)
        fd = open_cached(cf); /* downloaded by another process while we waited */
    else if (lk == SHARD_EINTR)
        return shard_err_set(err, SHARD_EINTR, "%s: " SK_CANCELLED_MESSAGE, cf->name);
    else if (lk == LOCK_DENIED) { /* read remotely below, and said so */
        int e = errno;
        char lock[NAME_SIZE];
        key_name(lock, sizeof lock, cf->key, ".lock");
        warn_lock(c, cf->name, lock, e);
    }
    if (fd >= 0) {
        if (lk >= 0)
            close(lk);
        int count = first_find(cf, epoch);
        sk_read_count(c->counters, SK_READ_CACHE_HITS, count);
        cf->acquired = 1;
        cf->acquired_epoch = epoch;
        pthread_rwlock_wrlock(&cf->rw);
        fetch_close(cf->http);
        cf->http = NULL;
        cf->fd = fd;
        cf->state = CF_LOCAL;
        pthread_rwlock_unlock(&cf->rw);
        hold(cf);
        return SHARD_OK;
    }
    struct fetch_file *http = cf->http;
    /* found before: its footer is read, so no suffix request */
    int rc = http           ? SHARD_OK
             : cf->acquired ? sk_fetch_http_open_sized(cf->remote, cf->name, cf->bytes, &http, err)
                            : fetch_open(cf->remote, cf->name, &http, err);
    if (rc) {
        if (lk >= 0)
            close(lk);
        return rc;
    }
    int count = first_find(cf, epoch);
    sk_read_count(c->counters, SK_READ_CACHE_MISSES, count);
    int cached = lk >= 0 && http->size == cf->bytes && !again && !reserve(cf);
    cf->acquired = 1;
    cf->acquired_epoch = epoch;
    pthread_rwlock_wrlock(&cf->rw);
    cf->http = http;
    if (cached) {
        cf->lock_fd = lk;
        atomic_store(&cf->have, 0);
        cf->state = CF_DOWNLOADING;
        /* the windows readers fetch meanwhile are the download's too: not
         * dropped between epochs before it has read them */
        sk_fetch_http_keep(http, 1);
        if (pthread_create(&cf->thread, NULL, download_main, cf)) {
            sk_fetch_http_keep(http, 0);
            close(cf->fd);
            cf->fd = -1;
            (void)unlinkat(c->dir_fd, cf->tmp, 0);
            cached = 0;
        } else {
            cf->thread_live = 1;
        }
    }
    if (!cached) {
        if (lk >= 0)
            close(lk);
        cf->lock_fd = -1;
        cf->state = CF_REMOTE;
        sk_read_count(c->counters, SK_READ_CACHE_SKIPPED, 1);
    }
    pthread_rwlock_unlock(&cf->rw);
    if (!cached)
        hold(cf);
    return SHARD_OK;
}

/* The whole shard into the temporary file, then renamed into place. */
static void *download_main(void *arg)
{
    struct cache_file *cf = arg;
    struct sk_cache *c = cf->c;
    struct shard_err err;
    uint8_t *buf = malloc(c->piece);
    XXH3_state_t *h = XXH3_createState();
    int rc = buf && h ? SHARD_OK : SHARD_ENOMEM, write_error = 0;
    if (h)
        XXH3_64bits_reset(h);
    uint64_t off = 0;
    while (!rc && off < cf->bytes) {
        size_t n = cf->bytes - off < c->piece ? (size_t)(cf->bytes - off) : c->piece;
        rc = fetch_read(cf->http, off, buf, n, &err);
        if (rc)
            break;
        for (size_t done = 0; done < n;) {
            ssize_t w = pwrite(cf->fd, buf + done, n - done, (off_t)(off + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                write_error = w < 0 ? errno : EIO;
                rc = SHARD_EIO;
                break;
            }
            done += (size_t)w;
        }
        if (rc)
            break;
        XXH3_64bits_update(h, buf, n);
        (void)futimens(cf->lock_fd, NULL); /* progress, for the processes waiting */
        off += n;
        atomic_store_explicit(&cf->have, off, memory_order_release);
        sk_read_count(c->counters, SK_READ_CACHE_FETCHED, n);
    }
    sk_fetch_http_keep(cf->http, 0);
    char name[NAME_SIZE];
    key_name(name, sizeof name, cf->key, ".shard");
    if (!rc && XXH3_64bits_digest(h) != cf->xxh3) {
        rc = SHARD_ECORRUPT;
        warn(c, "cache directory '%s': %s not cached: %s", cf->name,
             "the server's bytes do not hash to the manifest's xxh3");
    } else if (write_error) {
        warn(c, "cache directory '%s': %s read remotely, not cached: %s", cf->name,
             strerror(write_error));
    }
    if (!rc) {
        /* under the directory's lock: a scan that counts the space in use
         * (reserve) would otherwise see neither name */
        int dl = lock_dir(c);
        if (renameat(c->dir_fd, cf->tmp, c->dir_fd, name))
            rc = SHARD_EIO;
        if (dl >= 0)
            close(dl);
    }
    if (!rc) {
        struct stat st;
        const struct timespec stamp[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
        (void)futimens(cf->fd, stamp);
        if (!flock(cf->fd, LOCK_SH) && !fstat(cf->fd, &st)) {
            cf->verified = st;
            cf->has_verified = 1;
        }
    } else {
        (void)unlinkat(c->dir_fd, cf->tmp, 0);
    }
    pthread_rwlock_wrlock(&cf->rw);
    int let_go = !rc && atomic_load(&cf->let_go);
    if (let_go) {
        close(cf->fd); /* read this epoch already: free to evict */
        cf->fd = -1;
        cf->state = CF_RELEASED;
    } else if (!rc) {
        cf->state = CF_LOCAL; /* the http file is closed by whoever joins the thread */
    } else {
        close(cf->fd);
        cf->fd = -1;
        cf->state = CF_REMOTE;
        sk_read_count(c->counters, SK_READ_CACHE_SKIPPED, 1);
    }
    close(cf->lock_fd);
    cf->lock_fd = -1;
    pthread_rwlock_unlock(&cf->rw);
    XXH3_freeState(h);
    free(buf);
    if (!let_go)
        hold(cf);
    return NULL;
}

static void let_go(struct cache_file *cf);

static int cf_read(struct fetch_file *file, uint64_t offset, void *buf, size_t len,
                   struct shard_err *err)
{
    struct cache_file *cf = (struct cache_file *)file;
    for (;;) {
        pthread_rwlock_rdlock(&cf->rw);
        int rc = SHARD_OK, hit = 0;
        switch (cf->state) {
        case CF_LOCAL:
            rc = sk_fs_pread_all(cf->fd, cf->bytes, offset, buf, len, err);
            hit = 1;
            break;
        case CF_DOWNLOADING:
            if (offset + len <= atomic_load_explicit(&cf->have, memory_order_acquire))
                rc = sk_fs_pread_all(cf->fd, cf->bytes, offset, buf, len, err);
            else
                rc = fetch_read(cf->http, offset, buf, len, err);
            break;
        case CF_REMOTE: rc = fetch_read(cf->http, offset, buf, len, err); break;
        case CF_RELEASED:
            pthread_rwlock_unlock(&cf->rw);
            /* another thread's find may wait for a server that stalls */
            if (sk_cancel_lock(&cf->acquire))
                return shard_err_set(err, SHARD_EINTR, "%s: " SK_CANCELLED_MESSAGE, cf->name);
            pthread_rwlock_rdlock(&cf->rw);
            int released = cf->state == CF_RELEASED;
            pthread_rwlock_unlock(&cf->rw);
            rc = released ? acquire(cf, err) : SHARD_OK;
            pthread_mutex_unlock(&cf->acquire);
            if (rc)
                return rc;
            continue;
        }
        pthread_rwlock_unlock(&cf->rw);
        touch(cf);
        /* the first read of a new epoch that did not find it again counts
         * it, once per epoch (its download from an earlier epoch may
         * outlast every read of it in this one).  One still held is found
         * in this epoch (not downloaded again in it); one told to go goes,
         * unless busy: the next read finds it again, and may download it */
        uint64_t epoch = atomic_load(&cf->c->epoch), seen = atomic_load(&cf->acquired_epoch);
        if (rc || !epoch || seen == epoch)
            return rc;
        int go = atomic_load(&cf->let_go);
        if (!go)
            (void)atomic_compare_exchange_strong(&cf->acquired_epoch, &seen, epoch);
        if (first_find(cf, epoch))
            sk_read_count(cf->c->counters, hit ? SK_READ_CACHE_HITS : SK_READ_CACHE_MISSES, 1);
        if (go)
            let_go(cf);
        return rc;
    }
}

static void cf_advise(struct fetch_file *file, uint64_t offset, uint64_t len)
{
    struct cache_file *cf = (struct cache_file *)file;
    pthread_rwlock_rdlock(&cf->rw);
    if (cf->state == CF_LOCAL) {
        if (offset < cf->bytes && len)
            (void)posix_fadvise(cf->fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
    } else if (cf->state != CF_RELEASED && cf->http) {
        /* not a released one's: it may be found in the cache by then */
        fetch_advise(cf->http, offset, len);
    }
    pthread_rwlock_unlock(&cf->rw);
}

static void cf_close(struct fetch_file *file)
{
    struct cache_file *cf = (struct cache_file *)file;
    /* a download under way is finished (the next reader finds the shard) */
    if (cf->thread_live)
        pthread_join(cf->thread, NULL);
    unhold(cf);
    if (cf->fd >= 0)
        close(cf->fd);
    if (cf->lock_fd >= 0)
        close(cf->lock_fd);
    fetch_close(cf->http);
    pthread_rwlock_destroy(&cf->rw);
    pthread_mutex_destroy(&cf->acquire);
    free(cf->name);
    free(cf);
}

static const struct fetch_file_ops cache_file_ops = {cf_read, cf_close, cf_advise};

void sk_cache_epoch(struct sk_cache *c)
{
    atomic_fetch_add(&c->epoch, 1);
    for (size_t i = 0; i < c->id_count; i++)
        atomic_store(&c->ids[i].done, 0);
}

/* Let cf go, unless it is busy (a read, or its download finishing: then
 * the download lets it go when done, or the read does, if cf was found in
 * an earlier epoch). */
static void let_go(struct cache_file *cf)
{
    struct sk_cache *c = cf->c;
    atomic_store(&cf->let_go, 1);
    pthread_mutex_lock(&c->lock);
    if (!pthread_rwlock_trywrlock(&cf->rw)) {
        if (cf->state == CF_REMOTE)
            cf->state = CF_RELEASED; /* its remote file kept: found again without a request */
        else if (cf->state == CF_LOCAL)
            release(cf);
        if (cf->state == CF_RELEASED) {
            for (size_t i = 0; i < c->held_len; i++)
                if (c->held[i] == cf) {
                    c->held[i] = c->held[--c->held_len];
                    break;
                }
        }
        pthread_rwlock_unlock(&cf->rw);
    }
    pthread_mutex_unlock(&c->lock);
}

void sk_cache_done(struct sk_cache *c, uint64_t xxh3, uint64_t bytes, struct fetch_file *file)
{
    struct cache_id *id = find_id(c, xxh3, bytes);
    if (id)
        atomic_store(&id->done, 1);
    if (file)
        let_go((struct cache_file *)file);
}

int sk_cache_open(struct sk_cache *c, struct fetch *remote, const char *name, uint64_t bytes,
                  uint64_t xxh3, struct fetch_file **out, struct shard_err *err)
{
    *out = NULL;
    struct cache_file *cf = calloc(1, sizeof *cf);
    if (!cf || !(cf->name = strdup(name))) {
        free(cf);
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    }
    cf->base.ops = &cache_file_ops;
    cf->c = c;
    cf->remote = remote;
    cf->bytes = bytes;
    cf->xxh3 = xxh3;
    cf->fd = cf->lock_fd = -1;
    snprintf(cf->key, sizeof cf->key, "%016" PRIx64 "-%" PRIu64, xxh3, bytes);
    pthread_rwlock_init(&cf->rw, NULL);
    pthread_mutex_init(&cf->acquire, NULL);
    int rc = acquire(cf, err);
    if (rc) {
        cf_close(&cf->base);
        return rc;
    }
    /* the size reads see: the verified file's, or the server's.  Not by
     * cf->state: a download acquire started may already be writing it (this
     * thread alone sets cf->http, and a download needs the server's size to
     * be the manifest's) */
    cf->base.size = cf->http ? cf->http->size : bytes;
    *out = &cf->base;
    return SHARD_OK;
}
