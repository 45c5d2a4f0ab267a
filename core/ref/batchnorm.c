/* batchnorm.c - the reference training-mode batch norm (docs/determinism.md).
 *
 * Fixed choices (cuda/batchnorm.cu mirrors them): per-channel sums in double, positions (row,
 * then pixel of a [C, H, W] activation) in ascending order; two passes (mean, then sum of squared deviations). mean and
 * rstd = 1/sqrt(var + eps) are rounded to float; x_hat = (x - mean) * rstd and
 * out = x_hat * weight + bias in float. With rows == 1 the running variance takes the
 * biased variance (0): the unbiased one is undefined there.
 * bf16 storage (act.h): inp, out, dout and dinp stored bf16, widened on load and
 * rounded on store; statistics, weight, bias and their gradients float, as autocast
 * runs batch norm.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/elem_kernel.h"
#include "core/ref/parallel.h"

/* Channels per block (double accumulators on the stack). */
#define BN_BLOCK 1024

/* Channels whose sums run side by side in the convolutional kernels: one double
 * accumulator per channel and sum, BN_GROUP channels in the BN_GROUP lanes of one
 * vector (GCC vector extensions: one AVX-512 register, two AVX2 or four SSE2 ones).
 * An 8 x 8 block (8 channels, 8 positions) is loaded row by row and transposed, so that
 * lane j receives channel j's positions one at a time, in ascending order: each
 * channel's chain keeps its own order (row, then pixel, ascending) and the grouping
 * changes the speed, not a bit. */
#define BN_GROUP 8

typedef float bn_v8f __attribute__((vector_size(32)));
typedef double bn_v8d __attribute__((vector_size(64)));
typedef int32_t bn_v8i __attribute__((vector_size(32)));
typedef uint32_t bn_v8u __attribute__((vector_size(32)));
typedef uint16_t bn_v8h __attribute__((vector_size(16)));

/* x[i .. i + 7] widened to float (the bf16 widening is exact: the bits shifted up). */
REMAT_ACT_INLINE void bn_ld8(bn_v8f *v, const void *x, int64_t i, const int b16) {
    if (b16) {
        bn_v8h h;
        memcpy(&h, (const uint16_t *)x + i, sizeof h);
        const bn_v8u u = __builtin_convertvector(h, bn_v8u) << 16;
        memcpy(v, &u, sizeof *v);
    } else {
        memcpy(v, (const float *)x + i, sizeof *v);
    }
}

/* v[j][i] -> v[i][j]. */
REMAT_ACT_INLINE void bn_transpose8(bn_v8f *v) {
    const bn_v8i lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
    const bn_v8i lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
    const bn_v8i lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
    bn_v8f t[8], u[8];
    for (int j = 0; j < 8; j += 2) {
        t[j] = __builtin_shuffle(v[j], v[j + 1], lo);
        t[j + 1] = __builtin_shuffle(v[j], v[j + 1], hi);
    }
    for (int j = 0; j < 8; j += 4) {
        u[j] = __builtin_shuffle(t[j], t[j + 2], lo2);
        u[j + 1] = __builtin_shuffle(t[j], t[j + 2], hi2);
        u[j + 2] = __builtin_shuffle(t[j + 1], t[j + 3], lo2);
        u[j + 3] = __builtin_shuffle(t[j + 1], t[j + 3], hi2);
    }
    for (int j = 0; j < 4; j++) {
        v[j] = __builtin_shuffle(u[j], u[j + 4], lo4);
        v[j + 4] = __builtin_shuffle(u[j], u[j + 4], hi4);
    }
}

/* Position p of the 8 channels starting at x (channel j at x + j * hw). */
REMAT_ACT_INLINE void bn_column8(bn_v8f *v, const void *x, int64_t hw, int64_t p, const int b16) {
    for (int j = 0; j < 8; j++) (*v)[j] = act_ld(x, j * hw + p, b16);
}

/* s[j] for the 8 channels c .. c + 7 of [rows, C, hw]: sq == 0: the sum of x; sq == 1:
 * the sum of (x - mu[j])^2. */
