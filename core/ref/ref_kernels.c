/* ref_kernels.c - every layer of the CPU reference backend except the GEMMs (gemm.c).
 *
 * The formulas are those of ../shared/spec/semantics.md, written in the order the
 * spec writes them (compiled with -ffp-contract=off, so what is written is what runs).
 * Every loop is element-wise with its options hoisted out, so GCC vectorises it.
 *
 * Fixed choices (the spec leaves them open; cuda/ mirrors them):
 *  - linear: the output chain of each element starts from the bias (or +0 without one)
 *    and continues over `in` in ascending order (remat_ref_gemm_nt, accumulate = 1);
 *    the bias gradient of one time step is summed over its N rows in ascending order,
 *    starting from +0, in float.
 *  - neurons: sigma(z) = 1 / (1 + e^-z) with a polynomial e^x (Cephes expf
 *    coefficients; max relative error 8.2e-8 over [-87, 88], measured against double
 *    exp) that vectorises and gives the same bits in every lane; its argument is
 *    clamped to [-87, 88]. The backward runs t = t_steps-1 .. 0 carrying gv.
 *  - batch norm: per-channel sums in double, rows in ascending order; two passes
 *    (mean, then sum of squared deviations). mean and rstd = 1/sqrt(var + eps) are
 *    rounded to float; x_hat = (x - mean) * rstd and out = x_hat * weight + bias in float.
 *    With rows == 1 the running variance takes the biased variance (0): the
 *    unbiased one is undefined there.
 *  - losses: reductions in double, ascending order; labels outside [0, K) contribute no
 *    one-hot term (the model loader rejects them before this point).
 *  - fills: uniform lo + (hi - lo) * u; Bernoulli 1 when u < rate; labels
 *    remat_rng_bits(seed, REMAT_RNG_LABEL, key, i) mod classes.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/base/rng.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Elements per cache block in the element-wise kernels that loop over time: the
 * state of one block (v, gv, a dropout mask) stays in L1 across all time steps. */
#define ELEM_BLOCK 2048
/* Channels per block in batch norm (double accumulators on the stack). */
#define BN_BLOCK 1024

/* ---- linear ---------------------------------------------------------------- */

void remat_ref_linear_forward(float *out, const float *inp, const float *weight, const float *bias, int64_t rows,
                              int64_t in, int64_t out_f) {
    if (bias) {
        for (int64_t r = 0; r < rows; r++) memcpy(out + r * out_f, bias, (size_t)out_f * sizeof(float));
        remat_ref_gemm_nt(out, inp, weight, rows, out_f, in, 1);
    } else {
        remat_ref_gemm_nt(out, inp, weight, rows, out_f, in, 0);
    }
}

int64_t remat_ref_linear_scratch_elems(int64_t in, int64_t out_f) { return out_f * in + out_f; }

void remat_ref_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t in,
                               int64_t out_f) {
    if (dinp) remat_ref_gemm_nn(dinp, dout, weight, t_steps * N, in, out_f, 1);
    float *restrict pw = scratch;
    float *restrict pb = scratch + out_f * in;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        const float *dt = dout + t * N * out_f;
        if (dweight) {
            /* P_t = dout_t^T inp_t, then dweight += P_t (descending t). */
            remat_ref_gemm_tn(pw, dt, inp + t * N * in, out_f, in, N, 0);
            float *restrict dw = dweight;
            for (int64_t e = 0; e < out_f * in; e++) dw[e] = dw[e] + pw[e];
        }
        if (dbias) {
            for (int64_t o = 0; o < out_f; o++) pb[o] = 0.0f;
            for (int64_t n = 0; n < N; n++) {
                const float *restrict row = dt + n * out_f;
                for (int64_t o = 0; o < out_f; o++) pb[o] = pb[o] + row[o];
            }
            float *restrict db = dbias;
            for (int64_t o = 0; o < out_f; o++) db[o] = db[o] + pb[o];
        }
    }
}

