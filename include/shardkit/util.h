/*
 * shardkit/util.h - what every part of the library uses: growable byte
 * buffers, 64-bit hashes in hex, the number of usable CPUs.
 *
 * Tiers (shardkit/api.h): struct shard_buf and shard_buf_release are
 * stable (stable functions fill a shard_buf); the rest is experimental
 * (SHARDKIT_EXPERIMENTAL); the sizes at the end are older names.
 *
 * Ownership: a struct shard_buf owns its memory.  It may be reused across
 * calls (its capacity is kept, which avoids page faults in tight loops) and
 * is released with shard_buf_release(), which accepts NULL and zeroed structs.
 *
 * shardkit/image.h, format.h and source.h include this header, so code that
 * includes one of those (or shardkit.h) has it already.
 */
#ifndef SHARDKIT_UTIL_H
#define SHARDKIT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- growable byte buffer ---------------------------------------------- */

struct shard_buf {
    uint8_t *data; /* owned; NULL when cap == 0 */
    size_t len;    /* bytes in use */
    size_t cap;    /* bytes allocated */
};

/* Free the memory and zero the struct.  Accepts NULL. */
SHARD_API void shard_buf_release(struct shard_buf *b);

#ifdef SHARDKIT_EXPERIMENTAL
/* Make room for at least `cap` bytes (len is kept).  0 or SHARD_ENOMEM. */
SHARD_API int shard_buf_reserve(struct shard_buf *b, size_t cap, struct shard_err *err);
/* Append `n` bytes.  0 or SHARD_ENOMEM. */
SHARD_API int shard_buf_append(struct shard_buf *b, const void *p, size_t n, struct shard_err *err);

/* ---- 64-bit hashes in hex ----------------------------------------------- */

/* 16 lower-case hex digits of a 64-bit hash, NUL-terminated (17 bytes). */
SHARD_API void shard_hex64(uint64_t v, char out[17]);
/* Parse 16 hex digits.  0 or SHARD_EINVAL. */
SHARD_API int shard_hex64_parse(const char *s, uint64_t *out);

/* ---- CPUs --------------------------------------------------------------- */

/* The number of CPUs this process may really use: the smallest of the CPU
 * affinity mask, the cgroup (v2 cpu.max, or v1 cfs quota/period) quota
 * rounded up, and OMP_NUM_THREADS when set to a positive number.  At least 1. */
SHARD_API int shard_available_cpus(void);
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- older names (deprecated) --------------------------------------------
 *
 * Sizes in bytes as the tools read and print them, which 0.1.0 exported;
 * the tools' own now (lib/shardx, not exported).  Kept, exported, until
 * CHANGELOG.md's removal version. */

/* Every size shardkit reads or prints is in bytes and powers of 1024.
 * Parse "4096", "16K", "256M", "1G", "2T" (a K, M, G or T suffix, any case,
 * optionally followed by "B" or "iB": "16MB" and "16MiB" are both 16 x
 * 1024 x 1024).  0 or SHARD_EINVAL (not a size, or one that overflows). */
SHARD_API int shard_size_parse(const char *s, uint64_t *out)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");
/* Print `bytes` in the same units: "512 B", "1.5 KiB", "256.0 MiB" ...
 * into out (out_size bytes; 16 are enough).  Returns out. */
SHARD_API const char *shard_size_format(uint64_t bytes, char *out, size_t out_size)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");
/* The unit a chart of sizes up to `max` is drawn in: its value (1, 1024,
 * 1024^2 ...), its name in *name ("B", "KiB", "MiB" ...). */
SHARD_API double shard_size_unit(uint64_t max, const char **name)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");

#ifdef __cplusplus
}
#endif
#endif