REMAT_ACT_INLINE void bn_group_sums(double *restrict s_out, const void *inp, const double *mu_in, int64_t rows,
                                    int64_t C, int64_t hw, int64_t c, const int sq, const int b16) {
    bn_v8d s = {0}, mu = {0};
    if (sq) memcpy(&mu, mu_in, sizeof mu);
    for (int64_t r = 0; r < rows; r++) {
        const void *x = act_cat(inp, (r * C + c) * hw, b16);
        int64_t p = 0;
        for (; p + 8 <= hw; p += 8) {
            bn_v8f v[8];
            for (int j = 0; j < 8; j++) bn_ld8(&v[j], x, j * hw + p, b16);
            bn_transpose8(v);
            for (int i = 0; i < 8; i++) {
                const bn_v8d d = __builtin_convertvector(v[i], bn_v8d) - mu;
                s += sq ? d * d : d;
            }
        }
        for (; p < hw; p++) {
            bn_v8f v;
            bn_column8(&v, x, hw, p, b16);
            const bn_v8d d = __builtin_convertvector(v, bn_v8d) - mu;
            s += sq ? d * d : d;
        }
    }
    memcpy(s_out, &s, sizeof s);
}

/* sdy[j], sdyx[j] (the sums of dy and dy * x_hat) for the 8 channels c .. c + 7. */
REMAT_ACT_INLINE void bn_group_backward_sums(double *restrict sdy_out, double *restrict sdyx_out, const void *dout,
                                             const void *inp, const float *mean, const float *rstd, int64_t rows,
                                             int64_t C, int64_t hw, int64_t c, const int b16) {
    bn_v8d s1 = {0}, s2 = {0};
    bn_v8f m, rs;
    memcpy(&m, mean + c, sizeof m);
    memcpy(&rs, rstd + c, sizeof rs);
    for (int64_t r = 0; r < rows; r++) {
        const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
        int64_t p = 0;
        for (; p + 8 <= hw; p += 8) {
            bn_v8f v[8], g[8];
            for (int j = 0; j < 8; j++) bn_ld8(&v[j], x, j * hw + p, b16), bn_ld8(&g[j], dy, j * hw + p, b16);
            bn_transpose8(v);
            bn_transpose8(g);
            for (int i = 0; i < 8; i++) {
                const bn_v8f xhat = (v[i] - m) * rs;
                const bn_v8d gd = __builtin_convertvector(g[i], bn_v8d);
                s1 += gd;
                s2 += gd * __builtin_convertvector(xhat, bn_v8d);
            }
        }
        for (; p < hw; p++) {
            bn_v8f v, g;
            bn_column8(&v, x, hw, p, b16);
            bn_column8(&g, dy, hw, p, b16);
            const bn_v8f xhat = (v - m) * rs;
            const bn_v8d gd = __builtin_convertvector(g, bn_v8d);
            s1 += gd;
            s2 += gd * __builtin_convertvector(xhat, bn_v8d);
        }
    }
    memcpy(sdy_out, &s1, sizeof s1);
    memcpy(sdyx_out, &s2, sizeof s2);
}

/* The same sums for channel c alone (a part's last channels when fewer than BN_GROUP). */
REMAT_ACT_INLINE void bn_one_sums(double *s_out, const void *inp, const double *mu_in, int64_t rows, int64_t C,
                                  int64_t hw, int64_t c, const int sq, const int b16) {
    double s = 0.0;
    const double mu = sq ? mu_in[0] : 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const void *x = act_cat(inp, (r * C + c) * hw, b16);
        for (int64_t p = 0; p < hw; p++) {
            const double d = (double)act_ld(x, p, b16) - mu;
            s += sq ? d * d : d;
        }
    }
    s_out[0] = s;
}

REMAT_ACT_INLINE void bn_one_backward_sums(double *sdy_out, double *sdyx_out, const void *dout, const void *inp,
                                           const float *mean, const float *rstd, int64_t rows, int64_t C, int64_t hw,
                                           int64_t c, const int b16) {
    double s1 = 0.0, s2 = 0.0;
    const float m = mean[c], rs = rstd[c];
    for (int64_t r = 0; r < rows; r++) {
        const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
        for (int64_t p = 0; p < hw; p++) {
            const float xhat = (act_ld(x, p, b16) - m) * rs;
            s1 += (double)act_ld(dy, p, b16);
            s2 += (double)act_ld(dy, p, b16) * (double)xhat;
        }
    }
    sdy_out[0] = s1, sdyx_out[0] = s2;
}

/* [rows, C, hw] with hw > 1 (convolutional): the same arithmetic, channel by channel,
 * positions (r, p) in ascending order (BN_GROUP channels' sums side by side). */