/* ---- neurons ----------------------------------------------------------------- */

/* e^x, vectorisable: Cody-Waite reduction x = k ln2 + r, a degree-7 polynomial for e^r
 * (Cephes expf), and the 2^k scale built in the exponent bits. */
ALWAYS_INLINE float exp_poly(float x) {
    x = x > -87.0f ? x : -87.0f; /* also maps NaN to -87: no undefined conversion below */
    x = x < 88.0f ? x : 88.0f;
    /* k = round(x / ln2): adding and removing 1.5 * 2^23 rounds to the nearest integer
     * (floorf would not vectorise under the default -ftrapping-math). */
    const float kf = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    union { int32_t i; float f; } scale;
    scale.i = ((int32_t)kf + 127) << 23;
    return p * scale.f;
}

ALWAYS_INLINE float surrogate(float u, int atan_sg, float alpha) {
    if (atan_sg) {
        const float w = (1.57079632679489662f * alpha) * u;
        return (alpha / 2.0f) / (1.0f + w * w);
    }
    const float sig = 1.0f / (1.0f + exp_poly(-(alpha * u)));
    return alpha * sig * (1.0f - sig);
}

ALWAYS_INLINE void neuron_fwd(float *restrict spikes, float *restrict h, float *restrict v, const float *restrict x,
                              int lif, int decay_input, int soft, int store_h, float vth, float vr, float tau,
                              int64_t t_steps, int64_t nf) {
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = 0; t < t_steps; t++) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict st = spikes + t * nf, *restrict ht = store_h ? h + t * nf : NULL, *restrict vt = v;
            const float *restrict xt = x + t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float vv = vt[i], xx = xt[i];
                float hh;
                if (!lif) hh = vv + xx;
                else if (decay_input) hh = vv + (xx - (vv - vr)) / tau;
                else hh = vv - (vv - vr) / tau + xx;
                const float s = (hh - vth >= 0.0f) ? 1.0f : 0.0f;
                vt[i] = soft ? hh - s * vth : hh * (1.0f - s) + vr * s;
                st[i] = s;
                if (store_h) ht[i] = hh;
            }
        }
    }
}

void remat_ref_neuron_forward(float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                              const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, dec = o->decay_input != 0;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau;
    /* One call per option combination with constant flags: each inlines to its own
     * branch-free loop. */
#define NF(L, D, S, H) neuron_fwd(spikes, h, v, x, L, D, S, H, vth, vr, tau, t_steps, nf)
    if (h) {
        if (!lif) soft ? NF(0, 0, 1, 1) : NF(0, 0, 0, 1);
        else if (dec) soft ? NF(1, 1, 1, 1) : NF(1, 1, 0, 1);
        else soft ? NF(1, 0, 1, 1) : NF(1, 0, 0, 1);
    } else {
        if (!lif) soft ? NF(0, 0, 1, 0) : NF(0, 0, 0, 0);
        else if (dec) soft ? NF(1, 1, 1, 0) : NF(1, 1, 0, 0);
        else soft ? NF(1, 0, 1, 0) : NF(1, 0, 0, 0);
    }
#undef NF
}

ALWAYS_INLINE void neuron_bwd(float *restrict dx, float *restrict gv, const float *restrict ds,
                              const float *restrict h, int lif, int decay_input, int soft, int detach, int atan_sg,
                              float alpha, float vth, float vr, float tau, int64_t t_steps, int64_t nf) {
    const float decay = 1.0f - 1.0f / tau;
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict dxt = dx + t * nf, *restrict g_v = gv;
            const float *restrict ht = h + t * nf, *restrict dst = ds + t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float hh = ht[i], gs = dst[i], g = g_v[i];
                const float u = hh - vth;
                const float s = (u >= 0.0f) ? 1.0f : 0.0f;
                const float sg = surrogate(u, atan_sg, alpha);
                float gh;
                if (!soft && !detach) gh = (gs + g * (vr - hh)) * sg + g * (1.0f - s);
                else if (!soft) gh = gs * sg + g * (1.0f - s);
                else if (!detach) gh = (gs - vth * g) * sg + g;
                else gh = gs * sg + g;
                if (!lif) {
                    dxt[i] = dxt[i] + gh;
                    g_v[i] = gh;
                } else {
                    dxt[i] = dxt[i] + (decay_input ? gh / tau : gh);
                    g_v[i] = gh * decay;
                }
            }
        }
    }
}

