/* shuffle.h - the deterministic sample order (private). */
#ifndef SHARDKIT_PLAN_H
#define SHARDKIT_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Shuffle v[0..n) in place with a Fisher-Yates shuffle driven by SplitMix64
 * seeded with `seed`.  The result depends only on (v, n, seed): it is part of
 * the output format's determinism, so the generator must never change. */
void sk_shuffle(uint64_t *v, size_t n, uint64_t seed);

#endif
