/*
 * bench.h - measuring read throughput: the naive small-file loader against
 * the shard reader, on local disk or over HTTP, cold or warm, and where the
 * consumer waits.  shardbench's engine: a part of the program, not of the
 * library, built on the library's public API alone (shardkit.h), as any
 * other program that reads datasets would be.
 *
 * Two loaders, one harness:
 *
 *   files   what a DataLoader over a plain ImageFolder does every epoch: per
 *           sample open, read and close the source file (or one HTTP GET),
 *           decode it fully (no DCT scaling: a plain loader does not), and
 *           resize it to the geometry shardify would make (--size/--fit),
 *           RGB out.  N threads pull from the epoch's shuffled list.
 *   shards  the shard reader: the prefetching iterator (shard_iter, N
 *           threads) over the epoch plan, decoded pixels out
 *           (SHARD_READ_PIXELS).  Over HTTP it reads shards in large ranges
 *           through a few connections, never one request per record, and
 *           every epoch fetches its bytes again: the reader's window cache
 *           is emptied between epochs (it is there to hold a shuffle buffer,
 *           not the dataset), as it would be for a dataset larger than
 *           memory.
 *
 * Both hand samples, in list order, through a bounded queue (by default two
 * batches deep, at least 4 samples per thread: the loader keeps working
 * through the consumer's step, as a DataLoader prefetches) to the caller's
 * thread, which plays the training loop: it takes batches of
 * `batch` samples and, with step_ms > 0, then spends step_ms per batch (it
 * sleeps: a GPU step leaves the host CPU idle).  Everything is timed:
 *
 *   startup       opening the dataset or listing the files, before epoch 1
 *   per stage     read, decompress, decode, resize (summed over loader
 *                 threads: the cost of one sample), queue wait and consumer
 *                 step (the consumer's thread)
 *   per epoch     wall time, samples, bytes read, process CPU time; the
 *                 first epoch is reported apart from the steady ones
 *   per batch     latency: from the consumer asking for a batch until it
 *                 holds all of it (without step_ms: the interval between
 *                 batches)
 *   wait share    the consumer's time blocked on the queue / wall time: the
 *                 "input-bound" share of a training step
 *
 * Useful samples per second is the figure of merit, not bytes moved.
 *
 * Nothing here prints; every run fills a result struct the caller owns.
 */
#ifndef SHARDBENCH_BENCH_H
#define SHARDBENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit.h"

/* ---- Chrome trace ---------------------------------------------------------
 *
 * A trace collects spans ("X" complete events: name, start, duration,
 * process, thread) and counters ("C" events) in memory, from any number of
 * threads, and writes them as Chrome trace-event JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open:
 *   {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":{...}}
 * Times are microseconds from the trace's creation.  Spans recorded by one
 * thread nest properly (a span that starts inside another ends inside it) as
 * long as the caller records them in that discipline; shardbench's do.
 * Names are not copied: pass string literals (or strings that outlive the
 * trace). */

struct trace;

/* Default cap on stored events; further events are counted, not stored. */
#define TRACE_DEFAULT_MAX_EVENTS 250000u

/* New empty trace holding at most max_events (0: the default).  On success
 * *out is the trace (free with trace_free).  0 or SHARD_ENOMEM. */
int trace_new(struct trace **out, uint64_t max_events, struct shard_err *err);

/* Free.  Accepts NULL. */
void trace_free(struct trace *t);

/* The clock spans are measured on: CLOCK_MONOTONIC in nanoseconds. */
uint64_t trace_now(void);

/* Start a new "process" lane named `name` (e.g. "files loader"); events
 * recorded afterwards belong to it.  Returns its pid (1, 2, ...). */
int trace_process(struct trace *t, const char *name);

/* Name the calling thread's lane in the current process ("consumer"). */
void trace_thread_name(struct trace *t, const char *name);

/* Record a span [start_ns, end_ns) on the calling thread.  Thread-safe. */
void trace_span(struct trace *t, const char *name, uint64_t start_ns, uint64_t end_ns);

/* Record the value of counter `name` at time ts_ns.  Thread-safe. */
void trace_counter(struct trace *t, const char *name, double value, uint64_t ts_ns);

/* Events stored, and events dropped past the cap. */
uint64_t trace_events(const struct trace *t);
uint64_t trace_dropped(const struct trace *t);

/* Write the trace to `path` (replacing it).  0, SHARD_EIO or SHARD_ENOMEM. */
int trace_write(const struct trace *t, const char *path, struct shard_err *err);

/* ---- the benchmark -------------------------------------------------------- */

enum bench_mode {
    BENCH_FILES = 0,  /* the naive small-file loader */
    BENCH_SHARDS = 1, /* the shard reader */
};

/* "files" / "shards". */
const char *bench_mode_name(enum bench_mode m);

enum bench_stage {
    STAGE_READ = 0,   /* bytes from storage: open/read/close, a ranged read, HTTP */
    STAGE_DECOMPRESS, /* zstd and checksums (shards) */
    STAGE_DECODE,     /* image decode: the source file (files), the payload (shards) */
    STAGE_RESIZE,     /* to the training geometry (files) */
    STAGE_QUEUE_WAIT, /* the consumer blocked waiting for the next sample */
    STAGE_STEP,       /* the consumer's emulated step */
    STAGE_COUNT
};

