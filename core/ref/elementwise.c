/* elementwise.c - the reference dropout and add (SEW ADD residual).
 *
 * Dropout: one mask [nf] shared by all time steps, from the counter-based generator
 * (core/base/rng.h), so a recomputation draws the same mask.
 *
 * Each kernel's arithmetic is one always_inline body compiled for every SIMD path of
 * simd.h by REMAT_ELEM_CLONES (elem_kernel.h), all with the same bits; activations go
 * through act_ld / act_st (b16 = 1: the bf16-storage twins), the mask is fp32.
 */
#include "core/ref/ref_kernels.h"
#include "core/ref/elem_kernel.h"
#include "core/ref/parallel.h"

#include <math.h>
#include <string.h>

#include "core/base/rng.h"

#define ALWAYS_INLINE REMAT_ELEM_INLINE
#define ELEM_BLOCK 2048

/* Mask elements i0 .. i1-1 of a shard whose first element has the counter c0 (0 in
 * one process; a data-parallel rank's first sample times nf per sample). */
ALWAYS_INLINE void dropout_mask_range(float *restrict mask, uint64_t seed, uint64_t key, float p, float scale,
                                      int64_t i0, int64_t i1, int64_t c0) {
    for (int64_t i = i0; i < i1; i++) {
        const float u = remat_rng_uniform(seed, REMAT_RNG_DROPOUT, key, (uint64_t)(c0 + i));
        mask[i - i0] = u >= p ? scale : 0.0f;
    }
}

REMAT_ELEM_CLONES(dropout_mask_f32, (float *mask, uint64_t seed, uint64_t key, float p, float scale, int64_t nf),
                  (mask, seed, key, p, scale, nf), dropout_mask_range(mask, seed, key, p, scale, 0, nf, 0))

void remat_ref_dropout_mask(float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf) {
    dropout_mask_f32(mask, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), nf);
}

/* dst = src * mask (forward) or dst += src * mask (backward), the mask of
 * (seed, iter, layer) shared by all t_steps steps, drawn one element block at a time. */
ALWAYS_INLINE void dropout_apply(void *restrict dst, const void *restrict src, const int b16, uint64_t seed,
                                 uint64_t key, float p, float scale, int64_t t_steps, int64_t nf, int64_t c0,
                                 int accumulate, int64_t lo, int64_t hi) {
    float mask[ELEM_BLOCK];
    for (int64_t i0 = lo; i0 < hi; i0 += ELEM_BLOCK) {
        const int64_t i1 = hi - i0 < ELEM_BLOCK ? hi : i0 + ELEM_BLOCK;
        dropout_mask_range(mask, seed, key, p, scale, i0, i1, c0);
        for (int64_t t = 0; t < t_steps; t++) {
            const int64_t o = t * nf + i0;
#pragma GCC ivdep
            for (int64_t i = 0; i < i1 - i0; i++) {
                const float y = act_ld(src, o + i, b16) * mask[i];
                act_st(dst, o + i, accumulate ? act_ld(dst, o + i, b16) + y : y, b16);
            }
        }
    }
}

REMAT_ELEM_CLONES(dropout_apply_f32_part,
                  (float *dst, const float *src, uint64_t seed, uint64_t key, float p, float scale, int64_t t_steps,
                   int64_t nf, int64_t c0, int accumulate, int64_t lo, int64_t hi),
                  (dst, src, seed, key, p, scale, t_steps, nf, c0, accumulate, lo, hi),
                  accumulate ? dropout_apply(dst, src, 0, seed, key, p, scale, t_steps, nf, c0, 1, lo, hi)
                             : dropout_apply(dst, src, 0, seed, key, p, scale, t_steps, nf, c0, 0, lo, hi))
