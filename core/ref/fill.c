/* fill.c - seeded initial values and data: uniform lo + (hi - lo) * u; Bernoulli 1
 * when u < rate; labels remat_rng_bits(seed, REMAT_RNG_LABEL, key, i) mod classes.
 * The _bf16 twins store the same float values rounded (act.h): a bf16 model's input.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/base/rng.h"
#include "core/ref/act.h"

REMAT_ACT_INLINE void fill_uniform(void *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                                   uint64_t key, const int b16) {
    const float span = hi - lo;
    for (int64_t i = 0; i < n; i++) act_st(out, i, lo + span * remat_rng_uniform(seed, stream, key, (uint64_t)i), b16);
}

REMAT_ACT_INLINE void fill_bernoulli(void *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key,
                                     const int b16) {
    for (int64_t i = 0; i < n; i++)
        act_st(out, i, remat_rng_uniform(seed, stream, key, (uint64_t)i) < rate ? 1.0f : 0.0f, b16);
}

REMAT_ACT_INLINE void fill_counts(void *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key,
                                  const int b16) {
    for (int64_t i = 0; i < n; i++)
        act_st(out, i, remat_count_of_uniform(remat_rng_uniform(seed, stream, key, (uint64_t)i), max), b16);
}

void remat_ref_fill_counts(float *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_counts(out, n, max, seed, stream, key, 0);
}
void remat_ref_fill_counts_bf16(uint16_t *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_counts(out, n, max, seed, stream, key, 1);
}

void remat_ref_fill_uniform(float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_uniform(out, n, lo, hi, seed, stream, key, 0);
}
void remat_ref_fill_uniform_bf16(uint16_t *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                                 uint64_t key) {
    fill_uniform(out, n, lo, hi, seed, stream, key, 1);
}
void remat_ref_fill_bernoulli(float *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_bernoulli(out, n, rate, seed, stream, key, 0);
}
void remat_ref_fill_bernoulli_bf16(uint16_t *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                                   uint64_t key) {
    fill_bernoulli(out, n, rate, seed, stream, key, 1);
}

void remat_ref_fill_labels(int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {
    for (int64_t i = 0; i < n; i++)
        labels[i] = classes > 0 ? (int32_t)(remat_rng_bits(seed, REMAT_RNG_LABEL, key, (uint64_t)i) % (uint64_t)classes)
                                : 0;
}
