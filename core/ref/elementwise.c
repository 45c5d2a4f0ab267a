/* elementwise.c - the reference dropout and add (SEW ADD residual).
 *
 * Dropout: one mask [nf] shared by all time steps, from the counter-based generator
 * (core/base/rng.h), so a recomputation draws the same mask.
 * bf16 storage (act.h): activations and their gradients bf16 (b16 = 1); the mask float.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/base/rng.h"
#include "core/ref/act.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define ELEM_BLOCK 2048

ALWAYS_INLINE void dropout_mask_range(float *restrict mask, uint64_t seed, uint64_t key, float p, float scale,
                                      int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
        const float u = remat_rng_uniform(seed, REMAT_RNG_DROPOUT, key, (uint64_t)i);
        mask[i - i0] = u >= p ? scale : 0.0f;
    }
}

void remat_ref_dropout_mask(float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf) {
    dropout_mask_range(mask, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p), 0, nf);
}

/* dst = src * mask (forward) or dst += src * mask (backward), the mask of
 * (seed, iter, layer) shared by all t_steps steps, drawn one element block at a time. */
ALWAYS_INLINE void dropout_apply(void *dst, const void *src, uint64_t seed, uint64_t iter, int layer, float p,
                                 int64_t t_steps, int64_t nf, int accumulate, const int b16) {
    const uint64_t key = remat_rng_dropout_key(iter, (uint64_t)layer);
    const float scale = 1.0f / (1.0f - p);
    float mask[ELEM_BLOCK];
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        dropout_mask_range(mask, seed, key, p, scale, i0, i1);
        for (int64_t t = 0; t < t_steps; t++) {
            const void *x = act_cat(src, t * nf + i0, b16);
            void *y = act_at(dst, t * nf + i0, b16);
            if (accumulate)
                for (int64_t i = 0; i < i1 - i0; i++) act_st(y, i, act_ld(y, i, b16) + act_ld(x, i, b16) * mask[i], b16);
            else
                for (int64_t i = 0; i < i1 - i0; i++) act_st(y, i, act_ld(x, i, b16) * mask[i], b16);
        }
    }
}

void remat_ref_dropout_forward(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                               int64_t t_steps, int64_t nf) {
    dropout_apply(out, inp, seed, iter, layer, p, t_steps, nf, 0, 0);
}

void remat_ref_dropout_forward_bf16(uint16_t *out, const uint16_t *inp, uint64_t seed, uint64_t iter, int layer,
                                    float p, int64_t t_steps, int64_t nf) {
    dropout_apply(out, inp, seed, iter, layer, p, t_steps, nf, 0, 1);
}

void remat_ref_dropout_backward(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                int64_t t_steps, int64_t nf) {
    dropout_apply(dinp, dout, seed, iter, layer, p, t_steps, nf, 1, 0);
}

void remat_ref_dropout_backward_bf16(uint16_t *dinp, const uint16_t *dout, uint64_t seed, uint64_t iter, int layer,
                                     float p, int64_t t_steps, int64_t nf) {
    dropout_apply(dinp, dout, seed, iter, layer, p, t_steps, nf, 1, 1);
}


void remat_ref_add_forward(float *out, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* da and db may be the same buffer (it then receives dout twice) or NULL. */
void remat_ref_add_backward(float *da, float *db, const float *dout, int64_t n) {
    if (da)
        for (int64_t i = 0; i < n; i++) da[i] = da[i] + dout[i];
    if (db)
        for (int64_t i = 0; i < n; i++) db[i] = db[i] + dout[i];
}

void remat_ref_add_forward_bf16(uint16_t *out, const uint16_t *a, const uint16_t *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = remat_f32_to_bf16(remat_bf16_to_f32(a[i]) + remat_bf16_to_f32(b[i]));
}

/* As the float kernel followed by one rounding: with da == db, dout is added twice in
 * float before the store. */
void remat_ref_add_backward_bf16(uint16_t *da, uint16_t *db, const uint16_t *dout, int64_t n) {
    if (da && da == db) {
        for (int64_t i = 0; i < n; i++) {
            const float d = remat_bf16_to_f32(dout[i]);
            da[i] = remat_f32_to_bf16((remat_bf16_to_f32(da[i]) + d) + d);
        }
        return;
    }
    if (da)
        for (int64_t i = 0; i < n; i++) da[i] = remat_f32_to_bf16(remat_bf16_to_f32(da[i]) + remat_bf16_to_f32(dout[i]));
    if (db)
        for (int64_t i = 0; i < n; i++) db[i] = remat_f32_to_bf16(remat_bf16_to_f32(db[i]) + remat_bf16_to_f32(dout[i]));
}