REMAT_ACT_INLINE void bn_forward_spatial(void *out, float *mean, float *rstd, float *running_mean,
                                          float *running_var, const void *inp, const float *weight, const float *bias,
                                          int64_t rows, int64_t C, int64_t hw, float momentum, double eps,
                                          const int b16, int64_t c_lo,
                                          int64_t c_hi) {
    const int64_t n = rows * hw;
    for (int64_t c0 = c_lo; c0 < c_hi;) {
        const int64_t g = c_hi - c0 >= BN_GROUP ? BN_GROUP : 1;
        double sum[BN_GROUP], sq[BN_GROUP], mu[BN_GROUP];
        if (g == BN_GROUP) bn_group_sums(sum, inp, NULL, rows, C, hw, c0, 0, b16);
        else bn_one_sums(sum, inp, NULL, rows, C, hw, c0, 0, b16);
        for (int64_t j = 0; j < g; j++) mu[j] = n > 0 ? sum[j] / (double)n : 0.0;
        if (g == BN_GROUP) bn_group_sums(sq, inp, mu, rows, C, hw, c0, 1, b16);
        else bn_one_sums(sq, inp, mu, rows, C, hw, c0, 1, b16);
        for (int64_t j = 0; j < g; j++) {
            const int64_t c = c0 + j;
            const double var = n > 0 ? sq[j] / (double)n : 0.0;
            const float m = (float)mu[j], rs = (float)(1.0 / sqrt(var + eps));
            const float w = weight ? weight[c] : 1.0f, b = bias ? bias[c] : 0.0f;
            mean[c] = m;
            rstd[c] = rs;
            if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
            if (running_var) {
                const double unbiased = n > 1 ? sq[j] / (double)(n - 1) : var;
                running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (float)unbiased;
            }
            for (int64_t r = 0; r < rows; r++) {
                const void *x = act_cat(inp, (r * C + c) * hw, b16);
                void *y = act_at(out, (r * C + c) * hw, b16);
                for (int64_t p = 0; p < hw; p++) act_st(y, p, (act_ld(x, p, b16) - m) * rs * w + b, b16);
            }
        }
        c0 += g;
    }
}

REMAT_ACT_INLINE void bn_backward_spatial(void *dinp, float *dweight, float *dbias, const void *dout,
                                           const void *inp, const float *weight, const float *mean, const float *rstd,
                                           int64_t rows, int64_t C, int64_t hw, const int b16, int64_t c_lo,
                                           int64_t c_hi) {
    const int64_t n = rows * hw;
    for (int64_t c0 = c_lo; c0 < c_hi;) {
        const int64_t g = c_hi - c0 >= BN_GROUP ? BN_GROUP : 1;
        double sdy[BN_GROUP], sdyx[BN_GROUP];
        if (g == BN_GROUP) bn_group_backward_sums(sdy, sdyx, dout, inp, mean, rstd, rows, C, hw, c0, b16);
        else bn_one_backward_sums(sdy, sdyx, dout, inp, mean, rstd, rows, C, hw, c0, b16);
        for (int64_t j = 0; j < g; j++) {
            const int64_t c = c0 + j;
            const float m = mean[c], rs = rstd[c];
            if (dbias) dbias[c] = dbias[c] + (float)sdy[j];
            if (dweight) dweight[c] = dweight[c] + (float)sdyx[j];
            if (!dinp) continue;
            const float mdy = n > 0 ? (float)(sdy[j] / (double)n) : 0.0f,
                        mdyx = n > 0 ? (float)(sdyx[j] / (double)n) : 0.0f;
            const float k = (weight ? weight[c] : 1.0f) * rs;
            for (int64_t r = 0; r < rows; r++) {
                const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
                void *dx = act_at(dinp, (r * C + c) * hw, b16);
                for (int64_t p = 0; p < hw; p++) {
                    const float xhat = (act_ld(x, p, b16) - m) * rs;
                    act_st(dx, p, act_ld(dx, p, b16) + (act_ld(dy, p, b16) - mdy - xhat * mdyx) * k, b16);
                }
            }
        }
        c0 += g;
    }
}

