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
#include "core/ref/parallel.h"

/* Channels per block (double accumulators on the stack). */
#define BN_BLOCK 1024

/* [rows, C, hw] with hw > 1 (convolutional): the same arithmetic, channel by channel,
 * positions (r, p) in ascending order. */
REMAT_ACT_INLINE void bn_forward_spatial(void *out, float *mean, float *rstd, float *running_mean,
                                          float *running_var, const void *inp, const float *weight, const float *bias,
                                          int64_t rows, int64_t C, int64_t hw, float momentum, double eps,
                                          const int b16, int64_t c_lo,
                                          int64_t c_hi) {
    const int64_t n = rows * hw;
    for (int64_t c = c_lo; c < c_hi; c++) {
        double sum = 0.0, sq = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) sum += (double)act_ld(x, p, b16);
        }
        const double mu = n > 0 ? sum / (double)n : 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) {
                const double d = (double)act_ld(x, p, b16) - mu;
                sq += d * d;
            }
        }
        const double var = n > 0 ? sq / (double)n : 0.0;
        const float m = (float)mu, rs = (float)(1.0 / sqrt(var + eps));
        const float w = weight ? weight[c] : 1.0f, b = bias ? bias[c] : 0.0f;
        mean[c] = m;
        rstd[c] = rs;
        if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
        if (running_var) {
            const double unbiased = n > 1 ? sq / (double)(n - 1) : var;
            running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (float)unbiased;
        }
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, (r * C + c) * hw, b16);
            void *y = act_at(out, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) act_st(y, p, (act_ld(x, p, b16) - m) * rs * w + b, b16);
        }
    }
}

REMAT_ACT_INLINE void bn_backward_spatial(void *dinp, float *dweight, float *dbias, const void *dout,
                                           const void *inp, const float *weight, const float *mean, const float *rstd,
                                           int64_t rows, int64_t C, int64_t hw, const int b16, int64_t c_lo,
                                           int64_t c_hi) {
    const int64_t n = rows * hw;
    for (int64_t c = c_lo; c < c_hi; c++) {
        const float m = mean[c], rs = rstd[c];
        double sdy = 0.0, sdyx = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const void *x = act_cat(inp, (r * C + c) * hw, b16), *dy = act_cat(dout, (r * C + c) * hw, b16);
            for (int64_t p = 0; p < hw; p++) {
                const float xhat = (act_ld(x, p, b16) - m) * rs;
                sdy += (double)act_ld(dy, p, b16);
                sdyx += (double)act_ld(dy, p, b16) * (double)xhat;
            }
        }
        if (dbias) dbias[c] = dbias[c] + (float)sdy;
        if (dweight) dweight[c] = dweight[c] + (float)sdyx;
        if (!dinp) continue;
        const float mdy = n > 0 ? (float)(sdy / (double)n) : 0.0f, mdyx = n > 0 ? (float)(sdyx / (double)n) : 0.0f;
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

static void bn_forward_part(void *ctx, int64_t lo, int64_t hi) {
    const bn_call *c = ctx;
    if (c->b16)
        batchnorm_forward(c->out, c->mean, c->rstd, c->running_mean, c->running_var, c->inp, c->weight, c->bias,
                          c->rows, c->C, c->hw, c->momentum, c->eps, 1, lo, hi);
    else
        batchnorm_forward(c->out, c->mean, c->rstd, c->running_mean, c->running_var, c->inp, c->weight, c->bias,
                          c->rows, c->C, c->hw, c->momentum, c->eps, 0, lo, hi);
}

static void bn_backward_part(void *ctx, int64_t lo, int64_t hi) {
    const bn_call *c = ctx;
    if (c->b16)
        batchnorm_backward(c->dinp, c->dweight, c->dbias, c->dout, c->inp, c->weight, c->cmean, c->crstd, c->rows, c->C,
                           c->hw, 1, lo, hi);
    else
        batchnorm_backward(c->dinp, c->dweight, c->dbias, c->dout, c->inp, c->weight, c->cmean, c->crstd, c->rows, c->C,
                           c->hw, 0, lo, hi);
}

/* Channels per part at least, so that a part has BN_MIN_PER_THREAD elements. */
static int64_t bn_min_channels(int64_t rows, int64_t hw) {
    const int64_t per = rows * hw > 0 ? rows * hw : 1;
    return BN_MIN_PER_THREAD / per > 1 ? BN_MIN_PER_THREAD / per : 1;
}

static void bn_forward_run(bn_call *c) {
    remat_ref_parallel_for(c->C, c->hw > 1 ? 1 : 16, bn_min_channels(c->rows, c->hw), bn_forward_part, c);
}

static void bn_backward_run(bn_call *c) {
    remat_ref_parallel_for(c->C, c->hw > 1 ? 1 : 16, bn_min_channels(c->rows, c->hw), bn_backward_part, c);
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
