/* shuffle.c - deterministic shuffle (see shuffle.h). */
#include "format/shuffle.h"

/* SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value in [0, bound) without modulo bias (Lemire's multiply-and-reject). */
static uint64_t bounded(uint64_t *state, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)splitmix64(state) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

void sk_shuffle(uint64_t *v, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)bounded(&state, i);
        uint64_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}