REMAT_ACT_INLINE void batchnorm_forward(void *out, float *mean, float *rstd, float *running_mean, float *running_var,
                                        const void *inp, const float *weight, const float *bias, int64_t rows,
                                        int64_t C, int64_t hw, float momentum, double eps, const int b16, int64_t c_lo,
                                        int64_t c_hi) {
    if (hw > 1) {
        bn_forward_spatial(out, mean, rstd, running_mean, running_var, inp, weight, bias, rows, C, hw, momentum, eps,
                           b16, c_lo, c_hi);
        return;
    }
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += BN_BLOCK) {
        const int64_t nc = c_hi - c0 < BN_BLOCK ? c_hi - c0 : BN_BLOCK;
        double sum[BN_BLOCK], sq[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) sum[c] = 0.0, sq[c] = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, r * C + c0, b16);
            for (int64_t c = 0; c < nc; c++) sum[c] += (double)act_ld(x, c, b16);
        }
        double mu[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) mu[c] = rows > 0 ? sum[c] / (double)rows : 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, r * C + c0, b16);
            for (int64_t c = 0; c < nc; c++) {
                const double d = (double)act_ld(x, c, b16) - mu[c];
                sq[c] += d * d;
            }
        }
        float m[BN_BLOCK], rs[BN_BLOCK], w[BN_BLOCK], b[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) {
            const double var = rows > 0 ? sq[c] / (double)rows : 0.0;
            m[c] = (float)mu[c];
            rs[c] = (float)(1.0 / sqrt(var + eps));
            w[c] = weight ? weight[c0 + c] : 1.0f;
            b[c] = bias ? bias[c0 + c] : 0.0f;
            mean[c0 + c] = m[c];
            rstd[c0 + c] = rs[c];
            if (running_mean) running_mean[c0 + c] = (1.0f - momentum) * running_mean[c0 + c] + momentum * m[c];
            if (running_var) {
                const double unbiased = rows > 1 ? sq[c] / (double)(rows - 1) : var;
                running_var[c0 + c] = (1.0f - momentum) * running_var[c0 + c] + momentum * (float)unbiased;
            }
        }
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, r * C + c0, b16);
            void *y = act_at(out, r * C + c0, b16);
            for (int64_t c = 0; c < nc; c++) act_st(y, c, (act_ld(x, c, b16) - m[c]) * rs[c] * w[c] + b[c], b16);
        }
    }
}

REMAT_ACT_INLINE void batchnorm_backward(void *dinp, float *dweight, float *dbias, const void *dout, const void *inp,
                                         const float *weight, const float *mean, const float *rstd, int64_t rows,
                                         int64_t C, int64_t hw, const int b16, int64_t c_lo, int64_t c_hi) {
    if (hw > 1) {
        bn_backward_spatial(dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C, hw, b16, c_lo, c_hi);
        return;
    }
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += BN_BLOCK) {
        const int64_t nc = c_hi - c0 < BN_BLOCK ? c_hi - c0 : BN_BLOCK;
        double sdy[BN_BLOCK], sdyx[BN_BLOCK];
        const float *restrict m = mean + c0, *restrict rs = rstd + c0;
        for (int64_t c = 0; c < nc; c++) sdy[c] = 0.0, sdyx[c] = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, r * C + c0, b16), *dy = act_cat(dout, r * C + c0, b16);
            for (int64_t c = 0; c < nc; c++) {
                const float xhat = (act_ld(x, c, b16) - m[c]) * rs[c];
                sdy[c] += (double)act_ld(dy, c, b16);
                sdyx[c] += (double)act_ld(dy, c, b16) * (double)xhat;
            }
        }
        float mdy[BN_BLOCK], mdyx[BN_BLOCK], k[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) {
            if (dbias) dbias[c0 + c] = dbias[c0 + c] + (float)sdy[c];
            if (dweight) dweight[c0 + c] = dweight[c0 + c] + (float)sdyx[c];
            mdy[c] = rows > 0 ? (float)(sdy[c] / (double)rows) : 0.0f;
            mdyx[c] = rows > 0 ? (float)(sdyx[c] / (double)rows) : 0.0f;
            k[c] = (weight ? weight[c0 + c] : 1.0f) * rs[c];
        }
        if (!dinp) continue;
        /* dx = w * rstd * (dy - mean(dy) - x_hat * mean(dy * x_hat)) */
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, r * C + c0, b16), *dy = act_cat(dout, r * C + c0, b16);
            void *dx = act_at(dinp, r * C + c0, b16);
            for (int64_t c = 0; c < nc; c++) {
                const float xhat = (act_ld(x, c, b16) - m[c]) * rs[c];
                act_st(dx, c, act_ld(dx, c, b16) + (act_ld(dy, c, b16) - mdy[c] - xhat * mdyx[c]) * k[c], b16);
            }
        }
    }
}