REMAT_ELEM_CLONES(dropout_apply_bf16_part,
                  (uint16_t *dst, const uint16_t *src, uint64_t seed, uint64_t key, float p, float scale,
                   int64_t t_steps, int64_t nf, int64_t c0, int accumulate, int64_t lo, int64_t hi),
                  (dst, src, seed, key, p, scale, t_steps, nf, c0, accumulate, lo, hi),
                  accumulate ? dropout_apply(dst, src, 1, seed, key, p, scale, t_steps, nf, c0, 1, lo, hi)
                             : dropout_apply(dst, src, 1, seed, key, p, scale, t_steps, nf, c0, 0, lo, hi))

/* One call's arguments for its parts on the threads (parallel.h): the elements of the
 * mask (and their t_steps rows) are independent, so the parts split nf. */
typedef struct dropout_call {
    void *dst;
    const void *src;
    uint64_t seed, key;
    float p, scale;
    int64_t t_steps, nf, c0;
    int accumulate, b16;
} dropout_call;

/* Elements per part at least (add: of n; dropout: of nf, each t_steps rows). */
#define ELEM_MIN_PER_THREAD REMAT_REF_ELEM_MIN_PER_THREAD

static void dropout_part(void *ctx, int64_t lo, int64_t hi) {
    const dropout_call *c = ctx;
    if (c->b16)
        dropout_apply_bf16_part(c->dst, c->src, c->seed, c->key, c->p, c->scale, c->t_steps, c->nf, c->c0,
                                c->accumulate, lo, hi);
    else
        dropout_apply_f32_part(c->dst, c->src, c->seed, c->key, c->p, c->scale, c->t_steps, c->nf, c->c0,
                               c->accumulate, lo, hi);
}

static void dropout_run(void *dst, const void *src, int b16, uint64_t seed, uint64_t key, float p, float scale,
                        int64_t t_steps, int64_t nf, int64_t c0, int accumulate) {
    const dropout_call c = {dst, src, seed, key, p, scale, t_steps, nf, c0, accumulate, b16};
    remat_ref_parallel_for(nf, 64, ELEM_MIN_PER_THREAD, dropout_part, (void *)&c);
}
#define dropout_apply_f32(dst, src, seed, key, p, scale, t, nf, c0, acc) \
    dropout_run(dst, src, 0, seed, key, p, scale, t, nf, c0, acc)
#define dropout_apply_bf16(dst, src, seed, key, p, scale, t, nf, c0, acc) \
    dropout_run(dst, src, 1, seed, key, p, scale, t, nf, c0, acc)

void remat_ref_dropout_forward(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                               int64_t t_steps, int64_t nf) {
    dropout_apply_f32(out, inp, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                      nf, 0, 0);
}

void remat_ref_dropout_backward(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                int64_t t_steps, int64_t nf) {
    dropout_apply_f32(dinp, dout, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                      nf, 0, 1);
}

void remat_ref_dropout_forward_bf16(uint16_t *out, const uint16_t *inp, uint64_t seed, uint64_t iter, int layer,
                                    float p, int64_t t_steps, int64_t nf) {
    dropout_apply_bf16(out, inp, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                       nf, 0, 0);
}

void remat_ref_dropout_backward_bf16(uint16_t *dinp, const uint16_t *dout, uint64_t seed, uint64_t iter, int layer,
                                     float p, int64_t t_steps, int64_t nf) {
    dropout_apply_bf16(dinp, dout, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                       nf, 0, 1);
}

/* The same on a data-parallel shard: element i of its [nf] mask has the counter c0 + i. */
void remat_ref_dropout_forward_at(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                                  int64_t t_steps, int64_t nf, int64_t c0) {
    dropout_apply_f32(out, inp, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                      nf, c0, 0);
}
void remat_ref_dropout_backward_at(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                   int64_t t_steps, int64_t nf, int64_t c0) {
    dropout_apply_f32(dinp, dout, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                      nf, c0, 1);
}
void remat_ref_dropout_forward_at_bf16(uint16_t *out, const uint16_t *inp, uint64_t seed, uint64_t iter, int layer,
                                       float p, int64_t t_steps, int64_t nf, int64_t c0) {
    dropout_apply_bf16(out, inp, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                       nf, c0, 0);
}
void remat_ref_dropout_backward_at_bf16(uint16_t *dinp, const uint16_t *dout, uint64_t seed, uint64_t iter,
                                        int layer, float p, int64_t t_steps, int64_t nf, int64_t c0) {
    dropout_apply_bf16(dinp, dout, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), t_steps,
                       nf, c0, 1);
}

