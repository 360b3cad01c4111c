/* spec.h - the random streams of shardkit/dataset.h re-implemented from
 * its text (SplitMix64, Lemire's bounded draw, the Fisher-Yates shuffle,
 * derive), for tests that hold the library to the specification as
 * another implementation (a Python loader) would read it, and the plan
 * options the tests of plans set.  Header-only. */
#ifndef SHARDKIT_TEST_SPEC_H
#define SHARDKIT_TEST_SPEC_H

#include <stdint.h>

#include <xxhash.h>

#include "shardkit.h"

static inline uint64_t spec_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t spec_bounded(uint64_t *s, uint64_t bound)
{
    for (;;) {
        unsigned __int128 m = (unsigned __int128)spec_splitmix(s) * bound;
        if ((uint64_t)m >= (-bound % bound))
            return (uint64_t)(m >> 64);
    }
}

static inline void spec_shuffle(uint64_t *v, uint64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = spec_bounded(&s, i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static inline uint64_t spec_derive(uint64_t seed, uint64_t tag, uint64_t epoch, uint64_t rank,
                                   uint64_t k)
{
    uint8_t b[32];
    uint64_t f[4] = {tag, epoch, rank, k};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            b[8 * i + j] = (uint8_t)(f[i] >> (8 * j));
    return XXH3_64bits_withSeed(b, sizeof b, seed);
}

/* A plan's options: the defaults but for these. */
static inline struct shard_plan_options spec_plan_options(uint64_t seed, uint64_t epoch,
                                                          uint32_t rank, uint32_t world,
                                                          uint64_t buffer, enum shard_remainder rem)
{
    struct shard_plan_options o;
    shard_plan_options_init(&o);
    o.seed = seed;
    o.epoch = epoch;
    o.rank = rank;
    o.world_size = world;
    o.shuffle_buffer = buffer;
    o.remainder = rem;
    return o;
}

#endif