/* One call's arguments for its parts on the threads (parallel.h): channels are
 * independent (each its own statistics, in its own order), so the parts split C. */
typedef struct bn_call {
    void *out, *dinp;
    float *mean, *rstd, *running_mean, *running_var, *dweight, *dbias;
    const float *cmean, *crstd, *weight, *bias;
    const void *inp, *dout;
    int64_t rows, C, hw;
    float momentum; /* forward: the running statistics' momentum and the normaliser's eps */
    double eps;
    int b16;
} bn_call;

/* Elements (rows * hw per channel) per part at least. */
#define BN_MIN_PER_THREAD 65536

REMAT_ACT_INLINE void bn_forward_body(const bn_call *c, int64_t lo, int64_t hi) {
    if (c->b16)
        batchnorm_forward(c->out, c->mean, c->rstd, c->running_mean, c->running_var, c->inp, c->weight, c->bias,
                          c->rows, c->C, c->hw, c->momentum, c->eps, 1, lo, hi);
    else
        batchnorm_forward(c->out, c->mean, c->rstd, c->running_mean, c->running_var, c->inp, c->weight, c->bias,
                          c->rows, c->C, c->hw, c->momentum, c->eps, 0, lo, hi);
}

REMAT_ACT_INLINE void bn_backward_body(const bn_call *c, int64_t lo, int64_t hi) {
    if (c->b16)
        batchnorm_backward(c->dinp, c->dweight, c->dbias, c->dout, c->inp, c->weight, c->cmean, c->crstd, c->rows, c->C,
                           c->hw, 1, lo, hi);
    else
        batchnorm_backward(c->dinp, c->dweight, c->dbias, c->dout, c->inp, c->weight, c->cmean, c->crstd, c->rows, c->C,
                           c->hw, 0, lo, hi);
}

/* Per-path copies (elem_kernel.h): the same IEEE operations per element and per sum on
 * every path, the vectors only wider. */
REMAT_ELEM_CLONES(bn_forward_part, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi),
                  bn_forward_body((const bn_call *)ctx, lo, hi))
REMAT_ELEM_CLONES(bn_backward_part, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi),
                  bn_backward_body((const bn_call *)ctx, lo, hi))

/* Channels per part at least, so that a part has BN_MIN_PER_THREAD elements. */
static int64_t bn_min_channels(int64_t rows, int64_t hw) {
    const int64_t per = rows * hw > 0 ? rows * hw : 1;
    return BN_MIN_PER_THREAD / per > 1 ? BN_MIN_PER_THREAD / per : 1;
}

static void bn_forward_run(bn_call *c) {
    remat_ref_parallel_for(c->C, c->hw > 1 ? BN_GROUP : 16, bn_min_channels(c->rows, c->hw), bn_forward_part, c);
}

static void bn_backward_run(bn_call *c) {
    remat_ref_parallel_for(c->C, c->hw > 1 ? BN_GROUP : 16, bn_min_channels(c->rows, c->hw), bn_backward_part, c);
}

void remat_ref_batchnorm_forward(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                                 const float *inp, const float *weight, const float *bias, int64_t rows, int64_t C,
                                 int64_t hw, float momentum, double eps) {
    bn_call c = {.out = out, .mean = mean, .rstd = rstd, .running_mean = running_mean, .running_var = running_var,
                 .inp = inp, .weight = weight, .bias = bias, .rows = rows, .C = C, .hw = hw, .momentum = momentum,
                 .eps = eps, .b16 = 0};
    bn_forward_run(&c);
}

void remat_ref_batchnorm_forward_bf16(uint16_t *out, float *mean, float *rstd, float *running_mean,
                                      float *running_var, const uint16_t *inp, const float *weight, const float *bias,
                                      int64_t rows, int64_t C, int64_t hw, float momentum, double eps) {
    bn_call c = {.out = out, .mean = mean, .rstd = rstd, .running_mean = running_mean, .running_var = running_var,
                 .inp = inp, .weight = weight, .bias = bias, .rows = rows, .C = C, .hw = hw, .momentum = momentum,
                 .eps = eps, .b16 = 1};
    bn_forward_run(&c);
}