void remat_ref_neuron_backward(float *dx, float *gv, const float *dspikes, const float *h, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, det = o->detach_reset != 0;
    const int dec = lif && o->decay_input != 0, at = o->surrogate == REMAT_SURROGATE_ATAN;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau, alpha = o->alpha;
#define NB(L, D, S, X, A) neuron_bwd(dx, gv, dspikes, h, L, D, S, X, A, alpha, vth, vr, tau, t_steps, nf)
#define NB_RESET(L, D, A)                                \
    do {                                                 \
        if (soft) det ? NB(L, D, 1, 1, A) : NB(L, D, 1, 0, A); \
        else det ? NB(L, D, 0, 1, A) : NB(L, D, 0, 0, A);      \
    } while (0)
#define NB_SG(L, D)                  \
    do {                             \
        if (at) NB_RESET(L, D, 1);   \
        else NB_RESET(L, D, 0);      \
    } while (0)
    if (!lif) NB_SG(0, 0);
    else if (dec) NB_SG(1, 1);
    else NB_SG(1, 0);
#undef NB_SG
#undef NB_RESET
#undef NB
}

/* ---- batch norm ---------------------------------------------------------------- */

void remat_ref_batchnorm_forward(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                                 const float *inp, const float *weight, const float *bias, int64_t rows, int64_t C) {
    for (int64_t c0 = 0; c0 < C; c0 += BN_BLOCK) {
        const int64_t nc = C - c0 < BN_BLOCK ? C - c0 : BN_BLOCK;
        double sum[BN_BLOCK], sq[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) sum[c] = 0.0, sq[c] = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict x = inp + r * C + c0;
            for (int64_t c = 0; c < nc; c++) sum[c] += (double)x[c];
        }
        double mu[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) mu[c] = rows > 0 ? sum[c] / (double)rows : 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict x = inp + r * C + c0;
            for (int64_t c = 0; c < nc; c++) {
                const double d = (double)x[c] - mu[c];
                sq[c] += d * d;
            }
        }
        float m[BN_BLOCK], rs[BN_BLOCK], w[BN_BLOCK], b[BN_BLOCK];
        for (int64_t c = 0; c < nc; c++) {
            const double var = rows > 0 ? sq[c] / (double)rows : 0.0;
            m[c] = (float)mu[c];
            rs[c] = (float)(1.0 / sqrt(var + 1e-5));
            w[c] = weight ? weight[c0 + c] : 1.0f;
            b[c] = bias ? bias[c0 + c] : 0.0f;
            mean[c0 + c] = m[c];
            rstd[c0 + c] = rs[c];
            if (running_mean) running_mean[c0 + c] = 0.9f * running_mean[c0 + c] + 0.1f * m[c];
            if (running_var) {
                const double unbiased = rows > 1 ? sq[c] / (double)(rows - 1) : var;
                running_var[c0 + c] = 0.9f * running_var[c0 + c] + 0.1f * (float)unbiased;
            }
        }
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict x = inp + r * C + c0;
            float *restrict y = out + r * C + c0;
            for (int64_t c = 0; c < nc; c++) y[c] = (x[c] - m[c]) * rs[c] * w[c] + b[c];
        }
    }
}

