/* prop_rng.h - the seeded random numbers of the property tests
 * (splitmix64): a seed reproduces a run exactly. */
#ifndef GWR_PROP_RNG_H
#define GWR_PROP_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n <= 0. */
static inline int64_t rng_below(uint64_t *s, int64_t n) {
    return n <= 0 ? 0 : (int64_t)(rng_next(s) % (uint64_t)n);
}

#endif