void remat_ref_batchnorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                  const float *weight, const float *mean, const float *rstd, int64_t rows,
                                  int64_t C, int64_t hw) {
    bn_call c = {.dinp = dinp, .dweight = dweight, .dbias = dbias, .dout = dout, .inp = inp, .weight = weight,
                 .cmean = mean, .crstd = rstd, .rows = rows, .C = C, .hw = hw, .b16 = 0};
    bn_backward_run(&c);
}

void remat_ref_batchnorm_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                       const uint16_t *inp, const float *weight, const float *mean, const float *rstd,
                                       int64_t rows, int64_t C, int64_t hw) {
    bn_call c = {.dinp = dinp, .dweight = dweight, .dbias = dbias, .dout = dout, .inp = inp, .weight = weight,
                 .cmean = mean, .crstd = rstd, .rows = rows, .C = C, .hw = hw, .b16 = 1};
    bn_backward_run(&c);
}

/* ---- the data-parallel pieces (docs/determinism.md, "Data parallelism") ----------
 * inp [T * N, C, hw] (row r = t * N + n); block b holds samples b*N/nblk ..
 * (b+1)*N/nblk - 1 of every step. Per channel each block's sum runs over t ascending,
 * its samples ascending, pixels ascending, in double from 0: with nblk = 1 exactly the
 * order of the kernels above. The caller combines the blocks (of every rank) and
 * passes the totals back; `n` is the position count of the whole batch. */

static double bn_mu(const double *sum, int64_t c, int64_t n) { return n > 0 ? sum[c] / (double)n : 0.0; }

/* sum[b * C + c]: mu == NULL: the sum of x; else the sum of (x - mu_c)^2 with
 * mu_c = total[c] / n (mu is the combined first-pass total). */
REMAT_ACT_INLINE void bn_block_sums(double *restrict sum, const void *inp, const double *mu_total, int64_t n,
                                    int64_t T, int64_t N, int64_t nblk, int64_t C, int64_t hw, const int b16) {
    for (int64_t b = 0; b < nblk; b++) {
        double *restrict s = sum + b * C;
        for (int64_t c = 0; c < C; c++) s[c] = 0.0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = b * N / nblk; i < (b + 1) * N / nblk; i++) {
                const int64_t r = t * N + i;
                for (int64_t c = 0; c < C; c++) {
                    const void *x = act_cat(inp, (r * C + c) * hw, b16);
                    if (!mu_total) {
                        for (int64_t p = 0; p < hw; p++) s[c] += (double)act_ld(x, p, b16);
                    } else {
                        const double mu = bn_mu(mu_total, c, n);
                        for (int64_t p = 0; p < hw; p++) {
                            const double d = (double)act_ld(x, p, b16) - mu;
                            s[c] += d * d;
                        }
                    }
                }
            }
    }
}

/* Normalises with the combined totals (sum of x, sum of squared deviations), as
 * bn_forward_spatial does from its own. */
REMAT_ACT_INLINE void bn_block_apply(void *out, float *mean, float *rstd, float *running_mean, float *running_var,
                                     const void *inp, const float *weight, const float *bias, const double *sum,
                                     const double *sq, int64_t n, int64_t rows, int64_t C, int64_t hw, float momentum,
                                     double eps, const int b16) {
    for (int64_t c = 0; c < C; c++) {
        const double var = n > 0 ? sq[c] / (double)n : 0.0;
        const float m = (float)bn_mu(sum, c, n), rs = (float)(1.0 / sqrt(var + eps));
        mean[c] = m;
        rstd[c] = rs;
        if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
        if (running_var) {
            const double unbiased = n > 1 ? sq[c] / (double)(n - 1) : var;
            running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (float)unbiased;
        }
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < C; c++) {
            const float w = weight ? weight[c] : 1.0f, b = bias ? bias[c] : 0.0f;
            const void *x = act_cat(inp, (r * C + c) * hw, b16);
            void *y = act_at(out, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) act_st(y, p, (act_ld(x, p, b16) - mean[c]) * rstd[c] * w + b, b16);
        }
}

