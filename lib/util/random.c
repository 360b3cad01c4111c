/* random.c - deterministic shuffle and random streams (see random.h). */
#include "util/random.h"

#include <xxhash.h>

#include "util/endian.h"

/* SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified. */
uint64_t sk_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t sk_random_below(uint64_t *state, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)sk_splitmix64(state) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)sk_splitmix64(state) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

void sk_shuffle(uint64_t *v, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)sk_random_below(&state, i);
        uint64_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

uint64_t sk_derive(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b, uint64_t k)
{
    uint8_t bytes[32];
    put_le64(bytes, tag);
    put_le64(bytes + 8, a);
    put_le64(bytes + 16, b);
    put_le64(bytes + 24, k);
    return XXH3_64bits_withSeed(bytes, sizeof bytes, seed);
}
