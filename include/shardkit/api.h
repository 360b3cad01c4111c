/*
 * shardkit/api.h - the library's version and the mark on its public functions.
 *
 * The library is built with -fvisibility=hidden: a function is exported from
 * libshardkit.so only when its declaration in include/ carries SHARD_API.
 * Everything else is internal (and named sk_* inside lib/).
 */
#ifndef SHARDKIT_API_H
#define SHARDKIT_API_H

/* The one place the version is written; the Makefile and shardkit.pc read it
 * from here.  The shared library's soname carries the major number. */
#define SHARDKIT_VERSION_MAJOR 0
#define SHARDKIT_VERSION_MINOR 1
#define SHARDKIT_VERSION_PATCH 0
#define SHARDKIT_VERSION "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define SHARD_API __attribute__((visibility("default")))
#else
#define SHARD_API
#endif

/* The mark on an older name kept for programs written against an earlier
 * release (the "older names" at the end of dataset.h, image.h and loader.h): such a
 * program still compiles, links and runs, and the compiler says which name to
 * use instead. */
#if defined(__GNUC__) || defined(__clang__)
#define SHARD_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define SHARD_DEPRECATED(msg)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* SHARDKIT_VERSION of the library actually linked (which may differ from the
 * header a program was compiled with when it uses the shared library). */
SHARD_API const char *shard_version(void);

#ifdef __cplusplus
}
#endif
#endif
