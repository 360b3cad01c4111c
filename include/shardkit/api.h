/*
 * shardkit/api.h - the library's version, the mark on its public functions,
 * and the tiers of the API.
 *
 * The library is built with -fvisibility=hidden: a function is exported from
 * libshardkit.so only when its declaration in include/ carries SHARD_API.
 * Everything else is internal (and named sk_* inside lib/).
 *
 * Two tiers (zstd's ZSTD_STATIC_LINKING_ONLY is the model):
 *
 *   stable        declared always.  Kept across minor versions: a name that
 *                 is replaced or withdrawn is first deprecated (SHARD_DEPRECATED,
 *                 below: the program still compiles, links and runs, and the
 *                 compiler names what to use) and removed only as
 *                 CHANGELOG.md's deprecation policy says, with its removal
 *                 version listed there.  Reading datasets (dataset.h), the
 *                 loader and its transforms (loader.h, and the geometry of
 *                 image.h), the conversion (shardify.h, merge.h), verifying
 *                 (verify.h), manifests (manifest.h), and the basics here and
 *                 in error.h.
 *
 *   experimental  declared only when the program defines SHARDKIT_EXPERIMENTAL
 *                 before it includes a shardkit header:
 *                     #define SHARDKIT_EXPERIMENTAL
 *                     #include <shardkit.h>
 *                 Exported as the stable tier is, but it may change or go in
 *                 any release, minor or patch, with no deprecation: the shard
 *                 file itself (format.h), decoding and encoding (image.h),
 *                 scanning sources (source.h), mixtures of datasets
 *                 (mixture.h), the read path's observer and remote files
 *                 (dataset.h), index lines (manifest.h), and the helpers of
 *                 error.h and util.h.  Each header says which of its parts
 *                 are which; the experimental ones sit between
 *                 "#ifdef SHARDKIT_EXPERIMENTAL" and its "#endif".  The types
 *                 of both tiers are declared always.
 *
 * The "older names" sections at the end of some headers are deprecated names
 * of either tier, declared always until their removal version.
 * tests/cli/test_symbols.sh lists both tiers and holds the exports to them.
 */
#ifndef SHARDKIT_API_H
#define SHARDKIT_API_H

/* The one place the version is written; the Makefile and shardkit.pc read it
 * from here.  The shared library's soname carries the major number. */
#define SHARDKIT_VERSION_MAJOR 0
#define SHARDKIT_VERSION_MINOR 2
#define SHARDKIT_VERSION_PATCH 0
#define SHARDKIT_VERSION "0.2.0"

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