void remat_ref_batchnorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                  const float *weight, const float *mean, const float *rstd, int64_t rows,
                                  int64_t C) {
    for (int64_t c0 = 0; c0 < C; c0 += BN_BLOCK) {
        const int64_t nc = C - c0 < BN_BLOCK ? C - c0 : BN_BLOCK;
        double sdy[BN_BLOCK], sdyx[BN_BLOCK];
        const float *restrict m = mean + c0, *restrict rs = rstd + c0;
        for (int64_t c = 0; c < nc; c++) sdy[c] = 0.0, sdyx[c] = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict x = inp + r * C + c0, *restrict dy = dout + r * C + c0;
            for (int64_t c = 0; c < nc; c++) {
                const float xhat = (x[c] - m[c]) * rs[c];
                sdy[c] += (double)dy[c];
                sdyx[c] += (double)dy[c] * (double)xhat;
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
            const float *restrict x = inp + r * C + c0, *restrict dy = dout + r * C + c0;
            float *restrict dx = dinp + r * C + c0;
            for (int64_t c = 0; c < nc; c++) {
                const float xhat = (x[c] - m[c]) * rs[c];
                dx[c] = dx[c] + (dy[c] - mdy[c] - xhat * mdyx[c]) * k[c];
            }
        }
    }
}

/* ---- dropout ---------------------------------------------------------------------- */

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
static void dropout_apply(float *dst, const float *src, uint64_t seed, uint64_t iter, int layer, float p,
                          int64_t t_steps, int64_t nf, int accumulate) {
    const uint64_t key = remat_rng_dropout_key(iter, (uint64_t)layer);
    const float scale = 1.0f / (1.0f - p);
    float mask[ELEM_BLOCK];
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        dropout_mask_range(mask, seed, key, p, scale, i0, i1);
        for (int64_t t = 0; t < t_steps; t++) {
            const float *restrict x = src + t * nf + i0;
            float *restrict y = dst + t * nf + i0;
            if (accumulate)
                for (int64_t i = 0; i < i1 - i0; i++) y[i] = y[i] + x[i] * mask[i];
            else
                for (int64_t i = 0; i < i1 - i0; i++) y[i] = x[i] * mask[i];
        }
    }
}

void remat_ref_dropout_forward(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                               int64_t t_steps, int64_t nf) {
    dropout_apply(out, inp, seed, iter, layer, p, t_steps, nf, 0);
}

void remat_ref_dropout_backward(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                int64_t t_steps, int64_t nf) {
    dropout_apply(dinp, dout, seed, iter, layer, p, t_steps, nf, 1);
}

/* ---- add ---------------------------------------------------------------------------- */

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

/* ---- losses --------------------------------------------------------------------------- */

static void rate_of(float *restrict rate, const float *restrict out, int64_t T, int64_t NK) {
    for (int64_t e = 0; e < NK; e++) rate[e] = 0.0f;
    for (int64_t t = 0; t < T; t++) {
        const float *restrict o = out + t * NK;
        for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] + o[e];
    }
    const float tf = (float)T;
    for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] / tf;
}

static int label_ok(int32_t label, int64_t K) { return label >= 0 && (int64_t)label < K; }

float remat_ref_loss_forward(float *rate, const float *out, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    rate_of(rate, out, T, N * K);
    if (N <= 0 || K <= 0) return 0.0f;
    double total = 0.0;
    for (int64_t n = 0; n < N; n++) {
        const float *r = rate + n * K;
        const int32_t y = labels[n];
        if (type == REMAT_LOSS_RATE_MSE) {
            for (int64_t k = 0; k < K; k++) {
                const double d = (double)r[k] - (k == (int64_t)y ? 1.0 : 0.0);
                total += d * d;
            }
        } else {
            double mx = -INFINITY, se = 0.0;
            for (int64_t k = 0; k < K; k++)
                if ((double)r[k] > mx) mx = (double)r[k];
            for (int64_t k = 0; k < K; k++) se += exp((double)r[k] - mx);
            total += mx + log(se) - (label_ok(y, K) ? (double)r[y] : 0.0);
        }
    }
    return (float)(type == REMAT_LOSS_RATE_MSE ? total / ((double)N * (double)K) : total / (double)N);
}