/* "read", "decompress", "decode", "resize", "queue wait", "consumer step":
 * also the span names in a trace. */
const char *bench_stage_name(enum bench_stage s);

struct bench_options {
    int threads;          /* loader threads; 0: shard_available_cpus() */
    uint32_t epochs;      /* epochs to run (default 2); the first is reported apart */
    uint64_t limit;       /* samples per epoch; 0: all */
    double seconds;       /* stop the run once it has lasted this long; 0: no bound */
    int cold;             /* before each epoch drop the page cache of every file the
                           * epoch reads (posix_fadvise DONTNEED), and check it */
    double step_ms;       /* consumer time per batch; 0: none (consume at once) */
    uint32_t batch;       /* samples per batch (default 64) */
    uint32_t queue_depth; /* samples read ahead; 0: two batches, at least 4 per thread */
    /* files mode: the geometry of every sample, as shardify's --size/--fit */
    uint32_t size; /* default 512 */
    enum shard_fit fit;
    int upscale; /* default 1 */
    /* The sample keys of files mode (relative paths under the location).
     * NULL: scan a local location as shardify does; a URL cannot be listed,
     * so a remote location needs keys (bench_keys_from_file or
     * bench_keys_from_dataset). */
    const struct shard_keylist *keys;
    /* shards mode: read only the samples with these keys (found with
     * shard_dataset_find_key; a key that is not there is an error), each
     * epoch in the epoch plan's order of one shard holding them in stored
     * order.  NULL: every sample. */
    const struct shard_keylist *shard_keys;
    /* epoch order: files are shuffled with the seed, all of them at once (as a
     * DataLoader with shuffle=True: the epoch plan of one shard holding every
     * file, its shuffle buffer the whole list); shards follow the epoch plan
     * (shardkit/dataset.h) with this seed and shuffle buffer.  shuffle 0:
     * list / stored order. */
    int shuffle; /* default 1 */
    uint64_t seed;
    uint64_t shuffle_buffer; /* shards; 0: SHARD_PLAN_DEFAULT_BUFFER */
    /* reading a remote location (http://, https://, s3://): connections,
     * window, window cache, retries, time-out and the simulated round trip (rtt_ms:
     * no real latency can be added on a loopback benchmark), as a dataset is
     * read (shardkit/dataset.h; default shard_dataset_options_init's); the
     * files mode's GETs are retried, timed out and delayed by the same.  Its
     * observer is the run's own (the trace's) and is not used. */
    struct shard_dataset_options reading;
    struct trace *trace; /* spans and counters go here; NULL: none */
    int digests;         /* record every first-epoch sample's key and pixel hash */
};

/* The defaults above. */
void bench_options_init(struct bench_options *o);

/* Totals over one or more epochs, and the rates derived from them. */
struct bench_phase {
    uint32_t epochs;
    uint64_t samples; /* samples delivered to the consumer */
    uint64_t errors;  /* samples that failed (files mode) */
    uint64_t batches;
    uint64_t bytes_read;               /* from storage (over HTTP: transferred) */
    double seconds;                    /* wall time of the epochs */
    double cpu_seconds;                /* process CPU time, user + system */
    double stage_seconds[STAGE_COUNT]; /* summed over threads */
    uint64_t requests;                 /* HTTP requests (0 for local reads) */
    uint64_t retries;                  /* HTTP retries after transient failures */
    double rtt_seconds;                /* simulated delay slept, summed over threads */
    /* the node-local cache (shard_read_stats' cache_* counters) */
    uint64_t cache_hits;
    uint64_t cache_misses;
    uint64_t cache_bytes_fetched;
    uint64_t cache_evictions;
    uint64_t cache_skipped;
    /* derived */
    double samples_per_second;
    double mb_per_second; /* bytes_read / seconds / 1e6 */
    double cpu_seconds_per_sample;
    double batch_p50; /* batch latency percentiles, seconds */
    double batch_p99;
    double wait_fraction; /* queue wait / wall time */
};

/* One sample of the first epoch (with options.digests). */
struct bench_digest {
    char *key; /* key_len bytes + NUL */
    size_t key_len;
    uint32_t width;
    uint32_t height;
    uint64_t xxh3; /* XXH3-64 of the RGB pixels, rows packed (width*3 bytes each) */
};

/* One batch the consumer took (every batch of the run, in order). */
struct bench_batch {
    uint32_t epoch;         /* 0: the first */
    uint32_t samples;       /* samples in it (the last of an epoch may be short) */
    double start_seconds;   /* when the consumer asked for it, from the start of epoch 1 */
    double latency_seconds; /* until it held all of it: the time it waited for input
                             * (without step_ms: the interval between batches) */
};

