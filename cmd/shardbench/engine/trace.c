/* trace.c - Chrome trace-event JSON (see bench.h).
 *
 * Events are appended under one mutex into fixed-size chunks (a few hundred
 * nanoseconds per event against the milliseconds a sample takes), so the
 * array never moves while other threads append.  The JSON is built with
 * jansson only when the trace is written. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"

#define CHUNK_EVENTS 4096u
#define NS_PER_US 1000u
#define MAX_PROCESSES 64

struct trace_event {
    const char *name;
    uint64_t start_ns; /* absolute CLOCK_MONOTONIC */
    uint64_t dur_ns;   /* spans */
    double value;      /* counters */
    uint32_t tid;
    uint16_t pid;
    char phase; /* 'X' span, 'C' counter */
};

struct trace_thread {
    uint32_t pid;
    uint32_t tid;
    const char *name; /* NULL: unnamed */
};

struct trace {
    pthread_mutex_t lock;
    uint64_t origin_ns;
    uint64_t max_events;
    uint64_t count;
    uint64_t dropped;
    struct trace_event **chunks;
    size_t chunk_count;
    size_t chunk_cap;
    const char *processes[MAX_PROCESSES]; /* processes[pid - 1] */
    int process_count;
    struct trace_thread *threads;
    size_t thread_count;
    size_t thread_cap;
};

static _Thread_local uint32_t cached_tid;

static uint32_t current_tid(void)
{
    if (!cached_tid)
        cached_tid = (uint32_t)gettid();
    return cached_tid;
}

uint64_t trace_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int trace_new(struct trace **out, uint64_t max_events, struct shard_err *err)
{
    *out = NULL;
    struct trace *t = calloc(1, sizeof *t);
    if (!t)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    pthread_mutex_init(&t->lock, NULL);
    t->origin_ns = trace_now();
    t->max_events = max_events ? max_events : TRACE_DEFAULT_MAX_EVENTS;
    t->processes[0] = "shardbench";
    t->process_count = 1;
    *out = t;
    return SHARD_OK;
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->chunk_count; i++)
        free(t->chunks[i]);
    free(t->chunks);
    free(t->threads);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

int trace_process(struct trace *t, const char *name)
{
    pthread_mutex_lock(&t->lock);
    /* the first lane is used until someone names a process */
    if (t->count == 0 && t->thread_count == 0 && t->process_count == 1)
        t->processes[0] = name;
    else if (t->process_count < MAX_PROCESSES)
        t->processes[t->process_count++] = name;
    int pid = t->process_count;
    pthread_mutex_unlock(&t->lock);
    return pid;
}

/* Append one event (the caller holds the lock). */
static struct trace_event *append(struct trace *t)
{
    if (t->count >= t->max_events) {
        t->dropped++;
        return NULL;
    }
    size_t chunk = (size_t)(t->count / CHUNK_EVENTS);
    if (chunk == t->chunk_count) {
        if (t->chunk_count == t->chunk_cap) {
            size_t cap = t->chunk_cap ? 2 * t->chunk_cap : 16;
            struct trace_event **c = realloc(t->chunks, cap * sizeof *c);
            if (!c) {
                t->dropped++;
                return NULL;
            }
            t->chunks = c;
            t->chunk_cap = cap;
        }
        if (!(t->chunks[t->chunk_count] = malloc(CHUNK_EVENTS * sizeof(struct trace_event)))) {
            t->dropped++;
            return NULL;
        }
        t->chunk_count++;
    }
    return &t->chunks[chunk][t->count++ % CHUNK_EVENTS];
}

static struct trace_event *event_at(const struct trace *t, uint64_t i)
{
    return &t->chunks[i / CHUNK_EVENTS][i % CHUNK_EVENTS];
}

/* The thread entry of (pid, tid), added when missing (lock held). */
static struct trace_thread *thread_entry(struct trace *t, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < t->thread_count; i++)
        if (t->threads[i].pid == pid && t->threads[i].tid == tid)
            return &t->threads[i];
    if (t->thread_count == t->thread_cap) {
        size_t cap = t->thread_cap ? 2 * t->thread_cap : 16;
        struct trace_thread *p = realloc(t->threads, cap * sizeof *p);
        if (!p)
            return NULL;
        t->threads = p;
        t->thread_cap = cap;
    }
    struct trace_thread *th = &t->threads[t->thread_count++];
    th->pid = pid;
    th->tid = tid;
    th->name = NULL;
    return th;
}

