/* rng.h - the counter-based generator every backend shares (header only).
 *
 * A draw is a pure function of (seed, stream, counter): no generator state, so a
 * recomputation that asks again gets the same number (docs/determinism.md, dropout), and a
 * CUDA kernel computes the very same bits as the reference backend. Streams:
 * parameters, input, labels and dropout masks each have their own.
 */
#ifndef REMAT_RNG_H
#define REMAT_RNG_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define REMAT_HOSTDEV __host__ __device__ __forceinline__
#else
#define REMAT_HOSTDEV static inline
#endif

/* Stream identifiers: combined with a layer / iteration index to key a draw. */
enum {
    REMAT_RNG_PARAM = 1,   /* counter: parameter element; key: layer*16 + param */
    REMAT_RNG_INPUT = 2,   /* counter: input element;      key: iteration */
    REMAT_RNG_LABEL = 3,   /* counter: sample;             key: iteration */
    REMAT_RNG_DROPOUT = 4, /* counter: element of [N, F];  key: iteration, layer */
};

/* splitmix64 finaliser: a bijective 64-bit mixer. */
REMAT_HOSTDEV uint64_t remat_rng_mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next value of a splitmix64 sequence whose state is *state (advanced): the
 * one sequential generator (plan sampling, the search's random plans). */
REMAT_HOSTDEV uint64_t remat_rng_next(uint64_t *state) {
    uint64_t r = remat_rng_mix(*state);
    *state += 0x9e3779b97f4a7c15ull;
    return r;
}

/* A 64-bit hash of a key for open-addressing tables (murmur3's finaliser, first
 * half): tables keyed by address or id use this one. */
REMAT_HOSTDEV uint64_t remat_hash64(int64_t a) {
    uint64_t x = (uint64_t)a;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* 64 random bits for (seed, stream, key, counter). */
REMAT_HOSTDEV uint64_t remat_rng_bits(uint64_t seed, uint64_t stream, uint64_t key, uint64_t counter) {
    uint64_t h = remat_rng_mix(seed ^ remat_rng_mix(stream * 0x100000001b3ull + key));
    return remat_rng_mix(h ^ (counter * 0xd1b54a32d192ed03ull));
}

/* Uniform float in [0, 1) with 24 random bits (exactly representable). */
REMAT_HOSTDEV float remat_rng_uniform(uint64_t seed, uint64_t stream, uint64_t key, uint64_t counter) {
    /* The top 24 bits fit an int32: its conversion vectorises (SSE2 cvtdq2ps), a
     * uint64's needs AVX-512DQ; the value is the same. */
    return (float)(int32_t)(remat_rng_bits(seed, stream, key, counter) >> 40) * (1.0f / 16777216.0f);
}

/* An event count in 0..max from a uniform u in [0, 1): floor(u * (max + 1)) in float,
 * clamped to max (the product can round up to max + 1 just below u = 1). Exact
 * integers, so bf16 stores them unchanged for max <= 256. */
REMAT_HOSTDEV float remat_count_of_uniform(float u, int32_t max) {
    const float v = floorf(u * (float)(max + 1));
    return v > (float)max ? (float)max : v;
}

/* Key of a dropout mask: the iteration and the layer index (not the time step). */
REMAT_HOSTDEV uint64_t remat_rng_dropout_key(uint64_t iteration, uint64_t layer) {
    return (iteration << 20) ^ layer;
}

#endif