struct bench_result {
    enum bench_mode mode;
    int remote; /* read over HTTP */
    int threads;
    uint32_t queue_depth; /* samples read ahead */
    uint32_t batch;
    double step_ms;
    double rtt_ms;              /* simulated, never measured */
    uint64_t samples_per_epoch; /* the list each epoch walks (after limit) */
    uint32_t size;              /* files mode geometry; shards: the manifest's config */
    enum shard_fit fit;
    double startup_seconds;     /* open the dataset / list the files */
    double first_batch_seconds; /* epoch 1 start to the first full batch */
    struct bench_phase first;   /* epoch 1 */
    struct bench_phase steady;  /* epochs 2.. (epochs 0 when none ran) */
    /* --cold */
    int cold;                              /* requested */
    int cold_dropped;                      /* the page cache could be dropped for every file */
    double cold_resident;                  /* fraction of file pages still cached after dropping,
                                            * the worst epoch (mincore); -1 when not measurable */
    char cold_note[SHARD_ERRMSG_SIZE];     /* why it could not be done, or a caveat */
    char first_error[SHARD_ERRMSG_SIZE];   /* the first failed sample's message, or "" */
    int cached;                            /* read through a node-local cache (cache_dir) */
    char cache_warning[SHARD_ERRMSG_SIZE]; /* shard_dataset_cache_warning, or "" */
    struct bench_digest *digests;
    uint64_t digest_count;
    struct bench_batch *batches; /* the batch latencies behind batch_p50/p99,
                                  * and over time the consumer's wait */
    uint64_t batch_count;
};

/* Run the benchmark of `mode` on `location` (a directory, an http(s):// URL
 * or an s3://BUCKET/PREFIX of a dataset (shards) or of a folder of files
 * (files)).
 * Files mode counts a sample that cannot be read or decoded as an error and
 * goes on (result->first_error says why), but fails when an epoch yields no
 * sample at all; shards mode stops at the first damaged or unreadable
 * record (a dataset is supposed to be intact: shardcheck proves it).
 * Returns 0 with *r filled, or an error: SHARD_EINVAL (bad options, a URL
 * without keys), SHARD_ENOTFOUND (no such dataset, folder, URL: the message
 * names it), SHARD_ENET, SHARD_EIO, SHARD_ECORRUPT, SHARD_ENOMEM.  Release
 * *r with bench_result_release in both cases. */
int bench_run(enum bench_mode mode, const char *location, const struct bench_options *o,
              struct bench_result *r, struct shard_err *err);

void bench_result_release(struct bench_result *r); /* accepts NULL */

/* Append the keys listed in a text file, one per line ('\n'; a '\r' before
 * it is dropped; empty lines are skipped) to *keys.  0, SHARD_ENOTFOUND,
 * SHARD_EIO, SHARD_EINVAL (a key longer than SHARD_KEY_MAX) or SHARD_ENOMEM. */
int bench_keys_from_file(const char *path, struct shard_keylist *keys, struct shard_err *err);

/* Append the keys of every sample of the dataset at `location` (directory
 * or URL), in stored order, read from the shard footers. */
int bench_keys_from_dataset(const char *location, const struct shard_dataset_options *reading,
                            struct shard_keylist *keys, struct shard_err *err);

/* ---- roofline --------------------------------------------------------------
 *
 * The roofline model: a kernel of arithmetic intensity I (FLOP per byte
 * moved) on a machine with memory bandwidth B (bytes/s) and peak compute P
 * (FLOP/s) attains min(P, B x I).  The ridge point P / B is the intensity
 * at which the two limits meet: below it a kernel is memory-bound, at or
 * above it compute-bound.  E.g. B = 100 GB/s, P = 1000 GFLOP/s: ridge
 * 10 FLOP/B; I = 2 attains 200 GFLOP/s (memory-bound); I = 20 is capped at
 * 1000 GFLOP/s (compute-bound). */

struct roofline {
    double attainable; /* FLOP/s */
    double ridge;      /* FLOP/B */
    int memory_bound;  /* 1 when intensity < ridge */
};

/* 0, or SHARD_EINVAL when a value is not positive and finite. */
int roofline_model(double bandwidth, double intensity, double peak, struct roofline *out,
                   struct shard_err *err);

enum quantity {
    QUANTITY_BANDWIDTH, /* bytes/s: "100GB/s", "1.5 TB/s", "900GiB/s", "5e10B/s" */
    QUANTITY_INTENSITY, /* FLOP/B: "2", "20FLOP/B", "0.5 FLOP/byte" */
    QUANTITY_COMPUTE,   /* FLOP/s: "1000GFLOP/s", "19.5 TFLOP/s", "312TFLOPS" */
};

/* Parse a number with an optional SI prefix (k M G T P E, powers of 1000;
 * Ki Mi Gi Ti Pi Ei, powers of 1024, for bytes only) and the unit of the
 * quantity (which may be left out).  *value is in base units (B/s, FLOP/B,
 * FLOP/s); *prefix (when not NULL) receives the prefix's multiplier, so that
 * output can use the unit the user wrote.  0 or SHARD_EINVAL. */
int quantity_parse(const char *s, enum quantity q, double *value, double *prefix,
                   struct shard_err *err);

#endif