/* sdy[b * C + c], sdyx[b * C + c]: block b's sums of dy and dy * x_hat. */
REMAT_ACT_INLINE void bn_block_backward_sums(double *restrict sdy, double *restrict sdyx, const void *dout,
                                             const void *inp, const float *mean, const float *rstd, int64_t T,
                                             int64_t N, int64_t nblk, int64_t C, int64_t hw, const int b16) {
    for (int64_t b = 0; b < nblk; b++) {
        double *restrict s1 = sdy + b * C, *restrict s2 = sdyx + b * C;
        for (int64_t c = 0; c < C; c++) s1[c] = 0.0, s2[c] = 0.0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = b * N / nblk; i < (b + 1) * N / nblk; i++) {
                const int64_t r = t * N + i;
                for (int64_t c = 0; c < C; c++) {
                    const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
                    for (int64_t p = 0; p < hw; p++) {
                        const float xhat = (act_ld(x, p, b16) - mean[c]) * rstd[c];
                        s1[c] += (double)act_ld(dy, p, b16);
                        s2[c] += (double)act_ld(dy, p, b16) * (double)xhat;
                    }
                }
            }
    }
}

/* The weight and bias gradients and dinp from the combined sums, as bn_backward_spatial. */
REMAT_ACT_INLINE void bn_block_backward_apply(void *dinp, float *dweight, float *dbias, const void *dout,
                                              const void *inp, const float *weight, const float *mean,
                                              const float *rstd, const double *sdy, const double *sdyx, int64_t n,
                                              int64_t rows, int64_t C, int64_t hw, const int b16) {
    for (int64_t c = 0; c < C; c++) {
        if (dbias) dbias[c] = dbias[c] + (float)sdy[c];
        if (dweight) dweight[c] = dweight[c] + (float)sdyx[c];
    }
    if (!dinp) return;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < C; c++) {
            const float m = mean[c], rs = rstd[c];
            const float mdy = n > 0 ? (float)(sdy[c] / (double)n) : 0.0f,
                        mdyx = n > 0 ? (float)(sdyx[c] / (double)n) : 0.0f;
            const float k = (weight ? weight[c] : 1.0f) * rs;
            const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
            void *dx = act_at(dinp, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) {
                const float xhat = (act_ld(x, p, b16) - m) * rs;
                act_st(dx, p, act_ld(dx, p, b16) + (act_ld(dy, p, b16) - mdy - xhat * mdyx) * k, b16);
            }
        }
}

#define BN_BLOCK_ENTRIES(S, A, B16)                                                                                 \
    void remat_ref_bn_block_sums##S(double *sum, const A *inp, const double *mu_total, int64_t n, int64_t T,      \
                                    int64_t N, int64_t nblk, int64_t C, int64_t hw) {                              \
        bn_block_sums(sum, inp, mu_total, n, T, N, nblk, C, hw, B16);                                              \
    }                                                                                                               \
    void remat_ref_bn_block_apply##S(A *out, float *mean, float *rstd, float *running_mean, float *running_var,   \
                                     const A *inp, const float *weight, const float *bias, const double *sum,      \
                                     const double *sq, int64_t n, int64_t rows, int64_t C, int64_t hw,            \
                                     float momentum, double eps) {                                                 \
        bn_block_apply(out, mean, rstd, running_mean, running_var, inp, weight, bias, sum, sq, n, rows, C, hw,      \
                       momentum, eps, B16);                                                                         \
    }                                                                                                               \
    void remat_ref_bn_block_backward_sums##S(double *sdy, double *sdyx, const A *dout, const A *inp,              \
                                             const float *mean, const float *rstd, int64_t T, int64_t N,          \
                                             int64_t nblk, int64_t C, int64_t hw) {                                \
        bn_block_backward_sums(sdy, sdyx, dout, inp, mean, rstd, T, N, nblk, C, hw, B16);                          \
    }                                                                                                               \
    void remat_ref_bn_block_backward_apply##S(A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, \
                                              const float *weight, const float *mean, const float *rstd,          \
                                              const double *sdy, const double *sdyx, int64_t n, int64_t rows,     \
                                              int64_t C, int64_t hw) {                                             \
        bn_block_backward_apply(dinp, dweight, dbias, dout, inp, weight, mean, rstd, sdy, sdyx, n, rows, C, hw,   \
                                B16);                                                                               \
    }
BN_BLOCK_ENTRIES(, float, 0)
BN_BLOCK_ENTRIES(_bf16, uint16_t, 1)