void remat_ref_loss_backward(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    if (N <= 0 || K <= 0 || T <= 0) return;
    for (int64_t n = 0; n < N; n++) {
        const float *r = rate + n * K;
        const int32_t y = labels[n];
        double mx = -INFINITY, se = 0.0;
        if (type == REMAT_LOSS_RATE_CE) {
            for (int64_t k = 0; k < K; k++)
                if ((double)r[k] > mx) mx = (double)r[k];
            for (int64_t k = 0; k < K; k++) se += exp((double)r[k] - mx);
        }
        for (int64_t k = 0; k < K; k++) {
            const double onehot = k == (int64_t)y ? 1.0 : 0.0;
            double g; /* dL/dr */
            if (type == REMAT_LOSS_RATE_MSE) g = 2.0 * ((double)r[k] - onehot) / ((double)N * (double)K);
            else g = (exp((double)r[k] - mx) / se - onehot) / (double)N;
            const float gt = (float)(g / (double)T);
            for (int64_t t = 0; t < T; t++) dout[(t * N + n) * K + k] += gt;
        }
    }
}

/* ---- optimisers ----------------------------------------------------------------------- */

void remat_ref_sgd_update(float *param, float *buf, const float *grad, float lr, float momentum, int first_step,
                          int64_t n) {
    float *restrict p = param;
    const float *restrict g = grad;
    if (!buf) {
        for (int64_t i = 0; i < n; i++) p[i] = p[i] - lr * g[i];
        return;
    }
    float *restrict b = buf;
    if (first_step)
        for (int64_t i = 0; i < n; i++) b[i] = g[i];
    else
        for (int64_t i = 0; i < n; i++) b[i] = momentum * b[i] + g[i];
    for (int64_t i = 0; i < n; i++) p[i] = p[i] - lr * b[i];
}

void remat_ref_adam_update(float *param, float *m, float *v, const float *grad, float lr, float beta1, float beta2,
                           float eps, int step, int64_t n) {
    /* PyTorch's single-tensor Adam: the bias corrections in double, the rest in float. */
    const double bc1 = 1.0 - pow((double)beta1, (double)step), bc2 = 1.0 - pow((double)beta2, (double)step);
    const float step_size = (float)((double)lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    const float om1 = 1.0f - beta1, om2 = 1.0f - beta2;
    float *restrict p = param, *restrict mm = m, *restrict vv = v;
    const float *restrict g = grad;
    for (int64_t i = 0; i < n; i++) {
        mm[i] = mm[i] * beta1 + om1 * g[i];
        vv[i] = vv[i] * beta2 + om2 * (g[i] * g[i]);
        const float denom = sqrtf(vv[i]) / bc2_sqrt + eps;
        p[i] = p[i] - step_size * (mm[i] / denom);
    }
}

/* ---- seeded fills ---------------------------------------------------------------------- */

void remat_ref_fill_uniform(float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream, uint64_t key) {
    const float span = hi - lo;
    for (int64_t i = 0; i < n; i++) out[i] = lo + span * remat_rng_uniform(seed, stream, key, (uint64_t)i);
}

void remat_ref_fill_bernoulli(float *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key) {
    for (int64_t i = 0; i < n; i++) out[i] = remat_rng_uniform(seed, stream, key, (uint64_t)i) < rate ? 1.0f : 0.0f;
}

void remat_ref_fill_labels(int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {
    for (int64_t i = 0; i < n; i++)
        labels[i] = classes > 0 ? (int32_t)(remat_rng_bits(seed, REMAT_RNG_LABEL, key, (uint64_t)i) % (uint64_t)classes)
                                : 0;
}