/* dst = a + b (accumulate 0) or dst = dst + a (accumulate 1, b unused). dst may be a
 * (flatten's backward adds into its own gradient): element i reads only element i. */
ALWAYS_INLINE void add_body(void *dst, const void *a, const void *restrict b, const int b16, int64_t n,
                            int accumulate) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; i++)
        act_st(dst, i, accumulate ? act_ld(dst, i, b16) + act_ld(a, i, b16) : act_ld(a, i, b16) + act_ld(b, i, b16), b16);
}

REMAT_ELEM_CLONES(add_f32_part, (float *dst, const float *a, const float *b, int64_t n, int accumulate),
                  (dst, a, b, n, accumulate),
                  accumulate ? add_body(dst, a, NULL, 0, n, 1) : add_body(dst, a, b, 0, n, 0))
REMAT_ELEM_CLONES(add_bf16_part, (uint16_t *dst, const uint16_t *a, const uint16_t *b, int64_t n, int accumulate),
                  (dst, a, b, n, accumulate),
                  accumulate ? add_body(dst, a, NULL, 1, n, 1) : add_body(dst, a, b, 1, n, 0))

typedef struct add_call {
    void *dst;
    const void *a, *b;
    int accumulate, b16;
} add_call;

static void add_part(void *ctx, int64_t lo, int64_t hi) {
    const add_call *c = ctx;
    if (c->b16)
        add_bf16_part((uint16_t *)c->dst + lo, (const uint16_t *)c->a + lo, c->b ? (const uint16_t *)c->b + lo : NULL,
                      hi - lo, c->accumulate);
    else
        add_f32_part((float *)c->dst + lo, (const float *)c->a + lo, c->b ? (const float *)c->b + lo : NULL, hi - lo,
                     c->accumulate);
}

static void add_run(void *dst, const void *a, const void *b, int64_t n, int accumulate, int b16) {
    const add_call c = {dst, a, b, accumulate, b16};
    remat_ref_parallel_for(n, 64, ELEM_MIN_PER_THREAD, add_part, (void *)&c);
}
static void add_f32(float *dst, const float *a, const float *b, int64_t n, int accumulate) {
    add_run(dst, a, b, n, accumulate, 0);
}
static void add_bf16(uint16_t *dst, const uint16_t *a, const uint16_t *b, int64_t n, int accumulate) {
    add_run(dst, a, b, n, accumulate, 1);
}

void remat_ref_add_forward(float *out, const float *a, const float *b, int64_t n) { add_f32(out, a, b, n, 0); }

/* da and db may be the same buffer (it then receives dout twice) or NULL. */
void remat_ref_add_backward(float *da, float *db, const float *dout, int64_t n) {
    if (da) add_f32(da, dout, NULL, n, 1);
    if (db) add_f32(db, dout, NULL, n, 1);
}

void remat_ref_add_forward_bf16(uint16_t *out, const uint16_t *a, const uint16_t *b, int64_t n) {
    add_bf16(out, a, b, n, 0);
}

/* As the float kernel followed by one rounding: with da == db, dout is added twice in
 * float before the one store. */
void remat_ref_add_backward_bf16(uint16_t *da, uint16_t *db, const uint16_t *dout, int64_t n) {
    if (da && da == db) {
        for (int64_t i = 0; i < n; i++) {
            const float d = remat_bf16_to_f32(dout[i]);
            da[i] = remat_f32_to_bf16((remat_bf16_to_f32(da[i]) + d) + d);
        }
        return;
    }
    if (da) add_bf16(da, dout, NULL, n, 1);
    if (db) add_bf16(db, dout, NULL, n, 1);
}