void trace_thread_name(struct trace *t, const char *name)
{
    if (!t)
        return;
    uint32_t tid = current_tid();
    pthread_mutex_lock(&t->lock);
    struct trace_thread *th = thread_entry(t, (uint32_t)t->process_count, tid);
    if (th)
        th->name = name;
    pthread_mutex_unlock(&t->lock);
}

static void record(struct trace *t, char phase, const char *name, uint64_t start_ns,
                   uint64_t dur_ns, double value)
{
    uint32_t tid = current_tid();
    pthread_mutex_lock(&t->lock);
    struct trace_event *e = append(t);
    if (e) {
        e->name = name;
        e->start_ns = start_ns;
        e->dur_ns = dur_ns;
        e->value = value;
        e->tid = tid;
        e->pid = (uint16_t)t->process_count;
        e->phase = phase;
        if (phase == 'X')
            thread_entry(t, e->pid, tid); /* every lane gets a name when written */
    }
    pthread_mutex_unlock(&t->lock);
}

void trace_span(struct trace *t, const char *name, uint64_t start_ns, uint64_t end_ns)
{
    if (t)
        record(t, 'X', name, start_ns, end_ns > start_ns ? end_ns - start_ns : 0, 0);
}

void trace_counter(struct trace *t, const char *name, double value, uint64_t ts_ns)
{
    if (t)
        record(t, 'C', name, ts_ns, 0, value);
}

uint64_t trace_events(const struct trace *t)
{
    return t->count;
}

uint64_t trace_dropped(const struct trace *t)
{
    return t->dropped;
}

/* Microseconds since the trace began.  Whole microseconds, floored: a
 * monotonic map, so spans that nest in nanoseconds still nest once both
 * ends are converted (ts and ts + dur are each floored, never rounded
 * separately). */
static json_int_t micros(const struct trace *t, uint64_t ns)
{
    return ns > t->origin_ns ? (json_int_t)((ns - t->origin_ns) / NS_PER_US) : 0;
}

static json_t *metadata(const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "name", what, "ph", "M", "pid",
                     (json_int_t)pid, "tid", (json_int_t)tid, "args", "name", name);
}

static json_t *event_json(const struct trace *t, const struct trace_event *e)
{
    json_int_t ts = micros(t, e->start_ns);
    if (e->phase == 'C')
        return json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:f}}", "name", e->name, "ph", "C", "ts", ts,
                         "pid", (json_int_t)e->pid, "tid", (json_int_t)e->tid, "args", "samples",
                         e->value);
    json_int_t end = micros(t, e->start_ns + e->dur_ns);
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "name", e->name, "ph", "X", "ts", ts, "dur",
                     end - ts, "pid", (json_int_t)e->pid, "tid", (json_int_t)e->tid);
}

static json_t *trace_json(struct trace *t)
{
    json_t *events = json_array();
    int bad = !events;
    for (int p = 0; p < t->process_count && !bad; p++)
        bad |= json_array_append_new(events,
                                     metadata("process_name", (uint32_t)p + 1, 0, t->processes[p]));
    for (size_t i = 0; i < t->thread_count && !bad; i++) {
        const struct trace_thread *th = &t->threads[i];
        bad |= json_array_append_new(events, metadata("thread_name", th->pid, th->tid,
                                                      th->name ? th->name : "loader thread"));
    }
    for (uint64_t i = 0; i < t->count && !bad; i++)
        bad |= json_array_append_new(events, event_json(t, event_at(t, i)));
    json_t *root = bad ? NULL
                       : json_pack("{s:o, s:s, s:{s:s, s:s, s:I}}", "traceEvents", events,
                                   "displayTimeUnit", "ms", "otherData", "generator",
                                   "shardbench " SHARDKIT_VERSION, "clock",
                                   "CLOCK_MONOTONIC, microseconds from the trace's start",
                                   "dropped_events", (json_int_t)t->dropped);
    if (!root && !bad)
        return NULL; /* json_pack with "o" stole events even on failure */
    if (bad)
        json_decref(events);
    return root;
}

int trace_write(const struct trace *t, const char *path, struct shard_err *err)
{
    struct trace *mt = (struct trace *)t; /* only the lock is touched */
    pthread_mutex_lock(&mt->lock);
    json_t *root = trace_json(mt);
    pthread_mutex_unlock(&mt->lock);
    if (!root)
        return shard_err_set(err, SHARD_ENOMEM, "cannot build the trace of %llu events",
                             (unsigned long long)t->count);
    errno = 0;
    int rc = json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    if (rc != 0)
        return shard_err_errno(err, SHARD_EIO, errno ? errno : EIO, "cannot write trace '%s'",
                               path);
    return SHARD_OK;
}
