/* fill.c - seeded initial values and data: uniform lo + (hi - lo) * u; Bernoulli 1
 * when u < rate; labels remat_rng_bits(seed, REMAT_RNG_LABEL, key, i) mod classes.
 * The _bf16 twins store the same float values rounded (act.h): a bf16 model's input.
 * Element i's value depends on i alone: the fills run over the threads (parallel.h) and
 * in per-path copies (elem_kernel.h) with the same bits.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/base/rng.h"
#include "core/ref/act.h"
#include "core/ref/elem_kernel.h"
#include "core/ref/parallel.h"

/* One fill call over [lo, hi) (element i's draw is a function of i alone, so the parts
 * of the threads and the vector lanes of the SIMD paths give the same values). */
typedef enum { FILL_UNIFORM, FILL_BERNOULLI, FILL_COUNTS } fill_kind;

typedef struct fill_call {
    void *out;
    fill_kind kind;
    int b16;
    float lo, span, rate;
    int32_t max;
    uint64_t seed, stream, key;
} fill_call;

REMAT_ACT_INLINE void fill_range(const fill_call *c, int64_t i0, int64_t i1, const int b16) {
    void *restrict out = c->out;
    const uint64_t seed = c->seed, stream = c->stream, key = c->key;
    if (c->kind == FILL_UNIFORM) {
        const float lo = c->lo, span = c->span;
        for (int64_t i = i0; i < i1; i++)
            act_st(out, i, lo + span * remat_rng_uniform(seed, stream, key, (uint64_t)i), b16);
    } else if (c->kind == FILL_BERNOULLI) {
        const float rate = c->rate;
        for (int64_t i = i0; i < i1; i++)
            act_st(out, i, remat_rng_uniform(seed, stream, key, (uint64_t)i) < rate ? 1.0f : 0.0f, b16);
    } else {
        const int32_t max = c->max;
        for (int64_t i = i0; i < i1; i++)
            act_st(out, i, remat_count_of_uniform(remat_rng_uniform(seed, stream, key, (uint64_t)i), max), b16);
    }
}

REMAT_ACT_INLINE void fill_body(const fill_call *c, int64_t i0, int64_t i1) {
    if (c->b16) fill_range(c, i0, i1, 1);
    else fill_range(c, i0, i1, 0);
}

/* Per-path copies (elem_kernel.h): the generator's integer steps and its conversion to
 * float vectorised at each path's width, the same values per element. */
REMAT_ELEM_CLONES(fill_part, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi),
                  fill_body((const fill_call *)ctx, lo, hi))

static void fill_run(fill_call c, int64_t n) {
    remat_ref_parallel_for(n, 64, REMAT_REF_ELEM_MIN_PER_THREAD, fill_part, &c);
}

void remat_ref_fill_counts(float *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_COUNTS, .max = max, .seed = seed, .stream = stream, .key = key}, n);
}
void remat_ref_fill_counts_bf16(uint16_t *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_COUNTS, .b16 = 1, .max = max, .seed = seed, .stream = stream,
                         .key = key},
             n);
}

void remat_ref_fill_uniform(float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_UNIFORM, .lo = lo, .span = hi - lo, .seed = seed, .stream = stream,
                         .key = key},
             n);
}
void remat_ref_fill_uniform_bf16(uint16_t *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                                 uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_UNIFORM, .b16 = 1, .lo = lo, .span = hi - lo, .seed = seed,
                         .stream = stream, .key = key},
             n);
}
void remat_ref_fill_bernoulli(float *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_BERNOULLI, .rate = rate, .seed = seed, .stream = stream, .key = key},
             n);
}
void remat_ref_fill_bernoulli_bf16(uint16_t *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                                   uint64_t key) {
    fill_run((fill_call){.out = out, .kind = FILL_BERNOULLI, .b16 = 1, .rate = rate, .seed = seed, .stream = stream,
                         .key = key},
             n);
}

void remat_ref_fill_labels(int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {
    for (int64_t i = 0; i < n; i++)
        labels[i] = classes > 0 ? (int32_t)(remat_rng_bits(seed, REMAT_RNG_LABEL, key, (uint64_t)i) % (uint64_t)classes)
                                : 0;
}
