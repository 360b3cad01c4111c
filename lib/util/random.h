/* random.h - the specified random streams: the deterministic sample order,
 * the epoch plan's seeds and the loader's per-sample transforms (private). */
#ifndef SHARDKIT_RANDOM_H
#define SHARDKIT_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Shuffle v[0..n) in place with a Fisher-Yates shuffle driven by SplitMix64
 * seeded with `seed`.  The result depends only on (v, n, seed): it is part of
 * the output format's determinism, so the generator must never change. */
void sk_shuffle(uint64_t *v, size_t n, uint64_t seed);

/* The next SplitMix64 output (Steele, Lea, Flood 2014) of *state. */
uint64_t sk_splitmix64(uint64_t *state);

/* A value in [0, bound) from the SplitMix64 stream *state without modulo
 * bias: Lemire's multiply-and-reject (bound > 0). */
uint64_t sk_random_below(uint64_t *state, uint64_t bound);

/* derive(seed, tag, a, b, k): XXH3-64 (xxHash 0.8) with seed `seed` of the 32
 * bytes le64(tag) le64(a) le64(b) le64(k).  The seed of every random choice a
 * reader makes (shardkit/dataset.h and shardkit/loader.h say which). */
uint64_t sk_derive(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b, uint64_t k);

/* The tags of sk_derive(): which random choice a seed drives. */
#define SK_TAG_SHARD_ORDER 1 /* an epoch's shard order (a = epoch) */
#define SK_TAG_WINDOW 2      /* a rank's shuffle window (a = epoch, b = rank, k = window) */
#define SK_TAG_TRANSFORMS 3  /* a sample's transforms (a = epoch, k = sample index) */
#define SK_TAG_RESUMED 4     /* the windows of a resumed epoch's segment (a = epoch, b = segment) */
#define SK_TAG_MIXTURE 5     /* a mixture epoch's draws of sources (a = epoch) */
#define SK_TAG_MIXTURE_PASS 6 /* a source's pass in a mixture (a = epoch, b = source, k = pass) */

#endif
